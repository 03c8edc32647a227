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

use super::{Handoff, Probe, Role, RtLoop, Schedule};
use crate::sys;
use crate::vocab::units::Nanos;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

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
    fn instance(&self, cpu: usize, _cpus: &[usize]) -> Result<Vec<Role>, String> {
        let p = *self;
        Ok(vec![Role::single(cpu, Box::new(move || Ok(Box::new(p.open()?) as Box<dyn RtLoop>)))])
    }
}

impl UdpProbe {
    /// The thread's socket, connected to the target, with its options, and its buffers.
    fn open(&self) -> Result<UdpLoop, String> {
        let local: SocketAddr = if self.target.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().expect("valid");
        let socket = UdpSocket::bind(local)
            .map_err(|e| format!("cannot open a UDP socket ({e}): check that this kernel and process may use UDP"))?;
        socket.connect(self.target).map_err(|e| format!("cannot reach {}: {e}; check target=ADDR:PORT", self.target))?;
        socket.set_nonblocking(true).map_err(|e| {
            format!("cannot make the UDP socket non-blocking ({e}): check that this kernel and process may use UDP")
        })?;
        if self.busy_poll_us > 0 {
            sys::set_busy_poll(&socket, self.busy_poll_us)
                .map_err(|e| format!("SO_BUSY_POLL refused ({e}): drop busy-poll= or run as root"))?;
        }
        if let Some(p) = self.so_priority {
            sys::set_socket_priority(&socket, p)
                .map_err(|e| format!("SO_PRIORITY {p} refused ({e}): drop so-priority= or run as root"))?;
        }
        self.refused_at_once(&socket)?;
        let timer =
            sys::PeriodicTimer::new().map_err(|e| format!("cannot make a timerfd ({e}): check that this kernel has timerfd"))?;
        // The thread's own bytes after the sequence number: a reply must carry them back.
        let mut send = vec![0xa5; self.size];
        let own =
            sys::random_u64().map_err(|e| format!("cannot read random bytes ({e}): check that this kernel has getrandom"))?;
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
                 start 'rtgauge udp-echo --listen {}' there, or check target=",
                self.target, self.target
            )
        };
        match socket.send(&[]) {
            Err(e) if refused(&e) => return Err(says()),
            _ => {}
        }
        if let Ok(true) = sys::wait_readable_until(socket, Some(sys::monotonic_ns() + REFUSAL_WAIT_NS)) {
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
    timer: sys::PeriodicTimer,
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
        let seq = u64::from_le_bytes(got[..MIN_SIZE].try_into().expect("8 bytes"));
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
        while let Ok(true) = sys::readable_first(&self.socket, &self.timer) {
            loop {
                match self.socket.recv(&mut self.receive) {
                    Ok(n) => {
                        let now = sys::monotonic_ns();
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
            let sent_at = sys::monotonic_ns();
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
    let look = sys::PeriodicTimer::new()?;
    look.arm(sys::monotonic_ns() + LOOK_NS, LOOK_NS)?;
    let mut e = Echoed::default();
    let go_on = || !stop.load(Relaxed) && until_ns.is_none_or(|t| sys::monotonic_ns() < t);
    while go_on() {
        if !sys::readable_first(socket, &look)? {
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
