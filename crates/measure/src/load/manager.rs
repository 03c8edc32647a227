//! Runs loads for a measurement (or on their own): starts each in a contained child process —
//! a process group of its own, killed by the kernel if rtgauge dies, on the chosen CPUs, at
//! SCHED_OTHER with an optional nice value — registered with the [guardian](super::guardian)
//! so that not even a SIGKILL of rtgauge leaves one running; starts and stops them at their
//! offsets on the timeline; restarts `cmd:` loads that exit early; stops them with SIGTERM, then
//! SIGKILL; and records for each what it did and what it cost.

use super::gen::Counters;
use super::guardian::Guardian;
use super::spec::LoadSpec;
use super::worker::{WorkerReport, ENV_DIR, ENV_ONCE, ENV_SPEC};
use crate::result::load::{Endings, Generator, LoadPolicy, LoadRecord, LoadUsage};
use crate::sys::{self, process::ChildEnd, process::ChildUsage, process::Containment};
use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Running {
    child: Child,
    stopping: bool,
    started_mono: u64,
    /// Until its launcher has run the load's program (or said why it could not).
    report: Option<super::launch::StartReport>,
    /// Why its launcher could not start the program, once read.
    start_error: Option<String>,
}

/// A restarted command that ends this many times in a row with a failure is flagged as failed.
const FAILURES_IN_A_ROW: u32 = 3;
/// A run shorter than this is restarted after a back-off (doubling from the first to the last).
const QUICK_RUN: Duration = Duration::from_secs(1);
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

struct Load {
    spec: LoadSpec,
    record: LoadRecord,
    running: Option<Running>,
    started_mono: Option<u64>,
    stopped_mono: Option<u64>,
    done: bool,
    dir: Option<PathBuf>,
    /// A restart waiting for its back-off to pass (CLOCK_MONOTONIC).
    restart_at: Option<u64>,
    backoff: Duration,
    failures_in_a_row: u32,
}

/// The loads of one run.
pub struct LoadSet {
    loads: Vec<Load>,
    /// Started only when there is a load to guard.
    guardian: Option<Guardian>,
    exe: Vec<OsString>,
    cpus: Option<Vec<usize>>,
    origin_ns: Option<u64>,
    once: bool,
    cgroup: Option<super::contain::RunCgroup>,
    containment: Option<crate::result::load::Containment>,
    finished: bool,
    /// The process groups of the loads now running (for the watchdog).
    groups: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<i32>>>,
}

/// How long a load gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
/// How often a load that is ending (or a command that may end) is checked.
const POLL: Duration = Duration::from_millis(10);

/// The command that starts this executable again (through the emulator named in RTGAUGE_RUNNER
/// when rtgauge itself runs under one, as in the cross-architecture tests).
/// (`/proc/self/exe` is unreadable after a change of user, e.g. under setpriv: argv[0] then.)
/// How to start rtgauge itself again (its helpers: workers, launchers, the guardian): the
/// executable, behind the emulator in `RTGAUGE_RUNNER` when there is one.
pub fn self_exe() -> std::io::Result<Vec<OsString>> {
    let exe = std::env::current_exe().or_else(|e| {
        let argv0 = std::env::args_os().next().ok_or(e)?;
        let text = argv0.to_string_lossy();
        Ok::<_, std::io::Error>(if text.contains('/') {
            PathBuf::from(&argv0)
        } else {
            find_program(&text).unwrap_or(PathBuf::from(&argv0))
        })
    })?;
    let mut v: Vec<OsString> = std::env::var("RTGAUGE_RUNNER")
        .ok()
        .filter(|r| !r.trim().is_empty())
        .map(|r| r.split_whitespace().map(OsString::from).collect())
        .unwrap_or_default();
    v.push(exe.into());
    Ok(v)
}

/// Finds `program` as execvp would: a path, or a name in $PATH.
pub fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).map(|d| d.join(program)).find(|p| executable(p)))
        .unwrap_or(None)
}

fn ending(end: ChildEnd, stopping: bool) -> String {
    match (end, stopping) {
        (ChildEnd::Exited(0), true) | (ChildEnd::Signalled(15), true) | (ChildEnd::Signalled(9), true) => "stopped".into(),
        (ChildEnd::Exited(c), _) => format!("exited {c}"),
        (ChildEnd::Signalled(s), _) => format!("killed by signal {s}"),
    }
}

fn add_usage(a: &mut LoadUsage, b: ChildUsage) {
    a.user_ns += b.user_ns;
    a.system_ns += b.system_ns;
    a.max_rss_kib = a.max_rss_kib.max(b.max_rss_kib);
    a.minor_faults += b.minor_faults;
    a.major_faults += b.major_faults;
    a.voluntary_switches += b.voluntary_switches;
    a.involuntary_switches += b.involuntary_switches;
}

impl LoadSet {
    /// Prepares the loads and starts the guardian; nothing runs yet.
    /// `once`: built-in hackbench runs a single round (standalone `rtgauge load`).
    /// `cgroup_parent`: where the run's cgroup v2 goes when not below rtgauge's own cgroup (the
    /// CPU shield moved rtgauge into one of its own).
    pub fn new(
        specs: &[LoadSpec],
        cpus: Option<Vec<usize>>,
        once: bool,
        cgroup_parent: Option<std::path::PathBuf>,
    ) -> anyhow::Result<LoadSet> {
        let exe = self_exe()?;
        let guardian = if specs.is_empty() {
            None
        } else {
            Some(
                Guardian::start(&exe)
                    .map_err(|e| anyhow::anyhow!(super::guardian::cannot_start("the load guardian", &exe, &e)))?,
            )
        };
        let loads = specs
            .iter()
            .map(|s| Load {
                spec: s.clone(),
                record: LoadRecord {
                    spec: s.text.clone(),
                    generator: s.generator.clone(),
                    nice: s.nice,
                    policy: s.policy,
                    cpus: cpus.clone(),
                    planned_start_ns: s.start_ns,
                    planned_end_ns: s.end_ns,
                    started_ns: None,
                    stopped_ns: None,
                    runs: 0,
                    endings: Endings::default(),
                    failed: false,
                    error: None,
                    usage: LoadUsage::default(),
                    counters: Counters::new(),
                    round_times_s: Vec::new(),
                },
                running: None,
                started_mono: None,
                stopped_mono: None,
                done: false,
                dir: None,
                restart_at: None,
                backoff: Duration::ZERO,
                failures_in_a_row: 0,
            })
            .collect();
        let mut set = LoadSet {
            loads,
            guardian,
            exe,
            cpus,
            origin_ns: None,
            once,
            cgroup: None,
            containment: None,
            finished: false,
            groups: Default::default(),
        };
        if !specs.is_empty() {
            set.contain(specs, cgroup_parent.as_deref());
        }
        Ok(set)
    }

    /// Makes the run's cgroup (registered with the guardian before anything joins it), or
    /// records why the loads fall back to process groups.
    fn contain(&mut self, specs: &[LoadSpec], parent: Option<&std::path::Path>) {
        use super::contain::RunCgroup;
        use crate::result::load::Containment;
        let rt = specs.iter().find_map(|s| match s.policy {
            Some(LoadPolicy::Fifo(p)) => Some((sys::sched::SCHED_FIFO, p)),
            Some(LoadPolicy::Rr(p)) => Some((sys::sched::SCHED_RR, p)),
            _ => None,
        });
        match RunCgroup::create(rt, &self.exe, parent) {
            Ok(cg) => {
                if let Some(g) = &mut self.guardian {
                    g.watch_cgroup(&cg.path, cg.version);
                }
                self.containment = Some(Containment {
                    kind: format!("cgroup-v{}", cg.version.number()),
                    cgroup: Some(cg.path.display().to_string()),
                    fallback_reason: None,
                });
                self.cgroup = Some(cg);
            }
            Err(why) => {
                self.containment =
                    Some(Containment { kind: "process-group".into(), cgroup: None, fallback_reason: Some(why.into()) });
            }
        }
    }

    /// What the watchdog needs to find the loads' threads.
    pub fn demoter(&self) -> super::watchdog::Demoter {
        super::watchdog::Demoter {
            cgroup: self.cgroup.as_ref().map(|c| (c.path.clone(), c.version)),
            groups: self.groups.clone(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.loads.is_empty()
    }

    /// Whether a load runs at an RT policy (a command may also raise its own).
    pub fn any_realtime(&self) -> bool {
        self.loads.iter().any(|l| matches!(l.spec.policy, Some(LoadPolicy::Fifo(_) | LoadPolicy::Rr(_))))
    }

    /// How the loads are contained (null without loads).
    pub fn containment(&self) -> Option<crate::result::load::Containment> {
        self.containment.clone()
    }

    fn spawn(&mut self, i: usize) {
        let once = self.once;
        let load = &mut self.loads[i];
        let (cmd, stdout) = match &load.spec.generator {
            Generator::Cmd { argv, .. } => {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]);
                (c, Stdio::null())
            }
            g => {
                let mut c = Command::new(&self.exe[0]);
                c.args(&self.exe[1..]).arg("__worker");
                c.env(ENV_SPEC, serde_json::to_string(g).expect("serialisable"));
                if once {
                    c.env(ENV_ONCE, "1");
                }
                if matches!(g, Generator::Io { .. }) {
                    if load.dir.is_none() {
                        match tempfile::Builder::new().prefix("rtgauge-io-").tempdir() {
                            Ok(d) => {
                                let path = d.keep();
                                if let Some(g) = &mut self.guardian {
                                    g.watch_dir(&path);
                                }
                                load.dir = Some(path);
                            }
                            Err(e) => {
                                load.record.failed = true;
                                load.record.error = Some(format!("cannot create a temporary directory: {e}"));
                                load.done = true;
                                return;
                            }
                        }
                    }
                    c.env(ENV_DIR, load.dir.as_ref().expect("set above"));
                }
                (c, Stdio::piped())
            }
        };
        let containment = Containment {
            cgroup_procs: self.cgroup.as_ref().map(|c| c.procs()),
            die_with: Some(std::process::id()),
            cpus: self.cpus.clone(),
            nice: load.spec.nice,
            policy: load.spec.policy.map(|p| match p {
                LoadPolicy::Other => (sys::sched::SCHED_OTHER, 0),
                LoadPolicy::Batch => (sys::sched::SCHED_BATCH, 0),
                LoadPolicy::Idle => (sys::sched::SCHED_IDLE, 0),
                LoadPolicy::Fifo(n) => (sys::sched::SCHED_FIFO, n),
                LoadPolicy::Rr(n) => (sys::sched::SCHED_RR, n),
            }),
        };
        match super::launch::spawn(&self.exe, &cmd, &containment, stdout, Stdio::null()) {
            Ok((child, report)) => {
                if let Some(g) = &mut self.guardian {
                    g.watch_group(child.id() as i32);
                }
                if let Ok(mut g) = self.groups.lock() {
                    g.insert(child.id() as i32);
                }
                load.record.runs += 1;
                let now = sys::time::monotonic_ns();
                load.started_mono.get_or_insert(now);
                load.running =
                    Some(Running { child, stopping: false, started_mono: now, report: Some(report), start_error: None });
            }
            Err(e) => {
                load.record.failed = true;
                load.record.error = Some(format!("cannot start '{}': {e}", load.spec.text));
                load.done = true;
            }
        }
    }

    /// Collects a finished run of load `i`: its report, usage and how it ended.
    fn collect(&mut self, i: usize, end: ChildEnd, usage: ChildUsage) {
        let load = &mut self.loads[i];
        let mut run = load.running.take().expect("running");
        // The leader is gone; whatever it left in its group (a command's own children) goes too.
        let _ = sys::signal::signal_group(run.child.id() as i32, signal_hook::consts::SIGKILL);
        if let Some(g) = &mut self.guardian {
            g.release_group(run.child.id() as i32);
        }
        if let Ok(mut g) = self.groups.lock() {
            g.remove(&(run.child.id() as i32));
        }
        add_usage(&mut load.record.usage, usage);
        // A launcher that could not start the program: the load failed, and is not restarted.
        let why = run
            .start_error
            .take()
            .or_else(|| run.report.as_mut().and_then(|r| r.outcome(true)).and_then(Result::err).map(String::from));
        if let Some(why) = why {
            load.record.failed = true;
            load.record.error = Some(format!("cannot start '{}': {why}", load.spec.text));
            load.record.endings.push("could not start".into());
            load.done = true;
            return;
        }
        // An end of its own, also while being stopped (a command that failed as the run ended).
        let e = ending(end, run.stopping);
        let own = e != "stopped";
        load.record.endings.push(e);
        if own {
            self.after_own_end(i, end, run.started_mono);
        }
        let load = &mut self.loads[i];
        if let Some(mut out) = run.child.stdout.take() {
            let mut text = String::new();
            let _ = out.read_to_string(&mut text);
            if let Ok(r) = serde_json::from_str::<WorkerReport>(text.trim()) {
                for (k, v) in r.counters {
                    *load.record.counters.entry(k).or_default() += v;
                }
                load.record.round_times_s.extend(r.round_times_s);
                if let Some(e) = r.error {
                    load.record.failed = true;
                    load.record.error = Some(e);
                }
            }
        }
        // A restarting command that ends early is restarted; it is flagged only when it keeps
        // failing (see after_own_end).
        let restarts = matches!(load.spec.generator, Generator::Cmd { restart: true, .. });
        if !run.stopping && !restarts && !matches!(end, ChildEnd::Exited(0)) {
            load.record.failed = true;
            load.record.error.get_or_insert_with(|| format!("ended on its own: {}", ending(end, false)));
        }
    }

    /// A run of load `i` ended on its own: count failures in a row (a restarted command that
    /// keeps failing is flagged), and back off before restarting one that ended quickly.
    fn after_own_end(&mut self, i: usize, end: ChildEnd, started_mono: u64) {
        let load = &mut self.loads[i];
        if matches!(end, ChildEnd::Exited(0)) {
            load.failures_in_a_row = 0;
        } else {
            load.failures_in_a_row += 1;
        }
        if load.failures_in_a_row >= FAILURES_IN_A_ROW && !load.record.failed {
            load.record.failed = true;
            load.record.error = Some(format!(
                "kept failing: {}, {} times in a row (restarted after a back-off of up to {})",
                ending(end, false),
                load.failures_in_a_row,
                crate::vocab::units::Nanos(MAX_BACKOFF.as_nanos() as u64)
            ));
        }
        let lasted = Duration::from_nanos(sys::time::monotonic_ns().saturating_sub(started_mono));
        load.backoff = if lasted >= QUICK_RUN { Duration::ZERO } else { (load.backoff * 2).clamp(FIRST_BACKOFF, MAX_BACKOFF) };
    }

    /// Starts the loads that run from the beginning (no start offset), all at once (each
    /// `spawn` returns once its launcher runs; whether the load's program runs is read later).
    /// Stops starting when `stop` is set.
    pub fn start_initial(&mut self, stop: &std::sync::atomic::AtomicBool) {
        for i in 0..self.loads.len() {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            if self.loads[i].spec.start_ns.is_none() && !self.loads[i].done {
                self.spawn(i);
            }
        }
    }

    /// Drops the start reports of the loads whose programs now run (their pipes closed), so a
    /// run with hundreds of loads holds no descriptor for long. A failed start is recorded when
    /// its launcher is reaped.
    fn confirm_starts(&mut self) {
        for r in self.loads.iter_mut().filter_map(|l| l.running.as_mut()) {
            match r.report.as_mut().and_then(|p| p.outcome(false)) {
                Some(Ok(())) => r.report = None,
                Some(Err(why)) => (r.report, r.start_error) = (None, Some(why.into())),
                None => {}
            }
        }
    }

    /// Sets the start of the run (period 0), the origin of the timeline.
    pub fn set_origin(&mut self, origin_ns: u64) {
        self.origin_ns = Some(origin_ns);
    }

    /// Starts and stops loads due at `now_ns`, collects loads that ended, restarts `cmd:` loads
    /// that ended early. Call often from the collector.
    pub fn tick(&mut self, now_ns: u64) {
        let Some(origin) = self.origin_ns else { return };
        let offset = now_ns.saturating_sub(origin);
        self.confirm_starts();
        for i in 0..self.loads.len() {
            // Reap a run that ended.
            let ended = match &mut self.loads[i].running {
                Some(r) => match sys::process::wait_child(r.child.id() as i32, false) {
                    Ok(Some((end, usage))) => Some((end, usage)),
                    _ => None,
                },
                None => None,
            };
            if let Some((end, usage)) = ended {
                let was_stopping = self.loads[i].running.as_ref().is_some_and(|r| r.stopping);
                self.collect(i, end, usage);
                let load = &mut self.loads[i];
                let phase_open = load.spec.end_ns.is_none_or(|e| offset < e);
                let restart = matches!(load.spec.generator, Generator::Cmd { restart: true, .. }) && !was_stopping && phase_open;
                if restart && load.backoff.is_zero() {
                    self.spawn(i);
                } else if restart {
                    load.restart_at = Some(sys::time::monotonic_ns() + load.backoff.as_nanos() as u64);
                } else {
                    load.done = true;
                    load.stopped_mono = Some(sys::time::monotonic_ns());
                }
                continue;
            }
            let load = &self.loads[i];
            if load.done {
                continue;
            }
            if load.restart_at.is_some_and(|at| at <= now_ns) {
                let phase_open = load.spec.end_ns.is_none_or(|e| offset < e);
                self.loads[i].restart_at = None;
                if phase_open {
                    self.spawn(i);
                } else {
                    self.loads[i].done = true;
                }
                continue;
            }
            match (&load.running, load.spec.start_ns, load.spec.end_ns) {
                (None, Some(s), _) if s <= offset && load.record.runs == 0 => self.spawn(i),
                (Some(r), _, Some(e)) if e <= offset && !r.stopping => self.stop(i),
                _ => {}
            }
        }
    }

    /// The next planned start or stop, as an absolute CLOCK_MONOTONIC time; soon while a load is
    /// being stopped or a command may need restarting, so its end is noticed promptly.
    pub fn next_event_ns(&self) -> Option<u64> {
        let origin = self.origin_ns?;
        let busy = self.loads.iter().any(|l| {
            l.running.as_ref().is_some_and(|r| r.stopping)
                || (l.running.is_some() && matches!(l.spec.generator, Generator::Cmd { .. }))
        });
        let soon = busy.then(|| sys::time::monotonic_ns() + POLL.as_nanos() as u64);
        self.loads
            .iter()
            .filter(|l| !l.done)
            .filter_map(|l| match &l.running {
                None if l.record.runs == 0 => l.spec.start_ns,
                Some(r) if !r.stopping => l.spec.end_ns,
                _ => None,
            })
            .map(|o| origin + o)
            .chain(soon)
            .chain(self.loads.iter().filter(|l| !l.done).filter_map(|l| l.restart_at))
            .min()
    }

    /// Asks load `i` to stop (SIGTERM to its process group).
    fn stop(&mut self, i: usize) {
        if let Some(r) = &mut self.loads[i].running {
            r.stopping = true;
            let _ = sys::signal::signal_group(r.child.id() as i32, signal_hook::consts::SIGTERM);
        }
    }

    /// Stops every load (SIGTERM, then SIGKILL after a grace period), kills whatever they left
    /// in the run's cgroup and removes it, and removes temporary directories. Idempotent.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        for i in 0..self.loads.len() {
            self.loads[i].restart_at = None;
            self.stop(i);
        }
        let deadline = std::time::Instant::now() + GRACE;
        loop {
            for i in 0..self.loads.len() {
                let pid = self.loads[i].running.as_ref().map(|r| r.child.id() as i32);
                if let Some(pid) = pid {
                    if let Ok(Some((end, usage))) = sys::process::wait_child(pid, false) {
                        self.collect(i, end, usage);
                        self.loads[i].stopped_mono = Some(sys::time::monotonic_ns());
                    }
                }
            }
            if self.loads.iter().all(|l| l.running.is_none()) {
                break;
            }
            if std::time::Instant::now() >= deadline {
                for l in &self.loads {
                    if let Some(r) = &l.running {
                        let _ = sys::signal::signal_group(r.child.id() as i32, signal_hook::consts::SIGKILL);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(cg) = self.cgroup.take() {
            let (path, version) = (cg.path.clone(), cg.version);
            match cg.remove() {
                Ok(()) => {
                    if let Some(g) = &mut self.guardian {
                        g.release_cgroup(&path, version);
                    }
                }
                Err(e) => {
                    if let Some(c) = &mut self.containment {
                        c.fallback_reason = Some(format!("could not empty the run's cgroup: {e}"));
                    }
                }
            }
        }
        for i in 0..self.loads.len() {
            if let Some(dir) = self.loads[i].dir.take() {
                let _ = std::fs::remove_dir_all(&dir);
                if let Some(g) = &mut self.guardian {
                    g.release_dir(&dir);
                }
            }
        }
    }

    /// Stops every load (see [`LoadSet::finish`]) and returns what each did.
    pub fn records(&mut self) -> Vec<LoadRecord> {
        self.finish();
        let origin = self.origin_ns.unwrap_or(0) as i64;
        self.loads
            .iter_mut()
            .map(|l| {
                l.record.started_ns = l.started_mono.map(|t| t as i64 - origin);
                l.record.stopped_ns = l.stopped_mono.map(|t| t as i64 - origin);
                l.done = true;
                l.record.clone()
            })
            .collect()
    }

    /// What each load has done so far, the loads going on (a rotated run's record of them):
    /// each record as far as it goes, its `running` state beside it.
    pub fn so_far(&self) -> Vec<(LoadRecord, bool)> {
        let origin = self.origin_ns.unwrap_or(0) as i64;
        self.loads
            .iter()
            .map(|l| {
                let mut r = l.record.clone();
                r.started_ns = l.started_mono.map(|t| t as i64 - origin);
                r.stopped_ns = l.stopped_mono.map(|t| t as i64 - origin);
                (r, l.running.is_some())
            })
            .collect()
    }

    /// Whether every load has ended (standalone runs of one-shot loads).
    pub fn all_done(&self) -> bool {
        self.loads.iter().all(|l| l.done)
    }
}

impl Drop for LoadSet {
    fn drop(&mut self) {
        self.finish();
    }
}
