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
//! - [`keep`]: the outputs opened before measuring, and the result reported and kept after;
//! - [`setup`]: memory, tuning, trace, measurement threads and loads set up;
//! - [`measure`]: the coordinator's loop and the end of the measurement;
//! - [`warnings`]: the warnings' texts; [`assemble`]: the result document.

pub mod assemble;
pub mod checks;
pub mod keep;
pub mod load_only;
pub mod measure;
pub mod resolved;
pub mod setup;
pub mod signals;
pub mod warnings;

use crate::scenario::RunPlan;
use crate::store;
use anyhow::Result;

pub use load_only::{load_only, LoadPlan};
pub use signals::{prepare_process, Interrupts, MIN_STACK_KIB};

/// Exit status of a finished run: 0 passed or no criteria, 1 a criterion failed.
pub const EXIT_PASSED: u8 = 0;
pub const EXIT_FAILED: u8 = 1;

/// Runs `rtgauge run`: the stages in order; returns the exit status.
pub fn run(plan: RunPlan, command_line: Vec<String>, keep: store::Request) -> Result<u8> {
    // Signals first: Ctrl-C and SIGTERM stop the run at any moment from here on.
    let interrupts = Interrupts::install_for_run()?;
    let (mut system, resolved) = resolved::against_machine(&plan)?;
    // The audit, before anything is tuned: what the system is as found.
    let findings = crate::audit::checks::audit(
        &system,
        &crate::audit::checks::Scope { cpus: resolved.cpus.clone(), priority: plan.priority },
    );
    // The JSON destination and the store are checked before anything runs; the warnings known
    // before measuring are said.
    let mut outputs = keep::Outputs::open(&plan, &resolved, &system, &keep)?;
    // The board as it describes itself, its kernel configuration compared with its last stored run's.
    let (mut board, kernel_config) =
        crate::audit::board::read(keep.board.as_deref().unwrap_or(&system.hostname), &system.kernel_release);
    outputs.compare_config(&mut board, kernel_config.as_ref());
    let mut held = setup::hold(&plan, &mut system, &resolved.cpus, &command_line, &mut outputs.warnings)?;
    // The measurement threads are ready (pinned, at their priority) before any load starts.
    let prepared = setup::probes(&plan, &resolved, &interrupts, &mut system, &mut held)?;
    let (mut loads, watchdog) = setup::loads(&plan, &resolved, &held, &interrupts, &mut outputs.warnings)?;
    let measured = measure::run(&plan, &resolved, prepared, &mut loads, watchdog, &interrupts, &mut held, &mut outputs.warnings);
    // Everything tuned is put back here (the PM QoS request released), before the end-of-run work.
    let (released, _guardian) = setup::release(held, &mut loads, &mut outputs.warnings);
    let mut result = assemble::run_result(
        &plan,
        &resolved,
        measured,
        released,
        &interrupts,
        command_line,
        system,
        findings,
        outputs.take_warnings(),
    );
    result.board = Some(board);
    keep::report_and_keep(result, outputs, &keep, kernel_config)
}
