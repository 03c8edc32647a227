//! The audit as text: `rtgauge check`'s table of findings with the fix for each one to act on,
//! and the few lines a run's summary gives it.

use super::shown;
use crate::result::findings::{tally, Finding, Severity};
use std::fmt::Write;

/// The whole audit: a row per finding, then what to do about each warning and bad one.
pub fn render(findings: &[Finding]) -> String {
    // Cells are shown escaped by the table; the lines below escape theirs (a stored run's
    // findings are read from its file).
    let rows = findings.iter().map(|f| vec![f.severity.label().to_string(), f.id.clone(), f.observed.clone()]).collect();
    let mut s = super::summary::table(&["", "check", "observed"], 0..0, rows);
    let act: Vec<&Finding> = findings.iter().filter(|f| f.severity >= Severity::Warn).collect();
    if !act.is_empty() {
        let _ = writeln!(s, "\nTo act on (worst first):");
    }
    let mut act = act;
    act.sort_by_key(|f| std::cmp::Reverse(f.severity));
    for f in act {
        s += &details(f);
    }
    let _ = writeln!(s, "\n{}.", tally(findings));
    s
}

/// One finding to act on: what, why, the fix now and for good.
fn details(f: &Finding) -> String {
    let mut s = format!("\n{} {} — {}: {}\n", f.severity.label(), shown(&f.id), shown(&f.title), shown(&f.observed));
    let _ = writeln!(s, "  why:  {}", shown(&f.why));
    if let Some(fix) = &f.fix {
        let _ = writeln!(s, "  now:  {}", shown(fix));
    }
    if let Some(p) = &f.persistent {
        let _ = writeln!(s, "  keep: {}", shown(p));
    }
    s
}

/// The audit in a run's summary: the tally and each bad or warning finding on one line.
pub fn summary_lines(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return String::new();
    }
    let mut s = format!("\nAudit ({}; rtgauge check explains each with its fix):\n", tally(findings));
    let mut act: Vec<&Finding> = findings.iter().filter(|f| f.severity >= Severity::Warn).collect();
    act.sort_by_key(|f| std::cmp::Reverse(f.severity));
    for f in act {
        let _ = writeln!(s, "  {:<4} {}: {}", f.severity.label(), shown(&f.id), shown(&f.observed));
    }
    s
}
