//! The result document assembled from what the stages left: every thread's figures, each
//! series combined over its CPUs, the phases, the configuration as run, and the verdict.

use crate::aggregate::Collector;
use crate::probe::{self, ProbePlan, SeriesKey};
use crate::result::sweep::{SweepResult, SweepStep};
use crate::result::system::SystemInfo;
use crate::result::{Config, ProbeConfig, ProbeResult, RunResult, Status, WarmupConfig, SCHEMA};
use crate::scenario::{RunLength, RunPlan, Warmup};
use crate::verdict;
use crate::vocab::cpus::format_cpu_list;
use std::time::SystemTime;

use super::measure::{measured_ns, Measured};
use super::resolved::{phase_bounds, Resolved};
use super::setup::Released;
use super::warnings::{load_failure_warnings, measurement_warnings, once};

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// The assembling stage: the run's status (complete, or stopped and by what), the warnings of
/// the measurement and of failed loads, how long was measured, and the document.
pub(super) fn run_result(
    ctx: &super::Context,
    mut measured: Measured,
    released: Released,
    continuity: Option<(crate::result::Continuity, SystemTime)>,
    mut warnings: Vec<String>,
) -> RunResult {
    let (plan, resolved, interrupts) = (&ctx.plan, &ctx.resolved, &ctx.interrupts);
    let (command_line, system, findings) = (ctx.command_line.clone(), ctx.system.clone(), ctx.findings.clone());
    let interrupted_by = interrupts.which();
    let complete = interrupted_by.is_none() && measured.end_ns == resolved.total_ns;
    let status = if complete { Status::Complete } else { Status::Partial };
    warnings.extend(measurement_warnings(&measured.collector, &resolved.probes, system.mlockall_obtained));
    warnings.extend(load_failure_warnings(&released.loads));
    // A rotated run's last part counts from its own start.
    let origin = measured.collector.origin_ns;
    let end_ns = measured.end_ns.saturating_sub(origin);
    let measured_ns = measured_ns(&measured.probes, &measured.collector, end_ns);
    let started_at = continuity.as_ref().map_or(measured.started_at, |c| c.1);
    let mut run = assemble(Assembly {
        plan,
        resolved,
        collector: &mut measured.collector,
        status,
        interrupted_by,
        times: (started_at, released.ended_at, measured.probes.start_ns + origin, end_ns),
        measured_ns,
        command_line,
        system,
        findings,
        tuning: released.tuning,
        trace: measured.trace,
        loads: released.loads,
        containment: released.containment,
        warnings: once(warnings),
    });
    if let Some((c, _)) = continuity {
        as_part(&mut run, c, resolved);
    }
    run.on_board(ctx.board.clone());
    run
}

/// A part of a rotated run, closed while measuring goes on (see `aggregate::segment`).
pub struct Part {
    /// Its accounts, closed at its end.
    pub collector: Collector,
    /// Where it lies in the series, and the UUID its result takes (the next part names it).
    pub continuity: crate::result::Continuity,
    pub uuid: Option<uuid::Uuid>,
    /// Its end, from the start of period 0.
    pub end_ns: u64,
    /// When it started and ended (wall clock), and CLOCK_MONOTONIC at the start of period 0.
    pub times: (SystemTime, SystemTime),
    pub start_ns: u64,
    /// The loads and the tuning so far.
    pub loads: Vec<crate::result::load::LoadRecord>,
    pub tuning: Vec<crate::result::tuning::TuningRecord>,
}

/// The result of a closed part of a rotated run: a complete run of its own, from its start to
/// its end, with its verdict and forecast.
pub(super) fn part_result(ctx: &super::Context, mut part: Part) -> RunResult {
    let (plan, resolved) = (&ctx.plan, &ctx.resolved);
    let (command_line, system, findings) = (ctx.command_line.clone(), ctx.system.clone(), ctx.findings.clone());
    let origin = part.collector.origin_ns;
    let end_ns = part.end_ns.saturating_sub(origin);
    let measured_ns = part
        .collector
        .accounts
        .iter()
        .map(|a| end_ns.saturating_sub(a.schedule.warmup_periods * a.schedule.interval_ns))
        .max()
        .unwrap_or(0);
    let mut warnings = measurement_warnings(&part.collector, &resolved.probes, system.mlockall_obtained);
    warnings.extend(load_failure_warnings(&part.loads));
    let mut run = assemble(Assembly {
        plan,
        resolved,
        collector: &mut part.collector,
        status: Status::Complete,
        interrupted_by: None,
        times: (part.times.0, part.times.1, part.start_ns + origin, end_ns),
        measured_ns,
        command_line,
        system,
        findings,
        tuning: part.tuning,
        trace: None,
        loads: part.loads,
        containment: None,
        warnings: once(warnings),
    });
    as_part(&mut run, part.continuity, resolved);
    run
}

/// Marks `run` as a part of its series: its place, and its configuration's length its own.
fn as_part(run: &mut RunResult, continuity: crate::result::Continuity, resolved: &Resolved) {
    let span = run.measured_ns;
    run.config.duration_ns = Some(span);
    run.config.loops = None;
    for (p, plan) in run.config.probes.iter_mut().zip(&resolved.probes) {
        let first = continuity.index == 0;
        let warmup = if first { plan.probe.schedule().warmup_periods } else { 0 };
        p.warmup_periods = warmup;
        p.periods = warmup + span / p.interval_ns.max(1);
    }
    if continuity.index > 0 {
        run.config.warmup.periods = 0;
    }
    run.part_of(continuity);
}

/// What assembling asks of the resolved plan: each series' figures (with a noise probe's per
/// CPU-second figures and the probe's own counts), each step of a probe's own timeline.
impl Resolved {
    /// Adds the probe's own counts (see `Probe::counters`) to its result.
    fn with_counts(&self, k: SeriesKey, mut r: ProbeResult, counts: [u64; probe::MAX_COUNTS]) -> ProbeResult {
        let names = self.probes[k.probe].probe.counters();
        r.counts = names.iter().zip(counts).map(|(n, c)| (n.to_string(), c)).collect();
        r
    }
    /// What each probe with a timeline of its own does at `at_ns` (`wakeup@0-1: 2000/s`).
    fn steps_at(&self, at_ns: u64) -> Vec<String> {
        let step = |p: &ProbePlan| p.probe.steps().into_iter().find(|s| s.start_ns <= at_ns && at_ns < s.end_ns);
        let label =
            |p: &ProbePlan, s: probe::Step| format!("{}@{}: {}/s", p.probe.name(), format_cpu_list(&p.cpus), s.rate_per_s);
        self.probes.iter().filter_map(|p| step(p).map(|s| label(p, s))).collect()
    }
    /// The sweep of series `k` on `cpu` (`None`: all its CPUs together), for a probe with steps:
    /// each step's figures from the collector's phases (measuring over, phases not yet taken).
    fn sweep(&self, k: SeriesKey, cpu: Option<usize>, collector: &Collector) -> Option<SweepResult> {
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
    fn result(
        &self,
        k: SeriesKey,
        cpu: Option<usize>,
        (stats, hist): crate::aggregate::Figures,
        span: (u64, u64),
    ) -> ProbeResult {
        let plan = &self.probes[k.probe];
        let mut r = crate::aggregate::probe_result(self.names(k), cpu, &stats, hist);
        r.measures = plan.probe.measures(k.series).map(str::to_string);
        let Some(threshold) = plan.probe.accounting().noise_threshold() else { return r };
        let s = plan.probe.schedule();
        let measured = span.1.saturating_sub(span.0.max(s.warmup_periods * s.interval_ns));
        let cpus = if cpu.is_some() { 1 } else { plan.cpus.len() as u64 };
        r.with_noise(threshold, stats.sum_ns, measured * cpus)
    }
}

/// Everything the result document is assembled from.
struct Assembly<'a> {
    plan: &'a RunPlan,
    resolved: &'a Resolved,
    collector: &'a mut Collector,
    status: Status,
    interrupted_by: Option<String>,
    /// (started, ended, CLOCK_MONOTONIC start of period 0, end of the measurement from it)
    times: (SystemTime, SystemTime, u64, u64),
    /// How long was measured after the warm-up ([`measured_ns`]).
    measured_ns: u64,
    command_line: Vec<String>,
    system: SystemInfo,
    findings: Vec<crate::result::findings::Finding>,
    tuning: Vec<crate::result::tuning::TuningRecord>,
    trace: Option<crate::result::trace::TraceReport>,
    loads: Vec<crate::result::load::LoadRecord>,
    containment: Option<crate::result::load::Containment>,
    warnings: Vec<String>,
}

/// The result document: every thread's figures, each probe's combined, the phases, the verdict.
fn assemble(a: Assembly) -> RunResult {
    let (plan, resolved, collector) = (a.plan, a.resolved, a.collector);
    let (started_at, ended_at, start_ns, end_ns) = a.times;
    // Per probe, per CPU, its series in the probe's order (the headline first).
    let mut order: Vec<usize> = (0..collector.accounts.len()).collect();
    order.sort_by_key(|&i| {
        let k = collector.accounts[i].key;
        (k.probe, k.cpu, k.series)
    });
    let per_thread: Vec<ProbeResult> = order
        .into_iter()
        .map(|i| {
            let key = collector.accounts[i].key;
            let mut r = resolved.result(key, Some(key.cpu), collector.stats(i), (0, end_ns));
            r.sweep = resolved.sweep(key, Some(key.cpu), collector);
            r.timeline = collector.take_timeline(i);
            r.page_faults = collector.accounts[i].page_faults;
            resolved.with_counts(key, r, collector.accounts[i].counts)
        })
        .collect();
    let combined: Vec<ProbeResult> = resolved
        .series()
        .map(|k| {
            let mut r = resolved.result(k, None, collector.combined_stats((k.probe, k.series)), (0, end_ns));
            r.sweep = resolved.sweep(k, None, collector);
            r.page_faults = collector.combined_page_faults((k.probe, k.series));
            resolved.with_counts(k, r, collector.combined_counts((k.probe, k.series)))
        })
        .collect();
    let phases = phases(resolved, collector, end_ns);
    // The verdict comes last: a requirement may bound a forecast, which is made from the whole
    // document (the configuration's intervals, the phases).
    let pending = crate::result::Verdict {
        passed: false,
        criteria_given: false,
        cycle_time_ns: None,
        budget_percent: (plan.budget * 1000.0).round() / 10.0,
        shortest_cycle_time_ns: None,
        checks: Vec::new(),
        rules: Vec::new(),
        support: Vec::new(),
    };
    let mut run = RunResult {
        uuid: Some(uuid::Uuid::new_v4()),
        board: None,
        schema: SCHEMA.to_string(),
        status: a.status,
        interrupted_by: a.interrupted_by,
        started_at: rfc3339(started_at),
        ended_at: rfc3339(ended_at),
        monotonic_start_ns: start_ns,
        measured_ns: a.measured_ns,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        command_line: a.command_line,
        imported: None,
        config: config(plan, resolved, pending.budget_percent),
        system: a.system,
        findings: a.findings,
        tuning: a.tuning,
        loads: a.loads,
        containment: a.containment,
        phases,
        probes: per_thread,
        combined,
        verdict: pending,
        trace: a.trace,
        continuous: None,
        warnings: a.warnings,
    };
    crate::forecast::analyse(&mut run);
    let criteria =
        verdict::Criteria { cycle_time_ns: plan.cycle_time_ns, budget: plan.budget, requirements: plan.requirements.clone() };
    let judged = verdict::judge(&run, &criteria);
    run.judged(judged);
    run
}

/// Each phase of the timeline with every probe's figures in it, per thread and combined.
fn phases(resolved: &Resolved, collector: &mut Collector, end_ns: u64) -> Vec<crate::result::PhaseResult> {
    let (specs, measured_to) = (&resolved.load_specs, end_ns);
    let bounds: Vec<u64> = std::iter::once(0).chain(phase_bounds(resolved)).collect();
    (0..collector.phase_count())
        .map(|i| {
            let (start_ns, end_ns) = (bounds[i], bounds.get(i + 1).copied().unwrap_or(resolved.total_ns));
            let active = specs
                .iter()
                .filter(|s| s.start_ns.unwrap_or(0) <= start_ns && s.end_ns.is_none_or(|e| e >= end_ns))
                .map(|s| s.text.clone())
                .collect();
            let (mut probes, mut combined) = (Vec::new(), Vec::new());
            for k in resolved.series() {
                let span = (start_ns, end_ns.min(measured_to));
                collector.take_phase((k.probe, k.series), i, |cpu, figures| match cpu {
                    Some(_) => probes.push(resolved.result(k, cpu, figures, span)),
                    None => combined.push(resolved.result(k, None, figures, span)),
                });
            }
            let steps = resolved.steps_at(start_ns);
            crate::result::PhaseResult { start_ns, end_ns, loads: active, steps, probes, combined }
        })
        .collect()
}

fn config(plan: &RunPlan, resolved: &Resolved, budget_percent: f64) -> Config {
    let (cpus, load_source, specs) = (&resolved.cpus, resolved.load_source, &resolved.load_specs);
    Config {
        probes: resolved
            .probes
            .iter()
            .zip(&plan.measures)
            .map(|(p, m)| ProbeConfig {
                name: p.probe.name().to_string(),
                spec: m.text.clone(),
                cpus: p.cpus.clone(),
                interval_ns: p.probe.schedule().interval_ns,
                warmup_periods: p.probe.schedule().warmup_periods,
                periods: p.probe.schedule().periods,
                settings: p.probe.settings(),
            })
            .collect(),
        interval_ns: plan.interval_ns,
        policy: plan.policy,
        priority: plan.priority,
        dl_runtime_ns: plan.dl_runtime_ns,
        dl_deadline_ns: plan.dl_deadline_ns,
        cpus: cpus.to_vec(),
        duration_ns: match plan.length {
            RunLength::Duration(d) => Some(d),
            RunLength::Loops(_) => None,
        },
        loops: match plan.length {
            RunLength::Loops(n) => Some(n),
            RunLength::Duration(_) => None,
        },
        warmup: WarmupConfig {
            ns: match plan.warmup {
                Warmup::Time(t) => Some(t),
                Warmup::Samples(_) => None,
            },
            samples: match plan.warmup {
                Warmup::Samples(n) => Some(n),
                Warmup::Time(_) => None,
            },
            periods: plan.warmup_periods(),
        },
        mlockall: plan.mlock,
        cycle_time_ns: plan.cycle_time_ns,
        budget_percent,
        requirements: plan.requirements.iter().map(|r| r.to_string()).collect(),
        cpu_dma_latency_us: plan.cpu_dma_latency_us,
        scenario: plan
            .scenario
            .as_ref()
            .map(|(name, source)| crate::result::ScenarioRef { name: name.clone(), source: source.clone() }),
        load_source: load_source.to_string(),
        loads: specs.iter().map(|s| s.text.clone()).collect(),
        load_cpus: plan.load_cpus.clone(),
        window_ns: Some(resolved.window_ns),
        assume_independent: false,
    }
}
