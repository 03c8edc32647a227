//! The period probe: a cyclic loop, the way a control loop or a driver's 10 ms loop runs (AM3356
//! loop). It sleeps to absolute CLOCK_MONOTONIC deadlines every interval and records each
//! **cycle length**, the time from the previous wake-up to this one; the collector counts the
//! cycles shorter than `below` and longer than `above` (default −20 % / +20 % of the interval,
//! the AM3356 loop's 8 ms and 12 ms at 10 ms). Beside it, each cycle's **jitter**, how far its
//! length lies from the interval (|cycle − interval|): the cycle's histogram keeps three
//! significant digits of 10 ms (steps of 8 µs), the jitter's three of its own few microseconds
//! (steps of nanoseconds), as cyclictest's cycle-to-cycle figures need to be compared. A
//! deadline passed while the thread was held off its CPU is counted as missed and skipped, as
//! the timer probe does; the cycle across it is one long cycle (and one large jitter).
//!
//! The loop allocates nothing, takes no lock and prints nothing: its only system calls are
//! `clock_nanosleep` and `clock_gettime`; each cycle leaves as a fact through the thread's
//! [`Handoff`].

use super::{timer::missed_after, Handoff, Probe, Role, RtLoop, Schedule};
use crate::sys;
use crate::vocab::units::Nanos;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The probe's name in `--measure`, results and requirements.
pub const NAME: &str = "period";
/// The interval of a period loop unless its options set one: the AM3356 loop's.
pub const DEFAULT_INTERVAL_NS: u64 = 10_000_000;
/// Its series: the cycle lengths (judged by the bounds) and their distance from the interval.
pub const SERIES: &[&str] = &["cycle", "jitter"];
const CYCLE: usize = 0;
const JITTER: usize = 1;

/// The period probe: its cycles and the bounds a cycle is judged by.
#[derive(Debug, Clone, Copy)]
pub struct PeriodProbe {
    pub schedule: Schedule,
    /// Cycles shorter than this count as `below`, longer than `above_ns` as `above`.
    pub below_ns: u64,
    pub above_ns: u64,
}

impl Probe for PeriodProbe {
    fn name(&self) -> &'static str {
        NAME
    }
    fn schedule(&self) -> Schedule {
        self.schedule
    }
    fn settings(&self) -> Vec<String> {
        vec![
            format!("interval={}", Nanos(self.schedule.interval_ns)),
            format!("below={}", Nanos(self.below_ns)),
            format!("above={}", Nanos(self.above_ns)),
            format!("warmup={}", self.schedule.warmup_periods),
        ]
    }
    fn bounds(&self, series: usize) -> Option<(u64, u64)> {
        (series == CYCLE).then_some((self.below_ns, self.above_ns))
    }
    fn series(&self) -> &'static [&'static str] {
        SERIES
    }
    fn measures(&self, series: usize) -> Option<&'static str> {
        // A jitter is no latency: it counts in no worst case; a requirement names it.
        (series == JITTER).then_some("deviation")
    }
    fn instance(&self, cpu: usize, _cpus: &[usize]) -> Result<Vec<Role>, String> {
        let schedule = self.schedule;
        let setup: super::ThreadSetup = Box::new(move || Ok(Box::new(PeriodLoop { schedule }) as Box<dyn RtLoop>));
        Ok(vec![Role { series: vec![CYCLE, JITTER], ..Role::single(cpu, setup) }])
    }
}

/// The loop of one period thread.
pub struct PeriodLoop {
    schedule: Schedule,
}

impl RtLoop for PeriodLoop {
    /// Cycle `k` ends at the wake-up for the deadline `start_ns + k·interval`; its length is
    /// measured from the previous wake-up (from `start_ns` for the first), its jitter is the
    /// length's distance from the interval.
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        let Schedule { interval_ns: interval, periods: last, .. } = self.schedule;
        let [cycles, jitters] = out else { return };
        let (mut period, mut previous) = (1u64, start_ns);
        while period <= last && !stop.load(Relaxed) {
            let deadline = start_ns + period * interval;
            sys::sleep_until_monotonic(deadline);
            let now = sys::monotonic_ns();
            let missed_after = missed_after(now.saturating_sub(deadline), interval, last - period);
            let cycle = now - previous;
            cycles.served(period, cycle, missed_after);
            jitters.served(period, cycle.abs_diff(interval), missed_after);
            previous = now;
            period += missed_after + 1;
        }
    }
}
