//! Stage five of the flow: aggregation, in the non-RT collector. One account per ring of facts,
//! keyed by (probe, CPU, series): drains the ring into an HDR histogram (1 ns .. 1 h, 3 significant digits: the relative error
//! is bounded everywhere and there is no overflow bucket) and turns histograms plus the
//! threads' exact counters into the statistics every report uses.

pub mod hist;
pub mod segment;
pub mod timeline;

use crate::probe::{RunningProbes, Sample, Schedule, SeriesKey, ThreadCounters};
use crate::result::histogram::HistogramData;
use crate::result::timeline::{BoundCounts, TimelineData};
use crate::result::ProbeResult;
use crate::vocab::percentiles::Values;
use hdrhistogram::Histogram;
pub use hist::Hist;
use std::sync::atomic::Ordering::Relaxed;

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
    /// Sum of the histogrammed values (exact).
    pub sum_ns: u64,
    /// The reported percentiles (`vocab::percentiles::REPORTED`).
    pub percentiles: Values,
    pub max_ns: Option<u64>,
    /// Deadline of the maximum's period, as an offset from the start of the run (warm-up included).
    pub max_at_ns: Option<u64>,
    /// Values under and over the probe's bounds, for a probe that has them (the period loop).
    pub bounds: Option<BoundCounts>,
}

/// The figures of `probe` (with its series, if it has several) on `cpu` (`None`: combined), as
/// the result document keeps them.
pub fn probe_result(
    (probe, series): (&str, Option<&str>),
    cpu: Option<usize>,
    s: &LatencyStats,
    histogram: HistogramData,
) -> ProbeResult {
    ProbeResult {
        probe: probe.to_string(),
        series: series.map(str::to_string),
        cpu,
        samples: s.samples,
        missed: s.missed,
        warmup_samples: s.warmup_samples,
        warmup_missed: s.warmup_missed,
        handoff_overflows: s.handoff_overflows,
        page_faults: None,
        min_ns: s.min_ns,
        mean_ns: s.mean_ns.map(|m| (m * 10.0).round() / 10.0),
        percentiles: s.percentiles.counted(histogram.total_count),
        max_ns: s.max_ns,
        max_at_ns: s.max_at_ns,
        bounds: s.bounds,
        counts: Default::default(),
        measures: None,
        noise: None,
        sweep: None,
        timeline: None,
        convergence: None,
        forecast: None,
        histogram,
    }
}

/// Statistics with the histogram they came from, as the result document keeps it.
pub type Figures = (LatencyStats, HistogramData);

/// Reads percentile `p` (in percent) from a document's histogram, clamped into [min, max], as
/// [`percentile`] reads it from the decoded histogram but from its bucket list, without a dense
/// copy (the memory a continuous run's verdict takes does not grow with the worst case); from
/// the decoded histogram where the list does not hold every value (`None`: not decodable).
pub fn percentile_of(h: &HistogramData, p: f64, min: u64, max: u64) -> Option<u64> {
    let listed: u64 = h.buckets.triples().map(|[_, _, n]| n).sum();
    if listed != h.total_count || listed == 0 {
        return h.decode().ok().map(|d| percentile(&d, p, min, max));
    }
    hist::value_at_quantile(h.buckets.triples(), listed, p).map(|v| v.clamp(min, max))
}

/// Reads percentile `p` (in percent) from a histogram, clamped into [min, max]: HDR reports
/// the top of a bucket, which may lie a little above the exact maximum.
pub fn percentile(hist: &Histogram<u64>, p: f64, min: u64, max: u64) -> u64 {
    hist.value_at_quantile(p / 100.0).clamp(min, max)
}

/// What has been counted for one scope: a CPU over the whole run, a CPU in one phase, or
/// several of them merged. Warm-up periods are never in a tally.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Latencies of the samples that reached the collector.
    pub hist: Hist,
    /// Served periods (wake-ups), including those whose latency was lost in the hand-off.
    pub samples: u64,
    /// Periods whose deadline passed unserved.
    pub missed: u64,
    /// Samples whose latency never reached the collector (the ring was full).
    pub lost: u64,
    /// Exact extremes including lost samples, when the thread reported them (else the histogram's).
    pub extremes: Option<(u64, u64)>,
    /// Period of the largest latency.
    pub max_period: u64,
    /// Values under / over the account's bounds (0 without bounds).
    pub below: u64,
    pub above: u64,
}

impl Tally {
    fn record(&mut self, period: u64, latency_ns: u64, bounds: Option<(u64, u64)>) {
        if let Some((lo, hi)) = bounds {
            self.below += u64::from(latency_ns < lo);
            self.above += u64::from(latency_ns > hi);
        }
        if self.hist.is_empty() || latency_ns > self.hist.min_max().map_or(0, |m| m.1) {
            self.max_period = period;
        }
        self.hist.record(latency_ns);
        self.samples += 1;
    }

    /// Adds another tally (merging CPUs).
    pub fn merge(&mut self, o: &Tally) {
        if o.min_max().is_some_and(|(_, hi)| self.min_max().is_none_or(|(_, m)| hi > m)) {
            self.max_period = o.max_period;
        }
        let extremes = match (self.min_max(), o.min_max()) {
            (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
            (a, b) => a.or(b),
        };
        self.hist.add(&o.hist);
        self.samples += o.samples;
        self.missed += o.missed;
        self.lost += o.lost;
        self.below += o.below;
        self.above += o.above;
        self.extremes = extremes;
    }

    /// Exact extremes of every sample.
    pub fn min_max(&self) -> Option<(u64, u64)> {
        self.extremes.or_else(|| self.hist.min_max())
    }

    /// The statistics and the document's histogram of this tally; `warmup` = (samples, missed).
    /// Everything is read from the sparse counts, as HdrHistogram reads its dense copy (unit
    /// tests compare them): no dense copy is made, so the memory this takes does not grow with
    /// the worst case (a continuous run keeps a part with the same memory whatever it measured).
    pub fn stats(&self, warmup: (u64, u64), interval_ns: u64, bounds: Option<(u64, u64)>) -> Figures {
        let mm = self.min_max().filter(|_| self.samples > 0);
        let pct = |p: f64| mm.and_then(|(lo, hi)| self.hist.value_at(p).map(|v| v.clamp(lo, hi)));
        let stats = LatencyStats {
            samples: self.samples,
            missed: self.missed,
            warmup_samples: warmup.0,
            warmup_missed: warmup.1,
            handoff_overflows: self.lost,
            min_ns: mm.map(|m| m.0),
            mean_ns: (!self.hist.is_empty()).then(|| self.hist.sum() as f64 / self.hist.len() as f64),
            sum_ns: self.hist.sum() as u64,
            percentiles: Values::from_fn(pct),
            max_ns: mm.map(|m| m.1),
            max_at_ns: mm.map(|_| self.max_period * interval_ns),
            bounds: bounds.map(|(below_ns, above_ns)| BoundCounts { below_ns, above_ns, below: self.below, above: self.above }),
        };
        (stats, self.hist.to_data())
    }
}

/// Everything counted for one series of one probe instance (one ring of facts).
#[derive(Debug, Clone)]
pub struct Account {
    pub key: SeriesKey,
    pub schedule: Schedule,
    /// The probe's bounds (see `Accounting::bounds`).
    pub bounds: Option<(u64, u64)>,
    /// Its facts are events in windows of `interval_ns` (the noise probe's gaps), not periods:
    /// a window without a fact is a quiet one; only windows its thread never reached (held off
    /// its CPU until the end) are missed.
    pub events: bool,
    /// The first period of each phase (phase 0 starts at period 1); empty: no phases.
    phase_first: Vec<u64>,
    pub run: Tally,
    /// Per phase of the timeline (empty when the run has no phases).
    pub phases: Vec<Tally>,
    pub warmup_samples: u64,
    pub warmup_missed: u64,
    /// Warm-up wake-ups lost in the hand-off (counted in `warmup_samples` too).
    pub warmup_lost: u64,
    /// The last period accounted for (served or missed).
    pub accounted: u64,
    /// Periods counted as missed because the thread never came back to serve them (it was held
    /// off its CPU until the end).
    pub unserved: u64,
    /// The probe's own counts, as the thread left them (see `Probe::counters`).
    pub counts: [u64; crate::probe::MAX_COUNTS],
    /// Page faults its thread took while measuring, once the thread has ended (`None`: unknown,
    /// e.g. the run ended within the warm-up or the thread never came back).
    pub page_faults: Option<u64>,
    /// Per window of the run, when the collector keeps a timeline (`Collector::with_timeline`).
    pub timeline: Option<timeline::Timeline>,
    /// Where this account's part of the run lies in its thread's periods (rotated runs: see
    /// `segment`); the whole run when the run is not rotated.
    pub span: segment::Span,
}

impl Account {
    fn phase_of(&self, period: u64) -> usize {
        self.phase_first.partition_point(|&f| f <= period).saturating_sub(1)
    }

    /// Counts periods `a..=b` as missed or lost samples.
    fn count_range(&mut self, a: u64, b: u64, kind: Kind) {
        if a > b {
            return;
        }
        let warm_end = b.min(self.schedule.warmup_periods);
        let c = self;
        if a <= warm_end {
            c.add_warmup(kind, warm_end - a + 1);
        }
        let a = a.max(c.schedule.warmup_periods + 1);
        if a > b {
            return;
        }
        kind.add(&mut c.run, b - a + 1);
        if let Some(tl) = &mut c.timeline {
            tl.count_range(a, b, kind == Kind::Missed);
        }
        for (p, t) in c.phases.iter_mut().enumerate() {
            let first = c.phase_first[p];
            let last = c.phase_first.get(p + 1).map_or(u64::MAX, |n| n - 1);
            let (lo, hi) = (a.max(first), b.min(last));
            if lo <= hi {
                kind.add(t, hi - lo + 1);
            }
        }
    }

    /// Counts `n` warm-up periods (or events) of `kind`.
    fn add_warmup(&mut self, kind: Kind, n: u64) {
        match kind {
            Kind::Missed => self.warmup_missed += n,
            Kind::Lost => {
                self.warmup_samples += n;
                self.warmup_lost += n;
            }
        }
    }
}

impl Account {
    /// When values were lost in the hand-off, the run's extremes are the thread's own.
    fn keep_thread_extremes(&mut self, counters: &ThreadCounters) {
        if counters.handoff_overflows.load(Relaxed) > 0 && self.run.samples > 0 {
            let (lo, hi) = (counters.min_ns.load(Relaxed), counters.max_ns.load(Relaxed));
            let mm = self.run.hist.min_max().map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi)));
            if mm.1 > self.run.hist.min_max().map_or(0, |m| m.1) {
                self.run.max_period = counters.max_period.load(Relaxed);
            }
            self.run.extremes = Some(mm);
        }
    }

    /// Counts a value of period (or window) `period`: as warm-up, or in the run and its phase.
    fn record(&mut self, period: u64, value: u64) {
        if period <= self.schedule.warmup_periods {
            self.warmup_samples += 1;
        } else {
            let phase = self.phase_of(period);
            self.run.record(period, value, self.bounds);
            if let Some(tl) = &mut self.timeline {
                tl.record(period, value);
            }
            if let Some(t) = self.phases.get_mut(phase) {
                t.record(period, value, self.bounds);
            }
        }
    }

    /// Counts `n` events of window `window` as `kind`: lost in the hand-off (samples without a
    /// value), or missed just before an event of that window (a device's numbering skipped
    /// them); in the warm-up, or in the run and that window's phase.
    fn count_events(&mut self, window: u64, n: u64, kind: Kind) {
        if n == 0 {
            return;
        }
        if window <= self.schedule.warmup_periods {
            self.add_warmup(kind, n);
            return;
        }
        let phase = self.phase_of(window);
        for t in std::iter::once(&mut self.run).chain(self.phases.get_mut(phase)) {
            kind.add(t, n);
        }
        if let Some(tl) = &mut self.timeline {
            tl.count_at(window, n, kind == Kind::Missed);
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Missed,
    Lost,
}

impl Kind {
    /// Adds `n` of this kind to a tally: missed, or samples whose value was lost.
    fn add(self, t: &mut Tally, n: u64) {
        match self {
            Kind::Missed => t.missed += n,
            Kind::Lost => {
                t.samples += n;
                t.lost += n;
            }
        }
    }
}

/// What the collector is told of each ring.
#[derive(Debug, Clone, Copy)]
pub struct SeriesPlan {
    pub key: SeriesKey,
    pub schedule: Schedule,
    /// Its probe's bounds (see `Accounting::bounds`).
    pub bounds: Option<(u64, u64)>,
    /// Its facts are events (`Accounting::events`): no period is ever missed.
    pub events: bool,
}

/// Turns the facts handed over by the measurement threads into tallies per CPU and per phase.
/// Each period is counted exactly once: as a sample, a lost sample or a missed period; as
/// warm-up, or in the run and in the one phase its deadline falls in.
pub struct Collector {
    /// One per measurement thread, in the order of the threads.
    pub accounts: Vec<Account>,
    phases: usize,
    /// Where its part of the run starts, from the start of period 0 (0 unless rotated: see
    /// `segment`); each account's periods are counted from there.
    pub origin_ns: u64,
}

impl Collector {
    /// A collector for these threads. `phase_bounds`: offsets from the start (ns) where the
    /// timeline changes; none means no per-phase statistics. A phase starting at offset `b` holds
    /// each thread's periods whose deadlines lie after `b`, up to the next bound: period `k`
    /// spans `((k−1)·interval, k·interval]`.
    pub fn new(threads: &[SeriesPlan], phase_bounds: &[u64]) -> Collector {
        let phases = if phase_bounds.is_empty() { 0 } else { phase_bounds.len() + 1 };
        let accounts = threads
            .iter()
            .map(|&SeriesPlan { key, schedule, bounds, events }| {
                let phase_first: Vec<u64> = if phases == 0 {
                    Vec::new()
                } else {
                    std::iter::once(1).chain(phase_bounds.iter().map(|b| b / schedule.interval_ns + 1)).collect()
                };
                Account {
                    key,
                    schedule,
                    bounds,
                    events,
                    phase_first,
                    run: Tally::default(),
                    phases: vec![Tally::default(); phases],
                    warmup_samples: 0,
                    warmup_missed: 0,
                    warmup_lost: 0,
                    accounted: 0,
                    unserved: 0,
                    counts: [0; crate::probe::MAX_COUNTS],
                    page_faults: None,
                    timeline: None,
                    span: segment::Span::default(),
                }
            })
            .collect();
        Collector { accounts, phases, origin_ns: 0 }
    }

    /// Keeps a timeline of `window_ns` windows for every series (see `timeline`).
    pub fn with_timeline(mut self, window_ns: u64) -> Collector {
        for a in &mut self.accounts {
            a.timeline = Some(timeline::Timeline::new(window_ns, a.schedule.interval_ns));
        }
        self
    }

    /// Thread `i`'s timeline, finished (once measuring is over; `None`: none kept).
    pub fn take_timeline(&mut self, i: usize) -> Option<TimelineData> {
        let a = &mut self.accounts[i];
        let first = a.schedule.warmup_periods + 1;
        let last = a.accounted;
        a.timeline.as_mut().map(|t| t.finish(first, last))
    }

    /// Counts one fact from thread `i` (its period counted from the start of period 0).
    pub fn take(&mut self, i: usize, s: Sample) {
        let c = &mut self.accounts[i];
        let Some(s) = c.span.rebase(s, c.accounted, c.events) else { return };
        if c.events {
            c.count_events(s.period, s.lost_before, Kind::Lost);
            c.count_events(s.period, s.missed_after, Kind::Missed);
            if s.latency_ns != Sample::NO_VALUE {
                c.record(s.period, s.latency_ns);
            }
            c.accounted = c.accounted.max(s.period);
            return;
        }
        let gap_start = c.accounted + 1;
        let lost_end = gap_start.saturating_add(s.lost_before).min(s.period);
        c.count_range(gap_start, lost_end - 1, Kind::Lost);
        c.count_range(lost_end, s.period - 1, Kind::Missed);
        c.record(s.period, s.latency_ns);
        c.count_range(s.period + 1, s.period + s.missed_after, Kind::Missed);
        c.accounted = s.period + s.missed_after;
    }

    /// Moves every fact waiting in the rings into the tallies, up to the end of this part of the
    /// run when it is cut (rotated runs: later facts wait in the ring). Cheap; call it often.
    pub fn drain(&mut self, probes: &mut RunningProbes) {
        for i in 0..probes.rings.len() {
            if self.reached_end(i) {
                continue;
            }
            while let Ok(s) = probes.rings[i].pop() {
                if self.offer(i, s) {
                    break;
                }
            }
        }
    }

    /// Closes thread `i`'s account once measuring is over. A thread that has ended left its
    /// final counters: wake-ups lost at the very end are counted from them, and the extremes
    /// include every lost one. Periods whose deadlines lay within `end_ns` (from the start) that
    /// were never accounted for (the thread was held off its CPU) are counted as missed.
    /// (`end_ns` and the thread's counters count from the start of period 0; a rotated run's
    /// part of it counts its own periods from its base: see `segment`.)
    pub fn close(&mut self, i: usize, counters: &ThreadCounters, thread_ended: bool, end_ns: u64) {
        let c = &mut self.accounts[i];
        let base = c.span.base;
        let end_period = (end_ns / c.schedule.interval_ns).saturating_sub(base).min(c.schedule.periods);
        for ((kept, count), before) in c.counts.iter_mut().zip(&counters.counts).zip(c.span.counts_before) {
            *kept = count.load(Relaxed).saturating_sub(before);
        }
        let faults = counters.page_faults.load(Relaxed);
        // A thread's page faults are known for its whole loop only: not for a rotated part.
        c.page_faults = (thread_ended && faults != ThreadCounters::UNKNOWN && base == 0).then_some(faults);
        // Losses and the loop's own extremes are the whole loop's: those of earlier parts are
        // not this part's.
        let lost_before = c.span.prior_lost;
        let done_abs = counters.periods_done.load(Relaxed);
        if c.events {
            // A loop that ended saw every window up to where it stopped (a quiet window has no
            // event); one still held off its CPU saw none after its last event: those are missed.
            if thread_ended {
                let lost_total = counters.handoff_overflows.load(Relaxed);
                let lost_tail = lost_total.saturating_sub(lost_before + c.run.lost + c.warmup_lost);
                let last = c.accounted.max(c.schedule.warmup_periods + 1);
                c.count_events(last, lost_tail, Kind::Lost);
                c.count_events(last, counters.pending_missed.load(Relaxed), Kind::Missed);
                if base == 0 {
                    c.keep_thread_extremes(counters);
                }
                c.accounted = c.accounted.max(done_abs.saturating_sub(base)).max(end_period);
            } else if c.accounted < end_period {
                c.count_range(c.accounted + 1, end_period, Kind::Missed);
                c.unserved += end_period - c.accounted;
                c.accounted = end_period;
            }
            return;
        }
        if thread_ended {
            let done = done_abs.saturating_sub(base).min(c.schedule.periods);
            let lost_total = counters.handoff_overflows.load(Relaxed);
            let lost_tail = lost_total.saturating_sub(lost_before + c.run.lost + c.warmup_lost);
            let from = c.accounted + 1;
            let lost_end = from.saturating_add(lost_tail).min(done + 1);
            c.count_range(from, lost_end - 1, Kind::Lost);
            c.count_range(lost_end, done, Kind::Missed);
            c.accounted = c.accounted.max(done);
            if base == 0 {
                c.keep_thread_extremes(counters);
            }
        }
        let from = c.accounted + 1;
        if from <= end_period {
            c.count_range(from, end_period, Kind::Missed);
            c.unserved += end_period - from + 1;
            c.accounted = end_period;
        }
    }

    /// The accounts of series `series` of probe `probe`, in CPU order.
    pub fn of_series(&self, probe: usize, series: usize) -> impl Iterator<Item = (usize, &Account)> {
        self.accounts.iter().enumerate().filter(move |(_, a)| (a.key.probe, a.key.series) == (probe, series))
    }

    /// Statistics and histogram of thread `i` over the whole run.
    pub fn stats(&self, i: usize) -> Figures {
        let c = &self.accounts[i];
        c.run.stats((c.warmup_samples, c.warmup_missed), c.schedule.interval_ns, c.bounds)
    }

    /// All CPUs of series `series` of probe `probe` together over the whole run.
    pub fn combined_stats(&self, (probe, series): (usize, usize)) -> Figures {
        let mut t = Tally::default();
        let (mut ws, mut wm, mut interval, mut bounds) = (0, 0, 1, None);
        for (_, c) in self.of_series(probe, series) {
            t.merge(&c.run);
            ws += c.warmup_samples;
            wm += c.warmup_missed;
            (interval, bounds) = (c.schedule.interval_ns, c.bounds);
        }
        t.stats((ws, wm), interval, bounds)
    }

    /// The page faults taken while measuring by the threads of series `series` of probe `probe`,
    /// summed over its CPUs (`None` if no thread's count is known).
    pub fn combined_page_faults(&self, (probe, series): (usize, usize)) -> Option<u64> {
        self.of_series(probe, series).filter_map(|(_, a)| a.page_faults).reduce(|a, b| a + b)
    }

    /// The probe's own counts of series `series` of probe `probe`, summed over its CPUs.
    pub fn combined_counts(&self, (probe, series): (usize, usize)) -> [u64; crate::probe::MAX_COUNTS] {
        let mut sum = [0; crate::probe::MAX_COUNTS];
        for (_, a) in self.of_series(probe, series) {
            sum.iter_mut().zip(&a.counts).for_each(|(s, c)| *s += c);
        }
        sum
    }

    /// Thread `i`'s tally from `from_ns` to `to_ns` (from the start; both phase boundaries),
    /// merged from the phases that start within it; the whole run's when it has no phases.
    /// Measuring must be over and the phases not yet taken.
    pub fn span_tally(&self, i: usize, from_ns: u64, to_ns: u64) -> Tally {
        let c = &self.accounts[i];
        if c.phases.is_empty() {
            return c.run.clone();
        }
        let w = c.schedule.interval_ns;
        let (first, last) = (from_ns / w + 1, to_ns / w);
        let mut t = Tally::default();
        for (p, tally) in c.phases.iter().enumerate() {
            if (first..=last).contains(&c.phase_first[p]) {
                t.merge(tally);
            }
        }
        t
    }

    /// Number of phases (0: no phases).
    pub fn phase_count(&self) -> usize {
        self.phases
    }

    /// Hands over phase `p` of series `series` of probe `probe`: `f` gets its figures per CPU
    /// and then all CPUs together (`None`). Its tallies are freed as it goes (once measuring is
    /// over), and each document's histogram is made only when `f` takes it: the results of many
    /// phases on many CPUs need not sit beside all their tallies.
    pub fn take_phase(&mut self, (probe, series): (usize, usize), p: usize, mut f: impl FnMut(Option<usize>, Figures)) {
        let mut all = Tally::default();
        let (mut interval, mut bounds) = (1, None);
        for c in self.accounts.iter_mut().filter(|a| (a.key.probe, a.key.series) == (probe, series)) {
            let t = std::mem::take(&mut c.phases[p]);
            all.merge(&t);
            (interval, bounds) = (c.schedule.interval_ns, c.bounds);
            f(Some(c.key.cpu), t.stats((0, 0), interval, bounds));
        }
        f(None, all.stats((0, 0), interval, bounds));
    }

    /// What the live view shows for thread `i`: samples, missed, max and p99 so far.
    pub fn live(&self, i: usize) -> (u64, u64, Option<u64>, Option<u64>) {
        let t = &self.accounts[i].run;
        (t.samples, t.missed, t.min_max().map(|m| m.1), t.hist.percentile(99.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::histogram::new_histogram;

    /// A percentile read from a document's bucket list is the one its decoded histogram gives.
    #[test]
    fn a_percentile_from_the_bucket_list_is_the_decoded_histograms() {
        let mut x = 0x853c_49e6_748f_ea9bu64;
        for case in 0..30 {
            let mut h = new_histogram();
            for _ in 0..(1 + case * 211 % 4000) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                h.record(x % (1u64 << (x % 38)).max(1)).unwrap();
            }
            let data = HistogramData::encode(&h);
            let (min, max) = (h.min(), h.max());
            for p in crate::vocab::percentiles::REPORTED.iter().map(|r| r.q).chain([0.0, 95.0, 100.0]) {
                assert_eq!(percentile_of(&data, p, min, max), Some(percentile(&h, p, min, max)), "p{p}, case {case}");
            }
        }
    }

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

    /// `n` timer threads at 1 ms on CPUs 0.., with `warmup` of `periods` periods.
    fn threads(n: usize, warmup: u64, periods: u64) -> Vec<SeriesPlan> {
        let s = Schedule { interval_ns: 1_000_000, warmup_periods: warmup, periods };
        (0..n)
            .map(|cpu| SeriesPlan { key: SeriesKey { probe: 0, cpu, series: 0 }, schedule: s, bounds: None, events: false })
            .collect()
    }

    fn fact(period: u64, missed_after: u64, lost_before: u64) -> Sample {
        Sample { period, latency_ns: 1_000 + missed_after * 1_000_000, missed_after, lost_before }
    }

    /// Sums of one CPU's phases: (samples, missed, lost).
    fn phase_sums(c: &Account) -> (u64, u64, u64) {
        c.phases.iter().fold((0, 0, 0), |(s, m, l), t| (s + t.samples, m + t.missed, l + t.lost))
    }

    #[test]
    fn phases_cut_at_deadlines_hold_equal_periods() {
        // A 3 s run at 1 ms without warm-up, a load from 1 s to 2 s: 1000 periods per phase.
        let mut c = Collector::new(&threads(1, 0, 3000), &[1_000_000_000, 2_000_000_000]);
        for p in 1..=3000 {
            c.take(0, fact(p, 0, 0));
        }
        let per: Vec<u64> = c.accounts[0].phases.iter().map(|t| t.samples).collect();
        assert_eq!(per, vec![1000, 1000, 1000]);
    }

    #[test]
    fn phases_partition_missed_lost_and_a_stall_across_the_end() {
        let (warmup, last) = (100, 3000);
        let mut c =
            Collector::new(&threads(1, warmup, last), &[500_000_000, 1_700_000_000, 2_900_000_000]).with_timeline(300_000_000);
        let mut p = 1;
        while p <= last {
            // A stall of 40 periods every 450, one of 400 across the end; every 7th fact lost.
            let missed = if p == 2_650 {
                last - p
            } else if p % 450 == 0 {
                40.min(last - p)
            } else {
                0
            };
            if p % 7 != 0 {
                c.take(0, fact(p, missed, u64::from(p % 7 == 1 && p > 7)));
            }
            p += missed + 1;
        }
        c.close(0, &ThreadCounters::default(), false, last * 1_000_000);
        let t = &c.accounts[0];
        assert_eq!(t.run.samples + t.run.missed, last - warmup, "every measured period counted once");
        assert_eq!(t.warmup_samples + t.warmup_missed, warmup);
        assert_eq!(phase_sums(t), (t.run.samples, t.run.missed, t.run.lost), "phases sum to the run");
        assert!(t.run.missed >= 350, "the stall across the end is counted: {}", t.run.missed);
        assert_eq!((t.phases[3].samples, t.phases[3].missed), (0, 100), "the last phase lies inside the stall");
        let (samples, missed) = (t.run.samples, t.run.missed);
        let tl = c.take_timeline(0).unwrap();
        assert_eq!((tl.start_ns, tl.len()), (0, 10), "300 ms windows from the first measured period");
        assert_eq!(tl.count.iter().sum::<u64>(), samples, "the windows' counts sum to the run's");
        assert_eq!(tl.missed.iter().sum::<u64>(), missed, "the windows' missed sum to the run's");
        assert_eq!(tl.count[9], 0, "the last window lies inside the stall");
    }

    #[test]
    fn a_thread_that_never_ran_misses_every_period() {
        let mut c = Collector::new(&threads(2, 10, 2000), &[1_000_000_000]);
        for p in 1..=2000 {
            c.take(0, fact(p, 0, 0));
        }
        for i in 0..2 {
            c.close(i, &ThreadCounters::default(), false, 2_000_000_000);
        }
        assert_eq!((c.accounts[1].run.samples, c.accounts[1].run.missed, c.accounts[1].unserved), (0, 1990, 2000));
        assert_eq!(phase_sums(&c.accounts[1]), (0, 1990, 0));
        assert_eq!((c.accounts[0].run.samples, c.accounts[0].unserved), (1990, 0));
    }

    #[test]
    fn missed_events_count_in_their_window_phase_and_warm_up_and_survive_a_full_ring() {
        // Events in windows of 1 ms over 3 s, warm-up 100 windows, phases cut at 1 s and 2 s.
        let s = Schedule { interval_ns: 1_000_000, warmup_periods: 100, periods: 3000 };
        let plan = SeriesPlan { key: SeriesKey { probe: 0, cpu: 0, series: 0 }, schedule: s, bounds: None, events: true };
        let mut c = Collector::new(&[plan], &[1_000_000_000, 2_000_000_000]).with_timeline(1_000_000_000);
        let event = |window, value, missed| Sample { period: window, latency_ns: value, missed_after: missed, lost_before: 0 };
        c.take(0, event(50, 5_000, 2)); // warm-up: 2 missed before it
        c.take(0, event(500, Sample::NO_VALUE, 1)); // no value: counts its misses only
        c.take(0, event(1500, 7_000, 3));
        c.take(0, event(2500, 9_000, 0));
        let counters = ThreadCounters::default();
        counters.pending_missed.store(4, Relaxed); // a last fact that did not fit the ring
        c.close(0, &counters, true, 3_000_000_000);
        let a = &c.accounts[0];
        assert_eq!((a.warmup_samples, a.warmup_missed), (1, 2));
        assert_eq!((a.run.samples, a.run.missed), (2, 1 + 3 + 4));
        let per: Vec<(u64, u64)> = a.phases.iter().map(|t| (t.samples, t.missed)).collect();
        assert_eq!(per, [(0, 1), (1, 3), (1, 4)]);
        let tl = c.take_timeline(0).unwrap();
        assert_eq!((tl.count.clone(), tl.missed.clone()), (vec![0, 1, 1], vec![1, 3, 4]), "windows as the phases");
        assert_eq!(tl.max_ns, [0, 7_000, 9_000]);
    }
}
