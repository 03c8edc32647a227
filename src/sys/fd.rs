//! File descriptors: waiting until one is readable (`poll`), an exclusive lock (`flock`), whether
//! standard output was closed at start, and the one-byte write that stops a kernel trace.

use std::io;

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
            Some(d) => (d.saturating_sub(super::time::monotonic_ns()).div_ceil(1_000_000)).min(i32::MAX as u64) as libc::c_int,
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

/// Takes an exclusive lock on `file` without waiting (`flock(LOCK_EX | LOCK_NB)`): `Ok(false)`
/// when another open file description holds it. The kernel drops the lock when the last
/// descriptor closes — at any exit, SIGKILL included.
pub fn try_lock_exclusive(file: &std::fs::File) -> io::Result<bool> {
    match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
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

/// Stops a kernel trace: writes `0` to its `tracing_on` file, open as `fd` (one `write`; the
/// RT thread that saw a new worst case calls it, so the trace ends where the latency did).
#[inline(always)]
pub fn stop_trace(fd: i32) {
    let zero = b'0';
    // SAFETY: one byte from a live stack value; a bad descriptor only makes write fail.
    unsafe { libc::write(fd, &zero as *const u8 as *const libc::c_void, 1) };
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_second_open_file_description_does_not_get_the_lock() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let again = std::fs::File::open(f.path()).unwrap();
        assert!(super::try_lock_exclusive(f.as_file()).unwrap());
        assert!(!super::try_lock_exclusive(&again).unwrap());
    }
}
