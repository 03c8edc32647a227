//! File descriptors: waiting until one is readable (`poll`), an exclusive lock (`flock`), whether
//! standard output was closed at start, and the one-byte write that stops a kernel trace.

use rustix::event::{PollFd, PollFlags};
use rustix::time::Timespec;
use std::io;
use std::os::fd::AsFd;

/// Whether `fd` has data or its end (EOF) to read at once, without waiting (`ppoll`, zero timeout).
pub fn readable_now(fd: &impl AsFd) -> bool {
    let zero = Timespec { tv_sec: 0, tv_nsec: 0 };
    rustix::event::poll(&mut [PollFd::new(fd, PollFlags::IN)], Some(&zero)).is_ok_and(|n| n > 0)
}

/// Waits, with no timeout of its own, until `a` or `b` is readable; true when `a` is and `b` is
/// not (`b`, a [`PeriodicTimer`] where the probes use it, wins a tie). No timer is armed for
/// the wait: a timeout would program one on every call and cancel it on every wake-up, which a
/// virtual machine pays for with exits. Interruptions are retried; no allocation.
///
/// Raw `poll`, the C library's: it makes the `poll` system call on x86_64 and armv7 (`ppoll` on
/// aarch64), where rustix's `poll` always makes `ppoll`; the probes' wait keeps its exact call.
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

/// Blocks until `fd` is readable (`ppoll`), without reading: a start gate many processes can
/// wait on at once and pass together (reading would serialise them on the file's lock).
pub fn wait_readable(fd: &impl AsFd) -> io::Result<()> {
    wait_readable_until(fd, None).map(drop)
}

/// Blocks until `fd` is readable or CLOCK_MONOTONIC reaches `deadline_ns` (`None`: no time
/// limit); returns whether it is readable (`ppoll`, its timeout whole milliseconds rounded up).
/// Signals do not end the wait early.
pub fn wait_readable_until(fd: &impl AsFd, deadline_ns: Option<u64>) -> io::Result<bool> {
    let mut p = [PollFd::new(fd, PollFlags::IN)];
    loop {
        let timeout = deadline_ns.map(|d| {
            let ms = d.saturating_sub(super::time::monotonic_ns()).div_ceil(1_000_000).min(i32::MAX as u64);
            Timespec { tv_sec: (ms / 1000) as _, tv_nsec: ((ms % 1000) * 1_000_000) as _ }
        });
        match rustix::event::poll(&mut p, timeout.as_ref()) {
            Ok(n) => return Ok(n > 0),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
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

/// Takes a shared lock on `file`, waiting for it (`flock(LOCK_SH)`); dropped with the last
/// descriptor, as [`try_lock_exclusive`]'s.
pub fn lock_shared(file: &std::fs::File) -> io::Result<()> {
    loop {
        match rustix::fs::flock(file, rustix::fs::FlockOperation::LockShared) {
            Err(rustix::io::Errno::INTR) => {}
            done => return done.map_err(Into::into),
        }
    }
}

/// Whether standard output was closed when rtgauge started, or is not open for writing.
/// Rust's runtime opens `/dev/null`
/// read-write on a closed standard descriptor before `main`, so writes to it would vanish
/// silently; a shell's `>/dev/null` opens it write-only. (So `1<>/dev/null` reads as closed.)
pub fn stdout_was_closed() -> bool {
    use rustix::fs::{FileType, OFlags};
    let out = rustix::stdio::stdout();
    let (Ok(st), Ok(flags)) = (rustix::fs::fstat(out), rustix::fs::fcntl_getfl(out)) else { return true };
    let access = flags & OFlags::RWMODE;
    if access == OFlags::RDONLY {
        return true; // open, but not for writing (e.g. a descriptor an emulator took over)
    }
    let null = std::fs::metadata("/dev/null").map(|m| std::os::unix::fs::MetadataExt::rdev(&m)).ok();
    FileType::from_raw_mode(st.st_mode) == FileType::CharacterDevice && Some(st.st_rdev) == null && access == OFlags::RDWR
}

/// Stops a kernel trace: writes `0` to its `tracing_on` file, open as `fd` (one `write`; the
/// RT thread that saw a new worst case calls it, so the trace ends where the latency did).
///
/// Raw `write` on the raw descriptor: rustix's takes a `BorrowedFd`, and `BorrowedFd::borrow_raw`
/// asserts that the number is not -1, a panic path on the RT thread.
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
