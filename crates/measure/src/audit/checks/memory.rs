//! Checks of memory management: swap and transparent huge pages.

use super::Ctx;
use crate::audit::read_trim;
use crate::result::findings::{Finding, Severity};
use serde_json::json;

pub(super) fn swap(_c: &Ctx) -> Finding {
    let swaps: Vec<String> = std::fs::read_to_string("/proc/swaps")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    let swappiness = read_trim("/proc/sys/vm/swappiness").and_then(|s| s.parse::<i64>().ok());
    let (severity, observed) = if swaps.is_empty() {
        (Severity::Ok, "no swap".to_string())
    } else {
        (
            Severity::Warn,
            format!(
                "{} swap area(s): {} (swappiness {})",
                swaps.len(),
                swaps.join(", "),
                swappiness.map_or("?".into(), |s| s.to_string())
            ),
        )
    };
    Finding::new("swap", "Swap", severity, observed)
        .value(json!({"areas": swaps, "swappiness": swappiness}))
        .why(
            "A page swapped out costs a disk read when touched again: milliseconds. rtgauge locks its own memory; an RT \
             application must too (mlockall), and everything it depends on (its libraries, daemons it talks to) is still exposed.",
        )
        .fix("swapoff -a", "remove the swap entries from /etc/fstab (or vm.swappiness = 0)")
}

pub(super) fn thp(_c: &Ctx) -> Finding {
    let base = "/sys/kernel/mm/transparent_hugepage";
    let mode = |f: &str| {
        read_trim(format!("{base}/{f}"))
            .and_then(|s| s.split_whitespace().find(|w| w.starts_with('[')).map(|w| w.trim_matches(['[', ']']).to_string()))
    };
    let (enabled, defrag) = (mode("enabled"), mode("defrag"));
    let (severity, observed) = match enabled.as_deref() {
        None => (Severity::Ok, "not offered by this kernel".to_string()),
        Some("always") => (Severity::Warn, format!("always (defrag {})", defrag.as_deref().unwrap_or("?"))),
        Some(m) => (Severity::Ok, format!("{m} (defrag {})", defrag.as_deref().unwrap_or("?"))),
    };
    Finding::new("thp", "Transparent huge pages", severity, observed)
        .value(json!({"enabled": enabled, "defrag": defrag}))
        .why(
            "With huge pages always on, a page fault may wait for memory compaction, and khugepaged collapses pages in \
             the background: both stall the faulting task, and compaction moves even locked pages.",
        )
        .fix(format!("echo never > {base}/enabled   # or madvise"), "boot with transparent_hugepage=never (or madvise)")
}
