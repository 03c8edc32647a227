//! The settings `--tune` changes by writing a file: RT throttling off, the performance
//! governor, interrupts moved off the measured CPUs. Each original value goes into the
//! journal before the file is written.

use super::journal::{Journal, Undo};
use super::record;
use crate::result::tuning::TuningRecord;
use crate::vocab::cpus::format_cpu_list;

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).map_err(|e| format!("cannot read {path}: {e}"))
}

/// Writes `value` to `path`, its original journaled first; returns the original (nothing is
/// written when it already holds `value`).
pub(super) fn set_file(j: &mut Journal, path: &str, value: &str) -> Result<String, String> {
    let original = read(path)?;
    if original == value {
        return Ok(original);
    }
    j.record(&[Undo::Write { path: path.to_string(), original: original.clone(), set: value.to_string() }])?;
    crate::sys::files::write_setting(std::path::Path::new(path), value)
        .map_err(|e| format!("cannot write {value} to {path}: {}", explain(&e)))?;
    Ok(original)
}

/// An error writing a system file, with what to do about it.
pub(super) fn explain(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => format!("{e}: run as root"),
        _ => e.to_string(),
    }
}

const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";

/// RT throttling off for the run (`sched_rt_runtime_us` = -1).
pub(super) fn rt_throttling(j: &mut Journal) -> TuningRecord {
    let r = record(RT_RUNTIME, "-1 (RT throttling off)");
    match set_file(j, RT_RUNTIME, "-1") {
        Ok(original) => r.applied(original),
        Err(e) => r.failed(e),
    }
}

/// The performance governor on every measured CPU that has cpufreq.
pub(super) fn governor(j: &mut Journal, cpus: &[usize]) -> TuningRecord {
    let r = record(&format!("cpufreq governor of CPUs {}", format_cpu_list(cpus)), "performance");
    let base = "/sys/devices/system/cpu";
    let with: Vec<usize> =
        cpus.iter().copied().filter(|c| std::path::Path::new(&format!("{base}/cpu{c}/cpufreq")).exists()).collect();
    if with.is_empty() {
        return r.failed(format!(
            "no cpufreq on CPUs {} (a fixed frequency, or one the firmware or hypervisor sets): nothing to set",
            format_cpu_list(cpus)
        ));
    }
    let mut originals = Vec::new();
    for c in with {
        let dir = format!("{base}/cpu{c}/cpufreq");
        let offered = read(&format!("{dir}/scaling_available_governors")).unwrap_or_default();
        if !offered.split_whitespace().any(|g| g == "performance") {
            return r.failed(format!("CPU {c} offers no performance governor (only {offered})"));
        }
        match set_file(j, &format!("{dir}/scaling_governor"), "performance") {
            Ok(o) => originals.push(format!("CPU {c}: {o}")),
            Err(e) => return r.failed(e),
        }
    }
    r.applied(originals.join(", "))
}

/// One interrupt's number and the CPUs it may go to (`smp_affinity_list`).
fn irqs() -> Vec<(u32, String)> {
    let mut v: Vec<(u32, String)> = std::fs::read_dir("/proc/irq")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n: u32 = e.file_name().to_str()?.parse().ok()?;
            Some((n, read(&format!("/proc/irq/{n}/smp_affinity_list")).ok()?))
        })
        .collect();
    v.sort_unstable();
    v
}

/// Moves every interrupt that may go to a measured CPU to the others (`housekeeping`), and
/// points new interrupts there (`/proc/irq/default_smp_affinity`). Kernel-managed interrupts
/// (per-queue ones of NVMe and network cards) cannot move; they are counted.
pub(super) fn irq_affinity(j: &mut Journal, measured: &[usize], housekeeping: &[usize]) -> TuningRecord {
    let target = format_cpu_list(housekeeping);
    let mut r = record("interrupt affinity (/proc/irq/*/smp_affinity_list)", &format!("CPUs {target}"));
    if housekeeping.is_empty() {
        return r.failed("every online CPU is measured, so interrupts have nowhere else to go: measure a subset (--cpus)".into());
    }
    let on_measured: Vec<(u32, String)> = irqs()
        .into_iter()
        .filter(|(_, list)| crate::vocab::cpus::parse_cpu_list(list).is_ok_and(|cpus| cpus.iter().any(|c| measured.contains(c))))
        .collect();
    // Every original first, in one write to the journal, then the changes.
    let undos: Vec<Undo> = on_measured
        .iter()
        .map(|(n, list)| Undo::Write {
            path: format!("/proc/irq/{n}/smp_affinity_list"),
            original: list.clone(),
            set: target.clone(),
        })
        .collect();
    if let Err(e) = j.record(&undos) {
        return r.failed(e.into());
    }
    let (mut moved, mut managed, mut errors) = (0usize, 0usize, Vec::new());
    for (n, list) in &on_measured {
        let outcome =
            match crate::sys::files::write_setting(std::path::Path::new(&format!("/proc/irq/{n}/smp_affinity_list")), &target) {
                Ok(()) => {
                    moved += 1;
                    "moved".to_string()
                }
                // EIO: a kernel-managed interrupt, which stays where the kernel put it; EPERM: one
                // its interrupt controller will not move.
                Err(e) if matches!(e.raw_os_error(), Some(5) | Some(1)) => {
                    managed += 1;
                    "kernel-managed or fixed: stays".to_string()
                }
                Err(e) => {
                    let why = explain(&e);
                    errors.push(format!("IRQ {n}: {why}"));
                    format!("not moved: {why}")
                }
            };
        r.items.push(crate::result::tuning::TunedItem { name: n.to_string(), original: list.clone(), outcome });
    }
    let mask = housekeeping.iter().filter(|&&c| c < 128).fold(0u128, |m, &c| m | (1 << c));
    let default = set_file(j, "/proc/irq/default_smp_affinity", &format!("{mask:x}"));
    // Counts in the text (a line each, not one per interrupt); every interrupt in `items`.
    let original = format!(
        "{} could go to CPUs {}; new ones to mask {}",
        plural(on_measured.len(), "interrupt"),
        format_cpu_list(measured),
        default.as_deref().unwrap_or("?")
    );
    if moved == 0 && !errors.is_empty() {
        return r.failed(format!(
            "{} could not be moved (each in the record's items): {}",
            plural(errors.len(), "interrupt"),
            errors[0]
        ));
    }
    let mut value = format!("CPUs {target}: moved {moved} of {}", plural(on_measured.len(), "interrupt"));
    if managed > 0 {
        value += &format!("; {managed} kernel-managed or fixed stay where they are");
    }
    if !errors.is_empty() {
        value += &format!("; {} could not be moved", errors.len());
    }
    r.value = value;
    let mut r = r.applied(original);
    if !errors.is_empty() || default.is_err() {
        let first = errors
            .first()
            .map(|e| format!("{} not moved (each in the record's items), e.g. {e}", plural(errors.len(), "interrupt")));
        r.error = Some(first.into_iter().chain(default.err()).collect::<Vec<_>>().join("; "));
    }
    r
}

/// `1 interrupt`, `25 interrupts`.
fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}
