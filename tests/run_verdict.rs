//! Verdicts and exit status: 0 when every criterion holds (or none is given), 1 when one
//! fails, with every check and its observation in the result.

mod common;
use common::*;

#[test]
fn requirements_that_hold_exit_zero_with_their_checks() {
    let (code, doc, _) =
        run_json(&["--duration", "300ms", "--warmup", "0", "--cpus", "0", "--require", "samples>=1", "--require", "min>=0us"]);
    assert_eq!(code, 0);
    let v = &doc["verdict"];
    assert_eq!(v["passed"], true);
    assert_eq!(v["criteria_given"], true);
    let checks = v["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    assert!(checks.iter().all(|c| c["passed"] == true && c["scope"] == "timer/cpu0"));
    assert_eq!(doc["config"]["requirements"], serde_json::json!(["samples>=1", "min>=0us"]));
}

#[test]
fn a_requirement_that_cannot_hold_exits_one() {
    let (code, doc, out) =
        run_json(&["--duration", "300ms", "--warmup", "0", "--require", "samples<1", "--require", "missed>=0"]);
    assert_eq!(code, 1);
    assert_eq!(doc["verdict"]["passed"], false);
    let cpus = online_cpus().len();
    let checks = doc["verdict"]["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2 * cpus, "every requirement is checked on every CPU");
    let failed = checks.iter().filter(|c| c["passed"] == false).count();
    assert_eq!(failed, cpus);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("FAIL"), "summary names the failure: {stderr}");
}

#[test]
fn no_criteria_passes_and_still_states_the_supported_cycle_time() {
    let (code, doc, out) = run_json(&["--duration", "300ms", "--warmup", "0", "--cpus", "0"]);
    assert_eq!(code, 0);
    assert_eq!(doc["verdict"]["criteria_given"], false);
    assert!(doc["verdict"]["checks"].as_array().unwrap().is_empty());
    let max = u(&doc["combined"][0]["max_ns"]);
    assert_eq!(u(&doc["verdict"]["shortest_cycle_time_ns"]), max * 4, "max / 25 %");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Shortest cycle time"));
}

#[test]
fn budget_changes_the_shortest_cycle_time() {
    let (_, doc, _) = run_json(&["--duration", "200ms", "--warmup", "0", "--cpus", "0", "--budget", "50%"]);
    let max = u(&doc["combined"][0]["max_ns"]);
    assert_eq!(u(&doc["verdict"]["shortest_cycle_time_ns"]), max * 2);
    assert_eq!(doc["config"]["budget_percent"], 50.0);
}

/// Under `--cycle-time` 10× the interval a missed 1 ms period is a latency judged against the
/// budget (no `missed==0` check); at 0.1× the interval, and at the interval itself, a missed
/// period is a missed cycle (`missed==0` checked). The summary says which rule applied.
#[test]
fn a_missed_period_fails_a_cycle_time_only_when_it_is_a_missed_cycle() {
    for (cycle_time, missed_checked, rule) in [
        (
            "10ms",
            false,
            "missed periods of timer at 1 ms are latencies judged against the 2.5 ms budget (the cycle time is 10 ms)",
        ),
        ("100us", true, "a missed period of timer at 1 ms is a missed cycle"),
        ("1ms", true, "a missed period of timer at 1 ms is a missed cycle"),
    ] {
        let (_, doc, out) =
            run_json(&["--loops", "200", "--warmup", "0", "--cpus", "0", "--load", "none", "--cycle-time", cycle_time]);
        let checks = doc["verdict"]["checks"].as_array().unwrap();
        let exprs: Vec<&str> = checks.iter().map(|c| c["expr"].as_str().unwrap()).collect();
        assert_eq!(exprs.contains(&"missed==0"), missed_checked, "--cycle-time {cycle_time}: {exprs:?}");
        assert!(exprs.iter().any(|e| e.starts_with("max<=")), "the budget is judged: {exprs:?}");
        let rules = doc["verdict"]["rules"].as_array().unwrap();
        assert!(rules.iter().any(|r| r.as_str().unwrap().starts_with(rule)), "{cycle_time}: {rules:?}");
        let summary = String::from_utf8_lossy(&out.stderr);
        assert!(summary.contains(&format!("  rule: {rule}")), "the summary says which rule applied: {summary}");
    }
}

/// A rate sweep that stopped after a failed step says how long it measured, not the planned
/// time: `measured_ns` and the summary's header both (the run is complete: the sweep stops by
/// design).
#[test]
fn a_sweep_that_stopped_early_says_how_long_it_measured() {
    // A 2 µs and a 1 µs bound: the second step fails, the third is never run.
    let sweep = "wakeup:rate=sweep,rates=1000/500000/1000000@0";
    let (_, doc, out) = run_json(&["-D", "1500ms", "--warmup", "0", "--load", "none", "--measure", sweep]);
    assert_eq!(doc["status"], "complete");
    let steps = doc["probes"][0]["sweep"]["steps"].as_array().unwrap();
    assert_eq!(steps.last().unwrap()["outcome"], "not-run", "{steps:?}");
    let measured = u(&doc["measured_ns"]);
    assert!(measured <= 1_000_000_000, "two steps of 500 ms at most, not the planned 1.5 s: {measured}");
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(summary.contains("of the planned 1.5 s (the probes ended early"), "{summary}");
}

/// A probe's own warm-up (the AM3356 scenario's `warmup=1000` cycles) is the one the header
/// states, not the run's (0), and `measured_ns` is counted after it.
#[test]
fn a_scenario_whose_probe_warms_up_says_its_warm_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("warm.toml");
    std::fs::write(
        &file,
        "name = \"warm\"\ndescription = \"a probe with its own warm-up\"\nduration = \"300ms\"\nwarmup = \"0\"\nmeasure = [\"period:interval=2ms,warmup=50@0\"]\n",
    )
    .unwrap();
    let (_, doc, out) = run_json(&["--scenario", file.to_str().unwrap(), "--load", "none"]);
    assert_eq!(doc["config"]["probes"][0]["warmup_periods"], 50);
    assert_eq!(u(&doc["measured_ns"]), 300_000_000, "300 ms after the 100 ms warm-up");
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(summary.contains("after 50 warm-up periods (100 ms)"), "{summary}");
}

/// The wake-up chain's threads set their own priority (handler 99, task 98): the header says
/// what they ran at, once, beside the probe, not the run's priority after a garbled setting.
#[test]
fn the_wake_up_header_says_what_its_threads_ran_at() {
    let (_, _, out) = run_json(&["--loops", "50", "--warmup", "0", "--load", "none", "--measure", "wakeup@0"]);
    let summary = String::from_utf8_lossy(&out.stderr);
    let header = summary.lines().find(|l| l.starts_with("rtgauge ")).unwrap();
    assert!(header.contains("wakeup on CPUs 0, interval 1 ms") && header.contains(", SCHED_FIFO 99 (task 98)"), "{header}");
    assert!(!header.contains("priority=") && !header.contains("SCHED_FIFO 80"), "{header}");
}
