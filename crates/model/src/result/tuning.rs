//! The settings a run held, as the result document records them (`RunResult::tuning`): each
//! with what it was, whether it was applied, and how and whether it was put back. The tuning
//! guards (`tuning`) apply them and fill these in.

use serde::{Deserialize, Serialize};

/// What a tuning guard did, as recorded in the result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TuningRecord {
    /// The setting, e.g. `/dev/cpu_dma_latency`.
    pub setting: String,
    /// The value asked for, e.g. `0us`, and what was done.
    pub value: String,
    /// What it was before (absent for the PM QoS request, which only adds a request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<String>,
    pub applied: bool,
    /// How and when the original state comes back.
    pub restore: String,
    /// Why it could not be applied, when it was not.
    pub error: Option<String>,
    /// Whether it was put back at the end of the run (absent where nothing was changed, and for
    /// the PM QoS request, which the kernel drops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<bool>,
    /// Each item of a setting that covers many (the interrupts `--tune` moves), with what it was
    /// and what became of it; `value` and `original` give their counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<TunedItem>,
}

/// One item of a [`TuningRecord`]: an interrupt's number, its CPUs before, and the outcome
/// (`moved`, `kernel-managed or fixed`, or why not).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TunedItem {
    pub name: String,
    pub original: String,
    pub outcome: String,
}

impl TuningRecord {
    /// Applied, `original` being what it was before.
    pub fn applied(mut self, original: String) -> TuningRecord {
        self.applied = true;
        self.original = Some(original);
        self
    }
    /// Not applied, for `error`.
    pub fn failed(mut self, error: String) -> TuningRecord {
        self.error = Some(error);
        self
    }
}
