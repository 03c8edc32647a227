//! rtgauge-lab: what only a lab server needs — the dashboard (`serve`) and the PNG renderer (`png`).
#![deny(unsafe_code)]

use rtgauge_forecast::forecast;
use rtgauge_measure::scenario;
use rtgauge_model::{result, vocab};
use rtgauge_report::{http, report};
use rtgauge_store::store;
use rtgauge_sys::sys;

pub mod png;
pub mod serve;
