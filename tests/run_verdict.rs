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
