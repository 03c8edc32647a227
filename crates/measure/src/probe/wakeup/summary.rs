//! The wake-up probe's section of the summary: the chain's events per CPU (posted, and lost
//! before the task took them) and a rate sweep's steps.

use super::{NAME, SERIES};
use crate::result::{ProbeResult, RunResult};
use crate::vocab::table::table;
use crate::vocab::units::{opt_us, us};
use crate::vocab::Count;
use std::fmt::Write;

/// Its section of the summary.
pub fn summary(r: &RunResult) -> String {
    chain_report(&r.probes) + &sweep_report(&r.probes)
}

/// The wake-up chain's events per CPU: posted by the handler, and lost before the task took
/// them (the ARM9/ARM11 paper's missed-event count): `chain.missed − handler.missed`.
fn chain_report(probes: &[ProbeResult]) -> String {
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
            "  {}: {} taken by the task; {} the handler missed; {} posted but never taken",
            c.scope(),
            Count(c.samples, "event"),
            if c.sweep.is_some() { Count(h.missed, "event") } else { Count(h.missed, "period") },
            Count(c.missed.saturating_sub(h.missed), "event")
        );
    }
    s
}

/// A rate sweep per CPU: each step's events, misses and worst case against its bound, and the
/// highest rate sustained (the ARM9/ARM11 paper's question).
fn sweep_report(probes: &[ProbeResult]) -> String {
    let mut s = String::new();
    let swept = probes
        .iter()
        .filter(|p| p.cpu.is_some() && crate::probe::registry::is_headline(&p.probe, p.series.as_deref()))
        .filter_map(|p| p.sweep.as_ref().map(|s| (p, s)));
    for (p, sweep) in swept {
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
