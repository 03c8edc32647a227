//! `rtgauge report --html`: one self-contained HTML file for one or more stored runs. No
//! script, no font, no style sheet or image from elsewhere: the plots are inline SVG (see
//! [`super::plot`]) and the style is in the file, so it opens from a USB stick on a lab PC.
//! Per run: the verdict with every check, the results table, per series its histogram,
//! percentile curve and latency against time with the load phases and each CPU's running
//! maximum, whether the run was long enough (`super::forecast_html`: per CPU the worst case's
//! convergence, the forecast of its tail with its probability-of-exceedance plot, and the rule of
//! three), the per-phase table, the loads, the placement among published figures, the board
//! (`super::board`), how the run was obtained (audit and configuration) and its warnings; at the
//! end the published figures with their sources.

use super::markup::Html;
use super::{plot, reference, summary};
use crate::html;
use crate::result::{ProbeResult, RunResult};

/// A text of several lines for a `<pre>` block: each line escaped as `markup` escapes text, the line
/// breaks kept (a line break inside a line of outside text is shown as `\x0a`, as everywhere).
fn esc_lines(s: &str) -> Html {
    Html::join(s.split('\n').map(Html::text), "\n")
}

pub const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;margin:0 auto;max-width:1000px;padding:1em 1.5em;color:#222;background:#fff}
h1{font-size:1.6em;margin-bottom:.2em} h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em} h3{margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em} th,td{padding:.25em .6em;border-bottom:1px solid #e4e4e4;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums} th{background:#f4f4f4}
.verdict{padding:.7em 1em;border-radius:6px;font-weight:600;margin:1em 0} .pass{background:#e3f5e1;border:1px solid #7cc47a}
.fail{background:#fbe3e3;border:1px solid #e08080} .none{background:#f1f1f1;border:1px solid #ccc}
.ok{color:#2a7a2a} .bad{color:#b22;font-weight:600} .sev-warn{color:#a66a00;font-weight:600} .muted{color:#666;font-size:.9em}
pre{background:#f7f7f7;padding:.8em;overflow-x:auto;font-size:.82em;border-radius:4px}
figure{margin:1em 0} figure svg{width:100%;height:auto;border:1px solid #eee}
.warn{background:#fff6dc;border-left:4px solid #e0b030;padding:.4em .8em;margin:.3em 0}
td.unres{color:#999} .note{margin-top:-.3em}
table.board th{width:14em;vertical-align:top} table.board td{vertical-align:top} table.board code{word-break:break-all} ul.kconfig{columns:2 24em;font-size:.85em;padding-left:1.2em}
";

/// A stored run as reports name it: its id, its label, its document.
pub struct Named {
    pub id: i64,
    pub label: Option<String>,
    pub result: RunResult,
}

impl Named {
    /// "run 7 (rt-kernel) on board-a, 6.12.0-rt": by its board (`--board`; the host where it
    /// differs, "board-a (host lab-ctl)").
    pub fn name(&self) -> String {
        let r = &self.result;
        let label = self.label.as_ref().map(|l| format!(" ({l})")).unwrap_or_default();
        let board = super::board::board_of(r).name;
        // (the host where it is known and differs: an imported file names none)
        let h = &r.system.hostname;
        let host = if board == *h || h == "unknown" { String::new() } else { format!(" (host {h})") };
        format!("run {}{label} on {board}{host}, {}", self.id, r.system.kernel_release)
    }
}

/// The whole report for `runs`.
pub fn render(runs: &[Named]) -> Result<Html, crate::vocab::Error> {
    render_text(runs).map_err(crate::vocab::Error::System)
}

/// [`render`], its failure as text.
fn render_text(runs: &[Named]) -> Result<Html, String> {
    let mut h = Html::lit("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let title = runs.iter().map(Named::name).collect::<Vec<_>>().join(" · ");
    h += html!("<title>rtgauge report: {}</title><style>{STYLE}</style></head><body>", &title);
    h += html!(
        "<h1>rtgauge report</h1><p class=\"muted\">{} run(s), written by rtgauge {}. Latencies in µs.</p>",
        runs.len(),
        env!("CARGO_PKG_VERSION")
    );
    if runs.len() > 1 {
        h += "<ul>";
        for n in runs {
            h += html!("<li><a href=\"#run-{}\">{}</a>: {}</li>", n.id, &n.name(), &n.result.verdict.headline());
        }
        h += "</ul>";
    }
    for n in runs {
        h += &run_section(n)?;
    }
    h += &published_section();
    h += "</body></html>\n";
    Ok(h)
}

fn run_section(n: &Named) -> Result<Html, String> {
    // (a document of an older version gets its series' convergence and forecast here)
    let analysed = super::forecast_html::analysed(&n.result);
    let r = &*analysed;
    let mut h = Html::new();
    h += html!("<h2 id=\"run-{}\">{}</h2>", n.id, &n.name());
    if let Some(s) = &r.config.scenario {
        h += html!("<p>Scenario {} ({}).</p>", &s.name, &s.source);
    }
    if let Some(i) = &r.imported {
        h += html!("<p>Imported from {} ({}).</p>", &i.source, &i.tool);
    }
    // What happened, as known: how long was measured (unknown where an import does not say),
    // and the command that measured it (an imported run's own tool's, where its file says).
    let measured = if crate::result::imported::unknown(r, "measured_ns") {
        "how long it measured is unknown".to_string()
    } else {
        format!("{} measured", crate::vocab::units::Nanos(r.measured_ns))
    };
    let command = match &r.imported {
        Some(i) => match &i.command_line {
            Some(c) if i.tool != "rtgauge" => html!("{}'s command: <code>{}</code>", &i.tool, c),
            Some(c) => html!("command: <code>{}</code>", c),
            None => html!("{}'s command line is not in its file", &i.tool),
        },
        None => html!("command: <code>{}</code>", &r.command_line.join(" ")),
    };
    h += html!(
        "<p class=\"muted\">{_0} → {_1}; {measured}; {command}</p>",
        _0 = &r.started_at,
        _1 = &r.ended_at,
        measured = measured,
        command = command
    );
    if let Some(c) = &r.continuous {
        let previous = c.previous.map_or("the first of its series".to_string(), |p| format!("after run {p}"));
        h += html!(
            "<p>Part {_0} of the continuous measurement {_1} (a run kept every {_2}, {_3} into it; {previous}).</p>",
            _0 = c.index,
            _1 = c.series,
            _2 = crate::vocab::units::Nanos(c.rotate_ns),
            _3 = crate::vocab::units::Nanos(c.offset_ns),
            previous = previous
        );
    }
    h += &verdict(r);
    let (header, rows) = summary::results_table(r);
    h += "<h3>Results per probe and CPU</h3>";
    h += &table(&header, 2, &rows);
    h += &note(summary::results_note(r));
    for (label, entries) in series(r) {
        h += &series_section(r, &label, &entries)?;
    }
    if !r.phases.is_empty() {
        let (header, rows) = summary::phase_table(r);
        h += "<h3>Per phase (all CPUs; times from the start of the run)</h3>";
        h += &table(&header, 2, &rows);
        h += &note(summary::phase_note(r));
    }
    h += "<h3>Loads</h3>";
    if r.loads.is_empty() {
        h += "<p>None recorded (an idle system, or a run imported from a tool that does not say).</p>";
    } else {
        let (header, rows) = summary::load_table(&r.loads);
        h += &table(&header, 1, &rows);
    }
    h += &placement(r);
    if r.trace.is_some() {
        h += html!(
            "<h3>Why the worst case (trace)</h3><pre>{}</pre>",
            esc_lines(super::trace::render(r.trace.as_ref()).trim_start())
        );
    }
    h += &super::board::html_block(r.board.as_ref());
    h += &audit_section(&r.findings);
    h +=
        html!("<h3>How it was obtained (audit and configuration)</h3><pre>{}</pre>", esc_lines(&summary::how_obtained(r, false)));
    if !r.tuning.is_empty() {
        let rows: Vec<Vec<String>> = r
            .tuning
            .iter()
            .map(|t| {
                let done =
                    if t.applied { "applied".to_string() } else { format!("not applied: {}", t.error.as_deref().unwrap_or("?")) };
                vec![t.setting.clone(), t.value.clone(), done, t.restore.clone()]
            })
            .collect();
        h += "<h4>Tuning for the run</h4>";
        h += &table(&["setting", "value", "applied", "restored"], 9, &rows);
    }
    for w in &r.warnings {
        h += html!("<div class=\"warn\">warning: {}</div>", w);
    }
    Ok(h)
}

/// The audit of the settings that spoil latency: a row per finding, worst first, with the fix.
fn audit_section(findings: &[crate::result::findings::Finding]) -> Html {
    use crate::result::findings::{tally, Severity};
    if findings.is_empty() {
        return Html::new();
    }
    let mut sorted: Vec<_> = findings.iter().collect();
    sorted.sort_by_key(|f| std::cmp::Reverse(f.severity));
    let mut h = html!("<h3>Audit: what spoils latency on this system</h3><p class=\"muted\">{}; taken before the run, as rtgauge check gives it.</p>", &tally(findings));
    h += "<table><thead><tr><th></th><th>check</th><th>observed</th><th>why, and the fix</th></tr></thead><tbody>";
    for f in sorted {
        let class = match f.severity {
            Severity::Bad => "bad",
            Severity::Warn => "sev-warn",
            Severity::Info => "muted",
            Severity::Ok => "ok",
        };
        let mut fix = Html::new();
        if f.severity >= Severity::Warn {
            fix = html!("<div class=\"muted\">{}</div>", &f.why);
            for (label, v) in [("now", &f.fix), ("keep", &f.persistent)] {
                if let Some(v) = v {
                    fix += html!("<div>{label}: <code>{_0}</code></div>", _0 = v, label = label);
                }
            }
        }
        h += html!(
            "<tr><td class=\"{class}\">{_0}</td><td>{_1}</td><td>{_2}</td><td>{fix}</td></tr>",
            _0 = f.severity.label(),
            _1 = &f.title,
            _2 = &f.observed,
            class = class,
            fix = fix
        );
    }
    h + "</tbody></table>"
}

fn verdict(r: &RunResult) -> Html {
    let v = &r.verdict;
    let class = match (v.criteria_given, v.passed) {
        (_, false) => "fail",
        (true, true) => "pass",
        (false, true) => "none",
    };
    let mut h = html!("<div class=\"verdict {class}\">{_0}", _0 = &v.headline(), class = class);
    if let Some(s) = v.shortest_cycle_sentence() {
        h += html!("<br><span class=\"muted\">{}.</span>", &s);
    }
    for rule in &v.rules {
        h += html!("<br><span class=\"muted\">rule: {}</span>", rule);
    }
    for line in &v.support {
        h += html!("<br><span class=\"muted\">length: {}</span>", line);
    }
    h += "</div>";
    if !v.checks.is_empty() {
        let rows: Vec<Vec<String>> = v
            .checks
            .iter()
            .map(|c| vec![c.expr.clone(), c.scope.clone(), c.observed.clone(), if c.passed { "pass" } else { "FAIL" }.into()])
            .collect();
        h += &table(&["check", "scope", "observed", "result"], 9, &rows);
    }
    h
}

/// The run's series in the order it reports them, each with its per-CPU entries.
fn series(r: &RunResult) -> Vec<(String, Vec<&ProbeResult>)> {
    let mut out: Vec<(String, Vec<&ProbeResult>)> = Vec::new();
    for p in r.probes.iter().filter(|p| p.cpu.is_some()) {
        let label = p.label();
        match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, v)) => v.push(p),
            None => out.push((label, vec![p])),
        }
    }
    out
}

fn series_section(r: &RunResult, label: &str, entries: &[&ProbeResult]) -> Result<Html, String> {
    let mut h = html!("<h3>{}</h3>", label);
    if entries.iter().all(|p| p.samples == 0) {
        return Ok(h + "<p>No values were measured.</p>");
    }
    for (kind, svg) in series_plots(r, label, entries)? {
        h += figure(&svg, kind);
    }
    h += &super::forecast_html::section(label, entries)?;
    Ok(h)
}

/// A series' plots, each with its kind: histogram, percentiles and (with a timeline) timeline.
fn series_plots(r: &RunResult, label: &str, entries: &[&ProbeResult]) -> Result<Vec<(&'static str, Html)>, String> {
    let what = entries[0].measures.as_deref().unwrap_or("latency");
    let mut v = vec![
        ("histogram", plot::histogram(&format!("{label}: {what} histogram per CPU"), &plot::by_cpu(entries))),
        ("percentiles", plot::percentiles(&format!("{label}: {what} by percentile"), &plot::by_cpu(entries))),
    ];
    if entries.iter().any(|p| p.timeline.as_ref().is_some_and(|t| !t.is_empty())) {
        v.push(("timeline", plot::timeline(&format!("{label}: {what} against time"), entries, &r.phases)?));
    }
    Ok(v)
}

/// Every plot of the report, as (file stem, SVG): `run7-timer-histogram`, for `--png`.
pub fn plots(runs: &[Named]) -> Result<Vec<(String, String)>, crate::vocab::Error> {
    plots_text(runs).map_err(crate::vocab::Error::System)
}

/// [`plots`], its failure as text.
fn plots_text(runs: &[Named]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for n in runs {
        let r = super::forecast_html::analysed(&n.result);
        for (label, entries) in series(&r) {
            if entries.iter().all(|p| p.samples == 0) {
                continue;
            }
            for (kind, svg) in series_plots(&r, &label, &entries)? {
                out.push((format!("run{}-{}-{kind}", n.id, super::plot::slug(&label)), svg.into_string()));
            }
            for (cpu, svg) in super::forecast_html::plots(&label, &entries) {
                out.push((format!("run{}-{}-exceedance-{cpu}", n.id, super::plot::slug(&label)), svg));
            }
        }
    }
    Ok(out)
}

/// An inline SVG plot (drawn by [`super::svg`], its text escaped there).
pub(super) fn figure(svg: &Html, kind: &str) -> Html {
    html!("<figure class=\"plot {kind}\">{svg}</figure>", svg = svg, kind = kind)
}

fn placement(r: &RunResult) -> Html {
    let lines = reference::placements(r);
    if lines.is_empty() {
        return Html::new();
    }
    let mut h = Html::lit("<h3>Among published figures (the ARM9/ARM11 paper's decision guide)</h3><ul>");
    for p in &lines {
        h += html!("<li>{}</li>", &p.sentence(r.verdict.budget_percent));
    }
    h += html!("</ul><p class=\"muted\">{}; the table at the end lists them with their sources.</p>", reference::INDICATIVE);
    h
}

fn published_section() -> Html {
    // The table's own markup (not [`table`]): each row's source is a link to its full reference.
    let mut h = html!("<h2 id=\"published\">Published figures</h2><p class=\"muted\">{}.</p>", reference::INDICATIVE);
    h += "<table><thead><tr>";
    for c in ["platform", "kernel", "test", "load", "worst case", "typical", "source"] {
        h += html!("<th>{c}</th>", c = c);
    }
    h += "</tr></thead><tbody>";
    for p in reference::PUBLISHED {
        h += "<tr>";
        for c in [p.platform, p.kernel, p.test, p.load, p.worst, p.typical] {
            h += html!("<td>{}</td>", c);
        }
        let src = p.reference();
        h += html!(
            "<td><a href=\"#{}\">{}</a>{}</td>",
            src.anchor(),
            p.source,
            src.year.map_or(String::new(), |y| format!(" ({y})"))
        );
        h += "</tr>";
    }
    h += "</tbody></table>";
    h + sources_section()
}

/// The reference list at the end of the page: every source the report names, with its title,
/// authors, venue and year, and its address where it has one.
fn sources_section() -> Html {
    let mut h = Html::lit(
        "<h2 id=\"sources\">Sources</h2><p class=\"muted\">The documents the published figures, the decision guide \
         and the scenarios come from, by the short name this report cites them by.</p><ul class=\"sources\">",
    );
    for s in reference::SOURCES {
        h += html!("<li id=\"{}\"><b>{}</b>: {}", s.anchor(), s.short, &s.citation_without_url());
        if let Some(u) = s.url {
            h += html!(", <a href=\"{}\">{}</a>", u, u);
        }
        h += html!(".<br><span class=\"muted\">{}", s.what);
        if let Some(n) = s.note {
            h += html!("; {}", n);
        }
        h += ".</span></li>";
    }
    h + "</ul>"
}

/// A table's footnote on the percentiles it does not resolve (`summary::unresolved_note`).
fn note(lines: Option<Vec<String>>) -> Html {
    let Some(lines) = lines else { return Html::new() };
    let mut h = html!("<p class=\"muted note\">{} {}", summary::UNRESOLVED_MARK, &summary::UNRESOLVED_INTRO.join(" "));
    for l in lines {
        h += html!("<br>{}", &l);
    }
    h + "</p>"
}

/// A table; columns from `first_figure` on are right-aligned figures (the last one is text
/// when it names loads or work). A figure marked as not resolved (`summary::UNRESOLVED_MARK`)
/// is shown pale, with the reason on hover.
pub(super) fn table(header: &[&str], first_figure: usize, rows: &[Vec<String>]) -> Html {
    let text_last = matches!(header.last(), Some(&"loads") | Some(&"work"));
    let numeric = |i: usize| i >= first_figure && !(text_last && i + 1 == header.len());
    let mut h = Html::lit("<table><thead><tr>");
    for (i, c) in header.iter().enumerate() {
        h += html!("<th{}>{}</th>", Html::lit(if numeric(i) { " class=\"n\"" } else { "" }), c);
    }
    h += "</tr></thead><tbody>";
    for r in rows {
        h += "<tr>";
        for (i, c) in r.iter().enumerate() {
            let class = match c.as_str() {
                "FAIL" => " class=\"bad\"",
                "pass" => " class=\"ok\"",
                _ if numeric(i) && c.ends_with(summary::UNRESOLVED_MARK) => {
                    " class=\"n unres\" title=\"not resolved: too few values for this percentile (see the note below the table)\""
                }
                _ if numeric(i) => " class=\"n\"",
                _ => "",
            };
            h += html!("<td{class}>{_0}</td>", _0 = c, class = Html::lit(class));
        }
        h += "</tr>";
    }
    h + "</tbody></table>"
}

#[cfg(test)]
mod tests {
    /// The report's `<pre>` blocks (how the run was obtained, the trace) showed `\x0a` where
    /// their lines break: their own line breaks are kept, every line escaped.
    #[test]
    fn a_pre_block_keeps_its_lines() {
        assert_eq!(super::esc_lines("a <b>\nc\x1b").as_str(), "a &lt;b&gt;\nc\\x1b");
    }
}
