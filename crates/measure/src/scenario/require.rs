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
    /// The latency exceeded on average once per this much operation at the series' interval, in
    /// ns (`once-per-1y<200us`): a return level of the forecast, judged by the end of its 95 %
    /// interval that makes the claim hardest to meet.
    OncePer(u64),
    /// The latency exceeded on average once in this many periods (`once-in-1e9<200us`).
    OnceIn(f64),
    /// The share of the run since the worst case last rose, in hundredths of a percent
    /// (`settled>=25%`: no new maximum in the last quarter of the run).
    Settled,
}

impl Metric {
    /// Whether the metric is a latency (its bound needs a time unit) or a count.
    pub fn is_latency(self) -> bool {
        !matches!(self, Metric::Missed | Metric::Samples | Metric::Below | Metric::Above | Metric::Rate | Metric::Settled)
    }

    /// Whether the metric is judged on the forecast or the convergence (the run's analysis),
    /// not on a figure the run measured.
    pub fn is_forecast(self) -> bool {
        matches!(self, Metric::OncePer(_) | Metric::OnceIn(_) | Metric::Settled)
    }
}

const HOUR_NS: u64 = 3_600_000_000_000;
const DAY_NS: u64 = 24 * HOUR_NS;
const WEEK_NS: u64 = 7 * DAY_NS;
/// A year of operation: 365.25 days.
pub const YEAR_NS: u64 = 31_557_600_000_000_000;

/// A horizon the way `once-per-` writes it: `1y`, `30d`, `8h`, `90s`.
fn horizon_text(ns: u64) -> String {
    for (unit, u) in [("y", YEAR_NS), ("w", WEEK_NS), ("d", DAY_NS), ("h", HOUR_NS), ("m", 60_000_000_000), ("s", 1_000_000_000)]
    {
        if ns >= u && ns.is_multiple_of(u) {
            return format!("{}{unit}", ns / u);
        }
    }
    format!("{}ms", ns as f64 / 1e6)
}

/// Parses the horizon of `once-per-HORIZON`: a duration (`1y`, `30d`, `8h`; `y` a year of
/// 365.25 days) or `hour`, `day`, `week`, `year`.
fn parse_horizon(text: &str) -> Option<u64> {
    match text {
        "hour" => return Some(HOUR_NS),
        "day" => return Some(DAY_NS),
        "week" => return Some(WEEK_NS),
        "year" => return Some(YEAR_NS),
        _ => {}
    }
    let ns = match text.strip_suffix('y') {
        Some(n) => n.parse::<f64>().ok().filter(|v| *v > 0.0 && v.is_finite()).map(|v| v * YEAR_NS as f64)?,
        None => parse_duration_ns(text, None).ok()? as f64,
    };
    (1e9..=MAX_HORIZON_NS as f64).contains(&ns).then_some(ns.round() as u64)
}

/// The longest horizon a requirement may name: 500 years (beyond it no nanosecond count fits).
pub const MAX_HORIZON_NS: u64 = 500 * YEAR_NS;

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
            Metric::OncePer(ns) => write!(f, "once-per-{}", horizon_text(*ns)),
            Metric::OnceIn(n) if n.fract() == 0.0 && *n < 1e6 => write!(f, "once-in-{n}"),
            Metric::OnceIn(n) => write!(f, "once-in-{n:e}"),
            Metric::Settled => write!(f, "settled"),
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
        } else if self.metric == Metric::Settled {
            let percent = format!("{:.2}", self.bound as f64 / 100.0);
            write!(f, "{}{}{}%", self.metric, self.op.symbol(), percent.trim_end_matches('0').trim_end_matches('.'))
        } else {
            write!(f, "{}{}{}", self.metric, self.op.symbol(), self.bound)
        }
    }
}

const HELP: &str = "write [PROBE[.SERIES].]METRIC OP VALUE, e.g. 'max<100us', 'p99.9<=50us', 'missed==0', 'timer.max<1ms', \
'wakeup.task.p99<50us'; \
metrics: min, mean, max, pN (p99, p99.9, ...), missed, samples, below, above (period), rate (the rate a sweep sustained, e.g. 'wakeup.rate>=20000'), \
once-per-TIME (the latency exceeded once per TIME of operation, forecast: 'once-per-1y<200us'; TIME e.g. 1h, 30d, 1y, or hour, day, week, year), \
once-in-N (once in N periods, forecast: 'once-in-1e9<200us'), settled (the share of the run since the worst case last rose: 'settled>=25%'); \
operators: < <= > >= ==";

/// Parses a requirement such as `p99.9<=50us`.
pub fn parse_requirement(text: &str) -> Result<Requirement, crate::vocab::Error> {
    parse_requirement_text(text).map_err(crate::vocab::Error::Invalid)
}

/// [`parse_requirement`], its failure as text.
fn parse_requirement_text(text: &str) -> Result<Requirement, String> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    for (wrong, right) in [("=<", "<="), ("=>", ">="), ("!=", "<, <=, > or >=")] {
        if compact.contains(wrong) {
            return Err(format!("'{text}': '{wrong}' is not an operator; write {right}"));
        }
    }
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
        "settled" => Metric::Settled,
        h if h.starts_with("once-per-") => Metric::OncePer(parse_horizon(&h["once-per-".len()..]).ok_or_else(|| {
            format!(
                "'{name}': the horizon must be a time from 1 s to 500 years (1h, 30d, 1y) or hour, day, week, year; e.g. 'once-per-1y<200us'"
            )
        })?),
        n if n.starts_with("once-in-") => Metric::OnceIn(
            n["once-in-".len()..]
                .parse::<f64>()
                .ok()
                .filter(|v| (2.0..=1e30).contains(v))
                .ok_or_else(|| format!("'{name}': give a number of periods from 2 to 1e30, e.g. 'once-in-1e9<200us'"))?,
        ),
        p if p.starts_with('p') => {
            let v: f64 = p[1..].parse().map_err(|_| format!("'{name}' is not a metric; {HELP}"))?;
            if !(v > 0.0 && v < 100.0) {
                return Err(format!("percentile '{name}' must lie between p0 and p100, e.g. p99.9"));
            }
            Metric::Percentile(v)
        }
        _ => return Err(format!("'{name}' is not a metric; {HELP}")),
    };
    let bound =
        if metric == Metric::Settled {
            let v: f64 =
                value.strip_suffix('%').unwrap_or(value).parse().ok().filter(|v: &f64| (0.0..=100.0).contains(v)).ok_or_else(
                    || format!("bound of '{text}' must be a percentage of the run from 0% to 100%, e.g. settled>=25%"),
                )?;
            (v * 100.0).round() as u64
        } else if metric.is_latency() {
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
    fn parses_requirements_on_the_forecast_and_the_convergence() {
        let r = parse_requirement("once-per-1y<200us").unwrap();
        assert_eq!((r.metric, r.op, r.bound), (Metric::OncePer(YEAR_NS), Op::Lt, 200_000));
        assert_eq!(r.to_string(), "once-per-1y<200us");
        assert_eq!(parse_requirement("once-per-year<200us").unwrap().metric, Metric::OncePer(YEAR_NS));
        assert_eq!(parse_requirement("timer.once-per-8h<=1ms").unwrap().to_string(), "timer.once-per-8h<=1000us");
        assert_eq!(parse_requirement("once-per-1.5d<1ms").unwrap().metric, Metric::OncePer(36 * 3_600_000_000_000));
        let r = parse_requirement("wakeup.task.once-in-1e9<50us").unwrap();
        assert_eq!((r.probe.as_deref(), r.series.as_deref(), r.metric), (Some("wakeup"), Some("task"), Metric::OnceIn(1e9)));
        assert_eq!(r.to_string(), "wakeup.task.once-in-1e9<50us");
        let r = parse_requirement("settled>=25%").unwrap();
        assert_eq!((r.metric, r.op, r.bound), (Metric::Settled, Op::Ge, 2500));
        assert_eq!(r.to_string(), "settled>=25%");
        assert_eq!(parse_requirement("settled >= 12.5").unwrap().to_string(), "settled>=12.5%");
        for bad in [
            "once-per-0s<1ms",
            "once-per-fortnight<1ms",
            "once-in-1<1ms",
            "once-in-x<1ms",
            "once-per-1y<200",
            "settled>=150%",
            "settled>=x",
        ] {
            assert!(parse_requirement(bad).is_err(), "{bad}");
        }
        assert!(parse_requirement("once-per-1d<1ms").unwrap().metric.is_forecast());
        for bad in ["once-per-1e3y<1ms", "once-per-1000000d<1ms", "once-in-1e400<1ms"] {
            let e = parse_requirement(bad).unwrap_err();
            assert!(e.contains("500 years") || e.contains("1e30"), "{bad}: {e}");
        }
        assert!(parse_requirement("once-per-1y=<1ms").unwrap_err().contains("'=<' is not an operator; write <="));
    }

    /// What a requirement is stored as (a result's `config.requirements`) reads back as itself.
    #[test]
    fn every_requirement_reads_back_from_its_text() {
        for text in [
            "max<100us",
            "p99.9<=50us",
            "missed==0",
            "timer.mean<10us",
            "samples>=1000",
            "wakeup.rate>=20000",
            "once-per-1y<200us",
            "once-per-500y<1ms",
            "once-per-90s<1ms",
            "once-per-1.5d<1ms",
            "once-in-2.5<1ms",
            "once-in-1e9<200us",
            "once-in-12345<1ms",
            "wakeup.task.settled>=12.5%",
            "settled<=38.2%",
        ] {
            let r = parse_requirement(text).unwrap();
            let back = parse_requirement(&r.to_string()).unwrap();
            assert_eq!(
                (back.probe, back.series, back.metric, back.op, back.bound),
                (r.probe.clone(), r.series.clone(), r.metric, r.op, r.bound),
                "{text} → {r}"
            );
        }
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
