//! Loads: every generator does work that can be measured (CPU time, page faults, context
//! switches from getrusage, bytes written), phases start and stop at their offsets, a failing
//! load is recorded while the measurement goes on, bad specifications start nothing, and no
//! process or temporary file outlives rtgauge however it ends (normal end, SIGINT, SIGTERM,
//! SIGKILL).

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

fn load_json(m: &Marker, args: &[&str]) -> (i32, Value, String) {
    let mut all = vec!["load", "--json", "-"];
    all.extend_from_slice(args);
    let out = m.cmd(&all).output().unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), doc, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// How a load's runs ended, as counts by kind.
fn endings(l: &Value) -> Value {
    l["endings"]["counts"].clone()
}

fn record<'a>(doc: &'a Value, kind: &str) -> &'a Value {
    doc["loads"].as_array().unwrap().iter().find(|l| l["generator"]["kind"] == kind).unwrap_or_else(|| panic!("no {kind} load"))
}

#[test]
fn every_generator_does_measurable_work() {
    let m = Marker::new();
    let duration = load_time(1500);
    let (code, doc, _) = load_json(
        &m,
        &["cpu:workers=1,vm:workers=1,bytes=8M,io:size=4M,block=64K,fork,proc,net,timers:count=4", "--duration", &duration],
    );
    assert_eq!(code, 0);
    for l in doc["loads"].as_array().unwrap() {
        assert_eq!(l["runs"], 1, "{l}");
        assert_eq!(endings(l), serde_json::json!({"stopped": 1}), "{l}");
        assert_eq!(l["failed"], false, "{l}");
        assert!(u(&l["usage"]["user_ns"]) + u(&l["usage"]["system_ns"]) > 0, "CPU time used: {l}");
    }
    let cpu = record(&doc, "cpu");
    assert!(u(&cpu["counters"]["rounds"]) > 0);
    assert!(u(&cpu["usage"]["user_ns"]) > u(&cpu["usage"]["system_ns"]), "cpu works in user space: {cpu}");
    let vm = record(&doc, "vm");
    let pages = u(&vm["counters"]["pages_touched"]);
    assert!(pages >= 2048, "at least one 8 MiB round: {vm}");
    assert!(u(&vm["usage"]["minor_faults"]) >= pages, "every touched page is a fresh page fault: {vm}");
    let io = record(&doc, "io");
    assert!(u(&io["counters"]["bytes_written"]) >= 4 << 20, "a whole 4 MiB file written: {io}");
    assert!(u(&io["counters"]["bytes_read"]) > 0);
    let fork = record(&doc, "fork");
    assert!(u(&fork["counters"]["forks"]) > 0);
    assert!(u(&fork["usage"]["voluntary_switches"]) > 0, "waiting for children switches: {fork}");
    assert!(u(&record(&doc, "proc")["counters"]["files_read"]) > 0);
    let net = record(&doc, "net");
    assert!(u(&net["counters"]["datagrams_sent"]) > 0 && u(&net["counters"]["datagrams_received"]) > 0, "{net}");
    let timers = record(&doc, "timers");
    let wakeups = u(&timers["counters"]["wakeups"]);
    assert!(wakeups > 0);
    assert!(u(&timers["usage"]["voluntary_switches"]) >= wakeups * 9 / 10, "every sleep is a voluntary switch: {timers}");
    m.assert_clean("a normal end");
}

#[test]
fn hackbench_passes_its_messages_and_reports_its_time() {
    let m = Marker::new();
    for (spec, mode) in
        [("hackbench:groups=2,loops=20", "process mode"), ("hackbench:groups=2,loops=20,threads,pipe", "threaded mode")]
    {
        let out = m.cmd(&["load", spec]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("Running in {mode} with 2 groups using 40 file descriptors each (== 80 tasks)")),
            "{text}"
        );
        assert!(text.contains("Each sender will pass 20 messages of 100 bytes"));
        assert!(text.lines().any(|l| l.starts_with("Time: ")), "{text}");
    }
    let (_, doc, _) = load_json(&m, &["hackbench:groups=2,loops=20"]);
    let h = record(&doc, "hackbench");
    assert_eq!(h["counters"]["rounds"], 1);
    assert_eq!(u(&h["counters"]["messages"]), 2 * 20 * 20 * 20, "every sender to every receiver of its group");
    assert_eq!(h["round_times_s"].as_array().unwrap().len(), 1);
    assert!(u(&h["usage"]["voluntary_switches"]) > 80, "the tasks block on each other: {h}");
    m.assert_clean("hackbench");
}

#[test]
fn commands_restart_unless_once_and_failures_are_recorded() {
    let m = Marker::new();
    let (code, doc, _) = load_json(&m, &["cmd:true", "--duration", "1s"]);
    assert_eq!(code, 0);
    let l = &doc["loads"][0];
    assert!(u(&l["runs"]) > 1, "restarted when it exited early: {l}");
    assert_eq!(l["failed"], false);
    let (code, doc, _) = load_json(&m, &["cmd-once:true"]);
    assert_eq!(
        (code, &doc["loads"][0]["runs"], endings(&doc["loads"][0])),
        (0, &Value::from(1), serde_json::json!({"exited 0": 1}))
    );
    let (code, doc, _) = load_json(&m, &["cmd-once:false"]);
    assert_eq!(code, 1, "a failed load fails 'rtgauge load'");
    assert_eq!(doc["loads"][0]["failed"], true);
    m.assert_clean("commands");
}

#[test]
fn a_failing_load_is_recorded_and_the_measurement_goes_on() {
    let m = Marker::new();
    let out = m
        .cmd(&[
            "run",
            "-q",
            "--json",
            "-",
            "-D",
            "1s",
            "--warmup",
            "0",
            "--cpus",
            "0",
            "--load",
            "cpu:workers=1",
            "--load",
            "cmd-once:false",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "complete");
    let p = &doc["probes"][0];
    assert_eq!(u(&p["samples"]) + u(&p["missed"]), 1000);
    let failed = &doc["loads"][1];
    assert_eq!((failed["failed"].as_bool(), failed["endings"]["first"][0].as_str()), (Some(true), Some("exited 1")));
    assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("cmd-once:false")));
    assert_eq!(doc["loads"][0]["failed"], false);
    m.assert_clean("a failed load");
}

/// What rtgauge recorded, not a wall-clock window: a phased load is never started before its
/// offset nor stopped before its end, and the phases are cut exactly at the planned offsets.
/// (A busy machine may start a load late; CI once saw 800 ms.)
#[test]
fn phases_start_and_stop_at_their_offsets() {
    let m = Marker::new();
    let out = m
        .cmd(&[
            "run",
            "-q",
            "--json",
            "-",
            "-D",
            "2s",
            "--warmup",
            "0",
            "--cpus",
            "0",
            "--load",
            "cmd:sleep 1000@500ms..1500ms",
            "--load",
            "cpu:workers=1@1s..",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let not_before = |v: &Value, at: i64| {
        let t = v.as_i64().unwrap();
        assert!(t >= at, "at {t} ns, before its planned {at} ns");
    };
    let sleep = &doc["loads"][0];
    assert_eq!((sleep["planned_start_ns"].as_u64(), sleep["planned_end_ns"].as_u64()), (Some(500_000_000), Some(1_500_000_000)));
    not_before(&sleep["started_ns"], 500_000_000);
    not_before(&sleep["stopped_ns"], 1_500_000_000);
    assert!(sleep["started_ns"].as_i64() < sleep["stopped_ns"].as_i64());
    assert_eq!(endings(sleep), serde_json::json!({"stopped": 1}));
    let cpu = &doc["loads"][1];
    not_before(&cpu["started_ns"], 1_000_000_000);
    not_before(&cpu["stopped_ns"], 2_000_000_000);
    let cuts: Vec<(u64, u64)> = doc["phases"].as_array().unwrap().iter().map(|p| (u(&p["start_ns"]), u(&p["end_ns"]))).collect();
    assert_eq!(
        cuts,
        vec![(0, 500_000_000), (500_000_000, 1_000_000_000), (1_000_000_000, 1_500_000_000), (1_500_000_000, 2_000_000_000)]
    );
    m.assert_clean("phases");
}

#[test]
fn default_is_the_worst_case_mix_and_none_is_idle() {
    let (_, doc, _) = run_json(&["-D", "500ms", "--warmup", "0", "--cpus", "0"]);
    assert_eq!(doc["config"]["load_source"], "default");
    let loads = doc["loads"].as_array().unwrap();
    assert!(loads.len() >= 4, "a mix: {:?}", doc["config"]["loads"]);
    assert!(loads.iter().all(|l| l["failed"] == false && u(&l["runs"]) == 1));
    let kinds: Vec<&str> = loads.iter().map(|l| l["generator"]["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"hackbench"), "{kinds:?}");
    let (_, doc, _) = run_json(&["-D", "200ms", "--warmup", "0", "--cpus", "0", "--load", "none"]);
    assert_eq!(doc["config"]["load_source"], "none");
    assert!(doc["loads"].as_array().unwrap().is_empty());
}

#[test]
fn loads_run_on_the_load_cpus() {
    let cpus = online_cpus();
    let last = cpus.last().unwrap().to_string();
    let m = Marker::new();
    let mut child = m
        .cmd(&["run", "-q", "-D", "2s", "--warmup", "0", "--load", "cmd:sleep 1000", "--load-cpus", &last, "--json", "-"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let is_sleeper = |p: &String| p.split_once(": ").unwrap().1.starts_with("sleep 1000");
    m.wait_for("the load runs", |m| m.processes().iter().any(is_sleeper));
    let sleeper = m.processes().into_iter().find(is_sleeper).expect("the load runs");
    let pid = sleeper.split(':').next().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let allowed = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
    assert_eq!(allowed, last);
    let out = child.wait_with_output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["config"]["load_cpus"], serde_json::json!([cpus.last().unwrap()]));
    child = m.cmd(&["--version"]).spawn().unwrap();
    let _ = child.wait();
    m.assert_clean("load cpus");
}

fn signal_run(m: &Marker, how: &str) {
    let mut child = m
        .cmd(&[
            "run",
            "-q",
            "-D",
            "60s",
            "--json",
            "-",
            "--load",
            "hackbench:groups=1",
            "--load",
            "io:size=4M",
            "--load",
            "cmd:sleep 1000",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // rtgauge, its guardian and the three loads; the io load's temporary directory.
    // (hackbench's own processes alone outnumber these: the last load, the command, must be seen)
    let sleeper = |p: &String| p.split_once(": ").is_some_and(|(_, c)| c.starts_with("sleep 1000"));
    m.wait_for("loads running", |m| m.started().len() >= 5 && m.started().iter().any(sleeper) && !m.files().is_empty());
    if how == "KILL" {
        child.kill().unwrap();
        child.wait().unwrap();
    } else {
        Command::new("kill").args(["-s", how, &child.id().to_string()]).status().unwrap();
        let out = child.wait_with_output().unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["status"], "partial");
        assert!(
            doc["loads"].as_array().unwrap().iter().all(|l| endings(l) == serde_json::json!({"stopped": 1})),
            "{}",
            doc["loads"]
        );
    }
    m.assert_clean(&format!("SIG{how}"));
}

#[test]
fn nothing_outlives_sigint() {
    signal_run(&Marker::new(), "INT");
}

#[test]
fn nothing_outlives_sigterm() {
    signal_run(&Marker::new(), "TERM");
}

#[test]
fn nothing_outlives_sigkill() {
    signal_run(&Marker::new(), "KILL");
}

#[test]
fn bad_specs_start_nothing() {
    let m = Marker::new();
    for (spec, words) in [
        ("frobnicate", "unknown generator"),
        ("vm:bytes=-1M", "negative"),
        ("cpu:colour=red", "not an option"),
        ("hackbench@90s..30s", "ends"),
        ("cmd:/nonexistent/program --flag", "not found"),
        ("cpu@70s..", "starts at 70 s"),
        ("none,cpu", "none"),
    ] {
        let out = m.cmd(&["run", "-D", "5s", "--load", spec]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{spec}: {err}");
        assert!(err.contains(words), "{spec}: {err}");
        assert!(out.stdout.is_empty());
    }
    let out = m.cmd(&["load", "cpu"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a load that runs until stopped needs --duration");
    // Memory that can never be mapped is a failed load, not an idle one.
    let (code, doc, _) = load_json(&m, &["vm:bytes=900G", "--duration", &load_time(500)]);
    assert_eq!((code, &doc["loads"][0]["failed"]), (1, &Value::from(true)));
    assert!(doc["loads"][0]["error"].as_str().unwrap().contains("cannot map"));
    assert!(m.processes().is_empty() && m.files().is_empty(), "nothing started");
}

#[test]
fn tmp_files_live_in_the_chosen_tmpdir() {
    // Sanity of the marker itself: the io load's directory appears under TMPDIR while it runs.
    let m = Marker::new();
    let mut child = m.cmd(&["load", "io:size=1M", "--duration", "3s"]).stdout(Stdio::null()).spawn().unwrap();
    m.wait_for("the io load's directory", |m| m.files().iter().any(|f| f.starts_with("rtgauge-io-")));
    let files = m.files();
    assert!(files.iter().any(|f| f.starts_with("rtgauge-io-")), "{files:?}");
    assert!(Path::new(&m.0.path().join(&files[0])).is_dir());
    child.wait().unwrap();
    m.assert_clean("io");
}

#[test]
fn a_net_load_that_cannot_send_fails_with_the_reason() {
    // A fresh network namespace has its loopback interface down: nothing can be sent.
    let m = Marker::new();
    let mut all = vec!["-n".to_string()];
    all.extend(bin_argv());
    all.extend(["load", "net", "--duration", &load_time(1000), "--json", "-"].map(String::from));
    let out = Command::new("unshare").args(&all).env("TMPDIR", m.0.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a failed load fails 'rtgauge load': {}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let l = &doc["loads"][0];
    assert_eq!(l["failed"], true);
    assert!(l["error"].as_str().unwrap().contains("cannot send"), "{l}");
    m.assert_clean("a failed net load");
}

#[test]
fn loads_run_at_their_policy_and_nice() {
    let m = Marker::new();
    let mut child = m
        .cmd(&["load", "timers:count=1,policy=fifo:7", "proc:nice=5", "--duration", "3s"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    m.wait_for("both workers", |m| m.started().iter().filter(|p| p.contains("__worker")).count() == 2);
    // /proc/PID/stat: field 19 is nice, 40 rt_priority, 41 policy (after the command name).
    let fields = |pid: &str| -> Vec<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        std::iter::once(String::new())
            .chain(std::iter::once(String::new()))
            .chain(after.split_whitespace().map(String::from))
            .collect()
    };
    let workers: Vec<String> =
        m.started().into_iter().filter(|p| p.contains("__worker")).map(|p| p.split(':').next().unwrap().to_string()).collect();
    assert_eq!(workers.len(), 2, "{:?}", m.started());
    let mut seen: Vec<(String, String, String)> = workers
        .iter()
        .map(|w| {
            let f = fields(w);
            (f[18].clone(), f[39].clone(), f[40].clone())
        })
        .collect();
    seen.sort();
    // (nice, rt_priority, policy): SCHED_FIFO is 1, SCHED_OTHER 0.
    assert_eq!(
        seen,
        vec![("0".to_string(), "7".to_string(), "1".to_string()), ("5".to_string(), "0".to_string(), "0".to_string())]
    );
    child.wait().unwrap();
    m.assert_clean("policies");
}

#[test]
fn a_refused_measurement_stops_the_loads_it_started() {
    // Loads start before the probes; when RT priority is then refused (as 'nobody'), rtgauge
    // exits 2 and takes its loads and their guardian with it.
    let m = Marker::new();
    let mut all: Vec<String> = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"].map(String::from).to_vec();
    all.extend(bin_argv());
    all.extend(["run", "-D", "5s", "--cpus", "0", "--load", "cmd:sleep 1000", "--load", "timers:count=2"].map(String::from));
    let out = Command::new("setpriv").args(&all).env("TMPDIR", m.0.path()).env_remove("RTGAUGE_DB").output().unwrap();
    if out.status.code() == Some(0) {
        common::skip(common::Skip::Here, "'nobody' may use RT priorities here");
        return;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("SCHED_FIFO 80") && err.trim_end().lines().count() == 1, "{err}");
    m.assert_clean("a refused measurement");
}
