//! Stage one of the flow: what the user asked for, parsed and validated into a [`RunPlan`]
//! without touching the system. Everything here is pure; checks that need the machine
//! (does CPU 7 exist? can we write that file?) happen when the plan is resolved in `run`.

pub mod continuous;
pub mod file;
pub mod require;
pub mod userfile;

use crate::vocab::policy::{check_rt_priority, Policy};
use crate::vocab::{cpus, units};
use require::Requirement;
use units::{parse_duration_ns, parse_percent, DurationError, Nanos};

/// A usage error: what was wrong with the input and how to fix it, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// A value that does not read, as the plan refuses it (any class: a plan is made of input).
impl From<crate::vocab::Error> for PlanError {
    fn from(e: crate::vocab::Error) -> PlanError {
        PlanError(e.into())
    }
}

fn bad(msg: impl Into<String>) -> PlanError {
    PlanError(msg.into())
}

/// How long the measurement runs (after the warm-up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunLength {
    /// Measure for this many nanoseconds.
    Duration(u64),
    /// Measure this many periods (each one a sample or a missed deadline).
    Loops(u64),
}

/// How much of the start is excluded from the statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warmup {
    Time(u64),
    Samples(u64),
}

/// Where the result document goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonTarget {
    Stdout,
    File(std::path::PathBuf),
}

impl JsonTarget {
    /// `-` is standard output, anything else a file.
    pub fn parse(text: &str) -> JsonTarget {
        if text == "-" {
            JsonTarget::Stdout
        } else {
            JsonTarget::File(text.into())
        }
    }
}

/// The raw values of `rtgauge run` as typed, before validation (filled by the CLI layer).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunInput {
    pub interval: Option<String>,
    pub duration: Option<String>,
    pub loops: Option<String>,
    pub warmup: Option<String>,
    pub priority: Option<i32>,
    pub policy: Option<Policy>,
    /// `--dl-runtime` and `--dl-deadline`, with `--policy deadline`.
    pub dl_runtime: Option<String>,
    pub dl_deadline: Option<String>,
    pub cpus: Option<String>,
    pub no_mlock: bool,
    pub cycle_time: Option<String>,
    pub budget: Option<String>,
    pub require: Vec<String>,
    pub json: Option<String>,
    pub quiet: bool,
    /// `--cpu-dma-latency`: microseconds, or `off`.
    pub cpu_dma_latency: Option<String>,
    /// `--load` values (empty: the default worst-case mix).
    pub load: Vec<String>,
    pub load_cpus: Option<String>,
    /// `--measure` values (empty: the timer).
    pub measure: Vec<String>,
    /// `--window`: the timeline's window.
    pub window: Option<String>,
    /// `--tune[=LIST]`: what to tune for the run (`all` when given without a list).
    pub tune: Option<String>,
    /// `--trace [THRESHOLD]`: `worst` (every new worst case) or a time.
    pub trace: Option<String>,
    /// `--rotate TIME`: the figures closed every TIME as a run of their own.
    pub rotate: Option<String>,
    /// `--metrics ADDR`, `--metrics-public`, `--metrics-file PATH`, `--metrics-buckets SPEC`.
    pub metrics: Option<String>,
    pub metrics_public: bool,
    pub metrics_file: Option<String>,
    pub metrics_buckets: Option<String>,
}

/// Which loads a run measures under.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadChoice {
    /// No `--load`: the default worst-case mix (`load::DEFAULT_MIX`).
    DefaultMix,
    /// `--load none`: an idle system, on purpose.
    Idle,
    Given(Vec<crate::load::spec::LoadSpec>),
}

/// A validated measurement plan: every value the run needs, checked and in base units.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlan {
    /// The probes, each with its options and CPUs (at least one).
    pub measures: Vec<crate::probe::registry::MeasureSpec>,
    pub interval_ns: u64,
    pub policy: Policy,
    /// 1–99 for SCHED_FIFO/RR, 0 for SCHED_OTHER and SCHED_DEADLINE.
    pub priority: i32,
    /// SCHED_DEADLINE's runtime per period (`None`: a tenth of each probe's interval) and
    /// relative deadline (`None`: the period, each probe's interval).
    pub dl_runtime_ns: Option<u64>,
    pub dl_deadline_ns: Option<u64>,
    /// `None`: every online CPU.
    pub cpus: Option<Vec<usize>>,
    pub length: RunLength,
    pub warmup: Warmup,
    pub mlock: bool,
    pub cycle_time_ns: Option<u64>,
    /// Fraction of the cycle time the worst case may use (0.25 by default).
    pub budget: f64,
    pub requirements: Vec<Requirement>,
    pub json: Option<JsonTarget>,
    pub quiet: bool,
    /// PM QoS CPU latency request held during the run (µs), `None` to leave idle states alone.
    pub cpu_dma_latency_us: Option<u32>,
    pub loads: LoadChoice,
    /// CPUs the loads may run on (`None`: all).
    pub load_cpus: Option<Vec<usize>>,
    /// The scenario the plan came from: (name, source).
    pub scenario: Option<(String, String)>,
    /// The timeline's window as given (`None`: 1 s, wider for runs over a day; see
    /// `aggregate::timeline`).
    pub window_ns: Option<u64>,
    /// What `--tune` changes for the run only (empty: nothing beyond the PM QoS request).
    pub tune: Vec<crate::tuning::TuneItem>,
    /// `--trace`: values above this are traced and explained, each a new worst case (0: every
    /// new worst case after the warm-up); `None`: no trace.
    pub trace: Option<u64>,
    /// `-D forever`, `--rotate`, the live metrics.
    pub continuous: continuous::Continuous,
}

pub use crate::probe::MAX_RUN_NS;
pub use crate::probe::{MAX_INTERVAL_NS, MIN_INTERVAL_NS};

/// `--dl-runtime` and `--dl-deadline`: only with `--policy deadline`, the runtime at least the
/// kernel's least.
fn deadline_args(input: &RunInput, policy: Policy) -> Result<(Option<u64>, Option<u64>), PlanError> {
    let only = |flag: &str| bad(format!("{flag} applies to --policy deadline only: add --policy deadline or drop it"));
    let runtime = match (&input.dl_runtime, policy) {
        (None, _) => None,
        (Some(_), p) if p != Policy::Deadline => return Err(only("--dl-runtime")),
        (Some(t), _) => {
            let ns = duration_arg("--dl-runtime", t, "100us")?;
            if ns < crate::probe::MIN_DL_RUNTIME_NS {
                return Err(bad(format!(
                    "--dl-runtime {t} is below the kernel's least runtime, {}; e.g. --dl-runtime 100us",
                    Nanos(crate::probe::MIN_DL_RUNTIME_NS)
                )));
            }
            Some(ns)
        }
    };
    let deadline = match (&input.dl_deadline, policy) {
        (None, _) => None,
        (Some(_), p) if p != Policy::Deadline => return Err(only("--dl-deadline")),
        (Some(t), _) => Some(duration_arg("--dl-deadline", t, "500us")?),
    };
    Ok((runtime, deadline))
}

fn duration_arg(flag: &str, text: &str, example: &str) -> Result<u64, PlanError> {
    parse_duration_ns(text, None).map_err(|e| {
        let fix = match e {
            DurationError::Negative(_) => "it must be positive",
            _ => "give a number with a unit (ns, us, ms, s, m, h)",
        };
        bad(format!("{flag} {e}: {fix}, e.g. {flag} {example}"))
    })
}

impl RunPlan {
    /// Validates what the user typed. Pure: no system calls.
    pub fn from_input(input: &RunInput) -> Result<RunPlan, PlanError> {
        let measures = if input.measure.is_empty() {
            vec![crate::probe::registry::default_spec()]
        } else {
            input.measure.iter().map(|m| crate::probe::registry::parse(m).map_err(PlanError::from)).collect::<Result<_, _>>()?
        };
        let mut seen: Vec<&crate::probe::registry::MeasureSpec> = Vec::new();
        for m in &measures {
            if let Some(first) = seen.iter().find(|s| s.name == m.name) {
                return Err(bad(format!(
                    "--measure '{}' and '{}' name the same probe: give each probe once, with all its CPUs (e.g. {}@0-1)",
                    first.text, m.text, m.name
                )));
            }
            seen.push(m);
        }
        // --loops and a warm-up in samples count periods of the run's interval: --interval, else
        // the first probe's own (a period loop's 10 ms), else 1 ms.
        let interval_ns = match (&input.interval, measures[0].own_interval_ns()) {
            (None, Some(own)) => own,
            (given, _) => duration_arg("--interval", given.as_deref().unwrap_or("1ms"), "1ms")?,
        };
        if interval_ns == 0 {
            return Err(bad("--interval must be greater than zero, e.g. --interval 1ms"));
        }
        if !(MIN_INTERVAL_NS..=MAX_INTERVAL_NS).contains(&interval_ns) {
            return Err(bad(format!(
                "--interval {} is outside {}..{}, e.g. --interval 1ms",
                Nanos(interval_ns),
                Nanos(MIN_INTERVAL_NS),
                Nanos(MAX_INTERVAL_NS)
            )));
        }

        let policy = input.policy.unwrap_or(Policy::Fifo);
        let priority = match (policy.has_priority(), input.priority) {
            (true, None) => 80,
            (true, Some(p)) => check_rt_priority(p).map_err(|e| bad(format!("--priority {e}, e.g. --priority 80")))?,
            (false, None | Some(0)) => 0,
            (false, Some(p)) => {
                return Err(bad(format!(
                    "--priority {p} does not apply to --policy {} ({} has no RT priority): drop --priority",
                    if policy == Policy::Deadline { "deadline" } else { "other" },
                    policy.kernel_name()
                )))
            }
        };
        let (dl_runtime_ns, dl_deadline_ns) = deadline_args(input, policy)?;

        let cpus = match &input.cpus {
            None => None,
            Some(text) => Some(
                cpus::parse_cpu_list(text)
                    .map_err(|e| bad(format!("--cpus {e}: give CPU numbers and ranges, e.g. --cpus 0,2-3")))?,
            ),
        };

        let loops = match &input.loops {
            None => None,
            Some(text) => Some(
                text.trim()
                    .parse::<u64>()
                    .map_err(|_| bad(format!("--loops '{text}' is not a whole number of periods, e.g. --loops 10000")))?,
            ),
        };
        let length = match (&input.duration, loops) {
            (Some(_), Some(_)) => return Err(bad("--duration and --loops both given: choose one, e.g. --duration 60s")),
            (_, Some(0)) => return Err(bad("--loops must be at least 1, e.g. --loops 10000")),
            (_, Some(n)) => RunLength::Loops(n),
            // Until stopped: the longest run there is (set once the warm-up is known, below).
            (d, None) if continuous::is_forever(d.as_deref()) => RunLength::Duration(0),
            (d, None) => {
                let ns = duration_arg("--duration", d.as_deref().unwrap_or("60s"), "60s")?;
                if ns < interval_ns {
                    return Err(bad(format!(
                        "--duration {} is shorter than one interval ({}): make it longer, e.g. --duration 60s",
                        Nanos(ns),
                        Nanos(interval_ns)
                    )));
                }
                RunLength::Duration(ns)
            }
        };

        let warmup_text = input.warmup.as_deref().unwrap_or("1s").trim();
        let warmup = if !warmup_text.is_empty() && warmup_text.chars().all(|c| c.is_ascii_digit()) {
            Warmup::Samples(warmup_text.parse().map_err(|_| {
                bad(format!("--warmup {warmup_text} is too many samples: give fewer, or a time, e.g. --warmup 1s"))
            })?)
        } else {
            Warmup::Time(duration_arg("--warmup", warmup_text, "1s")?)
        };

        let cycle_time_ns = match &input.cycle_time {
            None => None,
            Some(t) => {
                let ns = duration_arg("--cycle-time", t, "1ms")?;
                if ns == 0 {
                    return Err(bad("--cycle-time must be greater than zero, e.g. --cycle-time 1ms"));
                }
                Some(ns)
            }
        };
        let budget_text = input.budget.as_deref().unwrap_or("25%");
        let budget = parse_percent(budget_text)
            .ok_or_else(|| bad(format!("--budget '{budget_text}' is not a percentage between 0 and 100, e.g. --budget 25%")))?;

        let requirements = input
            .require
            .iter()
            .map(|r| require::parse_requirement(r).map_err(|e| bad(format!("--require {e}"))))
            .collect::<Result<Vec<_>, _>>()?;

        let json = input.json.as_deref().map(JsonTarget::parse);
        if matches!(&json, Some(JsonTarget::File(p)) if p.as_os_str().is_empty()) {
            return Err(bad("--json needs a file name or '-' for standard output"));
        }

        let cpu_dma_latency_us = match input.cpu_dma_latency.as_deref().unwrap_or("0").trim() {
            "off" | "none" => None,
            t => Some(parse_duration_ns(t, Some(1e3)).ok().and_then(|ns| u32::try_from(ns / 1000).ok()).ok_or_else(|| {
                bad(format!("--cpu-dma-latency '{t}' is neither a time nor 'off', e.g. --cpu-dma-latency 0 (default) or off"))
            })?),
        };

        let window_ns = match &input.window {
            None => None,
            Some(t) => match duration_arg("--window", t, "1s")? {
                0 => return Err(bad("--window must be greater than zero, e.g. --window 1s")),
                ns => Some(ns),
            },
        };

        let loads = if input.load.is_empty() {
            LoadChoice::DefaultMix
        } else {
            match crate::load::spec::parse_loads(&input.load)? {
                None => LoadChoice::Idle,
                Some(specs) => LoadChoice::Given(specs),
            }
        };
        let tune = match &input.tune {
            None => Vec::new(),
            Some(list) => crate::tuning::TuneItem::parse_list(list)
                .map_err(|e| bad(format!("--tune {e}, e.g. --tune or --tune=shield,rt-throttling")))?,
        };
        let trace = match input.trace.as_deref().map(str::trim) {
            None => None,
            Some("worst") => Some(0),
            Some(t) => match duration_arg("--trace", t, "100us")? {
                0 => {
                    return Err(bad(
                        "--trace 0 would stop the trace at every value: give a threshold, e.g. --trace 100us, or none",
                    ))
                }
                ns => Some(ns),
            },
        };
        let load_cpus = match &input.load_cpus {
            None => None,
            Some(text) => Some(
                cpus::parse_cpu_list(text)
                    .map_err(|e| bad(format!("--load-cpus {e}: give CPU numbers and ranges, e.g. --load-cpus 0-1")))?,
            ),
        };

        let measured_ns = match length {
            RunLength::Duration(0) => None,
            RunLength::Duration(ns) => Some(ns),
            RunLength::Loops(n) => Some(n.saturating_mul(interval_ns)),
        };
        let continuous = continuous::plan(input, measured_ns, window_ns)?;
        let mut plan = RunPlan {
            measures,
            interval_ns,
            policy,
            priority,
            dl_runtime_ns,
            dl_deadline_ns,
            cpus,
            length,
            warmup,
            mlock: !input.no_mlock,
            cycle_time_ns,
            budget,
            requirements,
            json,
            quiet: input.quiet,
            cpu_dma_latency_us,
            loads,
            load_cpus,
            scenario: None,
            window_ns,
            tune,
            trace,
            continuous,
        };
        if plan.continuous.forever {
            // Whole periods up to rtgauge's limit, the warm-up's included.
            let periods = (MAX_RUN_NS / interval_ns).saturating_sub(plan.warmup_periods());
            if periods == 0 {
                return Err(bad("--warmup leaves no room to measure: give a shorter warm-up, e.g. --warmup 1s"));
            }
            plan.length = RunLength::Duration(periods * interval_ns);
        }
        plan.check_length()?;
        Ok(plan)
    }

    /// The run's length must be representable and sane: warm-up plus measured periods, times
    /// the interval, within [`MAX_RUN_NS`]. (Every later sum of periods and offsets relies on it.)
    fn check_length(&self) -> Result<(), PlanError> {
        let periods = self.warmup_periods().checked_add(self.measure_periods());
        if periods.and_then(|p| p.checked_mul(self.interval_ns)).is_none_or(|ns| ns > MAX_RUN_NS) {
            let what = match (self.length, self.warmup) {
                (RunLength::Loops(n), _) => format!("--loops {n}"),
                (_, Warmup::Samples(w)) => format!("--warmup {w}"),
                (RunLength::Duration(d), _) => format!("--duration {}", Nanos(d)),
            };
            return Err(bad(format!(
                "{what} makes the run (warm-up included) longer than rtgauge's limit of {} at --interval {}: \
                 measure fewer periods or a shorter time",
                Nanos(MAX_RUN_NS),
                Nanos(self.interval_ns)
            )));
        }
        Ok(())
    }

    /// Number of warm-up periods before measuring.
    pub fn warmup_periods(&self) -> u64 {
        match self.warmup {
            Warmup::Samples(n) => n,
            Warmup::Time(ns) => ns.div_ceil(self.interval_ns),
        }
    }

    /// Every period of the run, warm-up included (checked when the plan was made).
    pub fn total_periods(&self) -> u64 {
        self.warmup_periods() + self.measure_periods()
    }

    /// Length of the whole run (warm-up included), in nanoseconds (checked when the plan was made).
    pub fn total_ns(&self) -> u64 {
        self.total_periods() * self.interval_ns
    }

    /// Number of measured periods (each a sample or a missed deadline).
    pub fn measure_periods(&self) -> u64 {
        match self.length {
            RunLength::Loops(n) => n,
            RunLength::Duration(ns) => ns / self.interval_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> RunInput {
        RunInput::default()
    }

    #[test]
    fn defaults_are_the_sources_cyclictest_setup() {
        let p = RunPlan::from_input(&input()).unwrap();
        assert_eq!((p.interval_ns, p.policy, p.priority, p.mlock), (1_000_000, Policy::Fifo, 80, true));
        assert_eq!(p.length, RunLength::Duration(60_000_000_000));
        assert_eq!((p.warmup_periods(), p.measure_periods()), (1000, 60_000));
        assert_eq!(p.budget, 0.25);
        assert_eq!(p.cpu_dma_latency_us, Some(0));
        let p = RunPlan::from_input(&RunInput { cpu_dma_latency: Some("off".into()), ..input() }).unwrap();
        assert_eq!(p.cpu_dma_latency_us, None);
        let p = RunPlan::from_input(&RunInput { cpu_dma_latency: Some("20us".into()), ..input() }).unwrap();
        assert_eq!(p.cpu_dma_latency_us, Some(20));
    }

    #[test]
    fn warmup_in_samples_or_time() {
        let p = RunPlan::from_input(&RunInput { warmup: Some("250".into()), ..input() }).unwrap();
        assert_eq!(p.warmup, Warmup::Samples(250));
        let p = RunPlan::from_input(&RunInput { warmup: Some("0".into()), ..input() }).unwrap();
        assert_eq!(p.warmup_periods(), 0);
        let p = RunPlan::from_input(&RunInput { warmup: Some("1.5ms".into()), ..input() }).unwrap();
        assert_eq!(p.warmup_periods(), 2);
    }

    #[test]
    fn rejects_bad_values_with_a_fix() {
        for (f, msg) in [
            (RunInput { interval: Some("0".into()), ..input() }, "greater than zero"),
            (RunInput { interval: Some("0ms".into()), ..input() }, "greater than zero"),
            (RunInput { interval: Some("-1ms".into()), ..input() }, "negative"),
            (RunInput { duration: Some("abc".into()), ..input() }, "not a duration"),
            (RunInput { priority: Some(100), ..input() }, "1-99"),
            (RunInput { priority: Some(0), ..input() }, "1-99"),
            (RunInput { policy: Some(Policy::Other), priority: Some(5), ..input() }, "SCHED_OTHER"),
            (RunInput { cpus: Some("2-1".into()), ..input() }, "--cpus"),
            (RunInput { loops: Some("-5".into()), ..input() }, "whole number"),
            (RunInput { loops: Some("5".into()), duration: Some("1s".into()), ..input() }, "choose one"),
            (RunInput { budget: Some("0%".into()), ..input() }, "--budget"),
            (RunInput { require: vec!["bogus<1us".into()], ..input() }, "not a metric"),
            (RunInput { duration: Some("10us".into()), ..input() }, "shorter than one interval"),
            (RunInput { loops: Some(u64::MAX.to_string()), warmup: Some("1".into()), ..input() }, "limit"),
            (RunInput { loops: Some((u64::MAX / 1_000_000).to_string()), ..input() }, "limit"),
            (RunInput { warmup: Some(u64::MAX.to_string()), ..input() }, "limit"),
            (RunInput { duration: Some("1000000h".into()), ..input() }, "limit"),
        ] {
            let e = RunPlan::from_input(&f).unwrap_err().0;
            assert!(e.contains(msg), "{e:?} should mention {msg:?}");
            assert!(!e.contains('\n'), "one line: {e:?}");
        }
    }
}
