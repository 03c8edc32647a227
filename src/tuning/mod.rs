//! Stage 2b of the flow: tuning guards — settings held only while a run lasts, each recorded
//! in the result with whether it was applied. Today: the PM QoS request on
//! `/dev/cpu_dma_latency`, which keeps CPUs out of deep idle states whose exit latency would be
//! measured as wake-up latency (cyclictest holds it at 0 µs by default, and so do real-time
//! applications). The kernel drops the request when the file is closed — at the end of the run,
//! or when the process dies in any way — so nothing is left changed.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;

/// What a tuning guard did, as recorded in the result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TuningRecord {
    /// The setting, e.g. `/dev/cpu_dma_latency`.
    pub setting: String,
    /// The value asked for, e.g. `0us`.
    pub value: String,
    pub applied: bool,
    /// How and when the original state comes back.
    pub restore: String,
    /// Why it could not be applied, when it was not.
    pub error: Option<String>,
}

/// Holds a `/dev/cpu_dma_latency` request while alive.
pub struct DmaLatencyGuard {
    _file: Option<File>,
    pub record: TuningRecord,
}

const DMA_LATENCY: &str = "/dev/cpu_dma_latency";

impl DmaLatencyGuard {
    /// Requests a maximum CPU wake-up (exit) latency of `us` microseconds.
    pub fn hold(us: u32) -> DmaLatencyGuard {
        let mut record = TuningRecord {
            setting: DMA_LATENCY.to_string(),
            value: format!("{us}us"),
            applied: false,
            restore: "the kernel drops the request when rtgauge closes the file (end of run, or any exit)".into(),
            error: None,
        };
        // The device takes a binary 32-bit value; the request lasts while the file is open.
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .open(DMA_LATENCY)
            .and_then(|mut f| f.write_all(&(us as i32).to_ne_bytes()).map(|_| f));
        match opened {
            Ok(f) => {
                record.applied = true;
                DmaLatencyGuard { _file: Some(f), record }
            }
            Err(e) => {
                record.error = Some(format!("{e}"));
                DmaLatencyGuard { _file: None, record }
            }
        }
    }
}
