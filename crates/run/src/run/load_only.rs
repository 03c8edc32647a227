//! `rtgauge load` through the run's stages with no probe (loads → coordinate → report), like
//! stress or hackbench on their own. Exit status 0, or 1 when a load failed.

use super::keep::say;
use super::measure::{coordinate, END_SLACK};
use super::setup::start_loads;
use super::signals::Interrupts;
use super::warnings::{finish_watchdog, once};
use super::{EXIT_FAILED, EXIT_PASSED};
use crate::load::spec::LoadSpec;
use crate::report::json::JsonSink;
use crate::result::load::Generator;
use crate::sys;
use anyhow::Result;

/// What `rtgauge load` runs: the loads, on which CPUs, for how long.
pub struct LoadPlan {
    pub specs: Vec<LoadSpec>,
    pub cpus: Option<Vec<usize>>,
    /// `None`: until every (one-shot) load has ended.
    pub duration_ns: Option<u64>,
}

/// Runs `rtgauge load`: the same stages as a run with no probe (plan → loads → coordinate →
/// report), like stress or hackbench on their own. Exit status 0, or 1 when a load failed.
pub fn load_only(plan: LoadPlan, json: Option<&crate::scenario::JsonTarget>, command_line: Vec<String>) -> Result<u8> {
    let sink = json.map(JsonSink::open).transpose()?;
    let interrupts = Interrupts::install()?;
    let mut warnings = Vec::new();
    let (mut loads, mut watchdog) =
        start_loads(&plan.specs, plan.cpus.clone(), plan.duration_ns.is_none(), None, &interrupts, &mut warnings)?;
    let origin = sys::time::monotonic_ns();
    loads.set_origin(origin);
    let end = plan.duration_ns.map(|d| origin + d);
    if let (Some(w), Some(end)) = (&mut watchdog, end) {
        w.arm(end + END_SLACK.as_nanos() as u64);
    }
    coordinate(&mut loads, &interrupts, 50, |now, loads| {
        if end.is_some_and(|e| now >= e) || loads.all_done() {
            return None;
        }
        Some(end.unwrap_or(now + 50_000_000))
    });
    let records = loads.records();
    finish_watchdog(watchdog, &mut warnings);
    for w in &once(warnings) {
        crate::report::out::err_line(&format!("rtgauge: warning: {w}"));
    }
    report_loads(&plan, &records, sink, command_line, interrupts.which(), loads.containment())
}

/// The report of `rtgauge load`: hackbench's own lines, what each load did, and the document.
fn report_loads(
    plan: &LoadPlan,
    records: &[crate::result::load::LoadRecord],
    sink: Option<JsonSink>,
    command_line: Vec<String>,
    interrupted_by: Option<String>,
    containment: Option<crate::result::load::Containment>,
) -> Result<u8> {
    let mut text = String::new();
    for (s, r) in plan.specs.iter().zip(records) {
        if let Generator::Hackbench { groups, fds, size, loops, pipe, threads } = s.generator {
            let h = crate::load::gen::hackbench::Hackbench { groups, fds, size, loops, pipe, threads };
            text += &format!("{}\n", h.banner());
            for t in &r.round_times_s {
                text += &format!("Time: {t:.3}\n");
            }
        }
    }
    text += &crate::report::summary::render_loads(records);
    let on_stderr = sink.as_ref().is_some_and(JsonSink::is_stdout);
    let said = say(on_stderr, &text);
    if let Some(sink) = sink {
        sink.write(&crate::result::LoadResult {
            schema: crate::result::LOAD_SCHEMA.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            command_line,
            duration_ns: plan.duration_ns,
            interrupted_by,
            loads: records.to_vec(),
            containment,
        })?;
    }
    if !on_stderr {
        said.map_err(crate::report::out::OutputError::from)?;
    }
    Ok(if records.iter().any(|r| r.failed) { EXIT_FAILED } else { EXIT_PASSED })
}
