//! The period probe: a cyclic loop, the way a control loop or a driver's 10 ms loop runs (AM3356
//! loop). It sleeps to absolute CLOCK_MONOTONIC deadlines every interval and records each
//! **cycle length**, the time from the previous wake-up to this one; the collector counts the
//! cycles shorter than `below` and longer than `above` (default −20 % / +20 % of the interval,
//! the AM3356 loop's 8 ms and 12 ms at 10 ms). Beside it, each cycle's **jitter**, how far its
//! length lies from the interval (|cycle − interval|): the cycle's histogram keeps three
//! significant digits of 10 ms (steps of 8 µs), the jitter's three of its own few microseconds
//! (steps of nanoseconds), as cyclictest's cycle-to-cycle figures need to be compared. A
//! deadline passed while the thread was held off its CPU is counted as missed and skipped, as
//! the timer probe does; the cycle across it is one long cycle (and one large jitter).
//!
//! The loop allocates nothing, takes no lock and prints nothing: its only system calls are
//! `clock_nanosleep` and `clock_gettime`; each cycle leaves as a fact through the thread's
//! [`Handoff`].

use super::options::{schedule, Given, ProbeOptions, RunTiming};
use super::{missed_after, Accounting, Figure, Handoff, Missed, Offer, Plugin, Probe, Role, RtLoop, Schedule, MAX_RUN_NS};
use crate::result::{ProbeResult, RunResult};
use crate::sys;
use crate::vocab::units::opt_us;
use crate::vocab::units::{parse_duration_ns, Nanos};
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// The probe's name in `--measure`, results and requirements.
pub const NAME: &str = "period";
/// The interval of a period loop unless its options set one: the AM3356 loop's.
pub const DEFAULT_INTERVAL_NS: u64 = 10_000_000;
/// Its series: the cycle lengths (judged by the bounds) and their distance from the interval.
pub const SERIES: &[&str] = &["cycle", "jitter"];
/// The headline: [`Accounting::BoundedCycles`] judges the headline series.
const CYCLE: usize = 0;
const JITTER: usize = 1;

/// The period probe, for the registry.
pub const PLUGIN: Plugin = Plugin {
    name: NAME,
    shapes: &[SERIES],
    options: "interval=DURATION (10ms), below=DURATION, above=DURATION, warmup=CYCLES",
    help,
    parse,
    missed: Missed::Period,
    published: |_| None,
    foreign: &[],
    summary: Some(summary),
    series_priority: super::priority_setting,
    swept: |_| false,
    offers: &[Offer { figure: Figure::Bounds, by: "a period loop's cycles", measure: "period (e.g. period:interval=10ms)" }],
};

/// `--measure`'s help on the period probe.
fn help() -> String {
    format!("{NAME} (a cyclic loop's cycle lengths; interval=10ms, below=, above=, warmup=CYCLES)")
}

/// The period probe's options, `period[:interval=10ms,below=8ms,above=12ms,warmup=1000]`: bounds
/// default to −20 % / +20 % of the interval; the warm-up to the run's (`warmup=` counts cycles).
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub interval_ns: u64,
    pub below_ns: u64,
    pub above_ns: u64,
    pub warmup: Option<u64>,
}

fn parse(given: &Given) -> Result<Arc<dyn ProbeOptions>, crate::vocab::Error> {
    parse_text(given).map_err(crate::vocab::Error::Invalid)
}

/// [`parse`], its failure as text.
fn parse_text(given: &Given) -> Result<Arc<dyn ProbeOptions>, String> {
    let mut interval_ns = DEFAULT_INTERVAL_NS;
    let (mut below, mut above, mut warmup) = (None, None, None);
    let time = |k: &str, v: &str| {
        parse_duration_ns(v, None).map_err(|e| {
            format!(
                "--measure '{}': {k}={v}: {e}; give a time with a unit, e.g. {k}={}",
                given.text,
                if k == "below" { "8ms" } else { "12ms" }
            )
        })
    };
    for (k, v) in given.options {
        match k.as_str() {
            "interval" => interval_ns = given.interval(v)?,
            "below" => below = Some(time(k, v)?),
            "above" => above = Some(time(k, v)?),
            "warmup" => {
                warmup =
                    Some(v.parse::<u64>().map_err(|_| {
                        format!("--measure '{}': warmup={v} is not a number of cycles, e.g. warmup=1000", given.text)
                    })?)
            }
            other => return Err(given.unknown(other)),
        }
    }
    let (below_ns, above_ns) = (below.unwrap_or(interval_ns / 10 * 8), above.unwrap_or(interval_ns / 10 * 12));
    if below_ns > above_ns {
        return Err(format!(
            "--measure '{}': below={} lies above above={}; e.g. below=8ms,above=12ms",
            given.text,
            Nanos(below_ns),
            Nanos(above_ns)
        ));
    }
    Ok(Arc::new(Options { interval_ns, below_ns, above_ns, warmup }))
}

impl ProbeOptions for Options {
    fn interval_ns(&self) -> Option<u64> {
        Some(self.interval_ns)
    }
    fn bind(&self, text: &str, timing: RunTiming) -> Result<Arc<dyn Probe>, crate::vocab::Error> {
        let interval_ns = self.interval_ns;
        let mut schedule = schedule(timing, interval_ns);
        if let Some(w) = self.warmup {
            let measured = schedule.periods - schedule.warmup_periods;
            schedule.warmup_periods = w;
            schedule.periods = w
                .checked_add(measured)
                .filter(|p| p.checked_mul(interval_ns).is_some_and(|ns| ns <= MAX_RUN_NS))
                .ok_or_else(|| {
                    format!(
                        "--measure '{text}': warmup={w} cycles makes the run longer than the limit of {}; e.g. warmup=1000",
                        Nanos(MAX_RUN_NS)
                    )
                })
                .map_err(crate::vocab::Error::Invalid)?;
        }
        Ok(Arc::new(PeriodProbe { schedule, below_ns: self.below_ns, above_ns: self.above_ns }))
    }
}

/// The period probe: its cycles and the bounds a cycle is judged by.
#[derive(Debug, Clone, Copy)]
pub struct PeriodProbe {
    pub schedule: Schedule,
    /// Cycles shorter than this count as `below`, longer than `above_ns` as `above`.
    pub below_ns: u64,
    pub above_ns: u64,
}

impl Probe for PeriodProbe {
    fn name(&self) -> &'static str {
        NAME
    }
    fn schedule(&self) -> Schedule {
        self.schedule
    }
    fn settings(&self) -> Vec<String> {
        vec![
            format!("interval={}", Nanos(self.schedule.interval_ns)),
            format!("below={}", Nanos(self.below_ns)),
            format!("above={}", Nanos(self.above_ns)),
            format!("warmup={}", self.schedule.warmup_periods),
        ]
    }
    fn accounting(&self) -> Accounting {
        // (the headline series, `CYCLE`, holds the cycle lengths)
        Accounting::BoundedCycles { below_ns: self.below_ns, above_ns: self.above_ns }
    }
    fn series(&self) -> &'static [&'static str] {
        SERIES
    }
    fn measures(&self, series: usize) -> Option<&'static str> {
        // A jitter is no latency: it counts in no worst case; a requirement names it.
        (series == JITTER).then_some("deviation")
    }
    fn instance(&self, cpu: usize, _cpus: &[usize]) -> Result<Vec<Role>, crate::vocab::Error> {
        let schedule = self.schedule;
        let setup: super::ThreadSetup = Box::new(move || Ok(Box::new(PeriodLoop { schedule }) as Box<dyn RtLoop>));
        Ok(vec![Role { series: vec![CYCLE, JITTER], ..Role::single(cpu, setup) }])
    }
}

/// The loop of one period thread.
pub struct PeriodLoop {
    schedule: Schedule,
}

impl RtLoop for PeriodLoop {
    /// Cycle `k` ends at the wake-up for the deadline `start_ns + k·interval`; its length is
    /// measured from the previous wake-up (from `start_ns` for the first), its jitter is the
    /// length's distance from the interval.
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        let Schedule { interval_ns: interval, periods: last, .. } = self.schedule;
        let [cycles, jitters] = out else { return };
        let (mut period, mut previous) = (1u64, start_ns);
        while period <= last && !stop.load(Relaxed) {
            let deadline = start_ns + period * interval;
            sys::time::sleep_until_monotonic(deadline);
            let now = sys::time::monotonic_ns();
            let missed_after = missed_after(now.saturating_sub(deadline), interval, last - period);
            let cycle = now - previous;
            cycles.served(period, cycle, missed_after);
            jitters.served(period, cycle.abs_diff(interval), missed_after);
            previous = now;
            period += missed_after + 1;
        }
    }
}

// ---- its section of the summary ----

/// Its section of the summary: each CPU's cycles, as the AM3356 loop reports them.
fn summary(r: &RunResult) -> String {
    let mut s = String::new();
    for p in r.probes.iter().filter(|p| p.bounds.is_some()) {
        let jitter = r.probes.iter().find(|j| j.probe == p.probe && j.cpu == p.cpu && j.measures.as_deref() == Some("deviation"));
        s += &cycle_report(p, jitter);
    }
    s
}

/// A period loop's cycles in the AM3356 loop's own format, with their jitter (`jitter`: the
/// entry of the same probe and CPU holding each cycle's distance from the interval).
fn cycle_report(p: &ProbeResult, jitter: Option<&ProbeResult>) -> String {
    let Some(b) = p.bounds else { return String::new() };
    let ms = |ns: Option<u64>| ns.map_or("-".to_string(), |v| format!("{:.2}ms", v as f64 / 1e6));
    let mut s = format!(
        "\n{} loop on {} (as the AM3356 loop reports it):\n  Cycles: {}\n  Below {}: {}\n  Above {}: {}\n  \
         Maximum cycle length: {}\n  Minimum cycle length: {}\n  Missed periods: {}\n",
        p.probe,
        p.scope(),
        p.samples,
        Nanos(b.below_ns),
        b.below,
        Nanos(b.above_ns),
        b.above,
        ms(p.max_ns),
        ms(p.min_ns),
        p.missed
    );
    if let Some(j) = jitter.filter(|j| j.samples > 0) {
        let _ = writeln!(
            s,
            "  Jitter (|cycle - interval|): median {} µs, p99 {} µs, max {} µs",
            opt_us(j.percentiles.get(50.0).flatten()),
            opt_us(j.percentiles.get(99.0).flatten()),
            opt_us(j.max_ns)
        );
    }
    s
}
