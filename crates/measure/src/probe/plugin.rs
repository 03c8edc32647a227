//! The plug-in a probe is: the [`Probe`] trait every probe implements, its periods
//! ([`Schedule`], [`Step`]), its threads ([`Role`]) and their real-time loops ([`RtLoop`]), and the
//! limits every probe's timing keeps.

use super::options::{Given, ProbeOptions};
use super::{Class, Handoff};
use crate::result::RunResult;
use crate::vocab::Error;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The longest interval accepted: a period loop slower than this is not a latency test.
pub const MAX_INTERVAL_NS: u64 = 10_000_000_000;
/// The longest run accepted, warm-up included (a year and a day).
pub const MAX_RUN_NS: u64 = 366 * 86_400 * 1_000_000_000;
/// The shortest interval accepted; below a microsecond every wake-up misses.
pub const MIN_INTERVAL_NS: u64 = 1_000;

/// When a probe's periods fall: period `k` (1-based) has its deadline at `start + k·interval`;
/// the first `warmup_periods` count in no statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    pub interval_ns: u64,
    pub warmup_periods: u64,
    /// Every period of the run, warm-up included; each one ends as a fact or a missed period.
    pub periods: u64,
}

impl Schedule {
    /// The window (1-based period, clamped to the last) an event at `at_ns` falls in, the run
    /// having started at `start_ns`: for probes whose facts are events.
    #[inline(always)]
    pub fn window_of(&self, start_ns: u64, at_ns: u64) -> u64 {
        (at_ns.saturating_sub(start_ns) / self.interval_ns + 1).min(self.periods)
    }

    /// The windows wholly passed by `now_ns` (accounted as reached, quiet or not).
    #[inline(always)]
    pub fn windows_passed(&self, start_ns: u64, now_ns: u64) -> u64 {
        (now_ns.saturating_sub(start_ns) / self.interval_ns).min(self.periods)
    }
}

/// One step of a probe's own timeline (the wake-up chain's rate sweep): from `start_ns` to
/// `end_ns` (from the start of the run; the first step holds the warm-up) it runs at its rate,
/// and plans `planned` measured events, judged by `bound_ns`. A step boundary is a phase
/// boundary of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub start_ns: u64,
    pub end_ns: u64,
    pub rate_per_s: u32,
    pub interval_ns: u64,
    pub planned: u64,
    pub bound_ns: u64,
}

/// One kind of measurement. The run (`crate::run`) knows probes only through this trait.
pub trait Probe: Send + Sync + std::fmt::Debug {
    /// Its name, as `--measure`, results and requirements write it.
    fn name(&self) -> &'static str;
    /// Its periods (every series of the probe follows them).
    fn schedule(&self) -> Schedule;
    /// Its settings, as the result's configuration records them (`interval=1ms`, ...).
    fn settings(&self) -> Vec<String>;
    /// How its facts are accounted (see [`Accounting`]): periods unless it says otherwise.
    fn accounting(&self) -> Accounting {
        Accounting::Periods
    }
    /// Names of counts of its own each thread keeps beside its facts (at most [`super::MAX_COUNTS`];
    /// [`Handoff::count`]), reported per CPU and summed: the UDP probe's `sent` and `late`.
    fn counters(&self) -> &'static [&'static str] {
        &[]
    }
    /// The names of the value series each instance reports, the headline first (the wake-up
    /// chain: `chain`, `handler`, `task`). Empty: one series, named by the probe alone.
    fn series(&self) -> &'static [&'static str] {
        &[]
    }
    /// What the values of series `series` are when they are not latencies (a UIO source's
    /// `interval`); `None`: latencies. Such values count in no worst case or cycle-time rule.
    fn measures(&self, _series: usize) -> Option<&'static str> {
        None
    }
    /// Its own timeline, if it changes during the run (the wake-up chain's rate sweep): each
    /// step is reported on its own, and its boundaries cut the run's phases.
    fn steps(&self) -> Vec<Step> {
        Vec::new()
    }
    /// The RT priorities of its threads when it sets their own, (lowest, highest) (the wake-up
    /// probe's `priority=`: its chain's task runs one below); `None`: they run at the run's.
    fn priorities(&self) -> Option<(i32, i32)> {
        None
    }
    /// Checks the CPUs the probe is to measure on, before anything runs (`cross` needs two).
    fn check_cpus(&self, _cpus: &[usize]) -> Result<(), Error> {
        Ok(())
    }
    /// The threads of the instance reported under `cpu` (`cpus`: every CPU the probe measures
    /// on), with their set-up. Called before any thread starts; state the threads share is
    /// made here.
    fn instance(&self, cpu: usize, cpus: &[usize]) -> Result<Vec<Role>, Error>;
    /// What it needs of the kernel for the whole run when it measures with one of the kernel's
    /// tracers (see `probe::kernel`); `None`: it measures with loops of its own.
    fn kernel(&self) -> Option<super::KernelTracer> {
        None
    }
    /// The threads of a kernel-tracer probe's instance under `cpu`, once the run-wide set-up
    /// made `kernel` (its tracefs instance, the tracer running): readers of the tracer's
    /// per-CPU output (`probe::kernel::TraceReader`). A probe that declares no [`Probe::kernel`]
    /// is never asked.
    fn kernel_instance(&self, cpu: usize, cpus: &[usize], _kernel: &super::KernelInstance) -> Result<Vec<Role>, Error> {
        self.instance(cpu, cpus)
    }
}

/// Periods after the one just served whose deadlines lay strictly before a wake-up `latency_ns`
/// late, at most `remaining` (the periods left in the run). A wake-up exactly on the next
/// deadline serves that period: it is not missed.
#[inline(always)]
pub fn missed_after(latency_ns: u64, interval_ns: u64, remaining: u64) -> u64 {
    (latency_ns.saturating_sub(1) / interval_ns).min(remaining)
}

/// How a probe's facts are accounted: one of a few kinds the collector, the result's assembly
/// and the checks before a run know, instead of one hook per probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accounting {
    /// One fact a period; a period whose deadline passed unserved is missed (the timer, the UDP
    /// round trip, the wake-up chain at one rate).
    Periods,
    /// Events rather than periods (a device's events, a rate sweep's): the schedule's periods are
    /// windows that place each event in time (its phase, its warm-up); a window is never missed,
    /// but events may be (a device's sequence numbers tell).
    Events,
    /// Periods whose headline series' values are cycle lengths judged by bounds: the collector
    /// counts the cycles under `below_ns` and over `above_ns` (the period loop).
    BoundedCycles { below_ns: u64, above_ns: u64 },
    /// A busy loop's gaps over `threshold_ns`, as events: its threads spin without sleeping (a CPU
    /// it shares with another probe starves that probe), and its results carry noise figures
    /// (the noise probe).
    Gaps { threshold_ns: u64 },
}

impl Accounting {
    /// Whether the facts are events placed in windows (see [`Accounting::Events`]).
    pub fn events(self) -> bool {
        matches!(self, Accounting::Events | Accounting::Gaps { .. })
    }

    /// The bounds the values of series `series` are judged by, (below, above): a bounded cycle's
    /// headline series.
    pub fn bounds(self, series: usize) -> Option<(u64, u64)> {
        match self {
            Accounting::BoundedCycles { below_ns, above_ns } if series == 0 => Some((below_ns, above_ns)),
            _ => None,
        }
    }

    /// The threshold of a gap, for the noise figures of gap-accounted results.
    pub fn noise_threshold(self) -> Option<u64> {
        match self {
            Accounting::Gaps { threshold_ns } => Some(threshold_ns),
            _ => None,
        }
    }

    /// Whether the threads spin without sleeping (gaps are measured by a busy loop).
    pub fn busy_loop(self) -> bool {
        matches!(self, Accounting::Gaps { .. })
    }
}

/// What a missed one of a probe's results is, as a stored result is judged (where no probe
/// object exists, only its name): a period, whose deadline passed (at least an interval late),
/// or an event, lost (it has no latency).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    Period,
    Event,
}

/// How many series a probe reports (at least one).
pub fn series_count(p: &dyn Probe) -> usize {
    p.series().len().max(1)
}

/// The name of series `s` of a probe, `None` for a probe's only, unnamed series.
pub fn series_name(p: &dyn Probe, s: usize) -> Option<&'static str> {
    p.series().get(s).copied()
}

/// A thread's set-up, run in the thread once it is pinned and at its priority, before the loads
/// start (it may allocate and open files; the loop may not): returns the loop.
pub type ThreadSetup = Box<dyn FnOnce() -> Result<Box<dyn RtLoop>, Error> + Send>;

/// One thread of a probe's instance.
pub struct Role {
    /// Its part, for the thread's name and messages (`handler`); empty for a probe's only thread.
    pub name: &'static str,
    pub cpu: usize,
    /// Its RT priority; `None`: the run's (`--priority`).
    pub priority: Option<i32>,
    /// The probe's series it reports (indices into [`Probe::series`]), one [`Handoff`] each, in
    /// this order.
    pub series: Vec<usize>,
    pub setup: ThreadSetup,
}

impl Role {
    /// The only thread of a one-thread, one-series probe.
    pub fn single(cpu: usize, setup: ThreadSetup) -> Role {
        Role { name: "", cpu, priority: None, series: vec![0], setup }
    }
}

/// A probe's real-time loop on one thread: allocates nothing, locks nothing, prints nothing.
pub trait RtLoop: Send {
    /// Runs from `start_ns` until every period is accounted for or `stop` is set, handing over
    /// each served period (and the periods missed after it) through `out`: one handoff per
    /// series of its role, in the role's order.
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]);
}

/// A probe as the registry knows it, before any run: its name, its series, what its options are
/// and how they are parsed, its help. Each probe's module defines one (`PLUGIN`); the registry
/// lists them, and nothing else names a probe.
#[derive(Clone, Copy)]
pub struct Plugin {
    /// Its name, as `--measure`, results and requirements write it.
    pub name: &'static str,
    /// Its series (see [`Probe::series`]) in each shape it can take (the wake-up probe's chain
    /// and ping-pong; the event probe's GPIO line and UIO device), the headline first: for
    /// requirements that name one, and to tell a headline.
    pub shapes: &'static [&'static [&'static str]],
    /// The options it accepts, in a line (for a message about an option it does not have).
    pub options: &'static str,
    /// What it measures and its options, for `--measure`'s help (`timer (wake-up latency; ...)`).
    pub help: fn() -> String,
    /// Parses its options, once (see [`ProbeOptions`]).
    pub parse: fn(&Given) -> Result<Arc<dyn ProbeOptions>, Error>,
    /// What a missed one of its results is (see [`Missed`]).
    pub missed: Missed,
    /// The kind of published figures its series `series` (`None`: its only, unnamed one) is
    /// placed among, if any (see [`Class`]).
    pub published: fn(Option<&str>) -> Option<Class>,
    /// Other tools that measure what it measures: their result files import as its results, and
    /// its results export in their formats (cyclictest's for the timer).
    pub foreign: &'static [&'static str],
    /// Its own section of the summary, after the figures (`None`: it has none); it reads the
    /// result document alone, so a stored run is summarised the same.
    pub summary: Option<fn(&RunResult) -> String>,
    /// The RT priority its series `series` (`None`: its only, unnamed one) ran at, as its stored
    /// `settings` say (its threads' own `priority=`; the wake-up chain's task one below), or
    /// `None`: at the run's. Exports that state each thread's priority read a stored run by it.
    pub series_priority: fn(settings: &[String], series: Option<&str>) -> Option<i32>,
    /// Whether its stored `settings` say it swept its rate (see [`Probe::steps`]): it then has
    /// no one interval, and may end before the run does.
    pub swept: fn(settings: &[String]) -> bool,
    /// The figures only some probes give that it gives (see [`Offer`]).
    pub offers: &'static [Offer],
}

/// The priority a probe's `priority=` setting gives its threads, every series alike: the
/// number that opens its value (`priority=90 (...)`).
pub fn priority_setting(settings: &[String], _series: Option<&str>) -> Option<i32> {
    let own = settings.iter().find_map(|s| s.strip_prefix("priority="))?;
    own.split_whitespace().next()?.parse::<i32>().ok()
}

/// A figure only some probes give, that a requirement's metric may judge: when a run gives none,
/// the message names a probe that does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Cycles counted under and over bounds (the metrics `below` and `above`).
    Bounds,
    /// The highest rate a sweep sustained (the metric `rate`).
    Rate,
}

/// How a probe gives a [`Figure`]: what gives it, as a message says it (`a period loop's
/// cycles`), and the `--measure` to add for it, with an example.
#[derive(Debug, Clone, Copy)]
pub struct Offer {
    pub figure: Figure,
    pub by: &'static str,
    pub measure: &'static str,
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
