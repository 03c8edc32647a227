//! The one lifecycle every measurement goes through, in the order of DESIGN.md:
//! plan → audit → (tuning) → (loads) → probes → aggregation → result → report → exit status.
//! Each stage is a call into its own module; nothing here measures or formats by itself.

use crate::aggregate::Collector;
use crate::audit::SystemInfo;
use crate::load::manager::{find_program, LoadSet};
use crate::load::spec::{Generator, LoadSpec};
use crate::load::watchdog::Watchdog;
use crate::probe::{self, timer::TimerLoop, RunningProbes, SetupError, ThreadSched};
use crate::report::{json::JsonSink, live::LiveView, summary};
use crate::result::{Config, ProbeResult, RunResult, Status, WarmupConfig, SCHEMA};
use crate::scenario::cpus::format_cpu_list;
use crate::scenario::{LoadChoice, RunLength, RunPlan, Warmup};
use crate::sys;
use crate::verdict;
use anyhow::{anyhow, bail, Result};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Exit status of a finished run: 0 passed or no criteria, 1 a criterion failed.
pub const EXIT_PASSED: u8 = 0;
pub const EXIT_FAILED: u8 = 1;

/// SIGINT/SIGTERM handling: the first signal asks the run to stop and keep its data, a second
/// one exits at once.
struct Interrupts {
    stop: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
    /// A socket the handlers write a byte to, so a thread waiting in `poll` (the load watchdog)
    /// wakes on a signal; `notify` writes to it too.
    wake: std::os::unix::net::UnixStream,
    notify: std::os::unix::net::UnixStream,
}

impl Interrupts {
    fn install() -> Result<Interrupts> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let stop = Arc::new(AtomicBool::new(false));
        let signal = Arc::new(AtomicUsize::new(0));
        for sig in [SIGINT, SIGTERM] {
            // Registered first, so it sees the flag as it was before this signal: set means second.
            signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())?;
            signal_hook::flag::register_usize(sig, signal.clone(), sig as usize)?;
            signal_hook::flag::register(sig, stop.clone())?;
        }
        let (wake, notify) = std::os::unix::net::UnixStream::pair()?;
        for sig in [SIGINT, SIGTERM] {
            signal_hook::low_level::pipe::register(sig, notify.try_clone()?)?;
        }
        Ok(Interrupts { stop, signal, wake, notify })
    }

    /// Starts the load watchdog (see `load::watchdog`) for these loads, if there are any.
    fn watchdog(&self, loads: &LoadSet, warnings: &mut Vec<String>) -> Result<Option<Watchdog>> {
        if loads.is_empty() {
            return Ok(None);
        }
        let w = Watchdog::start(self.wake.try_clone()?, self.notify.try_clone()?, self.stop.clone(), loads.demoter())?;
        if let (Err(why), true) = (&w.how, loads.any_realtime()) {
            warnings.push(format!(
                "the load watchdog cannot run at SCHED_DEADLINE ({why}): a load at a high RT priority may hold the run \
                 past its end on a PREEMPT_RT kernel"
            ));
        }
        Ok(Some(w))
    }

    fn which(&self) -> Option<String> {
        match self.signal.load(Ordering::Relaxed) as i32 {
            0 => None,
            signal_hook::consts::SIGINT => Some("SIGINT".into()),
            signal_hook::consts::SIGTERM => Some("SIGTERM".into()),
            n => Some(format!("signal {n}")),
        }
    }
}

/// Ends the watchdog; says so when it had to move loads to SCHED_OTHER for the run to end.
fn finish_watchdog(w: Option<Watchdog>, warnings: &mut Vec<String>) {
    let moved = w.map_or(0, Watchdog::finish);
    if moved > 0 {
        warnings.push(format!(
            "{moved} load threads at an RT policy still held CPUs after the planned end or a stop: the watchdog moved \
             them to SCHED_OTHER so the run could end"
        ));
    }
}

/// Checks the plan against the audited machine and returns the CPUs to measure.
fn resolve_cpus(plan: &RunPlan, system: &SystemInfo) -> Result<Vec<usize>> {
    match &plan.cpus {
        None if system.allowed_cpus.is_empty() => {
            bail!("this process may run on no online CPU; check its affinity (taskset -p $$)")
        }
        None => Ok(system.allowed_cpus.clone()),
        Some(cpus) => {
            if let Some(bad) = cpus.iter().find(|c| !system.online_cpus.contains(c)) {
                bail!(
                    "--cpus: CPU {bad} is not online on this machine (online: {}); choose among them, e.g. --cpus {}",
                    format_cpu_list(&system.online_cpus),
                    format_cpu_list(&system.allowed_cpus)
                );
            }
            if let Some(bad) = cpus.iter().find(|c| !system.allowed_cpus.contains(c)) {
                bail!(
                    "--cpus: CPU {bad} is outside this process's affinity (allowed: {}; set by taskset or a cpuset); \
                     choose among them or widen the affinity",
                    format_cpu_list(&system.allowed_cpus)
                );
            }
            Ok(cpus.clone())
        }
    }
}

/// The loads of the plan, resolved for this machine and checked against it: the commands exist,
/// every phase starts within the run.
fn resolve_loads(plan: &RunPlan, system: &SystemInfo) -> Result<(Vec<LoadSpec>, &'static str)> {
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
fn check_loads(specs: &[LoadSpec], run_ns: Option<u64>, online: &[usize], load_cpus: Option<&[usize]>) -> Result<()> {
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
                    crate::scenario::units::Nanos(start),
                    crate::scenario::units::Nanos(total)
                );
            }
        }
    }
    if let Some(bad) = load_cpus.and_then(|l| l.iter().find(|c| !online.contains(c))) {
        bail!("--load-cpus: CPU {bad} is not online (online: {}); choose among them", format_cpu_list(online));
    }
    Ok(())
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// How long after the planned end the coordinator waits for a measurement thread before it
/// takes the thread as held off its CPU and stops the loads.
const END_SLACK: Duration = Duration::from_millis(100);
/// How long, once the loads are stopped, a thread held off its CPU gets to come back.
const THREAD_GRACE: Duration = Duration::from_secs(1);
/// The start lies this far ahead of the moment it is read, so every thread is waiting for the
/// first deadline before it passes (the warm-up absorbs the loads' ramp-up).
const START_MARGIN_NS: u64 = 50_000_000;

/// Runs `rtgauge run`: measures, reports, and returns the exit status.
pub fn run(plan: RunPlan, command_line: Vec<String>) -> Result<u8> {
    // Signals first: Ctrl-C and SIGTERM stop the run at any moment from here on.
    let interrupts = Interrupts::install()?;
    let mut system = SystemInfo::probe();
    let cpus = resolve_cpus(&plan, &system)?;
    let (load_specs, load_source) = resolve_loads(&plan, &system)?;
    let sink = plan.json.as_ref().map(JsonSink::open).transpose()?;
    let mut warnings = load_priority_warnings(&plan, &cpus, &load_specs, &system);
    for w in &warnings {
        eprintln!("rtgauge: warning: {w}");
    }
    warnings.extend(lock_memory(&plan, &mut system));
    if !plan.policy.is_realtime() {
        warnings.push("measured at SCHED_OTHER on purpose (--policy other): not a real-time measurement".into());
    }
    let dma_guard = plan.cpu_dma_latency_us.map(crate::tuning::DmaLatencyGuard::hold);
    if let Some(g) = dma_guard.as_ref().filter(|g| !g.record.applied) {
        warnings.push(format!(
            "could not hold /dev/cpu_dma_latency at {} ({}): deep CPU idle states may add exit latency; run as root",
            g.record.value,
            g.record.error.as_deref().unwrap_or("?")
        ));
    }

    // The measurement threads are ready (pinned, at their priority) before any load starts.
    let timer = TimerLoop { interval_ns: plan.interval_ns, warmup_periods: plan.warmup_periods(), periods: plan.total_periods() };
    let prepared = prepare_probes(&plan, &cpus, timer, &interrupts, &system)?;
    system.rt_priority_obtained = plan.policy.is_realtime()
        && prepared.reports().len() == cpus.len()
        && prepared.reports().iter().all(|r| r.policy == Some(plan.policy) && r.priority == plan.priority);

    let mut loads = LoadSet::new(&load_specs, plan.load_cpus.clone(), false)?;
    if load_source == "default" && !plan.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!(
            "rtgauge: measuring under the default worst-case load ({}); --load none measures an idle system",
            load_specs.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    let mut watchdog = interrupts.watchdog(&loads, &mut warnings)?;
    loads.start_initial(&interrupts.stop);

    let started_at = SystemTime::now();
    let mut probes = prepared.go(sys::monotonic_ns() + START_MARGIN_NS);
    loads.set_origin(probes.start_ns);
    if let Some(w) = &mut watchdog {
        w.arm(probes.start_ns + plan.total_ns() + END_SLACK.as_nanos() as u64);
    }
    let phase_bounds = phase_bounds(&load_specs, plan.total_ns());
    let mut collector = Collector::new(cpus.len(), plan.interval_ns, &phase_bounds, timer.warmup_periods);
    let end_period = measure(&plan, &cpus, &mut probes, &mut collector, &mut loads, &interrupts);
    finish_watchdog(watchdog, &mut warnings);
    let tuning: Vec<_> = dma_guard.map(|g| g.record.clone()).into_iter().collect(); // request released here
    let load_records = loads.records();
    let ended_at = SystemTime::now();

    let interrupted_by = interrupts.which();
    let complete = interrupted_by.is_none() && end_period == plan.total_periods();
    let status = if complete { Status::Complete } else { Status::Partial };
    warnings.extend(measurement_warnings(&collector, &cpus, plan.interval_ns));
    warnings.extend(
        load_records.iter().filter(|l| l.failed).map(|l| {
            format!("load '{}' failed: {}", l.spec, l.error.as_deref().unwrap_or("see the loads section of the result"))
        }),
    );
    let result = assemble(Assembly {
        plan: &plan,
        cpus,
        collector: &mut collector,
        load_specs: &load_specs,
        load_source,
        status,
        interrupted_by,
        times: (started_at, ended_at, probes.start_ns, end_period),
        command_line,
        system,
        tuning,
        loads: load_records,
        containment: loads.containment(),
        warnings,
    });
    report(&result, sink)
}

/// Warnings known before the run starts: a load at or above the measurement's priority on a
/// measured CPU holds the measurement off that CPU.
fn load_priority_warnings(plan: &RunPlan, cpus: &[usize], specs: &[LoadSpec], system: &SystemInfo) -> Vec<String> {
    use crate::load::spec::LoadPolicy;
    if !plan.policy.is_realtime() {
        return Vec::new();
    }
    let load_cpus = plan.load_cpus.clone().unwrap_or_else(|| system.allowed_cpus.clone());
    let shared: Vec<usize> = cpus.iter().copied().filter(|c| load_cpus.contains(c)).collect();
    if shared.is_empty() {
        return Vec::new();
    }
    specs
        .iter()
        .filter_map(|s| match s.policy {
            Some(LoadPolicy::Fifo(p)) | Some(LoadPolicy::Rr(p)) if p >= plan.priority => Some(format!(
                "load '{}' runs at RT priority {p}, at or above the measurement's {} {}, on measured CPUs {}: \
                 while it runs it holds the measurement off those CPUs (their periods count as missed); \
                 lower its priority or move it with --load-cpus",
                s.text,
                plan.policy.kernel_name(),
                plan.priority,
                format_cpu_list(&shared)
            )),
            _ => None,
        })
        .collect()
}

/// Locks memory where that is safe; returns the warning when it is not locked.
fn lock_memory(plan: &RunPlan, system: &mut SystemInfo) -> Option<String> {
    if !plan.mlock {
        return Some("memory not locked (--no-mlock): page faults may add latency".into());
    }
    sys::tame_malloc();
    let locked = match system.memory_lock_hazard() {
        Some(why) => Err(why),
        None => sys::lock_all_memory().map_err(|e| format!("{e}; run as root or raise RLIMIT_MEMLOCK ('ulimit -l unlimited')")),
    };
    match locked {
        Ok(()) => {
            system.mlockall_obtained = true;
            None
        }
        Err(e) => {
            system.mlockall_error = Some(e.clone());
            Some(format!("memory not locked (page faults may add latency): {e}"))
        }
    }
}

/// Sets up the measurement threads; a refusal becomes an error that says why and what to do.
fn prepare_probes(
    plan: &RunPlan,
    cpus: &[usize],
    timer: TimerLoop,
    interrupts: &Interrupts,
    system: &SystemInfo,
) -> Result<probe::PreparedProbes> {
    let sched = ThreadSched { policy: plan.policy, priority: plan.priority };
    probe::prepare_timer(cpus, sched, timer, interrupts.stop.clone()).map_err(|reports| {
        let failed = reports.iter().find(|r| r.error.is_some()).expect("a failed report");
        match failed.error.as_ref().expect("an error") {
            SetupError::Scheduler(errno) => {
                anyhow!(system.explain_rt_refusal(
                    plan.policy.kernel_name(),
                    plan.priority,
                    &std::io::Error::from_raw_os_error(*errno)
                ))
            }
            SetupError::Affinity(msg) => {
                anyhow!("cannot pin a thread to CPU {}: {msg}; check --cpus and the cpuset of this process", failed.cpu)
            }
            SetupError::Other(msg) => anyhow!("cannot prepare the measurement thread for CPU {}: {msg}", failed.cpu),
        }
    })
}

/// Where the timeline changes (load starts and stops inside the run), on period deadlines.
fn phase_bounds(specs: &[LoadSpec], total_ns: u64) -> Vec<u64> {
    let mut b: Vec<u64> =
        specs.iter().flat_map(|s| [s.start_ns, s.end_ns]).flatten().filter(|&t| t > 0 && t < total_ns).collect();
    b.sort_unstable();
    b.dedup();
    b
}

/// Collects until every period is accounted for, the run is stopped, or a thread is held off
/// its CPU past the planned end; then stops the loads (which frees any CPU they held), gives
/// the threads a bounded grace, and closes every CPU's account. Returns the last period whose
/// deadline lay within the measurement (the planned last one unless stopped early).
fn measure(
    plan: &RunPlan,
    cpus: &[usize],
    probes: &mut RunningProbes,
    collector: &mut Collector,
    loads: &mut LoadSet,
    interrupts: &Interrupts,
) -> u64 {
    let interval = plan.interval_ns;
    let planned_end_ns = probes.start_ns + plan.total_ns();
    let total = Duration::from_nanos(plan.total_ns());
    let live = LiveView::new(plan.quiet, cpus, Some(total));
    let mut last_draw = std::time::Instant::now();
    let mut stopped_at = None;
    loop {
        collector.drain(probes);
        let now = sys::monotonic_ns();
        // A stop first: the threads may have ended on it before this wakes up.
        if interrupts.stop.load(Ordering::Relaxed) {
            stopped_at = Some(now);
            break;
        }
        if probes.all_finished() || now >= planned_end_ns + END_SLACK.as_nanos() as u64 {
            break;
        }
        loads.tick(now);
        if let Some(view) = live.as_ref().filter(|_| last_draw.elapsed() >= Duration::from_millis(250)) {
            last_draw = std::time::Instant::now();
            let elapsed = Duration::from_nanos(now.saturating_sub(probes.start_ns));
            let figures: Vec<_> = (0..cpus.len()).map(|i| collector.live(i)).collect();
            view.update(elapsed, Some(total), elapsed.as_nanos() < u128::from(plan.warmup_periods() * interval), cpus, &figures);
        }
        // The rings hold seconds of facts: draining ten times a second keeps the collector's
        // own wake-ups (which disturb the measured CPUs too) rare. Near the planned end it
        // wakes sooner, so a run ends as soon as its last period is measured.
        let end = if now < planned_end_ns { planned_end_ns } else { planned_end_ns + END_SLACK.as_nanos() as u64 };
        let next = loads.next_event_ns().map_or(end, |e| e.min(end));
        std::thread::sleep(Duration::from_nanos(next.saturating_sub(now).clamp(1_000_000, 100_000_000)));
    }
    // Threads still measuring end at their next wake-up; loads end now, freeing their CPUs.
    interrupts.stop.store(true, Ordering::Relaxed);
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
    sys::unlock_all_memory();
    // A stopped run ends where the threads that were running stopped (at their first wake-up
    // after the signal); only if none was running, where the coordinator noticed the stop.
    let end_period = stopped_at.map_or(plan.total_periods(), |t| {
        let ran = (0..cpus.len())
            .filter(|&i| probes.finished(i))
            .map(|i| probes.counters[i].periods_done.load(Ordering::Relaxed))
            .max();
        ran.filter(|&p| p > 0).unwrap_or(t.saturating_sub(probes.start_ns) / interval).min(plan.total_periods())
    });
    for i in 0..cpus.len() {
        collector.close(i, &probes.counters[i], probes.finished(i), end_period);
    }
    end_period
}

/// Warnings about the measurement itself: threads held off their CPU, facts lost in the hand-off.
fn measurement_warnings(collector: &Collector, cpus: &[usize], interval_ns: u64) -> Vec<String> {
    let mut w = Vec::new();
    for (c, t) in cpus.iter().zip(&collector.cpus) {
        if t.unserved > 0 {
            w.push(format!(
                "the measurement thread of cpu{c} did not run for its last {} periods ({}): something of higher \
                 priority held the CPU; they count as missed",
                t.unserved,
                crate::scenario::units::Nanos(t.unserved.saturating_mul(interval_ns))
            ));
        }
    }
    let lost: u64 = collector.cpus.iter().map(|c| c.run.lost).sum();
    if lost > 0 {
        w.push(format!(
            "{lost} samples could not be handed to the collector in time (it was starved); they count in samples, \
             min and max but are missing from the histograms and percentiles"
        ));
    }
    w
}

/// Everything the result document is assembled from.
struct Assembly<'a> {
    plan: &'a RunPlan,
    cpus: Vec<usize>,
    collector: &'a mut Collector,
    load_specs: &'a [LoadSpec],
    load_source: &'static str,
    status: Status,
    interrupted_by: Option<String>,
    /// (started, ended, CLOCK_MONOTONIC start of period 0, last period within the measurement)
    times: (SystemTime, SystemTime, u64, u64),
    command_line: Vec<String>,
    system: SystemInfo,
    tuning: Vec<crate::tuning::TuningRecord>,
    loads: Vec<crate::load::manager::LoadRecord>,
    containment: Option<crate::load::contain::Containment>,
    warnings: Vec<String>,
}

fn assemble(a: Assembly) -> RunResult {
    let (plan, collector) = (a.plan, a.collector);
    let per_cpu: Vec<ProbeResult> = (0..a.cpus.len())
        .map(|i| {
            let (stats, hist) = collector.cpu_stats(i);
            ProbeResult::new(TIMER, Some(a.cpus[i]), &stats, &hist)
        })
        .collect();
    let (all_stats, all_hist) = collector.combined_stats();
    let combined = ProbeResult::new(TIMER, None, &all_stats, &all_hist);
    let phases = phases(plan, &a.cpus, collector, a.load_specs);
    let facts = verdict::RunFacts {
        status: a.status,
        failed_loads: a.loads.iter().filter(|l| l.failed).map(|l| l.spec.clone()).collect(),
    };
    let verdict = verdict::evaluate(&per_cpu, combined.max_ns, plan.cycle_time_ns, plan.budget, &plan.requirements, &facts);
    let (started_at, ended_at, start_ns, end_period) = a.times;
    RunResult {
        schema: SCHEMA.to_string(),
        status: a.status,
        interrupted_by: a.interrupted_by,
        started_at: rfc3339(started_at),
        ended_at: rfc3339(ended_at),
        monotonic_start_ns: start_ns,
        measured_ns: end_period.saturating_sub(plan.warmup_periods()) * plan.interval_ns,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        command_line: a.command_line,
        config: config(plan, &a.cpus, a.load_source, a.load_specs, verdict.budget_percent),
        system: a.system,
        tuning: a.tuning,
        loads: a.loads,
        containment: a.containment,
        phases,
        probes: per_cpu,
        combined: vec![combined],
        verdict,
        warnings: a.warnings,
    }
}

/// The probe this lifecycle runs today.
const TIMER: &str = "timer";

fn phases(plan: &RunPlan, cpus: &[usize], collector: &mut Collector, specs: &[LoadSpec]) -> Vec<crate::result::PhaseResult> {
    let bounds: Vec<u64> = std::iter::once(0).chain(phase_bounds(specs, plan.total_ns())).collect();
    (0..collector.phase_count())
        .map(|i| {
            let (start_ns, end_ns) = (bounds[i], bounds.get(i + 1).copied().unwrap_or(plan.total_ns()));
            let active = specs
                .iter()
                .filter(|s| s.start_ns.unwrap_or(0) <= start_ns && s.end_ns.is_none_or(|e| e >= end_ns))
                .map(|s| s.text.clone())
                .collect();
            let (per_cpu, (stats, hist)) = collector.take_phase(i);
            let probes = per_cpu.iter().zip(cpus).map(|((s, h), &cpu)| ProbeResult::new(TIMER, Some(cpu), s, h)).collect();
            crate::result::PhaseResult {
                start_ns,
                end_ns,
                loads: active,
                probes,
                combined: ProbeResult::new(TIMER, None, &stats, &hist),
            }
        })
        .collect()
}

fn config(plan: &RunPlan, cpus: &[usize], load_source: &str, specs: &[LoadSpec], budget_percent: f64) -> Config {
    Config {
        probes: vec![TIMER.into()],
        interval_ns: plan.interval_ns,
        policy: plan.policy,
        priority: plan.priority,
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
    }
}

/// The summary goes to stdout unless stdout carries the JSON document; then the document.
fn report(result: &RunResult, sink: Option<JsonSink>) -> Result<u8> {
    let text = summary::render(result);
    if sink.as_ref().is_some_and(JsonSink::is_stdout) {
        eprint!("{text}");
    } else {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
    if let Some(sink) = sink {
        sink.write(result)?;
    }
    Ok(if result.verdict.passed { EXIT_PASSED } else { EXIT_FAILED })
}

/// Runs `rtgauge load`: loads on their own, like stress or hackbench, then what they did.
/// Exit status 0, or 1 when a load failed.
pub fn load_only(args: &crate::cli::LoadArgs, command_line: Vec<String>) -> Result<u8> {
    let specs = crate::load::spec::parse_loads(&args.specs)
        .map_err(anyhow::Error::msg)?
        .ok_or_else(|| anyhow!("'rtgauge load none' runs nothing: name a load, e.g. rtgauge load hackbench"))?;
    let duration = args
        .duration
        .as_deref()
        .map(|d| crate::scenario::units::parse_duration_ns(d, None))
        .transpose()
        .map_err(|e| anyhow!("--duration {e}: give a time with a unit, e.g. --duration 30s"))?;
    let one_shot = |s: &LoadSpec| matches!(s.generator, Generator::Hackbench { .. } | Generator::Cmd { restart: false, .. });
    if duration.is_none() {
        if let Some(s) = specs.iter().find(|s| !one_shot(s)) {
            bail!("'{}' runs until stopped: give --duration, e.g. --duration 30s", s.text);
        }
    }
    let online = crate::audit::online_cpus();
    let cpus = args
        .cpus
        .as_deref()
        .map(crate::scenario::cpus::parse_cpu_list)
        .transpose()
        .map_err(|e| anyhow!("--cpus {e}: e.g. --cpus 0-1"))?;
    check_loads(&specs, duration, &online, cpus.as_deref())?;
    let n = cpus.as_ref().map_or(online.len(), Vec::len);
    let specs: Vec<LoadSpec> = specs.into_iter().map(|s| s.resolve(n)).collect();
    let sink = args.json.as_ref().map(|j| JsonSink::open(&crate::scenario::JsonTarget::parse(j))).transpose()?;
    let interrupts = Interrupts::install()?;

    let mut loads = LoadSet::new(&specs, cpus, duration.is_none())?;
    let mut warnings = Vec::new();
    let mut watchdog = interrupts.watchdog(&loads, &mut warnings)?;
    let origin = sys::monotonic_ns();
    loads.set_origin(origin);
    loads.start_initial(&interrupts.stop);
    let end = duration.map(|d| origin + d);
    if let (Some(w), Some(end)) = (&mut watchdog, end) {
        w.arm(end + END_SLACK.as_nanos() as u64);
    }
    loop {
        let now = sys::monotonic_ns();
        loads.tick(now);
        if interrupts.stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) || loads.all_done() {
            break;
        }
        let next = [loads.next_event_ns(), end].into_iter().flatten().min().unwrap_or(now + 50_000_000);
        std::thread::sleep(Duration::from_nanos(next.saturating_sub(now).clamp(1_000_000, 50_000_000)));
    }
    let records = loads.records();
    finish_watchdog(watchdog, &mut warnings);
    for w in &warnings {
        eprintln!("rtgauge: warning: {w}");
    }

    let mut text = String::new();
    for (s, r) in specs.iter().zip(&records) {
        if let Generator::Hackbench { groups, fds, size, loops, pipe, threads } = s.generator {
            let h = crate::load::gen::hackbench::Hackbench { groups, fds, size, loops, pipe, threads };
            text += &format!("{}\n", h.banner());
            for t in &r.round_times_s {
                text += &format!("Time: {t:.3}\n");
            }
        }
    }
    text += &crate::report::summary::render_loads(&records);
    if sink.as_ref().is_some_and(JsonSink::is_stdout) {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if let Some(sink) = sink {
        sink.write(&serde_json::json!({
            "schema": "rtgauge.load.v1",
            "tool_version": env!("CARGO_PKG_VERSION"),
            "command_line": command_line,
            "duration_ns": duration,
            "interrupted_by": interrupts.which(),
            "loads": records,
            "containment": loads.containment(),
        }))?;
    }
    Ok(if records.iter().any(|r| r.failed) { EXIT_FAILED } else { EXIT_PASSED })
}
