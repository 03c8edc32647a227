//! The only module allowed to use `unsafe`: thin, intent-named wrappers over the raw
//! Linux system calls the measurement needs (clocks, scheduling, affinity, memory locking,
//! signal masks). Every other module is compiled with `#![deny(unsafe_code)]` in effect and
//! calls these safe functions instead.
//!
//! Each wrapper documents the syscall it makes; the unsafe blocks only pass valid pointers
//! to stack values that live for the duration of the call. The calls are grouped by domain, as
//! rustix groups them; where rustix covers a call it makes it, and the raw calls are kept for
//! what it does not cover (sched_setattr, POSIX timers, message queues, semaphores, ...).
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
