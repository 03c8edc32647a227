//! The only module allowed to use `unsafe`: thin, intent-named wrappers over the raw
//! Linux system calls the measurement needs (clocks, scheduling, affinity, memory locking,
//! signal masks). Every other module is compiled with `#![deny(unsafe_code)]` in effect and
//! calls these safe functions instead.
//!
//! Each wrapper documents the syscall it makes; the unsafe blocks only pass valid pointers
//! to values that live for the duration of the call (stack values, mostly), or, where the
//! callee keeps the pointer (SQLite's page pool), to memory that lives as long as the process. The calls are grouped by domain, as
//! rustix groups them, and rustix makes every call it covers (rustix's errors become
//! `io::Error`s with the same text). Raw calls are kept only where it does not, each with its
//! reason where it is made:
//!
//! - calls rustix does not have: the scheduling policy (`sched_setscheduler`,
//!   `sched_getscheduler`, `sched_getparam`, `sched_setattr`), POSIX timers (`timer_create`,
//!   `timer_settime`, `timer_delete`), `setitimer`, message queues (`mq_*`), semaphores
//!   (`sem_*`), `wait4` and `getrusage` (resource usage), and the socket options `SO_BUSY_POLL`
//!   and `SO_PRIORITY` (rustix's `sockopt` has a setter per option, none for these two);
//! - calls rustix has only in its unstable `runtime` feature, which bypasses the C library:
//!   signal masks (`pthread_sigmask`), `sigwaitinfo`, `tgkill`, `fork` (the C library's runs
//!   its at-fork handlers) and `_exit`;
//! - the C library's own functions, not a system call rustix could make: its allocator's
//!   settings (`mallopt`) and trim (`malloc_trim`), its version (`gnu_get_libc_version`), its priority-inheritance mutex
//!   (`pthread_mutex_*`);
//! - SQLite's process-wide configuration (`sqlite3_config`: the page cache's pool of a
//!   continuous run), which rusqlite has no safe call for;
//! - calls rustix covers in another form, kept as they are: the timer probe's `select` and
//!   `ppoll` wait methods (what they measure is the C library's functions as an application
//!   calls them), `poll` in `fd::readable_first`, an RT wait (the C library makes `poll` on
//!   x86_64 and armv7, rustix always `ppoll`), `write` in `fd::stop_trace`, on
//!   the RT thread (rustix's needs a `BorrowedFd`, whose `borrow_raw` asserts), `futex` in
//!   `wake` (rustix's `debug_assert`s its result in the RT loops), `clock_getres` (rustix's has no
//!   error path), and `kill`/`killpg` (rustix's take a positive `Pid` and a `Signal`; these pass
//!   any number on to the kernel).
#![allow(unsafe_code)]

use std::io;

pub mod dev;
pub mod fd;
pub mod files;
pub mod fs;
pub mod host;
pub mod mem;
pub mod net;
pub mod process;
pub mod sched;
pub mod signal;
pub mod sync;
pub mod time;
pub mod timer;
pub mod tracefs;
pub mod wake;

/// Result of a C library call that returns 0, or -1 and errno on failure.
fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Result of a raw `syscall()`: -1 and errno on failure.
fn check_syscall(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}
