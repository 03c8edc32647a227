//! Stage six of the flow: the result document. One serialisable value per run holding how it
//! was obtained (command line, configuration, audited system), what was measured (per probe
//! and CPU, with the whole histogram) and the verdict. Its JSON form is versioned by
//! [`SCHEMA`] and documented field by field in `docs/result-schema.md`.
//!
//! This module owns the document: every type it serialises is defined here (the audited
//! system, the findings, the tuning, the loads, the timelines, the import's origin), and it
//! depends on `vocab` alone. The stages (`audit`, `tuning`, `load`, `aggregate`, `interchange`,
//! the run) build and fill these types; what they read or compute stays with them.

pub mod board;
pub mod findings;
pub mod forecast;
pub mod histogram;
pub mod imported;
pub mod load;
pub mod sweep;
pub mod system;
pub mod timeline;
pub mod trace;
pub mod tuning;
pub mod verdict;
pub use verdict::{Check, Verdict};

use findings::Finding;
use load::{Containment, LoadRecord};
use serde::{Deserialize, Serialize};
use system::SystemInfo;

/// Version of the result document's layout. Bump on any incompatible change.
pub const SCHEMA: &str = "rtgauge.result.v3";

/// Version of the document `rtgauge load --json` writes.
pub const LOAD_SCHEMA: &str = "rtgauge.load.v1";

/// The UUID of content whose SHA-256 is `sha256`: its first 16 bytes as a version 8 UUID (RFC
/// 9562, the version and variant bits set over them). The same file imported twice gets the
/// same UUID, and is stored once.
pub fn content_uuid(sha256: &[u8; 32]) -> uuid::Uuid {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&sha256[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}

/// [`content_uuid`] of a SHA-256 written in hex (as `imported.sha256` is); `None` when it is not one.
pub fn content_uuid_of_hex(sha256: &str) -> Option<uuid::Uuid> {
    let b = sha256.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let mut bytes = [0u8; 32];
    for (i, pair) in b.chunks_exact(2).enumerate() {
        bytes[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(content_uuid(&bytes))
}

/// What `rtgauge load` did: the loads on their own.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadResult {
    pub schema: String,
    pub tool_version: String,
    pub command_line: Vec<String>,
    /// As given; null: until every load ended.
    pub duration_ns: Option<u64>,
    pub interrupted_by: Option<String>,
    pub loads: Vec<LoadRecord>,
    pub containment: Option<Containment>,
}

/// Version of the document `rtgauge check --json` prints.
pub const CHECK_SCHEMA: &str = "rtgauge.check.v1";

/// What `rtgauge check` found: the audited system and one finding per setting.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckResult {
    pub schema: String,
    pub tool_version: String,
    pub command_line: Vec<String>,
    /// The CPUs the audit is about (the measured ones: SMT, IRQs, governor, idle states).
    pub cpus: Vec<usize>,
    /// The RT priority IRQ threads are compared with.
    pub priority: i32,
    pub system: SystemInfo,
    pub findings: Vec<Finding>,
}

/// Where a rotated run lies in its continuous measurement (`rtgauge run --rotate`): one series
/// of consecutive runs, measured without a gap, each closing its part of the measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Continuity {
    /// The series: one per start of rtgauge (a restart begins a new one).
    pub series: uuid::Uuid,
    /// Its place in the series, from 0.
    pub index: u64,
    /// The run before it in the series (none for the first).
    pub previous: Option<uuid::Uuid>,
    /// Where it starts, from the start of the series' period 0 (its offsets count from there).
    pub offset_ns: u64,
    /// The rotation (`--rotate`).
    pub rotate_ns: u64,
}

/// Whether the run measured everything it planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Complete,
    Partial,
}

/// The whole result of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    pub status: Status,
    /// Why the run ended early (`SIGINT`, `SIGTERM`), when it did.
    pub interrupted_by: Option<String>,
    pub started_at: String,
    pub ended_at: String,
    /// CLOCK_MONOTONIC at the start of period 0: `max_at_ns` and other offsets are relative
    /// to it, and adding it gives times comparable with kernel traces.
    pub monotonic_start_ns: u64,
    /// How long was measured after the warm-up: the planned time for a complete run, up to the
    /// stop for a partial one.
    pub measured_ns: u64,
    pub tool_version: String,
    pub command_line: Vec<String>,
    /// The run's identity across stores: a random (v4) UUID made when it was measured; for an
    /// imported run (any format, rtgauge's own included), made from the file's SHA-256
    /// ([`content_uuid`]). Absent in documents of older versions (a store gives them one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<uuid::Uuid>,
    /// The board the run was measured on, named and described (absent in documents of older
    /// versions and in imports of other tools' files without `--board`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<board::Board>,
    /// For a run imported from another tool's file (`rtgauge import`): which tool, version, format
    /// and file; absent for a run rtgauge measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<imported::Imported>,
    pub config: Config,
    pub system: SystemInfo,
    /// The audit of the settings that spoil latency, as `rtgauge check` gives it, taken before
    /// any tuning (absent in imported runs and documents of older versions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// Settings held during the run, each with whether it was applied and how it is undone.
    pub tuning: Vec<tuning::TuningRecord>,
    /// Every load the run was measured under: what, when, how it ended, what it did and cost.
    pub loads: Vec<LoadRecord>,
    /// How the loads were kept from outliving the run (null without loads).
    pub containment: Option<Containment>,
    /// The timeline cut at every load start and stop, with each probe's figures per phase
    /// (empty when no load has a phase).
    pub phases: Vec<PhaseResult>,
    pub probes: Vec<ProbeResult>,
    /// All CPUs of each probe together.
    pub combined: Vec<ProbeResult>,
    pub verdict: Verdict,
    /// What `--trace` found: per CPU, its worst traced latency explained (absent without
    /// `--trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<trace::TraceReport>,
    /// A rotated run's place in its continuous measurement (`--rotate`; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuous: Option<Continuity>,
    /// Everything that weakens the result (no mlockall, SCHED_OTHER, samples lost to the
    /// collector, ...), one sentence each.
    pub warnings: Vec<String>,
}

/// What the stages after the assembly change in a document, each named for what it does: the
/// document is written here and read everywhere (a unit test in the top crate,
/// `layers::a_document_changes_only_through_its_methods`, finds any other writer of these).
impl RunResult {
    /// The verdict the one maker of verdicts gave it (`verdict::judge`): at its assembly, on
    /// import, when a stored document is judged again.
    pub fn judged(&mut self, verdict: Verdict) {
        self.verdict = verdict;
    }

    /// The board it was measured on (the run's, or `import --board`).
    pub fn on_board(&mut self, board: board::Board) {
        self.board = Some(board);
    }

    /// Its identity across stores (`None` only in a store of an older layout): kept by the
    /// store that read it back, the next part of a rotated run, a file's content.
    pub fn identified(&mut self, uuid: Option<uuid::Uuid>) {
        self.uuid = uuid;
    }

    /// The command line as the result records it (a password in it taken out).
    pub fn ran_as(&mut self, command_line: Vec<String>) {
        self.command_line = command_line;
    }

    /// Where an imported run came from and what its file could not say.
    pub fn imported_as(&mut self, imported: imported::Imported) {
        self.imported = Some(imported);
    }

    /// A rotated run's part: its place in the series.
    pub fn part_of(&mut self, continuity: Continuity) {
        self.continuous = Some(continuity);
    }

    /// Its series' analyses (`forecast::analyses`): each series named gets its forecast, and
    /// its convergence unless it has one (a rotated run's part keeps the series' own).
    pub fn analysed(&mut self, made: Vec<forecast::Analysis>) {
        for a in made {
            let Some(p) = self.probes.get_mut(a.series) else { continue };
            if p.convergence.is_none() {
                p.convergence = a.convergence;
            }
            p.forecast = Some(a.forecast);
        }
    }

    /// Its series' timelines taken out, each with its index among `probes`: a store keeps them
    /// apart from the document ([`RunResult::timelines_put_back`] returns them).
    pub fn timelines_taken(&mut self) -> Vec<(usize, timeline::TimelineData)> {
        self.probes.iter_mut().enumerate().filter_map(|(i, p)| p.timeline.take().map(|t| (i, t))).collect()
    }

    /// The timelines [`RunResult::timelines_taken`] took out, put back in their series.
    pub fn timelines_put_back(&mut self, timelines: Vec<(usize, timeline::TimelineData)>) {
        for (i, t) in timelines {
            if let Some(p) = self.probes.get_mut(i) {
                p.timeline = Some(t);
            }
        }
    }

    /// Its analyses forgotten, to be made again by rtgauge from its figures (a document
    /// judged by rtgauge's own analysis, not the one it came with).
    pub fn unanalysed(&mut self) {
        for p in &mut self.probes {
            p.convergence = None;
            p.forecast = None;
        }
    }
}

/// One phase of the timeline: from one load start or stop (or a probe's step) to the next.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseResult {
    /// From the start of the run (`monotonic_start_ns`), warm-up included.
    pub start_ns: u64,
    pub end_ns: u64,
    /// The loads planned to run during the whole phase.
    pub loads: Vec<String>,
    /// What the probes with a timeline of their own did during it (`wakeup@0-1: 2000/s`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<String>,
    /// Per probe and CPU (warm-up excluded; `missed` counts the phase's periods passed unserved).
    pub probes: Vec<ProbeResult>,
    /// All CPUs of each probe together, one entry per probe.
    pub combined: Vec<ProbeResult>,
}

/// The configuration the run used, after defaults were applied.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    /// Every probe of the run, as `--measure` gave it and as it was resolved.
    pub probes: Vec<ProbeConfig>,
    pub interval_ns: u64,
    pub policy: crate::vocab::policy::Policy,
    pub priority: i32,
    /// `--dl-runtime` with `--policy deadline` (null: a tenth of each probe's interval, or not
    /// SCHED_DEADLINE).
    #[serde(default)]
    pub dl_runtime_ns: Option<u64>,
    /// `--dl-deadline` with `--policy deadline` (null: the period).
    #[serde(default)]
    pub dl_deadline_ns: Option<u64>,
    pub cpus: Vec<usize>,
    pub duration_ns: Option<u64>,
    pub loops: Option<u64>,
    pub warmup: WarmupConfig,
    pub mlockall: bool,
    pub cycle_time_ns: Option<u64>,
    pub budget_percent: f64,
    pub requirements: Vec<String>,
    /// The `/dev/cpu_dma_latency` request asked for (µs), null for `off`.
    pub cpu_dma_latency_us: Option<u32>,
    /// The scenario the run came from: `{name, source}` (source `built-in` or the file), or null.
    pub scenario: Option<ScenarioRef>,
    /// Where the loads came from: `default` (the worst-case mix), `given` (--load), `scenario` or `none`.
    pub load_source: String,
    /// The load specifications, as given or as the default mix spells them.
    pub loads: Vec<String>,
    /// CPUs the loads were restricted to (null: all).
    pub load_cpus: Option<Vec<usize>>,
    /// The timeline's window (absent in documents of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ns: Option<u64>,
    /// Whether a requirement may rely on a forecast whose independence and stationarity its
    /// data could not test (`Forecast::assumed`; `import --assume-independent`). Absent: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub assume_independent: bool,
}

/// One probe of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeConfig {
    pub name: String,
    /// As given (`timer:interval=500us@0`).
    pub spec: String,
    pub cpus: Vec<usize>,
    pub interval_ns: u64,
    pub warmup_periods: u64,
    /// Every period planned, warm-up included.
    pub periods: u64,
    /// Its settings as `key=value`.
    pub settings: Vec<String>,
}

/// Which scenario a run came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioRef {
    pub name: String,
    pub source: String,
}

/// The warm-up as asked for and as periods.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WarmupConfig {
    pub ns: Option<u64>,
    pub samples: Option<u64>,
    pub periods: u64,
}

/// One probe's figures on one CPU (or combined, with `cpu` null): for a probe with several
/// series (the wake-up chain's `chain`, `handler`, `task`), one series of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeResult {
    pub probe: String,
    /// Which of the probe's series; absent for a probe with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
    pub cpu: Option<usize>,
    pub samples: u64,
    pub missed: u64,
    pub warmup_samples: u64,
    pub warmup_missed: u64,
    pub handoff_overflows: u64,
    /// Page faults the measuring thread took after its warm-up (summed over CPUs in a combined
    /// entry): each one lengthens the wake-up it falls in. Absent in phases, in imported runs,
    /// in documents of older versions, and where the run ended within the warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_faults: Option<u64>,
    pub min_ns: Option<u64>,
    pub mean_ns: Option<f64>,
    /// `p50_ns`, `p90_ns`, ...: one field per reported percentile (`vocab::percentiles`), and
    /// `unresolved_percentiles`, those taken from too few values to resolve them (absent in
    /// documents written before it was kept).
    #[serde(flatten)]
    pub percentiles: crate::vocab::percentiles::Values,
    pub max_ns: Option<u64>,
    pub max_at_ns: Option<u64>,
    /// For a probe with bounds (the period loop): the values under and over them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<timeline::BoundCounts>,
    /// The probe's own counts (the UDP probe's `sent`, `late`), over the whole run; absent in
    /// phases and for probes without any.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub counts: std::collections::BTreeMap<String, u64>,
    /// What the values are when they are not latencies: `interval` (a UIO event source's time
    /// between wake-ups). Such values count in no worst case and no cycle-time rule; a
    /// requirement judges them only where it names their series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measures: Option<String>,
    /// For the noise probe: how much of the time the gaps took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseFigures>,
    /// For a rate sweep (`wakeup:rate=sweep`): each step and the highest rate sustained. Its
    /// figures above span every rate; they count in no worst case or cycle-time latency rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<sweep::SweepResult>,
    /// Per window of the run (`--window`): count, missed, maximum and p99, for latency against
    /// time; per CPU over the whole run only (absent in phases, combined entries and documents
    /// of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<timeline::TimelineData>,
    /// When each new maximum came and whether it is still rising (per CPU, from the timeline;
    /// absent in phases, combined entries, runs without a timeline and older documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convergence: Option<forecast::Convergence>,
    /// The forecast of the tail (per CPU, for latency series; absent elsewhere and in older
    /// documents, which get it when shown). See docs/forecast.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forecast: Option<forecast::Forecast>,
    pub histogram: histogram::HistogramData,
}

/// The noise floor in one scope: every gap over the threshold, summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseFigures {
    pub threshold_ns: u64,
    /// All gaps over the threshold together (those lost in the hand-off excepted).
    pub total_ns: u64,
    /// `total_ns` per second of measurement: 1 000 000 is 0.1 % of the CPU.
    pub ns_per_s: u64,
}

impl ProbeResult {
    /// Adds the noise figures of an event-accounted probe (gaps over `threshold_ns`) whose
    /// values sum to `sum_ns` over `span_ns` of measurement.
    pub fn with_noise(mut self, threshold_ns: u64, sum_ns: u64, span_ns: u64) -> ProbeResult {
        let per_second = if span_ns == 0 { 0 } else { (sum_ns as u128 * 1_000_000_000 / span_ns as u128) as u64 };
        self.noise = Some(NoiseFigures { threshold_ns, total_ns: sum_ns, ns_per_s: per_second });
        self
    }

    /// Whether its maximum is a latency that counts in a worst case (and the shortest cycle
    /// time): not a cycle length judged by bounds, not an interval, not a sweep across rates.
    pub fn in_worst_case(&self) -> bool {
        self.bounds.is_none() && self.measures.is_none() && self.sweep.is_none()
    }

    /// Where this result stands, for messages: `cpu3` or `all CPUs`.
    pub fn scope(&self) -> String {
        self.cpu.map_or("all".to_string(), |c| format!("cpu{c}"))
    }

    /// The probe with its series, as requirements and messages name it: `timer`, `wakeup.task`.
    pub fn label(&self) -> String {
        match &self.series {
            Some(s) => format!("{}.{s}", self.probe),
            None => self.probe.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    /// The document has one owner: this module names no stage, only the shared vocabulary
    /// (`crate::vocab`) and itself; the stages fill its types.
    #[test]
    fn the_result_depends_on_the_vocabulary_alone() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/result");
        // (spelt in two pieces, so that this test does not name a path itself)
        let needle = ["crate", "::"].concat();
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                for (i, _) in line.match_indices(&needle) {
                    let rest = &line[i + needle.len()..];
                    assert!(
                        rest.starts_with("vocab") || rest.starts_with("result"),
                        "{}:{}: the result names another module: {line}",
                        path.display(),
                        n + 1
                    );
                }
            }
            files += 1;
        }
        assert!(files >= 10, "read {files} files of {}", dir.display());
    }
}
