//! Stage four of the flow: the probes. Each probe runs one measurement thread per CPU, pinned,
//! at the requested policy and priority, set up completely (affinity, priority, signal mask,
//! pre-faulted stack and ring) before its loop starts. Samples leave each thread through a
//! wait-free single-producer ring ([`rtrb`]) to the non-RT collector; counters that must never
//! be lost (samples, missed, min, max) are also published through atomics.

pub mod timer;

use crate::sys::{self, Policy};
use std::sync::atomic::{AtomicBool, AtomicU64};
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

/// How the measurement threads are scheduled.
#[derive(Debug, Clone, Copy)]
pub struct ThreadSched {
    pub policy: Policy,
    pub priority: i32,
}

/// What a measurement thread obtained during set-up.
#[derive(Debug, Clone)]
pub struct SetupReport {
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
    Other(String),
}

/// Measurement threads set up (pinned, at their priority, stack and ring pre-faulted) and
/// waiting for their start time.
pub struct PreparedProbes {
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
            counters: self.counters,
            rings: self.rings,
            handles: self.handles.into_iter().map(Some).collect(),
        }
    }
}

/// The running measurement: one thread, ring consumer and counter set per CPU.
pub struct RunningProbes {
    pub start_ns: u64,
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

fn setup_thread(cpu: usize, sched: ThreadSched) -> SetupReport {
    let fail = |e| SetupReport { cpu, policy: None, priority: 0, error: Some(e) };
    if let Err(e) = sys::pin_thread_to_cpu(cpu) {
        return fail(SetupError::Affinity(e.to_string()));
    }
    if let Err(e) = sys::block_process_signals() {
        return fail(SetupError::Other(format!("blocking signals: {e}")));
    }
    if let Err(e) = sys::set_thread_scheduler(sched.policy, sched.priority) {
        return fail(SetupError::Scheduler(e.raw_os_error().unwrap_or(libc_eperm())));
    }
    if !sched.policy.is_realtime() {
        // SCHED_OTHER threads sleep with 50 µs of timer slack by default; that would be measured.
        let _ = sys::set_timer_slack_ns(1);
    }
    prefault_stack();
    match sys::thread_scheduler() {
        Ok((policy, priority)) => SetupReport { cpu, policy, priority, error: None },
        Err(e) => fail(SetupError::Other(format!("reading back the scheduler: {e}"))),
    }
}

/// Sets up one timer measurement thread per CPU and returns once every one is ready (or, if
/// any set-up failed, after all have ended, with their reports). Returns early when `stop` is
/// set: threads still setting up then end as soon as they are started.
pub fn prepare_timer(
    cpus: &[usize],
    sched: ThreadSched,
    cfg: timer::TimerLoop,
    stop: Arc<AtomicBool>,
) -> Result<PreparedProbes, Vec<SetupReport>> {
    let capacity = ring_capacity(cfg.interval_ns);
    let (report_tx, report_rx) = mpsc::channel();
    let mut prepared = PreparedProbes { counters: vec![], rings: vec![], reports: vec![], handles: vec![], go: vec![] };
    let mut spawn_failure = None;
    for &cpu in cpus {
        let (mut producer, mut consumer) = rtrb::RingBuffer::<Sample>::new(capacity);
        // Touch every slot once so the loop never takes a page fault on the ring.
        while producer.push(Sample::default()).is_ok() {}
        while consumer.pop().is_ok() {}
        let out = Arc::new(ThreadCounters::default());
        // Each thread waits for its start time; a hang-up means: give up.
        let (go_tx, go_rx) = mpsc::channel::<u64>();
        let (stop, report_tx, thread_out) = (stop.clone(), report_tx.clone(), out.clone());
        let spawned = std::thread::Builder::new().name(format!("rtgauge-timer{cpu}")).stack_size(THREAD_STACK).spawn(move || {
            let report = setup_thread(cpu, sched);
            let ok = report.error.is_none();
            let _ = report_tx.send(report);
            drop(report_tx);
            if let (true, Ok(start_ns)) = (ok, go_rx.recv()) {
                timer::run(cfg, start_ns, &stop, &mut producer, &thread_out);
            }
        });
        match spawned {
            Ok(h) => prepared.handles.push(h),
            Err(e) => {
                spawn_failure = Some(SetupReport {
                    cpu,
                    policy: None,
                    priority: 0,
                    error: Some(SetupError::Other(format!("creating the thread: {e}"))),
                });
                break;
            }
        }
        prepared.go.push(go_tx);
        prepared.rings.push(consumer);
        prepared.counters.push(out);
    }
    drop(report_tx);
    let mut reports = Vec::with_capacity(cpus.len());
    while reports.len() < prepared.handles.len() && !stop.load(std::sync::atomic::Ordering::Relaxed) {
        match report_rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(r) => reports.push(r),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let interrupted = reports.len() < prepared.handles.len();
    reports.extend(spawn_failure);
    reports.sort_by_key(|r| r.cpu);
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
