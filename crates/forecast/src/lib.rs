//! rtgauge-forecast: "was the run long enough?", computed from a result after the run
//! (docs/forecast.md). It reads `result` and `vocab` alone.
#![deny(unsafe_code)]

use rtgauge_model::{result, vocab};

pub mod forecast;
