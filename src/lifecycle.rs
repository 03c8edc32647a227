//! The one lifecycle every measurement goes through, in the order of DESIGN.md: plan → audit →
//! tuning → probes set up → loads → measure → assemble (with the verdict) → report → exit
//! status. Each stage is a short function here calling into its own module; nothing here
//! measures or formats by itself, and no probe is named here (they plug in through
//! `probe::Probe`). `rtgauge load` goes through the same stages with no probe.

use crate::aggregate::{Collector, SeriesPlan};
use crate::audit::SystemInfo;
use crate::load::manager::{find_program, LoadSet};
use crate::load::spec::{Generator, LoadSpec};
use crate::load::watchdog::Watchdog;
use crate::probe::registry::{self, RunTiming};
use crate::probe::{self, ProbePlan, RunningProbes, SeriesKey, SetupError, ThreadSched};
use crate::report::{json::JsonSink, live::LiveView, summary};
use crate::result::sweep::{SweepResult, SweepStep};
use crate::result::{Config, ProbeConfig, ProbeResult, RunResult, Status, WarmupConfig, SCHEMA};
use crate::scenario::{LoadChoice, RunLength, RunPlan, Warmup};
use crate::store::{self, Store};
use crate::sys;
use crate::verdict;
use crate::vocab::cpus::format_cpu_list;
use crate::vocab::units::Nanos;
use anyhow::{anyhow, bail, Result};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Exit status of a finished run: 0 passed or no criteria, 1 a criterion failed.
pub const EXIT_PASSED: u8 = 0;
pub const EXIT_FAILED: u8 = 1;

/// Signal handling: the first signal that would end the process (SIGINT, SIGTERM, SIGHUP from a
/// closed terminal or a dropped ssh connection, SIGUSR1, ... every one of
/// `sys::ending_signals`) asks the run to stop and keep its data, as SIGTERM does. A second
/// SIGINT, SIGTERM or SIGQUIT (a user who means it) exits at once; other signals may come twice
/// without anyone asking twice (a hung-up terminal's SIGHUP, then the shell's own to its jobs)
/// and only stop the run.
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
        use signal_hook::consts::{SIGINT, SIGQUIT, SIGTERM};
        let stop = Arc::new(AtomicBool::new(false));
        let signal = Arc::new(AtomicUsize::new(0));
        let signals = sys::ending_signals();
        for &sig in &signals {
            // Registered first, so it sees the flag as it was before this signal: set means second.
            if [SIGINT, SIGTERM, SIGQUIT].contains(&sig) {
                signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())?;
            }
            signal_hook::flag::register_usize(sig, signal.clone(), sig as usize)?;
            signal_hook::flag::register(sig, stop.clone())?;
        }
        let (wake, notify) = std::os::unix::net::UnixStream::pair()?;
        for &sig in &signals {
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
            n => Some(sys::signal_name(n)),
        }
    }
}

/// The least stack limit (`ulimit -s`) rtgauge runs under: its main thread (the coordinator,
/// the report, the store's SQLite) runs in the process's stack, which cannot grow past the
/// limit; below it a command would end in a stack overflow, saying nothing. (Found by running
/// the commands that do not measure under smaller and smaller limits, with room to spare for
/// those that do.)
pub const MIN_STACK_KIB: u64 = 1024;

/// What every command needs of the process before it starts: a stack limit it can run under
/// (else a one-line error), and writes past the file size limit (`ulimit -f`) or to a closed
/// pipe that fail (EFBIG, EPIPE) instead of killing the process, so their error is said and a
/// result kept elsewhere.
pub fn prepare_process() -> std::result::Result<(), String> {
    if let Ok(Some(limit)) = sys::stack_limit() {
        if limit < MIN_STACK_KIB * 1024 {
            return Err(format!(
                "the stack limit (ulimit -s) is {} KiB; rtgauge needs at least {MIN_STACK_KIB} KiB: raise it with \
                 'ulimit -s 8192'",
                limit / 1024
            ));
        }
    }
    sys::survive_write_limits().map_err(|e| format!("cannot set up the handling of SIGXFSZ: {e}"))
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
            check_cpus("--cpus", cpus, system)?;
            Ok(cpus.clone())
        }
    }
}

/// Checks that `option`'s CPUs are online and within this process's affinity.
fn check_cpus(option: &str, cpus: &[usize], system: &SystemInfo) -> Result<()> {
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

/// The plan resolved against the audited machine: the probes with their CPUs, the loads.
struct Resolved {
    probes: Vec<ProbePlan>,
    /// Every CPU any probe measures, ascending.
    cpus: Vec<usize>,
    /// How long the probes run, warm-up included: the longest probe's periods (the plan's time,
    /// unless a probe's own warm-up is longer).
    total_ns: u64,
    load_specs: Vec<LoadSpec>,
    load_source: &'static str,
    /// The timeline's window.
    window_ns: u64,
}

/// Runs `rtgauge run`: the stages in order (plan → audit → tuning → probes set up → loads →
/// measure → assemble → verdict → report); returns the exit status.
pub fn run(plan: RunPlan, command_line: Vec<String>, keep: store::Request) -> Result<u8> {
    // Signals first: Ctrl-C and SIGTERM stop the run at any moment from here on. SIGALRM is the
    // interval timer's (timer:wait=itimer), for its thread alone: every thread started from here
    // blocks it.
    sys::block_alarm()?;
    let interrupts = Interrupts::install()?;
    let mut system = SystemInfo::probe();
    let resolved = resolve(&plan, &system)?;
    // Between stages the run lets go of the code the last one ran (parsing and planning here,
    // then the audit, the set-up, measuring, the report): each stage's code is resident only
    // while it runs, so the peak of resident memory is one stage's, not all of them together.
    sys::release_code_pages();
    // The audit, before anything is tuned: what the system is as found.
    let findings = crate::audit::checks::audit(
        &system,
        &crate::audit::checks::Scope { cpus: resolved.cpus.clone(), priority: plan.priority },
    );
    let sink = plan.json.as_ref().map(JsonSink::open).transpose()?;
    let mut warnings = load_priority_warnings(&plan, &resolved.probes, &resolved.load_specs, &system);
    warnings.extend(busy_loop_warnings(&resolved.probes));
    let mut warnings = once(warnings);
    for w in &warnings {
        crate::report::out::err_line(&format!("rtgauge: warning: {w}"));
    }
    // Said on the screen the summary goes to as well (both a terminal): not said again there.
    use std::io::IsTerminal;
    let said_before: Vec<String> =
        if std::io::stdout().is_terminal() && std::io::stderr().is_terminal() { warnings.clone() } else { Vec::new() };
    sys::release_code_pages();
    // The store is checked before anything runs (every page of it, room for the result), and
    // written once the threads have stopped (a default store out of reach is a warning in the
    // result); so is the room for the JSON document.
    let result_bytes = result_size_estimate(&resolved);
    if let Some(crate::scenario::JsonTarget::File(path)) = &plan.json {
        // (A device or FIFO has no size to limit.)
        if std::fs::metadata(path).map_or(true, |m| m.is_file()) {
            check_file_size_limit("--json", path, result_bytes)?;
        }
    }
    let store = keep.open(result_bytes, &mut warnings).map_err(anyhow::Error::msg)?;
    let mut held = apply_tuning(&plan, &mut system, &resolved.cpus, &command_line, &mut warnings)?;
    let mut trace = start_trace(&plan, &mut held, &resolved.cpus, &mut warnings);
    // The measurement threads are ready (pinned, at their priority) before any load starts.
    let triggers = trace.as_ref().map(crate::trace::Session::triggers).unwrap_or_default();
    let prepared = prepare_probes(&plan, &resolved.probes, &interrupts, &system, &triggers)?;
    held.tuning.probes_ready();
    system.rt_priority_obtained = plan.policy.is_realtime()
        && !prepared.reports().is_empty()
        && prepared.reports().iter().all(|r| r.error.is_none() && r.policy == Some(plan.policy) && r.priority == r.wanted);
    // (SCHED_DEADLINE threads read back priority 0, as wanted.)
    announce_default_load(&plan, &resolved);
    let (mut loads, mut watchdog) = start_loads(
        &resolved.load_specs,
        plan.load_cpus.clone(),
        false,
        held.tuning.load_cgroup_parent(),
        &interrupts,
        &mut warnings,
    )?;

    let started_at = SystemTime::now();
    let mut probes = prepared.go(sys::monotonic_ns() + START_MARGIN_NS);
    loads.set_origin(probes.start_ns);
    if let Some(w) = &mut watchdog {
        w.arm(probes.start_ns + resolved.total_ns + END_SLACK.as_nanos() as u64);
    }
    let bounds = phase_bounds(&resolved);
    let series: Vec<_> = probes
        .keys
        .iter()
        .map(|&key| {
            let p = &resolved.probes[key.probe].probe;
            SeriesPlan { key, schedule: p.schedule(), bounds: p.bounds(key.series), events: p.events() }
        })
        .collect();
    let mut collector = Collector::new(&series, &bounds).with_timeline(resolved.window_ns);
    let end_ns = measure(&plan, &resolved, &mut probes, &mut collector, &mut loads, &interrupts, &mut trace);
    let trace = trace.map(|t| t.finish(|i| series_names(&resolved, &probes, i), probes.start_ns));
    finish_watchdog(watchdog, &mut warnings);
    // Everything tuned is put back here (the PM QoS request released), before the end-of-run work.
    let (tuning, restored) = held.tuning.finish();
    warnings.extend(restored.failed.iter().map(|f| format!("could not restore a setting: {f}")));
    let load_records = loads.records();
    let ended_at = SystemTime::now();

    let interrupted_by = interrupts.which();
    let complete = interrupted_by.is_none() && end_ns == resolved.total_ns;
    let status = if complete { Status::Complete } else { Status::Partial };
    warnings.extend(measurement_warnings(&collector, &resolved.probes, system.mlockall_obtained));
    warnings.extend(load_failure_warnings(&load_records));
    let measured_ns = measured_ns(&probes, &collector, end_ns);
    let mut result = assemble(Assembly {
        plan: &plan,
        resolved: &resolved,
        collector: &mut collector,
        status,
        interrupted_by,
        times: (started_at, ended_at, probes.start_ns, end_ns),
        measured_ns,
        command_line,
        system,
        findings,
        tuning,
        trace,
        loads: load_records,
        containment: loads.containment(),
        warnings: once(warnings),
    });
    let json_on_stdout = sink.as_ref().is_some_and(JsonSink::is_stdout);
    // The result is kept even when the JSON document could not be written (and the other way
    // round): each failure is said, none loses the other.
    let reported = report(&result, sink, store.is_some(), &said_before);
    sys::release_code_pages();
    match keep_result(&mut result, store, &keep) {
        // Where the summary went.
        // Also under --quiet: the run's id is what a script needs to show, export or compare it.
        Kept::Stored(line) => {
            let _ = say(json_on_stdout, &format!("{line}\n"));
        }
        Kept::Nowhere => {}
        // A store asked for by name that did not get the run: the run did not do what was asked.
        Kept::Rescued(why) if keep.explicit => {
            if let Err(e) = &reported {
                let _ = say(true, &format!("rtgauge: error: {}\n", format!("{e:#}").replace('\n', " ")));
            }
            return Err(anyhow!("{why}"));
        }
        Kept::Rescued(why) => {
            let _ = say(true, &format!("rtgauge: warning: {why}\n"));
        }
    }
    reported
}

/// Writes `text` to standard error (`to_stderr`) or output, a failure ignored: the terminal a
/// run was started from may be gone by its end (SIGHUP: a closed terminal, a dropped ssh
/// connection), and what follows (keeping the result) must still happen.
fn say(to_stderr: bool, text: &str) -> std::io::Result<()> {
    if to_stderr {
        let mut err = std::io::stderr().lock();
        err.write_all(text.as_bytes()).and_then(|()| err.flush())
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    }
}

/// Where a run's result was kept.
enum Kept {
    /// In the store: the line that says so.
    Stored(String),
    /// Nowhere, as asked (`--no-store`) or as warned before measuring.
    Nowhere,
    /// The store failed at the end: why, and the rescue file the result went to instead.
    Rescued(String),
}

/// Keeps the result in the store, if there is one. A store that cannot be written at the end
/// (locked, full, its temporary directory full, damaged) does not lose the run: it is written
/// to a rescue file (`store::rescue`), which the message names with the command that stores
/// it later.
fn keep_result(result: &mut RunResult, store: Option<Store>, keep: &store::Request) -> Kept {
    let Some(store) = store else {
        if let Some(why) = &keep.why_not {
            let _ = say(true, &format!("rtgauge: warning: {why}\n"));
        }
        return Kept::Nowhere;
    };
    let e = match store.save(result, keep.label.as_deref(), None) {
        Ok(id) => return Kept::Stored(format!("Stored as run {id} in {} ('rtgauge show {id}').", store.path().display())),
        Err(e) => e,
    };
    let db = store.path().to_path_buf();
    drop(store);
    Kept::Rescued(match store::rescue(result, Some(&db)) {
        Ok(file) => {
            let label = keep.label.as_deref().map_or(String::new(), |l| format!(" --label '{l}'"));
            format!(
                "the run was measured but not stored: {e}; it was saved to '{}' instead: \
                 'rtgauge import {} --db {}{label}' stores it",
                file.display(),
                file.display(),
                db.display()
            )
        }
        Err(e2) => format!("the run was measured but not stored: {e}; {e2}"),
    })
}

/// A generous estimate of the result document's size (JSON, as `--json` writes it), checked
/// against the room to keep it before measuring: the system and audit sections, each series'
/// figures per thread and combined, whole and in every phase, each thread's timeline.
fn result_size_estimate(resolved: &Resolved) -> u64 {
    let threads: u64 = resolved.probes.iter().map(|p| (probe::series_count(&*p.probe) * p.cpus.len()) as u64).sum();
    let series = resolved.series().count() as u64;
    let phases = phase_bounds(resolved).len() as u64 + 1;
    let windows = resolved.total_ns.div_ceil(resolved.window_ns.max(1));
    let figures = (threads + series).saturating_mul(phases + 1).saturating_mul(8 << 10);
    let timelines = threads.saturating_mul(windows).saturating_mul(128);
    (256u64 << 10).saturating_add(figures).saturating_add(timelines)
}

/// Refuses, before measuring, a file size limit (`ulimit -f`) below what `option`'s file may
/// take: writing past it would fail at the end (EFBIG).
fn check_file_size_limit(option: &str, path: &std::path::Path, bytes: u64) -> Result<()> {
    if let Ok(Some(limit)) = sys::file_size_limit() {
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

impl Resolved {
    /// Every series of every probe, in order (the CPU left 0).
    fn series(&self) -> impl Iterator<Item = SeriesKey> + '_ {
        self.probes
            .iter()
            .enumerate()
            .flat_map(|(probe, p)| (0..probe::series_count(&*p.probe)).map(move |series| SeriesKey { probe, cpu: 0, series }))
    }
    /// The probe's name and the series' (for a probe with several).
    fn names(&self, k: SeriesKey) -> (&'static str, Option<&'static str>) {
        let p = &*self.probes[k.probe].probe;
        (p.name(), probe::series_name(p, k.series))
    }
    fn label(&self, k: SeriesKey) -> String {
        series_label(&self.probes, k)
    }
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
        let mut r = ProbeResult::new(self.names(k), cpu, &stats, &hist);
        r.measures = plan.probe.measures(k.series).map(str::to_string);
        let Some(threshold) = plan.probe.noise_threshold() else { return r };
        let s = plan.probe.schedule();
        let measured = span.1.saturating_sub(span.0.max(s.warmup_periods * s.interval_ns));
        let cpus = if cpu.is_some() { 1 } else { plan.cpus.len() as u64 };
        r.with_noise(threshold, stats.sum_ns, measured * cpus)
    }
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

/// Refuses, before anything runs, a requirement that would judge no series of the run's probes:
/// a probe it does not measure, a series the probe's shape does not report (a ping-pong has no
/// `task`), `below`/`above` without a period loop, `rate` without a sweep.
fn check_requirements(requirements: &[crate::scenario::require::Requirement], probes: &[ProbePlan]) -> Result<()> {
    use crate::probe::{series_count, series_name};
    let targets: Vec<verdict::Target> = probes
        .iter()
        .flat_map(|p| {
            let probe = &*p.probe;
            let swept = !probe.steps().is_empty();
            (0..series_count(probe)).map(move |s| verdict::Target {
                probe: probe.name(),
                series: series_name(probe, s),
                bounded: probe.bounds(s).is_some(),
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

/// The timeline's window: as given, or 1 s (wider for runs over a day). A given window must hold
/// a period of every probe and cut the run into at most `MAX_WINDOWS`.
fn timeline_window(given: Option<u64>, probes: &[ProbePlan], total_ns: u64) -> Result<u64> {
    use crate::aggregate::timeline::{default_window_ns, MAX_WINDOWS};
    let Some(ns) = given else {
        return Ok(default_window_ns(total_ns));
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

/// What the run holds changed while it lasts: the tuning (restored when dropped or finished)
/// and the guardian that restores it if rtgauge dies first.
struct Held {
    tuning: crate::tuning::Tuning,
    _guardian: Option<crate::load::guardian::Guardian>,
}

/// Settings held for the run: memory locked, the CPU latency request, what `--tune` changes
/// (its journal watched by a guardian from before the first change). What could not be applied
/// becomes a warning; another rtgauge tuning the system now is an error.
fn apply_tuning(
    plan: &RunPlan,
    system: &mut SystemInfo,
    cpus: &[usize],
    command_line: &[String],
    warnings: &mut Vec<String>,
) -> Result<Held> {
    warnings.extend(lock_memory(plan, system));
    if !plan.policy.is_realtime() {
        warnings.push("measured at SCHED_OTHER on purpose (--policy other): not a real-time measurement".into());
    }
    if plan.policy == crate::vocab::policy::Policy::Deadline {
        warnings.push(
            "SCHED_DEADLINE threads cannot be pinned (admission control needs their affinity to span every CPU of \
             their root domain): each 'cpu N' is a thread the kernel placed on any CPU"
                .into(),
        );
    }
    let scope = crate::tuning::Scope { measured: cpus.to_vec(), online: system.online_cpus.clone() };
    let mut guardian = None;
    let watch = |path: &std::path::Path| {
        let exe = crate::load::manager::self_exe().ok()?;
        let mut g = crate::load::guardian::Guardian::start(&exe).ok()?;
        g.watch_journal(path);
        Some(g)
    };
    let tuning =
        crate::tuning::Tuning::apply(&plan.tune, plan.cpu_dma_latency_us, &scope, command_line, plan.trace.is_some(), |path| {
            guardian = watch(path)
        })
        .map_err(anyhow::Error::msg)?;
    if let Some(r) = tuning.dma_record().filter(|r| !r.applied) {
        warnings.push(format!(
            "could not hold /dev/cpu_dma_latency at {} ({}): deep CPU idle states may add exit latency; run as root",
            r.value,
            r.error.as_deref().unwrap_or("?")
        ));
    }
    warnings.extend(tuning.warnings());
    Ok(Held { tuning, _guardian: guardian })
}

/// `--trace`: a trace instance per measured CPU, recorded in the journal; without the privilege
/// or the kernel support, a warning and no trace.
fn start_trace(plan: &RunPlan, held: &mut Held, cpus: &[usize], warnings: &mut Vec<String>) -> Option<crate::trace::Session> {
    let threshold = plan.trace?;
    let Some(journal) = held.tuning.journal_mut() else {
        let why = held.tuning.journal_error().unwrap_or("no journal of original values could be kept").to_string();
        warnings.push(format!("no trace: {why}"));
        return None;
    };
    let session = crate::trace::Session::start(journal, cpus, (threshold > 0).then_some(threshold));
    if let Some(why) = session.failed() {
        warnings.push(format!("no trace: {why}"));
    }
    Some(session)
}

/// The probe and series of the `i`-th series of the run (trace captures name them so).
fn series_names(resolved: &Resolved, probes: &RunningProbes, i: u64) -> (String, Option<String>) {
    match probes.keys.get(i as usize) {
        Some(&k) => {
            let (p, s) = resolved.names(k);
            (p.to_string(), s.map(str::to_string))
        }
        None => ("?".to_string(), None),
    }
}

/// Says, on a terminal, that the default load mix is in use.
fn announce_default_load(plan: &RunPlan, resolved: &Resolved) {
    if resolved.load_source == "default" && !plan.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        crate::report::out::err_line(&format!(
            "rtgauge: measuring under the default worst-case load ({}); --load none measures an idle system",
            resolved.load_specs.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
}

/// Each warning once, in the order first given: the same finding reached twice (a load given
/// twice, one failing in two phases, a setting refused for each of several reasons alike) is
/// said, and kept in the result, once.
fn once(warnings: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    warnings.into_iter().filter(|w| seen.insert(w.clone())).collect()
}

fn load_failure_warnings(records: &[crate::load::manager::LoadRecord]) -> Vec<String> {
    records
        .iter()
        .filter(|l| l.failed)
        .map(|l| format!("load '{}' failed: {}", l.spec, l.error.as_deref().unwrap_or("see the loads section of the result")))
        .collect()
}

/// Warnings known before the run starts: a load at or above the priority of a measurement
/// thread on a measured CPU it may run on holds that thread off the CPU (each probe's threads at
/// their own priority: the wake-up probe's `priority=`, else the run's).
fn load_priority_warnings(plan: &RunPlan, probes: &[ProbePlan], specs: &[LoadSpec], system: &SystemInfo) -> Vec<String> {
    use crate::load::spec::LoadPolicy;
    // A SCHED_DEADLINE thread runs ahead of every FIFO/RR load.
    if !plan.policy.has_priority() {
        return Vec::new();
    }
    let load_cpus = plan.load_cpus.clone().unwrap_or_else(|| system.allowed_cpus.clone());
    // The lowest priority of a measurement thread on each measured CPU the loads may run on.
    let mut lowest = std::collections::BTreeMap::<usize, i32>::new();
    for p in probes {
        let priority = p.probe.lowest_priority().unwrap_or(plan.priority);
        for &c in p.cpus.iter().filter(|c| load_cpus.contains(c)) {
            let l = lowest.entry(c).or_insert(priority);
            *l = (*l).min(priority);
        }
    }
    specs
        .iter()
        .filter_map(|s| {
            let (Some(LoadPolicy::Fifo(p)) | Some(LoadPolicy::Rr(p))) = s.policy else { return None };
            let held: Vec<(usize, i32)> = lowest.iter().filter(|(_, &l)| p >= l).map(|(&c, &l)| (c, l)).collect();
            let below = held.iter().map(|&(_, l)| l).min()?;
            let cpus: Vec<usize> = held.iter().map(|&(c, _)| c).collect();
            Some(format!(
                "load '{}' runs at RT priority {p}, at or above the measurement's {} {below}, on measured CPUs {}: \
                 while it runs it holds the measurement off those CPUs (their periods count as missed); \
                 lower its priority or move it with --load-cpus",
                s.text,
                plan.policy.kernel_name(),
                format_cpu_list(&cpus)
            ))
        })
        .collect()
}

/// A busy loop (the noise probe) holds its CPU from every thread at its
/// priority or below: another probe on that CPU is starved.
fn busy_loop_warnings(probes: &[ProbePlan]) -> Vec<String> {
    let mut w = Vec::new();
    for busy in probes.iter().filter(|p| p.probe.busy_loop()) {
        for other in probes.iter().filter(|o| !std::ptr::addr_eq(Arc::as_ptr(&o.probe), Arc::as_ptr(&busy.probe))) {
            let shared: Vec<usize> = busy.cpus.iter().copied().filter(|c| other.cpus.contains(c)).collect();
            if !shared.is_empty() {
                w.push(format!(
                    "{} and {} share CPUs {}: the {} busy loop holds the CPU from the {} threads at its priority or \
                     below; give each its own CPUs (--measure {}@CPUS)",
                    busy.probe.name(),
                    other.probe.name(),
                    format_cpu_list(&shared),
                    busy.probe.name(),
                    other.probe.name(),
                    busy.probe.name()
                ));
            }
        }
    }
    w
}

/// Locks memory where that is safe; returns the warning when it is not locked.
fn lock_memory(plan: &RunPlan, system: &mut SystemInfo) -> Option<String> {
    if !plan.mlock {
        return Some("memory not locked (--no-mlock): page faults may add latency".into());
    }
    sys::tame_malloc();
    // The code the audit and the planning ran is not needed again while measuring: let it go
    // before everything touched from now on is locked in memory.
    sys::release_code_pages();
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

/// The error number of a refusal for want of privilege.
const EPERM: i32 = 1;

/// How the plan schedules the measurement threads.
fn thread_sched(plan: &RunPlan) -> ThreadSched {
    ThreadSched {
        policy: plan.policy,
        priority: plan.priority,
        dl_runtime_ns: plan.dl_runtime_ns,
        dl_deadline_ns: plan.dl_deadline_ns,
    }
}

/// Sets up the measurement threads; a refusal becomes an error that says why and what to do.
fn prepare_probes(
    plan: &RunPlan,
    probes: &[ProbePlan],
    interrupts: &Interrupts,
    system: &SystemInfo,
    triggers: &[(usize, std::sync::Arc<probe::TraceTrigger>)],
) -> Result<probe::PreparedProbes> {
    probe::prepare(probes, thread_sched(plan), interrupts.stop.clone(), triggers).map_err(|reports| {
        let failed = reports.iter().find(|r| r.error.is_some()).expect("a failed report");
        match failed.error.as_ref().expect("an error") {
            SetupError::Scheduler(errno) if plan.policy == crate::vocab::policy::Policy::Deadline && *errno != EPERM => {
                let bandwidth = "the kernel's SCHED_DEADLINE admission control refused the runtime per period";
                anyhow!(
                    "cannot run the {} thread for CPU {} at SCHED_DEADLINE: {} ({bandwidth}, or the interval is below \
                     its least period, /proc/sys/kernel/sched_deadline_period_min_us); lower --dl-runtime or lengthen \
                     the interval",
                    failed.probe,
                    failed.cpu,
                    std::io::Error::from_raw_os_error(*errno)
                )
            }
            SetupError::Scheduler(errno) => anyhow!(system.explain_rt_refusal(
                plan.policy.kernel_name(),
                plan.priority,
                &std::io::Error::from_raw_os_error(*errno)
            )),
            SetupError::Affinity(msg) => {
                anyhow!("cannot pin a thread to CPU {}: {msg}; check --cpus and the cpuset of this process", failed.cpu)
            }
            SetupError::Probe(msg) => anyhow!("{} on CPU {}: {msg}", failed.probe, failed.cpu),
            SetupError::Other(msg) => {
                anyhow!("cannot prepare the {} thread for CPU {}: {msg}", failed.probe, failed.cpu)
            }
        }
    })
}

/// Where the timeline changes (load starts and stops, a probe's steps, inside the run), on
/// period deadlines.
fn phase_bounds(resolved: &Resolved) -> Vec<u64> {
    let loads = resolved.load_specs.iter().flat_map(|s| [s.start_ns, s.end_ns]).flatten();
    let steps = resolved.probes.iter().flat_map(|p| p.probe.steps().into_iter().skip(1).map(|s| s.start_ns));
    let mut b: Vec<u64> = loads.chain(steps).filter(|&t| t > 0 && t < resolved.total_ns).collect();
    b.sort_unstable();
    b.dedup();
    b
}

/// Starts the loads that run from the start, under their watchdog (see `load::watchdog`).
/// `until_stopped`: one-shot loads run once and are not restarted (`rtgauge load`).
fn start_loads(
    specs: &[LoadSpec],
    cpus: Option<Vec<usize>>,
    until_stopped: bool,
    cgroup_parent: Option<std::path::PathBuf>,
    interrupts: &Interrupts,
    warnings: &mut Vec<String>,
) -> Result<(LoadSet, Option<Watchdog>)> {
    let mut loads = LoadSet::new(specs, cpus, until_stopped, cgroup_parent)?;
    let watchdog = interrupts.watchdog(&loads, warnings)?;
    loads.start_initial(&interrupts.stop);
    Ok((loads, watchdog))
}

/// The coordinator's loop, shared by every run: steps the loads' timeline (phases, restarts)
/// and calls `step` until a signal stops the run (returns when it was noticed) or `step`
/// returns `None` (returns `None`). `step` returns the time it next wants to run at; the loop
/// sleeps until then or the next load event, between 1 ms and `max_sleep_ms`.
fn coordinate(
    loads: &mut LoadSet,
    interrupts: &Interrupts,
    max_sleep_ms: u64,
    mut step: impl FnMut(u64, &LoadSet) -> Option<u64>,
) -> Option<u64> {
    loop {
        let now = sys::monotonic_ns();
        // A stop first: the threads may have ended on it before this wakes up.
        if interrupts.stop.load(Ordering::Relaxed) {
            return Some(now);
        }
        // A stop that came after the check above may have ended the threads that `step` found
        // finished: it is still a stop (CI, armv7 under qemu-user: a SIGINT run was closed as
        // if complete, every unserved period missed).
        let Some(wake) = step(now, loads) else {
            return interrupts.stop.load(Ordering::Acquire).then(sys::monotonic_ns);
        };
        loads.tick(now);
        let next = loads.next_event_ns().map_or(wake, |e| e.min(wake));
        std::thread::sleep(Duration::from_nanos(next.saturating_sub(now).clamp(1_000_000, max_sleep_ms * 1_000_000)));
    }
}

/// Collects until every period is accounted for, the run is stopped, or a thread is held off
/// its CPU past the planned end; then stops the loads (which frees any CPU they held), gives
/// the threads a bounded grace, and closes every account. Returns where the measurement ended
/// (from the start of period 0): the planned end unless stopped early.
fn measure(
    plan: &RunPlan,
    resolved: &Resolved,
    probes: &mut RunningProbes,
    collector: &mut Collector,
    loads: &mut LoadSet,
    interrupts: &Interrupts,
    trace: &mut Option<crate::trace::Session>,
) -> u64 {
    let planned_end_ns = probes.start_ns + resolved.total_ns;
    let total = Duration::from_nanos(resolved.total_ns);
    let labels: Vec<String> = probes.keys.iter().map(|&k| format!("{} cpu{}", resolved.label(k), k.cpu)).collect();
    let live = LiveView::new(plan.quiet, &labels, Some(total));
    let mut last_draw = std::time::Instant::now();
    // The rings hold seconds of facts: draining ten times a second keeps the collector's own
    // wake-ups (which disturb the measured CPUs too) rare. Near the planned end it wakes
    // sooner, so a run ends as soon as its last period is measured.
    let stopped_at = coordinate(loads, interrupts, 100, |now, _| {
        collector.drain(probes);
        if let Some(t) = trace.as_mut() {
            t.poll();
        }
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
        Some(if now < planned_end_ns { planned_end_ns } else { planned_end_ns + END_SLACK.as_nanos() as u64 })
    });
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
    sys::release_code_pages();
    let end_ns = stopped_at.map_or(resolved.total_ns, |t| stopped_end_ns(probes, collector, t));
    for i in 0..probes.keys.len() {
        collector.close(i, &probes.counters[i], probes.finished(i), end_ns);
    }
    end_ns
}

/// How long was measured after the warm-up, as the threads did it: the longest any thread
/// measured after its own warm-up (a probe's `warmup=` included), up to where it stopped (a rate
/// sweep stops after its first failed rate; a thread held off its CPU measured to `end_ns`).
fn measured_ns(probes: &RunningProbes, collector: &Collector, end_ns: u64) -> u64 {
    (0..probes.keys.len())
        .map(|i| {
            let s = collector.accounts[i].schedule;
            let stop = if probes.finished(i) {
                // Periods the thread went through; one a load held off its CPU went through
                // none, and its periods were counted missed for it: those.
                let c = &collector.accounts[i];
                let done = match probes.counters[i].periods_done.load(Ordering::Relaxed) {
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
    let planned = collector.accounts.iter().map(|a| a.schedule.periods * a.schedule.interval_ns).max().unwrap_or(0);
    ran.filter(|&t| t > 0).unwrap_or(noticed_ns.saturating_sub(probes.start_ns)).min(planned)
}

/// A series as results name it: `timer`, `wakeup.task`.
fn series_label(probes: &[ProbePlan], k: SeriesKey) -> String {
    let p = &*probes[k.probe].probe;
    match probe::series_name(p, k.series) {
        Some(s) => format!("{}.{s}", p.name()),
        None => p.name().to_string(),
    }
}

/// Warnings about the measurement itself: threads held off their CPU, facts lost in the hand-off,
/// page faults taken while measuring.
fn measurement_warnings(collector: &Collector, probes: &[ProbePlan], memory_locked: bool) -> Vec<String> {
    let mut w = Vec::new();
    let faulted: Vec<String> = collector
        .accounts
        .iter()
        .filter_map(|a| a.page_faults.filter(|&n| n > 0).map(|n| format!("{}/cpu{} {n}", series_label(probes, a.key), a.key.cpu)))
        .collect();
    if !faulted.is_empty() {
        // rtgauge never forks (see load::launch); locked pages still move when the kernel migrates them.
        let why = if memory_locked {
            "memory was locked, yet the kernel may move locked pages (memory compaction: \
             'sysctl vm.compact_unevictable_allowed=0'; NUMA balancing: 'sysctl kernel.numa_balancing=0')"
        } else {
            "lock memory (drop --no-mlock, run as root or with CAP_IPC_LOCK) or lengthen the warm-up"
        };
        w.push(format!(
            "the measurement threads took page faults while measuring ({}); each lengthened the wake-up it fell in: {why}",
            faulted.join(", ")
        ));
    }
    for a in &collector.accounts {
        if a.unserved > 0 {
            w.push(format!(
                "the {} thread of cpu{} did not run for its last {} ({}): something of higher \
                 priority held the CPU; they count as missed",
                series_label(probes, a.key),
                a.key.cpu,
                crate::vocab::Count(a.unserved, "period"),
                crate::vocab::units::Nanos(a.unserved.saturating_mul(a.schedule.interval_ns))
            ));
        }
    }
    let lost: u64 = collector.accounts.iter().map(|a| a.run.lost).sum();
    if lost > 0 {
        w.push(format!(
            "{} could not be handed to the collector in time (it was starved); they count in samples, \
             min and max but are missing from the histograms and percentiles",
            crate::vocab::Count(lost, "sample")
        ));
    }
    w
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
    findings: Vec<crate::audit::findings::Finding>,
    tuning: Vec<crate::tuning::TuningRecord>,
    trace: Option<crate::result::trace::TraceReport>,
    loads: Vec<crate::load::manager::LoadRecord>,
    containment: Option<crate::load::contain::Containment>,
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
    let facts = verdict::RunFacts {
        status: a.status,
        failed_loads: a.loads.iter().filter(|l| l.failed).map(|l| l.spec.clone()).collect(),
        intervals: resolved
            .probes
            .iter()
            .map(|p| (p.probe.name().to_string(), p.cpus.clone(), p.probe.schedule().interval_ns))
            .collect(),
    };
    let verdict = verdict::evaluate(&per_thread, &combined, plan.cycle_time_ns, plan.budget, &plan.requirements, &facts);
    RunResult {
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
        config: config(plan, resolved, verdict.budget_percent),
        system: a.system,
        findings: a.findings,
        tuning: a.tuning,
        loads: a.loads,
        containment: a.containment,
        phases,
        probes: per_thread,
        combined,
        verdict,
        trace: a.trace,
        warnings: a.warnings,
    }
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
    }
}

/// The summary goes to stdout unless stdout carries the JSON document; then the document.
/// A summary that could not be written to standard output (a full disk, the reader gone) is an
/// error once the document is written: the command ends with it after the result is kept.
/// `stored`: the run goes to a store too (a JSON reader that went away then costs no rescue file).
fn report(result: &RunResult, sink: Option<JsonSink>, stored: bool, said_before: &[String]) -> Result<u8> {
    let text = summary::render_after(result, said_before);
    let on_stderr = sink.as_ref().is_some_and(JsonSink::is_stdout);
    let said = say(on_stderr, &text);
    if let Some(sink) = sink {
        sink.write_kept(result, stored)?;
    }
    if !on_stderr {
        said.map_err(crate::report::out::OutputError::from)?;
    }
    Ok(if result.verdict.passed { EXIT_PASSED } else { EXIT_FAILED })
}

/// What `rtgauge load` runs: the loads, on which CPUs, for how long.
struct LoadPlan {
    specs: Vec<LoadSpec>,
    cpus: Option<Vec<usize>>,
    /// `None`: until every (one-shot) load has ended.
    duration_ns: Option<u64>,
}

/// The plan of `rtgauge load`, checked against the machine.
fn plan_loads(args: &crate::cli::LoadArgs) -> Result<LoadPlan> {
    let specs = crate::load::spec::parse_loads(&args.specs)
        .map_err(anyhow::Error::msg)?
        .ok_or_else(|| anyhow!("'rtgauge load none' runs nothing: name a load, e.g. rtgauge load hackbench"))?;
    let duration_ns = args
        .duration
        .as_deref()
        .map(|d| crate::vocab::units::parse_duration_ns(d, None))
        .transpose()
        .map_err(|e| anyhow!("--duration {e}: give a time with a unit, e.g. --duration 30s"))?;
    let one_shot = |s: &LoadSpec| matches!(s.generator, Generator::Hackbench { .. } | Generator::Cmd { restart: false, .. });
    if duration_ns.is_none() {
        if let Some(s) = specs.iter().find(|s| !one_shot(s)) {
            bail!("'{}' runs until stopped: give --duration, e.g. --duration 30s", s.text);
        }
    }
    let online = crate::audit::online_cpus();
    let cpus = args
        .cpus
        .as_deref()
        .map(crate::vocab::cpus::parse_cpu_list)
        .transpose()
        .map_err(|e| anyhow!("--cpus {e}: e.g. --cpus 0-1"))?;
    check_loads(&specs, duration_ns, &online, cpus.as_deref())?;
    let n = cpus.as_ref().map_or(online.len(), Vec::len);
    Ok(LoadPlan { specs: specs.into_iter().map(|s| s.resolve(n)).collect(), cpus, duration_ns })
}

/// Runs `rtgauge load`: the same stages as a run with no probe (plan → loads → coordinate →
/// report), like stress or hackbench on their own. Exit status 0, or 1 when a load failed.
pub fn load_only(args: &crate::cli::LoadArgs, command_line: Vec<String>) -> Result<u8> {
    let plan = plan_loads(args)?;
    let sink = args.json.as_ref().map(|j| JsonSink::open(&crate::scenario::JsonTarget::parse(j))).transpose()?;
    let interrupts = Interrupts::install()?;
    let mut warnings = Vec::new();
    let (mut loads, mut watchdog) =
        start_loads(&plan.specs, plan.cpus.clone(), plan.duration_ns.is_none(), None, &interrupts, &mut warnings)?;
    let origin = sys::monotonic_ns();
    loads.set_origin(origin);
    let end = plan.duration_ns.map(|d| origin + d);
    if let (Some(w), Some(end)) = (&mut watchdog, end) {
        w.arm(end + END_SLACK.as_nanos() as u64);
    }
    coordinate(&mut loads, &interrupts, 50, |now, loads| {
        if end.is_some_and(|e| now >= e) || loads.all_done() {
            return None;
        }
        Some(end.unwrap_or(now + 50_000_000))
    });
    let records = loads.records();
    finish_watchdog(watchdog, &mut warnings);
    for w in &once(warnings) {
        crate::report::out::err_line(&format!("rtgauge: warning: {w}"));
    }
    report_loads(&plan, &records, sink, command_line, interrupts.which(), loads.containment())
}

/// The report of `rtgauge load`: hackbench's own lines, what each load did, and the document.
fn report_loads(
    plan: &LoadPlan,
    records: &[crate::load::manager::LoadRecord],
    sink: Option<JsonSink>,
    command_line: Vec<String>,
    interrupted_by: Option<String>,
    containment: Option<crate::load::contain::Containment>,
) -> Result<u8> {
    let mut text = String::new();
    for (s, r) in plan.specs.iter().zip(records) {
        if let Generator::Hackbench { groups, fds, size, loops, pipe, threads } = s.generator {
            let h = crate::load::gen::hackbench::Hackbench { groups, fds, size, loops, pipe, threads };
            text += &format!("{}\n", h.banner());
            for t in &r.round_times_s {
                text += &format!("Time: {t:.3}\n");
            }
        }
    }
    text += &crate::report::summary::render_loads(records);
    let on_stderr = sink.as_ref().is_some_and(JsonSink::is_stdout);
    let said = say(on_stderr, &text);
    if let Some(sink) = sink {
        sink.write(&crate::result::LoadResult {
            schema: crate::result::LOAD_SCHEMA.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            command_line,
            duration_ns: plan.duration_ns,
            interrupted_by,
            loads: records.to_vec(),
            containment,
        })?;
    }
    if !on_stderr {
        said.map_err(crate::report::out::OutputError::from)?;
    }
    Ok(if records.iter().any(|r| r.failed) { EXIT_FAILED } else { EXIT_PASSED })
}

/// `rtgauge udp-echo`: the other end of the UDP probe. Binds, takes its CPU and priority, says
/// where it listens (stderr), echoes until a signal or `--duration` (looked at after every
/// datagram: a flood does not hold it), and prints what it echoed and what it dropped — from
/// its own address, another echo's replies, datagrams too short to be the probe's (stdout, JSON).
pub fn udp_echo(args: &crate::cli::UdpEchoArgs) -> Result<u8> {
    let interrupts = Interrupts::install()?;
    let addr: std::net::SocketAddr =
        args.listen.parse().map_err(|_| anyhow!("--listen {}: not ADDR:PORT; e.g. --listen 0.0.0.0:9000", args.listen))?;
    if !(0..=99).contains(&args.priority) {
        bail!("--priority {}: not 0 (SCHED_OTHER) or 1-99; e.g. --priority 80", args.priority);
    }
    let duration = args
        .duration
        .as_deref()
        .map(|d| crate::vocab::units::parse_duration_ns(d, None))
        .transpose()
        .map_err(|e| anyhow!("--duration: {e}; e.g. --duration 10m"))?;
    if let Some(cpu) = args.cpu {
        check_cpus("--cpu", &[cpu], &SystemInfo::probe())?;
    }
    let socket =
        std::net::UdpSocket::bind(addr).map_err(|e| anyhow!("cannot listen on {addr}: {e}; choose another address or port"))?;
    socket.set_nonblocking(true)?;
    if let Some(cpu) = args.cpu {
        sys::pin_thread_to_cpu(cpu).map_err(|e| anyhow!("cannot pin to CPU {cpu}: {e}"))?;
    }
    if args.priority > 0 {
        sys::set_thread_scheduler(sys::Policy::Fifo, args.priority)
            .map_err(|e| anyhow!("cannot run at SCHED_FIFO {}: {e}; run as root or give --priority 0", args.priority))?;
    }
    let _ = sys::lock_all_memory();
    crate::report::out::err_line(&format!("rtgauge udp-echo: listening on {}", socket.local_addr()?));
    // The end is looked at by the echo itself: a thread to end it would share its CPU and
    // priority, and wait behind it as long as datagrams come.
    let until = duration.map(|ns| sys::monotonic_ns().saturating_add(ns));
    let e = probe::udp::echo(&socket, &interrupts.stop, until)?;
    let dropped = serde_json::json!({
        "from_itself": e.from_itself, "replies": e.replies, "short": e.short, "from_service": e.from_service
    });
    let stopped_by = interrupts.which();
    crate::report::out::text(&format!(
        "{}\n",
        serde_json::json!({ "listen": addr.to_string(), "echoed": e.echoed, "dropped": dropped, "stopped_by": stopped_by })
    ))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CI (armv7 under qemu-user): a SIGINT came after the coordinator's stop check and before
    /// its step found every thread finished (they had ended on the stop); the run was closed as
    /// if it had run to its planned end, every unserved period missed. It is a stop.
    #[test]
    fn a_stop_that_ends_the_threads_between_check_and_step_is_still_a_stop() {
        let (wake, notify) = std::os::unix::net::UnixStream::pair().unwrap();
        let interrupts =
            Interrupts { stop: Arc::new(AtomicBool::new(false)), signal: Arc::new(AtomicUsize::new(0)), wake, notify };
        let mut loads = LoadSet::new(&[], None, false, None).unwrap();
        let stopped = coordinate(&mut loads, &interrupts, 1, |_, _| {
            interrupts.stop.store(true, Ordering::Release);
            None
        });
        assert!(stopped.is_some());
        let (wake, notify) = std::os::unix::net::UnixStream::pair().unwrap();
        let calm = Interrupts { stop: Arc::new(AtomicBool::new(false)), signal: Arc::new(AtomicUsize::new(0)), wake, notify };
        assert_eq!(coordinate(&mut loads, &calm, 1, |_, _| None), None, "finished without a stop");
    }
}
