//! The timer probe's real-time loop: sleep to an absolute CLOCK_MONOTONIC deadline, read the
//! clock, record `wake-up − deadline`. This is the cyclictest measurement, with missed
//! deadlines counted instead of silently skipped.
//!
//! The loop allocates nothing, takes no lock and prints nothing: its only system calls are
//! `clock_nanosleep` and `clock_gettime`; each wake-up leaves as a fact (the period, its latency,
//! the periods missed after it) through the thread's [`Handoff`].

use super::options::{named, names_of, schedule, Given, ProbeOptions, RunTiming};
use super::{missed_after, Class, Handoff, Missed, Plugin, Probe, Role, RtLoop, Schedule};
use crate::sys::{self, timer::WaitMethod};
use crate::vocab::units::Nanos;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

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

/// The timer probe, for the registry.
pub const PLUGIN: Plugin = Plugin {
    name: NAME,
    shapes: &[&[]],
    options: "interval=DURATION, wait=nanosleep-abs|nanosleep-rel|timerfd|posix-timer|select|poll|itimer",
    help,
    parse,
    missed: Missed::Period,
    published: |_| Some(Class::Timer),
    foreign: &["cyclictest", "jitterdebugger"],
    summary: None,
    series_priority: super::priority_setting,
    swept: |_| false,
    offers: &[],
};

/// `--measure`'s help on the timer probe.
fn help() -> String {
    format!("{NAME} (wake-up latency; interval=, wait={}; itimer measures one CPU)", names_of(WAIT_METHODS, "|"))
}

/// The timer probe's options: `timer[:interval=DURATION,wait=METHOD]`.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// `None`: the run's interval.
    pub interval_ns: Option<u64>,
    pub wait: WaitMethod,
}

fn parse(given: &Given) -> Result<Arc<dyn ProbeOptions>, crate::vocab::Error> {
    parse_text(given).map_err(crate::vocab::Error::Invalid)
}

/// [`parse`], its failure as text.
fn parse_text(given: &Given) -> Result<Arc<dyn ProbeOptions>, String> {
    let mut o = Options { interval_ns: None, wait: WaitMethod::NanosleepAbs };
    for (k, v) in given.options {
        match k.as_str() {
            "interval" => o.interval_ns = Some(given.interval(v)?),
            "wait" => {
                o.wait = named(WAIT_METHODS, v).ok_or_else(|| {
                    format!(
                        "--measure '{}': wait={v} is not a wait method; choose one of {}",
                        given.text,
                        names_of(WAIT_METHODS, ", ")
                    )
                })?
            }
            other => return Err(given.unknown(other)),
        }
    }
    Ok(Arc::new(o))
}

impl ProbeOptions for Options {
    fn interval_ns(&self) -> Option<u64> {
        self.interval_ns
    }
    fn bind(&self, _text: &str, timing: RunTiming) -> Result<Arc<dyn Probe>, crate::vocab::Error> {
        let schedule = schedule(timing, self.interval_ns.unwrap_or(timing.interval_ns));
        Ok(Arc::new(TimerProbe { schedule, wait: self.wait }))
    }
}

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
    fn check_cpus(&self, cpus: &[usize]) -> Result<(), crate::vocab::Error> {
        if self.wait == WaitMethod::Itimer && cpus.len() > 1 {
            return Err(crate::vocab::Error::Invalid(
                "wait=itimer: the interval timer and its SIGALRM are one per process, so it measures one CPU; \
                 e.g. timer:wait=itimer@0"
                    .to_string(),
            ));
        }
        Ok(())
    }
    fn settings(&self) -> Vec<String> {
        let wait = WAIT_METHODS.iter().find(|(_, m)| *m == self.wait).map_or("?", |(n, _)| n);
        vec![format!("interval={}", Nanos(self.schedule.interval_ns)), format!("wait={wait}")]
    }
    fn instance(&self, cpu: usize, _cpus: &[usize]) -> Result<Vec<Role>, crate::vocab::Error> {
        let (schedule, wait) = (self.schedule, self.wait);
        Ok(vec![Role::single(
            cpu,
            Box::new(move || {
                // Made in the thread itself: a POSIX timer signals the thread that made it.
                let waiter = sys::timer::Waiter::new(wait)
                    .map_err(|e| format!("cannot prepare its timer ({e}); choose another method, e.g. wait=nanosleep-abs"))
                    .map_err(crate::vocab::Error::System)?;
                Ok(Box::new(TimerLoop { schedule, waiter }) as Box<dyn RtLoop>)
            }),
        )])
    }
}

/// The loop of one timer thread.
pub struct TimerLoop {
    schedule: Schedule,
    waiter: sys::timer::Waiter,
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
            let latency = sys::time::monotonic_ns().saturating_sub(deadline);
            let missed_after = missed_after(latency, interval, last - period);
            out.served(period, latency, missed_after);
            period += missed_after + 1;
        }
    }
}
