//! `rtgauge stall`: a known disturbance. Occupies one CPU with a busy SCHED_FIFO thread for an
//! exact time and reports when it started and ended (CLOCK_MONOTONIC), so anyone can check
//! that a latency measurement on that CPU shows a worst case of at least that size and counts
//! the periods it missed. The test suite uses it as ground truth.

use crate::sys;
use crate::vocab::policy::Policy;
use crate::vocab::units::{parse_duration_ns, Nanos};
use serde::Serialize;

/// The longest stall allowed: RT throttling (if enabled) would cut a longer one anyway, and
/// a stall is a test instrument, not a load.
pub const MAX_STALL_NS: u64 = 10_000_000_000;

/// The longest wait before a stall.
pub const MAX_DELAY_NS: u64 = 3_600_000_000_000;

/// What a stall did, printed as one JSON line.
#[derive(Debug, Serialize)]
pub struct StallReport {
    pub cpu: usize,
    pub policy: Policy,
    pub priority: i32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub duration_ns: u64,
    /// The busy thread's name and id, as a trace shows them.
    pub name: String,
    pub tid: i32,
}

/// Validated stall settings.
#[derive(Debug, Clone)]
pub struct StallPlan {
    pub cpu: usize,
    pub priority: i32,
    pub delay_ns: u64,
    pub duration_ns: u64,
    /// The busy thread's name (`rtgauge-stall`).
    pub name: String,
}

impl StallPlan {
    pub fn from_input(
        cpu: usize,
        priority: i32,
        delay: &str,
        duration: &str,
        online: &[usize],
    ) -> Result<StallPlan, crate::vocab::Error> {
        Self::from_input_text(cpu, priority, delay, duration, online).map_err(crate::vocab::Error::Invalid)
    }

    /// [`Self::from_input`], its failure as text.
    fn from_input_text(cpu: usize, priority: i32, delay: &str, duration: &str, online: &[usize]) -> Result<StallPlan, String> {
        let duration_ns = parse_duration_ns(duration, None)
            .map_err(|e| format!("--duration {e}: give a time with a unit, e.g. --duration 200ms"))?;
        if duration_ns == 0 || duration_ns > MAX_STALL_NS {
            return Err(format!("--duration must lie between 1ns and {}, e.g. --duration 200ms", Nanos(MAX_STALL_NS)));
        }
        let delay_ns =
            parse_duration_ns(delay, None).map_err(|e| format!("--delay {e}: give a time with a unit, e.g. --delay 1s"))?;
        if delay_ns > MAX_DELAY_NS {
            return Err(format!(
                "--delay {} is more than the limit of {}, e.g. --delay 1s",
                Nanos(delay_ns),
                Nanos(MAX_DELAY_NS)
            ));
        }
        crate::vocab::policy::check_rt_priority(priority).map_err(|e| format!("--priority {e}, e.g. --priority 99"))?;
        if !online.contains(&cpu) {
            return Err(format!(
                "--cpu {cpu} is not an online CPU (online: {}); choose one of them",
                crate::vocab::cpus::format_cpu_list(online)
            ));
        }
        Ok(StallPlan { cpu, priority, delay_ns, duration_ns, name: "rtgauge-stall".into() })
    }
}

/// Waits `delay`, then spins on `cpu` at SCHED_FIFO `priority` for `duration`.
pub fn run(plan: StallPlan) -> Result<StallReport, crate::vocab::Error> {
    run_text(plan).map_err(crate::vocab::Error::System)
}

/// [`run`], its failure as text.
fn run_text(plan: StallPlan) -> Result<StallReport, String> {
    sys::process::set_thread_name(&plan.name).map_err(|e| format!("cannot name the thread '{}': {e}", plan.name))?;
    sys::sched::pin_thread_to_cpu(plan.cpu).map_err(|e| format!("cannot pin to CPU {}: {e}", plan.cpu))?;
    sys::sched::set_thread_scheduler(Policy::Fifo, plan.priority)
        .map_err(|e| format!("cannot run at SCHED_FIFO {}: {e}; run as root (a stall needs RT priority)", plan.priority))?;
    let begin = sys::time::monotonic_ns() + plan.delay_ns;
    sys::time::sleep_until_monotonic(begin);
    let start_ns = sys::time::monotonic_ns();
    let deadline = start_ns + plan.duration_ns;
    let mut end_ns = start_ns;
    while end_ns < deadline {
        std::hint::spin_loop();
        end_ns = sys::time::monotonic_ns();
    }
    // The stall ends here: what is left (the report, the process's exit, a millisecond and more
    // for a large process) runs at SCHED_OTHER, behind the thread it stalled.
    sys::sched::set_thread_scheduler(Policy::Other, 0).map_err(|e| format!("cannot leave SCHED_FIFO after the stall: {e}"))?;
    Ok(StallReport {
        cpu: plan.cpu,
        policy: Policy::Fifo,
        priority: plan.priority,
        start_ns,
        end_ns,
        duration_ns: end_ns - start_ns,
        name: plan.name.chars().take(15).collect(),
        tid: sys::process::thread_id(),
    })
}
