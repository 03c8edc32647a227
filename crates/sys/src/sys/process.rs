//! The process and its threads: ids, names and timer slack, resource limits, and the child
//! processes of the loads (fork, reap, what a contained child applies to itself, its start report).

use rustix::process::Resource;
use rustix::thread::CpuSet;
use std::io;

/// The effective user id of the process (`geteuid`).
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The effective group id of the process (`getegid`).
pub fn effective_gid() -> u32 {
    rustix::process::getegid().as_raw()
}

/// The calling thread's id (`gettid`).
pub fn thread_id() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// Names the calling thread (`prctl(PR_SET_NAME)`; the kernel keeps 15 bytes).
pub fn set_thread_name(name: &str) -> io::Result<()> {
    let bytes: Vec<u8> = name.bytes().filter(|&b| b != 0).take(15).collect();
    // No NUL is left in `bytes`: the conversion cannot fail.
    let name = std::ffi::CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    Ok(rustix::thread::set_name(&name)?)
}

/// Sets the calling thread's timer slack (`prctl(PR_SET_TIMERSLACK)`); SCHED_OTHER threads
/// default to 50 µs, which would be measured as latency. (0 restores the thread's default.)
pub fn set_timer_slack_ns(ns: u64) -> io::Result<()> {
    Ok(rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(ns))?)
}

/// The soft limit of the main thread's stack (RLIMIT_STACK, `ulimit -s`) in bytes (`None` =
/// unlimited).
pub fn stack_limit() -> io::Result<Option<u64>> {
    Ok(soft_limit(Resource::Stack))
}

/// The soft limit of the size of a file this process writes (RLIMIT_FSIZE, `ulimit -f`) in
/// bytes (`None` = unlimited).
pub fn file_size_limit() -> io::Result<Option<u64>> {
    Ok(soft_limit(Resource::Fsize))
}

/// The soft limit of RLIMIT_RTPRIO (`None` = unlimited).
pub fn rtprio_limit() -> io::Result<Option<u64>> {
    Ok(soft_limit(Resource::Rtprio))
}

/// The soft limit of RLIMIT_MEMLOCK in bytes (`None` = unlimited).
pub fn memlock_limit() -> io::Result<Option<u64>> {
    Ok(soft_limit(Resource::Memlock))
}

/// A soft limit of the process (`prlimit64(0, ..)`, which glibc's 64-bit and musl's `getrlimit`
/// make too; it cannot fail for the calling process). The kernel's 64-bit value as it is: 32-bit
/// glibc's `getrlimit` (`ugetrlimit`) reports any limit of 4 GiB − 1 or more as unlimited.
fn soft_limit(resource: Resource) -> Option<u64> {
    rustix::process::getrlimit(resource).current
}

/// Exit status and resource usage of a reaped child.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChildUsage {
    pub user_ns: u64,
    pub system_ns: u64,
    pub max_rss_kib: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildEnd {
    Exited(i32),
    Signalled(i32),
}

fn usage_from(ru: &libc::rusage) -> ChildUsage {
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
    ChildUsage {
        user_ns: ns(ru.ru_utime),
        system_ns: ns(ru.ru_stime),
        max_rss_kib: ru.ru_maxrss as u64,
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
        voluntary_switches: ru.ru_nvcsw as u64,
        involuntary_switches: ru.ru_nivcsw as u64,
    }
}

/// Reaps child `pid` with `wait4`: how it ended and what it (and the children it reaped) used.
/// With `block` false, returns `Ok(None)` while the child still runs.
pub fn wait_child(pid: i32, block: bool) -> io::Result<Option<(ChildEnd, ChildUsage)>> {
    let mut status = 0;
    // Raw: rustix's `wait`/`waitpid` do not return the child's rusage (no `wait4`).
    // SAFETY: rusage is plain data; `status` and `ru` are valid for writing during the call.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: as above.
        let r = unsafe { libc::wait4(pid, &mut status, if block { 0 } else { libc::WNOHANG }, &mut ru) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Ok(None);
        }
        let end = if libc::WIFEXITED(status) {
            ChildEnd::Exited(libc::WEXITSTATUS(status))
        } else {
            ChildEnd::Signalled(libc::WTERMSIG(status))
        };
        return Ok(Some((end, usage_from(&ru))));
    }
}

/// Makes the kernel send SIGKILL to the calling process when its parent thread exits, and
/// exits at once if the parent is already gone (`expected_parent` no longer the parent).
pub fn die_with_parent(expected_parent: u32) -> io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
    if rustix::process::Pid::as_raw(rustix::process::getppid()) as u32 != expected_parent {
        // Raw: the C library's `_exit` (rustix has it only in its unstable `runtime` feature).
        // SAFETY: _exit ends the process without running any Rust code.
        unsafe { libc::_exit(1) };
    }
    Ok(())
}

/// What a contained child of rtgauge applies to itself before it runs its load (see
/// `load::launch`): it is serialised into the child's environment, never applied between fork
/// and exec, so that rtgauge itself never forks while it measures.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Containment {
    /// Join the cgroup whose `cgroup.procs` this is (first of all).
    pub cgroup_procs: Option<std::path::PathBuf>,
    /// Die with this process (rtgauge's pid): SIGKILL when it ends, and at once if it has.
    pub die_with: Option<u32>,
    /// Restrict it to these CPUs.
    pub cpus: Option<Vec<usize>>,
    pub nice: Option<i32>,
    /// Scheduling policy and priority (raw `SCHED_*` value), default SCHED_OTHER.
    pub policy: Option<(i32, i32)>,
}

/// Applies `c` to the calling process, which must be single-threaded (the launcher): what it
/// sets is kept across exec. The error names the step that failed.
pub fn contain_self(c: &Containment) -> Result<(), crate::vocab::Error> {
    contain_self_text(c).map_err(crate::vocab::Error::System)
}

/// [`contain_self`], its failure as text.
fn contain_self_text(c: &Containment) -> Result<(), String> {
    if let Some(procs) = &c.cgroup_procs {
        std::fs::write(procs, "0").map_err(|e| format!("cannot join the run's cgroup ({}): {e}", procs.display()))?;
    }
    if let Some(parent) = c.die_with {
        die_with_parent(parent).map_err(|e| format!("cannot ask to die with rtgauge: {e}"))?;
    }
    if let Some(cpus) = &c.cpus {
        let within: Vec<usize> = cpus.iter().copied().filter(|&c| c < CpuSet::MAX_CPU).collect();
        rustix::thread::sched_setaffinity(None, &super::sched::cpu_set(&within))
            .map_err(|e| format!("cannot run on CPUs {cpus:?}: {}", io::Error::from(e)))?;
    }
    if let Some((policy, priority)) = c.policy {
        let name = match policy {
            libc::SCHED_FIFO => "SCHED_FIFO",
            libc::SCHED_RR => "SCHED_RR",
            libc::SCHED_BATCH => "SCHED_BATCH",
            libc::SCHED_IDLE => "SCHED_IDLE",
            _ => "SCHED_OTHER",
        };
        super::sched::set_scheduler_raw(policy, priority)
            .map_err(|e| format!("cannot run at {name} priority {priority}: {e}"))?;
    }
    if let Some(n) = c.nice {
        rustix::process::setpriority_process(None, n).map_err(|e| format!("cannot set nice {n}: {}", io::Error::from(e)))?;
    }
    Ok(())
}

/// A channel on which a child reports why it could not start: the pipe's write end becomes the
/// child's standard input; the child moves it aside ([`take_start_report`]) where exec closes
/// it. Reading the other end to its end waits until the child has run its program or failed.
pub fn start_report_pipe() -> io::Result<(std::fs::File, std::os::fd::OwnedFd)> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    Ok((std::fs::File::from(read), write))
}

/// In the child: moves standard input (the start-report pipe) to a descriptor closed on exec
/// (`fcntl(0, F_DUPFD_CLOEXEC, 3)`).
pub fn take_start_report() -> io::Result<std::fs::File> {
    Ok(std::fs::File::from(rustix::io::fcntl_dupfd_cloexec(rustix::stdio::stdin(), 3)?))
}

/// Forks; the child (which dies with its parent) runs `f` and exits with its result without
/// returning. Returns the child's pid to the parent. Call only from a single-threaded process.
pub fn fork_run(f: impl FnOnce() -> i32) -> io::Result<i32> {
    let parent = std::process::id();
    // Raw: the C library's `fork` runs its at-fork handlers (the allocator's locks); rustix's
    // `kernel_fork` (unstable `runtime` feature) would not.
    // SAFETY: fork has no arguments; the child below runs `f` and leaves with _exit, never
    // returning into the caller (so no destructor or atexit handler of the parent runs twice).
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            let code = if die_with_parent(parent).is_ok() { f() } else { 1 };
            // SAFETY: _exit ends the child at once.
            unsafe { libc::_exit(code) }
        }
        pid => Ok(pid),
    }
}

/// Exit code of child `pid` after waiting for it (128 + signal if killed).
pub fn wait_pid(pid: i32) -> io::Result<i32> {
    match wait_child(pid, true)? {
        Some((ChildEnd::Exited(c), _)) => Ok(c),
        Some((ChildEnd::Signalled(s), _)) => Ok(128 + s),
        None => unreachable!("a blocking wait returns the child"),
    }
}

/// Creates a process that exits at once, and reaps it: one unit of the fork load.
/// Safe to call from a multi-threaded process (the child makes no call but `_exit`).
pub fn fork_exit_and_reap() -> io::Result<()> {
    // Raw: the C library's `fork` and `_exit`, as in `fork_run`.
    // SAFETY: the child only calls _exit, which is async-signal-safe.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        // SAFETY: _exit ends the child at once.
        0 => unsafe { libc::_exit(0) },
        pid => wait_pid(pid).map(drop),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_thread_is_named_and_its_timer_slack_set() {
        if std::env::var_os("RTGAUGE_RUNNER").is_some() {
            eprintln!("SKIPPED: under an emulator the threads and their /proc entries are the emulator's");
            return;
        }
        std::thread::spawn(|| {
            super::set_thread_name("rtgauge-a-long-thread-name").unwrap();
            let comm = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
            assert_eq!(comm.trim_end(), "rtgauge-a-long-");
            super::set_timer_slack_ns(1).unwrap();
            assert_eq!(rustix::thread::current_timer_slack().unwrap(), 1);
        })
        .join()
        .unwrap();
    }
}
