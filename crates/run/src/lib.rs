//! rtgauge-run: `rtgauge run` and `rtgauge load` as their stages, in order (see `run`'s module doc).
#![deny(unsafe_code)]

use rtgauge_forecast::forecast;
use rtgauge_measure::{aggregate, audit, load, probe, scenario, trace, tuning, verdict};
use rtgauge_model::{keep, result, vocab};
use rtgauge_report::{metrics, report};
use rtgauge_sys::sys;

pub mod run;
