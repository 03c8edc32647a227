//! The timeline of one series: per window of the run (default 1 s; shorter for runs under 50 s,
//! see [`default_window_ns`]; `--window`), how many
//! periods were served and missed, and the largest value and the p99 of the window's values, so
//! latency can be drawn against time for a day-long run without keeping a single sample.
//! Windows are cut on the run's clock (window `w` holds the periods whose deadlines lie in
//! `(w·window, (w+1)·window]` from the start of the run, warm-up included), like the phases, so
//! they line up with the loads; warm-up periods count in no window. Counts partition the run's
//! exactly: the windows' `count` sum to its samples, their `missed` to its missed periods.

use crate::result::timeline::TimelineData;

/// The most windows one series keeps (≈ 28 h at the default 1 s): a longer run gets wider
/// default windows (`default_window_ns`); a `--window` that would need more is refused.
pub const MAX_WINDOWS: u64 = 100_000;

/// The windows a run shorter than [`FEWEST_WINDOWS`] seconds is cut into by default: the tests
/// of a forecast's independence and stationarity need 20 windows that saw periods
/// (`forecast::MIN_WINDOWS`), and the first and last window may hold few.
pub const FEWEST_WINDOWS: u64 = 50;

/// The default window for a run of `run_ns` (warm-up included) whose longest interval is
/// `interval_ns`: 1 s from 50 s to a day; for a shorter run the longest of 1, 2 and 5 ms, 10, 20
/// and 50 ms, 100, 200 and 500 ms that cuts it into at least [`FEWEST_WINDOWS`] (a 10-s run:
/// 200 ms; so that a run of 10 000 periods can be forecast), yet no shorter than the interval
/// (every window holds a period); for a longer one the least whole number of seconds that keeps
/// it within [`MAX_WINDOWS`]. A run whose figures are published as it goes (`live`: metrics, or
/// rotated parts) keeps whole seconds: a window is what a scrape or a part is made of.
pub fn default_window_ns(run_ns: u64, interval_ns: u64, live: bool) -> u64 {
    const SECOND: u64 = 1_000_000_000;
    if run_ns < FEWEST_WINDOWS * SECOND && !live {
        const STEPS: [u64; 9] = [500, 200, 100, 50, 20, 10, 5, 2, 1];
        let ms = STEPS.into_iter().find(|&ms| run_ns / (ms * 1_000_000) >= FEWEST_WINDOWS).unwrap_or(1);
        // (no shorter than the interval: the shortest step at or above it, else a second)
        let at_least = STEPS.into_iter().rev().find(|&s| s * 1_000_000 >= interval_ns).unwrap_or(1_000);
        return ms.max(at_least) * 1_000_000;
    }
    run_ns.div_ceil(MAX_WINDOWS).div_ceil(SECOND).max(1) * SECOND
}

/// A timeline being counted, in the collector (never in an RT thread).
#[derive(Debug, Clone)]
pub struct Timeline {
    interval_ns: u64,
    data: TimelineData,
    /// The window whose values `values` holds, and those values (for its p99).
    current: Option<usize>,
    values: Vec<u64>,
}

impl Timeline {
    /// An empty timeline of `window_ns` windows for periods of `interval_ns`.
    pub fn new(window_ns: u64, interval_ns: u64) -> Timeline {
        let data = TimelineData { window_ns, ..Default::default() };
        Timeline { interval_ns, data, current: None, values: Vec::new() }
    }

    /// The largest value of the last window, if it has one (a closed part's last window).
    pub fn last_window_max(&self) -> Option<u64> {
        let w = self.data.count.len().checked_sub(1)?;
        (self.data.count[w] > 0 && self.data.max_ns[w] > 0).then(|| self.data.max_ns[w])
    }

    /// The largest value of the last completed window (the one before the window facts now
    /// arrive in), if it has one.
    pub fn completed_window_max(&self) -> Option<u64> {
        let w = self.data.count.len().checked_sub(2)?;
        (self.data.count[w] > 0 && self.data.max_ns[w] > 0).then(|| self.data.max_ns[w])
    }

    /// Its window's length.
    pub fn window_ns(&self) -> u64 {
        self.data.window_ns
    }

    /// The window holding period `period` (≥ 1): its deadline's.
    fn window_of(&self, period: u64) -> usize {
        ((period.max(1) * self.interval_ns - 1) / self.data.window_ns) as usize
    }

    /// The last period whose deadline lies in window `w`.
    fn last_period_of(&self, w: usize) -> u64 {
        (w as u64 + 1) * self.data.window_ns / self.interval_ns
    }

    /// Makes room for window `w`.
    fn reach(&mut self, w: usize) {
        if self.data.count.len() <= w {
            for column in [&mut self.data.count, &mut self.data.missed, &mut self.data.max_ns, &mut self.data.p99_ns] {
                column.resize(w + 1, 0);
            }
        }
    }

    /// Counts a served period with its value.
    pub fn record(&mut self, period: u64, value: u64) {
        let w = self.window_of(period);
        self.reach(w);
        if self.current.is_none_or(|c| c < w) {
            self.close_window();
            self.current = Some(w);
        }
        if self.current == Some(w) {
            self.values.push(value);
        }
        self.data.count[w] += 1;
        self.data.max_ns[w] = self.data.max_ns[w].max(value);
    }

    /// Counts periods `a..=b` as served without a value (`missed` false) or as missed.
    pub fn count_range(&mut self, a: u64, b: u64, missed: bool) {
        let mut k = a;
        while k <= b {
            let w = self.window_of(k);
            let last = self.last_period_of(w).min(b);
            self.count_at(k, last - k + 1, missed);
            k = last + 1;
        }
    }

    /// Counts `n` periods in the window of period `period` (served without a value, or missed).
    pub fn count_at(&mut self, period: u64, n: u64, missed: bool) {
        let w = self.window_of(period);
        self.reach(w);
        let column = if missed { &mut self.data.missed } else { &mut self.data.count };
        column[w] += n;
    }

    /// Sets the p99 of the window whose values are held, and lets them go.
    fn close_window(&mut self) {
        if let Some(w) = self.current.take() {
            if !self.values.is_empty() {
                let rank = (self.values.len() * 99).div_ceil(100).max(1) - 1;
                let (_, p99, _) = self.values.select_nth_unstable(rank);
                self.data.p99_ns[w] = *p99;
            }
            self.values.clear();
        }
    }

    /// The finished timeline, from the window of the first measured period (`first_period`) to
    /// that of the last period accounted for (`last_period`): quiet windows (an event probe's)
    /// are windows too.
    pub fn finish(&mut self, first_period: u64, last_period: u64) -> TimelineData {
        self.close_window();
        if last_period >= first_period {
            self.reach(self.window_of(last_period));
        }
        let first = self.window_of(first_period).min(self.data.count.len());
        let window_ns = self.data.window_ns;
        let mut data = std::mem::replace(&mut self.data, TimelineData { window_ns, ..Default::default() });
        for column in [&mut data.count, &mut data.missed, &mut data.max_ns, &mut data.p99_ns] {
            column.drain(..first);
        }
        data.start_ns = first as u64 * window_ns;
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_partition_counts_and_missed_exactly() {
        // 1 ms periods, 1 s windows; a 2500-period stall from period 1500.
        let mut t = Timeline::new(1_000_000_000, 1_000_000);
        for k in 1..1500 {
            t.record(k, k);
        }
        t.count_range(1500, 3999, true);
        for k in 4000..=5000 {
            t.record(k, 10);
        }
        let d = t.finish(1, 5000);
        assert_eq!(d.count, [1000, 499, 0, 1, 1000]);
        assert_eq!(d.missed, [0, 501, 1000, 999, 0]);
        assert_eq!(d.max_ns, [1000, 1499, 0, 10, 10]);
        assert_eq!(d.p99_ns[0], 990, "nearest rank of 1..=1000");
        assert_eq!(d.count.iter().sum::<u64>() + d.missed.iter().sum::<u64>(), 5000);
    }

    #[test]
    fn warm_up_windows_are_dropped_and_a_window_need_not_divide_the_interval() {
        // 3 ms periods in 1 s windows: period 333's deadline is 999 ms, 334's 1002 ms.
        let mut t = Timeline::new(1_000_000_000, 3_000_000);
        for k in 1..=1000 {
            t.record(k, 5);
        }
        assert_eq!(t.finish(1, 1000).count, [333, 333, 334]);
        let mut t = Timeline::new(1_000_000_000, 1_000_000);
        for k in 1501..=3000 {
            t.record(k, 5);
        }
        let d = t.finish(1501, 3000);
        assert_eq!((d.start_ns, d.count.clone()), (1_000_000_000, vec![500, 1000]));
        // Quiet windows after the last event are windows too; nothing measured, none.
        let mut t = Timeline::new(1_000_000_000, 1_000_000);
        t.record(10, 5);
        assert_eq!(t.finish(1, 3000).count, [1, 0, 0]);
        assert!(Timeline::new(1_000_000_000, 1_000_000).finish(1501, 1500).is_empty());
    }

    #[test]
    fn a_short_run_gets_windows_enough_for_the_tests() {
        // 10 000 periods at 1 ms: 200 ms, 50 windows; at 100 µs: 20 ms, 50 windows
        let ms = 1_000_000;
        assert_eq!(default_window_ns(10_000_000_000, ms, false), 200_000_000);
        assert_eq!(default_window_ns(1_000_000_000, 100_000, false), 20_000_000);
        assert_eq!(default_window_ns(49_999_999_999, ms, false), 500_000_000);
        assert_eq!(default_window_ns(50_000_000_000, ms, false), 1_000_000_000);
        assert_eq!(default_window_ns(1_000_000, 1_000, false), 1_000_000);
        for run in [50_000_000u64, 123_456_789, 3_000_000_000, 25_000_000_000] {
            assert!(run / default_window_ns(run, 100_000, false) >= FEWEST_WINDOWS, "{run}");
            assert_eq!(1_000_000_000 % default_window_ns(run, 100_000, false), 0, "a window divides a second: {run}");
        }
        // Never shorter than the interval: a 20-s run at 500 ms gets 500-ms windows, at 2 s 1-s ones.
        assert_eq!(default_window_ns(20_000_000_000, 500_000_000, false), 500_000_000);
        assert_eq!(default_window_ns(20_000_000_000, 2_000_000_000, false), 1_000_000_000);
        // Published as it goes (metrics, parts): whole seconds.
        assert_eq!(default_window_ns(10_000_000_000, ms, true), 1_000_000_000);
    }

    #[test]
    fn the_default_window_widens_for_long_runs() {
        assert_eq!(default_window_ns(86_400_000_000_000, 0, false), 1_000_000_000);
        assert_eq!(default_window_ns(366 * 86_400_000_000_000, 0, false), 317_000_000_000);
        assert!(366 * 86_400_000_000_000u64 / default_window_ns(366 * 86_400_000_000_000, 0, true) <= MAX_WINDOWS);
    }
}
