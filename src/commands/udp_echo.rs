//! `rtgauge udp-echo`: the other end of the UDP probe, run on the other host.

use super::args::UdpEchoArgs;
use crate::probe;
use crate::run::checks::check_cpus;
use crate::run::Interrupts;
use anyhow::{anyhow, bail, Result};

/// `rtgauge udp-echo`: the other end of the UDP probe. Binds, takes its CPU and priority, says
/// where it listens (stderr), echoes until a signal or `--duration` (looked at after every
/// datagram: a flood does not hold it), and prints what it echoed and what it dropped — from
/// its own address, another echo's replies, datagrams too short to be the probe's (stdout, JSON).
pub fn udp_echo(args: &UdpEchoArgs) -> Result<u8> {
    let interrupts = Interrupts::install()?;
    let addr: std::net::SocketAddr =
        args.listen.parse().map_err(|_| anyhow!("--listen {}: not ADDR:PORT; e.g. --listen 0.0.0.0:9000", args.listen))?;
    if !(0..=99).contains(&args.priority) {
        bail!("--priority {}: not 0 (SCHED_OTHER) or 1-99; e.g. --priority 80", args.priority);
    }
    let duration = args
        .duration
        .as_deref()
        .map(|d| crate::vocab::units::parse_duration_ns(d, None))
        .transpose()
        .map_err(|e| anyhow!("--duration: {e}; e.g. --duration 10m"))?;
    if let Some(cpu) = args.cpu {
        check_cpus("--cpu", &[cpu], &crate::audit::probe_system())?;
    }
    let plan = probe::udp::EchoPlan { addr, cpu: args.cpu, priority: args.priority, duration_ns: duration };
    let listening = |at| crate::report::out::err_line(&format!("rtgauge udp-echo: listening on {at}"));
    let e = probe::udp::serve(&plan, &interrupts.stop, listening).map_err(anyhow::Error::msg)?;
    let dropped = serde_json::json!({
        "from_itself": e.from_itself, "replies": e.replies, "short": e.short, "from_service": e.from_service
    });
    let stopped_by = interrupts.which();
    crate::report::out::text(&format!(
        "{}\n",
        serde_json::json!({ "listen": addr.to_string(), "echoed": e.echoed, "dropped": dropped, "stopped_by": stopped_by })
    ))?;
    Ok(0)
}
