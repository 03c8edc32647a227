//! Results in other tools' formats, both ways. `rtgauge import` reads what cyclictest (`--json`
//! and its histogram output), jitterdebugger (`results.json`) and oslat (`--json`) wrote, and
//! rtgauge's own documents, into result documents for the store, marked as imported with their
//! source file and tool version; `rtgauge export` writes a stored run as JSON, CSV, JUnit or in
//! cyclictest's formats (`export`). A foreign file's figures are kept as its tool printed them:
//! min, average, maximum and cycle count exactly, the histogram at the tool's resolution.

pub mod cyclictest;
pub mod export;
pub mod foreign;
pub mod rteval;

use crate::aggregate::{new_histogram, percentile, LatencyStats};
use crate::result::{ProbeResult, RunResult, SCHEMA};
use crate::vocab::percentiles::Values;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::Path;

/// The most an imported file may hold.
pub const IMPORT_CAP: u64 = 256 << 20;

/// Where an imported run came from (`RunResult::imported`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    /// `cyclictest`, `jitterdebugger`, `oslat` or `rtgauge`.
    pub tool: String,
    /// As the file says (null: it does not say).
    pub tool_version: Option<String>,
    /// `cyclictest-json`, `cyclictest-hist`, `jitterdebugger-json`, `oslat-json`, `rtgauge-json`.
    pub format: String,
    /// The file, as given to `rtgauge import`.
    pub source: String,
    /// The tool's command line, when the file holds it.
    pub command_line: Option<String>,
}

/// One thread's figures as another tool printed them, in ns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForeignSeries {
    pub cpu: usize,
    /// Every measured cycle (loop), those beyond the histogram included.
    pub samples: u64,
    pub min_ns: Option<u64>,
    pub mean_ns: Option<f64>,
    pub max_ns: Option<u64>,
    /// `(value_ns, count)` as the tool binned them; `None`: the file has no histogram.
    pub histogram: Option<Vec<(u64, u64)>>,
    /// Samples beyond the histogram's range, absent from it.
    pub overflows: u64,
}

/// What another tool's file says.
#[derive(Debug, Clone, Default)]
pub struct Foreign {
    pub tool: &'static str,
    pub tool_version: Option<String>,
    pub format: &'static str,
    pub command_line: Option<String>,
    /// The rtgauge probe measuring the same thing (`timer`, `noise`).
    pub probe: &'static str,
    pub interval_ns: u64,
    /// How long it measured, when the file says (else cycles × interval).
    pub measured_ns: Option<u64>,
    /// RFC 3339 (the file's modification time when it does not say).
    pub started_at: String,
    pub ended_at: String,
    pub host: String,
    pub kernel_release: String,
    pub kernel_version: String,
    pub machine: String,
    pub realtime: Option<bool>,
    pub priority: Option<i32>,
    pub mlockall: bool,
    pub series: Vec<ForeignSeries>,
    /// What the reader must know about the figures, one sentence each.
    pub notes: Vec<String>,
}

/// Reads `path` (any supported format, told apart by its content) as a result document.
pub fn import(path: &Path) -> Result<RunResult, String> {
    let shown = path.display();
    let text = crate::scenario::userfile::read_text(path, IMPORT_CAP).map_err(|e| format!("cannot import {shown}: {e}"))?;
    let mtime = std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or_else(|_| std::time::SystemTime::now());
    let mtime = humantime::format_rfc3339_millis(mtime).to_string();
    let bad = |why: String| format!("{shown}: {why}");
    let foreign = if text.trim_start().starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(format!("not valid JSON ({e})")))?;
        if v["schema"].as_str().is_some_and(|s| s.starts_with("rtgauge.result.")) {
            let source = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            return own(v, &source.display().to_string()).map_err(bad);
        }
        foreign::from_json(&v, &mtime).map_err(bad)?
    } else {
        cyclictest::parse_hist(&text, &mtime).map_err(bad)?
    };
    let source = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    Ok(build(foreign, &source.display().to_string()))
}

/// An rtgauge result document, as it was, marked as imported from `source`.
fn own(v: serde_json::Value, source: &str) -> Result<RunResult, String> {
    let schema = v["schema"].as_str().unwrap_or_default().to_string();
    if schema != SCHEMA {
        return Err(format!("an rtgauge result of layout {schema}; this rtgauge imports {SCHEMA} (re-export it with the rtgauge that wrote it as cyclictest-json)"));
    }
    let mut r: RunResult = serde_json::from_value(v).map_err(|e| format!("not a valid {SCHEMA} document ({e})"))?;
    if r.imported.is_none() {
        let command_line = Some(r.command_line.join(" "));
        let tool_version = Some(r.tool_version.clone());
        r.imported = Some(Imported {
            tool: "rtgauge".into(),
            tool_version,
            format: "rtgauge-json".into(),
            source: source.into(),
            command_line,
        });
    }
    Ok(r)
}

/// The statistics of one foreign series: its figures as printed, percentiles from its histogram
/// (samples beyond it counted at the maximum: percentiles above them are upper bounds).
fn series_result(probe: &str, s: &ForeignSeries) -> ProbeResult {
    let mut hist = new_histogram();
    for &(v, n) in s.histogram.iter().flatten() {
        hist.saturating_record_n(v, n);
    }
    if let (Some(max), true) = (s.max_ns, s.histogram.is_some()) {
        hist.saturating_record_n(max, s.overflows);
    }
    let mm = s.min_ns.zip(s.max_ns).filter(|_| !hist.is_empty());
    let stats = LatencyStats {
        samples: s.samples,
        missed: 0,
        warmup_samples: 0,
        warmup_missed: 0,
        handoff_overflows: 0,
        min_ns: s.min_ns,
        mean_ns: s.mean_ns,
        sum_ns: s.mean_ns.map_or(0, |m| (m * s.samples as f64).round() as u64),
        percentiles: Values::from_fn(|p| mm.map(|(lo, hi)| percentile(&hist, p, lo, hi))),
        max_ns: s.max_ns,
        max_at_ns: None,
        bounds: None,
    };
    ProbeResult::new((probe, None), Some(s.cpu), &stats, &hist)
}

/// All series together: counts summed, extremes over all, the mean weighted by samples.
fn combined_result(probe: &str, series: &[ForeignSeries]) -> ProbeResult {
    let samples: u64 = series.iter().map(|s| s.samples).sum();
    let weighted: f64 = series.iter().filter_map(|s| s.mean_ns.map(|m| m * s.samples as f64)).sum();
    let all = ForeignSeries {
        cpu: 0,
        samples,
        min_ns: series.iter().filter_map(|s| s.min_ns).min(),
        mean_ns: (samples > 0 && series.iter().all(|s| s.mean_ns.is_some())).then(|| weighted / samples as f64),
        max_ns: series.iter().filter_map(|s| s.max_ns).max(),
        histogram: series
            .iter()
            .all(|s| s.histogram.is_some())
            .then(|| series.iter().flat_map(|s| s.histogram.iter().flatten().copied()).collect()),
        overflows: series.iter().map(|s| s.overflows).sum(),
    };
    ProbeResult { cpu: None, ..series_result(probe, &all) }
}

/// The result document of a foreign file.
fn build(f: Foreign, source: &str) -> RunResult {
    let cpus: Vec<usize> = f.series.iter().map(|s| s.cpu).collect();
    let periods = f.series.iter().map(|s| s.samples).max().unwrap_or(0);
    let (policy, priority) = match f.priority {
        Some(p) if p > 0 => ("fifo", p),
        _ => ("other", 0),
    };
    let model = ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT_LAZY", "PREEMPT"]
        .into_iter()
        .find(|m| f.kernel_version.contains(m))
        .unwrap_or("unknown");
    let realtime = f.realtime.unwrap_or(model == "PREEMPT_RT");
    let skeleton = json!({
        "schema": SCHEMA, "status": "complete", "interrupted_by": null,
        "started_at": f.started_at, "ended_at": f.ended_at, "monotonic_start_ns": 0,
        "measured_ns": f.measured_ns.unwrap_or(periods.saturating_mul(f.interval_ns)),
        "tool_version": env!("CARGO_PKG_VERSION"),
        "command_line": std::env::args().collect::<Vec<_>>(),
        "config": {
            "probes": [{"name": f.probe, "spec": format!("{} (imported)", f.tool), "cpus": cpus,
                        "interval_ns": f.interval_ns, "warmup_periods": 0, "periods": periods, "settings": []}],
            "interval_ns": f.interval_ns, "policy": policy, "priority": priority,
            "cpus": cpus, "duration_ns": f.measured_ns, "loops": if f.measured_ns.is_some() { None } else { Some(periods) },
            "warmup": {"ns": null, "samples": null, "periods": 0}, "mlockall": f.mlockall,
            "cycle_time_ns": null, "budget_percent": 25.0, "requirements": [], "cpu_dma_latency_us": null,
            "scenario": null, "load_source": "imported", "loads": [], "load_cpus": null
        },
        "system": {
            "hostname": f.host, "kernel_release": f.kernel_release, "kernel_version": f.kernel_version,
            "architecture": f.machine,
            "preemption": {"model": model, "realtime": realtime, "dynamic_mode": null,
                           "evidence": [format!("{} {}: uname -v: {}", f.tool, f.format, f.kernel_version)]},
            "cpu_model": "unknown", "online_cpus": [], "allowed_cpus": [], "clocksource": null,
            "sched_rt_runtime_us": null, "sched_rt_period_us": null, "effective_uid": 0,
            "rlimit_rtprio": null, "rlimit_memlock": null, "cap_sys_nice": false, "cap_ipc_lock": false,
            "cpu_cgroup": null, "cgroup_rt_runtime_us": null, "rt_priority_obtained": priority > 0,
            "mlockall_obtained": f.mlockall, "mlockall_error": null
        },
        "tuning": [], "loads": [], "containment": null, "phases": [], "probes": [], "combined": [],
        "verdict": {"passed": true, "criteria_given": false, "cycle_time_ns": null, "budget_percent": 25.0,
                    "shortest_cycle_time_ns": null, "checks": []},
        "warnings": f.notes,
    });
    let mut r: RunResult = serde_json::from_value(skeleton).expect("the skeleton is a result document");
    r.probes = f.series.iter().map(|s| series_result(f.probe, s)).collect();
    r.combined = vec![combined_result(f.probe, &f.series)];
    let facts = crate::verdict::RunFacts { status: r.status, failed_loads: Vec::new() };
    r.verdict = crate::verdict::evaluate(&r.probes, &r.combined, None, 0.25, &[], &facts);
    r.imported = Some(Imported {
        tool: f.tool.into(),
        tool_version: f.tool_version,
        format: f.format.into(),
        source: source.into(),
        command_line: f.command_line,
    });
    r
}

/// The value of option `short` (`-p 80`, `-p80`) or `long` (`--priority=80`, `--priority 80`)
/// in a command line.
pub fn option_value<'a>(command_line: &'a str, short: &str, long: &str) -> Option<&'a str> {
    let words: Vec<&str> = command_line.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        let next = || words.get(i + 1).copied();
        if *w == short || *w == long {
            return next();
        }
        if let Some(v) = w.strip_prefix(long).and_then(|v| v.strip_prefix('=')) {
            return Some(v);
        }
        if let Some(v) = w.strip_prefix(short).filter(|v| !v.is_empty() && !short.is_empty() && !w.starts_with("--")) {
            return Some(v);
        }
    }
    None
}

/// Whether a command line has flag `short` or `long`.
pub fn has_flag(command_line: &str, short: &str, long: &str) -> bool {
    command_line.split_whitespace().any(|w| w == short || w == long)
}

/// An RFC 2822 time (`Mon, 23 Nov 2026 09:09:22 +0000`, as rt-tests writes) as RFC 3339 UTC.
pub fn rfc2822_to_rfc3339(t: &str) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc2822(t.trim()).ok()?;
    Some(t.with_timezone(&chrono::Utc).format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_in_every_spelling() {
        let c = "cyclictest -m -p80 -i 500 --histogram=100 -t 2";
        assert_eq!(option_value(c, "-p", "--priority"), Some("80"));
        assert_eq!(option_value(c, "-i", "--interval"), Some("500"));
        assert_eq!(option_value(c, "-h", "--histogram"), Some("100"));
        assert_eq!(option_value(c, "-D", "--duration"), None);
        assert!(has_flag(c, "-m", "--mlockall") && !has_flag(c, "-q", "--quiet"));
    }

    #[test]
    fn rt_tests_times_become_rfc3339() {
        assert_eq!(rfc2822_to_rfc3339("Mon, 23 Nov 2026 09:09:22 +0100").as_deref(), Some("2026-11-23T08:09:22.000Z"));
        assert_eq!(rfc2822_to_rfc3339("yesterday"), None);
    }
}
