//! The verdict as the result document keeps it: each check with its evidence, and how it reads
//! on a terminal. `verdict` decides it; this module only holds it.

use crate::vocab::units::Nanos;
use serde::{Deserialize, Serialize};

/// One evaluated criterion on one scope (a CPU, or all of them).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Check {
    /// The criterion, e.g. `max<=250us` or `missed==0`.
    pub expr: String,
    /// What it was applied to: `timer/cpu0`, `timer/all`, or `run`.
    pub scope: String,
    /// The observed figure, readable (`41.250us`, `0`).
    pub observed: String,
    /// The observed figure in base units (ns or a count); `null` when there was nothing to observe.
    pub observed_value: Option<f64>,
    pub passed: bool,
}

/// The outcome of a run against its criteria.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verdict {
    /// `true` when every check passed (also when there were no criteria).
    pub passed: bool,
    /// Whether any criterion (cycle time or requirement) was given.
    pub criteria_given: bool,
    pub cycle_time_ns: Option<u64>,
    pub budget_percent: f64,
    /// The shortest cycle time whose budget the measured worst case fits: max / budget.
    pub shortest_cycle_time_ns: Option<u64>,
    pub checks: Vec<Check>,
    /// With a cycle time: how each probe's missed periods were judged, one sentence each (a
    /// missed period at an interval shorter than the cycle time is a latency judged against the
    /// budget; at the cycle time or longer, a missed cycle: `missed==0`). Absent without a cycle
    /// time and in documents of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// What the run's length supports of each latency claim (a cycle time's budget, `max<B`, a
    /// percentile's bound, a forecast's level), one sentence per claim and series: the rule of
    /// three's per-period probability, the periods a claim of 1e-6 and 1e-9 needs, and when the
    /// run was too short for it. Absent without criteria and in documents of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub support: Vec<String>,
}

impl Verdict {
    /// One line for the terminal.
    pub fn headline(&self) -> String {
        let failed = self.checks.iter().filter(|c| !c.passed).count();
        match (self.criteria_given, self.passed) {
            (false, false) => format!(
                "FAIL: nothing was measured on {}",
                self.checks.iter().filter(|c| !c.passed).map(|c| c.scope.as_str()).collect::<Vec<_>>().join(", ")
            ),
            (false, true) => "no criteria given (use --cycle-time or --require for a pass/fail verdict)".to_string(),
            (true, true) if self.checks.len() == 1 => "PASS: the check passed".to_string(),
            (true, true) => format!("PASS: all {} passed", crate::vocab::Count(self.checks.len() as u64, "check")),
            (true, false) => format!("FAIL: {failed} of {} failed", crate::vocab::Count(self.checks.len() as u64, "check")),
        }
    }

    /// The sentence about the shortest supported cycle time.
    pub fn shortest_cycle_sentence(&self) -> Option<String> {
        self.shortest_cycle_time_ns.map(|ns| {
            format!(
                "Shortest cycle time this measurement supports (worst case within {}% of it): {}",
                self.budget_percent,
                Nanos(ns)
            )
        })
    }
}
