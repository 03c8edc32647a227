//! Stage four of the flow: the probes. A probe ([`Probe`]) is one kind of measurement: its name,
//! its periods, a per-thread set-up and a real-time loop ([`RtLoop`]). Every probe runs through
//! the same path here: one thread per (probe, CPU), pinned, at the requested policy and priority,
//! set up completely (affinity, priority, signal mask, pre-faulted stack and ring, the probe's
//! own set-up) before the loads start. Facts leave each thread through a [`Handoff`]: a wait-free
//! single-producer ring ([`rtrb`]) to the non-RT collector, and atomics for what must never be
//! lost (extremes, hand-off overflows, periods done). [`registry`] knows every probe by name.

pub mod period;
pub mod registry;
pub mod timer;

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
}

impl Default for ThreadCounters {
    fn default() -> Self {
        ThreadCounters {
            min_ns: AtomicU64::new(u64::MAX),
            max_ns: AtomicU64::new(0),
            max_period: AtomicU64::new(0),
            handoff_overflows: AtomicU64::new(0),
            periods_done: AtomicU64::new(0),
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

/// One kind of measurement. The lifecycle knows probes only through this trait.
pub trait Probe: Send + Sync + std::fmt::Debug {
    /// Its name, as `--measure`, results and requirements write it.
    fn name(&self) -> &'static str;
    /// Its periods.
    fn schedule(&self) -> Schedule;
    /// Its settings, as the result's configuration records them (`interval=1ms`, ...).
    fn settings(&self) -> Vec<String>;
    /// Bounds its values are judged by, (below, above): the collector counts the values under
    /// the first and over the second (the period probe's short and long cycles).
    fn bounds(&self) -> Option<(u64, u64)> {
        None
    }
    /// Per-thread set-up, in the thread, once it is pinned and at its priority, before the loads
    /// start (it may allocate and open files; the loop may not): returns the loop.
    fn thread(&self, cpu: usize) -> Result<Box<dyn RtLoop>, String>;
}

/// A probe's real-time loop on one thread: allocates nothing, locks nothing, prints nothing.
pub trait RtLoop: Send {
    /// Runs from `start_ns` until every period is accounted for or `stop` is set, handing over
    /// each served period (and the periods missed after it) through `out`.
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut Handoff);
}

/// Where a loop's facts go: the ring to the collector, and the counters that survive a full ring.
pub struct Handoff {
    ring: rtrb::Producer<Sample>,
    counters: Arc<ThreadCounters>,
    warmup_periods: u64,
    /// Facts the ring could not take since the last one it took.
    lost: u64,
    overflows: u64,
    min: u64,
    max: u64,
}

impl Handoff {
    fn new(ring: rtrb::Producer<Sample>, counters: Arc<ThreadCounters>, warmup_periods: u64) -> Handoff {
        Handoff { ring, counters, warmup_periods, lost: 0, overflows: 0, min: u64::MAX, max: 0 }
    }

    /// Hands over period `period` served with `latency_ns`, and the `missed_after` periods after
    /// it whose deadlines passed unserved. Wait-free: a full ring loses the latency, never the
    /// accounting (see [`Sample::lost_before`]).
    #[inline(always)]
    pub fn served(&mut self, period: u64, latency_ns: u64, missed_after: u64) {
        let c = &*self.counters;
        if period > self.warmup_periods {
            if latency_ns < self.min {
                self.min = latency_ns;
                c.min_ns.store(latency_ns, Relaxed);
            }
            if latency_ns > self.max {
                self.max = latency_ns;
                c.max_ns.store(latency_ns, Relaxed);
                c.max_period.store(period, Relaxed);
            }
        }
        if self.ring.push(Sample { period, latency_ns, missed_after, lost_before: self.lost }).is_ok() {
            self.lost = 0;
        } else {
            self.lost += 1;
            self.overflows += 1;
            c.handoff_overflows.store(self.overflows, Relaxed);
        }
        c.periods_done.store(period + missed_after, Relaxed);
    }
}

/// How the measurement threads are scheduled.
#[derive(Debug, Clone, Copy)]
pub struct ThreadSched {
    pub policy: Policy,
    pub priority: i32,
}

/// What a measurement thread obtained during set-up.
#[derive(Debug, Clone)]
pub struct SetupReport {
    pub probe: &'static str,
    pub cpu: usize,
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

/// Which probe (index into the plans) and CPU a thread measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadKey {
    pub probe: usize,
    pub cpu: usize,
}

/// Measurement threads set up (pinned, at their priority, stack and ring pre-faulted) and
/// waiting for their start time.
pub struct PreparedProbes {
    keys: Vec<ThreadKey>,
    counters: Vec<Arc<ThreadCounters>>,
    rings: Vec<rtrb::Consumer<Sample>>,
    reports: Vec<SetupReport>,
    handles: Vec<JoinHandle<()>>,
    go: Vec<mpsc::Sender<u64>>,
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
        RunningProbes {
            start_ns,
            keys: self.keys,
            counters: self.counters,
            rings: self.rings,
            handles: self.handles.into_iter().map(Some).collect(),
        }
    }
}

/// The running measurement: one thread, ring consumer and counter set per (probe, CPU).
pub struct RunningProbes {
    pub start_ns: u64,
    /// What each thread measures; the other vectors are indexed alike.
    pub keys: Vec<ThreadKey>,
    pub counters: Vec<Arc<ThreadCounters>>,
    pub rings: Vec<rtrb::Consumer<Sample>>,
    /// `None` once joined.
    handles: Vec<Option<JoinHandle<()>>>,
}

impl RunningProbes {
    /// Whether thread `i` has ended its loop (its counters are final then).
    pub fn finished(&self, i: usize) -> bool {
        self.handles[i].as_ref().is_none_or(|h| h.is_finished())
    }
    /// Whether every measurement thread has ended its loop.
    pub fn all_finished(&self) -> bool {
        (0..self.handles.len()).all(|i| self.finished(i))
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

fn setup_thread(probe: &dyn Probe, cpu: usize, sched: ThreadSched) -> Result<Box<dyn RtLoop>, SetupReport> {
    let fail = |e| SetupReport { probe: probe.name(), cpu, policy: None, priority: 0, error: Some(e) };
    sys::pin_thread_to_cpu(cpu).map_err(|e| fail(SetupError::Affinity(e.to_string())))?;
    sys::block_process_signals().map_err(|e| fail(SetupError::Other(format!("blocking signals: {e}"))))?;
    sys::set_thread_scheduler(sched.policy, sched.priority)
        .map_err(|e| fail(SetupError::Scheduler(e.raw_os_error().unwrap_or(libc_eperm()))))?;
    if !sched.policy.is_realtime() {
        // SCHED_OTHER threads sleep with 50 µs of timer slack by default; that would be measured.
        let _ = sys::set_timer_slack_ns(1);
    }
    let rt_loop = probe.thread(cpu).map_err(|e| fail(SetupError::Probe(e)))?;
    prefault_stack();
    Ok(rt_loop)
}

/// The scheduling a thread obtained, read back.
fn obtained(probe: &dyn Probe, cpu: usize) -> SetupReport {
    match sys::thread_scheduler() {
        Ok((policy, priority)) => SetupReport { probe: probe.name(), cpu, policy, priority, error: None },
        Err(e) => SetupReport {
            probe: probe.name(),
            cpu,
            policy: None,
            priority: 0,
            error: Some(SetupError::Other(format!("reading back the scheduler: {e}"))),
        },
    }
}

/// Sets up one measurement thread per (probe, CPU) and returns once every one is ready (or, if
/// any set-up failed, after all have ended, with their reports). Returns early when `stop` is
/// set: threads still setting up then end as soon as they are started.
pub fn prepare(plans: &[ProbePlan], sched: ThreadSched, stop: Arc<AtomicBool>) -> Result<PreparedProbes, Vec<SetupReport>> {
    let (report_tx, report_rx) = mpsc::channel();
    let mut prepared =
        PreparedProbes { keys: vec![], counters: vec![], rings: vec![], reports: vec![], handles: vec![], go: vec![] };
    let mut spawn_failure = None;
    let threads = plans.iter().enumerate().flat_map(|(i, p)| p.cpus.iter().map(move |&cpu| (i, p, cpu)));
    for (index, plan, cpu) in threads {
        let schedule = plan.probe.schedule();
        let (mut producer, mut consumer) = rtrb::RingBuffer::<Sample>::new(ring_capacity(schedule.interval_ns));
        // Touch every slot once so the loop never takes a page fault on the ring.
        while producer.push(Sample::default()).is_ok() {}
        while consumer.pop().is_ok() {}
        let out = Arc::new(ThreadCounters::default());
        // Each thread waits for its start time; a hang-up means: give up.
        let (go_tx, go_rx) = mpsc::channel::<u64>();
        let (stop, report_tx, probe) = (stop.clone(), report_tx.clone(), plan.probe.clone());
        let mut handoff = Handoff::new(producer, out.clone(), schedule.warmup_periods);
        let name = format!("rtgauge-{}{cpu}", probe.name());
        let spawned = std::thread::Builder::new().name(name).stack_size(THREAD_STACK).spawn(move || {
            let (mut rt_loop, report) = match setup_thread(&*probe, cpu, sched) {
                Ok(l) => (Some(l), obtained(&*probe, cpu)),
                Err(r) => (None, r),
            };
            let ok = report.error.is_none();
            let _ = report_tx.send(report);
            drop(report_tx);
            if let (true, Some(l), Ok(start_ns)) = (ok, rt_loop.as_mut(), go_rx.recv()) {
                l.run(start_ns, &stop, &mut handoff);
            }
        });
        match spawned {
            Ok(h) => prepared.handles.push(h),
            Err(e) => {
                spawn_failure = Some(SetupReport {
                    probe: plan.probe.name(),
                    cpu,
                    policy: None,
                    priority: 0,
                    error: Some(SetupError::Other(format!("creating the thread: {e}"))),
                });
                break;
            }
        }
        prepared.keys.push(ThreadKey { probe: index, cpu });
        prepared.go.push(go_tx);
        prepared.rings.push(consumer);
        prepared.counters.push(out);
    }
    drop(report_tx);
    let mut reports = Vec::with_capacity(prepared.handles.len());
    while reports.len() < prepared.handles.len() && !stop.load(Relaxed) {
        match report_rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(r) => reports.push(r),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let interrupted = reports.len() < prepared.handles.len();
    reports.extend(spawn_failure);
    reports.sort_by_key(|r| (r.probe, r.cpu));
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
