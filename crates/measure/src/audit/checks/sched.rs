//! Checks of the scheduler's settings and of what this process may do: RT throttling, RT group
//! scheduling, resource limits, threaded IRQ priorities, timer migration, and the C library's
//! priority-inheritance mutexes (tried, not assumed).

use super::{words, Ctx};
use crate::audit::read_trim;
use crate::audit::tasks::{self, TaskStat};
use crate::result::findings::{Finding, Severity};
use serde_json::json;

pub(super) fn rt_throttling(c: &Ctx) -> Finding {
    let (runtime, period) = (c.system.sched_rt_runtime_us, c.system.sched_rt_period_us);
    let (severity, observed) = match (runtime, period) {
        (Some(-1), _) => (Severity::Ok, "disabled (sched_rt_runtime_us = -1)".to_string()),
        (Some(r), Some(p)) if r >= p => (Severity::Ok, format!("no effect: runtime {r} µs of every {p} µs")),
        (Some(r), Some(p)) => (
            Severity::Warn,
            format!("on: RT tasks may use {r} µs of every {p} µs, then every RT task on the CPU stops for {} ms", (p - r) / 1000),
        ),
        _ => (Severity::Info, "unknown: /proc/sys/kernel/sched_rt_runtime_us not readable".to_string()),
    };
    Finding::new("rt_throttling", "RT throttling", severity, observed)
        .value(json!({"sched_rt_runtime_us": runtime, "sched_rt_period_us": period}))
        .why(
            "When RT tasks keep a CPU busy for the whole runtime, the kernel stops all of them until the period ends (50 ms \
             of every second by default): an RT load or a busy RT thread then costs every RT task on that CPU a 50 ms gap.",
        )
        .fix(
            "sysctl kernel.sched_rt_runtime_us=-1   # or for a run only: rtgauge run --tune=rt-throttling",
            "kernel.sched_rt_runtime_us = -1 in /etc/sysctl.d/90-realtime.conf (only with RT tasks that never run away)",
        )
}

pub(super) fn rt_group(c: &Ctx) -> Finding {
    let group = c.system.cpu_cgroup.clone().unwrap_or_default();
    let enabled = c.kconfig.as_ref().map(|k| k.enabled("RT_GROUP_SCHED"));
    let (severity, observed) = match (c.system.cgroup_rt_runtime_us, enabled) {
        (Some(0), _) => {
            (Severity::Bad, format!("this process's cpu cgroup '{group}' has cpu.rt_runtime_us = 0: SCHED_FIFO is refused in it"))
        }
        (Some(r), _) => (Severity::Ok, format!("RT group scheduling on; cgroup '{group}' has {r} µs of RT runtime")),
        (None, Some(true)) => {
            (Severity::Ok, "RT group scheduling built in; this process's cgroup shows no RT runtime limit".to_string())
        }
        (None, _) => (Severity::Ok, "no RT group scheduling".to_string()),
    };
    let file = format!("/sys/fs/cgroup/cpu{}/cpu.rt_runtime_us", group.trim_end_matches('/'));
    Finding::new("rt_group", "RT group scheduling", severity, observed)
        .value(json!({"cgroup": c.system.cpu_cgroup, "rt_runtime_us": c.system.cgroup_rt_runtime_us, "config_rt_group_sched": enabled}))
        .why(
            "With CONFIG_RT_GROUP_SCHED a new cpu cgroup gets no RT runtime (cpu.rt_runtime_us = 0), and no task in it \
             may use SCHED_FIFO or SCHED_RR, even as root: a service manager that puts the RT application in such a \
             cgroup silently makes it fail.",
        )
        .fix(
            format!("echo 950000 > {file}   # or start the RT application in the root cpu cgroup"),
            "give the application's cgroup RT runtime in its unit (e.g. a CPUQuota-free slice with cpu.rt_runtime_us set \
             by a start script), or a kernel without CONFIG_RT_GROUP_SCHED",
        )
}

/// A CFS bandwidth limit on one cgroup: its directory, quota and period (µs).
struct Quota {
    dir: std::path::PathBuf,
    quota_us: u64,
    period_us: u64,
    /// The file that sets it, and what written into it lifts it.
    file: &'static str,
    lift: &'static str,
}

/// The CFS bandwidth limits on this process's cgroup and each of its ancestors up to the
/// hierarchy's root (v2 `cpu.max`, else v1 `cpu.cfs_quota_us`), with this process's own cgroup.
fn cpu_quotas() -> (Option<std::path::PathBuf>, Vec<Quota>) {
    use crate::audit::cgroups::{find_mount, own_dir};
    let read = |p: &std::path::Path| read_trim(p.display().to_string());
    for controller in [None, Some("cpu")] {
        let (Ok(own), Some(mount)) = (own_dir(controller), find_mount(controller)) else { continue };
        // A v2 hierarchy without the cpu controller (a hybrid system) limits nothing: v1 does.
        let v2_cpu = read(&mount.dir.join("cgroup.controllers")).is_some_and(|c| c.split_whitespace().any(|w| w == "cpu"));
        if controller.is_none() && !v2_cpu {
            continue;
        }
        let mut quotas = Vec::new();
        let mut dir = own.clone();
        while dir.starts_with(&mount.dir) {
            let limit = match controller {
                None => read(&dir.join("cpu.max")).and_then(|t| {
                    let (q, p) = t.split_once(' ')?;
                    Some((q.parse::<u64>().ok()?, p.trim().parse().ok()?, "cpu.max", "max"))
                }),
                Some(_) => read(&dir.join("cpu.cfs_quota_us")).and_then(|q| {
                    let q = q.parse::<i64>().ok().filter(|q| *q > 0)?;
                    let p = read(&dir.join("cpu.cfs_period_us")).and_then(|p| p.parse().ok()).unwrap_or(100_000);
                    Some((q as u64, p, "cpu.cfs_quota_us", "-1"))
                }),
            };
            if let Some((quota_us, period_us, file, lift)) = limit {
                quotas.push(Quota { dir: dir.clone(), quota_us, period_us, file, lift });
            }
            if dir == mount.dir || !dir.pop() {
                break;
            }
        }
        return (Some(own), quotas);
    }
    (None, Vec::new())
}

pub(super) fn cpu_bandwidth(_c: &Ctx) -> Finding {
    let (own, quotas) = cpu_quotas();
    let shown = |q: &Quota| format!("{} has {} µs of CPU time every {} µs", q.dir.display(), q.quota_us, q.period_us);
    let (severity, observed) = match (&own, quotas.as_slice()) {
        (None, _) => (Severity::Info, "unknown: this process's cgroup is not visible here".to_string()),
        (Some(o), []) => (Severity::Ok, format!("no CPU quota on this process's cgroup {} or above it", o.display())),
        (Some(_), q) => (
            Severity::Warn,
            format!(
                "{}: every SCHED_OTHER thread of rtgauge (and of the application) stops when the quota is used up, until \
                 the period ends",
                words(&q.iter().map(shown).collect::<Vec<_>>())
            ),
        ),
    };
    let fix = quotas.iter().map(|q| format!("echo {} > {}", q.lift, q.dir.join(q.file).display())).collect::<Vec<_>>();
    let limits: Vec<_> = quotas
        .iter()
        .map(|q| json!({"cgroup": q.dir.display().to_string(), "quota_us": q.quota_us, "period_us": q.period_us}))
        .collect();
    Finding::new("cpu_bandwidth", "CPU quota of this process's cgroup", severity, observed)
        .value(json!({"cgroup": own.map(|o| o.display().to_string()), "limits": limits}))
        .why(
            "A CFS bandwidth limit (cgroup v2 cpu.max, v1 cpu.cfs_quota_us) on the cgroup a program runs in, or on any \
             cgroup above it, stops all its SCHED_OTHER threads for the rest of the period once the group has used its \
             quota: a measurement at --policy other, rtgauge's collector and the loads stall for up to a whole period \
             (seen: 1.5 s latencies). SCHED_FIFO threads are not throttled by it.",
        )
        .fix(
            fix.join("; "),
            "remove the CPU quota of the unit or slice that starts it (systemd: CPUQuota=, e.g. systemctl set-property \
             SLICE CPUQuota=), or the container's CPU limit",
        )
}

pub(super) fn rlimit_rtprio(c: &Ctx) -> Finding {
    let s = c.system;
    let privileged = s.effective_uid == 0 || s.cap_sys_nice;
    let (severity, observed) = match s.rlimit_rtprio {
        _ if privileged => {
            (Severity::Ok, format!("{} may use any RT priority", if s.effective_uid == 0 { "root" } else { "CAP_SYS_NICE" }))
        }
        None => (Severity::Ok, "unlimited".to_string()),
        Some(0) => (Severity::Bad, "0: this user may not use RT priorities".to_string()),
        Some(l) if l < c.scope.priority as u64 => {
            (Severity::Warn, format!("{l}: below the measurement's priority {}", c.scope.priority))
        }
        Some(l) => (Severity::Ok, format!("{l}")),
    };
    Finding::new("rlimit_rtprio", "RLIMIT_RTPRIO", severity, observed)
        .value(json!({"soft_limit": s.rlimit_rtprio, "uid": s.effective_uid, "cap_sys_nice": s.cap_sys_nice}))
        .why("An RT thread needs root, CAP_SYS_NICE or an rtprio limit at least its priority; otherwise it runs as SCHED_OTHER or fails to start.")
        .fix(
            "ulimit -r 99   # in a root shell that then drops to the user, or: setcap cap_sys_nice+ep PROGRAM",
            "/etc/security/limits.conf: @realtime - rtprio 99 (and put the user in group realtime)",
        )
}

pub(super) fn rlimit_memlock(c: &Ctx) -> Finding {
    let s = c.system;
    let (severity, observed) = match s.rlimit_memlock {
        _ if s.cap_ipc_lock => (Severity::Ok, "CAP_IPC_LOCK: may lock any amount".to_string()),
        None => (Severity::Ok, "unlimited".to_string()),
        Some(l) => (Severity::Warn, format!("{} KiB: mlockall of an RT application fails or later allocations do", l / 1024)),
    };
    Finding::new("rlimit_memlock", "RLIMIT_MEMLOCK", severity, observed)
        .value(json!({"soft_limit_bytes": s.rlimit_memlock, "cap_ipc_lock": s.cap_ipc_lock}))
        .why("An RT application locks its memory (mlockall) so that no page fault stops it; a finite limit makes that fail, or crash later.")
        .fix("ulimit -l unlimited", "/etc/security/limits.conf: @realtime - memlock unlimited")
}

pub(super) fn timer_migration(_c: &Ctx) -> Finding {
    let v = read_trim("/proc/sys/kernel/timer_migration").and_then(|s| s.parse::<i64>().ok());
    let (severity, observed) = match v {
        Some(0) => (Severity::Ok, "off: timers stay on the CPU that armed them".to_string()),
        Some(_) => (Severity::Info, "on: idle CPUs hand their timers to busy ones".to_string()),
        None => (Severity::Ok, "not offered by this kernel".to_string()),
    };
    Finding::new("timer_migration", "Timer migration", severity, observed)
        .value(json!({"timer_migration": v}))
        .why(
            "With timer migration the timers of idle CPUs expire on a busy CPU, which may be a measured one; real-time \
             tuning profiles switch it off so each CPU runs only its own timers.",
        )
        .fix("sysctl kernel.timer_migration=0", "kernel.timer_migration = 0 in /etc/sysctl.d/90-realtime.conf")
}

/// A threaded IRQ handler (`irq/26-ttyS0`) and where it may run.
fn irq_thread(pid: i32) -> Option<(TaskStat, Vec<usize>)> {
    let t = TaskStat::of(pid).filter(|t| t.is_kernel_thread() && t.comm.starts_with("irq/"))?;
    let cpus = crate::sys::sched::task_affinity(pid).unwrap_or_default();
    Some((t, cpus))
}

pub(super) fn irq_threads(c: &Ctx) -> Finding {
    let threads: Vec<(TaskStat, Vec<usize>)> = tasks::processes().into_iter().filter_map(irq_thread).collect();
    let on_measured = |cpus: &[usize]| cpus.iter().any(|x| c.scope.cpus.contains(x));
    let above: Vec<String> = threads
        .iter()
        .filter(|(t, cpus)| matches!(t.policy, 1 | 2) && t.rt_priority as i32 >= c.scope.priority && on_measured(cpus))
        .map(|(t, _)| format!("{} ({})", t.comm, t.sched()))
        .collect();
    let mut prios: Vec<String> = threads.iter().map(|(t, _)| t.sched()).collect();
    prios.sort();
    prios.dedup();
    let (severity, observed) = match (threads.is_empty(), above.is_empty()) {
        (true, _) => (Severity::Info, "none: IRQ handlers run in hard interrupt context".to_string()),
        (false, true) => (
            Severity::Ok,
            format!(
                "{} threaded IRQ handlers at {}, below the measurement's priority {}",
                threads.len(),
                words(&prios),
                c.scope.priority
            ),
        ),
        (false, false) => (
            Severity::Warn,
            format!(
                "{} of {} threaded IRQ handlers may run on the measured CPUs at or above priority {}: {}",
                above.len(),
                threads.len(),
                c.scope.priority,
                words(&above)
            ),
        ),
    };
    let list: Vec<_> =
        threads.iter().map(|(t, cpus)| json!({"pid": t.pid, "comm": t.comm, "policy": tasks::policy_name(t.policy), "priority": t.rt_priority, "cpus": cpus})).collect();
    Finding::new("irq_threads", "Threaded IRQ handler priorities", severity, observed)
        .value(json!({"threads": list, "at_or_above_measurement": above}))
        .why(
            "A threaded handler at or above an RT task's priority preempts it for as long as it runs; the handler of the \
             device the task waits for (its network card, its GPIO) belongs above it, every other one below.",
        )
        .fix(
            "chrt -f -p PRIORITY PID   # for each irq/N-NAME thread, below the RT task unless the task waits on that device",
            "a udev rule or start script that sets the IRQ threads' priorities at boot (tuna, rtirq)",
        )
}

pub(super) fn libc(_c: &Ctx) -> Finding {
    let (name, version) = crate::sys::host::c_library();
    let observed = if version.is_empty() { name.to_string() } else { format!("{name} {version}") };
    let severity = if name == "unknown" { Severity::Info } else { Severity::Ok };
    Finding::new("libc", "C library", severity, format!("{observed} (the one rtgauge was built with)"))
        .value(json!({"name": name, "version": version, "static": cfg!(target_feature = "crt-static")}))
        .why(
            "RT applications need the C library's POSIX clocks, absolute clock_nanosleep and priority-inheritance \
             mutexes (PI futexes): glibc and musl have them; old or small C libraries may not.",
        )
        .fix("", "glibc or musl with PI mutex support")
}

/// Tries a PTHREAD_PRIO_INHERIT mutex: a SCHED_OTHER thread holds it while a SCHED_FIFO 1
/// thread waits for it; the holder's priority must rise to FIFO 1. Returns whether it did
/// (`None`: without RT privileges only locking was tried).
fn pi_trial(may_rt: bool) -> Result<Option<bool>, String> {
    use std::sync::{mpsc, Arc};
    let m = Arc::new(crate::sys::sync::PiMutex::new().map_err(|e| format!("cannot make a PTHREAD_PRIO_INHERIT mutex: {e}"))?);
    if !may_rt {
        m.lock().and_then(|_| m.unlock()).map_err(|e| format!("cannot lock a PTHREAD_PRIO_INHERIT mutex: {e}"))?;
        return Ok(None);
    }
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let hm = Arc::clone(&m);
    let holder = std::thread::spawn(move || {
        let locked = hm.lock();
        let _ = held_tx.send((crate::sys::process::thread_id(), locked.is_ok()));
        let _ = release_rx.recv();
        if locked.is_ok() {
            let _ = hm.unlock();
        }
    });
    let (tid, locked) = held_rx.recv().map_err(|_| "the holder thread ended early".to_string())?;
    if !locked {
        let _ = release_tx.send(());
        let _ = holder.join();
        return Err("cannot lock a PTHREAD_PRIO_INHERIT mutex".to_string());
    }
    let wm = Arc::clone(&m);
    let waiter = std::thread::spawn(move || {
        let ok = crate::sys::sched::set_thread_scheduler(crate::vocab::policy::Policy::Fifo, 1).is_ok();
        if wm.lock().is_ok() {
            let _ = wm.unlock();
        }
        ok
    });
    let pid = std::process::id() as i32;
    // FIFO 1 shows as prio −2 in /proc.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let mut boosted = false;
    while !boosted && std::time::Instant::now() < deadline {
        boosted = TaskStat::of_thread(pid, tid).is_some_and(|t| t.prio == -2);
        if !boosted {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    let _ = release_tx.send(());
    let _ = holder.join();
    let waiter_rt = waiter.join().unwrap_or(false);
    if !waiter_rt {
        return Ok(None);
    }
    Ok(Some(boosted))
}

pub(super) fn pi_mutex(c: &Ctx) -> Finding {
    let may_rt = c.system.may_use_rt(1) && c.system.cgroup_rt_runtime_us != Some(0);
    let (severity, observed, boosted) = match pi_trial(may_rt) {
        Ok(Some(true)) => {
            (Severity::Ok, "works: a SCHED_OTHER holder was raised to its SCHED_FIFO 1 waiter's priority".to_string(), Some(true))
        }
        Ok(Some(false)) => {
            (Severity::Bad, "made and locked, but its holder was not raised to its waiter's priority".to_string(), Some(false))
        }
        Ok(None) => (Severity::Info, "made and locked; boosting not tried (no RT priority for the waiter)".to_string(), None),
        Err(e) => (Severity::Bad, e, None),
    };
    Finding::new("pi_mutex", "Priority-inheritance mutex (tried)", severity, observed)
        .value(json!({"boosted": boosted}))
        .why(
            "Without priority inheritance an RT task waiting for a lock held by a low-priority task waits for every \
             medium-priority task too (priority inversion, unbounded); PTHREAD_PRIO_INHERIT mutexes need the C library \
             and the kernel's PI futexes.",
        )
        .fix("", "a C library with PTHREAD_PRIO_INHERIT (glibc, musl) and a kernel with CONFIG_FUTEX_PI")
}
