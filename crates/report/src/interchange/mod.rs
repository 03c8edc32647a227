//! Results in other tools' formats, both ways. `rtgauge import` reads what cyclictest (`--json`,
//! its histogram and `-v` output), jitterdebugger (`results.json`) and oslat (`--json` and its
//! text output) wrote, and
//! rtgauge's own documents, into result documents for the store, marked as imported with the
//! file rtgauge read and its SHA-256; `rtgauge export` writes a stored run as JSON, CSV, JUnit or
//! in cyclictest's formats (`export`). A foreign file's figures are kept as its tool printed
//! them: min, average, maximum and cycle count exactly, the histogram at the tool's resolution.
//!
//! Nothing read is believed unchecked: an imported result must be one its tool could have
//! printed (every value in range, min ≤ mean and every percentile ≤ max, the histogram's total
//! equal to the count, no arithmetic that wraps) or it is refused naming the first
//! inconsistency; its verdict is rtgauge's, recomputed from its figures ([`own`]). Files are
//! streamed ([`read`]): memory follows what is kept, not the file's size.

mod counts;
pub mod cyclictest;
pub mod export;
pub mod foreign;
pub mod oslat_text;
mod own;
pub use own::verdict_of;

/// Whether a stored result document is one rtgauge could have written (see
/// `own::check_stored`): what a run copied between stores is held to, as an import is.
pub use own::check_stored as check_document;
pub mod read;
pub mod rteval;

use crate::aggregate::{percentile, probe_result, LatencyStats};
use crate::result::histogram::new_histogram;
use crate::result::imported::{Imported, UNKNOWABLE};
use crate::result::system::{Preemption, SystemInfo};
use crate::result::{Config, ProbeConfig, ProbeResult, RunResult, Status, Verdict, WarmupConfig, SCHEMA};
use crate::vocab::percentiles::Values;
use crate::vocab::policy::Policy;
use crate::vocab::units::us;
use crate::vocab::Error;
use counts::Counts;
use serde::Deserialize;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// The most an imported file may hold. It bounds only how long reading takes: files are
/// streamed, and memory follows what is kept (the histograms, at most [`MAX_SERIES`] of them).
pub const IMPORT_CAP: u64 = 256 << 20;

/// The most threads or CPUs an imported file may hold.
pub const MAX_SERIES: usize = 4096;

/// CPU numbers an imported file may name: below this (Linux's largest `NR_CPUS`).
pub const MAX_CPU: usize = 8192;

/// One thread's figures as another tool printed them, in ns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForeignSeries {
    pub cpu: usize,
    /// Every measured cycle (loop), those beyond the histogram included.
    pub samples: u64,
    pub min_ns: Option<u64>,
    pub mean_ns: Option<f64>,
    pub max_ns: Option<u64>,
    /// The counts as the tool binned them; `None`: the file has no histogram.
    pub histogram: Option<Counts>,
    /// Samples beyond the histogram's range, absent from it.
    pub overflows: u64,
    /// Its own interval, where the file tells one per thread (cyclictest's `-d`); `None`: the
    /// file's ([`Foreign::interval_ns`]).
    pub interval_ns: Option<u64>,
}

impl ForeignSeries {
    /// Whether the figures are ones a tool could have printed, at its resolution `unit_ns`
    /// (the tool truncates to it): min ≤ mean ≤ max, the histogram's values within min..max,
    /// and its total with the overflows equal to the count. `Err` names the first that is not.
    pub fn check(&self, what: &str, unit_ns: u64) -> Result<(), crate::vocab::Error> {
        self.check_text(what, unit_ns).map_err(crate::vocab::Error::Invalid)
    }

    /// [`Self::check`], its failure as text.
    fn check_text(&self, what: &str, unit_ns: u64) -> Result<(), String> {
        if let (Some(min), Some(max)) = (self.min_ns, self.max_ns) {
            if min > max {
                return Err(format!("{what}: its minimum ({} µs) is above its maximum ({} µs)", us(min), us(max)));
            }
        }
        if let (Some(m), Some(min), Some(max)) = (self.mean_ns, self.min_ns, self.max_ns) {
            let unit = unit_ns as f64;
            if self.samples > 0 && (m + unit < min as f64 || m > max as f64 + unit) {
                return Err(format!(
                    "{what}: its average ({:.3} µs) is outside its minimum and maximum ({} to {} µs)",
                    m / 1000.0,
                    us(min),
                    us(max)
                ));
            }
        }
        if let Some(h) = &self.histogram {
            if h.total().checked_add(self.overflows) != Some(self.samples) {
                return Err(format!(
                    "{what}: its histogram holds {} samples and {} beyond it, but its count is {}",
                    h.total(),
                    self.overflows,
                    self.samples
                ));
            }
            if let Some((lo, hi)) = h.range() {
                if let Some(min) = self.min_ns.filter(|&min| lo < min) {
                    return Err(format!(
                        "{what}: its histogram holds a value of {} µs, below its minimum ({} µs)",
                        us(lo),
                        us(min)
                    ));
                }
                if let Some(max) = self.max_ns.filter(|&max| hi > max) {
                    return Err(format!(
                        "{what}: its histogram holds a value of {} µs, above its maximum ({} µs)",
                        us(hi),
                        us(max)
                    ));
                }
            }
        }
        if self.samples > 0 && (self.min_ns.is_none() || self.max_ns.is_none()) {
            return Err(format!("{what}: {} samples but no minimum or maximum", self.samples));
        }
        Ok(())
    }
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
    /// The fields of [`UNKNOWABLE`] the file does not state.
    pub unknown: Vec<&'static str>,
    /// The unit the tool truncated its values to, in ns (`Imported::resolution_ns`).
    pub resolution_ns: u64,
}

impl Foreign {
    /// A run read from `tool`'s text output (`format`): its `series`, the fields it does not
    /// state (`unknown`), the file's time for the run's, nothing of the system it ran on, its
    /// values in µs (which cyclictest and oslat print whole).
    pub fn of_text(
        tool: &'static str,
        format: &'static str,
        series: Vec<ForeignSeries>,
        unknown: Vec<&'static str>,
        mtime: &str,
    ) -> Foreign {
        Foreign {
            tool,
            format,
            probe: crate::probe::registry::of_tool(tool),
            started_at: mtime.into(),
            ended_at: mtime.into(),
            host: "unknown".into(),
            kernel_release: "unknown".into(),
            kernel_version: "unknown".into(),
            machine: "unknown".into(),
            series,
            unknown,
            resolution_ns: 1000,
            ..Default::default()
        }
    }
}

/// Reads `path` (any supported format, told apart by its content) as a result document. The
/// file is opened once; a JSON file is read twice from that open file (first skipping its
/// histograms, to learn its format and unit, then whole); the hash is of the bytes imported.
pub fn import(path: &Path) -> Result<RunResult, Error> {
    let shown = path.display();
    let mut file = read::open(path, IMPORT_CAP).map_err(|e| e.context(format_args!("cannot import {shown}")))?;
    let mtime = file.file.metadata().and_then(|m| m.modified()).unwrap_or_else(|_| std::time::SystemTime::now());
    let mtime = humantime::format_rfc3339_millis(mtime).to_string();
    // (what a part below said, named by the file; what does not read in it; what could not be read)
    let bad = |e: Error| e.context(&shown);
    let invalid = |why: String| Error::Invalid(format!("{shown}: {why}"));
    let failed = |why: String| Error::System(format!("{shown}: {why}"));
    let mut first = BufReader::new(file.reader(IMPORT_CAP).map_err(bad)?);
    let json = first_byte(&mut first).map_err(failed)? == Some(b'{');
    if !json {
        let oslat = oslat_text::is_oslat(first.fill_buf().map_err(|e| failed(e.to_string()))?);
        let mut input = BufReader::new(file.reader(IMPORT_CAP).map_err(bad)?);
        let foreign = if oslat {
            oslat_text::parse(&mut input, &mtime).map_err(bad)?
        } else {
            cyclictest::parse_hist(&mut input, &mtime).map_err(bad)?
        };
        let sha256 = input.into_inner().finish().map_err(bad)?;
        return build(foreign, &file.path, sha256).map_err(invalid);
    }
    let sniffed = foreign::Doc::sniff(read::JsonCaps::new(first)).map_err(|e| invalid(read::json_error(&e)))?;
    if sniffed.schema.as_deref().is_some_and(|s| s.starts_with("rtgauge.result.")) {
        let schema = sniffed.schema.unwrap_or_default();
        if schema != SCHEMA {
            return Err(invalid(format!(
                "an rtgauge result of another layout; this rtgauge imports {SCHEMA} (re-export it with the rtgauge \
                 that wrote it as cyclictest-json)"
            )));
        }
        let mut input = BufReader::new(read::JsonCaps::new(file.reader(IMPORT_CAP).map_err(bad)?));
        let mut de = serde_json::Deserializer::from_reader(&mut input);
        let r = RunResult::deserialize(&mut de)
            .and_then(|r| de.end().map(|()| r))
            .map_err(|e| invalid(format!("not a valid {SCHEMA} document: {}", read::json_error(&e))))?;
        let sha256 = input.into_inner().into_inner().finish().map_err(bad)?;
        return own::import(r, &file.path, sha256).map_err(bad);
    }
    let how = sniffed.reading().map_err(bad)?;
    let mut input = BufReader::new(read::JsonCaps::new(file.reader(IMPORT_CAP).map_err(bad)?));
    let doc = foreign::Doc::read(&mut input, how).map_err(|e| invalid(read::json_error(&e)))?;
    let sha256 = input.into_inner().into_inner().finish().map_err(bad)?;
    let foreign = foreign::from_doc(&doc, how, &mtime).map_err(bad)?;
    build(foreign, &file.path, sha256).map_err(invalid)
}

/// The first byte that is not white space (`None`: the file is empty or blank).
fn first_byte(r: &mut dyn BufRead) -> Result<Option<u8>, String> {
    loop {
        let buf = r.fill_buf().map_err(|e| e.to_string())?;
        let Some(&b) = buf.first() else { return Ok(None) };
        if !b.is_ascii_whitespace() {
            return Ok(Some(b));
        }
        r.consume(1);
    }
}

/// The statistics of one foreign series: its figures as printed, percentiles from its histogram
/// (samples beyond it counted at the maximum: percentiles above them are upper bounds).
fn series_result(probe: &str, s: &ForeignSeries) -> ProbeResult {
    let mut hist = new_histogram();
    if let Some(h) = &s.histogram {
        h.record_into(&mut hist);
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
        // (at most 2^53 samples of at most an hour: the product is finite; the cast saturates)
        sum_ns: s.mean_ns.map_or(0, |m| (m * s.samples as f64).round() as u64),
        percentiles: Values::from_fn(|p| mm.map(|(lo, hi)| percentile(&hist, p, lo, hi))),
        max_ns: s.max_ns,
        max_at_ns: None,
        bounds: None,
    };
    probe_result((probe, None), Some(s.cpu), &stats, crate::result::histogram::HistogramData::encode(&hist))
}

/// All series together: counts summed, extremes over all, the mean weighted by samples.
fn combined_result(probe: &str, series: &[ForeignSeries]) -> Result<ProbeResult, String> {
    let too_many = || "its threads together hold more than a measurement counts (at most 2^53)".to_string();
    let mut samples = 0u64;
    let mut overflows = 0u64;
    for s in series {
        samples = samples.checked_add(s.samples).filter(|&n| n <= counts::MAX_COUNT).ok_or_else(too_many)?;
        overflows = overflows.checked_add(s.overflows).ok_or_else(too_many)?;
    }
    let weighted: f64 = series.iter().filter_map(|s| s.mean_ns.map(|m| m * s.samples as f64)).sum();
    let histogram = if series.iter().all(|s| s.histogram.is_some()) {
        let mut all = Counts::default();
        for h in series.iter().filter_map(|s| s.histogram.as_ref()) {
            all.merge(h)?;
        }
        Some(all)
    } else {
        None
    };
    let all = ForeignSeries {
        cpu: 0,
        samples,
        min_ns: series.iter().filter_map(|s| s.min_ns).min(),
        mean_ns: (samples > 0 && series.iter().all(|s| s.mean_ns.is_some())).then(|| weighted / samples as f64),
        max_ns: series.iter().filter_map(|s| s.max_ns).max(),
        histogram,
        overflows,
        interval_ns: None,
    };
    Ok(ProbeResult { cpu: None, ..series_result(probe, &all) })
}

/// The result document of a foreign file, read from `source` (its SHA-256 `sha256`). Its
/// verdict is rtgauge's: no criteria (the file gives none rtgauge could judge by), failing a
/// CPU that measured nothing.
fn build(f: Foreign, source: &str, sha256: String) -> Result<RunResult, String> {
    if f.series.is_empty() {
        return Err("it holds no thread or CPU: nothing was measured".into());
    }
    let cpus: Vec<usize> = f.series.iter().map(|s| s.cpu).collect();
    let periods = f.series.iter().map(|s| s.samples).max().unwrap_or(0);
    let (policy, priority) = match f.priority {
        Some(p) if p > 0 => (Policy::Fifo, p),
        _ => (Policy::Other, 0),
    };
    let model = ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT_LAZY", "PREEMPT"]
        .into_iter()
        .find(|m| f.kernel_version.contains(m))
        .unwrap_or("unknown");
    let realtime = f.realtime.unwrap_or(model == "PREEMPT_RT");
    let mut unknown = f.unknown.clone();
    if f.realtime.is_none() && model == "unknown" {
        unknown.push("system.preemption");
    }
    // Each thread's interval (cyclictest's threads are `-d` apart): a probe entry per interval.
    let interval = |s: &ForeignSeries| s.interval_ns.unwrap_or(f.interval_ns);
    let mut intervals: Vec<u64> = Vec::new();
    for s in &f.series {
        if !intervals.contains(&interval(s)) {
            intervals.push(interval(s));
        }
    }
    let probes: Vec<ProbeConfig> = intervals
        .iter()
        .map(|&i| {
            let of: Vec<&ForeignSeries> = f.series.iter().filter(|s| interval(s) == i).collect();
            let mut cpus: Vec<usize> = of.iter().map(|s| s.cpu).collect();
            cpus.dedup();
            ProbeConfig {
                name: f.probe.to_string(),
                spec: format!("{} (imported)", f.tool),
                cpus,
                interval_ns: i,
                warmup_periods: 0,
                periods: of.iter().map(|s| s.samples).max().unwrap_or(0),
                settings: Vec::new(),
            }
        })
        .collect();
    // How long it measured: as the file says, else its longest thread's cycles × interval.
    let measured = f.measured_ns.or_else(|| {
        let each: Option<Vec<u64>> =
            f.series.iter().map(|s| (interval(s) > 0).then(|| s.samples.saturating_mul(interval(s)))).collect();
        each.map(|e| e.into_iter().max().unwrap_or(0))
    });
    if measured.is_none() {
        unknown.push("measured_ns");
    }
    let config = Config {
        probes,
        interval_ns: f.series.first().map_or(f.interval_ns, interval),
        policy,
        priority,
        dl_runtime_ns: None,
        dl_deadline_ns: None,
        cpus,
        duration_ns: f.measured_ns,
        loops: if f.measured_ns.is_some() { None } else { Some(periods) },
        warmup: WarmupConfig { ns: None, samples: None, periods: 0 },
        mlockall: f.mlockall,
        cycle_time_ns: None,
        budget_percent: 25.0,
        requirements: Vec::new(),
        cpu_dma_latency_us: None,
        scenario: None,
        load_source: "imported".to_string(),
        loads: Vec::new(),
        load_cpus: None,
        window_ns: None,
        assume_independent: false,
    };
    let system = SystemInfo {
        hostname: f.host,
        kernel_release: f.kernel_release,
        architecture: f.machine,
        preemption: Preemption {
            model: model.to_string(),
            realtime,
            dynamic_mode: None,
            evidence: vec![format!("{} {}: uname -v: {}", f.tool, f.format, f.kernel_version)],
        },
        kernel_version: f.kernel_version,
        cpu_model: "unknown".to_string(),
        online_cpus: Vec::new(),
        allowed_cpus: Vec::new(),
        clocksource: None,
        sched_rt_runtime_us: None,
        sched_rt_period_us: None,
        effective_uid: 0,
        rlimit_rtprio: None,
        rlimit_memlock: None,
        cap_sys_nice: false,
        cap_ipc_lock: false,
        cpu_cgroup: None,
        cgroup_rt_runtime_us: None,
        rt_priority_obtained: priority > 0,
        mlockall_obtained: f.mlockall,
        mlockall_error: None,
    };
    let verdict = Verdict {
        passed: true,
        criteria_given: false,
        cycle_time_ns: None,
        budget_percent: 25.0,
        shortest_cycle_time_ns: None,
        checks: Vec::new(),
        rules: Vec::new(),
        support: Vec::new(),
    };
    let probes = f.series.iter().map(|s| series_result(f.probe, s)).collect();
    let combined = vec![combined_result(f.probe, &f.series)?];
    let mut r = RunResult {
        schema: SCHEMA.to_string(),
        status: Status::Complete,
        interrupted_by: None,
        started_at: f.started_at,
        ended_at: f.ended_at,
        monotonic_start_ns: 0,
        measured_ns: measured.unwrap_or(0),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        command_line: crate::vocab::secrets::scrub_command_line(std::env::args().collect()),
        uuid: crate::result::content_uuid_of_hex(&sha256),
        board: None,
        imported: None,
        config,
        system,
        findings: Vec::new(),
        tuning: Vec::new(),
        loads: Vec::new(),
        containment: None,
        phases: Vec::new(),
        probes,
        combined,
        verdict,
        trace: None,
        continuous: None,
        warnings: f.notes,
    };
    let judged = crate::verdict::judge(&r, &crate::verdict::Criteria::none());
    r.judged(judged);
    r.imported_as(Imported {
        tool: f.tool.into(),
        tool_version: f.tool_version,
        format: f.format.into(),
        source: source.into(),
        sha256: Some(sha256),
        command_line: f.command_line,
        resolution_ns: Some(f.resolution_ns.max(1)),
        unknown: UNKNOWABLE.iter().filter(|u| unknown.contains(u)).map(|u| u.to_string()).collect(),
    });
    Ok(r)
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
