//! Clocks: CLOCK_MONOTONIC read, slept on and its resolution (`clock_gettime`,
//! `clock_nanosleep` made by rustix; `clock_getres`). Reading and sleeping allocate nothing and
//! take no lock (the clock is read through the vDSO): the RT loops call them.

use rustix::time::{ClockId, DynamicClockId, Timespec};
use std::io;

/// Nanoseconds in a rustix timespec.
#[inline(always)]
pub(super) fn ns_of(ts: Timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A rustix timespec of `ns` nanoseconds.
#[inline(always)]
pub(super) fn timespec_of(ns: u64) -> Timespec {
    Timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ }
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds (0 should the call ever fail: it has no
/// panic path, unlike rustix's infallible `clock_gettime`, which asserts).
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    rustix::time::clock_gettime_dynamic(DynamicClockId::Known(ClockId::Monotonic)).map_or(0, ns_of)
}

/// Sleeps until the absolute CLOCK_MONOTONIC time `deadline_ns` with
/// `clock_nanosleep(TIMER_ABSTIME)`, resuming after signal interruptions.
#[inline(always)]
pub fn sleep_until_monotonic(deadline_ns: u64) {
    let ts = timespec_of(deadline_ns);
    // Only EINTR is retried (an absolute deadline makes the retry exact). Any other error cannot
    // happen with valid arguments.
    while rustix::thread::clock_nanosleep_absolute(ClockId::Monotonic, &ts) == Err(rustix::io::Errno::INTR) {}
}

/// The resolution of CLOCK_MONOTONIC (`clock_getres`) in nanoseconds: 1 with high-resolution
/// timers, a tick (e.g. 4 000 000 at HZ=250) without. (The C library's call: rustix's has no
/// error path, and leaves its result undefined if the kernel refuses.)
pub fn monotonic_resolution_ns() -> io::Result<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    super::check(unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) })?;
    Ok(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}
