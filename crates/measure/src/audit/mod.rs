//! Stage two of the flow: a read-only look at the system the measurement runs on — kernel,
//! preemption model, CPUs, clocksource, RT throttling and the privileges this process holds.
//! Recorded in every result (as `result::system::SystemInfo`) so a figure always says how it
//! was obtained. Never changes anything.

pub mod board;
pub mod cgroups;
pub mod checks;
pub mod kconfig;
pub mod tasks;

use crate::result::system::{Preemption, SystemInfo, CONFIG_DEFAULT};
use crate::sys;
use crate::vocab::cpus::parse_cpu_list;
use std::fs;
use std::path::Path;

/// A small text file's content, trimmed (`None`: absent or unreadable).
pub fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The preemption mode a PREEMPT_DYNAMIC kernel starts in when nothing changes it: the
/// preemption model its configuration chose (`CONFIG_PREEMPT_LAZY`, `_PREEMPT`, `_VOLUNTARY`
/// or `_NONE`; one of them is set).
pub fn config_default_mode(k: &kconfig::KernelConfig) -> Option<&'static str> {
    [("PREEMPT_LAZY", "lazy"), ("PREEMPT", "full"), ("PREEMPT_VOLUNTARY", "voluntary"), ("PREEMPT_NONE", "none")]
        .into_iter()
        .find(|(opt, _)| k.enabled(opt))
        .map(|(_, mode)| mode)
}

/// Works out the preemption model from `/sys/kernel/realtime`, the debugfs preempt switch,
/// `uname -v`, the `preempt=` boot parameter and, for a PREEMPT_DYNAMIC kernel's mode when
/// neither of those names it, the mode its configuration starts in (`config_default`: the
/// mode and the configuration file it was read from).
pub fn detect_preemption(
    realtime_sysfs: Option<&str>,
    debugfs_preempt: Option<&str>,
    uname_v: &str,
    cmdline: Option<&str>,
    config_default: Option<(&str, &str)>,
) -> Preemption {
    let mut evidence = Vec::new();
    let mut realtime = false;
    if let Some(v) = realtime_sysfs {
        evidence.push(format!("/sys/kernel/realtime={v}"));
        realtime = v.trim() == "1";
    }
    evidence.push(format!("uname -v: {uname_v}"));
    let words: Vec<&str> = uname_v.split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    if has("PREEMPT_RT") {
        realtime = true;
    }
    let dynamic_mode = match debugfs_preempt {
        Some(line) => {
            evidence.push(format!("/sys/kernel/debug/sched/preempt: {line}"));
            line.split_whitespace()
                .find(|w| w.starts_with('(') && w.ends_with(')'))
                .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
        }
        None => None,
    };
    let boot_mode = cmdline.and_then(|c| c.split_whitespace().find_map(|w| w.strip_prefix("preempt=")).map(|m| m.to_string()));
    if let Some(m) = &boot_mode {
        evidence.push(format!("boot parameter preempt={m}"));
    }
    let model = if realtime {
        "PREEMPT_RT"
    } else if has("PREEMPT_DYNAMIC") {
        "PREEMPT_DYNAMIC"
    } else if has("PREEMPT_LAZY") {
        "PREEMPT_LAZY"
    } else if has("PREEMPT") {
        "PREEMPT"
    } else if !words.is_empty() {
        // uname -v of a non-preemptible kernel names no PREEMPT flag (voluntary or none).
        "NONE_OR_VOLUNTARY"
    } else {
        "unknown"
    };
    let dynamic_mode = if model == "PREEMPT_DYNAMIC" {
        dynamic_mode.or(boot_mode).or_else(|| {
            let (mode, file) = config_default?;
            evidence.push(format!("{CONFIG_DEFAULT} ({file}): {mode}"));
            Some(mode.to_string())
        })
    } else {
        dynamic_mode
    };
    Preemption { model: model.to_string(), realtime, dynamic_mode, evidence }
}

fn cpu_model() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    for key in ["model name", "Model", "Hardware", "cpu model", "Processor"] {
        if let Some(v) = cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        }) {
            return v;
        }
    }
    if let Some(m) = read_trim("/sys/firmware/devicetree/base/model") {
        return m.trim_end_matches('\0').to_string();
    }
    // ARM without a model name: implementer/part numbers identify the core.
    let get = |k: &str| {
        cpuinfo.lines().find_map(|l| {
            let (a, b) = l.split_once(':')?;
            (a.trim() == k).then(|| b.trim().to_string())
        })
    };
    match (get("CPU implementer"), get("CPU part")) {
        (Some(i), Some(p)) => format!("implementer {i} part {p}"),
        _ => "unknown".to_string(),
    }
}

/// The cpu cgroup of this process and its `cpu.rt_runtime_us`, if RT group scheduling shows it.
fn cpu_cgroup() -> (Option<String>, Option<i64>) {
    let text = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut v1 = None;
    let mut v2 = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if ctrls.split(',').any(|c| c == "cpu") {
            v1 = Some(path.to_string());
        } else if ctrls.is_empty() {
            v2 = Some(path.to_string());
        }
    }
    if let Some(path) = v1 {
        let file = format!("/sys/fs/cgroup/cpu{}/cpu.rt_runtime_us", path.trim_end_matches('/'));
        let file = if Path::new(&file).exists() {
            file
        } else {
            format!("/sys/fs/cgroup/cpu,cpuacct{}/cpu.rt_runtime_us", path.trim_end_matches('/'))
        };
        return (Some(path), read_trim(&file).and_then(|s| s.parse().ok()));
    }
    if let Some(path) = v2 {
        let file = format!("/sys/fs/cgroup{}/cpu.rt_runtime_us", path.trim_end_matches('/'));
        return (Some(path), read_trim(&file).and_then(|s| s.parse().ok()));
    }
    (None, None)
}

const CAP_IPC_LOCK: u32 = 14;
const CAP_SYS_NICE: u32 = 23;

/// Whether capability number `cap` is in the process's effective set.
pub fn has_capability(cap: u32) -> bool {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("CapEff:")).and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok()))
        .is_some_and(|caps| caps & (1 << cap) != 0)
}

/// Online CPUs as the kernel lists them.
pub fn online_cpus() -> Vec<usize> {
    read_trim("/sys/devices/system/cpu/online")
        .and_then(|s| parse_cpu_list(&s).ok())
        .unwrap_or_else(|| (0..std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).collect())
}

/// Reads the system. Read-only; anything unreadable is recorded as unknown.
pub fn probe_system() -> SystemInfo {
    let uname_v = read_trim("/proc/sys/kernel/version").unwrap_or_default();
    let release = read_trim("/proc/sys/kernel/osrelease").unwrap_or_default();
    // The configuration is read only for a PREEMPT_DYNAMIC kernel's mode (the audit's checks
    // read it again for theirs).
    let config =
        if uname_v.split_whitespace().any(|w| w == "PREEMPT_DYNAMIC") { kconfig::KernelConfig::read(&release) } else { None };
    let config_default = config.as_ref().and_then(|k| config_default_mode(k).map(|m| (m, k.source.as_str())));
    let preemption = detect_preemption(
        read_trim("/sys/kernel/realtime").as_deref(),
        read_trim("/sys/kernel/debug/sched/preempt").as_deref(),
        &uname_v,
        read_trim("/proc/cmdline").as_deref(),
        config_default,
    );
    let (cpu_cgroup, cgroup_rt_runtime_us) = cpu_cgroup();
    SystemInfo {
        hostname: read_trim("/proc/sys/kernel/hostname").unwrap_or_default(),
        kernel_release: release,
        kernel_version: uname_v,
        architecture: sys::host::uname_machine(),
        preemption,
        cpu_model: cpu_model(),
        allowed_cpus: {
            let online = online_cpus();
            match sys::sched::allowed_cpus() {
                Ok(allowed) => online.iter().copied().filter(|c| allowed.contains(c)).collect(),
                Err(_) => online.clone(),
            }
        },
        online_cpus: online_cpus(),
        clocksource: read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        sched_rt_runtime_us: read_trim("/proc/sys/kernel/sched_rt_runtime_us").and_then(|s| s.parse().ok()),
        sched_rt_period_us: read_trim("/proc/sys/kernel/sched_rt_period_us").and_then(|s| s.parse().ok()),
        effective_uid: sys::process::effective_uid(),
        rlimit_rtprio: sys::process::rtprio_limit().unwrap_or(Some(0)),
        rlimit_memlock: sys::process::memlock_limit().unwrap_or(Some(0)),
        cap_sys_nice: has_capability(CAP_SYS_NICE),
        cap_ipc_lock: has_capability(CAP_IPC_LOCK),
        cpu_cgroup,
        cgroup_rt_runtime_us,
        rt_priority_obtained: false,
        mlockall_obtained: false,
        mlockall_error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rt_kernel_from_sysfs() {
        let p = detect_preemption(Some("1"), None, "#1 SMP PREEMPT_RT Debian 6.1.0-56", None, None);
        assert_eq!((p.model.as_str(), p.realtime), ("PREEMPT_RT", true));
    }

    #[test]
    fn dynamic_kernel_mode_from_debugfs() {
        let p = detect_preemption(
            None,
            Some("none voluntary (full) lazy"),
            "#1 SMP PREEMPT_DYNAMIC @0",
            None,
            Some(("none", "/proc/config.gz")),
        );
        assert_eq!(p.model, "PREEMPT_DYNAMIC");
        assert_eq!(p.dynamic_mode.as_deref(), Some("full"));
        assert!(!p.realtime);
        let p = detect_preemption(
            None,
            None,
            "#1 SMP PREEMPT_DYNAMIC",
            Some("quiet preempt=none"),
            Some(("full", "/proc/config.gz")),
        );
        assert_eq!(p.dynamic_mode.as_deref(), Some("none"));
        assert_eq!(p.mode_source(), Some("the boot parameter preempt="));
    }

    #[test]
    fn a_dynamic_kernel_without_debugfs_or_preempt_records_its_configurations_mode() {
        let p = detect_preemption(None, None, "#1 SMP PREEMPT_DYNAMIC @0", Some("quiet"), Some(("none", "/proc/config.gz")));
        assert_eq!(p.dynamic_mode.as_deref(), Some("none"), "the mode the audit names, not null");
        assert_eq!(p.mode_source(), Some("the kernel configuration's default"));
        assert!(p.evidence.iter().any(|e| e.contains("/proc/config.gz")), "{:?}", p.evidence);
        let p = detect_preemption(None, Some("none voluntary (full) lazy"), "#1 SMP PREEMPT_DYNAMIC @0", None, None);
        assert_eq!(p.mode_source(), Some("/sys/kernel/debug/sched/preempt"));
        // Not a dynamic kernel: its configuration's choice is its model, not a mode.
        let p = detect_preemption(None, None, "#1 SMP PREEMPT Tue", None, Some(("full", "/proc/config.gz")));
        assert_eq!((p.dynamic_mode.as_deref(), p.mode_source()), (None, None));
        // Nothing readable: unknown, as before.
        assert_eq!(detect_preemption(None, None, "#1 SMP PREEMPT_DYNAMIC", None, None).dynamic_mode, None);
    }

    #[test]
    fn plain_kernels() {
        assert_eq!(detect_preemption(None, None, "#1 SMP PREEMPT Tue", None, None).model, "PREEMPT");
        assert_eq!(detect_preemption(None, None, "#1 SMP Debian", None, None).model, "NONE_OR_VOLUNTARY");
        assert_eq!(detect_preemption(None, None, "", None, None).model, "unknown");
    }

    #[test]
    fn probe_reads_this_machine() {
        let s = probe_system();
        assert!(!s.kernel_release.is_empty());
        assert!(!s.online_cpus.is_empty());
    }
}
