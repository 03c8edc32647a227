//! Starting a contained child without forking rtgauge. A fork while measuring shares every
//! page of rtgauge copy-on-write with the child, and the measurement threads then take a page
//! fault on their next write to each of their pages (seen: 9 faults per thread for one load
//! started, 30 for a load restarted mid-run). So nothing is done between fork and exec: std
//! spawns `rtgauge __contain -- PROGRAM ARGS...` with posix_spawn (a vfork-style clone that
//! shares, not copies, the parent's memory), in a process group of its own; the launcher
//! applies the [`Containment`] handed over in its environment to itself — joins the run's
//! cgroup, dies with rtgauge, takes its CPUs, policy and nice value — and execs the program,
//! which keeps all of it. Why a launcher could not start comes back on a pipe that exec closes
//! ([`StartReport`]): loads start together, each confirmed (or failed) when its pipe says so,
//! not one after the other (a launcher takes long to start under an emulator).

use crate::sys::{self, process::Containment};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// The environment variable carrying the [`Containment`] (JSON) to the launcher.
const ENV: &str = "RTGAUGE_CONTAIN";
/// The launcher's exit status when it could not start its program.
const CANNOT_START: u8 = 125;

/// Entry point of `rtgauge __contain [-- PROGRAM ARGS...]`: without a program, it only applies
/// the containment and exits (to try a policy inside a cgroup).
pub fn main(argv: &[OsString]) -> u8 {
    let Ok(mut report) = sys::process::take_start_report() else { return CANNOT_START };
    let mut fail = |why: String| {
        let _ = report.write_all(why.as_bytes());
        CANNOT_START
    };
    let c: Containment = match std::env::var(ENV).map(|t| serde_json::from_str(&t)) {
        Ok(Ok(c)) => c,
        _ => return fail(format!("{ENV} is missing or unreadable (an internal command of rtgauge)")),
    };
    if let Err(why) = sys::process::contain_self(&c) {
        return fail(why.into());
    }
    let Some((program, args)) = argv.split_first() else { return 0 };
    let e = Command::new(program).args(args).env_remove(ENV).stdin(Stdio::null()).exec();
    fail(format!("cannot run {}: {e}", program.to_string_lossy()))
}

/// Whether a started launcher runs its program: the pipe it reports on, read when ready.
pub struct StartReport(std::fs::File);

impl StartReport {
    /// `None` while the launcher is still on its way (only with `wait` false); then `Ok` once
    /// its program runs, or why it could not start.
    pub fn outcome(&mut self, wait: bool) -> Option<Result<(), crate::vocab::Error>> {
        self.outcome_text(wait).map(|r| r.map_err(crate::vocab::Error::System))
    }

    /// [`Self::outcome`], its failure as text.
    fn outcome_text(&mut self, wait: bool) -> Option<Result<(), String>> {
        if !wait && !sys::fd::readable_now(&self.0) {
            return None;
        }
        let mut why = String::new();
        let _ = (&mut self.0).take(4096).read_to_string(&mut why);
        Some(if why.is_empty() { Ok(()) } else { Err(why) })
    }
}

/// Starts `target` (its program, arguments and environment) contained by `c`, with the given
/// standard output and error, through the launcher `exe`. Returns at once, with the report that
/// says later whether the program runs.
pub fn spawn(
    exe: &[OsString],
    target: &Command,
    c: &Containment,
    stdout: Stdio,
    stderr: Stdio,
) -> Result<(Child, StartReport), crate::vocab::Error> {
    spawn_text(exe, target, c, stdout, stderr).map_err(crate::vocab::Error::System)
}

/// [`spawn`], its failure as text.
fn spawn_text(
    exe: &[OsString],
    target: &Command,
    c: &Containment,
    stdout: Stdio,
    stderr: Stdio,
) -> Result<(Child, StartReport), String> {
    let mut cmd = launcher(exe, c)?;
    cmd.arg("--").arg(target.get_program()).args(target.get_args()).stdout(stdout).stderr(stderr);
    for (k, v) in target.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    start(cmd)
}

/// Whether a process contained by `c` starts: a launcher applies it and exits. Detects the RT
/// group-scheduling trap (a policy refused inside a new cgroup) before any load depends on it.
pub fn try_containment(exe: &[OsString], c: &Containment) -> Result<(), crate::vocab::Error> {
    try_containment_text(exe, c).map_err(crate::vocab::Error::System)
}

/// [`try_containment`], its failure as text.
fn try_containment_text(exe: &[OsString], c: &Containment) -> Result<(), String> {
    let mut cmd = launcher(exe, c)?;
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let (mut child, mut report) = start(cmd)?;
    if let Some(Err(why)) = report.outcome(true) {
        let _ = child.wait();
        return Err(why.into());
    }
    match child.wait() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("the trial process ended with {s}")),
        Err(e) => Err(format!("cannot wait for the trial process: {e}")),
    }
}

fn launcher(exe: &[OsString], c: &Containment) -> Result<Command, String> {
    let (program, args) = exe.split_first().ok_or("no executable to launch")?;
    let mut cmd = Command::new(program);
    cmd.args(args).arg("__contain").env(ENV, serde_json::to_string(c).expect("serialisable")).process_group(0);
    Ok(cmd)
}

/// Spawns the launcher with the start-report pipe as its standard input.
fn start(mut cmd: Command) -> Result<(Child, StartReport), String> {
    let (read, write) = sys::process::start_report_pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
    cmd.stdin(Stdio::from(write));
    let spawned = cmd.spawn();
    drop(cmd); // closes rtgauge's copy of the pipe's write end
    Ok((spawned.map_err(|e| e.to_string())?, StartReport(read)))
}
