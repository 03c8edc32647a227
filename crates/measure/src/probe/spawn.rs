//! The spawning of every probe's threads through one path: each thread pinned, at its policy
//! and priority, set up completely (affinity, priority, signal mask, pre-faulted stack and rings,
//! the probe's own set-up) before the loads start ([`prepare`]); then started together
//! ([`PreparedProbes::go`]) and watched while they run ([`RunningProbes`]).

use super::{Handoff, Probe, Role, RtLoop, Sample, ThreadCounters, ThreadSetup, TraceTrigger};
use crate::sys;
use crate::vocab::policy::Policy;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

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
    pub fn check_deadline(&self, interval_ns: u64) -> Result<(), crate::vocab::Error> {
        self.check_deadline_text(interval_ns).map_err(crate::vocab::Error::Invalid)
    }

    /// [`Self::check_deadline`], its failure as text.
    fn check_deadline_text(&self, interval_ns: u64) -> Result<(), String> {
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
    /// A kernel-tracer probe's instance, once the run-wide set-up made it (see `probe::kernel`).
    pub kernel: Option<super::KernelInstance>,
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
            if let Some(done) = h.take_if(|h| h.is_finished()) {
                let _ = done.join();
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
        sys::sched::pin_thread_to_cpu(at.cpu).map_err(|e| fail(SetupError::Affinity(e.to_string())))?;
    }
    sys::signal::block_process_signals().map_err(|e| fail(SetupError::Other(format!("blocking signals: {e}"))))?;
    let scheduled = match at.sched.policy {
        Policy::Deadline => {
            let (runtime, deadline, period) = at.sched.deadline(at.interval_ns);
            sys::sched::set_thread_deadline(runtime, deadline, period)
        }
        p => sys::sched::set_thread_scheduler(p, at.sched.priority),
    };
    scheduled.map_err(|e| fail(SetupError::Scheduler(e.raw_os_error().unwrap_or(libc_eperm()))))?;
    if !at.sched.policy.is_realtime() {
        // SCHED_OTHER threads sleep with 50 µs of timer slack by default; that would be measured.
        let _ = sys::process::set_timer_slack_ns(1);
    }
    let rt_loop = setup().map_err(|e| fail(SetupError::Probe(e.into())))?;
    prefault_stack();
    Ok(rt_loop)
}

/// The scheduling a thread obtained, read back.
fn obtained(at: Placement) -> SetupReport {
    match sys::sched::thread_scheduler() {
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
            let roles = match &plan.kernel {
                Some(k) => plan.probe.kernel_instance(cpu, &plan.cpus, k),
                None => plan.probe.instance(cpu, &plan.cpus),
            };
            let roles = match roles {
                Ok(r) => r,
                Err(e) => {
                    failure = Some(instance.report(None, 0, Some(SetupError::Probe(e.into()))));
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
        let interval = if plan.probe.accounting().events() { 1 } else { schedule.interval_ns };
        let (producer, consumer) = new_ring(interval);
        let counters = Arc::new(ThreadCounters::default());
        let mut handoff = Handoff::new(producer, counters.clone(), schedule.warmup_periods);
        // Values that are not latencies (intervals, a loop's cycle lengths) are not traced.
        if plan.probe.measures(series).is_none() && plan.probe.accounting().bounds(series).is_none() {
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
