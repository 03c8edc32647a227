//! What a continuous run does beside measuring (`-D forever`, `--rotate`, `--metrics`,
//! `--metrics-file`): the coordinator closes each part of a rotated run at its cut (see
//! `aggregate::segment`) and hands it to the keeper, and publishes the live figures; the keeper
//! (a thread of its own) makes each part's result — verdict and forecast included — and keeps
//! it; the metrics thread serves the latest figures and writes the metrics file. Both threads
//! are non-RT and run only on CPUs rtgauge does not measure; neither touches the measurement
//! threads nor holds anything the coordinator waits for (the figures go through
//! `metrics::Slot`, which the coordinator never waits on; the parts through a channel).

use super::assemble::{part_result, Part};
use super::resolved::Resolved;
use crate::aggregate::Collector;
use crate::load::manager::LoadSet;
use crate::metrics::{LoadFigures, RunInfo, SeriesFigures, Slot, Snapshot};
use crate::probe::RunningProbes;
use crate::result::system::SystemInfo;
use crate::result::Continuity;
use crate::scenario::RunPlan;
use anyhow::{bail, Result};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How long after a cut the coordinator waits for a thread's facts up to it before it closes
/// the part without them (the thread held off its CPU: its periods there are counted missed).
const CUT_GRACE: Duration = Duration::from_secs(1);
/// How often the live figures are published.
const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// The live metrics of a run (`--metrics`, `--metrics-file`): the address bound and the file's
/// directory checked before anything is opened or written ([`Metrics::bind`]), served from when
/// the measurement threads are ready, on rtgauge's own CPUs ([`Metrics::start`]); the file holds
/// the figures at the end ([`Metrics::finish`]).
pub struct Metrics {
    outlets: Option<crate::metrics::serve::Outlets>,
    file: Option<crate::metrics::serve::MetricsFile>,
    slot: Option<Arc<Slot>>,
}

impl Metrics {
    pub(super) fn bind(run: &super::Context) -> Result<Metrics> {
        let outlets = match &run.plan.continuous.metrics {
            Some(m) => Some(crate::metrics::serve::Outlets::open(m.listen, m.file.as_deref()).map_err(anyhow::Error::msg)?),
            None => None,
        };
        let file = outlets.as_ref().and_then(crate::metrics::serve::Outlets::file);
        Ok(Metrics { outlets, file, slot: None })
    }

    pub(super) fn start(&mut self, run: &super::Context) -> Result<()> {
        let Some(o) = self.outlets.take() else { return Ok(()) };
        let slot = Arc::new(Slot::new());
        let cpus = run.own_cpus.clone();
        if let Some(addr) = o.address() {
            say(&format!("rtgauge: metrics at http://{addr}/metrics"));
        }
        o.start(Arc::clone(&slot), run.resolved.window_ns, move || confine_here(&cpus))?;
        self.slot = Some(slot);
        Ok(())
    }

    /// Where the coordinator publishes the live figures (none without `--metrics`).
    pub(super) fn slot(&self) -> Option<Arc<Slot>> {
        self.slot.clone()
    }

    pub(super) fn finish(self, warnings: &mut Vec<String>) {
        if let (Some(file), Some(s)) = (self.file, self.slot.and_then(|s| s.latest())) {
            if let Err(e) = crate::metrics::serve::write_file(&file, &crate::metrics::expo::render(&s, false)) {
                warnings.push(format!("--metrics-file {e}: the last figures"));
            }
        }
    }
}

/// The CPUs rtgauge's own work may run on while it measures: the allowed CPUs it does not
/// measure. None when it measures them all: then a run that works while measuring is refused.
pub(super) fn own_cpus(plan: &RunPlan, resolved: &Resolved, system: &SystemInfo) -> Result<Vec<usize>> {
    let free: Vec<usize> = system.allowed_cpus.iter().copied().filter(|c| !resolved.cpus.contains(c)).collect();
    if plan.continuous.works_while_measuring() && free.is_empty() {
        let what = if plan.continuous.metrics.is_some() { "the metrics" } else { "rotated runs" };
        if system.allowed_cpus.len() < 2 {
            bail!(
                "{what} need two CPUs, one measured and one for rtgauge's own work, and this process may run on \
                 CPU {} only (its affinity): allow it another (taskset, CPUAffinity=), or measure without \
                 --rotate, -D forever and --metrics",
                crate::vocab::cpus::format_cpu_list(&system.allowed_cpus)
            );
        }
        bail!(
            "{what} need a CPU rtgauge does not measure (its work there never disturbs a measured one), \
             and --cpus {} measures every CPU it may use: leave one out, e.g. --cpus {}",
            crate::vocab::cpus::format_cpu_list(&resolved.cpus),
            crate::vocab::cpus::format_cpu_list(&system.allowed_cpus[1..])
        );
    }
    Ok(free)
}

/// Says `line` on standard error (where the run says what it does).
pub(super) fn say(line: &str) {
    crate::report::out::err_line(line);
}

/// Lets the calling thread run only on `cpus` at SCHED_OTHER (rtgauge's own work while it
/// measures); says why when it cannot.
pub(super) fn confine_here(cpus: &[usize]) -> std::io::Result<()> {
    crate::sys::sched::set_task_affinity(0, cpus)?;
    crate::sys::sched::set_thread_scheduler(crate::vocab::policy::Policy::Other, 0)
}

/// The totals of one series carried over from the parts already closed (the metrics are the
/// series' whole, across parts).
#[derive(Debug, Clone, Default)]
struct Carried {
    buckets: Vec<u64>,
    count: u64,
    sum_ns: u128,
    samples: u64,
    missed: u64,
    max_ns: Option<u64>,
    /// The last completed window's maximum (from the part before, until this part has one).
    window_max_ns: Option<u64>,
}

/// The live figures: what the coordinator publishes.
struct Feed {
    slot: Arc<Slot>,
    bounds: Arc<[u64]>,
    carried: Vec<Carried>,
    info: RunInfo,
    start_unix_s: f64,
    labels: Vec<(String, String, usize)>,
    last: Option<Instant>,
    scratch: Vec<u64>,
}

/// The rotation: where the open part ends.
struct Rotation {
    every_ns: u64,
    /// The open part's end, from the start of period 0.
    cut_ns: u64,
    continuity: Continuity,
    previous: Option<uuid::Uuid>,
    /// When the open part started, on the wall clock (read at each cut: a clock set or slewed
    /// while a series runs for months shows in the next part's times).
    started_at: SystemTime,
}

/// What goes on beside measuring, held by the coordinator.
pub struct Beside {
    rotation: Option<Rotation>,
    parts: Option<mpsc::Sender<Part>>,
    feed: Option<Feed>,
    series: uuid::Uuid,
    total_ns: u64,
}

impl Beside {
    /// Nothing beside measuring (a run that is not continuous).
    pub fn none() -> Beside {
        Beside { rotation: None, parts: None, feed: None, series: uuid::Uuid::nil(), total_ns: 0 }
    }

    /// Set up for `plan`: the rotation (parts to `parts`), the live figures (to `slot`).
    pub(super) fn new(run: &super::Context, parts: Option<mpsc::Sender<Part>>, slot: Option<Arc<Slot>>) -> Beside {
        let (plan, resolved, system, board) = (&run.plan, &run.resolved, &run.system, &run.board.name);
        let series = uuid::Uuid::new_v4();
        // The first part holds the warm-up and a whole rotation of measuring.
        let warmup_ns = plan.warmup_periods().saturating_mul(plan.interval_ns);
        let rotation = plan.continuous.rotate_ns.map(|every_ns| Rotation {
            every_ns,
            cut_ns: warmup_ns + every_ns,
            continuity: Continuity { series, index: 0, previous: None, offset_ns: 0, rotate_ns: every_ns },
            previous: None,
            started_at: SystemTime::now(),
        });
        let feed = slot.zip(plan.continuous.metrics.as_ref()).map(|(slot, m)| {
            let preemption = match &system.preemption.dynamic_mode {
                Some(mode) => format!("{} ({mode})", system.preemption.model),
                None => system.preemption.model.clone(),
            };
            Feed {
                slot,
                bounds: m.bounds_ns.clone().into(),
                carried: Vec::new(),
                info: RunInfo {
                    board: board.to_string(),
                    kernel: system.kernel_release.clone(),
                    preemption,
                    scenario: plan.scenario.as_ref().map_or(String::new(), |s| s.0.clone()),
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    series: series.to_string(),
                },
                start_unix_s: SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64()),
                labels: Vec::new(),
                last: None,
                scratch: vec![0; m.bounds_ns.len()],
            }
        });
        Beside { rotation, parts, feed, series, total_ns: resolved.total_ns }
    }

    /// The measurement has started: the collector is cut at the first part's end, the series'
    /// names are known.
    pub(super) fn started(&mut self, collector: &mut Collector, resolved: &Resolved, probes: &RunningProbes, at: SystemTime) {
        if let Some(r) = &mut self.rotation {
            r.started_at = at;
            if r.cut_ns < self.total_ns {
                collector.cut_at(r.cut_ns);
            }
        }
        if let Some(f) = &mut self.feed {
            f.labels = probes
                .keys
                .iter()
                .map(|&k| {
                    let (probe, series) = resolved.names(k);
                    (probe.to_string(), series.unwrap_or(probe).to_string(), k.cpu)
                })
                .collect();
            f.carried = vec![Carried { buckets: vec![0; f.bounds.len()], ..Default::default() }; probes.keys.len()];
        }
    }

    /// Called by the coordinator after each drain: closes the open part once every thread has
    /// handed over its facts up to the cut (or the grace has passed), publishes the figures.
    /// Returns the time it next wants to run at.
    pub(super) fn step(
        &mut self,
        now: u64,
        probes: &RunningProbes,
        collector: &mut Collector,
        loads: &LoadSet,
        tuning: &dyn Fn() -> Vec<crate::result::tuning::TuningRecord>,
    ) -> Option<u64> {
        let mut wake = None;
        if let Some(r) = &mut self.rotation {
            let cut_at = probes.start_ns + r.cut_ns;
            if r.cut_ns < self.total_ns && now >= cut_at {
                let grace_over = now >= cut_at + CUT_GRACE.as_nanos() as u64;
                let mut complete = true;
                for i in 0..probes.keys.len() {
                    complete &= collector.part_complete(i, &probes.counters[i], probes.finished(i), now - cut_at);
                }
                if complete || grace_over {
                    let next_cut = r.cut_ns + r.every_ns;
                    let next = collector.split(&probes.counters, (next_cut < self.total_ns).then_some(next_cut));
                    let closed = std::mem::replace(collector, next);
                    if let Some(f) = &mut self.feed {
                        f.carry(&closed);
                    }
                    let uuid = uuid::Uuid::new_v4();
                    // The cut on the wall clock as it reads now.
                    let ended_at = SystemTime::now() - Duration::from_nanos(now.saturating_sub(cut_at));
                    let part = Part {
                        collector: closed,
                        continuity: Continuity { previous: r.previous, ..r.continuity.clone() },
                        uuid: Some(uuid),
                        end_ns: r.cut_ns,
                        times: (r.started_at, ended_at),
                        start_ns: probes.start_ns,
                        loads: loads.so_far().into_iter().map(|(r, _)| r).collect(),
                        tuning: tuning(),
                    };
                    if let Some(tx) = &self.parts {
                        let _ = tx.send(part);
                    }
                    r.previous = Some(uuid);
                    r.started_at = ended_at;
                    r.continuity.index += 1;
                    r.continuity.offset_ns = r.cut_ns;
                    r.cut_ns = next_cut;
                } else {
                    wake = Some(now + 20_000_000);
                }
            } else if r.cut_ns < self.total_ns {
                wake = Some(cut_at);
            }
        }
        if let Some(f) = &mut self.feed {
            if f.last.is_none_or(|t| t.elapsed() >= PUBLISH_EVERY) {
                f.last = Some(Instant::now());
                let rotated = self.rotation.as_ref().map_or(0, |r| r.continuity.index);
                f.publish(collector, loads, rotated, false);
            }
        }
        wake
    }

    /// Publishes the figures as the measurement ended (every account closed).
    pub(super) fn publish_final(&mut self, collector: &Collector, loads: &LoadSet) {
        let rotated = self.rotation.as_ref().map_or(0, |r| r.continuity.index);
        if let Some(f) = &mut self.feed {
            // Nothing measures any more: this one waits for a scrape that holds the slot.
            f.publish(collector, loads, rotated, true);
        }
    }

    /// The continuity of the last part (the one the run ends in) and when it started, when rotated.
    pub(super) fn last_part(&self) -> Option<(Continuity, SystemTime)> {
        self.rotation.as_ref().map(|r| (Continuity { previous: r.previous, ..r.continuity.clone() }, r.started_at))
    }

    /// The series this run begins (shown when it starts).
    pub fn series(&self) -> uuid::Uuid {
        self.series
    }
}

impl Feed {
    /// Adds a closed part's figures to the series' carried totals.
    fn carry(&mut self, closed: &Collector) {
        for (i, a) in closed.accounts.iter().enumerate() {
            let Some(c) = self.carried.get_mut(i) else { continue };
            a.run.hist.counts_at_or_below(&self.bounds, &mut self.scratch);
            c.buckets.iter_mut().zip(&self.scratch).for_each(|(b, n)| *b += n);
            c.count += a.run.hist.len();
            c.sum_ns += a.run.hist.sum();
            c.samples += a.run.samples;
            c.missed += a.run.missed;
            let max = a.run.min_max().map(|m| m.1);
            c.max_ns = c.max_ns.max(max);
            if let Some(w) = a.timeline.as_ref().and_then(|t| t.last_window_max()) {
                c.window_max_ns = Some(w);
            }
        }
    }

    /// Publishes the series' figures so far (the carried totals and the open part's); false when
    /// a scrape held the slot (the next publication will do).
    /// `ended`: the measurement is over (its last window is complete too): waits for the slot.
    fn publish(&mut self, collector: &Collector, loads: &LoadSet, rotated_runs: u64, ended: bool) -> bool {
        let mut series = Vec::with_capacity(collector.accounts.len());
        for (i, a) in collector.accounts.iter().enumerate() {
            let (Some(c), Some((probe, name, cpu))) = (self.carried.get(i), self.labels.get(i)) else { continue };
            a.run.hist.counts_at_or_below(&self.bounds, &mut self.scratch);
            let window_max_ns = a
                .timeline
                .as_ref()
                .and_then(|t| if ended { t.last_window_max() } else { t.completed_window_max() })
                .or(c.window_max_ns);
            series.push(SeriesFigures {
                probe: probe.clone(),
                series: name.clone(),
                cpu: *cpu,
                buckets: c.buckets.iter().zip(&self.scratch).map(|(b, n)| b + n).collect(),
                count: c.count + a.run.hist.len(),
                sum_ns: c.sum_ns + a.run.hist.sum(),
                samples: c.samples + a.run.samples,
                missed: c.missed + a.run.missed,
                window_max_ns,
                max_ns: c.max_ns.max(a.run.min_max().map(|m| m.1)),
            });
        }
        let loads = loads
            .so_far()
            .into_iter()
            .map(|(r, running)| LoadFigures {
                name: r.spec.clone(),
                running,
                restarts: u64::from(r.runs.saturating_sub(1)),
                failed: r.failed,
            })
            .collect();
        let snapshot = Snapshot {
            info: self.info.clone(),
            bounds_ns: Arc::clone(&self.bounds),
            series,
            loads,
            rotated_runs,
            start_unix_s: self.start_unix_s,
        };
        if ended {
            self.slot.publish_last(snapshot);
            return true;
        }
        self.slot.publish(snapshot)
    }
}

/// The keeper: makes each closed part's result and keeps it, on a thread of its own on
/// rtgauge's CPUs; says each one in a line. Ends when the coordinator drops its sender.
pub(super) fn keeper<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    run: &'s super::Context,
    mut destination: Option<Box<dyn crate::keep::Destination>>,
) -> (mpsc::Sender<Part>, std::thread::ScopedJoinHandle<'s, Option<Box<dyn crate::keep::Destination>>>) {
    let cpus = run.own_cpus.clone();
    let (tx, rx) = mpsc::channel::<Part>();
    let handle = scope.spawn(move || {
        let _ = confine_here(&cpus);
        // The store's memory bounded before the first part is kept, as after each: the first
        // part's keeping reaches the most a part's keeping holds.
        if let Some(d) = &destination {
            d.fold();
        }
        for part in rx {
            let uuid = part.uuid;
            let mut result = part_result(run, part);
            let id = uuid.or(result.uuid);
            result.identified(id);
            result.on_board(run.board.clone());
            let line = match destination.as_mut() {
                Some(d) => d.keep_part(&mut result),
                None => run.keep.lost().keep_part(&mut result),
            };
            if let Some(d) = &destination {
                d.fold();
            }
            super::keep::say_part(&result, &line);
        }
        destination
    });
    (tx, handle)
}
