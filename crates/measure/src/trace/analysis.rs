//! The explanation of one latency from one CPU's events, as rtla's timerlat auto-analysis
//! gives it: within the window from the deadline to the wake-up, every interrupt, softirq,
//! system vector and thread that ran on the CPU with its duration (a thread's time without the
//! interrupts that stopped it), the thread that held the CPU longest, when the thread's timer
//! expired, when it was woken and when it ran, and the part no event explains. Pure.

use super::events::{Event, Kind, Task};
use crate::result::trace::Interference;
use std::collections::BTreeMap;

/// The latency to explain: from `start_ns` (the deadline) to `end_ns` (the wake-up), of the
/// measurement thread `tid` (CLOCK_MONOTONIC).
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
    pub tid: i32,
}

/// A thread's stay on the CPU.
#[derive(Debug, Clone)]
pub struct Run {
    pub task: Task,
    pub from_ns: u64,
    pub to_ns: u64,
    /// Whether its start is in the trace (else it ran since before the trace began, or since a
    /// switch-in the trace lost: either way its stay is a lower bound).
    pub from_known: bool,
    /// Its time inside the window, interrupts excluded.
    pub in_window_ns: u64,
}

/// The thread that held the CPU longest in the window, over all its stays that reach into it
/// (another task may have cut one stay in two: the kernel's stopper, an IPI's work).
#[derive(Debug, Clone)]
pub struct Held {
    pub task: Task,
    /// Its stays that reach into the window, whole (parts before the window included).
    pub ran_ns: u64,
    pub in_window_ns: u64,
    pub stays: u64,
    /// Whether one of them began before the trace did, or at a switch-in the trace lost
    /// (`ran_ns` is then a lower bound).
    pub began_before_trace: bool,
}

/// What the events say about the window (times CLOCK_MONOTONIC).
#[derive(Debug, Clone)]
pub struct Analysis {
    pub timer_expired_ns: Option<u64>,
    pub woken_ns: Option<u64>,
    pub running_ns: Option<u64>,
    /// The thread (not the measurement's, not idle) that held the CPU longest in the window.
    pub culprit: Option<Held>,
    /// The largest share first (shares filled in by `explain`).
    pub interference: Vec<Interference>,
    pub unexplained_ns: u64,
    pub events_in_window: u64,
    pub trace_from_ns: Option<u64>,
}

fn overlap(from: u64, to: u64, w: &Window) -> u64 {
    to.min(w.end_ns).saturating_sub(from.max(w.start_ns))
}

/// The threads' stays on the CPU, from its switch events — and from the task each line names
/// as running, for a switch the trace does not hold (seen: a switch from idle to a task just
/// woken on the CPU missing from a guest's trace); such a stay starts at the task's wake-up.
/// Stays never overlap (one CPU runs one thread at a time): a switch away from a thread the
/// trace never switched in (its switch-in lost: seen on a loaded host, the trace ring
/// overrun) ends the current stay where that thread was last seen, and the leaving thread's
/// stay, of unknown start, begins there.
fn runs(events: &[Event], w: &Window) -> Vec<Run> {
    let first = events.first().map_or(w.start_ns, |e| e.ts_ns);
    let mut runs = Vec::new();
    // The running task, since when, whether that start is known, and when it was last seen.
    let mut current: Option<(Task, u64, bool)> = None;
    let mut seen = first;
    // Wake-ups on the CPU since the last switch: pid, when, its priority.
    let mut woken: Vec<(i32, u64, i64)> = Vec::new();
    for e in events {
        if let Kind::Wakeup(t) = &e.kind {
            woken.push((t.pid, e.ts_ns, t.prio));
        }
        let unswitched = !matches!(e.kind, Kind::Switch { .. }) && e.pid >= 0;
        if let Some((t, from, known)) = current.take_if(|(t, _, _)| unswitched && t.pid != e.pid) {
            let wake = woken.iter().rev().find(|(p, at, _)| *p == e.pid && *at >= from);
            let at = wake.map_or(e.ts_ns, |w| w.1).max(from);
            runs.push(Run { task: t, from_ns: from, to_ns: at, from_known: known, in_window_ns: 0 });
            let task = Task { comm: e.comm.clone(), pid: e.pid, prio: wake.map_or(-2, |w| w.2) };
            current = Some((task, at, wake.is_some()));
        }
        if current.as_ref().is_some_and(|(t, _, _)| t.pid == e.pid) {
            seen = e.ts_ns;
        }
        if let Kind::Switch { prev, next } = &e.kind {
            // Its name as it left (it may have been renamed); the most urgent priority it was
            // seen at, coming in or leaving (it may have changed it while running).
            let (task, from, known) = match current.take() {
                Some((t, f, k)) if t.pid == prev.pid => {
                    let prio = if t.prio == -2 { prev.prio } else { t.prio.min(prev.prio) };
                    (Task { comm: prev.comm.clone(), pid: prev.pid, prio }, f, k)
                }
                Some((t, f, k)) => {
                    let last = seen.clamp(f, e.ts_ns);
                    runs.push(Run { task: t, from_ns: f, to_ns: last, from_known: k, in_window_ns: 0 });
                    (prev.clone(), last, false)
                }
                None => (prev.clone(), first, false),
            };
            runs.push(Run { task, from_ns: from, to_ns: e.ts_ns, from_known: known, in_window_ns: 0 });
            current = Some((next.clone(), e.ts_ns, true));
            seen = e.ts_ns;
            woken.clear();
        }
    }
    match current {
        Some((t, f, k)) => runs.push(Run { task: t, from_ns: f, to_ns: w.end_ns.max(f), from_known: k, in_window_ns: 0 }),
        // No switch at all: the task the events name ran throughout.
        None => {
            if let Some(e) = events.first() {
                let task = Task { comm: e.comm.clone(), pid: e.pid, prio: -2 };
                runs.push(Run { task, from_ns: first, to_ns: w.end_ns, from_known: false, in_window_ns: 0 });
            }
        }
    }
    runs
}

/// Interrupt-context spans (irq, softirq, vector): kind, name, from, to.
fn interrupt_spans(events: &[Event]) -> Vec<(&'static str, String, u64, u64)> {
    let first = events.first().map_or(0, |e| e.ts_ns);
    let mut open: Vec<(&'static str, String, u64)> = Vec::new();
    let mut spans = Vec::new();
    let mut close = |kind: &'static str, name: String, ts: u64, open: &mut Vec<(&'static str, String, u64)>| {
        match open.iter().rposition(|(k, n, _)| *k == kind && *n == name) {
            Some(i) => {
                let (_, n, from) = open.remove(i);
                spans.push((kind, n, from, ts));
            }
            // Entered before the trace began.
            None => spans.push((kind, name, first, ts)),
        }
    };
    for e in events {
        match &e.kind {
            Kind::IrqEntry { irq, name } => open.push(("irq", format!("{irq}:{name}"), e.ts_ns)),
            Kind::IrqExit { irq } => {
                let name =
                    open.iter().rev().find(|(k, n, _)| *k == "irq" && n.starts_with(&format!("{irq}:"))).map(|o| o.1.clone());
                close("irq", name.unwrap_or(format!("{irq}:")), e.ts_ns, &mut open);
            }
            Kind::SoftirqEntry { action } => open.push(("softirq", action.clone(), e.ts_ns)),
            Kind::SoftirqExit { action } => close("softirq", action.clone(), e.ts_ns, &mut open),
            Kind::VectorEntry(v) => open.push(("vector", v.clone(), e.ts_ns)),
            Kind::VectorExit(v) => close("vector", v.clone(), e.ts_ns, &mut open),
            _ => {}
        }
    }
    spans
}

/// The name a thread is listed under: `comm:pid`, `idle` for the idle task.
fn thread_name(t: &Task) -> String {
    format!("{}:{}", t.comm, t.pid)
}

/// Explains the window from `events` (one CPU's, in time order).
pub fn analyse(events: &[Event], w: &Window) -> Analysis {
    let mut runs = runs(events, w);
    let spans = interrupt_spans(events);
    let mut by: BTreeMap<(&'static str, String), (u64, u64, u64)> = BTreeMap::new();
    let mut add = |kind: &'static str, name: String, ns: u64| {
        let e = by.entry((kind, name)).or_insert((0, 0, 0));
        e.0 += 1;
        e.1 += ns;
        e.2 = e.2.max(ns);
    };
    // Interrupts, and how much of each thread's stay they took.
    let mut stolen = vec![0u64; runs.len()];
    for (kind, name, from, to) in &spans {
        let ov = overlap(*from, *to, w);
        if ov == 0 {
            continue;
        }
        let label = match *kind {
            "irq" => match name.split_once(':') {
                Some((n, d)) if !d.is_empty() => format!("IRQ {n} {d}"),
                Some((n, _)) => format!("IRQ {n}"),
                None => name.clone(),
            },
            _ => name.clone(),
        };
        add(kind, label, ov);
        if let Some(i) = runs.iter().position(|r| r.from_ns <= *from && *from < r.to_ns) {
            stolen[i] += ov;
        }
    }
    for (i, r) in runs.iter_mut().enumerate() {
        r.in_window_ns = overlap(r.from_ns, r.to_ns, w).saturating_sub(stolen[i]);
        if r.in_window_ns == 0 || r.task.pid == w.tid {
            continue;
        }
        if r.task.pid == 0 {
            add("idle", "idle".to_string(), r.in_window_ns);
        } else {
            add("thread", thread_name(&r.task), r.in_window_ns);
        }
    }
    let culprit = held_longest(&runs, w);
    // The measurement thread: woken (its last wake-up before the window's end, no earlier
    // than 50 µs before its deadline: the text's microseconds), its timer, its switch-in.
    let slack = 50_000;
    let woken = events
        .iter()
        .rev()
        .find(|e| e.ts_ns <= w.end_ns && e.ts_ns + slack >= w.start_ns && matches!(&e.kind, Kind::Wakeup(t) if t.pid == w.tid))
        .map(|e| e.ts_ns);
    let timer_expired = woken.and_then(|at| {
        events.iter().rev().filter(|e| e.ts_ns <= at && e.ts_ns + 1_000_000 >= at).find_map(|e| match &e.kind {
            Kind::HrtimerEntry { function, now_ns } if function == "hrtimer_wakeup" => Some(now_ns.unwrap_or(e.ts_ns)),
            _ => None,
        })
    });
    let running = events
        .iter()
        .rev()
        .find(|e| e.ts_ns <= w.end_ns + slack && matches!(&e.kind, Kind::Switch { next, .. } if next.pid == w.tid))
        .map(|e| e.ts_ns);
    let latency = w.end_ns - w.start_ns;
    let mut interference: Vec<Interference> = by
        .into_iter()
        .map(|((kind, name), (count, total, max))| Interference {
            kind: kind.to_string(),
            name,
            count,
            total_ns: total,
            max_ns: max,
            share_percent: share(total, latency),
        })
        .collect();
    interference.sort_by_key(|i| std::cmp::Reverse(i.total_ns));
    let explained: u64 = interference.iter().map(|i| i.total_ns).sum();
    Analysis {
        timer_expired_ns: timer_expired,
        woken_ns: woken,
        running_ns: running,
        culprit,
        interference,
        unexplained_ns: latency.saturating_sub(explained),
        events_in_window: events.iter().filter(|e| e.ts_ns >= w.start_ns && e.ts_ns <= w.end_ns).count() as u64,
        trace_from_ns: events.first().map(|e| e.ts_ns),
    }
}

/// The thread (not idle, not the measurement's) with the most time in the window, its stays
/// that reach into it summed.
fn held_longest(runs: &[Run], w: &Window) -> Option<Held> {
    let mut by: BTreeMap<i32, Held> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.task.pid != 0 && r.task.pid != w.tid && r.in_window_ns > 0) {
        let h = by.entry(r.task.pid).or_insert(Held {
            task: r.task.clone(),
            ran_ns: 0,
            in_window_ns: 0,
            stays: 0,
            began_before_trace: false,
        });
        h.ran_ns += r.to_ns - r.from_ns;
        h.in_window_ns += r.in_window_ns;
        h.stays += 1;
        h.began_before_trace |= !r.from_known;
        // The most urgent priority it was seen at.
        if r.task.prio != -2 && (h.task.prio == -2 || r.task.prio < h.task.prio) {
            h.task.prio = r.task.prio;
        }
    }
    by.into_values().max_by_key(|h| h.in_window_ns)
}

/// `part` of `whole` in percent, one decimal.
pub fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 * 1000.0 / whole as f64).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::events::parse;

    /// A FIFO 99 thread ran from before the deadline until the measurement thread could run:
    /// it is the culprit, with its whole stay and its share.
    #[test]
    fn a_thread_that_held_the_cpu_is_the_culprit() {
        let text = "\
 rtgauge-timer1-100 [001] d..2.  10.000000: sched_switch: prev_comm=rtgauge-timer1 prev_pid=100 prev_prio=19 prev_state=S ==> next_comm=culprit x next_pid=200 next_prio=0
 culprit x-200 [001] d.h..  10.000500: local_timer_entry: vector=236
 culprit x-200 [001] d.h..  10.000501: hrtimer_expire_entry: hrtimer=0000 function=hrtimer_wakeup now=10000500900
 culprit x-200 [001] d.h2.  10.000502: sched_wakeup: comm=rtgauge-timer1 pid=100 prio=19 target_cpu=001
 culprit x-200 [001] d.h..  10.000504: local_timer_exit: vector=236
 culprit x-200 [001] d.h..  10.100000: irq_handler_entry: irq=36 name=virtio1-req.0
 culprit x-200 [001] d.h..  10.100010: irq_handler_exit: irq=36 ret=handled
 culprit x-200 [001] d..2.  10.200500: sched_switch: prev_comm=culprit x prev_pid=200 prev_prio=0 prev_state=R ==> next_comm=rtgauge-timer1 next_pid=100 next_prio=19
";
        let events = parse(text);
        let w = Window { start_ns: 10_000_500_000, end_ns: 10_200_510_000, tid: 100 };
        let a = analyse(&events, &w);
        let c = a.culprit.expect("a culprit");
        assert_eq!((c.task.comm.as_str(), c.task.pid, c.task.prio), ("culprit x", 200, 0));
        assert_eq!((c.ran_ns, c.stays), (200_500_000, 1), "its whole stay");
        assert_eq!(c.in_window_ns, 200_000_000 - 4_000 - 10_000, "inside the window, interrupts excluded");
        assert_eq!(a.timer_expired_ns, Some(10_000_500_900));
        assert_eq!(a.woken_ns, Some(10_000_502_000));
        assert_eq!(a.running_ns, Some(10_200_500_000));
        let top = &a.interference[0];
        assert_eq!((top.kind.as_str(), top.name.as_str()), ("thread", "culprit x:200"));
        assert!(top.share_percent > 99.0, "{top:?}");
        assert!(a.interference.iter().any(|i| i.name == "IRQ 36 virtio1-req.0" && i.total_ns == 10_000));
        let sum: u64 = a.interference.iter().map(|i| i.total_ns).sum::<u64>() + a.unexplained_ns;
        assert_eq!(sum, w.end_ns - w.start_ns, "the parts add up to the latency");
    }

    /// A switch the trace does not hold (idle to a task woken on the CPU, seen in a guest): the
    /// task's stay starts at its wake-up, known from the lines that name it as running.
    #[test]
    fn a_missing_switch_is_read_from_the_task_lines_name() {
        let text = "\
 rtgauge-timer1-100 [001] d..2.  10.000000: sched_switch: prev_comm=rtgauge-timer1 prev_pid=100 prev_prio=19 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [001] dNs5.  10.000100: sched_wakeup: comm=stall pid=200 prio=0 target_cpu=001
 stall-200 [001] d.h2.  10.000900: sched_wakeup: comm=rtgauge-timer1 pid=100 prio=19 target_cpu=001
 stall-200 [001] d..2.  10.200100: sched_switch: prev_comm=stall prev_pid=200 prev_prio=120 prev_state=Z ==> next_comm=rtgauge-timer1 next_pid=100 next_prio=19
";
        let a = analyse(&parse(text), &Window { start_ns: 10_000_900_000, end_ns: 10_200_110_000, tid: 100 });
        let c = a.culprit.expect("the stall");
        assert_eq!(
            (c.task.pid, c.task.prio, c.began_before_trace),
            (200, 0, false),
            "its priority from its wake-up, not its exit"
        );
        assert_eq!(c.ran_ns, 200_000_000);
        assert_eq!(a.interference.iter().find(|i| i.kind == "idle").map(|i| i.total_ns), None, "idle ended before the window");
    }

    /// A stay cut in two by the kernel's stopper thread: the culprit is the task over both.
    #[test]
    fn a_culprit_cut_in_two_counts_both_stays() {
        let text = "\
 rtgauge-timer1-100 [001] d..2.  10.000000: sched_switch: prev_comm=rtgauge-timer1 prev_pid=100 prev_prio=19 prev_state=S ==> next_comm=stall next_pid=200 next_prio=0
 stall-200 [001] d..2.  10.100000: sched_switch: prev_comm=stall prev_pid=200 prev_prio=0 prev_state=R ==> next_comm=migration/1 next_pid=26 next_prio=0
 migration/1-26 [001] d..2.  10.100100: sched_switch: prev_comm=migration/1 prev_pid=26 prev_prio=0 prev_state=S ==> next_comm=stall next_pid=200 next_prio=0
 stall-200 [001] d..2.  10.300000: sched_switch: prev_comm=stall prev_pid=200 prev_prio=0 prev_state=R ==> next_comm=rtgauge-timer1 next_pid=100 next_prio=19
";
        let a = analyse(&parse(text), &Window { start_ns: 10_001_000_000, end_ns: 10_300_010_000, tid: 100 });
        let c = a.culprit.expect("the stall");
        assert_eq!((c.task.pid, c.stays, c.ran_ns), (200, 2, 299_900_000));
        assert_eq!(c.in_window_ns, 298_900_000);
    }

    /// A switch away from a thread the trace never switched in (its switch-in lost: CI, armv7
    /// under qemu-user beside another rtgauge run, the host's trace ring overrun): the leaving
    /// thread's stay began where the running one was last seen, not at the trace's start — it
    /// was counted over the whole window three times (a culprit with 300 % of the latency, the
    /// parts adding up to far more than the latency).
    #[test]
    fn a_thread_whose_switch_in_was_lost_does_not_overlap_the_others() {
        let text = "\
 rtgauge-timer1-100 [001] d..2.  10.000000: sched_switch: prev_comm=rtgauge-timer1 prev_pid=100 prev_prio=19 prev_state=S ==> next_comm=stall next_pid=200 next_prio=0
 stall-200 [001] d.h..  10.100000: irq_handler_entry: irq=36 name=virtio1-req.0
 stall-200 [001] d.h..  10.100010: irq_handler_exit: irq=36 ret=handled
 other-4175 [001] d..2.  10.250000: sched_switch: prev_comm=other prev_pid=4175 prev_prio=19 prev_state=S ==> next_comm=rtgauge-timer1 next_pid=100 next_prio=19
 rtgauge-timer1-100 [001] d..2.  10.250100: sched_switch: prev_comm=rtgauge-timer1 prev_pid=100 prev_prio=19 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [001] d..2.  10.260000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=other next_pid=4175 next_prio=19
 other-4175 [001] d..2.  10.270000: sched_switch: prev_comm=other prev_pid=4175 prev_prio=19 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
        let runs = runs(&parse(text), &Window { start_ns: 10_000_000_000, end_ns: 10_300_000_000, tid: 100 });
        let mut sorted = runs.clone();
        sorted.sort_by_key(|r| r.from_ns);
        for pair in sorted.windows(2) {
            assert!(pair[0].to_ns <= pair[1].from_ns, "stays overlap: {:?}", pair);
        }
        let stall = runs.iter().find(|r| r.task.pid == 200).expect("the stall's stay");
        assert_eq!((stall.from_ns, stall.to_ns), (10_000_000_000, 10_100_010_000), "until it was last seen");
        let other: Vec<&Run> = runs.iter().filter(|r| r.task.pid == 4175).collect();
        assert_eq!(other.len(), 2);
        assert_eq!((other[0].from_ns, other[0].to_ns, other[0].from_known), (10_100_010_000, 10_250_000_000, false));
        let w = Window { start_ns: 10_000_000_000, end_ns: 10_250_000_000, tid: 100 };
        let a = analyse(&parse(text), &w);
        let sum: u64 = a.interference.iter().map(|i| i.total_ns).sum::<u64>() + a.unexplained_ns;
        assert_eq!(sum, w.end_ns - w.start_ns, "the parts add up to the latency");
    }

    /// Nothing traced in the window but idle: the latency is the wake-up's own.
    #[test]
    fn an_idle_cpu_has_no_culprit() {
        let text = "\
 rtgauge-timer1-100 [001] d..2.  10.000000: sched_switch: prev_comm=rtgauge-timer1 prev_pid=100 prev_prio=19 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [001] d.h2.  10.000900: sched_wakeup: comm=rtgauge-timer1 pid=100 prio=19 target_cpu=001
 <idle>-0 [001] d..2.  10.000950: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtgauge-timer1 next_pid=100 next_prio=19
";
        let a = analyse(&parse(text), &Window { start_ns: 10_000_100_000, end_ns: 10_000_960_000, tid: 100 });
        assert!(a.culprit.is_none());
        assert_eq!(a.interference[0].kind, "idle");
        assert_eq!(a.interference[0].total_ns, 850_000);
    }
}
