//! `rtgauge run` on the real kernel: the number of samples follows from duration and interval,
//! warm-up is excluded and recorded, and the statistics are internally consistent.
//! No test asserts a latency value.

mod common;
use common::*;

#[test]
fn every_period_is_a_sample_or_a_missed_deadline() {
    let (code, doc, _) = run_json(&["--duration", "2s", "--interval", "1ms", "--warmup", "0"]);
    assert_eq!(code, 0);
    assert_eq!(doc["status"], "complete");
    let cpus = online_cpus();
    let probes = doc["probes"].as_array().unwrap();
    assert_eq!(probes.len(), cpus.len(), "one timer thread per online CPU by default");
    for (p, cpu) in probes.iter().zip(&cpus) {
        assert_eq!(p["probe"], "timer");
        assert_eq!(u(&p["cpu"]), *cpu as u64);
        assert_eq!(u(&p["samples"]) + u(&p["missed"]), 2000, "2 s / 1 ms periods on cpu{cpu}");
        assert_eq!(u(&p["warmup_samples"]) + u(&p["warmup_missed"]), 0);
        check_probe_invariants(p);
    }
    let all = &doc["combined"][0];
    assert!(all["cpu"].is_null());
    let total: u64 = probes.iter().map(|p| u(&p["samples"])).sum();
    assert_eq!(u(&all["samples"]), total);
    let max = probes.iter().map(|p| u(&p["max_ns"])).max().unwrap();
    assert_eq!(u(&all["max_ns"]), max, "the combined maximum is the largest per-CPU maximum");
    check_probe_invariants(all);
}

#[test]
fn loops_and_warmup_in_samples_on_chosen_cpus() {
    let cpu = *online_cpus().last().unwrap();
    let list = cpu.to_string();
    let (code, doc, _) = run_json(&["--loops", "700", "--warmup", "150", "--interval", "500us", "--cpus", &list]);
    assert_eq!(code, 0);
    let probes = doc["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 1);
    let p = &probes[0];
    assert_eq!(u(&p["cpu"]), cpu as u64);
    assert_eq!(u(&p["samples"]) + u(&p["missed"]), 700);
    assert_eq!(u(&p["warmup_samples"]) + u(&p["warmup_missed"]), 150);
    assert_eq!(doc["config"]["warmup"]["samples"], 150);
    assert_eq!(doc["config"]["warmup"]["periods"], 150);
    assert_eq!(doc["config"]["loops"], 700);
    assert!(doc["config"]["duration_ns"].is_null());
    assert_eq!(doc["config"]["interval_ns"], 500_000);
    check_probe_invariants(p);
}

#[test]
fn warmup_time_is_excluded_and_recorded() {
    let (_, doc, _) = run_json(&["--duration", "1s", "--warmup", "300ms", "--interval", "1ms", "--cpus", "0"]);
    let p = &doc["probes"][0];
    assert_eq!(u(&p["warmup_samples"]) + u(&p["warmup_missed"]), 300);
    assert_eq!(u(&p["samples"]) + u(&p["missed"]), 1000);
    assert_eq!(doc["config"]["warmup"]["ns"], 300_000_000u64);
}

#[test]
fn result_records_how_it_was_obtained() {
    let (_, doc, _) = run_json(&["--duration", "200ms", "--warmup", "0", "--priority", "70", "--policy", "rr", "--cpus", "0"]);
    assert_eq!(doc["config"]["policy"], "rr");
    assert_eq!(doc["config"]["priority"], 70);
    let sys = &doc["system"];
    assert_eq!(sys["rt_priority_obtained"], true);
    assert_eq!(sys["mlockall_obtained"], true);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(sys["kernel_release"], release.trim());
    let realtime = std::fs::read_to_string("/sys/kernel/realtime").map(|s| s.trim() == "1").unwrap_or(false);
    assert_eq!(sys["preemption"]["realtime"], realtime);
    assert_eq!(sys["preemption"]["model"] == "PREEMPT_RT", realtime);
    assert_eq!(doc["tool_version"], env!("CARGO_PKG_VERSION"));
    let cl: Vec<&str> = doc["command_line"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(cl.contains(&"--policy") && cl.contains(&"rr"));
    assert!(doc["started_at"].as_str().unwrap() <= doc["ended_at"].as_str().unwrap());
}

#[test]
fn sched_other_on_purpose_is_marked() {
    let (code, doc, _) = run_json(&["--duration", "200ms", "--warmup", "0", "--policy", "other", "--cpus", "0"]);
    assert_eq!(code, 0);
    assert_eq!(doc["config"]["policy"], "other");
    assert_eq!(doc["config"]["priority"], 0);
    assert_eq!(doc["system"]["rt_priority_obtained"], false);
    assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("SCHED_OTHER")));
}

#[test]
fn no_mlock_is_recorded() {
    let (_, doc, _) = run_json(&["--duration", "100ms", "--warmup", "0", "--no-mlock", "--cpus", "0"]);
    assert_eq!(doc["config"]["mlockall"], false);
    assert_eq!(doc["system"]["mlockall_obtained"], false);
    assert!(!doc["warnings"].as_array().unwrap().is_empty());
}
