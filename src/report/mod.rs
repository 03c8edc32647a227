//! Stage eight of the flow: showing results. The live view while measuring, the summary
//! table at the end and the JSON document. Reporting reads figures; it never touches
//! threads or the system beyond writing its output.

pub mod json;
pub mod live;
pub mod stored;
pub mod summary;
