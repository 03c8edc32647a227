//! Bad input and missing privileges: one line naming the problem and the fix, exit status 2,
//! no panic, nothing measured, nothing left behind.

mod common;
use common::*;
use std::process::Output;

fn assert_usage_error(out: &Output, mentions: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit 2 for {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with("rtgauge: error: "), "{err}");
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{err}");
    for m in mentions {
        assert!(err.contains(m), "{err:?} should mention {m:?}");
    }
    assert!(out.stdout.is_empty(), "nothing measured: {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn bad_values_are_one_line_errors_with_a_fix() {
    // A device path that is no GPIO chip and no UIO device: a file of the test's own.
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("not-a-device");
    std::fs::write(&plain, "").unwrap();
    let plain = plain.to_str().unwrap();
    let (gpio, uio) = (format!("event:gpio={plain}:3@0"), format!("event:uio={plain}@0"));
    let (not_chip, not_uio) = (format!("{plain} is not a GPIO chip"), format!("{plain} is not a UIO device"));
    let cases: &[(&[&str], &[&str])] = &[
        (&["--interval", "0"], &["--interval", "greater than zero", "e.g."]),
        (&["--interval", "-1ms"], &["--interval", "negative", "e.g."]),
        (&["--cpus", "99"], &["--cpus", "99", "not online", "e.g."]),
        (&["--duration", "abc"], &["--duration", "abc", "e.g."]),
        (&["--priority", "100"], &["--priority 100", "1-99"]),
        (&["--priority", "-3"], &["--priority -3", "1-99"]),
        (&["--require", "latency<5us"], &["--require", "not a metric", "e.g."]),
        (&["--require", "max<5"], &["--require", "unit"]),
        (&["--json", "/nonexistent-dir/r.json"], &["--json", "/nonexistent-dir/r.json", "writable"]),
        (&["--cycle-time", "fast"], &["--cycle-time", "e.g."]),
        (&["--budget", "120%"], &["--budget", "e.g."]),
        (&["--loops", "0"], &["--loops", "at least 1"]),
        (&["--loops", "-5"], &["--loops"]),
        (&["--policy", "deadline", "--priority", "5"], &["--priority 5", "--policy deadline", "drop --priority"]),
        (&["--dl-runtime", "100us"], &["--dl-runtime", "--policy deadline"]),
        (&["--policy", "deadline", "--dl-runtime", "5ns"], &["--dl-runtime 5ns", "1.024 µs"]),
        (&["--policy", "deadline", "--dl-runtime", "2ms"], &["runtime <= deadline <= period", "2 ms"]),
        (&["--policy", "deadline", "--dl-deadline", "3ms"], &["runtime <= deadline <= period", "3 ms"]),
        (&["--measure", "timer:wait=itimer@0-1"], &["wait=itimer", "one per process", "timer:wait=itimer@0"]),
        (&["--frobnicate"], &["--frobnicate", "--help"]),
        (&["--window", "0"], &["--window", "greater than zero", "e.g. --window 1s"]),
        (&["--window", "often"], &["--window", "often", "e.g."]),
        (&["--window", "500us"], &["--window 500 µs", "timer probe's interval (1 ms)", "--window 1 ms or more"]),
        (
            &["--duration", "24h", "--window", "10ms"],
            &["--window 10 ms", "more than 100000 windows", "--window 864.01 ms or more"],
        ),
        (&["--measure", "nosuch"], &["--measure 'nosuch'", "unknown probe", "timer"]),
        (&["--measure", "timer:speed=3"], &["--measure 'timer:speed=3'", "no option 'speed'", "interval="]),
        (&["--measure", "timer:interval=0"], &["interval=0", "e.g. interval=1ms"]),
        (&["--measure", "timer@99"], &["--measure 'timer@99'", "CPU 99", "not online"]),
        (&["--measure", "timer@0", "--measure", "timer@1"], &["same probe", "timer@0-1"]),
        (&["--require", "nosuch.max<5us"], &["--require", "'nosuch'", "probes: timer"]),
        (&["--measure", "period:below=20ms,above=12ms"], &["below=20 ms", "above=12 ms", "e.g. below=8ms,above=12ms"]),
        (&["--measure", "timer:wait=spin"], &["wait=spin", "timerfd", "posix-timer"]),
        (&["--measure", "period:warmup=many"], &["warmup=many", "e.g. warmup=1000"]),
        (&["--measure", "period:warmup=18446744073709551615"], &["warmup=", "limit"]),
        (&["--measure", "period:above=soon"], &["above=soon", "e.g. above=12ms"]),
        (&["--measure", "wakeup:via=carrier-pigeon"], &["via=carrier-pigeon", "eventfd", "pi-mutex"]),
        (&["--measure", "wakeup:priority=1"], &["priority=1", "2..99", "e.g. priority=99"]),
        (&["--measure", "wakeup:priority=100"], &["priority=100", "2..99"]),
        (&["--measure", "wakeup:cross=sideways"], &["cross=sideways", "'cross' alone"]),
        (&["--measure", "wakeup:cross@0"], &["--measure 'wakeup:cross@0'", "only one", "wakeup:cross@0-1"]),
        (&["--measure", "wakeup:cross", "--cpus", "0"], &["--measure 'wakeup:cross'", "only one", "wakeup:cross@0-1"]),
        (&["--require", "wakeup.nosuch.max<5us"], &["--require", "no series 'nosuch'", "chain, handler, task"]),
        (&["--duration", "500ms", "--measure", "wakeup:rate=sweep"], &["rate=sweep", "8 rates", "-D 1s"]),
        (&["--measure", "wakeup:rate=sweep,rates=2k/1k"], &["rates=2k/1k", "rise"]),
        (&["--measure", "wakeup:rate=sweep,rates=1k/fast"], &["rates=1k/fast", "e.g. rates=1k/10k/100k"]),
        (&["--measure", "wakeup:rate=sweep,rates=1k/2000k"], &["2000000", "1..1000000"]),
        (&["--measure", "wakeup:bound=100us"], &["bound=", "add rate=sweep"]),
        (&["--measure", "wakeup:all"], &["all", "add rate=sweep"]),
        (&["--measure", "wakeup:rate=sweep,all=yes"], &["'all' alone"]),
        (&["--measure", "wakeup:rate=sweep,interval=1ms"], &["one of interval= and rate="]),
        (&["--measure", "wakeup:rate=0"], &["rate=0", "e.g. rate=1000"]),
        (&["--measure", "wakeup:rate=sweep,bound=soon"], &["bound=soon", "e.g. bound=100us"]),
        (&["--require", "timer.task.max<5us"], &["--require", "no series 'task'"]),
        (&["--measure", "noise:threshold=0"], &["threshold=0", "e.g. threshold=1us"]),
        (&["--measure", "noise:threshold=loud"], &["threshold=loud", "1 ns..1 s"]),
        (&["--measure", "noise:rate=5"], &["no option 'rate'", "threshold="]),
        (&["--measure", "event"], &["--measure 'event'", "gpio=CHIP:LINE or uio=DEVICE"]),
        (&["--measure", "event:gpio=/dev/gpiochip0:x@0"], &["gpio=/dev/gpiochip0:x", "e.g. gpio=/dev/gpiochip0:17"]),
        (&["--measure", "event:gpio=/dev/gpiochip0:1,edge=up@0"], &["edge=up", "rising, falling or both"]),
        (&["--measure", "event:uio=/dev/uio0,ack=0:64@0"], &["ack=0:64", "BAR:OFFSET=VALUE", "e.g. ack=0:0x64=1"]),
        (&["--measure", "event:uio=/dev/uio0,edge=both@0"], &["edge= and bias= are for a GPIO line"]),
        (&["--measure", "event:gpio=/dev/gpiochip0:1", "--cpus", "0-1"], &["one device has one reader", "@1"]),
        // The device is checked before anything runs: absent, or not what it should be.
        (&["--measure", "event:gpio=/dev/gpiochip-absent:3@0"], &["no GPIO chip /dev/gpiochip-absent", "gpiodetect"]),
        (&["--measure", &gpio], &[&not_chip, "/dev/gpiochipN"]),
        (&["--measure", "event:uio=/dev/uio-absent@0"], &["no UIO device /dev/uio-absent", "/sys/class/uio"]),
        (&["--measure", &uio], &[&not_uio, "uio=/dev/uio0"]),
        (&["--require", "event.nosuch.max<5us"], &["--require", "no series 'nosuch'", "interval"]),
        // An option given twice (one of its values would go unused, unsaid).
        (
            &["--measure", "timer:interval=1ms,interval=2ms"],
            &["--measure 'timer:interval=1ms,interval=2ms'", "'interval' is given twice"],
        ),
        (&["--measure", "wakeup:cross,via=mq,cross@0-1"], &["'cross' is given twice", "once"]),
        (&["--load", "cpu:workers=1,workers=2"], &["--load 'cpu:workers=1,workers=2'", "'workers' is given twice"]),
        (&["--load", "hackbench:policy=fifo:10,policy=other"], &["'policy' is given twice", "once"]),
    ];
    for (args, mentions) in cases {
        let mut all = vec!["run", "--duration", "1s"];
        if args[0] == "--duration" || args[0] == "--loops" {
            all.truncate(1);
        }
        all.extend_from_slice(args);
        let out = rtgauge(&all).output().unwrap();
        assert_usage_error(&out, mentions);
    }
}

/// A requirement the run's probes would not be judged by was measured for the whole run and
/// then failed ("no probe of this run measures it", exit 1): a series the probe's shape does not
/// report (a ping-pong has no `task`), a probe not measured, `below` without a period loop,
/// `rate` without a sweep, an unqualified bound on a sweep. Now refused before measuring.
#[test]
fn a_requirement_nothing_in_the_run_measures_is_refused_before_measuring() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--measure", "wakeup:shape=ping-pong", "--require", "wakeup.task.p99<1ms"],
            &["--require 'wakeup.task.p99<1ms'", "reports the series pong, ping", "not 'task'"],
        ),
        (&["--measure", "wakeup", "--require", "wakeup.pong.max<1ms"], &["series chain, handler, task", "not 'pong'"]),
        (&["--measure", "wakeup", "--require", "timer.max<1ms"], &["does not measure the timer probe", "--measure timer"]),
        (&["--require", "period.below==0"], &["does not measure the period probe", "it measures timer"]),
        (&["--require", "above==0"], &["period loop", "--measure period"]),
        (&["--require", "rate>=1000"], &["wake-up sweep", "wakeup:rate=sweep"]),
        (&["--measure", "wakeup", "--require", "wakeup.rate>=1000"], &["wakeup:rate=sweep"]),
        (&["--measure", "wakeup:rate=sweep", "--require", "max<1ms"], &["names the probe", "e.g. 'wakeup.max<1000us'"]),
        (&["--scenario", "am3356", "--measure", "timer"], &["--require 'period.below==0'", "--measure period"]),
    ];
    for (args, mentions) in cases {
        // A minute each, had anything been measured.
        let mut all = vec!["run", "--duration", "60s", "--load", "none"];
        all.extend_from_slice(args);
        let out = rtgauge(&all).output().unwrap();
        assert_usage_error(&out, mentions);
    }
    // What the run measures is still judged where it applies: each series by name, an
    // unqualified bound beside a sweep by the other probe, a sweep by its probe's name.
    let cases: &[(&[&str], &str, &[&str])] = &[
        (&["--measure", "wakeup:shape=ping-pong@0"], "wakeup.ping.max<10000000us", &["wakeup.ping/cpu0"]),
        (&["--measure", "wakeup:rate=sweep,rates=1k/2k@0", "--measure", "timer@0"], "max<10000000us", &["timer/cpu0"]),
        (
            &["--measure", "wakeup:rate=sweep,rates=1k/2k@0"],
            "wakeup.samples>0",
            &["wakeup.chain/cpu0", "wakeup.handler/cpu0", "wakeup.task/cpu0"],
        ),
    ];
    for (args, require, scopes) in cases {
        let mut all = vec!["--duration", "2s", "--warmup", "0", "--load", "none", "--no-store", "--require", require];
        all.extend_from_slice(args);
        let (code, doc, out) = run_json(&all);
        assert_ne!(code, 2, "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let judged: Vec<&str> = doc["verdict"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["expr"] == *require)
            .map(|c| c["scope"].as_str().unwrap())
            .collect();
        assert_eq!(judged, *scopes, "{args:?} {require}");
    }
}

#[test]
fn unwritable_json_path_fails_before_measuring() {
    let t = std::time::Instant::now();
    let out = rtgauge(&["run", "--duration", "30s", "--json", "/proc/version"]).output().unwrap();
    assert_usage_error(&out, &["--json"]);
    assert!(t.elapsed() < std::time::Duration::from_secs(5), "nothing was measured first");
}

fn nobody_can_run_binary() -> bool {
    std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .args(bin_argv())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A probe's own set-up that the system refuses (here: no POSIX message queue may be opened,
/// RLIMIT_MSGQUEUE 0) is one line naming the mechanism and another to choose, exit 2, before
/// anything is measured.
#[test]
fn a_wakeup_mechanism_the_system_refuses_says_which_and_what_to_use() {
    let out = std::process::Command::new("prlimit")
        .arg("--msgqueue=0:0")
        .args(bin_argv())
        .args(["run", "--loops", "10", "--load", "none", "--measure", "wakeup:via=mq@0"])
        .output()
        .unwrap();
    assert_usage_error(&out, &["via=mq", "wake-up channel", "e.g. via=eventfd"]);
}

#[test]
fn without_rt_privileges_it_says_how_to_fix_it() {
    if !nobody_can_run_binary() {
        common::skip(common::Skip::Here, &format!("the user 'nobody' cannot execute {} (setpriv or permissions)", bin_shell()));
        return;
    }
    let out = std::process::Command::new("setpriv")
        .env_remove("RTGAUGE_DB") // nobody cannot reach the tests' store: the default one is only a warning
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .args(bin_argv())
        .args(["run", "--duration", "1s", "--cpus", "0"])
        .output()
        .unwrap();
    assert_usage_error(&out, &["SCHED_FIFO 80", "CAP_SYS_NICE", "--policy other"]);

    // Deliberately without RT priority: measures, and says so.
    let out = std::process::Command::new("setpriv")
        .env_remove("RTGAUGE_DB") // nobody cannot reach the tests' store: the default one is only a warning
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .args(bin_argv())
        .args(["run", "-q", "--duration", "200ms", "--warmup", "0", "--cpus", "0", "--policy", "other", "--json", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["system"]["rt_priority_obtained"], false);
    assert_eq!(u(&doc["probes"][0]["samples"]) + u(&doc["probes"][0]["missed"]), 200);
    // Without CAP_IPC_LOCK and with a finite RLIMIT_MEMLOCK, memory is not locked (locking it
    // could crash the run later), and the result says so and why.
    if doc["system"]["rlimit_memlock"].is_u64() {
        assert_eq!(doc["system"]["mlockall_obtained"], false);
        assert!(doc["system"]["mlockall_error"].as_str().unwrap().contains("RLIMIT_MEMLOCK"));
        assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("memory not locked")));
    }
}

/// A cpu cgroup (v1, RT group scheduling) with no RT runtime refuses SCHED_FIFO even to root.
#[test]
fn rt_cgroup_without_runtime_is_explained() {
    let base = std::path::Path::new("/sys/fs/cgroup/cpu");
    if !base.join("cpu.rt_runtime_us").exists() {
        common::skip(common::Skip::Here, "no cgroup v1 cpu controller with RT group scheduling here");
        return;
    }
    let group = base.join(format!("rtgauge-test-{}", std::process::id()));
    std::fs::create_dir(&group).unwrap();
    std::fs::write(group.join("cpu.rt_runtime_us"), "0").unwrap();
    let script = format!("echo $$ > {}/tasks && exec {} run --duration 1s --cpus 0", group.display(), bin_shell());
    let out = std::process::Command::new("sh").args(["-c", &script]).output().unwrap();
    let _ = std::fs::remove_dir(&group);
    assert_usage_error(&out, &["cpu.rt_runtime_us = 0", "--policy other"]);
}
