//! Signals and the process: what every command needs of the process before it starts
//! ([`prepare_process`]), and how a run, a load or an echo stops ([`Interrupts`]): the first
//! ending signal asks it to stop and keep its data; a second SIGINT, SIGTERM or SIGQUIT exits.

use crate::load::manager::LoadSet;
use crate::load::watchdog::Watchdog;
use crate::sys;
use anyhow::Result;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Signal handling: the first signal that would end the process (SIGINT, SIGTERM, SIGHUP from a
/// closed terminal or a dropped ssh connection, SIGUSR1, ... every one of
/// `sys::signal::ending_signals`) asks the run to stop and keep its data, as SIGTERM does. A second
/// SIGINT, SIGTERM or SIGQUIT (a user who means it) exits at once; other signals may come twice
/// without anyone asking twice (a hung-up terminal's SIGHUP, then the shell's own to its jobs)
/// and only stop the run.
pub struct Interrupts {
    pub stop: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
    /// A socket the handlers write a byte to, so a thread waiting in `poll` (the load watchdog)
    /// wakes on a signal; `notify` writes to it too.
    wake: std::os::unix::net::UnixStream,
    notify: std::os::unix::net::UnixStream,
}

impl Interrupts {
    /// Installed for `rtgauge run`: SIGALRM is the interval timer's (timer:wait=itimer), for its
    /// thread alone: every thread started from here blocks it.
    pub fn install_for_run() -> Result<Interrupts> {
        sys::timer::block_alarm()?;
        Interrupts::install()
    }

    /// The run's first stage: Ctrl-C and SIGTERM stop it at any moment from here on, and a
    /// lab's server that does not answer holds up no stop (its connection is given up on). A
    /// run that goes on for months gives SQLite's pages memory of their own before any store is
    /// opened, so that its peak memory is reached with its first part kept.
    pub(super) fn for_run(plan: &crate::scenario::RunPlan, keep: &dyn crate::keep::Keep) -> Result<Interrupts> {
        let interrupts = Interrupts::install_for_run()?;
        keep.before_run(interrupts.signalled(), plan.continuous.rotate_ns.is_some());
        Ok(interrupts)
    }

    pub fn install() -> Result<Interrupts> {
        use signal_hook::consts::{SIGINT, SIGQUIT, SIGTERM};
        let stop = Arc::new(AtomicBool::new(false));
        let signal = Arc::new(AtomicUsize::new(0));
        let signals = sys::signal::ending_signals();
        for &sig in &signals {
            // Registered first, so it sees the flag as it was before this signal: set means second.
            if [SIGINT, SIGTERM, SIGQUIT].contains(&sig) {
                signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())?;
            }
            signal_hook::flag::register_usize(sig, signal.clone(), sig as usize)?;
            signal_hook::flag::register(sig, stop.clone())?;
        }
        let (wake, notify) = std::os::unix::net::UnixStream::pair()?;
        for &sig in &signals {
            signal_hook::low_level::pipe::register(sig, notify.try_clone()?)?;
        }
        Ok(Interrupts { stop, signal, wake, notify })
    }

    /// The signal that asked the run to stop (0: none yet), as its handlers set it: unlike
    /// `stop`, which the end of the measurement sets too.
    pub fn signalled(&self) -> Arc<AtomicUsize> {
        self.signal.clone()
    }

    /// Starts the load watchdog (see `load::watchdog`) for these loads, if there are any.
    pub(super) fn watchdog(&self, loads: &LoadSet, warnings: &mut Vec<String>) -> Result<Option<Watchdog>> {
        if loads.is_empty() {
            return Ok(None);
        }
        let w = Watchdog::start(self.wake.try_clone()?, self.notify.try_clone()?, self.stop.clone(), loads.demoter())?;
        if let (Err(why), true) = (&w.how, loads.any_realtime()) {
            warnings.push(format!(
                "the load watchdog cannot run at SCHED_DEADLINE ({why}): a load at a high RT priority may hold the run \
                 past its end on a PREEMPT_RT kernel"
            ));
        }
        Ok(Some(w))
    }

    /// The signal that stopped the command, if one did.
    pub fn which(&self) -> Option<String> {
        match self.signal.load(Ordering::Relaxed) as i32 {
            0 => None,
            n => Some(sys::signal::signal_name(n)),
        }
    }
}

/// The least stack limit (`ulimit -s`) rtgauge runs under: its main thread (the coordinator,
/// the report, the store's SQLite) runs in the process's stack, which cannot grow past the
/// limit; below it a command would end in a stack overflow, saying nothing. (Found by running
/// the commands that do not measure under smaller and smaller limits, with room to spare for
/// those that do.)
pub const MIN_STACK_KIB: u64 = 1024;

/// What every command needs of the process before it starts: the allocator kept small
/// (run again without glibc's per-thread cache, [`sys::mem::exec_without_thread_cache`], and
/// [`sys::mem::tame_malloc`]: a run's memory is locked, the dashboard's pages are large
/// transient strings), a stack limit it can run under (else a one-line error), and writes past
/// the file size limit (`ulimit -f`) or to a closed pipe that fail (EFBIG, EPIPE) instead of
/// killing the process, so their error is said and a result kept elsewhere.
pub fn prepare_process() -> Result<(), crate::vocab::Error> {
    prepare_process_text().map_err(crate::vocab::Error::System)
}

/// [`prepare_process`], its failure as text.
fn prepare_process_text() -> std::result::Result<(), String> {
    // Before anything else, and before any thread exists: run again without glibc's per-thread
    // cache, whose held blocks fragmented a continuous run's heap.
    sys::mem::exec_without_thread_cache();
    // Before any thread exists: glibc fixes its number of arenas when a second thread first
    // allocates, so a limit set later (as it was, when memory was locked) came too late.
    sys::mem::tame_malloc();
    if let Ok(Some(limit)) = sys::process::stack_limit() {
        if limit < MIN_STACK_KIB * 1024 {
            return Err(format!(
                "the stack limit (ulimit -s) is {} KiB; rtgauge needs at least {MIN_STACK_KIB} KiB: raise it with \
                 'ulimit -s 8192'",
                limit / 1024
            ));
        }
    }
    sys::signal::survive_write_limits().map_err(|e| format!("cannot set up the handling of SIGXFSZ: {e}"))
}

#[cfg(test)]
impl Interrupts {
    /// Interrupts no signal reaches, for tests of the coordinator.
    pub(super) fn calm() -> Interrupts {
        let (wake, notify) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        Interrupts { stop: Arc::new(AtomicBool::new(false)), signal: Arc::new(AtomicUsize::new(0)), wake, notify }
    }
}
