//! The timer probe's real-time loop: sleep to an absolute CLOCK_MONOTONIC deadline, read the
//! clock, record `wake-up − deadline`. This is the cyclictest measurement, with missed
//! deadlines counted instead of silently skipped.
//!
//! The loop allocates nothing, takes no lock and prints nothing: its only system calls are
//! `clock_nanosleep` and `clock_gettime`; each wake-up leaves as a fact (the period, its latency,
//! the periods missed after it) through the thread's [`Handoff`].

use super::{Handoff, Probe, Role, RtLoop, Schedule};
use crate::sys::{self, WaitMethod};
use crate::vocab::units::Nanos;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The probe's name in `--measure`, results and requirements.
pub const NAME: &str = "timer";

/// The wait methods by name (`timer:wait=NAME`), as the FirmTimers `measure_latency` compared them.
pub const WAIT_METHODS: &[(&str, WaitMethod)] = &[
    ("nanosleep-abs", WaitMethod::NanosleepAbs),
    ("nanosleep-rel", WaitMethod::NanosleepRel),
    ("timerfd", WaitMethod::Timerfd),
    ("posix-timer", WaitMethod::PosixTimer),
    ("select", WaitMethod::Select),
    ("poll", WaitMethod::Poll),
    ("itimer", WaitMethod::Itimer),
];

/// The timer probe: its periods and how it waits, resolved before the run (no globals, no
/// lookups in the loop).
#[derive(Debug, Clone, Copy)]
pub struct TimerProbe {
    pub schedule: Schedule,
    pub wait: WaitMethod,
}

impl Probe for TimerProbe {
    fn name(&self) -> &'static str {
        NAME
    }
    fn schedule(&self) -> Schedule {
        self.schedule
    }
    fn check_cpus(&self, cpus: &[usize]) -> Result<(), String> {
        if self.wait == WaitMethod::Itimer && cpus.len() > 1 {
            return Err("wait=itimer: the interval timer and its SIGALRM are one per process, so it measures one CPU; \
                        e.g. timer:wait=itimer@0"
                .to_string());
        }
        Ok(())
    }
    fn settings(&self) -> Vec<String> {
        let wait = WAIT_METHODS.iter().find(|(_, m)| *m == self.wait).map_or("?", |(n, _)| n);
        vec![format!("interval={}", Nanos(self.schedule.interval_ns)), format!("wait={wait}")]
    }
    fn instance(&self, cpu: usize, _cpus: &[usize]) -> Result<Vec<Role>, String> {
        let (schedule, wait) = (self.schedule, self.wait);
        Ok(vec![Role::single(
            cpu,
            Box::new(move || {
                // Made in the thread itself: a POSIX timer signals the thread that made it.
                let waiter = sys::Waiter::new(wait)
                    .map_err(|e| format!("cannot prepare its timer ({e}); choose another method, e.g. wait=nanosleep-abs"))?;
                Ok(Box::new(TimerLoop { schedule, waiter }) as Box<dyn RtLoop>)
            }),
        )])
    }
}

/// The loop of one timer thread.
pub struct TimerLoop {
    schedule: Schedule,
    waiter: sys::Waiter,
}

impl RtLoop for TimerLoop {
    /// Period `k` has its deadline at `start_ns + k·interval`. A wake-up after the deadlines of
    /// later periods means those periods passed while the thread was not running: the fact
    /// handed over says so (`missed_after`), and the thread resumes at the first deadline not
    /// yet passed, so there is no burst of catch-up samples. A wake-up exactly on the next
    /// deadline serves that period: only deadlines strictly before the wake-up are missed.
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        let Schedule { interval_ns: interval, periods: last, .. } = self.schedule;
        let out = &mut out[0];
        let mut period: u64 = 1;
        while period <= last && !stop.load(Relaxed) {
            let deadline = start_ns + period * interval;
            self.waiter.wait_until(deadline);
            let latency = sys::monotonic_ns().saturating_sub(deadline);
            let missed_after = missed_after(latency, interval, last - period);
            out.served(period, latency, missed_after);
            period += missed_after + 1;
        }
    }
}

/// Periods after the one just served whose deadlines lay strictly before a wake-up `latency_ns`
/// late, at most `remaining` (the periods left in the run). A wake-up exactly on the next
/// deadline serves that period: it is not missed.
#[inline(always)]
pub fn missed_after(latency_ns: u64, interval_ns: u64, remaining: u64) -> u64 {
    (latency_ns.saturating_sub(1) / interval_ns).min(remaining)
}

#[cfg(test)]
mod tests {
    use super::missed_after;

    #[test]
    fn a_wake_up_exactly_on_the_next_deadline_misses_nothing() {
        let ms = 1_000_000;
        assert_eq!(missed_after(0, ms, 10), 0);
        assert_eq!(missed_after(ms - 1, ms, 10), 0);
        assert_eq!(missed_after(ms, ms, 10), 0, "on the next deadline: that period is served");
        assert_eq!(missed_after(ms + 1, ms, 10), 1, "later than it: missed");
        assert_eq!(missed_after(3 * ms, ms, 10), 2);
        assert_eq!(missed_after(u64::MAX, ms, 10), 10, "never beyond the run");
    }
}
