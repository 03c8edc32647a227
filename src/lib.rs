//! rtgauge: is this board, kernel and configuration real-time enough for my cycle time?
//!
//! The library behind the `rtgauge` binary (which only calls [`app::main`]); tests use its typed
//! result documents. The modules follow the flow of DESIGN.md (see `docs/architecture.md`):
//! `scenario` (plan) → `audit` → `tuning` → `probe` and `load` → `aggregate` → `verdict` →
//! `result` → `report`, run in that order by `run`; each subcommand is a file of `commands`,
//! which `app` dispatches to. `vocab` is the shared vocabulary and `sys` the only module with
//! `unsafe` code.
#![deny(unsafe_code)]

pub mod aggregate;
pub mod app;
pub mod audit;
pub mod commands;
pub mod forecast;
pub mod interchange;
pub mod load;
pub mod metrics;
pub mod probe;
pub mod report;
pub mod result;
pub mod run;
pub mod scenario;
pub mod serve;
pub mod store;
pub mod sys;
pub mod trace;
pub mod tuning;
pub mod verdict;
pub mod vocab;
