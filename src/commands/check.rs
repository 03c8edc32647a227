//! `rtgauge check`: the audit of what spoils latency, for the CPUs and priority given, as text
//! or JSON; exit 1 when a finding is bad.

use super::args::CheckArgs;
use crate::audit;
use crate::report::{self, out};

/// `rtgauge check`: the audit for the CPUs and priority given; exit 1 when a finding is bad.
pub fn check(a: &CheckArgs) -> anyhow::Result<u8> {
    let system = audit::probe_system();
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
    let bad = findings.iter().any(|f| f.severity == crate::result::findings::Severity::Bad);
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
