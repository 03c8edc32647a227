//! A rate sweep's figures (the wake-up chain's `rate=sweep`): per step its rate, what it planned,
//! what was taken and missed, its worst case against its bound and its outcome; and the highest
//! rate sustained. Pure: built from the figures of each step.

use serde::{Deserialize, Serialize};

/// How a step of a sweep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepOutcome {
    /// Every planned event taken, none missed, the worst case within the bound.
    Sustained,
    /// Events were missed.
    Missed,
    /// None missed, but the worst case exceeded the bound.
    OverBound,
    /// Fewer events than planned were accounted for (the run was stopped during the step).
    Incomplete,
    /// The sweep had stopped before this step (a lower rate failed), or the run ended first.
    NotRun,
}

impl StepOutcome {
    /// As the summary prints it.
    pub fn describe(self) -> &'static str {
        match self {
            StepOutcome::Sustained => "sustained",
            StepOutcome::Missed => "missed events",
            StepOutcome::OverBound => "over the bound",
            StepOutcome::Incomplete => "incomplete",
            StepOutcome::NotRun => "not run",
        }
    }
}

/// One step of a sweep in one scope (a CPU, or all CPUs together).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepStep {
    pub rate_per_s: u32,
    pub interval_ns: u64,
    /// From the start of the run; the first step holds the warm-up.
    pub start_ns: u64,
    pub end_ns: u64,
    /// The bound its worst case is judged by.
    pub bound_ns: u64,
    /// Measured events planned (per CPU in a combined scope: times the CPUs).
    pub planned: u64,
    /// Events taken and events missed: together `planned` when the step ran to its end.
    pub events: u64,
    pub missed: u64,
    pub max_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub outcome: StepOutcome,
}

impl SweepStep {
    /// Judges a step from its figures.
    pub fn judge(events: u64, missed: u64, max_ns: Option<u64>, planned: u64, bound_ns: u64) -> StepOutcome {
        if events + missed == 0 {
            StepOutcome::NotRun
        } else if missed > 0 {
            StepOutcome::Missed
        } else if max_ns.is_some_and(|m| m > bound_ns) {
            StepOutcome::OverBound
        } else if events < planned {
            StepOutcome::Incomplete
        } else {
            StepOutcome::Sustained
        }
    }
}

/// A sweep in one scope: its steps in rising rate, and the highest rate sustained.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepResult {
    pub steps: Vec<SweepStep>,
    /// The rate of the last step of the unbroken run of sustained steps from the lowest rate;
    /// null when the lowest rate already failed.
    pub sustained_per_s: Option<u32>,
}

impl SweepResult {
    pub fn new(steps: Vec<SweepStep>) -> SweepResult {
        let sustained_per_s = steps.iter().take_while(|s| s.outcome == StepOutcome::Sustained).last().map(|s| s.rate_per_s);
        SweepResult { steps, sustained_per_s }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(rate: u32, events: u64, missed: u64, max: u64) -> SweepStep {
        let outcome = SweepStep::judge(events, missed, Some(max), 100, 1_000_000_000 / u64::from(rate));
        SweepStep {
            rate_per_s: rate,
            interval_ns: 1_000_000_000 / u64::from(rate),
            start_ns: 0,
            end_ns: 0,
            bound_ns: 0,
            planned: 100,
            events,
            missed,
            max_ns: Some(max),
            p99_ns: None,
            outcome,
        }
    }

    #[test]
    fn the_sustained_rate_is_the_last_of_the_unbroken_passing_steps() {
        let r = SweepResult::new(vec![step(1000, 100, 0, 5_000), step(2000, 100, 0, 9_000), step(5000, 99, 1, 9_000)]);
        assert_eq!(r.sustained_per_s, Some(2000));
        let outcomes: Vec<_> = r.steps.iter().map(|s| s.outcome).collect();
        assert_eq!(outcomes, [StepOutcome::Sustained, StepOutcome::Sustained, StepOutcome::Missed]);
        // Over the bound (200 us at 5000/s), a later pass does not count, a stopped step is incomplete.
        let r = SweepResult::new(vec![step(5000, 100, 0, 250_000), step(10_000, 100, 0, 50_000)]);
        assert_eq!((r.steps[0].outcome, r.sustained_per_s), (StepOutcome::OverBound, None));
        assert_eq!(step(1000, 50, 0, 5_000).outcome, StepOutcome::Incomplete);
        assert_eq!(step(1000, 0, 0, 0).outcome, StepOutcome::NotRun);
    }
}
