//! The hand-over of facts from a measurement thread to the collector: one [`Handoff`] per series
//! a thread reports, a wait-free single-producer ring ([`rtrb`]) of [`Sample`]s, and the
//! [`ThreadCounters`] (atomics) for what must never be lost: extremes, hand-off overflows,
//! periods done, a probe's own counts.

use super::trigger::TraceTrigger;
use crate::sys;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// One fact handed from a measurement thread to the collector: the wake-up of one period,
/// and the periods whose deadlines passed while the thread was not running. The collector
/// counts samples, missed periods and phases from these facts alone; it never infers them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// The period served (1-based, counted from the start, warm-up included).
    pub period: u64,
    pub latency_ns: u64,
    /// Periods `period+1 ..= period+missed_after` passed unserved before this wake-up (their
    /// deadlines lay strictly before it); clamped to the last planned period.
    pub missed_after: u64,
    /// Wake-ups just before this one that could not be handed over (the ring was full): they
    /// served the first `lost_before` periods after the previous fact; the rest of that gap
    /// was missed.
    pub lost_before: u64,
}

impl Sample {
    /// The value of an event that carries none (a UIO device's first event: its interval has
    /// no beginning); it counts its missed events only.
    pub const NO_VALUE: u64 = u64::MAX;
}

/// Counters one measurement thread publishes; written by that thread only. The collector
/// reads them once the thread has ended, for what the ring could not carry.
#[derive(Debug)]
pub struct ThreadCounters {
    /// Extremes of the measured (post-warm-up) wake-ups, including any lost from the ring.
    pub min_ns: AtomicU64,
    pub max_ns: AtomicU64,
    /// Period of the largest latency.
    pub max_period: AtomicU64,
    /// Wake-ups the collector could not take in time (the ring was full).
    pub handoff_overflows: AtomicU64,
    /// Periods accounted for so far (served or missed).
    pub periods_done: AtomicU64,
    /// The probe's own counts (`Probe::counters` names them): the UDP probe's packets sent and
    /// replies that came late.
    pub counts: [AtomicU64; MAX_COUNTS],
    /// An event probe's missed events not yet handed over (their fact did not fit the ring);
    /// they go with the next fact that does.
    pub pending_missed: AtomicU64,
    /// Page faults the thread took while measuring (after its warm-up), published when its loop
    /// ends; [`ThreadCounters::UNKNOWN`] until then, and when the run ended within the warm-up.
    pub page_faults: AtomicU64,
}

impl ThreadCounters {
    /// A count not (yet) known.
    pub const UNKNOWN: u64 = u64::MAX;
}

/// How many counts of its own a probe may keep (see [`super::Probe::counters`]): the UDP probe's five.
pub const MAX_COUNTS: usize = 5;

impl Default for ThreadCounters {
    fn default() -> Self {
        ThreadCounters {
            min_ns: AtomicU64::new(u64::MAX),
            max_ns: AtomicU64::new(0),
            max_period: AtomicU64::new(0),
            handoff_overflows: AtomicU64::new(0),
            periods_done: AtomicU64::new(0),
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            pending_missed: AtomicU64::new(0),
            page_faults: AtomicU64::new(ThreadCounters::UNKNOWN),
        }
    }
}

/// Where a loop's facts go: the ring to the collector, and the counters that survive a full ring.
pub struct Handoff {
    ring: rtrb::Producer<Sample>,
    counters: Arc<ThreadCounters>,
    warmup_periods: u64,
    /// Facts the ring could not take since the last one it took.
    lost: u64,
    /// Missed events of those facts (an event probe's), carried to the next fact taken.
    missed_carry: u64,
    overflows: u64,
    min: u64,
    max: u64,
    /// The last period accounted for.
    done: u64,
    /// The thread's page faults when its warm-up ended ([`ThreadCounters::UNKNOWN`] before).
    faults_at_warmup_end: u64,
    /// `--trace`: the trigger of the thread's CPU, the thread's id and its series' index.
    pub(super) trace: Option<(Arc<TraceTrigger>, u64, u64)>,
}

impl Handoff {
    pub(crate) fn new(ring: rtrb::Producer<Sample>, counters: Arc<ThreadCounters>, warmup_periods: u64) -> Handoff {
        let (lost, missed_carry, overflows, min, max, done) = (0, 0, 0, u64::MAX, 0, 0);
        let faults_at_warmup_end = ThreadCounters::UNKNOWN;
        let trace = None;
        Handoff { ring, counters, warmup_periods, lost, missed_carry, overflows, min, max, done, faults_at_warmup_end, trace }
    }

    /// Before the loop: with no warm-up, the measurement begins now. The trace trigger learns
    /// the thread's id.
    pub(super) fn begin(&mut self) {
        if let Some((_, tid, _)) = &mut self.trace {
            *tid = sys::process::thread_id() as u64;
        }
        self.note_warmup_end();
    }

    /// Reads the thread's page-fault count once, when the warm-up has been accounted for: one
    /// system call in the whole loop, after a fact was handed over and before the next wait.
    #[inline(always)]
    fn note_warmup_end(&mut self) {
        if self.faults_at_warmup_end == ThreadCounters::UNKNOWN && self.done >= self.warmup_periods {
            self.faults_at_warmup_end = sys::mem::thread_page_faults();
        }
    }

    /// After the loop: publishes the page faults taken while measuring.
    pub(super) fn end(&mut self) {
        if self.faults_at_warmup_end != ThreadCounters::UNKNOWN {
            let taken = sys::mem::thread_page_faults().saturating_sub(self.faults_at_warmup_end);
            self.counters.page_faults.store(taken, Relaxed);
        }
    }

    /// The last period accounted for (served or missed).
    #[inline(always)]
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Hands over an event of window `window` with value `value_ns` (an event-accounted probe,
    /// see [`super::Accounting::Events`]): wait-free; a full ring loses the value, never the count.
    #[inline(always)]
    pub fn event(&mut self, window: u64, value_ns: u64) {
        self.served(window, value_ns, 0);
    }

    /// Hands over an event of window `window` with its value (`None`: it carries none, see
    /// [`Sample::NO_VALUE`]) and the `missed_before` events that were lost just before it (a
    /// device's sequence numbers or count skipped them). Wait-free; a full ring loses the value,
    /// never a count: the missed events go with the next fact taken, or stay in the counters.
    #[inline(always)]
    pub fn event_after(&mut self, window: u64, value_ns: Option<u64>, missed_before: u64) {
        let value = value_ns.map_or(Sample::NO_VALUE, |v| v.min(Sample::NO_VALUE - 1));
        if value != Sample::NO_VALUE {
            self.extremes(window, value);
        }
        let c = &*self.counters;
        let missed = self.missed_carry + missed_before;
        let fact = Sample { period: window, latency_ns: value, missed_after: missed, lost_before: self.lost };
        if self.ring.push(fact).is_ok() {
            self.lost = 0;
            if self.missed_carry > 0 {
                c.pending_missed.store(0, Relaxed);
            }
            self.missed_carry = 0;
        } else {
            // A fact without a value carries missed events only: they are carried, nothing is lost.
            if value != Sample::NO_VALUE {
                self.lost += 1;
                self.overflows += 1;
                c.handoff_overflows.store(self.overflows, Relaxed);
            }
            self.missed_carry = missed;
            c.pending_missed.store(missed, Relaxed);
        }
        if window > self.done {
            self.done = window;
            c.periods_done.store(window, Relaxed);
        }
        self.note_warmup_end();
    }

    /// Sets the probe's own count `i` (see [`super::Probe::counters`]) to `value`.
    #[inline(always)]
    pub fn count(&mut self, i: usize, value: u64) {
        self.counters.counts[i].store(value, Relaxed);
    }

    /// Says that every period up to `period` is accounted for: those not yet handed over passed
    /// unserved (the wake-up chain's task, when its handler ended after events it never
    /// received), or, for an event-accounted probe, were quiet.
    #[inline(always)]
    pub fn accounted_through(&mut self, period: u64) {
        if period > self.done {
            self.done = period;
            self.counters.periods_done.store(period, Relaxed);
        }
        self.note_warmup_end();
    }

    /// Keeps the extremes of the measured (post-warm-up) values where the collector finds them
    /// even when the ring was full.
    #[inline(always)]
    fn extremes(&mut self, period: u64, value: u64) {
        if period <= self.warmup_periods {
            return;
        }
        let c = &*self.counters;
        if value < self.min {
            self.min = value;
            c.min_ns.store(value, Relaxed);
        }
        if value > self.max {
            self.max = value;
            c.max_ns.store(value, Relaxed);
            c.max_period.store(period, Relaxed);
            if let Some((t, tid, series)) = &self.trace {
                t.offer(value, *tid, *series);
            }
        }
    }

    /// `--trace`: a wake-up was handed over, so no latency is under way on this CPU; an armed
    /// deferral may stop its instance now (see [`TraceTrigger`]).
    #[inline(always)]
    fn trace_tick(&self) {
        if let Some((t, ..)) = &self.trace {
            t.tick();
        }
    }

    /// Hands over period `period` served with `latency_ns`, and the `missed_after` periods after
    /// it whose deadlines passed unserved. Wait-free: a full ring loses the latency, never the
    /// accounting (see [`Sample::lost_before`]).
    #[inline(always)]
    pub fn served(&mut self, period: u64, latency_ns: u64, missed_after: u64) {
        self.extremes(period, latency_ns);
        let c = &*self.counters;
        if self.ring.push(Sample { period, latency_ns, missed_after, lost_before: self.lost }).is_ok() {
            self.lost = 0;
        } else {
            self.lost += 1;
            self.overflows += 1;
            c.handoff_overflows.store(self.overflows, Relaxed);
        }
        self.done = period + missed_after;
        c.periods_done.store(self.done, Relaxed);
        self.note_warmup_end();
        self.trace_tick();
    }
}
