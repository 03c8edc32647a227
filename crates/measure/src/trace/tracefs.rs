//! The kernel's tracing file system as rtgauge uses it (the file system itself is
//! `sys::tracefs`): found or mounted, one trace instance
//! per measured CPU (its own buffer, events and `tracing_on`, so a stop on one CPU leaves the
//! others recording), read back and restarted. Instances leave the system's own trace settings
//! alone; removing one undoes everything set in it. Every mount and instance goes into the
//! journal.
//!
//! Names: an instance is `rtgauge-PID-RANDOM-cpuN-K` (the run's process id, then 16 random hex
//! digits: no other program can make it first; one that exists is never used). A mount rtgauge
//! makes has the source `rtgauge` (the first column of /proc/mounts), so every rtgauge tells it
//! from the system's. Mounts are shared: a run that finds rtgauge's mount takes its part in it
//! (journaled as the mount is), and whoever ends last unmounts it — a mount is unmounted only
//! when no trace instance is left in it (the journal's unmount, see `tuning::journal`). Instances of runs whose process is
//! gone are removed by the next rtgauge and `rtgauge restore` ([`remove_stale`]).

use crate::sys::tracefs::{cpu_mask, mounts, remove_instance as remove_dir, roots, write, UNDER_DEBUGFS};
use crate::tuning::journal::{Journal, Undo};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The events an explanation is built from (those the kernel has are enabled).
pub const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_wakeup",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "irq_vectors/reschedule_entry",
    "irq_vectors/reschedule_exit",
    "irq_vectors/call_function_entry",
    "irq_vectors/call_function_exit",
    "irq_vectors/call_function_single_entry",
    "irq_vectors/call_function_single_exit",
    "irq_vectors/irq_work_entry",
    "irq_vectors/irq_work_exit",
];

/// The source rtgauge mounts tracefs with (what /proc/mounts shows in its first column).
pub const MOUNT_SOURCE: &str = crate::tuning::journal::TRACEFS_SOURCE;
/// Where rtgauge mounts tracefs when it finds none.
const MOUNT_AT: &str = crate::tuning::journal::TRACEFS_MOUNT;
/// The start of every instance rtgauge makes.
const PREFIX: &str = "rtgauge-";

/// Where tracefs is, and whether rtgauge mounted it (this run, or another rtgauge whose mount
/// this run shares).
pub struct Tracefs {
    pub root: PathBuf,
    pub mounted: bool,
}

/// Finds tracefs (mounted, or under debugfs), or mounts it at /sys/kernel/tracing. A mount
/// another rtgauge made is shared: this run journals it too, and the last one to end unmounts it.
pub fn find_or_mount(j: &mut Journal) -> Result<Tracefs, crate::vocab::Error> {
    find_or_mount_text(j).map_err(crate::vocab::Error::System)
}

/// [`find_or_mount`], its failure as text.
fn find_or_mount_text(j: &mut Journal) -> Result<Tracefs, String> {
    if let Some((source, root)) = mounts().into_iter().find(|(_, r)| r.join("instances").is_dir()) {
        let shared = source == MOUNT_SOURCE;
        if shared {
            j.record(&[Undo::Unmount { path: root.display().to_string() }])?;
        }
        return Ok(Tracefs { root, mounted: shared });
    }
    let debug = Path::new(UNDER_DEBUGFS);
    if debug.join("instances").is_dir() {
        return Ok(Tracefs { root: debug.to_path_buf(), mounted: false });
    }
    if !crate::sys::tracefs::supported() {
        return Err("this kernel has no tracefs (CONFIG_TRACING): no trace can explain the worst case".into());
    }
    let root = PathBuf::from(MOUNT_AT);
    j.record(&[Undo::Unmount { path: root.display().to_string() }])?;
    crate::sys::tracefs::mount(MOUNT_SOURCE, MOUNT_AT)?;
    Ok(Tracefs { root, mounted: true })
}

/// The process id in the name of an instance rtgauge made (`rtgauge-PID-...`).
fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, tail) = rest.split_once('-')?;
    (!tail.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then(|| pid.parse().ok()).flatten()
}

/// Whether process `pid` lives.
fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether `path` is a trace instance rtgauge makes: `instances/rtgauge-PID-...` directly in a
/// tracefs mount (for what a journal may ask to be removed).
pub fn is_own_instance(path: &Path) -> bool {
    let (Some(name), Some(dir)) = (path.file_name().and_then(|n| n.to_str()), path.parent()) else { return false };
    owner(name).is_some()
        && dir.file_name().is_some_and(|d| d == "instances")
        && dir.parent().is_some_and(|root| root == Path::new(UNDER_DEBUGFS) || mounts().iter().any(|(_, r)| r == root))
}

/// Removes the trace instances of runs whose process is gone (killed with their guardian: their
/// instances would trace on for ever), in every tracefs mount. One line per instance removed or
/// not.
pub fn remove_stale() -> Vec<String> {
    let mut lines = Vec::new();
    for root in roots() {
        let Ok(entries) = std::fs::read_dir(root.join("instances")) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(owner) else { continue };
            if alive(pid) {
                continue;
            }
            let path = entry.path();
            lines.push(match remove_dir(&path) {
                Ok(()) => format!("removed the trace instance of a killed run (pid {pid}), {}", path.display()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue, // its guardian was quicker
                Err(e) => format!("could not remove the trace instance of a killed run, {}: {e}", path.display()),
            });
        }
    }
    lines
}

/// Makes the instance `rtgauge-PID-NAME` (`name` begins with the run's random token) and
/// journals it. An instance of that name that exists is not used (it is another program's): an
/// error.
pub fn make_instance(j: &mut Journal, fs: &Tracefs, name: &str) -> Result<PathBuf, crate::vocab::Error> {
    make_instance_text(j, fs, name).map_err(crate::vocab::Error::System)
}

/// [`make_instance`], its failure as text.
fn make_instance_text(j: &mut Journal, fs: &Tracefs, name: &str) -> Result<PathBuf, String> {
    let dir = fs.root.join("instances").join(format!("{PREFIX}{}-{name}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => format!(
            "the trace instance {} exists already: another program made it under rtgauge's name (it is left \
             alone); remove it with rmdir, or run again",
            dir.display()
        ),
        _ => format!("cannot make the trace instance {}: {e}", dir.display()),
    })?;
    // Journaled once made (what it names is then ours): a run killed in between leaves an
    // instance of a dead process, which the next rtgauge removes.
    if let Err(e) = j.record(&[Undo::RemoveDir { path: dir.display().to_string() }]) {
        let _ = std::fs::remove_dir(&dir);
        return Err(e.into());
    }
    Ok(dir)
}

/// One CPU's trace instance.
pub struct Instance {
    pub cpu: usize,
    dir: PathBuf,
    /// Its `tracing_on`, which the CPU's measurement threads write `0` to.
    pub on: File,
    pub events: Vec<String>,
}

impl Instance {
    /// Makes CPU `cpu`'s instance: its events, the `mono` clock (CLOCK_MONOTONIC, as the
    /// measurement's), a buffer of `buffer_kb` for that CPU and the least for the others.
    /// `k` tells the CPU's instances apart, `token` (random) makes the run's names its own.
    /// An instance of that name that exists is not used (it is another program's): an error.
    pub fn make(
        j: &mut Journal,
        fs: &Tracefs,
        cpu: usize,
        k: usize,
        token: u64,
        buffer_kb: u64,
    ) -> Result<Instance, crate::vocab::Error> {
        Self::make_text(j, fs, cpu, k, token, buffer_kb).map_err(crate::vocab::Error::System)
    }

    /// [`Self::make`], its failure as text.
    fn make_text(j: &mut Journal, fs: &Tracefs, cpu: usize, k: usize, token: u64, buffer_kb: u64) -> Result<Instance, String> {
        let dir = make_instance(j, fs, &format!("{token:016x}-cpu{cpu}-{k}"))?;
        let set = || -> Result<Instance, String> {
            write(&dir.join("tracing_on"), "0")?;
            write(&dir.join("buffer_size_kb"), "4")?;
            write(&dir.join(format!("per_cpu/cpu{cpu}/buffer_size_kb")), &buffer_kb.to_string())?;
            write(&dir.join("tracing_cpumask"), &cpu_mask(&[cpu]))?;
            write(&dir.join("trace_clock"), "mono")?;
            let events: Vec<String> = EVENTS
                .iter()
                .filter(|e| write(&dir.join("events").join(e).join("enable"), "1").is_ok())
                .map(|e| e.to_string())
                .collect();
            if !events.iter().any(|e| e == "sched/sched_switch") {
                return Err("the kernel offers no sched_switch event to trace".into());
            }
            write(&dir.join("tracing_on"), "1")?;
            let on = OpenOptions::new()
                .write(true)
                .open(dir.join("tracing_on"))
                .map_err(|e| format!("cannot open tracing_on: {e}"))?;
            Ok(Instance { cpu, dir: dir.clone(), on, events })
        };
        set().inspect_err(|_| {
            let _ = std::fs::remove_dir(&dir);
        })
    }

    /// The CPU's trace as text (the instance is stopped while it is read; a buffer's text is
    /// a few times its size, so at most 64 times the buffer is read), or `None` when `give_up`
    /// says so before a piece of it or once it is read (a larger worst case waits to be traced).
    pub fn read(&self, buffer_kb: u64, give_up: impl Fn() -> bool) -> Result<Option<String>, crate::vocab::Error> {
        self.read_text(buffer_kb, give_up).map_err(crate::vocab::Error::System)
    }

    /// [`Self::read`], its failure as text.
    fn read_text(&self, buffer_kb: u64, give_up: impl Fn() -> bool) -> Result<Option<String>, String> {
        use std::io::Read;
        let path = self.dir.join(format!("per_cpu/cpu{}/trace", self.cpu));
        let unreadable = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
        let mut file = File::open(&path).map_err(unreadable)?.take(buffer_kb.saturating_mul(64 << 10));
        let mut bytes = Vec::new();
        loop {
            if give_up() {
                return Ok(None);
            }
            // (read_to_end retries an interrupted read itself)
            if (&mut file).take(64 << 10).read_to_end(&mut bytes).map_err(unreadable)? == 0 {
                break;
            }
        }
        Ok((!give_up()).then(|| String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// Empties the CPU's buffer and records again.
    pub fn restart(&mut self) {
        let _ = OpenOptions::new().write(true).truncate(true).open(self.dir.join(format!("per_cpu/cpu{}/trace", self.cpu)));
        let _ = self.on.write_all(b"1");
    }

    /// Stops recording and removes the instance (and everything set in it).
    pub fn remove(self) {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        drop(self.on);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_instance_names_its_owner() {
        assert_eq!(super::owner("rtgauge-123-00ff00ff00ff00ff-cpu0-1"), Some(123));
        assert_eq!(super::owner("rtgauge-123-cpu0-1"), Some(123), "as rtgauge named them before");
        assert_eq!(super::owner("rtgauge-x-cpu0"), None);
        assert_eq!(super::owner("rtgauge-123"), None);
        assert_eq!(super::owner("mine-123-cpu0"), None);
        assert!(!super::is_own_instance(std::path::Path::new("/etc/rtgauge-1-x")));
    }
}
