//! tests/hardening: results written at the end (a link, a vanished directory, SIGKILL while
//! writing), memory paged out and locked, loads' cost to the measurement, rescue files (a part
//! of tests/hardening/main.rs, whose helpers it uses).

use super::*;

/// Whether process `pid` holds `/dev/cpu_dma_latency` open (it does while measuring).
fn holds_dma_latency(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|d| {
        d.flatten().any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == std::path::Path::new("/dev/cpu_dma_latency")))
    })
}

#[test]
fn a_result_that_cannot_be_written_at_the_end_is_saved_elsewhere_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = a_run_whose_destination_vanishes(dir.path(), None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let saved =
        err.split("saved to '").nth(1).and_then(|s| s.split('\'').next()).unwrap_or_else(|| panic!("names the file: {err}"));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    assert_eq!(u(&doc["probes"][0]["samples"]) + u(&doc["probes"][0]["missed"]), 2000, "the whole measurement");
}

/// A 2-s run whose `--json` destination's directory is removed while it measures, with `tmp` as
/// its temporary directory and `cwd` (if given) as its current one: how it ended.
fn a_run_whose_destination_vanishes(tmp: &std::path::Path, cwd: Option<&std::path::Path>) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("gone");
    std::fs::create_dir(&sub).unwrap();
    let dest = sub.join("r.json");
    let mut run =
        rtgauge(&["run", "-q", "-D", "2s", "--warmup", "0", "--cpus", "0", "--load", "none", "--json", dest.to_str().unwrap()]);
    run.env("TMPDIR", tmp).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(cwd) = cwd {
        run.current_dir(cwd);
    }
    let child = run.spawn().unwrap();
    // Measuring (its /dev/cpu_dma_latency request is held after the destination was checked).
    let t = Instant::now();
    while !holds_dma_latency(child.id()) && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_dir(&sub).unwrap();
    wait_bounded(child, Duration::from_secs(30), "a run whose destination vanished").1
}

#[test]
fn sigkill_while_the_result_is_written_leaves_no_stray_file() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("r.json");
    for i in 0..8u64 {
        let mut child =
            rtgauge(&["run", "-q", "--loops", "300", "--warmup", "0", "--load", "none", "--json", dest.to_str().unwrap()])
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
        // Around the end of the run (300 ms plus start-up), at staggered moments.
        std::thread::sleep(Duration::from_millis(300 + 15 * i));
        let _ = child.kill();
        child.wait().unwrap();
        // A staged name is removed by rtgauge's guardian once rtgauge is gone: give it a moment.
        let names = || -> Vec<String> {
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
        };
        let t = Instant::now();
        while names().iter().any(|n| n != "r.json") && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(names().iter().all(|n| n == "r.json"), "attempt {i}: {:?}", names());
        if dest.exists() {
            let _: Value = serde_json::from_str(&std::fs::read_to_string(&dest).unwrap()).expect("a whole document or none");
        }
    }
}

/// Whether strace can follow the binary (installed, and the binary not run by an emulator);
/// if not, says the test is skipped, and why.
fn native_strace(why: &str) -> bool {
    if runner().is_some() {
        common::skip(common::Skip::Here, &format!("needs a native binary (strace would follow the emulator){why}"));
        return false;
    }
    let installed = Command::new("strace").arg("-V").output().is_ok();
    if !installed {
        common::skip(common::Skip::Missing, &format!("needs strace (apt-get install strace){why}"));
    }
    installed
}

/// The children of process `pid` (from /proc: each process's parent).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(") ").and_then(|(_, rest)| rest.split(' ').nth(1)?.parse::<u32>().ok()))
                == Some(pid)
        })
        .collect()
}

#[test]
fn sigkill_between_naming_the_result_and_its_rename_leaves_no_stray_file() {
    if !native_strace("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("r.json");
    std::fs::write(&dest, "{\"old\": true}\n").unwrap();
    let log_dir = tempfile::tempdir().unwrap();
    // strace holds every rename for 5 s before the kernel sees it: the staged name exists then.
    let mut strace = Command::new("strace")
        .args(["-f", "-qq", "-o"])
        .arg(log_dir.path().join("strace.log"))
        .args(["-e", "trace=rename,renameat,renameat2"])
        .args(["-e", "inject=rename,renameat,renameat2:delay_enter=5000000"])
        .args(bin_argv())
        .args(["run", "-q", "--loops", "200", "--warmup", "0", "--load", "none", "--no-store", "--json"])
        .arg(&dest)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let staged = || -> Vec<String> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "r.json")
            .collect()
    };
    let t = Instant::now();
    while staged().is_empty() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!staged().is_empty(), "the document was staged under a name before its rename");
    let run = children_of(strace.id()).into_iter().next().expect("rtgauge runs under strace");
    // SAFETY: kill takes a pid and a signal number.
    assert_eq!(unsafe { libc::kill(run as i32, libc::SIGKILL) }, 0);
    let _ = strace.wait();
    let t = Instant::now();
    while !staged().is_empty() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(staged().is_empty(), "left beside the destination: {:?}", staged());
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), "{\"old\": true}\n", "the old document, whole");
}

#[test]
fn the_document_is_written_through_a_buffer() {
    if !native_strace("") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("r.json");
    let trace = dir.path().join("trace");
    let out = Command::new("strace")
        .args(["-f", "-e", "trace=write", "-o", trace.to_str().unwrap()])
        .args(bin_argv())
        .args(["run", "-q", "--loops", "200", "--warmup", "0", "--load", "none", "--json", dest.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let size = std::fs::metadata(&dest).unwrap().len();
    let writes = std::fs::read_to_string(&trace).unwrap().lines().filter(|l| l.contains("write(")).count() as u64;
    // The summary, the document in 64 KiB pieces, and a few more: not thousands.
    assert!(writes <= size / 65536 + 8, "{writes} writes for a {size}-byte document");
}

/// Pages every file-backed mapping of process `pid` out (those no other process maps) (`process_madvise(MADV_PAGEOUT)`, Linux
/// 5.10): the next touch of each is a page fault. Returns how many ranges the kernel took.
fn page_out(pid: u32) -> usize {
    const SYS_PIDFD_OPEN: libc::c_long = 434;
    const SYS_PROCESS_MADVISE: libc::c_long = 440;
    const MADV_PAGEOUT: libc::c_long = 21;
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else { return 0 };
    // SAFETY: pidfd_open takes a pid and flags.
    let fd = unsafe { libc::syscall(SYS_PIDFD_OPEN, pid as libc::c_long, 0 as libc::c_long) };
    if fd < 0 {
        return 0;
    }
    let mut taken = 0;
    for line in maps.lines().filter(|l| l.split_whitespace().nth(5).is_some_and(|p| p.starts_with('/'))) {
        let (a, b) = line.split_whitespace().next().unwrap().split_once('-').unwrap();
        let (a, b) = (usize::from_str_radix(a, 16).unwrap(), usize::from_str_radix(b, 16).unwrap());
        let range = libc::iovec { iov_base: a as *mut libc::c_void, iov_len: b - a };
        // SAFETY: one iovec describing the other process's range; nothing is written here.
        let r = unsafe { libc::syscall(SYS_PROCESS_MADVISE, fd, &range as *const libc::iovec, 1usize, MADV_PAGEOUT, 0usize) };
        taken += usize::from(r > 0);
    }
    // SAFETY: fd is the pidfd opened above.
    unsafe { libc::close(fd as i32) };
    taken
}

/// Runs a 2 s measurement while its binary's pages are paged out behind it every 50 ms; returns
/// the document and how many page-outs the kernel accepted. The binary run is a private copy:
/// the kernel pages out only what no other process maps (other tests run rtgauge meanwhile).
fn measured_while_paged_out(extra: &[&str]) -> (Value, usize) {
    let dir = tempfile::tempdir().unwrap();
    let (json, copy) = (dir.path().join("r.json"), dir.path().join("rtgauge"));
    std::fs::copy(bin(), &copy).unwrap();
    let mut args = vec!["run", "-q", "--no-store", "--load", "none", "-D", "2s", "--warmup", "100ms", "--json"];
    args.push(json.to_str().unwrap());
    args.extend_from_slice(extra);
    let mut child = Command::new(&copy).args(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_until_measuring(child.id());
    let mut accepted = 0;
    while child.try_wait().unwrap().is_none() {
        accepted += page_out(child.id());
        std::thread::sleep(Duration::from_millis(50));
    }
    (serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap(), accepted)
}

/// Page faults taken while measuring are facts of the run: each thread counts its own after its
/// warm-up. With memory unlocked (`--no-mlock`) and its pages paged out behind it, the
/// measurement threads fault and the result and a warning say so; with memory locked (the
/// default) the same paging takes nothing from them: no fault.
#[test]
fn page_faults_while_measuring_are_counted_and_locked_memory_takes_none() {
    if runner().is_some() {
        common::skip(common::Skip::Here, "under an emulator: the page faults would be the emulator's");
        return;
    }
    let faults = |doc: &Value| -> Vec<u64> { doc["probes"].as_array().unwrap().iter().map(|p| u(&p["page_faults"])).collect() };
    let warned = |doc: &Value| {
        doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("page faults while measuring"))
    };
    let (unlocked, accepted) = measured_while_paged_out(&["--no-mlock"]);
    assert!(accepted > 0, "the kernel took no page-out (process_madvise needs Linux 5.10)");
    assert!(faults(&unlocked).iter().all(|&n| n > 0), "unlocked, paged out: faults on every thread {:?}", faults(&unlocked));
    assert!(warned(&unlocked), "{}", unlocked["warnings"]);
    let (locked, _) = measured_while_paged_out(&[]);
    assert!(faults(&locked).iter().all(|&n| n == 0), "locked: no fault {:?}", faults(&locked));
    assert!(!warned(&locked), "{}", locked["warnings"]);
}

/// Regression: rtgauge forked to start each load (std's spawn forks when anything runs between
/// fork and exec), and every fork shared its pages copy-on-write with the child: its measurement
/// threads then took a page fault on their next write to each page — 9 per thread for a load
/// started before the probes, 30 for one started mid-run. Loads are now started through a
/// launcher spawned without fork. Ground truth on both sides: traced, rtgauge's own threads
/// create processes only with CLONE_VM|CLONE_VFORK (posix_spawn), and with a command started
/// before the probes, a built-in load started and stopped mid-run and a command restarted over
/// and over, no measurement thread took a page fault.
#[test]
fn loads_started_by_rtgauge_cost_its_measurement_threads_no_page_fault() {
    if !native_strace(" (under an emulator the page faults are the emulator's)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (json, trace) = (dir.path().join("r.json"), dir.path().join("t"));
    let out = Command::new("strace")
        .args(["-ff", "-e", "trace=clone,clone3,fork,vfork", "-o", trace.to_str().unwrap()])
        .args(bin_argv())
        .args(["run", "-q", "--no-store", "-D", "3s", "--warmup", "100ms", "--json", json.to_str().unwrap()])
        .args(["--load", "cmd:sleep 1000", "--load", "cpu:workers=1@1s..2s", "--load", "cmd:true"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", String::from_utf8_lossy(&out.stderr));
    let runs: Vec<u64> = doc["loads"].as_array().unwrap().iter().map(|l| u(&l["runs"])).collect();
    assert!(runs[0] == 1 && runs[1] == 1 && runs[2] >= 2, "every load ran, the command restarted: {runs:?}");
    let faults: Vec<u64> = doc["probes"].as_array().unwrap().iter().map(|p| u(&p["page_faults"])).collect();
    assert!(faults.iter().all(|&n| n == 0), "page faults of the measurement threads: {faults:?}");
    // strace -ff writes one file per thread and process: T.PID, each with the clones it made.
    let mut made: std::collections::BTreeMap<i64, Vec<(String, i64)>> = Default::default();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let Some(pid) = name.strip_prefix("t.").and_then(|p| p.parse().ok()) else { continue };
        for line in std::fs::read_to_string(dir.path().join(&name)).unwrap().lines().filter(|l| l.contains("clone")) {
            let Some(child) = line.rsplit_once("= ").and_then(|(_, r)| r.trim().parse().ok()) else { continue };
            made.entry(pid).or_default().push((line.to_string(), child));
        }
    }
    let children: std::collections::BTreeSet<i64> = made.values().flatten().map(|(_, c)| *c).collect();
    let roots: Vec<i64> = made.keys().copied().filter(|p| !children.contains(p)).collect();
    assert_eq!(roots.len(), 1, "one process started the others: {roots:?}");
    let (mut own, mut spawned) = (vec![roots[0]], 0);
    while let Some(tid) = own.pop() {
        for (line, child) in made.get(&tid).into_iter().flatten() {
            if line.contains("CLONE_THREAD") {
                own.push(*child);
            } else {
                assert!(line.contains("CLONE_VM") && line.contains("CLONE_VFORK"), "rtgauge forked: {line}");
                spawned += 1;
            }
        }
    }
    assert!(spawned >= 5, "the guardian and the loads' launchers were spawned: {spawned}");
}

/// Every option that names a file rtgauge writes as root — `--json`, `--metrics-file`,
/// `export -o`, `report --html`, `report --png DIR`, a new store (`--db`) — goes through one
/// checked writer: a path
/// that passes through a link another user planted in a shared directory (to a private
/// directory of root's) is refused before anything is written, in one line, exit 2, and the
/// private directory is left exactly as it was (root's 0600 file unchanged, nothing new in it).
#[test]
fn every_output_option_refuses_a_path_through_a_link_another_user_planted() {
    use std::os::unix::fs::PermissionsExt;
    let (shared, _) = sticky_dir_with_roots_file(0o600);
    let private = tempfile::tempdir().unwrap();
    let victim = private.path().join("victim");
    std::fs::write(&victim, "root's").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let through = shared.path().join("out");
    std::os::unix::fs::symlink(private.path(), &through).unwrap();
    assert!(Command::new("chown").args(["-h", "nobody"]).arg(&through).status().unwrap().success());
    // A store of the test's own with one run, for export and report.
    let store = tempfile::tempdir().unwrap();
    let db = store.path().join("runs.db").display().to_string();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/oslat.json");
    assert!(rtgauge(&["import", "--db", &db, fixture.to_str().unwrap()]).output().unwrap().status.success());
    let at = |name: &str| through.join(name).display().to_string();
    let run = ["run", "-q", "--loops", "20", "--warmup", "0", "--cpus", "0", "--load", "none", "--no-store"];
    let cases: Vec<Vec<String>> = vec![
        [&run[..], &["--json", &at("victim")]].concat().iter().map(|s| s.to_string()).collect(),
        [&run[..], &["--json", &at("new.json")]].concat().iter().map(|s| s.to_string()).collect(),
        [&run[..], &["--metrics-file", &at("victim")]].concat().iter().map(|s| s.to_string()).collect(),
        [&run[..], &["--metrics-file", &at("rtgauge.prom")]].concat().iter().map(|s| s.to_string()).collect(),
        vec!["export".into(), "last".into(), "--db".into(), db.clone(), "-f".into(), "json".into(), "-o".into(), at("victim")],
        vec!["export".into(), "last".into(), "--db".into(), db.clone(), "-f".into(), "csv".into(), "-o".into(), at("new.csv")],
        vec!["report".into(), "last".into(), "--db".into(), db.clone(), "--html".into(), at("report.html")],
        vec!["report".into(), "last".into(), "--db".into(), db.clone(), "--png".into(), at("plots")],
        // A store made there, by a run or an import; an existing store reached through it.
        vec!["import".into(), "--db".into(), at("runs.db"), fixture.display().to_string()],
        vec!["import".into(), "--db".into(), at("victim"), fixture.display().to_string()],
        vec!["list".into(), "--db".into(), at("victim")],
        vec![
            "run".into(),
            "-q".into(),
            "--loops".into(),
            "20".into(),
            "--load".into(),
            "none".into(),
            "--db".into(),
            at("runs.db"),
        ],
    ];
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = rtgauge(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("symbolic link") && err.trim_end().lines().count() == 1, "{args:?}: {err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's", "{args:?}");
        assert_eq!(std::fs::metadata(&victim).unwrap().permissions().mode() & 0o777, 0o600, "{args:?}");
        let names: Vec<_> = std::fs::read_dir(private.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names.len(), 1, "{args:?}: nothing made in the private directory: {names:?}");
    }
}

/// A result that cannot be written where asked is rescued only where no other user can touch
/// it: with the temporary directory another user's and the current directory writable by every
/// user (not sticky), no rescue file is made in either — the error says why, naming both — and
/// with a directory of root's as the temporary one, the rescue goes there.
#[test]
fn a_rescue_file_goes_only_where_no_other_user_can_touch_it() {
    use std::os::unix::fs::PermissionsExt;
    let theirs = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(theirs.path(), Some(65534), Some(65534)).unwrap();
    let open = tempfile::tempdir().unwrap();
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mine = tempfile::tempdir().unwrap();
    for (tmp, rescued) in [(theirs.path(), false), (mine.path(), true)] {
        let out = a_run_whose_destination_vanishes(tmp, Some(open.path()));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        let made = |d: &std::path::Path| std::fs::read_dir(d).unwrap().flatten().count();
        assert_eq!(made(open.path()), 0, "nothing in a directory every user may write: {err}");
        assert_eq!(made(theirs.path()), 0, "nothing in another user's directory: {err}");
        if rescued {
            assert!(err.contains("saved to") && made(mine.path()) == 1, "{err}");
        } else {
            assert!(err.contains("saving it elsewhere failed") && err.contains("another user controls it"), "{err}");
        }
    }
}
