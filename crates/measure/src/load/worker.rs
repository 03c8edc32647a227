//! `rtgauge __worker`: the process a built-in load runs in. rtgauge starts it (its own
//! executable again) with the generator in `RTGAUGE_WORKER` (JSON) and, for `io`, a temporary
//! directory in `RTGAUGE_WORKER_DIR`; SIGTERM or SIGINT stop it. It prints one JSON line of
//! counters (and hackbench's round times) on standard output when it ends.

use super::gen::{hackbench::Hackbench, simple, Counters};
use crate::result::load::Generator;
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Environment variables of the worker protocol.
pub const ENV_SPEC: &str = "RTGAUGE_WORKER";
pub const ENV_DIR: &str = "RTGAUGE_WORKER_DIR";
/// Run hackbench once (standalone `rtgauge load`) instead of until stopped.
pub const ENV_ONCE: &str = "RTGAUGE_WORKER_ONCE";

/// What a worker reports when it ends.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct WorkerReport {
    pub counters: Counters,
    /// hackbench: the time of each round, in seconds.
    pub round_times_s: Vec<f64>,
    pub error: Option<String>,
}

/// Entry point of `rtgauge __worker`; returns the process exit status.
pub fn main() -> u8 {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    let report = match std::env::var(ENV_SPEC).ok().and_then(|s| serde_json::from_str::<Generator>(&s).ok()) {
        None => WorkerReport { error: Some(format!("{ENV_SPEC} is missing or invalid")), ..Default::default() },
        Some(g) => run(g, &stop),
    };
    println!("{}", serde_json::to_string(&report).unwrap_or_default());
    u8::from(report.error.is_some())
}

fn run(g: Generator, stop: &AtomicBool) -> WorkerReport {
    let counters = match g {
        Generator::Cpu { workers } => simple::cpu(workers, stop),
        Generator::Vm { workers, bytes } => match simple::vm(workers, bytes, stop) {
            Ok(c) => c,
            Err(e) => return WorkerReport { error: Some(e.into()), ..Default::default() },
        },
        Generator::Io { workers, size, block } => {
            let dir = std::env::var(ENV_DIR).map(std::path::PathBuf::from).unwrap_or_else(|_| std::env::temp_dir());
            simple::io(workers, size, block, &dir, stop)
        }
        Generator::Fork { workers } => simple::fork(workers, stop),
        Generator::Proc { workers } => simple::proc_reads(workers, stop),
        Generator::Net { workers, size, target } => match simple::net(workers, size, target.as_deref(), stop) {
            Ok(c) => c,
            Err(e) => return WorkerReport { error: Some(e.into()), ..Default::default() },
        },
        Generator::Timers { count, period_ns } => simple::timers(count, period_ns, stop),
        Generator::Hackbench { groups, fds, size, loops, pipe, threads } => {
            let h = Hackbench { groups, fds, size, loops, pipe, threads };
            let once = std::env::var_os(ENV_ONCE).is_some();
            return match h.run(stop, once) {
                Ok((counters, times)) => {
                    WorkerReport { counters, round_times_s: times.iter().map(|t| t.as_secs_f64()).collect(), error: None }
                }
                Err(e) => WorkerReport { error: Some(format!("hackbench: {e}")), ..Default::default() },
            };
        }
        Generator::Cmd { .. } => return WorkerReport { error: Some("cmd loads run directly".into()), ..Default::default() },
    };
    WorkerReport { counters, ..Default::default() }
}
