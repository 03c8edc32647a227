//! The warnings a run gives, each a finished sentence: those known before it starts (a load
//! that outranks a measurement thread, a busy loop sharing a CPU), those of the measurement
//! itself (threads held off their CPU, facts lost, page faults), failed loads; each said once.

use crate::aggregate::Collector;
use crate::load::spec::LoadSpec;
use crate::load::watchdog::Watchdog;
use crate::probe::ProbePlan;
use crate::result::system::SystemInfo;
use crate::scenario::RunPlan;
use crate::vocab::cpus::format_cpu_list;
use std::sync::Arc;

use super::resolved::{series_label, Resolved};

/// Ends the watchdog; says so when it had to move loads to SCHED_OTHER for the run to end.
pub(super) fn finish_watchdog(w: Option<Watchdog>, warnings: &mut Vec<String>) {
    let moved = w.map_or(0, Watchdog::finish);
    if moved > 0 {
        warnings.push(format!(
            "{moved} load threads at an RT policy still held CPUs after the planned end or a stop: the watchdog moved \
             them to SCHED_OTHER so the run could end"
        ));
    }
}

/// Says, on a terminal, that the default load mix is in use.
pub(super) fn announce_default_load(plan: &RunPlan, resolved: &Resolved) {
    if resolved.load_source == "default" && !plan.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        crate::report::out::err_line(&format!(
            "rtgauge: measuring under the default worst-case load ({}); --load none measures an idle system",
            resolved.load_specs.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
}

/// Each warning once, in the order first given: the same finding reached twice (a load given
/// twice, one failing in two phases, a setting refused for each of several reasons alike) is
/// said, and kept in the result, once.
pub(super) fn once(warnings: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    warnings.into_iter().filter(|w| seen.insert(w.clone())).collect()
}

pub(super) fn load_failure_warnings(records: &[crate::result::load::LoadRecord]) -> Vec<String> {
    records
        .iter()
        .filter(|l| l.failed)
        .map(|l| format!("load '{}' failed: {}", l.spec, l.error.as_deref().unwrap_or("see the loads section of the result")))
        .collect()
}

/// Warnings known before the run starts: a load at or above the priority of a measurement
/// thread on a measured CPU it may run on holds that thread off the CPU (each probe's threads at
/// their own priority: the wake-up probe's `priority=`, else the run's).
pub(super) fn load_priority_warnings(
    plan: &RunPlan,
    probes: &[ProbePlan],
    specs: &[LoadSpec],
    system: &SystemInfo,
) -> Vec<String> {
    use crate::result::load::LoadPolicy;
    // A SCHED_DEADLINE thread runs ahead of every FIFO/RR load.
    if !plan.policy.has_priority() {
        return Vec::new();
    }
    let load_cpus = plan.load_cpus.clone().unwrap_or_else(|| system.allowed_cpus.clone());
    // The lowest priority of a measurement thread on each measured CPU the loads may run on.
    let mut lowest = std::collections::BTreeMap::<usize, i32>::new();
    for p in probes {
        let priority = p.probe.priorities().map_or(plan.priority, |(lowest, _)| lowest);
        for &c in p.cpus.iter().filter(|c| load_cpus.contains(c)) {
            let l = lowest.entry(c).or_insert(priority);
            *l = (*l).min(priority);
        }
    }
    specs
        .iter()
        .filter_map(|s| {
            let (Some(LoadPolicy::Fifo(p)) | Some(LoadPolicy::Rr(p))) = s.policy else { return None };
            let held: Vec<(usize, i32)> = lowest.iter().filter(|(_, &l)| p >= l).map(|(&c, &l)| (c, l)).collect();
            let below = held.iter().map(|&(_, l)| l).min()?;
            let cpus: Vec<usize> = held.iter().map(|&(c, _)| c).collect();
            Some(format!(
                "load '{}' runs at RT priority {p}, at or above the measurement's {} {below}, on measured CPUs {}: \
                 while it runs it holds the measurement off those CPUs (their periods count as missed); \
                 lower its priority or move it with --load-cpus",
                s.text,
                plan.policy.kernel_name(),
                format_cpu_list(&cpus)
            ))
        })
        .collect()
}

/// A busy loop (the noise probe) holds its CPU from every thread at its
/// priority or below: another probe on that CPU is starved.
pub(super) fn busy_loop_warnings(probes: &[ProbePlan]) -> Vec<String> {
    let mut w = Vec::new();
    for busy in probes.iter().filter(|p| p.probe.accounting().busy_loop()) {
        for other in probes.iter().filter(|o| !std::ptr::addr_eq(Arc::as_ptr(&o.probe), Arc::as_ptr(&busy.probe))) {
            let shared: Vec<usize> = busy.cpus.iter().copied().filter(|c| other.cpus.contains(c)).collect();
            if !shared.is_empty() {
                w.push(format!(
                    "{} and {} share CPUs {}: the {} busy loop holds the CPU from the {} threads at its priority or \
                     below; give each its own CPUs (--measure {}@CPUS)",
                    busy.probe.name(),
                    other.probe.name(),
                    format_cpu_list(&shared),
                    busy.probe.name(),
                    other.probe.name(),
                    busy.probe.name()
                ));
            }
        }
    }
    w
}

/// Warnings about the measurement itself: threads held off their CPU, facts lost in the hand-off,
/// page faults taken while measuring.
pub(super) fn measurement_warnings(collector: &Collector, probes: &[ProbePlan], memory_locked: bool) -> Vec<String> {
    let mut w = Vec::new();
    let faulted: Vec<String> = collector
        .accounts
        .iter()
        .filter_map(|a| a.page_faults.filter(|&n| n > 0).map(|n| format!("{}/cpu{} {n}", series_label(probes, a.key), a.key.cpu)))
        .collect();
    if !faulted.is_empty() {
        // rtgauge never forks (see load::launch); locked pages still move when the kernel migrates them.
        let why = if memory_locked {
            "memory was locked, yet the kernel may move locked pages (memory compaction: \
             'sysctl vm.compact_unevictable_allowed=0'; NUMA balancing: 'sysctl kernel.numa_balancing=0')"
        } else {
            "lock memory (drop --no-mlock, run as root or with CAP_IPC_LOCK) or lengthen the warm-up"
        };
        w.push(format!(
            "the measurement threads took page faults while measuring ({}); each lengthened the wake-up it fell in: {why}",
            faulted.join(", ")
        ));
    }
    for a in &collector.accounts {
        if a.unserved > 0 {
            w.push(format!(
                "the {} thread of cpu{} did not run for its last {} ({}): something of higher \
                 priority held the CPU; they count as missed",
                series_label(probes, a.key),
                a.key.cpu,
                crate::vocab::Count(a.unserved, "period"),
                crate::vocab::units::Nanos(a.unserved.saturating_mul(a.schedule.interval_ns))
            ));
        }
    }
    let lost: u64 = collector.accounts.iter().map(|a| a.run.lost).sum();
    if lost > 0 {
        w.push(format!(
            "{} could not be handed to the collector in time (it was starved); they count in samples, \
             min and max but are missing from the histograms and percentiles",
            crate::vocab::Count(lost, "sample")
        ));
    }
    w
}
