//! The `rtgauge` binary: everything it does lives in the library (`src/lib.rs`, `app::main`),
//! once the process is fit to run it (`run::prepare_process`: a stack limit it can run
//! under, write limits that fail writes instead of killing it).

fn main() -> std::process::ExitCode {
    if let Err(e) = rtgauge::run::prepare_process() {
        eprintln!("rtgauge: error: {e}");
        return std::process::ExitCode::from(2);
    }
    rtgauge::app::main()
}
