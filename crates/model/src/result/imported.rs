//! Where an imported run came from, as the result document records it
//! (`RunResult::imported`): the tool, its format, the file rtgauge read and its hash, and the
//! fields the file leaves unstated. The importers (`interchange`) fill it in.

use serde::{Deserialize, Serialize};

/// Where an imported run came from (`RunResult::imported`): what rtgauge saw, not what the file
/// says of itself (except the tool's version and command line, which only the file knows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    /// `cyclictest`, `jitterdebugger`, `oslat` or `rtgauge`.
    pub tool: String,
    /// As the file says (null: it does not say).
    pub tool_version: Option<String>,
    /// `cyclictest-json`, `cyclictest-hist`, `cyclictest-verbose`, `jitterdebugger-json`, `oslat-json`, `oslat-text`, `rtgauge-json`.
    pub format: String,
    /// The file rtgauge read: the path of the file it opened, links resolved.
    pub source: String,
    /// The SHA-256 (hex) of the bytes rtgauge read and imported (absent in documents of older
    /// versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The tool's command line, when the file holds it.
    pub command_line: Option<String>,
    /// The resolution of the file's values in ns: each value v it records stands for the
    /// latencies in [v, v + resolution) (cyclictest, oslat and jitterdebugger truncate to their
    /// unit: 1000 for µs). Absent in documents of older versions ([`Imported::resolution`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution_ns: Option<u64>,
    /// The fields of the document the file does not state (`config.policy`, `measured_ns`, ...,
    /// see [`UNKNOWABLE`]): their values are placeholders, and every report shows them as unknown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

/// The fields an imported file may leave unstated (`Imported::unknown`).
pub const UNKNOWABLE: [&str; 8] = [
    "config.policy",
    "config.priority",
    "config.mlockall",
    "config.interval_ns",
    "config.warmup",
    "measured_ns",
    "started_at",
    "system.preemption",
];

/// The coarsest resolution an imported file's values may have (a tool's unit: 1 ms).
pub const MAX_RESOLUTION_NS: u64 = 1_000_000;

impl Imported {
    /// Whether the values are another tool's (its file, or an rtgauge document of one): their
    /// forecast may rest on what such a file cannot test (`forecast::Series::foreign`).
    pub fn foreign(&self) -> bool {
        self.tool != "rtgauge" || self.resolution() > 1
    }

    /// The resolution of the file's values in ns ([`Imported::resolution_ns`]; for a document
    /// of an older version, the tool's: 1 for rtgauge's own, cyclictest's µs unless its command
    /// line has `--nsecs`, µs for the others).
    pub fn resolution(&self) -> u64 {
        let ns = |c: &str| c.split_whitespace().any(|w| w == "-N" || w == "--nsecs");
        self.resolution_ns.filter(|&r| r > 0).map(|r| r.min(MAX_RESOLUTION_NS)).unwrap_or(match self.tool.as_str() {
            "rtgauge" => 1,
            "cyclictest" if self.command_line.as_deref().is_some_and(ns) => 1,
            _ => 1000,
        })
    }

    /// Whether the file leaves `field` (one of [`UNKNOWABLE`]) unstated.
    pub fn unknown(&self, field: &str) -> bool {
        self.unknown.iter().any(|u| u == field)
    }
}

/// Whether `r` is an imported run whose file leaves `field` unstated.
pub fn unknown(r: &super::RunResult, field: &str) -> bool {
    r.imported.as_ref().is_some_and(|i| i.unknown(field))
}
