//! Stage eight of the flow: showing results. The live view while measuring, the summary
//! table at the end and the JSON document; the stored runs' listings, exports and
//! reports (HTML, and PNG images of their plots); the published figures a run is placed among. Reporting reads figures; it never touches
//! threads or the system beyond writing its output.

pub mod audit;
pub mod compare;
pub mod html;
pub mod json;
pub mod live;
pub mod plot;
pub mod png;
pub mod reference;
pub mod stored;
pub mod summary;
pub mod trace;
