//! The UDP round-trip probe: the Cortex-A53 slides' UDP ping-pong between two boards. Every
//! interval the thread sends one sequence-numbered datagram to `rtgauge udp-echo` on the other
//! host and waits for it to come back until the next send is due: the round trip is
//! `reply − send`. A period whose reply does not come back before the next send is missed (lost,
//! or late); a reply that comes back after that is counted as `late`. Both ends run at an RT
//! priority; `busy-poll=` and `so-priority=` set `SO_BUSY_POLL` and `SO_PRIORITY` on the socket.
//!
//! A datagram is its period's number (8 bytes, little-endian) and the thread's own random bytes;
//! the echo sends it back with the number's top bit set ([`REPLY`]): a reply is never echoed
//! again (two echoes cannot answer each other for ever), and a reply is the probe's only when it
//! carries a period the thread sent, the thread's bytes and the size it sent. Anything else is
//! counted as `forged`, a second reply to one period as `duplicate` (neither as `late`), and an
//! ICMP port unreachable (`ECONNREFUSED` on the connected socket) as `refused`; before the run a
//! datagram the echo ignores (it is empty) tells a closed port at once, and the run is refused.
//!
//! The loop allocates nothing, takes no lock and prints nothing: it sleeps to the deadline,
//! sends, and polls/receives with buffers made in its set-up.

use super::options::{schedule, Given, ProbeOptions, RunTiming};
use super::{Class, Handoff, Missed, Plugin, Probe, Role, RtLoop, Schedule};
use crate::result::{ProbeResult, RunResult};
use crate::sys;
use crate::vocab::units::{parse_duration_ns, Nanos};
use std::fmt::Write;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// The probe's name in `--measure`, results and requirements.
pub const NAME: &str = "udp";
/// Its own counts: datagrams sent; replies that came back after their period; second replies to
/// a period already answered; datagrams that are no reply to this thread (a period it did not
/// send, other bytes or size); and sends or receives the target refused (ICMP port unreachable).
pub const COUNTERS: &[&str] = &["sent", "late", "duplicate", "forged", "refused"];
const SENT: usize = 0;
const LATE: usize = 1;
const DUPLICATE: usize = 2;
const FORGED: usize = 3;
const REFUSED: usize = 4;
/// A datagram's first 8 bytes carry its sequence number (its period).
pub const MIN_SIZE: usize = 8;
/// The bit of the sequence number the echo sets in its reply (a period never reaches it).
pub const REPLY: u64 = 1 << 63;
/// How many recent periods the thread remembers (sent, answered): a reply to an older one is
/// told from a forged one no more (it counts as forged; at 1 ms, a reply 16 s late).
const REMEMBERED: usize = 1 << 14;
/// How long the set-up waits for the target's ICMP port unreachable.
const REFUSAL_WAIT_NS: u64 = 100_000_000;
/// The largest UDP payload over IPv4.
pub const MAX_SIZE: usize = 65_507;

/// The UDP probe, for the registry.
pub const PLUGIN: Plugin = Plugin {
    name: NAME,
    shapes: &[&[]],
    options: "target=ADDR:PORT (an rtgauge udp-echo), rate=PER_SECOND or interval=DURATION, size=BYTES (64), \
              busy-poll=DURATION, so-priority=N",
    help,
    parse,
    missed: Missed::Period,
    published: |_| Some(Class::UdpRoundTrip),
    foreign: &[],
    summary: Some(summary),
    series_priority: super::priority_setting,
    swept: |_| false,
    offers: &[],
};

/// `--measure`'s help on the UDP probe.
fn help() -> String {
    format!(
        "{NAME} (round trips to rtgauge udp-echo on another host: target=ADDR:PORT, rate=1000 or interval=, size=64, \
         busy-poll=, so-priority=)"
    )
}

/// The UDP probe's options, `udp:target=ADDR:PORT[,rate=1000|interval=1ms,size=64,busy-poll=50us,so-priority=6]`.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub target: SocketAddr,
    /// `interval=` or `rate=` as an interval, the last given; `None`: the run's interval.
    pub pace_ns: Option<u64>,
    /// The first of them given: the probe's own interval, which the run's follows when the
    /// probe is the first (`MeasureSpec::own_interval_ns` has always taken the first).
    pub first_pace_ns: Option<u64>,
    pub size: usize,
    pub busy_poll_us: u32,
    pub so_priority: Option<u32>,
}

fn parse(given: &Given) -> Result<Arc<dyn ProbeOptions>, crate::vocab::Error> {
    parse_text(given).map_err(crate::vocab::Error::Invalid)
}

/// [`parse`], its failure as text.
fn parse_text(given: &Given) -> Result<Arc<dyn ProbeOptions>, String> {
    let mut target = None;
    let (mut pace_ns, mut first_pace_ns) = (None, None);
    let (mut size, mut busy_poll_us, mut so_priority) = (64, 0, None);
    let bad = |what: &str, e: &str| format!("--measure '{}': {what}; e.g. {e}", given.text);
    for (k, v) in given.options {
        match k.as_str() {
            "target" => {
                target = Some(
                    crate::vocab::address::send_target(v, crate::vocab::address::Use::RoundTrip)
                        .map_err(|e| bad(&e, "target=192.168.1.2:9000"))?,
                )
            }
            "interval" | "rate" => {
                let ns = if k == "rate" { given.rate(v)? } else { given.interval(v)? };
                pace_ns = Some(ns);
                first_pace_ns = first_pace_ns.or(Some(ns));
            }
            "size" => {
                size = v
                    .parse()
                    .ok()
                    .filter(|n| (MIN_SIZE..=MAX_SIZE).contains(n))
                    .ok_or_else(|| bad(&format!("size={v} is not a payload of {MIN_SIZE}..{MAX_SIZE} bytes"), "size=64"))?
            }
            "busy-poll" => {
                let ns = parse_duration_ns(v, None).ok().filter(|&ns| ns <= 1_000_000_000);
                busy_poll_us = ns
                    .map(|ns| ns.div_ceil(1000) as u32)
                    .ok_or_else(|| bad(&format!("busy-poll={v} is not a time up to 1 s"), "busy-poll=50us"))?
            }
            "so-priority" => {
                so_priority = Some(
                    v.parse()
                        .ok()
                        .filter(|&n: &u32| n <= 6)
                        .ok_or_else(|| bad(&format!("so-priority={v} is not 0..6"), "so-priority=6"))?,
                )
            }
            other => return Err(given.unknown(other)),
        }
    }
    let target = target.ok_or_else(|| {
        bad("udp needs the echo's address, target=ADDR:PORT (rtgauge udp-echo there)", "udp:target=192.168.1.2:9000")
    })?;
    Ok(Arc::new(Options { target, pace_ns, first_pace_ns, size, busy_poll_us, so_priority }))
}

impl ProbeOptions for Options {
    fn interval_ns(&self) -> Option<u64> {
        self.first_pace_ns
    }
    fn bind(&self, _text: &str, timing: RunTiming) -> Result<Arc<dyn Probe>, crate::vocab::Error> {
        Ok(Arc::new(UdpProbe {
            schedule: schedule(timing, self.pace_ns.unwrap_or(timing.interval_ns)),
            target: self.target,
            size: self.size,
            busy_poll_us: self.busy_poll_us,
            so_priority: self.so_priority,
        }))
    }
}

/// The UDP probe, resolved before the run.
#[derive(Debug, Clone, Copy)]
pub struct UdpProbe {
    pub schedule: Schedule,
    pub target: SocketAddr,
    /// Payload bytes per datagram.
    pub size: usize,
    /// `SO_BUSY_POLL` in µs (0: off).
    pub busy_poll_us: u32,
    /// `SO_PRIORITY` (None: the default).
    pub so_priority: Option<u32>,
}

impl Probe for UdpProbe {
    fn name(&self) -> &'static str {
        NAME
    }
    fn schedule(&self) -> Schedule {
        self.schedule
    }
    fn settings(&self) -> Vec<String> {
        let mut s = vec![
            format!("interval={}", Nanos(self.schedule.interval_ns)),
            format!("target={}", self.target),
            format!("size={}", self.size),
        ];
        if self.busy_poll_us > 0 {
            s.push(format!("busy-poll={}us", self.busy_poll_us));
        }
        if let Some(p) = self.so_priority {
            s.push(format!("so-priority={p}"));
        }
        s
    }
    fn counters(&self) -> &'static [&'static str] {
        COUNTERS
    }
    fn instance(&self, cpu: usize, _cpus: &[usize]) -> Result<Vec<Role>, crate::vocab::Error> {
        let p = *self;
        Ok(vec![Role::single(
            cpu,
            Box::new(move || Ok(Box::new(p.open().map_err(crate::vocab::Error::System)?) as Box<dyn RtLoop>)),
        )])
    }
}

impl UdpProbe {
    /// The thread's socket, connected to the target, with its options, and its buffers.
    fn open(&self) -> Result<UdpLoop, String> {
        let local = if self.target.is_ipv4() {
            SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, 0))
        } else {
            SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0))
        };
        let socket = UdpSocket::bind(local)
            .map_err(|e| format!("cannot open a UDP socket ({e}): check that this kernel and process may use UDP"))?;
        socket.connect(self.target).map_err(|e| format!("cannot reach {}: {e}; check target=ADDR:PORT", self.target))?;
        socket.set_nonblocking(true).map_err(|e| {
            format!("cannot make the UDP socket non-blocking ({e}): check that this kernel and process may use UDP")
        })?;
        if self.busy_poll_us > 0 {
            sys::net::set_busy_poll(&socket, self.busy_poll_us)
                .map_err(|e| format!("SO_BUSY_POLL refused ({e}): drop busy-poll= or run as root"))?;
        }
        if let Some(p) = self.so_priority {
            sys::net::set_socket_priority(&socket, p)
                .map_err(|e| format!("SO_PRIORITY {p} refused ({e}): drop so-priority= or run as root"))?;
        }
        self.refused_at_once(&socket)?;
        let timer = sys::timer::PeriodicTimer::new()
            .map_err(|e| format!("cannot make a timerfd ({e}): check that this kernel has timerfd"))?;
        // The thread's own bytes after the sequence number: a reply must carry them back.
        let mut send = vec![0xa5; self.size];
        let own = sys::host::random_u64()
            .map_err(|e| format!("cannot read random bytes ({e}): check that this kernel has getrandom"))?;
        let n = self.size.min(MIN_SIZE + 8) - MIN_SIZE;
        send[MIN_SIZE..MIN_SIZE + n].copy_from_slice(&own.to_le_bytes()[..n]);
        Ok(UdpLoop {
            schedule: self.schedule,
            socket,
            timer,
            send,
            receive: vec![0; MAX_SIZE + 1],
            periods: vec![0; REMEMBERED],
            counts: [0; COUNTERS.len()],
        })
    }

    /// Before the run: an empty datagram (the echo ignores it) to the target; a closed port
    /// answers with an ICMP port unreachable, which the connected socket reports as
    /// `ECONNREFUSED` — then there is nothing to measure, and the run is refused, saying why.
    fn refused_at_once(&self, socket: &UdpSocket) -> Result<(), String> {
        let refused = |e: &std::io::Error| e.kind() == std::io::ErrorKind::ConnectionRefused;
        let says = || {
            format!(
                "connection refused: no echo listening on {} (the target answered with ICMP port unreachable); \
                 start rtgauge udp-echo --listen {} there, or check target=",
                self.target, self.target
            )
        };
        match socket.send(&[]) {
            Err(e) if refused(&e) => return Err(says()),
            _ => {}
        }
        if let Ok(true) = sys::fd::wait_readable_until(socket, Some(sys::time::monotonic_ns() + REFUSAL_WAIT_NS)) {
            let mut buf = [0u8; 1];
            if socket.recv(&mut buf).is_err_and(|e| refused(&e)) {
                return Err(says());
            }
        }
        Ok(())
    }
}

/// The ping-pong of one thread.
struct UdpLoop {
    schedule: Schedule,
    socket: UdpSocket,
    /// Expires at every deadline: wakes the thread to send, and ends the wait for a reply.
    timer: sys::timer::PeriodicTimer,
    send: Vec<u8>,
    receive: Vec<u8>,
    /// Per recent period (at `period % REMEMBERED`): the period sent there, with [`REPLY`] set
    /// once its reply came; 0 for none.
    periods: Vec<u64>,
    counts: [u64; COUNTERS.len()],
}

/// What one received datagram is to the thread waiting for `period`.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    /// The reply to `period`.
    InTime,
    /// The first reply to an earlier period.
    Late,
    /// Another reply to a period already answered.
    Duplicate,
    /// No reply to this thread.
    Forged,
}

impl UdpLoop {
    /// What datagram `got` is to the thread waiting for `period` (which it sent as `sent`);
    /// marks the period it answers as answered.
    #[inline(always)]
    fn classify(periods: &mut [u64], sent: &[u8], got: &[u8], period: u64) -> Reply {
        if got.len() != sent.len() || got[MIN_SIZE..] != sent[MIN_SIZE..] {
            return Reply::Forged;
        }
        // (Always 8 bytes: `got` is as long as `sent`, which holds at least MIN_SIZE.)
        let Ok(seq) = <[u8; MIN_SIZE]>::try_from(&got[..MIN_SIZE]).map(u64::from_le_bytes) else { return Reply::Forged };
        if seq & REPLY == 0 {
            return Reply::Forged;
        }
        let seq = seq & !REPLY;
        let slot = &mut periods[(seq % REMEMBERED as u64) as usize];
        if seq == 0 || seq > period || *slot & !REPLY != seq {
            return Reply::Forged; // a period not sent (or too long ago to tell)
        }
        if *slot & REPLY != 0 {
            return Reply::Duplicate;
        }
        *slot |= REPLY;
        if seq == period {
            Reply::InTime
        } else {
            Reply::Late
        }
    }

    /// Waits for the reply to `period` until the timer's next expiry (the next deadline, at
    /// `until_ns`); returns when it came. Replies to earlier periods that come meanwhile are late,
    /// second ones duplicates, anything else forged; a refusal (ICMP port unreachable) is counted
    /// too. Nothing is armed while the datagram is out: the periodic timer ends the wait, and a
    /// stream of datagrams that are not the reply ends at the deadline too.
    #[inline(always)]
    fn reply(&mut self, period: u64, until_ns: u64, out: &mut Handoff) -> Option<u64> {
        while let Ok(true) = sys::fd::readable_first(&self.socket, &self.timer) {
            loop {
                match self.socket.recv(&mut self.receive) {
                    Ok(n) => {
                        let now = sys::time::monotonic_ns();
                        let count = match Self::classify(&mut self.periods, &self.send, &self.receive[..n], period) {
                            Reply::InTime => return Some(now),
                            Reply::Late => LATE,
                            Reply::Duplicate => DUPLICATE,
                            Reply::Forged => FORGED,
                        };
                        self.counts[count] += 1;
                        out.count(count, self.counts[count]);
                        if now >= until_ns {
                            return None;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                        self.counts[REFUSED] += 1;
                        out.count(REFUSED, self.counts[REFUSED]);
                    }
                    Err(_) => break,
                }
            }
        }
        None
    }
}

impl RtLoop for UdpLoop {
    /// Period `k`: at `start + k·interval` send datagram `k`, then wait for it until the next
    /// deadline. Its round trip is handed over; a period without its reply in time is a gap
    /// (missed). The deadlines come from a periodic timer the kernel re-arms in its interrupt (as
    /// the wake-up probe's handler does), so no timer is programmed between the send and the
    /// reply; a wake-up late past later deadlines skips them (missed, none sent): the timer's
    /// count of expirations says how many passed.
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        let Schedule { interval_ns: interval, periods: last, .. } = self.schedule;
        let out = &mut out[0];
        let mut period = 1u64;
        let armed = self.timer.arm(start_ns + interval, interval).is_ok();
        while armed && period <= last && !stop.load(Relaxed) {
            let expired = self.timer.wait();
            if expired == 0 {
                break; // the timer failed: the periods left are accounted below as missed
            }
            let skipped = (expired - 1).min(last - period);
            self.send[..8].copy_from_slice(&period.to_le_bytes());
            self.periods[(period % REMEMBERED as u64) as usize] = period;
            let sent_at = sys::time::monotonic_ns();
            match self.socket.send(&self.send) {
                Ok(_) => {
                    self.counts[SENT] += 1;
                    out.count(SENT, self.counts[SENT]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    self.counts[REFUSED] += 1;
                    out.count(REFUSED, self.counts[REFUSED]);
                }
                Err(_) => {}
            }
            let next_deadline = start_ns + (period + skipped + 1) * interval;
            if let Some(back) = self.reply(period, next_deadline, out) {
                out.served(period, back - sent_at, skipped);
            }
            period += skipped + 1;
        }
        out.accounted_through((period - 1).min(last));
    }
}

/// What `rtgauge udp-echo` did: datagrams echoed, and those it dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Echoed {
    pub echoed: u64,
    /// Datagrams whose source is the echo's own address (answering would feed itself).
    pub from_itself: u64,
    /// Replies (the [`REPLY`] bit set): an echo's answer is never answered, so two echoes
    /// pointed at each other exchange one datagram, not a storm.
    pub replies: u64,
    /// Datagrams shorter than a sequence number (the probe's check for a closed port, or not
    /// the probe's).
    pub short: u64,
    /// Datagrams from a well-known port (below 1024): a service such as echo or chargen answers
    /// whatever it gets, without the REPLY bit, so answering it would feed a storm; the probe
    /// always sends from an ephemeral port.
    pub from_service: u64,
}

/// What `rtgauge udp-echo` serves: where it listens, on which CPU, at which SCHED_FIFO priority
/// (0: SCHED_OTHER), for how long (`None`: until stopped).
pub struct EchoPlan {
    pub addr: SocketAddr,
    pub cpu: Option<usize>,
    pub priority: i32,
    pub duration_ns: Option<u64>,
}

/// The other end of the probe, as `rtgauge udp-echo` runs it: binds, takes its CPU and priority,
/// locks memory, says where it listens (`listening`), and [`echo`]es until `stop` or the plan's
/// end (looked at by the echo itself: a thread to end it would share its CPU and priority, and
/// wait behind it as long as datagrams come).
pub fn serve(plan: &EchoPlan, stop: &AtomicBool, listening: impl FnOnce(SocketAddr)) -> Result<Echoed, crate::vocab::Error> {
    serve_text(plan, stop, listening).map_err(crate::vocab::Error::System)
}

/// [`serve`], its failure as text.
fn serve_text(plan: &EchoPlan, stop: &AtomicBool, listening: impl FnOnce(SocketAddr)) -> Result<Echoed, String> {
    let addr = plan.addr;
    let socket = UdpSocket::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}; choose another address or port"))?;
    socket.set_nonblocking(true).map_err(|e| e.to_string())?;
    if let Some(cpu) = plan.cpu {
        sys::sched::pin_thread_to_cpu(cpu).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    }
    if plan.priority > 0 {
        sys::sched::set_thread_scheduler(crate::vocab::policy::Policy::Fifo, plan.priority)
            .map_err(|e| format!("cannot run at SCHED_FIFO {}: {e}; run as root or give --priority 0", plan.priority))?;
    }
    let _ = sys::mem::lock_all_memory();
    listening(socket.local_addr().map_err(|e| e.to_string())?);
    let until = plan.duration_ns.map(|ns| sys::time::monotonic_ns().saturating_add(ns));
    echo(&socket, stop, until).map_err(|e| e.to_string())
}

/// `rtgauge udp-echo`: sends every datagram of the probe's back to where it came from, marked
/// as a reply, on one thread at an RT priority, until `stop` is set or CLOCK_MONOTONIC passes
/// `until_ns`: both looked at after every datagram (a flood does not hold it; no other thread of
/// its priority need run to end it), and every 100 ms on a periodic timer's expiry (no timer is
/// programmed while a datagram is being echoed). It drops a datagram from its own address, a
/// reply, and one too short to be the probe's.
pub fn echo(socket: &UdpSocket, stop: &AtomicBool, until_ns: Option<u64>) -> std::io::Result<Echoed> {
    const LOOK_NS: u64 = 100_000_000;
    let own = socket.local_addr()?;
    let mut buf = vec![0u8; MAX_SIZE + 1];
    let look = sys::timer::PeriodicTimer::new()?;
    look.arm(sys::time::monotonic_ns() + LOOK_NS, LOOK_NS)?;
    let mut e = Echoed::default();
    let go_on = || !stop.load(Relaxed) && until_ns.is_none_or(|t| sys::time::monotonic_ns() < t);
    while go_on() {
        if !sys::fd::readable_first(socket, &look)? {
            look.wait();
        }
        while go_on() {
            let Ok((n, from)) = socket.recv_from(&mut buf) else { break };
            if n < MIN_SIZE {
                e.short += 1;
            } else if buf[7] & 0x80 != 0 {
                e.replies += 1;
            } else if from.port() < 1024 {
                e.from_service += 1;
            } else if is_own(own, from) {
                e.from_itself += 1;
            } else {
                buf[7] |= 0x80; // the REPLY bit of the little-endian sequence number
                if socket.send_to(&buf[..n], from).is_ok() {
                    e.echoed += 1;
                }
            }
        }
    }
    Ok(e)
}

/// Whether `from` is the echo's own socket, bound at `own`: the same address and port, or for
/// an echo bound to every address (0.0.0.0, ::), its port on any address of this host.
fn is_own(own: SocketAddr, from: SocketAddr) -> bool {
    if from.port() != own.port() {
        return false;
    }
    if !own.ip().is_unspecified() {
        return from.ip() == own.ip();
    }
    // An address of this host is one a socket can be bound to.
    from.ip().is_loopback() || UdpSocket::bind(SocketAddr::new(from.ip(), 0)).is_ok()
}

// ---- its section of the summary ----

/// Its section of the summary: the round trips per CPU.
fn summary(r: &RunResult) -> String {
    udp_report(&r.probes, &r.config.probes)
}

/// The UDP round trips per CPU: datagrams sent, replies in time, late, never back; second and
/// forged replies; and a target that refused them (ICMP port unreachable), named.
fn udp_report(probes: &[ProbeResult], configs: &[crate::result::ProbeConfig]) -> String {
    let mut s = String::new();
    for p in probes.iter().filter(|p| p.probe == NAME) {
        let count = |name: &str| p.counts.get(name).copied().unwrap_or(0);
        let (sent, late) = (count("sent"), count("late"));
        if s.is_empty() {
            s += "\nUDP round trips, per CPU:\n";
        }
        let _ = write!(
            s,
            "  {}: {sent} datagrams sent, {} answered in their period ({} of them in the warm-up), {late} answered late, \
             {} never answered",
            p.scope(),
            p.samples.saturating_add(p.warmup_samples),
            p.warmup_samples,
            sent.saturating_sub(p.samples.saturating_add(p.warmup_samples).saturating_add(late))
        );
        for (name, what) in [("duplicate", "replies to a period already answered"), ("forged", "datagrams that were no reply")] {
            if count(name) > 0 {
                let _ = write!(s, "; {} {what} (not counted as replies)", count(name));
            }
        }
        if count("refused") > 0 {
            let config = configs.iter().find(|c| c.name == NAME);
            let target = config.and_then(|c| c.settings.iter().find_map(|t| t.strip_prefix("target="))).unwrap_or("the target");
            let _ = write!(
                s,
                "; connection refused {} times: no echo listening on {target} (ICMP port unreachable)",
                count("refused")
            );
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datagram(seq: u64, own: &[u8]) -> Vec<u8> {
        [&seq.to_le_bytes()[..], own].concat()
    }

    #[test]
    fn a_reply_is_in_time_late_duplicate_or_forged() {
        let own = [1u8, 2, 3, 4, 5, 6, 7, 8, 0xa5, 0xa5];
        let mut periods = vec![0; REMEMBERED];
        let sent = datagram(5, &own);
        for p in [3, 4, 5] {
            periods[p as usize] = p;
        }
        let mut class = |got: &[u8]| UdpLoop::classify(&mut periods, &sent, got, 5);
        assert_eq!(class(&datagram(5, &own)), Reply::Forged, "not marked as a reply");
        assert_eq!(class(&datagram(5 | REPLY, &own)), Reply::InTime);
        assert_eq!(class(&datagram(5 | REPLY, &own)), Reply::Duplicate);
        assert_eq!(class(&datagram(3 | REPLY, &own)), Reply::Late);
        assert_eq!(class(&datagram(3 | REPLY, &own)), Reply::Duplicate, "a late reply once");
        assert_eq!(class(&datagram(2 | REPLY, &own)), Reply::Forged, "period 2 was never sent");
        assert_eq!(class(&datagram(6 | REPLY, &own)), Reply::Forged, "a period still to come");
        assert_eq!(class(&datagram(4 | REPLY, &[0; 10])), Reply::Forged, "other bytes");
        assert_eq!(class(&datagram(4 | REPLY, &own[..9])), Reply::Forged, "another size");
        assert_eq!(class(&datagram(4 | REPLY, &own)), Reply::Late);
    }

    #[test]
    fn an_echo_knows_its_own_address() {
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(is_own(at("127.0.0.1:9000"), at("127.0.0.1:9000")));
        assert!(!is_own(at("127.0.0.1:9000"), at("127.0.0.1:9001")));
        assert!(!is_own(at("10.0.0.2:9000"), at("10.0.0.1:9000")));
        assert!(is_own(at("0.0.0.0:9000"), at("127.0.0.1:9000")));
        assert!(!is_own(at("0.0.0.0:9000"), at("203.0.113.7:9000")), "not an address of this host");
    }
}
