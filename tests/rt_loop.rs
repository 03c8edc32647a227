//! The real-time loop does nothing but wait and read the clock: traced with strace, the
//! measurement thread's only system call between its first and last sleep is
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ...)` (clock_gettime runs in the vDSO), one per
//! period — no allocation (mmap/brk), no lock (futex), no output (write), and once, when the
//! warm-up is over, `getrusage(RUSAGE_THREAD)` (its page-fault count); with another wait
//! method (`timer:wait=`), only that method's calls. The wake-up chain's handler and task make
//! only their mechanism's calls (`wakeup:via=`). The UDP round trip and the echo program no
//! timer while a datagram is out.

mod common;
use common::*;
use std::collections::BTreeMap;

#[test]
fn the_measurement_thread_only_sleeps() {
    trace_the_loop("nanosleep-abs", &[], "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME");
}

/// Every wait method of `timer:wait=` keeps the loop to its own calls: the call that waits, and
/// the one that arms the wait where the method has one; set-up (the timerfd, the POSIX timer
/// and its signal) happens before the loop.
#[test]
fn every_wait_method_keeps_the_loop_to_its_own_calls() {
    trace_the_loop("nanosleep-rel", &[], "clock_nanosleep(CLOCK_MONOTONIC, 0");
    trace_the_loop("timerfd", &["timerfd_settime("], "read(");
    trace_the_loop("posix-timer", &["timer_settime("], "rt_sigtimedwait(");
    trace_the_loop("select", &[], "pselect6("); // the C library makes select a pselect6
    trace_the_loop("poll", &[], "ppoll(");
    trace_the_loop("itimer", &["setitimer("], "rt_sigtimedwait(");
}

/// Runs `rtgauge run ARGS --json FILE` under strace: the system calls of each thread, and the
/// result document. `None` under an emulator (strace would trace the emulator).
fn traced(args: &[&str]) -> Option<(BTreeMap<u32, Vec<String>>, serde_json::Value)> {
    if let Some(r) = runner() {
        common::skip(common::Skip::Here, &format!("the RT loop cannot be traced through the emulator '{r}'"));
        return None;
    }
    if std::process::Command::new("strace").arg("-V").output().is_err() {
        panic!("strace is needed for this test: apt-get install strace (.ci/run installs it)");
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let out = std::process::Command::new("strace")
        .args(["-f", "-qq", "-o"])
        .arg(&trace)
        .args(bin_argv())
        .args(["run", "-q"])
        .args(args)
        .arg("--json")
        .arg(dir.path().join("r.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&trace).unwrap();
    // Lines look like "1234 clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, {...}, NULL) = 0".
    let mut by_thread: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let Some((tid, call)) = line.split_once(' ') else {
            continue;
        };
        let Ok(tid) = tid.parse() else { continue };
        let call = call.trim_start();
        if call.starts_with("<...") || call.starts_with("+++") || call.starts_with("---") {
            continue; // resumptions, exits and signals are not new calls
        }
        by_thread.entry(tid).or_default().push(call.to_string());
    }
    let doc = serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    Some((by_thread, doc))
}

/// Traces a 300-period run waiting by `method` and checks its measurement thread: between its
/// first and last `waits` call only `arms` and `waits` calls, one `waits` per wake-up.
fn trace_the_loop(method: &str, arms: &[&str], waits: &str) {
    let measure = format!("timer:wait={method}");
    let args = ["--loops", "300", "--warmup", "20", "--cpus", "0", "--interval", "1ms", "--load", "none", "--measure", &measure];
    let Some((by_thread, doc)) = traced(&args) else { return };
    let is_wait = |c: &String| c.starts_with(waits);
    let (tid, calls) = by_thread
        .iter()
        .find(|(_, calls)| calls.iter().any(|c| c.starts_with("sched_setscheduler")) && calls.iter().any(is_wait))
        .unwrap_or_else(|| panic!("{method}: a measurement thread that set its scheduler and waited with {waits}"));
    let first = calls.iter().position(is_wait).unwrap();
    let last = calls.iter().rposition(is_wait).unwrap();
    let in_loop = &calls[first..=last];
    // Once, when the warm-up has been accounted for, the thread reads its page-fault count.
    let fault_count = |c: &&String| c.starts_with("getrusage(RUSAGE_THREAD");
    let others: Vec<&String> =
        in_loop.iter().filter(|c| !is_wait(c) && !arms.iter().any(|a| c.starts_with(a)) && !fault_count(c)).collect();
    assert!(others.is_empty(), "{method}: thread {tid} made other system calls inside its loop: {others:?}");
    assert_eq!(in_loop.iter().filter(fault_count).count(), 1, "{method}: one page-fault reading, after the warm-up");
    // One wait per wake-up: every period is waited for unless an earlier wake-up came so late
    // that it was counted as missed.
    let p = &doc["probes"][0];
    let waited = in_loop.iter().filter(|c| is_wait(c)).count() as u64;
    assert_eq!(waited, u(&p["samples"]) + u(&p["warmup_samples"]), "{method}: one wait per wake-up");
    assert_eq!(u(&p["samples"]) + u(&p["missed"]) + u(&p["warmup_samples"]) + u(&p["warmup_missed"]), 320);
    // Set-up happened before the loop: affinity, scheduler, signal mask.
    let setup = &calls[..first];
    for call in ["sched_setaffinity", "sched_setscheduler", "rt_sigprocmask"] {
        assert!(setup.iter().any(|c| c.starts_with(call)), "{method}: {call} before the loop");
    }
}

/// Each wake-up mechanism with its posting calls and its waiting calls, as strace names them.
const WAKE_CALLS: &[(&str, &[&str], &[&str])] = &[
    ("eventfd", &["write("], &["read("]),
    ("futex", &["futex("], &["futex("]),
    ("pipe", &["write("], &["read("]),
    ("mq", &["mq_timedsend("], &["mq_timedreceive("]),
    ("signal", &["tgkill("], &["rt_sigtimedwait("]),
    ("sem", &["futex("], &["futex("]),
    ("pi-mutex", &["futex("], &["futex("]),
];

/// Asserts that a thread's `calls` between its first and last call of `first` (its loop) are all
/// `allowed`; `who` names it.
fn only(calls: &[String], first: &[&str], allowed: &[&str], who: &str) {
    let from = calls.iter().position(|c| first.iter().any(|f| c.starts_with(f))).unwrap();
    // The thread's teardown ends the loop: its page-fault reading (with no warm-up the only
    // other is before the loop), its signal stack, its stack; a futex call after it is the
    // thread's exit waking its joiner, not the loop's.
    let teardown = ["getrusage(RUSAGE_THREAD", "sigaltstack(", "munmap(", "madvise("];
    let end = calls[from..].iter().position(|c| teardown.iter().any(|t| c.starts_with(t))).map_or(calls.len(), |e| from + e);
    let to = from + calls[from..end].iter().rposition(|c| first.iter().any(|f| c.starts_with(f))).unwrap();
    let others: Vec<&String> = calls[from..=to].iter().filter(|c| !allowed.iter().any(|a| c.starts_with(a))).collect();
    assert!(others.is_empty(), "{who} made other system calls inside its loop: {others:?}");
}

/// The wake-up chain's two loops, for every mechanism: the handler only reads its periodic
/// timer (which the kernel re-arms: the handler programs no timer) and posts, the task only waits (and, for the PI locks, hands its lock back); nothing else — no allocation,
/// no output — between their first and last such call.
#[test]
fn the_wakeup_handler_and_task_make_only_their_mechanisms_calls() {
    for &(via, posts, waits) in WAKE_CALLS {
        let measure = format!("wakeup:via={via}@0");
        let args = ["--loops", "200", "--warmup", "0", "--load", "none", "--measure", &measure];
        let Some((by_thread, doc)) = traced(&args) else { return };
        // The handler arms its periodic timer and reads it; the task is the other thread at an RT
        // priority that waits.
        let arms = "timerfd_settime(";
        let rt: Vec<(&u32, &Vec<String>)> =
            by_thread.iter().filter(|(_, c)| c.iter().any(|c| c.starts_with("sched_setscheduler"))).collect();
        let (_, handler) = rt.iter().find(|(_, c)| c.iter().any(|c| c.starts_with(arms))).expect("a handler thread");
        let (_, task) = rt
            .iter()
            .find(|(_, c)| !c.iter().any(|c| c.starts_with(arms)) && c.iter().any(|c| waits.iter().any(|w| c.starts_with(w))))
            .unwrap_or_else(|| panic!("{via}: a task thread waiting with {waits:?}"));
        only(handler, &["read("], &[&["read("][..], posts].concat(), &format!("{via}: the handler"));
        only(task, waits, waits, &format!("{via}: the task"));
        let chain = doc["probes"].as_array().unwrap().iter().find(|p| p["series"] == "chain").unwrap();
        assert_eq!(u(&chain["samples"]) + u(&chain["missed"]), 200, "{via}");
    }
}

/// A ping-pong's two loops (`shape=ping-pong`), for every mechanism: the receiver only reads its
/// periodic timer, posts and waits for the reply; the sender only waits and posts back.
#[test]
fn the_ping_pong_receiver_and_sender_make_only_their_mechanisms_calls() {
    for &(via, posts, waits) in WAKE_CALLS {
        let measure = format!("wakeup:shape=ping-pong,via={via}@0");
        let args = ["--loops", "200", "--warmup", "0", "--load", "none", "--measure", &measure];
        let Some((by_thread, doc)) = traced(&args) else { return };
        let arms = "timerfd_settime(";
        let rt: Vec<(&u32, &Vec<String>)> =
            by_thread.iter().filter(|(_, c)| c.iter().any(|c| c.starts_with("sched_setscheduler"))).collect();
        let (_, receiver) = rt.iter().find(|(_, c)| c.iter().any(|c| c.starts_with(arms))).expect("a receiver thread");
        let (_, sender) = rt
            .iter()
            .find(|(_, c)| !c.iter().any(|c| c.starts_with(arms)) && c.iter().any(|c| waits.iter().any(|w| c.starts_with(w))))
            .unwrap_or_else(|| panic!("{via}: a sender thread waiting with {waits:?}"));
        only(receiver, &["read("], &[&["read("][..], posts, waits].concat(), &format!("{via}: the receiver"));
        only(sender, waits, &[waits, posts].concat(), &format!("{via}: the sender"));
        let pong = doc["probes"].as_array().unwrap().iter().find(|p| p["series"] == "pong").unwrap();
        assert_eq!(u(&pong["samples"]) + u(&pong["missed"]), 200, "{via}");
    }
}

/// The UDP probe's loop waits for its deadlines on a periodic timer the kernel re-arms and for
/// the reply with no timeout of its own: between the send and the reply it programs no timer
/// (it waited with a `ppoll` timeout before, which armed a timer on every send and cancelled it
/// on every reply, inside the round trip it measured).
#[test]
fn the_udp_round_trip_programs_no_timer_between_send_and_reply() {
    if runner().is_some() {
        common::skip(common::Skip::Here, "the RT loop cannot be traced through the emulator");
        return;
    }
    let (mut echo, target) = start_echo(rtgauge(&["udp-echo", "--listen", "127.0.0.1:0", "-D", "60s"]));
    let measure = format!("udp:target={target}@0");
    let traced = traced(&["--loops", "200", "--warmup", "0", "--load", "none", "--measure", &measure]);
    let _ = echo.kill();
    let _ = echo.wait();
    let Some((by_thread, doc)) = traced else { return };
    let sends = |c: &String| c.starts_with("sendto(") || c.starts_with("send(");
    let (_, calls) = by_thread
        .iter()
        .find(|(_, c)| c.iter().any(|c| c.starts_with("sched_setscheduler")) && c.iter().any(sends))
        .expect("the probe's thread: at an RT priority, it sends");
    let armed = calls.iter().position(|c| c.starts_with("timerfd_settime(")).expect("its periodic timer is armed");
    let first = armed + calls[armed..].iter().position(|c| c.starts_with("read(")).expect("it waits for its timer");
    let last = calls.iter().rposition(sends).unwrap();
    let allowed = ["read(", "sendto(", "send(", "poll(", "recvfrom(", "recv("];
    let others: Vec<&String> = calls[first..=last].iter().filter(|c| !allowed.iter().any(|a| c.starts_with(a))).collect();
    assert!(others.is_empty(), "the UDP loop made other system calls (a timer armed?): {others:?}");
    let p = &doc["probes"][0];
    let sent = calls[first..=last].iter().filter(|c| sends(c)).count() as u64;
    assert_eq!(u(&p["samples"]) + u(&p["missed"]), 200);
    assert!(sent <= 200 && sent >= u(&p["samples"]), "one datagram per period served: sent {sent}, {p}");
}

#[test]
fn default_cpus_follow_the_affinity_mask() {
    let cpus = online_cpus();
    let last = cpus.last().unwrap().to_string();
    let out = std::process::Command::new("taskset")
        .args(["-c", &last])
        .args(bin_argv())
        .args(["run", "-q", "--json", "-", "--duration", "100ms", "--warmup", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["config"]["cpus"], serde_json::json!([cpus.last().unwrap()]));
    assert_eq!(doc["system"]["allowed_cpus"], serde_json::json!([cpus.last().unwrap()]));
    if cpus.len() > 1 {
        let out = std::process::Command::new("taskset")
            .args(["-c", &last])
            .args(bin_argv())
            .args(["run", "-q", "--duration", "100ms", "--cpus", &cpus[0].to_string()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("affinity") && err.trim().lines().count() == 1, "{err}");
    }
}
