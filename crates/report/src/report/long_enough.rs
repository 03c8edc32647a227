//! "Was the run long enough?" as text, for the summary (`rtgauge run`, `show`, `report`) and
//! `compare`: per latency series a table with a row per CPU (how long its worst case has not
//! risen, the return levels with their 95 % intervals, the tail), then, each once, the latest
//! rise of the worst case, the tails named, the reasons a forecast does not apply (with the CPUs
//! they concern) and the run length a claim per period needs by the rule of three. Reads the
//! result's `convergence` and `forecast` (docs/forecast.md); computes only the rule of three.

use super::summary::{grouped, span, table};
use crate::result::forecast::ReturnLevel;
use crate::result::{ProbeResult, RunResult};
use crate::vocab::cpus::format_cpu_list;
use crate::vocab::units::Nanos;
use serde::Serialize;
use std::fmt::Write;

/// The horizons of the return levels, as the tables' columns name them (of periods, for a
/// series whose interval is not known: `forecast::PERIOD_HORIZONS`).
pub(super) const HORIZONS: [&str; 3] = ["1h", "1d", "1y"];

/// The horizons a table of `cells` shows: those of time where a cell's interval is known, those
/// of periods where one's is not.
fn horizons<'a>(cells: impl IntoIterator<Item = &'a TailCell> + Clone) -> Vec<&'static str> {
    let mut h = Vec::new();
    if cells.clone().into_iter().any(|c| c.interval_ns > 0) {
        h.extend(HORIZONS);
    }
    if cells.into_iter().any(|c| c.interval_ns == 0) {
        h.extend(crate::forecast::PERIOD_HORIZONS.map(|(name, _)| name));
    }
    h
}

/// More tails of a kind than this are named by the range of their figures, not one by one.
const MANY: usize = 3;

/// What the width of a terminal allows a line of prose.
const WIDTH: usize = 80;

/// One series on one CPU of one run, as "was the run long enough?" shows it: its worst case,
/// its convergence and its forecast, without the fit's confidence region and tests (the result
/// keeps them). `compare --json` gives these.
#[derive(Debug, Clone, Serialize)]
pub struct TailCell {
    /// The run (its id in the store; 0 in a run's own summary).
    pub run: i64,
    #[serde(skip)]
    pub cpu: usize,
    pub worst_ns: Option<u64>,
    /// Periods seen (served and missed), at `interval_ns`, over `measured_ns`.
    pub periods: u64,
    pub interval_ns: u64,
    pub measured_ns: u64,
    /// When the worst case last rose, from the start of the series' measurement (warm-up
    /// excluded); absent without a timeline (an import of another tool's file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_rise_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub periods_since: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settled_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records_last_half: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rising: Option<bool>,
    /// The fitted tail (`heavy`, `bounded`, `exponential`), its shape ξ with its 95 % interval
    /// and, bounded, its end: absent when the forecast does not apply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<[f64; 3]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint_ns: Option<f64>,
    pub return_levels: Vec<ReturnLevel>,
    /// Why the forecast does not apply; absent when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
    /// What the forecast assumes without a test (`Forecast::assumed`); absent when its data
    /// tested every assumption.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assumed: Option<String>,
}

impl TailCell {
    /// Entry `p` of run `run` as shown: `None` for an entry without a forecast (all CPUs, a
    /// series that is not a latency, nothing measured).
    pub fn of(run: i64, p: &ProbeResult) -> Option<TailCell> {
        let f = p.forecast.as_ref()?;
        let cpu = p.cpu?;
        let c = p.convergence.as_ref();
        let applies = f.applies();
        let fit = f.fit.as_ref().filter(|_| applies);
        Some(TailCell {
            run,
            cpu,
            worst_ns: p.max_ns,
            periods: f.periods,
            interval_ns: f.interval_ns,
            measured_ns: c.map_or(f.measured_ns, |c| c.end_ns.saturating_sub(c.start_ns)),
            last_rise_ns: c.map(|c| c.last_rise_ns.saturating_sub(c.start_ns)),
            periods_since: c.map(|c| c.periods_since),
            settled_percent: c.map(|c| c.settled_percent),
            records_last_half: c.map(|c| c.records_last_half),
            rising: c.map(|c| c.rising),
            tail: fit.map(|t| t.tail.clone()),
            shape: fit.map(|t| [t.shape, t.shape_low, t.shape_high]),
            endpoint_ns: fit.and_then(|t| t.endpoint_ns),
            return_levels: if applies { f.return_levels.clone() } else { Vec::new() },
            not_applicable: if applies {
                None
            } else {
                Some(f.not_applicable.clone().unwrap_or_else(|| "no fit of the tail".to_string()))
            },
            assumed: f.assumed.clone().filter(|_| applies),
        })
    }

    fn applies(&self) -> bool {
        self.not_applicable.is_none()
    }

    /// The level of `horizon`: "level (low–high) unit" in the unit that suits the level (as the
    /// HTML report writes it: 52.3 (48.1–61.0) µs, 38.4 (3.47–930) s), "n/a" when the forecast
    /// does not apply, "-" when it gives none for that horizon.
    pub(super) fn level_cell(&self, horizon: &str) -> String {
        if !self.applies() {
            return "n/a".to_string();
        }
        self.return_levels.iter().find(|l| l.horizon == horizon).map_or("-".to_string(), |l| {
            // (past an hour, what a latency histogram holds, a figure says nothing more: ">1h")
            if l.level_ns > crate::vocab::units::MOST_LATENCY_NS {
                return ">1h".to_string();
            }
            let u = Unit::of(l.level_ns.round() as u64);
            let cell = |v: f64| if v > crate::vocab::units::MOST_LATENCY_NS { ">1h".to_string() } else { u.num(v) };
            format!("{} ({}–{}) {}", cell(l.level_ns), cell(l.low_ns), l.high_ns.map_or("∞".to_string(), cell), u.name)
        })
    }

    /// The share of the run since the worst case last rose, with `↑` where it is still rising.
    pub(super) fn settled_cell(&self) -> String {
        self.settled_percent.map_or("-".to_string(), |s| {
            format!("{}%{}", crate::vocab::length::settled(s), if self.rising == Some(true) { " ↑" } else { "" })
        })
    }
}

/// The unit of a table's latencies, chosen from its largest worst case.
#[derive(Debug, Clone, Copy)]
pub(super) struct Unit {
    pub name: &'static str,
    ns: f64,
}

impl Unit {
    /// µs below 1 ms, ms below 1 s, else s.
    pub(super) fn of(worst_ns: u64) -> Unit {
        match worst_ns {
            w if w < 1_000_000 => Unit { name: "µs", ns: 1e3 },
            w if w < 1_000_000_000 => Unit { name: "ms", ns: 1e6 },
            _ => Unit { name: "s", ns: 1e9 },
        }
    }

    /// `ns` in this unit, as [`number`] writes it.
    pub(super) fn num(self, ns: f64) -> String {
        number(ns / self.ns)
    }
}

/// A figure of a forecast, to three significant digits (to two, in powers of ten, from 10 000).
pub(super) fn number(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "∞".to_string()
    } else if a >= 1e4 {
        format!("{v:.1e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 || a == 0.0 {
        format!("{v:.2}")
    } else if a >= 1e-3 {
        // (three significant digits: 0.00156, not 0.00)
        let decimals = (2.0 - a.log10().floor()) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.1e}")
    }
}

/// The section of the summary: for every latency series with a forecast, its table and notes;
/// nothing for a run without one.
pub fn section(r: &RunResult) -> String {
    let mut series: Vec<String> = Vec::new();
    for p in r.probes.iter().filter(|p| p.forecast.is_some() && p.cpu.is_some()) {
        if !series.contains(&p.label()) {
            series.push(p.label());
        }
    }
    if series.is_empty() {
        return String::new();
    }
    let mut s = String::from("\nWas the run long enough?\n");
    let unknown = r.probes.iter().any(|p| p.forecast.as_ref().is_some_and(|f| f.interval_ns == 0));
    s += &wrap(
        &format!(
            "Per CPU: the share of the run since its worst case last rose (settled; ↑ still rising), and \
             the latency exceeded on average {}, with 95 % intervals, from a fit of the tail (docs/forecast.md).",
            if unknown {
                "once in 10⁶ and 10⁹ periods (the period is not known)"
            } else {
                "once per hour, day and year of operation at this period (return levels)"
            }
        ),
        "",
        "",
    );
    for label in series {
        let cells: Vec<TailCell> = r.probes.iter().filter(|p| p.label() == label).filter_map(|p| TailCell::of(0, p)).collect();
        let _ = writeln!(s, "\n{}:", super::shown(&label));
        let horizons = horizons(&cells);
        let mut header = vec!["cpu", "settled"];
        header.extend(&horizons);
        header.push("tail");
        let rows = cells
            .iter()
            .map(|c| {
                let mut row = vec![c.cpu.to_string(), c.settled_cell()];
                row.extend(horizons.iter().map(|h| c.level_cell(h)));
                row.push(c.tail.clone().unwrap_or_else(|| "-".to_string()));
                row
            })
            .collect();
        s += &table(&header, 0..2, rows);
        let entries: Vec<Entry> = cells.iter().map(|c| (None, c)).collect();
        for note in notes(&entries) {
            s += &wrap(&note, "  ", "    ");
        }
        for line in run_length(&cells) {
            s += &wrap(&line, "  ", "    ");
        }
    }
    s
}

/// A cell with the run it is of (in a comparison; `None` in a run's own summary).
pub(super) type Entry<'a> = (Option<String>, &'a TailCell);

/// One series on one CPU in a comparison: each run's [`TailCell`] (of those that have the entry).
#[derive(Debug, Clone, Serialize)]
pub struct TailRow {
    pub series: String,
    pub scope: String,
    pub runs: Vec<TailCell>,
}

/// The rows of a comparison of `runs` (id and document): per series and CPU of any run, in the
/// order of the first run holding it, each run's cell; only entries with a forecast.
pub fn tail_rows<'a>(runs: impl IntoIterator<Item = (i64, &'a RunResult)> + Clone) -> Vec<TailRow> {
    let mut rows: Vec<TailRow> = Vec::new();
    for (_, r) in runs.clone() {
        for p in r.probes.iter().filter(|p| p.forecast.is_some() && p.cpu.is_some()) {
            let (series, scope) = (p.label(), p.scope());
            if rows.iter().any(|row| row.series == series && row.scope == scope) {
                continue;
            }
            let cells = runs
                .clone()
                .into_iter()
                .filter_map(|(id, r)| {
                    r.probes.iter().find(|q| q.label() == series && q.scope() == scope).and_then(|q| TailCell::of(id, q))
                })
                .collect();
            rows.push(TailRow { series, scope, runs: cells });
        }
    }
    // Each series' rows together, by CPU.
    let order: Vec<String> = rows.iter().map(|r| r.series.clone()).collect();
    rows.sort_by_key(|r| (order.iter().position(|s| *s == r.series), r.runs.first().map(|c| c.cpu)));
    rows
}

/// The comparison's section: per series a table with a row per CPU and run (its worst case, how
/// settled it is, the return levels or "n/a"), the notes below it (`name`: a run's name by id).
pub fn compare_text(rows: &[TailRow], name: &dyn Fn(i64) -> String) -> String {
    let mut series: Vec<&str> = Vec::new();
    for r in rows {
        if !series.contains(&r.series.as_str()) {
            series.push(&r.series);
        }
    }
    if series.is_empty() {
        return String::new();
    }
    let mut s = String::from("\nWas each run long enough?\n");
    s += &wrap(
        "Per CPU and run: the worst case, the share of the run since it last rose (settled; ↑ still rising), and the \
         latency exceeded on average once per hour, day and year of operation (once in 10⁶ and 10⁹ periods where the \
         period is not known), with 95 % intervals.",
        "",
        "",
    );
    for label in series {
        let of: Vec<&TailRow> = rows.iter().filter(|r| r.series == label).collect();
        let unit = Unit::of(of.iter().flat_map(|r| &r.runs).filter_map(|c| c.worst_ns).max().unwrap_or(0));
        let _ = writeln!(s, "\n{} (worst cases in {}):", super::shown(label), unit.name);
        let horizons = horizons(of.iter().flat_map(|r| &r.runs));
        let mut header = vec!["cpu", "run", "worst", "settled"];
        header.extend(&horizons);
        let mut table_rows = Vec::new();
        let mut entries: Vec<Entry> = Vec::new();
        for row in &of {
            for (i, c) in row.runs.iter().enumerate() {
                let cpu = if i == 0 { c.cpu.to_string() } else { String::new() };
                let mut cells =
                    vec![cpu, name(c.run), c.worst_ns.map_or("-".to_string(), |w| unit.num(w as f64)), c.settled_cell()];
                cells.extend(horizons.iter().map(|h| c.level_cell(h)));
                table_rows.push(cells);
                let label = name(c.run);
                let run = if label == c.run.to_string() { format!("run {label}") } else { format!("run {} ({label})", c.run) };
                entries.push((Some(run), c));
            }
        }
        s += &table(&header, 2..4, table_rows);
        for note in notes(&entries) {
            s += &wrap(&note, "  ", "    ");
        }
    }
    s
}

/// Who a note concerns: "CPU 0", "CPUs 0-3", or per run "CPUs 0-1 of run 2 (rt); CPU 2 of run 1".
fn who(entries: &[&Entry]) -> String {
    let mut runs: Vec<(Option<&String>, Vec<usize>)> = Vec::new();
    for (run, c) in entries {
        match runs.iter_mut().find(|(r, _)| *r == run.as_ref()) {
            Some((_, cpus)) => cpus.push(c.cpu),
            None => runs.push((run.as_ref(), vec![c.cpu])),
        }
    }
    runs.into_iter()
        .map(|(run, mut cpus)| {
            cpus.sort_unstable();
            cpus.dedup();
            let cpus = format!("{} {}", if cpus.len() == 1 { "CPU" } else { "CPUs" }, format_cpu_list(&cpus));
            run.map_or(cpus.clone(), |r| format!("{cpus} of {}", super::shown(r)))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The notes under a table of `entries` (each with the run it is of, in a comparison): the
/// latest rise of the worst case, the CPUs still rising, the tails named, what ∞ means, and the
/// reasons a forecast does not apply, each once with whom it concerns.
pub(super) fn notes(entries: &[Entry]) -> Vec<String> {
    let mut out = Vec::new();
    // Of each run, the worst case that rose last, as a sentence.
    let mut runs: Vec<&Option<String>> = Vec::new();
    for (run, _) in entries {
        if !runs.contains(&run) {
            runs.push(run);
        }
    }
    let mut told: Vec<(&Option<String>, usize)> = Vec::new();
    for run in runs {
        let of_run: Vec<&Entry> = entries.iter().filter(|(r, _)| r == run).collect();
        let settled = |e: &&&Entry| e.1.settled_percent.unwrap_or(f64::INFINITY);
        if let Some((run, c)) =
            of_run.iter().filter(|(_, c)| c.settled_percent.is_some()).min_by(|a, b| settled(a).total_cmp(&settled(b)))
        {
            out.push(convergence_sentence(of_run.len() > 1, run.as_deref(), c));
            told.push((run, c.cpu));
        }
    }
    // The others still rising (the sentences above said theirs).
    let rising: Vec<&Entry> = entries.iter().filter(|(r, c)| c.rising == Some(true) && !told.contains(&(r, c.cpu))).collect();
    if !rising.is_empty() {
        out.push(format!(
            "↑ still rising (3 or more new maxima in the last half of the run) on {}{}: a longer run will likely see a \
             worse case.",
            if told.is_empty() { "" } else { "also " },
            who(&rising)
        ));
    }
    // The tails, by kind.
    let of_kind = |kind: &str| -> Vec<&Entry> { entries.iter().filter(|(_, c)| c.tail.as_deref() == Some(kind)).collect() };
    let shape = |e: &&Entry| {
        let [x, lo, hi] = e.1.shape.unwrap_or([f64::NAN; 3]);
        format!("{} (ξ = {x:.2}, 95 % {lo:.2}–{hi:.2})", who(&[*e]))
    };
    // Many CPUs: the range of their figures, named once.
    let range = |es: &[&Entry], v: &dyn Fn(&TailCell) -> Option<f64>, show: &dyn Fn(f64) -> String| {
        let vs: Vec<f64> = es.iter().filter_map(|e| v(e.1)).collect();
        let (lo, hi) = vs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        if vs.is_empty() {
            String::new()
        } else {
            format!("{} to {}", show(lo), show(hi))
        }
    };
    let heavy = of_kind("heavy");
    if heavy.len() > MANY {
        out.push(format!(
            "heavy tail on {} (ξ from {}): no duration of testing bounds the worst case.",
            who(&heavy),
            range(&heavy, &|c| c.shape.map(|s| s[0]), &|x| format!("{x:.2}"))
        ));
    } else if !heavy.is_empty() {
        out.push(format!(
            "heavy tail on {}: no duration of testing bounds the worst case.",
            heavy.iter().map(shape).collect::<Vec<_>>().join(", ")
        ));
    }
    let bounded = of_kind("bounded");
    if bounded.len() > MANY {
        out.push(format!(
            "bounded tail (ξ < 0) on {}: it ends at {}.",
            who(&bounded),
            range(&bounded, &|c| c.endpoint_ns, &|x| Nanos(x.round() as u64).to_string())
        ));
    } else if !bounded.is_empty() {
        out.push(format!(
            "bounded tail (ξ < 0): it ends at {}.",
            bounded
                .iter()
                .map(|e| format!(
                    "{} on {}",
                    e.1.endpoint_ns.map_or("an end not recorded".to_string(), |x| Nanos(x.round() as u64).to_string()),
                    who(&[*e])
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let exponential = of_kind("exponential");
    if !exponential.is_empty() {
        out.push(format!("exponential tail (the 95 % interval of ξ holds 0) on {}.", who(&exponential)));
    }
    if entries.iter().any(|(_, c)| c.return_levels.iter().any(|l| l.high_ns.is_none())) {
        out.push("–∞: no upper bound (the data allow an arbitrarily heavy tail).".to_string());
    }
    // A forecast beside a worst case still rising: what the two together mean.
    let both: Vec<&Entry> = entries.iter().filter(|(_, c)| c.rising == Some(true) && c.applies()).collect();
    if !both.is_empty() {
        out.push(format!(
            "↑ with a forecast on {}: the tests found no trend in the window maxima, but the worst case kept rising as \
             independent values rarely do (in fewer than 1 run of 20); read the levels as a lower bound until a longer \
             run settles.",
            who(&both)
        ));
    }
    // What a forecast assumed without a test, once, with whom it concerns.
    let assumed: Vec<&Entry> = entries.iter().filter(|(_, c)| c.assumed.is_some()).collect();
    if let Some(what) = assumed.first().and_then(|e| e.1.assumed.as_deref()) {
        out.push(format!("{}: forecast with {}.", who(&assumed), super::shown(what)));
    }
    if entries.iter().any(|(_, c)| c.applies() && c.interval_ns == 0) {
        out.push(
            "the period is not known (the file does not say it): the levels are per periods, not per time of \
             operation."
                .to_string(),
        );
    }
    // Each reason once, with the CPUs (and runs) it concerns.
    let mut reasons: Vec<(&str, Vec<&Entry>)> = Vec::new();
    for e in entries {
        if let Some(why) = e.1.not_applicable.as_deref() {
            match reasons.iter_mut().find(|(r, _)| *r == why) {
                Some((_, es)) => es.push(e),
                None => reasons.push((why, vec![e])),
            }
        }
    }
    for (why, es) in reasons {
        out.push(format!("{}: not applicable: {}", who(&es), super::shown(why)));
    }
    out
}

/// "worst case last rose 41 min into a 60-min run (19 min, 1 140 000 periods ago); 3 records in
/// the last half — still rising", naming the CPU (and run); `latest`: among several.
fn convergence_sentence(latest: bool, run: Option<&str>, c: &TailCell) -> String {
    let whom = match run {
        Some(r) => format!("CPU {} of {}", c.cpu, super::shown(r)),
        None => format!("CPU {}", c.cpu),
    };
    let at = c.last_rise_ns.unwrap_or(0);
    let length = span(c.measured_ns as f64).replace(' ', "-");
    let ago = span(c.measured_ns.saturating_sub(at) as f64);
    let records = c.records_last_half.unwrap_or(0);
    format!(
        "{}{whom}: worst case last rose {} into a {length} run ({ago}, {} {} ago); {records} {} in the last half{}",
        if latest { "latest rise, " } else { "" },
        span(at as f64),
        grouped(c.periods_since.unwrap_or(0)),
        if c.periods_since == Some(1) { "period" } else { "periods" },
        if records == 1 { "record" } else { "records" },
        if c.rising == Some(true) { " — still rising" } else { "" }
    )
}

/// The rule of three for `cells` (one series of one run): the claim its periods support about
/// exceeding each CPU's worst case, and what 1e-6 and 1e-9 per period need; and, with a
/// forecast that applies, how long a run sees a return level with 95 % probability.
fn run_length(cells: &[TailCell]) -> Vec<String> {
    let Some(n) = cells.iter().map(|c| c.periods).min().filter(|&n| n > 0) else { return Vec::new() };
    let interval = cells.iter().map(|c| c.interval_ns).max().unwrap_or(0);
    let each = if cells.len() > 1 { " (on each CPU, its own)" } else { "" };
    let at = |periods: f64| {
        if interval > 0 {
            format!(" ({} at {})", span(periods * interval as f64), Nanos(interval))
        } else {
            String::new()
        }
    };
    let fewest = if cells.iter().any(|c| c.periods != n) { "at least " } else { "" };
    let mut out = vec![format!(
        "no value above the worst case{each} in {fewest}{} periods: by the rule of three, the per-period probability \
         of exceeding it is below 3/n = {:.1e} (95 %); a claim of 1e-6 per period needs 3 000 000 periods{}, 1e-9 \
         needs 3e9{}.",
        grouped(n),
        3.0 / n as f64,
        at(3e6),
        at(3e9)
    )];
    if cells.iter().any(|c| c.applies() && c.interval_ns > 0) {
        out.push(
            "to see a return level with 95 % probability a run lasts ≈3 times its horizon (≈3 h for 1h, 3 days for 1d, \
             3 years for 1y)."
                .to_string(),
        );
    }
    if cells.iter().any(|c| c.applies() && c.interval_ns == 0) {
        out.push(
            "to see a return level with 95 % probability a run lasts ≈3 times its horizon (3 000 000 periods for the \
             level once in 10⁶, 3e9 for once in 10⁹)."
                .to_string(),
        );
    }
    out
}

/// Whether `w` is a count as [`grouped`] writes it (digits in groups).
fn is_count(w: &str) -> bool {
    !w.is_empty() && w.chars().all(|c| c.is_ascii_digit() || c == ' ')
}

/// `text` wrapped at [`WIDTH`] columns, its first line after `first`, the others after `rest`.
pub(super) fn wrap(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    // A unit stays with its figure ("95 %").
    let mut words: Vec<String> = Vec::new();
    for w in text.split(' ').filter(|w| !w.is_empty()) {
        match words.last_mut() {
            // (also "%)", "%;", "%,": the unit with what follows it)
            Some(last) if w.starts_with('%') && w.chars().skip(1).all(|c| c.is_ascii_punctuation()) => {
                last.push(' ');
                last.push_str(w);
            }
            // A grouped count stays whole ("15 399").
            Some(last) if w.len() == 3 && is_count(w) && is_count(last) => {
                last.push(' ');
                last.push_str(w);
            }
            _ => words.push(w.to_string()),
        }
    }
    for word in &words {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out += &line;
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line += word;
        empty = false;
    }
    out += &line;
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_to_three_digits_and_prose_fits_the_width() {
        assert_eq!([number(8.314), number(43.14), number(357.2), number(15542.0)], ["8.31", "43.1", "357", "1.6e4"]);
        assert_eq!(Unit::of(41_000).num(43_149.0), "43.1");
        // A small figure in a large unit keeps three significant digits.
        assert_eq!([number(0.00156), number(0.0123), number(0.5), number(0.0)], ["0.00156", "0.0123", "0.500", "0.00"]);
        assert_eq!(Unit::of(11_715_041).name, "ms");
        let long = "word ".repeat(60);
        let w = wrap(&long, "  ", "    ");
        assert!(w.lines().all(|l| l.chars().count() <= WIDTH) && w.lines().count() > 3);
        assert!(w.lines().skip(1).all(|l| l.starts_with("    word")));
        // "95 %)" never breaks before its unit.
        let t = format!("{}(95 %); and (95 %)", "x ".repeat(38));
        assert!(!wrap(&t, "", "").lines().any(|l| l.starts_with('%')), "{}", wrap(&t, "", ""));
    }
}
