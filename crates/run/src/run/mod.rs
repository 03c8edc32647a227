//! The one flow every measurement goes through, in the order of DESIGN.md: plan checked against
//! the machine → audit → outputs opened → tuning held → probes set up → loads → measure →
//! settings put back → assemble (with the verdict) → report and keep → exit status. [`run`]
//! reads as that sequence; each stage is a file of its own here calling into its module, and
//! no probe is named here (they plug in through `probe::Probe`). `rtgauge load` goes through
//! the same stages with no probe ([`load_only`]).
//!
//! - [`signals`]: the process made fit to run, and how a run stops (`Interrupts`);
//! - [`checks`]: the plan against the machine (CPUs, loads, requirements, window, file limits);
//! - [`resolved`]: the plan resolved (`Resolved`: probes with their CPUs, loads, window);
//! - [`context`]: what every stage reads (`Context`: the plan resolved, the system and its
//!   audit, the board, where the result goes, how the run stops), made by the first stage;
//! - [`keep`]: the outputs opened before measuring, and the result reported and kept after;
//! - [`setup`]: memory, tuning, trace, measurement threads and loads set up;
//! - [`measure`]: the coordinator's loop and the end of the measurement;
//! - [`continuous`]: what a continuous run does beside measuring (rotated parts closed and
//!   kept, live metrics published and served), on CPUs it does not measure;
//! - [`warnings`]: the warnings' texts; [`assemble`]: the result document.

pub mod assemble;
pub mod checks;
pub mod context;
pub mod continuous;
pub mod keep;
pub mod load_only;
pub mod measure;
pub mod resolved;
pub mod setup;
pub mod signals;
pub mod warnings;

use crate::scenario::RunPlan;
use anyhow::Result;

pub use context::Context;

pub use load_only::{load_only, LoadPlan};
pub use signals::{prepare_process, Interrupts, MIN_STACK_KIB};

/// Exit status of a finished run: 0 passed or no criteria, 1 a criterion failed.
pub const EXIT_PASSED: u8 = 0;
pub const EXIT_FAILED: u8 = 1;

/// Runs `rtgauge run`: the stages in order; returns the exit status.
pub fn run(plan: RunPlan, command_line: Vec<String>, keep: Box<dyn crate::keep::Keep>) -> Result<u8> {
    let interrupts = Interrupts::for_run(&plan, &*keep)?; // signals.rs: Ctrl-C stops the run from here
    let mut run = Context::against_machine(plan, command_line, keep, interrupts)?; // resolved, audited
    let mut metrics = continuous::Metrics::bind(&run)?; // the address bound, the file checked
    let mut outputs = keep::Outputs::open(&mut run)?; // keep.rs: JSON, store; warnings said
    let mut held = setup::hold(&mut run, &mut outputs.warnings)?; // memory, tuning, trace
    let prepared = setup::probes(&mut run, &mut held)?; // the measurement threads, ready
    metrics.start(&run)?; // served from here, on rtgauge's own CPUs
    let (loads, watchdog) = setup::loads(&run, &held, &mut outputs.warnings)?; // under the watchdog
    let rig = measure::Rig { prepared, loads, watchdog, held };
    let ended = measure::observed(&run, rig, &mut outputs, &metrics); // measured, put back, parts kept
    metrics.finish(&mut outputs.warnings); // the metrics file's last figures
    let result = assemble::run_result(&run, ended.measured, ended.released, ended.last_part, outputs.take_warnings());
    keep::report_and_keep(result, outputs, &run) // summary, JSON, store
}
