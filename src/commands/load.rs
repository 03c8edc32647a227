//! `rtgauge load`: the loads of the command line checked against the machine, then run through
//! the run's stages with no probe (`crate::run::load_only`).

use super::args::LoadArgs;
use crate::load::spec::LoadSpec;
use crate::result::load::Generator;
use crate::run::checks::check_loads;
use crate::run::LoadPlan;
use anyhow::{anyhow, bail, Result};

/// `rtgauge load`.
pub fn load(args: &LoadArgs) -> Result<u8> {
    let plan = plan_loads(args)?;
    let json = args.json.as_deref().map(crate::scenario::JsonTarget::parse);
    crate::run::load_only(plan, json.as_ref(), std::env::args().collect())
}

/// The plan of `rtgauge load`, checked against the machine.
fn plan_loads(args: &LoadArgs) -> Result<LoadPlan> {
    let specs = crate::load::spec::parse_loads(&args.specs)
        .map_err(anyhow::Error::msg)?
        .ok_or_else(|| anyhow!("rtgauge load none runs nothing: name a load, e.g. rtgauge load hackbench"))?;
    let duration_ns = args
        .duration
        .as_deref()
        .map(|d| crate::vocab::units::parse_duration_ns(d, None))
        .transpose()
        .map_err(|e| anyhow!("--duration {e}: give a time with a unit, e.g. --duration 30s"))?;
    let one_shot = |s: &LoadSpec| matches!(s.generator, Generator::Hackbench { .. } | Generator::Cmd { restart: false, .. });
    if duration_ns.is_none() {
        if let Some(s) = specs.iter().find(|s| !one_shot(s)) {
            bail!("'{}' runs until stopped: give --duration, e.g. --duration 30s", s.text);
        }
    }
    let online = crate::audit::online_cpus();
    let cpus = args
        .cpus
        .as_deref()
        .map(crate::vocab::cpus::parse_cpu_list)
        .transpose()
        .map_err(|e| anyhow!("--cpus {e}: e.g. --cpus 0-1"))?;
    check_loads(&specs, duration_ns, &online, cpus.as_deref())?;
    let n = cpus.as_ref().map_or(online.len(), Vec::len);
    Ok(LoadPlan { specs: specs.into_iter().map(|s| s.resolve(n)).collect(), cpus, duration_ns })
}
