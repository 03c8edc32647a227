//! Why the worst case? (`rtgauge run --trace [THRESHOLD]`). While the probes measure, the
//! kernel traces each measured CPU into an instance of its own (scheduling, interrupt, softirq,
//! hrtimer and x86 vector events, on the measurement's clock). When a measurement thread sees a
//! value over the threshold that is also a new worst case (by default: every new worst case
//! after the warm-up), it stops its CPU's trace with one write; the collector reads that trace,
//! explains the latency from it (`analysis`: rtla's auto-analysis, for any probe), keeps the
//! explanation of each CPU's worst traced latency, and restarts the trace. Instances and a
//! mount of tracefs go into the tuning journal, so they never outlive the run; instances have
//! unpredictable names, a mount is shared by every run that uses it and unmounted by the last,
//! and the instances of a run killed with its guardian are removed by the next rtgauge
//! ([`remove_stale`]).

pub mod analysis;
pub mod events;
pub mod kernel;
mod tracefs;

pub use tracefs::{is_own_instance, remove_stale};

use crate::probe::{TraceTrigger, TRACE_INSTANCES};
use crate::result::trace::{Culprit, TraceCapture, TraceReport};
use crate::tuning::journal::Journal;
use crate::vocab::units::Nanos;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;

/// Each traced CPU's buffer: seconds of events on an idle CPU, a few hundred milliseconds under
/// a scheduler storm.
pub const BUFFER_KB: u64 = 2048;

/// One CPU's trace (instances taking turns, see [`TraceTrigger`]) and what it explained.
struct CpuTrace {
    cpu: usize,
    instances: Vec<tracefs::Instance>,
    trigger: Arc<TraceTrigger>,
    seen: [u64; TRACE_INSTANCES],
    best: Option<Explained>,
}

impl CpuTrace {
    /// Reads and restarts every instance a value stopped since it was last read.
    fn read_stopped(&mut self) {
        for i in 0..TRACE_INSTANCES {
            self.read_if_stopped(i);
        }
    }

    /// If a value stopped instance `i` since it was last read: explains it (when it is this
    /// CPU's worst yet) and restarts the instance.
    fn read_if_stopped(&mut self, i: usize) {
        let t = &self.trigger;
        let fired = t.fired[i].load(Acquire);
        if fired == self.seen[i] {
            return;
        }
        self.seen[i] = fired;
        let value = t.value_ns[i].load(Relaxed);
        let (at, tid, series) = (t.at_ns[i].load(Relaxed), t.tid[i].load(Relaxed) as i32, t.series[i].load(Relaxed));
        // A larger worst case deferred meanwhile (it came while this trace waited or was read)
        // makes this one moot: the instance is restarted unread, so the deferral can stop the
        // instance that recorded through it now, before its buffer wraps past its window.
        if self.best.as_ref().is_none_or(|b| value > b.latency_ns) {
            if let Ok(Some(text)) = self.instances[i].read(BUFFER_KB, || t.deferred_exceeds(value)) {
                let events = events::parse(&text);
                let window = analysis::Window { start_ns: at.saturating_sub(value), end_ns: at, tid };
                let thread = thread_name(&events, tid);
                let analysis = analysis::analyse(&events, &window);
                let culprit_sched = analysis.culprit.as_ref().map(|r| sched_of(&r.task));
                self.best = Some(Explained { culprit_sched, series, thread, latency_ns: value, window, analysis });
            }
        }
        self.instances[i].restart();
        t.restarted(i);
    }
}

/// One latency explained (times CLOCK_MONOTONIC).
struct Explained {
    /// The culprit's policy and priority, read from /proc when the trace was read (it may have
    /// ended by the end of the run).
    culprit_sched: Option<(String, i64)>,
    series: u64,
    thread: String,
    latency_ns: u64,
    window: analysis::Window,
    analysis: analysis::Analysis,
}

/// The trace of a run, while it lasts.
pub struct Session {
    cpus: Vec<CpuTrace>,
    threshold_ns: Option<u64>,
    tracefs: Option<String>,
    mounted: bool,
    events: Vec<String>,
    tracers: Vec<String>,
    error: Option<String>,
}

impl Session {
    /// Traces `cpus`, stopping at values over `threshold_ns` (None: every new worst case). What
    /// cannot be set up is recorded (the run goes on without a trace, or with part of it).
    pub fn start(j: &mut Journal, cpus: &[usize], threshold_ns: Option<u64>) -> Session {
        let mut s =
            Session { cpus: vec![], threshold_ns, tracefs: None, mounted: false, events: vec![], tracers: vec![], error: None };
        let found = crate::sys::host::random_u64()
            .map_err(|e| format!("cannot read random bytes for the trace instances' names: {e}"))
            .and_then(|token| Ok((token, tracefs::find_or_mount(j)?)));
        let (token, mut fs) = match found {
            Ok(found) => found,
            Err(e) => {
                s.error = Some(e);
                return s;
            }
        };
        let mut errors = Vec::new();
        for &cpu in cpus {
            let mut made = make_instances(j, &fs, cpu, token);
            if made.is_err() && s.cpus.is_empty() && !fs.root.join("instances").is_dir() {
                // Another run unmounted tracefs between our finding it and making our first
                // instance (it saw none of ours): find it, or mount it, again.
                if let Ok(again) = tracefs::find_or_mount(j) {
                    fs = again;
                    made = make_instances(j, &fs, cpu, token);
                }
            }
            match made {
                Ok(instances) => {
                    use std::os::fd::AsRawFd;
                    s.events = instances[0].events.clone();
                    let fds = std::array::from_fn(|k| instances[k].on.as_raw_fd());
                    let trigger = Arc::new(TraceTrigger::new(fds, threshold_ns.unwrap_or(0)));
                    s.cpus.push(CpuTrace { cpu, instances, trigger, seen: [0; TRACE_INSTANCES], best: None });
                }
                Err(e) => errors.push(format!("CPU {cpu}: {e}")),
            }
        }
        s.tracefs = Some(fs.root.display().to_string());
        s.mounted = fs.mounted;
        s.tracers = latency_tracers(&fs.root);
        if !errors.is_empty() {
            s.error = Some(errors.join("; "));
        }
        s
    }

    /// Why there is no trace, when there is none.
    pub fn failed(&self) -> Option<&str> {
        self.cpus.is_empty().then_some(self.error.as_deref().unwrap_or("no CPU could be traced"))
    }

    /// Per traced CPU, the trigger its measurement threads offer new worst cases to.
    pub fn triggers(&self) -> Vec<(usize, Arc<TraceTrigger>)> {
        self.cpus.iter().map(|c| (c.cpu, c.trigger.clone())).collect()
    }

    /// Reads and explains every trace a latency stopped since the last call, and restarts it;
    /// then a worst case deferred meanwhile is armed: the CPU's next measured wake-up stops the
    /// instance that recorded through it, and a later call reads that one.
    pub fn poll(&mut self) {
        for c in &mut self.cpus {
            c.read_stopped();
            c.trigger.arm_deferred();
        }
    }

    /// Once the measurement has ended: reads what is stopped, and fires what is still deferred
    /// (no wake-up will come to carry it out), reading that too.
    fn drain(&mut self) {
        for c in &mut self.cpus {
            loop {
                c.read_stopped();
                if !c.trigger.fire_deferred() {
                    break;
                }
            }
        }
    }

    /// Ends the trace (the instances removed) and reports each CPU's worst traced latency;
    /// `names` gives a series index's probe and series, `start_ns` is the run's start.
    pub fn finish(mut self, names: impl Fn(u64) -> (String, Option<String>), start_ns: u64) -> TraceReport {
        self.drain();
        let mut captures = Vec::new();
        for c in std::mem::take(&mut self.cpus) {
            let fired = c.seen.iter().sum();
            let skipped = c.trigger.untraced();
            let cpu = c.cpu;
            c.instances.into_iter().for_each(tracefs::Instance::remove);
            if let Some(e) = c.best {
                captures.push(capture(cpu, e, (fired, skipped), &names, start_ns));
            }
        }
        TraceReport {
            threshold_ns: self.threshold_ns,
            tracefs: self.tracefs,
            mounted: self.mounted,
            events: self.events,
            buffer_kb: BUFFER_KB,
            tracers: self.tracers,
            captures,
            error: self.error,
        }
    }
}

/// CPU `cpu`'s trace instances, all or none (`token`: the run's random part of their names).
fn make_instances(j: &mut Journal, fs: &tracefs::Tracefs, cpu: usize, token: u64) -> Result<Vec<tracefs::Instance>, String> {
    let mut made = Vec::with_capacity(TRACE_INSTANCES);
    for k in 0..TRACE_INSTANCES {
        match tracefs::Instance::make(j, fs, cpu, k, token, BUFFER_KB) {
            Ok(i) => made.push(i),
            Err(e) => {
                made.into_iter().for_each(tracefs::Instance::remove);
                return Err(e.into());
            }
        }
    }
    Ok(made)
}

/// The kernel's latency tracers, and why rtgauge reads events instead.
fn latency_tracers(root: &std::path::Path) -> Vec<String> {
    let available = std::fs::read_to_string(root.join("available_tracers")).unwrap_or_default();
    available
        .split_whitespace()
        .filter(|t| *t == "timerlat" || *t == "osnoise")
        .map(|t| format!("{t}: present, not started (it measures with threads of its own on the measured CPUs)"))
        .collect()
}

/// The measurement thread's name as the trace shows it, `comm:tid`.
fn thread_name(events: &[events::Event], tid: i32) -> String {
    let comm = events.iter().rev().find_map(|e| match &e.kind {
        events::Kind::Wakeup(t) if t.pid == tid => Some(t.comm.clone()),
        events::Kind::Switch { next, .. } if next.pid == tid => Some(next.comm.clone()),
        _ => None,
    });
    format!("{}:{tid}", comm.unwrap_or_else(|| "?".into()))
}

/// A culprit's policy and priority: from /proc while it lives (and is the same task), else
/// from its kernel priority.
fn sched_of(t: &events::Task) -> (String, i64) {
    let live = crate::audit::tasks::TaskStat::of(t.pid).filter(|s| s.comm.starts_with(&t.comm[..t.comm.len().min(15)]));
    match live {
        Some(s) if matches!(s.policy, 1 | 2) => (crate::audit::tasks::policy_name(s.policy).to_string(), s.rt_priority as i64),
        Some(s) => (crate::audit::tasks::policy_name(s.policy).to_string(), s.nice),
        None if (0..100).contains(&t.prio) => ("RT".to_string(), 99 - t.prio),
        None if t.prio == -1 => ("SCHED_DEADLINE".to_string(), 0),
        None => ("normal".to_string(), t.prio - 120),
    }
}

fn capture(
    cpu: usize,
    e: Explained,
    (fired, skipped): (u64, u64),
    names: &impl Fn(u64) -> (String, Option<String>),
    start_ns: u64,
) -> TraceCapture {
    let (probe, series) = names(e.series);
    let a = &e.analysis;
    let after = |t: Option<u64>| t.map(|t| t.saturating_sub(e.window.start_ns));
    let culprit = a.culprit.as_ref().map(|r| {
        let (policy, priority) = e.culprit_sched.clone().unwrap_or_else(|| sched_of(&r.task));
        Culprit {
            comm: r.task.comm.clone(),
            pid: r.task.pid,
            policy,
            priority,
            ran_ns: r.ran_ns,
            in_window_ns: r.in_window_ns,
            stays: r.stays,
            share_percent: analysis::share(r.in_window_ns, e.latency_ns),
        }
    });
    let mut c = TraceCapture {
        cpu,
        probe,
        series,
        thread: e.thread,
        latency_ns: e.latency_ns,
        window_start_ns: e.window.start_ns.saturating_sub(start_ns),
        window_end_ns: e.window.end_ns.saturating_sub(start_ns),
        triggers: fired,
        untraced: skipped,
        timer_expired_ns: after(a.timer_expired_ns),
        woken_ns: after(a.woken_ns),
        running_ns: after(a.running_ns),
        culprit,
        interference: a.interference.clone(),
        unexplained_ns: a.unexplained_ns,
        explanation: String::new(),
        events_in_window: a.events_in_window,
        trace_from_ns: a.trace_from_ns.map(|t| t.saturating_sub(start_ns)),
    };
    c.explanation = explain(&c, a.culprit.as_ref().is_some_and(|r| r.began_before_trace), e.window.start_ns, a.trace_from_ns);
    c
}

/// One sentence: who or what took the latency.
fn explain(c: &TraceCapture, culprit_began_before_trace: bool, window_start: u64, trace_from: Option<u64>) -> String {
    let lat = Nanos(c.latency_ns);
    let share = |kind: &str| c.interference.iter().filter(|i| i.kind == kind).map(|i| i.share_percent).sum::<f64>();
    let mut s = match &c.culprit {
        Some(k) if k.share_percent >= 50.0 => format!(
            "{}:{} ({} {}) held CPU {} for {} of the {lat} latency ({:.1} %); it ran {}{}{}",
            k.comm,
            k.pid,
            k.policy,
            k.priority,
            c.cpu,
            Nanos(k.in_window_ns),
            k.share_percent,
            if culprit_began_before_trace { "at least " } else { "" },
            Nanos(k.ran_ns),
            if k.stays == 1 { " without leaving the CPU".to_string() } else { format!(" in {} stays on the CPU", k.stays) },
        ),
        _ if share("irq") + share("softirq") + share("vector") >= 50.0 => {
            let top: Vec<String> = c
                .interference
                .iter()
                .filter(|i| i.kind != "thread" && i.kind != "idle")
                .take(3)
                .map(|i| format!("{} {} ({:.1} %)", i.kind, i.name, i.share_percent))
                .collect();
            format!(
                "interrupt work took {:.1} % of the {lat} latency: {}",
                share("irq") + share("softirq") + share("vector"),
                top.join(", ")
            )
        }
        _ if share("idle") >= 50.0 => format!(
            "CPU {} was idle for {:.1} % of the {lat} latency: the wake-up itself came late (the timer interrupt delayed: \
             interrupts off, a deep idle state, or a virtual machine's host not running the CPU)",
            c.cpu,
            share("idle")
        ),
        _ => format!(
            "{:.1} % of the {lat} latency is in no traced event: time the kernel does not see (a virtual machine's host, \
             firmware SMIs) or spent with interrupts off",
            analysis::share(c.unexplained_ns, c.latency_ns)
        ),
    };
    match c.timer_expired_ns {
        Some(t) if t < 1_000 => s += "; the timer expired on time",
        Some(t) => s += &format!("; the timer expired {} after the deadline", Nanos(t)),
        None => {}
    }
    if trace_from.is_some_and(|f| f > window_start) {
        s += "; the trace begins inside the window (the buffer held less than the latency): only its end is explained";
    }
    s
}
