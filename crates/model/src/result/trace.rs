//! What `--trace` found, as the result document keeps it: per CPU, the kernel's events around
//! its worst traced latency, explained as rtla's timerlat auto-analysis does — the interrupt,
//! softirq and thread interference in the window with their durations, the thread that kept
//! the measurement from running, and the share of the latency each explains.

use serde::{Deserialize, Serialize};

/// The trace of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceReport {
    /// Values above it were traced (null: every new worst case after the warm-up).
    pub threshold_ns: Option<u64>,
    /// Where tracefs is; whether rtgauge mounted it for the run (and unmounted it after).
    pub tracefs: Option<String>,
    pub mounted: bool,
    /// The kernel events recorded.
    pub events: Vec<String>,
    /// Per-CPU buffer of each measured CPU's trace instance.
    pub buffer_kb: u64,
    /// The kernel's latency tracers (`timerlat`, `osnoise`) where it has them, and how they were used.
    pub tracers: Vec<String>,
    /// One per CPU whose trace was stopped by a latency: its worst traced one.
    pub captures: Vec<TraceCapture>,
    /// Why there is no trace at all, or what failed for part of it.
    pub error: Option<String>,
}

/// The kernel's events around one latency on one CPU, explained.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceCapture {
    pub cpu: usize,
    pub probe: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
    /// The measurement thread, `comm:tid`.
    pub thread: String,
    pub latency_ns: u64,
    /// The latency's window from the start of the run: from when the thread should have run
    /// (its deadline) to when it did.
    pub window_start_ns: u64,
    pub window_end_ns: u64,
    /// How many times this CPU's trace was stopped by a new worst case (each read, explained
    /// and restarted; this is the largest).
    pub triggers: u64,
    /// New worst cases over the threshold on this CPU never traced: each came while the other
    /// instance was being read, and a larger one replaced it before that one recorded again.
    #[serde(default)]
    pub untraced: u64,
    /// After the window's start: when the thread's timer expired (the timer interrupt's
    /// clock), when the thread was woken, when it ran. Null where the trace does not show it.
    pub timer_expired_ns: Option<u64>,
    pub woken_ns: Option<u64>,
    pub running_ns: Option<u64>,
    /// The thread that held the CPU longest in the window, when one did.
    pub culprit: Option<Culprit>,
    /// Everything that ran on the CPU in the window, the largest share first.
    pub interference: Vec<Interference>,
    /// The part of the latency no traced event covers.
    pub unexplained_ns: u64,
    /// One sentence.
    pub explanation: String,
    /// Events in the window, and where the trace began (from the start of the run; null when
    /// it held no event): a trace that begins after the window's start explains only part of it.
    pub events_in_window: u64,
    pub trace_from_ns: Option<u64>,
}

/// The thread that kept the measurement from running.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Culprit {
    pub comm: String,
    pub pid: i32,
    /// `SCHED_FIFO`, `SCHED_RR`, `SCHED_OTHER`, ... (from /proc while it lives; else `RT` or
    /// `normal` from its kernel priority).
    pub policy: String,
    /// Its RT priority, or its nice value for a normal task.
    pub priority: i64,
    /// How long it held the CPU: its stays that reach into the window, whole (from a switch-in
    /// that may lie before the window).
    pub ran_ns: u64,
    /// Of that, inside the window, interrupts excluded.
    pub in_window_ns: u64,
    /// How many stays (1: it never left the CPU; more: something cut in, e.g. the kernel's stopper).
    pub stays: u64,
    pub share_percent: f64,
}

/// One source of interference in the window.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Interference {
    /// `irq`, `softirq`, `vector` (an x86 system vector: the local timer, IPIs), `thread`, `idle`.
    pub kind: String,
    pub name: String,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub share_percent: f64,
}
