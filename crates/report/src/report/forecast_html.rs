//! "Was the run long enough?" in the HTML report and comparison: per latency series and CPU the
//! worst case's convergence (its records, when it last rose, whether it is still rising), the
//! forecast of its tail (the fit and its tail named, the return levels with their intervals, or
//! "not applicable: <reason>" and never a level), the tests that decided it, the probability of
//! exceedance plot ([`super::plot::exceedance`]), and the run length a claim needs without any
//! model (the rule of three). Everything shown comes from the result document's `convergence`
//! and `forecast` (a document of an older version is analysed first: [`analysed`]); see
//! docs/forecast.md.

use super::html::{table, Named};
use super::markup::Html;
use super::plot;
use crate::forecast::p_text;
use crate::html;
use crate::result::forecast::{Convergence, Fit, Forecast};
use crate::result::{ProbeResult, RunResult};
use crate::vocab::length::{grouped, span};
use crate::vocab::units::Nanos;
use std::borrow::Cow;

/// Records of a series shown in its table: the first and the last ones up to this many.
const RECORDS_SHOWN: usize = 12;

/// The run with every latency series analysed: `r` itself when it has its analyses, else a copy
/// given them (a stored run of an older version, an import without them).
pub fn analysed(r: &RunResult) -> Cow<'_, RunResult> {
    let missing = r.probes.iter().any(|p| p.cpu.is_some() && p.in_worst_case() && p.samples > 0 && p.forecast.is_none());
    if !missing {
        return Cow::Borrowed(r);
    }
    let mut copy = r.clone();
    crate::forecast::analyse(&mut copy);
    Cow::Owned(copy)
}

/// The entries of a series that have an analysis, each with its forecast.
fn with_forecast<'a>(entries: &[&'a ProbeResult]) -> Vec<(&'a ProbeResult, &'a Forecast)> {
    entries.iter().filter_map(|p| Some((*p, p.forecast.as_ref()?))).collect()
}

/// The section of series `label`: per CPU its convergence, forecast, plot, tests and the rule
/// of three; empty when no entry has an analysis (not a latency series, nothing measured).
pub fn section(label: &str, entries: &[&ProbeResult]) -> Result<Html, crate::vocab::Error> {
    section_text(label, entries).map_err(crate::vocab::Error::System)
}

/// [`section`], its failure as text.
fn section_text(label: &str, entries: &[&ProbeResult]) -> Result<Html, String> {
    let analysed = with_forecast(entries);
    if analysed.is_empty() {
        return Ok(Html::new());
    }
    let mut h = html!(
        "<h4>Was the run long enough? ({})</h4><p class=\"muted\">Per CPU: when the worst case \
         last rose, the tail's forecast by extreme value theory (a generalised Pareto distribution over a high \
         threshold, given only when the tests of its assumptions pass) and the run a claim needs without any model. \
         The figures hold for this load and this configuration only; docs/forecast.md says how they are made.</p>",
        label
    );
    for (p, f) in analysed {
        h += entry(label, p, f)?;
    }
    Ok(h)
}

/// The probability-of-exceedance plots of series `label`, one per CPU with an analysis, each with
/// its CPU (`cpu0`).
pub fn plots(label: &str, entries: &[&ProbeResult]) -> Vec<(String, String)> {
    with_forecast(entries).into_iter().map(|(p, f)| (p.scope(), exceedance_plot(label, p, f).into_string())).collect()
}

fn exceedance_plot(label: &str, p: &ProbeResult, f: &Forecast) -> Html {
    plot::exceedance(&format!("{label} on {}: probability of exceedance", p.scope()), p, Some(f))
}

/// One CPU's part of the section.
fn entry(label: &str, p: &ProbeResult, f: &Forecast) -> Result<Html, String> {
    let mut h = html!("<h5>{} on {}</h5>", label, &p.scope());
    h += &convergence(p.convergence.as_ref());
    h += &forecast(f, p.convergence.as_ref().is_some_and(|c| c.rising));
    let svg = exceedance_plot(label, p, f);
    h += html!("<figure class=\"plot exceedance\">{}<figcaption class=\"muted\">{}</figcaption></figure>", svg, &caption(p, f));
    if !f.tests.is_empty() {
        let rows: Vec<Vec<String>> = f
            .tests
            .iter()
            .map(|t| {
                let p = p_text(t.p_value);
                vec![
                    t.name.clone(),
                    format!("{:.3}", t.statistic),
                    p.strip_prefix("p = ").map_or(p.replace("p < ", "< "), str::to_string),
                    if t.passed { "pass" } else { "FAIL" }.to_string(),
                    t.detail.clone(),
                ]
            })
            .collect();
        h += "<p class=\"muted note\">The tests that decided whether the forecast applies, in the order they were made:</p>";
        h += &tests_table(&rows);
    }
    h += &rule_of_three(p, f);
    Ok(h)
}

/// The tests' table: name, statistic, p-value, passed, detail (the figures right-aligned, a
/// failed test in red).
fn tests_table(rows: &[Vec<String>]) -> Html {
    let mut h = Html::lit(
        "<table><thead><tr><th>test</th><th class=\"n\">statistic</th><th class=\"n\" style=\"white-space:nowrap\">p-value</th><th>passed</th>\
         <th>detail</th></tr></thead><tbody>",
    );
    for r in rows {
        h += "<tr>";
        for (i, c) in r.iter().enumerate() {
            let class = match (i, c.as_str()) {
                (1 | 2, _) => " class=\"n\"",
                (3, "FAIL") => " class=\"bad\"",
                (3, _) => " class=\"ok\"",
                _ => "",
            };
            h += html!("<td{class}>{_0}</td>", _0 = c, class = Html::lit(class));
        }
        h += "</tr>";
    }
    h + "</tbody></table>"
}

/// The convergence: a sentence and the table of records.
fn convergence(c: Option<&Convergence>) -> Html {
    let Some(c) = c else {
        return Html::lit(
            "<p><b>Convergence:</b> unknown: the run keeps no timeline of this series (runs of rtgauge keep one; \
                imports of other tools' files do not).</p>",
        );
    };
    let span = c.end_ns.saturating_sub(c.start_ns);
    let into = c.last_rise_ns.saturating_sub(c.start_ns);
    let state = if c.rising {
        html!(
            "<span class=\"bad\">still rising</span> ({} records in the last half of the run; a worst case that has settled \
             shows fewer than {} in 19 runs of 20): a longer run will see a higher one",
            c.records_last_half,
            crate::forecast::convergence::RISING_RECORDS
        )
    } else {
        html!(
            "<span class=\"ok\">not rising</span> ({} record{} in the last half of the run)",
            c.records_last_half,
            if c.records_last_half == 1 { "" } else { "s" }
        )
    };
    let mut h = html!(
        "<p><b>Convergence:</b> the worst case last rose {_0} into the {_1} measured ({_2} from the start of the run); {_3} \
         periods came after it, the last {_4:.1} % of the run; {state}.</p>",
        _0 = &Nanos(into).to_string(),
        _1 = &Nanos(span).to_string(),
        _2 = &Nanos(c.last_rise_ns).to_string(),
        _3 = grouped(c.periods_since),
        _4 = c.settled_percent,
        state = state
    );
    let shown: Vec<(usize, &crate::result::forecast::Record)> = c.records.iter().enumerate().collect();
    let n = shown.len();
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (k, (i, r)) in shown.iter().enumerate() {
        if n > RECORDS_SHOWN && k > 0 && k < n - (RECORDS_SHOWN - 1) {
            if k == 1 {
                rows.push(vec!["…".into(), format!("{} more", n - RECORDS_SHOWN), String::new()]);
            }
            continue;
        }
        rows.push(vec![(i + 1).to_string(), Nanos(r.at_ns).to_string(), crate::vocab::units::us(r.max_ns)]);
    }
    h += &table(&["record", "time from the start of the run", "worst case so far (µs)"], 2, &rows);
    h
}

/// The forecast: its fit and tail, its return levels; or why it does not apply. With what it
/// assumed untested, and (`rising`) what a forecast beside a worst case still rising means.
fn forecast(f: &Forecast, rising: bool) -> Html {
    let over = match f.threshold_ns {
        Some(u) => format!("the {} values over {} of {} periods", grouped(f.exceedances), Nanos(u), grouped(f.periods)),
        None => format!("{} periods", grouped(f.periods)),
    };
    let method = if f.method == "peaks-over-threshold" {
        format!("peaks over threshold: a generalised Pareto distribution fitted by maximum likelihood to {over}")
    } else {
        format!("{}: {over}", f.method)
    };
    let Some(fit) = f.fit.as_ref().filter(|_| f.applies()) else {
        let reason = f.not_applicable.as_deref().unwrap_or("no fit");
        return html!("<p><b>Forecast</b> ({}): <span class=\"bad\">not applicable: {}</span></p>", &method, reason);
    };
    let mut h = html!("<p><b>Forecast</b> ({}; scale σ = {}): <b>{}</b>.</p>", &method, &latency(fit.scale_ns), &tail(fit));
    if let Some(a) = &f.assumed {
        h += html!("<p class=\"warn\"><b>Assumed:</b> {}.</p>", &capitalised(a));
    }
    if rising {
        h += "<p class=\"warn\"><b>Still rising:</b> the tests found no trend in the window maxima, but the worst case \
              kept rising as independent values rarely do (in fewer than 1 run of 20): read the levels as a lower bound \
              until a longer run settles.</p>";
    }
    if f.interval_ns == 0 {
        h += "<p>The period is not known (the file does not say it): the levels are per periods, not per time of \
              operation.</p>";
    }
    if f.return_levels.is_empty() {
        return h + "<p>No return level: the horizons are shorter than the threshold's rate allows.</p>";
    }
    let rows: Vec<Vec<String>> = f
        .return_levels
        .iter()
        .map(|l| {
            let high = l.high_ns.map_or("no upper end".to_string(), latency);
            vec![
                if f.interval_ns == 0 {
                    horizon_words(&l.horizon)
                } else {
                    format!("{} (of operation at {})", horizon_words(&l.horizon), Nanos(f.interval_ns))
                },
                format!("{:.1e}", 1.0 / l.periods),
                latency(l.level_ns),
                format!("{} – {high}", latency(l.low_ns)),
                horizon_times(&l.horizon, 3.0),
            ]
        })
        .collect();
    h += &table(
        &["exceeded on average once per", "probability per period", "return level", "95 % interval", "a run that sees it (95 %)"],
        1,
        &rows,
    );
    h + "<p class=\"muted note\">A run sees a value over the once-per-T level with 95 % probability when it lasts about 3 T \
         (the chance of none in T is 1/e; in 3 T, 5 %).</p>"
}

/// The tail as the report names it: "heavy tail (ξ = 0.15, 95 % 0.02–0.36): no duration of
/// testing bounds the worst case".
fn tail(fit: &Fit) -> String {
    let xi = format!("ξ = {:.2}, 95 % {}", fit.shape, range(fit.shape_low, fit.shape_high, 2));
    match fit.tail.as_str() {
        "heavy" => format!("heavy tail ({xi}): no duration of testing bounds the worst case"),
        "bounded" => match fit.endpoint_ns {
            Some(e) => format!("bounded tail ({xi}): it ends at about {}", latency(e)),
            None => format!("bounded tail ({xi})"),
        },
        "exponential" => format!("exponential tail ({xi}): each tenfold longer run adds about the same to the worst case"),
        other => format!("{other} tail ({xi})"),
    }
}

/// An interval of two figures: `0.02–0.36`, `-0.35 to -0.05` (a dash would read as a minus).
fn range(a: f64, b: f64, digits: usize) -> String {
    if a < 0.0 || b < 0.0 {
        format!("{a:.digits$} to {b:.digits$}")
    } else {
        format!("{a:.digits$}–{b:.digits$}")
    }
}

/// What the figure under the plot says: how the points and the fit are drawn, or why there is
/// no fit.
fn caption(p: &ProbeResult, f: &Forecast) -> Html {
    let measured = "Points: the share of the periods with a value over x, at each histogram bucket's upper edge \
                    (thinned); dashed lines: 1e-6 and 1e-9 per period.";
    if !f.applies() {
        return html!("forecast not applicable: {}. {}", f.not_applicable.as_deref().unwrap_or("no fit"), Html::lit(measured));
    }
    let mut s = html!(
        "{measured} Red: the fitted generalised Pareto tail over the threshold (its rate of values over the threshold \
         times its survival), with its 95 % band; black: the return levels at once per their horizon, their 95 % \
         intervals as bars.",
        measured = Html::lit(measured)
    );
    if let (_, true) = plot::exceedance_x_end(p, Some(f)) {
        let open: Vec<String> = f
            .return_levels
            .iter()
            .filter(|l| l.high_ns.is_none())
            .map(|l| format!("once per {}", horizon_words(&l.horizon)))
            .collect();
        s += html!(
            " Unbounded: the 95 % interval of the level exceeded {} has no upper end (its bar runs to the plot's edge). \
             The latency axis ends at an hour or a thousand times the worst case, whichever comes first: a level or bar \
             beyond it runs to the edge.",
            open.join(" and ")
        );
    }
    s
}

/// The run length the rule of three asks, without any model.
fn rule_of_three(p: &ProbeResult, f: &Forecast) -> Html {
    let n = f.periods.max(1);
    let at = |periods: f64| {
        if f.interval_ns > 0 {
            format!(" ({} at {})", span(periods * f.interval_ns as f64), Nanos(f.interval_ns))
        } else {
            String::new()
        }
    };
    let worst = p.max_ns.map_or("its worst case".to_string(), |m| format!("its worst case, {}", Nanos(m)));
    let mut h = html!(
        "<p><b>Without a model</b> (the rule of three): the {} periods saw no value over {}, so the probability per \
         period of one over it is below 3/{} = {:.1e} at 95 % confidence. ",
        grouped(n),
        &worst,
        grouped(n),
        3.0 / n as f64
    );
    let claims: Vec<String> = plot::REFERENCE_PROBABILITIES
        .iter()
        .map(|&q| {
            let need = 3.0 / q;
            format!("a claim of {q:.0e} per period needs {} periods{}", grouped(need.round() as u64), at(need))
        })
        .collect();
    h += html!("{}.", &capitalised(&claims.join("; ")));
    h + "</p>"
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

/// A horizon's words: `1h` → "hour".
fn horizon_words(h: &str) -> String {
    match h {
        "1h" => "hour".into(),
        "1d" => "day".into(),
        "1y" => "year".into(),
        other => match crate::forecast::PERIOD_HORIZONS.iter().find(|(name, _)| *name == other) {
            Some(&(_, periods)) => format!("{} periods", grouped(periods as u64)),
            None => other.to_string(),
        },
    }
}

/// `k` times a horizon as time (`1h`, 3 → "3 h"), or in periods where it is one of periods.
fn horizon_times(h: &str, k: f64) -> String {
    if let Some(&(_, periods)) = crate::forecast::PERIOD_HORIZONS.iter().find(|(name, _)| *name == h) {
        return format!("{} periods", grouped((k * periods) as u64));
    }
    let ns = crate::forecast::HORIZONS.iter().find(|(name, _)| *name == h).map(|&(_, ns)| ns);
    ns.map_or("-".to_string(), |ns| span(k * ns))
}

/// A latency of a forecast (ns, possibly far beyond what was measured) as read: `870.381 ms`,
/// `20 min`, `35 days`.
fn latency(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".to_string();
    }
    if ns > crate::vocab::units::MOST_LATENCY_NS {
        // (past an hour, the most a latency histogram holds, a figure says nothing more)
        return "more than 1 h".to_string();
    }
    if ns >= 60e9 {
        return span(ns);
    }
    // Three significant digits: a forecast's level is no more precise than that.
    let digits = ns.max(1.0).log10().floor() as i32;
    let step = 10f64.powi((digits - 2).max(0));
    Nanos(((ns.max(0.0) / step).round() * step) as u64).to_string()
}

/// The comparison's block of series `label`: per CPU each run's convergence and forecast side
/// by side (a run without the CPU, or without an analysis of it, shows "-").
pub fn compare_html(runs: &[Named], label: &str) -> Html {
    let analysed: Vec<Cow<RunResult>> = runs.iter().map(|n| analysed(&n.result)).collect();
    let mut scopes: Vec<String> = Vec::new();
    for r in &analysed {
        for p in r.probes.iter().filter(|p| p.label() == label && p.forecast.is_some()) {
            if !scopes.contains(&p.scope()) {
                scopes.push(p.scope());
            }
        }
    }
    if scopes.is_empty() {
        return Html::new();
    }
    let mut header = vec!["CPU".to_string(), String::new()];
    header.extend(runs.iter().map(Named::name));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for scope in &scopes {
        let of: Vec<Option<&ProbeResult>> = analysed
            .iter()
            .map(|r| r.probes.iter().find(|p| p.label() == label && &p.scope() == scope && p.forecast.is_some()))
            .collect();
        let mut add = |what: &str, cell: &dyn Fn(&ProbeResult, &Forecast) -> String| {
            let mut row = vec![if what == "last rise" { scope.clone() } else { String::new() }, what.to_string()];
            row.extend(of.iter().map(|p| p.and_then(|p| Some(cell(p, p.forecast.as_ref()?))).unwrap_or_else(|| "-".into())));
            rows.push(row);
        };
        add("last rise", &|p, _| match &p.convergence {
            Some(c) => format!(
                "{} into {}; {}",
                Nanos(c.last_rise_ns.saturating_sub(c.start_ns)),
                Nanos(c.end_ns.saturating_sub(c.start_ns)),
                if c.rising { "still rising" } else { "not rising" }
            ),
            None => "unknown (no timeline)".into(),
        });
        add("tail", &|_, f| match f.fit.as_ref().filter(|_| f.applies()) {
            Some(fit) if f.assumed.is_some() => format!("{}; independence and stationarity assumed, not tested", tail(fit)),
            Some(fit) => tail(fit),
            None => format!("not applicable: {}", f.not_applicable.as_deref().unwrap_or("no fit")),
        });
        // (the horizons of periods only where a run's period is not known)
        let unknown = of.iter().flatten().any(|p| p.forecast.as_ref().is_some_and(|f| f.interval_ns == 0));
        let horizons = crate::forecast::HORIZONS.iter().chain(crate::forecast::PERIOD_HORIZONS.iter().filter(|_| unknown));
        for &(h, _) in horizons {
            let per = if h.ends_with("periods") { "once in" } else { "once per" };
            add(&format!("{per} {}", horizon_words(h)), &|_, f| {
                if !f.applies() {
                    return "-".into();
                }
                f.return_levels.iter().find(|l| l.horizon == h).map_or("-".into(), |l| {
                    format!(
                        "{} ({} – {})",
                        latency(l.level_ns),
                        latency(l.low_ns),
                        l.high_ns.map_or("no upper end".into(), latency)
                    )
                })
            });
        }
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    html!(
        "<h3>Was the run long enough? ({})</h3><p class=\"muted\">Per CPU, each run's worst case convergence and the \
         forecast of its tail (return levels with their 95 % intervals; \"not applicable\" where the tests of the fit's \
         assumptions fail).</p>{}",
        label,
        table(&header, 99, &rows)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_times_read_as_planned() {
        assert_eq!(span(3e15), "35 days");
        assert_eq!(span(3.0 * 3.15576e16), "3 years");
        assert_eq!(span(3e12), "50 min");
        assert_eq!(latency(870_381_363.2), "870 ms");
        assert_eq!(latency(43_149.0), "43.1 µs");
        assert_eq!(latency(4e16), "more than 1 h");
        assert_eq!(grouped(3_000_000), "3 000 000");
        assert_eq!(horizon_times("1d", 3.0), "3 days");
    }

    #[test]
    fn a_tail_is_named_with_its_shape() {
        let fit = Fit {
            shape: 0.15,
            shape_low: 0.02,
            shape_high: 0.36,
            scale_ns: 1e4,
            tail: "heavy".into(),
            endpoint_ns: None,
            region: Vec::new(),
        };
        assert_eq!(tail(&fit), "heavy tail (ξ = 0.15, 95 % 0.02–0.36): no duration of testing bounds the worst case");
        assert_eq!(range(-0.35, -0.05, 2), "-0.35 to -0.05");
    }
}
