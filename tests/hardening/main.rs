//! A run that nothing can hang, fool or escape. Each test is named after the problem it pins
//! down: a load above the measurement starving it, grandchildren escaping their process
//! group, phases that did not add up, overflowing inputs, loads that never worked, results
//! lost at the end, endless input files. Every assertion is about what rtgauge itself did or
//! recorded, never about a latency value or a wall-clock window.

#[path = "../common/mod.rs"]
mod common;
use common::*;
use serde_json::Value;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Tests that put RT loads on every CPU take turns (they would disturb each other's runs).
static RT_LOADS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    RT_LOADS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Under an emulator (qemu-user), RT throttling leaves the emulated coordinator ~5 % of a CPU
/// beside emulated FIFO 99 workers: no time bound holds. The class is covered natively and by
/// the PREEMPT_RT guests of tests/vm (rt-load-99, load-rt-99).
fn emulated() -> bool {
    let skip = runner().is_some();
    if skip {
        common::skip(common::Skip::Here, "under an emulator: an RT load on every CPU starves the emulated coordinator");
    }
    skip
}

/// Samples and missed periods of one probe entry, measured and warm-up.
fn periods(p: &Value) -> (u64, u64) {
    (u(&p["samples"]) + u(&p["missed"]), u(&p["warmup_samples"]) + u(&p["warmup_missed"]))
}

#[test]
fn an_rt_load_at_priority_99_on_every_measured_cpu_ends_on_time_with_every_period_accounted() {
    if emulated() {
        return;
    }
    let _t = turn();
    let child = rtgauge(&["run", "-q", "-D", "2s", "--warmup", "100", "--json", "-", "--load", "cpu:policy=fifo:99"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Planned: 2.1 s. The bound is generous (a busy machine); the bug was a run that never ended.
    let (_, out) = wait_bounded(child, Duration::from_secs(40), "a run under a FIFO 99 load");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.lines().next().unwrap_or("").contains("at or above the measurement's SCHED_FIFO 80"), "warned first: {err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "complete");
    for p in doc["probes"].as_array().unwrap() {
        assert_eq!(periods(p), (2000, 100), "every period accounted on cpu{}", p["cpu"]);
    }
    assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("at or above")));
}

/// The warning compared every load with the run's priority (80), not the threads' own: a FIFO 90
/// load beside the wake-up chain (handler 99, task 98) was said to hold it off, and a FIFO 60 one
/// beside `wakeup:priority=50` (task 49), which does, went unwarned.
#[test]
fn a_load_is_warned_about_by_the_priority_of_the_measurement_threads_it_can_hold_off() {
    let warned = |measure: &[&str], load: &str| -> Vec<String> {
        let mut args = vec!["run", "-q", "--no-store", "--loops", "50", "--warmup", "0", "--json", "-", "--load", load];
        for m in measure {
            args.extend(["--measure", m]);
        }
        let out = rtgauge(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).output().unwrap();
        // Exit 1 is a verdict: under an emulator the 50 periods can all pass while the threads
        // start ("nothing was measured"). The warnings, this test's subject, are made before.
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{measure:?} {load}: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["status"], "complete", "{measure:?} {load}");
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .filter(|w| w.contains("at or above"))
            .collect()
    };
    let _t = turn();
    let cpu = online_cpus()[0].to_string();
    // Below the chain's task (98): nothing to warn about, though above the run's 80.
    assert_eq!(warned(&[&format!("wakeup@{cpu}")], "none"), Vec::<String>::new());
    let w = warned(&[&format!("wakeup@{cpu}")], "timers:count=1,period=1ms,policy=fifo:90");
    assert!(w.is_empty(), "a FIFO 90 load is below the chain's threads (99, 98): {w:?}");
    // At or above its task (49), on its CPU only: the timer elsewhere (80) is above the load.
    let other = online_cpus().iter().find(|&&c| c.to_string() != cpu).map(|c| c.to_string());
    let mut measure = vec![format!("wakeup:priority=50@{cpu}")];
    measure.extend(other.iter().map(|c| format!("timer@{c}")));
    let m: Vec<&str> = measure.iter().map(String::as_str).collect();
    let w = warned(&m, "timers:count=1,period=1ms,policy=fifo:60");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("the measurement's SCHED_FIFO 49, on measured CPUs ") && w[0].contains(&format!("CPUs {cpu}:")),
        "{w:?}"
    );
    // The ping-pong's threads both run at its priority.
    let w = warned(&[&format!("wakeup:shape=ping-pong,priority=60@{cpu}")], "timers:count=1,period=1ms,policy=fifo:60");
    assert!(w.len() == 1 && w[0].contains("SCHED_FIFO 60"), "{w:?}");
}

#[test]
fn ctrl_c_stops_a_run_whose_cpus_an_rt_load_holds() {
    if emulated() {
        return;
    }
    let _t = turn();
    let child = rtgauge(&["run", "-q", "-D", "60s", "--warmup", "0", "--json", "-", "--load", "cpu:policy=fifo:99"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, "INT");
    let (_, out) = wait_bounded(child, Duration::from_secs(20), "the first Ctrl-C");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((doc["status"].as_str(), doc["interrupted_by"].as_str()), (Some("partial"), Some("SIGINT")));
    let measured = u(&doc["measured_ns"]) / 1_000_000;
    for p in doc["probes"].as_array().unwrap() {
        let (n, _) = periods(p);
        assert!((measured..=measured + 1).contains(&n), "cpu{}: {n} periods accounted, {measured} passed", p["cpu"]);
    }
}

#[test]
fn ctrl_c_during_load_start_ends_the_run_and_leaves_nothing() {
    let m = Marker::new();
    let mut args = vec!["run", "-q", "-D", "60s", "--json", "-"];
    for _ in 0..200 {
        args.extend(["--load", "cmd:sleep 1000"]);
    }
    let child = m.cmd(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(150));
    signal(&child, "INT");
    let (pid, rx) = collect(child);
    let mut ended = rx.recv_timeout(Duration::from_secs(15));
    let second = ended.is_err() && runner().is_some();
    if second {
        // qemu-user (7.2) keeps a signal that arrives while the emulated process spawns a child
        // pending until the next signal: natively the first Ctrl-C always ends the run (and
        // this test fails if it does not); under the emulator a second one delivers it.
        eprintln!("NOTE: under the emulator the first SIGINT stayed pending; sending another");
        Command::new("kill").args(["-s", "INT", &pid]).status().unwrap();
        ended = rx.recv_timeout(Duration::from_secs(30));
    }
    let Ok(out) = ended else { kill_and_fail(&pid, rx, "Ctrl-C during set-up did not end the run") };
    // Either the handler was installed (a partial document) or the default action ended it
    // (or, under the emulator, a second signal did: exit 130 at once, nothing left either).
    match out.status.code() {
        None => {}
        Some(130) if second => {}
        Some(_) => {
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(doc["status"], "partial");
        }
    }
    m.assert_clean("Ctrl-C during load start");
}

#[test]
fn loads_start_together_before_the_measurement() {
    let m = Marker::new();
    let mut args = vec!["run", "-q", "-D", "500ms", "--warmup", "0", "--cpus", "0", "--json", "-"];
    for _ in 0..150 {
        args.extend(["--load", "cmd:sleep 1000"]);
    }
    let child = m.cmd(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (_, out) = wait_bounded(child, Duration::from_secs(60), "150 loads");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let loads = doc["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 150);
    assert!(loads.iter().all(|l| l["started_ns"].as_i64().unwrap() < 0), "all started before period 0");
    m.assert_clean("150 loads");
}

/// The run's cgroup from the cgroup line of one of its load processes (cgroup v2).
fn cgroup_of(pid: &str) -> Option<std::path::PathBuf> {
    let line = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = line.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mounts.lines().find(|l| l.contains(" - cgroup2 "))?.split(' ').nth(4)?.to_string();
    Some(std::path::Path::new(&mount).join(path.trim_start_matches('/')))
}

/// Whether a line of `Marker::processes` ("PID: COMMAND LINE") runs a command line that begins with
/// `start` (not merely names it among its arguments, as rtgauge's own command line does).
fn runs(process: &str, start: &str) -> bool {
    process.split_once(": ").is_some_and(|(_, cmd)| cmd.starts_with(start))
}

const ESCAPERS: [&str; 4] =
    ["--load", "cmd:sh -c \"setsid sleep 300 & sleep 1000\"", "--load", "cmd:sh -c \"(sleep 301 &); sleep 1000\""];

#[test]
fn setsid_and_double_fork_grandchildren_are_gone_after_a_normal_end() {
    let m = Marker::new();
    let mut args = vec!["run", "-q", "-D", "1500ms", "--warmup", "0", "--cpus", "0", "--json", "-"];
    args.extend(ESCAPERS);
    let out = m.cmd(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    m.assert_clean("a normal end");
    let c = &doc["containment"];
    if let Some(path) = c["cgroup"].as_str() {
        assert!(!std::path::Path::new(path).exists(), "the run's cgroup {path} is removed");
    } else {
        common::skip(
            common::Skip::Here,
            &format!("no cgroup here ({}); process groups cannot hold a setsid", c["fallback_reason"]),
        );
    }
}

/// Starts a 60 s run with the escaping loads and waits until both grandchildren run. Returns
/// rtgauge, the marked processes then, and the cgroup of the setsid grandchild where it is one of
/// rtgauge's.
fn run_escapers(m: &Marker) -> (Child, Vec<String>, Option<std::path::PathBuf>) {
    let mut args = vec!["run", "-q", "-D", "60s", "--cpus", "0"];
    args.extend(ESCAPERS);
    let child = m.cmd(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let t = Instant::now();
    while m.started().iter().filter(|p| runs(p, "sleep 30")).count() < 2 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let procs = m.started();
    let grandchild = procs.iter().find(|p| runs(p, "sleep 300")).expect("the setsid grandchild runs");
    let cgroup = cgroup_of(grandchild.split(':').next().unwrap()).filter(|p| p.to_string_lossy().contains("rtgauge-"));
    (child, procs, cgroup)
}

#[test]
fn setsid_and_double_fork_grandchildren_are_gone_after_sigkill() {
    let m = Marker::new();
    let (mut child, _, cgroup) = run_escapers(&m);
    child.kill().unwrap();
    child.wait().unwrap();
    m.assert_clean("SIGKILL of rtgauge");
    if let Some(cg) = cgroup {
        let t = Instant::now();
        while cg.exists() && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!cg.exists(), "the guardian removed {}", cg.display());
    }
}

/// `kill -9 $(pidof rtgauge)` kills the guardian too: the loads' cgroup and what a load left in it
/// outlived both. The next rtgauge removes a dead run's cgroup, as it restores its tuning.
#[test]
fn a_run_killed_with_its_guardian_leaves_its_cgroup_to_the_next_rtgauge() {
    let m = Marker::new();
    let (mut child, procs, cgroup) = run_escapers(&m);
    let Some(cg) = cgroup else {
        child.kill().unwrap();
        child.wait().unwrap();
        m.assert_clean("SIGKILL of rtgauge");
        common::skip(common::Skip::Here, "the loads ran in no cgroup of rtgauge's here");
        return;
    };
    let guardian =
        procs.iter().find(|p| p.contains(" __guardian")).expect("the guardian runs").split(':').next().unwrap().to_string();
    Command::new("kill").args(["-s", "KILL", &guardian]).status().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    // A journal of its own: another test's killed run is not this one's to restore.
    let journal = tempfile::tempdir().unwrap();
    let out = m.cmd(&["restore"]).env("RTGAUGE_JOURNAL", journal.path().join("tuning.journal")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    m.assert_clean("rtgauge and its guardian killed, then rtgauge restore");
    assert!(!cg.exists(), "the next rtgauge removed {}", cg.display());
}

fn v1_hierarchy(controller: &str) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|m| {
        m.lines().any(|l| {
            l.split_once(" - ").is_some_and(|(_, post)| post.starts_with("cgroup ") && post.split(',').any(|o| o == controller))
        })
    })
}

#[test]
fn a_cgroup_v1_hierarchy_contains_loads_where_there_is_no_v2() {
    if !v1_hierarchy("freezer") && !v1_hierarchy("pids") {
        common::skip(common::Skip::Here, "no cgroup v1 freezer or pids hierarchy here");
        return;
    }
    let m = Marker::new();
    let mut args = vec!["run", "-q", "-D", "1s", "--warmup", "0", "--cpus", "0", "--json", "-"];
    args.extend(ESCAPERS);
    let out = m.cmd(&args).env("RTGAUGE_CONTAINMENT", "cgroup1").output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["containment"]["kind"], "cgroup-v1", "{}", doc["containment"]);
    assert!(!std::path::Path::new(doc["containment"]["cgroup"].as_str().unwrap()).exists());
    m.assert_clean("a v1 cgroup");
}

/// A new cgroup with the cpu controller gets rt_runtime_us = 0 and refuses SCHED_FIFO: rtgauge
/// must notice before a load depends on it, fall back, say why, and still run the load.
#[test]
fn the_rt_group_scheduling_trap_falls_back_to_process_groups() {
    if !std::path::Path::new("/sys/fs/cgroup/cpu/cpu.rt_runtime_us").exists() {
        common::skip(common::Skip::Here, "no cgroup v1 cpu hierarchy with RT group scheduling here");
        return;
    }
    let m = Marker::new();
    let out = m
        .cmd(&["run", "-q", "-D", "1s", "--warmup", "0", "--cpus", "0", "--json", "-", "--load", "cpu:workers=1,policy=fifo:10"])
        .env("RTGAUGE_CONTAINMENT", "cgroup1:cpu")
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &doc["containment"];
    assert_eq!(c["kind"], "process-group");
    assert!(c["fallback_reason"].as_str().unwrap().contains("rt_runtime_us=0"), "{c}");
    let l = &doc["loads"][0];
    assert_eq!(l["failed"], false);
    assert!(u(&l["counters"]["rounds"]) > 0, "the FIFO load ran: {l}");
    m.assert_clean("the trap");
}

#[test]
fn phases_of_a_one_second_load_hold_exactly_one_thousand_periods() {
    let (_, doc, _) = run_json(&["-D", "3s", "--warmup", "0", "--load", "cpu:workers=1@1s..2s"]);
    let phases = doc["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 3);
    for (i, p) in doc["probes"].as_array().unwrap().iter().enumerate() {
        let per: Vec<u64> = phases.iter().map(|ph| periods(&ph["probes"][i]).0).collect();
        assert_eq!(per, vec![1000, 1000, 1000], "cpu{}", p["cpu"]);
    }
}

#[test]
fn overflowing_inputs_exit_2_naming_the_limit() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--loops", "18446744073709551615", "--warmup", "1", "--require", "missed==0"], "limit"),
        (&["run", "--loops", "18446744073709551", "--interval", "1ms"], "limit"),
        (&["run", "--warmup", "18446744073709551615"], "limit"),
        (&["run", "--duration", "1000000h"], "limit"),
        (&["run", "--load", "vm:bytes=99999999999999999999G"], "limit"),
        (&["run", "--load", "cpu:workers=4294967297"], "limit"),
        (&["run", "--load", "hackbench:groups=100000,fds=100000"], "limit"),
        (&["run", "--load", "net:size=100000"], "limit"),
        (&["run", "--load", "timers:count=999999999"], "limit"),
        (&["stall", "--cpu", "0", "--delay", "1000000h"], "limit"),
    ];
    for (args, words) in cases {
        let t = Instant::now();
        let out = rtgauge(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
        assert!(t.elapsed() < Duration::from_secs(10), "{args:?} measured nothing first");
    }
}

#[test]
fn a_cmd_load_that_never_worked_is_flagged_backs_off_and_fails_the_verdict() {
    let m = Marker::new();
    let out = m
        .cmd(&[
            "run",
            "-D",
            // (under an emulator each start of the command takes a few hundred ms)
            &load_time(2000),
            "--warmup",
            "0",
            "--cpus",
            "0",
            "--json",
            "-",
            "--load",
            "cmd:false",
            "--require",
            "missed<=1000000",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let l = &doc["loads"][0];
    assert_eq!(l["failed"], true);
    assert!(l["error"].as_str().unwrap().contains("kept failing"), "{l}");
    let exited_1 = u(&l["endings"]["counts"]["exited 1"]);
    assert!(exited_1 >= 3, "{l}");
    assert!(u(&l["runs"]) <= 10, "restarts back off (it was 179 in 2 s; 5 s leave room for 6): {l}");
    assert!(doc["verdict"]["checks"].as_array().unwrap().iter().any(|c| c["expr"] == "loads==ok" && c["passed"] == false));
    assert!(String::from_utf8_lossy(&out.stderr).contains("FAILED"), "the summary says so");
    m.assert_clean("cmd:false");
}

#[test]
fn what_a_result_keeps_of_endings_is_bounded() {
    let m = Marker::new();
    let out = m.cmd(&["load", "cmd:true", "--duration", "3s", "--json", "-"]).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let l = &doc["loads"][0];
    let e = &l["endings"];
    let counted: u64 = e["counts"].as_object().unwrap().values().map(u).sum();
    assert_eq!(counted, u(&l["runs"]), "{l}");
    assert!(e["first"].as_array().unwrap().len() <= 5 && e["last"].as_array().unwrap().len() <= 5, "{e}");
    assert_eq!(l["failed"], false, "a command that succeeds is not failing: {l}");
}

/// A file argument that is not a regular file (a FIFO would block the open for ever, a device
/// never end) is refused before it is opened for reading, for every option that reads a file;
/// a regular one larger than the cap is refused after the cap.
#[test]
fn a_fifo_or_an_endless_file_given_for_any_file_argument_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let f = fifo.to_str().unwrap();
    let store = dir.path().join("s.db");
    let s = store.to_str().unwrap();
    let out_dir = dir.path().join("png");
    let png = out_dir.to_str().unwrap();
    for args in
        [vec!["run", "--scenario", f], vec!["import", "--db", s, f], vec!["report", "--db", s, "last", "--png", png, "--font", f]]
    {
        let (_, out) = wait_bounded(
            rtgauge(&args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap(),
            Duration::from_secs(20),
            "a FIFO argument",
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    // The scenario's FIFO, refused by name.
    let out = rtgauge(&["run", "--scenario", f]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("a FIFO, not a regular file"));
    let big = dir.path().join("big.toml");
    std::fs::write(&big, vec![b'#'; (1 << 20) + 10]).unwrap();
    let out = rtgauge(&["run", "--scenario", big.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("larger than"), "{err}");
}

#[test]
fn a_missing_required_argument_is_named() {
    let out = rtgauge(&["stall", "--duration", "10ms"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("--cpu") && err.contains("rtgauge stall --help"), "{err}");
}

/// Under qemu-user only, an attempt whose SIGINT did not stop the run within 20 s, or whose
/// summary is missing, is made again (at most three times, saying what happened): the emulator
/// routes a process-directed signal to whichever host thread the kernel chose, and a measurement
/// thread blocks it (CI's aarch64 run failed this test once; natively it never has).
#[test]
fn a_partial_run_says_how_long_it_measured() {
    let attempts = if runner().is_some() { 3 } else { 1 };
    for attempt in 1..=attempts {
        match partial_run_summary() {
            Ok(text) => {
                assert!(!text.contains("measured 1 min"), "{text}");
                return;
            }
            Err(why) if attempt < attempts => eprintln!("attempt {attempt}: {why}; again"),
            Err(why) => panic!("{why}"),
        }
    }
}

/// Interrupts a 60 s run 300 ms after it measures: its summary, if it says it measured part of
/// the planned minute; else what happened instead.
fn partial_run_summary() -> Result<String, String> {
    let child = rtgauge(&["run", "-q", "-D", "60s", "--warmup", "0", "--cpus", "0", "--load", "none"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_measuring(child.id());
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "INT");
    let (pid, rx) = collect(child);
    let out = rx.recv_timeout(Duration::from_secs(20)).map_err(|_| {
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
        let out = rx.recv().unwrap();
        format!("SIGINT did not end the run within 20 s: {}", String::from_utf8_lossy(&out.stderr))
    })?;
    let (text, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if text.contains("of the planned 1 min") {
        Ok(text.into_owned())
    } else {
        Err(format!("no partial run's summary ({}): {text}\nstderr: {err}", out.status))
    }
}

// ---- the result document: never lost at the end ----

/// A sticky, world-writable directory like /tmp, with a file of root's in it.
fn sticky_dir_with_roots_file(mode: u32) -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let file = dir.path().join("shared.json");
    std::fs::write(&file, "old").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    (dir, file)
}

/// As `nobody` (no RT priority, no memory lock), `loops` idle periods on CPU 0, the document to `file`.
fn as_nobody_to(file: &std::path::Path, loops: &str) -> Output {
    let path = file.to_str().unwrap();
    nobody(&["run", "-q", "--loops", loops, "--warmup", "0", "--policy", "other", "--no-mlock", "--cpu-dma-latency", "off"])
        .args(["--cpus", "0", "--load", "none", "--json", path])
        .output()
        .unwrap()
}

#[test]
fn an_unreplaceable_destination_is_refused_before_measuring() {
    if !nobody_can_run() {
        return;
    }
    let (_dir, file) = sticky_dir_with_roots_file(0o644);
    let t = Instant::now();
    let out = as_nobody_to(&file, "1000000"); // would take 1000 s: refused first
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--json") && err.contains(file.to_str().unwrap()), "{err}");
    assert!(t.elapsed() < Duration::from_secs(30), "refused before measuring");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
}

/// A symbolic link another user planted in a directory every user may write (`/tmp`) is not
/// followed by rtgauge running as root: the destination is refused before measuring, and the
/// file the link names (root's) is left as it was.
#[test]
fn a_link_another_user_planted_in_a_shared_directory_is_not_written_through() {
    let (dir, roots) = sticky_dir_with_roots_file(0o600);
    let link = dir.path().join("result.json");
    std::os::unix::fs::symlink(&roots, &link).unwrap();
    let lchown = std::process::Command::new("chown").args(["-h", "nobody"]).arg(&link).status().unwrap();
    assert!(lchown.success());
    let t = Instant::now();
    let out = rtgauge(&["run", "-q", "--loops", "1000000", "--cpus", "0", "--load", "none", "--json", link.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("symbolic link") && err.trim_end().lines().count() == 1, "{err}");
    assert!(t.elapsed() < Duration::from_secs(30), "refused before measuring");
    assert_eq!(std::fs::read_to_string(&roots).unwrap(), "old");
    // A link in the middle of the path (a directory of root's, reached from the shared one).
    let private = tempfile::tempdir().unwrap();
    let inside = private.path().join("result.json");
    std::fs::write(&inside, "root's").unwrap();
    let through = dir.path().join("results");
    std::os::unix::fs::symlink(private.path(), &through).unwrap();
    assert!(std::process::Command::new("chown").args(["-h", "nobody"]).arg(&through).status().unwrap().success());
    let out = rtgauge(&["run", "-q", "--loops", "1000000", "--cpus", "0", "--load", "none", "--json"])
        .arg(through.join("result.json"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "root's");
}

/// Another user's file in a sticky directory cannot be renamed over, only written: it is written
/// in place (the old check passed, then the final rename failed and the measurement was lost).
#[test]
fn a_writable_file_in_a_sticky_directory_is_written_in_place() {
    use std::os::unix::fs::MetadataExt;
    if !nobody_can_run() {
        return;
    }
    let (_dir, file) = sticky_dir_with_roots_file(0o666);
    let out = as_nobody_to(&file, "100");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(u(&doc["probes"][0]["samples"]) + u(&doc["probes"][0]["missed"]), 100);
    assert_eq!(std::fs::metadata(&file).unwrap().uid(), 0, "still root's file");
}

/// A short idle run whose document goes to `dest`.
fn twenty_periods_to(dest: &std::path::Path) -> Output {
    let dest = dest.to_str().unwrap();
    rtgauge(&["run", "-q", "--loops", "20", "--warmup", "0", "--cpus", "0", "--load", "none", "--json", dest]).output().unwrap()
}

#[test]
fn replacing_a_file_keeps_its_mode_and_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    std::fs::write(&file, "old").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    let out = twenty_periods_to(&file);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let m = std::fs::metadata(&file).unwrap();
    assert_eq!((m.mode() & 0o7777, m.uid(), m.gid()), (0o640, 65534, 65534));
    assert!(std::fs::read_to_string(&file).unwrap().contains("rtgauge.result"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "nothing beside it");
}

#[test]
fn a_symlink_stays_a_symlink_even_a_dangling_one() {
    let dir = tempfile::tempdir().unwrap();
    for (link, target) in [("live.json", "live-target.json"), ("dangling.json", "sub/../dangling-target.json")] {
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        if link == "live.json" {
            std::fs::write(dir.path().join(target), "old").unwrap();
        }
        std::os::unix::fs::symlink(target, dir.path().join(link)).unwrap();
        let path = dir.path().join(link);
        let out = twenty_periods_to(&path);
        assert_eq!(out.status.code(), Some(0), "{link}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink(), "{link} is still a link");
        assert!(std::fs::read_to_string(&path).unwrap().contains("rtgauge.result"), "{link}'s target got the document");
    }
}

#[test]
fn json_to_a_closed_standard_output_exits_2_before_measuring() {
    let script = format!("exec {} run -q -D 30s --cpus 0 --load none --json - >&-", bin_shell());
    let t = Instant::now();
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("standard output is closed"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(20));
}

mod results;
