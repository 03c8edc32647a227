//! The summary printed at the end of a run: how it was obtained, one row per CPU and one for
//! all CPUs (µs with sub-µs precision), the worst case, the shortest supported cycle time,
//! the verdict with every failed check, and the warnings.

use crate::result::{ProbeResult, RunResult, Status};
use crate::scenario::cpus::format_cpu_list;
use crate::scenario::units::{us, Nanos};
use std::fmt::Write;

fn opt_us(v: Option<u64>) -> String {
    v.map_or("-".to_string(), us)
}

fn row(p: &ProbeResult) -> String {
    format!(
        "{:<6}{:<5}{:>10}{:>8}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>11}",
        p.probe,
        p.cpu.map_or("all".to_string(), |c| c.to_string()),
        p.samples,
        p.missed,
        opt_us(p.min_ns),
        p.mean_ns.map_or("-".to_string(), |m| us(m.round() as u64)),
        opt_us(p.p50_ns),
        opt_us(p.p90_ns),
        opt_us(p.p99_ns),
        opt_us(p.p999_ns),
        opt_us(p.p9999_ns),
        opt_us(p.max_ns),
    )
}

/// Renders the summary as text.
pub fn render(r: &RunResult) -> String {
    let mut s = String::new();
    let c = &r.config;
    let sys = &r.system;
    let length = match (c.duration_ns, c.loops) {
        (Some(d), _) => Nanos(d).to_string(),
        (_, Some(l)) => format!("{l} periods"),
        _ => "?".into(),
    };
    let _ = writeln!(
        s,
        "rtgauge {}: {} latency on CPUs {}, {} {}, interval {}, {}{}",
        r.tool_version,
        c.probes.join(", "),
        format_cpu_list(&c.cpus),
        c.policy.kernel_name(),
        c.priority,
        Nanos(c.interval_ns),
        if sys.mlockall_obtained { "memory locked" } else { "memory NOT locked" },
        r.tuning.iter().filter(|t| t.applied).map(|t| format!(", {} {}", t.setting.trim_start_matches("/dev/"), t.value)).collect::<String>(),
    );
    let _ = writeln!(s, "measured {length} after {} warm-up periods", c.warmup.periods);
    let p = &sys.preemption;
    let mode = p.dynamic_mode.as_ref().map_or(String::new(), |m| format!(", mode {m}"));
    let _ = writeln!(
        s,
        "kernel {} ({}{}{}), {}, {}, clocksource {}",
        sys.kernel_release,
        p.model,
        mode,
        if p.realtime { "" } else { ", not PREEMPT_RT" },
        sys.architecture,
        sys.cpu_model,
        sys.clocksource.as_deref().unwrap_or("unknown"),
    );
    let status = match (r.status, &r.interrupted_by) {
        (Status::Complete, _) => "complete".to_string(),
        (Status::Partial, Some(sig)) => format!("PARTIAL (stopped by {sig}; everything measured so far is kept)"),
        (Status::Partial, None) => "PARTIAL".to_string(),
    };
    let _ = writeln!(s, "run {status}, {} → {}\n", r.started_at, r.ended_at);
    let _ = writeln!(
        s,
        "{:<6}{:<5}{:>10}{:>8}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>11}",
        "probe", "cpu", "samples", "missed", "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max"
    );
    for p in &r.probes {
        let _ = writeln!(s, "{}", row(p));
    }
    for p in &r.combined {
        let _ = writeln!(s, "{}", row(p));
    }
    let _ = writeln!(s, "(latencies in µs)");
    if let Some(worst) = r.probes.iter().filter(|p| p.max_ns.is_some()).max_by_key(|p| p.max_ns) {
        let at = worst.max_at_ns.map_or(String::new(), |t| format!(" at {:.3} s", t as f64 / 1e9));
        let _ = writeln!(s, "\nWorst case: {} µs on {}{at}.", opt_us(worst.max_ns), worst.scope());
    }
    if let Some(line) = r.verdict.shortest_cycle_sentence() {
        let _ = writeln!(s, "{line}.");
    }
    let _ = writeln!(s, "Verdict: {}", r.verdict.headline());
    for ch in r.verdict.checks.iter().filter(|c| !c.passed) {
        let _ = writeln!(s, "  failed: {:<18} {:<12} observed {}", ch.expr, ch.scope, ch.observed);
    }
    if !r.phases.is_empty() {
        let _ = writeln!(s, "\nPer phase (all CPUs; latencies in µs):");
        let _ = writeln!(
            s,
            "{:<16}{:>10}{:>8}{:>10}{:>10}{:>10}{:>11}  loads",
            "phase", "samples", "missed", "p50", "p99", "p99.9", "max"
        );
        for p in &r.phases {
            let c = &p.combined;
            let _ = writeln!(
                s,
                "{:<16}{:>10}{:>8}{:>10}{:>10}{:>10}{:>11}  {}",
                format!("{:.1}-{:.1} s", p.start_ns as f64 / 1e9, p.end_ns as f64 / 1e9),
                c.samples,
                c.missed,
                opt_us(c.p50_ns),
                opt_us(c.p99_ns),
                opt_us(c.p999_ns),
                opt_us(c.max_ns),
                if p.loads.is_empty() { "(none)".to_string() } else { p.loads.join(", ") }
            );
        }
    }
    if !r.loads.is_empty() {
        let _ = writeln!(s, "\nLoads ({}):", r.config.load_source);
        s += &render_loads(&r.loads);
    } else {
        let _ = writeln!(s, "\nLoads: none (an idle system, on purpose)");
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The loads section: what each load did and what it cost.
pub fn render_loads(loads: &[crate::load::manager::LoadRecord]) -> String {
    let mut s = String::new();
    if loads.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "{:<34}{:>5}{:>9}{:>9}{:>11}{:>9}{:>11}{:>11}  work",
        "load", "runs", "user s", "sys s", "minflt", "majflt", "vol.cs", "invol.cs"
    );
    for l in loads {
        let u = &l.usage;
        let work: Vec<String> = l.counters.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let spec = if l.spec.chars().count() > 33 { format!("{}…", l.spec.chars().take(32).collect::<String>()) } else { l.spec.clone() };
        let _ = writeln!(
            s,
            "{:<34}{:>5}{:>9.2}{:>9.2}{:>11}{:>9}{:>11}{:>11}  {}{}",
            spec,
            l.runs,
            u.user_ns as f64 / 1e9,
            u.system_ns as f64 / 1e9,
            u.minor_faults,
            u.major_faults,
            u.voluntary_switches,
            u.involuntary_switches,
            work.join(" "),
            if l.failed { format!("  FAILED: {}", l.error.as_deref().unwrap_or("?")) } else { String::new() },
        );
    }
    s
}
