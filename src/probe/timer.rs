//! The timer probe's real-time loop: sleep to an absolute CLOCK_MONOTONIC deadline, read the
//! clock, record `wake-up − deadline`. This is the cyclictest measurement, with missed
//! deadlines counted instead of silently skipped.
//!
//! The loop allocates nothing, takes no lock and prints nothing: its only system calls are
//! `clock_nanosleep` and `clock_gettime`; samples leave through a pre-allocated wait-free
//! ring, and the running counters through relaxed atomics that only this thread writes.

use super::{Sample, ThreadCounters};
use crate::sys;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Everything the loop needs, resolved before it starts (no globals, no lookups in the loop).
#[derive(Debug, Clone, Copy)]
pub struct TimerLoop {
    pub interval_ns: u64,
    /// Periods at the start whose samples are excluded from the statistics.
    pub warmup_periods: u64,
    /// Periods measured after the warm-up; each one ends as a sample or as a missed deadline.
    pub measure_periods: u64,
}

/// Runs the loop from `start_ns` (period `k` has its deadline at `start_ns + k·interval`)
/// until every period is accounted for or `stop` is set.
///
/// A wake-up `late` periods after its deadline means the deadlines of the next `late` periods
/// passed while the thread was not running: they are counted as missed and the thread resumes
/// at the first deadline still in the future, so there is no burst of catch-up samples.
pub fn run(cfg: TimerLoop, start_ns: u64, stop: &AtomicBool, ring: &mut rtrb::Producer<Sample>, out: &ThreadCounters) {
    let interval = cfg.interval_ns;
    let warmup = cfg.warmup_periods;
    let last = cfg.warmup_periods + cfg.measure_periods;
    let (mut samples, mut missed, mut warm_samples, mut warm_missed, mut overflows) = (0u64, 0u64, 0u64, 0u64, 0u64);
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
        let late = latency / interval;

        // Periods (period, skipped_to] passed unserved; split them at the warm-up boundary.
        let skipped_to = (period + late).min(last);
        let skipped_measured = skipped_to.saturating_sub(period.max(warmup));
        if skipped_to > period {
            warm_missed += (skipped_to - period) - skipped_measured;
            missed += skipped_measured;
            out.missed.store(missed, Relaxed);
            out.warmup_missed.store(warm_missed, Relaxed);
        }

        if period > warmup {
            samples += 1;
            if latency < min {
                min = latency;
                out.min_ns.store(min, Relaxed);
            }
            if latency > max {
                max = latency;
                out.max_ns.store(max, Relaxed);
                out.max_period.store(period, Relaxed);
            }
            if ring.push(Sample { period, latency_ns: latency }).is_err() {
                overflows += 1;
                out.handoff_overflows.store(overflows, Relaxed);
            }
            out.samples.store(samples, Relaxed);
        } else {
            warm_samples += 1;
            out.warmup_samples.store(warm_samples, Relaxed);
        }
        period += late + 1;
    }
    out.periods_done.store(period - 1, Relaxed);
}
