//! `rtgauge check`: every finding reports what this machine really has — each compared with
//! the value the test reads itself from /proc, /sys or the kernel's configuration —, the exit
//! status follows the worst severity, bad input is one line and exit 2, and every run keeps
//! the same audit in its result.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeSet;

fn check_json(args: &[&str]) -> (i32, Value) {
    let mut all = vec!["check", "--json"];
    all.extend_from_slice(args);
    let out = rtgauge(&all).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), doc)
}

fn finding<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == id).unwrap_or_else(|| panic!("no finding '{id}'"))
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn cpu_list(text: &str) -> BTreeSet<u64> {
    let mut v = BTreeSet::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => v.extend(a.parse::<u64>().unwrap()..=b.parse::<u64>().unwrap()),
            None => {
                v.insert(part.parse().unwrap());
            }
        }
    }
    v
}

/// The kernel's configuration as `zcat` reads it (or /boot/config-RELEASE), if any.
fn kernel_config() -> Option<String> {
    let z = std::process::Command::new("zcat").arg("/proc/config.gz").output().ok().filter(|o| o.status.success());
    z.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .or_else(|| read(&format!("/boot/config-{}", read("/proc/sys/kernel/osrelease")?)))
}

#[test]
fn every_finding_reports_what_this_machine_has() {
    let (code, doc) = check_json(&[]);
    assert_eq!(doc["schema"], "rtgauge.check.v1");
    let findings = doc["findings"].as_array().unwrap();
    let bad = findings.iter().any(|f| f["severity"] == "bad");
    assert_eq!(code, if bad { 1 } else { 0 }, "exit 1 exactly when a finding is bad");

    // RT throttling, timer migration: the sysctls.
    let v = &finding(&doc, "rt_throttling")["value"];
    assert_eq!(v["sched_rt_runtime_us"].as_i64(), read("/proc/sys/kernel/sched_rt_runtime_us").and_then(|s| s.parse().ok()));
    assert_eq!(v["sched_rt_period_us"].as_i64(), read("/proc/sys/kernel/sched_rt_period_us").and_then(|s| s.parse().ok()));
    let throttled = v["sched_rt_runtime_us"].as_i64() != Some(-1);
    assert_eq!(finding(&doc, "rt_throttling")["severity"] == "warn", throttled);
    assert_eq!(
        finding(&doc, "timer_migration")["value"]["timer_migration"].as_i64(),
        read("/proc/sys/kernel/timer_migration").and_then(|s| s.parse().ok())
    );

    // The preemption model: uname -v names it.
    let uname_v = read("/proc/sys/kernel/version").unwrap();
    let p = finding(&doc, "preemption");
    let rt = uname_v.split_whitespace().any(|w| w == "PREEMPT_RT") || read("/sys/kernel/realtime").as_deref() == Some("1");
    assert_eq!(p["value"]["realtime"], rt);
    assert_eq!(p["severity"] == "ok", rt, "only PREEMPT_RT is ok: {p}");
    if uname_v.split_whitespace().any(|w| w == "PREEMPT_DYNAMIC") && !rt {
        assert_eq!(p["value"]["model"], "PREEMPT_DYNAMIC");
    }

    // HZ and the build options: the configuration itself.
    let config = kernel_config();
    let hz = config.as_ref().and_then(|c| c.lines().find_map(|l| l.strip_prefix("CONFIG_HZ=")?.parse::<u64>().ok()));
    assert_eq!(finding(&doc, "hz")["value"]["hz"].as_u64(), hz);
    let kc = &finding(&doc, "kernel_config")["value"];
    assert_eq!(kc["source"].is_null(), config.is_none());
    if let Some(c) = &config {
        let set = |o: &str| c.lines().any(|l| l == format!("CONFIG_{o}=y"));
        assert_eq!(kc["options"]["PREEMPT_RT"] == "y", set("PREEMPT_RT"));
        assert_eq!(kc["options"]["HIGH_RES_TIMERS"] == "y", set("HIGH_RES_TIMERS"));
        assert_eq!(kc["options"]["NO_HZ_FULL"] == "y", set("NO_HZ_FULL"));
        let lockdep = finding(&doc, "debug_options");
        assert_eq!(lockdep["value"]["heavy"].as_array().unwrap().iter().any(|o| o == "CONFIG_LOCKDEP"), set("LOCKDEP"));
        assert_eq!(
            lockdep["value"]["light"].as_array().unwrap().iter().any(|o| o == "CONFIG_DEBUG_PREEMPT"),
            set("DEBUG_PREEMPT")
        );
    }

    // High-resolution timers: clock_getres.
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec for the call.
    assert_eq!(unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) }, 0);
    let res = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    assert_eq!(finding(&doc, "hrtimers")["value"]["resolution_ns"].as_u64(), Some(res));
    assert_eq!(finding(&doc, "hrtimers")["severity"] == "ok", res == 1);

    // The clock source.
    let cs = "/sys/devices/system/clocksource/clocksource0";
    assert_eq!(finding(&doc, "clocksource")["value"]["current"].as_str(), read(&format!("{cs}/current_clocksource")).as_deref());

    // Swap and transparent huge pages.
    let swaps = read("/proc/swaps").unwrap_or_default().lines().skip(1).count();
    assert_eq!(finding(&doc, "swap")["value"]["areas"].as_array().unwrap().len(), swaps);
    assert_eq!(finding(&doc, "swap")["severity"] == "ok", swaps == 0);
    if let Some(t) = read("/sys/kernel/mm/transparent_hugepage/enabled") {
        let mode = t.split_whitespace().find(|w| w.starts_with('[')).unwrap().trim_matches(['[', ']']);
        assert_eq!(finding(&doc, "thp")["value"]["enabled"], mode);
        assert_eq!(finding(&doc, "thp")["severity"] == "warn", mode == "always");
    }

    // Isolation: the kernel's own lists.
    let isolated = cpu_list(&read("/sys/devices/system/cpu/isolated").unwrap_or_default());
    let listed: BTreeSet<u64> = finding(&doc, "isolcpus")["value"]["cpus"].as_array().unwrap().iter().map(u).collect();
    assert_eq!(listed, isolated);

    // SMT: a measured CPU shares its core when its siblings list holds another online CPU.
    let online: BTreeSet<u64> = online_cpus().into_iter().map(|c| c as u64).collect();
    let shared = online.iter().any(|c| {
        let sib = cpu_list(&read(&format!("/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list")).unwrap_or_default());
        sib.iter().any(|s| s != c && online.contains(s))
    });
    assert_eq!(finding(&doc, "smt")["severity"] == "warn", shared);

    // Governors: a measured CPU has one exactly when sysfs shows it.
    for g in finding(&doc, "governor")["value"]["cpus"].as_array().unwrap() {
        let file = read(&format!("/sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor", u(&g["cpu"])));
        assert_eq!(g["governor"].as_str(), file.as_deref());
    }

    // Interrupts: every numbered IRQ whose effective affinity includes a measured (here: online)
    // CPU, and no other.
    let mut expected = BTreeSet::new();
    for e in std::fs::read_dir("/proc/irq").unwrap().flatten() {
        let Ok(n) = e.file_name().to_string_lossy().parse::<u64>() else { continue };
        let in_interrupts = read("/proc/interrupts").unwrap().lines().any(|l| l.trim_start().starts_with(&format!("{n}:")));
        let eff = read(&format!("/proc/irq/{n}/effective_affinity_list")).filter(|s| !s.is_empty());
        let aff = eff.or_else(|| read(&format!("/proc/irq/{n}/smp_affinity_list"))).unwrap_or_default();
        if in_interrupts && cpu_list(&aff).iter().any(|c| online.contains(c)) {
            expected.insert(n);
        }
    }
    let listed: BTreeSet<u64> =
        finding(&doc, "irq_affinity")["value"]["irqs"].as_array().unwrap().iter().map(|i| u(&i["irq"])).collect();
    assert_eq!(listed, expected);
    assert_eq!(
        finding(&doc, "default_irq_affinity")["value"]["mask"].as_str(),
        read("/proc/irq/default_smp_affinity").as_deref()
    );

    // Threaded IRQ handlers: the kernel threads named irq/N-NAME.
    let mut irq_threads = BTreeSet::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u64>() else { continue };
        if read(&format!("/proc/{pid}/comm")).is_some_and(|c| c.starts_with("irq/")) {
            irq_threads.insert(pid);
        }
    }
    let listed: BTreeSet<u64> =
        finding(&doc, "irq_threads")["value"]["threads"].as_array().unwrap().iter().map(|t| u(&t["pid"])).collect();
    assert_eq!(listed, irq_threads);

    // tracefs: where /proc/mounts says it is.
    let mounts = read("/proc/mounts").unwrap();
    let tracefs = mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(2) == Some(&"tracefs")).then(|| f[1].to_string())
    });
    assert_eq!(finding(&doc, "tracefs")["value"]["mounted_at"].as_str(), tracefs.as_deref());

    // A hypervisor: the CPU's flag says so on x86.
    if cfg!(target_arch = "x86_64") && runner().is_none() {
        let flag = read("/proc/cpuinfo")
            .unwrap()
            .lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor"));
        assert_eq!(finding(&doc, "virtualization")["value"]["virtual"], flag);
    }

    // Rights: the tests run as root, so RT priorities and memory locking are allowed, and the
    // PI mutex is tried for real: its holder must have been boosted.
    assert_eq!(finding(&doc, "rlimit_rtprio")["value"]["uid"], 0);
    assert_eq!(finding(&doc, "rlimit_rtprio")["severity"], "ok");
    if runner().is_none() {
        assert_eq!(finding(&doc, "pi_mutex")["value"]["boosted"], true, "{}", finding(&doc, "pi_mutex"));
    }

    // Every warning and bad one says what to do; every finding says why.
    for f in findings {
        assert!(!f["why"].as_str().unwrap().is_empty() && !f["observed"].as_str().unwrap().is_empty(), "{f}");
        if f["severity"] == "warn" || f["severity"] == "bad" {
            assert!(f["fix"].is_string() || f["persistent"].is_string(), "no fix: {f}");
        }
    }
}

/// The terminal table lists every finding once, with the same severities and tally as the JSON.
#[test]
fn the_table_says_what_the_json_says() {
    let (code, doc) = check_json(&["--cpus", "0"]);
    let out = rtgauge(&["check", "--cpus", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(code));
    let text = String::from_utf8(out.stdout).unwrap();
    for f in doc["findings"].as_array().unwrap() {
        let id = f["id"].as_str().unwrap();
        let row =
            text.lines().find(|l| l.split_whitespace().nth(1) == Some(id)).unwrap_or_else(|| panic!("no row for {id}:\n{text}"));
        let sev = f["severity"].as_str().unwrap();
        assert!(row.to_lowercase().starts_with(sev), "{row} vs {sev}");
    }
    let n = |s: &str| doc["findings"].as_array().unwrap().iter().filter(|f| f["severity"] == s).count();
    let tally = format!("{} bad, {} warn, {} info, {} ok.", n("bad"), n("warn"), n("info"), n("ok"));
    assert!(text.trim_end().ends_with(&tally), "{text}");
    assert_eq!(doc["cpus"], serde_json::json!([0]));
}

/// Without privileges (as `nobody`): RT priorities are refused, the PI mutex's boosting is not
/// tried, and the audit still runs.
#[test]
fn without_privileges_the_audit_says_so() {
    if !nobody_can_run() {
        return;
    }
    let out = nobody(&["check", "--json"]).output().unwrap();
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let rtprio = finding(&doc, "rlimit_rtprio");
    let limit = rtprio["value"]["soft_limit"].as_u64();
    assert_eq!(rtprio["value"]["cap_sys_nice"], false);
    if limit == Some(0) {
        assert_eq!(rtprio["severity"], "bad");
        assert!(finding(&doc, "pi_mutex")["value"]["boosted"].is_null(), "not tried without RT priority");
        assert_eq!(out.status.code(), Some(1));
    }
}

#[test]
fn bad_check_input_is_one_line_and_exit_2() {
    for args in [
        &["check", "--cpus", "4096"][..],
        &["check", "--cpus", "x"],
        &["check", "-p", "0"],
        &["check", "-p", "100"],
        &["check", "--bogus"],
    ] {
        let out = rtgauge(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

/// A run keeps the same audit: the same checks, for the CPUs it measured.
#[test]
fn every_run_keeps_the_audit() {
    let (_, doc, _) = run_json(&["--loops", "20", "--warmup", "0", "--cpus", "0", "--load", "none"]);
    let (_, check) = check_json(&["--cpus", "0"]);
    let ids =
        |d: &Value| d["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(ids(&doc), ids(&check));
    let typed = typed(doc);
    assert!(!typed.findings.is_empty());
}

/// This test's own cgroup directory in the hierarchy that has the cpu controller: v2 when its
/// `cgroup.controllers` lists cpu, else v1's `cpu` hierarchy; with whether it is v2.
fn own_cpu_cgroup() -> Option<(std::path::PathBuf, bool)> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mount = |v2: bool| {
        mountinfo.lines().find_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let (pre, post): (Vec<&str>, Vec<&str>) = (pre.split(' ').collect(), post.split(' ').collect());
            let ok = if v2 {
                post.first() == Some(&"cgroup2")
            } else {
                post.first() == Some(&"cgroup") && post.get(2).is_some_and(|o| o.split(',').any(|x| x == "cpu"))
            };
            ok.then(|| (std::path::PathBuf::from(pre[4]), pre[3].to_string()))
        })
    };
    let own = |v2: bool| {
        cgroups.lines().find_map(|l| {
            let mut it = l.splitn(3, ':');
            let (id, ctrls, path) = (it.next()?, it.next()?, it.next()?);
            let ok = if v2 { id == "0" && ctrls.is_empty() } else { ctrls.split(',').any(|c| c == "cpu") };
            ok.then(|| path.to_string())
        })
    };
    for v2 in [true, false] {
        let (Some((dir, root)), Some(path)) = (mount(v2), own(v2)) else { continue };
        let dir = dir.join(path.strip_prefix(root.trim_end_matches('/')).unwrap_or(&path).trim_start_matches('/'));
        if v2 && !read(&format!("{}/cgroup.subtree_control", dir.display())).is_some_and(|c| c.split(' ').any(|w| w == "cpu")) {
            continue; // no cpu controller for a child of ours here
        }
        return Some((dir, v2));
    }
    None
}

/// A cgroup this test makes under its own, removed with it (once empty).
struct Cgroup(std::path::PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        for _ in 0..100 {
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// `check` run inside a cgroup with a CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`)
/// reports it, with the cgroup and the fix; it said nothing before, and the quota gave 1.5 s
/// latencies under `--policy other`.
#[test]
fn check_reports_a_cpu_quota_on_its_own_cgroup() {
    let Some((own, v2)) = own_cpu_cgroup() else {
        common::skip(common::Skip::Here, "no cpu cgroup controller this test may use");
        return;
    };
    let group = Cgroup(own.join(format!("rtgauge-test-quota-{}", std::process::id())));
    if std::fs::create_dir(&group.0).is_err() {
        common::skip(common::Skip::Missing, &format!("cannot make a cgroup under {} (needs root)", own.display()));
        return;
    }
    let (file, value, lift) = if v2 { ("cpu.max", "90000 100000", "max") } else { ("cpu.cfs_quota_us", "90000", "-1") };
    if !v2 {
        std::fs::write(group.0.join("cpu.cfs_period_us"), "100000").unwrap();
    }
    std::fs::write(group.0.join(file), value).unwrap();
    let procs = group.0.join("cgroup.procs");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("echo $$ > '{}' && exec {} check --json", procs.display(), bin_shell()))
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let f = finding(&doc, "cpu_bandwidth");
    assert_eq!(f["severity"], "warn", "{f}");
    let shown = group.0.display().to_string();
    let limit = f["value"]["limits"].as_array().unwrap().iter().find(|l| l["cgroup"] == shown.as_str()).cloned();
    let Some(limit) = limit else { panic!("the quota on {shown} is not reported: {f}") };
    assert_eq!((u(&limit["quota_us"]), u(&limit["period_us"])), (90_000, 100_000), "{f}");
    assert!(f["observed"].as_str().unwrap().contains(&shown), "{f}");
    let fix = format!("echo {lift} > {}", group.0.join(file).display());
    assert!(f["fix"].as_str().unwrap().contains(&fix), "the fix '{fix}': {f}");
}
