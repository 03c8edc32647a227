//! `rtgauge compare A B [C...]`: stored runs side by side — RT against preemptible kernel, board
//! against board. Per series and scope (each CPU present in a run, and all CPUs) every run's
//! figures with their ratio to the baseline's; for a `--cycle-time` the verdict of each run (as
//! `rtgauge run` would give it); with `--fail-if-worse`, exit 1 when a run's figure over all
//! CPUs of a series is worse than the baseline's by more than that share (for CI). Terminal,
//! `--json` or `--html` (the histograms and percentile curves of the runs overlaid). Each run's
//! board, and how it stands to the baseline's (`super::board`): across boards, or the same board
//! on the same or another kernel configuration, with the options that differ. Per latency series
//! and CPU, whether each run was long enough (`super::long_enough`): its worst case, how settled
//! it is, the return levels of its forecast side by side.
//!
//! A gate never passes for want of figures: a run that measured nothing, runs that share no
//! series, and (with `--fail-if-worse`) a judged series or CPU without a measurement in either
//! run are errors (exit 2), never "no regression".

use super::html::{figure, table, Named};
use super::markup::Html;
use super::summary::UNRESOLVED_MARK;
use crate::html;
use crate::result::{ProbeResult, RunResult};
use crate::vocab::percentiles::REPORTED;
use crate::vocab::units::{parse_duration_ns, us};
use anyhow::{anyhow, bail, Result};
use serde::Serialize;
use std::fmt::Write;

/// The figures compared, in table order: name and value (ns, or a count for `missed`).
fn figures(p: &ProbeResult) -> Vec<(&'static str, Option<f64>)> {
    let mut v = vec![("min", p.min_ns.map(|x| x as f64)), ("mean", p.mean_ns)];
    v.extend(p.percentiles.iter().map(|(q, x)| (q.label, x.map(|x| x as f64))));
    v.push(("max", p.max_ns.map(|x| x as f64)));
    v.push(("missed", Some(p.missed as f64)));
    v
}

fn metric_names() -> Vec<&'static str> {
    let mut v = vec!["min", "mean"];
    v.extend(REPORTED.iter().map(|q| q.label));
    v.extend(["max", "missed"]);
    v
}

/// One run's entry in a row of the comparison.
#[derive(Debug, Serialize)]
struct Cell {
    run: i64,
    samples: u64,
    /// Every compared figure (ns; `missed` a count), absent where the run has no value.
    figures: std::collections::BTreeMap<&'static str, f64>,
    /// Each figure divided by the baseline's (absent where either is missing or the baseline's is 0).
    ratios: std::collections::BTreeMap<&'static str, f64>,
    /// The percentiles among `figures` taken from too few values to resolve them (fewer than
    /// 10/(1 − p): the maximum or near it); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unresolved: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
struct Row {
    series: String,
    scope: String,
    runs: Vec<Cell>,
}

#[derive(Debug, Serialize)]
struct RunInfo {
    id: i64,
    label: Option<String>,
    host: String,
    kernel: String,
    preemption: String,
    /// The board it was measured on (for a document of an older version: its host's name).
    board: crate::result::board::Board,
    baseline: bool,
    /// For `--cycle-time`: passed, with the checks that failed.
    verdict: Option<bool>,
    failed_checks: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Regression {
    run: i64,
    series: String,
    metric: &'static str,
    baseline: f64,
    value: f64,
    ratio: f64,
}

#[derive(Debug, Serialize)]
pub struct Comparison {
    baseline: i64,
    cycle_time_ns: Option<u64>,
    budget_percent: f64,
    fail_if_worse_percent: Option<f64>,
    metrics: Vec<&'static str>,
    runs: Vec<RunInfo>,
    /// How each run after the baseline stands to it: its board, its kernel configuration.
    boards: Vec<super::board::BoardRelation>,
    rows: Vec<Row>,
    regressions: Vec<Regression>,
    /// Per latency series and CPU, each run's convergence and forecast ("was each run long
    /// enough?", `super::long_enough`).
    forecasts: Vec<super::long_enough::TailRow>,
}

/// The options of a comparison, checked before any run is read.
pub struct Options {
    cycle_time_ns: Option<u64>,
    budget: f64,
    worse: Option<f64>,
    metrics: Vec<&'static str>,
}

impl Options {
    /// The options of `rtgauge compare` as typed, checked before any run is read.
    pub fn parse(
        cycle_time: Option<&str>,
        budget: Option<&str>,
        fail_if_worse: Option<&str>,
        given_metrics: &[String],
    ) -> Result<Options> {
        let cycle_time_ns = cycle_time
            .map(|t| match parse_duration_ns(t, None) {
                Ok(0) | Err(_) => {
                    Err(anyhow!("--cycle-time {t}: not a time greater than zero; give one with a unit, e.g. --cycle-time 1ms"))
                }
                Ok(ns) => Ok(ns),
            })
            .transpose()?;
        let budget_text = budget.unwrap_or("25%");
        let budget = crate::vocab::units::parse_percent(budget_text)
            .ok_or_else(|| anyhow!("--budget {budget_text}: not a percentage between 0 and 100, e.g. --budget 25%"))?;
        let worse = fail_if_worse
            .map(|t| {
                t.trim()
                    .trim_end_matches('%')
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0 && *v <= 1e6)
                    .ok_or_else(|| anyhow!("--fail-if-worse {t}: not a percentage of 0 or more, e.g. --fail-if-worse 10%"))
            })
            .transpose()?;
        let known = metric_names();
        let metrics = if given_metrics.is_empty() {
            vec![REPORTED.iter().find(|q| q.label == "p99").map_or("max", |q| q.label), "max"]
        } else {
            given_metrics
                .iter()
                .map(|m| {
                    known
                        .iter()
                        .copied()
                        .find(|k| k == m)
                        .ok_or_else(|| anyhow!("--metrics {m}: not a figure; give some of {}", known.join(", ")))
                })
                .collect::<Result<Vec<_>>>()?
        };
        if given_metrics.iter().any(|_| worse.is_none()) {
            return Err(anyhow!(
                "--metrics says what --fail-if-worse judges: give --fail-if-worse too, e.g. --fail-if-worse 10%"
            ));
        }
        Ok(Options { cycle_time_ns, budget, worse, metrics })
    }
}

impl Comparison {
    /// Whether a run's figure was worse than the baseline's by more than `--fail-if-worse`.
    pub fn regressed(&self) -> bool {
        !self.regressions.is_empty()
    }
}

/// The runs compared under the options: refused when they are not comparable (see the module
/// comment), else every row, verdict and regression, and how their boards stand to each other
/// (`options`: the options of a kernel configuration, by its SHA-256, as the store keeps them).
pub fn compare(runs: &[Named], o: &Options, options: &super::board::OptionsOf) -> Result<Comparison> {
    comparable(runs, o)?;
    let mut c = build(runs, o)?;
    c.boards = super::board::relations(runs, options).map_err(anyhow::Error::msg)?;
    Ok(c)
}

/// The comparison's images for `--png`: each series' plots, named after the runs and series.
pub fn images(runs: &[Named], c: &Comparison) -> Vec<(String, String)> {
    let mut plots = Vec::new();
    for (label, kinds) in series_plots(runs, c) {
        let ids: Vec<String> = runs.iter().map(|n| n.id.to_string()).collect();
        for (kind, svg) in kinds {
            plots.push((format!("compare-{}-{}-{kind}", ids.join("-"), super::plot::slug(&label)), svg.into_string()));
        }
    }
    plots
}

/// The entry of `label` over all CPUs: the combined one, or the run's only CPU's.
fn overall<'a>(r: &'a RunResult, label: &str) -> Option<&'a ProbeResult> {
    r.combined.iter().find(|p| p.label() == label).or_else(|| {
        let mut it = r.probes.iter().filter(|p| p.label() == label);
        match (it.next(), it.next()) {
            (Some(p), None) => Some(p),
            _ => None,
        }
    })
}

/// Every (series, scope) of any run, in the order of the first run holding it; "all" last.
fn keys(runs: &[Named]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for n in runs {
        for p in n.result.probes.iter().chain(&n.result.combined) {
            let k = (p.label(), p.scope());
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    let order: Vec<String> = out.iter().map(|k| k.0.clone()).collect();
    out.sort_by_key(|(series, scope)| (order.iter().position(|s| s == series).unwrap_or(0), scope == "all"));
    out
}

fn entry<'a>(r: &'a RunResult, series: &str, scope: &str) -> Option<&'a ProbeResult> {
    if scope == "all" {
        return overall(r, series);
    }
    r.probes.iter().find(|p| p.label() == series && p.scope() == scope)
}

fn cell(id: i64, p: &ProbeResult, base: Option<&ProbeResult>) -> Cell {
    let figures: std::collections::BTreeMap<_, _> = figures(p).into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect();
    let base_figures: std::collections::BTreeMap<_, _> =
        base.map(figures_of).unwrap_or_default().into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect();
    let ratios = figures.iter().filter_map(|(k, v)| base_figures.get(k).filter(|b| **b > 0.0).map(|b| (*k, v / b))).collect();
    let unresolved = p.percentiles.unresolved_by(p.histogram.total_count).map(|q| q.label).collect();
    Cell { run: id, samples: p.samples, figures, ratios, unresolved }
}

fn figures_of(p: &ProbeResult) -> Vec<(&'static str, Option<f64>)> {
    figures(p)
}

/// Whether entry `p` of run `r` holds no measurement: no sample and no missed period; for the
/// noise probe, whose samples are the gaps over its threshold (none on a quiet CPU), no time
/// measured.
fn measured_nothing(r: &RunResult, p: &ProbeResult) -> bool {
    if p.noise.is_some() {
        r.measured_ns == 0
    } else {
        p.samples == 0 && p.missed == 0
    }
}

/// Every series (probe and series label) of a run, each once.
fn series_of(r: &RunResult) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in r.probes.iter().chain(&r.combined).map(ProbeResult::label) {
        if !out.contains(&l) {
            out.push(l);
        }
    }
    out
}

/// Refuses a comparison with nothing to compare: a run that measured nothing, a run that shares
/// no series with the baseline, and for `--fail-if-worse` an entry (a CPU, or all CPUs) of a
/// series both runs hold that measured nothing, in either run — a gate against it would pass
/// whatever was measured.
fn comparable(runs: &[Named], o: &Options) -> Result<()> {
    let name = |n: &Named| super::shown(&n.name()).into_owned();
    let base = &runs[0];
    for n in runs {
        let r = &n.result;
        if r.probes.iter().chain(&r.combined).all(|p| measured_nothing(r, p)) {
            bail!(
                "{} measured nothing (no sample, no missed period), so a comparison {} would mean nothing; compare runs \
                 that measured",
                name(n),
                if n.id == base.id { "against it (the baseline)" } else { "with it" }
            );
        }
    }
    let base_series = series_of(&base.result);
    for n in &runs[1..] {
        let series = series_of(&n.result);
        let shared: Vec<&String> = series.iter().filter(|s| base_series.contains(s)).collect();
        if shared.is_empty() {
            bail!(
                "{} and the baseline {} share no series ({} against {}): nothing to compare; give runs that measured the same probes",
                name(n),
                name(base),
                super::shown(&series.join(", ")),
                super::shown(&base_series.join(", "))
            );
        }
        if o.worse.is_none() {
            continue;
        }
        for label in shared {
            for m in [base, n] {
                let r = &m.result;
                if let Some(p) = r.probes.iter().chain(&r.combined).find(|p| p.label() == *label && measured_nothing(r, p)) {
                    bail!(
                        "--fail-if-worse: {} measured nothing on {}/{} (no sample, no missed period), so it cannot be judged; \
                         compare runs that measured every CPU of the series",
                        name(m),
                        super::shown(label),
                        p.scope()
                    );
                }
            }
        }
    }
    Ok(())
}

/// A figure `--fail-if-worse` judges: the entry's own, or for the noise probe on a CPU without
/// a gap over its threshold, 0 (it measured, and nothing was over).
fn judged(r: &RunResult, p: &ProbeResult, metric: &str) -> Option<f64> {
    let v = figures(p).into_iter().find(|(k, _)| *k == metric).and_then(|(_, v)| v);
    v.or_else(|| (p.noise.is_some() && !measured_nothing(r, p)).then_some(0.0))
}

fn build(runs: &[Named], o: &Options) -> Result<Comparison> {
    let base = &runs[0];
    let mut rows = Vec::new();
    for (series, scope) in keys(runs) {
        let b = entry(&base.result, &series, &scope);
        let cells = runs.iter().filter_map(|n| entry(&n.result, &series, &scope).map(|p| cell(n.id, p, b))).collect();
        rows.push(Row { series, scope, runs: cells });
    }
    let mut regressions = Vec::new();
    if let Some(pct) = o.worse {
        let base_series = series_of(&base.result);
        for row in rows.iter().filter(|r| r.scope == "all" && base_series.contains(&r.series)) {
            for n in runs[1..].iter().filter(|n| series_of(&n.result).contains(&row.series)) {
                // Both runs hold the series (`comparable` saw every entry measured): each judged
                // figure must be there in both, or the gate would pass for want of one.
                let (b, p) = (entry(&base.result, &row.series, "all"), entry(&n.result, &row.series, "all"));
                for &m in &o.metrics {
                    let values = (b.and_then(|b| judged(&base.result, b, m)), p.and_then(|p| judged(&n.result, p, m)));
                    let (Some(bv), Some(v)) = values else {
                        let who = if values.0.is_none() { format!("the baseline {}", base.name()) } else { n.name() };
                        bail!(
                            "--fail-if-worse: {} has no {m} of {} over all CPUs, so it cannot be judged; give runs that \
                             measured it, or other --metrics",
                            super::shown(&who),
                            super::shown(&row.series)
                        );
                    };
                    if v > bv * (1.0 + pct / 100.0) {
                        let ratio = if bv > 0.0 { v / bv } else { f64::INFINITY };
                        regressions.push(Regression {
                            run: n.id,
                            series: row.series.clone(),
                            metric: m,
                            baseline: bv,
                            value: v,
                            ratio,
                        });
                    }
                }
            }
        }
    }
    let runs_info = runs
        .iter()
        .map(|n| {
            let r = &n.result;
            let v = o.cycle_time_ns.map(|ct| verdict(r, ct, o.budget));
            RunInfo {
                id: n.id,
                label: n.label.clone(),
                host: r.system.hostname.clone(),
                kernel: r.system.kernel_release.clone(),
                preemption: r.system.preemption.model.clone(),
                board: super::board::board_of(r),
                baseline: n.id == base.id,
                verdict: v.as_ref().map(|v| v.passed),
                failed_checks: v
                    .map(|v| {
                        v.checks
                            .iter()
                            .filter(|c| !c.passed)
                            .map(|c| format!("{} {} observed {}", c.expr, c.scope, c.observed))
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect();
    Ok(Comparison {
        baseline: base.id,
        cycle_time_ns: o.cycle_time_ns,
        budget_percent: o.budget * 100.0,
        fail_if_worse_percent: o.worse,
        metrics: o.metrics.clone(),
        runs: runs_info,
        boards: Vec::new(),
        rows,
        regressions,
        forecasts: super::long_enough::tail_rows(runs.iter().map(|n| (n.id, &n.result))),
    })
}

/// The verdict `rtgauge run --cycle-time` would have given the run.
fn verdict(r: &RunResult, ct: u64, budget: f64) -> crate::result::Verdict {
    crate::verdict::judge(r, &crate::verdict::Criteria { cycle_time_ns: Some(ct), budget, requirements: Vec::new() })
}

fn fmt_figure(metric: &str, v: Option<&f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if metric == "missed" => format!("{v}"),
        Some(v) => us(v.round() as u64),
    }
}

fn fmt_ratio(v: Option<&f64>) -> String {
    v.map_or(String::new(), |r| format!("×{r:.2}"))
}

/// The table of one comparison: a row per series, scope and run.
fn table_rows(runs: &[Named], c: &Comparison) -> (Vec<String>, Vec<Vec<String>>) {
    let shown =
        ["min", "p50", "p99", "p99.9", "max", "missed"].into_iter().filter(|m| metric_names().contains(m)).collect::<Vec<_>>();
    let mut header: Vec<String> = ["series", "cpu", "run", "samples"].map(String::from).to_vec();
    for m in &shown {
        header.push(m.to_string());
        if *m == "p99" || *m == "max" {
            header.push(format!("{m} vs base"));
        }
    }
    let name = |id: i64| run_name(runs, id);
    let mut rows = Vec::new();
    for row in &c.rows {
        for cell in &row.runs {
            let mut r = vec![row.series.clone(), row.scope.clone(), name(cell.run), cell.samples.to_string()];
            for m in &shown {
                let mark = if cell.unresolved.contains(m) { UNRESOLVED_MARK.to_string() } else { String::new() };
                r.push(fmt_figure(m, cell.figures.get(m)) + &mark);
                if *m == "p99" || *m == "max" {
                    r.push(if cell.run == c.baseline { "base".into() } else { fmt_ratio(cell.ratios.get(m)) });
                }
            }
            rows.push(r);
        }
    }
    (header, rows)
}

/// A run as the tables name it: its label, else its id, and its board when the runs compared
/// are of more than one (two `nightly` runs of two boards are told apart).
fn run_name(runs: &[Named], id: i64) -> String {
    let boards: std::collections::BTreeSet<String> = runs.iter().map(|n| super::board::board_of(&n.result).name).collect();
    runs.iter().find(|n| n.id == id).map_or(id.to_string(), |n| {
        // (its id too, where another run has the same label)
        let name = match &n.label {
            Some(l) if runs.iter().filter(|o| o.label.as_ref() == Some(l)).count() > 1 => format!("{id} {l}"),
            Some(l) => l.clone(),
            None => id.to_string(),
        };
        if boards.len() > 1 {
            format!("{name} ({})", super::board::board_of(&n.result).name)
        } else {
            name
        }
    })
}

fn run_lines(runs: &[Named], c: &Comparison) -> Vec<String> {
    runs.iter()
        .zip(&c.runs)
        .map(|(n, i)| {
            let v = match i.verdict {
                None => String::new(),
                Some(true) => format!(": PASS for a {} cycle", crate::vocab::units::Nanos(c.cycle_time_ns.unwrap_or(0))),
                Some(false) => format!(
                    ": FAIL for a {} cycle ({})",
                    crate::vocab::units::Nanos(c.cycle_time_ns.unwrap_or(0)),
                    i.failed_checks.first().cloned().unwrap_or_default()
                ),
            };
            format!(
                "{}{} [{}]{}",
                super::shown(&n.name()),
                if i.baseline { " — baseline" } else { "" },
                super::shown(&i.preemption),
                super::shown(&v)
            )
        })
        .collect()
}

fn regression_lines(c: &Comparison) -> Vec<String> {
    c.regressions
        .iter()
        .map(|r| {
            // A percentile either run does not resolve compares maxima, or near them: say so.
            let unresolved = |run: i64| {
                c.rows
                    .iter()
                    .filter(|row| row.scope == "all" && row.series == r.series)
                    .flat_map(|row| &row.runs)
                    .any(|cell| cell.run == run && cell.unresolved.contains(&r.metric))
            };
            let which = match (unresolved(c.baseline), unresolved(r.run)) {
                (true, true) => Some("either run"),
                (true, false) => Some("the baseline"),
                (false, true) => Some("this run"),
                (false, false) => None,
            };
            format!(
                "REGRESSION: run {} {} {} {} vs baseline {} (×{:.2}, more than {}% worse){}",
                r.run,
                super::shown(&r.series),
                r.metric,
                fmt_figure(r.metric, Some(&r.value)),
                fmt_figure(r.metric, Some(&r.baseline)),
                r.ratio,
                c.fail_if_worse_percent.unwrap_or(0.0),
                which.map_or(String::new(), |w| format!("; too few values to resolve {} in {w}", r.metric))
            )
        })
        .collect()
}

/// The note under the table when a cell is marked as not resolved.
fn unresolved_line(rows: &[Vec<String>]) -> Option<String> {
    rows.iter().flatten().any(|c| c.ends_with(UNRESOLVED_MARK)).then(|| {
        format!(
            "{UNRESOLVED_MARK} not resolved: the entry holds fewer than 10/(1 − p) values, so the figure is its\n  \
             maximum or near it (rtgauge show says how long a run must be to resolve it)"
        )
    })
}

pub fn text(runs: &[Named], c: &Comparison) -> String {
    let mut s = String::from("Runs:\n");
    for l in run_lines(runs, c) {
        let _ = writeln!(s, "  {l}");
    }
    s += "\n";
    s += &super::board::compare_text(runs, &c.boards);
    let (header, rows) = table_rows(runs, c);
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let _ = writeln!(s, "\n(latencies in µs; ratios against the baseline, below 1 is better)");
    let note = unresolved_line(&rows);
    s += &super::summary::table(&header, 3..header.len(), rows);
    if let Some(note) = note {
        let _ = writeln!(s, "{note}");
    }
    s += &super::long_enough::compare_text(&c.forecasts, &|id| run_name(runs, id));
    if let Some(pct) = c.fail_if_worse_percent {
        if c.regressions.is_empty() {
            let _ = writeln!(
                s,
                "\nNo regression: no run's {} over all CPUs is more than {pct}% worse than the baseline's.",
                c.metrics.join(" or ")
            );
        }
        for l in regression_lines(c) {
            let _ = writeln!(s, "{l}");
        }
    }
    s
}

pub fn html(runs: &[Named], c: &Comparison) -> Result<Html, crate::vocab::Error> {
    html_text(runs, c).map_err(crate::vocab::Error::System)
}

/// [`html`], its failure as text.
fn html_text(runs: &[Named], c: &Comparison) -> Result<Html, String> {
    let mut h = Html::lit("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h += html!("<title>rtgauge comparison</title><style>{}</style></head><body>", Html::lit(super::html::STYLE));
    h += html!(
        "<h1>rtgauge comparison</h1><p class=\"muted\">written by rtgauge {}; latencies in µs.</p><ul>",
        env!("CARGO_PKG_VERSION")
    );
    for l in run_lines(runs, c) {
        h += html!("<li>{}</li>", &l);
    }
    h += "</ul>";
    for l in regression_lines(c) {
        h += html!("<div class=\"verdict fail\">{}</div>", &l);
    }
    let (header, rows) = table_rows(runs, c);
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    h += &table(&header, 3, &rows);
    if let Some(note) = unresolved_line(&rows) {
        h += html!("<p class=\"muted note\">{}</p>", &note.replace("\n  ", " "));
    }
    h += &super::board::compare_html(runs, &c.boards);
    for (label, plots) in series_plots(runs, c) {
        h += html!("<h2>{}</h2>", &label);
        for (kind, svg) in plots {
            h += &figure(&svg, kind);
        }
        h += &super::forecast_html::compare_html(runs, &label);
    }
    h += "</body></html>\n";
    Ok(h)
}

/// Per series, the runs' histograms and percentile curves overlaid (each with its kind).
type SeriesPlots = Vec<(String, Vec<(&'static str, Html)>)>;
fn series_plots(runs: &[Named], c: &Comparison) -> SeriesPlots {
    let mut series: Vec<&str> = Vec::new();
    for row in &c.rows {
        if !series.contains(&row.series.as_str()) {
            series.push(&row.series);
        }
    }
    let mut out = Vec::new();
    for label in series {
        let curves: Vec<super::plot::Curve> =
            runs.iter().filter_map(|n| overall(&n.result, label).filter(|p| p.samples > 0).map(|p| (n.name(), p))).collect();
        if curves.is_empty() {
            continue;
        }
        let plots = vec![
            ("histogram", super::plot::histogram(&format!("{label}: histograms of the runs (all CPUs)"), &curves)),
            ("percentiles", super::plot::percentiles(&format!("{label}: by percentile (all CPUs)"), &curves)),
        ];
        out.push((label.to_string(), plots));
    }
    out
}
