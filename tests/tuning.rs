//! Tuning held during a run is really applied, recorded, and undone afterwards — also when
//! rtgauge is killed: the `/dev/cpu_dma_latency` request is 0 µs while measuring and gone after.

mod common;
use common::*;
use std::process::Stdio;
use std::time::Duration;

/// The current system-wide CPU latency target, as the device reports it (binary s32, µs).
fn current_target() -> i32 {
    let bytes = std::fs::read("/dev/cpu_dma_latency").expect("/dev/cpu_dma_latency is readable as root");
    i32::from_ne_bytes(bytes[..4].try_into().unwrap())
}

/// The tests of this file share the system-wide target: one at a time.
static SYSTEM_WIDE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn measure_while_running(extra: &[&str], end: impl FnOnce(&mut std::process::Child)) -> (i32, i32) {
    let _one_at_a_time = SYSTEM_WIDE.lock().unwrap_or_else(|e| e.into_inner());
    let before = current_target();
    let mut args = vec!["run", "-q", "--duration", "3s", "--warmup", "0", "--cpus", "0"];
    args.extend_from_slice(extra);
    let mut child = rtgauge(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let during = current_target();
    end(&mut child);
    assert_eq!(current_target(), before, "the request is gone after the run");
    (before, during)
}

#[test]
fn cpu_dma_latency_is_held_during_the_run_only() {
    let (before, during) = measure_while_running(&[], |c| assert!(c.wait().unwrap().success()));
    assert_eq!(during, 0, "0 µs requested while measuring (was {before})");
}

#[test]
fn cpu_dma_latency_is_released_when_killed() {
    let (_, during) = measure_while_running(&[], |c| {
        c.kill().unwrap();
        c.wait().unwrap();
    });
    assert_eq!(during, 0);
}

#[test]
fn cpu_dma_latency_off_leaves_it_alone_and_is_recorded() {
    let (before, during) = measure_while_running(&["--cpu-dma-latency", "off"], |c| assert!(c.wait().unwrap().success()));
    assert_eq!(during, before, "nothing requested with 'off'");
    let (_, doc, _) = run_json(&["--duration", "100ms", "--warmup", "0", "--cpus", "0", "--cpu-dma-latency", "off"]);
    assert!(doc["config"]["cpu_dma_latency_us"].is_null());
    assert!(doc["tuning"].as_array().unwrap().is_empty());
    let (_, doc, _) = run_json(&["--duration", "100ms", "--warmup", "0", "--cpus", "0"]);
    assert_eq!(doc["config"]["cpu_dma_latency_us"], 0);
    let t = &doc["tuning"][0];
    assert_eq!((t["setting"].as_str(), t["value"].as_str(), t["applied"].as_bool()), (Some("/dev/cpu_dma_latency"), Some("0us"), Some(true)));
}
