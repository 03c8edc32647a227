//! The wake-up probe's ping-pong shape (`shape=ping-pong`): what rt-tests' ptsematest, pmqtest
//! and sigwaittest time, on rtgauge's run. A receiver woken by a periodic timer every
//! interval posts the period's event to a sender and blocks; the sender, woken, posts back at
//! once. Both threads run at the probe's priority (as the rt-tests tools' do), on one CPU or, with
//! `cross`, the sender on the next. Two series per CPU:
//! - `pong`, the headline: the receiver's wake-up − the sender's post: rt-tests' figure, the
//!   wake-up of a thread that blocked microseconds before;
//! - `ping`: the sender's wake-up − the receiver's post, a thread that blocked an interval before
//!   (the counterpart of the chain's `task`).
//!
//! Periods follow the receiver's timer: the periods whose deadlines passed while a round trip or
//! a preemption held it are missed in both series (the sender's gap shows them). Two channels of
//! the chosen mechanism carry the posts, one each way. Neither loop allocates, locks or prints;
//! the sender's post time passes through an atomic the receiver reads once it has been woken.

use super::{periodic_timer, poster_setup, task_events, waiter_setup, Shared, WakeupProbe};
use crate::probe::{Handoff, Role, RtLoop, Schedule};
use crate::sys::{self, wake::WakeChannel};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;

/// Indices into [`super::PING_PONG_SERIES`].
const PONG: usize = 0;
const PING: usize = 1;

/// What the receiver and the sender of one instance share.
struct PingPong {
    /// The receiver's posts to the sender, with the event each carries (its period, deadline
    /// and post time) and the receiver's end.
    ping: Shared,
    /// The sender's posts back.
    pong: WakeChannel,
    /// When the sender posted its latest reply; written before the post, read after the wake-up.
    replied: AtomicU64,
}

/// The receiver and the sender of the instance reported under `cpu`: `ping` and `pong` are two
/// channels of the probe's mechanism, one each way.
pub(super) fn roles(p: &WakeupProbe, (cpu, sender_cpu): (usize, usize), ping: WakeChannel, pong: WakeChannel) -> Vec<Role> {
    let shared = Arc::new(PingPong { ping: Shared::new(ping), pong, replied: AtomicU64::new(0) });
    let (schedule, via, receiver, sender) = (p.schedule, p.via_name(), shared.clone(), shared);
    vec![
        Role {
            name: "receiver",
            cpu,
            priority: Some(p.priority),
            series: vec![PONG],
            setup: Box::new(move || {
                poster_setup(&receiver.ping.channel, via, "receiver").map_err(crate::vocab::Error::System)?;
                waiter_setup(&receiver.pong, via, "receiver").map_err(crate::vocab::Error::System)?;
                let timer = periodic_timer("receiver").map_err(crate::vocab::Error::System)?;
                Ok(Box::new(ReceiverLoop { schedule, timer, shared: receiver }) as Box<dyn RtLoop>)
            }),
        },
        Role {
            name: "sender",
            cpu: sender_cpu,
            priority: Some(p.priority),
            series: vec![PING],
            setup: Box::new(move || {
                poster_setup(&sender.pong, via, "sender").map_err(crate::vocab::Error::System)?;
                waiter_setup(&sender.ping.channel, via, "sender").map_err(crate::vocab::Error::System)?;
                Ok(Box::new(SenderLoop { shared: sender }) as Box<dyn RtLoop>)
            }),
        },
    ]
}

/// The receiver: woken by a periodic timer the kernel re-arms, it posts the period's event,
/// blocks until the sender's reply and times its wake-up from the reply's post.
struct ReceiverLoop {
    schedule: Schedule,
    timer: sys::timer::PeriodicTimer,
    shared: Arc<PingPong>,
}

impl RtLoop for ReceiverLoop {
    /// A timer wake-up serves the first period not yet served; the timer's count says how many
    /// later periods also expired meanwhile (during the last round trip, or a preemption): those
    /// passed unserved, as in the chain's handler.
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        let Schedule { interval_ns: interval, periods: last, .. } = self.schedule;
        let (out, pp) = (&mut out[0], &*self.shared);
        let (mut period, mut posted, mut seen) = (1u64, 0u32, 0u32);
        let armed = self.timer.arm(start_ns + interval, interval).is_ok();
        while armed && period <= last && !stop.load(Relaxed) {
            let expired = self.timer.wait();
            pp.ping.publish(period, start_ns + period * interval, sys::time::monotonic_ns());
            pp.ping.channel.post(&mut posted);
            pp.pong.wait(&mut seen);
            let now = sys::time::monotonic_ns();
            pp.pong.woken(&mut seen);
            let reply = now.saturating_sub(pp.replied.load(Acquire));
            let missed_after = expired.saturating_sub(1).min(last - period);
            out.served(period, reply, missed_after);
            period += missed_after + 1;
        }
        pp.ping.last_event.store(out.done(), Relaxed);
        pp.ping.done.store(true, Release);
        pp.ping.channel.finish(posted);
    }
}

/// The sender: waits for the receiver's event, hands over its own wake-up, then notes the time
/// and posts back (its fact is handed over first, so the reply's latency holds none of it).
struct SenderLoop {
    shared: Arc<PingPong>,
}

impl RtLoop for SenderLoop {
    fn run(&mut self, _start_ns: u64, _stop: &AtomicBool, out: &mut [Handoff]) {
        let (pp, out) = (&*self.shared, &mut out[0]);
        let mut posted = 0u32;
        let taken = task_events(&pp.ping, |now, (event, _, ping_ns), taken| {
            if event > taken {
                out.served(event, now.saturating_sub(ping_ns), 0);
                pp.replied.store(sys::time::monotonic_ns(), Release);
                pp.pong.post(&mut posted);
            }
        });
        pp.pong.release(posted);
        // Events after the last one taken were never received (or never posted).
        out.accounted_through(pp.ping.last_event.load(Relaxed).max(taken));
    }
}
