//! Every subcommand, one file each: what the user typed (`args`, the clap definitions — the only
//! place that sees clap types) turned into plain values and handed to the stages. `app`
//! dispatches to these; nothing below them takes a clap type.
//!
//! - measuring: [`run`], [`load`], [`udp_echo`], [`stall`];
//! - the system: [`check`], [`restore`], [`scenarios`];
//! - the store: [`list`], [`show`], [`delete`], [`import`], [`push`], [`export`], [`report`], [`compare`]
//!   (and [`stored`], what they share), and [`serve`], the dashboard over a store.

pub mod args;
pub mod check;
pub mod compare;
pub mod delete;
pub mod export;
pub mod import;
pub mod list;
pub mod load;
pub mod push;
pub mod report;
pub mod restore;
pub mod run;
pub mod scenarios;
#[cfg(feature = "lab")]
pub mod serve;
pub mod show;
pub mod stall;
pub mod stored;
pub mod udp_echo;

pub use args::Command;

use crate::report::out;
use clap::Parser;
use std::process::ExitCode;

/// Exit status of a usage or runtime error.
pub const EXIT_ERROR: u8 = 2;

/// Which build this is: the lab build has the dashboard and the PNG images, the board build
/// not (the `lab` feature; docs/builds.md).
pub const BUILD: &str = if cfg!(feature = "lab") { "lab" } else { "board" };

/// What the board build lacks, asked for: one line saying which build has it.
#[cfg(not(feature = "lab"))]
pub fn in_the_lab_build(what: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{what} is in rtgauge's lab build; this is the board build, which measures, judges, keeps and sends runs: run \
         it where the lab build is installed (a lab server), or build that with `cargo build --release` (its default \
         features)"
    )
}

/// The command line parsed; help, version and usage errors are said here, and become the
/// exit status to end with.
pub fn parse() -> Result<Command, ExitCode> {
    args::Cli::try_parse().map(|cli| cli.command).map_err(clap_error)
}

/// Whether the command changes the system, and so first puts back what a killed run left
/// changed (see [`restore::recover_killed_run`]).
pub fn recovers_first(command: &Command) -> bool {
    matches!(command, Command::Run(_) | Command::Check(_) | Command::Load(_) | Command::Restore)
}

/// Help and version go to stdout with status 0; usage errors become one line with a hint.
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // Help and version asked for go to standard output, as every command's output does.
            let printed = if e.use_stderr() {
                let _ = e.print();
                Ok(())
            } else {
                out::check_open().and_then(|()| Ok(e.print()?))
            };
            match printed {
                Ok(()) => {
                    ExitCode::from(if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { EXIT_ERROR } else { 0 })
                }
                Err(out::OutputError::BrokenPipe) => ExitCode::from(out::EXIT_BROKEN_PIPE),
                Err(o) => {
                    out::err_line(&format!("rtgauge: error: {o}"));
                    ExitCode::from(EXIT_ERROR)
                }
            }
        }
        _ => {
            // The first paragraph, on one line: it names the argument (clap lists missing
            // required arguments on the lines after "the following ... were not provided:").
            let rendered = e.render().to_string();
            let first: Vec<&str> =
                rendered.split("\n\n").next().unwrap_or("invalid command line").lines().map(str::trim).collect();
            let first = first.join(" ");
            let known = |a: &String| {
                [
                    "run",
                    "check",
                    "restore",
                    "load",
                    "stall",
                    "scenarios",
                    "udp-echo",
                    "list",
                    "show",
                    "delete",
                    "import",
                    "push",
                    "serve",
                    "export",
                    "report",
                    "compare",
                ]
                .contains(&a.as_str())
            };
            let help =
                std::env::args().nth(1).filter(known).map_or("rtgauge --help".to_string(), |c| format!("rtgauge {c} --help"));
            out::err_line(&format!("rtgauge: error: {} (see '{help}')", first.trim_start_matches("error: ")));
            ExitCode::from(EXIT_ERROR)
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every `.rs` file under `dir`, with its text.
    fn sources(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).expect("the source tree") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push((path.clone(), std::fs::read_to_string(&path).expect("a source file")));
            }
        }
    }

    /// The command line's types stay in `commands`: every stage below takes plain values, so a
    /// server or another front end can drive the same stages.
    #[test]
    fn no_module_outside_commands_sees_clap() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        sources(&root.join("src"), &mut files);
        sources(&root.join("crates"), &mut files);
        assert!(files.len() > 50, "the source tree was found");
        let commands = root.join("src/commands");
        let outside: Vec<String> = files
            .iter()
            .filter(|(path, text)| !path.starts_with(&commands) && text.contains("clap"))
            .map(|(path, _)| path.display().to_string())
            .collect();
        assert!(outside.is_empty(), "clap types used outside src/commands: {outside:?}");
        assert!(files.iter().any(|(p, _)| p.starts_with(root.join("crates"))), "the crates were read");
    }
}
