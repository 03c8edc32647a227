//! Stage five of the flow: aggregation, in the non-RT collector. Drains each measurement
//! thread's ring into an HDR histogram (1 ns .. 1 h, 3 significant digits: the relative error
//! is bounded everywhere and there is no overflow bucket) and turns histograms plus the
//! threads' exact counters into the statistics every report uses.

use crate::probe::{RunningProbes, Sample, ThreadCounters};
use hdrhistogram::Histogram;
use std::sync::atomic::Ordering::Relaxed;

/// Lowest and highest trackable latency, and precision, of every latency histogram.
pub const HIST_LOWEST_NS: u64 = 1;
pub const HIST_HIGHEST_NS: u64 = 3_600_000_000_000;
pub const HIST_SIGFIG: u8 = 3;

/// A new, empty latency histogram with the project-wide bounds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(HIST_LOWEST_NS, HIST_HIGHEST_NS, HIST_SIGFIG).expect("valid constant bounds")
}

/// What has been collected for one measurement thread.
pub struct CpuAggregate {
    pub hist: Histogram<u64>,
    /// Exact sum of the collected latencies (for an exact mean).
    pub sum_ns: u128,
}

/// Statistics of one probe on one CPU (or of all CPUs together).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyStats {
    pub samples: u64,
    pub missed: u64,
    pub warmup_samples: u64,
    pub warmup_missed: u64,
    pub handoff_overflows: u64,
    /// `None` when there are no samples.
    pub min_ns: Option<u64>,
    pub mean_ns: Option<f64>,
    pub p50_ns: Option<u64>,
    pub p90_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
    pub p9999_ns: Option<u64>,
    pub max_ns: Option<u64>,
    /// Time of the maximum, as an offset from the start of the run (warm-up included).
    pub max_at_ns: Option<u64>,
}

/// Reads percentile `p` (in percent) from a histogram, clamped into [min, max]: HDR reports
/// the top of a bucket, which may lie a little above the exact maximum.
pub fn percentile(hist: &Histogram<u64>, p: f64, min: u64, max: u64) -> u64 {
    hist.value_at_quantile(p / 100.0).clamp(min, max)
}

impl LatencyStats {
    pub fn from_parts(
        hist: &Histogram<u64>,
        sum_ns: u128,
        counts: [u64; 5],
        min_max: Option<(u64, u64)>,
        max_at_ns: Option<u64>,
    ) -> LatencyStats {
        let [samples, missed, warmup_samples, warmup_missed, handoff_overflows] = counts;
        let (min, max) = min_max.unwrap_or((0, 0));
        let some = samples > 0 && min_max.is_some();
        let pct = |p: f64| (some && !hist.is_empty()).then(|| percentile(hist, p, min, max));
        let mean = (some && !hist.is_empty()).then(|| sum_ns as f64 / hist.len() as f64);
        LatencyStats {
            samples,
            missed,
            warmup_samples,
            warmup_missed,
            handoff_overflows,
            min_ns: some.then_some(min),
            mean_ns: mean,
            p50_ns: pct(50.0),
            p90_ns: pct(90.0),
            p99_ns: pct(99.0),
            p999_ns: pct(99.9),
            p9999_ns: pct(99.99),
            max_ns: some.then_some(max),
            max_at_ns: if some { max_at_ns } else { None },
        }
    }
}

/// What has been collected for one CPU in one phase of the timeline.
pub struct PhaseAggregate {
    pub hist: Histogram<u64>,
    pub sum_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Latest deadline with the maximum, from the start of the run.
    pub max_at_ns: u64,
    /// Periods of this phase whose deadline passed unserved.
    pub missed: u64,
}

impl PhaseAggregate {
    fn new() -> PhaseAggregate {
        PhaseAggregate { hist: new_histogram(), sum_ns: 0, min_ns: u64::MAX, max_ns: 0, max_at_ns: 0, missed: 0 }
    }

    /// Statistics of this phase (no warm-up or hand-off counts: they belong to the whole run).
    pub fn stats(&self) -> LatencyStats {
        let n = self.hist.len();
        let min_max = (n > 0).then_some((self.min_ns, self.max_ns));
        LatencyStats::from_parts(&self.hist, self.sum_ns, [n, self.missed, 0, 0, 0], min_max, Some(self.max_at_ns))
    }
}

/// The timeline cut into phases at every load start and stop: `bounds[i]` is where phase `i`
/// starts (from the start of the run, warm-up included); the last one runs to the end.
pub struct Phases {
    pub bounds: Vec<u64>,
    /// `per_cpu[cpu index][phase]`.
    pub per_cpu: Vec<Vec<PhaseAggregate>>,
    /// The last period collected per CPU (to find the periods missed in between).
    last_period: Vec<u64>,
}

impl Phases {
    fn phase_of(&self, offset_ns: u64) -> usize {
        self.bounds.partition_point(|&b| b <= offset_ns).saturating_sub(1)
    }

    /// All CPUs together in phase `i`: merged histograms, summed counts, overall extremes.
    pub fn combined(&self, i: usize) -> (LatencyStats, Histogram<u64>) {
        let mut hist = new_histogram();
        let (mut sum, mut missed, mut min_max, mut max_at) = (0u128, 0u64, None::<(u64, u64)>, None);
        for cpu in &self.per_cpu {
            let a = &cpu[i];
            hist.add(&a.hist).expect("same bounds");
            sum += a.sum_ns;
            missed += a.missed;
            if !a.hist.is_empty() {
                if min_max.is_none_or(|(_, m)| a.max_ns > m) {
                    max_at = Some(a.max_at_ns);
                }
                min_max = Some(min_max.map_or((a.min_ns, a.max_ns), |(lo, hi)| (lo.min(a.min_ns), hi.max(a.max_ns))));
            }
        }
        (LatencyStats::from_parts(&hist, sum, [hist.len(), missed, 0, 0, 0], min_max, max_at), hist)
    }

    /// Counts the missed periods `first..=last` into the phases their deadlines fall in.
    fn add_missed(&mut self, cpu: usize, first: u64, last: u64, interval_ns: u64) {
        let mut p = first;
        while p <= last {
            let phase = self.phase_of(p * interval_ns);
            // Last period still in this phase.
            let end = self.bounds.get(phase + 1).map_or(last, |&b| (b.saturating_sub(1) / interval_ns).min(last));
            let end = end.max(p);
            self.per_cpu[cpu][phase].missed += end - p + 1;
            p = end + 1;
        }
    }
}

/// Drains the rings of running probes into per-CPU histograms (and per-phase ones).
pub struct Collector {
    pub per_cpu: Vec<CpuAggregate>,
    interval_ns: u64,
    pub phases: Option<Phases>,
}

impl Collector {
    /// A collector for these CPUs. `phase_starts`: offsets where the timeline changes (load starts
    /// and stops); none means one phase and no per-phase statistics. `warmup_periods`: the
    /// periods before the first measured one.
    pub fn new(cpus: &[usize], interval_ns: u64, phase_starts: &[u64], warmup_periods: u64) -> Collector {
        let phases = (!phase_starts.is_empty()).then(|| {
            let mut bounds: Vec<u64> = std::iter::once(0).chain(phase_starts.iter().copied()).collect();
            bounds.sort_unstable();
            bounds.dedup();
            Phases {
                per_cpu: cpus.iter().map(|_| bounds.iter().map(|_| PhaseAggregate::new()).collect()).collect(),
                bounds,
                last_period: vec![warmup_periods; cpus.len()],
            }
        });
        Collector {
            per_cpu: cpus.iter().map(|_| CpuAggregate { hist: new_histogram(), sum_ns: 0 }).collect(),
            interval_ns,
            phases,
        }
    }

    /// Moves every sample waiting in the rings into the histograms. Cheap; call it often.
    pub fn drain(&mut self, probes: &mut RunningProbes) {
        let interval = self.interval_ns;
        for (cpu, (agg, ring)) in self.per_cpu.iter_mut().zip(probes.rings.iter_mut()).enumerate() {
            while let Ok(Sample { latency_ns, period }) = ring.pop() {
                agg.hist.saturating_record(latency_ns);
                agg.sum_ns += latency_ns as u128;
                if let Some(ph) = &mut self.phases {
                    let last = ph.last_period[cpu];
                    if period > last + 1 {
                        ph.add_missed(cpu, last + 1, period - 1, interval);
                    }
                    ph.last_period[cpu] = period;
                    let offset = period * interval;
                    let i = ph.phase_of(offset);
                    let a = &mut ph.per_cpu[cpu][i];
                    a.hist.saturating_record(latency_ns);
                    a.sum_ns += latency_ns as u128;
                    a.min_ns = a.min_ns.min(latency_ns);
                    if latency_ns >= a.max_ns {
                        a.max_ns = latency_ns;
                        a.max_at_ns = offset;
                    }
                }
            }
        }
    }

    /// Statistics of CPU number `i` (an index into `per_cpu`) from its histogram and counters.
    pub fn cpu_stats(&self, i: usize, c: &ThreadCounters) -> LatencyStats {
        let agg = &self.per_cpu[i];
        let samples = c.samples.load(Relaxed);
        let min_max = (samples > 0).then(|| (c.min_ns.load(Relaxed), c.max_ns.load(Relaxed)));
        LatencyStats::from_parts(
            &agg.hist,
            agg.sum_ns,
            counts(c),
            min_max,
            Some(c.max_period.load(Relaxed) * self.interval_ns),
        )
    }

    /// Statistics of all CPUs together: merged histograms, summed counters, overall extremes.
    pub fn combined_stats(&self, counters: &[std::sync::Arc<ThreadCounters>]) -> (LatencyStats, Histogram<u64>) {
        let mut hist = new_histogram();
        let mut sum = 0u128;
        let mut totals = [0u64; 5];
        let mut min_max: Option<(u64, u64)> = None;
        let mut max_at = None;
        for (agg, c) in self.per_cpu.iter().zip(counters) {
            hist.add(&agg.hist).expect("same bounds");
            sum += agg.sum_ns;
            for (t, v) in totals.iter_mut().zip(counts(c)) {
                *t += v;
            }
            if c.samples.load(Relaxed) > 0 {
                let (lo, hi) = (c.min_ns.load(Relaxed), c.max_ns.load(Relaxed));
                if min_max.is_none_or(|(_, m)| hi > m) {
                    max_at = Some(c.max_period.load(Relaxed) * self.interval_ns);
                }
                min_max = Some(min_max.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            }
        }
        (LatencyStats::from_parts(&hist, sum, totals, min_max, max_at), hist)
    }
}

fn counts(c: &ThreadCounters) -> [u64; 5] {
    [
        c.samples.load(Relaxed),
        c.missed.load(Relaxed),
        c.warmup_samples.load(Relaxed),
        c.warmup_missed.load(Relaxed),
        c.handoff_overflows.load(Relaxed),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_keeps_a_one_hour_maximum_within_precision() {
        let mut h = new_histogram();
        h.record(1).unwrap();
        h.record(3_599_000_000_000).unwrap();
        let top = h.max();
        assert!(top >= 3_599_000_000_000 && (top - 3_599_000_000_000) as f64 / 3.599e12 < 0.001);
    }

    #[test]
    fn percentiles_clamped_to_exact_extremes() {
        let mut h = new_histogram();
        for v in [1001u64, 1002, 1003, 50_123] {
            h.record(v).unwrap();
        }
        assert_eq!(percentile(&h, 100.0 - 1e-9, 1001, 50_123), 50_123);
        assert_eq!(percentile(&h, 0.0, 1001, 50_123), 1001);
    }
}
