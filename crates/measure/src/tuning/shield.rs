//! The CPU shield of `--tune=shield`: the measured CPUs are set apart with a cpuset for the run,
//! as the Cortex-A53 slides measured ("cpuset shield"), so that no other task runs on them.
//!
//! cgroup v1 (a `cpuset` hierarchy): two cpusets below the root, `rtgauge-shield-PID` with the
//! measured CPUs and `rtgauge-system-PID` with the others; every task of the root cpuset that
//! may move (user tasks and unbound kernel threads; per-CPU kernel threads cannot) goes to the
//! system set, and load balancing across the two is switched off so they are separate
//! scheduling domains. rtgauge's own thread enters the shield before it starts the measurement
//! threads (which are born there), and leaves for the system set once they exist; loads it
//! starts later are born in the system set.
//!
//! cgroup v2: one cgroup `rtgauge-shield-PID` below the root with the measured CPUs as a
//! partition root: the kernel takes its CPUs away from every other cgroup at once. v2 keeps a
//! process's threads together, so rtgauge's own coordinator runs inside the shield too (at
//! SCHED_OTHER, below the measurement); the loads' cgroup stays where rtgauge was.
//!
//! The cpuset controller has no RT runtime, so the RT group-scheduling trap (a new cgroup
//! with the cpu controller gets `rt_runtime_us = 0`) only applies where cpuset shares a
//! hierarchy with cpu (v2 with the cpu controller on): the shield is then given the RT runtime
//! its parent can spare, or not made.

use super::journal::{Journal, Undo};
use super::record;
use crate::audit::cgroups;
use crate::audit::tasks::{self, TaskStat};
use crate::result::tuning::TuningRecord;
use crate::vocab::cpus::format_cpu_list;
use std::path::{Path, PathBuf};

/// A shield in place.
pub struct Shield {
    layout: Layout,
}

enum Layout {
    V1 { system: PathBuf },
    V2 { original: PathBuf },
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    crate::sys::files::write_setting(path, value)
        .map_err(|e| format!("cannot write {value} to {}: {}", path.display(), super::settings::explain(&e)))
}

fn mkdir(path: &Path) -> Result<(), String> {
    std::fs::create_dir(path).map_err(|e| format!("cannot make {}: {}", path.display(), super::settings::explain(&e)))
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Sets the `measured` CPUs apart; `housekeeping` are the others (at least one).
pub(super) fn make(j: &mut Journal, measured: &[usize], housekeeping: &[usize]) -> (TuningRecord, Option<Shield>) {
    let r = record("cpuset shield", &format!("CPUs {} for the measurement only", format_cpu_list(measured)));
    if housekeeping.is_empty() {
        return (
            r.failed("every online CPU is measured, so no other task could run anywhere: measure a subset (--cpus)".into()),
            None,
        );
    }
    let made = match cgroups::find_mount(Some("cpuset")) {
        Some(m) => make_v1(j, m, measured, housekeeping),
        None => match cgroups::find_mount(None) {
            Some(m) => make_v2(j, m, measured),
            None => Err("no cpuset hierarchy is mounted (cgroup v1 cpuset or cgroup2)".to_string()),
        },
    };
    match made {
        Ok((shield, value, original)) => {
            let mut r = r.applied(original);
            r.value = value;
            (r, Some(shield))
        }
        Err(e) => (r.failed(e), None),
    }
}

/// The v1 shield; returns it with what it did and what was before.
fn make_v1(
    j: &mut Journal,
    m: cgroups::Mount,
    measured: &[usize],
    housekeeping: &[usize],
) -> Result<(Shield, String, String), String> {
    let own = cgroups::own_path(Some("cpuset")).unwrap_or_default();
    if m.root != "/" || own != "/" {
        return Err(format!("rtgauge runs in cpuset '{own}' (mount root '{}'); a shield is made from the root cpuset", m.root));
    }
    let root = m.dir;
    let prefix = if root.join("cpuset.cpus").exists() { "cpuset." } else { "" };
    let file = |dir: &Path, name: &str| dir.join(format!("{prefix}{name}"));
    let mems = read(&file(&root, "mems"))?;
    let pid = std::process::id();
    let shield = root.join(format!("rtgauge-shield-{pid}"));
    let system = root.join(format!("rtgauge-system-{pid}"));
    j.record(&[Undo::RemoveDir { path: s(&shield) }, Undo::RemoveDir { path: s(&system) }])?;
    for (dir, cpus) in [(&shield, measured), (&system, housekeeping)] {
        mkdir(dir)?;
        write(&file(dir, "cpus"), &format_cpu_list(cpus))?;
        write(&file(dir, "mems"), &mems)?;
    }
    let _ = write(&file(&shield, "cpu_exclusive"), "1");
    // Every task of the root cpuset but rtgauge's own, with the CPUs of those that had fewer
    // than all (moving back into the root gives a task every CPU).
    let own_threads = tasks::threads(pid as i32);
    let tids: Vec<i32> =
        read(&root.join("tasks"))?.lines().filter_map(|l| l.trim().parse().ok()).filter(|t| !own_threads.contains(t)).collect();
    let online = crate::audit::online_cpus();
    let mut undos: Vec<Undo> = tids
        .iter()
        .filter_map(|&t| {
            let stat = TaskStat::of(t)?;
            let cpus = crate::sys::sched::task_affinity(t).ok()?;
            (cpus != online).then_some(Undo::Affinity { pid: t, starttime: stat.starttime, cpus })
        })
        .collect();
    undos.push(Undo::MoveAll { from: vec![s(&shield.join("tasks")), s(&system.join("tasks"))], to: s(&root.join("tasks")) });
    let balance = file(&root, "sched_load_balance");
    let balance_was = read(&balance).ok();
    if let Some(b) = &balance_was {
        undos.push(Undo::Write { path: s(&balance), original: b.clone(), set: "0".into() });
    }
    j.record(&undos)?;
    // Separate scheduling domains: a SCHED_DEADLINE thread must span its domain's CPUs.
    if balance_was.is_some() {
        let _ = write(&balance, "0");
    }
    let (mut users, mut kthreads, mut bound) = (0, 0, 0);
    for &t in &tids {
        let kernel = TaskStat::of(t).is_some_and(|s| s.is_kernel_thread());
        match (std::fs::write(system.join("tasks"), t.to_string()), kernel) {
            (Ok(()), false) => users += 1,
            (Ok(()), true) => kthreads += 1,
            (Err(_), _) => bound += 1,
        }
    }
    // rtgauge's own thread: into the shield, where the measurement threads will be born.
    for t in &own_threads {
        write(&shield.join("tasks"), &t.to_string())?;
    }
    let value = format!(
        "CPUs {} for the measurement only: {users} task(s) and {kthreads} kernel thread(s) moved to CPUs {}; {bound} bound to their CPU stay",
        format_cpu_list(measured),
        format_cpu_list(housekeeping)
    );
    let original = format!("{} task(s) in the root cpuset, free to run on CPUs {}", tids.len(), format_cpu_list(&online));
    Ok((Shield { layout: Layout::V1 { system } }, value, original))
}

/// The v2 shield: a partition root with the measured CPUs, rtgauge inside.
fn make_v2(j: &mut Journal, m: cgroups::Mount, measured: &[usize]) -> Result<(Shield, String, String), String> {
    if m.root != "/" {
        return Err(format!("the cgroup2 mount's root is '{}'; a shield is made below the hierarchy's root", m.root));
    }
    let root = m.dir;
    let original = cgroups::own_dir(None)?;
    if !read(&root.join("cgroup.controllers"))?.split_whitespace().any(|c| c == "cpuset") {
        return Err("the cgroup2 hierarchy offers no cpuset controller".into());
    }
    let control = root.join("cgroup.subtree_control");
    if !read(&control)?.split_whitespace().any(|c| c == "cpuset") {
        j.record(&[Undo::Write { path: s(&control), original: "-cpuset".into(), set: "+cpuset".into() }])?;
        write(&control, "+cpuset")?;
    }
    let pid = std::process::id();
    let shield = root.join(format!("rtgauge-shield-{pid}"));
    j.record(&[Undo::RemoveDir { path: s(&shield) }])?;
    mkdir(&shield)?;
    let made = (|| {
        give_rt_runtime(&root, &shield)?;
        write(&shield.join("cpuset.cpus"), &format_cpu_list(measured))?;
        write(&shield.join("cpuset.mems"), &read(&root.join("cpuset.mems.effective"))?)?;
        j.record(&[Undo::MoveAll { from: vec![s(&shield.join("cgroup.procs"))], to: s(&original.join("cgroup.procs")) }])?;
        write(&shield.join("cpuset.cpus.partition"), "root")?;
        let state = read(&shield.join("cpuset.cpus.partition"))?;
        if state != "root" {
            return Err(format!("the kernel refused CPUs {} as a partition: {state}", format_cpu_list(measured)));
        }
        write(&shield.join("cgroup.procs"), &pid.to_string())
    })();
    if let Err(e) = made {
        let _ = std::fs::remove_dir(&shield);
        return Err(e);
    }
    let value =
        format!("CPUs {} a partition of their own (cgroup {}), rtgauge inside", format_cpu_list(measured), shield.display());
    Ok((Shield { layout: Layout::V2 { original: original.clone() } }, value, format!("rtgauge in cgroup {}", original.display())))
}

/// The RT group-scheduling trap: a cgroup with the cpu controller and no RT runtime refuses
/// SCHED_FIFO. Gives the shield what RT runtime its parent can spare.
fn give_rt_runtime(parent: &Path, shield: &Path) -> Result<(), String> {
    let file = shield.join("cpu.rt_runtime_us");
    if !file.exists() || read(&file)? != "0" {
        return Ok(());
    }
    let total: i64 = read(&parent.join("cpu.rt_runtime_us")).ok().and_then(|v| v.parse().ok()).unwrap_or(950_000);
    let used: i64 = std::fs::read_dir(parent)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path() != shield)
        .filter_map(|e| read(&e.path().join("cpu.rt_runtime_us")).ok()?.parse::<i64>().ok())
        .sum();
    let spare = total - used;
    if spare <= 0 {
        return Err(format!("the RT group-scheduling trap: the new cgroup has no RT runtime and its parent has none to spare ({used} of {total} µs given away)"));
    }
    write(&file, &spare.to_string()).map_err(|e| format!("the RT group-scheduling trap: {e}"))
}

impl Shield {
    /// Once the measurement threads exist: rtgauge's other threads leave the shielded CPUs
    /// (v1; under v2 a process's threads stay together).
    pub fn settle(&self) {
        let Layout::V1 { system } = &self.layout else { return };
        let pid = std::process::id() as i32;
        for t in tasks::threads(pid) {
            let measuring = TaskStat::of(t).is_some_and(|s| s.comm.starts_with("rtgauge-"));
            if !measuring {
                let _ = std::fs::write(system.join("tasks"), t.to_string());
            }
        }
    }

    /// Where the loads' cgroup belongs: rtgauge's cgroup before the shield (v2).
    pub fn load_parent(&self) -> Option<PathBuf> {
        match &self.layout {
            Layout::V2 { original } => Some(original.clone()),
            Layout::V1 { .. } => None,
        }
    }
}
