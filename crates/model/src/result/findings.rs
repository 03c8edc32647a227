//! What the audit says about one setting: a finding with its severity, what was observed (as
//! text and as a value a program can read), why it matters for latency, and the exact fix —
//! the command for now and the setting that lasts. `rtgauge check` prints them; every run's
//! result keeps them (`findings`).

use serde::{Deserialize, Serialize};

/// How much a setting spoils latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// As an RT system wants it.
    Ok,
    /// Worth knowing; costs latency only in some set-ups.
    Info,
    /// Likely to add latency or jitter.
    Warn,
    /// Spoils real-time behaviour (`rtgauge check` exits 1).
    Bad,
}

impl Severity {
    pub const ALL: [Severity; 4] = [Severity::Bad, Severity::Warn, Severity::Info, Severity::Ok];

    pub fn label(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Bad => "BAD",
        }
    }
}

/// One audited setting.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    /// Stable name of the check (`preemption`, `rt_throttling`, `irq_affinity`, ...).
    pub id: String,
    /// What is checked, in words.
    pub title: String,
    pub severity: Severity,
    /// What this system has, in words.
    pub observed: String,
    /// The same as data (numbers, lists), for programs and tests.
    #[serde(default)]
    pub value: serde_json::Value,
    /// Why it matters for latency.
    pub why: String,
    /// The command that fixes it now (until the next boot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The setting that fixes it for good (a boot parameter, a sysctl file, a kernel option).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent: Option<String>,
}

impl Finding {
    /// A finding of check `id` (`title`), to be completed with the builder methods.
    pub fn new(id: &str, title: &str, severity: Severity, observed: impl Into<String>) -> Finding {
        Finding {
            id: id.to_string(),
            title: title.to_string(),
            severity,
            observed: observed.into(),
            value: serde_json::Value::Null,
            why: String::new(),
            fix: None,
            persistent: None,
        }
    }
    pub fn value(mut self, v: serde_json::Value) -> Finding {
        self.value = v;
        self
    }
    pub fn why(mut self, why: impl Into<String>) -> Finding {
        self.why = why.into();
        self
    }
    /// The fix, now and for good; given only where the finding calls for one.
    pub fn fix(mut self, now: impl Into<String>, persistent: impl Into<String>) -> Finding {
        if self.severity > Severity::Ok {
            self.fix = Some(now.into()).filter(|s: &String| !s.is_empty());
            self.persistent = Some(persistent.into()).filter(|s: &String| !s.is_empty());
        }
        self
    }
}

/// How many findings have each severity.
pub fn counts(findings: &[Finding]) -> [(Severity, usize); 4] {
    Severity::ALL.map(|s| (s, findings.iter().filter(|f| f.severity == s).count()))
}

/// `2 bad, 5 warn, 8 info, 12 ok`.
pub fn tally(findings: &[Finding]) -> String {
    counts(findings).iter().map(|(s, n)| format!("{n} {}", s.label().to_lowercase())).collect::<Vec<_>>().join(", ")
}
