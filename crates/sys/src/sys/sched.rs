//! Scheduling: a thread's policy and priority (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE), CPU
//! affinity of the calling thread and of other tasks, and the raw policy values the loads run at.
//! Affinity is rustix's; the policy calls (`sched_setscheduler`, `sched_getscheduler`,
//! `sched_getparam`, `sched_setattr`) are raw system calls: rustix has none of them.

use super::check_syscall;
use crate::vocab::policy::Policy;
use rustix::process::Pid;
use rustix::thread::CpuSet;
use std::io;

fn policy_raw(p: Policy) -> libc::c_int {
    match p {
        Policy::Fifo => libc::SCHED_FIFO,
        Policy::Rr => libc::SCHED_RR,
        // Set with sched_setattr (`set_thread_deadline`), never through this.
        Policy::Deadline | Policy::Other => libc::SCHED_OTHER,
    }
}

/// The kernel's number for SCHED_DEADLINE.
const SCHED_DEADLINE: libc::c_int = 6;

fn policy_from_raw(raw: libc::c_int) -> Option<Policy> {
    match raw {
        libc::SCHED_FIFO => Some(Policy::Fifo),
        libc::SCHED_RR => Some(Policy::Rr),
        libc::SCHED_OTHER => Some(Policy::Other),
        SCHED_DEADLINE => Some(Policy::Deadline),
        _ => None,
    }
}

/// A sched_param with every field zero (musl's has sporadic-server fields besides the priority).
fn zeroed_sched_param() -> libc::sched_param {
    // SAFETY: sched_param is plain integer data; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// Sets the calling thread's scheduling policy and priority with the raw
/// `sched_setscheduler(0, ..)` system call, which on Linux applies to the calling thread.
/// (musl's library function refuses with ENOSYS, following POSIX's per-process meaning.)
pub fn set_thread_scheduler(policy: Policy, priority: i32) -> io::Result<()> {
    let mut param = zeroed_sched_param();
    param.sched_priority = if policy.has_priority() { priority } else { 0 };
    // SAFETY: `param` is a valid sched_param that outlives the call; tid 0 is the calling thread.
    check_syscall(unsafe {
        libc::syscall(libc::SYS_sched_setscheduler, 0 as libc::pid_t, policy_raw(policy), &param as *const libc::sched_param)
    })
    .map(drop)
}

/// Reads back the calling thread's scheduling policy and priority (raw system calls, as above).
pub fn thread_scheduler() -> io::Result<(Option<Policy>, i32)> {
    // SAFETY: tid 0 means the calling thread; no pointers are passed.
    let raw = check_syscall(unsafe { libc::syscall(libc::SYS_sched_getscheduler, 0 as libc::pid_t) })? as libc::c_int;
    let mut param = zeroed_sched_param();
    // SAFETY: `param` is a valid, writable sched_param that outlives the call.
    check_syscall(unsafe { libc::syscall(libc::SYS_sched_getparam, 0 as libc::pid_t, &mut param as *mut libc::sched_param) })?;
    // Mask SCHED_RESET_ON_FORK which may be or-ed into the policy.
    Ok((policy_from_raw(raw & !libc::SCHED_RESET_ON_FORK), param.sched_priority))
}

/// Pins the calling thread to one CPU (`sched_setaffinity(0, ..)`).
pub fn pin_thread_to_cpu(cpu: usize) -> io::Result<()> {
    set_task_affinity(0, &[cpu])
}

/// The CPUs this process may run on (`sched_getaffinity`), e.g. as limited by taskset or a cpuset.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    task_affinity(0)
}

/// The task a tid names for rustix: `None`, the calling thread, for 0; a negative tid names no
/// task (ESRCH, what the kernel answers for one).
fn task(tid: i32) -> io::Result<Option<Pid>> {
    if tid < 0 {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(Pid::from_raw(tid))
}

/// The CPUs task `tid` may run on (`sched_getaffinity`).
pub fn task_affinity(tid: i32) -> io::Result<Vec<usize>> {
    let set = rustix::thread::sched_getaffinity(task(tid)?)?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// Lets task `tid` run on `cpus` only (`sched_setaffinity`); fails for a kernel thread bound to
/// its CPU (EINVAL) and for a task that is gone (ESRCH).
pub fn set_task_affinity(tid: i32, cpus: &[usize]) -> io::Result<()> {
    if cpus.iter().any(|&c| c >= CpuSet::MAX_CPU) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok(rustix::thread::sched_setaffinity(task(tid)?, &cpu_set(cpus))?)
}

/// The set of `cpus`, each below [`CpuSet::MAX_CPU`] (the caller checks).
pub(super) fn cpu_set(cpus: &[usize]) -> CpuSet {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    set
}

/// Sets the calling thread's policy from raw values.
pub(super) fn set_scheduler_raw(policy: libc::c_int, priority: libc::c_int) -> io::Result<()> {
    let mut param = zeroed_sched_param();
    param.sched_priority = priority;
    // SAFETY: `param` is a valid sched_param that outlives the call; tid 0 is the calling thread.
    if unsafe { libc::syscall(libc::SYS_sched_setscheduler, 0 as libc::pid_t, policy, &param as *const libc::sched_param) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Raw values of the policies a load may run at.
pub const SCHED_OTHER: i32 = libc::SCHED_OTHER;
pub const SCHED_BATCH: i32 = libc::SCHED_BATCH;
pub const SCHED_IDLE: i32 = libc::SCHED_IDLE;
pub const SCHED_FIFO: i32 = libc::SCHED_FIFO;
pub const SCHED_RR: i32 = libc::SCHED_RR;

/// Runs the calling thread at SCHED_DEADLINE: `runtime_ns` of CPU every `period_ns`, ahead of
/// every SCHED_FIFO task and outside RT throttling (`sched_setattr`).
pub fn set_thread_deadline(runtime_ns: u64, deadline_ns: u64, period_ns: u64) -> io::Result<()> {
    /// `struct sched_attr` of the kernel's UAPI (version 0, 48 bytes).
    #[repr(C)]
    struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        nice: i32,
        priority: u32,
        runtime: u64,
        deadline: u64,
        period: u64,
    }
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: SCHED_DEADLINE as u32,
        flags: 0,
        nice: 0,
        priority: 0,
        runtime: runtime_ns,
        deadline: deadline_ns,
        period: period_ns,
    };
    // SAFETY: `attr` is a valid sched_attr that outlives the call; tid 0 is the calling thread.
    check_syscall(unsafe { libc::syscall(libc::SYS_sched_setattr, 0 as libc::pid_t, &attr as *const SchedAttr, 0u32) }).map(drop)
}

/// Moves task `tid` (a thread of any process) to SCHED_OTHER if it runs at an RT policy;
/// returns whether it did.
pub fn demote_task(tid: i32) -> bool {
    // SAFETY: no pointers are passed.
    let policy = unsafe { libc::syscall(libc::SYS_sched_getscheduler, tid as libc::pid_t) } as libc::c_int;
    if policy < 0 || !matches!(policy & !libc::SCHED_RESET_ON_FORK, libc::SCHED_FIFO | libc::SCHED_RR) {
        return false;
    }
    let param = zeroed_sched_param();
    // SAFETY: `param` is a valid sched_param that outlives the call.
    unsafe {
        libc::syscall(libc::SYS_sched_setscheduler, tid as libc::pid_t, libc::SCHED_OTHER, &param as *const libc::sched_param)
            == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_reads_back_and_a_negative_tid_names_no_task() {
        let allowed = allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        assert_eq!(task_affinity(super::super::process::thread_id()).unwrap(), allowed);
        set_task_affinity(0, &allowed).unwrap();
        assert_eq!(task_affinity(-1).unwrap_err().raw_os_error(), Some(libc::ESRCH));
        assert_eq!(set_task_affinity(0, &[CpuSet::MAX_CPU]).unwrap_err().raw_os_error(), Some(libc::EINVAL));
    }
}
