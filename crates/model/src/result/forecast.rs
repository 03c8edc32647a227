//! "Was the run long enough?" as the result document keeps it, per series and CPU: the worst
//! case's convergence (when each new maximum came) and the forecast of the tail (a generalised
//! Pareto fit of the exceedances of a threshold, its return levels with their confidence
//! intervals, and the tests that decided whether it applies). `forecast` computes them after the
//! run from the histogram and the timeline; this module only holds them. See docs/forecast.md.

use serde::{Deserialize, Serialize};

/// A series' analysis as `forecast::analyses` makes it: the series (its index among a run's
/// `probes`), its convergence (`None`: no timeline to tell it from) and its forecast.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub series: usize,
    pub convergence: Option<Convergence>,
    pub forecast: Forecast,
}

/// How the worst case grew during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Convergence {
    /// Start and end of the series' measured span, from the start of the run (warm-up included,
    /// as `max_at_ns`).
    pub start_ns: u64,
    pub end_ns: u64,
    /// Every new maximum, in time order: the first window's maximum, then each one higher than
    /// all before it. Times are the start of the window it came in (`--window`), the last one's
    /// the exact `max_at_ns`.
    pub records: Vec<Record>,
    /// When the worst case last rose (the last record's time).
    pub last_rise_ns: u64,
    /// The periods that came after it (served and missed).
    pub periods_since: u64,
    /// The share of the span since the last rise, in percent.
    pub settled_percent: f64,
    /// Records (the first window's excepted) in the second half of the span.
    pub records_last_half: u64,
    /// Whether the worst case is still rising: 3 or more records in the last half, which a
    /// series of independent, identically distributed window maxima shows in fewer than 1 in 20
    /// runs (on average it shows ln 2 ≈ 0.7).
    pub rising: bool,
}

/// One new maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub at_ns: u64,
    pub max_ns: u64,
}

/// The forecast of a series' tail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Forecast {
    /// `peaks-over-threshold`: a generalised Pareto distribution fitted by maximum likelihood to
    /// the histogram's values over `threshold_ns`.
    pub method: String,
    /// The periods the series saw (served and missed) and the time they took: the exceedance
    /// rate is per period and per second of these.
    pub periods: u64,
    pub interval_ns: u64,
    pub measured_ns: u64,
    /// The threshold and how many values lay above it (absent when too few periods were measured
    /// to choose one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_ns: Option<u64>,
    pub exceedances: u64,
    /// The fit, when it applies: shape ξ (with its 95 % profile-likelihood interval), scale σ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<Fit>,
    /// Each test that decided whether the fit applies, in the order they were made.
    pub tests: Vec<TestOutcome>,
    /// An assumption of the forecast its data could not test (one sentence: which, and why; a
    /// histogram without a timeline — another tool's file — leaves the values' independence and
    /// stationarity untested). The forecast still applies and is shown with it; a requirement
    /// relies on it only when the run's `config.assume_independent` says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assumed: Option<String>,
    /// Why the forecast does not apply (one sentence); absent when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
    /// The latency exceeded on average once per hour, day and year of operation at this
    /// period, with 95 % intervals (empty when not applicable).
    pub return_levels: Vec<ReturnLevel>,
}

impl Forecast {
    pub fn applies(&self) -> bool {
        self.not_applicable.is_none() && self.fit.is_some()
    }
}

/// A generalised Pareto fit of the excesses over the threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub shape: f64,
    pub shape_low: f64,
    pub shape_high: f64,
    pub scale_ns: f64,
    /// `heavy` (ξ > 0 beyond its interval: no duration of testing bounds the worst case),
    /// `bounded` (ξ < 0 beyond its interval: the tail ends at `endpoint_ns`) or `exponential`
    /// (the interval holds 0).
    pub tail: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_ns: Option<f64>,
    /// The boundary of the 95 % likelihood-ratio confidence region of (σ, ξ): the interval of
    /// any return level is the range of its value over these points (profile likelihood).
    pub region: Vec<[f64; 2]>,
}

/// One test of the fit's assumptions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestOutcome {
    /// `anderson-darling`, `ljung-box`, `trend`, `halves`, `phases`.
    pub name: String,
    pub statistic: f64,
    pub p_value: f64,
    pub passed: bool,
    /// What it tested and found, one sentence.
    pub detail: String,
}

/// A return level: the latency exceeded on average once per `horizon`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReturnLevel {
    /// `1h`, `1d`, `1y` (of operation at this period), or `1e-9/period`.
    pub horizon: String,
    /// The horizon in periods (its per-period probability is the inverse).
    pub periods: f64,
    pub level_ns: f64,
    pub low_ns: f64,
    /// Absent: the interval has no upper end (the data allow an arbitrarily heavy tail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_ns: Option<f64>,
}
