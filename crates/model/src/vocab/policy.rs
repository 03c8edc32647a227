//! Scheduling policies and RT priorities as users name them: the measurement's (`fifo`, `rr`,
//! `deadline`, `other`) and the range every RT priority is checked against, once, here.

use super::Error;
use serde::{Deserialize, Serialize};

/// The RT priorities of SCHED_FIFO and SCHED_RR.
pub const RT_PRIORITIES: std::ops::RangeInclusive<i32> = 1..=99;

/// Checks an RT priority; the error names the range (the caller adds the option and the fix).
pub fn check_rt_priority(p: i32) -> Result<i32, Error> {
    check_rt_priority_text(p).map_err(Error::Invalid)
}

/// [`check_rt_priority`], its failure as text.
fn check_rt_priority_text(p: i32) -> Result<i32, String> {
    if RT_PRIORITIES.contains(&p) {
        Ok(p)
    } else {
        Err(format!("{p} is out of range: RT priorities are {}-{}", RT_PRIORITIES.start(), RT_PRIORITIES.end()))
    }
}

/// A Linux scheduling policy for the measurement threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Fifo,
    Rr,
    /// SCHED_DEADLINE: each thread gets a runtime every period (its probe's interval) before a
    /// deadline; it has no RT priority. Such a thread cannot be pinned to one CPU (admission
    /// control needs its affinity to span its root domain, every CPU unless cpusets split them):
    /// it runs wherever the kernel places it.
    Deadline,
    Other,
}

impl Policy {
    /// The kernel's name for the policy, as `chrt` prints it.
    pub fn kernel_name(self) -> &'static str {
        match self {
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
            Policy::Deadline => "SCHED_DEADLINE",
            Policy::Other => "SCHED_OTHER",
        }
    }
    /// Whether this is a real-time policy (needs privileges).
    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr | Policy::Deadline)
    }
    /// Whether threads of this policy have an RT priority (SCHED_FIFO, SCHED_RR).
    pub fn has_priority(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rt_priorities_are_checked_once() {
        assert_eq!(check_rt_priority(1), Ok(1));
        assert_eq!(check_rt_priority(99), Ok(99));
        assert!(check_rt_priority(0).unwrap_err().contains("1-99"));
        assert!(check_rt_priority(100).is_err());
    }
}
