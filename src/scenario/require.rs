//! Requirement expressions given with `--require`: a metric, a comparison and a bound,
//! e.g. `max<100us`, `p99.9<=50us`, `missed==0`, `mean<10us`. Pure parsing and evaluation.

use crate::vocab::units::{parse_duration_ns, us};
use serde::Serialize;
use std::fmt;

/// What a requirement constrains.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Min,
    Mean,
    Max,
    /// A percentile, in percent (99.9 for `p99.9`).
    Percentile(f64),
    Missed,
    Samples,
    /// Values under / over a probe's bounds (the period loop's short and long cycles).
    Below,
    Above,
    /// The highest rate a sweep sustained, events a second (`wakeup.rate>=20000`).
    Rate,
}

impl Metric {
    /// Whether the metric is a latency (its bound needs a time unit) or a count.
    pub fn is_latency(self) -> bool {
        !matches!(self, Metric::Missed | Metric::Samples | Metric::Below | Metric::Above | Metric::Rate)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Min => write!(f, "min"),
            Metric::Mean => write!(f, "mean"),
            Metric::Max => write!(f, "max"),
            Metric::Percentile(p) => write!(f, "p{p}"),
            Metric::Missed => write!(f, "missed"),
            Metric::Samples => write!(f, "samples"),
            Metric::Below => write!(f, "below"),
            Metric::Above => write!(f, "above"),
            Metric::Rate => write!(f, "rate"),
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    const ALL: [(&'static str, Op); 5] = [("<=", Op::Le), (">=", Op::Ge), ("==", Op::Eq), ("<", Op::Lt), (">", Op::Gt)];

    pub fn holds(self, observed: f64, bound: f64) -> bool {
        match self {
            Op::Lt => observed < bound,
            Op::Le => observed <= bound,
            Op::Gt => observed > bound,
            Op::Ge => observed >= bound,
            Op::Eq => observed == bound,
        }
    }
    pub fn symbol(self) -> &'static str {
        Op::ALL.iter().find(|(_, o)| *o == self).map(|(s, _)| *s).unwrap_or("?")
    }
}

/// One parsed `--require` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// The probe it applies to (`wakeup.max<200us`); `None`: every probe.
    pub probe: Option<String>,
    /// The series of that probe it applies to (`wakeup.task.max<50us`); `None`: all of them.
    pub series: Option<String>,
    pub metric: Metric,
    pub op: Op,
    /// Nanoseconds for latency metrics, a count otherwise.
    pub bound: u64,
    /// The expression as the user wrote it (whitespace removed).
    pub text: String,
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in [&self.probe, &self.series].into_iter().flatten() {
            write!(f, "{part}.")?;
        }
        if self.metric.is_latency() {
            write!(f, "{}{}{}us", self.metric, self.op.symbol(), us(self.bound).trim_end_matches('0').trim_end_matches('.'))
        } else {
            write!(f, "{}{}{}", self.metric, self.op.symbol(), self.bound)
        }
    }
}

const HELP: &str = "write [PROBE[.SERIES].]METRIC OP VALUE, e.g. 'max<100us', 'p99.9<=50us', 'missed==0', 'timer.max<1ms', \
'wakeup.task.p99<50us'; \
metrics: min, mean, max, pN (p99, p99.9, ...), missed, samples, below, above (period), rate (the rate a sweep sustained, e.g. 'wakeup.rate>=20000'); operators: < <= > >= ==";

/// Parses a requirement such as `p99.9<=50us`.
pub fn parse_requirement(text: &str) -> Result<Requirement, String> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let (pos, sym, op) = Op::ALL
        .iter()
        .filter_map(|(s, o)| compact.find(s).map(|p| (p, *s, *o)))
        .min_by_key(|(p, s, _)| (*p, usize::MAX - s.len()))
        .ok_or_else(|| format!("'{text}' has no comparison; {HELP}"))?;
    let (probe, series, name) = split_target(text, &compact[..pos])?;
    let value = &compact[pos + sym.len()..];
    let metric = match name.to_ascii_lowercase().as_str() {
        "min" => Metric::Min,
        "mean" | "avg" => Metric::Mean,
        "max" => Metric::Max,
        "missed" => Metric::Missed,
        "samples" => Metric::Samples,
        "below" => Metric::Below,
        "above" => Metric::Above,
        "rate" => Metric::Rate,
        p if p.starts_with('p') => {
            let v: f64 = p[1..].parse().map_err(|_| format!("'{name}' is not a metric; {HELP}"))?;
            if !(v > 0.0 && v < 100.0) {
                return Err(format!("percentile '{name}' must lie between p0 and p100, e.g. p99.9"));
            }
            Metric::Percentile(v)
        }
        _ => return Err(format!("'{name}' is not a metric; {HELP}")),
    };
    let bound = if metric.is_latency() {
        parse_duration_ns(value, None).map_err(|e| format!("bound of '{text}': {e}; give a time with a unit, e.g. 100us"))?
    } else {
        value.parse::<u64>().map_err(|_| format!("bound of '{text}' must be a whole number, e.g. missed==0"))?
    };
    Ok(Requirement { probe, series, metric, op, bound, text: compact })
}

/// Splits `[PROBE[.SERIES].]METRIC` (the metric may hold dots: `p99.9`).
fn split_target<'a>(text: &str, left: &'a str) -> Result<(Option<String>, Option<String>, &'a str), String> {
    use crate::probe::registry;
    let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphabetic());
    let Some((p, rest)) = left.split_once('.').filter(|(p, _)| word(p)) else {
        return Ok((None, None, left));
    };
    let Some(series) = registry::series_of(p) else {
        return Err(format!(
            "'{text}' names the probe '{p}', which rtgauge does not have (probes: {}); {HELP}",
            registry::names().join(", ")
        ));
    };
    match rest.split_once('.').filter(|(s, _)| word(s)) {
        Some((s, metric)) if series.contains(&s) => Ok((Some(p.to_string()), Some(s.to_string()), metric)),
        Some((s, _)) if !s.starts_with('p') => Err(format!(
            "'{text}': the probe '{p}' has no series '{s}'{}; {HELP}",
            if series.is_empty() { String::new() } else { format!(" (its series: {})", series.join(", ")) }
        )),
        _ => Ok((Some(p.to_string()), None, rest)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requirement_may_name_its_probe() {
        let r = parse_requirement("timer.p99.9<=50us").unwrap();
        assert_eq!((r.probe.as_deref(), r.metric, r.bound), (Some("timer"), Metric::Percentile(99.9), 50_000));
        assert_eq!(r.to_string(), "timer.p99.9<=50us");
        assert_eq!(parse_requirement("p99.9<=50us").unwrap().probe, None);
        assert!(parse_requirement("nosuch.max<1ms").unwrap_err().contains("'nosuch'"));
    }

    #[test]
    fn a_requirement_may_name_a_series_of_its_probe() {
        let r = parse_requirement("wakeup.task.p99.9<=50us").unwrap();
        assert_eq!((r.probe.as_deref(), r.series.as_deref()), (Some("wakeup"), Some("task")));
        assert_eq!(r.metric, Metric::Percentile(99.9));
        assert_eq!(r.to_string(), "wakeup.task.p99.9<=50us");
        let r = parse_requirement("wakeup.p99<1ms").unwrap();
        assert_eq!((r.probe.as_deref(), r.series, r.metric), (Some("wakeup"), None, Metric::Percentile(99.0)));
        assert!(parse_requirement("wakeup.nosuch.max<1ms").unwrap_err().contains("no series 'nosuch'"));
        assert!(parse_requirement("timer.task.max<1ms").unwrap_err().contains("no series 'task'"));
    }

    #[test]
    fn parses_the_documented_forms() {
        let r = parse_requirement("max<100us").unwrap();
        assert_eq!((r.metric, r.op, r.bound), (Metric::Max, Op::Lt, 100_000));
        let r = parse_requirement("p99.9<=50us").unwrap();
        assert_eq!((r.metric, r.op, r.bound), (Metric::Percentile(99.9), Op::Le, 50_000));
        let r = parse_requirement("missed == 0").unwrap();
        assert_eq!((r.metric, r.op, r.bound), (Metric::Missed, Op::Eq, 0));
        let r = parse_requirement("mean<10us").unwrap();
        assert_eq!((r.metric, r.op, r.bound), (Metric::Mean, Op::Lt, 10_000));
        let r = parse_requirement("samples>=1000").unwrap();
        assert_eq!((r.metric, r.op, r.bound), (Metric::Samples, Op::Ge, 1000));
        let r = parse_requirement("wakeup.rate>=20000").unwrap();
        assert_eq!((r.probe.as_deref(), r.metric, r.bound), (Some("wakeup"), Metric::Rate, 20_000));
        assert_eq!(parse_requirement("p99.9<=50us").unwrap().to_string(), "p99.9<=50us");
    }

    #[test]
    fn rejects_nonsense() {
        assert!(parse_requirement("max100us").is_err());
        assert!(parse_requirement("foo<1us").is_err());
        assert!(parse_requirement("max<100").is_err());
        assert!(parse_requirement("missed<abc").is_err());
        assert!(parse_requirement("p100<1us").is_err());
    }

    #[test]
    fn operators_compare() {
        assert!(Op::Lt.holds(1.0, 2.0) && !Op::Lt.holds(2.0, 2.0));
        assert!(Op::Le.holds(2.0, 2.0) && Op::Ge.holds(2.0, 2.0) && Op::Eq.holds(0.0, 0.0));
        assert!(Op::Gt.holds(3.0, 2.0));
    }
}
