//! `rtgauge stall`: one CPU occupied by a busy SCHED_FIFO thread for an exact time (a known
//! stall, to prove a measurement catches it); what it did, as JSON.

use super::args::StallArgs;
use crate::report::out;
use crate::{audit, load};

/// `rtgauge stall`.
pub fn stall(a: StallArgs) -> anyhow::Result<u8> {
    let mut plan = load::stall::StallPlan::from_input(a.cpu, a.priority, &a.delay, &a.duration, &audit::online_cpus())
        .map_err(anyhow::Error::msg)?;
    plan.name = a.name.clone();
    let report = load::stall::run(plan).map_err(anyhow::Error::msg)?;
    out::json_text(&format!("{}\n", serde_json::to_string(&report)?))?;
    Ok(0)
}
