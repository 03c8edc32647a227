//! `rtgauge run`: the plan (a scenario's values with the command line's over them) and where
//! the result is kept (the store's `keep::Keep`: the run knows no store), handed to the run's
//! stages (`crate::run`).

use super::args::RunArgs;
use crate::{run, scenario, store};

/// `rtgauge run`.
pub fn run(args: &RunArgs) -> anyhow::Result<u8> {
    let plan = plan_run(args)?;
    let keep = store::Request::new(args.store.db.as_deref(), args.no_store, args.label.as_deref())
        .and_then(|k| k.with_board(args.board.as_deref()))
        .map_err(anyhow::Error::msg)?;
    // (A database URL's password is kept out of the result.)
    run::run(plan, store::scrub_command_line(std::env::args().collect()), Box::new(keep))
}

/// The plan of `rtgauge run`: the scenario's values (if any) with the command line's over them.
fn plan_run(args: &RunArgs) -> anyhow::Result<scenario::RunPlan> {
    let typed = args.input();
    match &args.scenario {
        None => Ok(scenario::RunPlan::from_input(&typed)?),
        Some(s) => {
            let sc = scenario::file::load(s)?;
            let mut plan = scenario::RunPlan::from_input(&sc.input.clone().overlay(typed))
                .map_err(|e| anyhow::anyhow!("scenario '{}': {e}", sc.name))?;
            plan.scenario = Some((sc.name, sc.source));
            Ok(plan)
        }
    }
}
