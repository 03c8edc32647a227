//! The plan resolved against the audited machine ([`Resolved`]): the probes built for the run's
//! timing with their CPUs, the loads, the timeline's window; and what the later stages ask of
//! it (series, names, labels, the phases' bounds).

use super::checks::{check_cpus, check_requirements, resolve_cpus, resolve_loads, timeline_window};
use crate::load::spec::LoadSpec;
use crate::probe::registry::{self, RunTiming};
use crate::probe::{self, ProbePlan, RunningProbes, SeriesKey, ThreadSched};
use crate::result::system::SystemInfo;
use crate::scenario::RunPlan;
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
    /// `--rotate`: a part closed every so often (its own run).
    pub rotate_ns: Option<u64>,
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
        probes.push(ProbePlan { probe, cpus: probe_cpus, kernel: None });
    }
    check_requirements(&plan.requirements, &probes)?;
    let planned: Vec<&dyn crate::probe::Probe> = probes.iter().map(|p| p.probe.as_ref()).collect();
    crate::probe::kernel::check_conflicts(&planned, plan.trace.is_some()).map_err(anyhow::Error::msg)?;
    let mut all: Vec<usize> = probes.iter().flat_map(|p| p.cpus.iter().copied()).collect();
    all.sort_unstable();
    all.dedup();
    let (load_specs, load_source) = resolve_loads(plan, system)?;
    let total_ns = probes.iter().map(|p| p.probe.schedule().periods * p.probe.schedule().interval_ns).max().unwrap_or(0);
    let total_ns = total_ns.max(plan.total_ns());
    // A rotated run's timeline is each part's: windows for the rotation's length.
    let live = plan.continuous.rotate_ns.is_some() || plan.continuous.metrics.is_some() || plan.continuous.forever;
    let window_ns = timeline_window(plan.window_ns, &probes, plan.continuous.rotate_ns.unwrap_or(total_ns).min(total_ns), live)?;
    let rotate_ns = plan.continuous.rotate_ns;
    let resolved = Resolved { probes, cpus: all, total_ns, load_specs, load_source, window_ns, rotate_ns };
    if plan.continuous.rotate_ns.is_some() {
        check_rotation(&resolved)?;
    }
    Ok(resolved)
}

/// A rotated run's parts are runs of their own without phases: a load's phase (`@30s..90s`)
/// or a probe's steps (a rate sweep) would cut across them.
fn check_rotation(resolved: &Resolved) -> Result<()> {
    if let Some(s) = resolved.load_specs.iter().find(|s| s.start_ns.is_some() || s.end_ns.is_some()) {
        anyhow::bail!(
            "--load '{}' has a phase, and --rotate closes a run every so often: a phase would cut across \
             the rotated runs; give the load without '@' (it runs throughout), or measure without --rotate",
            crate::vocab::text::shown(&s.text)
        );
    }
    if let Some(p) = resolved.probes.iter().find(|p| !p.probe.steps().is_empty()) {
        anyhow::bail!(
            "--measure {} steps through rates, and --rotate closes a run every so often: measure the sweep \
             without --rotate",
            p.probe.name()
        );
    }
    Ok(())
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
