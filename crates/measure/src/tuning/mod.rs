//! Stage 2b of the flow: tuning guards — settings held only while a run lasts, each recorded
//! in the result with its original value and whether it was applied and restored.
//!
//! Always (as cyclictest does): the PM QoS request on `/dev/cpu_dma_latency`, which keeps CPUs
//! out of deep idle states whose exit latency would be measured as wake-up latency; the kernel
//! drops it when the file is closed, however rtgauge ends. With `--tune` (all of them, or a
//! list): RT throttling off, a cpuset shield around the measured CPUs, interrupts moved off
//! them, the performance governor (`settings`, `shield`). Each original value is written to the
//! journal (`journal`) before the change, so everything comes back at the end of the run, on
//! Ctrl-C, SIGTERM or an error, through the guardian when rtgauge dies, and through the next
//! rtgauge (or `rtgauge restore`) after both were killed.

pub mod journal;
mod settings;
mod shield;

use crate::result::tuning::TuningRecord;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;

/// What `--tune` may change for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TuneItem {
    /// Hold `/dev/cpu_dma_latency` at 0 µs (the default anyway; `--cpu-dma-latency` sets it).
    DmaLatency,
    /// `sched_rt_runtime_us` = -1.
    RtThrottling,
    /// A cpuset for the measured CPUs alone.
    Shield,
    /// Interrupts off the measured CPUs.
    IrqAffinity,
    /// The performance cpufreq governor on the measured CPUs.
    Governor,
}

impl TuneItem {
    pub const ALL: [TuneItem; 5] =
        [TuneItem::DmaLatency, TuneItem::RtThrottling, TuneItem::Shield, TuneItem::IrqAffinity, TuneItem::Governor];

    pub fn name(self) -> &'static str {
        match self {
            TuneItem::DmaLatency => "dma-latency",
            TuneItem::RtThrottling => "rt-throttling",
            TuneItem::Shield => "shield",
            TuneItem::IrqAffinity => "irq-affinity",
            TuneItem::Governor => "governor",
        }
    }

    /// The names of every item, for messages: `dma-latency, rt-throttling, ...`.
    pub fn names() -> String {
        TuneItem::ALL.map(TuneItem::name).join(", ")
    }

    pub fn from_name(name: &str) -> Option<TuneItem> {
        TuneItem::ALL.into_iter().find(|i| i.name() == name)
    }

    /// `--tune=LIST`: comma-separated names, or `all`. Pure.
    pub fn parse_list(text: &str) -> Result<Vec<TuneItem>, crate::vocab::Error> {
        Self::parse_list_text(text).map_err(crate::vocab::Error::Invalid)
    }

    /// [`Self::parse_list`], its failure as text.
    fn parse_list_text(text: &str) -> Result<Vec<TuneItem>, String> {
        let mut items = Vec::new();
        for word in text.split(',').map(str::trim) {
            match word {
                "all" => items.extend(TuneItem::ALL),
                w => items.push(TuneItem::from_name(w).ok_or_else(|| {
                    format!("'{w}' is not something --tune changes: give 'all' or some of {}", TuneItem::names())
                })?),
            }
        }
        items.sort_unstable();
        items.dedup();
        Ok(items)
    }
}

/// A record of `setting` set to `value`, not (yet) applied, restored from the journal.
fn record(setting: &str, value: &str) -> TuningRecord {
    TuningRecord {
        setting: setting.to_string(),
        value: value.to_string(),
        original: None,
        applied: false,
        restore: "written back at the end of the run from the journal of original values (after a SIGKILL: by the \
                  run's guardian, the next rtgauge or rtgauge restore)"
            .to_string(),
        error: None,
        restored: None,
        items: Vec::new(),
    }
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
            original: None,
            applied: false,
            restore: "the kernel drops the request when rtgauge closes the file (end of run, or any exit)".into(),
            error: None,
            restored: None,
            items: Vec::new(),
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

/// The CPUs a run measures and the others.
pub struct Scope {
    pub measured: Vec<usize>,
    pub online: Vec<usize>,
}

impl Scope {
    fn housekeeping(&self) -> Vec<usize> {
        self.online.iter().copied().filter(|c| !self.measured.contains(c)).collect()
    }
}

/// Everything a run holds changed: the PM QoS request, and with `--tune` the journal of every
/// change and the shield. Dropping it restores everything (an error, a panic unwinding);
/// [`Tuning::finish`] restores and says what was put back.
pub struct Tuning {
    dma: Option<DmaLatencyGuard>,
    journal: Option<journal::Journal>,
    shield: Option<shield::Shield>,
    records: Vec<TuningRecord>,
    /// What a killed run had left changed and this run restored first.
    pub recovered: Option<journal::Restored>,
    journal_error: Option<String>,
}

impl Tuning {
    /// Applies the PM QoS request (`dma_us`) and the `items` of `--tune` for a run measuring
    /// `scope`. What cannot be applied is recorded with why, and the run goes on; only another
    /// live rtgauge tuning the system at the same time is an error.
    /// `on_journal` is told the journal's path before the first change (to start a guardian).
    /// `trace`: a journal is kept for the trace's changes too (instances, a mount).
    pub fn apply(
        items: &[TuneItem],
        dma_us: Option<u32>,
        scope: &Scope,
        command_line: &[String],
        trace: bool,
        on_journal: impl FnOnce(&std::path::Path),
    ) -> Result<Tuning, crate::vocab::Error> {
        let dma = dma_us.map(DmaLatencyGuard::hold);
        let mut t = Tuning { dma, journal: None, shield: None, records: Vec::new(), recovered: None, journal_error: None };
        let changes: Vec<TuneItem> = items.iter().copied().filter(|i| *i != TuneItem::DmaLatency).collect();
        if changes.is_empty() && !trace {
            return Ok(t);
        }
        if crate::sys::process::effective_uid() != 0 {
            t.journal_error = Some("changing system settings needs root: run rtgauge as root (nothing was changed)".into());
            for i in changes {
                t.records.push(record(i.name(), "").failed(t.journal_error.clone().unwrap_or_default()));
            }
            return Ok(t);
        }
        let mut j = match journal::Journal::open(command_line) {
            Ok((j, recovered)) => {
                t.recovered = Some(recovered).filter(|r| !r.is_empty());
                on_journal(j.path());
                j
            }
            Err(journal::OpenError::Busy { holder, path }) => {
                let asked = match (changes.is_empty(), trace) {
                    (false, true) => "--tune and --trace",
                    (false, false) => "--tune",
                    (true, _) => "--trace",
                };
                return Err(crate::vocab::Error::System(format!(
                    "{holder} is tuning this system now ({}): wait for it to end, or run without {asked}",
                    path.display()
                )));
            }
            Err(journal::OpenError::Refused(e)) => return Err(crate::vocab::Error::System(e)),
            Err(journal::OpenError::Unavailable(e)) => {
                // Without a journal nothing may change: a SIGKILL would leave it changed.
                t.journal_error = Some(format!("{e}: nothing was changed"));
                for i in changes {
                    t.records.push(record(i.name(), "").failed(t.journal_error.clone().unwrap_or_default()));
                }
                return Ok(t);
            }
        };
        for item in changes {
            let record = match item {
                TuneItem::RtThrottling => settings::rt_throttling(&mut j),
                TuneItem::Governor => settings::governor(&mut j, &scope.measured),
                TuneItem::IrqAffinity => settings::irq_affinity(&mut j, &scope.measured, &scope.housekeeping()),
                TuneItem::Shield => {
                    let (r, s) = shield::make(&mut j, &scope.measured, &scope.housekeeping());
                    t.shield = s;
                    r
                }
                TuneItem::DmaLatency => continue,
            };
            t.records.push(record);
        }
        t.journal = Some(j);
        Ok(t)
    }

    /// The journal, for the trace's changes (None without `--tune` or `--trace`, or where none
    /// could be kept).
    pub fn journal_mut(&mut self) -> Option<&mut journal::Journal> {
        self.journal.as_mut()
    }

    /// Why no journal could be kept, when `--tune` or `--trace` asked for one.
    pub fn journal_error(&self) -> Option<&str> {
        self.journal_error.as_deref()
    }

    /// The journal's path, for the guardian (None without `--tune`).
    pub fn journal_path(&self) -> Option<std::path::PathBuf> {
        self.journal.as_ref().map(|j| j.path().to_path_buf())
    }

    /// Once the measurement threads exist (see [`shield::Shield::settle`]).
    pub fn probes_ready(&self) {
        if let Some(s) = &self.shield {
            s.settle();
        }
    }

    /// Where the loads' cgroup belongs when the shield moved rtgauge (None: where rtgauge is).
    pub fn load_cgroup_parent(&self) -> Option<std::path::PathBuf> {
        self.shield.as_ref().and_then(|s| s.load_parent())
    }

    /// The PM QoS request's record, if one was asked for.
    pub fn dma_record(&self) -> Option<&TuningRecord> {
        self.dma.as_ref().map(|d| &d.record)
    }

    /// What `--tune` could not apply, as warnings.
    pub fn warnings(&self) -> Vec<String> {
        let mut w: Vec<String> = self
            .records
            .iter()
            .filter(|r| !r.applied)
            .map(|r| format!("could not tune {}: {}", r.setting, r.error.as_deref().unwrap_or("?")))
            .collect();
        if let Some(r) = &self.recovered {
            w.push(format!(
                "a run killed earlier had left settings changed; restored them first: {}",
                r.notes.iter().chain(&r.done).chain(&r.failed).cloned().collect::<Vec<_>>().join("; ")
            ));
        }
        w
    }

    /// The records of what is held now (nothing put back yet).
    pub fn held_records(&self) -> Vec<TuningRecord> {
        self.dma.as_ref().map(|d| d.record.clone()).into_iter().chain(self.records.iter().cloned()).collect()
    }

    /// Restores everything and returns the records, each saying whether it was put back.
    pub fn finish(mut self) -> (Vec<TuningRecord>, journal::Restored) {
        let restored = self.journal.take().map(journal::Journal::restore).unwrap_or_default();
        let mut records: Vec<TuningRecord> = self.dma.take().map(|d| d.record.clone()).into_iter().collect();
        for mut r in std::mem::take(&mut self.records) {
            if r.applied {
                let failed = restored.failed.iter().any(|f| r.setting.split_whitespace().next().is_some_and(|s| f.contains(s)));
                r.restored = Some(!failed);
            }
            records.push(r);
        }
        (records, restored)
    }
}

impl Drop for Tuning {
    fn drop(&mut self) {
        if let Some(j) = self.journal.take() {
            let _ = j.restore();
        }
    }
}
