//! Checks of the measured CPUs: isolation from other work (isolcpus, nohz_full, rcu_nocbs),
//! frequency (governor, boost), idle states and the PM QoS request, SMT siblings, and the
//! interrupts that may land on them.

use super::{cpu_list_file, cpu_mask, words, Ctx};
use crate::audit::read_trim;
use crate::result::findings::{Finding, Severity};
use crate::vocab::cpus::{format_cpu_list, parse_cpu_list};
use serde_json::json;

const CPU: &str = "/sys/devices/system/cpu";

/// The CPUs of a boot parameter's list (`isolcpus=managed_irq,domain,2-3` gives 2-3).
fn param_cpus(c: &Ctx, name: &str) -> Option<Vec<usize>> {
    let v = c.param(name)?;
    let list = v.split(',').filter(|p| p.chars().next().is_some_and(|ch| ch.is_ascii_digit())).collect::<Vec<_>>().join(",");
    parse_cpu_list(&list).ok()
}

/// The measured CPUs not in `set`.
fn outside(c: &Ctx, set: &[usize]) -> Vec<usize> {
    c.scope.cpus.iter().copied().filter(|x| !set.contains(x)).collect()
}

/// A finding on whether the measured CPUs are in a boot-time set (`isolcpus`, `nohz_full`, ...).
fn isolation(c: &Ctx, set: Vec<usize>, what: &str) -> (Severity, String, serde_json::Value) {
    let missing = outside(c, &set);
    let all = c.scope.cpus.len() == c.system.online_cpus.len();
    let observed = match (set.is_empty(), missing.is_empty()) {
        (true, _) => format!("no CPU is {what}"),
        (false, true) => format!("CPUs {} {what}, the measured CPUs among them", format_cpu_list(&set)),
        (false, false) => format!("CPUs {} {what}; measured CPUs {} are not", format_cpu_list(&set), format_cpu_list(&missing)),
    };
    let observed =
        if all && !missing.is_empty() { format!("{observed} (with every CPU measured none can be set apart)") } else { observed };
    let severity = if missing.is_empty() { Severity::Ok } else { Severity::Info };
    (severity, observed, json!({"cpus": set, "measured_outside": missing}))
}

pub(super) fn isolcpus(c: &Ctx) -> Finding {
    let set = {
        let sys = cpu_list_file(&format!("{CPU}/isolated"));
        if sys.is_empty() {
            param_cpus(c, "isolcpus").unwrap_or_default()
        } else {
            sys
        }
    };
    let (severity, observed, value) = isolation(c, set, "isolated from the scheduler (isolcpus)");
    Finding::new("isolcpus", "CPU isolation (isolcpus)", severity, observed)
        .value(value)
        .why(
            "On a shared CPU every other task and kernel thread competes with the RT task and fills its caches; isolated \
             CPUs run only what is placed on them (the Cortex-A53 slides shield the measured CPU with a cpuset).",
        )
        .fix(
            format!("rtgauge run --tune=shield --cpus {}   # a cpuset shield for the run", c.measured()),
            format!("boot with isolcpus=managed_irq,domain,{}", c.measured()),
        )
}

pub(super) fn nohz_full(c: &Ctx) -> Finding {
    let set = {
        let sys = cpu_list_file(&format!("{CPU}/nohz_full"));
        if sys.is_empty() {
            param_cpus(c, "nohz_full").unwrap_or_default()
        } else {
            sys
        }
    };
    let built = c.kconfig.as_ref().map(|k| k.enabled("NO_HZ_FULL"));
    let (severity, mut observed, value) = isolation(c, set, "without the scheduler tick while busy (nohz_full)");
    if built == Some(false) {
        observed = format!("{observed}; the kernel has no NO_HZ_FULL");
    }
    Finding::new("nohz_full", "Tick-less CPUs (nohz_full)", severity, observed)
        .value(value)
        .why("A nohz_full CPU running one task gets no scheduler tick (HZ interruptions a second), only the interrupts it must take.")
        .fix("", format!("a kernel with CONFIG_NO_HZ_FULL=y booted with nohz_full={}", c.measured()))
}

pub(super) fn rcu_nocbs(c: &Ctx) -> Finding {
    // nohz_full implies rcu_nocbs for its CPUs.
    let mut set = param_cpus(c, "rcu_nocbs").unwrap_or_default();
    set.extend(cpu_list_file(&format!("{CPU}/nohz_full")));
    set.sort_unstable();
    set.dedup();
    let (severity, observed, value) = isolation(c, set, "free of RCU callbacks (rcu_nocbs)");
    Finding::new("rcu_nocbs", "RCU callbacks off the CPU (rcu_nocbs)", severity, observed)
        .value(value)
        .why("RCU callbacks run in softirq context on the CPU that queued them; rcu_nocbs moves them to kernel threads that can run elsewhere.")
        .fix("", format!("boot with rcu_nocbs={} (implied by nohz_full=)", c.measured()))
}

pub(super) fn governor(c: &Ctx) -> Finding {
    let per_cpu: Vec<(usize, Option<String>)> =
        c.scope.cpus.iter().map(|&n| (n, read_trim(format!("{CPU}/cpu{n}/cpufreq/scaling_governor")))).collect();
    let without: Vec<usize> = per_cpu.iter().filter(|(_, g)| g.is_none()).map(|(n, _)| *n).collect();
    let other: Vec<String> =
        per_cpu.iter().filter_map(|(n, g)| g.as_ref().filter(|g| *g != "performance").map(|g| format!("CPU {n}: {g}"))).collect();
    let (severity, observed) = if without.len() == per_cpu.len() {
        (Severity::Info, "no cpufreq: a fixed frequency, or one the firmware or hypervisor sets".to_string())
    } else if other.is_empty() {
        (Severity::Ok, "performance on every measured CPU with cpufreq".to_string())
    } else {
        (Severity::Warn, words(&other))
    };
    let value: Vec<_> = per_cpu.iter().map(|(n, g)| json!({"cpu": n, "governor": g})).collect();
    Finding::new("governor", "CPU frequency governor", severity, observed)
        .value(json!({"cpus": value}))
        .why(
            "A governor other than 'performance' lowers the clock when the CPU looks idle, as an RT task's does between \
             cycles: the next cycle then runs slower and the frequency change itself stalls the CPU.",
        )
        .fix(
            format!(
                "for c in {}; do echo performance > {CPU}/cpu$c/cpufreq/scaling_governor; done   # or: rtgauge run --tune=governor",
                c.scope.cpus.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" ")
            ),
            "boot with cpufreq.default_governor=performance (or CONFIG_CPU_FREQ_DEFAULT_GOV_PERFORMANCE=y)",
        )
}

pub(super) fn boost(_c: &Ctx) -> Finding {
    let boost = read_trim(format!("{CPU}/cpufreq/boost"));
    let no_turbo = read_trim(format!("{CPU}/intel_pstate/no_turbo"));
    let (severity, observed) = match (boost.as_deref(), no_turbo.as_deref()) {
        (Some("1"), _) | (_, Some("0")) => {
            (Severity::Info, "on: the clock rises above nominal while temperature and power allow".to_string())
        }
        (Some(_), _) | (_, Some(_)) => (Severity::Ok, "off".to_string()),
        (None, None) => (Severity::Ok, "not offered (no boost or turbo control)".to_string()),
    };
    Finding::new("boost", "CPU boost (turbo)", severity, observed)
        .value(json!({"cpufreq_boost": boost, "intel_pstate_no_turbo": no_turbo}))
        .why("Boost makes the clock depend on temperature and on what the other cores do: faster on average, less predictable.")
        .fix(
            if boost.is_some() {
                format!("echo 0 > {CPU}/cpufreq/boost")
            } else {
                format!("echo 1 > {CPU}/intel_pstate/no_turbo")
            },
            "disable boost (turbo) in the firmware set-up",
        )
}

/// The current PM QoS CPU latency limit (µs) from `/dev/cpu_dma_latency` (2000000000: none).
fn dma_latency_us() -> Option<i64> {
    use std::io::Read;
    let mut b = [0u8; 16];
    let n = std::fs::File::open("/dev/cpu_dma_latency").and_then(|mut f| f.read(&mut b)).ok()?;
    match n {
        4 => Some(i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as i64),
        _ => std::str::from_utf8(&b[..n]).ok().and_then(|s| i64::from_str_radix(s.trim(), 16).ok()),
    }
}

pub(super) fn idle(c: &Ctx) -> Finding {
    let driver = read_trim(format!("{CPU}/cpuidle/current_driver"));
    let limit = dma_latency_us();
    // Per measured CPU, the enabled states and their exit latencies.
    let mut states = Vec::new();
    let mut deepest: Option<(String, u64)> = None;
    for &n in &c.scope.cpus {
        for s in 0..16 {
            let dir = format!("{CPU}/cpu{n}/cpuidle/state{s}");
            let Some(name) = read_trim(format!("{dir}/name")) else { break };
            let latency: u64 = read_trim(format!("{dir}/latency")).and_then(|v| v.parse().ok()).unwrap_or(0);
            let disabled = read_trim(format!("{dir}/disable")).as_deref() == Some("1");
            states.push(json!({"cpu": n, "state": name, "exit_latency_us": latency, "disabled": disabled}));
            if !disabled && deepest.as_ref().is_none_or(|(_, l)| latency > *l) {
                deepest = Some((name, latency));
            }
        }
    }
    let allowed = |lat: u64| limit.is_none_or(|l| (lat as i64) <= l);
    let (severity, observed) = match &deepest {
        None => (
            Severity::Ok,
            format!(
                "no idle states under cpuidle (driver {}): the CPU halts in its default way",
                driver.as_deref().unwrap_or("none")
            ),
        ),
        Some((name, lat)) if *lat > 2 && allowed(*lat) => (
            Severity::Warn,
            format!("state {name} with {lat} µs exit latency enabled, and the PM QoS limit {} allows it", limit_text(limit)),
        ),
        Some((name, lat)) => {
            (Severity::Ok, format!("deepest enabled state {name}, {lat} µs exit latency; PM QoS limit {}", limit_text(limit)))
        }
    };
    Finding::new("idle", "CPU idle states and /dev/cpu_dma_latency", severity, observed)
        .value(json!({"driver": driver, "cpu_dma_latency_us": limit, "states": states}))
        .why(
            "A CPU woken from a deep idle state first pays the state's exit latency (tens to hundreds of µs). rtgauge \
             holds /dev/cpu_dma_latency at 0 during a run, as cyclictest does; an RT application must do the same or \
             the states must be disabled.",
        )
        .fix(
            "keep /dev/cpu_dma_latency open with 0 written to it while the application runs; or: cpupower idle-set -D 2",
            "boot with processor.max_cstate=1 intel_idle.max_cstate=0 (x86) or cpuidle.off=1",
        )
}

fn limit_text(limit: Option<i64>) -> String {
    match limit {
        None => "unknown".to_string(),
        Some(l) if l >= 2_000_000_000 => "is unset".to_string(),
        Some(l) => format!("is {l} µs"),
    }
}

pub(super) fn smt(c: &Ctx) -> Finding {
    let active = read_trim(format!("{CPU}/smt/active"));
    let shared: Vec<String> = c
        .scope
        .cpus
        .iter()
        .filter_map(|&n| {
            let siblings: Vec<usize> =
                cpu_list_file(&format!("{CPU}/cpu{n}/topology/thread_siblings_list")).into_iter().filter(|&s| s != n).collect();
            let online: Vec<usize> = siblings.into_iter().filter(|s| c.system.online_cpus.contains(s)).collect();
            (!online.is_empty()).then(|| format!("CPU {n} with {}", format_cpu_list(&online)))
        })
        .collect();
    let (severity, observed) = if shared.is_empty() {
        (Severity::Ok, "no measured CPU shares its core with another online CPU".to_string())
    } else {
        (Severity::Warn, format!("measured CPUs share their cores: {}", words(&shared)))
    };
    Finding::new("smt", "SMT siblings of the measured CPUs", severity, observed)
        .value(json!({"smt_active": active, "shared": shared}))
        .why("Two hardware threads of one core share its execution units and caches: whatever runs on the sibling slows the RT task unpredictably.")
        .fix(format!("echo off > {CPU}/smt/control   # or take each sibling offline"), "boot with nosmt, or disable SMT (Hyper-Threading) in the firmware")
}

/// One interrupt line: number, name, count per CPU, and where it may be delivered.
struct Irq {
    number: u32,
    name: String,
    counts: Vec<u64>,
    cpus: Vec<usize>,
}

/// The numbered interrupts of `/proc/interrupts`, with their effective affinities.
fn irqs() -> Vec<Irq> {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap_or_default();
    let mut lines = text.lines();
    let ncpu = lines.next().map_or(0, |h| h.split_whitespace().count());
    lines
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let number: u32 = f.next()?.strip_suffix(':')?.parse().ok()?;
            let rest: Vec<&str> = f.collect();
            let counts: Vec<u64> = rest.iter().take(ncpu).map(|c| c.parse().unwrap_or(0)).collect();
            let name = rest.last().copied().unwrap_or("").to_string();
            let dir = format!("/proc/irq/{number}");
            let eff = cpu_list_file(&format!("{dir}/effective_affinity_list"));
            let cpus = if eff.is_empty() { cpu_list_file(&format!("{dir}/smp_affinity_list")) } else { eff };
            Some(Irq { number, name, counts, cpus })
        })
        .collect()
}

/// Whether irqbalance runs (it would move interrupts back onto measured CPUs).
fn irqbalance_running() -> bool {
    crate::audit::tasks::processes().into_iter().any(|p| read_trim(format!("/proc/{p}/comm")).as_deref() == Some("irqbalance"))
}

pub(super) fn irq_affinity(c: &Ctx) -> Finding {
    let all = irqs();
    let onto: Vec<&Irq> = all.iter().filter(|i| i.cpus.iter().any(|x| c.scope.cpus.contains(x))).collect();
    let taken = |i: &Irq| c.scope.cpus.iter().map(|&n| i.counts.get(n).copied().unwrap_or(0)).sum::<u64>();
    // The busiest on the measured CPUs first; the value keeps them all.
    let mut busiest = onto.clone();
    busiest.sort_by_key(|i| std::cmp::Reverse(taken(i)));
    let mut described: Vec<String> = busiest.iter().take(5).map(|i| format!("{} {} ({})", i.number, i.name, taken(i))).collect();
    if onto.len() > 5 {
        described.push(format!("{} more", onto.len() - 5));
    }
    let busy = onto.iter().any(|i| taken(i) > 0);
    let balancer = irqbalance_running();
    let (severity, observed) = match (onto.is_empty(), busy) {
        (true, _) => (Severity::Ok, format!("none of {} interrupts may land on the measured CPUs", all.len())),
        (false, true) => (
            Severity::Warn,
            format!(
                "{} of {} interrupts may land on the measured CPUs; taken there so far: {}",
                onto.len(),
                all.len(),
                words(&described)
            ),
        ),
        (false, false) => (
            Severity::Info,
            format!(
                "{} of {} interrupts may land on the measured CPUs, none taken there yet: {}",
                onto.len(),
                all.len(),
                words(&described)
            ),
        ),
    };
    let observed = if balancer { format!("{observed}; irqbalance runs and moves them") } else { observed };
    let list: Vec<_> =
        onto.iter().map(|i| json!({"irq": i.number, "name": i.name, "cpus": i.cpus, "on_measured": taken(i)})).collect();
    let housekeeping: Vec<usize> = c.system.online_cpus.iter().copied().filter(|x| !c.scope.cpus.contains(x)).collect();
    Finding::new("irq_affinity", "Interrupts on the measured CPUs", severity, observed)
        .value(json!({"irqs": list, "irqbalance": balancer}))
        .why(
            "Every interrupt delivered to a measured CPU runs its handler there, ahead of any thread; device interrupts \
             belong on the other CPUs (the Cortex-A53 slides set the network card's IRQ affinity).",
        )
        .fix(
            if housekeeping.is_empty() {
                "measure a subset of the CPUs (--cpus) so interrupts can go elsewhere".to_string()
            } else {
                format!(
                    "for i in {}; do echo {} > /proc/irq/$i/smp_affinity_list; done   # or: rtgauge run --tune=irq-affinity",
                    onto.iter().map(|i| i.number.to_string()).collect::<Vec<_>>().join(" "),
                    format_cpu_list(&housekeeping)
                )
            },
            if housekeeping.is_empty() {
                String::new()
            } else {
                format!(
                    "boot with irqaffinity={}{}",
                    format_cpu_list(&housekeeping),
                    if balancer {
                        format!(", and IRQBALANCE_BANNED_CPULIST={} for irqbalance", c.measured())
                    } else {
                        String::new()
                    }
                )
            },
        )
}

pub(super) fn default_irq_affinity(c: &Ctx) -> Finding {
    let mask = read_trim("/proc/irq/default_smp_affinity");
    let cpus = mask.as_deref().map(cpu_mask).unwrap_or_default();
    let online: Vec<usize> = cpus.into_iter().filter(|x| c.system.online_cpus.contains(x)).collect();
    let hit: Vec<usize> = c.scope.cpus.iter().copied().filter(|x| online.contains(x)).collect();
    let (severity, observed) = match (&mask, hit.is_empty()) {
        (None, _) => (Severity::Info, "unknown: /proc/irq/default_smp_affinity not readable".to_string()),
        (Some(_), true) => (Severity::Ok, format!("new interrupts go to CPUs {}, none measured", format_cpu_list(&online))),
        (Some(_), false) => (
            Severity::Info,
            format!(
                "new interrupts may go to CPUs {}, measured ones {} among them",
                format_cpu_list(&online),
                format_cpu_list(&hit)
            ),
        ),
    };
    let housekeeping: Vec<usize> = c.system.online_cpus.iter().copied().filter(|x| !c.scope.cpus.contains(x)).collect();
    Finding::new("default_irq_affinity", "Where new interrupts go (irqaffinity)", severity, observed)
        .value(json!({"mask": mask, "cpus": online, "irqaffinity_param": c.param("irqaffinity")}))
        .why("An interrupt requested later (a module loaded, a device plugged in) starts with this affinity.")
        .fix(
            if housekeeping.is_empty() {
                String::new()
            } else {
                format!(
                    "echo {:x} > /proc/irq/default_smp_affinity",
                    housekeeping.iter().fold(0u128, |m, &x| if x < 128 { m | (1 << x) } else { m })
                )
            },
            if housekeeping.is_empty() {
                String::new()
            } else {
                format!("boot with irqaffinity={}", format_cpu_list(&housekeeping))
            },
        )
}
