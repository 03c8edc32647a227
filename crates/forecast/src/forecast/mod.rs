//! "Was the run long enough?": after a run (never in its RT threads), for every latency series on
//! every CPU, the worst case's convergence (when each new maximum came) and a forecast of the
//! tail by extreme value theory — a generalised Pareto distribution fitted by maximum likelihood
//! to the histogram's values over a high threshold (peaks over threshold), its return levels
//! (the latency exceeded on average once per hour, day, year of operation) with 95 %
//! profile-likelihood intervals — reported only when the tests of its assumptions pass (fit,
//! independence, stationarity), "not applicable: <reason>" otherwise. Works on the result
//! document alone, so a stored run of an older version gets the same analysis when shown.
//! See docs/forecast.md.

mod ad_table;
pub mod checks;
pub mod convergence;
pub mod gpd;
use crate::result::forecast::{Analysis, Fit, Forecast, ReturnLevel, TestOutcome};
use crate::result::histogram::HistogramData;
use crate::result::timeline::TimelineData;
use crate::result::{ProbeResult, RunResult};
use crate::vocab::units::Nanos;
use gpd::{Edge, Excesses, Mle};

/// The horizons of the return levels every forecast gives, in ns of operation.
pub const HORIZONS: [(&str, f64); 3] = [("1h", 3.6e12), ("1d", 8.64e13), ("1y", 3.15576e16)];

/// The horizons, in periods, of a series whose interval is not known (another tool's file that
/// does not say it): no time of operation is derived from an interval the run does not know.
pub const PERIOD_HORIZONS: [(&str, f64); 2] = [("1e6 periods", 1e6), ("1e9 periods", 1e9)];

/// Fewer values than this are not fitted.
pub const MIN_VALUES: u64 = 1000;
/// The exceedances fitted: √n, at least this many and at most [`MOST_EXCEEDANCES`]; if their
/// fit fails the goodness-of-fit test, a higher threshold (half as many, then a quarter) is
/// tried while at least this many remain.
pub const FEWEST_EXCEEDANCES: u64 = 50;
pub const MOST_EXCEEDANCES: u64 = 1000;
/// Fewer distinct values (histogram buckets) over the threshold than this are not fitted.
pub const MIN_DISTINCT: usize = 10;
/// Fewer windows with values than this leave independence and stationarity untested.
pub const MIN_WINDOWS: usize = 20;
/// Significance of the goodness-of-fit test, and of the tests of independence and stationarity.
pub const ALPHA_FIT: f64 = 0.05;
pub const ALPHA_DATA: f64 = 0.01;

/// What the analysis of one series needs.
#[derive(Debug, Clone)]
pub struct Series<'a> {
    pub histogram: &'a HistogramData,
    /// Periods seen: served and missed.
    pub periods: u64,
    /// The maximum, and when it came (from the start of the run; not known in some documents).
    pub max_ns: Option<u64>,
    pub max_at_ns: Option<u64>,
    pub timeline: Option<&'a TimelineData>,
    pub interval_ns: u64,
    /// The resolution of the values as measured: a value recorded as v lay in [v, v +
    /// resolution) (1 for rtgauge's own, in ns; another tool's unit for its file: 1000 for
    /// cyclictest's whole µs, which it truncates to).
    pub resolution_ns: u64,
    /// Whether the values are another tool's (`Imported::foreign`): without a timeline their
    /// forecast is given on the stated assumption of independence and stationarity; rtgauge's
    /// own runs without one that fits are refused.
    pub foreign: bool,
    /// The measured span, from the start of the run (warm-up included).
    pub span: (u64, u64),
    /// Per load phase: its periods and its histogram.
    pub phases: Vec<(u64, &'a HistogramData)>,
}

/// What a forecast of a histogram without a timeline assumes (`Forecast::assumed`).
pub const UNTESTED: &str = "independence and stationarity assumed, not tested: the histogram has no timeline (another tool's file keeps none), so whether the worst values came in bursts or drifted during the run is not known";

/// p-values as the reports write them.
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".to_string()
    } else {
        format!("p = {p:.3}")
    }
}

fn test(name: &str, statistic: f64, p_value: f64, alpha: f64, detail: String) -> TestOutcome {
    // (a statistic that could not be computed fails its test: the document holds no NaN)
    let (statistic, p_value) = if statistic.is_finite() && p_value.is_finite() { (statistic, p_value) } else { (0.0, 0.0) };
    let r = |v: f64| (v * 1e4).round() / 1e4;
    TestOutcome { name: name.to_string(), statistic: r(statistic), p_value: r(p_value), passed: p_value >= alpha, detail }
}

/// The threshold leaving about `k` values above it: the lowest value of the lowest bucket
/// included, going down from the top bucket until `k` are above. With the excesses (each
/// bucket's edges over the threshold, with its count): a bucket holds the values recorded from
/// its lowest to its highest, each of which stands for the latencies up to `resolution` above.
fn exceedances(h: &HistogramData, k: u64, resolution: u64) -> (u64, Vec<(f64, f64, u64)>) {
    // Walked from the top without a copy of the bucket list (a continuous run's keeper does this
    // for every part: the copy was 24 bytes a bucket, about 0.1 MiB a part).
    let (mut taken, mut above) = (0, 0);
    for [_, _, n] in h.buckets.triples().rev() {
        // (a bucket of ties too large to take whole ends the walk, once enough are above)
        if taken >= k || (taken >= FEWEST_EXCEEDANCES && taken + n > 2 * k) {
            break;
        }
        taken += n;
        above += 1;
    }
    let first = h.buckets.len() - above;
    let u = h.buckets.triples().nth(first).map_or(0, |[lo, hi, _]| span_of(lo, hi, resolution).0);
    let excesses = h
        .buckets
        .triples()
        .skip(first)
        .map(|[lo, hi, n]| {
            let (a, b) = span_of(lo, hi, resolution);
            (a.saturating_sub(u) as f64, b.saturating_sub(u) as f64, n)
        })
        .collect();
    (u, excesses)
}

/// The latencies a histogram bucket holding the recorded values `lo..=hi` stands for, `[a, b)`:
/// at 1 ns, [lo, hi + 1); at a coarser `resolution` (a tool's unit, which it truncates to), from
/// the first multiple of it in the bucket to the end of the unit of the last
/// (cyclictest's 50 µs, in a bucket of 49 984..=50 015 ns: [50 000, 51 000)).
fn span_of(lo: u64, hi: u64, resolution: u64) -> (u64, u64) {
    let r = resolution.max(1);
    let a = lo.div_ceil(r).saturating_mul(r);
    if r == 1 || a > hi {
        return (lo, hi.saturating_add(r));
    }
    (a, (hi / r).saturating_mul(r).saturating_add(r))
}

/// The window maxima the tests of independence and stationarity use: those of windows that saw
/// at least half the periods of the fullest one (a first or last window cut short holds fewer).
fn window_maxima(t: &TimelineData) -> Vec<u64> {
    let periods = |i: usize| t.count[i] + t.missed[i];
    let full = (0..t.len()).map(periods).max().unwrap_or(0);
    (0..t.len()).filter(|&i| t.count[i] > 0 && periods(i) * 2 >= full).map(|i| t.max_ns[i]).collect()
}

/// Keeps test `t` in the forecast, and where it failed, why the forecast does not apply.
fn judge(f: &mut Forecast, reasons: &mut Vec<String>, t: TestOutcome, why: impl FnOnce() -> String) {
    if !t.passed {
        reasons.push(why());
    }
    f.tests.push(t);
}

/// The forecast of series `s`.
pub fn forecast(s: &Series) -> Forecast {
    let n = s.histogram.total_count;
    let measured_ns = s.span.1.saturating_sub(s.span.0);
    let mut f = Forecast {
        method: "peaks-over-threshold".to_string(),
        periods: s.periods,
        interval_ns: s.interval_ns,
        measured_ns,
        threshold_ns: None,
        exceedances: 0,
        fit: None,
        tests: Vec::new(),
        assumed: None,
        not_applicable: None,
        return_levels: Vec::new(),
    };
    if n < MIN_VALUES {
        f.not_applicable =
            Some(format!("{n} values; a tail fit needs at least {MIN_VALUES} (run longer or at a shorter interval)"));
        return f;
    }
    // The threshold: the highest that passes the goodness-of-fit test, from √n exceedances up.
    let target = ((n as f64).sqrt().round() as u64).clamp(FEWEST_EXCEEDANCES, MOST_EXCEEDANCES);
    let mut chosen: Option<(u64, Excesses, Mle, TestOutcome)> = None;
    let mut first_failure: Option<String> = None;
    let mut k = target;
    while k >= FEWEST_EXCEEDANCES {
        let (u, pairs) = exceedances(s.histogram, k, s.resolution_ns);
        let Some(mut e) = Excesses::from_buckets(pairs) else { break };
        // Ties: a histogram whose top holds few distinct values (a quiet system, or a file of
        // whole microseconds) has no tail to fit.
        if e.y.len() < MIN_DISTINCT || e.k > (2 * k.max(MOST_EXCEEDANCES)) as f64 {
            f.not_applicable = Some(format!(
                "the {} values over {} lie in {}: too few distinct values to fit a tail (at least {MIN_DISTINCT}, at most {} values)",
                e.k,
                Nanos(u),
                crate::vocab::Count(e.y.len() as u64, "distinct bucket"),
                2 * k.max(MOST_EXCEEDANCES)
            ));
            f.threshold_ns = Some(u);
            f.exceedances = e.k as u64;
            return f;
        }
        let Some(m) = gpd::fit(&mut e) else {
            first_failure.get_or_insert_with(|| {
                format!(
                    "the {} values over {} have no maximum-likelihood fit (its shape runs to the edge of [{}, {}])",
                    e.k,
                    Nanos(u),
                    gpd::SHAPE_MIN,
                    gpd::SHAPE_MAX
                )
            });
            k /= 2;
            continue;
        };
        // (the draws that place each value in its bucket start from the histogram: the same
        // run always gets the same answer)
        let start = n ^ u.rotate_left(32) ^ (e.k as u64).rotate_left(16);
        let a2 = checks::anderson_darling(&e.lo, &e.hi, &e.n, |y| 1.0 - gpd::survival(m.sigma, m.xi, y), start);
        let p = checks::anderson_darling_p(a2, m.xi);
        let outcome = test(
            "anderson-darling",
            a2,
            p,
            ALPHA_FIT,
            format!("the {} values over {} against the fitted tail: A² = {a2:.3}, {}", e.k, Nanos(u), p_text(p)),
        );
        let passed = outcome.passed;
        if chosen.is_none() || passed {
            chosen = Some((u, e, m, outcome));
        }
        if passed {
            break;
        }
        first_failure.get_or_insert_with(|| {
            format!(
                "the values over {} do not follow a generalised Pareto tail (Anderson–Darling {}): a mixture the threshold cannot separate",
                Nanos(u),
                p_text(p)
            )
        });
        k /= 2;
    }
    let Some((u, e, m, fit_test)) = chosen else {
        f.not_applicable = Some(first_failure.unwrap_or_else(|| "no values above a threshold to fit".to_string()));
        return f;
    };
    f.threshold_ns = Some(u);
    f.exceedances = e.k as u64;
    let mut reasons: Vec<String> = Vec::new();
    if !fit_test.passed {
        reasons.push(first_failure.clone().unwrap_or_default());
    }
    f.tests.push(fit_test);
    // The observed worst case against the fitted tail: a value at least as high in a run like
    // this one must not be too rare under the fit (a rarer component it misses).
    if let Some(max) = s.max_ns {
        let beyond = gpd::survival(m.sigma, m.xi, max as f64 - u as f64);
        let p = 1.0 - (-e.k * beyond).exp();
        let t = test(
            "worst-case",
            beyond,
            p,
            ALPHA_DATA,
            format!(
                "the worst case {} under the fitted tail (which puts {beyond:.3} of the values over the threshold above it): a run like this one sees one as high with {}",
                Nanos(max),
                p_text(p).replace("p = ", "probability ").replace("p < ", "probability below ")
            ),
        );
        judge(&mut f, &mut reasons, t, || {
            format!(
                "the worst case {} lies beyond the fitted tail ({}): a rarer component the threshold cannot separate",
                Nanos(max),
                p_text(p)
            )
        });
    }
    // Independence and stationarity, from the timeline's window maxima.
    match s.timeline.map(window_maxima) {
        // (another tool's histogram: the forecast is given, its untested assumption stated)
        None if s.foreign => {
            f.assumed = Some(UNTESTED.to_string());
        }
        None => reasons.push(
            "no timeline that fits the run: the independence and stationarity of the values cannot be tested".to_string(),
        ),
        Some(x) if x.len() < MIN_WINDOWS => reasons.push(format!(
            "{} windows; the tests of independence and stationarity need at least {MIN_WINDOWS} (run longer or give a shorter --window)",
            x.len()
        )),
        Some(x) => {
            let x = checks::Ranked::new(x);
            let (rho, p) = checks::trend_of_ranks(&x.ranks);
            let t = test(
                "trend",
                rho,
                p,
                ALPHA_DATA,
                format!("Spearman's ρ of the window maxima with time: {rho:.3}, {}", p_text(p)),
            );
            judge(&mut f, &mut reasons, t, || format!(
                    "the window maxima {} during the run (Spearman's ρ = {rho:.2}, {}): the tail is not stationary",
                    if rho > 0.0 { "rose" } else { "fell" },
                    p_text(p)
                ));
            let (d, p) = x.halves_ks(x.len() / 2);
            let t = test(
                "halves",
                d,
                p,
                ALPHA_DATA,
                format!("the window maxima of the first and second half compared (Kolmogorov–Smirnov): D = {d:.3}, {}", p_text(p)),
            );
            judge(&mut f, &mut reasons, t, || format!(
                    "the first and second half of the run have different window maxima (Kolmogorov–Smirnov {}): the tail is not stationary",
                    p_text(p)
                ));
            let lags = (x.len() / 5).clamp(1, 10);
            let (q, p) = checks::ljung_box_of_ranks(&x.ranks, lags);
            let t = test(
                "ljung-box",
                q,
                p,
                ALPHA_DATA,
                format!("autocorrelation of the {} window maxima over {lags} lags: Q = {q:.1}, {}", x.len(), p_text(p)),
            );
            judge(&mut f, &mut reasons, t, || format!(
                    "the window maxima are correlated (Ljung–Box {}): the worst values come in bursts, not independently",
                    p_text(p)
                ));
        }
    }
    let phases: Vec<(f64, f64)> = s
        .phases
        .iter()
        .filter(|(periods, _)| *periods > 0)
        .map(|(periods, h)| {
            let over: u64 = h.buckets.triples().filter(|t| t[0] >= u).map(|t| t[2]).sum();
            (over as f64, *periods as f64)
        })
        .collect();
    if phases.len() >= 2 {
        let (observed, exposure): (Vec<f64>, Vec<f64>) = phases.iter().copied().unzip();
        let (x2, p) = checks::same_rates(&observed, &exposure);
        let t = test(
            "phases",
            x2,
            p,
            ALPHA_DATA,
            format!(
                "the rate of values over {} in each of the {} load phases compared: χ² = {x2:.1}, {}",
                Nanos(u),
                phases.len(),
                p_text(p)
            ),
        );
        judge(&mut f, &mut reasons, t, || {
            format!(
                "the load phases have different tails (values over {}: χ² {}): fit a run of one load at a time",
                Nanos(u),
                p_text(p)
            )
        });
    }
    let Some(edges) = gpd::region(&e, &m) else {
        reasons
            .push("the likelihood has no confidence region at its maximum (too few distinct values over the threshold)".into());
        f.not_applicable = reasons.into_iter().next();
        return f;
    };
    let fit = fit_of(u, &m, &edges);
    let levels = levels(&f, &fit, u, e.k);
    // A level for a horizon at least 10 times the run's length below what the run saw: the fit
    // understates the worst values (a run as long as the horizon exceeds its own return level
    // in 63 % of cases, one 10 times shorter in fewer than 10 %).
    let run_periods = s.periods as f64;
    if let Some(max) = s.max_ns {
        if let Some(l) = levels.iter().find(|l| l.periods >= 10.0 * run_periods && l.level_ns < max as f64) {
            reasons.push(format!(
                "the fitted tail puts the latency exceeded once per {} ({}) below the worst case this much shorter run saw ({}): it understates the worst values",
                l.horizon,
                Nanos(l.level_ns.round() as u64),
                Nanos(max)
            ));
        }
    }
    if let Some(r) = reasons.into_iter().next() {
        f.not_applicable = Some(r);
        return f;
    }
    f.return_levels = levels;
    f.fit = Some(fit);
    f
}

fn fit_of(u: u64, m: &Mle, edges: &[Edge]) -> Fit {
    let (lo, hi) = edges.iter().fold((m.xi, m.xi), |(a, b), e| (a.min(e.xi), b.max(e.xi)));
    let tail = if lo > 0.0 {
        "heavy"
    } else if hi < 0.0 {
        "bounded"
    } else {
        "exponential"
    };
    let r4 = |v: f64| (v * 1e4).round() / 1e4;
    Fit {
        shape: r4(m.xi),
        shape_low: r4(lo),
        shape_high: r4(hi),
        scale_ns: r4(m.sigma),
        tail: tail.to_string(),
        endpoint_ns: (m.xi < 0.0).then(|| (u as f64 - m.sigma / m.xi).round()),
        region: edges.iter().map(|e| [e.sigma, e.xi]).collect(),
    }
}

/// The return levels of the standard horizons: of time, at the series' interval; of periods,
/// when its interval is not known (0).
fn levels(f: &Forecast, fit: &Fit, u: u64, k: f64) -> Vec<ReturnLevel> {
    if f.interval_ns == 0 {
        return PERIOD_HORIZONS.iter().filter_map(|&(name, periods)| level(f, fit, u, k, name, periods)).collect();
    }
    HORIZONS.iter().filter_map(|&(name, ns)| level(f, fit, u, k, name, ns / f.interval_ns as f64)).collect()
}

/// The level exceeded on average once in `periods` periods.
fn level(f: &Forecast, fit: &Fit, u: u64, k: f64, name: &str, periods: f64) -> Option<ReturnLevel> {
    // Expected exceedances of the threshold in that many periods.
    let l = periods * k / f.periods.max(1) as f64;
    if l.is_nan() || l < 1.0 {
        return None;
    }
    let m = Mle { sigma: fit.scale_ns, xi: fit.shape, loglik: 0.0 };
    let edges: Vec<Edge> = fit.region.iter().map(|&[sigma, xi]| Edge { sigma, xi, open: xi >= gpd::SHAPE_MAX - 1e-6 }).collect();
    let (at, low, high) = gpd::interval_at(&m, &edges, l);
    // The interval is the profile likelihood's of (σ, ξ) at the observed exceedance rate; the
    // rate's own uncertainty (its logarithm's standard error 1/√k: the threshold is the k-th
    // largest value) adds, in quadrature on the logarithm of the excess, 1.96/√k times the
    // excess's elasticity to the rate, σ·l^ξ / excess. (On the logarithm: the interval stays
    // above the threshold and keeps the profile's asymmetry.)
    let (low, high) = if at > 0.0 {
        let s = 1.96 * fit.scale_ns * l.powf(fit.shape) / at / k.sqrt();
        let widen = |ratio: f64| (ratio * ratio + s * s).sqrt();
        let low = if low > 0.0 { at * (-widen((at / low).ln())).exp() } else { low };
        (low, high.map(|h| at * widen((h / at).ln()).exp()))
    } else {
        (low, high)
    };
    if !(at.is_finite() && low.is_finite()) {
        return None;
    }
    let high = high.filter(|h| h.is_finite());
    let r = |v: f64| (v * 10.0).round() / 10.0;
    Some(ReturnLevel {
        horizon: name.to_string(),
        periods,
        level_ns: r(u as f64 + at),
        low_ns: r(u as f64 + low),
        high_ns: high.map(|h| r(u as f64 + h)),
    })
}

/// The return level of a forecast that applies at `periods` periods (once in that many);
/// `None` when the forecast does not apply or the level lies below its threshold.
pub fn level_at(f: &Forecast, name: &str, periods: f64) -> Option<ReturnLevel> {
    let fit = f.fit.as_ref().filter(|_| f.applies())?;
    level(f, fit, f.threshold_ns?, f.exceedances as f64, name, periods)
}

/// A level the run covered at least this many times over is measured, not forecast.
pub const MEASURED_FROM: f64 = 3.0;

/// The level exceeded on average once in `periods` periods as the run measured it, when the run
/// covered that many periods at least [`MEASURED_FROM`] times (`run_periods`, served and
/// missed): the value exceeded c = run_periods / periods times (the c-th largest), its 95 %
/// interval from the order statistics around it (ranks c ∓ 1.96·√c, the count of values over
/// the true level being Poisson of mean c). Missed periods count as periods, not as values.
/// `None` for a horizon the run did not cover often enough, or without values.
pub fn measured_level(h: &HistogramData, run_periods: u64, name: &str, periods: f64) -> Option<ReturnLevel> {
    let c = run_periods as f64 / periods;
    // (a document whose bucket list is empty has nothing to read a level from)
    if c.is_nan() || c < MEASURED_FROM || h.total_count == 0 || h.buckets.is_empty() {
        return None;
    }
    // The bucket holding the r-th largest value (r ≥ 1; the smallest value's past the count).
    let at_rank = |r: f64| -> [u64; 3] {
        let r = r.max(1.0).ceil() as u64;
        let mut above = 0;
        for t in h.buckets.triples().rev() {
            above += t[2];
            if above >= r {
                return t;
            }
        }
        h.buckets.triples().next().unwrap_or_default()
    };
    let spread = 1.96 * c.sqrt();
    let estimate = at_rank(c);
    let high = at_rank((c - spread).floor());
    let low = at_rank((c + spread).ceil() + 1.0);
    Some(ReturnLevel {
        horizon: name.to_string(),
        periods,
        level_ns: (estimate[0] + estimate[1] + 1) as f64 / 2.0,
        low_ns: low[0] as f64,
        high_ns: Some((high[1] + 1) as f64),
    })
}

/// The level exceeded on average once in `periods` periods of series `p`: measured where the run
/// covered that horizon at least [`MEASURED_FROM`] times ([`measured_level`], `true`), else its
/// forecast's (`false`); the reason when neither can say.
/// `assume_independent`: whether a forecast that assumed independence and stationarity without
/// a test may be relied on (else it is not, and the reason says how to allow it).
pub fn level_of(
    p: &ProbeResult,
    name: &str,
    periods: f64,
    assume_independent: bool,
) -> Result<(ReturnLevel, bool), crate::vocab::Error> {
    level_of_text(p, name, periods, assume_independent).map_err(crate::vocab::Error::Invalid)
}

/// [`level_of`], its failure as text.
fn level_of_text(p: &ProbeResult, name: &str, periods: f64, assume_independent: bool) -> Result<(ReturnLevel, bool), String> {
    if let Some(l) = measured_level(&p.histogram, p.samples + p.missed, name, periods) {
        return Ok((l, true));
    }
    let Some(f) = &p.forecast else {
        return Err("this series has no forecast (its values are not latencies of one CPU)".to_string());
    };
    if let Some(why) = &f.not_applicable {
        return Err(format!("forecast not applicable: {why}"));
    }
    if f.assumed.is_some() && !assume_independent {
        return Err("the forecast assumes the values independent and stationary without a test (the histogram has no \
                    timeline): give --assume-independent to rely on it"
            .to_string());
    }
    level_at(f, name, periods).map(|l| (l, false)).ok_or_else(|| {
        format!(
            "{name} is below the forecast's threshold ({}) and the run covered it fewer than {MEASURED_FROM} times",
            Nanos(f.threshold_ns.unwrap_or(0))
        )
    })
}

/// The per-period probability of exceeding `bound_ns` under a forecast that applies.
pub fn probability_over(f: &Forecast, bound_ns: f64) -> Option<f64> {
    let fit = f.fit.as_ref().filter(|_| f.applies())?;
    let u = f.threshold_ns? as f64;
    let rate = f.exceedances as f64 / f.periods.max(1) as f64;
    if bound_ns <= u {
        return None;
    }
    Some(rate * gpd::survival(fit.scale_ns, fit.shape, bound_ns - u))
}

/// Whether timeline `t` fits the measured span: windows of some length, from within the span
/// to at most one window past its end (as a run's last window may reach).
fn fits(t: &TimelineData, span: (u64, u64)) -> bool {
    t.window_ns > 0
        && t.start_ns <= span.1
        && t.start_ns.saturating_add(t.len() as u64 * t.window_ns) <= span.1.saturating_add(t.window_ns)
}

/// The series of `run` that get an analysis: every CPU's latency series that measured values.
fn analysed(p: &ProbeResult) -> bool {
    p.cpu.is_some() && p.in_worst_case() && p.samples > 0
}

/// Fills in the convergence and forecast of every latency series of `run` that lacks them (a run
/// just measured, or a document of an older version).
pub fn analyse(run: &mut RunResult) {
    let made = analyses(run);
    run.analysed(made);
}

/// The analyses [`analyse`] would give `run`: for every latency series that lacks its forecast,
/// its index among `run.probes`, its convergence and its forecast; `run` is not changed.
pub fn analyses(run: &RunResult) -> Vec<Analysis> {
    let mut filled: Vec<Analysis> = Vec::new();
    for (i, p) in run.probes.iter().enumerate() {
        if !analysed(p) || p.forecast.is_some() {
            continue;
        }
        let cpu = p.cpu;
        let config = run.config.probes.iter().find(|c| c.name == p.probe && cpu.is_some_and(|c2| c.cpus.contains(&c2)));
        // (0: not known, as in another tool's file that does not say it; its placeholder is
        // not used)
        let interval_ns = if crate::result::imported::unknown(run, "config.interval_ns") {
            0
        } else {
            config.map_or(run.config.interval_ns, |c| c.interval_ns)
        };
        let warmup_ns = config.map_or(0, |c| c.warmup_periods.saturating_mul(interval_ns));
        let span = (warmup_ns, warmup_ns + run.measured_ns);
        let phases = run
            .phases
            .iter()
            .filter_map(|ph| ph.probes.iter().find(|q| q.probe == p.probe && q.series == p.series && q.cpu == cpu))
            .map(|q| (q.samples + q.missed, &q.histogram))
            .collect();
        // (a timeline that does not fit the measured span — a document's, not a run's — is not used)
        let timeline = p.timeline.as_ref().filter(|t| fits(t, span));
        let series = Series {
            histogram: &p.histogram,
            periods: p.samples + p.missed,
            max_ns: p.max_ns,
            max_at_ns: p.max_at_ns,
            timeline,
            interval_ns,
            resolution_ns: run.imported.as_ref().map_or(1, |i| i.resolution()),
            foreign: run.imported.as_ref().is_some_and(|i| i.foreign()),
            span,
            phases,
        };
        let convergence = p.timeline.as_ref().and_then(|t| convergence::of(t, span, p.max_ns.zip(p.max_at_ns), interval_ns));
        filled.push(Analysis { series: i, convergence, forecast: forecast(&series) });
    }
    filled
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::histogram::new_histogram;
    use rtgauge_truth as truth;

    fn series<'a>(h: &'a HistogramData, t: Option<&'a TimelineData>, n: u64, max: u64) -> Series<'a> {
        Series {
            histogram: h,
            periods: n,
            max_ns: Some(max),
            max_at_ns: None,
            timeline: t,
            interval_ns: 1_000_000,
            resolution_ns: 1,
            foreign: false,
            span: (0, n * 1_000_000),
            phases: Vec::new(),
        }
    }

    /// The threshold, excesses and measured levels read from the top of the bucket list are
    /// those of a copy of it indexed from the bottom (as they were read before): for random
    /// histograms with counts up to 3 000 per value (so that a bucket of ties too large to take
    /// whole ends the walk), fixed lists that end it for certain, `k` from 0 to beyond the
    /// count, and levels whose ranks run past the count.
    #[test]
    fn walking_the_buckets_from_the_top_reads_what_a_copy_read() {
        let copied_exceedances = |h: &HistogramData, k: u64| {
            let triples: Vec<[u64; 3]> = h.buckets.triples().collect();
            let (mut taken, mut first) = (0, triples.len());
            while first > 0 && taken < k {
                if taken >= FEWEST_EXCEEDANCES && taken + triples[first - 1][2] > 2 * k {
                    break;
                }
                first -= 1;
                taken += triples[first][2];
            }
            let u = triples.get(first).map_or(0, |t| t[0]);
            let excesses: Vec<(f64, f64, u64)> =
                triples[first..].iter().map(|&[lo, hi, n]| ((lo - u) as f64, (hi + 1 - u) as f64, n)).collect();
            (u, excesses)
        };
        let copied_level = |h: &HistogramData, name: &str, periods: f64| {
            let c = h.total_count as f64 / periods;
            let triples: Vec<[u64; 3]> = h.buckets.triples().collect();
            let at_rank = |r: f64| -> [u64; 3] {
                let r = r.max(1.0).ceil() as u64;
                let mut above = 0;
                for t in triples.iter().rev() {
                    above += t[2];
                    if above >= r {
                        return *t;
                    }
                }
                triples[0]
            };
            let spread = 1.96 * c.sqrt();
            let (estimate, high, low) = (at_rank(c), at_rank((c - spread).floor()), at_rank((c + spread).ceil() + 1.0));
            ReturnLevel {
                horizon: name.to_string(),
                periods,
                level_ns: (estimate[0] + estimate[1] + 1) as f64 / 2.0,
                low_ns: low[0] as f64,
                high_ns: Some((high[1] + 1) as f64),
            }
        };
        let mut cases = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..30 {
            let mut h = new_histogram();
            for _ in 0..(case * 131 % 4000) {
                let (v, n) = (next(), next());
                h.record_n(1 + v % (1u64 << (8 + v % 20)), 1 + n % 3000).unwrap();
            }
            cases.push(HistogramData::encode(&h));
        }
        // From the top: 30, 30, then 200 ties: with k = 100 the walk stops before the 200, its
        // threshold the second bucket's lowest value.
        let mut ties = new_histogram();
        for (v, n) in [(1_000, 5), (2_000, 200), (3_000, 30), (4_000, 30)] {
            ties.record_n(v, n).unwrap();
        }
        let ties = HistogramData::encode(&ties);
        let (u, excesses) = exceedances(&ties, 100, 1);
        assert_eq!((u, excesses.len()), (3_000, 2), "the 200 ties end the walk");
        cases.push(ties);
        let mut walks_ended = 0;
        for (case, d) in cases.iter().enumerate() {
            for k in [0, 1, 2, 49, 50, 51, 100, 500, 1000, 5000, 1 << 40] {
                let ours = exceedances(d, k, 1);
                assert_eq!(ours, copied_exceedances(d, k), "case {case}, k {k}");
                let taken: u64 = ours.1.iter().map(|e| e.2).sum();
                walks_ended += usize::from(taken < k && ours.1.len() < d.buckets.len());
            }
            let n = d.total_count as f64;
            for periods in [1.0, 2.0, n / 100.0, n / 10.0, n / 3.0] {
                let level = measured_level(d, d.total_count, "t", periods);
                let c = n / periods;
                assert_eq!(level.is_some(), d.total_count > 0 && c >= MEASURED_FROM, "case {case}, periods {periods}");
                if let Some(l) = level {
                    assert_eq!(l, copied_level(d, "t", periods), "case {case}, periods {periods}");
                }
            }
        }
        assert!(walks_ended >= 5, "only {walks_ended} walks ended at a bucket of ties: the cases do not test it");
    }

    /// A histogram whose top is a few values (a quiet system, a file of whole microseconds):
    /// not applicable, no level, and a document that reads back (no NaN).
    /// A series whose interval is not known: levels per 10⁶ and 10⁹ periods, the same as the
    /// forecast gives at those periods when the interval is known; none per time.
    #[test]
    fn an_unknown_interval_gives_levels_per_periods_only() {
        let d = truth::draw(truth::Tail::Exponential { scale: 5_000.0 }, 2_000_000, 0.0, &mut truth::Rng::new(11));
        let mut s = series(&d.histogram, None, d.n, d.max.0);
        s.foreign = true;
        let known = forecast(&s);
        s.interval_ns = 0;
        let unknown = forecast(&s);
        assert!(known.applies() && unknown.applies(), "{:?} {:?}", known.not_applicable, unknown.not_applicable);
        assert_eq!(unknown.interval_ns, 0);
        let names: Vec<&str> = unknown.return_levels.iter().map(|l| l.horizon.as_str()).collect();
        assert_eq!(names, ["1e6 periods", "1e9 periods"]);
        for l in &unknown.return_levels {
            assert_eq!(Some(l.clone()), level_at(&known, &l.horizon, l.periods), "{}", l.horizon);
        }
        assert!(known.return_levels.iter().all(|l| ["1h", "1d", "1y"].contains(&l.horizon.as_str())));
        // (rtgauge's own run without a timeline: refused, not assumed)
        s.foreign = false;
        assert!(forecast(&s).not_applicable.is_some_and(|r| r.starts_with("no timeline")));
    }

    #[test]
    fn a_bucket_stands_for_the_units_its_values_were_truncated_to() {
        assert_eq!(span_of(49_984, 50_015, 1000), (50_000, 51_000));
        assert_eq!(span_of(1_000, 1_000, 1000), (1_000, 2_000));
        assert_eq!(span_of(49_984, 50_015, 1), (49_984, 50_016));
        // (no multiple of the unit in the bucket: the bucket widened by a unit)
        assert_eq!(span_of(1_001, 1_003, 1000), (1_001, 2_003));
        // (no arithmetic wraps, whatever a document holds)
        let (a, b) = span_of(u64::MAX - 5, u64::MAX, 1_000_000);
        assert!(a <= b);
    }

    #[test]
    fn ties_are_no_tail() {
        let mut h = new_histogram();
        h.record_n(50_000, 19_990).unwrap();
        h.record_n(51_000, 10).unwrap();
        let h = HistogramData::encode(&h);
        let t = TimelineData {
            window_ns: 500_000_000,
            start_ns: 0,
            count: vec![500; 40],
            missed: vec![0; 40],
            max_ns: (0..40).map(|i| if i % 7 == 0 { 51_000 } else { 50_000 }).collect(),
            p99_ns: vec![0; 40],
        };
        let f = forecast(&series(&h, Some(&t), 20_000, 51_000));
        assert!(f.not_applicable.as_deref().is_some_and(|r| r.contains("distinct")), "{:?}", f.not_applicable);
        assert!(f.return_levels.is_empty() && f.fit.is_none());
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<Forecast>(&json).unwrap(), f);
    }

    /// The worst-case checks need the maximum, not its time; a timeline that does not fit the
    /// span is not used.
    #[test]
    fn the_worst_case_is_checked_without_its_time_and_unfit_timelines_are_not_used() {
        let d = truth::draw(truth::Tail::Exponential { scale: 5_000.0 }, 60_000, 0.0, &mut truth::Rng::new(3));
        let f = forecast(&series(&d.histogram, Some(&d.timeline), d.n, d.max.0));
        assert!(f.tests.iter().any(|t| t.name == "worst-case"), "{:?}", f.tests);
        let span = (1_000_000_000, 1_000_000_000 + d.n * 1_000_000);
        assert!(fits(&d.timeline, span));
        assert!(!fits(&TimelineData { window_ns: 0, ..d.timeline.clone() }, span));
        assert!(!fits(&TimelineData { start_ns: 1_000_000_000_000_000, ..d.timeline.clone() }, span));
        assert!(!fits(&TimelineData { window_ns: 10_000_000_000, ..d.timeline.clone() }, span));
    }
}
