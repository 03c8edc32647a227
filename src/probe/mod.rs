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

/// One measured wake-up, handed from a measurement thread to the collector.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// Index of the period (1-based, counted from the start including warm-up).
    pub period: u64,
    pub latency_ns: u64,
}

/// Counters one measurement thread publishes; written by that thread only, read by anyone.
#[derive(Debug)]
pub struct ThreadCounters {
    pub samples: AtomicU64,
    pub missed: AtomicU64,
    pub warmup_samples: AtomicU64,
    pub warmup_missed: AtomicU64,
    pub min_ns: AtomicU64,
    pub max_ns: AtomicU64,
    /// Period of the largest latency.
    pub max_period: AtomicU64,
    /// Samples the collector could not take in time (the ring was full); they still count in
    /// `samples`, `min` and `max`, but are absent from the histogram.
    pub handoff_overflows: AtomicU64,
    /// Periods accounted for when the loop ended.
    pub periods_done: AtomicU64,
}

impl Default for ThreadCounters {
    fn default() -> Self {
        ThreadCounters {
            samples: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            warmup_samples: AtomicU64::new(0),
            warmup_missed: AtomicU64::new(0),
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

/// The running measurement: one thread, ring consumer and counter set per CPU.
pub struct RunningProbes {
    pub start_ns: u64,
    pub counters: Vec<Arc<ThreadCounters>>,
    pub rings: Vec<rtrb::Consumer<Sample>>,
    pub reports: Vec<SetupReport>,
    handles: Vec<JoinHandle<()>>,
}

impl RunningProbes {
    /// Whether every measurement thread has finished its loop.
    pub fn all_finished(&self) -> bool {
        self.handles.iter().all(|h| h.is_finished())
    }
    /// Waits for the measurement threads to end.
    pub fn join(&mut self) {
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Stack of a measurement thread; small because `mlockall(MCL_FUTURE)` locks all of it.
const THREAD_STACK: usize = 256 * 1024;
/// Part of the stack touched before the loop so it never page-faults inside it.
const PREFAULT_STACK: usize = 64 * 1024;

/// Ring slots per thread: about ten seconds of samples, so a collector starved by a heavy
/// SCHED_OTHER load loses nothing, within 4096..131072 slots (64 KiB..2 MiB).
pub fn ring_capacity(interval_ns: u64) -> usize {
    let ten_seconds = (10_000_000_000 / interval_ns.max(1)) as usize;
    ten_seconds.next_power_of_two().clamp(4096, 131_072)
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

/// Starts one timer measurement thread per CPU. Returns once every thread is set up and
/// measuring, or, if any set-up failed, after all threads have ended, with their reports.
pub fn start_timer(
    cpus: &[usize],
    sched: ThreadSched,
    cfg: timer::TimerLoop,
    stop: Arc<AtomicBool>,
) -> Result<RunningProbes, Vec<SetupReport>> {
    let capacity = ring_capacity(cfg.interval_ns);
    let (report_tx, report_rx) = mpsc::channel();
    let mut handles = Vec::with_capacity(cpus.len());
    let mut go_senders = Vec::with_capacity(cpus.len());
    let mut rings = Vec::with_capacity(cpus.len());
    let mut counters = Vec::with_capacity(cpus.len());
    let mut spawn_failure = None;
    for &cpu in cpus {
        let (mut producer, mut consumer) = rtrb::RingBuffer::<Sample>::new(capacity);
        // Touch every slot once so the loop never takes a page fault on the ring.
        while producer.push(Sample::default()).is_ok() {}
        while consumer.pop().is_ok() {}
        let out = Arc::new(ThreadCounters::default());
        // Each thread waits for its start time (Some) or the order to give up (None / hang-up).
        let (go_tx, go_rx) = mpsc::channel::<Option<u64>>();
        let (stop, report_tx, thread_out) = (stop.clone(), report_tx.clone(), out.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("rtgauge-timer{cpu}"))
            .stack_size(THREAD_STACK)
            .spawn(move || {
                let report = setup_thread(cpu, sched);
                let ok = report.error.is_none();
                let _ = report_tx.send(report);
                drop(report_tx);
                if let (true, Ok(Some(start_ns))) = (ok, go_rx.recv()) {
                    timer::run(cfg, start_ns, &stop, &mut producer, &thread_out);
                }
            });
        match spawned {
            Ok(h) => handles.push(h),
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
        go_senders.push(go_tx);
        rings.push(consumer);
        counters.push(out);
    }
    drop(report_tx);
    let mut reports: Vec<SetupReport> = report_rx.iter().take(handles.len()).collect();
    reports.extend(spawn_failure);
    reports.sort_by_key(|r| r.cpu);
    if reports.iter().any(|r| r.error.is_some()) {
        drop(go_senders);
        for h in handles {
            let _ = h.join();
        }
        return Err(reports);
    }
    let start_ns = sys::monotonic_ns();
    for go in &go_senders {
        let _ = go.send(Some(start_ns));
    }
    Ok(RunningProbes { start_ns, counters, rings, reports, handles })
}
