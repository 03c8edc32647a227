//! The wake-up probe's options, `wakeup[:interval=1ms|rate=1000|rate=sweep,via=eventfd,
//! shape=chain|ping-pong,cross,priority=99]` (a sweep, of the chain, takes `rates=1k/2k/...`,
//! `bound=DURATION` and `all`): parsed once, then bound to the run's timing.

use super::sweep::{self, Sweep};
use super::{Shape, WakeupProbe, DEFAULT_PRIORITY, NAME, SHAPES, VIA};
use crate::probe::options::{named, names_of, schedule, Given, ProbeOptions, RunTiming};
use crate::probe::Probe;
use crate::sys::wake::WakeMethod;
use crate::vocab::units::parse_duration_ns;
use std::sync::Arc;

/// The options it accepts, in a line (for a message about an option it does not have).
pub const SUMMARY: &str = "interval=DURATION or rate=PER_SECOND or rate=sweep (with rates=1k/2k/.../150k, bound=DURATION, all), \
                           via=eventfd|futex|pipe|mq|signal|sem|pi-mutex, shape=chain|ping-pong (chain), cross, \
                           priority=2..99 (99)";

/// `--measure`'s help on the wake-up probe.
pub fn help() -> String {
    format!(
        "{NAME} (a handler at FIFO 99 woken by a timer wakes a task at FIFO 98: series chain, handler, task; interval= or \
         rate=, via={}, cross (the task on the next CPU), priority=99; rate=sweep raises the rate step by step to find \
         the highest sustained: rates=1k/2k/.../150k, bound=, all; shape=ping-pong times rt-tests' shape instead, a \
         receiver and a sender both at priority=: series pong, ping)",
        names_of(VIA, "|")
    )
}

/// The wake-up probe's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `interval=` or `rate=N`, as an interval; `None`: the run's (or a sweep's).
    pub interval_ns: Option<u64>,
    /// `rate=sweep`, with its `rates=`, `bound=` and `all`.
    pub sweep: Option<SweepOptions>,
    pub via: WakeMethod,
    pub shape: Shape,
    pub cross: bool,
    pub priority: i32,
}

/// A rate sweep's options: its rates (`None`: [`sweep::DEFAULT_RATES`]), its bound (`None`: each
/// step's interval), and whether it runs every rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepOptions {
    pub rates: Option<Vec<u32>>,
    pub bound_ns: Option<u64>,
    pub all: bool,
}

pub(super) fn parse(given: &Given) -> Result<Arc<dyn ProbeOptions>, crate::vocab::Error> {
    parse_text(given).map_err(crate::vocab::Error::Invalid)
}

/// [`parse`], its failure as text.
fn parse_text(given: &Given) -> Result<Arc<dyn ProbeOptions>, String> {
    let text = given.text;
    let mut o = Options {
        interval_ns: None,
        sweep: None,
        via: WakeMethod::Eventfd,
        shape: Shape::Chain,
        cross: false,
        priority: DEFAULT_PRIORITY,
    };
    let (mut swept, mut rates, mut bound, mut all, mut paced) = (false, None, None, false, false);
    for (k, v) in given.options {
        match k.as_str() {
            "interval" | "rate" if paced => return Err(format!("--measure '{text}': give one of interval= and rate=, once")),
            "interval" => (paced, o.interval_ns) = (true, Some(given.interval(v)?)),
            "rate" if v == "sweep" => (paced, swept) = (true, true),
            "rate" => (paced, o.interval_ns) = (true, Some(given.rate(v)?)),
            "rates" => {
                rates = Some(sweep::parse_rates(v).ok_or_else(|| {
                    format!("--measure '{text}': rates={v} is not rates a second separated by '/', e.g. rates=1k/10k/100k")
                })?)
            }
            "bound" => {
                bound = Some(
                    parse_duration_ns(v, None)
                        .ok()
                        .filter(|&b| b > 0)
                        .ok_or_else(|| format!("--measure '{text}': bound={v} is not a time, e.g. bound=100us"))?,
                )
            }
            "all" if v.is_empty() => all = true,
            "all" => return Err(format!("--measure '{text}': write 'all' alone (run every rate), not all={v}")),
            "via" => {
                o.via = named(VIA, v).ok_or_else(|| {
                    format!("--measure '{text}': via={v} is not a wake-up mechanism; choose one of {}", names_of(VIA, ", "))
                })?
            }
            "shape" => {
                o.shape = named(SHAPES, v).ok_or_else(|| {
                    format!(
                        "--measure '{text}': shape={v} is not a shape; choose chain (a handler woken by its timer wakes \
                         a task) or ping-pong (rt-tests' receiver and sender)"
                    )
                })?
            }
            "cross" if v.is_empty() || v == "yes" => o.cross = true,
            "cross" if v == "no" => o.cross = false,
            "cross" => {
                return Err(format!(
                    "--measure '{text}': write 'cross' alone (the task, or ping-pong's sender, on the next CPU), not cross={v}"
                ))
            }
            "priority" => {
                o.priority = v.parse().ok().filter(|n| (2..=99).contains(n)).ok_or_else(|| {
                    format!(
                        "--measure '{text}': priority={v} is not an RT priority within 2..99 (the chain's task runs one \
                         below); e.g. priority=99"
                    )
                })?
            }
            other => return Err(given.unknown(other)),
        }
    }
    if !swept && (rates.is_some() || bound.is_some() || all) {
        return Err(format!("--measure '{text}': rates=, bound= and all are for a sweep; add rate=sweep"));
    }
    if swept && o.shape != Shape::Chain {
        return Err(format!(
            "--measure '{text}': rate=sweep raises the chain's rate; drop shape=ping-pong, or time ping-pong at one rate"
        ));
    }
    o.sweep = swept.then_some(SweepOptions { rates, bound_ns: bound, all });
    Ok(Arc::new(o))
}

impl ProbeOptions for Options {
    fn interval_ns(&self) -> Option<u64> {
        self.interval_ns
    }
    fn bind(&self, text: &str, timing: RunTiming) -> Result<Arc<dyn Probe>, crate::vocab::Error> {
        let mut p = WakeupProbe {
            schedule: schedule(timing, self.interval_ns.unwrap_or(timing.interval_ns)),
            via: self.via,
            cross: self.cross,
            priority: self.priority,
            sweep: None,
            shape: self.shape,
        };
        if let Some(o) = &self.sweep {
            let rates = o.rates.as_deref().unwrap_or(sweep::DEFAULT_RATES);
            let sweep = Sweep::new(rates, timing.warmup_ns, timing.total_ns, o.bound_ns, o.all)
                .map_err(|e| e.context(format_args!("--measure '{text}'")))?;
            p.schedule = sweep.schedule(timing.total_ns);
            p.sweep = Some(sweep);
        }
        Ok(Arc::new(p))
    }
}
