//! Checks of the kernel itself: its preemption model, timers and clock, build options, IRQ
//! threading, tracing support, and whether it runs under a hypervisor.

use super::{words, Ctx};
use crate::audit::read_trim;
use crate::result::findings::{Finding, Severity};
use serde_json::json;

pub(super) fn preemption(c: &Ctx) -> Finding {
    let p = &c.system.preemption;
    // The mode the result records (`system.preemption.dynamic_mode`) and where it was read
    // (the same reading: the audit never names a mode the result leaves null).
    let (mode, source) = match (&p.dynamic_mode, p.model.as_str()) {
        (Some(m), _) => (Some(m.clone()), p.mode_source().unwrap_or("?")),
        (None, "PREEMPT_DYNAMIC") => (
            c.kconfig.as_ref().and_then(crate::audit::config_default_mode).map(str::to_string),
            "the kernel configuration's default",
        ),
        _ => (None, ""),
    };
    let (severity, observed) = match (p.realtime, p.model.as_str(), mode.as_deref()) {
        (true, ..) => (Severity::Ok, "PREEMPT_RT: a fully preemptible real-time kernel".to_string()),
        (_, "PREEMPT_DYNAMIC", Some(m @ ("none" | "voluntary"))) => {
            (Severity::Bad, format!("PREEMPT_DYNAMIC in mode '{m}' (from {source}): not preemptible in the kernel"))
        }
        (_, "PREEMPT_DYNAMIC", Some(m)) => {
            (Severity::Warn, format!("PREEMPT_DYNAMIC in mode '{m}' (from {source}): preemptible, but not PREEMPT_RT"))
        }
        (_, "PREEMPT_DYNAMIC", None) => (Severity::Warn, "PREEMPT_DYNAMIC, mode unknown: not PREEMPT_RT".to_string()),
        (_, "PREEMPT" | "PREEMPT_LAZY", _) => (Severity::Warn, format!("{}: preemptible, but not PREEMPT_RT", p.model)),
        (_, "NONE_OR_VOLUNTARY", _) => {
            let which = if c.config("PREEMPT_VOLUNTARY") {
                "voluntary"
            } else if c.config("PREEMPT_NONE") {
                "none"
            } else {
                "none or voluntary"
            };
            (Severity::Bad, format!("no kernel preemption ({which})"))
        }
        _ => (Severity::Warn, "unknown: nothing readable names the preemption model".to_string()),
    };
    let dynamic = p.model == "PREEMPT_DYNAMIC";
    Finding::new("preemption", "Kernel preemption model", severity, observed)
        .value(json!({"model": p.model, "realtime": p.realtime, "dynamic_mode": mode, "evidence": p.evidence}))
        .why(
            "Only PREEMPT_RT makes nearly all kernel code preemptible (spinlocks become sleeping locks, interrupt \
             handlers run in threads), which bounds the worst case to tens of µs. 'full' preemption still leaves long \
             non-preemptible sections; with 'voluntary' or 'none' another task's system call can hold the CPU for \
             milliseconds (Cortex-A8 study: 58 µs with PREEMPT_RT, 2465 µs preemptible).",
        )
        .fix(
            if dynamic && severity == Severity::Bad {
                "mount -t debugfs none /sys/kernel/debug; echo full > /sys/kernel/debug/sched/preempt"
            } else {
                ""
            },
            if dynamic {
                "a PREEMPT_RT kernel (CONFIG_PREEMPT_RT=y; Debian: apt install linux-image-rt-amd64 or linux-image-rt-arm64); \
                 meanwhile boot with preempt=full"
            } else {
                "a PREEMPT_RT kernel (CONFIG_PREEMPT_RT=y; Debian: apt install linux-image-rt-amd64 or linux-image-rt-arm64)"
            },
        )
}

pub(super) fn hrtimers(c: &Ctx) -> Finding {
    let res = crate::sys::time::monotonic_resolution_ns().ok();
    let (severity, observed) = match res {
        Some(1) => (Severity::Ok, "active: CLOCK_MONOTONIC resolves 1 ns".to_string()),
        Some(ns) => (Severity::Bad, format!("inactive: CLOCK_MONOTONIC resolves {} µs (a tick)", ns / 1000)),
        None => (Severity::Warn, "unknown: clock_getres failed".to_string()),
    };
    Finding::new("hrtimers", "High-resolution timers", severity, observed)
        .value(json!({"resolution_ns": res, "config_high_res_timers": c.kconfig.as_ref().map(|k| k.enabled("HIGH_RES_TIMERS"))}))
        .why(
            "Without high-resolution timers every sleep ends on the next scheduler tick: a 1 ms cycle can only be met \
             to within a whole tick (4 ms at HZ=250).",
        )
        .fix("", "a kernel with CONFIG_HIGH_RES_TIMERS=y, not booted with highres=off")
}

pub(super) fn hz(c: &Ctx) -> Finding {
    let hz: Option<u64> = c.kconfig.as_ref().and_then(|k| k.get("HZ")?.parse().ok());
    let hres = crate::sys::time::monotonic_resolution_ns().ok() == Some(1);
    let (severity, observed) = match hz {
        Some(hz) if hres => {
            (Severity::Ok, format!("HZ={hz} (a tick every {} µs); timers are high-resolution", 1_000_000 / hz.max(1)))
        }
        Some(hz) => {
            (Severity::Warn, format!("HZ={hz} (a tick every {} µs) and no high-resolution timers", 1_000_000 / hz.max(1)))
        }
        None => (Severity::Info, "unknown: the kernel configuration is not readable".to_string()),
    };
    Finding::new("hz", "Scheduler tick (HZ)", severity, observed)
        .value(json!({"hz": hz}))
        .why(
            "With high-resolution timers the tick no longer limits timer precision, but it still paces the scheduler, \
             RCU and timer-wheel timeouts; on the measured CPUs each tick is a short interruption (NO_HZ_FULL removes it).",
        )
        .fix("", "a kernel with CONFIG_HIGH_RES_TIMERS=y (HZ=1000 for tick-based work)")
}

/// Clock sources that are read from the CPU itself, cheaply and precisely.
const GOOD_CLOCKS: &[&str] = &["tsc", "arch_sys_counter", "riscv_clocksource", "timebase", "MIPS", "arm_global_timer"];
/// Paravirtual clocks: a virtual machine's.
const VM_CLOCKS: &[&str] = &["kvm-clock", "xen", "hyperv_clocksource_tsc_page", "hyperv_clocksource_msr", "vmware-tsc"];

pub(super) fn clocksource(c: &Ctx) -> Finding {
    let base = "/sys/devices/system/clocksource/clocksource0";
    let current = read_trim(format!("{base}/current_clocksource")).unwrap_or_default();
    let available: Vec<String> =
        read_trim(format!("{base}/available_clocksource")).unwrap_or_default().split_whitespace().map(str::to_string).collect();
    let flags = cpu_flags();
    let tsc_flags: Vec<&str> =
        ["constant_tsc", "nonstop_tsc", "tsc_reliable"].into_iter().filter(|f| flags.iter().any(|g| g == f)).collect();
    let x86 = c.system.architecture == "x86_64";
    let tsc_dropped = x86 && !available.iter().any(|a| a == "tsc");
    let (severity, observed) = if current.is_empty() {
        (Severity::Info, "unknown".to_string())
    } else if current.contains("jiffies") {
        (Severity::Bad, format!("{current}: the clock advances only on ticks"))
    } else if tsc_dropped {
        (Severity::Warn, format!("{current}: the kernel found the TSC unstable and no longer offers it"))
    } else if GOOD_CLOCKS.contains(&current.as_str()) {
        let stable = if current == "tsc" { format!(" ({})", tsc_flags.join(", ")) } else { String::new() };
        (Severity::Ok, format!("{current}{stable}: read from the CPU, cheap and precise"))
    } else if VM_CLOCKS.contains(&current.as_str()) {
        (Severity::Info, format!("{current}: a virtual machine's paravirtual clock"))
    } else if ["hpet", "acpi_pm", "pit"].contains(&current.as_str()) {
        (Severity::Warn, format!("{current}: a slow platform timer (each read costs about a microsecond)"))
    } else {
        (Severity::Info, current.clone())
    };
    Finding::new("clocksource", "Clock source", severity, observed)
        .value(json!({"current": current, "available": available, "tsc_flags": tsc_flags}))
        .why(
            "Every latency sample reads the clock, and so does every timer the kernel programs: a slow clock source \
             (hpet, acpi_pm) adds its read cost and jitter to each, and an unstable TSC makes the kernel fall back to one.",
        )
        .fix(
            if available.iter().any(|a| a == "tsc") && current != "tsc" {
                format!("echo tsc > {base}/current_clocksource")
            } else {
                String::new()
            },
            "boot with clocksource=tsc tsc=reliable only where the TSC is known to be stable (constant_tsc, nonstop_tsc)",
        )
}

/// The x86 feature flags of the first CPU (empty elsewhere).
fn cpu_flags() -> Vec<String> {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("flags")
                .and_then(|r| r.split_once(':'))
                .map(|(_, f)| f.split_whitespace().map(str::to_string).collect())
        })
        .unwrap_or_default()
}

/// The options of the kernel's configuration that decide real-time behaviour.
const RT_OPTIONS: &[&str] = &[
    "PREEMPT_RT",
    "HIGH_RES_TIMERS",
    "NO_HZ_FULL",
    "NO_HZ_IDLE",
    "IRQ_FORCED_THREADING",
    "RT_GROUP_SCHED",
    "CPU_ISOLATION",
    "HZ",
];

pub(super) fn kernel_config(c: &Ctx) -> Finding {
    let Some(k) = &c.kconfig else {
        return Finding::new("kernel_config", "Kernel configuration", Severity::Info, "not readable: no /proc/config.gz nor /boot/config-RELEASE")
            .value(json!({"source": null}))
            .why("The build options decide what the kernel can do for real time (PREEMPT_RT, high-resolution timers, NO_HZ_FULL) and what slows it (debug options).")
            .fix("modprobe configs   # then /proc/config.gz appears", "CONFIG_IKCONFIG=y and CONFIG_IKCONFIG_PROC=y, or install the kernel's config file in /boot");
    };
    let set: serde_json::Map<String, serde_json::Value> =
        RT_OPTIONS.iter().map(|o| (o.to_string(), k.get(o).map_or(serde_json::Value::Null, |v| json!(v)))).collect();
    let on = |o: &str| k.enabled(o);
    let missing: Vec<String> =
        ["PREEMPT_RT", "HIGH_RES_TIMERS", "NO_HZ_FULL"].iter().filter(|o| !on(o)).map(|o| format!("CONFIG_{o}")).collect();
    let severity = if !on("HIGH_RES_TIMERS") {
        Severity::Warn
    } else if missing.is_empty() {
        Severity::Ok
    } else {
        Severity::Info
    };
    let observed = if missing.is_empty() {
        format!("{}: PREEMPT_RT, HIGH_RES_TIMERS and NO_HZ_FULL built in", k.source)
    } else {
        format!("{}: without {}", k.source, words(&missing))
    };
    Finding::new("kernel_config", "Kernel configuration", severity, observed)
        .value(json!({"source": k.source, "options": set}))
        .why(
            "PREEMPT_RT bounds kernel latency, HIGH_RES_TIMERS gives exact timers, NO_HZ_FULL lets an isolated CPU run \
             one RT task without the scheduler tick.",
        )
        .fix("", "rebuild or install a kernel with CONFIG_PREEMPT_RT=y, CONFIG_HIGH_RES_TIMERS=y, CONFIG_NO_HZ_FULL=y")
}

/// Debug options that make locking, allocation or preemption paths much slower.
const HEAVY_DEBUG: &[&str] = &[
    "LOCKDEP",
    "PROVE_LOCKING",
    "DEBUG_LOCK_ALLOC",
    "LOCK_STAT",
    "PROVE_RCU",
    "KASAN",
    "KCSAN",
    "KMSAN",
    "DEBUG_PAGEALLOC_ENABLE_DEFAULT",
    "DEBUG_KMEMLEAK",
    "DEBUG_OBJECTS",
    "SLUB_DEBUG_ON",
];
/// Debug options with a smaller, still measurable cost on hot paths.
const LIGHT_DEBUG: &[&str] = &[
    "DEBUG_PREEMPT",
    "DEBUG_ATOMIC_SLEEP",
    "DEBUG_SPINLOCK",
    "DEBUG_MUTEXES",
    "DEBUG_RT_MUTEXES",
    "IRQSOFF_TRACER",
    "PREEMPT_TRACER",
    "DEBUG_VM",
];

pub(super) fn debug_options(c: &Ctx) -> Finding {
    let Some(k) = &c.kconfig else {
        return Finding::new(
            "debug_options",
            "Kernel debug options that add latency",
            Severity::Info,
            "unknown: the kernel configuration is not readable",
        )
        .value(json!({"heavy": null, "light": null}))
        .why("Lock debugging, KASAN and similar options slow every lock, allocation or preemption change, often by microseconds.")
        .fix("modprobe configs   # then /proc/config.gz appears", "CONFIG_IKCONFIG_PROC=y");
    };
    let heavy: Vec<String> = HEAVY_DEBUG.iter().filter(|o| k.enabled(o)).map(|o| format!("CONFIG_{o}")).collect();
    let light: Vec<String> = LIGHT_DEBUG.iter().filter(|o| k.enabled(o)).map(|o| format!("CONFIG_{o}")).collect();
    let (severity, observed) = match (heavy.is_empty(), light.is_empty()) {
        (true, true) => (Severity::Ok, "none of the options known to add latency".to_string()),
        (false, _) => (Severity::Bad, format!("{} set", words(&[heavy.clone(), light.clone()].concat()))),
        (true, false) => (Severity::Warn, format!("{} set", words(&light))),
    };
    Finding::new("debug_options", "Kernel debug options that add latency", severity, observed)
        .value(json!({"heavy": heavy, "light": light}))
        .why(
            "Lock dependency checking (LOCKDEP, PROVE_LOCKING), memory sanitizers (KASAN, KCSAN) and similar options \
             add work to every lock, allocation or preemption change: figures from such a kernel are not the product's.",
        )
        .fix("", format!("a kernel built without {}", words(&[heavy, light].concat())))
}

pub(super) fn threadirqs(c: &Ctx) -> Finding {
    let (severity, observed) = if c.system.preemption.realtime {
        (Severity::Ok, "forced by PREEMPT_RT: every IRQ handler not marked otherwise runs in a thread".to_string())
    } else if c.flag("threadirqs") {
        (Severity::Ok, "threadirqs on the command line: IRQ handlers run in threads".to_string())
    } else if c.kconfig.is_some() && !c.config("IRQ_FORCED_THREADING") {
        (Severity::Info, "not possible: the kernel has no IRQ_FORCED_THREADING".to_string())
    } else {
        (Severity::Info, "no: IRQ handlers run in hard interrupt context".to_string())
    };
    Finding::new("threadirqs", "Threaded interrupt handlers", severity, observed)
        .value(json!({"forced": c.system.preemption.realtime || c.flag("threadirqs")}))
        .why(
            "A handler in hard interrupt context runs before any thread, however high its priority; in a thread it \
             gets a priority (FIFO 50 by default) that an RT task can be placed above or below.",
        )
        .fix("", "boot with threadirqs (PREEMPT_RT kernels thread IRQs anyway)")
}

pub(super) fn tracefs(_c: &Ctx) -> Finding {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let mounted = mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(2) == Some(&"tracefs")).then(|| f[1].to_string())
    });
    let supported =
        std::fs::read_to_string("/proc/filesystems").unwrap_or_default().lines().any(|l| l.trim_end().ends_with("tracefs"));
    let tracers: Vec<String> = mounted
        .as_ref()
        .and_then(|m| read_trim(format!("{m}/available_tracers")))
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let events_at = |m: &str, e: &str| std::path::Path::new(&format!("{m}/events/{e}")).exists();
    let events: Vec<&str> = ["sched/sched_switch", "sched/sched_wakeup", "irq/irq_handler_entry", "irq/softirq_entry"]
        .into_iter()
        .filter(|e| mounted.as_deref().is_some_and(|m| events_at(m, e)))
        .collect();
    let rtla: Vec<&str> = ["timerlat", "osnoise"].into_iter().filter(|t| tracers.iter().any(|x| x == t)).collect();
    let (severity, observed) = match (&mounted, supported) {
        (Some(m), _) => (
            Severity::Ok,
            format!(
                "mounted at {m}; {} of the 4 scheduling and IRQ events; {}",
                events.len(),
                if rtla.is_empty() {
                    "no timerlat or osnoise tracer".to_string()
                } else {
                    format!("tracers {}", rtla.join(" and "))
                }
            ),
        ),
        (None, true) => (Severity::Info, "supported, not mounted (rtgauge run --trace mounts it for the run)".to_string()),
        (None, false) => (Severity::Info, "not supported by this kernel: --trace cannot explain a worst case".to_string()),
    };
    Finding::new("tracefs", "Kernel tracing (tracefs)", severity, observed)
        .value(json!({"mounted_at": mounted, "supported": supported, "events": events, "tracers": tracers}))
        .why(
            "The kernel's trace of scheduling and interrupt events is what explains a worst case: which IRQ, softirq \
             or thread held the CPU (rtgauge run --trace, rtla timerlat).",
        )
        .fix(
            if supported { "mount -t tracefs nodev /sys/kernel/tracing" } else { "" },
            if supported {
                "an /etc/fstab line: tracefs /sys/kernel/tracing tracefs defaults 0 0"
            } else {
                "a kernel with CONFIG_FTRACE=y and CONFIG_TRACING=y"
            },
        )
}

/// What says this runs in a virtual machine: the CPU's hypervisor flag and signature, the
/// firmware's vendor, Xen's or the device tree's hypervisor node.
pub(super) fn virtualization(_c: &Ctx) -> Finding {
    let mut signs = Vec::new();
    let signature = crate::sys::host::hypervisor_signature();
    if let Some(s) = &signature {
        signs.push(format!("CPUID hypervisor '{s}'"));
    } else if cpu_flags().iter().any(|f| f == "hypervisor") {
        signs.push("CPU flag 'hypervisor'".to_string());
    }
    if let Some(t) = read_trim("/sys/hypervisor/type") {
        signs.push(format!("/sys/hypervisor/type {t}"));
    }
    for f in ["sys_vendor", "product_name"] {
        if let Some(v) = read_trim(format!("/sys/class/dmi/id/{f}")) {
            if ["QEMU", "KVM", "VMware", "VirtualBox", "Xen", "Virtual Machine", "Bochs", "Parallels", "Google Compute"]
                .iter()
                .any(|k| v.contains(k))
            {
                signs.push(format!("firmware {f} '{v}'"));
            }
        }
    }
    if std::path::Path::new("/proc/device-tree/hypervisor").exists() {
        signs.push("device tree node /hypervisor".to_string());
    }
    if read_trim("/proc/device-tree/compatible").is_some_and(|c| c.contains("linux,dummy-virt")) {
        signs.push("device tree 'linux,dummy-virt' (qemu's virt board)".to_string());
    }
    let emulated = signature.as_deref() == Some("TCGTCGTCGTCG");
    let (severity, observed) = match (signs.is_empty(), emulated) {
        (true, _) => (Severity::Ok, "no sign of a hypervisor: bare metal".to_string()),
        (false, true) => (Severity::Warn, format!("an emulated CPU ({}): latency figures prove function only", words(&signs))),
        (false, false) => (Severity::Warn, format!("a virtual machine ({})", words(&signs))),
    };
    Finding::new("virtualization", "Virtual machine", severity, observed)
        .value(json!({"virtual": !signs.is_empty(), "signature": signature, "signs": signs}))
        .why(
            "In a virtual machine the host schedules the guest's virtual CPUs: the host's own interrupts and tasks stop \
             the guest for up to milliseconds at moments the guest cannot see or prevent, so hypervisor noise dominates \
             every worst case and no guest setting removes it.",
        )
        .fix(
            "",
            "measure on the board itself; a guest that must be real-time needs pinned, isolated host CPUs for its vCPUs \
             and PREEMPT_RT on host and guest",
        )
}
