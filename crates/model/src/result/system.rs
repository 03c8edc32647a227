//! The audited system as the result document records it (`RunResult::system`,
//! `CheckResult::system`): kernel, preemption model, CPUs, clocksource, RT throttling and the
//! privileges the process holds. The audit (`audit::probe_system`) reads it; the run fills in
//! what it obtained.

use serde::{Deserialize, Serialize};

/// How preemptible the kernel is, and how we know.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Preemption {
    /// `PREEMPT_RT`, `PREEMPT_LAZY`, `PREEMPT`, `PREEMPT_DYNAMIC`, `VOLUNTARY` or `NONE`,
    /// or `unknown` when nothing readable tells.
    pub model: String,
    /// Whether the kernel is a PREEMPT_RT kernel.
    pub realtime: bool,
    /// For PREEMPT_DYNAMIC kernels, the mode in force (`none`, `voluntary`, `full`, `lazy`):
    /// from `/sys/kernel/debug/sched/preempt` when debugfs is mounted, else the boot parameter
    /// `preempt=`, else the mode the kernel's configuration starts in (the evidence says which);
    /// `null` when none of them is readable.
    pub dynamic_mode: Option<String>,
    /// What each source said, e.g. `/sys/kernel/realtime=1`, `uname -v: PREEMPT_DYNAMIC`.
    pub evidence: Vec<String>,
}

/// The audited system. Every field is read, none is assumed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SystemInfo {
    pub hostname: String,
    pub kernel_release: String,
    pub kernel_version: String,
    pub architecture: String,
    pub preemption: Preemption,
    pub cpu_model: String,
    pub online_cpus: Vec<usize>,
    /// Online CPUs this process may run on (its affinity mask: taskset, cpusets).
    pub allowed_cpus: Vec<usize>,
    pub clocksource: Option<String>,
    /// `/proc/sys/kernel/sched_rt_runtime_us` (-1: RT throttling disabled).
    pub sched_rt_runtime_us: Option<i64>,
    pub sched_rt_period_us: Option<i64>,
    pub effective_uid: u32,
    /// Soft RLIMIT_RTPRIO; `null` means unlimited.
    pub rlimit_rtprio: Option<u64>,
    /// Soft RLIMIT_MEMLOCK in bytes; `null` means unlimited.
    pub rlimit_memlock: Option<u64>,
    /// Whether the process holds CAP_SYS_NICE in its effective set.
    pub cap_sys_nice: bool,
    /// Whether the process holds CAP_IPC_LOCK (locking memory beyond RLIMIT_MEMLOCK).
    pub cap_ipc_lock: bool,
    /// The process's cgroup (v1 `cpu` controller path, or the v2 path).
    pub cpu_cgroup: Option<String>,
    /// `cpu.rt_runtime_us` of that cgroup, where RT group scheduling exposes it.
    pub cgroup_rt_runtime_us: Option<i64>,
    /// Filled by the run: whether the measurement threads obtained the RT policy asked for.
    pub rt_priority_obtained: bool,
    /// Filled by the run: whether `mlockall` succeeded.
    pub mlockall_obtained: bool,
    /// Why `mlockall` failed, when it did.
    pub mlockall_error: Option<String>,
}

/// How the evidence names the mode a PREEMPT_DYNAMIC kernel's configuration starts in.
pub const CONFIG_DEFAULT: &str = "the kernel configuration's default mode";

impl Preemption {
    /// Where `dynamic_mode` was read: the debugfs switch, the boot parameter or the kernel
    /// configuration's default (in the order `audit::detect_preemption` takes them).
    pub fn mode_source(&self) -> Option<&'static str> {
        self.dynamic_mode.as_ref()?;
        let debugfs_named_it = self
            .evidence
            .iter()
            .filter_map(|e| e.strip_prefix("/sys/kernel/debug/sched/preempt:"))
            .any(|line| line.split_whitespace().any(|w| w.starts_with('(') && w.ends_with(')')));
        Some(if debugfs_named_it {
            "/sys/kernel/debug/sched/preempt"
        } else if self.evidence.iter().any(|e| e.starts_with(CONFIG_DEFAULT)) {
            "the kernel configuration's default"
        } else {
            "the boot parameter preempt="
        })
    }
}

impl SystemInfo {
    /// Whether this process may use RT priorities at all (root, CAP_SYS_NICE or RLIMIT_RTPRIO).
    pub fn may_use_rt(&self, priority: i32) -> bool {
        self.effective_uid == 0 || self.cap_sys_nice || self.rlimit_rtprio.is_none_or(|l| l >= priority as u64)
    }

    /// Why locking all memory is unsafe here, if it is: with a finite RLIMIT_MEMLOCK and no
    /// CAP_IPC_LOCK, `mlockall(MCL_FUTURE)` can succeed and make every later allocation or
    /// stack growth past the limit fail (a crash in the middle of the run).
    pub fn memory_lock_hazard(&self) -> Option<String> {
        match (self.cap_ipc_lock, self.rlimit_memlock) {
            (true, _) | (_, None) => None,
            (false, Some(limit)) => Some(format!(
                "RLIMIT_MEMLOCK is {} KiB and CAP_IPC_LOCK is missing, so locking all memory could exhaust the limit; \
                 run as root, or raise it ('ulimit -l unlimited', 'memlock' in /etc/security/limits.conf)",
                limit / 1024
            )),
        }
    }

    /// A one-line explanation of why RT scheduling was refused, with the fix.
    pub fn explain_rt_refusal(&self, policy: &str, priority: i32, err: &std::io::Error) -> String {
        let base = format!("cannot run the measurement threads at {policy} {priority}: {err}");
        if !self.may_use_rt(priority) {
            format!(
                "{base} (not root, no CAP_SYS_NICE, RLIMIT_RTPRIO is {}): run as root, or grant it with \
                 'setcap cap_sys_nice,cap_ipc_lock+ep rtgauge', or raise 'rtprio' in /etc/security/limits.conf; \
                 or measure without RT priority on purpose with --policy other",
                self.rlimit_rtprio.map_or("unlimited".to_string(), |l| l.to_string())
            )
        } else if self.cgroup_rt_runtime_us == Some(0) {
            let group = self.cpu_cgroup.as_deref().unwrap_or("?");
            format!(
                "{base}: this process's cpu cgroup '{group}' has cpu.rt_runtime_us = 0 (RT group scheduling): \
                 run rtgauge in a cgroup with RT runtime (e.g. 'echo $$ > /sys/fs/cgroup/cpu/tasks' first) or give \
                 this one some ('echo 950000 > /sys/fs/cgroup/cpu{group}/cpu.rt_runtime_us'); or use --policy other"
            )
        } else {
            format!(
                "{base}: the kernel refused although this process may use RT priorities; check RT group \
                 scheduling (cpu.rt_runtime_us of its cgroup) and security modules; or use --policy other"
            )
        }
    }
}
