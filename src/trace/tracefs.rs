//! The kernel's tracing file system as `--trace` uses it: found or mounted, one trace instance
//! per measured CPU (its own buffer, events and `tracing_on`, so a stop on one CPU leaves the
//! others recording), read back and restarted. Instances leave the system's own trace settings
//! alone; removing one undoes everything set in it. Every mount and instance goes into the
//! journal first.

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

/// Where tracefs is, and whether rtgauge mounted it.
pub struct Tracefs {
    pub root: PathBuf,
    pub mounted: bool,
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("cannot write {value} to {}: {e}", path.display()))
}

/// Finds tracefs (mounted, or under debugfs), or mounts it at /sys/kernel/tracing.
pub fn find_or_mount(j: &mut Journal) -> Result<Tracefs, String> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let at = mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(2) == Some(&"tracefs")).then(|| PathBuf::from(f[1]))
    });
    if let Some(root) = at.filter(|r| r.join("instances").exists()) {
        return Ok(Tracefs { root, mounted: false });
    }
    let debug = Path::new("/sys/kernel/debug/tracing");
    if debug.join("instances").exists() {
        return Ok(Tracefs { root: debug.to_path_buf(), mounted: false });
    }
    let supported =
        std::fs::read_to_string("/proc/filesystems").unwrap_or_default().lines().any(|l| l.trim_end().ends_with("tracefs"));
    if !supported {
        return Err("this kernel has no tracefs (CONFIG_TRACING): no trace can explain the worst case".into());
    }
    let root = PathBuf::from("/sys/kernel/tracing");
    j.record(&[Undo::Unmount { path: root.display().to_string() }])?;
    crate::sys::mount_kernel_fs("tracefs", "/sys/kernel/tracing").map_err(|e| {
        let fix = if e.kind() == std::io::ErrorKind::PermissionDenied { ": run as root" } else { "" };
        format!("cannot mount tracefs at /sys/kernel/tracing: {e}{fix}")
    })?;
    Ok(Tracefs { root, mounted: true })
}

/// One CPU's trace instance.
pub struct Instance {
    pub cpu: usize,
    dir: PathBuf,
    /// Its `tracing_on`, which the CPU's measurement threads write `0` to.
    pub on: File,
    pub events: Vec<String>,
}

/// A CPU mask as tracefs writes it: hexadecimal, in 32-bit groups separated by commas.
fn cpu_mask(cpu: usize) -> String {
    let groups = cpu / 32 + 1;
    (0..groups).rev().map(|g| format!("{:08x}", if g == cpu / 32 { 1u32 << (cpu % 32) } else { 0 })).collect::<Vec<_>>().join(",")
}

impl Instance {
    /// Makes CPU `cpu`'s instance: its events, the `mono` clock (CLOCK_MONOTONIC, as the
    /// measurement's), a buffer of `buffer_kb` for that CPU and the least for the others.
    /// `k` tells the CPU's instances apart.
    pub fn make(j: &mut Journal, fs: &Tracefs, cpu: usize, k: usize, buffer_kb: u64) -> Result<Instance, String> {
        let dir = fs.root.join("instances").join(format!("rtgauge-{}-cpu{cpu}-{k}", std::process::id()));
        j.record(&[Undo::RemoveDir { path: dir.display().to_string() }])?;
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make the trace instance {}: {e}", dir.display()))?;
        let set = || -> Result<Instance, String> {
            write(&dir.join("tracing_on"), "0")?;
            write(&dir.join("buffer_size_kb"), "4")?;
            write(&dir.join(format!("per_cpu/cpu{cpu}/buffer_size_kb")), &buffer_kb.to_string())?;
            write(&dir.join("tracing_cpumask"), &cpu_mask(cpu))?;
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
    pub fn read(&self, buffer_kb: u64, give_up: impl Fn() -> bool) -> Result<Option<String>, String> {
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
    fn cpu_masks_in_32_bit_groups() {
        assert_eq!(super::cpu_mask(1), "00000002");
        assert_eq!(super::cpu_mask(33), "00000002,00000000");
    }
}
