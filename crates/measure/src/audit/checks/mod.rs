//! The settings that spoil latency, checked one by one (`rtgauge check`, and the audit in
//! every run's result). Each check reads what it needs from `/proc`, `/sys` and the kernel's
//! configuration, changes nothing, and returns one [`Finding`] with the fix. Grouped by what
//! they look at: the kernel (`kernel`), the scheduler and the process's rights (`sched`), the
//! CPUs and their interrupts (`cpu`), memory (`memory`).

mod cpu;
mod kernel;
mod memory;
mod sched;

use super::kconfig::KernelConfig;
use crate::result::findings::Finding;
use crate::result::system::SystemInfo;
use crate::vocab::cpus::parse_cpu_list;

/// What the audit is about: the CPUs measured and the priority they are measured at.
#[derive(Debug, Clone)]
pub struct Scope {
    pub cpus: Vec<usize>,
    /// The measurement's RT priority (IRQ threads at or above it preempt it).
    pub priority: i32,
}

/// Everything the checks share, read once.
struct Ctx<'a> {
    system: &'a SystemInfo,
    scope: &'a Scope,
    kconfig: Option<KernelConfig>,
    /// The kernel's command line, split into words.
    cmdline: Vec<String>,
}

impl Ctx<'_> {
    /// The value of boot parameter `name=` (its last occurrence), if given.
    fn param(&self, name: &str) -> Option<&str> {
        self.cmdline.iter().rev().find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
    }
    /// Whether the boot parameter `name` (a flag, no value) was given.
    fn flag(&self, name: &str) -> bool {
        self.cmdline.iter().any(|w| w == name)
    }
    fn config(&self, name: &str) -> bool {
        self.kconfig.as_ref().is_some_and(|k| k.enabled(name))
    }
    /// The measured CPUs as a list (`0-1`).
    fn measured(&self) -> String {
        crate::vocab::cpus::format_cpu_list(&self.scope.cpus)
    }
}

/// Every check in the order `rtgauge check` prints them.
const CHECKS: &[fn(&Ctx) -> Finding] = &[
    kernel::preemption,
    kernel::hrtimers,
    kernel::hz,
    kernel::clocksource,
    kernel::kernel_config,
    kernel::debug_options,
    kernel::threadirqs,
    sched::rt_throttling,
    sched::rt_group,
    sched::cpu_bandwidth,
    sched::rlimit_rtprio,
    sched::rlimit_memlock,
    memory::swap,
    memory::thp,
    cpu::isolcpus,
    cpu::nohz_full,
    cpu::rcu_nocbs,
    cpu::governor,
    cpu::boost,
    cpu::idle,
    cpu::smt,
    cpu::irq_affinity,
    cpu::default_irq_affinity,
    sched::irq_threads,
    sched::timer_migration,
    sched::libc,
    sched::pi_mutex,
    kernel::tracefs,
    kernel::virtualization,
];

/// Audits the system for a measurement of `scope`: one finding per check.
pub fn audit(system: &SystemInfo, scope: &Scope) -> Vec<Finding> {
    let ctx = Ctx {
        system,
        scope,
        kconfig: KernelConfig::read(&system.kernel_release),
        cmdline: super::read_trim("/proc/cmdline").unwrap_or_default().split_whitespace().map(str::to_string).collect(),
    };
    CHECKS.iter().map(|check| check(&ctx)).collect()
}

/// A CPU list file (`0-3,5`), empty when absent or blank (`(null)` in some kernels).
fn cpu_list_file(path: &str) -> Vec<usize> {
    super::read_trim(path).filter(|s| !s.is_empty() && s != "(null)").and_then(|s| parse_cpu_list(&s).ok()).unwrap_or_default()
}

/// A hexadecimal CPU mask (`/proc/irq/default_smp_affinity`: `3`, `ffffffff,ffffffff`).
fn cpu_mask(text: &str) -> Vec<usize> {
    let hex: String = text.trim().chars().filter(|c| *c != ',').collect();
    let mut cpus = Vec::new();
    for (i, c) in hex.chars().rev().enumerate() {
        let nibble = c.to_digit(16).unwrap_or(0);
        cpus.extend((0..4).filter(|b| nibble & (1 << b) != 0).map(|b| i * 4 + b));
    }
    cpus
}

/// The words of a list for a sentence: `a, b and c`.
fn words(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_lists() {
        assert_eq!(cpu_mask("3"), vec![0, 1]);
        assert_eq!(cpu_mask("00000001,00000000"), vec![32]);
        assert_eq!(cpu_mask("a"), vec![1, 3]);
        assert_eq!(words(&["a".into(), "b".into(), "c".into()]), "a, b and c");
    }

    #[test]
    fn every_check_reports_on_this_machine() {
        let system = crate::audit::probe_system();
        let scope = Scope { cpus: system.online_cpus.clone(), priority: 80 };
        let findings = audit(&system, &scope);
        assert_eq!(findings.len(), CHECKS.len());
        let mut ids: Vec<&str> = findings.iter().map(|f| f.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CHECKS.len(), "ids are unique");
        for f in &findings {
            assert!(!f.observed.is_empty() && !f.why.is_empty() && !f.title.is_empty(), "{f:?}");
            if f.severity >= crate::result::findings::Severity::Warn {
                assert!(f.fix.is_some() || f.persistent.is_some(), "a warning says what to do: {f:?}");
            }
        }
    }
}
