//! What the dashboard (`rtgauge serve`) reads of a run without loading its document: per series
//! (all CPUs together: the run's combined entries) the figures a long-term view plots and its
//! histogram in coarse log-spaced bins (the heat map's column); per run, the shortest cycle time
//! it supports and its kernel configuration's hash. Made from the document when a run is saved
//! ([`figures_of`]), kept in a table of their own, filled for runs stored before by the layout's
//! migration. A board page of 1 000 runs reads these rows, not 1 000 documents.

use crate::result::RunResult;
use serde::Serialize;

/// The heat map's bins: bin 0 holds values under 1 µs; then `BINS_PER_DECADE` log-spaced bins
/// per decade from 1 µs to 10 s; the last bin holds 10 s and more.
pub const BIN_LOWEST_NS: u64 = 1_000;
pub const BINS_PER_DECADE: usize = 10;
pub const DECADES: usize = 7;
pub const BINS: usize = DECADES * BINS_PER_DECADE + 2;

/// The bin `ns` falls in.
pub fn bin_of(ns: u64) -> usize {
    let _ = ns;
    unimplemented!("filled by the store's change")
}

/// The lowest value of bin `i` and the lowest of the next (`None` for the last bin).
pub fn bin_range(i: usize) -> (u64, Option<u64>) {
    let _ = i;
    unimplemented!("filled by the store's change")
}

/// One series of one run (its combined entry: all CPUs together).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesFigures {
    /// Its place among the run's combined entries.
    pub entry: u32,
    /// As requirements name it: `timer`, `wakeup.task`.
    pub series: String,
    /// A latency that counts in a worst case and the cycle time (not a cycle length judged by
    /// bounds, an interval or a rate sweep): [`crate::result::ProbeResult::in_worst_case`].
    pub latency: bool,
    pub samples: u64,
    pub missed: u64,
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
    pub max_ns: Option<u64>,
    /// The histogram's counts in the bins above ([`BINS`] of them; empty for a series without a
    /// histogram).
    #[serde(skip)]
    pub bins: Vec<u64>,
}

/// What the dashboard reads of one run besides its row.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Figures {
    /// The shortest cycle time the run's worst case supports (the verdict's).
    pub shortest_cycle_ns: Option<u64>,
    /// The SHA-256 of the kernel configuration it ran on, if recorded.
    pub kernel_config: Option<String>,
    /// Its series, in the order of the document's combined entries.
    pub series: Vec<SeriesFigures>,
}

/// One board of the store: how many runs it has (among those a filter passes), when the first
/// and the last started, and the latest's id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoardRow {
    pub board: String,
    pub runs: u64,
    pub first_started_at: String,
    pub last_started_at: String,
    pub latest: i64,
}

/// The figures of a result, as the store keeps them.
pub fn figures_of(r: &RunResult) -> Figures {
    let _ = r;
    unimplemented!("filled by the store's change")
}
