//! Measuring: the coordinator's loop (shared with `rtgauge load`), which drains the probes'
//! hand-offs, steps the loads' timeline and ends the run at its planned end, on a stop, or when
//! a thread is held off its CPU past the end; then every account is closed.

use super::continuous::{Beside, Metrics};
use super::setup::{Held, Released};
use super::signals::Interrupts;
use super::warnings::finish_watchdog;
use crate::aggregate::{Collector, SeriesPlan};
use crate::load::manager::LoadSet;
use crate::load::watchdog::Watchdog;
use crate::probe::{PreparedProbes, RunningProbes};
use crate::report::live::LiveView;
use crate::sys;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use super::resolved::{phase_bounds, series_names};

/// What measuring left: the threads (finished or held off their CPU), every account closed,
/// where the measurement ended, the trace of its worst cases.
pub struct Measured {
    pub started_at: SystemTime,
    pub probes: RunningProbes,
    pub collector: Collector,
    /// Where the measurement ended, from the start of period 0 ([`measure`]).
    pub end_ns: u64,
    pub trace: Option<crate::result::trace::TraceReport>,
}

/// What the measurement runs with: its threads ready, the loads under their watchdog, what the
/// run holds (memory, tuning, trace).
pub struct Rig {
    pub prepared: PreparedProbes,
    pub loads: LoadSet,
    pub watchdog: Option<Watchdog>,
    pub held: Held,
}

/// How the measuring stage ended: the measurement, what was put back, the last part of a
/// rotated run, the guardian (kept until the run's end).
pub struct Ended {
    pub measured: Measured,
    pub released: Released,
    pub last_part: Option<(crate::result::Continuity, SystemTime)>,
    pub guardian: Option<crate::load::guardian::Guardian>,
}

/// The measuring stage with its observers: a continuous run's keeper (each closed part made a
/// result and kept, on a thread of its own) and the live figures published at the
/// coordinator's cuts; then everything tuned put back (the PM QoS request released) and the
/// loads stopped, before the end-of-run work: before the keeper has kept the last parts closed
/// (a slow shared store must not hold the tuning).
pub(super) fn observed(run: &super::Context, rig: Rig, outputs: &mut super::keep::Outputs, metrics: &Metrics) -> Ended {
    let Rig { prepared, mut loads, watchdog, mut held } = rig;
    let rotated = run.plan.continuous.rotate_ns.is_some();
    let destination = if rotated { outputs.take_destination() } else { None };
    let (ended, destination) = std::thread::scope(|scope| {
        let (parts, keeper) = match rotated {
            true => {
                let (tx, handle) = super::continuous::keeper(scope, run, destination);
                (Some(tx), Some(handle))
            }
            false => (None, None),
        };
        let mut beside = Beside::new(run, parts, metrics.slot());
        if rotated {
            super::continuous::say(&format!(
                "rtgauge: a new series {} begins: a run is kept every {}",
                beside.series().to_string().get(..8).unwrap_or_default(),
                crate::vocab::units::Nanos(run.plan.continuous.rotate_ns.unwrap_or(0))
            ));
        }
        let mut on = Measuring { loads: &mut loads, held: &mut held, warnings: &mut outputs.warnings, beside: &mut beside };
        let measured = self::run(run, prepared, watchdog, &mut on);
        let last_part = beside.last_part();
        drop(beside);
        let (released, guardian) = super::setup::release(held, &mut loads, &mut outputs.warnings);
        let destination = keeper.and_then(|k| k.join().ok()).flatten();
        (Ended { measured, released, last_part, guardian }, destination)
    });
    if rotated {
        outputs.put_destination(destination);
    }
    ended
}

/// What the measuring stage works on while it measures.
struct Measuring<'a> {
    loads: &'a mut LoadSet,
    held: &'a mut Held,
    warnings: &'a mut Vec<String>,
    beside: &'a mut Beside,
}

/// The measuring stage: the threads released at a common start, the collector planned for
/// every series, [`measure`] until the end, the trace read out, the load watchdog ended.
fn run(ctx: &super::Context, prepared: PreparedProbes, mut watchdog: Option<Watchdog>, on: &mut Measuring) -> Measured {
    let resolved = &ctx.resolved;
    let started_at = SystemTime::now();
    let mut probes = prepared.go(sys::time::monotonic_ns() + START_MARGIN_NS);
    on.loads.set_origin(probes.start_ns);
    if let Some(w) = &mut watchdog {
        w.arm(probes.start_ns + resolved.total_ns + END_SLACK.as_nanos() as u64);
    }
    let bounds = phase_bounds(resolved);
    let series: Vec<_> = probes
        .keys
        .iter()
        .map(|&key| {
            let p = &resolved.probes[key.probe].probe;
            SeriesPlan { key, schedule: p.schedule(), bounds: p.accounting().bounds(key.series), events: p.accounting().events() }
        })
        .collect();
    let mut collector = Collector::new(&series, &bounds).with_timeline(resolved.window_ns);
    on.beside.started(&mut collector, resolved, &probes, started_at);
    let mut trace = on.held.trace.take();
    let end_ns = measure(ctx, &mut probes, &mut collector, &mut trace, on);
    // The figures at the end, served while the result is made and kept.
    on.beside.publish_final(&collector, on.loads);
    let trace = trace.map(|t| t.finish(|i| series_names(resolved, &probes, i), probes.start_ns));
    finish_watchdog(watchdog, on.warnings);
    Measured { started_at, probes, collector, end_ns, trace }
}

/// How long after the planned end the coordinator waits for a measurement thread before it
/// takes the thread as held off its CPU and stops the loads.
pub(super) const END_SLACK: Duration = Duration::from_millis(100);
/// How long, once the loads are stopped, a thread held off its CPU gets to come back.
const THREAD_GRACE: Duration = Duration::from_secs(1);
/// The start lies this far ahead of the moment it is read, so every thread is waiting for the
/// first deadline before it passes (the warm-up absorbs the loads' ramp-up).
const START_MARGIN_NS: u64 = 50_000_000;

/// The coordinator's loop, shared by every run: steps the loads' timeline (phases, restarts)
/// and calls `step` until a signal stops the run (returns when it was noticed) or `step`
/// returns `None` (returns `None`). `step` returns the time it next wants to run at; the loop
/// sleeps until then or the next load event, between 1 ms and `max_sleep_ms`.
pub(super) fn coordinate(
    loads: &mut LoadSet,
    interrupts: &Interrupts,
    max_sleep_ms: u64,
    mut step: impl FnMut(u64, &LoadSet) -> Option<u64>,
) -> Option<u64> {
    loop {
        let now = sys::time::monotonic_ns();
        // A stop first: the threads may have ended on it before this wakes up.
        if interrupts.stop.load(Ordering::Relaxed) {
            return Some(now);
        }
        // A stop that came after the check above may have ended the threads that `step` found
        // finished: it is still a stop (CI, armv7 under qemu-user: a SIGINT run was closed as
        // if complete, every unserved period missed).
        let Some(wake) = step(now, loads) else {
            return interrupts.stop.load(Ordering::Acquire).then(sys::time::monotonic_ns);
        };
        loads.tick(now);
        let next = loads.next_event_ns().map_or(wake, |e| e.min(wake));
        std::thread::sleep(Duration::from_nanos(next.saturating_sub(now).clamp(1_000_000, max_sleep_ms * 1_000_000)));
    }
}

/// Collects until every period is accounted for, the run is stopped, or a thread is held off
/// its CPU past the planned end; then stops the loads (which frees any CPU they held), gives
/// the threads a bounded grace, and closes every account. Returns where the measurement ended
/// (from the start of period 0): the planned end unless stopped early. A continuous run's
/// parts are closed and its figures published on the way (`beside`).
fn measure(
    ctx: &super::Context,
    probes: &mut RunningProbes,
    collector: &mut Collector,
    trace: &mut Option<crate::trace::Session>,
    on: &mut Measuring,
) -> u64 {
    let (plan, resolved, interrupts) = (&ctx.plan, &ctx.resolved, &ctx.interrupts);
    let Measuring { loads, held, beside, .. } = on;
    let planned_end_ns = probes.start_ns + resolved.total_ns;
    let total = Duration::from_nanos(resolved.total_ns);
    let labels: Vec<String> = probes.keys.iter().map(|&k| format!("{} cpu{}", resolved.label(k), k.cpu)).collect();
    let live = LiveView::new(plan.quiet, &labels, Some(total));
    let mut last_draw = std::time::Instant::now();
    // The rings hold seconds of facts: draining ten times a second keeps the collector's own
    // wake-ups (which disturb the measured CPUs too) rare. Near the planned end it wakes
    // sooner, so a run ends as soon as its last period is measured.
    let stopped_at = coordinate(loads, interrupts, 100, |now, loads| {
        collector.drain(probes);
        if let Some(t) = trace.as_mut() {
            t.poll();
        }
        let beside_wake = beside.step(now, probes, collector, loads, &|| held.tuning_so_far());
        if probes.all_finished() || now >= planned_end_ns + END_SLACK.as_nanos() as u64 {
            return None;
        }
        if let Some(view) = live.as_ref().filter(|_| last_draw.elapsed() >= Duration::from_millis(250)) {
            last_draw = std::time::Instant::now();
            let elapsed = Duration::from_nanos(now.saturating_sub(probes.start_ns));
            let figures: Vec<_> = (0..labels.len()).map(|i| collector.live(i)).collect();
            let warming = elapsed.as_nanos() < u128::from(plan.warmup_periods() * plan.interval_ns);
            view.update(elapsed, Some(total), warming, &labels, &figures);
        }
        let wake = if now < planned_end_ns { planned_end_ns } else { planned_end_ns + END_SLACK.as_nanos() as u64 };
        Some(beside_wake.map_or(wake, |b| b.min(wake)))
    });
    // Threads still measuring end at their next wake-up; loads end now, freeing their CPUs.
    interrupts.stop.store(true, Ordering::Relaxed);
    // A stop between a cut and its part's close: the open part goes on to the stop (its facts
    // after the cut are drained into it, none counted missed).
    collector.uncut();
    if let Some(view) = live {
        view.finish();
    }
    loads.finish();
    let grace_end = std::time::Instant::now() + THREAD_GRACE;
    while !probes.all_finished() && std::time::Instant::now() < grace_end {
        collector.drain(probes);
        std::thread::sleep(Duration::from_millis(5));
    }
    probes.join_finished();
    collector.drain(probes);
    // Measuring is over: what follows need not be locked in memory (a thread still held off its
    // CPU no longer counts).
    sys::mem::unlock_all_memory();
    sys::mem::release_code_pages();
    let end_ns = stopped_at.map_or(resolved.total_ns, |t| stopped_end_ns(probes, collector, t)).max(collector.origin_ns);
    for i in 0..probes.keys.len() {
        collector.close(i, &probes.counters[i], probes.finished(i), end_ns);
    }
    end_ns
}

/// How long was measured after the warm-up, as the threads did it: the longest any thread
/// measured after its own warm-up (a probe's `warmup=` included), up to where it stopped (a rate
/// sweep stops after its first failed rate; a thread held off its CPU measured to `end_ns`).
/// `end_ns` counts from the collector's start (a rotated run's part counts from its own).
pub(super) fn measured_ns(probes: &RunningProbes, collector: &Collector, end_ns: u64) -> u64 {
    (0..probes.keys.len())
        .map(|i| {
            let s = collector.accounts[i].schedule;
            let stop = if probes.finished(i) {
                // Periods the thread went through; one a load held off its CPU went through
                // none, and its periods were counted missed for it: those.
                let c = &collector.accounts[i];
                let done = match probes.counters[i].periods_done.load(Ordering::Relaxed).saturating_sub(c.span.base) {
                    0 => c.run.samples + c.run.missed + c.warmup_samples + c.warmup_missed,
                    n => n,
                };
                done.saturating_mul(s.interval_ns).min(end_ns)
            } else {
                end_ns
            };
            stop.saturating_sub(s.warmup_periods.saturating_mul(s.interval_ns))
        })
        .max()
        .unwrap_or(0)
}

/// Where a stopped run ends: where the threads that were running stopped (the last deadline
/// one of them accounted for); only if none was running, where the coordinator noticed the stop.
fn stopped_end_ns(probes: &RunningProbes, collector: &Collector, noticed_ns: u64) -> u64 {
    let ran = (0..probes.keys.len())
        .filter(|&i| probes.finished(i))
        .map(|i| probes.counters[i].periods_done.load(Ordering::Relaxed) * collector.accounts[i].schedule.interval_ns)
        .max();
    let planned =
        collector.accounts.iter().map(|a| (a.schedule.periods + a.span.base) * a.schedule.interval_ns).max().unwrap_or(0);
    ran.filter(|&t| t > 0).unwrap_or(noticed_ns.saturating_sub(probes.start_ns)).min(planned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CI (armv7 under qemu-user): a SIGINT came after the coordinator's stop check and before
    /// its step found every thread finished (they had ended on the stop); the run was closed as
    /// if it had run to its planned end, every unserved period missed. It is a stop.
    #[test]
    fn a_stop_that_ends_the_threads_between_check_and_step_is_still_a_stop() {
        let interrupts = Interrupts::calm();
        let mut loads = LoadSet::new(&[], None, false, None).unwrap();
        let stopped = coordinate(&mut loads, &interrupts, 1, |_, _| {
            interrupts.stop.store(true, Ordering::Release);
            None
        });
        assert!(stopped.is_some());
        let calm = Interrupts::calm();
        assert_eq!(coordinate(&mut loads, &calm, 1, |_, _| None), None, "finished without a stop");
    }
}
