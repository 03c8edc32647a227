//! The program as the binary runs it: the command line parsed (`commands::parse`), what a killed
//! run left changed put back first where the command changes the system
//! (`commands::restore::before`), the command dispatched to its file in `commands`, and the
//! outcome mapped to an exit status (0 passed, 1 a criterion
//! failed, 2 usage or runtime error; 141 when the reader of standard output went away, see
//! `report::out`).

use crate::commands::{self, Command, EXIT_ERROR};
use crate::load;
use crate::report::{self, out};
use std::process::ExitCode;

/// The whole program: parse the command line, run the command, map the outcome to an exit status.
pub fn main() -> ExitCode {
    // `rtgauge __contain -- PROGRAM`, a load's launcher (internal): it starts often (a restarted
    // command, hundreds of loads) and on slow boards, so it skips the command line's parser.
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == "__contain") {
        let argv: Vec<std::ffi::OsString> = args.skip_while(|a| a != "--").skip(1).collect();
        return ExitCode::from(load::launch::main(&argv));
    }
    let command = match commands::parse() {
        Ok(command) => command,
        Err(code) => return code,
    };
    if let Some(w) = crate::store::password_on_command_line(std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()))
    {
        out::err_line(&format!("rtgauge: warning: {w}"));
    }
    // What a killed run left changed is put back first, before a command that changes the system.
    let recovered = match commands::restore::before(&command) {
        Ok(r) => r,
        Err(e) => {
            out::err_line(&format!("rtgauge: error: {}", report::shown(&e)));
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let outcome = match command {
        Command::Restore => commands::restore::restore(recovered.as_ref()),
        Command::Run(a) => commands::run::run(&a),
        Command::List(a) => commands::list::list(&a),
        Command::Show(a) => commands::show::show(&a),
        Command::Delete(a) => commands::delete::delete(&a),
        Command::Export(a) => commands::export::export(&a),
        Command::Import(a) => commands::import::import(&a),
        Command::Push(a) => commands::push::push(&a),
        #[cfg(feature = "lab")]
        Command::Serve(a) => commands::serve::serve(&a),
        #[cfg(not(feature = "lab"))]
        Command::Serve { .. } => Err(commands::in_the_lab_build("serve (the dashboard)")),
        Command::Report(a) => commands::report::report(&a),
        Command::Compare(a) => commands::compare::compare(&a),
        Command::Check(a) => commands::check::check(&a),
        Command::Scenarios(a) => commands::scenarios::scenarios(a.name.as_deref()),
        Command::Stall(a) => commands::stall::stall(a),
        Command::UdpEcho(a) => commands::udp_echo::udp_echo(&a),
        Command::Load(a) => commands::load::load(&a),
        Command::Worker => return ExitCode::from(load::worker::main()),
        Command::Guardian => return ExitCode::from(load::guardian::main()),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        // The reader went away: stop without a word, as a Unix tool that SIGPIPE ends.
        Err(e) if out::is_broken_pipe(&e) => ExitCode::from(out::EXIT_BROKEN_PIPE),
        Err(e) => {
            // One line, with whatever a file or a store put in it shown escaped.
            out::err_line(&format!("rtgauge: error: {}", report::shown(&format!("{e:#}").replace('\n', " "))));
            ExitCode::from(EXIT_ERROR)
        }
    }
}
