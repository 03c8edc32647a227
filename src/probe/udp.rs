//! The UDP round-trip probe: the Cortex-A53 slides' UDP ping-pong between two boards. Every
//! interval the thread sends one sequence-numbered datagram to `rtgauge udp-echo` on the other
//! host and waits for it to come back until the next send is due: the round trip is
//! `reply − send`. A period whose reply does not come back before the next send is missed (lost,
//! or late); a reply that comes back after that is counted as `late`. Both ends run at an RT
//! priority; `busy-poll=` and `so-priority=` set `SO_BUSY_POLL` and `SO_PRIORITY` on the socket.
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
/// Its own counts: datagrams sent, and replies that came back after their period.
pub const COUNTERS: &[&str] = &["sent", "late"];
const SENT: usize = 0;
const LATE: usize = 1;
/// A datagram's first 8 bytes carry its sequence number (its period).
pub const MIN_SIZE: usize = 8;
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
        let timer =
            sys::PeriodicTimer::new().map_err(|e| format!("cannot make a timerfd ({e}): check that this kernel has timerfd"))?;
        Ok(UdpLoop { schedule: self.schedule, socket, timer, send: vec![0xa5; self.size], receive: vec![0; MAX_SIZE + 1] })
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
}

impl UdpLoop {
    /// Waits for the reply to `period` until the timer's next expiry (the next deadline); returns
    /// when it came. Replies to earlier periods that come meanwhile are late (counted in `late`).
    /// Nothing is armed while the datagram is out: the periodic timer ends the wait.
    #[inline(always)]
    fn reply(&mut self, period: u64, late: &mut u64) -> Option<u64> {
        while let Ok(true) = sys::readable_first(&self.socket, &self.timer) {
            while let Ok(n) = self.socket.recv(&mut self.receive) {
                let now = sys::monotonic_ns();
                let seq = (n >= MIN_SIZE).then(|| u64::from_le_bytes(self.receive[..8].try_into().expect("8 bytes")));
                match seq {
                    Some(s) if s == period => return Some(now),
                    Some(s) if s < period => *late += 1,
                    _ => {} // not ours
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
        let (mut period, mut sent, mut late) = (1u64, 0u64, 0u64);
        let armed = self.timer.arm(start_ns + interval, interval).is_ok();
        while armed && period <= last && !stop.load(Relaxed) {
            let expired = self.timer.wait();
            if expired == 0 {
                break; // the timer failed: the periods left are accounted below as missed
            }
            let skipped = (expired - 1).min(last - period);
            self.send[..8].copy_from_slice(&period.to_le_bytes());
            let sent_at = sys::monotonic_ns();
            if self.socket.send(&self.send).is_ok() {
                sent += 1;
                out.count(SENT, sent);
            }
            let late_before = late;
            if let Some(back) = self.reply(period, &mut late) {
                out.served(period, back - sent_at, skipped);
            }
            if late != late_before {
                out.count(LATE, late);
            }
            period += skipped + 1;
        }
        out.accounted_through((period - 1).min(last));
    }
}

/// `rtgauge udp-echo`: sends every datagram back to where it came from, on one thread at an RT
/// priority, until `stop` is set (looked at every 100 ms, on a periodic timer's expiry: no timer
/// is programmed while a datagram is being echoed). Returns the datagrams echoed.
pub fn echo(socket: &UdpSocket, stop: &AtomicBool) -> std::io::Result<u64> {
    const LOOK_NS: u64 = 100_000_000;
    let mut buf = vec![0u8; MAX_SIZE + 1];
    let look = sys::PeriodicTimer::new()?;
    look.arm(sys::monotonic_ns() + LOOK_NS, LOOK_NS)?;
    let mut echoed = 0u64;
    while !stop.load(Relaxed) {
        if !sys::readable_first(socket, &look)? {
            look.wait();
        }
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            if socket.send_to(&buf[..n], from).is_ok() {
                echoed += 1;
            }
        }
    }
    Ok(echoed)
}
