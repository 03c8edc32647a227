//! What `--trace` found, as text: per CPU, the worst traced latency and its explanation, with
//! the interference in its window (the summary, `rtgauge show`, `rtgauge report`).

use super::shown;
use crate::result::trace::{TraceCapture, TraceReport};
use crate::vocab::units::Nanos;
use std::fmt::Write;

/// The trace section of the summary (empty without `--trace`).
pub fn render(t: Option<&TraceReport>) -> String {
    let Some(t) = t else { return String::new() };
    let when = t.threshold_ns.map_or("every new worst case".to_string(), |ns| format!("new worst cases over {}", Nanos(ns)));
    let mut s = format!("\nTrace (--trace: the kernel's events around {when}, per CPU):\n");
    if t.captures.is_empty() {
        let why = t
            .error
            .clone()
            .unwrap_or_else(|| "no value stopped a trace (none after the warm-up, or none over the threshold)".into());
        let _ = writeln!(s, "  nothing traced: {}", shown(&why));
        return s;
    }
    for c in &t.captures {
        s += &capture(c);
    }
    if let Some(e) = &t.error {
        let _ = writeln!(s, "  (part of the trace failed: {})", shown(e));
    }
    s
}

fn capture(c: &TraceCapture) -> String {
    let label = shown(&c.series.as_ref().map_or(c.probe.clone(), |x| format!("{}.{x}", c.probe))).into_owned();
    let mut s = format!(
        "  cpu{} {label} ({}): {} late, window {:.6}–{:.6} s from the start of the run\n    {}\n",
        c.cpu,
        shown(&c.thread),
        Nanos(c.latency_ns),
        c.window_start_ns as f64 / 1e9,
        c.window_end_ns as f64 / 1e9,
        shown(&c.explanation)
    );
    let step = |label: &str, t: Option<u64>| t.map(|t| format!("{label} +{}", Nanos(t)));
    let steps: Vec<String> = [step("timer expired", c.timer_expired_ns), step("woken", c.woken_ns), step("ran", c.running_ns)]
        .into_iter()
        .flatten()
        .collect();
    if !steps.is_empty() {
        let _ = writeln!(s, "    after the deadline: {}", steps.join(", "));
    }
    for i in c.interference.iter().take(6) {
        let _ = writeln!(
            s,
            "    {:<7} {:<32} {:>4} × {:>12}  (longest {:>10})  {:>5.1} %",
            shown(&i.kind),
            shown(&i.name),
            i.count,
            Nanos(i.total_ns).to_string(),
            Nanos(i.max_ns).to_string(),
            i.share_percent
        );
    }
    if c.interference.len() > 6 {
        let _ = writeln!(s, "    ... and {} more (the result document lists them all)", c.interference.len() - 6);
    }
    let _ = writeln!(
        s,
        "    unexplained {} ({:.1} %)",
        Nanos(c.unexplained_ns),
        crate::trace::analysis::share(c.unexplained_ns, c.latency_ns)
    );
    let _ = write!(s, "    {} new worst case(s) traced", c.triggers);
    if c.untraced > 0 {
        let _ = write!(s, ", {} not (each replaced by a larger one while the CPU's other trace was being read)", c.untraced);
    }
    s.push('\n');
    s
}
