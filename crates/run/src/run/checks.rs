//! The plan checked against the audited machine before anything runs: CPUs online and within
//! the process's affinity, loads that can start, requirements that judge a series of the run,
//! a timeline window that fits, and room (the file size limit) for what the run will write.
//! Each refusal is one line naming the option and the fix.

use crate::load::manager::find_program;
use crate::load::spec::LoadSpec;
use crate::probe::{self, ProbePlan};
use crate::result::load::Generator;
use crate::result::system::SystemInfo;
use crate::scenario::{LoadChoice, RunPlan};
use crate::sys;
use crate::verdict;
use crate::vocab::cpus::format_cpu_list;
use crate::vocab::units::Nanos;
use anyhow::{bail, Result};

use super::resolved::{phase_bounds, Resolved};

/// Checks the plan against the audited machine and returns the CPUs to measure.
pub(super) fn resolve_cpus(plan: &RunPlan, system: &SystemInfo) -> Result<Vec<usize>> {
    match &plan.cpus {
        None if system.allowed_cpus.is_empty() => {
            bail!("this process may run on no online CPU; check its affinity (taskset -p $$)")
        }
        // A continuous run's own work (a server, rotated runs kept) needs a CPU it does not
        // measure: by default the first one it may use is left to it.
        None if plan.continuous.works_while_measuring() && system.allowed_cpus.len() > 1 => Ok(system.allowed_cpus[1..].to_vec()),
        None => Ok(system.allowed_cpus.clone()),
        Some(cpus) => {
            check_cpus("--cpus", cpus, system)?;
            Ok(cpus.clone())
        }
    }
}

/// Checks that `option`'s CPUs are online and within this process's affinity.
pub fn check_cpus(option: &str, cpus: &[usize], system: &SystemInfo) -> Result<()> {
    if let Some(bad) = cpus.iter().find(|c| !system.online_cpus.contains(c)) {
        bail!(
            "{option}: CPU {bad} is not online on this machine (online: {}); choose among them, e.g. {}",
            format_cpu_list(&system.online_cpus),
            format_cpu_list(&system.allowed_cpus)
        );
    }
    if let Some(bad) = cpus.iter().find(|c| !system.allowed_cpus.contains(c)) {
        bail!(
            "{option}: CPU {bad} is outside this process's affinity (allowed: {}; set by taskset or a cpuset); \
             choose among them or widen the affinity",
            format_cpu_list(&system.allowed_cpus)
        );
    }
    Ok(())
}

/// The loads of the plan, resolved for this machine and checked against it: the commands exist,
/// every phase starts within the run.
pub(super) fn resolve_loads(plan: &RunPlan, system: &SystemInfo) -> Result<(Vec<LoadSpec>, &'static str)> {
    let (specs, source) = match &plan.loads {
        LoadChoice::Idle => (Vec::new(), "none"),
        LoadChoice::DefaultMix => (crate::load::default_mix(system.allowed_cpus.len()), "default"),
        LoadChoice::Given(specs) if plan.scenario.is_some() => (specs.clone(), "scenario"),
        LoadChoice::Given(specs) => (specs.clone(), "given"),
    };
    check_loads(&specs, Some(plan.total_ns()), &system.online_cpus, plan.load_cpus.as_deref())?;
    let cpus = plan.load_cpus.as_ref().map_or(system.allowed_cpus.len(), Vec::len);
    Ok((specs.into_iter().map(|s| s.resolve(cpus)).collect(), source))
}

/// Checks loads against the machine before anything starts.
pub fn check_loads(specs: &[LoadSpec], run_ns: Option<u64>, online: &[usize], load_cpus: Option<&[usize]>) -> Result<()> {
    for s in specs {
        if let Generator::Cmd { argv, .. } = &s.generator {
            if find_program(&argv[0]).is_none() {
                bail!("--load '{}': command '{}' not found; give its path or install it", s.text, argv[0]);
            }
        }
        if let (Some(start), Some(total)) = (s.start_ns, run_ns) {
            if start >= total {
                bail!(
                    "--load '{}': starts at {} but the run lasts {}; start it earlier or lengthen the run",
                    s.text,
                    crate::vocab::units::Nanos(start),
                    crate::vocab::units::Nanos(total)
                );
            }
        }
    }
    if let Some(bad) = load_cpus.and_then(|l| l.iter().find(|c| !online.contains(c))) {
        bail!("--load-cpus: CPU {bad} is not online (online: {}); choose among them", format_cpu_list(online));
    }
    Ok(())
}

/// A generous estimate of the result document's size (JSON, as `--json` writes it), checked
/// against the room to keep it before measuring: the system and audit sections, each series'
/// figures per thread and combined, whole and in every phase, each thread's timeline.
pub(super) fn result_size_estimate(resolved: &Resolved) -> u64 {
    let threads: u64 = resolved.probes.iter().map(|p| (probe::series_count(&*p.probe) * p.cpus.len()) as u64).sum();
    let series = resolved.series().count() as u64;
    let phases = phase_bounds(resolved).len() as u64 + 1;
    // (A rotated run keeps one part's timeline at a time.)
    let span = resolved.rotate_ns.unwrap_or(resolved.total_ns).min(resolved.total_ns);
    let windows = span.div_ceil(resolved.window_ns.max(1));
    let figures = (threads + series).saturating_mul(phases + 1).saturating_mul(8 << 10);
    let timelines = threads.saturating_mul(windows).saturating_mul(128);
    (256u64 << 10).saturating_add(figures).saturating_add(timelines)
}

/// Refuses, before measuring, a file size limit (`ulimit -f`) below what `option`'s file may
/// take: writing past it would fail at the end (EFBIG).
pub(super) fn check_file_size_limit(option: &str, path: &std::path::Path, bytes: u64) -> Result<()> {
    if let Ok(Some(limit)) = sys::process::file_size_limit() {
        if limit < bytes {
            bail!(
                "the file size limit (ulimit -f) is {} KiB; {option} {} may need up to {} KiB: raise it with \
                 'ulimit -f unlimited'",
                limit / 1024,
                path.display(),
                bytes.div_ceil(1024)
            );
        }
    }
    Ok(())
}

/// Refuses, before anything runs, a requirement that would judge no series of the run's probes:
/// a probe it does not measure, a series the probe's shape does not report (a ping-pong has no
/// `task`), `below`/`above` without a period loop, `rate` without a sweep.
pub(super) fn check_requirements(requirements: &[crate::scenario::require::Requirement], probes: &[ProbePlan]) -> Result<()> {
    use crate::probe::{series_count, series_name};
    let targets: Vec<verdict::Target> = probes
        .iter()
        .flat_map(|p| {
            let probe = &*p.probe;
            let swept = !probe.steps().is_empty();
            (0..series_count(probe)).map(move |s| verdict::Target {
                probe: probe.name(),
                series: series_name(probe, s),
                bounded: probe.accounting().bounds(s).is_some(),
                not_latency: probe.measures(s).is_some(),
                swept,
                headline: s == 0,
            })
        })
        .collect();
    for r in requirements {
        if let Some(why) = verdict::why_unjudged(r, &targets) {
            bail!("--require '{}': {why}", r.text);
        }
    }
    Ok(())
}

/// The timeline's window: as given, or 1 s (shorter for runs under 50 s unless `live` — metrics
/// or rotated parts —, wider for runs over a day: `default_window_ns`). A given window must hold
/// a period of every probe and cut the run into at most `MAX_WINDOWS`.
pub(super) fn timeline_window(given: Option<u64>, probes: &[ProbePlan], total_ns: u64, live: bool) -> Result<u64> {
    use crate::aggregate::timeline::{default_window_ns, MAX_WINDOWS};
    let Some(ns) = given else {
        let longest = probes.iter().map(|p| p.probe.schedule().interval_ns).max().unwrap_or(0);
        return Ok(default_window_ns(total_ns, longest, live));
    };
    if let Some(p) = probes.iter().find(|p| p.probe.schedule().interval_ns > ns) {
        let interval = Nanos(p.probe.schedule().interval_ns);
        bail!(
            "--window {} is shorter than the {} probe's interval ({interval}): give --window {interval} or more",
            Nanos(ns),
            p.probe.name()
        );
    }
    if total_ns.div_ceil(ns) > MAX_WINDOWS {
        bail!(
            "--window {} cuts the {} run into more than {MAX_WINDOWS} windows: give --window {} or more",
            Nanos(ns),
            Nanos(total_ns),
            Nanos(total_ns.div_ceil(MAX_WINDOWS))
        );
    }
    Ok(ns)
}
