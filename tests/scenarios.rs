//! Scenario files: built-ins are listed and printable, a file runs with its probes, loads,
//! phases and requirements, the command line overrides it, and a bad file is a one-line
//! error naming the file, line and key.

mod common;
use common::*;

const NAMES: [&str; 7] = ["worst-case", "arm-paper", "arm-chain", "cortex-a53", "firmtimers", "ocera", "am3356"];

#[test]
fn built_in_scenarios_are_listed_and_printable() {
    let out = rtgauge(&["scenarios"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for n in NAMES {
        assert!(text.lines().any(|l| l.starts_with(n) && l.len() > n.len() + 20), "{n} with its description in {text}");
    }
    let out = rtgauge(&["scenarios", "cortex-a53"]).output().unwrap();
    let toml = String::from_utf8_lossy(&out.stdout);
    assert!(
        toml.contains("vm:workers=8,bytes=20M") && toml.contains("cpu:workers=8"),
        "stress --cpu 8 --vm 8 --vm-bytes 20MB: {toml}"
    );
    let out = rtgauge(&["scenarios", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_scenario_file_runs_with_its_settings_and_the_command_line_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    std::fs::write(
        &file,
        r#"name = "mine"
description = "a short test scenario"
duration = "30s"
warmup = "100"
cpus = "0"

[probes.timer]
interval = "2ms"
priority = 70

[[loads]]
spec = "cpu:workers=1"
start = "500ms"
end = "1s"

[verdict]
require = ["samples>=1"]
"#,
    )
    .unwrap();
    // The command line shortens the run and adds a requirement.
    let (code, doc, _) = run_json(&["--scenario", file.to_str().unwrap(), "--duration", "1500ms", "--require", "min>=0us"]);
    assert_eq!(code, 0);
    let c = &doc["config"];
    assert_eq!(c["scenario"], serde_json::json!({"name": "mine", "source": file.to_str().unwrap()}));
    assert_eq!((c["interval_ns"].as_u64(), c["priority"].as_u64()), (Some(2_000_000), Some(70)));
    assert_eq!(c["duration_ns"], 1_500_000_000u64);
    assert_eq!(c["warmup"]["samples"], 100);
    assert_eq!(c["cpus"], serde_json::json!([0]));
    assert_eq!(c["load_source"], "scenario");
    assert_eq!(c["loads"], serde_json::json!(["cpu:workers=1@500ms..1s"]));
    assert_eq!(c["requirements"], serde_json::json!(["samples>=1", "min>=0us"]));
    assert_eq!(doc["phases"].as_array().unwrap().len(), 3, "cut at 0.5 s and 1 s");
    let p = &doc["probes"][0];
    assert_eq!(u(&p["samples"]) + u(&p["missed"]), 750, "1.5 s / 2 ms");
}

#[test]
fn built_in_scenario_runs_shortened() {
    let (code, doc, _) = run_json(&["--scenario", "cortex-a53", "--duration", "1s", "--warmup", "0", "--cpus", "0"]);
    assert_eq!(code, 0);
    assert_eq!(doc["config"]["scenario"]["name"], "cortex-a53");
    assert_eq!(doc["config"]["scenario"]["source"], "built-in");
    let kinds: Vec<&str> = doc["loads"].as_array().unwrap().iter().map(|l| l["generator"]["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["cpu", "vm"]);
    assert!(doc["loads"].as_array().unwrap().iter().all(|l| l["failed"] == false));
}

/// The ARM9/ARM11 paper's full set-up measures the timer and the wake-up chain side by side and
/// judges both by the 25 % rule: every series of the chain on every CPU.
#[test]
fn the_arm_chain_scenario_judges_the_timer_and_every_series_of_the_chain() {
    let (code, doc, out) =
        run_json(&["--scenario", "arm-chain", "--loops", "50", "--warmup", "0", "--cpus", "0", "--load", "none"]);
    assert!(code == 0 || code == 1, "{}", String::from_utf8_lossy(&out.stderr));
    let names: Vec<&str> = doc["config"]["probes"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["timer", "wakeup"]);
    let scopes: Vec<&str> = doc["verdict"]["checks"].as_array().unwrap().iter().map(|c| c["scope"].as_str().unwrap()).collect();
    for s in ["timer/cpu0", "wakeup.chain/cpu0", "wakeup.handler/cpu0", "wakeup.task/cpu0"] {
        assert!(scopes.contains(&s), "{s} judged: {scopes:?}");
    }
    for p in doc["probes"].as_array().unwrap() {
        assert_eq!(u(&p["samples"]) + u(&p["missed"]), 50, "{p}");
    }
}

#[test]
fn bad_scenarios_name_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    for (body, line, key) in [
        ("name = \"x\"\n\n[probes.timer]\ninterval = \"soon\"\n", 4, "probes.timer.interval"),
        ("name = \"x\"\n[[loads]]\nspec = \"frobnicate\"\n", 3, "loads[0].spec"),
        ("name = \"x\"\nlength = \"1s\"\n", 2, "length"),
        ("name = \"x\"\n[verdict]\nbudget = \"200%\"\n", 3, "verdict.budget"),
        ("name = \"x\"\n[probes.timer]\npriority = 120\n", 3, "probes.timer.priority"),
    ] {
        let f = dir.path().join("bad.toml");
        std::fs::write(&f, body).unwrap();
        let out = rtgauge(&["run", "--scenario", f.to_str().unwrap()]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{}:{line}:", f.display())), "{err} names the file and line {line}");
        assert!(err.contains(key), "{err} names {key}");
    }
    let out = rtgauge(&["run", "--scenario", "no-such-scenario"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rtgauge scenarios"));
}

/// A bare name is a built-in scenario, never a file of that name in the current directory (one
/// any user could have left in /tmp); a file is read only when written as a path. A scenario
/// file that would run commands is refused when another user owns it or others may write it.
#[test]
fn a_scenario_name_is_never_silently_a_file_and_a_file_others_may_write_runs_no_command() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let body = format!("name = \"planted\"\n[[loads]]\nspec = \"cmd-once:touch {}\"\n", marker.display());
    let planted = dir.path().join("am3356");
    std::fs::write(&planted, &body).unwrap();
    let short = ["--loops", "5", "--warmup", "0", "--cpus", "0", "--load", "none"];
    let mut args = vec!["run", "-q", "--json", "-", "--scenario", "am3356"];
    args.extend(short);
    let out = rtgauge(&args).current_dir(dir.path()).output().unwrap();
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(doc["config"]["scenario"]["name"], "am3356");
    assert_eq!(doc["config"]["scenario"]["source"], "built-in");
    // A name that is not built-in, beside a file of that name: refused, saying how to run the file.
    std::fs::copy(&planted, dir.path().join("mine")).unwrap();
    let out = rtgauge(&["run", "--scenario", "mine", "--loops", "5"]).current_dir(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--scenario ./mine") && err.trim_end().lines().count() == 1, "{err}");
    // Written as a path, but writable by every user, or another user's: no command runs.
    for (mode, owner, why) in [(0o666, 0, "lets every user write it"), (0o644, 65534, "belongs to user 65534")] {
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(mode)).unwrap();
        std::os::unix::fs::chown(&planted, Some(owner), None).unwrap();
        let mut args = vec!["run", "-q", "--scenario", "./am3356"];
        args.extend(&short[..6]);
        let out = rtgauge(&args).current_dir(dir.path()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("runs commands") && err.contains(why), "{err}");
    }
    assert!(!marker.exists(), "the planted file's command never ran");
}
