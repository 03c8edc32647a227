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
//! - [`continuous`]: what a continuous run does beside measuring (rotated parts closed and
//!   kept, live metrics published and served), on CPUs it does not measure;
//! - [`warnings`]: the warnings' texts; [`assemble`]: the result document.

pub mod assemble;
pub mod checks;
pub mod continuous;
pub mod keep;
pub mod load_only;
pub mod measure;
pub mod resolved;
pub mod setup;
pub mod signals;
pub mod warnings;

use crate::scenario::RunPlan;
use crate::store;
use crate::vocab;
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
    // A lab's server that does not answer holds up no stop: its connection is given up on.
    crate::store::postgres::give_up_when(interrupts.signalled());
    // A run that goes on for months: SQLite's pages get memory of their own before any store
    // is opened, so that the run's peak memory is reached with its first part kept.
    if plan.continuous.rotate_ns.is_some() {
        crate::store::fix_page_memory();
    }
    let (mut system, resolved) = resolved::against_machine(&plan)?;
    // The audit, before anything is tuned: what the system is as found.
    let findings = crate::audit::checks::audit(
        &system,
        &crate::audit::checks::Scope { cpus: resolved.cpus.clone(), priority: plan.priority },
    );
    // The JSON destination and the store are checked before anything runs; the warnings known
    // before measuring are said.
    // A continuous run's own work (rotated parts kept, metrics) runs on CPUs it does not
    // measure; the metrics' address is bound and their file's directory checked before
    // anything is opened or written.
    let own_cpus = continuous::own_cpus(&plan, &resolved, &system)?;
    let outlets = match &plan.continuous.metrics {
        Some(m) => Some(crate::metrics::serve::Outlets::open(m.listen, m.file.as_deref()).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let metrics_file = outlets.as_ref().and_then(crate::metrics::serve::Outlets::file);
    let mut outputs = keep::Outputs::open(&plan, &resolved, &system, &keep)?;
    // The board as it describes itself, its kernel configuration compared with its last stored run's.
    let (mut board, kernel_config) =
        crate::audit::board::read(keep.board.as_deref().unwrap_or(&system.hostname), &system.kernel_release);
    outputs.compare_config(&mut board, kernel_config.as_ref());
    let mut held = setup::hold(&plan, &mut system, &resolved.cpus, &command_line, &mut outputs.warnings)?;
    // The measurement threads are ready (pinned, at their priority) before any load starts.
    let prepared = setup::probes(&plan, &resolved, &interrupts, &mut system, &mut held)?;
    let slot = outlets.as_ref().map(|_| std::sync::Arc::new(crate::metrics::Slot::new()));
    if let (Some(o), Some(slot)) = (outlets, &slot) {
        let cpus = own_cpus.clone();
        if let Some(addr) = o.address() {
            continuous::say(&format!("rtgauge: metrics at http://{addr}/metrics"));
        }
        o.start(std::sync::Arc::clone(slot), resolved.window_ns, move || continuous::confine_here(&cpus))?;
    }
    let (mut loads, watchdog) = setup::loads(&plan, &resolved, &held, &interrupts, &mut outputs.warnings)?;
    let rotated = plan.continuous.rotate_ns.is_some();
    let (measured, last_part, store, released, _guardian) = std::thread::scope(|scope| {
        let (parts, keeper) = match rotated {
            true => {
                let (tx, handle) = continuous::keeper(
                    scope,
                    &plan,
                    &resolved,
                    &system,
                    &findings,
                    &board,
                    &keep,
                    outputs.take_store(),
                    own_cpus.clone(),
                    command_line.clone(),
                );
                (Some(tx), Some(handle))
            }
            false => (None, None),
        };
        let mut beside = continuous::Beside::new(&plan, &resolved, &system, &board.name, parts, slot.clone());
        if rotated {
            continuous::say(&format!(
                "rtgauge: a new series {} begins: a run is kept every {}",
                beside.series().to_string().get(..8).unwrap_or_default(),
                vocab::units::Nanos(plan.continuous.rotate_ns.unwrap_or(0))
            ));
        }
        let measured = measure::run(
            &plan,
            &resolved,
            prepared,
            &mut loads,
            watchdog,
            &interrupts,
            &mut held,
            &mut outputs.warnings,
            &mut beside,
        );
        let last_part = beside.last_part();
        drop(beside);
        // Everything tuned is put back here (the PM QoS request released) and the loads are
        // stopped, before the end-of-run work: before the keeper has kept the last parts closed
        // (a slow shared store must not hold the tuning).
        let (released, guardian) = setup::release(held, &mut loads, &mut outputs.warnings);
        let store = keeper.and_then(|k| k.join().ok()).flatten();
        (measured, last_part, store, released, guardian)
    });
    if rotated {
        outputs.put_store(store);
    }
    // The metrics file holds the figures at the end.
    if let (Some(file), Some(s)) = (metrics_file, slot.and_then(|s| s.latest())) {
        if let Err(e) = crate::metrics::serve::write_file(&file, &crate::metrics::expo::render(&s, false)) {
            outputs.warnings.push(format!("--metrics-file {e}: the last figures"));
        }
    }
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
        last_part,
    );
    result.board = Some(board);
    keep::report_and_keep(result, outputs, &keep, kernel_config)
}
