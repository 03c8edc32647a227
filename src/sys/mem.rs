//! Memory: the allocator's set-up, locking every page (`mlockall`) and letting go again, the
//! page faults a thread takes, dropping code and file-cache pages, and the vm load's unit.

use std::io;

/// Keeps the C library's allocator small under `mlockall`: one arena (each thread that allocates
/// would otherwise get one of its own, whose first 132 KiB become resident), and large blocks
/// always mapped and unmapped (glibc otherwise raises that threshold after the first large
/// free, and the end-of-run encoders' transient buffers then stay in the heap). glibc only;
/// the measurement threads do not allocate in their loops, so they never contend for it.
/// Called first thing in `main`, before any thread: glibc fixes how many arenas it may make
/// when a second thread first allocates, and ignores a later limit. Set later, a continuous
/// run's keeper got an arena of its own that grew by about 4 KiB per rotated run kept; the
/// dashboard's resident set, with glibc's defaults, grew 11-13 % over 100 000 requests
/// (BENCHMARKS.md).
pub fn tame_malloc() {
    #[cfg(target_env = "gnu")]
    // Raw: the C library's allocator's own settings (no system call).
    // SAFETY: mallopt takes two integers and only changes future allocations.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 * 1024);
    }
}

/// Gives the allocator's free memory back to the system (`malloc_trim(0)`: the heap's free top,
/// and its free pages within): a server's resident set then follows what it holds, not what it
/// once held. glibc only (musl's allocator gives memory back as it frees it).
pub fn trim_heap() {
    #[cfg(target_env = "gnu")]
    // Raw: the C library's allocator's own function (no system call of its own).
    // SAFETY: malloc_trim takes an integer and only releases memory the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
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
    use rustix::mm::{mlockall, MlockAllFlags};
    match mlockall(MlockAllFlags::CURRENT | MlockAllFlags::FUTURE | MlockAllFlags::ONFAULT) {
        Err(rustix::io::Errno::INVAL) => Ok(mlockall(MlockAllFlags::CURRENT | MlockAllFlags::FUTURE)?),
        r => Ok(r?),
    }
}

/// Page faults (minor and major) the calling thread has taken so far (`getrusage(RUSAGE_THREAD)`).
#[inline(never)]
pub fn thread_page_faults() -> u64 {
    // Raw: rustix has no `getrusage`.
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
    let _ = rustix::mm::munlockall();
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
        if unsafe { rustix::mm::madvise(start as *mut std::ffi::c_void, end - start, rustix::mm::Advice::LinuxDontNeed) }.is_ok()
        {
            released += 1;
        }
    }
    released
}

/// Asks the kernel to drop `file`'s pages from the page cache (so reading it goes to the disk;
/// `posix_fadvise(POSIX_FADV_DONTNEED)` on the whole file).
pub fn drop_file_cache(file: &std::fs::File) {
    let _ = rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed);
}

/// Maps `bytes` of fresh anonymous memory, writes one byte in every page (a page fault each),
/// and unmaps it: one unit of the vm load. Returns the number of pages touched.
pub fn map_touch_unmap(bytes: usize) -> io::Result<u64> {
    use rustix::mm::{MapFlags, ProtFlags};
    const PAGE: usize = 4096;
    // SAFETY: a private anonymous mapping of `bytes`; only offsets below `bytes` are written,
    // and the mapping is unmapped before returning, with nothing referring to it.
    unsafe {
        let p = rustix::mm::mmap_anonymous(std::ptr::null_mut(), bytes, ProtFlags::READ | ProtFlags::WRITE, MapFlags::PRIVATE)?;
        let base = p as *mut u8;
        let mut pages = 0;
        let mut off = 0;
        while off < bytes {
            std::ptr::write_volatile(base.add(off), 0x5a);
            off += PAGE;
            pages += 1;
        }
        let _ = rustix::mm::munmap(p, bytes);
        Ok(pages)
    }
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
        assert_eq!(crate::sys::time::monotonic_ns() > 0, code_resident_kib() > 0);
    }
}
