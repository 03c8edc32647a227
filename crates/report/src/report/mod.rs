//! Stage eight of the flow: showing results. The live view while measuring, the summary
//! table at the end and the JSON document; the comparison of stored runs, their HTML reports
//! and PNG images of their plots; the published figures a run is placed among. Reporting reads
//! figures; it never touches threads or the system beyond writing its output (the commands
//! that show stored runs are in `crate::commands`).
//!
//! Text from outside (labels, host names, kernel strings, scenario names, command lines of a
//! stored or imported run) is shown through [`shown`]: a file cannot drive the terminal, fake a
//! row or hide part of itself. Standard output is written through [`out`] alone.

pub mod audit;
pub mod board;
pub mod compare;
pub mod forecast_html;
pub mod html;
pub mod json;
pub mod live;
pub mod long_enough;
pub mod markup;
pub mod out;
pub mod plot;
pub mod reference;
pub mod summary;
pub mod svg;
pub mod trace;

pub use crate::vocab::text::{shown, shown_json, shown_text};
