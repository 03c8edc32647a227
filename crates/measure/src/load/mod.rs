//! Stage three of the flow: loads, the worst-case disturbances a measurement runs under.
//! Built-in generators (`gen`) run in worker processes (`worker`), external commands directly;
//! `manager` starts, times, restarts, stops and records them; `launch` starts each without
//! forking rtgauge; `contain` puts them in a cgroup of the run's own, `guardian` guarantees they never outlive rtgauge and `watchdog` that they never
//! hold a run past its end. `stall` is the calibrated disturbance used to prove a measurement.

pub mod contain;
pub mod gen;
pub mod guardian;
pub mod launch;
pub mod manager;
pub mod spec;
pub mod stall;
pub mod watchdog;
pub mod worker;

use spec::LoadSpec;

/// The default worst-case mix of `rtgauge run`: scheduler and IPC pressure (hackbench), page
/// faults (vm), file-system and block I/O (io), network soft-IRQs (net) and timer interrupts
/// (timers) at once. `--load none` measures an idle system instead.
pub const DEFAULT_MIX: &[&str] = &["hackbench:groups=2,loops=50", "vm:bytes=32M", "io:size=8M", "net", "timers"];

/// The default mix, resolved for a machine with `cpus` CPUs.
pub fn default_mix(cpus: usize) -> Vec<LoadSpec> {
    DEFAULT_MIX.iter().map(|s| LoadSpec::parse(s).expect("valid built-in spec").resolve(cpus)).collect()
}
