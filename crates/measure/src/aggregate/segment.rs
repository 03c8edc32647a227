//! Rotated runs (`--rotate`): the collector's accounts cut at a moment of the run's clock into
//! consecutive parts, each closed as a run of its own while measuring goes on without a gap.
//! The cut is exact: every period whose deadline lies at or before it is counted in the part
//! that ends there, every later one in the next (a fact's missed periods across the cut are
//! split between them), so the parts' `samples + missed` per thread sum to the periods elapsed.
//!
//! Each part counts its periods from its own start (`Span::base`), so its statistics, timeline
//! and worst case's time are its own. A thread held off its CPU across the cut holds the part
//! up for at most the coordinator's grace; then its unserved periods are counted missed in the
//! part (as at the end of a run), and a fact it hands over later for a period already counted
//! is counted from the first period not yet counted (its value kept, no period twice).

use super::{Account, Collector, Kind};
use crate::probe::{Sample, ThreadCounters, MAX_COUNTS};
use std::sync::atomic::Ordering::Relaxed;

/// Where an account's part of the run lies in its thread's periods (all counted from the start
/// of period 0, warm-up included).
#[derive(Debug, Clone)]
pub struct Span {
    /// Periods before this part: its period `k` is the thread's period `base + k`.
    pub base: u64,
    /// The last of the thread's periods this part holds (`u64::MAX`: to the end of the run).
    pub end: u64,
    /// A fact of the next part, taken from the ring while this one was completed.
    pub held: Option<Sample>,
    /// Periods after `end` already known missed (a fact's `missed_after` across the cut).
    pub carry_missed: u64,
    /// Hand-off losses counted in earlier parts (the thread's counter is the whole loop's).
    pub prior_lost: u64,
    /// The probe's own counts when this part began (the thread's are the whole loop's).
    pub counts_before: [u64; MAX_COUNTS],
    /// An event account: its thread had gone past `end` at an earlier drain (its facts up to
    /// `end` are in the ring, or taken, by the next).
    done_seen: bool,
}

impl Default for Span {
    fn default() -> Span {
        Span {
            base: 0,
            end: u64::MAX,
            held: None,
            carry_missed: 0,
            prior_lost: 0,
            counts_before: [0; MAX_COUNTS],
            done_seen: false,
        }
    }
}

impl Span {
    /// Fact `s` with its period counted from this part's start; `accounted`: the last of the
    /// part's periods already counted. A period fact for periods already counted (a thread
    /// held off its CPU past a part's grace) is counted from the first period not yet counted;
    /// one whose periods were all counted is dropped (`None`).
    pub(super) fn rebase(&self, mut s: Sample, accounted: u64, events: bool) -> Option<Sample> {
        if self.base == 0 {
            return Some(s);
        }
        let rel = s.period.saturating_sub(self.base);
        if events {
            s.period = rel.max(1);
            return Some(s);
        }
        if rel > accounted {
            s.period = rel;
            return Some(s);
        }
        let last = s.period.saturating_add(s.missed_after).saturating_sub(self.base);
        if last <= accounted {
            return None;
        }
        s.period = accounted + 1;
        s.missed_after = last - s.period;
        s.lost_before = 0;
        Some(s)
    }
}

impl Collector {
    /// Whether account `i` has every fact up to its part's end: no more is taken from its ring.
    pub(super) fn reached_end(&self, i: usize) -> bool {
        let a = &self.accounts[i];
        a.span.held.is_some() || (!a.events && a.span.base + a.accounted >= a.span.end)
    }

    /// Takes fact `s` of thread `i` into this part, or, if it lies after the part's end, keeps
    /// it for the next (its gap's periods up to the end counted here: lost first, then missed).
    /// Returns whether the part has every fact of the thread now.
    pub(super) fn offer(&mut self, i: usize, mut s: Sample) -> bool {
        let c = &mut self.accounts[i];
        let end = c.span.end;
        if end == u64::MAX {
            self.take(i, s);
            return false;
        }
        if c.events {
            if s.period > end {
                c.span.held = Some(s);
                return true;
            }
            self.take(i, s);
            return false;
        }
        if s.period > end {
            let counted = c.span.base + c.accounted;
            if counted < end {
                let n = end - counted;
                let lost = s.lost_before.min(n);
                let first = c.accounted + 1;
                c.count_range(first, first + lost - 1, Kind::Lost);
                c.count_range(first + lost, c.accounted + n, Kind::Missed);
                c.accounted += n;
                s.lost_before -= lost;
            }
            c.span.held = Some(s);
            return true;
        }
        let last = s.period.saturating_add(s.missed_after);
        if last > end {
            c.span.carry_missed = last - end;
            s.missed_after -= last - end;
        }
        self.take(i, s);
        self.reached_end(i)
    }

    /// Ends this part at `cut_ns` from the start of period 0: each account holds the periods
    /// whose deadlines lie at or before it.
    pub fn cut_at(&mut self, cut_ns: u64) {
        for a in &mut self.accounts {
            a.span.end = cut_ns / a.schedule.interval_ns;
        }
    }

    /// The run stopped before the open part was closed at its cut: the part goes on to where
    /// the run stopped (the fact held for the next part and the missed periods carried over are
    /// counted in it), so the facts after the cut are drained into it, none counted missed.
    pub fn uncut(&mut self) {
        for i in 0..self.accounts.len() {
            let a = &mut self.accounts[i];
            a.span.end = u64::MAX;
            let carry = std::mem::take(&mut a.span.carry_missed);
            if carry > 0 {
                let from = a.accounted + 1;
                a.count_range(from, a.accounted + carry, Kind::Missed);
                a.accounted += carry;
            }
            if let Some(s) = a.span.held.take() {
                self.take(i, s);
            }
        }
    }

    /// Whether thread `i`'s part is complete: every period up to the cut counted, or (an event
    /// account) its thread past the cut since an earlier call, or `past_ns` since the cut longer
    /// than two of its windows (a quiet CPU: its facts up to the cut are in the ring by then),
    /// or its thread ended.
    pub fn part_complete(&mut self, i: usize, counters: &ThreadCounters, finished: bool, past_ns: u64) -> bool {
        if finished || self.reached_end(i) {
            return true;
        }
        let a = &mut self.accounts[i];
        if a.events && past_ns > 2 * a.schedule.interval_ns + 10_000_000 {
            return true;
        }
        if a.events {
            let past = counters.periods_done.load(Relaxed) >= a.span.end;
            let complete = a.span.done_seen;
            a.span.done_seen = past;
            return complete && past;
        }
        false
    }

    /// Closes this part at its cut (after every account's `part_complete`, or after the grace:
    /// then the periods a thread has not handed over are counted missed, as at a run's end) and
    /// returns the next part, from the cut to `next_cut_ns` (`None`: the run's end), with the
    /// facts and missed periods of it taken while this one was completed.
    pub fn split(&mut self, counters: &[std::sync::Arc<ThreadCounters>], next_cut_ns: Option<u64>) -> Collector {
        let cut_ns = self.accounts.first().map_or(0, |a| a.span.end.saturating_mul(a.schedule.interval_ns));
        let mut next = Collector { accounts: Vec::with_capacity(self.accounts.len()), phases: 0, origin_ns: cut_ns };
        for (i, counters) in counters.iter().enumerate() {
            let end = self.accounts[i].span.end;
            let end_ns = end.saturating_mul(self.accounts[i].schedule.interval_ns);
            if self.accounts[i].events {
                // An event account's windows without an event were quiet, not missed: a thread
                // held off its CPU comes back with an event (a gap) of its own.
                let a = &mut self.accounts[i];
                a.accounted = a.accounted.max((end - a.span.base).min(a.schedule.periods));
            }
            self.close(i, counters, false, end_ns);
            let a = &mut self.accounts[i];
            let counts_before = std::array::from_fn(|k| counters.counts[k].load(Relaxed));
            let schedule = crate::probe::Schedule {
                interval_ns: a.schedule.interval_ns,
                warmup_periods: a.schedule.warmup_periods.saturating_sub(end - a.span.base),
                periods: a.schedule.periods.saturating_sub(end - a.span.base),
            };
            let span = Span {
                base: end,
                end: next_cut_ns.map_or(u64::MAX, |c| c / schedule.interval_ns),
                held: None,
                carry_missed: 0,
                prior_lost: a.span.prior_lost + a.run.lost + a.warmup_lost,
                counts_before,
                done_seen: false,
            };
            let timeline = a.timeline.as_ref().map(|t| super::timeline::Timeline::new(t.window_ns(), schedule.interval_ns));
            let mut part = Account {
                key: a.key,
                schedule,
                bounds: a.bounds,
                events: a.events,
                phase_first: Vec::new(),
                run: Default::default(),
                phases: Vec::new(),
                warmup_samples: 0,
                warmup_missed: 0,
                warmup_lost: 0,
                accounted: 0,
                unserved: 0,
                counts: [0; MAX_COUNTS],
                page_faults: None,
                timeline,
                span,
            };
            if a.span.carry_missed > 0 {
                // No more than the next part holds: the rest goes on to the one after (a stall
                // across more than a part, closed one part a step).
                let n = a.span.carry_missed.min(part.schedule.periods).min(part.span.end.saturating_sub(end));
                part.count_range(1, n, Kind::Missed);
                part.accounted = n;
                part.span.carry_missed = a.span.carry_missed - n;
            }
            let held = a.span.held.take();
            next.accounts.push(part);
            if let Some(s) = held {
                next.offer(next.accounts.len() - 1, s);
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::SeriesPlan;
    use crate::probe::{Schedule, SeriesKey};
    use std::sync::Arc;

    fn plan(interval_ns: u64, warmup: u64, periods: u64, events: bool) -> SeriesPlan {
        let schedule = Schedule { interval_ns, warmup_periods: warmup, periods };
        SeriesPlan { key: SeriesKey { probe: 0, cpu: 0, series: 0 }, schedule, bounds: None, events }
    }

    /// A thread's facts as the hand-off makes them: every `stall_every`-th period a stall of
    /// `stall` periods, every `lose_every`-th fact lost in the hand-off.
    fn facts(periods: u64, stall_every: u64, stall: u64, lose_every: u64) -> Vec<Sample> {
        let (mut out, mut p, mut lost, mut n) = (Vec::new(), 1, 0, 0);
        while p <= periods {
            let missed = if p % stall_every == 0 { stall.min(periods - p) } else { 0 };
            n += 1;
            if n % lose_every == 0 {
                lost += 1;
            } else {
                out.push(Sample { period: p, latency_ns: 1_000 + p % 977, missed_after: missed, lost_before: lost });
                lost = 0;
            }
            p += missed + 1;
        }
        out
    }

    /// The parts of a run of `periods` cut every `every` periods, fed fact by fact: per part
    /// (samples, missed, lost), and the last part closed at the end.
    fn parts(facts: &[Sample], periods: u64, warmup: u64, every: u64) -> Vec<(u64, u64, u64)> {
        let counters = vec![Arc::new(ThreadCounters::default())];
        let mut c = Collector::new(&[plan(1_000, warmup, periods, false)], &[]).with_timeline(100_000);
        c.cut_at(every * 1_000);
        let mut out = Vec::new();
        let mut cut = every;
        for &s in facts {
            let mut pending = Some(s);
            while let Some(s) = pending.take() {
                if c.offer(0, s) {
                    // The part is complete: close it, the fact (if held) goes on in the next.
                    cut += every;
                    let next_cut = (cut < periods).then_some(cut * 1_000);
                    let next = c.split(&counters, next_cut);
                    let done = std::mem::replace(&mut c, next);
                    let a = &done.accounts[0];
                    out.push((a.run.samples + a.warmup_samples, a.run.missed + a.warmup_missed, a.run.lost));
                }
            }
        }
        c.close(0, &counters[0], false, periods * 1_000);
        let a = &c.accounts[0];
        out.push((a.run.samples + a.warmup_samples, a.run.missed + a.warmup_missed, a.run.lost));
        out
    }

    #[test]
    fn parts_sum_to_the_periods_elapsed_across_stalls_and_losses_at_every_cut() {
        for (stall_every, stall, lose_every) in [(97, 3, 5), (450, 40, 7), (1000, 999, 1_000_000), (13, 150, 3)] {
            let periods = 10_000;
            let all = facts(periods, stall_every, stall, lose_every);
            for every in [1_000, 1_500, 3_333] {
                let p = parts(&all, periods, 0, every);
                let served: u64 = p.iter().map(|x| x.0).sum();
                let missed: u64 = p.iter().map(|x| x.1).sum();
                assert_eq!(served + missed, periods, "cut every {every}: {p:?}");
                for (k, part) in p.iter().enumerate() {
                    let len = every.min(periods - (k as u64 * every));
                    assert_eq!(part.0 + part.1, len, "part {k} of every {every} holds its periods exactly: {p:?}");
                }
            }
        }
    }

    #[test]
    fn a_late_fact_after_a_forced_close_counts_no_period_twice() {
        let counters = vec![Arc::new(ThreadCounters::default())];
        let mut c = Collector::new(&[plan(1_000, 0, 3_000, false)], &[]);
        c.cut_at(1_000_000);
        for p in 1..=900 {
            assert!(!c.offer(0, Sample { period: p, latency_ns: 5, missed_after: 0, lost_before: 0 }));
        }
        // Held off from period 901 past the grace: the part is closed without its facts.
        let mut next = c.split(&counters, None);
        let a = &c.accounts[0];
        assert_eq!((a.run.samples, a.run.missed, a.unserved), (900, 100, 100));
        // It comes back serving period 901 late, 1200 periods later.
        next.offer(0, Sample { period: 901, latency_ns: 1_200_000, missed_after: 1_200, lost_before: 0 });
        let b = &next.accounts[0];
        assert_eq!(b.run.samples + b.run.missed, 1_101, "periods 1001..=2101, each once");
        assert_eq!(b.run.min_max().map(|m| m.1), Some(1_200_000), "its value is kept");
        // A fact whose periods were all counted already is dropped.
        let mut c = Collector::new(&[plan(1_000, 0, 3_000, false)], &[]);
        c.cut_at(1_000_000);
        let mut next = c.split(&counters, None);
        next.offer(0, Sample { period: 10, latency_ns: 5, missed_after: 0, lost_before: 0 });
        assert_eq!(next.accounts[0].run.samples, 0);
    }

    #[test]
    fn parts_count_their_own_periods_and_windows() {
        let counters = vec![Arc::new(ThreadCounters::default())];
        let mut c = Collector::new(&[plan(1_000_000, 100, 3_000, false)], &[]).with_timeline(100_000_000);
        c.cut_at(1_000_000_000);
        for p in 1..=1_000 {
            c.offer(0, Sample { period: p, latency_ns: p, missed_after: 0, lost_before: 0 });
        }
        assert!(c.part_complete(0, &counters[0], false, 0));
        let mut next = c.split(&counters, Some(2_000_000_000));
        let first = c.take_timeline(0).unwrap();
        assert_eq!((first.start_ns, first.count.len(), first.count.iter().sum::<u64>()), (100_000_000, 9, 900));
        for p in 1_001..=1_500 {
            next.offer(0, Sample { period: p, latency_ns: 7, missed_after: 0, lost_before: 0 });
        }
        next.offer(0, Sample { period: 1_600, latency_ns: 9_999, missed_after: 0, lost_before: 0 });
        next.close(0, &counters[0], false, 1_600_000_000);
        let (stats, _) = next.stats(0);
        assert_eq!((stats.samples, stats.missed, stats.warmup_samples), (501, 99, 0));
        assert_eq!(stats.max_at_ns, Some(600_000_000), "the part's own clock");
        let tl = next.take_timeline(0).unwrap();
        assert_eq!((tl.start_ns, tl.count.len()), (0, 6));
        assert_eq!(next.origin_ns, 1_000_000_000);
    }

    /// A coordinator as `run::measure` + `Beside::step` drive it: a ring per thread, drained
    /// (stopping at the part's end), then the part split when complete.
    struct Drive {
        c: Collector,
        ring: std::collections::VecDeque<Sample>,
        counters: Vec<Arc<ThreadCounters>>,
        every: u64,
        cut: u64,
        closed: Vec<Account>,
    }

    impl Drive {
        fn new(plan: SeriesPlan, every_ns: u64) -> Drive {
            let mut c = Collector::new(&[plan], &[]).with_timeline(every_ns / 10);
            c.cut_at(every_ns);
            Drive {
                c,
                ring: Default::default(),
                counters: vec![Arc::new(ThreadCounters::default())],
                every: every_ns,
                cut: every_ns,
                closed: vec![],
            }
        }
        fn drain(&mut self) {
            if self.c.reached_end(0) {
                return;
            }
            while let Some(s) = self.ring.pop_front() {
                if self.c.offer(0, s) {
                    break;
                }
            }
        }
        /// One coordinator step: drain, then (at most one) split if complete or `force` (grace over).
        fn step(&mut self, force: bool) {
            self.drain();
            if self.c.part_complete(0, &self.counters[0], false, 0) || force {
                self.cut += self.every;
                let next = self.c.split(&self.counters, Some(self.cut));
                let done = std::mem::replace(&mut self.c, next);
                self.closed.push(done.accounts[0].clone());
            }
        }
    }

    fn tot(a: &Account) -> (u64, u64, u64) {
        (a.run.samples + a.warmup_samples, a.run.missed + a.warmup_missed, a.unserved)
    }

    #[test]
    fn an_event_accounts_quiet_windows_before_the_cut_are_not_missed() {
        // A noise probe: windows of 1 ms, a part every 1000 windows. Gaps over the threshold in
        // windows 1..=990 only (the last 10 windows before the cut are quiet: no gap), then one
        // in window 1005 (after the cut). Quiet windows are not missed (a run that is not
        // rotated counts none: see `close`, `thread_ended`).
        let mut d = Drive::new(plan(1_000_000, 0, 10_000, true), 1_000_000_000);
        for w in 1..=990 {
            d.ring.push_back(Sample { period: w, latency_ns: 5_000, missed_after: 0, lost_before: 0 });
            d.counters[0].periods_done.store(w, Relaxed);
        }
        d.ring.push_back(Sample { period: 1_005, latency_ns: 5_000, missed_after: 0, lost_before: 0 });
        d.counters[0].periods_done.store(1_005, Relaxed);
        d.step(false);
        assert_eq!(d.closed.len(), 1, "the event after the cut completes the part");
        let a = &d.closed[0];
        assert_eq!(tot(a), (990, 0, 0), "990 events, no missed, nothing unserved");
    }

    #[test]
    fn an_event_account_quiet_across_the_cut_counts_nothing_missed() {
        // The same probe on a quiet (isolated, nohz_full) CPU: one gap in window 3, then none for
        // longer than the grace: the part is closed by force.
        let mut d = Drive::new(plan(1_000_000, 0, 10_000, true), 1_000_000_000);
        d.ring.push_back(Sample { period: 3, latency_ns: 5_000, missed_after: 0, lost_before: 0 });
        d.counters[0].periods_done.store(3, Relaxed);
        d.step(false);
        d.step(false);
        d.step(true); // CUT_GRACE over
        let a = &d.closed[0];
        assert_eq!(tot(a), (1, 0, 0), "one event, nothing missed: quiet windows are not missed");
    }

    #[test]
    fn a_stall_over_more_than_a_part_is_not_counted_twice() {
        // Parts of 1000 periods. The thread serves 1..=900, then is held off until period 3401
        // (fact for 901 with 2500 missed after it); the coordinator itself was held off as long
        // (it drains only after the stall) and splits once per step.
        let mut d = Drive::new(plan(1_000, 0, 10_000, false), 1_000_000);
        for p in 1..=900 {
            d.ring.push_back(Sample { period: p, latency_ns: 5, missed_after: 0, lost_before: 0 });
        }
        d.ring.push_back(Sample { period: 901, latency_ns: 2_500_000, missed_after: 2_500, lost_before: 0 });
        for p in 3_402..=5_000 {
            d.ring.push_back(Sample { period: p, latency_ns: 5, missed_after: 0, lost_before: 0 });
        }
        d.counters[0].periods_done.store(5_000, Relaxed);
        for _ in 0..6 {
            d.step(false);
        }
        let parts: Vec<_> = d.closed.iter().map(tot).collect();
        let sum: u64 = parts.iter().map(|p| p.0 + p.1).sum();
        assert_eq!(parts.len(), 5, "{parts:?}");
        for (k, p) in parts.iter().enumerate() {
            assert_eq!(p.0 + p.1, 1_000, "part {k} holds its 1000 periods exactly: {parts:?}");
        }
        assert_eq!(sum, 5_000, "{parts:?}");
    }

    #[test]
    fn a_stop_between_the_cut_and_the_split_counts_no_served_period_missed() {
        // SIGINT (or SIGTERM) noticed 5 ms after the cut, before the coordinator split the part
        // (it waits for every thread's facts up to the cut, 20 ms a step): the threads stop at
        // period 1050, every one of them served. `measure` drains (the part has reached its end:
        // the facts after it stay in the ring) and closes the open part at the stop.
        let mut d = Drive::new(plan(1_000, 0, 10_000, false), 1_000_000);
        for p in 1..=1_050 {
            d.ring.push_back(Sample { period: p, latency_ns: 5, missed_after: 0, lost_before: 0 });
        }
        d.counters[0].periods_done.store(1_050, Relaxed);
        d.drain();
        // (the stop is noticed; the threads finished; measure's last drain, then close)
        d.c.uncut();
        d.drain();
        d.c.close(0, &d.counters[0], true, 1_050 * 1_000);
        let a = &d.c.accounts[0];
        assert_eq!(tot(a).1, 0, "every period was served, none missed: {:?}", tot(a));
    }
}
