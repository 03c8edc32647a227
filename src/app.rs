//! The program as the binary runs it: parse the command line, hand it to the lifecycle, map
//! the outcome to an exit status (0 passed, 1 a criterion failed, 2 usage or runtime error;
//! 141 when the reader of standard output went away, see `report::out`).

use crate::report::out;
use crate::{audit, cli, lifecycle, load, report, scenario, store};
use clap::Parser;
use std::process::ExitCode;

const EXIT_ERROR: u8 = 2;

/// The whole program: parse the command line, run the command, map the outcome to an exit status.
pub fn main() -> ExitCode {
    // `rtgauge __contain -- PROGRAM`, a load's launcher (internal): it starts often (a restarted
    // command, hundreds of loads) and on slow boards, so it skips the command line's parser.
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == "__contain") {
        let argv: Vec<std::ffi::OsString> = args.skip_while(|a| a != "--").skip(1).collect();
        return ExitCode::from(load::launch::main(&argv));
    }
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    // A run killed with its guardian may have left settings changed, and its loads' cgroup with
    // whatever a load left running in it: put them back and remove it first. Only `restore` says
    // which cgroups it removed: a run that starts while another was just killed may meet that
    // cgroup while its guardian is still removing it, and must not print a line about it.
    let recovered = match &cli.command {
        cli::Command::Run(_) | cli::Command::Check(_) | cli::Command::Load(_) | cli::Command::Restore => {
            // A file at the journal's path that is not rtgauge's own stops the command, untouched.
            let recovered = match crate::tuning::journal::recover() {
                Ok(r) => r,
                Err(e) => {
                    crate::report::out::err_line(&format!("rtgauge: error: {}", report::shown(&e)));
                    return ExitCode::from(EXIT_ERROR);
                }
            };
            let mut removed = load::contain::remove_stale();
            // And the trace instances such a run left tracing (tracefs is one for the system).
            removed.extend(crate::trace::remove_stale());
            if matches!(cli.command, cli::Command::Restore) {
                removed.iter().for_each(|line| crate::report::out::err_line(&format!("rtgauge: {line}")));
            }
            recovered
        }
        _ => None,
    };
    if let Some(r) = recovered.as_ref().filter(|_| !matches!(cli.command, cli::Command::Restore)) {
        for line in r.notes.iter().chain(&r.done) {
            crate::report::out::err_line(&format!("rtgauge: restored: {line}"));
        }
        for line in &r.failed {
            crate::report::out::err_line(&format!("rtgauge: warning: could not restore: {line}"));
        }
    }
    let outcome = match cli.command {
        cli::Command::Restore => restore(recovered.as_ref()),
        cli::Command::Run(args) => plan_run(&args).and_then(|plan| {
            let keep = store::Request::new(args.store.db.as_deref(), args.no_store, args.label.as_deref())
                .map_err(anyhow::Error::msg)?;
            lifecycle::run(plan, std::env::args().collect(), keep)
        }),
        cli::Command::List(a) => report::stored::list(&a),
        cli::Command::Show(a) => report::stored::show(&a),
        cli::Command::Delete(a) => report::stored::delete(&a),
        cli::Command::Export(a) => report::stored::export(&a),
        cli::Command::Import(a) => report::stored::import(&a),
        cli::Command::Report(a) => report::stored::report(&a),
        cli::Command::Compare(a) => report::compare::compare(&a),
        cli::Command::Check(a) => check(&a),
        cli::Command::Scenarios(a) => scenarios(a.name.as_deref()),
        cli::Command::Stall(a) => stall(a),
        cli::Command::UdpEcho(a) => lifecycle::udp_echo(&a),
        cli::Command::Load(a) => lifecycle::load_only(&a, std::env::args().collect()),
        cli::Command::Worker => return ExitCode::from(load::worker::main()),
        cli::Command::Guardian => return ExitCode::from(load::guardian::main()),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        // The reader went away: stop without a word, as a Unix tool that SIGPIPE ends.
        Err(e) if out::is_broken_pipe(&e) => ExitCode::from(out::EXIT_BROKEN_PIPE),
        Err(e) => {
            // One line, with whatever a file or a store put in it shown escaped.
            crate::report::out::err_line(&format!("rtgauge: error: {}", report::shown(&format!("{e:#}").replace('\n', " "))));
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// The plan of `rtgauge run`: the scenario's values (if any) with the command line's over them.
fn plan_run(args: &cli::RunArgs) -> anyhow::Result<scenario::RunPlan> {
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

/// `rtgauge check`: the audit for the CPUs and priority given; exit 1 when a finding is bad.
fn check(a: &cli::CheckArgs) -> anyhow::Result<u8> {
    let system = audit::SystemInfo::probe();
    let cpus = match &a.cpus {
        None => system.online_cpus.clone(),
        Some(text) => {
            let cpus = crate::vocab::cpus::parse_cpu_list(text).map_err(|e| anyhow::anyhow!("--cpus '{text}': {e}"))?;
            if let Some(c) = cpus.iter().find(|c| !system.online_cpus.contains(c)) {
                anyhow::bail!(
                    "--cpus '{text}': CPU {c} is not online (online: {}); give online CPUs",
                    crate::vocab::cpus::format_cpu_list(&system.online_cpus)
                );
            }
            cpus
        }
    };
    let priority =
        crate::vocab::policy::check_rt_priority(a.priority.unwrap_or(80)).map_err(|e| anyhow::anyhow!("--priority: {e}"))?;
    let findings = audit::checks::audit(&system, &audit::checks::Scope { cpus: cpus.clone(), priority });
    let bad = findings.iter().any(|f| f.severity == audit::findings::Severity::Bad);
    if a.json {
        let doc = crate::result::CheckResult {
            schema: crate::result::CHECK_SCHEMA.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            command_line: std::env::args().collect(),
            cpus,
            priority,
            system,
            findings,
        };
        out::json(&doc)?;
    } else {
        let p = &system.preemption;
        out::text(&format!(
            "rtgauge {} check: kernel {} ({}), {}, {}; for CPU(s) {} at priority {priority}\n\n{}",
            env!("CARGO_PKG_VERSION"),
            report::shown(&system.kernel_release),
            report::shown(&p.model),
            report::shown(&system.architecture),
            report::shown(&system.cpu_model),
            crate::vocab::cpus::format_cpu_list(&cpus),
            report::audit::render(&findings)
        ))?;
    }
    Ok(u8::from(bad))
}

/// `rtgauge restore`: says what was put back (done before any command runs, see `main`), or
/// that there was nothing to, or that a live run holds the journal.
fn restore(recovered: Option<&crate::tuning::journal::Restored>) -> anyhow::Result<u8> {
    match recovered {
        Some(r) => {
            let mut text = String::new();
            for line in r.notes.iter().chain(&r.done) {
                text += &format!("{}\n", report::shown(line));
            }
            for line in &r.failed {
                text += &format!("could not restore: {}\n", report::shown(line));
            }
            text +=
                &format!("Restored what a killed run had left changed ({} put back, {} failed).\n", r.done.len(), r.failed.len());
            out::text(&text)?;
            Ok(if r.failed.is_empty() { 0 } else { 2 })
        }
        None => {
            let live: Vec<String> = crate::tuning::journal::locations()
                .into_iter()
                .filter(|p| p.exists())
                .map(|p| format!("{} is held by a running rtgauge, which restores it when it ends", p.display()))
                .collect();
            if live.is_empty() {
                out::text("Nothing to restore: no run left settings changed.\n")?;
            } else {
                out::text(&format!("Nothing to restore now: {}.\n", live.join("; ")))?;
            }
            Ok(0)
        }
    }
}

/// `rtgauge scenarios [NAME]`: the built-in scenarios, or one of them as TOML.
fn scenarios(name: Option<&str>) -> anyhow::Result<u8> {
    match name {
        None => {
            let mut list = String::new();
            for (n, text) in scenario::file::BUILT_IN {
                let s = scenario::file::parse(text, n, "built-in")?;
                list += &format!("{n:<12} {}\n", s.description);
            }
            list += "\nRun one with 'rtgauge run --scenario NAME'; print one with 'rtgauge scenarios NAME' to start a file of your own.\n";
            out::text(&list)?;
        }
        Some(n) => match scenario::file::BUILT_IN.iter().find(|(b, _)| *b == n) {
            Some((_, text)) => out::text(text)?,
            None => anyhow::bail!("no built-in scenario '{n}'; 'rtgauge scenarios' lists them"),
        },
    }
    Ok(0)
}

fn stall(a: cli::StallArgs) -> anyhow::Result<u8> {
    let mut plan = load::stall::StallPlan::from_input(a.cpu, a.priority, &a.delay, &a.duration, &audit::online_cpus())
        .map_err(anyhow::Error::msg)?;
    plan.name = a.name.clone();
    let report = load::stall::run(plan).map_err(anyhow::Error::msg)?;
    out::json_text(&format!("{}\n", serde_json::to_string(&report)?))?;
    Ok(0)
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
                    crate::report::out::err_line(&format!("rtgauge: error: {o}"));
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
                ["run", "check", "restore", "load", "stall", "scenarios", "udp-echo", "list", "show", "delete"]
                    .contains(&a.as_str())
            };
            let help =
                std::env::args().nth(1).filter(known).map_or("rtgauge --help".to_string(), |c| format!("rtgauge {c} --help"));
            crate::report::out::err_line(&format!("rtgauge: error: {} (see '{help}')", first.trim_start_matches("error: ")));
            ExitCode::from(EXIT_ERROR)
        }
    }
}
