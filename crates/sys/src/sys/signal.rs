//! Signals: which ones end rtgauge and their names, SIGXFSZ made harmless, the process signals
//! kept away from the measurement threads, and signals sent to other processes.

use super::check;
use std::io;

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
    // Raw: the C library's `pthread_sigmask` (rustix has signal masks only in its unstable
    // `runtime` feature, which bypasses the C library's own signals).
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

/// Sends `signal` to every process of process group `pgid`.
pub fn signal_group(pgid: i32, signal: i32) -> io::Result<()> {
    // Raw: rustix's `kill_process_group` takes a positive `Pid` and a `Signal`; this passes any
    // number on to the kernel as it is (as `kill_process` below).
    // SAFETY: no pointers are passed.
    check(unsafe { libc::killpg(pgid, signal) })
}

/// Sends `signal` to process `pid` (errors ignored: it may be gone already).
pub fn kill_process(pid: i32, signal: i32) {
    // Raw: as `signal_group`.
    // SAFETY: no pointers are passed.
    unsafe { libc::kill(pid, signal) };
}
