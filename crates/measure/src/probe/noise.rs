//! The noise probe: the OS and hardware noise floor beneath every other figure, measured as
//! oslat does. A busy loop per CPU reads the clock as fast as it can; whenever two reads lie
//! further apart than the threshold, something else ran (an interrupt, a kernel thread, the
//! hypervisor, RT throttling) and the gap is handed over as an event: its length, in the window
//! of `interval` where it ended. Nothing is ever missed: a quiet window has no event.
//!
//! The loop allocates nothing, takes no lock and prints nothing; between its start and its end
//! it makes no system call at all (the clock is read in the vDSO).

use super::options::{schedule, Given, ProbeOptions, RunTiming};
use super::{Accounting, Handoff, Missed, Plugin, Probe, Role, RtLoop, Schedule};
use crate::result::{ProbeResult, RunResult};
use crate::sys;
use crate::vocab::units::opt_us;
use crate::vocab::units::{parse_duration_ns, Nanos};
use crate::vocab::Count;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// The probe's name in `--measure`, results and requirements.
pub const NAME: &str = "noise";
/// Gaps longer than this are noise unless `threshold=` says otherwise (oslat's histogram
/// starts at 1 µs).
pub const DEFAULT_THRESHOLD_NS: u64 = 1_000;

/// The noise probe, for the registry.
pub const PLUGIN: Plugin = Plugin {
    name: NAME,
    shapes: &[&[]],
    options: "threshold=DURATION (1us), interval=DURATION (the window events are placed in)",
    help,
    parse,
    missed: Missed::Period,
    published: |_| None,
    foreign: &["oslat"],
    summary: Some(summary),
    series_priority: super::priority_setting,
    swept: |_| false,
    offers: &[],
};

/// `--measure`'s help on the noise probe.
fn help() -> String {
    format!("{NAME} (a busy loop's gaps over a threshold, as oslat: threshold=1us; give it CPUs of its own)")
}

/// The noise probe's options, `noise[:threshold=1us,interval=1ms]`.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// The windows events are placed in; `None`: the run's interval.
    pub interval_ns: Option<u64>,
    pub threshold_ns: u64,
}

fn parse(given: &Given) -> Result<Arc<dyn ProbeOptions>, crate::vocab::Error> {
    parse_text(given).map_err(crate::vocab::Error::Invalid)
}

/// [`parse`], its failure as text.
fn parse_text(given: &Given) -> Result<Arc<dyn ProbeOptions>, String> {
    let mut o = Options { interval_ns: None, threshold_ns: DEFAULT_THRESHOLD_NS };
    for (k, v) in given.options {
        match k.as_str() {
            "interval" => o.interval_ns = Some(given.interval(v)?),
            "threshold" => {
                o.threshold_ns = parse_duration_ns(v, None).ok().filter(|t| (1..=1_000_000_000).contains(t)).ok_or_else(|| {
                    format!("--measure '{}': threshold={v} is not a time within 1 ns..1 s; e.g. threshold=1us", given.text)
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
        Ok(Arc::new(NoiseProbe { schedule, threshold_ns: self.threshold_ns }))
    }
}

/// The noise probe: its windows (the run's periods) and the threshold of a gap.
#[derive(Debug, Clone, Copy)]
pub struct NoiseProbe {
    pub schedule: Schedule,
    pub threshold_ns: u64,
}

impl Probe for NoiseProbe {
    fn name(&self) -> &'static str {
        NAME
    }
    fn schedule(&self) -> Schedule {
        self.schedule
    }
    fn settings(&self) -> Vec<String> {
        vec![format!("interval={}", Nanos(self.schedule.interval_ns)), format!("threshold={}", Nanos(self.threshold_ns))]
    }
    fn accounting(&self) -> Accounting {
        Accounting::Gaps { threshold_ns: self.threshold_ns }
    }
    fn instance(&self, cpu: usize, _cpus: &[usize]) -> Result<Vec<Role>, crate::vocab::Error> {
        let (schedule, threshold_ns) = (self.schedule, self.threshold_ns);
        Ok(vec![Role::single(cpu, Box::new(move || Ok(Box::new(NoiseLoop { schedule, threshold_ns }) as Box<dyn RtLoop>)))])
    }
}

/// The busy loop of one CPU.
struct NoiseLoop {
    schedule: Schedule,
    threshold_ns: u64,
}

impl RtLoop for NoiseLoop {
    /// From `start_ns` to the end of the last window, reads the clock in a tight loop; a gap
    /// over the threshold is an event of the window it ended in. The stop flag is read every
    /// 1024 reads (a relaxed load, but the loop is the measurement).
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        let (out, interval) = (&mut out[0], self.schedule.interval_ns);
        let end = start_ns + self.schedule.periods * interval;
        sys::time::sleep_until_monotonic(start_ns);
        // From the start, not from the first read: a thread held off its CPU at the start sees
        // that time as its first gap.
        let mut previous = start_ns;
        let mut reads: u32 = 0;
        while previous < end {
            let now = sys::time::monotonic_ns();
            let gap = now - previous;
            if gap > self.threshold_ns {
                out.event(self.schedule.window_of(start_ns, now), gap);
            }
            previous = now;
            reads = reads.wrapping_add(1);
            if reads.is_multiple_of(1024) && stop.load(Relaxed) {
                break;
            }
        }
        out.accounted_through(self.schedule.windows_passed(start_ns, previous));
    }
}

// ---- its section of the summary ----

/// Its section of the summary: the noise floor per CPU.
fn summary(r: &RunResult) -> String {
    noise_report(r)
}

/// The noise floor per CPU: the gaps over the threshold, their share of the time, the longest;
/// and RT throttling named when its signature shows (see [`throttling_gaps`]).
fn noise_report(r: &RunResult) -> String {
    let mut s = String::new();
    for (p, n) in r.probes.iter().filter_map(|p| p.noise.map(|n| (p, n))) {
        if s.is_empty() {
            let _ = writeln!(s, "\nNoise floor (busy loop; gaps over {}), per CPU:", Nanos(n.threshold_ns));
        }
        let at = p.max_at_ns.map_or(String::new(), |t| format!(" in the window ending {:.3} s", t as f64 / 1e9));
        let _ = writeln!(
            s,
            "  {}: {}, {} per second ({:.4} % of the CPU), longest {} µs{at}",
            p.scope(),
            Count(p.samples, "gap"),
            Nanos(n.ns_per_s),
            n.ns_per_s as f64 / 1e7,
            opt_us(p.max_ns)
        );
        if let Some(line) = throttling_gaps(r, p) {
            let _ = writeln!(s, "    {line}");
        }
    }
    s
}

/// RT throttling's signature in a noise entry: a gap of about `period − runtime` (50 ms at the
/// default 950 000 of 1 000 000 µs) at least once every two seconds measured.
fn throttling_gaps(r: &RunResult, p: &ProbeResult) -> Option<String> {
    let sys = &r.system;
    let (runtime, period) = (sys.sched_rt_runtime_us?, sys.sched_rt_period_us?);
    if runtime < 0 || runtime >= period {
        return None;
    }
    // Saturating: a stored document's figures may be anything.
    let gap = (period.saturating_sub(runtime) as u64).saturating_mul(1000);
    let (lo, hi) = (gap / 10 * 6, gap / 10 * 12);
    let n: u64 =
        p.histogram.buckets.triples().filter(|&[a, b, _]| a >= lo && b <= hi).fold(0, |n, [_, _, c]| n.saturating_add(c));
    let seconds = r.measured_ns / 1_000_000_000;
    (n >= 1 && n.saturating_mul(2) >= seconds).then(|| {
        format!(
            "{n} gaps of {}..{}: the signature of RT throttling (sched_rt_runtime_us={runtime} of {period} lets \
             other tasks take {} every {} from a busy RT loop); for the measurement write -1 to \
             /proc/sys/kernel/sched_rt_runtime_us, or keep other tasks off this CPU",
            Nanos(lo),
            Nanos(hi),
            Nanos(gap),
            Nanos((period as u64).saturating_mul(1000))
        )
    })
}
