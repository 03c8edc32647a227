//! `rtgauge __guardian`: makes sure loads never outlive rtgauge, even when it is killed with
//! SIGKILL. rtgauge starts it first, in a process group of its own, with a pipe on its standard
//! input, and tells it, one line each, the run's cgroup (`cgroup VERSION PATH`), every load
//! process group (`group PGID`) and temporary directory (`dir PATH`) it creates, the named
//! file a result is staged in before it is renamed into place (`file PATH`), and
//! `release ...` when it has cleaned one up itself, and the journal of a run's tuning
//! (`journal PATH`). When the pipe closes — rtgauge ended, however it ended — the guardian
//! kills everything in the cgroup still registered and removes it, kills every group still
//! registered, removes every directory and file still registered, restores what the journal
//! still holds (a run that ended normally restored it and removed it already), and exits.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

/// Entry point of `rtgauge __guardian`.
pub fn main() -> u8 {
    // Ctrl-C and SIGTERM aimed at rtgauge's group must not stop the clean-up.
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        let _ = signal_hook::flag::register(sig, std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)));
    }
    let mut groups = BTreeSet::new();
    let mut dirs = BTreeSet::new();
    let mut cgroups = BTreeSet::new();
    let mut journals = BTreeSet::new();
    let mut files = BTreeSet::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match line.split_once(' ') {
            Some(("group", g)) => drop(g.parse::<i32>().map(|g| groups.insert(g))),
            Some(("dir", d)) => drop(dirs.insert(d.to_string())),
            Some(("cgroup", c)) => drop(cgroups.insert(c.to_string())),
            Some(("journal", j)) => drop(journals.insert(j.to_string())),
            Some(("file", f)) => drop(files.insert(f.to_string())),
            Some(("release", rest)) => match rest.split_once(' ') {
                Some(("group", g)) => drop(g.parse::<i32>().map(|g| groups.remove(&g))),
                Some(("dir", d)) => drop(dirs.remove(d)),
                Some(("cgroup", c)) => drop(cgroups.remove(c)),
                Some(("file", f)) => drop(files.remove(f)),
                _ => {}
            },
            _ => {}
        }
    }
    for c in &cgroups {
        if let Some((v, path)) = c.split_once(' ') {
            if let Some(v) = super::contain::Version::from_number(v) {
                let _ = super::contain::kill_and_remove(std::path::Path::new(path), v);
            }
        }
    }
    for g in &groups {
        let _ = crate::sys::signal::signal_group(*g, signal_hook::consts::SIGKILL);
    }
    for d in &dirs {
        let _ = std::fs::remove_dir_all(d);
    }
    for f in &files {
        let _ = std::fs::remove_file(f);
    }
    // rtgauge's lock on the journal goes with its last descriptor, a moment after the pipe's.
    for j in &journals {
        let _ = crate::tuning::journal::recover_at(std::path::Path::new(j), std::time::Duration::from_secs(3));
    }
    0
}

/// Why rtgauge could not start itself again (`what`: "the load guardian"), as one line
/// naming the problem and the fix. An executable the kernel cannot run (ENOEXEC) is a binary
/// for another architecture run under an emulator (qemu-user) the kernel does not know: the
/// emulator started rtgauge, but nothing starts its helpers.
pub fn cannot_start(what: &str, exe: &[std::ffi::OsString], e: &std::io::Error) -> String {
    if e.raw_os_error() != Some(libc::ENOEXEC) {
        return format!("cannot start {what}: {e}");
    }
    let program = exe.first().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    format!(
        "cannot start {what}: the kernel cannot execute {} ({e}): this binary is for another architecture and runs \
         under an emulator (qemu-user) that binfmt_misc does not register, so rtgauge cannot start itself again for \
         its loads; measure without loads (--load none), name the emulator in RTGAUGE_RUNNER (e.g. \
         RTGAUGE_RUNNER=qemu-aarch64), or register it with binfmt_misc (e.g. apt install qemu-user-binfmt)",
        crate::vocab::shown(&program)
    )
}

/// rtgauge's side: the running guardian and the pipe to it.
pub struct Guardian {
    child: Child,
    pipe: Option<ChildStdin>,
}

impl Guardian {
    pub fn start(exe: &[std::ffi::OsString]) -> std::io::Result<Guardian> {
        let mut cmd = Command::new(&exe[0]);
        cmd.args(&exe[1..]).arg("__guardian").stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null());
        // A process group of its own, set by posix_spawn: rtgauge never forks (see `launch`).
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn()?;
        let pipe = child.stdin.take();
        Ok(Guardian { child, pipe })
    }

    fn say(&mut self, line: &str) {
        if let Some(p) = &mut self.pipe {
            let _ = writeln!(p, "{line}").and_then(|_| p.flush());
        }
    }
    pub fn watch_group(&mut self, pgid: i32) {
        self.say(&format!("group {pgid}"));
    }
    pub fn release_group(&mut self, pgid: i32) {
        self.say(&format!("release group {pgid}"));
    }
    pub fn watch_cgroup(&mut self, path: &std::path::Path, v: super::contain::Version) {
        self.say(&format!("cgroup {} {}", v.number(), path.display()));
    }
    pub fn release_cgroup(&mut self, path: &std::path::Path, v: super::contain::Version) {
        self.say(&format!("release cgroup {} {}", v.number(), path.display()));
    }
    /// The journal of the run's tuning: restored if rtgauge dies without doing so.
    pub fn watch_journal(&mut self, path: &std::path::Path) {
        self.say(&format!("journal {}", path.display()));
    }
    pub fn watch_dir(&mut self, dir: &std::path::Path) {
        self.say(&format!("dir {}", dir.display()));
    }
    pub fn release_dir(&mut self, dir: &std::path::Path) {
        self.say(&format!("release dir {}", dir.display()));
    }
    /// A file that must not outlive rtgauge under this name (a result staged before its rename).
    pub fn watch_file(&mut self, file: &std::path::Path) {
        self.say(&format!("file {}", file.display()));
    }
    pub fn release_file(&mut self, file: &std::path::Path) {
        self.say(&format!("release file {}", file.display()));
    }
}

impl Drop for Guardian {
    fn drop(&mut self) {
        drop(self.pipe.take());
        let _ = self.child.wait();
    }
}
