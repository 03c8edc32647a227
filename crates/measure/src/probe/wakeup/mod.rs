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
//! With `rate=sweep` ([`sweep`]) the handler raises its rate step by step instead, and the
//! facts are events placed by their deadline.
//!
//! With `shape=ping-pong` ([`pingpong`]) it times the other shape, the one rt-tests' ptsematest,
//! pmqtest and sigwaittest time: a receiver woken by its timer wakes a sender and blocks; the
//! sender posts back at once; `pong` is the receiver's wake-up − the sender's post (a thread
//! that blocked microseconds before), `ping` the sender's wake-up − the receiver's post.
//!
//! Both loops allocate nothing, lock nothing (the `pi-mutex` mechanism is the measured object,
//! not a lock around data) and print nothing; the event's number and post time pass through a
//! sequence lock of atomics.

pub mod options;
pub mod pingpong;
mod summary;
pub mod sweep;

use super::seqlock::SeqFacts;
use super::{priority_setting, Accounting, Class, Figure, Handoff, Missed, Offer, Plugin, Probe, Role, RtLoop, Schedule, Step};
use crate::sys::{self, wake::WakeChannel, wake::WakeMethod};
use crate::vocab::units::Nanos;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use sweep::Sweep;

/// The probe's name in `--measure`, results and requirements.
pub const NAME: &str = "wakeup";
/// Its series, the headline first; indices [`CHAIN`], [`HANDLER`], [`TASK`].
pub const SERIES: &[&str] = &["chain", "handler", "task"];
/// The series of `shape=ping-pong`, the headline first ([`pingpong`]).
pub const PING_PONG_SERIES: &[&str] = &["pong", "ping"];
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

/// What is timed: the chain (a handler woken by its timer wakes a task that last ran an
/// interval before), or rt-tests' ping-pong (a sender posts back to a receiver that blocked on it
/// microseconds before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Chain,
    PingPong,
}

/// The shapes by name (`wakeup:shape=NAME`).
pub const SHAPES: &[(&str, Shape)] = &[("chain", Shape::Chain), ("ping-pong", Shape::PingPong)];

/// The wake-up probe, for the registry.
pub const PLUGIN: Plugin = Plugin {
    name: NAME,
    shapes: &[SERIES, PING_PONG_SERIES],
    options: options::SUMMARY,
    help: options::help,
    parse: options::parse,
    missed: Missed::Period,
    published: |series| (series == Some(SERIES[0])).then_some(Class::WakeupChain),
    foreign: &[],
    summary: Some(summary::summary),
    series_priority,
    swept: |settings| settings.iter().any(|s| s.starts_with("rate=sweep")),
    offers: &[Offer { figure: Figure::Rate, by: "a wake-up sweep", measure: "wakeup:rate=sweep" }],
};

/// The RT priority series `series` ran at, as the stored settings say: the handler's
/// `priority=N (task M)`, the task one below it, and so the chain, timed at the task's wake-up;
/// ping-pong's receiver and sender both at it.
fn series_priority(settings: &[String], series: Option<&str>) -> Option<i32> {
    let n = priority_setting(settings, series)?;
    let chain = settings.iter().find_map(|s| s.strip_prefix("priority=")).is_some_and(|v| v.contains("(task"));
    Some(if chain && (series == Some(SERIES[TASK]) || series == Some(SERIES[CHAIN])) { n - 1 } else { n })
}

/// The wake-up chain probe, resolved before the run.
#[derive(Debug, Clone, Copy)]
pub struct WakeupProbe {
    pub schedule: Schedule,
    pub via: WakeMethod,
    /// The task on the next CPU of the probe's list instead of the handler's.
    pub cross: bool,
    /// The handler's RT priority; the task's is one less.
    pub priority: i32,
    /// With `rate=sweep`: the rates it steps through (its schedule's periods are then windows).
    pub sweep: Option<Sweep>,
    /// The chain, or rt-tests' ping-pong (never swept).
    pub shape: Shape,
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
        let rate = match &self.sweep {
            None => format!("interval={}", Nanos(self.schedule.interval_ns)),
            Some(s) => {
                let rates: Vec<String> = (0..s.steps()).map(|i| s.rate(i).to_string()).collect();
                let bound = s.bound_ns.map_or("each step's interval".to_string(), |b| Nanos(b).to_string());
                let until = if s.all { "every rate" } else { "until a step fails" };
                format!("rate=sweep: {}/s, {} each, bound {bound}, {until}", rates.join("/"), Nanos(s.step_ns))
            }
        };
        let on = if self.cross { "next CPU" } else { "same CPU" };
        match self.shape {
            Shape::Chain => vec![
                rate,
                format!("via={via}"),
                "shape=chain".to_string(),
                format!("task={on}"),
                format!("priority={} (task {})", self.priority, self.priority - 1),
            ],
            Shape::PingPong => vec![
                rate,
                format!("via={via}"),
                "shape=ping-pong".to_string(),
                format!("sender={on}"),
                format!("priority={} (receiver and sender)", self.priority),
            ],
        }
    }
    fn series(&self) -> &'static [&'static str] {
        match self.shape {
            Shape::Chain => SERIES,
            Shape::PingPong => PING_PONG_SERIES,
        }
    }
    fn accounting(&self) -> Accounting {
        if self.sweep.is_some() {
            Accounting::Events
        } else {
            Accounting::Periods
        }
    }
    fn steps(&self) -> Vec<Step> {
        let Some(s) = self.sweep else { return Vec::new() };
        (0..s.steps())
            .map(|i| Step {
                start_ns: s.start_ns(i),
                end_ns: s.end_ns(i),
                rate_per_s: s.rate(i),
                interval_ns: s.interval_ns(i),
                planned: s.planned(i),
                bound_ns: s.bound(i),
            })
            .collect()
    }
    fn priorities(&self) -> Option<(i32, i32)> {
        Some(match self.shape {
            Shape::Chain => (self.priority - 1, self.priority),
            Shape::PingPong => (self.priority, self.priority),
        })
    }
    fn check_cpus(&self, cpus: &[usize]) -> Result<(), crate::vocab::Error> {
        match cpus.first() {
            Some(&c) if self.cross => next_cpu(c, cpus).map(|_| ()).map_err(crate::vocab::Error::Invalid),
            _ => Ok(()),
        }
    }
    fn instance(&self, cpu: usize, cpus: &[usize]) -> Result<Vec<Role>, crate::vocab::Error> {
        let task_cpu = if self.cross { next_cpu(cpu, cpus).map_err(crate::vocab::Error::System)? } else { cpu };
        let via = self.via_name();
        let channel = self.channel().map_err(crate::vocab::Error::System)?;
        if self.shape == Shape::PingPong {
            return Ok(pingpong::roles(self, (cpu, task_cpu), channel, self.channel().map_err(crate::vocab::Error::System)?));
        }
        let shared = Arc::new(Shared::new(channel));
        let (schedule, sweep, s1, s2) = (self.schedule, self.sweep, shared.clone(), shared);
        Ok(vec![
            Role {
                name: "handler",
                cpu,
                priority: Some(self.priority),
                series: vec![HANDLER],
                setup: Box::new(move || {
                    poster_setup(&s1.channel, via, "handler").map_err(crate::vocab::Error::System)?;
                    let timer = periodic_timer("handler").map_err(crate::vocab::Error::System)?;
                    Ok(match sweep {
                        None => Box::new(HandlerLoop { schedule, timer, shared: s1 }) as Box<dyn RtLoop>,
                        Some(sweep) => Box::new(SweepHandlerLoop { sweep, timer, shared: s1 }),
                    })
                }),
            },
            Role {
                name: "task",
                cpu: task_cpu,
                priority: Some(self.priority - 1),
                series: vec![CHAIN, TASK],
                setup: Box::new(move || {
                    waiter_setup(&s2.channel, via, "task").map_err(crate::vocab::Error::System)?;
                    Ok(match sweep {
                        None => Box::new(TaskLoop { shared: s2 }) as Box<dyn RtLoop>,
                        Some(sweep) => Box::new(SweepTaskLoop { sweep, shared: s2 }),
                    })
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

    /// A new one-way channel of the probe's mechanism.
    fn channel(&self) -> Result<WakeChannel, String> {
        WakeChannel::new(self.via).map_err(|e| {
            let via = self.via_name();
            format!("via={via}: cannot make its wake-up channel ({e}); choose another mechanism, e.g. via=eventfd")
        })
    }
}

/// In the thread that posts on `channel` (`who`, for the message), before the run.
fn poster_setup(channel: &WakeChannel, via: &str, who: &str) -> Result<(), String> {
    channel
        .handler_setup()
        .map_err(|e| format!("via={via}: the {who} cannot take its lock ({e}); choose another mechanism, e.g. via=futex"))
}

/// In the thread that waits on `channel` (`who`, for the message), before the run.
fn waiter_setup(channel: &WakeChannel, via: &str, who: &str) -> Result<(), String> {
    channel
        .task_setup()
        .map_err(|e| format!("via={via}: the {who} cannot prepare its wake-up ({e}); choose another mechanism, e.g. via=eventfd"))
}

/// The periodic timer that wakes the thread `who`.
fn periodic_timer(who: &str) -> Result<sys::timer::PeriodicTimer, String> {
    sys::timer::PeriodicTimer::new()
        .map_err(|e| format!("the {who} cannot make its timerfd ({e}): this kernel lacks CONFIG_TIMERFD"))
}

/// The CPU after `cpu` in the probe's list, wrapping around.
fn next_cpu(cpu: usize, cpus: &[usize]) -> Result<usize, String> {
    let i = cpus.iter().position(|&c| c == cpu).unwrap_or(0);
    match cpus.get((i + 1) % cpus.len().max(1)) {
        Some(&next) if next != cpu => Ok(next),
        _ => Err("'cross' puts the task (ping-pong's sender) on another CPU of the probe's, but it has only one; \
                  e.g. --measure wakeup:cross@0-1"
            .to_string()),
    }
}

/// What the handler and its task share: the channel, the latest event (a sequence lock), the
/// handler's end, and (for a sweep) the task's word that a step failed.
struct Shared {
    channel: WakeChannel,
    /// The latest event posted (its period, or its number in a sweep), its deadline and when it
    /// was posted; the handler is its only writer.
    posted: SeqFacts<3>,
    /// The handler has ended; `last_event`: the last event (period) it accounted for.
    done: AtomicBool,
    last_event: AtomicU64,
    /// A sweep's task saw a measured event missed or over the bound.
    failed: AtomicBool,
}

/// The latest event as the task reads it: (number, deadline, post time).
type Posted = (u64, u64, u64);

impl Shared {
    fn new(channel: WakeChannel) -> Shared {
        let zero = || AtomicU64::new(0);
        let no = || AtomicBool::new(false);
        Shared { channel, posted: SeqFacts::default(), done: no(), last_event: zero(), failed: no() }
    }

    /// The handler publishes event `event` of deadline `deadline_ns`, posted at `posted_ns`.
    #[inline(always)]
    fn publish(&self, event: u64, deadline_ns: u64, posted_ns: u64) {
        self.posted.publish([event, deadline_ns, posted_ns]);
    }

    /// The latest event, never torn.
    #[inline(always)]
    fn latest(&self) -> Posted {
        let ([event, deadline_ns, posted_ns], _) = self.posted.read();
        (event, deadline_ns, posted_ns)
    }
}

/// The handler: woken by a periodic timer the kernel re-arms in its interrupt (the way an
/// interrupt handler is woken by its device: it programs nothing before its task runs), posting
/// one event per wake-up.
struct HandlerLoop {
    schedule: Schedule,
    timer: sys::timer::PeriodicTimer,
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
            let now = sys::time::monotonic_ns();
            let deadline = start_ns + period * interval;
            let latency = now.saturating_sub(deadline);
            shared.publish(period, deadline, sys::time::monotonic_ns());
            shared.channel.post(&mut state);
            let missed_after = expired.saturating_sub(1).min(last - period);
            out.served(period, latency, missed_after);
            period += missed_after + 1;
        }
        shared.last_event.store(out.done(), Relaxed);
        shared.done.store(true, Release);
        shared.channel.finish(state);
    }
}

/// The task: waits for the handler's post and times its own wake-up.
struct TaskLoop {
    shared: Arc<Shared>,
}

impl RtLoop for TaskLoop {
    /// `out`: the chain's handoff, then the task's. Each event taken is handed over once; a wake-
    /// up for an event already taken (a queued post) is not a new event.
    fn run(&mut self, _start_ns: u64, _stop: &AtomicBool, out: &mut [Handoff]) {
        let shared = &*self.shared;
        let taken = task_events(shared, |now, (event, deadline, posted), taken| {
            if event > taken {
                out[0].served(event, now.saturating_sub(deadline), 0);
                out[1].served(event, now.saturating_sub(posted), 0);
            }
        });
        // Events after the last one taken were never received (or never posted).
        let last = shared.last_event.load(Relaxed).max(taken);
        out.iter_mut().for_each(|o| o.accounted_through(last));
    }
}

/// The task's wait for events until the handler ends: `take(now, latest event, last taken)` for
/// each wake-up; returns the last event taken. A wake-up for an event already taken (a queued
/// post) is not a new event.
#[inline(always)]
fn task_events(shared: &Shared, mut take: impl FnMut(u64, Posted, u64)) -> u64 {
    let (mut taken, mut seen) = (0u64, 0u32);
    loop {
        shared.channel.wait(&mut seen);
        let now = sys::time::monotonic_ns();
        shared.channel.woken(&mut seen);
        // The handler's end is read before the event: once it is seen, the event read is its last.
        let done = shared.done.load(Acquire);
        let latest = shared.latest();
        take(now, latest, taken);
        taken = taken.max(latest.0);
        if done {
            return taken;
        }
    }
}

/// A sweep's handler: step by step, re-arms its timer at the step's rate and posts one event
/// per wake-up; after a step in which its task saw a failure, it stops raising the rate
/// (unless the sweep runs every rate).
struct SweepHandlerLoop {
    sweep: Sweep,
    timer: sys::timer::PeriodicTimer,
    shared: Arc<Shared>,
}

impl RtLoop for SweepHandlerLoop {
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        let (sw, out, shared) = (self.sweep, &mut out[0], &*self.shared);
        let (mut state, mut last) = (0u32, 0u64);
        'steps: for s in 0..sw.steps() {
            let (interval, count, first) = (sw.interval_ns(s), sw.events(s), sw.first_event(s));
            let step_start = start_ns + sw.start_ns(s);
            if self.timer.arm(step_start + interval, interval).is_err() {
                break;
            }
            let mut k = 1;
            while k <= count {
                if stop.load(Relaxed) {
                    break 'steps;
                }
                let expired = self.timer.wait();
                let now = sys::time::monotonic_ns();
                let (event, deadline) = (first + k - 1, step_start + k * interval);
                shared.publish(event, deadline, sys::time::monotonic_ns());
                shared.channel.post(&mut state);
                out.event_after(sw.window_in(s, event), Some(now.saturating_sub(deadline)), 0);
                // Expirations of this step that passed meanwhile; the task sees their gap.
                let missed = expired.saturating_sub(1).min(count - k);
                // Events the handler itself missed fail the step at once (the task, which also
                // tells a failure, may not have seen the step's last events when it ends).
                if missed > 0 && sw.measured(event + missed) {
                    shared.failed.store(true, Relaxed);
                }
                sw.hand_missed(out, event + 1, event + missed);
                last = event + missed;
                k += missed + 1;
            }
            if shared.failed.load(Relaxed) && !sw.all {
                break;
            }
        }
        shared.last_event.store(last, Relaxed);
        shared.done.store(true, Release);
        shared.channel.finish(state);
    }
}

/// A sweep's task: times each event it takes, hands over the events it never received per step,
/// and tells the handler when a measured event was missed or its chain exceeded the bound.
struct SweepTaskLoop {
    sweep: Sweep,
    shared: Arc<Shared>,
}

impl RtLoop for SweepTaskLoop {
    fn run(&mut self, _start_ns: u64, _stop: &AtomicBool, out: &mut [Handoff]) {
        let (sw, shared) = (self.sweep, &*self.shared);
        let taken = task_events(shared, |now, (event, deadline, posted), taken| {
            if event <= taken {
                return;
            }
            let (chain, step) = (now.saturating_sub(deadline), sw.step_of(event));
            let missed = event > taken + 1 && sw.measured(event - 1);
            if missed || (sw.measured(event) && chain > sw.bound(step)) {
                shared.failed.store(true, Relaxed);
            }
            let window = sw.window_in(step, event);
            for (o, value) in out.iter_mut().zip([chain, now.saturating_sub(posted)]) {
                sw.hand_missed(o, taken + 1, event - 1);
                o.event_after(window, Some(value), 0);
            }
        });
        // Events after the last one taken were never received (or never posted).
        let last = shared.last_event.load(Relaxed);
        out.iter_mut().for_each(|o| sw.hand_missed(o, taken + 1, last));
    }
}
