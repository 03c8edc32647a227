//! rtgauge-measure: the measuring path, from the plan to the verdict.
//!
//! `scenario` (the plan) → `audit` → `tuning` → `probe` and `load` → `aggregate` → `verdict`,
//! with `trace` (the cause of a worst case). It depends on `model`, `sys` and `forecast` only:
//! nothing of the store, the dashboard, the PostgreSQL client or the PNG renderer compiles here.
#![deny(unsafe_code)]

use rtgauge_forecast::forecast;
use rtgauge_model::{result, vocab};
use rtgauge_sys::sys;

pub mod aggregate;
pub mod audit;
pub mod load;
pub mod probe;
pub mod scenario;
pub mod trace;
pub mod tuning;
pub mod verdict;
