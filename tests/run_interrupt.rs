//! Interruption: SIGINT or SIGTERM ends a run cleanly with everything measured so far,
//! marked partial; a second signal exits at once.

mod common;
use common::*;
use serde_json::Value;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn kill(child: &Child, sig: &str) {
    let ok = std::process::Command::new("kill").args(["-s", sig, &child.id().to_string()]).status().unwrap();
    assert!(ok.success());
}

fn interrupted_run(sig: &str, extra: &[&str]) -> (Option<i32>, Value, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let mut args = vec!["run", "-q", "--duration", "60s", "--warmup", "0", "--load", "none", "--json", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    let child = rtgauge(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    wait_until_measuring(child.id());
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    kill(&child, sig);
    let out = child.wait_with_output().unwrap();
    let took = t.elapsed();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (out.status.code(), doc, took)
}

#[test]
fn sigint_keeps_partial_data() {
    let (code, doc, took) = interrupted_run("INT", &[]);
    assert_eq!(code, Some(0), "no criteria: exit 0");
    assert!(took < Duration::from_secs(3), "stops promptly ({took:?})");
    assert_eq!(doc["status"], "partial");
    assert_eq!(doc["interrupted_by"], "SIGINT");
    for p in doc["probes"].as_array().unwrap() {
        let periods = u(&p["samples"]) + u(&p["missed"]);
        // (the whole probe and the run's warnings in the message: CI saw all 60 000 periods
        // accounted once, under qemu-user on a loaded machine, and nothing else to go by)
        let said = format!("{p} warnings {} measured_ns {} after {took:?}", doc["warnings"], doc["measured_ns"]);
        assert!(periods > 0 && periods < 60_000, "what was measured before the signal is kept: {periods}: {said}");
        check_probe_invariants(p);
    }
}

#[test]
fn sigterm_keeps_partial_data_and_fails_criteria() {
    let (code, doc, _) = interrupted_run("TERM", &["--require", "samples>=1"]);
    assert_eq!(code, Some(1), "a partial run cannot pass its criteria");
    assert_eq!(doc["status"], "partial");
    assert_eq!(doc["interrupted_by"], "SIGTERM");
    let checks = doc["verdict"]["checks"].as_array().unwrap();
    assert!(checks.iter().any(|c| c["expr"] == "status==complete" && c["passed"] == false));
}

fn files_in(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

/// A second SIGINT while the first is being served exits at once, with 130, leaving nothing.
/// Under qemu-user the two signals can reach the emulated process as one (the emulator had not yet
/// delivered the first: CI saw one graceful stop, exit 1, 1 time in ~30), and the first can end
/// the emulated threads' 5 s sleep at once (CI, armv7: the run had ended 300 ms after it): there,
/// and only there, such an attempt is made again (at most three times).
#[test]
fn second_sigint_exits_at_once_leaving_nothing() {
    let attempts = if runner().is_some() { 3 } else { 1 };
    for attempt in 1..=attempts {
        let dir = tempfile::tempdir().unwrap();
        let Some((status, elapsed)) = second_sigint(&dir.path().join("r.json")) else {
            assert!(attempt < attempts, "the run had ended before the second SIGINT, still finishing its 5 s period");
            eprintln!("attempt {attempt}: the first SIGINT ended the emulated run at once; again");
            continue;
        };
        if status.code() == Some(1) && attempt < attempts {
            eprintln!("attempt {attempt}: the emulator delivered the two SIGINTs as one; again");
            continue;
        }
        assert!(elapsed < Duration::from_secs(2));
        assert_eq!(status.code(), Some(130));
        assert!(files_in(dir.path()).is_empty(), "no stray file: {:?}", files_in(dir.path()));
        return;
    }
}

/// Starts a run writing `json`, sends SIGINT once it measures and again 300 ms later; returns how
/// it ended and how long after the second signal (`None`: it had ended before the second).
fn second_sigint(json: &std::path::Path) -> Option<(std::process::ExitStatus, Duration)> {
    // With a 5 s interval the first SIGINT waits for the threads' current sleep to end.
    let mut child = rtgauge(&[
        "run",
        "-q",
        "--interval",
        "5s",
        "--duration",
        "60s",
        "--warmup",
        "0",
        "--load",
        "none",
        "--json",
        json.to_str().unwrap(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    wait_until_measuring(child.id()); // in its first 5 s sleep
    kill(&child, "INT");
    std::thread::sleep(Duration::from_millis(300));
    if child.try_wait().unwrap().is_some() {
        return None;
    }
    let t = Instant::now();
    kill(&child, "INT");
    let status = child.wait().unwrap();
    Some((status, t.elapsed()))
}

#[test]
fn sigkill_leaves_no_stray_file() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut child = rtgauge(&["run", "-q", "--duration", "60s", "--load", "none", "--json", json.to_str().unwrap()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(files_in(dir.path()).is_empty(), "no stray file: {:?}", files_in(dir.path()));
}
