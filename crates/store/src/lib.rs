//! rtgauge-store: where every run is kept (SQLite, PostgreSQL, the spool). See `store`'s module
//! doc and docs/architecture.md.
#![deny(unsafe_code)]

use rtgauge_forecast::forecast;
use rtgauge_model::{keep, result, vocab};
use rtgauge_sys::sys;

pub mod store;
