//! The verdict: given a cycle time (with its budget, 25 % by default) and `--require`
//! expressions, decides pass or fail per CPU and keeps the evidence of every check. Also
//! derives the shortest cycle time the measured worst case supports; and, before a run, tells
//! a requirement that would judge none of the planned series ([`why_unjudged`]) by the same
//! rule the verdict uses ([`applies`]). Pure: works on figures and descriptions.

use crate::probe::{registry, Figure, Missed};
use crate::result::{Check, ProbeConfig, ProbeResult, RunResult, Status, Verdict};
use crate::scenario::require::{Metric, Op, Requirement};
use crate::vocab::units::{us, us_or_s, Nanos};

fn observe(metric: Metric, p: &ProbeResult) -> Option<f64> {
    match metric {
        Metric::Min => p.min_ns.map(|v| v as f64),
        Metric::Mean => p.mean_ns,
        Metric::Max => p.max_ns.map(|v| v as f64),
        Metric::Missed => Some(p.missed as f64),
        Metric::Samples => Some(p.samples as f64),
        Metric::Below => p.bounds.map(|b| b.below as f64),
        Metric::Above => p.bounds.map(|b| b.above as f64),
        // A sweep that sustained no rate sustained 0 a second.
        Metric::Rate => p.sweep.as_ref().map(|s| s.sustained_per_s.unwrap_or(0) as f64),
        // (judged in `analysis_check`)
        Metric::OncePer(_) | Metric::OnceIn(_) | Metric::Settled => None,
        Metric::Percentile(q) => {
            // (a percentile the document does not hold — p99.9999 of an older one — is taken
            // from its histogram)
            if let Some(Some(v)) = p.percentiles.get(q) {
                return Some(v as f64);
            }
            let (min, max) = (p.min_ns?, p.max_ns?);
            crate::aggregate::percentile_of(&p.histogram, q, min, max).map(|v| v as f64)
        }
    }
}

/// A requirement on the run's analysis (a forecast's return level, the convergence) judged on
/// series `p`. One the run cannot judge (no forecast, one that does not apply, a level below the
/// forecast's threshold, no timeline) fails and says why: it never passes.
fn analysis_check(req: &Requirement, p: &ProbeResult, assume_independent: bool) -> Check {
    let judged = |observed: String, value: Option<f64>, passed: bool| Check {
        expr: req.to_string(),
        scope: format!("{}/{}", p.label(), p.scope()),
        observed,
        observed_value: value,
        passed,
    };
    let unjudged = |why: String| judged(format!("not judged: {why}"), None, false);
    match req.metric {
        Metric::Settled => match &p.convergence {
            None => unjudged("no timeline tells when the worst case rose".to_string()),
            Some(c) => {
                let v = c.settled_percent;
                let shown = crate::vocab::length::settled(v);
                let text =
                    format!("{shown}% (last rise {} into the measurement)", Nanos(c.last_rise_ns.saturating_sub(c.start_ns)));
                let as_shown: f64 = shown.parse().unwrap_or(v);
                judged(text, Some(as_shown), req.op.holds((as_shown * 100.0).round(), req.bound as f64))
            }
        },
        _ => {
            let periods = match req.metric {
                Metric::OncePer(ns) => {
                    let interval = p.forecast.as_ref().map(|f| f.interval_ns).filter(|&i| i > 0);
                    match interval {
                        Some(i) => ns as f64 / i as f64,
                        None => return unjudged("the series' interval is not known".to_string()),
                    }
                }
                Metric::OnceIn(n) => n,
                other => return unjudged(format!("{other} is not a return level")),
            };
            let name = req.metric.to_string();
            let (l, measured) = match crate::forecast::level_of(p, &name, periods, assume_independent) {
                Ok(l) => l,
                Err(why) => return unjudged(why.into()),
            };
            let how = if measured { "measured" } else { "forecast" };
            // The end of the interval that makes the claim hardest: the upper for an upper bound.
            let upper = matches!(req.op, Op::Lt | Op::Le);
            let (value, end) = match (upper, l.high_ns) {
                (true, None) => {
                    return judged(
                        format!("{}, its 95 % interval has no upper end (a heavy tail)", us_or_s(l.level_ns)),
                        None,
                        false,
                    )
                }
                (true, Some(h)) => (h, "upper"),
                (false, _) if matches!(req.op, Op::Eq) => (l.level_ns, "estimate"),
                (false, _) => (l.low_ns, "lower"),
            };
            let text = if end == "estimate" {
                format!("{} ({how})", us_or_s(value))
            } else {
                format!("{} ({end} end of the 95 % interval, {how}; estimate {})", us_or_s(value), us_or_s(l.level_ns))
            };
            judged(text, Some(value), req.op.holds(value, req.bound as f64))
        }
    }
}

/// What the run's length supports, for each claim a latency criterion makes (a cycle time's
/// budget, `max<B`, a percentile's bound, a return level), one sentence per criterion and
/// series: by the rule of three, with no value over B in n periods the per-period probability
/// of exceeding B is below 3/n (95 %); the periods a claim of 1e-6 and 1e-9 per period needs,
/// and whether this run had them; where every CPU's forecast applies, what it puts the
/// probability at. A claim the run is too short for is said so.
fn support(per_cpu: &[ProbeResult], claims: &[(String, Requirement)], facts: &RunFacts) -> Vec<String> {
    use crate::vocab::length::{periods, periods_for, probability, rule_of_three, span};
    let mut out = Vec::new();
    for (what, r) in claims {
        let mut labels: Vec<String> = Vec::new();
        for p in per_cpu.iter().filter(|p| p.in_worst_case() && applies(r, &Target::of(p))) {
            if !labels.contains(&p.label()) {
                labels.push(p.label());
            }
        }
        for label in labels {
            let cpus: Vec<&ProbeResult> =
                per_cpu.iter().filter(|p| p.label() == label && p.in_worst_case() && p.samples > 0).collect();
            let Some(n) = cpus.iter().map(|p| p.samples + p.missed).min() else { continue };
            let interval = cpus.first().and_then(|p| interval_of(p, facts));
            let at = |k: f64| interval.map_or(String::new(), |i| format!(" ({} at {})", span(k * i as f64), Nanos(i)));
            let bound = Nanos(r.bound);
            match r.metric {
                Metric::Max => {
                    let exceeded = cpus.iter().any(|p| p.max_ns.is_some_and(|m| m > r.bound));
                    if exceeded {
                        continue;
                    }
                    let short: Vec<&str> = [(1e-6, "1e-6"), (1e-9, "1e-9")]
                        .iter()
                        .filter(|(q, _)| (n as f64) < periods_for(*q))
                        .map(|t| t.1)
                        .collect();
                    let mut line = format!(
                        "{what} ({label}): no value over {bound} in {} periods of each CPU: the probability of exceeding it is below {} a period (95 %, rule of three); 1e-6 a period needs {} periods{}, 1e-9 {}{}",
                        periods(n as f64),
                        probability(rule_of_three(n)),
                        periods(periods_for(1e-6)),
                        at(periods_for(1e-6)),
                        periods(periods_for(1e-9)),
                        at(periods_for(1e-9)),
                    );
                    match short.len() {
                        0 => line.push('.'),
                        _ => line.push_str(&format!(": this run is too short to support {}.", short.join(" or "))),
                    }
                    let forecasts: Vec<(f64, String)> = cpus
                        .iter()
                        .filter_map(|p| {
                            p.forecast
                                .as_ref()
                                .and_then(|f| crate::forecast::probability_over(f, r.bound as f64))
                                .map(|q| (q, p.scope()))
                        })
                        .collect();
                    if forecasts.len() == cpus.len() {
                        if let Some((q, cpu)) = forecasts.iter().max_by(|a, b| a.0.total_cmp(&b.0)) {
                            let assumed = cpus.iter().any(|p| p.forecast.as_ref().is_some_and(|f| f.assumed.is_some()));
                            line.push_str(&format!(
                                " The forecast's estimate: {} a period ({cpu}, the highest of its CPUs){}.",
                                probability(*q),
                                if assumed { "; independence and stationarity assumed, not tested" } else { "" }
                            ));
                        }
                    }
                    out.push(line);
                }
                Metric::Percentile(q) => {
                    let tail = 1.0 - q / 100.0;
                    let needed = periods_for(tail);
                    if (n as f64) < needed {
                        out.push(format!(
                            "{what} ({label}): the claim is of at most 1 value in {} over {bound}; {} values of each CPU{} support it (95 %, rule of three); this run has {}: too short to support it.",
                            periods((1.0 / tail).round()),
                            periods(needed),
                            at(needed),
                            periods(n as f64)
                        ));
                    }
                }
                Metric::OncePer(_) | Metric::OnceIn(_) => {
                    let horizon = match r.metric {
                        Metric::OncePer(ns) => interval.map(|i| ns as f64 / i as f64),
                        Metric::OnceIn(k) => Some(k),
                        _ => None,
                    };
                    // (only where a forecast applies on every CPU and the horizon is beyond what the
                    // run measured: else the check says why it was not judged, or it was measured)
                    let forecast = cpus.iter().all(|p| p.forecast.as_ref().is_some_and(|f| f.applies()));
                    let assumed = cpus.iter().any(|p| p.forecast.as_ref().is_some_and(|f| f.assumed.is_some()));
                    let holds = if assumed {
                        "it rests on the values' independence and stationarity, which the file could not test (no timeline), and holds for this load and configuration only"
                    } else {
                        "it holds only as far as the tests of its assumptions do, for this load and configuration"
                    };
                    if let Some(h) = horizon.filter(|h| forecast && *h * crate::forecast::MEASURED_FROM > n as f64) {
                        out.push(format!(
                            "{what} ({label}): a forecast {} times beyond the run ({} periods against its {}); {holds}; seeing that level with 95 % probability would take {} periods{}.",
                            crate::vocab::length::probability_like(h / n as f64),
                            periods(h),
                            periods(n as f64),
                            periods(3.0 * h),
                            at(3.0 * h)
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn check(req: &Requirement, p: &ProbeResult, assume_independent: bool) -> Check {
    if req.metric.is_forecast() {
        return analysis_check(req, p, assume_independent);
    }
    let observed_value = observe(req.metric, p);
    let observed = match observed_value {
        None => "no samples".to_string(),
        Some(v) if req.metric.is_latency() => format!("{}us", us(v.round() as u64)),
        Some(v) => format!("{v}"),
    };
    Check {
        expr: req.to_string(),
        scope: format!("{}/{}", p.label(), p.scope()),
        observed,
        observed_value,
        passed: observed_value.is_some_and(|v| req.op.holds(v, req.bound as f64)),
    }
}

/// One series of one probe as a requirement sees it, taken from a result or, before the run,
/// from the plan ([`Target::of`]); [`applies`] tells whether a requirement judges it.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub probe: &'a str,
    pub series: Option<&'a str>,
    /// Its values have bounds (the period loop's cycles): `below` and `above` count there.
    pub bounded: bool,
    /// Its values are not latencies (a UIO source's intervals).
    pub not_latency: bool,
    /// Its figures span a rate sweep.
    pub swept: bool,
    /// Its probe's headline series (a sweep's sustained rate is its headline's).
    pub headline: bool,
}

impl<'a> Target<'a> {
    pub fn of(p: &'a ProbeResult) -> Target<'a> {
        Target {
            probe: &p.probe,
            series: p.series.as_deref(),
            bounded: p.bounds.is_some(),
            not_latency: p.measures.is_some(),
            swept: p.sweep.is_some(),
            headline: crate::probe::registry::is_headline(&p.probe, p.series.as_deref()),
        }
    }
}

/// Whether requirement `r` judges `t`: it names `t`'s probe and series (or none), and `t`
/// measures its metric. A bound on values that are not latencies (a UIO source's intervals)
/// applies only where the requirement names their series; one on a sweep's figures (which span
/// every rate) only where it names the probe.
pub fn applies(r: &Requirement, t: &Target) -> bool {
    let named = r.probe.as_deref().is_none_or(|n| n == t.probe) && r.series.as_deref().is_none_or(|s| Some(s) == t.series);
    let measures = match r.metric {
        Metric::Rate => t.swept && t.headline,
        // (the analysis is made for latencies of one CPU: not cycles, intervals or sweeps)
        m if m.is_forecast() => !t.bounded && !t.swept && (!t.not_latency || r.series.is_some()),
        Metric::Below | Metric::Above => t.bounded,
        _ if t.swept => r.probe.is_some(),
        m if m.is_latency() => !t.not_latency || r.series.is_some(),
        _ => true,
    };
    named && measures
}

/// Why requirement `r` would judge none of `targets` (every series of every probe a run is to
/// measure), with what to do instead; `None` when it judges one. Asked before a run, so that a
/// requirement nothing measures is refused before measuring, not failed after it.
pub fn why_unjudged(r: &Requirement, targets: &[Target]) -> Option<String> {
    if targets.iter().any(|t| applies(r, t)) {
        return None;
    }
    // (a probe's series stand together)
    let mut probes: Vec<&str> = targets.iter().map(|t| t.probe).collect();
    probes.dedup();
    let named: Vec<&Target> = targets.iter().filter(|t| r.probe.as_deref().is_none_or(|n| n == t.probe)).collect();
    if let Some(n) = r.probe.as_deref().filter(|_| named.is_empty()) {
        return Some(format!(
            "this run does not measure the {n} probe (it measures {}); add --measure {n} or drop the requirement",
            probes.join(", ")
        ));
    }
    if let Some(s) = r.series.as_deref().filter(|s| !named.iter().any(|t| t.series == Some(s))) {
        let n = r.probe.as_deref().unwrap_or("?");
        let has: Vec<&str> = named.iter().filter_map(|t| t.series).collect();
        let has = if has.is_empty() {
            "one series, named by the probe alone".to_string()
        } else {
            format!("the series {}", has.join(", "))
        };
        return Some(format!("the {n} probe as configured here reports {has}, not '{s}'; name one of those, or none"));
    }
    Some(match r.metric {
        // Figures only some probes give: name the probe that does, as it says.
        Metric::Below | Metric::Above => match registry::offering(Figure::Bounds) {
            Some(o) => {
                format!("below and above count {} outside its bounds; add --measure {} or drop the requirement", o.by, o.measure)
            }
            None => "below and above count cycles outside bounds, which no probe counts; drop the requirement".to_string(),
        },
        Metric::Rate => match registry::offering(Figure::Rate) {
            Some(o) => format!("rate is the rate {} sustained; add --measure {} or drop the requirement", o.by, o.measure),
            None => "rate is the rate a sweep sustained, which no probe sweeps; drop the requirement".to_string(),
        },
        _ => {
            // What it names are a UIO source's intervals or a sweep's figures: say how to name them.
            let t = named.first().copied().or(targets.first())?;
            let series = if t.not_latency { t.series.map(str::to_string) } else { r.series.clone() };
            let named_req = Requirement { probe: Some(t.probe.to_string()), series, ..r.clone() };
            let what = if t.swept {
                "a rate sweep's figures span every rate and are judged only by a requirement that names the probe"
            } else {
                "the values here are intervals between events, not latencies, judged only by a requirement that names their series"
            };
            format!("{what}, e.g. '{named_req}'")
        }
    })
}

/// Facts about the run as a whole that a verdict depends on.
#[derive(Debug, Clone)]
pub struct RunFacts {
    pub status: Status,
    /// The loads that failed (a run whose load failed was not measured under its load).
    pub failed_loads: Vec<String>,
    /// Each probe's interval on its CPUs: (probe, CPUs, interval in ns; 0 when not known). A
    /// cycle time judges a missed period by it ([`evaluate`]).
    pub intervals: Vec<(String, Vec<usize>, u64)>,
    /// Whether a requirement may rely on a forecast that assumed independence and
    /// stationarity without a test (`Config::assume_independent`).
    pub assume_independent: bool,
}

impl RunFacts {
    /// The facts of a result document (to judge it again, or an imported one).
    pub fn of(r: &RunResult) -> RunFacts {
        RunFacts {
            status: r.status,
            failed_loads: r.loads.iter().filter(|l| l.failed).map(|l| l.spec.clone()).collect(),
            intervals: intervals_of(&r.config.probes),
            assume_independent: r.config.assume_independent,
        }
    }
}

/// Each probe's interval on its CPUs, from a run's configuration.
pub fn intervals_of(probes: &[ProbeConfig]) -> Vec<(String, Vec<usize>, u64)> {
    probes.iter().map(|p| (p.name.clone(), p.cpus.clone(), p.interval_ns)).collect()
}

/// How a missed period of `p` is judged under a cycle time of `ct`: `Some(interval)` when it is
/// a latency (at least the interval) judged against the budget, because the probe's interval
/// is shorter than the cycle time; `None` when it is a missed cycle (`missed==0`): the interval
/// is the cycle time or longer, not known, or the probe counts events (a lost event has no
/// latency; its interval is only a window).
fn missed_as_latency(p: &ProbeResult, ct: u64, facts: &RunFacts) -> Option<u64> {
    if registry::missed_of(&p.probe) == Missed::Event {
        return None;
    }
    let interval = interval_of(p, facts)?;
    (interval < ct).then_some(interval)
}

/// The interval of `p`'s probe on its CPU (`None`: not known).
fn interval_of(p: &ProbeResult, facts: &RunFacts) -> Option<u64> {
    facts
        .intervals
        .iter()
        .find(|(name, cpus, _)| *name == p.probe && p.cpu.is_none_or(|c| cpus.contains(&c)))
        .map(|t| t.2)
        .filter(|&i| i > 0)
}

/// `max<=limit` where missed periods are latencies: each is at least `interval` late (a late
/// wake-up's own latency is in the maximum; a period never served is not), so that counts too.
fn latency_check(req: &Requirement, p: &ProbeResult, interval: Option<u64>) -> Check {
    let mut c = check(req, p, false);
    let Some(i) = interval.filter(|&i| p.missed > 0 && p.max_ns.is_none_or(|m| m < i)) else { return c };
    c.observed_value = Some(i as f64);
    c.observed = format!(
        "{}us ({} missed {}: each a latency of at least the interval)",
        us(i),
        p.missed,
        if p.missed == 1 { "period" } else { "periods" }
    );
    c.passed = req.op.holds(i as f64, req.bound as f64);
    c
}

/// Where [`missed_rule`]'s sentence names its series (several series judged alike share one).
const SERIES: &str = "\u{0}";

/// The sentence saying how `p`'s missed periods were judged under cycle time `ct`, its series
/// named by [`SERIES`].
fn missed_rule(p: &ProbeResult, ct: u64, limit: u64, facts: &RunFacts) -> String {
    match (missed_as_latency(p, ct, facts), interval_of(p, facts)) {
        (Some(i), _) => format!(
            "missed periods of {} at {} are latencies judged against the {} budget (the cycle time is {})",
            SERIES,
            Nanos(i),
            Nanos(limit),
            Nanos(ct)
        ),
        (None, _) if registry::missed_of(&p.probe) == Missed::Event => {
            format!("a lost event of {SERIES} is a missed cycle: missed==0")
        }
        (None, Some(i)) => format!(
            "a missed period of {} at {} is a missed cycle (its interval is not shorter than the cycle time, {}): missed==0",
            SERIES,
            Nanos(i),
            Nanos(ct)
        ),
        (None, None) => format!("the interval of {SERIES} is not known: a missed period counts as a missed cycle (missed==0)"),
    }
}

/// What a run is judged by: its cycle time (within `budget` of it, a fraction) and its
/// requirements.
#[derive(Debug, Clone)]
pub struct Criteria {
    pub cycle_time_ns: Option<u64>,
    pub budget: f64,
    pub requirements: Vec<Requirement>,
}

impl Criteria {
    /// No criteria: a run is judged only by whether every CPU measured.
    pub fn none() -> Criteria {
        Criteria { cycle_time_ns: None, budget: 0.25, requirements: Vec::new() }
    }

    /// The criteria a document's configuration holds (its requirements as text, its cycle time
    /// and budget); `Err`: one this rtgauge cannot read, named by its field.
    pub fn of_config(c: &crate::result::Config) -> Result<Criteria, crate::vocab::Error> {
        Self::of_config_text(c).map_err(crate::vocab::Error::Invalid)
    }

    /// [`Self::of_config`], its failure as text.
    fn of_config_text(c: &crate::result::Config) -> Result<Criteria, String> {
        let budget = c.budget_percent;
        if !(budget > 0.0 && budget <= 100.0) {
            return Err("config.budget_percent is not a percentage between 0 and 100".into());
        }
        let requirements = c
            .requirements
            .iter()
            .enumerate()
            .map(|(i, t)| {
                crate::scenario::require::parse_requirement(t)
                    .map_err(|_| format!("config.requirements[{i}] is not a requirement this rtgauge reads"))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Criteria { cycle_time_ns: c.cycle_time_ns, budget: budget / 100.0, requirements })
    }
}

/// The one maker of a document's verdict: `criteria` against its figures, with the facts of its
/// run (how it ended, its loads). A run's assembly, an import, a stored document judged again
/// and a comparison's "what if this cycle time" all judge through it.
pub fn judge(r: &RunResult, criteria: &Criteria) -> Verdict {
    let facts = RunFacts::of(r);
    evaluate(&r.probes, &r.combined, criteria.cycle_time_ns, criteria.budget, &criteria.requirements, &facts)
}

/// Evaluates the criteria against each CPU's figures (every CPU must meet every criterion).
/// A CPU that measured nothing fails, criteria or not; with criteria, so do a partial run and
/// a run whose load failed.
fn evaluate(
    per_cpu: &[ProbeResult],
    combined: &[ProbeResult],
    cycle_time_ns: Option<u64>,
    budget: f64,
    requirements: &[Requirement],
    facts: &RunFacts,
) -> Verdict {
    let status = facts.status;
    let req = |metric, op, bound| Requirement { probe: None, series: None, metric, op, bound, text: String::new() };
    let mut checks: Vec<Check> = Vec::new();
    // Each sentence once, with every series it judged.
    let mut rules: Vec<(String, Vec<String>)> = Vec::new();
    if let Some(ct) = cycle_time_ns {
        // A latency must fit the budget; a cycle (the period loop) must stay within its bounds.
        // A period missed at an interval shorter than the cycle time is a latency like any other
        // (judged by the budget); only a missed cycle of the cycle time itself fails `missed==0`.
        let limit = (ct as f64 * budget).floor() as u64;
        let (max, missed) = (req(Metric::Max, Op::Le, limit), req(Metric::Missed, Op::Eq, 0));
        let bounds = [req(Metric::Below, Op::Eq, 0), req(Metric::Above, Op::Eq, 0)];
        // A rate sweep must sustain an event every cycle.
        let swept = req(Metric::Rate, Op::Ge, 1_000_000_000u64.div_ceil(ct.max(1)));
        for p in per_cpu {
            // (judged by its headline series, the strictest: the chain holds the handler's misses)
            if p.sweep.is_some() {
                if crate::probe::registry::is_headline(&p.probe, p.series.as_deref()) {
                    checks.push(check(&swept, p, facts.assume_independent));
                }
                continue;
            }
            let as_latency = missed_as_latency(p, ct, facts);
            if p.bounds.is_some() {
                checks.extend(bounds.iter().map(|r| check(r, p, facts.assume_independent)));
            } else if p.measures.is_none() {
                // Values that are not latencies (a UIO source's intervals) only count their misses.
                checks.push(latency_check(&max, p, as_latency));
            }
            if as_latency.is_none() {
                checks.push(check(&missed, p, facts.assume_independent));
            }
            let rule = missed_rule(p, ct, limit, facts);
            match rules.iter_mut().find(|(r, _)| *r == rule) {
                Some((_, labels)) if !labels.contains(&p.label()) => labels.push(p.label()),
                Some(_) => {}
                None => rules.push((rule, vec![p.label()])),
            }
        }
    }
    // A requirement naming a probe applies to that probe's CPUs; an unqualified one to every
    // probe's that measures its metric ([`applies`]). One that applies to nothing fails: it was
    // not checked (a run refuses such a requirement before it measures; this is the backstop).
    for r in requirements {
        let targets: Vec<&ProbeResult> = per_cpu.iter().filter(|p| applies(r, &Target::of(p))).collect();
        if targets.is_empty() {
            checks.push(Check {
                expr: r.to_string(),
                scope: "run".to_string(),
                observed: "no probe of this run measures it".to_string(),
                observed_value: None,
                passed: false,
            });
        }
        checks.extend(targets.into_iter().map(|p| check(r, p, facts.assume_independent)));
    }
    let criteria_given = cycle_time_ns.is_some() || !requirements.is_empty();
    let mut claims: Vec<(String, Requirement)> = Vec::new();
    if let Some(ct) = cycle_time_ns {
        let limit = (ct as f64 * budget).floor() as u64;
        claims.push((format!("cycle time {}", Nanos(ct)), req(Metric::Max, Op::Le, limit)));
    }
    claims.extend(requirements.iter().filter(|r| matches!(r.op, Op::Lt | Op::Le)).map(|r| (r.to_string(), r.clone())));
    let support = support(per_cpu, &claims, facts);
    let measured_something = req(Metric::Samples, Op::Gt, 0);
    // A busy loop that saw no gap measured a quiet CPU (a window it never reached is missed).
    checks.extend(
        per_cpu
            .iter()
            .filter(|p| p.samples == 0 && p.noise.is_none())
            .map(|p| check(&measured_something, p, facts.assume_independent)),
    );
    if criteria_given && !facts.failed_loads.is_empty() {
        checks.push(Check {
            expr: "loads==ok".to_string(),
            scope: "run".to_string(),
            observed: format!("failed: {}", facts.failed_loads.join(", ")),
            observed_value: None,
            passed: false,
        });
    }
    if criteria_given && status == Status::Partial {
        checks.push(Check {
            expr: "status==complete".to_string(),
            scope: "run".to_string(),
            observed: "partial".to_string(),
            observed_value: None,
            passed: false,
        });
    }
    Verdict {
        passed: checks.iter().all(|c| c.passed),
        criteria_given,
        cycle_time_ns,
        budget_percent: (budget * 1000.0).round() / 10.0,
        shortest_cycle_time_ns: combined
            .iter()
            .filter(|c| c.in_worst_case())
            .filter_map(|c| c.max_ns)
            .max()
            .map(|m| (m as f64 / budget).ceil() as u64),
        checks,
        rules: rules.into_iter().map(|(r, labels)| r.replace(SERIES, &labels.join(", "))).collect(),
        support,
    }
}

#[cfg(test)]
mod tests;
