//! rtgauge: is this board, kernel and configuration real-time enough for my cycle time?
//!
//! The top of the workspace's stairs (docs/architecture.md): the command line (`commands`, one
//! file per subcommand, and `app`, which dispatches) over the crates below, whose modules it
//! re-exports so that tests and examples name them as `rtgauge::result`, `rtgauge::store`, ...
//! From the bottom: `rtgauge-model` (`vocab`, `result`), `rtgauge-sys` (`sys`, the only `unsafe`
//! code), `rtgauge-forecast`, `rtgauge-measure` (the measuring path: `scenario`, `audit`,
//! `tuning`, `probe`, `load`, `aggregate`, `trace`, `verdict`), `rtgauge-store`,
//! `rtgauge-report` (`report`, `interchange`, `metrics`, `http`), `rtgauge-run` (`run`, the
//! stages in order) and `rtgauge-lab` (`serve`, the dashboard, and `png`: only in the lab
//! build, the `lab` feature, default). A crate cannot name one above it: the compiler keeps the
//! arrows one way.
#![deny(unsafe_code)]

pub mod app;
pub mod commands;

pub use rtgauge_forecast::forecast;
#[cfg(feature = "lab")]
pub use rtgauge_lab::{png, serve};
pub use rtgauge_measure::{aggregate, audit, load, probe, scenario, trace, tuning, verdict};
pub use rtgauge_model::{keep, result, vocab};
pub use rtgauge_report::{http, interchange, metrics, report};
pub use rtgauge_run::run;
pub use rtgauge_store::store;
pub use rtgauge_sys::sys;

#[cfg(test)]
mod layers;
