//! Stage four of the flow: the probes. A probe ([`Probe`]) is one kind of measurement: its name,
//! its periods, the value series it reports, and per CPU an instance of one or more threads
//! ([`Role`]: the timer's one thread; the wake-up chain's handler and task), each with its own
//! set-up and real-time loop ([`RtLoop`]). Every probe runs through the same path here: each
//! thread pinned, at its policy and priority, set up completely (affinity, priority, signal mask,
//! pre-faulted stack and rings, the probe's own set-up) before the loads start. Facts leave a
//! thread through one [`Handoff`] per series it reports: a wait-free single-producer ring
//! ([`rtrb`]) to the non-RT collector, and atomics for what must never be lost (extremes,
//! hand-off overflows, periods done). [`registry`] knows every probe by name.

pub mod event;
pub mod noise;
pub mod period;
pub mod registry;
pub mod seqlock;
pub mod timer;
pub mod udp;
pub mod wakeup;

use crate::sys;
use crate::vocab::policy::Policy;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

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

/// How many counts of its own a probe may keep (see [`Probe::counters`]): the UDP probe's five.
pub const MAX_COUNTS: usize = 5;

/// How many trace instances each traced CPU has (`--trace`). Every event is written into each
/// instance, so each one more costs the measured CPU event time on every wake-up: two are enough
/// to keep one always recording.
pub const TRACE_INSTANCES: usize = 2;

/// Stops the kernel's trace of one CPU when a measured value calls for it (`--trace`): the
/// first value over its threshold, then each new worst case over it (the threshold is 0 for
/// "every new worst case"). Each CPU is traced into [`TRACE_INSTANCES`] instances that take
/// turns: a firing stops the one that has recorded longest and hands the turn on. A firing that
/// would leave no instance recording is deferred instead: its facts are kept, and once the
/// collector has restarted an instance it arms the deferral ([`Self::arm_deferred`]); the CPU's
/// next measured wake-up then stops the instance that recorded through the deferred worst case
/// ([`Self::tick`]) — so a new worst case right after another one (a stall right after the small
/// latencies of its own start, while the collector still reads their trace: seen in CI's guests)
/// is traced whole, and one instance always records. The stop waits for a wake-up because only
/// a wake-up shows that no larger latency is under way on the CPU: stopped by the collector in
/// the middle of a stall, the instance that had recorded through the stall's start was lost to
/// a smaller, older worst case (CI beside a load, x86 guest: the stall traced from 58 ms into
/// it). Shared by every measurement thread on that CPU; made by the
/// trace stage, which owns the `tracing_on` files, and read by the collector. Firing is one
/// `write` of the RT thread, after its fact was handed over; otherwise an offer costs a few loads.
#[derive(Debug)]
pub struct TraceTrigger {
    /// `tracing_on` of the CPU's trace instances (raw: the trace stage keeps them open for
    /// longer than any measurement thread lives).
    fds: [i32; TRACE_INSTANCES],
    threshold_ns: u64,
    /// Whether each instance records (a stopped one waits for the collector).
    recording: [AtomicBool; TRACE_INSTANCES],
    /// The instance the next firing stops (if it records): the one restarted longest ago.
    turn: std::sync::atomic::AtomicUsize,
    /// Per instance: how many times it was stopped, and the last stop's facts (published before
    /// the count).
    pub fired: [AtomicU64; TRACE_INSTANCES],
    pub value_ns: [AtomicU64; TRACE_INSTANCES],
    /// CLOCK_MONOTONIC right after the value was measured.
    pub at_ns: [AtomicU64; TRACE_INSTANCES],
    /// The firing thread's id and the index of its series (in the run's series order).
    pub tid: [AtomicU64; TRACE_INSTANCES],
    pub series: [AtomicU64; TRACE_INSTANCES],
    /// The last new worst case deferred (every other instance was stopped), with how many were;
    /// how many the collector has seen, and how many of them it traced.
    deferred: seqlock::SeqFacts<4>,
    deferred_seen: AtomicU64,
    pub deferred_traced: AtomicU64,
    /// A deferral the next measured wake-up of the CPU carries out (set by the collector).
    armed: AtomicBool,
}

impl TraceTrigger {
    pub fn new(fds: [i32; TRACE_INSTANCES], threshold_ns: u64) -> TraceTrigger {
        let zeros = || std::array::from_fn(|_| AtomicU64::new(0));
        TraceTrigger {
            fds,
            threshold_ns,
            recording: std::array::from_fn(|_| AtomicBool::new(true)),
            turn: std::sync::atomic::AtomicUsize::new(0),
            fired: zeros(),
            value_ns: zeros(),
            at_ns: zeros(),
            tid: zeros(),
            series: zeros(),
            deferred: seqlock::SeqFacts::default(),
            deferred_seen: AtomicU64::new(0),
            deferred_traced: AtomicU64::new(0),
            armed: AtomicBool::new(false),
        }
    }

    /// Instance `i` records again (the collector read and restarted it).
    pub fn restarted(&self, i: usize) {
        self.recording[i].store(true, std::sync::atomic::Ordering::Release);
    }

    /// New worst cases neither traced at once nor by [`Self::fire_deferred`] (a later, larger
    /// one came first).
    pub fn untraced(&self) -> u64 {
        self.deferred.read().1 - self.deferred_traced.load(Relaxed)
    }

    /// Stops instance `i` if it records, with the facts of the value that stopped it.
    #[inline(always)]
    fn stop(&self, i: usize, [value_ns, at_ns, tid, series]: [u64; 4]) -> bool {
        use std::sync::atomic::Ordering::{AcqRel, Release};
        if !self.recording[i].swap(false, AcqRel) {
            return false;
        }
        sys::stop_trace(self.fds[i]);
        self.value_ns[i].store(value_ns, Relaxed);
        self.at_ns[i].store(at_ns, Relaxed);
        self.tid[i].store(tid, Relaxed);
        self.series[i].store(series, Relaxed);
        self.fired[i].fetch_add(1, Release);
        self.turn.store((i + 1) % TRACE_INSTANCES, Relaxed);
        true
    }

    /// The recording instance whose turn it is, and whether another one records too.
    fn next_recording(&self) -> Option<(usize, bool)> {
        use std::sync::atomic::Ordering::Acquire;
        let turn = self.turn.load(Relaxed);
        let on: [bool; TRACE_INSTANCES] = std::array::from_fn(|i| self.recording[i].load(Acquire));
        let i = (0..TRACE_INSTANCES).map(|k| (turn + k) % TRACE_INSTANCES).find(|&i| on[i])?;
        Some((i, (0..TRACE_INSTANCES).any(|k| k != i && on[k])))
    }

    /// A new worst case `value_ns` of thread `tid`'s series `series`: over the threshold, stops
    /// the recording instance whose turn it is if another one records on, else defers it.
    #[inline(always)]
    fn offer(&self, value_ns: u64, tid: u64, series: u64) {
        if value_ns <= self.threshold_ns {
            return;
        }
        let facts = [value_ns, sys::monotonic_ns(), tid, series];
        match self.next_recording() {
            Some((i, true)) if self.stop(i, facts) => self.supersede_deferred(value_ns),
            // (Another thread of the CPU writing a deferral at this very moment: it keeps its own.)
            _ => {
                self.deferred.try_publish(facts);
            }
        }
    }

    /// A deferred worst case no larger than `value_ns`, which just stopped an instance, is not
    /// traced any more (it counts as untraced): the CPU's worst traced latency is what is kept.
    #[cold]
    fn supersede_deferred(&self, value_ns: u64) {
        if let Some(([v, ..], n)) = self.deferred.try_read() {
            if v <= value_ns {
                self.deferred_seen.fetch_max(n, Relaxed);
            }
        }
    }

    /// Whether a deferred worst case the collector has not fired yet is larger than `value_ns`:
    /// then the trace `value_ns` stopped would only be replaced by the deferred one's, and the
    /// instance that records through the deferred one should be stopped first (under a loaded
    /// host, reading a trace takes seconds, and that instance's buffer wraps meanwhile).
    pub fn deferred_exceeds(&self, value_ns: u64) -> bool {
        // (being rewritten: a new one comes, told at the next look)
        self.deferred.try_read().is_some_and(|([v, ..], n)| n != self.deferred_seen.load(Relaxed) && v > value_ns)
    }

    /// The collector, after restarting an instance during the run: a new deferred worst case,
    /// now that another instance records, is carried out by the CPU's next measured wake-up.
    pub fn arm_deferred(&self) {
        let unseen = self.deferred.try_read().is_some_and(|(_, n)| n > self.deferred_seen.load(Relaxed));
        if unseen && matches!(self.next_recording(), Some((_, true))) {
            self.armed.store(true, std::sync::atomic::Ordering::Release);
        }
    }

    /// A measurement thread of the CPU, after handing over a wake-up (and offering it): carries
    /// out an armed deferral. One load unless one is armed.
    #[inline(always)]
    pub fn tick(&self) {
        if self.armed.load(Relaxed) {
            self.fire_armed();
        }
    }

    #[cold]
    #[inline(never)]
    fn fire_armed(&self) {
        if self.armed.swap(false, std::sync::atomic::Ordering::AcqRel) {
            self.fire_deferred();
        }
    }

    /// The last deferred worst case, if any is new, stops the instance that recorded through it
    /// (if another records). Called by [`Self::tick`], and by the collector once the
    /// measurement has ended. Returns whether it did.
    pub fn fire_deferred(&self) -> bool {
        // (being rewritten, or no other instance recording: kept for a later call)
        let Some((facts, n)) = self.deferred.try_read() else { return false };
        if n <= self.deferred_seen.load(Relaxed) {
            return false;
        }
        let Some((i, true)) = self.next_recording() else { return false };
        self.deferred_seen.fetch_max(n, Relaxed);
        let fired = self.stop(i, facts);
        if fired {
            self.deferred_traced.fetch_add(1, Relaxed);
        }
        fired
    }
}

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

/// The longest interval accepted: a period loop slower than this is not a latency test.
pub const MAX_INTERVAL_NS: u64 = 10_000_000_000;
/// The longest run accepted, warm-up included (a year and a day).
pub const MAX_RUN_NS: u64 = 366 * 86_400 * 1_000_000_000;
/// The shortest interval accepted; below a microsecond every wake-up misses.
pub const MIN_INTERVAL_NS: u64 = 1_000;

/// When a probe's periods fall: period `k` (1-based) has its deadline at `start + k·interval`;
/// the first `warmup_periods` count in no statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    pub interval_ns: u64,
    pub warmup_periods: u64,
    /// Every period of the run, warm-up included; each one ends as a fact or a missed period.
    pub periods: u64,
}

impl Schedule {
    /// The window (1-based period, clamped to the last) an event at `at_ns` falls in, the run
    /// having started at `start_ns`: for probes whose facts are events.
    #[inline(always)]
    pub fn window_of(&self, start_ns: u64, at_ns: u64) -> u64 {
        (at_ns.saturating_sub(start_ns) / self.interval_ns + 1).min(self.periods)
    }

    /// The windows wholly passed by `now_ns` (accounted as reached, quiet or not).
    #[inline(always)]
    pub fn windows_passed(&self, start_ns: u64, now_ns: u64) -> u64 {
        (now_ns.saturating_sub(start_ns) / self.interval_ns).min(self.periods)
    }
}

/// One step of a probe's own timeline (the wake-up chain's rate sweep): from `start_ns` to
/// `end_ns` (from the start of the run; the first step holds the warm-up) it runs at its rate,
/// and plans `planned` measured events, judged by `bound_ns`. A step boundary is a phase
/// boundary of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub start_ns: u64,
    pub end_ns: u64,
    pub rate_per_s: u32,
    pub interval_ns: u64,
    pub planned: u64,
    pub bound_ns: u64,
}

/// One kind of measurement. The lifecycle knows probes only through this trait.
pub trait Probe: Send + Sync + std::fmt::Debug {
    /// Its name, as `--measure`, results and requirements write it.
    fn name(&self) -> &'static str;
    /// Its periods (every series of the probe follows them).
    fn schedule(&self) -> Schedule;
    /// Its settings, as the result's configuration records them (`interval=1ms`, ...).
    fn settings(&self) -> Vec<String>;
    /// Bounds the values of series `series` are judged by, (below, above): the collector counts
    /// the values under the first and over the second (the period probe's short and long cycles).
    fn bounds(&self, _series: usize) -> Option<(u64, u64)> {
        None
    }
    /// Whether its facts are events rather than periods (the noise probe's gaps over a
    /// threshold, the event probe's device events): its schedule's periods are then windows
    /// that place each event in time (its phase, its warm-up); a window is never missed, but
    /// events may be (the event probe's sequence numbers tell).
    fn events(&self) -> bool {
        false
    }
    /// For the noise probe: the threshold of a gap; its results then carry noise figures.
    fn noise_threshold(&self) -> Option<u64> {
        None
    }
    /// Whether its threads spin without sleeping (the noise probe's busy loop): a CPU it shares
    /// with another probe starves that probe.
    fn busy_loop(&self) -> bool {
        false
    }
    /// Names of counts of its own each thread keeps beside its facts (at most [`MAX_COUNTS`];
    /// [`Handoff::count`]), reported per CPU and summed: the UDP probe's `sent` and `late`.
    fn counters(&self) -> &'static [&'static str] {
        &[]
    }
    /// The names of the value series each instance reports, the headline first (the wake-up
    /// chain: `chain`, `handler`, `task`). Empty: one series, named by the probe alone.
    fn series(&self) -> &'static [&'static str] {
        &[]
    }
    /// What the values of series `series` are when they are not latencies (a UIO source's
    /// `interval`); `None`: latencies. Such values count in no worst case or cycle-time rule.
    fn measures(&self, _series: usize) -> Option<&'static str> {
        None
    }
    /// Its own timeline, if it changes during the run (the wake-up chain's rate sweep): each
    /// step is reported on its own, and its boundaries cut the run's phases.
    fn steps(&self) -> Vec<Step> {
        Vec::new()
    }
    /// The lowest RT priority of its threads when it sets its own (the wake-up probe's
    /// `priority=`: its chain's task runs one below); `None`: they run at the run's.
    fn lowest_priority(&self) -> Option<i32> {
        None
    }
    /// Checks the CPUs the probe is to measure on, before anything runs (`cross` needs two).
    fn check_cpus(&self, _cpus: &[usize]) -> Result<(), String> {
        Ok(())
    }
    /// The threads of the instance reported under `cpu` (`cpus`: every CPU the probe measures
    /// on), with their set-up. Called before any thread starts; state the threads share is
    /// made here.
    fn instance(&self, cpu: usize, cpus: &[usize]) -> Result<Vec<Role>, String>;
}

/// How many series a probe reports (at least one).
pub fn series_count(p: &dyn Probe) -> usize {
    p.series().len().max(1)
}

/// The name of series `s` of a probe, `None` for a probe's only, unnamed series.
pub fn series_name(p: &dyn Probe, s: usize) -> Option<&'static str> {
    p.series().get(s).copied()
}

/// A thread's set-up, run in the thread once it is pinned and at its priority, before the loads
/// start (it may allocate and open files; the loop may not): returns the loop.
pub type ThreadSetup = Box<dyn FnOnce() -> Result<Box<dyn RtLoop>, String> + Send>;

/// One thread of a probe's instance.
pub struct Role {
    /// Its part, for the thread's name and messages (`handler`); empty for a probe's only thread.
    pub name: &'static str,
    pub cpu: usize,
    /// Its RT priority; `None`: the run's (`--priority`).
    pub priority: Option<i32>,
    /// The probe's series it reports (indices into [`Probe::series`]), one [`Handoff`] each, in
    /// this order.
    pub series: Vec<usize>,
    pub setup: ThreadSetup,
}

impl Role {
    /// The only thread of a one-thread, one-series probe.
    pub fn single(cpu: usize, setup: ThreadSetup) -> Role {
        Role { name: "", cpu, priority: None, series: vec![0], setup }
    }
}

/// A probe's real-time loop on one thread: allocates nothing, locks nothing, prints nothing.
pub trait RtLoop: Send {
    /// Runs from `start_ns` until every period is accounted for or `stop` is set, handing over
    /// each served period (and the periods missed after it) through `out`: one handoff per
    /// series of its role, in the role's order.
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]);
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
    trace: Option<(Arc<TraceTrigger>, u64, u64)>,
}

impl Handoff {
    fn new(ring: rtrb::Producer<Sample>, counters: Arc<ThreadCounters>, warmup_periods: u64) -> Handoff {
        let (lost, missed_carry, overflows, min, max, done) = (0, 0, 0, u64::MAX, 0, 0);
        let faults_at_warmup_end = ThreadCounters::UNKNOWN;
        let trace = None;
        Handoff { ring, counters, warmup_periods, lost, missed_carry, overflows, min, max, done, faults_at_warmup_end, trace }
    }

    /// Before the loop: with no warm-up, the measurement begins now. The trace trigger learns
    /// the thread's id.
    fn begin(&mut self) {
        if let Some((_, tid, _)) = &mut self.trace {
            *tid = sys::thread_id() as u64;
        }
        self.note_warmup_end();
    }

    /// Reads the thread's page-fault count once, when the warm-up has been accounted for: one
    /// system call in the whole loop, after a fact was handed over and before the next wait.
    #[inline(always)]
    fn note_warmup_end(&mut self) {
        if self.faults_at_warmup_end == ThreadCounters::UNKNOWN && self.done >= self.warmup_periods {
            self.faults_at_warmup_end = sys::thread_page_faults();
        }
    }

    /// After the loop: publishes the page faults taken while measuring.
    fn end(&mut self) {
        if self.faults_at_warmup_end != ThreadCounters::UNKNOWN {
            let taken = sys::thread_page_faults().saturating_sub(self.faults_at_warmup_end);
            self.counters.page_faults.store(taken, Relaxed);
        }
    }

    /// The last period accounted for (served or missed).
    #[inline(always)]
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Hands over an event of window `window` with value `value_ns` (an event-accounted probe,
    /// see [`Probe::events`]): wait-free; a full ring loses the value, never the count.
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

    /// Sets the probe's own count `i` (see [`Probe::counters`]) to `value`.
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

/// How the measurement threads are scheduled.
#[derive(Debug, Clone, Copy)]
pub struct ThreadSched {
    pub policy: Policy,
    /// The RT priority of SCHED_FIFO / SCHED_RR (a role may set its own).
    pub priority: i32,
    /// SCHED_DEADLINE's runtime per period (`None`: a tenth of the probe's interval) and
    /// relative deadline (`None`: the period).
    pub dl_runtime_ns: Option<u64>,
    pub dl_deadline_ns: Option<u64>,
}

/// The least runtime SCHED_DEADLINE accepts (the kernel's `DL_SCALE` granularity, 1024 ns).
pub const MIN_DL_RUNTIME_NS: u64 = 1024;

impl ThreadSched {
    /// A SCHED_DEADLINE thread's (runtime, deadline, period) for a probe of `interval_ns`: the
    /// period is the interval; the deadline as given, else the period; the runtime as given,
    /// else a tenth of the interval (at least [`MIN_DL_RUNTIME_NS`]).
    pub fn deadline(&self, interval_ns: u64) -> (u64, u64, u64) {
        let runtime = self.dl_runtime_ns.unwrap_or((interval_ns / 10).max(MIN_DL_RUNTIME_NS));
        (runtime, self.dl_deadline_ns.unwrap_or(interval_ns), interval_ns)
    }

    /// Checks SCHED_DEADLINE's parameters against a probe's interval: runtime ≤ deadline ≤ period.
    pub fn check_deadline(&self, interval_ns: u64) -> Result<(), String> {
        let (runtime, deadline, period) = self.deadline(interval_ns);
        if self.policy != Policy::Deadline || (runtime <= deadline && deadline <= period) {
            return Ok(());
        }
        Err(format!(
            "SCHED_DEADLINE needs runtime <= deadline <= period, but runtime is {}, deadline {} and period (the \
             interval) {}; lower --dl-runtime / --dl-deadline or lengthen the interval",
            crate::vocab::units::Nanos(runtime),
            crate::vocab::units::Nanos(deadline),
            crate::vocab::units::Nanos(period)
        ))
    }
}

/// What a measurement thread obtained during set-up.
#[derive(Debug, Clone)]
pub struct SetupReport {
    pub probe: &'static str,
    /// The CPU its instance reports under.
    pub cpu: usize,
    /// Its part in the instance (empty for a probe's only thread).
    pub role: &'static str,
    /// The priority it was to get.
    pub wanted: i32,
    pub policy: Option<Policy>,
    pub priority: i32,
    /// Why set-up failed (the thread then does not measure).
    pub error: Option<SetupError>,
}

/// A failure while preparing a measurement thread.
#[derive(Debug, Clone)]
pub enum SetupError {
    Affinity(String),
    /// The raw OS error of `sched_setscheduler`.
    Scheduler(i32),
    /// The probe's own set-up failed (a device absent or busy, ...).
    Probe(String),
    Other(String),
}

/// A probe and the CPUs it measures on (one thread each).
#[derive(Debug, Clone)]
pub struct ProbePlan {
    pub probe: Arc<dyn Probe>,
    pub cpus: Vec<usize>,
}

/// What one ring of facts carries: which probe (index into the plans), the CPU its instance
/// reports under, and which of the probe's series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesKey {
    pub probe: usize,
    pub cpu: usize,
    pub series: usize,
}

/// Measurement threads set up (pinned, at their priority, stack and rings pre-faulted) and
/// waiting for their start time.
pub struct PreparedProbes {
    series: SeriesSet,
    reports: Vec<SetupReport>,
    handles: Vec<JoinHandle<()>>,
    go: Vec<mpsc::Sender<u64>>,
}

/// Per ring of facts (one per series of each instance): its key, its counters, its consumer
/// end, and the thread that feeds it.
#[derive(Default)]
struct SeriesSet {
    keys: Vec<SeriesKey>,
    counters: Vec<Arc<ThreadCounters>>,
    rings: Vec<rtrb::Consumer<Sample>>,
    thread_of: Vec<usize>,
}

impl PreparedProbes {
    pub fn reports(&self) -> &[SetupReport] {
        &self.reports
    }

    /// Starts every thread's loop: period `k` has its deadline at `start_ns + k·interval`.
    /// A thread that cannot run yet (a load above it holds its CPU) starts late and counts the
    /// periods it missed.
    pub fn go(self, start_ns: u64) -> RunningProbes {
        for g in &self.go {
            let _ = g.send(start_ns);
        }
        let s = self.series;
        RunningProbes {
            start_ns,
            keys: s.keys,
            counters: s.counters,
            rings: s.rings,
            thread_of: s.thread_of,
            handles: self.handles.into_iter().map(Some).collect(),
        }
    }
}

/// The running measurement: per series of each instance one ring consumer and counter set,
/// fed by one of the threads.
pub struct RunningProbes {
    pub start_ns: u64,
    /// What each ring carries; `counters` and `rings` are indexed alike.
    pub keys: Vec<SeriesKey>,
    pub counters: Vec<Arc<ThreadCounters>>,
    pub rings: Vec<rtrb::Consumer<Sample>>,
    /// The thread (index into `handles`) feeding each ring.
    thread_of: Vec<usize>,
    /// `None` once joined.
    handles: Vec<Option<JoinHandle<()>>>,
}

impl RunningProbes {
    /// Whether the thread feeding ring `i` has ended its loop (its counters are final then).
    pub fn finished(&self, i: usize) -> bool {
        self.handles[self.thread_of[i]].as_ref().is_none_or(|h| h.is_finished())
    }
    /// Whether every measurement thread has ended its loop.
    pub fn all_finished(&self) -> bool {
        self.handles.iter().all(|h| h.as_ref().is_none_or(|h| h.is_finished()))
    }
    /// Joins the threads that have ended; a thread still held off its CPU is left behind (it
    /// ends with the process) and its unserved periods are counted by the collector.
    pub fn join_finished(&mut self) {
        for h in &mut self.handles {
            if h.as_ref().is_some_and(|h| h.is_finished()) {
                let _ = h.take().expect("checked").join();
            }
        }
    }
}

/// Stack of a measurement thread; small because `mlockall(MCL_FUTURE)` locks all of it.
const THREAD_STACK: usize = 64 * 1024;
/// Part of the stack touched before the loop so it never page-faults inside it.
const PREFAULT_STACK: usize = 16 * 1024;

/// Ring slots per thread: about two seconds of wake-ups (the collector drains ten times a
/// second, and even a collector starved by RT throttling runs once a second), within
/// 1024..65536 slots (32 KiB..2 MiB). A fuller ring costs latencies, never the accounting of
/// periods (see [`Sample::lost_before`]).
pub fn ring_capacity(interval_ns: u64) -> usize {
    let two_seconds = (2_000_000_000 / interval_ns.max(1)) as usize;
    two_seconds.next_power_of_two().clamp(1024, 65_536)
}

/// EPERM, for the unlikely error without an OS error number.
fn libc_eperm() -> i32 {
    1
}

#[inline(never)]
fn prefault_stack() {
    let buf = [1u8; PREFAULT_STACK];
    std::hint::black_box(&buf);
}

/// A thread's place: which probe, the instance's CPU, its role's name, CPU and scheduling.
#[derive(Clone, Copy)]
struct Placement {
    probe: &'static str,
    instance_cpu: usize,
    role: &'static str,
    cpu: usize,
    sched: ThreadSched,
    /// The probe's interval: a SCHED_DEADLINE thread's period.
    interval_ns: u64,
}

impl Placement {
    fn report(&self, policy: Option<Policy>, priority: i32, error: Option<SetupError>) -> SetupReport {
        let wanted = if self.sched.policy.has_priority() { self.sched.priority } else { 0 };
        let (probe, cpu, role) = (self.probe, self.instance_cpu, self.role);
        SetupReport { probe, cpu, role, wanted, policy, priority, error }
    }
}

fn setup_thread(at: Placement, setup: ThreadSetup) -> Result<Box<dyn RtLoop>, SetupReport> {
    let fail = |e| at.report(None, 0, Some(e));
    // A SCHED_DEADLINE thread may not be pinned: admission control needs its affinity to span
    // every CPU of its root domain (see `Policy::Deadline`).
    if at.sched.policy != Policy::Deadline {
        sys::pin_thread_to_cpu(at.cpu).map_err(|e| fail(SetupError::Affinity(e.to_string())))?;
    }
    sys::block_process_signals().map_err(|e| fail(SetupError::Other(format!("blocking signals: {e}"))))?;
    let scheduled = match at.sched.policy {
        Policy::Deadline => {
            let (runtime, deadline, period) = at.sched.deadline(at.interval_ns);
            sys::set_thread_deadline(runtime, deadline, period)
        }
        p => sys::set_thread_scheduler(p, at.sched.priority),
    };
    scheduled.map_err(|e| fail(SetupError::Scheduler(e.raw_os_error().unwrap_or(libc_eperm()))))?;
    if !at.sched.policy.is_realtime() {
        // SCHED_OTHER threads sleep with 50 µs of timer slack by default; that would be measured.
        let _ = sys::set_timer_slack_ns(1);
    }
    let rt_loop = setup().map_err(|e| fail(SetupError::Probe(e)))?;
    prefault_stack();
    Ok(rt_loop)
}

/// The scheduling a thread obtained, read back.
fn obtained(at: Placement) -> SetupReport {
    match sys::thread_scheduler() {
        Ok((policy, priority)) => at.report(policy, priority, None),
        Err(e) => at.report(None, 0, Some(SetupError::Other(format!("reading back the scheduler: {e}")))),
    }
}

/// A ring for one series, every slot touched once so the loop never takes a page fault on it.
fn new_ring(interval_ns: u64) -> (rtrb::Producer<Sample>, rtrb::Consumer<Sample>) {
    let (mut producer, mut consumer) = rtrb::RingBuffer::<Sample>::new(ring_capacity(interval_ns));
    while producer.push(Sample::default()).is_ok() {}
    while consumer.pop().is_ok() {}
    (producer, consumer)
}

/// Sets up every thread of every probe instance and returns once every one is ready (or, if
/// any set-up failed, after all have ended, with their reports). Returns early when `stop` is
/// set: threads still setting up then end as soon as they are started.
/// `triggers`: per CPU, the trace trigger its threads offer new worst cases to (`--trace`).
pub fn prepare(
    plans: &[ProbePlan],
    sched: ThreadSched,
    stop: Arc<AtomicBool>,
    triggers: &[(usize, Arc<TraceTrigger>)],
) -> Result<PreparedProbes, Vec<SetupReport>> {
    let (report_tx, report_rx) = mpsc::channel();
    let mut prepared = PreparedProbes { series: SeriesSet::default(), reports: vec![], handles: vec![], go: vec![] };
    let mut failure = None;
    'plans: for (index, plan) in plans.iter().enumerate() {
        for &cpu in &plan.cpus {
            let interval_ns = plan.probe.schedule().interval_ns;
            let instance = Placement { probe: plan.probe.name(), instance_cpu: cpu, role: "", cpu, sched, interval_ns };
            let roles = match plan.probe.instance(cpu, &plan.cpus) {
                Ok(r) => r,
                Err(e) => {
                    failure = Some(instance.report(None, 0, Some(SetupError::Probe(e))));
                    break 'plans;
                }
            };
            for role in roles {
                let priority = role.priority.unwrap_or(sched.priority);
                let at = Placement { role: role.name, cpu: role.cpu, sched: ThreadSched { priority, ..sched }, ..instance };
                let trigger = triggers.iter().find(|(c, _)| *c == role.cpu).map(|(_, t)| t.clone());
                if let Err(r) = spawn_role(&mut prepared, index, plan, role, at, (&stop, &report_tx), trigger) {
                    failure = Some(r);
                    break 'plans;
                }
            }
        }
    }
    drop(report_tx);
    collect_reports(prepared, report_rx, failure, &stop)
}

/// Spawns one thread of an instance with a ring per series it reports.
fn spawn_role(
    prepared: &mut PreparedProbes,
    index: usize,
    plan: &ProbePlan,
    role: Role,
    at: Placement,
    (stop, report_tx): (&Arc<AtomicBool>, &mpsc::Sender<SetupReport>),
    trigger: Option<Arc<TraceTrigger>>,
) -> Result<(), SetupReport> {
    let schedule = plan.probe.schedule();
    let thread = prepared.handles.len();
    let mut handoffs = Vec::with_capacity(role.series.len());
    for &series in &role.series {
        // Events (a busy loop's gaps) may come far faster than periods: the largest ring.
        let interval = if plan.probe.events() { 1 } else { schedule.interval_ns };
        let (producer, consumer) = new_ring(interval);
        let counters = Arc::new(ThreadCounters::default());
        let mut handoff = Handoff::new(producer, counters.clone(), schedule.warmup_periods);
        // Values that are not latencies (intervals, a loop's cycle lengths) are not traced.
        if plan.probe.measures(series).is_none() && plan.probe.bounds(series).is_none() {
            handoff.trace = trigger.clone().map(|t| (t, 0, prepared.series.keys.len() as u64));
        }
        handoffs.push(handoff);
        let s = &mut prepared.series;
        s.keys.push(SeriesKey { probe: index, cpu: at.instance_cpu, series });
        s.counters.push(counters);
        s.rings.push(consumer);
        s.thread_of.push(thread);
    }
    // Each thread waits for its start time; a hang-up means: give up.
    let (go_tx, go_rx) = mpsc::channel::<u64>();
    let (stop, report_tx, setup) = (stop.clone(), report_tx.clone(), role.setup);
    let tag = if at.role.is_empty() { String::new() } else { at.role[..1].to_string() };
    let name = format!("rtgauge-{}{}{tag}", at.probe, at.instance_cpu);
    let spawned = std::thread::Builder::new().name(name).stack_size(THREAD_STACK).spawn(move || {
        let (mut rt_loop, report) = match setup_thread(at, setup) {
            Ok(l) => (Some(l), obtained(at)),
            Err(r) => (None, r),
        };
        let ok = report.error.is_none();
        let _ = report_tx.send(report);
        drop(report_tx);
        if let (true, Some(l), Ok(start_ns)) = (ok, rt_loop.as_mut(), go_rx.recv()) {
            handoffs.iter_mut().for_each(Handoff::begin);
            l.run(start_ns, &stop, &mut handoffs);
            handoffs.iter_mut().for_each(Handoff::end);
        }
    });
    match spawned {
        Ok(h) => {
            prepared.handles.push(h);
            prepared.go.push(go_tx);
            Ok(())
        }
        // The run does not start: its rings are dropped with the rest.
        Err(e) => Err(at.report(None, 0, Some(SetupError::Other(format!("creating the thread: {e}"))))),
    }
}

/// Waits for every spawned thread's set-up report. On a failure, ends them all and returns the
/// reports; otherwise the threads wait for [`PreparedProbes::go`].
fn collect_reports(
    mut prepared: PreparedProbes,
    report_rx: mpsc::Receiver<SetupReport>,
    failure: Option<SetupReport>,
    stop: &AtomicBool,
) -> Result<PreparedProbes, Vec<SetupReport>> {
    let mut reports = Vec::with_capacity(prepared.handles.len());
    while reports.len() < prepared.handles.len() && !stop.load(Relaxed) {
        match report_rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(r) => reports.push(r),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let interrupted = reports.len() < prepared.handles.len();
    reports.extend(failure);
    reports.sort_by_key(|r| (r.probe, r.cpu, r.role));
    if !interrupted && reports.iter().any(|r| r.error.is_some()) {
        drop(prepared.go);
        for h in prepared.handles {
            let _ = h.join();
        }
        return Err(reports);
    }
    prepared.reports = reports;
    Ok(prepared)
}

#[cfg(test)]
mod tests {
    use super::{TraceTrigger, TRACE_INSTANCES};
    use std::sync::atomic::Ordering::Relaxed;

    fn fired(t: &TraceTrigger) -> Vec<u64> {
        t.fired.iter().map(|f| f.load(Relaxed)).collect()
    }

    /// A trigger whose instances but the last were stopped by small new worst cases (10 ns, 11 ns,
    /// ... of thread 7's series 0), and wait to be read.
    fn all_but_the_last_stopped() -> TraceTrigger {
        let t = TraceTrigger::new([-1; TRACE_INSTANCES], 0);
        for k in 0..TRACE_INSTANCES - 1 {
            t.offer(10 + k as u64, 7, 0);
        }
        t
    }

    /// CI (x86 guest): two small new worst cases right before a 300 ms stall stopped both
    /// instances; the collector restarted one in the middle of the stall, and the stall was
    /// traced from there on only. A firing now always leaves an instance recording.
    #[test]
    fn a_stall_after_quick_worst_cases_is_traced_by_an_instance_that_recorded_all_along() {
        let n = TRACE_INSTANCES;
        let t = TraceTrigger::new([-1; TRACE_INSTANCES], 0);
        for k in 0..n - 1 {
            t.offer(10 + k as u64, 1, 0);
            assert_eq!(fired(&t).iter().sum::<u64>(), k as u64 + 1);
        }
        // All but one stopped: the next new worst case stops nothing, and the last instance
        // keeps recording.
        t.offer(100, 1, 0);
        assert_eq!(fired(&t).iter().sum::<u64>(), n as u64 - 1);
        assert_eq!(t.untraced(), 1);
        assert!(t.recording[n - 1].load(Relaxed));
        // The collector restarts the first; the stall stops the one that recorded all along.
        t.restarted(0);
        t.offer(300_000_000, 1, 0);
        assert_eq!(t.fired[n - 1].load(Relaxed), 1);
        assert_eq!(t.value_ns[n - 1].load(Relaxed), 300_000_000);
        assert!(t.recording[0].load(Relaxed), "the restarted one records on");
    }

    /// CI (x86 RT guest, a loaded host): the stall's worst case came while the trace of the
    /// small latencies before it was still being read, and was not traced at all. Deferred, it
    /// stops the instance that recorded through it as soon as another one records again.
    #[test]
    fn a_worst_case_while_the_other_trace_is_read_is_traced_once_it_is_restarted() {
        let n = TRACE_INSTANCES;
        let t = all_but_the_last_stopped();
        t.offer(200, 7, 1);
        t.offer(300_000_000, 7, 2);
        assert!(!t.fire_deferred(), "nothing else records yet");
        assert!(t.recording[n - 1].load(Relaxed));
        t.restarted(0);
        assert!(t.fire_deferred());
        assert_eq!(t.fired[n - 1].load(Relaxed), 1);
        assert_eq!(t.value_ns[n - 1].load(Relaxed), 300_000_000, "the last (largest) deferred one");
        assert_eq!(t.series[n - 1].load(Relaxed), 2);
        assert_eq!(t.untraced(), 1, "the 200 ns one, superseded");
        assert!(!t.fire_deferred(), "each deferred worst case once");
        assert!(t.recording[0].load(Relaxed), "one instance always records");
    }

    /// CI beside a load (x86 standard guest): the stall's worst case came while the trace of a
    /// small one was read; deferred, it waited for that read — seconds under an emulator on a
    /// loaded host — and the instance recording through it wrapped past its window (the stall
    /// traced with 28 of its 300 ms). A larger deferred worst case makes the trace being read
    /// moot: the collector gives that read up, and the deferral stops the other instance at once.
    #[test]
    fn a_larger_deferred_worst_case_supersedes_the_trace_being_read() {
        let t = all_but_the_last_stopped();
        let read_value = t.value_ns[0].load(Relaxed);
        assert!(!t.deferred_exceeds(read_value), "nothing deferred yet");
        // A smaller one of another thread is deferred: the trace being read stays wanted.
        t.offer(5, 8, 1);
        assert!(!t.deferred_exceeds(read_value));
        t.offer(300_000_000, 7, 2);
        assert!(t.deferred_exceeds(read_value), "the stall's, larger, waits");
        t.restarted(0);
        assert!(t.fire_deferred());
        assert!(!t.deferred_exceeds(read_value), "fired: nothing waits any more");
    }

    /// CI beside a load (x86 standard guest): the stall traced from 58 ms into it. A small
    /// worst case of the stall's own start was deferred; the collector restarted the other
    /// instance in the middle of the stall and at once stopped the one that had recorded through
    /// the stall's start, for that small one. Now the deferral waits for the CPU's next wake-up:
    /// the stall's own, larger worst case then stops that instance, and the small one is
    /// superseded.
    #[test]
    fn a_deferral_waits_for_a_wake_up_so_a_stall_under_way_keeps_its_start() {
        let t = all_but_the_last_stopped();
        let last = TRACE_INSTANCES - 1;
        t.offer(20, 7, 0);
        // The collector restarts the instance it read, during the stall; nothing stops yet.
        t.restarted(0);
        t.arm_deferred();
        assert!(t.recording.iter().all(|r| r.load(Relaxed)), "no wake-up yet: every instance records");
        assert_eq!(fired(&t).iter().sum::<u64>(), TRACE_INSTANCES as u64 - 1);
        // The stall's wake-up: its own worst case first, then the tick.
        t.offer(300_000_000, 7, 0);
        t.tick();
        assert_eq!(t.value_ns[last].load(Relaxed), 300_000_000, "the instance that recorded through the stall");
        assert!(t.recording[0].load(Relaxed), "the restarted one records on");
        assert_eq!(t.untraced(), 1, "the small one, superseded");
        assert!(!t.fire_deferred(), "nothing left to fire");
    }

    /// Without a larger one, the next wake-up carries the armed deferral out.
    #[test]
    fn an_armed_deferral_stops_the_instance_at_the_next_wake_up() {
        let t = all_but_the_last_stopped();
        let last = TRACE_INSTANCES - 1;
        t.offer(20, 7, 1);
        t.tick();
        assert!(t.recording[last].load(Relaxed), "not armed: a tick stops nothing");
        t.arm_deferred();
        assert!(!t.armed.load(Relaxed), "nothing else records yet: not armed");
        t.restarted(0);
        t.arm_deferred();
        t.tick();
        assert_eq!(t.fired[last].load(Relaxed), 1);
        assert_eq!((t.value_ns[last].load(Relaxed), t.series[last].load(Relaxed)), (20, 1));
        assert_eq!(t.untraced(), 0);
        t.tick();
        assert_eq!(fired(&t).iter().sum::<u64>(), TRACE_INSTANCES as u64, "each deferral once");
        assert!(t.recording[0].load(Relaxed), "one instance always records");
    }

    #[test]
    fn values_at_or_under_the_threshold_stop_nothing() {
        let t = TraceTrigger::new([-1; TRACE_INSTANCES], 100);
        t.offer(100, 1, 0);
        assert_eq!(fired(&t), vec![0; TRACE_INSTANCES]);
        t.offer(101, 1, 0);
        assert_eq!(fired(&t).iter().sum::<u64>(), 1);
    }
}
