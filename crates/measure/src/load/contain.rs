//! Containment of loads by what the kernel tracks for every descendant: a cgroup per run.
//! A `cmd:` load may call `setsid` or double-fork; its grandchildren leave every process group
//! but never their cgroup. rtgauge makes `rtgauge-PID` below its own cgroup (cgroup v2, where
//! `cgroup.kill` ends everything inside at once; otherwise a v1 hierarchy without the cpu
//! controller: freezer or pids), starts every load in it, and at the end kills what is left
//! and removes it. The guardian does the same when rtgauge is killed.
//!
//! The RT group-scheduling trap: a new cgroup with the cpu controller gets `rt_runtime_us = 0`,
//! and SCHED_FIFO then fails inside it. rtgauge never uses the v1 cpu hierarchy, and before
//! using a cgroup for a load with an RT policy it tries that policy inside it; where it fails,
//! loads fall back to process groups and the result says why.

use crate::audit::cgroups::own_dir;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which cgroup version a path belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

impl Version {
    pub fn number(self) -> u8 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
        }
    }
    pub fn from_number(n: &str) -> Option<Version> {
        match n {
            "1" => Some(Version::V1),
            "2" => Some(Version::V2),
            _ => None,
        }
    }
}

/// The cgroup of one run: created by rtgauge, emptied and removed by it or by the guardian.
pub struct RunCgroup {
    pub path: PathBuf,
    pub version: Version,
}

/// How containment is chosen: automatically, or forced (for tests) by `RTGAUGE_CONTAINMENT`
/// = `cgroup2`, `cgroup1`, `cgroup1:CONTROLLER` (that v1 hierarchy, even `cpu`, to show the
/// RT group-scheduling trap is caught) or `process-group`.
fn forced() -> Option<String> {
    std::env::var("RTGAUGE_CONTAINMENT").ok().filter(|v| !v.is_empty() && v != "auto")
}

impl RunCgroup {
    /// Creates the run's cgroup. `rt`: the RT policy (raw policy, priority) some load needs;
    /// it is tried inside the new cgroup first. On failure, says why (the loads then use
    /// process groups).
    /// `parent`: the cgroup v2 directory to make it in, instead of rtgauge's own.
    pub fn create(
        rt: Option<(i32, i32)>,
        exe: &[std::ffi::OsString],
        parent: Option<&Path>,
    ) -> Result<RunCgroup, crate::vocab::Error> {
        Self::create_text(rt, exe, parent).map_err(crate::vocab::Error::System)
    }

    /// [`Self::create`], its failure as text.
    fn create_text(rt: Option<(i32, i32)>, exe: &[std::ffi::OsString], parent: Option<&Path>) -> Result<RunCgroup, String> {
        let choice = forced();
        let mut reasons = Vec::new();
        if choice.as_deref().is_none_or(|c| c == "cgroup2") {
            match Self::create_in(None, Version::V2, rt, exe, parent) {
                Ok(c) => return Ok(c),
                Err(e) => reasons.push(e),
            }
        }
        let v1: Vec<&str> = match choice.as_deref() {
            None | Some("cgroup1") => vec!["freezer", "pids"],
            Some(c) => c.strip_prefix("cgroup1:").into_iter().collect(),
        };
        {
            for controller in v1 {
                match Self::create_in(Some(controller), Version::V1, rt, exe, None) {
                    Ok(c) => return Ok(c),
                    Err(e) => reasons.push(e),
                }
            }
        }
        if reasons.is_empty() {
            reasons.push("RTGAUGE_CONTAINMENT=process-group".into());
        }
        Err(reasons.join("; "))
    }

    fn create_in(
        controller: Option<&str>,
        version: Version,
        rt: Option<(i32, i32)>,
        exe: &[std::ffi::OsString],
        parent: Option<&Path>,
    ) -> Result<RunCgroup, String> {
        let parent = match parent {
            Some(p) => p.to_path_buf(),
            None => own_dir(controller)?,
        };
        let path = parent.join(format!("rtgauge-{}", std::process::id()));
        std::fs::create_dir(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        // Opened once to find out early whether a child will be able to join.
        let opened = std::fs::OpenOptions::new().write(true).open(path.join("cgroup.procs"));
        let cg = match opened {
            Ok(_) => RunCgroup { path, version },
            Err(e) => {
                let _ = std::fs::remove_dir(&path);
                return Err(format!("cannot open {}/cgroup.procs: {e}", parent.display()));
            }
        };
        if let Some((policy, priority)) = rt {
            let trial = crate::sys::process::Containment {
                cgroup_procs: Some(cg.procs()),
                policy: Some((policy, priority)),
                ..Default::default()
            };
            if let Err(e) = super::launch::try_containment(exe, &trial) {
                let why = format!(
                    "a process in {} cannot run at RT priority {priority} ({e}): the RT group-scheduling trap \
                     (a new cgroup with the cpu controller gets rt_runtime_us=0)",
                    cg.path.display()
                );
                let _ = cg.remove();
                return Err(why);
            }
        }
        Ok(cg)
    }

    /// The `cgroup.procs` file a child writes "0" to, to join.
    pub fn procs(&self) -> PathBuf {
        self.path.join("cgroup.procs")
    }

    /// Kills everything left inside, waits (bounded) until it is empty, and removes it.
    /// Returns an error naming what is left when it could not be removed.
    pub fn remove(self) -> Result<(), crate::vocab::Error> {
        self.remove_text().map_err(crate::vocab::Error::System)
    }

    /// [`Self::remove`], its failure as text.
    fn remove_text(self) -> Result<(), String> {
        Ok(kill_and_remove(&self.path, self.version)?)
    }
}

/// Kills every process in the cgroup at `path`, waits until it is empty (at most 5 s), and
/// removes it. Used by rtgauge at the end of a run and by the guardian.
pub fn kill_and_remove(path: &Path, version: Version) -> Result<(), crate::vocab::Error> {
    kill_and_remove_text(path, version).map_err(crate::vocab::Error::System)
}

/// [`kill_and_remove`], its failure as text.
fn kill_and_remove_text(path: &Path, version: Version) -> Result<(), String> {
    if !path.exists() {
        return Ok(());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match version {
            Version::V2 => {
                if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(path.join("cgroup.kill")) {
                    let _ = f.write_all(b"1");
                } else {
                    kill_listed(path);
                }
            }
            Version::V1 => kill_v1(path),
        }
        if std::fs::remove_dir(path).is_ok() || !path.exists() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("{} still holds processes {:?}", path.display(), pids(path)));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Removes the cgroups of runs that died together with their guardian (`kill -9 $(pidof
/// rtgauge)`, `killall -9 rtgauge`): every `rtgauge-PID` directory where this rtgauge would make
/// its own, whose PID is no longer alive (its own PID is), is emptied (its processes killed) and removed — as a
/// killed run's tuning journal is restored by the next rtgauge. A live PID's cgroup is left alone.
/// Returns one line per cgroup removed, or that could not be.
pub fn remove_stale() -> Vec<String> {
    let mut lines = Vec::new();
    let places = [(None, Version::V2), (Some("freezer"), Version::V1), (Some("pids"), Version::V1)];
    for (controller, version) in places {
        let Ok(parent) = own_dir(controller) else { continue };
        let Ok(entries) = std::fs::read_dir(&parent) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("rtgauge-")).and_then(|p| p.parse::<u32>().ok()) else {
                continue;
            };
            if Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            let path = entry.path();
            let left = pids(&path).len();
            lines.push(match kill_and_remove(&path, version) {
                Ok(()) => format!("removed the cgroup of a killed run, {} ({left} processes in it ended)", path.display()),
                Err(e) => format!("could not remove the cgroup of a killed run: {e}"),
            });
        }
    }
    lines
}

fn pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn kill_listed(path: &Path) {
    for pid in pids(path) {
        crate::sys::signal::kill_process(pid, signal_hook::consts::SIGKILL);
    }
}

/// v1 has no cgroup.kill: freeze the group (where it is a freezer cgroup) so nothing forks
/// while its processes are listed and killed, then thaw it so the kills are delivered.
fn kill_v1(path: &Path) {
    let state = path.join("freezer.state");
    let freezer = state.exists();
    if freezer {
        let _ = std::fs::write(&state, "FROZEN");
        let until = Instant::now() + Duration::from_millis(500);
        while std::fs::read_to_string(&state).is_ok_and(|s| s.trim() == "FREEZING") && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    kill_listed(path);
    if freezer {
        let _ = std::fs::write(&state, "THAWED");
    }
}
