//! Tuning held during a run is really applied, recorded, and undone afterwards — also when
//! rtgauge is killed. The `/dev/cpu_dma_latency` request lives exactly as long as rtgauge's own
//! open descriptor of that device: the tests watch that descriptor, never the system-wide value
//! (any other process may hold a request of its own).

mod common;
use common::*;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const DEVICE: &str = "/dev/cpu_dma_latency";

/// Whether process `pid` holds `/dev/cpu_dma_latency` open.
fn holds_request(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.flatten().any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == std::path::Path::new(DEVICE))))
        .unwrap_or(false)
}

/// Starts a 3 s run and reports whether it held the request while measuring (looked at once
/// it measures: the audit before opens the device a moment to read the value in force, which
/// on a loaded machine a look from the start could take for the run's request).
fn start(extra: &[&str]) -> (Child, bool) {
    let mut args = vec!["run", "-q", "--duration", "3s", "--warmup", "0", "--cpus", "0", "--load", "none"];
    args.extend_from_slice(extra);
    let child = rtgauge(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_until_measuring(child.id());
    let t = Instant::now();
    let mut held = false;
    while t.elapsed() < Duration::from_millis(2000) && !held {
        held = holds_request(child.id());
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, held)
}

#[test]
fn cpu_dma_latency_is_held_during_the_run_only() {
    if !std::path::Path::new(DEVICE).exists() {
        common::skip(common::Skip::Here, &format!("no {DEVICE}"));
        return;
    }
    let (mut child, held) = start(&[]);
    assert!(held, "rtgauge holds {DEVICE} open while measuring");
    assert!(child.wait().unwrap().success());
    assert!(!std::path::Path::new(&format!("/proc/{}", child.id())).exists(), "gone with the process");
}

#[test]
fn cpu_dma_latency_is_released_when_killed() {
    if !std::path::Path::new(DEVICE).exists() {
        common::skip(common::Skip::Here, &format!("no {DEVICE}"));
        return;
    }
    let (mut child, held) = start(&[]);
    assert!(held);
    child.kill().unwrap();
    child.wait().unwrap();
    // The kernel drops a PM QoS request when its file is closed, and a killed process's files are.
    assert!(!holds_request(child.id()));
}

#[test]
fn cpu_dma_latency_off_leaves_it_alone_and_is_recorded() {
    let (mut child, held) = start(&["--cpu-dma-latency", "off"]);
    assert!(!held, "nothing requested with 'off'");
    assert!(child.wait().unwrap().success());
    let (_, doc, _) =
        run_json(&["--duration", "100ms", "--warmup", "0", "--cpus", "0", "--load", "none", "--cpu-dma-latency", "off"]);
    assert!(doc["config"]["cpu_dma_latency_us"].is_null());
    assert!(doc["tuning"].as_array().unwrap().is_empty());
    let (_, doc, _) = run_json(&["--duration", "100ms", "--warmup", "0", "--cpus", "0", "--load", "none"]);
    assert_eq!(doc["config"]["cpu_dma_latency_us"], 0);
    let t = &doc["tuning"][0];
    assert_eq!((t["setting"].as_str(), t["value"].as_str(), t["applied"].as_bool()), (Some(DEVICE), Some("0us"), Some(true)));
}
