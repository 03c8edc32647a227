//! The timer probe's wait methods: how a thread waits for its deadline (nanosleep, timerfd, a
//! POSIX timer, select, poll, an interval timer), and the periodic timerfd the other probes wait
//! on. Everything a method needs is made before the loop; waiting allocates nothing.

use super::{check, time};
use rustix::time::{ClockId, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags};
use std::io;
use std::os::fd::OwnedFd;

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
    // Raw: the C library's `pthread_sigmask` (rustix has signal masks only in its unstable
    // `runtime` feature, which bypasses the C library's own signals).
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
    how: How,
}

/// A wait method with what it needs, made in [`Waiter::new`]: a method that needs a timer holds
/// it, so waiting finds it without a check that could fail in the loop.
enum How {
    NanosleepAbs,
    NanosleepRel,
    Timerfd(OwnedFd),
    PosixTimer { id: libc::timer_t, set: libc::sigset_t },
    Select,
    Poll,
    Itimer,
}

// SAFETY: the timer id is a plain handle the kernel gives this process; the waiter moves into
// its measurement thread before it is used and is used by that thread only.
unsafe impl Send for Waiter {}

/// A libc timespec of `ns` nanoseconds.
fn timespec_of(ns: u64) -> libc::timespec {
    libc::timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ }
}

/// An itimerspec that expires once, at the absolute time `deadline_ns` (at least 1: zero disarms).
#[inline(always)]
fn once_at(deadline_ns: u64) -> Itimerspec {
    Itimerspec { it_interval: time::timespec_of(0), it_value: time::timespec_of(deadline_ns.max(1)) }
}

impl Waiter {
    /// Prepares `method` for the calling thread (a POSIX timer signals this thread only).
    pub fn new(method: WaitMethod) -> io::Result<Waiter> {
        let how = match method {
            WaitMethod::NanosleepAbs => How::NanosleepAbs,
            WaitMethod::NanosleepRel => How::NanosleepRel,
            WaitMethod::Timerfd => How::Timerfd(new_timerfd()?),
            WaitMethod::PosixTimer => {
                let sig = libc::SIGRTMIN() + 1;
                let tid = rustix::thread::gettid().as_raw_nonzero().get();
                // Raw: rustix has no POSIX timers (`timer_create`) and no `pthread_sigmask`.
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
                    ev.sigev_notify_thread_id = tid;
                    let mut id: libc::timer_t = std::mem::zeroed();
                    check(libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut id))?;
                    How::PosixTimer { id, set }
                }
            }
            WaitMethod::Select => How::Select,
            WaitMethod::Poll => How::Poll,
            WaitMethod::Itimer => How::Itimer,
        };
        Ok(Waiter { how })
    }

    /// Waits until the absolute CLOCK_MONOTONIC time `deadline_ns` by this waiter's method.
    /// Returns early only on an error the method cannot recover from (the caller reads the
    /// clock and records what happened either way).
    #[inline(always)]
    pub fn wait_until(&mut self, deadline_ns: u64) {
        match &self.how {
            How::NanosleepAbs => time::sleep_until_monotonic(deadline_ns),
            How::NanosleepRel => {
                let left = time::timespec_of(deadline_ns.saturating_sub(time::monotonic_ns()));
                let _ = rustix::thread::clock_nanosleep_relative(ClockId::Monotonic, &left);
            }
            How::Timerfd(fd) => {
                let mut expirations = [0u8; 8];
                let _ = rustix::time::timerfd_settime(fd, TimerfdTimerFlags::ABSTIME, &once_at(deadline_ns));
                let _ = rustix::io::read(fd, &mut expirations);
            }
            How::PosixTimer { id, set } => {
                // Raw: POSIX timers and `sigwaitinfo` (rustix: neither, but in `runtime`).
                let spec = libc::itimerspec { it_interval: timespec_of(0), it_value: timespec_of(deadline_ns.max(1)) };
                // SAFETY: `id` is this waiter's timer, `spec` and `set` are valid for the calls.
                unsafe {
                    libc::timer_settime(*id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut());
                    while libc::sigwaitinfo(set, std::ptr::null_mut()) < 0
                        && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
                    {}
                }
            }
            How::Select => {
                // Raw: the method measured is the C library's `select`, as an application calls it.
                let left = deadline_ns.saturating_sub(time::monotonic_ns());
                let mut tv = libc::timeval { tv_sec: (left / 1_000_000_000) as _, tv_usec: ((left % 1_000_000_000) / 1000) as _ };
                // SAFETY: no descriptor sets (null), `tv` is a valid timeval for the call.
                unsafe {
                    libc::select(0, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), &mut tv);
                }
            }
            How::Poll => {
                // Raw: the method measured is the C library's `ppoll`, as an application calls it.
                let left = timespec_of(deadline_ns.saturating_sub(time::monotonic_ns()));
                // SAFETY: no descriptors (null, 0), `left` is a valid timespec, no signal mask.
                unsafe { libc::ppoll(std::ptr::null_mut(), 0, &left, std::ptr::null()) };
            }
            How::Itimer => {
                // Raw: rustix has no `setitimer`, and `sigwaitinfo` only in `runtime`.
                // At least 1 µs: a zero value would disarm the timer instead.
                let left = deadline_ns.saturating_sub(time::monotonic_ns()).max(1000);
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

impl Drop for Waiter {
    fn drop(&mut self) {
        if let How::PosixTimer { id, .. } = self.how {
            // Raw: POSIX timers, as in `new`.
            // SAFETY: `id` was made by timer_create in `new` and is deleted once, here.
            unsafe { libc::timer_delete(id) };
        }
    }
}

/// A new CLOCK_MONOTONIC timerfd, not armed.
fn new_timerfd() -> io::Result<OwnedFd> {
    Ok(rustix::time::timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::CLOEXEC)?)
}

/// A periodic CLOCK_MONOTONIC timerfd: the kernel re-arms it at each expiry (in its timer
/// interrupt), so the thread that waits on it never programs a timer itself; `read` returns how
/// many periods expired since the last one, as a UIO device's `read` returns its interrupt count.
pub struct PeriodicTimer {
    fd: OwnedFd,
}

impl std::os::fd::AsRawFd for PeriodicTimer {
    /// Readable once an expiry is pending (for [`super::fd::readable_first`]).
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
        let spec = Itimerspec { it_interval: time::timespec_of(interval_ns), it_value: time::timespec_of(first_ns.max(1)) };
        rustix::time::timerfd_settime(&self.fd, TimerfdTimerFlags::ABSTIME, &spec)?;
        Ok(())
    }

    /// Waits for the next expiry; returns the periods expired since the last wait (0 only on an
    /// error the caller cannot recover from).
    #[inline(always)]
    pub fn wait(&self) -> u64 {
        let mut expirations = [0u8; 8];
        loop {
            // One `read` of 8 bytes (rustix's makes the system call itself: no lock, no panic path).
            match rustix::io::read(&self.fd, &mut expirations) {
                Ok(8) => return u64::from_ne_bytes(expirations),
                Err(rustix::io::Errno::INTR) => {}
                _ => return 0,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every wait method returns once its deadline is reached (1 ms ahead), and a periodic timer
    /// counts its expiries. (Not the interval timer: its SIGALRM goes to the process, and the
    /// test harness's other threads do not block it as rtgauge's do.)
    #[test]
    fn every_wait_method_returns_at_its_deadline() {
        for method in [
            WaitMethod::NanosleepAbs,
            WaitMethod::NanosleepRel,
            WaitMethod::Timerfd,
            WaitMethod::PosixTimer,
            WaitMethod::Select,
            WaitMethod::Poll,
        ] {
            let mut w = Waiter::new(method).unwrap();
            let deadline = time::monotonic_ns() + 1_000_000;
            w.wait_until(deadline);
            // The relative methods count from a clock read a little before they sleep, and the
            // microsecond ones round down.
            assert!(time::monotonic_ns() + 100_000 >= deadline, "{method:?} returned early");
        }
        let t = PeriodicTimer::new().unwrap();
        t.arm(time::monotonic_ns() + 1_000_000, 1_000_000).unwrap();
        assert!(t.wait() >= 1);
    }
}
