//! The plan resolved against the audited machine ([`Resolved`]): the probes built for the run's
//! timing with their CPUs, the loads, the timeline's window; and what the later stages ask of
//! it (series, names, labels, the phases' bounds, each series' figures and sweep).

use super::checks::{check_cpus, check_requirements, resolve_cpus, resolve_loads, timeline_window};
use crate::aggregate::Collector;
use crate::load::spec::LoadSpec;
use crate::probe::registry::{self, RunTiming};
use crate::probe::{self, ProbePlan, RunningProbes, SeriesKey, ThreadSched};
use crate::result::sweep::{SweepResult, SweepStep};
use crate::result::system::SystemInfo;
use crate::result::ProbeResult;
use crate::scenario::RunPlan;
use crate::vocab::cpus::format_cpu_list;
use anyhow::{anyhow, Result};

/// The plan resolved against the audited machine: the probes with their CPUs, the loads.
pub struct Resolved {
    pub probes: Vec<ProbePlan>,
    /// Every CPU any probe measures, ascending.
    pub cpus: Vec<usize>,
    /// How long the probes run, warm-up included: the longest probe's periods (the plan's time,
    /// unless a probe's own warm-up is longer).
    pub total_ns: u64,
    pub load_specs: Vec<LoadSpec>,
    pub load_source: &'static str,
    /// The timeline's window.
    pub window_ns: u64,
}

impl Resolved {
    /// Every series of every probe, in order (the CPU left 0).
    pub(super) fn series(&self) -> impl Iterator<Item = SeriesKey> + '_ {
        self.probes
            .iter()
            .enumerate()
            .flat_map(|(probe, p)| (0..probe::series_count(&*p.probe)).map(move |series| SeriesKey { probe, cpu: 0, series }))
    }
    /// The probe's name and the series' (for a probe with several).
    pub(super) fn names(&self, k: SeriesKey) -> (&'static str, Option<&'static str>) {
        let p = &*self.probes[k.probe].probe;
        (p.name(), probe::series_name(p, k.series))
    }
    pub(super) fn label(&self, k: SeriesKey) -> String {
        series_label(&self.probes, k)
    }
    /// Adds the probe's own counts (see `Probe::counters`) to its result.
    pub(super) fn with_counts(&self, k: SeriesKey, mut r: ProbeResult, counts: [u64; probe::MAX_COUNTS]) -> ProbeResult {
        let names = self.probes[k.probe].probe.counters();
        r.counts = names.iter().zip(counts).map(|(n, c)| (n.to_string(), c)).collect();
        r
    }
    /// What each probe with a timeline of its own does at `at_ns` (`wakeup@0-1: 2000/s`).
    pub(super) fn steps_at(&self, at_ns: u64) -> Vec<String> {
        let step = |p: &ProbePlan| p.probe.steps().into_iter().find(|s| s.start_ns <= at_ns && at_ns < s.end_ns);
        let label =
            |p: &ProbePlan, s: probe::Step| format!("{}@{}: {}/s", p.probe.name(), format_cpu_list(&p.cpus), s.rate_per_s);
        self.probes.iter().filter_map(|p| step(p).map(|s| label(p, s))).collect()
    }
    /// The sweep of series `k` on `cpu` (`None`: all its CPUs together), for a probe with steps:
    /// each step's figures from the collector's phases (measuring over, phases not yet taken).
    pub(super) fn sweep(&self, k: SeriesKey, cpu: Option<usize>, collector: &Collector) -> Option<SweepResult> {
        let steps = self.probes[k.probe].probe.steps();
        if steps.is_empty() {
            return None;
        }
        let accounts: Vec<usize> =
            collector.of_series(k.probe, k.series).filter(|(_, a)| cpu.is_none_or(|c| a.key.cpu == c)).map(|(i, _)| i).collect();
        let steps = steps
            .iter()
            .map(|s| {
                let mut t = crate::aggregate::Tally::default();
                accounts.iter().for_each(|&i| t.merge(&collector.span_tally(i, s.start_ns, s.end_ns)));
                let max_ns = t.min_max().map(|m| m.1);
                let planned = s.planned * accounts.len() as u64;
                SweepStep {
                    rate_per_s: s.rate_per_s,
                    interval_ns: s.interval_ns,
                    start_ns: s.start_ns,
                    end_ns: s.end_ns,
                    bound_ns: s.bound_ns,
                    planned,
                    events: t.samples,
                    missed: t.missed,
                    max_ns,
                    p99_ns: t.hist.percentile(99.0),
                    outcome: SweepStep::judge(t.samples, t.missed, max_ns, planned, s.bound_ns),
                }
            })
            .collect();
        Some(SweepResult::new(steps))
    }
    /// The result of series `k` on `cpu` (`None`: all its CPUs) measured from `span.0` to
    /// `span.1` (from the start of the run; the probe's warm-up is not measured); an event-
    /// accounted probe's noise figures are per CPU-second.
    pub(super) fn result(
        &self,
        k: SeriesKey,
        cpu: Option<usize>,
        (stats, hist): crate::aggregate::Figures,
        span: (u64, u64),
    ) -> ProbeResult {
        let plan = &self.probes[k.probe];
        let mut r = crate::aggregate::probe_result(self.names(k), cpu, &stats, &hist);
        r.measures = plan.probe.measures(k.series).map(str::to_string);
        let Some(threshold) = plan.probe.accounting().noise_threshold() else { return r };
        let s = plan.probe.schedule();
        let measured = span.1.saturating_sub(span.0.max(s.warmup_periods * s.interval_ns));
        let cpus = if cpu.is_some() { 1 } else { plan.cpus.len() as u64 };
        r.with_noise(threshold, stats.sum_ns, measured * cpus)
    }
}

/// The machine audited and the plan resolved against it; between stages the run lets go of
/// the code the last one ran (see `sys::mem::release_code_pages`).
pub(super) fn against_machine(plan: &RunPlan) -> Result<(SystemInfo, Resolved)> {
    let system = crate::audit::probe_system();
    let resolved = resolve(plan, &system)?;
    // Between stages the run lets go of the code the last one ran (parsing and planning here,
    // then the audit, the set-up, measuring, the report): each stage's code is resident only
    // while it runs, so the peak of resident memory is one stage's, not all of them together.
    crate::sys::mem::release_code_pages();
    Ok((system, resolved))
}

/// The plan checked against the machine: CPUs, probes (built for the run's timing), loads.
fn resolve(plan: &RunPlan, system: &SystemInfo) -> Result<Resolved> {
    let cpus = resolve_cpus(plan, system)?;
    let timing = RunTiming {
        interval_ns: plan.interval_ns,
        warmup_ns: plan.warmup_periods() * plan.interval_ns,
        total_ns: plan.total_ns(),
    };
    let mut probes = Vec::new();
    for m in &plan.measures {
        let probe_cpus = match &m.cpus {
            None => cpus.clone(),
            Some(c) => {
                check_cpus(&format!("--measure '{}'", m.text), c, system)?;
                c.clone()
            }
        };
        let probe = registry::build(m, timing).map_err(anyhow::Error::msg)?;
        probe.check_cpus(&probe_cpus).map_err(|e| anyhow!("--measure '{}': {e}", m.text))?;
        thread_sched(plan).check_deadline(probe.schedule().interval_ns).map_err(|e| anyhow!("--measure '{}': {e}", m.text))?;
        probes.push(ProbePlan { probe, cpus: probe_cpus });
    }
    check_requirements(&plan.requirements, &probes)?;
    let mut all: Vec<usize> = probes.iter().flat_map(|p| p.cpus.iter().copied()).collect();
    all.sort_unstable();
    all.dedup();
    let (load_specs, load_source) = resolve_loads(plan, system)?;
    let total_ns = probes.iter().map(|p| p.probe.schedule().periods * p.probe.schedule().interval_ns).max().unwrap_or(0);
    let total_ns = total_ns.max(plan.total_ns());
    let window_ns = timeline_window(plan.window_ns, &probes, total_ns)?;
    Ok(Resolved { probes, cpus: all, total_ns, load_specs, load_source, window_ns })
}

/// How the plan schedules the measurement threads.
pub(super) fn thread_sched(plan: &RunPlan) -> ThreadSched {
    ThreadSched {
        policy: plan.policy,
        priority: plan.priority,
        dl_runtime_ns: plan.dl_runtime_ns,
        dl_deadline_ns: plan.dl_deadline_ns,
    }
}

/// Where the timeline changes (load starts and stops, a probe's steps, inside the run), on
/// period deadlines.
pub(super) fn phase_bounds(resolved: &Resolved) -> Vec<u64> {
    let loads = resolved.load_specs.iter().flat_map(|s| [s.start_ns, s.end_ns]).flatten();
    let steps = resolved.probes.iter().flat_map(|p| p.probe.steps().into_iter().skip(1).map(|s| s.start_ns));
    let mut b: Vec<u64> = loads.chain(steps).filter(|&t| t > 0 && t < resolved.total_ns).collect();
    b.sort_unstable();
    b.dedup();
    b
}

/// The probe and series of the `i`-th series of the run (trace captures name them so).
pub(super) fn series_names(resolved: &Resolved, probes: &RunningProbes, i: u64) -> (String, Option<String>) {
    match probes.keys.get(i as usize) {
        Some(&k) => {
            let (p, s) = resolved.names(k);
            (p.to_string(), s.map(str::to_string))
        }
        None => ("?".to_string(), None),
    }
}

/// A series as results name it: `timer`, `wakeup.task`.
pub(super) fn series_label(probes: &[ProbePlan], k: SeriesKey) -> String {
    let p = &*probes[k.probe].probe;
    match probe::series_name(p, k.series) {
        Some(s) => format!("{}.{s}", p.name()),
        None => p.name().to_string(),
    }
}
