//! rtgauge: is this board, kernel and configuration real-time enough for my cycle time?
//!
//! The whole program: parse the command line, hand it to the lifecycle, map the outcome to an
//! exit status (0 passed, 1 a criterion failed, 2 usage or runtime error). See
//! `docs/architecture.md` for the flow and which module owns which stage.
#![deny(unsafe_code)]

mod aggregate;
mod audit;
mod cli;
mod lifecycle;
mod load;
mod probe;
mod report;
mod result;
mod scenario;
mod sys;
mod tuning;
mod verdict;

use clap::Parser;
use std::process::ExitCode;

const EXIT_ERROR: u8 = 2;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    let outcome = match cli.command {
        cli::Command::Run(args) => scenario::RunPlan::from_input(&args.input())
            .map_err(anyhow::Error::from)
            .and_then(|plan| lifecycle::run(plan, std::env::args().collect())),
        cli::Command::Stall(a) => stall(a),
        cli::Command::Load(a) => lifecycle::load_only(&a, std::env::args().collect()),
        cli::Command::Worker => return ExitCode::from(load::worker::main()),
        cli::Command::Guardian => return ExitCode::from(load::guardian::main()),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("rtgauge: error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn stall(a: cli::StallArgs) -> anyhow::Result<u8> {
    let plan = load::stall::StallPlan::from_input(a.cpu, a.priority, &a.delay, &a.duration, &audit::online_cpus())
        .map_err(anyhow::Error::msg)?;
    let report = load::stall::run(plan).map_err(anyhow::Error::msg)?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(0)
}

/// Help and version go to stdout with status 0; usage errors become one line with a hint.
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { EXIT_ERROR } else { 0 })
        }
        _ => {
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid command line").trim_start_matches("error: ");
            eprintln!("rtgauge: error: {first} (see 'rtgauge --help' or 'rtgauge run --help')");
            ExitCode::from(EXIT_ERROR)
        }
    }
}
