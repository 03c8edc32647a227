//! Memory: the allocators' set-up (the C library's, SQLite's page cache), locking every page (`mlockall`) and letting go again, the
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

/// Gives SQLite's page cache a pool of `lines` lines, each room for one page of up to
/// `page_bytes` bytes with SQLite's own header, allocated here once, every page of it written
/// (memory is locked as it is first touched: `MCL_ONFAULT`), and used for the life of the
/// process; pages beyond it fall back to SQLite's allocator. SQLite takes it only before it first
/// starts (the first connection opened): returns whether it did. To be called before any other
/// thread may use SQLite (SQLite's configuration is not made for threads). A continuous run's
/// keeper would otherwise take each 64-KiB page from the C library as a mapping of its own and
/// let it go again, so that the process's peak grew whenever a part happened to hold more pages
/// at once than any before (BENCHMARKS.md); from the pool, the pages' memory is resident and the
/// same from the start as at the thousandth part.
pub fn sqlite_page_pool(page_bytes: usize, lines: usize) -> bool {
    use rusqlite::ffi;
    let mut header: std::ffi::c_int = 0;
    // Raw: SQLite's process-wide configuration (rusqlite has no safe call for it).
    // SAFETY: this option writes one int through the pointer given, which outlives the call.
    if unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_PCACHE_HDRSZ, &mut header as *mut std::ffi::c_int) } != ffi::SQLITE_OK {
        return false;
    }
    let line = (page_bytes + header.max(0) as usize).next_multiple_of(8);
    let (Ok(size), Ok(count)) = (std::ffi::c_int::try_from(line), std::ffi::c_int::try_from(lines)) else { return false };
    let mut pool = vec![0u64; line / 8 * lines].into_boxed_slice();
    // The allocator's fresh mapping reads as zeros without being resident: one word of each
    // 4-KiB page written makes all of it resident now (volatile: not a store to elide).
    for word in pool.iter_mut().step_by(4096 / 8) {
        // SAFETY: a valid, aligned, exclusive reference to a u64.
        unsafe { std::ptr::write_volatile(word, 0) };
    }
    let raw: *mut [u64] = Box::into_raw(pool);
    // SAFETY: the pool is 8-byte aligned and `line * lines` bytes long; when SQLite takes it, it
    // is never freed (it lives as long as the process) and SQLite alone uses it from then on.
    let taken =
        unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_PAGECACHE, raw as *mut std::ffi::c_void, size, count) } == ffi::SQLITE_OK;
    if !taken {
        // SAFETY: SQLite refused it, so `raw` is still the only pointer to the box made above.
        drop(unsafe { Box::from_raw(raw) });
    }
    taken
}

/// The tunable that turns glibc's per-thread cache of freed small blocks off; the variables that
/// tell the process run again what `GLIBC_TUNABLES` was before (empty: unset; else '=' and the
/// value) and what the process was named (the kernel names it after the path run, here `exe`).
#[cfg(target_env = "gnu")]
const CACHE_SIZE: &str = "glibc.malloc.tcache_count=";
#[cfg(target_env = "gnu")]
const NO_THREAD_CACHE: &str = "glibc.malloc.tcache_count=0";
#[cfg(target_env = "gnu")]
const TUNED_MARK: &str = "RTGAUGE_GLIBC_TUNABLES_WAS";
#[cfg(target_env = "gnu")]
const NAME_MARK: &str = "RTGAUGE_NAME_WAS";

/// Runs a continuous `rtgauge run` and `rtgauge serve` again, once, with glibc's per-thread cache of freed
/// small blocks (tcache) turned off; glibc reads that setting only at start-up (`GLIBC_TUNABLES`),
/// and `mallopt` has none for it. Each thread keeps up to 7 freed blocks of each small size for
/// itself; in a continuous run, blocks a thread freed and never took again pinned holes in the one
/// heap, which grew by fragmentation while the memory in use stayed the same (heaptrack: 1 541 569
/// bytes between kept runs from the first to the last; the heap 784 -> 1 304 KiB over 6 minutes
/// rotated every 10 s). Without the cache it stayed at 744 KiB (BENCHMARKS.md). The measurement
/// loops do not allocate, so they never feel the difference. Only a continuous run (`--rotate`,
/// `-D forever`, `--metrics`, `--metrics-file`) and `serve` are run again: they are what a board
/// or a lab keeps running for months. A one-shot run is not: a second start of the program
/// (the loader, its relocations, the C library's start) cost it start-up time and resident
/// pages (BENCHMARKS.md, "Builds"), for a cache that never grows in it. The loads' processes
/// start often and the store's commands end soon.
///
/// The program run again is the one running (`/proc/self/exe`, the kernel's link to it, not a
/// path named by anyone), and only if that link is the file this code was loaded from (not so
/// under an emulator older than qemu 7.2, or when started through the dynamic loader), with the
/// same arguments and environment but for the tunable and two marks. The process run again takes
/// its name back, and gives the programs it starts the `GLIBC_TUNABLES` it was given
/// ([`restore_after_exec`]). Nothing is done if the caller already chose a cache size (to profile
/// rtgauge with an `LD_PRELOAD` tool such as heaptrack, give `GLIBC_TUNABLES=` with
/// `glibc.malloc.tcache_count=0`: the tool's settings would not reach a second start), in a
/// set-user-ID or file-capability process (glibc ignores the tunable there), or on a second pass;
/// if it cannot be done the process goes on with the cache, unchanged. glibc only (musl has no
/// such cache).
pub fn exec_without_thread_cache() {
    #[cfg(target_env = "gnu")]
    {
        use std::os::unix::ffi::OsStrExt;
        // Raw: the C library's copy of the kernel's auxiliary vector (rustix keeps its own private).
        // SAFETY: getauxval takes a key and returns 0 for one it does not know.
        let secure = unsafe { libc::getauxval(libc::AT_SECURE) } != 0;
        if std::env::var_os(TUNED_MARK).is_some() || std::env::var_os(NAME_MARK).is_some() {
            return restore_after_exec(secure);
        }
        let args: Vec<Vec<u8>> = std::env::args_os().map(|a| a.as_bytes().to_vec()).collect();
        let long_lived = match args.get(1).map(Vec::as_slice) {
            Some(b"serve") => true,
            Some(b"run") => continuous(&args[2..]),
            _ => false,
        };
        let was = std::env::var_os("GLIBC_TUNABLES");
        let was = was.as_ref().map(|w| w.as_bytes());
        let chosen = was.is_some_and(|w| w.windows(CACHE_SIZE.len()).any(|k| k == CACHE_SIZE.as_bytes()));
        if !long_lived || chosen || secure || !running_file_is_proc_self_exe() {
            return;
        }
        let mut env: Vec<Vec<u8>> = std::env::vars_os()
            .filter(|(k, _)| k != "GLIBC_TUNABLES")
            .map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes()].concat())
            .collect();
        env.push(match was {
            Some(w) if !w.is_empty() => [b"GLIBC_TUNABLES=", w, b":", NO_THREAD_CACHE.as_bytes()].concat(),
            _ => [b"GLIBC_TUNABLES=", NO_THREAD_CACHE.as_bytes()].concat(),
        });
        env.push(match was {
            Some(w) => [TUNED_MARK.as_bytes(), b"==", w].concat(),
            None => [TUNED_MARK.as_bytes(), b"="].concat(),
        });
        if let Ok(name) = rustix::thread::name() {
            env.push([NAME_MARK.as_bytes(), b"=", name.as_bytes()].concat());
        }
        // Only returns if the program could not be run again: it then goes on as it is.
        let _ = execute_self(args, env);
    }
}

/// Whether the arguments of `rtgauge run` make it continuous: `--rotate`, `--metrics` or
/// `--metrics-file` (with its value apart or after `=`), or a duration of `forever` (`-D forever`,
/// `-Dforever`, `--duration forever`, `--duration=forever`); none after `--`. An option's value
/// that merely reads so (a load's command holding `--rotate`) errs on the side of the
/// continuous run: it is run again, as every run was before.
#[cfg(target_env = "gnu")]
fn continuous(args: &[Vec<u8>]) -> bool {
    let option = |a: &[u8], name: &[u8]| a == name || (a.starts_with(name) && a.get(name.len()) == Some(&b'='));
    let mut after_duration = false;
    for a in args.iter().map(Vec::as_slice).take_while(|a| *a != b"--") {
        let forever = matches!(a, b"-Dforever" | b"--duration=forever") || (after_duration && a == b"forever");
        if forever || option(a, b"--rotate") || option(a, b"--metrics") || option(a, b"--metrics-file") {
            return true;
        }
        after_duration = a == b"-D" || a == b"--duration";
    }
    false
}

/// Whether `/proc/self/exe` is the file this code was loaded from: the mapping that holds this
/// function in `/proc/self/maps` has its device and inode, as the map shows them or as `stat`
/// shows the map's path (btrfs, and overlayfs before Linux 6.8, show another device in the map
/// than `stat` does; a copied-up overlay file, another inode). Not so under qemu-user before
/// 7.2 (the link is the emulator) or when started through the dynamic loader (the link is the
/// loader).
#[cfg(target_env = "gnu")]
fn running_file_is_proc_self_exe() -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(exe) = std::fs::metadata("/proc/self/exe") else { return false };
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return false };
    let here = running_file_is_proc_self_exe as fn() -> bool as usize;
    // "start-end perms offset major:minor inode path": the numbers in hex but the inode.
    maps.lines().any(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(range), Some(dev), Some(inode)) = (f.first(), f.get(3), f.get(4)) else { return false };
        let Some((start, end)) = range.split_once('-') else { return false };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
            return false;
        };
        if !(start..end).contains(&here) {
            return false;
        }
        let Some((major, minor)) = dev.split_once(':') else { return false };
        let as_mapped = inode.parse::<u64>() == Ok(exe.ino())
            && u32::from_str_radix(major, 16) == Ok(rustix::fs::major(exe.dev()))
            && u32::from_str_radix(minor, 16) == Ok(rustix::fs::minor(exe.dev()));
        // The path is the rest of the line from its first '/' (no field before it holds one);
        // looked at only where the map's numbers differ.
        let as_named = || {
            line.split_once(" /")
                // Not followed: a link planted at the path is not the running file.
                .and_then(|(_, p)| std::fs::symlink_metadata(format!("/{p}")).ok())
                .is_some_and(|m| m.dev() == exe.dev() && m.ino() == exe.ino())
        };
        as_mapped || as_named()
    })
}

/// `execve` of the running program (`/proc/self/exe`) with these arguments and environment
/// entries (`NAME=value`); returns only if the kernel refused it, having changed nothing (std's
/// `Command::exec` resets SIGPIPE and the signal mask before it tries).
#[cfg(target_env = "gnu")]
fn execute_self(args: Vec<Vec<u8>>, env: Vec<Vec<u8>>) -> io::Error {
    use std::ffi::CString;
    let c = |v: Vec<Vec<u8>>| v.into_iter().map(CString::new).collect::<Result<Vec<_>, _>>();
    let (Ok(args), Ok(env)) = (c(args), c(env)) else {
        return io::Error::from(io::ErrorKind::InvalidInput);
    };
    let pointers = |v: &[CString]| {
        v.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect::<Vec<*const libc::c_char>>()
    };
    let (argv, envp) = (pointers(&args), pointers(&env));
    // Raw: the C library's `execve` (rustix has it only in its unstable `runtime` feature).
    // SAFETY: the path is a NUL-terminated literal; argv and envp are arrays of pointers to
    // NUL-terminated strings (`args`, `env`) that outlive the call, each array ended by a null
    // pointer. A refused execve returns, having changed nothing in this process.
    unsafe {
        libc::execve(c"/proc/self/exe".as_ptr(), argv.as_ptr(), envp.as_ptr());
    }
    io::Error::last_os_error()
}

/// In the process run again by [`exec_without_thread_cache`]: its name put back, `GLIBC_TUNABLES`
/// put back as the caller gave it (glibc read it at start-up, and cut its own copy at each ':';
/// the loads, hooks and tools a run starts get the caller's), and the marks taken away. A mark
/// not in the form rtgauge writes, or in a set-user-ID or file-capability process, is only taken
/// away. Single-threaded: called first thing in `main`.
#[cfg(target_env = "gnu")]
fn restore_after_exec(secure: bool) {
    use std::os::unix::ffi::OsStrExt;
    let mark = std::env::var_os(TUNED_MARK);
    let name = std::env::var_os(NAME_MARK);
    std::env::remove_var(TUNED_MARK);
    std::env::remove_var(NAME_MARK);
    if secure {
        return;
    }
    if let Some(name) = name {
        let _ = super::process::set_thread_name(&name.to_string_lossy());
    }
    match mark.as_ref().map(|m| m.as_bytes()) {
        Some(b"") => std::env::remove_var("GLIBC_TUNABLES"),
        Some(m) => {
            if let Some(was) = m.strip_prefix(b"=") {
                std::env::set_var("GLIBC_TUNABLES", std::ffi::OsStr::from_bytes(was));
            }
        }
        None => {}
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
/// made resident (a continuous run then makes all its code resident: [`make_code_resident`]).
/// The measurement threads touch their stacks and rings before their loops, and
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
    let Ok(maps) = file_mappings() else { return 0 };
    let mut released = 0;
    for m in maps.iter().filter(|m| m.perms == "r-xp") {
        // SAFETY: the range is a whole mapping of the process, read-only and executable: dropping
        // its pages only makes the next access fault them back in from the file.
        if unsafe { rustix::mm::madvise(m.start as *mut std::ffi::c_void, m.end - m.start, rustix::mm::Advice::LinuxDontNeed) }
            .is_ok()
        {
            released += 1;
        }
    }
    released
}

/// A mapping of a file in the process (a line of `/proc/self/maps` whose path is absolute).
struct FileMapping {
    start: usize,
    end: usize,
    perms: String,
    /// Device and inode: which file.
    file: (String, String),
}

/// The process's mappings of files, from `/proc/self/maps` (the kernel's).
fn file_mappings() -> io::Result<Vec<FileMapping>> {
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    // Each line: range, permissions, offset, device, inode, path.
    Ok(maps
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 6 || !f[5].starts_with('/') {
                return None;
            }
            let (start, end) = f[0].split_once('-')?;
            Some(FileMapping {
                start: usize::from_str_radix(start, 16).ok()?,
                end: usize::from_str_radix(end, 16).ok()?,
                perms: f[1].to_string(),
                file: (f[3].to_string(), f[4].to_string()),
            })
        })
        .collect())
}

/// Makes every page of code and read-only data of the process resident and locked at once
/// (`mlock` on each private read-only mapping of a file that has a code mapping: rtgauge's own
/// binary and its libraries; not their writable data, not a data file, nothing mapped later).
/// Under `mlockall(MCL_ONFAULT)` such a page otherwise becomes resident, with its fault-around
/// neighbourhood, the first time it is run, and stays so: a run that goes on for months would
/// then grow whenever its keeper first took a path not taken before (in the first parts kept of a
/// continuous run: 1.4 MiB, then 64 KiB at a time; BENCHMARKS.md). Returns the ranges locked,
/// or the first refusal (the ranges after it are still tried; those locked stay locked).
pub fn make_code_resident() -> io::Result<Vec<(usize, usize)>> {
    let maps = file_mappings()?;
    let code_files: std::collections::HashSet<&(String, String)> =
        maps.iter().filter(|m| m.perms == "r-xp").map(|m| &m.file).collect();
    let (mut locked, mut refused) = (Vec::new(), None);
    for m in maps.iter().filter(|m| (m.perms == "r-xp" || m.perms == "r--p") && code_files.contains(&m.file)) {
        // SAFETY: the range is a whole mapping of the process, read-only: locking it only reads
        // its pages in from the file and keeps them.
        match unsafe { rustix::mm::mlock(m.start as *mut std::ffi::c_void, m.end - m.start) } {
            Ok(()) => locked.push((m.start, m.end)),
            Err(e) => {
                refused.get_or_insert(e);
            }
        }
    }
    match refused {
        Some(e) => Err(e.into()),
        None => Ok(locked),
    }
}

/// Unlocks ranges [`make_code_resident`] locked (`munlock`); a test's clean-up.
#[cfg(test)]
fn unlock_ranges(ranges: &[(usize, usize)]) {
    for &(start, end) in ranges {
        // SAFETY: whole mappings of this process; unlocking only lets their pages be paged out.
        let _ = unsafe { rustix::mm::munlock(start as *mut std::ffi::c_void, end - start) };
    }
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
    /// A continuous run is told by its arguments however they are written; a one-shot run, or
    /// `forever` where it is no duration, is not.
    #[test]
    #[cfg(target_env = "gnu")]
    fn a_continuous_run_is_told_by_its_arguments() {
        let args = |s: &str| s.split(' ').filter(|a| !a.is_empty()).map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>();
        for yes in [
            "-D forever",
            "-Dforever",
            "--duration forever",
            "--duration=forever",
            "--rotate 10m",
            "--rotate=1h",
            "-q --metrics 127.0.0.1:9464",
            "--metrics-file=/x",
        ] {
            assert!(super::continuous(&args(yes)), "{yes}");
        }
        for no in ["", "-D 30s", "--duration=24h --label forever", "--json run.json", "--metrics-public", "-q -- --rotate 10m"] {
            assert!(!super::continuous(&args(no)), "{no}");
        }
    }

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

    /// The two tests below both change what of the test binary's code is resident.
    static CODE_PAGES: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// The test binary's code pages to one test at a time; `None` (skipped) under an emulator.
    fn code_pages_alone() -> Option<std::sync::MutexGuard<'static, ()>> {
        if std::env::var_os("RTGAUGE_RUNNER").is_some() {
            eprintln!("SKIPPED: under an emulator the mappings and their pages are the emulator's");
            return None;
        }
        Some(CODE_PAGES.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// KiB of the process's private read-and-execute file mappings (`/proc/self/maps`).
    fn code_mappings_kib() -> u64 {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() >= 6 && f[1] == "r-xp" && f[5].starts_with('/')).then_some(f[0])
            })
            .map(|r| r.split_once('-').unwrap())
            .map(|(a, b)| (usize::from_str_radix(b, 16).unwrap() - usize::from_str_radix(a, 16).unwrap()) as u64 / 1024)
            .sum()
    }

    /// Unlocks what `make_code_resident` locked when the test ends, failed or not: a locked
    /// mapping would make the other test's release fail for the wrong reason.
    struct Unlock(Vec<(usize, usize)>);
    impl Drop for Unlock {
        fn drop(&mut self) {
            super::unlock_ranges(&self.0);
        }
    }

    #[test]
    fn code_made_resident_is_every_page_of_it() {
        let Some(_one) = code_pages_alone() else { return };
        super::release_code_pages();
        let size = code_mappings_kib();
        assert!(code_resident_kib() < size, "released: not every page of code is resident");
        let locked = super::make_code_resident().expect("root may lock the test binary's code");
        let _unlock = Unlock(locked.clone());
        let locked_kib: u64 = locked.iter().map(|(a, b)| (b - a) as u64 / 1024).sum();
        assert!(locked_kib >= size, "{locked_kib} KiB locked, the code is {size} KiB");
        assert_eq!(code_resident_kib(), size, "every page of every code mapping resident");
    }

    #[test]
    fn released_code_pages_leave_the_process_and_come_back_when_run() {
        let Some(_one) = code_pages_alone() else { return };
        let before = code_resident_kib();
        assert!(super::release_code_pages() >= 1, "the test binary's own code at least");
        let after = code_resident_kib();
        assert!(after < before, "code resident before {before} KiB, after {after} KiB");
        // The code runs on: its pages come back from the file as it is executed.
        assert_eq!(crate::sys::time::monotonic_ns() > 0, code_resident_kib() > 0);
    }
}
