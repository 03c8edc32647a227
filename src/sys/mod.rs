//! The only module allowed to use `unsafe`: thin, intent-named wrappers over the raw
//! Linux system calls the measurement needs (clocks, scheduling, affinity, memory locking,
//! signal masks). Every other module is compiled with `#![deny(unsafe_code)]` in effect and
//! calls these safe functions instead.
//!
//! Each wrapper documents the syscall it makes; the unsafe blocks only pass valid pointers
//! to stack values that live for the duration of the call.
#![allow(unsafe_code)]

use std::io;

pub mod files;
mod wake;
pub use crate::vocab::policy::Policy;
pub use wake::{WakeChannel, WakeMethod};

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

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds.
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until the absolute CLOCK_MONOTONIC time `deadline_ns` with
/// `clock_nanosleep(TIMER_ABSTIME)`, resuming after signal interruptions.
#[inline(always)]
pub fn sleep_until_monotonic(deadline_ns: u64) {
    let ts = libc::timespec {
        // `as _`: the field types differ between glibc, musl and 32-bit targets.
        tv_sec: (deadline_ns / 1_000_000_000) as _,
        tv_nsec: (deadline_ns % 1_000_000_000) as _,
    };
    loop {
        // SAFETY: `ts` is a valid timespec; the remainder pointer may be null for TIMER_ABSTIME.
        let ret = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        // clock_nanosleep returns the error number directly; only EINTR is retried (an absolute
        // deadline makes the retry exact). Any other error cannot happen with valid arguments.
        if ret != libc::EINTR {
            return;
        }
    }
}

/// A sched_param with every field zero (musl's has sporadic-server fields besides the priority).
fn zeroed_sched_param() -> libc::sched_param {
    // SAFETY: sched_param is plain integer data; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// Result of a raw `syscall()`: -1 and errno on failure.
fn check_syscall(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
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
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain data; zeroed is its empty value. CPU_SET is bounds-checked above.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        check(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set))
    }
}

/// The CPUs this process may run on (`sched_getaffinity`), e.g. as limited by taskset or a cpuset.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data, filled by the kernel; CPU_ISSET reads within its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        check(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set))?;
        Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect())
    }
}

/// Keeps the C library's allocator small under `mlockall`: one arena (each thread that allocates
/// would otherwise get one of its own, whose first 132 KiB become resident), and large blocks
/// always mapped and unmapped (glibc otherwise raises that threshold after the first large
/// free, and the end-of-run encoders' transient buffers then stay in the heap). glibc only;
/// the measurement threads do not allocate in their loops, so they never contend for it.
pub fn tame_malloc() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt takes two integers and only changes future allocations.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 * 1024);
    }
}

/// Locks every page of the process in memory as it is first touched, now and in future
/// (`mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)`): a page once resident is never paged
/// out, but the parts of the binary a run never executes (the store's, the report's) are not
/// made resident. The measurement threads touch their stacks and rings before their loops, and
/// their loops' code in the warm-up; every page fault they take while measuring is counted
/// ([`thread_page_faults`]) and reported. Kernels before 4.4 lack `MCL_ONFAULT`: everything is
/// then made resident at once.
pub fn lock_all_memory() -> io::Result<()> {
    // SAFETY: no pointers are passed.
    check(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT) }).or_else(|e| {
        match e.raw_os_error() {
            // SAFETY: as above.
            Some(libc::EINVAL) => check(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) }),
            _ => Err(e),
        }
    })
}

/// Page faults (minor and major) the calling thread has taken so far (`getrusage(RUSAGE_THREAD)`).
#[inline(never)]
pub fn thread_page_faults() -> u64 {
    // SAFETY: getrusage writes one rusage into the zeroed struct passed.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut u) != 0 {
            return 0;
        }
        (u.ru_minflt as u64).saturating_add(u.ru_majflt as u64)
    }
}

/// Unlocks all memory (`munlockall`): once measuring is over, the end-of-run work (encoding,
/// writing) need not make every page it allocates resident.
pub fn unlock_all_memory() {
    // SAFETY: no pointers are passed.
    unsafe { libc::munlockall() };
}

/// Lets go of the code pages the process has mapped (`madvise(MADV_DONTNEED)` on every
/// read-and-execute file mapping: rtgauge's own text and its libraries'): under `mlockall` every
/// code page set-up and measuring touched stayed resident, with the kernel's fault-around
/// neighbourhood of each; once memory is unlocked at the end of measuring, the end-of-run work
/// faults back in only the code it runs. Code is never written, so the pages come back unchanged
/// from the page cache (a private mapping's pages that were written, its data, are left alone).
/// Returns how many mappings were let go of.
pub fn release_code_pages() -> usize {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return 0 };
    let mut released = 0;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else { continue };
        let path = fields.nth(3).unwrap_or("");
        if perms != "r-xp" || !path.starts_with('/') {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else { continue };
        // SAFETY: the range is a whole mapping of the process, read-only and executable: dropping
        // its pages only makes the next access fault them back in from the file.
        if unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) } == 0 {
            released += 1;
        }
    }
    released
}

/// Sets the calling thread's timer slack (`prctl(PR_SET_TIMERSLACK)`); SCHED_OTHER threads
/// default to 50 µs, which would be measured as latency.
pub fn set_timer_slack_ns(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument; no pointers are passed.
    check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) })
}

/// Every asynchronous signal whose default action ends the process and that a user or the system
/// sends to end it: hang-up (a closed terminal, a dropped ssh connection), interrupt, quit,
/// terminate, the user signals, the timers' (SIGALRM, SIGVTALRM, SIGPROF), the CPU time limit
/// (SIGXCPU), SIGIO, SIGPWR and every real-time signal. Left out: SIGKILL and SIGSTOP (no
/// process can catch them) and the faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP,
/// SIGSYS), which a handler cannot recover from; SIGPIPE and SIGXFSZ, which
/// [`survive_write_limits`] turns into write errors.
pub fn ending_signals() -> Vec<i32> {
    let mut v = vec![
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGXCPU,
        libc::SIGIO,
        libc::SIGPWR,
        // Sent by another process (a debugger's, a seccomp filter's, a supervisor's), these end
        // a process too: a run they end keeps its result as SIGTERM's does.
        libc::SIGTRAP,
        libc::SIGSYS,
        libc::SIGSTKFLT,
        libc::SIGABRT,
    ];
    v.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    v
}

/// A signal's name: `SIGHUP`, `SIGRTMIN+3`.
pub fn signal_name(signal: i32) -> String {
    if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&signal) {
        return format!("SIGRTMIN+{}", signal - libc::SIGRTMIN());
    }
    signal_hook::low_level::signal_name(signal).map_or_else(|| format!("signal {signal}"), str::to_string)
}

/// Makes a write beyond the file size limit (`ulimit -f`) fail with EFBIG instead of killing
/// the process with SIGXFSZ, as a write to a closed pipe fails with EPIPE (the Rust runtime
/// ignores SIGPIPE before `main`). SIGXFSZ gets a handler that does nothing rather than being
/// ignored: a handler, unlike an ignored signal, is not inherited by the programs rtgauge
/// starts (the loads get the default back at `exec`).
pub fn survive_write_limits() -> io::Result<()> {
    signal_hook::flag::register(libc::SIGXFSZ, std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)))?;
    Ok(())
}

/// Blocks the asynchronous process signals (every one of [`ending_signals`], SIGCHLD, SIGWINCH,
/// SIGPIPE, SIGXFSZ) in the calling thread so that they are delivered to the non-RT
/// coordinating thread, never to a measurement thread.
pub fn block_process_signals() -> io::Result<()> {
    // SAFETY: `set` is a valid sigset_t initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in ending_signals().into_iter().chain([libc::SIGCHLD, libc::SIGWINCH, libc::SIGPIPE, libc::SIGXFSZ]) {
            libc::sigaddset(&mut set, sig);
        }
        let ret = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if ret == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(ret))
        }
    }
}

/// The soft limit of the main thread's stack (RLIMIT_STACK, `ulimit -s`) in bytes (`None` =
/// unlimited).
pub fn stack_limit() -> io::Result<Option<u64>> {
    rlimit(libc::RLIMIT_STACK)
}

/// The soft limit of the size of a file this process writes (RLIMIT_FSIZE, `ulimit -f`) in
/// bytes (`None` = unlimited).
pub fn file_size_limit() -> io::Result<Option<u64>> {
    rlimit(libc::RLIMIT_FSIZE)
}

/// Bytes this process may still write to the file system holding `path` (`statvfs`): the
/// blocks free to unprivileged users, or every free block for root (who may use the reserve).
pub fn free_space(path: &std::path::Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: statvfs is plain data; `c` is a NUL-terminated path that outlives the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    check(unsafe { libc::statvfs(c.as_ptr(), &mut st) })?;
    let blocks = if effective_uid() == 0 { st.f_bfree } else { st.f_bavail };
    // fsblkcnt_t and f_frsize are 32 bits wide on some 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    Ok((blocks as u64).saturating_mul(st.f_frsize as u64))
}

/// The effective user id of the process.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// The effective group id of the process.
pub fn effective_gid() -> u32 {
    // SAFETY: getegid has no arguments and cannot fail.
    unsafe { libc::getegid() }
}

/// The soft limit of RLIMIT_RTPRIO (`None` = unlimited).
pub fn rtprio_limit() -> io::Result<Option<u64>> {
    rlimit(libc::RLIMIT_RTPRIO)
}

/// The soft limit of RLIMIT_MEMLOCK in bytes (`None` = unlimited).
pub fn memlock_limit() -> io::Result<Option<u64>> {
    rlimit(libc::RLIMIT_MEMLOCK)
}

/// The type of getrlimit's resource argument: glibc has its own, musl uses int.
#[cfg(target_env = "gnu")]
type RlimitResource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
type RlimitResource = libc::c_int;

fn rlimit(resource: RlimitResource) -> io::Result<Option<u64>> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is a valid, writable rlimit.
    check(unsafe { libc::getrlimit(resource, &mut lim) })?;
    // rlim_t is 32 bits wide on 32-bit ARM: the cast is needed there.
    #[allow(clippy::unnecessary_cast)]
    Ok(if lim.rlim_cur == libc::RLIM_INFINITY { None } else { Some(lim.rlim_cur as u64) })
}

/// The machine (architecture) field of `uname(2)`, e.g. `x86_64` or `aarch64`.
pub fn uname_machine() -> String {
    // SAFETY: utsname is plain data; uname fills it with NUL-terminated strings.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return std::env::consts::ARCH.to_string();
        }
        std::ffi::CStr::from_ptr(u.machine.as_ptr()).to_string_lossy().into_owned()
    }
}

// ---- processes: used by the loads (stage three) ----

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

/// Sends `signal` to every process of process group `pgid`.
pub fn signal_group(pgid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: no pointers are passed.
    check(unsafe { libc::killpg(pgid, signal) })
}

/// Makes the kernel send SIGKILL to the calling process when its parent thread exits, and
/// exits at once if the parent is already gone (`expected_parent` no longer the parent).
pub fn die_with_parent(expected_parent: u32) -> io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number; no pointers are passed.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) })?;
    // SAFETY: getppid has no arguments and cannot fail.
    if unsafe { libc::getppid() } as u32 != expected_parent {
        // SAFETY: _exit ends the process without running any Rust code.
        unsafe { libc::_exit(1) };
    }
    Ok(())
}

/// Sends `signal` to process `pid` (errors ignored: it may be gone already).
pub fn kill_process(pid: i32, signal: i32) {
    // SAFETY: no pointers are passed.
    unsafe { libc::kill(pid, signal) };
}

/// Sets the calling thread's policy from raw values.
fn set_scheduler_raw(policy: libc::c_int, priority: libc::c_int) -> io::Result<()> {
    let mut param = zeroed_sched_param();
    param.sched_priority = priority;
    // SAFETY: `param` is a valid sched_param that outlives the call; tid 0 is the calling thread.
    if unsafe { libc::syscall(libc::SYS_sched_setscheduler, 0 as libc::pid_t, policy, &param as *const libc::sched_param) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
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

/// Raw values of the policies a load may run at.
pub const SCHED_OTHER: i32 = libc::SCHED_OTHER;
pub const SCHED_BATCH: i32 = libc::SCHED_BATCH;
pub const SCHED_IDLE: i32 = libc::SCHED_IDLE;
pub const SCHED_FIFO: i32 = libc::SCHED_FIFO;
pub const SCHED_RR: i32 = libc::SCHED_RR;

/// Applies `c` to the calling process, which must be single-threaded (the launcher): what it
/// sets is kept across exec. The error names the step that failed.
pub fn contain_self(c: &Containment) -> Result<(), String> {
    if let Some(procs) = &c.cgroup_procs {
        std::fs::write(procs, "0").map_err(|e| format!("cannot join the run's cgroup ({}): {e}", procs.display()))?;
    }
    if let Some(parent) = c.die_with {
        die_with_parent(parent).map_err(|e| format!("cannot ask to die with rtgauge: {e}"))?;
    }
    if let Some(cpus) = &c.cpus {
        let mut set: libc::cpu_set_t = zeroed_cpu_set();
        for &cpu in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            // SAFETY: bounds-checked above.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
        check(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })
            .map_err(|e| format!("cannot run on CPUs {cpus:?}: {e}"))?;
    }
    if let Some((policy, priority)) = c.policy {
        let name = match policy {
            libc::SCHED_FIFO => "SCHED_FIFO",
            libc::SCHED_RR => "SCHED_RR",
            libc::SCHED_BATCH => "SCHED_BATCH",
            libc::SCHED_IDLE => "SCHED_IDLE",
            _ => "SCHED_OTHER",
        };
        set_scheduler_raw(policy, priority).map_err(|e| format!("cannot run at {name} priority {priority}: {e}"))?;
    }
    if let Some(n) = c.nice {
        // SAFETY: no pointers are passed; who 0 is the calling process.
        check(unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, n) }).map_err(|e| format!("cannot set nice {n}: {e}"))?;
    }
    Ok(())
}

/// A channel on which a child reports why it could not start: the pipe's write end becomes the
/// child's standard input; the child moves it aside ([`take_start_report`]) where exec closes
/// it. Reading the other end to its end waits until the child has run its program or failed.
pub fn start_report_pipe() -> io::Result<(std::fs::File, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (std::fs::File::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) })
}

/// In the child: moves standard input (the start-report pipe) to a descriptor closed on exec.
pub fn take_start_report() -> io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: F_DUPFD_CLOEXEC duplicates descriptor 0 onto a new one at or above 3.
    let fd = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

fn zeroed_cpu_set() -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    unsafe { std::mem::zeroed() }
}

/// Forks; the child (which dies with its parent) runs `f` and exits with its result without
/// returning. Returns the child's pid to the parent. Call only from a single-threaded process.
pub fn fork_run(f: impl FnOnce() -> i32) -> io::Result<i32> {
    let parent = std::process::id();
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
    // SAFETY: the child only calls _exit, which is async-signal-safe.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        // SAFETY: _exit ends the child at once.
        0 => unsafe { libc::_exit(0) },
        pid => wait_pid(pid).map(drop),
    }
}

/// Asks the kernel to drop `file`'s pages from the page cache (so reading it goes to the disk).
pub fn drop_file_cache(file: &std::fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is valid for the lifetime of `file`; no pointers are passed.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// Maps `bytes` of fresh anonymous memory, writes one byte in every page (a page fault each),
/// and unmaps it: one unit of the vm load. Returns the number of pages touched.
pub fn map_touch_unmap(bytes: usize) -> io::Result<u64> {
    const PAGE: usize = 4096;
    // SAFETY: a private anonymous mapping of `bytes`; only offsets below `bytes` are written,
    // and the mapping is unmapped before returning, with nothing referring to it.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = p as *mut u8;
        let mut pages = 0;
        let mut off = 0;
        while off < bytes {
            std::ptr::write_volatile(base.add(off), 0x5a);
            off += PAGE;
            pages += 1;
        }
        libc::munmap(p, bytes);
        Ok(pages)
    }
}

/// Blocks until `fd` is readable (`poll`), without reading: a start gate many processes can
/// wait on at once and pass together (reading would serialise them on the file's lock).
pub fn wait_readable(fd: &impl std::os::fd::AsRawFd) -> io::Result<()> {
    wait_readable_until(fd, None).map(drop)
}

/// Blocks until `fd` is readable or CLOCK_MONOTONIC reaches `deadline_ns` (`None`: no time
/// limit); returns whether it is readable. Signals do not end the wait early.
pub fn wait_readable_until(fd: &impl std::os::fd::AsRawFd, deadline_ns: Option<u64>) -> io::Result<bool> {
    let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    loop {
        let timeout = match deadline_ns {
            None => -1,
            Some(d) => (d.saturating_sub(monotonic_ns()).div_ceil(1_000_000)).min(i32::MAX as u64) as libc::c_int,
        };
        // SAFETY: `p` is one valid pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut p, 1, timeout) };
        if r >= 0 {
            return Ok(r > 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

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

// ---- files: used by the result writer ----

/// Opens an unnamed file in directory `dir` (`O_TMPFILE`): it has no name until
/// [`link_into`] gives it one, so a process killed while writing it leaves nothing behind.
pub fn open_unnamed_in(dir: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).mode(0o600).custom_flags(libc::O_TMPFILE).open(dir)
}

/// Gives the unnamed file `file` the name `path` (`linkat` through `/proc/self/fd`, which
/// needs no privilege). Fails if `path` exists.
pub fn link_into(file: &std::fs::File, path: &std::path::Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let from = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(io::Error::other)?;
    let to = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: both strings are valid NUL-terminated paths that outlive the call.
    check(unsafe { libc::linkat(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::AT_SYMLINK_FOLLOW) })
}

/// Whether standard output was closed when rtgauge started, or is not open for writing.
/// Rust's runtime opens `/dev/null`
/// read-write on a closed standard descriptor before `main`, so writes to it would vanish
/// silently; a shell's `>/dev/null` opens it write-only. (So `1<>/dev/null` reads as closed.)
pub fn stdout_was_closed() -> bool {
    let mut st: libc::stat = zeroed_stat();
    // SAFETY: `st` is a valid, writable stat buffer; F_GETFL takes no pointer.
    let (stat_ok, flags) = unsafe { (libc::fstat(1, &mut st) == 0, libc::fcntl(1, libc::F_GETFL)) };
    if !stat_ok || flags == -1 {
        return true;
    }
    if flags & libc::O_ACCMODE == libc::O_RDONLY {
        return true; // open, but not for writing (e.g. a descriptor an emulator took over)
    }
    let null = std::fs::metadata("/dev/null").map(|m| std::os::unix::fs::MetadataExt::rdev(&m)).ok();
    (st.st_mode & libc::S_IFMT) == libc::S_IFCHR && Some(st.st_rdev) == null && flags & libc::O_ACCMODE == libc::O_RDWR
}

fn zeroed_stat() -> libc::stat {
    // SAFETY: stat is plain data; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// How a timer thread waits for its deadline: the wait methods the FirmTimers `measure_latency`
/// compared. Everything a method needs (a timerfd, a POSIX timer and its signal) is made by
/// [`Waiter::new`] in the thread's set-up; [`Waiter::wait_until`] allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMethod {
    /// `clock_nanosleep(TIMER_ABSTIME)` (cyclictest's default).
    NanosleepAbs,
    /// `clock_nanosleep` for the time left (cyclictest `-r`): the wake-up also pays for the
    /// time between reading the clock and sleeping.
    NanosleepRel,
    /// A timerfd armed at the absolute deadline, then `read`.
    Timerfd,
    /// A POSIX timer (`timer_create`, SIGEV_THREAD_ID) armed at the absolute deadline, its RT
    /// signal taken with `sigwaitinfo`.
    PosixTimer,
    /// `select` with no descriptors and the time left (microsecond resolution).
    Select,
    /// `ppoll` with no descriptors and the time left.
    Poll,
    /// `setitimer(ITIMER_REAL)` for the time left (microseconds), its SIGALRM taken with
    /// `sigwaitinfo`. The interval timer is one per process, its signal the process's: one
    /// thread only, and every other thread blocks SIGALRM ([`block_alarm`]).
    Itimer,
}

/// Blocks SIGALRM in the calling thread (and the threads it starts later): the coordinator does
/// this first, so the interval timer's signal (`WaitMethod::Itimer`) reaches only the thread
/// that waits for it. Child processes start with an empty mask (the standard library resets it).
pub fn block_alarm() -> io::Result<()> {
    // SAFETY: `set` is a valid sigset_t initialised by sigemptyset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGALRM);
        let ret = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if ret == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(ret))
        }
    }
}

/// A thread's means of waiting (see [`WaitMethod`]); closes what it opened when dropped.
pub struct Waiter {
    method: WaitMethod,
    timerfd: Option<std::os::fd::OwnedFd>,
    posix: Option<(libc::timer_t, libc::sigset_t)>,
}

// SAFETY: the timer id is a plain handle the kernel gives this process; the waiter moves into
// its measurement thread before it is used and is used by that thread only.
unsafe impl Send for Waiter {}

fn timespec_of(ns: u64) -> libc::timespec {
    libc::timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ }
}

impl Waiter {
    /// Prepares `method` for the calling thread (a POSIX timer signals this thread only).
    pub fn new(method: WaitMethod) -> io::Result<Waiter> {
        let mut w = Waiter { method, timerfd: None, posix: None };
        match method {
            WaitMethod::Timerfd => w.timerfd = Some(new_timerfd()?),
            WaitMethod::PosixTimer => {
                let sig = libc::SIGRTMIN() + 1;
                // SAFETY: zeroed sigset_t/sigevent are valid starting values; every pointer passed
                // refers to a local that outlives the call; the timer id is written by the kernel.
                unsafe {
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    libc::sigaddset(&mut set, sig);
                    let ret = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                    if ret != 0 {
                        return Err(io::Error::from_raw_os_error(ret));
                    }
                    let mut ev: libc::sigevent = std::mem::zeroed();
                    ev.sigev_notify = libc::SIGEV_THREAD_ID;
                    ev.sigev_signo = sig;
                    ev.sigev_notify_thread_id = libc::gettid();
                    let mut id: libc::timer_t = std::mem::zeroed();
                    check(libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut id))?;
                    w.posix = Some((id, set));
                }
            }
            _ => {}
        }
        Ok(w)
    }

    /// Waits until the absolute CLOCK_MONOTONIC time `deadline_ns` by this waiter's method.
    /// Returns early only on an error the method cannot recover from (the caller reads the
    /// clock and records what happened either way).
    #[inline(always)]
    pub fn wait_until(&mut self, deadline_ns: u64) {
        match self.method {
            WaitMethod::NanosleepAbs => sleep_until_monotonic(deadline_ns),
            WaitMethod::NanosleepRel => {
                let left = timespec_of(deadline_ns.saturating_sub(monotonic_ns()));
                // SAFETY: `left` is a valid timespec; a null remainder is allowed.
                unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &left, std::ptr::null_mut()) };
            }
            WaitMethod::Timerfd => {
                let fd = std::os::fd::AsRawFd::as_raw_fd(self.timerfd.as_ref().expect("made in new"));
                let spec = libc::itimerspec { it_interval: timespec_of(0), it_value: timespec_of(deadline_ns.max(1)) };
                let mut expirations = 0u64;
                // SAFETY: `spec` and `expirations` are valid for the calls; `fd` is this waiter's timerfd.
                unsafe {
                    libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut());
                    libc::read(fd, (&mut expirations as *mut u64).cast(), 8);
                }
            }
            WaitMethod::PosixTimer => {
                let (id, set) = self.posix.as_ref().expect("made in new");
                let spec = libc::itimerspec { it_interval: timespec_of(0), it_value: timespec_of(deadline_ns.max(1)) };
                // SAFETY: `id` is this waiter's timer, `spec` and `set` are valid for the calls.
                unsafe {
                    libc::timer_settime(*id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut());
                    while libc::sigwaitinfo(set, std::ptr::null_mut()) < 0
                        && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
                    {}
                }
            }
            WaitMethod::Select => {
                let left = deadline_ns.saturating_sub(monotonic_ns());
                let mut tv = libc::timeval { tv_sec: (left / 1_000_000_000) as _, tv_usec: ((left % 1_000_000_000) / 1000) as _ };
                // SAFETY: no descriptor sets (null), `tv` is a valid timeval for the call.
                unsafe {
                    libc::select(0, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), &mut tv);
                }
            }
            WaitMethod::Poll => {
                let left = timespec_of(deadline_ns.saturating_sub(monotonic_ns()));
                // SAFETY: no descriptors (null, 0), `left` is a valid timespec, no signal mask.
                unsafe { libc::ppoll(std::ptr::null_mut(), 0, &left, std::ptr::null()) };
            }
            WaitMethod::Itimer => {
                // At least 1 µs: a zero value would disarm the timer instead.
                let left = deadline_ns.saturating_sub(monotonic_ns()).max(1000);
                let value = libc::timeval { tv_sec: (left / 1_000_000_000) as _, tv_usec: ((left % 1_000_000_000) / 1000) as _ };
                let spec = libc::itimerval { it_interval: libc::timeval { tv_sec: 0, tv_usec: 0 }, it_value: value };
                // SAFETY: `spec` and the SIGALRM set are valid for the calls.
                unsafe {
                    libc::setitimer(libc::ITIMER_REAL, &spec, std::ptr::null_mut());
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    libc::sigaddset(&mut set, libc::SIGALRM);
                    while libc::sigwaitinfo(&set, std::ptr::null_mut()) < 0
                        && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
                    {}
                }
            }
        }
    }
}

/// A new CLOCK_MONOTONIC timerfd, not armed.
fn new_timerfd() -> io::Result<std::os::fd::OwnedFd> {
    // SAFETY: timerfd_create takes no pointers; a non-negative result is a new fd we own.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by nothing else.
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
}

/// A periodic CLOCK_MONOTONIC timerfd: the kernel re-arms it at each expiry (in its timer
/// interrupt), so the thread that waits on it never programs a timer itself; `read` returns how
/// many periods expired since the last one, as a UIO device's `read` returns its interrupt count.
pub struct PeriodicTimer {
    fd: std::os::fd::OwnedFd,
}

impl std::os::fd::AsRawFd for PeriodicTimer {
    /// Readable once an expiry is pending (for [`readable_first`]).
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.fd)
    }
}

impl PeriodicTimer {
    /// A timer, not yet armed.
    pub fn new() -> io::Result<PeriodicTimer> {
        Ok(PeriodicTimer { fd: new_timerfd()? })
    }

    /// Arms it: first expiry at the absolute time `first_ns`, then every `interval_ns`.
    pub fn arm(&self, first_ns: u64, interval_ns: u64) -> io::Result<()> {
        let spec = libc::itimerspec { it_interval: timespec_of(interval_ns), it_value: timespec_of(first_ns.max(1)) };
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.fd);
        // SAFETY: `spec` is a valid itimerspec for the call; `fd` is this timer's.
        check(unsafe { libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) })
    }

    /// Waits for the next expiry; returns the periods expired since the last wait (0 only on an
    /// error the caller cannot recover from).
    #[inline(always)]
    pub fn wait(&self) -> u64 {
        let mut expirations = 0u64;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.fd);
        loop {
            // SAFETY: `expirations` is 8 writable bytes; `fd` is this timer's.
            let n = unsafe { libc::read(fd, (&mut expirations as *mut u64).cast(), 8) };
            if n == 8 {
                return expirations;
            }
            if n >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return 0;
            }
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some((id, _)) = self.posix.take() {
            // SAFETY: `id` was made by timer_create in `new` and is deleted once.
            unsafe { libc::timer_delete(id) };
        }
    }
}

/// Whether `fd` has data or its end (EOF) to read at once, without waiting.
pub fn readable_now(fd: &impl std::os::fd::AsRawFd) -> bool {
    let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: `p` is one valid pollfd; a zero timeout returns at once.
    unsafe { libc::poll(&mut p, 1, 0) > 0 }
}

/// Waits, with no timeout of its own, until `a` or `b` is readable; true when `a` is and `b` is
/// not (`b`, a [`PeriodicTimer`] where the probes use it, wins a tie). No timer is armed for
/// the wait: a timeout would program one on every call and cancel it on every wake-up, which a
/// virtual machine pays for with exits. Interruptions are retried; no allocation.
#[inline(always)]
pub fn readable_first(a: &impl std::os::fd::AsRawFd, b: &impl std::os::fd::AsRawFd) -> io::Result<bool> {
    let mut p = [
        libc::pollfd { fd: a.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: b.as_raw_fd(), events: libc::POLLIN, revents: 0 },
    ];
    loop {
        // SAFETY: `p` is an array of two valid pollfds; no timeout.
        if unsafe { libc::poll(p.as_mut_ptr(), 2, -1) } > 0 {
            return Ok(p[1].revents == 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Sets an integer socket option at level SOL_SOCKET (`SO_BUSY_POLL`, `SO_PRIORITY`).
fn socket_option(fd: &impl std::os::fd::AsRawFd, option: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` is a valid int for the call, its size given.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
}

/// `SO_BUSY_POLL`: the socket's receive busy-polls the device queue for up to `us` µs.
pub fn set_busy_poll(fd: &impl std::os::fd::AsRawFd, us: u32) -> io::Result<()> {
    socket_option(fd, libc::SO_BUSY_POLL, us.min(i32::MAX as u32) as libc::c_int)
}

/// `SO_PRIORITY`: the priority of the socket's packets (queueing discipline, VLAN PCP).
pub fn set_socket_priority(fd: &impl std::os::fd::AsRawFd, priority: u32) -> io::Result<()> {
    socket_option(fd, libc::SO_PRIORITY, priority.min(i32::MAX as u32) as libc::c_int)
}

/// One 32-bit device register reached through a mapped file (a PCI device's
/// `/sys/bus/pci/devices/*/resourceN`): the event probe writes its `ack=` value there after
/// each UIO interrupt, as a UIO driver's user space acknowledges its device.
pub struct Register {
    base: *mut libc::c_void,
    len: usize,
    offset: usize,
}

// SAFETY: the mapping is owned by this value alone and only written through `write`.
unsafe impl Send for Register {}

impl Register {
    /// Maps the page of `file` holding `offset` (which must be 4-byte aligned and within the file).
    pub fn map(file: &std::fs::File, offset: u64) -> io::Result<Register> {
        use std::os::fd::AsRawFd;
        let size = file.metadata()?.len();
        if !offset.is_multiple_of(4) || offset.checked_add(4).is_none_or(|end| end > size) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("offset {offset:#x} is not a 4-byte register within {size} bytes"),
            ));
        }
        let page = 4096u64;
        let start = offset / page * page;
        let len = (offset - start + 4) as usize;
        // SAFETY: a shared mapping of `len` bytes of the file from a page-aligned offset within it;
        // it is unmapped on drop and reached only through `write`, within its bounds.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                start as libc::off_t,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Register { base, len, offset: (offset - start) as usize })
    }

    /// Writes `value` to the register (a volatile 32-bit store).
    #[inline(always)]
    pub fn write(&self, value: u32) {
        // SAFETY: `offset + 4 <= len` (checked in `map`), 4-byte aligned, within the live mapping.
        unsafe { std::ptr::write_volatile(self.base.cast::<u8>().add(self.offset).cast::<u32>(), value) }
    }
}

impl Drop for Register {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// The resolution of CLOCK_MONOTONIC (`clock_getres`) in nanoseconds: 1 with high-resolution
/// timers, a tick (e.g. 4 000 000 at HZ=250) without.
pub fn monotonic_resolution_ns() -> io::Result<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    check(unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) })?;
    Ok(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The calling thread's id (`gettid`).
pub fn thread_id() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// A mutex of the C library with the priority-inheritance protocol
/// (`PTHREAD_PRIO_INHERIT`): what an RT application shares between threads of different
/// priorities. The audit tries one (does the C library make it, does the kernel boost its holder).
pub struct PiMutex {
    // Boxed: a pthread mutex must not move once initialised.
    inner: Box<std::cell::UnsafeCell<libc::pthread_mutex_t>>,
}

// SAFETY: a pthread mutex is made to be shared between threads; every access goes through the
// C library's own synchronised functions.
unsafe impl Send for PiMutex {}
// SAFETY: as above.
unsafe impl Sync for PiMutex {}

impl PiMutex {
    /// Makes an unlocked PI mutex; fails where the C library or the kernel has no PI futexes.
    pub fn new() -> io::Result<PiMutex> {
        let inner = Box::new(std::cell::UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
        let err = |r: libc::c_int| if r == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(r)) };
        // SAFETY: `attr` is initialised by pthread_mutexattr_init before use and destroyed after;
        // the mutex lives in its box, which does not move while the PiMutex exists.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            err(libc::pthread_mutexattr_init(&mut attr))?;
            let made = err(libc::pthread_mutexattr_setprotocol(&mut attr, libc::PTHREAD_PRIO_INHERIT))
                .and_then(|_| err(libc::pthread_mutex_init(inner.get(), &attr)));
            libc::pthread_mutexattr_destroy(&mut attr);
            made?;
        }
        Ok(PiMutex { inner })
    }

    /// Locks it, blocking (the kernel boosts the holder to the waiter's priority meanwhile).
    pub fn lock(&self) -> io::Result<()> {
        // SAFETY: the mutex was initialised in `new` and is not destroyed before `drop`.
        let r = unsafe { libc::pthread_mutex_lock(self.inner.get()) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(r))
        }
    }

    /// Unlocks it (the calling thread must hold it).
    pub fn unlock(&self) -> io::Result<()> {
        // SAFETY: as for `lock`; unlocking a mutex the thread does not hold returns an error.
        let r = unsafe { libc::pthread_mutex_unlock(self.inner.get()) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(r))
        }
    }
}

impl Drop for PiMutex {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; nobody holds or waits on it once it is dropped.
        unsafe { libc::pthread_mutex_destroy(self.inner.get()) };
    }
}

/// The C library rtgauge was built with and runs on: `("glibc", "2.36")`, or `("musl", "")`
/// (musl has no call that tells its version).
pub fn c_library() -> (&'static str, String) {
    #[cfg(target_env = "gnu")]
    {
        // SAFETY: gnu_get_libc_version returns a pointer to a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        ("glibc", v.to_string_lossy().into_owned())
    }
    #[cfg(target_env = "musl")]
    {
        ("musl", String::new())
    }
    #[cfg(not(any(target_env = "gnu", target_env = "musl")))]
    {
        ("unknown", String::new())
    }
}

/// The hypervisor's signature from CPUID leaf 0x40000000 (`KVMKVMKVM`, `VMwareVMware`,
/// `Microsoft Hv`, `TCGTCGTCGTCG`, ...), when the CPU says it runs under one (x86 only).
pub fn hypervisor_signature() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86_64 CPU; leaf 1 ECX bit 31 says whether leaf
        // 0x40000000 is the hypervisor's.
        #[allow(unused_unsafe)]
        let (leaf1, leaf) = unsafe { (__cpuid(1), __cpuid(0x4000_0000)) };
        if leaf1.ecx & (1 << 31) == 0 {
            return None;
        }
        let bytes: Vec<u8> = [leaf.ebx, leaf.ecx, leaf.edx].iter().flat_map(|r| r.to_le_bytes()).collect();
        let s = String::from_utf8_lossy(&bytes).trim_matches(char::from(0)).trim().to_string();
        Some(s)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// The CPUs task `tid` may run on (`sched_getaffinity`).
pub fn task_affinity(tid: i32) -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data, filled by the kernel; CPU_ISSET reads within its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        check(libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set))?;
        Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect())
    }
}

/// Lets task `tid` run on `cpus` only (`sched_setaffinity`); fails for a kernel thread bound to
/// its CPU (EINVAL) and for a task that is gone (ESRCH).
pub fn set_task_affinity(tid: i32, cpus: &[usize]) -> io::Result<()> {
    if cpus.iter().any(|&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain data; zeroed is its empty value. CPU_SET is bounds-checked above.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        check(libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set))
    }
}

/// Takes an exclusive lock on `file` without waiting (`flock(LOCK_EX | LOCK_NB)`): `Ok(false)`
/// when another open file description holds it. The kernel drops the lock when the last
/// descriptor closes — at any exit, SIGKILL included.
pub fn try_lock_exclusive(file: &std::fs::File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock takes a valid descriptor (borrowed from `file`) and flags; no pointers.
    match check(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Mounts a kernel file system of type `fstype` (`tracefs`, ...) at `dir` (`mount(2)`, no flags),
/// with `source` as its source name (what /proc/mounts shows in its first column: rtgauge names
/// its own mounts so that another rtgauge can tell them from the system's).
pub fn mount_kernel_fs(source: &str, fstype: &str, dir: &str) -> io::Result<()> {
    let c = |s: &str| std::ffi::CString::new(s).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL));
    let (src, target, kind) = (c(source)?, c(dir)?, c(fstype)?);
    // SAFETY: three valid NUL-terminated strings that outlive the call; no data argument.
    check(unsafe { libc::mount(src.as_ptr(), target.as_ptr(), kind.as_ptr(), 0, std::ptr::null()) })
}

/// Eight unpredictable bytes from the kernel's random pool (`getrandom(2)`), for names in shared
/// namespaces (message queues, trace instances) that another user must not be able to take first.
pub fn random_u64() -> io::Result<u64> {
    let mut bytes = [0u8; 8];
    let mut got = 0;
    while got < bytes.len() {
        // SAFETY: the pointer and length describe the unfilled rest of `bytes`.
        let n = unsafe { libc::getrandom(bytes[got..].as_mut_ptr().cast(), bytes.len() - got, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        got += n as usize;
    }
    Ok(u64::from_le_bytes(bytes))
}

/// Unmounts the file system at `dir` (`umount2`, lazily: a reader still inside keeps it until done).
pub fn unmount(dir: &str) -> io::Result<()> {
    let target = std::ffi::CString::new(dir).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a valid NUL-terminated string that outlives the call.
    check(unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) })
}

/// Stops a kernel trace: writes `0` to its `tracing_on` file, open as `fd` (one `write`; the
/// RT thread that saw a new worst case calls it, so the trace ends where the latency did).
#[inline(always)]
pub fn stop_trace(fd: i32) {
    let zero = b'0';
    // SAFETY: one byte from a live stack value; a bad descriptor only makes write fail.
    unsafe { libc::write(fd, &zero as *const u8 as *const libc::c_void, 1) };
}

/// Names the calling thread (`prctl(PR_SET_NAME)`; the kernel keeps 15 bytes).
pub fn set_thread_name(name: &str) -> io::Result<()> {
    let mut bytes: Vec<u8> = name.bytes().filter(|&b| b != 0).take(15).collect();
    bytes.push(0);
    // SAFETY: a NUL-terminated buffer that outlives the call.
    check(unsafe { libc::prctl(libc::PR_SET_NAME, bytes.as_ptr() as libc::c_ulong, 0, 0, 0) })
}

#[cfg(test)]
mod tests {
    /// Resident KiB of the process's read-and-execute file mappings (`/proc/self/smaps`).
    fn code_resident_kib() -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut code = false;
        let mut kib = 0;
        for line in smaps.lines() {
            let mut f = line.split_whitespace();
            match f.next() {
                Some("Rss:") if code => kib += f.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0),
                Some(first) if first.contains('-') && !first.ends_with(':') => {
                    code = f.next() == Some("r-xp") && f.nth(3).is_some_and(|p| p.starts_with('/'));
                }
                _ => {}
            }
        }
        kib
    }

    #[test]
    fn released_code_pages_leave_the_process_and_come_back_when_run() {
        if std::env::var_os("RTGAUGE_RUNNER").is_some() {
            eprintln!("SKIPPED: under an emulator the mappings and their pages are the emulator's");
            return;
        }
        let before = code_resident_kib();
        assert!(super::release_code_pages() >= 1, "the test binary's own code at least");
        let after = code_resident_kib();
        assert!(after < before, "code resident before {before} KiB, after {after} KiB");
        // The code runs on: its pages come back from the file as it is executed.
        assert_eq!(super::monotonic_ns() > 0, code_resident_kib() > 0);
    }
}
