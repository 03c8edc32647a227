//! The one lifecycle every measurement goes through, in the order of DESIGN.md:
//! plan → audit → (tuning) → (loads) → probes → aggregation → result → report → exit status.
//! Each stage is a call into its own module; nothing here measures or formats by itself.

use crate::aggregate::Collector;
use crate::audit::SystemInfo;
use crate::probe::{self, timer::TimerLoop, SetupError, ThreadSched};
use crate::report::{json::JsonSink, live::LiveView, summary};
use crate::result::{Config, ProbeResult, RunResult, Status, WarmupConfig, SCHEMA};
use crate::scenario::cpus::format_cpu_list;
use crate::load::manager::{find_program, LoadSet};
use crate::load::spec::{Generator, LoadSpec};
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
        Ok(Interrupts { stop, signal })
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

/// Checks the plan against the audited machine and returns the CPUs to measure.
fn resolve_cpus(plan: &RunPlan, system: &SystemInfo) -> Result<Vec<usize>> {
    match &plan.cpus {
        None if system.allowed_cpus.is_empty() => bail!("this process may run on no online CPU; check its affinity (taskset -p $$)"),
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

/// Runs `rtgauge run`: measures, reports, and returns the exit status.
pub fn run(plan: RunPlan, command_line: Vec<String>) -> Result<u8> {
    let mut system = SystemInfo::probe();
    let cpus = resolve_cpus(&plan, &system)?;
    let (load_specs, load_source) = resolve_loads(&plan, &system)?;
    let sink = plan.json.as_ref().map(JsonSink::open).transpose()?;
    let interrupts = Interrupts::install()?;

    let mut warnings = Vec::new();
    if plan.mlock {
        let locked = match system.memory_lock_hazard() {
            Some(why) => Err(why),
            None => sys::lock_all_memory().map_err(|e| {
                format!("{e}; run as root or raise RLIMIT_MEMLOCK ('ulimit -l unlimited')")
            }),
        };
        match locked {
            Ok(()) => system.mlockall_obtained = true,
            Err(e) => {
                system.mlockall_error = Some(e.clone());
                let w = format!("memory not locked (page faults may add latency): {e}");
                warnings.push(w);
            }
        }
    } else {
        warnings.push("memory not locked (--no-mlock): page faults may add latency".into());
    }
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

    // Loads start before the probes, so the measurement starts under load (the warm-up absorbs
    // their ramp-up); phased loads wait for their offset.
    let mut loads = LoadSet::new(&load_specs, plan.load_cpus.clone(), false)?;
    if load_source == "default" && !plan.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!(
            "rtgauge: measuring under the default worst-case load ({}); --load none measures an idle system",
            load_specs.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    loads.start_initial();

    let sched = ThreadSched { policy: plan.policy, priority: plan.priority };
    let cfg = TimerLoop {
        interval_ns: plan.interval_ns,
        warmup_periods: plan.warmup_periods(),
        measure_periods: plan.measure_periods(),
    };
    let started_at = SystemTime::now();
    let mut probes = probe::start_timer(&cpus, sched, cfg, interrupts.stop.clone()).map_err(|reports| {
        let failed = reports.iter().find(|r| r.error.is_some()).expect("a failed report");
        match failed.error.as_ref().expect("an error") {
            SetupError::Scheduler(errno) => anyhow!(system.explain_rt_refusal(
                plan.policy.kernel_name(),
                plan.priority,
                &std::io::Error::from_raw_os_error(*errno)
            )),
            SetupError::Affinity(msg) => anyhow!("cannot pin a thread to CPU {}: {msg}; check --cpus and the cpuset of this process", failed.cpu),
            SetupError::Other(msg) => anyhow!("cannot prepare the measurement thread for CPU {}: {msg}", failed.cpu),
        }
    })?;
    system.rt_priority_obtained = plan.policy.is_realtime()
        && probes.reports.iter().all(|r| r.policy == Some(plan.policy) && r.priority == plan.priority);

    // Collect until every thread is done (or stopped), drawing the live view.
    let total_periods = cfg.warmup_periods + cfg.measure_periods;
    let total = Duration::from_nanos(total_periods.saturating_mul(plan.interval_ns));
    // The timeline changes wherever a load starts or stops within the run.
    let total_ns = plan.total_ns();
    let mut phase_starts: Vec<u64> = load_specs
        .iter()
        .flat_map(|s| [s.start_ns, s.end_ns])
        .flatten()
        .filter(|&t| t > 0 && t < total_ns)
        .collect();
    phase_starts.sort_unstable();
    phase_starts.dedup();
    let mut collector = Collector::new(&cpus, plan.interval_ns, &phase_starts, cfg.warmup_periods);
    let live = LiveView::new(plan.quiet, &cpus, Some(total));
    let mut last_draw = std::time::Instant::now();
    let planned_end_ns = probes.start_ns + total_periods.saturating_mul(plan.interval_ns);
    loads.set_origin(probes.start_ns);
    loop {
        collector.drain(&mut probes);
        if probes.all_finished() {
            break;
        }
        loads.tick(sys::monotonic_ns());
        if let Some(view) = &live {
            if last_draw.elapsed() >= Duration::from_millis(250) {
                last_draw = std::time::Instant::now();
                let elapsed = Duration::from_nanos(sys::monotonic_ns().saturating_sub(probes.start_ns));
                let stats: Vec<_> =
                    (0..cpus.len()).map(|i| collector.cpu_stats(i, &probes.counters[i])).collect();
                let warming = elapsed.as_nanos() < (cfg.warmup_periods * plan.interval_ns) as u128;
                view.update(elapsed, Some(total), warming, &cpus, &stats);
            }
        }
        // The rings hold ~10 s of samples: draining ten times a second keeps the collector's
        // own wake-ups (which disturb the measured CPUs too) rare. Near the planned end it
        // wakes sooner, so a run ends as soon as its last period is measured.
        let next = loads.next_event_ns().map_or(planned_end_ns, |e| e.min(planned_end_ns));
        let until_end = next.saturating_sub(sys::monotonic_ns());
        std::thread::sleep(Duration::from_nanos(until_end.clamp(1_000_000, 100_000_000)));
    }
    probes.join();
    collector.drain(&mut probes);
    let tuning: Vec<_> = dma_guard.map(|g| g.record.clone()).into_iter().collect(); // request released here
    let load_records = loads.finish();
    for l in load_records.iter().filter(|l| l.failed) {
        warnings.push(format!(
            "load '{}' failed: {}",
            l.spec,
            l.error.as_deref().unwrap_or("see the loads section of the result")
        ));
    }
    if let Some(view) = live {
        view.finish();
    }
    let ended_at = SystemTime::now();

    // Result.
    let interrupted_by = interrupts.which();
    let complete = probes.counters.iter().all(|c| c.periods_done.load(Ordering::Relaxed) >= total_periods);
    let status = if complete && interrupted_by.is_none() { Status::Complete } else { Status::Partial };
    let per_cpu: Vec<ProbeResult> = (0..cpus.len())
        .map(|i| {
            ProbeResult::new("timer", Some(cpus[i]), &collector.cpu_stats(i, &probes.counters[i]), &collector.per_cpu[i].hist)
        })
        .collect();
    let (all_stats, all_hist) = collector.combined_stats(&probes.counters);
    let combined = ProbeResult::new("timer", None, &all_stats, &all_hist);
    let overflows: u64 = per_cpu.iter().map(|p| p.handoff_overflows).sum();
    if overflows > 0 {
        warnings.push(format!(
            "{overflows} samples could not be handed to the collector in time (it was starved); they count in samples, \
             min and max but are missing from the histograms and percentiles"
        ));
    }
    let phases = collector.phases.as_ref().map_or_else(Vec::new, |ph| {
        (0..ph.bounds.len())
            .map(|i| {
                let (start_ns, end_ns) = (ph.bounds[i], ph.bounds.get(i + 1).copied().unwrap_or(total_ns));
                let active = load_specs
                    .iter()
                    .filter(|s| s.start_ns.unwrap_or(0) <= start_ns && s.end_ns.is_none_or(|e| e >= end_ns))
                    .map(|s| s.text.clone())
                    .collect();
                let probes: Vec<ProbeResult> = (0..cpus.len())
                    .map(|c| ProbeResult::new("timer", Some(cpus[c]), &ph.per_cpu[c][i].stats(), &ph.per_cpu[c][i].hist))
                    .collect();
                let (stats, hist) = ph.combined(i);
                crate::result::PhaseResult {
                    start_ns,
                    end_ns,
                    loads: active,
                    probes,
                    combined: ProbeResult::new("timer", None, &stats, &hist),
                }
            })
            .collect()
    });
    let verdict = verdict::evaluate(&per_cpu, combined.max_ns, plan.cycle_time_ns, plan.budget, &plan.requirements, status);
    let result = RunResult {
        schema: SCHEMA.to_string(),
        status,
        interrupted_by,
        started_at: rfc3339(started_at),
        ended_at: rfc3339(ended_at),
        monotonic_start_ns: probes.start_ns,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        command_line,
        config: Config {
            probes: vec!["timer".into()],
            interval_ns: plan.interval_ns,
            policy: plan.policy,
            priority: plan.priority,
            cpus: cpus.clone(),
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
                periods: cfg.warmup_periods,
            },
            mlockall: plan.mlock,
            cycle_time_ns: plan.cycle_time_ns,
            budget_percent: verdict.budget_percent,
            requirements: plan.requirements.iter().map(|r| r.to_string()).collect(),
            cpu_dma_latency_us: plan.cpu_dma_latency_us,
            scenario: plan.scenario.as_ref().map(|(name, source)| crate::result::ScenarioRef { name: name.clone(), source: source.clone() }),
            load_source: load_source.to_string(),
            loads: load_specs.iter().map(|s| s.text.clone()).collect(),
            load_cpus: plan.load_cpus.clone(),
        },
        system,
        tuning,
        loads: load_records,
        phases,
        probes: per_cpu,
        combined: vec![combined],
        verdict,
        warnings,
    };

    // Report: the summary goes to stdout unless stdout carries the JSON document.
    let text = summary::render(&result);
    let to_stdout_json = sink.as_ref().is_some_and(JsonSink::is_stdout);
    if to_stdout_json {
        eprint!("{text}");
    } else {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
    if let Some(sink) = sink {
        sink.write(&result)?;
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
    let sink = args
        .json
        .as_ref()
        .map(|j| JsonSink::open(&crate::scenario::JsonTarget::parse(j)))
        .transpose()?;
    let interrupts = Interrupts::install()?;

    let mut loads = LoadSet::new(&specs, cpus, duration.is_none())?;
    let origin = sys::monotonic_ns();
    loads.set_origin(origin);
    loads.start_initial();
    let end = duration.map(|d| origin + d);
    loop {
        let now = sys::monotonic_ns();
        loads.tick(now);
        if interrupts.stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) || loads.all_done() {
            break;
        }
        let next = [loads.next_event_ns(), end].into_iter().flatten().min().unwrap_or(now + 50_000_000);
        std::thread::sleep(Duration::from_nanos(next.saturating_sub(now).clamp(1_000_000, 50_000_000)));
    }
    let records = loads.finish();

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
        sink.write_value(&serde_json::json!({
            "schema": "rtgauge.load.v1",
            "tool_version": env!("CARGO_PKG_VERSION"),
            "command_line": command_line,
            "duration_ns": duration,
            "interrupted_by": interrupts.which(),
            "loads": records,
        }))?;
    }
    Ok(if records.iter().any(|r| r.failed) { EXIT_FAILED } else { EXIT_PASSED })
}
