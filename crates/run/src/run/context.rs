//! What every stage of a run reads: the plan resolved against the machine, the system and its
//! audit as found, the board, where the result goes, how the run stops, its command line and the
//! CPUs of rtgauge's own work. Made by the first stage ([`Context::against_machine`]) and passed
//! to each stage after it as one value (the set-up stages may add to the system what they find).

use super::resolved::{self, Resolved};
use super::signals::Interrupts;
use crate::result::board::Board;
use crate::result::findings::Finding;
use crate::result::system::SystemInfo;
use crate::scenario::RunPlan;
use anyhow::Result;

/// A run as every stage sees it (see the module doc).
pub struct Context {
    pub plan: RunPlan,
    /// The plan resolved for this machine: probes with their CPUs, loads, the window.
    pub resolved: Resolved,
    /// The system as found (the set-up stages add what they did: memory locked, threads' policy).
    pub system: SystemInfo,
    /// The audit, before anything is tuned.
    pub findings: Vec<Finding>,
    /// The board as it describes itself (its kernel options compared when the store is open).
    pub board: Board,
    /// The board's kernel configuration, kept with the run.
    pub kernel_config: Option<crate::result::board::KernelOptions>,
    /// Where the result is kept (the command line's: the store).
    pub keep: Box<dyn crate::keep::Keep>,
    /// How the run stops (Ctrl-C, SIGTERM).
    pub interrupts: Interrupts,
    pub command_line: Vec<String>,
    /// The CPUs a continuous run's own work (parts kept, metrics served) runs on.
    pub own_cpus: Vec<usize>,
}

impl Context {
    /// The first stage: the plan checked against the machine and resolved, the audit as found,
    /// the CPUs left to rtgauge's own work, the board read.
    pub(super) fn against_machine(
        plan: RunPlan,
        command_line: Vec<String>,
        keep: Box<dyn crate::keep::Keep>,
        interrupts: Interrupts,
    ) -> Result<Context> {
        let (system, resolved) = resolved::against_machine(&plan)?;
        let findings = crate::audit::checks::audit(
            &system,
            &crate::audit::checks::Scope { cpus: resolved.cpus.clone(), priority: plan.priority },
        );
        let own_cpus = super::continuous::own_cpus(&plan, &resolved, &system)?;
        let (board, kernel_config) = crate::audit::board::read(keep.board().unwrap_or(&system.hostname), &system.kernel_release);
        Ok(Context { plan, resolved, system, findings, board, kernel_config, keep, interrupts, command_line, own_cpus })
    }
}
