//! The timer probe's real-time loop: sleep to an absolute CLOCK_MONOTONIC deadline, read the
//! clock, record `wake-up − deadline`. This is the cyclictest measurement, with missed
//! deadlines counted instead of silently skipped.
//!
//! The loop allocates nothing, takes no lock and prints nothing: its only system calls are
//! `clock_nanosleep` and `clock_gettime`; each wake-up leaves as a fact (the period, its latency,
//! the periods missed after it) through a pre-allocated wait-free ring, and the extremes through
//! relaxed atomics that only this thread writes.

use super::{Sample, ThreadCounters};
use crate::sys;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Everything the loop needs, resolved before it starts (no globals, no lookups in the loop).
#[derive(Debug, Clone, Copy)]
pub struct TimerLoop {
    pub interval_ns: u64,
    /// Periods at the start whose wake-ups do not count in the extremes (the collector
    /// excludes them from every statistic).
    pub warmup_periods: u64,
    /// Every period of the run, warm-up included; each one ends as a wake-up or a missed deadline.
    pub periods: u64,
}

/// Runs the loop from `start_ns` (period `k` has its deadline at `start_ns + k·interval`)
/// until every period is accounted for or `stop` is set.
///
/// A wake-up after the deadlines of later periods means those periods passed while the thread
/// was not running: the fact handed over says so (`missed_after`), and the thread resumes at
/// the first deadline not yet passed, so there is no burst of catch-up samples. A wake-up
/// exactly on the next deadline serves that period: only deadlines strictly before the
/// wake-up are missed.
pub fn run(cfg: TimerLoop, start_ns: u64, stop: &AtomicBool, ring: &mut rtrb::Producer<Sample>, out: &ThreadCounters) {
    let interval = cfg.interval_ns;
    let last = cfg.periods;
    let (mut lost, mut overflows) = (0u64, 0u64);
    let (mut min, mut max) = (u64::MAX, 0u64);
    let mut period: u64 = 1;
    while period <= last {
        if stop.load(Relaxed) {
            break;
        }
        let deadline = start_ns + period * interval;
        sys::sleep_until_monotonic(deadline);
        let now = sys::monotonic_ns();
        let latency = now.saturating_sub(deadline);
        let missed_after = missed_after(latency, interval, last - period);
        if period > cfg.warmup_periods {
            if latency < min {
                min = latency;
                out.min_ns.store(min, Relaxed);
            }
            if latency > max {
                max = latency;
                out.max_ns.store(max, Relaxed);
                out.max_period.store(period, Relaxed);
            }
        }
        if ring.push(Sample { period, latency_ns: latency, missed_after, lost_before: lost }).is_ok() {
            lost = 0;
        } else {
            lost += 1;
            overflows += 1;
            out.handoff_overflows.store(overflows, Relaxed);
        }
        period += missed_after + 1;
        out.periods_done.store(period - 1, Relaxed);
    }
}

/// Periods after the one just served whose deadlines lay strictly before a wake-up `latency_ns`
/// late, at most `remaining` (the periods left in the run). A wake-up exactly on the next
/// deadline serves that period: it is not missed.
#[inline(always)]
pub fn missed_after(latency_ns: u64, interval_ns: u64, remaining: u64) -> u64 {
    (latency_ns.saturating_sub(1) / interval_ns).min(remaining)
}

#[cfg(test)]
mod tests {
    use super::missed_after;

    #[test]
    fn a_wake_up_exactly_on_the_next_deadline_misses_nothing() {
        let ms = 1_000_000;
        assert_eq!(missed_after(0, ms, 10), 0);
        assert_eq!(missed_after(ms - 1, ms, 10), 0);
        assert_eq!(missed_after(ms, ms, 10), 0, "on the next deadline: that period is served");
        assert_eq!(missed_after(ms + 1, ms, 10), 1, "later than it: missed");
        assert_eq!(missed_after(3 * ms, ms, 10), 2);
        assert_eq!(missed_after(u64::MAX, ms, 10), 10, "never beyond the run");
    }
}
