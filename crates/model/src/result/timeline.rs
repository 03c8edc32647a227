//! What the result document keeps of a series over time: its timeline (per window of the
//! run, `ProbeResult::timeline`) and, for a probe with bounds, the values under and over them
//! (`ProbeResult::bounds`). The collector (`aggregate`) counts them; this is their stored form.

use serde::{Deserialize, Serialize};

/// A series' timeline as the result document keeps it: one column per figure, one entry per
/// window from that of the first measured period to that of the last period accounted for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineData {
    pub window_ns: u64,
    /// Start of the first window, from the start of the run (warm-up included).
    pub start_ns: u64,
    /// Served periods (samples, those whose value was lost in the hand-off included).
    pub count: Vec<u64>,
    pub missed: Vec<u64>,
    /// The window's largest value and its p99 (nearest rank); 0: no value in the window.
    pub max_ns: Vec<u64>,
    pub p99_ns: Vec<u64>,
}

impl TimelineData {
    /// Number of windows.
    pub fn len(&self) -> usize {
        self.count.len()
    }

    pub fn is_empty(&self) -> bool {
        self.count.is_empty()
    }
}

/// How many values lay under `below_ns` and over `above_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundCounts {
    pub below_ns: u64,
    pub above_ns: u64,
    pub below: u64,
    pub above: u64,
}
