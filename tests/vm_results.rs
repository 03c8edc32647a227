//! Checks what rtgauge reported inside the qemu test guests (tests/vm/run.sh boots them and
//! calls this with RTGAUGE_VM_RESULTS=dir[:dir...]; it is ignored in a plain `cargo test`).
//! For every guest: each command of its commands.txt ran and exited as expected; every result
//! document validates against docs/result-schema.json, reports the guest kernel's preemption
//! model (PREEMPT_RT on the RT kernels, not on the others) and, when complete, accounts for
//! every planned period; an interrupted run is partial; an injected stall shows up.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

fn key_values(path: &Path) -> BTreeMap<String, String> {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// The measured periods a complete run planned for probe entry `p`: its probe's periods after
/// the warm-up (each probe at its own interval).
fn planned_periods(doc: &Value, p: &Value) -> u64 {
    let c = doc["config"]["probes"].as_array().unwrap().iter().find(|c| c["name"] == p["probe"]).expect("configured");
    u(&c["periods"]) - u(&c["warmup_periods"])
}

/// The wake-up probe's ground truth on each CPU: the chain's task and chain hold the same
/// events, the chain misses at least what the handler missed, and the task took events; a
/// ping-pong's sender answered exactly the events its receiver served (`ping` and `pong` hold the
/// same counts), and there were some.
fn check_wakeup(doc: &Value, what: &str) -> Vec<String> {
    let probes = doc["probes"].as_array().unwrap();
    let of = |series: &str, cpu: &Value| probes.iter().find(|p| p["series"] == series && p["cpu"] == *cpu);
    let counts = |p: &Value| (u(&p["samples"]), u(&p["missed"]));
    let mut problems = Vec::new();
    for pong in probes.iter().filter(|p| p["series"] == "pong") {
        match of("ping", &pong["cpu"]) {
            Some(ping) if counts(ping) == counts(pong) && u(&pong["samples"]) > 0 => {}
            ping => problems.push(format!(
                "{what}: cpu{}: pong {:?}, ping {:?} (samples, missed)",
                pong["cpu"],
                counts(pong),
                ping.map(counts)
            )),
        }
    }
    for chain in probes.iter().filter(|p| p["series"] == "chain") {
        let (Some(task), Some(handler)) = (of("task", &chain["cpu"]), of("handler", &chain["cpu"])) else {
            problems.push(format!("{what}: cpu{} lacks the task or handler series", chain["cpu"]));
            continue;
        };
        if counts(task) != counts(chain) || u(&chain["missed"]) < u(&handler["missed"]) || u(&chain["samples"]) == 0 {
            problems.push(format!(
                "{what}: cpu{}: chain {:?}, task {:?}, handler {:?} (samples, missed)",
                chain["cpu"],
                counts(chain),
                counts(task),
                counts(handler)
            ));
        }
    }
    problems
}

fn check_guest(dir: &Path, validator: &jsonschema::Validator) -> Vec<String> {
    let mut problems = Vec::new();
    let host = key_values(&dir.join("host-info"));
    let guest = key_values(&dir.join("guest-info"));
    let rt_kernel = host["flavor"] == "rt";
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    println!("{name}: {} {} ({}), realtime={}", guest["arch"], guest["release"], guest["version"], guest["realtime"]);
    if (guest["realtime"] == "1") != rt_kernel {
        problems.push(format!("{name}: /sys/kernel/realtime is {} on a '{}' kernel", guest["realtime"], host["flavor"]));
    }

    let commands = fs::read_to_string(dir.join("commands.txt")).unwrap();
    let ran: BTreeMap<String, i32> = fs::read_to_string(dir.join("exit-codes"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(n, c)| (n.to_string(), c.trim().parse().unwrap())))
        .collect();
    for line in commands.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let mut parts = line.split_whitespace();
        let (cmd, expect): (&str, i32) = (parts.next().unwrap(), parts.next().unwrap().parse().unwrap());
        let stderr = fs::read_to_string(dir.join(format!("{cmd}.stderr"))).unwrap_or_default();
        match ran.get(cmd) {
            None => problems.push(format!("{name}: command '{cmd}' did not run")),
            Some(&rc) if rc != expect => {
                problems.push(format!("{name}: '{cmd}' exited {rc}, expected {expect}; stderr: {}", stderr.trim()))
            }
            Some(_) => println!("  {cmd}: exit {expect} as expected"),
        }
        if expect == 2 && stderr.trim_end().lines().count() != 1 {
            problems.push(format!("{name}: '{cmd}' should give a one-line error, gave: {stderr:?}"));
        }
    }

    let mut documents = 0;
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        documents += 1;
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let doc: Value = match fs::read_to_string(&path).map(|t| serde_json::from_str(&t)) {
            Ok(Ok(d)) => d,
            other => {
                problems.push(format!("{name}/{file}: not a JSON document: {other:?}"));
                continue;
            }
        };
        for e in validator.iter_errors(&doc) {
            problems.push(format!("{name}/{file}: schema: {e} at {}", e.instance_path));
        }
        let pre = &doc["system"]["preemption"];
        if pre["realtime"] != rt_kernel || (pre["model"] == "PREEMPT_RT") != rt_kernel {
            problems.push(format!("{name}/{file}: preemption {pre} on a '{}' kernel", host["flavor"]));
        }
        if doc["system"]["kernel_release"] != guest["release"].as_str() {
            problems.push(format!(
                "{name}/{file}: kernel_release {} but the guest runs {}",
                doc["system"]["kernel_release"], guest["release"]
            ));
        }
        for l in doc["loads"].as_array().unwrap() {
            if l["failed"] == true && file != "cmd-false.json" {
                problems.push(format!("{name}/{file}: load {} failed: {}", l["spec"], l["error"]));
            }
        }
        if file.starts_with("wakeup") {
            problems.extend(check_wakeup(&doc, &format!("{name}/{file}")));
        }
        for p in doc["probes"].as_array().unwrap() {
            check_probe_invariants(p);
            if p["probe"] == "event" {
                continue; // events, not periods: checked against what was sent (below)
            }
            if let Some(steps) = p["sweep"]["steps"].as_array() {
                // A rate sweep (every rate run): each step's events and missed are what it planned.
                for st in steps.iter().filter(|_| doc["status"] == "complete") {
                    if u(&st["events"]) + u(&st["missed"]) != u(&st["planned"]) {
                        problems.push(format!("{name}/{file}: {} cpu{}: sweep step {st}", p["series"], p["cpu"]));
                    }
                }
                continue;
            }
            if p.get("noise").is_some() {
                // Gaps are events, not periods: a busy loop that ran misses no window.
                if doc["status"] == "complete" && u(&p["missed"]) != 0 {
                    problems.push(format!("{name}/{file}: noise cpu{} missed {} windows", p["cpu"], p["missed"]));
                }
                continue;
            }
            let planned = planned_periods(&doc, p);
            let periods = u(&p["samples"]) + u(&p["missed"]);
            if doc["status"] == "complete" && periods != planned {
                problems.push(format!("{name}/{file}: cpu{} measured {periods} periods, planned {planned}", p["cpu"]));
            }
        }
        println!("  {file}: {} , {} probe(s), valid", doc["status"], doc["probes"].as_array().unwrap().len());
    }
    if documents == 0 {
        problems.push(format!("{name}: no result document came back"));
    }

    // Command-specific ground truth.
    if let Ok(t) = fs::read_to_string(dir.join("sigint-partial.json")) {
        let doc: Value = serde_json::from_str(&t).unwrap();
        if doc["status"] != "partial" || doc["interrupted_by"] != "SIGINT" {
            problems.push(format!("{name}: SIGINT run is {} / {}", doc["status"], doc["interrupted_by"]));
        }
    }
    if let Ok(t) = fs::read_to_string(dir.join("run-loads.json")) {
        let doc: Value = serde_json::from_str(&t).unwrap();
        for l in doc["loads"].as_array().unwrap() {
            let work: u64 = l["counters"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
            if work == 0 || l["runs"] != 1 {
                problems.push(format!("{name}: load {} did no work or did not run once: {l}", l["spec"]));
            }
        }
    }
    if let Ok(t) = fs::read_to_string(dir.join("load-hackbench.load")) {
        let doc: Value = serde_json::from_str(&t).unwrap();
        if u(&doc["loads"][0]["counters"]["messages"]) != 2 * 20 * 20 * 20 {
            problems.push(format!("{name}: hackbench passed {} messages", doc["loads"][0]["counters"]["messages"]));
        }
    }
    problems.extend(check_audit_and_tuning(dir, &name, rt_kernel));
    if let Ok(t) = fs::read_to_string(dir.join("run-phases.json")) {
        // Cut on period deadlines: 1000 periods per phase and CPU, exactly.
        let doc: Value = serde_json::from_str(&t).unwrap();
        let phases = doc["phases"].as_array().unwrap();
        for (i, p) in doc["probes"].as_array().unwrap().iter().enumerate() {
            let per: Vec<u64> = phases.iter().map(|ph| u(&ph["probes"][i]["samples"]) + u(&ph["probes"][i]["missed"])).collect();
            if per != [1000, 1000, 1000] {
                problems.push(format!("{name}: cpu{} phases hold {per:?} periods, not 1000 each", p["cpu"]));
            }
        }
    }
    if let Ok(t) = fs::read_to_string(dir.join("escape-end.json")) {
        let doc: Value = serde_json::from_str(&t).unwrap();
        if doc["containment"]["kind"] != "cgroup-v2" {
            problems.push(format!("{name}: loads not in a cgroup of their own: {}", doc["containment"]));
        }
    }
    if let Ok(t) = fs::read_to_string(dir.join("cmd-false.json")) {
        let doc: Value = serde_json::from_str(&t).unwrap();
        if doc["loads"][0]["failed"] != true || u(&doc["loads"][0]["runs"]) > 10 {
            problems.push(format!("{name}: cmd:false not flagged or not backed off: {}", doc["loads"][0]));
        }
    }
    problems.extend(check_events(dir, &name, Some(guest["arch"].as_str())));
    if let (Ok(run), Ok(stall)) =
        (fs::read_to_string(dir.join("stall-run.json")), fs::read_to_string(dir.join("stall-run.stall")))
    {
        let doc: Value = serde_json::from_str(&run).unwrap();
        let stall: Value = serde_json::from_str(&stall).unwrap();
        let interval = u(&doc["config"]["interval_ns"]);
        let cpu1 = doc["probes"].as_array().unwrap().iter().find(|p| p["cpu"] == 1).unwrap();
        let offset = u(&stall["start_ns"]) as i64 - u(&doc["monotonic_start_ns"]) as i64;
        let end = (u(&doc["measured_ns"]) + u(&doc["config"]["warmup"]["periods"]) * interval) as i64;
        if !(0..end).contains(&offset) {
            problems.push(format!("{name}: the stall began {offset} ns after the run's start, outside its {end} ns"));
        } else if u(&cpu1["max_ns"]) + interval < u(&stall["duration_ns"]) {
            problems.push(format!("{name}: a {} ns stall on cpu1 but its max is {}", stall["duration_ns"], cpu1["max_ns"]));
        }
    }
    problems.extend(check_timerlat(dir, &name));
    problems
}

/// The timerlat probe in an RT guest (`timerlat-stall`): both series on the measured CPU, the
/// same periods in each (the kernel's count pairs them), and the stall injected above the
/// kernel's timerlat thread shown in `thread` (at least its length, less a period) and not in
/// `irq` (the timer's interrupt still came; only the thread waited).
fn check_timerlat(dir: &Path, name: &str) -> Vec<String> {
    let (Ok(run), Ok(stall)) =
        (fs::read_to_string(dir.join("timerlat-stall.json")), fs::read_to_string(dir.join("timerlat-stall.stall")))
    else {
        return Vec::new();
    };
    let doc: Value = serde_json::from_str(&run).unwrap();
    let stall: Value = serde_json::from_str(&stall).unwrap();
    let probes = doc["probes"].as_array().unwrap();
    let of = |series: &str| probes.iter().find(|p| p["probe"] == "timerlat" && p["series"] == series && p["cpu"] == 1);
    let (Some(thread), Some(irq)) = (of("thread"), of("irq")) else {
        return vec![format!("{name}: timerlat-stall.json lacks cpu1's thread or irq series")];
    };
    let mut problems = Vec::new();
    let planned = planned_periods(&doc, thread);
    for p in [thread, irq] {
        if u(&p["samples"]) == 0 || u(&p["samples"]) + u(&p["missed"]) != planned {
            problems.push(format!(
                "{name}: timerlat {}: {} samples, {} missed of {planned} periods",
                p["series"], p["samples"], p["missed"]
            ));
        }
    }
    let interval = u(&doc["config"]["interval_ns"]);
    let stalled = u(&stall["duration_ns"]);
    if u(&thread["max_ns"]) + interval < stalled || u(&irq["max_ns"]) >= u(&thread["max_ns"]) {
        problems.push(format!(
            "{name}: a {stalled} ns stall above timerlat's thread on cpu1, but its thread's max is {} and its irq's {}",
            thread["max_ns"], irq["max_ns"]
        ));
    }
    problems
}

/// The event probe against what was sent: every UIO interrupt the guest raised on qemu's edu
/// device (`uio-edu.sent`), and on arm64 every GPIO edge the host sent through QMP
/// (`edges-sent`, one `sent N` line per request), counted once, none missed.
/// `rtgauge check` tells an RT kernel from a standard one and proves PI mutexes; `--tune` made
/// its shield (cgroup v2 in the guests) and put everything back; `rtgauge restore` after a
/// SIGKILL of rtgauge and its guardian said what it restored.
fn check_audit_and_tuning(dir: &Path, name: &str, rt_kernel: bool) -> Vec<String> {
    let mut problems = Vec::new();
    match fs::read_to_string(dir.join("check.check")).map(|t| serde_json::from_str::<Value>(&t)) {
        Ok(Ok(doc)) => {
            let f = |id: &str| {
                doc["findings"].as_array().and_then(|a| a.iter().find(|f| f["id"] == id)).cloned().unwrap_or(Value::Null)
            };
            if (f("preemption")["severity"] == "ok") != rt_kernel {
                problems.push(format!(
                    "{name}: check's preemption finding {} on a kernel with realtime={rt_kernel}",
                    f("preemption")
                ));
            }
            if f("pi_mutex")["value"]["boosted"] != true {
                problems.push(format!("{name}: the PI mutex was not seen boosting: {}", f("pi_mutex")));
            }
            if f("virtualization")["value"]["virtual"] != true {
                problems.push(format!("{name}: check did not see the virtual machine: {}", f("virtualization")));
            }
        }
        other => problems.push(format!("{name}: no check document: {other:?}")),
    }
    match fs::read_to_string(dir.join("tune-run.json")).map(|t| serde_json::from_str::<Value>(&t)) {
        Ok(Ok(doc)) => {
            for t in doc["tuning"].as_array().into_iter().flatten() {
                let setting = t["setting"].as_str().unwrap_or("");
                let must =
                    setting.starts_with("/proc/sys") || setting.starts_with("cpuset shield") || setting.starts_with("interrupt");
                if must && (t["applied"] != true || t["restored"] != true) {
                    problems.push(format!("{name}: --tune did not apply and restore {setting}: {t}"));
                }
            }
        }
        other => problems.push(format!("{name}: no tune-run.json: {other:?}")),
    }
    problems.extend(check_trace(dir, name));
    let restore = fs::read_to_string(dir.join("tune-kill.restore")).unwrap_or_default();
    if !restore.contains("ended without restoring") || !restore.contains("sched_rt_runtime_us") {
        problems.push(format!("{name}: rtgauge restore after SIGKILL said: {restore:?}"));
    }
    problems
}

/// `--trace` named the injected stall's thread as the cause of its CPU's worst case, running at
/// least the stall's busy time and at most from the stall's start to the window's end (the
/// thread still holds the CPU after its busy loop while it prints its report and exits, which a
/// loaded emulator makes take tens of milliseconds: the latency ends only then), with 10 % of
/// the stall's time to spare for what it did before its start.
fn check_trace(dir: &Path, name: &str) -> Vec<String> {
    let doc = fs::read_to_string(dir.join("trace-stall.json")).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let stall = fs::read_to_string(dir.join("trace-stall.stall")).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let (Some(doc), Some(stall)) = (doc, stall) else {
        return vec![format!("{name}: no trace-stall.json or trace-stall.stall")];
    };
    let capture = doc["trace"]["captures"].as_array().and_then(|c| c.iter().find(|c| c["cpu"] == 1)).cloned();
    let Some(c) = capture else {
        return vec![format!("{name}: --trace explained nothing on CPU 1: {}", doc["trace"])];
    };
    let stalled = stall["duration_ns"].as_u64().unwrap_or(0) as f64;
    let ran = c["culprit"]["ran_ns"].as_u64().unwrap_or(0) as f64;
    let mut problems = Vec::new();
    if c["culprit"]["comm"] != "rtg-culprit" || c["culprit"]["pid"] != stall["tid"] {
        problems.push(format!("{name}: --trace named {} as the culprit, not the stall {}", c["culprit"], stall));
    }
    let held_until = (u(&doc["monotonic_start_ns"]) + u(&c["window_end_ns"])) as f64;
    let held = held_until - stall["start_ns"].as_u64().unwrap_or(0) as f64;
    if ran < stalled * 0.99 || ran > held + stalled * 0.1 {
        problems.push(format!(
            "{name}: --trace gave the culprit {ran} ns, the stall lasted {stalled} ns and held the CPU {held} ns until the window's end"
        ));
    }
    problems
}

fn check_events(dir: &Path, name: &str, arch: Option<&str>) -> Vec<String> {
    let mut problems = Vec::new();
    let event_entry = |file: &str| -> Option<Value> {
        let doc: Value = serde_json::from_str(&fs::read_to_string(dir.join(file)).ok()?).ok()?;
        doc["probes"].as_array()?.iter().find(|p| p["probe"] == "event" && !p["cpu"].is_null()).cloned()
    };
    match (event_entry("uio-edu.json"), fs::read_to_string(dir.join("uio-edu.sent"))) {
        (Some(e), Ok(sent)) => {
            let sent: u64 = sent.trim().parse().unwrap_or(0);
            let taken = u(&e["counts"]["events"]);
            if sent == 0 || taken != sent || u(&e["missed"]) + u(&e["warmup_missed"]) != 0 {
                problems.push(format!("{name}: {sent} UIO interrupts raised, {taken} taken, {} missed", e["missed"]));
            }
            if e["measures"] != "interval" || u(&e["samples"]) + u(&e["warmup_samples"]) + 1 != taken {
                problems.push(format!("{name}: UIO entry is not {} intervals: {e}", taken.saturating_sub(1)));
            }
            println!("  uio-edu: {sent} interrupts raised, {taken} taken, none missed");
        }
        _ => problems.push(format!("{name}: no UIO event result (uio-edu.json and uio-edu.sent)")),
    }
    if arch != Some("aarch64") {
        return problems;
    }
    let sent: u64 = fs::read_to_string(dir.join("edges-sent"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("sent ")?.trim().parse::<u64>().ok())
        .sum();
    match event_entry("gpio-edges.json") {
        Some(e) => {
            let taken = u(&e["samples"]) + u(&e["warmup_samples"]);
            if sent == 0 || taken != sent || u(&e["counts"]["events"]) != sent || u(&e["missed"]) != 0 {
                problems.push(format!("{name}: {sent} GPIO edges sent, {taken} taken, {} missed", e["missed"]));
            }
            println!("  gpio-edges: {sent} edges sent, {taken} taken, none missed");
        }
        None => problems.push(format!("{name}: no GPIO event result (gpio-edges.json)")),
    }
    // A second reader of a line in use is told it is busy, by whom.
    let busy = fs::read_to_string(dir.join("gpio-busy.stderr")).unwrap_or_default();
    if !busy.contains("is busy, held by 'rtgauge'") {
        problems.push(format!("{name}: a second reader of a GPIO line in use was told: {busy:?}"));
    }
    problems
}

#[test]
#[ignore = "run by tests/vm/run.sh with RTGAUGE_VM_RESULTS set"]
fn guests_report_what_their_kernels_are() {
    let dirs = std::env::var("RTGAUGE_VM_RESULTS").expect("RTGAUGE_VM_RESULTS=dir[:dir...] (set by tests/vm/run.sh)");
    let schema: Value = serde_json::from_str(include_str!("../docs/result-schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut problems = Vec::new();
    let mut guests = 0;
    for dir in dirs.split(':').filter(|d| !d.is_empty()) {
        guests += 1;
        problems.extend(check_guest(Path::new(dir), &validator));
    }
    assert!(guests > 0, "no guest results given");
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}
