//! The summary printed at the end of a run: how it was obtained, one row per CPU and one for
//! all CPUs (µs with sub-µs precision), the worst case, the shortest supported cycle time,
//! the verdict with every failed check, and the warnings.

use super::shown;
use crate::result::{ProbeResult, RunResult, Status};
use crate::vocab::cpus::format_cpu_list;
use crate::vocab::percentiles::REPORTED;
use crate::vocab::units::{us, Nanos};
use comfy_table::{presets::NOTHING, CellAlignment, ContentArrangement, Table};
use std::fmt::Write;

fn opt_us(v: Option<u64>) -> String {
    v.map_or("-".to_string(), us)
}

/// A plain table whose columns are as wide as their widest value (nothing merges however
/// large a figure grows); the columns in `right` are right-aligned (the figures). Every cell is
/// shown escaped ([`super::shown`]): a label or a host name cannot break a row or add one.
pub(crate) fn table(header: &[&str], right: std::ops::Range<usize>, rows: Vec<Vec<String>>) -> String {
    let mut t = Table::new();
    t.load_preset(NOTHING).set_content_arrangement(ContentArrangement::Disabled).set_header(header.to_vec());
    for r in rows {
        t.add_row(r.iter().map(|c| super::shown(c).into_owned()).collect::<Vec<String>>());
    }
    for (i, c) in t.column_iter_mut().enumerate() {
        c.set_padding((0, 1));
        if right.contains(&i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let text = t.to_string();
    text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n") + "\n"
}

/// Column heads of a latency table: `first`, then min, mean, every reported percentile, max.
pub(super) fn latency_header(first: &[&'static str]) -> Vec<&'static str> {
    let mut h = first.to_vec();
    h.extend(["min", "mean"]);
    h.extend(REPORTED.iter().map(|p| p.label));
    h.push("max");
    h
}

/// min, mean, every reported percentile, max: in µs.
fn latency_cells(p: &ProbeResult) -> impl Iterator<Item = String> + '_ {
    [opt_us(p.min_ns), p.mean_ns.map_or("-".to_string(), |m| us(m.round() as u64))]
        .into_iter()
        .chain(p.percentiles.iter().map(|(_, v)| opt_us(v)))
        .chain([opt_us(p.max_ns)])
}

fn row(p: &ProbeResult) -> Vec<String> {
    [p.label(), p.cpu.map_or("all".to_string(), |c| c.to_string()), p.samples.to_string(), p.missed.to_string()]
        .into_iter()
        .chain(latency_cells(p))
        .collect()
}

/// A period loop's cycles in the AM3356 loop's own format, with their jitter (`jitter`: the
/// entry of the same probe and CPU holding each cycle's distance from the interval).
fn cycle_report(p: &ProbeResult, jitter: Option<&ProbeResult>) -> String {
    let Some(b) = p.bounds else { return String::new() };
    let ms = |ns: Option<u64>| ns.map_or("-".to_string(), |v| format!("{:.2}ms", v as f64 / 1e6));
    let mut s = format!(
        "\n{} loop on {} (as the AM3356 loop reports it):\n  Cycles: {}\n  Below {}: {}\n  Above {}: {}\n  \
         Maximum cycle length: {}\n  Minimum cycle length: {}\n  Missed periods: {}\n",
        p.probe,
        p.scope(),
        p.samples,
        Nanos(b.below_ns),
        b.below,
        Nanos(b.above_ns),
        b.above,
        ms(p.max_ns),
        ms(p.min_ns),
        p.missed
    );
    if let Some(j) = jitter.filter(|j| j.samples > 0) {
        let _ = writeln!(
            s,
            "  Jitter (|cycle - interval|): median {} µs, p99 {} µs, max {} µs",
            opt_us(j.percentiles.get(50.0).flatten()),
            opt_us(j.percentiles.get(99.0).flatten()),
            opt_us(j.max_ns)
        );
    }
    s
}

/// The wake-up chain's events per CPU: posted by the handler, and lost before the task took
/// them (the ARM9/ARM11 paper's missed-event count): `chain.missed − handler.missed`.
fn chain_report(probes: &[ProbeResult]) -> String {
    use crate::probe::wakeup::{NAME, SERIES};
    let (chain, handler) = (Some(SERIES[0]), Some(SERIES[1]));
    let of = |series, cpu| probes.iter().find(|p| p.probe == NAME && p.series.as_deref() == series && p.cpu == cpu);
    let mut s = String::new();
    for c in probes.iter().filter(|p| p.probe == NAME && p.series.as_deref() == chain) {
        let Some(h) = of(handler, c.cpu) else { continue };
        if s.is_empty() {
            s += "\nWake-up chain (handler → task), per CPU:\n";
        }
        let _ = writeln!(
            s,
            "  {}: {} events taken by the task; {} {} the handler missed; {} events posted but never taken",
            c.scope(),
            c.samples,
            h.missed,
            if c.sweep.is_some() { "events" } else { "periods" },
            c.missed.saturating_sub(h.missed)
        );
    }
    s
}

/// A rate sweep per CPU: each step's events, misses and worst case against its bound, and the
/// highest rate sustained (the ARM9/ARM11 paper's question).
fn sweep_report(probes: &[ProbeResult]) -> String {
    let mut s = String::new();
    for p in probes.iter().filter(|p| p.cpu.is_some() && p.sweep.is_some() && p.is_headline()) {
        let sweep = p.sweep.as_ref().expect("filtered");
        if s.is_empty() {
            s += "\nRate sweep, per CPU (a step is sustained when none of its events is missed and the worst case stays \
                  within its bound):\n";
        }
        let sustained =
            sweep.sustained_per_s.map_or("none (the lowest rate already failed)".to_string(), |r| format!("{r} events/s"));
        let _ = writeln!(s, "  {} on {}: highest rate sustained {sustained}", p.label(), p.scope());
        let rows = sweep
            .steps
            .iter()
            .map(|st| {
                vec![
                    st.rate_per_s.to_string(),
                    st.planned.to_string(),
                    st.events.to_string(),
                    st.missed.to_string(),
                    opt_us(st.p99_ns),
                    opt_us(st.max_ns),
                    us(st.bound_ns),
                    st.outcome.describe().to_string(),
                ]
            })
            .collect();
        s += &table(&["  rate/s", "planned", "events", "missed", "p99 µs", "max µs", "bound µs", "outcome"], 0..7, rows);
    }
    s
}

/// The noise floor per CPU: the gaps over the threshold, their share of the time, the longest;
/// and RT throttling named when its signature shows (see [`throttling_gaps`]).
fn noise_report(r: &RunResult) -> String {
    let mut s = String::new();
    for p in r.probes.iter().filter(|p| p.noise.is_some()) {
        let n = p.noise.expect("filtered");
        if s.is_empty() {
            let _ = writeln!(s, "\nNoise floor (busy loop; gaps over {}), per CPU:", Nanos(n.threshold_ns));
        }
        let at = p.max_at_ns.map_or(String::new(), |t| format!(" in the window ending {:.3} s", t as f64 / 1e9));
        let _ = writeln!(
            s,
            "  {}: {} gaps, {} per second ({:.4} % of the CPU), longest {} µs{at}",
            p.scope(),
            p.samples,
            Nanos(n.ns_per_s),
            n.ns_per_s as f64 / 1e7,
            opt_us(p.max_ns)
        );
        if let Some(line) = throttling_gaps(r, p) {
            let _ = writeln!(s, "    {line}");
        }
    }
    s
}

/// RT throttling's signature in a noise entry: a gap of about `period − runtime` (50 ms at the
/// default 950 000 of 1 000 000 µs) at least once every two seconds measured.
fn throttling_gaps(r: &RunResult, p: &ProbeResult) -> Option<String> {
    let sys = &r.system;
    let (runtime, period) = (sys.sched_rt_runtime_us?, sys.sched_rt_period_us?);
    if runtime < 0 || runtime >= period {
        return None;
    }
    // Saturating: a stored document's figures may be anything.
    let gap = (period.saturating_sub(runtime) as u64).saturating_mul(1000);
    let (lo, hi) = (gap / 10 * 6, gap / 10 * 12);
    let n: u64 =
        p.histogram.buckets.triples().filter(|&[a, b, _]| a >= lo && b <= hi).fold(0, |n, [_, _, c]| n.saturating_add(c));
    let seconds = r.measured_ns / 1_000_000_000;
    (n >= 1 && n.saturating_mul(2) >= seconds).then(|| {
        format!(
            "{n} gaps of {}..{}: the signature of RT throttling (sched_rt_runtime_us={runtime} of {period} lets \
             other tasks take {} every {} from a busy RT loop); for the measurement write -1 to \
             /proc/sys/kernel/sched_rt_runtime_us, or keep other tasks off this CPU",
            Nanos(lo),
            Nanos(hi),
            Nanos(gap),
            Nanos((period as u64).saturating_mul(1000))
        )
    })
}

/// The UDP round trips per CPU: datagrams sent, replies in time, late, never back; second and
/// forged replies; and a target that refused them (ICMP port unreachable), named.
fn udp_report(probes: &[ProbeResult], configs: &[crate::result::ProbeConfig]) -> String {
    use crate::probe::udp::NAME;
    let mut s = String::new();
    for p in probes.iter().filter(|p| p.probe == NAME) {
        let count = |name: &str| p.counts.get(name).copied().unwrap_or(0);
        let (sent, late) = (count("sent"), count("late"));
        if s.is_empty() {
            s += "\nUDP round trips, per CPU:\n";
        }
        let _ = write!(
            s,
            "  {}: {sent} datagrams sent, {} answered in their period ({} of them in the warm-up), {late} answered late, \
             {} never answered",
            p.scope(),
            p.samples.saturating_add(p.warmup_samples),
            p.warmup_samples,
            sent.saturating_sub(p.samples.saturating_add(p.warmup_samples).saturating_add(late))
        );
        for (name, what) in [("duplicate", "replies to a period already answered"), ("forged", "datagrams that were no reply")] {
            if count(name) > 0 {
                let _ = write!(s, "; {} {what} (not counted as replies)", count(name));
            }
        }
        if count("refused") > 0 {
            let config = configs.iter().find(|c| c.name == NAME);
            let target = config.and_then(|c| c.settings.iter().find_map(|t| t.strip_prefix("target="))).unwrap_or("the target");
            let _ = write!(
                s,
                "; connection refused {} times: no echo listening on {target} (ICMP port unreachable)",
                count("refused")
            );
        }
        s.push('\n');
    }
    s
}

/// The external events per CPU: taken, missed by the device's own numbering, and for a UIO
/// source what its values are.
fn event_report(r: &RunResult) -> String {
    use crate::probe::event::{COUNTERS, NAME};
    let mut s = String::new();
    for p in r.probes.iter().filter(|p| p.probe == NAME && p.cpu.is_some()) {
        let events = p.counts.get(COUNTERS[0]).copied().unwrap_or(0);
        if s.is_empty() {
            s += "
External events, per CPU:
";
        }
        let what = if p.measures.is_some() {
            "the values are intervals between wake-ups: UIO carries no timestamp, a latency needs a reference outside (a scope on an output)"
        } else {
            "the values are wake-up − the kernel's timestamp of the edge"
        };
        let _ = writeln!(
            s,
            "  {}: {events} events taken ({} in the warm-up), {} missed (skipped in the device's numbering); {what}",
            p.scope(),
            p.warmup_samples,
            p.missed.saturating_add(p.warmup_missed)
        );
    }
    s
}

/// The lines before the figures: what ran, how long, on which kernel, how it ended.
pub(super) fn how_obtained(r: &RunResult) -> String {
    let mut s = String::new();
    let c = &r.config;
    let sys = &r.system;
    let length = match (c.duration_ns, c.loops) {
        (Some(d), _) => Nanos(d).to_string(),
        (_, Some(l)) => format!("{l} periods"),
        _ => "?".into(),
    };
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
        "rtgauge {}: {}, {}, {}{}",
        shown(&r.tool_version),
        c.probes
            .iter()
            .map(|p| {
                let more: Vec<&str> = p.settings.iter().map(String::as_str).filter(|s| !s.starts_with("interval=")).collect();
                let more = if more.is_empty() { String::new() } else { format!(" ({})", more.join(", ")) };
                // A sweep's interval changes with its steps (its settings say how).
                let interval = if p.settings.iter().any(|s| s.starts_with("rate=sweep")) {
                    String::new()
                } else if p.interval_ns == 0 {
                    ", interval not recorded".to_string()
                } else {
                    format!(", interval {}", Nanos(p.interval_ns))
                };
                format!("{} on CPUs {}{interval}{}", shown(&p.name), format_cpu_list(&p.cpus), shown(&more))
            })
            .collect::<Vec<_>>()
            .join("; "),
        match (c.policy, c.dl_runtime_ns) {
            (crate::vocab::policy::Policy::Deadline, rt) =>
                format!("SCHED_DEADLINE (runtime {} per interval)", rt.map_or("a tenth".to_string(), |ns| Nanos(ns).to_string())),
            (p, _) if p.has_priority() => format!("{} {}", p.kernel_name(), c.priority),
            (p, _) => p.kernel_name().to_string(),
        },
        memory_line(r),
        r.tuning
            .iter()
            .filter(|t| t.applied && t.setting.starts_with("/dev/"))
            .map(|t| format!(", {} {}", shown(t.setting.trim_start_matches("/dev/")), shown(&t.value)))
            .collect::<String>(),
    );
    s += &tuned_lines(&r.tuning);
    match r.status {
        Status::Complete => {
            let _ = writeln!(s, "measured {length} after {} warm-up periods", c.warmup.periods);
        }
        Status::Partial => {
            let _ = writeln!(
                s,
                "measured {} of the planned {length}, after {} warm-up periods",
                Nanos(r.measured_ns),
                c.warmup.periods
            );
        }
    }
    let p = &sys.preemption;
    let mode = p.dynamic_mode.as_ref().map_or(String::new(), |m| format!(", mode {}", shown(m)));
    let _ = writeln!(
        s,
        "kernel {} ({}{}{}), {}, {}, clocksource {}",
        shown(&sys.kernel_release),
        shown(&p.model),
        mode,
        if p.realtime { "" } else { ", not PREEMPT_RT" },
        shown(&sys.architecture),
        shown(&sys.cpu_model),
        shown(sys.clocksource.as_deref().unwrap_or("unknown")),
    );
    let status = match (r.status, &r.interrupted_by) {
        (Status::Complete, _) => "complete".to_string(),
        (Status::Partial, Some(sig)) => {
            format!("PARTIAL (stopped by {}; everything measured so far is kept)", shown(sig))
        }
        (Status::Partial, None) => "PARTIAL".to_string(),
    };
    let _ = writeln!(s, "run {status}, {} → {}\n", shown(&r.started_at), shown(&r.ended_at));
    s
}

/// What `--tune` changed for the run (the PM QoS request is on the line above), from what,
/// and whether it was put back; what it could not change, and why.
fn tuned_lines(records: &[crate::tuning::TuningRecord]) -> String {
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
    let mut s = how_obtained(r);
    let c = &r.config;
    let (header, rows) = results_table(r);
    s += &table(&header, 2..header.len(), rows);
    let cycles = r.probes.iter().any(|p| p.bounds.is_some());
    let _ = writeln!(s, "{}", if cycles { "(latencies, cycle lengths and jitter in µs)" } else { "(latencies in µs)" });
    // The worst case is a latency's: a cycle length is judged by its bounds (below).
    if let Some(worst) = r.probes.iter().filter(|p| p.max_ns.is_some() && p.in_worst_case()).max_by_key(|p| p.max_ns) {
        let warmup = c.warmup.periods.saturating_mul(c.interval_ns);
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
    for p in r.probes.iter().filter(|p| p.bounds.is_some()) {
        let jitter = r.probes.iter().find(|j| j.probe == p.probe && j.cpu == p.cpu && j.measures.as_deref() == Some("deviation"));
        s += &cycle_report(p, jitter);
    }
    s += &chain_report(&r.probes);
    s += &sweep_report(&r.probes);
    s += &noise_report(r);
    s += &udp_report(&r.probes, &r.config.probes);
    s += &event_report(r);
    if let Some(line) = r.verdict.shortest_cycle_sentence() {
        let _ = writeln!(s, "{line}.");
    }
    s += &super::reference::render(r);
    let _ = writeln!(s, "Verdict: {}", shown(&r.verdict.headline()));
    for ch in r.verdict.checks.iter().filter(|c| !c.passed) {
        let _ = writeln!(s, "  failed: {:<18} {:<12} observed {}", shown(&ch.expr), shown(&ch.scope), shown(&ch.observed));
    }
    if !r.phases.is_empty() {
        let _ = writeln!(s, "\nPer phase (all CPUs; latencies in µs; times from the start of the run):");
        let (header, rows) = phase_table(r);
        s += &table(&header, 2..header.len() - 1, rows);
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
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {}", shown(w));
    }
    s
}

/// The results table: a row per probe (series) and CPU, then one per probe over all CPUs.
pub(super) fn results_table(r: &RunResult) -> (Vec<&'static str>, Vec<Vec<String>>) {
    (latency_header(&["probe", "cpu", "samples", "missed"]), r.probes.iter().chain(&r.combined).map(row).collect())
}

/// The per-phase table: a row per phase and probe (all CPUs), with what ran in it (last column).
pub(super) fn phase_table(r: &RunResult) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let rows = r
        .phases
        .iter()
        .flat_map(|p| {
            p.combined.iter().map(move |c| {
                let span = format!("{:.3}-{:.3} s", p.start_ns as f64 / 1e9, p.end_ns as f64 / 1e9);
                [span, c.label(), c.samples.to_string(), c.missed.to_string()]
                    .into_iter()
                    .chain(latency_cells(c))
                    .chain([phase_doing(p)])
                    .collect()
            })
        })
        .collect();
    let mut header = latency_header(&["phase", "probe", "samples", "missed"]);
    header.push("loads");
    (header, rows)
}

/// What ran during a phase: its loads, and the steps of probes with a timeline of their own.
fn phase_doing(p: &crate::result::PhaseResult) -> String {
    let loads = if p.loads.is_empty() { "(none)".to_string() } else { p.loads.join(", ") };
    p.steps.iter().fold(loads, |s, step| format!("{s}; {step}"))
}

/// The loads section: what each load did and what it cost.
pub fn render_loads(loads: &[crate::load::manager::LoadRecord]) -> String {
    if loads.is_empty() {
        return String::new();
    }
    let (header, rows) = load_table(loads);
    table(&header, 1..8, rows)
}

/// The loads table: a row per load with what it did and cost (the last column: its work).
pub(super) fn load_table(loads: &[crate::load::manager::LoadRecord]) -> (Vec<&'static str>, Vec<Vec<String>>) {
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
    let locked = if r.system.mlockall_obtained { "memory locked" } else { "memory NOT locked" };
    match r.probes.iter().filter_map(|p| p.page_faults).reduce(u64::saturating_add) {
        Some(0) => format!("{locked}, no page fault while measuring"),
        Some(n) => format!("{locked}, {n} page faults while measuring"),
        None => locked.to_string(),
    }
}

#[cfg(test)]
mod tests {
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
