//! The live figures of a running measurement as Prometheus reads them (`--metrics`,
//! `--metrics-file`): the values one exposition shows ([`Snapshot`]), the slot where the
//! collector publishes its latest snapshot and the servers take it ([`Slot`]), the bucket bounds
//! of `--metrics-buckets` (`buckets.rs`) and the rendering in the Prometheus text format and
//! OpenMetrics (`expo.rs`). Knows nothing of how a run measures: the collector fills a
//! [`Snapshot`] with what it aggregated, and a scrape only reads the last one published.

pub mod expo;
pub mod serve;

use std::sync::{Arc, Mutex, TryLockError};

/// What the run is, for the info metric `rtgauge_run_info`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunInfo {
    pub board: String,
    pub kernel: String,
    pub preemption: String,
    pub scenario: String,
    pub version: String,
    /// The continuous series' UUID (every rotated run of one measurement shares it).
    pub series: String,
}

/// The figures of one series (a probe on a CPU) since the measurement began.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeriesFigures {
    pub probe: String,
    pub series: String,
    pub cpu: usize,
    /// Cumulative counts of the values at or below each bound of [`Snapshot::bounds_ns`] (the
    /// same length).
    pub buckets: Vec<u64>,
    /// Values in the histogram.
    pub count: u64,
    pub sum_ns: u128,
    pub samples: u64,
    pub missed: u64,
    /// The maximum of the last completed window, `None` before the first one ends.
    pub window_max_ns: Option<u64>,
    /// The maximum so far, `None` before the first value.
    pub max_ns: Option<u64>,
}

/// The state of one load.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadFigures {
    pub name: String,
    pub running: bool,
    pub restarts: u64,
    pub failed: bool,
}

/// Everything one exposition shows, as the collector last aggregated it.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub info: RunInfo,
    /// The histogram's bucket bounds in nanoseconds, ascending (`--metrics-buckets`), shared by
    /// every snapshot of a run.
    pub bounds_ns: Arc<[u64]>,
    pub series: Vec<SeriesFigures>,
    pub loads: Vec<LoadFigures>,
    /// Runs closed by `--rotate` so far.
    pub rotated_runs: u64,
    /// When the measurement began, in seconds since 1970.
    pub start_unix_s: f64,
}

/// Where the collector publishes its latest snapshot and the servers read it. The collector
/// never waits: [`Slot::publish`] uses `try_lock` and drops the snapshot if a reader holds the
/// lock that instant; [`Slot::latest`] holds the lock only to clone an `Arc`.
#[derive(Debug, Default)]
pub struct Slot {
    latest: Mutex<Option<Arc<Snapshot>>>,
}

impl Slot {
    pub fn new() -> Slot {
        Slot::default()
    }

    /// Makes `s` the latest snapshot; false when a reader held the lock (the snapshot is dropped,
    /// the next one will do). The snapshot it replaces is freed after the lock is let go, by
    /// whichever of the collector and the readers holds it last.
    pub fn publish(&self, s: Snapshot) -> bool {
        let new = Arc::new(s);
        let slot = match self.latest.try_lock() {
            Ok(slot) => slot,
            // A reader that panicked while cloning an Arc left nothing half-written.
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        Slot::put(slot, new);
        true
    }

    /// Makes `s` the latest snapshot, waiting for a reader that holds the lock: for the figures
    /// at the end, once nothing measures any more (a reader holds it only to clone an `Arc`, but
    /// it may be descheduled while it does).
    pub fn publish_last(&self, s: Snapshot) {
        let new = Arc::new(s);
        Slot::put(self.latest.lock().unwrap_or_else(|p| p.into_inner()), new);
    }

    /// Puts `new` in the slot held; the snapshot it replaces is dropped after the lock is let go.
    fn put(mut slot: std::sync::MutexGuard<'_, Option<Arc<Snapshot>>>, new: Arc<Snapshot>) {
        let old = slot.replace(new);
        drop(slot);
        drop(old);
    }

    /// The latest snapshot published, `None` before the first.
    pub fn latest(&self) -> Option<Arc<Snapshot>> {
        let slot = self.latest.lock().unwrap_or_else(|p| p.into_inner());
        slot.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(rotated_runs: u64) -> Snapshot {
        Snapshot {
            info: RunInfo::default(),
            bounds_ns: Arc::from(vec![1_000u64]),
            series: Vec::new(),
            loads: Vec::new(),
            rotated_runs,
            start_unix_s: 0.0,
        }
    }

    #[test]
    fn the_slot_gives_the_latest_snapshot() {
        let slot = Slot::new();
        assert!(slot.latest().is_none());
        assert!(slot.publish(snapshot(1)));
        let first = slot.latest().unwrap();
        assert!(slot.publish(snapshot(2)));
        assert_eq!(first.rotated_runs, 1, "a reader keeps the snapshot it took");
        assert_eq!(slot.latest().unwrap().rotated_runs, 2);
    }

    #[test]
    fn publishing_never_waits_for_a_reader() {
        let slot = Slot::new();
        assert!(slot.publish(snapshot(1)));
        let held = slot.latest.lock().unwrap();
        assert!(!slot.publish(snapshot(2)), "dropped while the lock is held");
        drop(held);
        assert_eq!(slot.latest().unwrap().rotated_runs, 1);
        assert!(slot.publish(snapshot(3)));
        assert_eq!(slot.latest().unwrap().rotated_runs, 3);
    }

    #[test]
    fn the_last_figures_wait_for_a_reader_and_are_never_dropped() {
        let slot = Arc::new(Slot::new());
        assert!(slot.publish(snapshot(1)));
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let reader = {
            let slot = Arc::clone(&slot);
            std::thread::spawn(move || {
                let held = slot.latest.lock().unwrap();
                held_tx.send(()).unwrap();
                // A reader descheduled while it holds the lock.
                std::thread::sleep(std::time::Duration::from_millis(200));
                drop(held);
            })
        };
        held_rx.recv().unwrap();
        assert!(!slot.publish(snapshot(2)), "a periodic publication is dropped");
        slot.publish_last(snapshot(9));
        reader.join().unwrap();
        assert_eq!(slot.latest().unwrap().rotated_runs, 9, "the last figures are there once the reader let go");
    }
}
