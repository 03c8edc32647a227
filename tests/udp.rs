//! The UDP round-trip probe against `rtgauge udp-echo`, across two network namespaces joined by
//! a veth pair that each test makes and removes itself: every period is one datagram, answered
//! in time (a sample) or not (missed); stopping the echo mid-run shows as the periods after it
//! missed; bad options and addresses are one-line errors. On loopback: an echo answers neither
//! itself nor another echo and ends on time; duplicated and forged replies are counted as such;
//! a closed port is named as refused.

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
            common::skip(common::Skip::Missing, "cannot make network namespaces here (needs root and iproute2)");
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
    for c in ["duplicate", "forged", "refused"] {
        assert_eq!(u(&p["counts"][c]), 0, "nothing {c} between two namespaces: {p}");
    }
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
        (&["run", "-D", "1s", "--measure", "udp:target=127.0.0.1:0"], &["target=127.0.0.1:0", "port 0"]),
        (&["run", "-D", "1s", "--measure", "udp:target=0.0.0.0:9000"], &["target=0.0.0.0:9000", "'any'"]),
        (&["run", "-D", "1s", "--measure", "udp:target=239.1.1.1:9000"], &["multicast", "e.g. target="]),
        (&["run", "-D", "1s", "--load", "net:target=127.0.0.1:0"], &["net:target=127.0.0.1:0", "port 0"]),
        (&["run", "-D", "1s", "--load", "net:target=224.0.0.1:9"], &["net:target=224.0.0.1:9", "multicast"]),
        (&["run", "-D", "1s", "--load", "net:target=[::ffff:255.255.255.255]:9"], &["broadcast"]),
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

/// Sends `payload` to 127.0.0.1:`to` from port `from` of 127.0.0.1 (a raw socket, as root): a
/// datagram whose source is another program's socket — the echo's own, or another echo's.
/// `false` where raw sockets are refused (not root).
fn send_as(from: u16, to: u16, payload: &[u8]) -> bool {
    let mut packet = Vec::new();
    packet.extend(from.to_be_bytes());
    packet.extend(to.to_be_bytes());
    packet.extend(((8 + payload.len()) as u16).to_be_bytes());
    packet.extend([0, 0]); // no checksum (IPv4 allows it)
    packet.extend(payload);
    // SAFETY: a socket this function owns and closes; `addr` and `packet` outlive the calls.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_UDP);
        if fd < 0 {
            return false;
        }
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        let n = libc::sendto(
            fd,
            packet.as_ptr().cast(),
            packet.len(),
            0,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        libc::close(fd);
        n == packet.len() as isize
    }
}

/// Waits for `child` at most `within`; kills it and fails if it is still running then.
fn ends_within(mut child: Child, within: std::time::Duration, what: &str) -> serde_json::Value {
    let t = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still ran after {within:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A datagram as the probe sends it: period `seq`, then its own bytes.
fn probe_datagram(seq: u64) -> Vec<u8> {
    [&seq.to_le_bytes()[..], &[0xa5; 24]].concat()
}

/// Two echoes on one CPU at FIFO 80, pointed at each other by a datagram from one to the other,
/// and a datagram from an echo's own address: before, they answered each other (or itself) for
/// ever, and neither `-D` (its timer thread waited behind the echo, at the same priority on the
/// same CPU) nor the first SIGTERM ended them. Now a reply is never answered, an echo's own
/// address never, and both end on time.
#[test]
fn an_echo_answers_neither_itself_nor_another_echo_and_ends_on_time() {
    let cpu = online_cpus().last().unwrap().to_string();
    let echo = |d: &str| start_echo(rtgauge(&["udp-echo", "--listen", "127.0.0.1:0", "--cpu", &cpu, "-D", d]));
    let ((a, a_at), (b, b_at)) = (echo("3s"), echo("60s"));
    let port = |at: &str| at.rsplit(':').next().unwrap().parse::<u16>().unwrap();
    let (pa, pb) = (port(&a_at), port(&b_at));
    let started = std::time::Instant::now();
    // From B to A: A answers B once (a reply), B answers no reply.
    if !send_as(pb, pa, &probe_datagram(1)) {
        common::skip(common::Skip::Missing, "no raw socket here (needs root)");
        for mut c in [a, b] {
            let _ = c.kill();
            let _ = c.wait();
        }
        return;
    }
    // From A to A: never answered.
    assert!(send_as(pa, pa, &probe_datagram(2)));
    // From a well-known port (a reflecting chargen service, or a datagram forged as one): never
    // answered either, whatever it holds.
    assert!(send_as(19, pa, &probe_datagram(3)));
    // Too short to be the probe's: dropped.
    std::net::UdpSocket::bind("127.0.0.1:0").unwrap().send_to(b"hi", &a_at).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    signal(&b, "TERM");
    let b = ends_within(b, std::time::Duration::from_secs(5), "the echo after one SIGTERM");
    assert_eq!(b["stopped_by"], "SIGTERM");
    let a = ends_within(a, std::time::Duration::from_secs(10), "the echo with -D 3s");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(a["stopped_by"].is_null(), "{a}");
    assert_eq!(u(&a["echoed"]), 1, "A answered B's datagram once: {a}");
    assert_eq!(u(&a["dropped"]["from_itself"]), 1, "{a}");
    assert_eq!(u(&a["dropped"]["from_service"]), 1, "{a}");
    assert_eq!(u(&a["dropped"]["short"]), 1, "{a}");
    assert_eq!(u(&b["echoed"]), 0, "B never answers A's reply: {b}");
    assert_eq!(u(&b["dropped"]["replies"]), 1, "{b}");
}

/// A UDP probe against a port where nothing listens: the ICMP port unreachable is named, and
/// the run is refused before measuring (it said "never answered" for every period before).
#[test]
fn a_udp_probe_against_a_closed_port_names_the_refusal() {
    let closed = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let target = format!("udp:target={closed}@0");
    let out = rtgauge(&["run", "--loops", "20", "--warmup", "0", "--load", "none", "--no-store", "--measure", &target])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(&format!("connection refused: no echo listening on {closed}")), "{err}");
    assert!(err.contains("udp-echo --listen"), "the fix: {err}");
}

/// A peer that answers every datagram twice, and sends two forged replies besides (another
/// period's number, other bytes): the second replies count as `duplicate`, the forged ones as
/// `forged`, and neither as `late` (1999 sent made 3998 late before).
#[test]
fn duplicated_and_forged_replies_count_as_such_not_as_late() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_read_timeout(Some(std::time::Duration::from_millis(50))).unwrap();
    let at = peer.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let answering = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            let mut answered = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let Ok((n, from)) = peer.recv_from(&mut buf) else { continue };
                if n < 8 {
                    continue; // the probe's look for a closed port
                }
                let seq = u64::from_le_bytes(buf[..8].try_into().unwrap());
                let mut reply = buf[..n].to_vec();
                reply[..8].copy_from_slice(&(seq | 1 << 63).to_le_bytes());
                let mut ahead = reply.clone();
                ahead[..8].copy_from_slice(&((seq + 1000) | 1 << 63).to_le_bytes());
                let mut other = reply.clone();
                other[8..].iter_mut().for_each(|b| *b ^= 0xff);
                for d in [&reply, &reply, &ahead, &other] {
                    let _ = peer.send_to(d, from);
                }
                answered += 1;
            }
            answered
        })
    };
    let measure = format!("udp:target={at},rate=500,size=64@0");
    let (code, doc, out) = run_json(&["--loops", "300", "--warmup", "0", "--load", "none", "--measure", &measure]);
    stop.store(true, Ordering::Relaxed);
    let answered = answering.join().unwrap();
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    let p = &doc["probes"][0];
    let (samples, _, sent, late) = counts(p);
    let (duplicate, forged) = (u(&p["counts"]["duplicate"]), u(&p["counts"]["forged"]));
    assert!(samples > 0 && answered > 0, "{p}");
    assert!(samples + late <= sent, "late counts first replies only: {samples} in time, {late} late, {sent} sent");
    // Every period answered got its second copy (the last one's may come after the end).
    assert!(duplicate + 1 >= samples + late && duplicate <= answered, "{duplicate} duplicates of {answered} answered: {p}");
    assert!(forged + 2 >= 2 * (samples + late) && forged <= 2 * answered, "{forged} forged of {answered} answered: {p}");
    assert_eq!(u(&p["counts"]["refused"]), 0, "{p}");
}
