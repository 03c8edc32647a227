//! Where a run's result goes, as the run sees it: the port between the run and the store. The
//! run (`rtgauge-run`) knows only these traits; the store (`rtgauge-store`, `store::keeper`)
//! implements them with SQLite, a lab's PostgreSQL, the spool and rescue files, and the command
//! line hands one to the run. So the run depends on no store and no database client, and a
//! store's way of keeping a run (a spool while the lab is away, a rescue file when the disk is
//! full) stays in one place.

use crate::result::board::KernelOptions;
use crate::result::RunResult;
use crate::vocab::Error;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// Where a run's result is asked to go (`--db`, `--no-store`, `--label`, `--board`), before
/// anything is opened. Shared by every stage of the run (read-only).
pub trait Keep: Send + Sync {
    /// The board's name as asked (`--board`); `None`: the host name.
    fn board(&self) -> Option<&str>;
    /// Whether the store is a shared one (a lab's), whose runs go through the spool: what
    /// opening it found is said at once.
    fn is_shared(&self) -> bool;
    /// Whether the store was asked for by name (`--db`, `RTGAUGE_DB`): a run it did not take
    /// is an error, not a warning.
    fn explicit(&self) -> bool;
    /// Before anything is opened: a store's connection that does not answer gives up once
    /// `signalled` counts a signal (Ctrl-C holds up no stop), and a run that goes on for
    /// months (`rotating`) gives the store's pages memory of their own before it is opened.
    fn before_run(&self, signalled: Arc<AtomicUsize>, rotating: bool);
    /// Opened and checked before measuring, for a result of up to `result_bytes` (`warnings`
    /// gets what the run should say: a default store out of reach, a lab away and the spool the
    /// run will wait in). `Err`: the run must not start.
    fn open(&self, result_bytes: u64, warnings: &mut Vec<String>) -> Result<Box<dyn Destination>, Error>;
    /// The destination of a run whose opened one was lost (the thread that kept a rotated run's
    /// parts died with it): its result is kept as when no store answered before measuring.
    fn lost(&self) -> Box<dyn Destination>;
}

/// A destination opened before measuring ([`Keep::open`]): it keeps a rotated run's parts while
/// measuring goes on, and the result at the end.
pub trait Destination: Send {
    /// Whether a store is open (a run that goes to one costs no rescue file when its JSON
    /// reader went away).
    fn stores(&self) -> bool;
    /// The kernel configuration of the board's last run in the store, if it has one.
    fn kernel_config_before(&self, board: &str) -> Result<Option<Earlier>, Error>;
    /// Its memory bounded while a run goes on for months: before a rotated run's first part
    /// and after each (a SQLite store folds its write-ahead log).
    fn fold(&self);
    /// Keeps a closed part of a rotated run (in the store, a shared one through the spool; else
    /// a rescue file): the sentence that says where.
    fn keep_part(&mut self, result: &mut RunResult) -> String;
    /// Keeps the run's result at its end, with the board's kernel configuration; nothing
    /// measured is lost (a rescue file, the spool).
    fn keep(self: Box<Self>, result: &mut RunResult, kernel_config: Option<KernelOptions>) -> Kept;
}

/// The kernel configuration of an earlier run of a board.
#[derive(Debug, Clone, PartialEq)]
pub struct Earlier {
    pub id: i64,
    pub uuid: Option<String>,
    pub options: BTreeMap<String, String>,
}

/// Where a run's result was kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// In the store: the line that says so.
    Stored(String),
    /// Nowhere, as asked (`--no-store`) or as warned before measuring.
    Nowhere,
    /// The store failed at the end: why, and the rescue file the result went to instead.
    Rescued(String),
    /// The shared store failed at the end: why, and the spool the result waits in.
    Spooled(String),
}
