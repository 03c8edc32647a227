//! The summary printed at the end of a run: how it was obtained, one row per CPU and one for
//! all CPUs (µs with sub-µs precision), the worst case, the shortest supported cycle time,
//! whether the run was long enough (`long_enough`: convergence and forecast per CPU), the
//! verdict with every failed check, and the warnings.

use super::shown;
use crate::result::{ProbeResult, RunResult, Status};
use crate::vocab::cpus::format_cpu_list;
pub(super) use crate::vocab::length::{grouped, significant, span};
use crate::vocab::percentiles::{Percentile, REPORTED};
use crate::vocab::units::{opt_us, us, Nanos};
use std::fmt::Write;

pub use crate::vocab::table::table;

/// The percentile columns of a table of `entries`: each one always shown, and the others where
/// some entry resolves them (`vocab::percentiles`).
pub(super) fn percentile_columns<'a>(entries: impl IntoIterator<Item = &'a ProbeResult>) -> Vec<&'static Percentile> {
    let entries: Vec<&ProbeResult> = entries.into_iter().collect();
    REPORTED
        .iter()
        .filter(|q| q.always_shown || entries.iter().any(|p| p.percentiles.get(q.q).flatten().is_some() && resolves(p, q)))
        .collect()
}

/// Whether entry `p` holds enough values to resolve percentile `q` (counted from its histogram,
/// which is what its percentiles were taken from, so a stored document of any version is judged
/// alike).
fn resolves(p: &ProbeResult, q: &Percentile) -> bool {
    q.resolved_by(p.histogram.total_count)
}

/// Column heads of a latency table: `first`, then min, mean, the percentiles `columns`, max.
pub(super) fn latency_header(first: &[&'static str], columns: &[&'static Percentile]) -> Vec<&'static str> {
    let mut h = first.to_vec();
    h.extend(["min", "mean"]);
    h.extend(columns.iter().map(|p| p.label));
    h.push("max");
    h
}

/// A percentile's cell: in µs, with [`UNRESOLVED_MARK`] where the entry does not resolve it.
fn percentile_cell(p: &ProbeResult, q: &Percentile) -> String {
    match p.percentiles.get(q.q).flatten() {
        Some(v) if !resolves(p, q) => format!("{}{UNRESOLVED_MARK}", us(v)),
        v => opt_us(v),
    }
}

/// What marks a percentile taken from too few values to resolve it (see [`unresolved_note`]).
pub(super) const UNRESOLVED_MARK: char = '*';

/// min, mean, the percentiles `columns` (marked where not resolved), max: in µs.
fn latency_cells<'a>(p: &'a ProbeResult, columns: &'a [&'static Percentile]) -> impl Iterator<Item = String> + 'a {
    [opt_us(p.min_ns), p.mean_ns.map_or("-".to_string(), |m| us(m.round() as u64))]
        .into_iter()
        .chain(columns.iter().map(move |q| percentile_cell(p, q)))
        .chain([opt_us(p.max_ns)])
}

/// The footnote of a latency table of `entries` showing percentiles `columns`, one line per
/// percentile not resolved (in a row, or left out): how many values resolve it, and how long
/// one CPU must measure for them at the pace of each probe of `r` among them (its interval, or
/// the rate of values the run saw for a probe whose values do not come one per interval).
/// `None` when every shown percentile is resolved and none is left out. It follows
/// [`UNRESOLVED_INTRO`].
pub(super) fn unresolved_note(r: &RunResult, entries: &[&ProbeResult], columns: &[&'static Percentile]) -> Option<Vec<String>> {
    let missing: Vec<&Percentile> = REPORTED
        .iter()
        .filter(|q| {
            entries.iter().any(|p| p.percentiles.get(q.q).flatten().is_some() && !resolves(p, q))
                || (!columns.contains(q) && entries.iter().any(|p| p.histogram.total_count > 0))
        })
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut labels: Vec<String> = Vec::new();
    for p in entries {
        if !labels.contains(&p.label()) {
            labels.push(p.label());
        }
    }
    let paces: Vec<(String, Pace)> = labels.iter().filter_map(|l| pace(r, l).map(|p| (l.clone(), p))).collect();
    let lines = missing
        .into_iter()
        .map(|q| {
            let n = q.values_needed();
            let hidden = if columns.contains(&q) { "" } else { " (shown once resolved)" };
            // One time per pace, naming its probes only where the paces differ.
            let mut times: Vec<(String, Vec<String>)> = Vec::new();
            for (label, pace) in &paces {
                let t = format!("{} of one CPU {pace}", span(pace.time_ns(n)));
                match times.iter_mut().find(|(x, _)| *x == t) {
                    Some((_, labels)) => labels.push(shown(label).into_owned()),
                    None => times.push((t, vec![shown(label).into_owned()])),
                }
            }
            let times: Vec<String> = match times.len() {
                0 => Vec::new(),
                1 => vec![times.remove(0).0],
                _ => times.into_iter().map(|(t, labels)| format!("{t} ({})", labels.join(", "))).collect(),
            };
            let times = if times.is_empty() { String::new() } else { format!(" ({})", times.join("; ")) };
            format!("{}{hidden}: {} values{times}", q.label, grouped(n))
        })
        .collect();
    Some(lines)
}

/// What the lines of [`unresolved_note`] follow, in two lines.
pub(super) const UNRESOLVED_INTRO: [&str; 2] =
    ["not resolved: from fewer than 10/(1 − p) values a percentile is the maximum or", "near it. To resolve it a row needs:"];

/// A footnote as text under a table.
fn note_text(lines: Option<Vec<String>>) -> String {
    let Some(lines) = lines else { return String::new() };
    let mut s = format!("{UNRESOLVED_MARK} {}\n  {}\n", UNRESOLVED_INTRO[0], UNRESOLVED_INTRO[1]);
    for l in lines {
        let _ = writeln!(s, "    {l}");
    }
    s
}

/// How fast a probe's values come on one CPU.
enum Pace {
    /// One a period.
    Interval(u64),
    /// Values a second, as the run saw them (a probe whose values are events, a rate sweep).
    Rate(f64),
}

impl Pace {
    /// How long `n` values take, in ns.
    fn time_ns(&self, n: u64) -> f64 {
        match *self {
            Pace::Interval(i) => n as f64 * i as f64,
            Pace::Rate(r) => n as f64 / r * 1e9,
        }
    }
}

impl std::fmt::Display for Pace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Pace::Interval(i) => write!(f, "at {}", Nanos(i)),
            Pace::Rate(r) => write!(f, "at the {} values a second this run saw", significant(r)),
        }
    }
}

/// The pace of the values of series `label` of run `r`, from its first entry per CPU with
/// values: its probe's interval when it took about one value (or missed one) each interval, else
/// the rate it saw; `None` when the run says neither.
fn pace(r: &RunResult, label: &str) -> Option<Pace> {
    let p = r.probes.iter().find(|p| p.label() == label && p.samples > 0)?;
    let interval = r.config.probes.iter().find(|c| c.name == p.probe).map_or(0, |c| c.interval_ns);
    let periods = p.samples.saturating_add(p.missed);
    let seen = (r.measured_ns > 0).then(|| r.measured_ns as f64 / periods as f64);
    match seen {
        Some(seen) if interval > 0 && (seen - interval as f64).abs() <= interval as f64 / 10.0 => Some(Pace::Interval(interval)),
        None if interval > 0 => Some(Pace::Interval(interval)),
        _ if r.measured_ns > 0 => Some(Pace::Rate(p.samples as f64 * 1e9 / r.measured_ns as f64)),
        _ => None,
    }
}

fn row(p: &ProbeResult, columns: &[&'static Percentile]) -> Vec<String> {
    [p.label(), p.cpu.map_or("all".to_string(), |c| c.to_string()), p.samples.to_string(), p.missed.to_string()]
        .into_iter()
        .chain(latency_cells(p, columns))
        .collect()
}

/// The lines before the figures: what ran, at what, how long, on which kernel, how it ended.
/// Every field is what the run did or the file says; what an imported file does not state is
/// "unknown" (`Imported::unknown`). With `board`, the board's lines (`super::board`; the HTML
/// report has a block of its own for it).
pub(super) fn how_obtained(r: &RunResult, board: bool) -> String {
    let mut s = String::new();
    let c = &r.config;
    let sys = &r.system;
    let unknown = |field: &str| crate::result::imported::unknown(r, field);
    if let Some(i) = &r.imported {
        let _ = writeln!(
            s,
            "imported from {} {} ({}, {}): {}",
            shown(&i.tool),
            shown(i.tool_version.as_deref().unwrap_or("(version not recorded)")),
            shown(&i.format),
            shown(&i.source),
            shown(i.command_line.as_deref().unwrap_or("command line not recorded"))
        );
    }
    let _ = writeln!(
        s,
        "rtgauge {}: {}{}, {}{}",
        shown(&r.tool_version),
        c.probes.iter().map(|p| probe_line(r, p)).collect::<Vec<_>>().join("; "),
        run_policy(r),
        memory_line(r),
        r.tuning
            .iter()
            .filter(|t| t.applied && t.setting.starts_with("/dev/"))
            .map(|t| format!(", {} {}", shown(t.setting.trim_start_matches("/dev/")), shown(&t.value)))
            .collect::<String>(),
    );
    s += &tuned_lines(&r.tuning);
    let _ = writeln!(s, "{}", measured_line(r));
    if let Some(c) = &r.continuous {
        // A rotated run: where it lies in its continuous measurement.
        let _ = writeln!(
            s,
            "part {} of series {}, rotated every {}, {} into the series",
            c.index,
            c.series.to_string().get(..8).unwrap_or_default(),
            Nanos(c.rotate_ns),
            Nanos(c.offset_ns)
        );
    }
    let p = &sys.preemption;
    let mode = p.dynamic_mode.as_ref().map_or(String::new(), |m| format!(", mode {}", shown(m)));
    let preemption = if unknown("system.preemption") {
        "preemption model unknown".to_string()
    } else {
        format!("{}{}{}", shown(&p.model), mode, if p.realtime { "" } else { ", not PREEMPT_RT" })
    };
    let _ = writeln!(
        s,
        "kernel {} ({preemption}), {}, {}, clocksource {}",
        shown(&sys.kernel_release),
        shown(&sys.architecture),
        shown(&sys.cpu_model),
        shown(sys.clocksource.as_deref().unwrap_or("unknown")),
    );
    if board {
        s += &super::board::summary_lines(r.board.as_ref());
    }
    let status = match (r.status, &r.interrupted_by) {
        (Status::Complete, _) => "complete".to_string(),
        (Status::Partial, Some(sig)) => {
            format!("PARTIAL (stopped by {}; everything measured so far is kept)", shown(sig))
        }
        (Status::Partial, None) => "PARTIAL".to_string(),
    };
    if unknown("started_at") {
        let _ = writeln!(s, "run {status}, time unknown (the file's own is {})\n", shown(&r.ended_at));
    } else {
        let _ = writeln!(s, "run {status}, {} → {}\n", shown(&r.started_at), shown(&r.ended_at));
    }
    s
}

/// The priority a probe's threads set themselves, as its `priority=` setting states it
/// (`priority=99 (...)`): (the priority, what follows it).
fn own_priority(p: &crate::result::ProbeConfig) -> Option<(&str, &str)> {
    let v = p.settings.iter().find_map(|t| t.strip_prefix("priority="))?;
    Some(v.split_once(' ').map_or((v, ""), |(n, rest)| (n, rest.trim())))
}

/// One probe as the header states it: where, at which interval, with which settings, and at
/// which priority when its threads set their own.
fn probe_line(r: &RunResult, p: &crate::result::ProbeConfig) -> String {
    let more: Vec<&str> =
        p.settings.iter().map(String::as_str).filter(|s| !s.starts_with("interval=") && !s.starts_with("priority=")).collect();
    let more = if more.is_empty() { String::new() } else { format!(" ({})", more.join("; ")) };
    // A sweep's interval changes with its steps (its settings say how).
    let interval = if crate::probe::registry::swept(&p.name, &p.settings) {
        String::new()
    } else if p.interval_ns == 0 || crate::result::imported::unknown(r, "config.interval_ns") {
        ", interval unknown".to_string()
    } else {
        format!(", interval {}", Nanos(p.interval_ns))
    };
    let at = match own_priority(p) {
        Some((n, rest)) if r.config.policy.has_priority() => {
            format!(", {} {n}{}", r.config.policy.kernel_name(), if rest.is_empty() { String::new() } else { format!(" {rest}") })
        }
        _ => String::new(),
    };
    format!("{} on CPUs {}{interval}{}{}", shown(&p.name), format_cpu_list(&p.cpus), shown(&more), shown(&at))
}

/// The policy the probes without a priority of their own ran at (nothing when every probe sets
/// its own), and whether the threads obtained it.
fn run_policy(r: &RunResult) -> String {
    let c = &r.config;
    let unknown = |field: &str| crate::result::imported::unknown(r, field);
    if unknown("config.policy") {
        return ", scheduling policy unknown".to_string();
    }
    let every_own = !c.probes.is_empty() && c.probes.iter().all(|p| own_priority(p).is_some()) && c.policy.has_priority();
    let policy = match (c.policy, c.dl_runtime_ns) {
        _ if every_own => String::new(),
        (crate::vocab::policy::Policy::Deadline, rt) => {
            format!(", SCHED_DEADLINE (runtime {} per interval)", rt.map_or("a tenth".to_string(), |ns| Nanos(ns).to_string()))
        }
        (p, _) if p.has_priority() && unknown("config.priority") => format!(", {} (priority unknown)", p.kernel_name()),
        (p, _) if p.has_priority() => format!(", {} {}", p.kernel_name(), c.priority),
        (p, _) => format!(", {}", p.kernel_name()),
    };
    // A run rtgauge measured knows whether every thread got its policy and priority.
    let obtained = r.imported.is_none() && c.policy.is_realtime() && !r.system.rt_priority_obtained;
    format!("{policy}{}", if obtained { " (NOT obtained by every thread: see the warnings)" } else { "" })
}

/// How long was measured, against what was planned, and after which warm-up (each probe's own).
fn measured_line(r: &RunResult) -> String {
    let c = &r.config;
    let unknown = |field: &str| crate::result::imported::unknown(r, field);
    let planned = match (c.duration_ns, c.loops) {
        (Some(d), _) => Some((Nanos(d).to_string(), d)),
        (_, Some(l)) => Some((format!("{l} {}", if l == 1 { "period" } else { "periods" }), l.saturating_mul(c.interval_ns))),
        _ => None,
    };
    let measured = Nanos(r.measured_ns);
    let length = match (&planned, r.status) {
        _ if unknown("measured_ns") => match &planned {
            Some((p, _)) => format!("measured {p} (how long is unknown)"),
            None => "measured for a time unknown".to_string(),
        },
        (Some((p, ns)), Status::Partial) if *ns != r.measured_ns => format!("measured {measured} of the planned {p}"),
        (Some((p, ns)), Status::Complete) if r.measured_ns + c.interval_ns.max(1) <= *ns && r.imported.is_none() => {
            let why = if c.probes.iter().any(|p| crate::probe::registry::swept(&p.name, &p.settings)) {
                "the probes ended early: a rate sweep stops after its first failed step"
            } else {
                "the probes ended early"
            };
            format!("measured {measured} of the planned {p} ({why})")
        }
        (Some((p, _)), _) if c.duration_ns.is_none() => format!("measured {p} ({measured})"),
        _ => format!("measured {measured}"),
    };
    if unknown("config.warmup") {
        return format!("{length}, warm-up unknown");
    }
    // Each probe's warm-up (a probe's own `warmup=` differs from the run's).
    let warmups: Vec<(String, u64, u64)> =
        c.probes.iter().map(|p| (p.name.clone(), p.warmup_periods, p.warmup_periods.saturating_mul(p.interval_ns))).collect();
    let periods = |n: u64| if n == 1 { "1 warm-up period".to_string() } else { format!("{n} warm-up periods") };
    let warmup = match warmups.as_slice() {
        [] => format!("after {}", periods(c.warmup.periods)),
        [(_, 0, _), ..] if warmups.iter().all(|w| w.1 == 0) => "after no warm-up".to_string(),
        [(_, n, ns), ..] if warmups.iter().all(|w| w.1 == *n && w.2 == *ns) => {
            format!("after {} ({})", periods(*n), Nanos(*ns))
        }
        _ => format!(
            "after warm-ups of {}",
            warmups
                .iter()
                .map(|(name, n, ns)| format!("{} {} ({})", shown(name), periods(*n), Nanos(*ns)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!("{length}, {warmup}")
}

/// What `--tune` changed for the run (the PM QoS request is on the line above), from what,
/// and whether it was put back; what it could not change, and why.
fn tuned_lines(records: &[crate::result::tuning::TuningRecord]) -> String {
    let mut s = String::new();
    for t in records.iter().filter(|t| !t.setting.starts_with("/dev/")) {
        let line = match (t.applied, t.restored) {
            (true, restored) => format!(
                "tuned {}: {} (was: {}){}",
                shown(&t.setting),
                shown(&t.value),
                shown(t.original.as_deref().unwrap_or("?")),
                match restored {
                    Some(true) => ", restored",
                    Some(false) => ", NOT restored (see the warnings)",
                    None => "",
                }
            ),
            (false, _) => format!("not tuned {}: {}", shown(&t.setting), shown(t.error.as_deref().unwrap_or("?"))),
        };
        let _ = writeln!(s, "{line}");
    }
    s
}

/// Renders the summary as text.
pub fn render(r: &RunResult) -> String {
    render_after(r, &[])
}

/// As [`render`], leaving out the warnings in `said` (said on the same screen before the run).
pub fn render_after(r: &RunResult, said: &[String]) -> String {
    let mut s = how_obtained(r, true);
    let c = &r.config;
    let (header, rows) = results_table(r);
    s += &table(&header, 2..header.len(), rows);
    let cycles = r.probes.iter().any(|p| p.bounds.is_some());
    let _ = writeln!(s, "{}", if cycles { "(latencies, cycle lengths and jitter in µs)" } else { "(latencies in µs)" });
    s += &note_text(results_note(r));
    // The worst case is a latency's: a cycle length is judged by its bounds (below).
    if let Some(worst) = r.probes.iter().filter(|p| p.max_ns.is_some() && p.in_worst_case()).max_by_key(|p| p.max_ns) {
        // Its own probe's warm-up (a probe's `warmup=` differs from the run's).
        let warmup = c
            .probes
            .iter()
            .find(|pc| pc.name == worst.probe && worst.cpu.is_none_or(|cpu| pc.cpus.contains(&cpu)))
            .map_or(c.warmup.periods.saturating_mul(c.interval_ns), |pc| pc.warmup_periods.saturating_mul(pc.interval_ns));
        let at = worst.max_at_ns.map_or(String::new(), |t| {
            format!(
                ", in the period ending {:.3} s after the start of the run ({})",
                t as f64 / 1e9,
                if warmup > 0 {
                    format!(
                        "{:.3} s into the measurement, after the {} warm-up",
                        t.saturating_sub(warmup) as f64 / 1e9,
                        Nanos(warmup)
                    )
                } else {
                    "no warm-up".into()
                }
            )
        });
        let _ = writeln!(s, "\nWorst case: {} µs on {}/{}{at}.", opt_us(worst.max_ns), shown(&worst.label()), worst.scope());
    }
    // Each probe's own section (the period loop's cycles, the wake-up chain's events, ...).
    s += &crate::probe::registry::summaries(r);
    if let Some(line) = r.verdict.shortest_cycle_sentence() {
        let _ = writeln!(s, "{line}.");
    }
    s += &super::long_enough::section(r);
    s += &super::reference::render(r);
    let _ = writeln!(s, "Verdict: {}", shown(&r.verdict.headline()));
    for rule in &r.verdict.rules {
        let _ = writeln!(s, "  rule: {}", shown(rule));
    }
    for line in &r.verdict.support {
        s += &super::long_enough::wrap(&format!("length: {}", shown(line)), "  ", "    ");
    }
    for ch in r.verdict.checks.iter().filter(|c| !c.passed) {
        // ("not judged: why" stands for itself, without "observed")
        let observed = if ch.observed_value.is_none() && ch.observed.starts_with("not judged") { "" } else { "observed " };
        let line = format!("failed: {:<18} {:<12} {observed}{}", shown(&ch.expr), shown(&ch.scope), shown(&ch.observed));
        // (a long observation — a reason it was not judged — is wrapped at 80 columns)
        if line.chars().count() + 2 <= 80 {
            let _ = writeln!(s, "  {line}");
        } else {
            s += &super::long_enough::wrap(&line, "  ", "    ");
        }
    }
    if !r.phases.is_empty() {
        let _ = writeln!(s, "\nPer phase (all CPUs; latencies in µs; times from the start of the run):");
        let (header, rows) = phase_table(r);
        s += &table(&header, 2..header.len() - 1, rows);
        s += &note_text(phase_note(r));
    }
    s += &super::trace::render(r.trace.as_ref());
    s += &super::audit::summary_lines(&r.findings);
    if !r.loads.is_empty() {
        let _ = writeln!(s, "\nLoads ({}):", shown(&r.config.load_source));
        s += &render_loads(&r.loads);
    } else if let Some(i) = &r.imported {
        let _ = writeln!(s, "\nLoads: not recorded ({} does not say what ran beside it)", shown(&i.tool));
    } else {
        let _ = writeln!(s, "\nLoads: none (an idle system, on purpose)");
    }
    // A setting --tune could not change is said once, on its "not tuned" line above.
    let said_above = |w: &str| r.tuning.iter().any(|t| !t.applied && w.starts_with(&format!("could not tune {}: ", t.setting)));
    for w in r.warnings.iter().filter(|w| !said_above(w) && !said.contains(w)) {
        let _ = writeln!(s, "warning: {}", shown(w));
    }
    s
}

/// The results table: a row per probe (series) and CPU, then one per probe over all CPUs.
pub(super) fn results_table(r: &RunResult) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let columns = percentile_columns(r.probes.iter().chain(&r.combined));
    (
        latency_header(&["probe", "cpu", "samples", "missed"], &columns),
        r.probes.iter().chain(&r.combined).map(|p| row(p, &columns)).collect(),
    )
}

/// The footnote of the results table ([`unresolved_note`]).
pub(super) fn results_note(r: &RunResult) -> Option<Vec<String>> {
    let entries: Vec<&ProbeResult> = r.probes.iter().chain(&r.combined).collect();
    unresolved_note(r, &entries, &percentile_columns(entries.iter().copied()))
}

/// The per-phase table: a row per phase and probe (all CPUs), with what ran in it (last column).
pub(super) fn phase_table(r: &RunResult) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let columns = percentile_columns(r.phases.iter().flat_map(|p| &p.combined));
    let rows = r
        .phases
        .iter()
        .flat_map(|p| {
            let columns = &columns;
            p.combined.iter().map(move |c| {
                let span = format!("{:.3}-{:.3} s", p.start_ns as f64 / 1e9, p.end_ns as f64 / 1e9);
                [span, c.label(), c.samples.to_string(), c.missed.to_string()]
                    .into_iter()
                    .chain(latency_cells(c, columns))
                    .chain([phase_doing(p)])
                    .collect()
            })
        })
        .collect();
    let mut header = latency_header(&["phase", "probe", "samples", "missed"], &columns);
    header.push("loads");
    (header, rows)
}

/// The footnote of the per-phase table ([`unresolved_note`]).
pub(super) fn phase_note(r: &RunResult) -> Option<Vec<String>> {
    let entries: Vec<&ProbeResult> = r.phases.iter().flat_map(|p| &p.combined).collect();
    unresolved_note(r, &entries, &percentile_columns(entries.iter().copied()))
}

/// What ran during a phase: its loads, and the steps of probes with a timeline of their own.
fn phase_doing(p: &crate::result::PhaseResult) -> String {
    let loads = if p.loads.is_empty() { "(none)".to_string() } else { p.loads.join(", ") };
    p.steps.iter().fold(loads, |s, step| format!("{s}; {step}"))
}

/// The loads section: what each load did and what it cost.
pub fn render_loads(loads: &[crate::result::load::LoadRecord]) -> String {
    if loads.is_empty() {
        return String::new();
    }
    let (header, rows) = load_table(loads);
    table(&header, 1..8, rows)
}

/// The loads table: a row per load with what it did and cost (the last column: its work).
pub(super) fn load_table(loads: &[crate::result::load::LoadRecord]) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let rows = loads
        .iter()
        .map(|l| {
            let u = &l.usage;
            let work: Vec<String> = l.counters.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let spec = if l.spec.chars().count() > 40 {
                format!("{}…", l.spec.chars().take(39).collect::<String>())
            } else {
                l.spec.clone()
            };
            vec![
                spec,
                l.runs.to_string(),
                format!("{:.2}", u.user_ns as f64 / 1e9),
                format!("{:.2}", u.system_ns as f64 / 1e9),
                u.minor_faults.to_string(),
                u.major_faults.to_string(),
                u.voluntary_switches.to_string(),
                u.involuntary_switches.to_string(),
                work.join(" ")
                    + &if l.failed { format!(" FAILED: {}", l.error.as_deref().unwrap_or("?")) } else { String::new() },
            ]
        })
        .collect();
    (vec!["load", "runs", "user s", "sys s", "minflt", "majflt", "vol.cs", "invol.cs", "work"], rows)
}

/// The terminal report's histograms: per series (over all CPUs where the run has more than
/// one) a row per 1-2-5 step (…, 10, 20, 50, 100 µs, …) from its minimum to its maximum, so the
/// bulk and the tail both show, each with a bar on a logarithmic scale (one sample still
/// shows) and its count.
pub fn text_histograms(r: &RunResult) -> String {
    let mut s = String::new();
    let mut seen: Vec<String> = Vec::new();
    for p in r.combined.iter().chain(&r.probes) {
        let label = p.label();
        if seen.contains(&label) || p.histogram.total_count == 0 {
            continue;
        }
        seen.push(label.clone());
        let rows = steps_125(&p.histogram.buckets.triples().map(|t| (t[0], t[2])).collect::<Vec<_>>());
        let top = rows.iter().map(|r| r.2).max().unwrap_or(1) as f64;
        let what = p.measures.as_deref().unwrap_or("latency");
        let _ = writeln!(s, "\n{label} on {} ({what} in µs; bars on a log scale):", p.scope());
        for (lo, hi, n) in rows {
            let bar = if n == 0 { 0 } else { 1 + (((n as f64).ln() / (top + 1.0).ln()) * 39.0) as usize };
            let _ = writeln!(s, "  {:>12} - {:<12} |{:<40} {n}", us(lo), us(hi), "#".repeat(bar.min(40)));
        }
    }
    s
}

/// Counts of (value, count) pairs in 1-2-5 steps of ns (below 1 µs: one row), from the step
/// holding the smallest value to the one holding the largest: (from, to, count).
fn steps_125(values: &[(u64, u64)]) -> Vec<(u64, u64, u64)> {
    let edge =
        |k: u32| -> u64 { [1u64, 2, 5][(k % 3) as usize].saturating_mul(10u64.saturating_pow(k / 3)).saturating_mul(1_000) };
    let step_of = |v: u64| (0..60u32).find(|&k| v < edge(k)).unwrap_or(60);
    // The smallest and largest steps of any value (a stored document's buckets may be in any order).
    let (Some(a), Some(b)) = (values.iter().map(|v| step_of(v.0)).min(), values.iter().map(|v| step_of(v.0)).max()) else {
        return Vec::new();
    };
    let mut rows: Vec<(u64, u64, u64)> = (a..=b).map(|k| (if k == 0 { 0 } else { edge(k - 1) }, edge(k), 0)).collect();
    for &(v, n) in values {
        let row = &mut rows[(step_of(v) - a) as usize].2;
        *row = row.saturating_add(n);
    }
    rows
}

/// How memory was held, with the page faults the measurement threads took while measuring
/// (where the run counted them): "memory locked, no page fault while measuring".
fn memory_line(r: &RunResult) -> String {
    let locked = match r.system.mlockall_obtained {
        _ if crate::result::imported::unknown(r, "config.mlockall") => "memory locking unknown",
        true => "memory locked",
        false => "memory NOT locked",
    };
    match r.probes.iter().filter_map(|p| p.page_faults).reduce(u64::saturating_add) {
        Some(0) => format!("{locked}, no page fault while measuring"),
        Some(n) => format!("{locked}, {n} page faults while measuring"),
        None => locked.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_time_a_percentile_needs_reads_as_a_run_is_planned() {
        use super::{grouped, span, Pace};
        let at_1ms = |n| span(Pace::Interval(1_000_000).time_ns(n));
        assert_eq!(
            [at_1ms(10_000), at_1ms(100_000), at_1ms(1_000_000), at_1ms(10_000_000)],
            ["10 s", "1.7 min", "17 min", "2.8 h"]
        );
        assert_eq!(span(Pace::Rate(2.0).time_ns(1_000_000)), "5.8 days");
        assert_eq!(span(Pace::Interval(250_000).time_ns(20)), "5 ms");
        assert_eq!([grouped(20), grouped(1_000), grouped(10_000_000)], ["20", "1 000", "10 000 000"]);
        assert_eq!(Pace::Rate(2.5).to_string(), "at the 2.5 values a second this run saw");
    }

    #[test]
    fn text_histogram_rows_are_1_2_5_steps_that_hold_every_count() {
        let rows = super::steps_125(&[(800, 1), (15_000, 7), (16_000, 2), (3_400_000, 1)]);
        assert_eq!(rows.first(), Some(&(0, 1_000, 1)));
        assert_eq!(rows[2], (2_000, 5_000, 0));
        assert!(rows.contains(&(10_000, 20_000, 9)) && rows.last() == Some(&(2_000_000, 5_000_000, 1)));
        assert_eq!(rows.iter().map(|r| r.2).sum::<u64>(), 11);
        assert!(rows.windows(2).all(|w| w[0].1 == w[1].0), "contiguous");
    }
}
