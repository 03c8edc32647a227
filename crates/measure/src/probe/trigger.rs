//! The trace trigger (`--trace`): stops the kernel's trace of one CPU when a measured value
//! calls for it, so the trace kept holds the worst case. Shared by the measurement threads of the
//! CPU ([`super::Handoff`] offers it each new worst case) and read by the collector.

use super::seqlock;
use crate::sys;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// How many trace instances each traced CPU has (`--trace`). Every event is written into each
/// instance, so each one more costs the measured CPU event time on every wake-up: two are enough
/// to keep one always recording.
pub const TRACE_INSTANCES: usize = 2;

/// Stops the kernel's trace of one CPU when a measured value calls for it (`--trace`): the
/// first value over its threshold, then each new worst case over it (the threshold is 0 for
/// "every new worst case"). Each CPU is traced into [`TRACE_INSTANCES`] instances that take
/// turns: a firing stops the one that has recorded longest and hands the turn on. A firing that
/// would leave no instance recording is deferred instead: its facts are kept, and once the
/// collector has restarted an instance it arms the deferral ([`Self::arm_deferred`]); the CPU's
/// next measured wake-up then stops the instance that recorded through the deferred worst case
/// ([`Self::tick`]) — so a new worst case right after another one (a stall right after the small
/// latencies of its own start, while the collector still reads their trace: seen in CI's guests)
/// is traced whole, and one instance always records. The stop waits for a wake-up because only
/// a wake-up shows that no larger latency is under way on the CPU: stopped by the collector in
/// the middle of a stall, the instance that had recorded through the stall's start was lost to
/// a smaller, older worst case (CI beside a load, x86 guest: the stall traced from 58 ms into
/// it). Shared by every measurement thread on that CPU; made by the
/// trace stage, which owns the `tracing_on` files, and read by the collector. Firing is one
/// `write` of the RT thread, after its fact was handed over; otherwise an offer costs a few loads.
#[derive(Debug)]
pub struct TraceTrigger {
    /// `tracing_on` of the CPU's trace instances (raw: the trace stage keeps them open for
    /// longer than any measurement thread lives).
    fds: [i32; TRACE_INSTANCES],
    threshold_ns: u64,
    /// Whether each instance records (a stopped one waits for the collector).
    recording: [AtomicBool; TRACE_INSTANCES],
    /// The instance the next firing stops (if it records): the one restarted longest ago.
    turn: std::sync::atomic::AtomicUsize,
    /// Per instance: how many times it was stopped, and the last stop's facts (published before
    /// the count).
    pub fired: [AtomicU64; TRACE_INSTANCES],
    pub value_ns: [AtomicU64; TRACE_INSTANCES],
    /// CLOCK_MONOTONIC right after the value was measured.
    pub at_ns: [AtomicU64; TRACE_INSTANCES],
    /// The firing thread's id and the index of its series (in the run's series order).
    pub tid: [AtomicU64; TRACE_INSTANCES],
    pub series: [AtomicU64; TRACE_INSTANCES],
    /// The last new worst case deferred (every other instance was stopped), with how many were;
    /// how many the collector has seen, and how many of them it traced.
    deferred: seqlock::SeqFacts<4>,
    deferred_seen: AtomicU64,
    pub deferred_traced: AtomicU64,
    /// A deferral the next measured wake-up of the CPU carries out (set by the collector).
    armed: AtomicBool,
}

impl TraceTrigger {
    pub fn new(fds: [i32; TRACE_INSTANCES], threshold_ns: u64) -> TraceTrigger {
        let zeros = || std::array::from_fn(|_| AtomicU64::new(0));
        TraceTrigger {
            fds,
            threshold_ns,
            recording: std::array::from_fn(|_| AtomicBool::new(true)),
            turn: std::sync::atomic::AtomicUsize::new(0),
            fired: zeros(),
            value_ns: zeros(),
            at_ns: zeros(),
            tid: zeros(),
            series: zeros(),
            deferred: seqlock::SeqFacts::default(),
            deferred_seen: AtomicU64::new(0),
            deferred_traced: AtomicU64::new(0),
            armed: AtomicBool::new(false),
        }
    }

    /// Instance `i` records again (the collector read and restarted it).
    pub fn restarted(&self, i: usize) {
        self.recording[i].store(true, std::sync::atomic::Ordering::Release);
    }

    /// New worst cases neither traced at once nor by [`Self::fire_deferred`] (a later, larger
    /// one came first).
    pub fn untraced(&self) -> u64 {
        self.deferred.read().1 - self.deferred_traced.load(Relaxed)
    }

    /// Stops instance `i` if it records, with the facts of the value that stopped it.
    #[inline(always)]
    fn stop(&self, i: usize, [value_ns, at_ns, tid, series]: [u64; 4]) -> bool {
        use std::sync::atomic::Ordering::{AcqRel, Release};
        if !self.recording[i].swap(false, AcqRel) {
            return false;
        }
        sys::fd::stop_trace(self.fds[i]);
        self.value_ns[i].store(value_ns, Relaxed);
        self.at_ns[i].store(at_ns, Relaxed);
        self.tid[i].store(tid, Relaxed);
        self.series[i].store(series, Relaxed);
        self.fired[i].fetch_add(1, Release);
        self.turn.store((i + 1) % TRACE_INSTANCES, Relaxed);
        true
    }

    /// The recording instance whose turn it is, and whether another one records too.
    fn next_recording(&self) -> Option<(usize, bool)> {
        use std::sync::atomic::Ordering::Acquire;
        let turn = self.turn.load(Relaxed);
        let on: [bool; TRACE_INSTANCES] = std::array::from_fn(|i| self.recording[i].load(Acquire));
        let i = (0..TRACE_INSTANCES).map(|k| (turn + k) % TRACE_INSTANCES).find(|&i| on[i])?;
        Some((i, (0..TRACE_INSTANCES).any(|k| k != i && on[k])))
    }

    /// A new worst case `value_ns` of thread `tid`'s series `series`: over the threshold, stops
    /// the recording instance whose turn it is if another one records on, else defers it.
    #[inline(always)]
    pub(super) fn offer(&self, value_ns: u64, tid: u64, series: u64) {
        if value_ns <= self.threshold_ns {
            return;
        }
        let facts = [value_ns, sys::time::monotonic_ns(), tid, series];
        match self.next_recording() {
            Some((i, true)) if self.stop(i, facts) => self.supersede_deferred(value_ns),
            // (Another thread of the CPU writing a deferral at this very moment: it keeps its own.)
            _ => {
                self.deferred.try_publish(facts);
            }
        }
    }

    /// A deferred worst case no larger than `value_ns`, which just stopped an instance, is not
    /// traced any more (it counts as untraced): the CPU's worst traced latency is what is kept.
    #[cold]
    fn supersede_deferred(&self, value_ns: u64) {
        if let Some(([v, ..], n)) = self.deferred.try_read() {
            if v <= value_ns {
                self.deferred_seen.fetch_max(n, Relaxed);
            }
        }
    }

    /// Whether a deferred worst case the collector has not fired yet is larger than `value_ns`:
    /// then the trace `value_ns` stopped would only be replaced by the deferred one's, and the
    /// instance that records through the deferred one should be stopped first (under a loaded
    /// host, reading a trace takes seconds, and that instance's buffer wraps meanwhile).
    pub fn deferred_exceeds(&self, value_ns: u64) -> bool {
        // (being rewritten: a new one comes, told at the next look)
        self.deferred.try_read().is_some_and(|([v, ..], n)| n != self.deferred_seen.load(Relaxed) && v > value_ns)
    }

    /// The collector, after restarting an instance during the run: a new deferred worst case,
    /// now that another instance records, is carried out by the CPU's next measured wake-up.
    pub fn arm_deferred(&self) {
        let unseen = self.deferred.try_read().is_some_and(|(_, n)| n > self.deferred_seen.load(Relaxed));
        if unseen && matches!(self.next_recording(), Some((_, true))) {
            self.armed.store(true, std::sync::atomic::Ordering::Release);
        }
    }

    /// A measurement thread of the CPU, after handing over a wake-up (and offering it): carries
    /// out an armed deferral. One load unless one is armed.
    #[inline(always)]
    pub fn tick(&self) {
        if self.armed.load(Relaxed) {
            self.fire_armed();
        }
    }

    #[cold]
    #[inline(never)]
    fn fire_armed(&self) {
        if self.armed.swap(false, std::sync::atomic::Ordering::AcqRel) {
            self.fire_deferred();
        }
    }

    /// The last deferred worst case, if any is new, stops the instance that recorded through it
    /// (if another records). Called by [`Self::tick`], and by the collector once the
    /// measurement has ended. Returns whether it did.
    pub fn fire_deferred(&self) -> bool {
        // (being rewritten, or no other instance recording: kept for a later call)
        let Some((facts, n)) = self.deferred.try_read() else { return false };
        if n <= self.deferred_seen.load(Relaxed) {
            return false;
        }
        let Some((i, true)) = self.next_recording() else { return false };
        self.deferred_seen.fetch_max(n, Relaxed);
        let fired = self.stop(i, facts);
        if fired {
            self.deferred_traced.fetch_add(1, Relaxed);
        }
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::{TraceTrigger, TRACE_INSTANCES};
    use std::sync::atomic::Ordering::Relaxed;

    fn fired(t: &TraceTrigger) -> Vec<u64> {
        t.fired.iter().map(|f| f.load(Relaxed)).collect()
    }

    /// A trigger whose instances but the last were stopped by small new worst cases (10 ns, 11 ns,
    /// ... of thread 7's series 0), and wait to be read.
    fn all_but_the_last_stopped() -> TraceTrigger {
        let t = TraceTrigger::new([-1; TRACE_INSTANCES], 0);
        for k in 0..TRACE_INSTANCES - 1 {
            t.offer(10 + k as u64, 7, 0);
        }
        t
    }

    /// CI (x86 guest): two small new worst cases right before a 300 ms stall stopped both
    /// instances; the collector restarted one in the middle of the stall, and the stall was
    /// traced from there on only. A firing now always leaves an instance recording.
    #[test]
    fn a_stall_after_quick_worst_cases_is_traced_by_an_instance_that_recorded_all_along() {
        let n = TRACE_INSTANCES;
        let t = TraceTrigger::new([-1; TRACE_INSTANCES], 0);
        for k in 0..n - 1 {
            t.offer(10 + k as u64, 1, 0);
            assert_eq!(fired(&t).iter().sum::<u64>(), k as u64 + 1);
        }
        // All but one stopped: the next new worst case stops nothing, and the last instance
        // keeps recording.
        t.offer(100, 1, 0);
        assert_eq!(fired(&t).iter().sum::<u64>(), n as u64 - 1);
        assert_eq!(t.untraced(), 1);
        assert!(t.recording[n - 1].load(Relaxed));
        // The collector restarts the first; the stall stops the one that recorded all along.
        t.restarted(0);
        t.offer(300_000_000, 1, 0);
        assert_eq!(t.fired[n - 1].load(Relaxed), 1);
        assert_eq!(t.value_ns[n - 1].load(Relaxed), 300_000_000);
        assert!(t.recording[0].load(Relaxed), "the restarted one records on");
    }

    /// CI (x86 RT guest, a loaded host): the stall's worst case came while the trace of the
    /// small latencies before it was still being read, and was not traced at all. Deferred, it
    /// stops the instance that recorded through it as soon as another one records again.
    #[test]
    fn a_worst_case_while_the_other_trace_is_read_is_traced_once_it_is_restarted() {
        let n = TRACE_INSTANCES;
        let t = all_but_the_last_stopped();
        t.offer(200, 7, 1);
        t.offer(300_000_000, 7, 2);
        assert!(!t.fire_deferred(), "nothing else records yet");
        assert!(t.recording[n - 1].load(Relaxed));
        t.restarted(0);
        assert!(t.fire_deferred());
        assert_eq!(t.fired[n - 1].load(Relaxed), 1);
        assert_eq!(t.value_ns[n - 1].load(Relaxed), 300_000_000, "the last (largest) deferred one");
        assert_eq!(t.series[n - 1].load(Relaxed), 2);
        assert_eq!(t.untraced(), 1, "the 200 ns one, superseded");
        assert!(!t.fire_deferred(), "each deferred worst case once");
        assert!(t.recording[0].load(Relaxed), "one instance always records");
    }

    /// CI beside a load (x86 standard guest): the stall's worst case came while the trace of a
    /// small one was read; deferred, it waited for that read — seconds under an emulator on a
    /// loaded host — and the instance recording through it wrapped past its window (the stall
    /// traced with 28 of its 300 ms). A larger deferred worst case makes the trace being read
    /// moot: the collector gives that read up, and the deferral stops the other instance at once.
    #[test]
    fn a_larger_deferred_worst_case_supersedes_the_trace_being_read() {
        let t = all_but_the_last_stopped();
        let read_value = t.value_ns[0].load(Relaxed);
        assert!(!t.deferred_exceeds(read_value), "nothing deferred yet");
        // A smaller one of another thread is deferred: the trace being read stays wanted.
        t.offer(5, 8, 1);
        assert!(!t.deferred_exceeds(read_value));
        t.offer(300_000_000, 7, 2);
        assert!(t.deferred_exceeds(read_value), "the stall's, larger, waits");
        t.restarted(0);
        assert!(t.fire_deferred());
        assert!(!t.deferred_exceeds(read_value), "fired: nothing waits any more");
    }

    /// CI beside a load (x86 standard guest): the stall traced from 58 ms into it. A small
    /// worst case of the stall's own start was deferred; the collector restarted the other
    /// instance in the middle of the stall and at once stopped the one that had recorded through
    /// the stall's start, for that small one. Now the deferral waits for the CPU's next wake-up:
    /// the stall's own, larger worst case then stops that instance, and the small one is
    /// superseded.
    #[test]
    fn a_deferral_waits_for_a_wake_up_so_a_stall_under_way_keeps_its_start() {
        let t = all_but_the_last_stopped();
        let last = TRACE_INSTANCES - 1;
        t.offer(20, 7, 0);
        // The collector restarts the instance it read, during the stall; nothing stops yet.
        t.restarted(0);
        t.arm_deferred();
        assert!(t.recording.iter().all(|r| r.load(Relaxed)), "no wake-up yet: every instance records");
        assert_eq!(fired(&t).iter().sum::<u64>(), TRACE_INSTANCES as u64 - 1);
        // The stall's wake-up: its own worst case first, then the tick.
        t.offer(300_000_000, 7, 0);
        t.tick();
        assert_eq!(t.value_ns[last].load(Relaxed), 300_000_000, "the instance that recorded through the stall");
        assert!(t.recording[0].load(Relaxed), "the restarted one records on");
        assert_eq!(t.untraced(), 1, "the small one, superseded");
        assert!(!t.fire_deferred(), "nothing left to fire");
    }

    /// Without a larger one, the next wake-up carries the armed deferral out.
    #[test]
    fn an_armed_deferral_stops_the_instance_at_the_next_wake_up() {
        let t = all_but_the_last_stopped();
        let last = TRACE_INSTANCES - 1;
        t.offer(20, 7, 1);
        t.tick();
        assert!(t.recording[last].load(Relaxed), "not armed: a tick stops nothing");
        t.arm_deferred();
        assert!(!t.armed.load(Relaxed), "nothing else records yet: not armed");
        t.restarted(0);
        t.arm_deferred();
        t.tick();
        assert_eq!(t.fired[last].load(Relaxed), 1);
        assert_eq!((t.value_ns[last].load(Relaxed), t.series[last].load(Relaxed)), (20, 1));
        assert_eq!(t.untraced(), 0);
        t.tick();
        assert_eq!(fired(&t).iter().sum::<u64>(), TRACE_INSTANCES as u64, "each deferral once");
        assert!(t.recording[0].load(Relaxed), "one instance always records");
    }

    #[test]
    fn values_at_or_under_the_threshold_stop_nothing() {
        let t = TraceTrigger::new([-1; TRACE_INSTANCES], 100);
        t.offer(100, 1, 0);
        assert_eq!(fired(&t), vec![0; TRACE_INSTANCES]);
        t.offer(101, 1, 0);
        assert_eq!(fired(&t).iter().sum::<u64>(), 1);
    }
}
