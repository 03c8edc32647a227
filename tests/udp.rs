//! The UDP round-trip probe against `rtgauge udp-echo`, across two network namespaces joined by
//! a veth pair that each test makes and removes itself: every period is one datagram, answered
//! in time (a sample) or not (missed); stopping the echo mid-run shows as the periods after it
//! missed; bad options and addresses are one-line errors.

mod common;
use common::*;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Two network namespaces, `a` (10.0.0.1) and `b` (10.0.0.2), joined by a veth pair; removed
/// (with the pair) when dropped.
struct Netns {
    a: String,
    b: String,
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).status().is_ok_and(|s| s.success())
}

impl Netns {
    /// `None` where namespaces cannot be made (no `ip`, not root): the test says it skipped.
    fn new() -> Option<Netns> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let id = format!("{}{}", std::process::id() % 100_000, N.fetch_add(1, Ordering::Relaxed));
        let n = Netns { a: format!("rtgA{id}"), b: format!("rtgB{id}") };
        let (va, vb) = (format!("rva{id}"), format!("rvb{id}"));
        let ok = ip(&["netns", "add", &n.a])
            && ip(&["netns", "add", &n.b])
            && ip(&["link", "add", &va, "netns", &n.a, "type", "veth", "peer", "name", &vb, "netns", &n.b])
            && ip(&["-n", &n.a, "addr", "add", "10.0.0.1/24", "dev", &va])
            && ip(&["-n", &n.b, "addr", "add", "10.0.0.2/24", "dev", &vb])
            && ip(&["-n", &n.a, "link", "set", &va, "up"])
            && ip(&["-n", &n.b, "link", "set", &vb, "up"]);
        if ok {
            Some(n)
        } else {
            eprintln!("SKIPPED: cannot make network namespaces here (needs root and iproute2)");
            None
        }
    }

    /// `rtgauge ARGS` inside namespace `ns`.
    fn rtgauge(ns: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]).args(bin_argv()).args(args);
        c
    }

    /// Starts the echo in `b` on `cpu` and returns once it listens.
    fn echo(&self, cpu: usize) -> Child {
        let (child, addr) =
            start_echo(Netns::rtgauge(&self.b, &["udp-echo", "--listen", "10.0.0.2:9000", "--cpu", &cpu.to_string()]));
        assert_eq!(addr, "10.0.0.2:9000");
        child
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.a]);
        ip(&["netns", "del", &self.b]);
    }
}

fn counts(p: &serde_json::Value) -> (u64, u64, u64, u64) {
    (u(&p["samples"]), u(&p["missed"]), u(&p["counts"]["sent"]), u(&p["counts"]["late"]))
}

/// The (per-CPU entry, whole document) of a udp run in namespace `a`.
fn run_udp(n: &Netns, args: &[&str]) -> (serde_json::Value, serde_json::Value) {
    let out = Netns::rtgauge(&n.a, &[&["run", "-q", "--json", "-", "--load", "none"][..], args].concat()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (doc["probes"][0].clone(), doc)
}

#[test]
fn every_datagram_is_accounted_for_across_two_namespaces() {
    let Some(n) = Netns::new() else { return };
    let cpus = online_cpus();
    let echo = n.echo(*cpus.last().unwrap());
    let (p, doc) = run_udp(&n, &["--loops", "500", "--warmup", "0", "--measure", "udp:target=10.0.0.2:9000,rate=500,size=200@0"]);
    let (samples, missed, sent, late) = counts(&p);
    assert_eq!(samples + missed, 500, "every period: a reply in time or missed");
    assert!(samples > 0 && sent >= samples && sent <= 500, "sent {sent}, answered {samples}");
    assert!(late <= sent - samples, "a late reply is one not answered in its period");
    assert!(doc["config"]["probes"][0]["settings"].as_array().unwrap().contains(&"size=200".into()));
    assert_eq!(doc["config"]["interval_ns"], 2_000_000, "rate=500 is a 2 ms period");
    check_probe_invariants(&p);
    signal(&echo, "INT");
    let out = echo.wait_with_output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let echoed = u(&report["echoed"]);
    assert!(echoed >= samples + late && echoed <= sent, "echoed {echoed}: every reply came from it, none unasked");
    assert_eq!(report["stopped_by"], "SIGINT");
}

#[test]
fn stopping_the_echo_mid_run_shows_as_missed_periods() {
    let Some(n) = Netns::new() else { return };
    let cpus = online_cpus();
    let echo = n.echo(*cpus.last().unwrap());
    let run = Netns::rtgauge(&n.a, &["run", "-q", "--json", "-", "--load", "none", "-D", "3s", "--warmup", "0"])
        .args(["--measure", "udp:target=10.0.0.2:9000,interval=2ms@0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `ip netns exec` runs rtgauge as its child, under the same process id (it execs).
    wait_until_measuring(run.id());
    std::thread::sleep(std::time::Duration::from_millis(1000));
    signal(&echo, "KILL");
    let _ = echo.wait_with_output();
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (samples, missed, sent, _) = counts(&doc["probes"][0]);
    assert_eq!(samples + missed, 1500, "every 2 ms period of 3 s accounted");
    // The echo answered for about a second and was dead for the last two.
    assert!(missed >= 700, "{missed} periods missed after the echo stopped ({samples} answered, {sent} sent)");
    assert!(samples >= 100, "it answered before it stopped: {samples}");
}

#[test]
fn bad_udp_options_and_echo_addresses_are_one_line_errors() {
    for (args, says) in [
        (&["run", "-D", "1s", "--measure", "udp"][..], &["target=ADDR:PORT", "udp-echo"][..]),
        (&["run", "-D", "1s", "--measure", "udp:target=somewhere"], &["target=somewhere", "e.g. target="]),
        (&["run", "-D", "1s", "--measure", "udp:target=10.0.0.2:9000,size=4"], &["size=4", "8..65507"]),
        (&["run", "-D", "1s", "--measure", "udp:target=10.0.0.2:9000,rate=0"], &["rate=0", "e.g. rate=1000"]),
        (&["run", "-D", "1s", "--measure", "udp:target=10.0.0.2:9000,so-priority=9"], &["so-priority=9", "0..6"]),
        (&["run", "-D", "1s", "--measure", "udp:target=10.0.0.2:9000,busy-poll=x"], &["busy-poll=x", "e.g. busy-poll=50us"]),
        (&["udp-echo", "--listen", "nowhere"], &["--listen nowhere", "e.g. --listen 0.0.0.0:9000"]),
        (&["udp-echo", "--listen", "0.0.0.0:9000", "--priority", "120"], &["--priority 120", "1-99"]),
        (&["udp-echo", "--listen", "0.0.0.0:9000", "--cpu", "999"], &["999", "not online"]),
        (&["udp-echo", "--listen", "203.0.113.7:9000"], &["cannot listen on 203.0.113.7:9000", "another address"]),
    ] {
        let out = rtgauge(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        for s in says {
            assert!(err.contains(s), "{args:?}: '{s}' in {err}");
        }
    }
}
