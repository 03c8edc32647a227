//! The `rtgauge` binary: everything it does lives in the library (`src/lib.rs`, `app::main`).

fn main() -> std::process::ExitCode {
    rtgauge::app::main()
}
