//! tests/continuous: what a long run allocates and keeps resident, and how `serve` runs itself
//! again (a part of tests/continuous/main.rs, whose helpers it uses).

use super::*;

/// The C library's allocator keeps one arena, however many of rtgauge's threads allocate (the
/// coordinator, the keeper of rotated runs, the metrics server): glibc fixes how many arenas it
/// may make when a second thread first allocates, so a limit set any later is ignored, and each
/// extra arena grows on its own, locked in memory. Read from the process's own map: a thread's
/// arena is a heap reserved whole (64 MiB on a 64-bit system) of which only the part in use is
/// readable; glibc only, and natively (under an emulator the map read is the emulator's).
#[test]
fn one_malloc_arena_whatever_threads_allocate() {
    if !cfg!(all(target_env = "gnu", target_pointer_width = "64")) || common::runner().is_some() {
        common::skip(common::Skip::Here, "glibc's arenas are read from the map of a native 64-bit process");
        return;
    }
    let Some((dir, db)) = store_of_its_own() else { return };
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let run = rtgauge(&[
        "run",
        "-q",
        "-D",
        "6s",
        "--warmup",
        "0",
        "--cpus",
        CPU,
        "--load",
        "none",
        "--db",
        &db,
        "--rotate",
        "2s",
        "--window",
        "1s",
        "--metrics",
        &listen,
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    wait_until_measuring(run.id());
    // After the first rotated run is kept and the metrics served: every thread has allocated.
    let t = Instant::now();
    while stored_runs(&db).is_empty() {
        assert!(t.elapsed() < Duration::from_secs(30), "no rotated run kept");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(try_get(port, "/metrics").is_some_and(|b| b.contains("rtgauge_samples_total")));
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", run.id())).unwrap();
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Anonymous, unreadable reservations of 16 MiB or more: the unused rest of a thread's arena.
    let reserved: Vec<&str> = maps
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let Some((a, b)) = f[0].split_once('-') else { return false };
            let size = u64::from_str_radix(b, 16).unwrap() - u64::from_str_radix(a, 16).unwrap();
            f[1] == "---p" && f.len() == 5 && size >= 16 << 20
        })
        .collect();
    assert!(reserved.is_empty(), "a malloc arena per thread: {reserved:?}\n{maps}");
    assert!(maps.contains("[heap]"), "the one arena is the main heap: {maps}");
    drop(dir);
}

/// The mappings of SQLite's page cache of its own (strace's stack of each `mmap` names
/// `pcache1Alloc`) in `rtgauge run` with `args` and the store `db`, traced into `trace`. A page
/// SQLite takes from the C library is 64 KiB, above the threshold where glibc maps each block
/// and lets it go when freed.
fn page_cache_mappings(db: &str, trace: &Path, args: &[&str]) -> usize {
    let argv = [&["run", "--warmup", "0", "--cpus", CPU, "--load", "none", "--db", db], args].concat();
    let out = Command::new("strace")
        .args(["-f", "-k", "--seccomp-bpf", "-e", "trace=mmap", "-o"])
        .arg(trace)
        .arg(env!("CARGO_BIN_EXE_rtgauge"))
        .args(&argv)
        .output()
        .expect("strace is needed for this test: apt-get install strace (.ci/run installs it)");
    // 1: a run that measured nothing (another test's busy probe held the CPU at the same
    // priority) fails its verdict; what it keeps, and how, is the same.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{argv:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = std::fs::read_to_string(trace).unwrap();
    // Each traced call is a line of its own, its stack the lines after it that begin with ' >'.
    let calls = trace.split('\n').filter(|l| !l.starts_with(" >")).count();
    assert!(calls > 10, "strace traced no mmap: {trace}");
    trace
        .split('\n')
        .collect::<Vec<_>>()
        .split(|l| !l.starts_with(" >"))
        .filter(|stack| stack.iter().any(|f| f.contains("(pcache1Alloc+")))
        .count()
}

/// A run that goes on for months gives SQLite's page cache memory allocated once, before the
/// store is opened: from the store's opening to its last part kept, the page cache maps no
/// memory of its own (before, each part kept mapped and let go of pages, and the run's peak
/// memory rose whenever a part happened to hold more of them at once than any before). A run
/// that is not rotated makes the store and maps its pages, as SQLite does by default: the
/// detector sees them. Native glibc only: strace's stacks name SQLite's functions there.
#[test]
fn a_rotated_runs_sqlite_pages_come_from_memory_allocated_once() {
    if !cfg!(target_env = "gnu") || common::runner().is_some() {
        common::skip(common::Skip::Here, "SQLite's allocations are read from strace's stacks of a native glibc process");
        return;
    }
    let Some((dir, db)) = store_of_its_own() else { return };
    // The first run makes the store (and maps pages, as SQLite does by default); the rotated
    // run opens it as it is.
    let once = page_cache_mappings(&db, &dir.path().join("once.trace"), &["-D", "2s"]);
    assert!(
        once > 0,
        "no mmap's stack named SQLite's pcache1Alloc in a run that is not rotated: the detector sees nothing (a \
         binary without symbols, as in a release build, or strace without stack traces)"
    );
    // A rotated run with at least two parts that measured (another test's busy probe may hold
    // the CPU for a while: then once more, at most three times), so that parts kept histograms.
    for attempt in 1..=3 {
        let before = stored_runs(&db).len();
        let trace = dir.path().join(format!("rotated-{attempt}.trace"));
        let rotated = page_cache_mappings(&db, &trace, &["-D", "8s", "--rotate", "2s", "--window", "1s"]);
        let runs = stored_runs(&db);
        let parts = &runs[before..];
        assert!(parts.len() >= 3, "{} rotated runs stored of 4", parts.len());
        assert_eq!(rotated, 0, "SQLite's page cache mapped memory of its own in a rotated run of {} parts", parts.len());
        if parts.iter().filter(|p| timer(p)["samples"].as_u64().is_some_and(|n| n > 0)).count() >= 2 {
            return;
        }
    }
    panic!("three rotated runs in a row had fewer than two parts that measured");
}

/// The code of process `pid`'s own binary (its read-and-execute mappings of the file
/// `/proc/PID/exe` names), from `/proc/PID/smaps`: its KiB, the KiB of it resident, and the KiB
/// of the mappings the kernel keeps locked (`lo` among their `VmFlags`; smaps' `Locked:` is a
/// proportional share, lower when another process maps the same pages).
fn own_code_kib(pid: u32) -> (u64, u64, u64) {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap().display().to_string();
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
    let (mut inside, mut size, mut kib) = (false, 0, (0, 0, 0));
    for line in smaps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first() {
            Some(&"Size:") if inside => {
                size = f[1].parse::<u64>().unwrap();
                kib.0 += size;
            }
            Some(&"Rss:") if inside => kib.1 += f[1].parse::<u64>().unwrap(),
            Some(&"VmFlags:") if inside && f.contains(&"lo") => kib.2 += size,
            Some(first) if first.contains('-') && !first.ends_with(':') => {
                inside = f.len() >= 6 && f[1] == "r-xp" && f[5..].join(" ") == exe;
            }
            _ => {}
        }
    }
    kib
}

/// A run that goes on for months has all its code resident (and locked) from the start, so that
/// code its keeper runs for the first time hours later adds nothing (before, each part kept
/// that took a path not taken before made 64 KiB more resident, and the run's peak rose for its
/// first parts). A run that is not continuous makes resident only the code it runs: the test
/// sees the difference. Native only: under an emulator the mappings are the emulator's.
#[test]
fn a_rotated_run_has_all_its_code_resident_while_it_measures() {
    if common::runner().is_some() {
        common::skip(common::Skip::Here, "under an emulator the mappings and their pages are the emulator's");
        return;
    }
    let Some((_dir, db)) = store_of_its_own() else { return };
    for rotated in [true, false] {
        let mut args = vec!["run", "-q", "-D", "60s", "--warmup", "0", "--cpus", CPU, "--load", "none", "--db", &db];
        if rotated {
            args.extend(["--rotate", "2s", "--window", "1s"]);
        }
        let run = rtgauge(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        wait_until_measuring(run.id());
        let (size, resident, locked) = own_code_kib(run.id());
        signal(&run, "TERM");
        let out = run.wait_with_output().unwrap();
        assert!(size > 0, "no code mapping of rtgauge's own binary was found in its smaps");
        // Every mapping is locked in both (mlockall); what differs is what of it is resident.
        assert_eq!(locked, size, "the code mappings are locked ({size} KiB)");
        if rotated {
            assert_eq!(resident, size, "a rotated run's code: {size} KiB, all of it resident");
        } else {
            assert!(resident < size, "a run that is not rotated had all its code resident ({size} KiB)");
        }
        assert!(out.status.code().is_some_and(|c| c <= 1), "{:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    }
}

/// A continuous run is run again with glibc's per-thread cache off (its held blocks fragmented a
/// continuous run's heap): its start-up environment has the tunable added to the caller's (or on
/// its own); it keeps its name; the commands it starts get the caller's `GLIBC_TUNABLES` (or
/// none), without the tunable or the marks; and a cache size the caller chose is left as it is,
/// with no second start. A one-shot run starts once, its environment the caller's.
#[test]
fn glibc_thread_cache_off_in_the_run_and_the_callers_tunables_for_its_commands() {
    if !cfg!(target_env = "gnu") || common::runner().is_some() {
        common::skip(common::Skip::Here, "glibc's tunables are read from a native glibc process");
        return;
    }
    for (given, duration, turned_off) in [
        (None, "forever", true),
        (Some("glibc.malloc.check=0"), "forever", true),
        (Some("glibc.malloc.tcache_count=3"), "forever", false),
        (None, "30s", false),
    ] {
        let Some((dir, db)) = store_of_its_own() else { return };
        let seen = dir.path().join("seen");
        let load = format!(
            "cmd:sh -c \"env | grep -e ^GLIBC_TUNABLES= -e ^RTGAUGE_GLIBC_TUNABLES_WAS= -e ^RTGAUGE_NAME_WAS= \\
             > {0}.part; mv {0}.part {0}; exec sleep 1000\"",
            seen.display()
        );
        let mut run = rtgauge(&["run", "-q", "-D", duration, "--warmup", "0", "--cpus", CPU, "--load", &load, "--db", &db]);
        match given {
            Some(g) => run.env("GLIBC_TUNABLES", g),
            None => run.env_remove("GLIBC_TUNABLES"),
        };
        let mut run = run.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let t = Instant::now();
        while !seen.exists() {
            if t.elapsed() > Duration::from_secs(30) {
                let _ = run.kill();
                panic!("the command load never ran: {:?}", run.wait_with_output());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Stopped once it measures: a run stopped in its set-up has measured nothing (status 1).
        wait_until_measuring(run.id());
        let environ = std::fs::read(format!("/proc/{}/environ", run.id())).unwrap();
        let name = std::fs::read_to_string(format!("/proc/{}/comm", run.id())).unwrap();
        signal(&run, "INT");
        let out = run.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{given:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(name, "rtgauge\n", "the run keeps its name");
        // glibc cuts its copy of the tunables at each ':' as it reads them: searched as bytes.
        let has = |text: &str| environ.windows(text.len()).any(|w| w == text.as_bytes());
        let shown = String::from_utf8_lossy(&environ);
        assert_eq!(has("glibc.malloc.tcache_count=0"), turned_off, "the cache off: {shown}");
        assert_eq!(has("GLIBC_TUNABLES="), given.is_some() || turned_off, "{shown}");
        if let Some(g) = given {
            assert!(has(&format!("GLIBC_TUNABLES={g}")), "the caller's tunables kept: {shown}");
        }
        assert_eq!(has("RTGAUGE_GLIBC_TUNABLES_WAS="), turned_off, "started again only to turn it off: {shown}");
        let callers = given.map_or(String::new(), |g| format!("GLIBC_TUNABLES={g}\n"));
        assert_eq!(std::fs::read_to_string(&seen).unwrap(), callers, "the command's environment");
    }
}

/// `serve` runs itself again only where `/proc/self/exe` is the running program: with no `/proc`
/// in its mount namespace (it cannot be checked), or started through the dynamic loader (the link
/// is the loader, which would take `serve` for a program), it goes on as it was started: it
/// serves, under its own name, and is not run again; started as such, it is run again (its
/// start-up environment holds the mark) and keeps its name. Commands that end soon are never run
/// again.
#[test]
fn serve_runs_itself_again_only_where_it_is_proc_self_exe() {
    if !cfg!(target_env = "gnu") || common::runner().is_some() {
        common::skip(common::Skip::Here, "a native glibc binary runs itself again");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/oslat.json");
    let out = rtgauge(&["import", "--db", &db, &fixture.display().to_string()]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // The dynamic loader this test binary (glibc, like rtgauge's) was started by.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let loader = maps
        .lines()
        .filter_map(|l| l.split_once(" /").map(|(_, p)| format!("/{p}")))
        .find(|p| p.rsplit('/').next().is_some_and(|n| n.starts_with("ld-linux")))
        .expect("the dynamic loader in this process's map");
    let bin = common::bin_shell();
    for (how, prefix, run_again) in
        [("without /proc", "umount -l /proc && ", false), ("through the loader", "", false), ("as such", "", true)]
    {
        let port = free_port();
        let start = if how == "through the loader" { format!("{loader} {bin}") } else { bin.clone() };
        let script = format!("{prefix}exec {start} serve --db {db} --listen 127.0.0.1:{port}");
        // unshare and sh exec: the server has their process id.
        let mut server = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t = Instant::now();
        let page = loop {
            if let Some(page) = try_get(port, "/api/runs") {
                break page;
            }
            if t.elapsed() > Duration::from_secs(30) {
                let _ = server.kill();
                panic!("{how}: the server never answered: {:?}", server.wait_with_output());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let environ = std::fs::read(format!("/proc/{}/environ", server.id())).unwrap();
        let name = std::fs::read_to_string(format!("/proc/{}/comm", server.id())).unwrap();
        signal(&server, "TERM");
        let out = server.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{how}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(page.contains("oslat"), "{how}: {page}");
        if how != "through the loader" {
            assert_eq!(name, "rtgauge\n", "{how}");
        }
        let marked = environ.windows(12).any(|w| w == b"RTGAUGE_NAME");
        assert_eq!(marked, run_again, "{how}: {}", String::from_utf8_lossy(&environ));
    }
    // `list` ends soon: started once, never again (strace shows each execve).
    let trace = dir.path().join("execve.trace");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=execve", "-o"])
        .arg(&trace)
        .args(common::bin_argv())
        .args(["list", "--db", &db])
        .output()
        .expect("strace is needed for this test: apt-get install strace (.ci/run installs it)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let calls = std::fs::read_to_string(&trace).unwrap();
    assert_eq!(calls.matches("execve(").count(), 1, "{calls}");
}
