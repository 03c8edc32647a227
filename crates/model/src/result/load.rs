//! The loads of a run as the result document records them (`RunResult::loads`,
//! `RunResult::containment`, `LoadResult`): what each was, when it ran, how its runs ended, what
//! it did and cost, and how they were contained. The load manager (`load::manager`) runs them
//! and fills these in; `load::spec` parses the generators from `--load`.

use serde::{Deserialize, Serialize};

/// What happened to one load, as recorded in the result document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadRecord {
    pub spec: String,
    pub generator: Generator,
    pub nice: Option<i32>,
    /// Scheduling policy of its processes (null: SCHED_OTHER).
    pub policy: Option<LoadPolicy>,
    pub cpus: Option<Vec<usize>>,
    /// Planned offsets from the start of the run (null: with the probes).
    pub planned_start_ns: Option<u64>,
    pub planned_end_ns: Option<u64>,
    /// Actual offsets from `monotonic_start_ns` (negative: before the probes started).
    pub started_ns: Option<i64>,
    pub stopped_ns: Option<i64>,
    /// How many times it was started (`cmd:` loads are restarted when they exit early).
    pub runs: u32,
    /// How its runs ended: `stopped`, `exited 0`, `exited 3`, `killed by signal 9`.
    pub endings: Endings,
    /// Whether the load failed (could not start, crashed, or exited early when it should not).
    pub failed: bool,
    pub error: Option<String>,
    /// CPU time, faults and context switches of the load's processes (summed over runs).
    pub usage: LoadUsage,
    /// Work done, as the built-in generator counted it (bytes written, messages, forks, ...).
    pub counters: std::collections::BTreeMap<String, u64>,
    /// hackbench: the time of each round, in seconds.
    pub round_times_s: Vec<f64>,
}

/// How a load's runs ended, bounded however often it was restarted: counts by kind, and the
/// first and the last few endings in order.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Endings {
    pub counts: std::collections::BTreeMap<String, u64>,
    /// The first endings (at most [`Endings::KEEP`]).
    pub first: Vec<String>,
    /// The latest endings after the first ones (at most [`Endings::KEEP`]).
    pub last: Vec<String>,
}

impl Endings {
    pub const KEEP: usize = 5;

    /// Counts ending `e` and keeps it if it is among the first or the last few.
    pub fn push(&mut self, e: String) {
        *self.counts.entry(e.clone()).or_default() += 1;
        if self.first.len() < Self::KEEP {
            self.first.push(e);
        } else {
            if self.last.len() == Self::KEEP {
                self.last.remove(0);
            }
            self.last.push(e);
        }
    }
}

/// CPU time, peak memory, faults and context switches of a load's processes, summed over its
/// runs (the kernel's `rusage` of each reaped child, as `sys::process::ChildUsage` reads it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadUsage {
    pub user_ns: u64,
    pub system_ns: u64,
    pub max_rss_kib: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

/// What a load does. Sizes are bytes, periods nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Generator {
    /// rt-tests hackbench: `groups` × (`fds` senders + `fds` receivers) passing `size`-byte messages
    /// over sockets or pipes, `loops` messages from every sender to every receiver of its group
    /// per round; rounds repeat until stopped (or once, standalone).
    Hackbench { groups: u32, fds: u32, size: usize, loops: u64, pipe: bool, threads: bool },
    /// Integer and floating-point work without system calls, one worker per CPU by default.
    Cpu { workers: u32 },
    /// Map, touch and unmap `bytes` per worker, again and again (page faults), like stress --vm.
    Vm { workers: u32, bytes: u64 },
    /// Write `size` bytes in `block`-byte writes, fsync, read them back; in a temporary directory.
    Io { workers: u32, size: u64, block: u64 },
    /// Create and reap processes as fast as possible.
    Fork { workers: u32 },
    /// Read /proc files (stat, interrupts, meminfo, every process's status).
    Proc { workers: u32 },
    /// UDP datagrams as fast as possible to loopback, or to `target` (the software ping flood).
    Net { workers: u32, size: usize, target: Option<String> },
    /// `count` threads each sleeping `period` over and over: timer interrupt load.
    Timers { count: u32, period_ns: u64 },
    /// An external command, run without a shell; restarted when it exits early if `restart`.
    Cmd { argv: Vec<String>, restart: bool },
}

/// The scheduling policy a load runs at: `other` (default), `batch`, `idle`, `fifo:N`, `rr:N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadPolicy {
    Other,
    Batch,
    Idle,
    Fifo(i32),
    Rr(i32),
}

/// How the loads of a run were contained, as recorded in the result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Containment {
    /// `cgroup-v2`, `cgroup-v1` or `process-group`.
    pub kind: String,
    /// The run's cgroup (null for process groups).
    pub cgroup: Option<String>,
    /// Why no cgroup was used, when none was.
    pub fallback_reason: Option<String>,
}
