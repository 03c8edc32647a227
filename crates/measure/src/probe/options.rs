//! What every probe's `--measure` options share. A probe's module parses its options once, from
//! the `key=value` pairs the registry split off (a [`Given`]), into a typed value of its own; that
//! value ([`ProbeOptions`]) then says the probe's own interval, and is bound to the run's timing
//! ([`RunTiming`]) to make the probe. The helpers here keep the options every probe writes alike
//! (`interval=`, `rate=`) and the messages about them one.

use super::{Probe, Schedule, MAX_INTERVAL_NS, MIN_INTERVAL_NS};
use crate::vocab::units::{parse_duration_ns, Nanos};
use crate::vocab::Error;
use std::sync::Arc;

/// The run's timing every probe's periods follow: its length, its warm-up, and the interval
/// a probe uses unless its options set one.
#[derive(Debug, Clone, Copy)]
pub struct RunTiming {
    pub interval_ns: u64,
    pub warmup_ns: u64,
    pub total_ns: u64,
}

/// A probe's options, parsed from its `--measure` (by the probe's module), not yet bound to the
/// run's timing.
pub trait ProbeOptions: Send + Sync + std::fmt::Debug {
    /// The probe's own interval (its `interval=` or `rate=` option, or its default), if it has
    /// one; else it follows the run's.
    fn interval_ns(&self) -> Option<u64>;
    /// The probe for the run's timing; `text` is its `--measure` as typed, for messages about
    /// what the timing rules out (a warm-up that makes the run too long, a sweep too short).
    fn bind(&self, text: &str, timing: RunTiming) -> Result<Arc<dyn Probe>, Error>;
}

/// A `--measure` as the registry split it, for its probe's parser: the whole text (for messages),
/// the probe's name and its option summary (for an unknown option), and its `key=value` pairs in
/// the order given (each key once; a bare key has an empty value).
#[derive(Debug, Clone, Copy)]
pub struct Given<'a> {
    pub text: &'a str,
    pub name: &'static str,
    pub summary: &'static str,
    pub options: &'a [(String, String)],
}

impl Given<'_> {
    /// The message for an option the probe does not have.
    pub fn unknown(&self, key: &str) -> String {
        format!("--measure '{}': {} has no option '{key}'; its options: {}", self.text, self.name, self.summary)
    }

    /// The value of `interval=`, checked.
    pub fn interval(&self, v: &str) -> Result<u64, crate::vocab::Error> {
        self.interval_text(v).map_err(crate::vocab::Error::Invalid)
    }

    /// [`Self::interval`], its failure as text.
    fn interval_text(&self, v: &str) -> Result<u64, String> {
        parse_duration_ns(v, None).ok().filter(|&i| (MIN_INTERVAL_NS..=MAX_INTERVAL_NS).contains(&i)).ok_or_else(|| {
            format!(
                "--measure '{}': interval={v} is not a time within {}..{}; e.g. interval=1ms",
                self.text,
                Nanos(MIN_INTERVAL_NS),
                Nanos(MAX_INTERVAL_NS)
            )
        })
    }

    /// The value of `rate=` (events or datagrams a second), as an interval, checked.
    pub fn rate(&self, v: &str) -> Result<u64, crate::vocab::Error> {
        self.rate_text(v).map_err(crate::vocab::Error::Invalid)
    }

    /// [`Self::rate`], its failure as text.
    fn rate_text(&self, v: &str) -> Result<u64, String> {
        // A whole number a second: at most a second apart, at least the shortest interval.
        let range = 1..=1_000_000_000 / MIN_INTERVAL_NS;
        v.parse::<u64>().ok().filter(|r| range.contains(r)).map(|r| 1_000_000_000 / r).ok_or_else(|| {
            format!("--measure '{}': rate={v} is not a whole number a second within {range:?}; e.g. rate=1000", self.text)
        })
    }
}

/// A probe's schedule in the run's timing, at `interval_ns`.
pub fn schedule(timing: RunTiming, interval_ns: u64) -> Schedule {
    let warmup_periods = timing.warmup_ns.div_ceil(interval_ns);
    Schedule { interval_ns, warmup_periods, periods: (timing.total_ns / interval_ns).max(warmup_periods) }
}

/// The value named `v` in a table of (name, value): a wait method, a mechanism, an edge.
pub fn named<T: Copy>(table: &[(&str, T)], v: &str) -> Option<T> {
    table.iter().find(|(n, _)| *n == v).map(|(_, x)| *x)
}

/// The names of a table of (name, value), joined by `sep`: for help and messages.
pub fn names_of<T>(table: &[(&str, T)], sep: &str) -> String {
    table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(sep)
}
