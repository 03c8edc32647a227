//! Ground truth: a stall injected on one CPU (a busy SCHED_FIFO 99 thread for a known time,
//! `rtgauge stall`) must show up on that CPU only, with a worst case at least as long as the
//! stall, at the time of the stall, and with the periods it swallowed counted as missed.

mod common;
use common::*;
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;

#[test]
fn injected_stall_shows_on_its_cpu_only_with_its_size_and_missed_periods() {
    let cpus = online_cpus();
    if cpus.len() < 2 {
        eprintln!("SKIPPED: needs two CPUs");
        return;
    }
    let (quiet_cpu, stalled_cpu) = (cpus[0], cpus[1]);
    let list = format!("{quiet_cpu},{stalled_cpu}");
    let run = rtgauge(&["run", "-q", "--json", "-", "--cpus", &list, "--duration", "3s", "--warmup", "0", "--interval", "1ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let stall_ms = 300u64;
    let stall = rtgauge(&["stall", "--cpu", &stalled_cpu.to_string(), "--duration", &format!("{stall_ms}ms")])
        .output()
        .unwrap();
    assert!(stall.status.success(), "{}", String::from_utf8_lossy(&stall.stderr));
    let s: Value = serde_json::from_slice(&stall.stdout).unwrap();
    let stall_ns = u(&s["duration_ns"]);
    assert!(stall_ns >= stall_ms * 1_000_000);

    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let probe = |cpu: usize| doc["probes"].as_array().unwrap().iter().find(|p| u(&p["cpu"]) == cpu as u64).unwrap().clone();
    let (hit, calm) = (probe(stalled_cpu), probe(quiet_cpu));
    let interval = 1_000_000u64;

    // The first deadline inside the stall is at most one interval after its start, and that
    // wake-up cannot happen before the stall ends.
    assert!(u(&hit["max_ns"]) >= stall_ns - interval, "max {} vs stall {stall_ns}", hit["max_ns"]);
    // The worst wake-up's deadline lies within the stall.
    let max_at = u(&doc["monotonic_start_ns"]) + u(&hit["max_at_ns"]);
    assert!(max_at + interval >= u(&s["start_ns"]) && max_at <= u(&s["end_ns"]), "max at {max_at}, stall {s}");
    // Periods swallowed by the stall are counted, not skipped.
    let swallowed = stall_ns / interval - 1;
    assert!(u(&hit["missed"]) >= swallowed - 1, "missed {} for a {stall_ns} ns stall", hit["missed"]);
    assert_eq!(u(&hit["samples"]) + u(&hit["missed"]), 3000);

    // The other CPU kept running: nothing of the stall's size there.
    assert!(u(&calm["max_ns"]) < stall_ns / 2, "cpu{quiet_cpu} max {} unaffected", calm["max_ns"]);
    assert!(u(&calm["missed"]) < swallowed / 2);
    assert_eq!(u(&calm["samples"]) + u(&calm["missed"]), 3000);
    check_probe_invariants(&hit);
    check_probe_invariants(&calm);
}

#[test]
fn a_stall_fails_a_cycle_time_it_does_not_fit() {
    let cpu = *online_cpus().last().unwrap();
    let run = rtgauge(&[
        "run", "-q", "--json", "-", "--cpus", &cpu.to_string(), "--duration", "2s", "--warmup", "0", "--cycle-time", "100ms",
    ])
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let stall = rtgauge(&["stall", "--cpu", &cpu.to_string(), "--duration", "200ms"]).output().unwrap();
    assert!(stall.status.success());
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a 200 ms stall exceeds 25% of a 100 ms cycle");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["verdict"]["passed"], false);
    let checks = doc["verdict"]["checks"].as_array().unwrap();
    let failed: Vec<&Value> = checks.iter().filter(|c| c["passed"] == false).collect();
    assert!(failed.iter().any(|c| c["expr"] == "max<=25000us" && c["scope"] == format!("timer/cpu{cpu}")));
    assert!(failed.iter().any(|c| c["expr"] == "missed==0"));
    assert!(u(&doc["verdict"]["shortest_cycle_time_ns"]) >= 4 * 190_000_000);
}

#[test]
fn stall_rejects_bad_input() {
    for args in [
        vec!["stall", "--cpu", "4095", "--duration", "10ms"],
        vec!["stall", "--cpu", "0", "--duration", "11s"],
        vec!["stall", "--cpu", "0", "--priority", "100"],
    ] {
        let out = rtgauge(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
