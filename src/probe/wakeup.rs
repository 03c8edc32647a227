//! The wake-up chain probe: the software counterpart of the ARM9/ARM11 paper's UIO test. A
//! handler thread (FIFO 99 by default) wakes on a periodic timer every interval, as an
//! interrupt handler would on its interrupt (the kernel re-arms the timer; the handler programs
//! nothing), and wakes a task thread (FIFO 98) through the chosen mechanism (`via=`). Three series per CPU:
//! - `handler`: the handler's latency, wake-up − deadline (as the timer probe's);
//! - `task`: the task's latency from the handler's post to its own wake-up;
//! - `chain`: the whole chain, the task's wake-up − the deadline (two context switches, like
//!   the paper's second pulse). The headline: `wakeup.max` judges all three, and the chain is
//!   the largest.
//!
//! Events are numbered by their period. The task reads the number of the latest event the
//! handler posted; an event it never received (the paper's `num_events − old_events > 1`)
//! leaves a gap, counted as missed in `task` and `chain`; so do periods the handler itself
//! missed (no event was posted), so `chain.missed − handler.missed` is the events the task
//! lost. Handler and task share one CPU, or (`cross`) the task runs on the next CPU of the
//! probe's list.
//!
//! Both loops allocate nothing, lock nothing (the `pi-mutex` mechanism is the measured object,
//! not a lock around data) and print nothing; the event's number and post time pass through a
//! sequence lock of atomics.

use super::{Handoff, Probe, Role, RtLoop, Schedule};
use crate::sys::{self, WakeChannel, WakeMethod};
use crate::vocab::units::Nanos;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;

/// The probe's name in `--measure`, results and requirements.
pub const NAME: &str = "wakeup";
/// Its series, the headline first; indices [`CHAIN`], [`HANDLER`], [`TASK`].
pub const SERIES: &[&str] = &["chain", "handler", "task"];
const CHAIN: usize = 0;
const HANDLER: usize = 1;
const TASK: usize = 2;
/// The handler's priority unless `priority=` sets it (the paper's); the task runs one below.
pub const DEFAULT_PRIORITY: i32 = 99;

/// The mechanisms by name (`wakeup:via=NAME`).
pub const VIA: &[(&str, WakeMethod)] = &[
    ("eventfd", WakeMethod::Eventfd),
    ("futex", WakeMethod::Futex),
    ("pipe", WakeMethod::Pipe),
    ("mq", WakeMethod::Mq),
    ("signal", WakeMethod::Signal),
    ("sem", WakeMethod::Sem),
    ("pi-mutex", WakeMethod::PiMutex),
];

/// The wake-up chain probe, resolved before the run.
#[derive(Debug, Clone, Copy)]
pub struct WakeupProbe {
    pub schedule: Schedule,
    pub via: WakeMethod,
    /// The task on the next CPU of the probe's list instead of the handler's.
    pub cross: bool,
    /// The handler's RT priority; the task's is one less.
    pub priority: i32,
}

impl Probe for WakeupProbe {
    fn name(&self) -> &'static str {
        NAME
    }
    fn schedule(&self) -> Schedule {
        self.schedule
    }
    fn settings(&self) -> Vec<String> {
        let via = self.via_name();
        vec![
            format!("interval={}", Nanos(self.schedule.interval_ns)),
            format!("via={via}"),
            format!("task={}", if self.cross { "next CPU" } else { "same CPU" }),
            format!("priority={} (task {})", self.priority, self.priority - 1),
        ]
    }
    fn series(&self) -> &'static [&'static str] {
        SERIES
    }
    fn check_cpus(&self, cpus: &[usize]) -> Result<(), String> {
        match cpus.first() {
            Some(&c) if self.cross => next_cpu(c, cpus).map(|_| ()),
            _ => Ok(()),
        }
    }
    fn instance(&self, cpu: usize, cpus: &[usize]) -> Result<Vec<Role>, String> {
        let task_cpu = if self.cross { next_cpu(cpu, cpus)? } else { cpu };
        let via = self.via_name();
        let channel = WakeChannel::new(self.via).map_err(|e| {
            format!("via={via}: cannot make its wake-up channel ({e}); choose another mechanism, e.g. via=eventfd")
        })?;
        let shared = Arc::new(Shared::new(channel));
        let (schedule, s1, s2) = (self.schedule, shared.clone(), shared);
        Ok(vec![
            Role {
                name: "handler",
                cpu,
                priority: Some(self.priority),
                series: vec![HANDLER],
                setup: Box::new(move || {
                    s1.channel.handler_setup().map_err(|e| {
                        format!("via={via}: the handler cannot take its lock ({e}); choose another mechanism, e.g. via=futex")
                    })?;
                    let timer = sys::PeriodicTimer::new()
                        .map_err(|e| format!("the handler cannot make its timerfd ({e}): this kernel lacks CONFIG_TIMERFD"))?;
                    Ok(Box::new(HandlerLoop { schedule, timer, shared: s1 }) as Box<dyn RtLoop>)
                }),
            },
            Role {
                name: "task",
                cpu: task_cpu,
                priority: Some(self.priority - 1),
                series: vec![CHAIN, TASK],
                setup: Box::new(move || {
                    s2.channel.task_setup().map_err(|e| {
                        format!(
                            "via={via}: the task cannot prepare its wake-up ({e}); choose another mechanism, e.g. via=eventfd"
                        )
                    })?;
                    Ok(Box::new(TaskLoop { interval_ns: schedule.interval_ns, shared: s2 }) as Box<dyn RtLoop>)
                }),
            },
        ])
    }
}

impl WakeupProbe {
    /// The mechanism's name, as `via=` writes it.
    fn via_name(&self) -> &'static str {
        VIA.iter().find(|(_, m)| *m == self.via).map_or("?", |(n, _)| n)
    }
}

/// The CPU after `cpu` in the probe's list, wrapping around.
fn next_cpu(cpu: usize, cpus: &[usize]) -> Result<usize, String> {
    let i = cpus.iter().position(|&c| c == cpu).unwrap_or(0);
    match cpus.get((i + 1) % cpus.len().max(1)) {
        Some(&next) if next != cpu => Ok(next),
        _ => Err("'cross' puts the task on another CPU of the probe's, but it has only one; \
                  e.g. --measure wakeup:cross@0-1"
            .to_string()),
    }
}

/// What the handler and its task share: the channel, the latest event (a sequence lock), and
/// the handler's end.
struct Shared {
    channel: WakeChannel,
    /// Odd while the handler writes the event.
    seq: AtomicU64,
    /// The period of the latest event posted, and when it was posted.
    event: AtomicU64,
    posted_ns: AtomicU64,
    /// The handler has ended; `last_period`: the last period it accounted for.
    done: AtomicBool,
    last_period: AtomicU64,
}

impl Shared {
    fn new(channel: WakeChannel) -> Shared {
        let zero = || AtomicU64::new(0);
        Shared { channel, seq: zero(), event: zero(), posted_ns: zero(), done: AtomicBool::new(false), last_period: zero() }
    }

    /// The handler publishes event `period`, posted at `posted_ns`.
    #[inline(always)]
    fn publish(&self, period: u64, posted_ns: u64) {
        let s = self.seq.load(Relaxed);
        self.seq.store(s + 1, Relaxed);
        fence(Release);
        self.event.store(period, Relaxed);
        self.posted_ns.store(posted_ns, Relaxed);
        self.seq.store(s + 2, Release);
    }

    /// The latest event and its post time, never torn.
    #[inline(always)]
    fn latest(&self) -> (u64, u64) {
        loop {
            let s = self.seq.load(Acquire);
            let read = (self.event.load(Relaxed), self.posted_ns.load(Relaxed));
            fence(Acquire);
            if s.is_multiple_of(2) && self.seq.load(Relaxed) == s {
                return read;
            }
            std::hint::spin_loop();
        }
    }
}

/// The handler: woken by a periodic timer the kernel re-arms in its interrupt (the way an
/// interrupt handler is woken by its device: it programs nothing before its task runs), posting
/// one event per wake-up.
struct HandlerLoop {
    schedule: Schedule,
    timer: sys::PeriodicTimer,
    shared: Arc<Shared>,
}

impl RtLoop for HandlerLoop {
    /// Period `k` expires at `start_ns + k·interval`. A wake-up serves the first period not yet
    /// served, late by `now − its deadline`; the timer's count says how many later periods also
    /// expired meanwhile — those passed unserved (missed), as in the timer probe.
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        let Schedule { interval_ns: interval, periods: last, .. } = self.schedule;
        let (out, shared) = (&mut out[0], &*self.shared);
        let (mut period, mut state) = (1u64, 0u32);
        let armed = self.timer.arm(start_ns + interval, interval).is_ok();
        while armed && period <= last && !stop.load(Relaxed) {
            let expired = self.timer.wait();
            let now = sys::monotonic_ns();
            let latency = now.saturating_sub(start_ns + period * interval);
            shared.publish(period, sys::monotonic_ns());
            shared.channel.post(&mut state);
            let missed_after = expired.saturating_sub(1).min(last - period);
            out.served(period, latency, missed_after);
            period += missed_after + 1;
        }
        shared.last_period.store(out.done(), Relaxed);
        shared.done.store(true, Release);
        shared.channel.finish(state);
    }
}

/// The task: waits for the handler's post and times its own wake-up.
struct TaskLoop {
    interval_ns: u64,
    shared: Arc<Shared>,
}

impl RtLoop for TaskLoop {
    /// `out`: the chain's handoff, then the task's. Each event taken is handed over once; a wake-
    /// up for an event already taken (a queued post) is not a new event.
    fn run(&mut self, start_ns: u64, _stop: &AtomicBool, out: &mut [Handoff]) {
        let shared = &*self.shared;
        let (mut taken, mut seen) = (0u64, 0u32);
        loop {
            shared.channel.wait(&mut seen);
            let now = sys::monotonic_ns();
            shared.channel.woken(&mut seen);
            // The handler's end is read before the event: once it is seen, the event read is its last.
            let done = shared.done.load(Acquire);
            let (event, posted_ns) = shared.latest();
            if event > taken {
                out[0].served(event, now.saturating_sub(start_ns + event * self.interval_ns), 0);
                out[1].served(event, now.saturating_sub(posted_ns), 0);
                taken = event;
            }
            if done {
                break;
            }
        }
        // Events after the last one taken were never received (or never posted).
        let last = shared.last_period.load(Relaxed);
        out.iter_mut().for_each(|o| o.accounted_through(last));
    }
}
