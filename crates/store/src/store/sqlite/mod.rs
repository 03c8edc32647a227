//! The SQLite backend of the store: one embedded file (rusqlite, SQLite bundled). Everything
//! that knows SQLite is here (and in `columns`, the timelines' blobs); `store` holds what every
//! backend shares and reaches this file through [`super::Backend`].
//!
//! The file is rtgauge's own: SQLite's `application_id` says so, `user_version` is the layout's
//! version, and migrations move an older layout forward in one transaction. A file that is not
//! a SQLite database, is corrupt, belongs to another program or to a newer rtgauge, or stays
//! locked is refused with an error — never overwritten, created over or "repaired". Commands
//! that only read (`list`, `show`, `export`, `report`, `compare`) open it read-only, as they
//! are: a read-only store, or another user's, serves them, and an older layout is read
//! without being migrated.
//!
//! Documents are kept as zlib-compressed JSON (layout 2 on; serialised straight into the
//! compressor, spooled to an unnamed temporary file and copied into the row's blob in pieces, so
//! a long run's document never sits in memory whole); layout 1's text documents stay readable
//! as they are. From layout 3 on, each series' timeline is kept out of the document as a compact
//! blob in a table of its own (`columns`): a day on 64 CPUs is 5.5 million windows, which as
//! compressed JSON took seconds to store. Layout 4 gives every run its UUID (unique) and its
//! board, keeps each kernel configuration once, by its SHA-256, to compare a board's runs, and
//! moves the documents out of `runs` into a table of their own, so that `list` reads rows of a
//! few hundred bytes however large the documents (100 000 runs: BENCHMARKS.md). Layout 5 keeps
//! what the dashboard reads of each run beside its row (`figures`: per series its counts,
//! percentiles and histogram in coarse bins; the shortest cycle time), so a page of 1 000 runs
//! reads no document. Layout 6 adds to each series' figures the once-per-day return level of
//! its forecast (or why there is none).

use super::figures::{BoardRow, Figures};
use super::sql::{Dialect, Forecasts, Param, Row, Sql, Value};
use super::{compress_into, dir_of, Filter, NewRow, OpenError, RunRow, Saved, StoreError};
use crate::result::timeline::TimelineData;
use crate::result::RunResult;
use crate::sys;
use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// SQLite's `application_id` of an rtgauge store: "rtga".
const APPLICATION_ID: i32 = 0x7274_6761;

mod migrate;

use migrate::*;

/// The page cache (KiB) of a connection that stays open: to read (the dashboard's), or to keep
/// a continuous run's parts (after [`super::Backend::fold`]).
const FOLLOWING_CACHE_KIB: i64 = 256;
/// The size of a store's pages (set when it is made; a store made by an older rtgauge may have
/// smaller ones, each of which takes a whole line of the pool of [`fix_page_memory`]).
const PAGE_BYTES: usize = 65536;
/// The page cache, in pages, of a connection in a process whose page memory is fixed
/// ([`fix_page_memory`]): [`FOLLOWING_CACHE_KIB`] of the store's own pages, counted in pages so
/// that a store with smaller pages holds no more lines of the pool.
const FIXED_CACHE_PAGES: i64 = FOLLOWING_CACHE_KIB * 1024 / PAGE_BYTES as i64;
/// Lines of the pool beyond the page cache: what a connection holds at once beyond its cache
/// while it writes (the b-tree's path from root to leaf, a blob's pages in flight, the pager's
/// and the b-tree's scratch pages, a page split's), with room to spare before SQLite counts
/// the pool as under pressure (under a tenth free). A part kept held up to 14 lines with a
/// 3-page cache (SQLite's own count, rotated every 10 s and every minute).
const PAGES_IN_FLIGHT: usize = 20;

/// Gives SQLite's page cache memory of its own, allocated once, before any store is opened: the
/// page cache of a store that stays open ([`FIXED_CACHE_PAGES`]) and the pages a write holds
/// beyond it. For a run that goes on for months (`--rotate`): its peak memory is then reached
/// before the first part is kept, not whenever a part happens to hold more pages than any
/// before. Returns whether SQLite took it (not once a store has been opened in this process).
pub fn fix_page_memory() -> bool {
    let taken = crate::sys::mem::sqlite_page_pool(PAGE_BYTES, FIXED_CACHE_PAGES as usize + PAGES_IN_FLIGHT);
    if taken {
        PAGE_MEMORY_FIXED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    taken
}

/// Set once SQLite took the pool of [`fix_page_memory`]: every connection opened from then on
/// keeps a cache of [`FIXED_CACHE_PAGES`] from its first statement (a store's check on opening
/// reads every page, and SQLite's default cache of 2 MB would hold 31 of them).
static PAGE_MEMORY_FIXED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The `cache_size` of a connection that stays open: [`FIXED_CACHE_PAGES`] pages where the
/// process's page memory is fixed, else [`FOLLOWING_CACHE_KIB`] (negative: KiB).
fn following_cache() -> i64 {
    match PAGE_MEMORY_FIXED.load(std::sync::atomic::Ordering::Relaxed) {
        true => FIXED_CACHE_PAGES,
        false => -FOLLOWING_CACHE_KIB,
    }
}

/// How long a write waits for another rtgauge holding the file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Room the store needs beyond the result itself: pages a save touches besides the document's
/// (the row and its indexes, the documents', timelines' and figures' tables, the header), at
/// the largest page.
const WAL_MARGIN: u64 = 24 * 65536;

/// Refuses, before anything is created or measured, a file size limit (`ulimit -f`) under which
/// the store cannot take a result of up to `bytes`: a write past it fails (EFBIG), and the
/// result would be saved only to a rescue file.
pub(super) fn check_file_size_limit(path: &Path, bytes: u64) -> Result<(), OpenError> {
    let Ok(Some(limit)) = sys::process::file_size_limit() else { return Ok(()) };
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let need = size.saturating_add(bytes).saturating_add(WAL_MARGIN);
    if limit >= need {
        return Ok(());
    }
    Err(OpenError::Refused(format!(
        "the file size limit (ulimit -f) is {} KiB; the store {} needs files of up to {} KiB to keep this run: \
         raise it with 'ulimit -f unlimited', or give --no-store",
        limit / 1024,
        path.display(),
        need.div_ceil(1024)
    )))
}

/// An open SQLite store.
pub struct Sqlite {
    conn: Connection,
    path: PathBuf,
    /// The layout as opened: the latest once migrated; a store only read keeps its own.
    layout: i64,
    /// Read as a file that does not change (`immutable=1`: its shared-memory file could not be
    /// made beside it): what it holds is a snapshot.
    immutable: bool,
}

impl Sqlite {
    /// Opens the store at `path`, creating it (and its directory) if there is no file; checks
    /// that an existing file is an rtgauge store and brings its layout up to date.
    pub fn open(path: &Path) -> Result<Sqlite, OpenError> {
        let shown = path.display();
        let unreachable = |what: &str, e: &dyn std::fmt::Display| {
            OpenError::Unreachable(format!("cannot {what} the store {shown}: {e}; give another with --db PATH or --no-store"))
        };
        no_planted_link(path)?;
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => check_header(path)?,
            Ok(_) => {
                return Err(OpenError::Refused(format!("the store {shown} is not a file; give a database file with --db PATH")))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create(path)?,
            Err(e) => return Err(unreachable("read", &e)),
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| unreachable("open", &e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| refused(path, e))?;
        let mut store = Sqlite { conn, path: path.to_path_buf(), layout: 0, immutable: false };
        store.check_and_migrate()?;
        store.layout = MIGRATIONS.len() as i64;
        Ok(store)
    }

    /// Opens the existing store at `path` for reading only, as it is: its identity and layout
    /// are checked, nothing is migrated or written, and a file rtgauge may read but not write
    /// serves. SQLite's connection is read-write where the file allows (so that, as with a
    /// writer, the last one to close tidies away the log files beside the store), read-only
    /// where it does not, and reads the store as a file that does not change where not even
    /// the log's index can be made and no writer holds it.
    pub fn open_read(path: &Path) -> Result<Sqlite, OpenError> {
        let shown = path.display();
        let unreadable = |e: &dyn std::fmt::Display| {
            OpenError::Unreachable(format!("cannot read the store {shown}: {e}; give another with --db PATH"))
        };
        no_planted_link(path)?;
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => check_header(path)?,
            Ok(_) => {
                return Err(OpenError::Refused(format!("the store {shown} is not a file; give a database file with --db PATH")))
            }
            Err(e) => return Err(unreadable(&e)),
        }
        let open = |uri: &str| {
            // Without SQLITE_OPEN_CREATE: a store that vanished meanwhile is not made again.
            let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
            let conn = Connection::open_with_flags(uri, flags).map_err(|e| unreadable(&e))?;
            conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| unreadable(&e))?;
            let mut store = Sqlite { conn, path: path.to_path_buf(), layout: 0, immutable: false };
            store.layout = store.identity(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::PermissionDenied) => {
                    unreadable(&e)
                }
                _ => refused(path, e),
            })?;
            Ok::<_, OpenError>(store)
        };
        let uri = file_uri(path);
        match open(&uri) {
            // A store in write-ahead-log mode is read through a shared-memory file beside it,
            // which a reader that may not write the directory cannot make: when no writer holds
            // the store (no log beside it), it is read as a file that does not change.
            Err(OpenError::Unreachable(_)) if !wal_of(path).exists() => {
                open(&format!("{uri}?immutable=1")).map(|s| Sqlite { immutable: true, ..s })
            }
            opened => opened,
        }
    }

    /// Checks the file's identity (an rtgauge store, or an empty database) and that its layout
    /// is one this rtgauge knows; returns the layout's version.
    /// `fail` says what a SQLite error means to the caller (a reader's, a writer's).
    fn identity(&self, fail: impl Fn(rusqlite::Error) -> OpenError) -> Result<i64, OpenError> {
        let c = &self.conn;
        // First: where the page memory is fixed, reading the store (every page, when it is
        // checked on opening) stays within the pool from here on.
        if PAGE_MEMORY_FIXED.load(std::sync::atomic::Ordering::Relaxed) {
            c.pragma_update(None, "cache_size", FIXED_CACHE_PAGES).map_err(&fail)?;
        }
        let id: i32 = c.query_row("PRAGMA application_id", [], |r| r.get(0)).map_err(&fail)?;
        let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(&fail)?;
        let tables: i64 = c.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0)).map_err(&fail)?;
        let shown = self.path.display();
        if id != APPLICATION_ID && (id != 0 || tables > 0 || version != 0) {
            return Err(OpenError::Refused(format!(
                "{shown} is a SQLite database of another program, not an rtgauge store; it is left as it is: \
                 give another file with --db PATH"
            )));
        }
        let known = MIGRATIONS.len() as i64;
        if version > known {
            return Err(OpenError::Refused(format!(
                "the store {shown} was written by a newer rtgauge (layout {version}, this one knows up to {known}); \
                 use that version, or another file with --db PATH"
            )));
        }
        Ok(version)
    }

    /// Checks the file's identity and version, then migrates it (in one transaction).
    fn check_and_migrate(&self) -> Result<(), OpenError> {
        let c = &self.conn;
        let version = self.identity(|e| self.refuse(e))?;
        let known = MIGRATIONS.len() as i64;
        c.pragma_update(None, "journal_mode", "WAL").map_err(|e| self.refuse(e))?;
        // A run's save at its end only appends to the write-ahead log (a day on 64 CPUs is tens of
        // MB of timelines): the log is folded into the database here, before measuring, and a
        // commit syncs the log once (a power cut may lose the last run, never the file's integrity).
        c.pragma_update(None, "synchronous", "NORMAL").map_err(|e| self.refuse(e))?;
        c.pragma_update(None, "wal_autocheckpoint", 0).map_err(|e| self.refuse(e))?;
        let _ = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        // Whether it can be written now (not read-only, not held by another writer).
        c.execute_batch("BEGIN IMMEDIATE; ROLLBACK").map_err(|e| self.refuse(e))?;
        if version == known {
            return Ok(());
        }
        // Another rtgauge may be migrating it this moment: the version is read again under the
        // write lock.
        let tx = rusqlite::Transaction::new_unchecked(c, rusqlite::TransactionBehavior::Immediate).map_err(|e| self.refuse(e))?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| self.refuse(e))?;
        for i in usize::try_from(version).unwrap_or(0)..MIGRATIONS.len() {
            migrate::step(&tx, i).map_err(|e| self.refuse(e))?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID).map_err(|e| self.refuse(e))?;
        tx.commit().map_err(|e| self.refuse(e))
    }

    /// An error while checking the file: locked, corrupt or unreadable.
    fn refuse(&self, e: rusqlite::Error) -> OpenError {
        refused(&self.path, e)
    }

    /// The column that names a run's board (a store of an older layout only read: its host).
    fn board_column(&self) -> &'static str {
        if self.layout >= 4 {
            "board"
        } else {
            "host"
        }
    }

    /// The columns of a [`RunRow`], in the order [`Sqlite::rows`] reads them.
    fn row_columns(&self) -> &'static str {
        if self.layout >= 7 {
            "id, started_at, label, host, kernel, preemption, scenario, probes, worst_ns, verdict, status, imported_from, \
             uuid, board, series, part"
        } else if self.layout >= 4 {
            "id, started_at, label, host, kernel, preemption, scenario, probes, worst_ns, verdict, status, imported_from, \
             uuid, board, NULL, NULL"
        } else {
            "id, started_at, label, host, kernel, preemption, scenario, probes, worst_ns, verdict, status, imported_from, \
             NULL, host, NULL, NULL"
        }
    }

    /// The rows `sql` (selecting [`Sqlite::row_columns`]) gives.
    fn rows(&self, sql: &str, values: &[Param<'_>]) -> Result<Vec<RunRow>, StoreError> {
        Ok(super::sql::Sql::query(self, "listing the runs", sql, values)?.into_iter().map(super::sql::run_row).collect())
    }
}

/// The shared operations' SQL (`store::sql`) as SQLite runs it.
impl Sql for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect {
            placeholder: '?',
            board: self.board_column(),
            row_columns: self.row_columns(),
            uuid_text: "runs.uuid",
            kernel_configs: self.layout >= 4,
            text: super::sql::as_is,
            uuid_param: "",
            uuids: self.layout >= 4,
            figures: match self.layout {
                ..=4 => None,
                5 => Some(Forecasts::NotKept),
                _ => Some(Forecasts::Kept),
            },
            parts: &["timelines", "figures", "documents"],
        }
    }

    fn execute(&self, _doing: &str, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let bound = bound(params);
        let n =
            self.conn.prepare_cached(sql).and_then(|mut q| q.execute(bound.as_slice())).map_err(|e| failure(&self.path, e))?;
        Ok(n as u64)
    }

    fn snapshot(&self, _doing: &str, work: &mut dyn FnMut() -> Result<(), StoreError>) -> Result<(), StoreError> {
        // (DEFERRED: the snapshot is taken at the first read, and held to the end)
        let tx = self.conn.unchecked_transaction().map_err(|e| failure(&self.path, e))?;
        work()?;
        tx.commit().map_err(|e| failure(&self.path, e))
    }

    fn write(&self, _doing: &str, work: &mut dyn FnMut() -> Result<bool, StoreError>) -> Result<bool, StoreError> {
        // IMMEDIATE: the write lock is taken before the first read, so no other writer comes between.
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| failure(&self.path, e))?;
        let done = work()?;
        tx.commit().map_err(|e| failure(&self.path, e))?;
        Ok(done)
    }

    fn query(&self, _doing: &str, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, StoreError> {
        let fail = |e| failure(&self.path, e);
        let bound = bound(params);
        let mut q = self.conn.prepare_cached(sql).map_err(fail)?;
        let columns = q.column_count();
        let mut found = q.query(bound.as_slice()).map_err(fail)?;
        let mut rows = Vec::new();
        while let Some(r) = found.next().map_err(fail)? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                values.push(match r.get_ref(i).map_err(fail)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(v) => Value::Int(v),
                    ValueRef::Real(v) => Value::Int(v as i64),
                    ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
                });
            }
            rows.push(Row(values));
        }
        Ok(rows)
    }
}

/// Values as SQLite binds them.
fn bound<'p>(params: &'p [Param<'_>]) -> Vec<&'p dyn rusqlite::ToSql> {
    params
        .iter()
        .map(|p| match p {
            Param::Int(i) => i as &dyn rusqlite::ToSql,
            Param::Text(t) => t as &dyn rusqlite::ToSql,
        })
        .collect()
}

impl super::Backend for Sqlite {
    fn fold(&self) {
        // PASSIVE: folds what no reader holds, never waits for one.
        let _ = self.conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        // The page cache of a store kept open for months: small (the operating system caches
        // the file), and let go of after each run. With SQLite's default (2 MB) it grew by about
        // one 64-KiB page per run kept, for the first 30 runs (BENCHMARKS.md).
        let _ = self.conn.pragma_update(None, "cache_size", following_cache());
        let _ = self.conn.query_row("PRAGMA shrink_memory", [], |_| Ok(()));
    }

    fn shown(&self) -> String {
        self.path.display().to_string()
    }

    fn rescue_dir(&self) -> Option<PathBuf> {
        Some(dir_of(&self.path).to_path_buf())
    }

    /// Reads every page of the store and checks its structure (`PRAGMA quick_check`): a file
    /// damaged past its first page is refused now, before measuring, not when the run is saved.
    /// Through the small page cache of a connection that stays open (the operating system
    /// caches the file): with SQLite's default of 2 MB, the pages a one-shot run's check read
    /// stayed in rtgauge's memory through the whole measurement and its end (a store of 336
    /// runs: about 1 MB more at the run's peak; BENCHMARKS.md, "Builds"). The save at the end
    /// writes through the same cache, as a continuous run's keeper does.
    fn check_whole(&self) -> Result<(), OpenError> {
        self.conn.pragma_update(None, "cache_size", following_cache()).map_err(|e| self.refuse(e))?;
        let mut q = self.conn.prepare("PRAGMA quick_check(1)").map_err(|e| self.refuse(e))?;
        let first: String = q.query_row([], |r| r.get(0)).map_err(|e| self.refuse(e))?;
        drop(q);
        let _ = self.conn.query_row("PRAGMA shrink_memory", [], |_| Ok(()));
        if first == "ok" {
            return Ok(());
        }
        Err(OpenError::Refused(format!(
            "the store {} is corrupt ({}); it is left as it is: move it away or give another file with --db PATH",
            self.path.display(),
            first.chars().take(120).map(|c| if c.is_control() { ' ' } else { c }).collect::<String>()
        )))
    }

    /// Checks, before measuring, that a result of up to `bytes` can be written into the store's
    /// file system: the write-ahead log grows by the compressed document, its timelines and the
    /// pages they touch; a rescue file, should the store fail at the end, takes the document
    /// again; and where the temporary directory has no room to spool the document, the store's
    /// directory spools it (see `save`).
    fn check_room(&self, bytes: u64) -> Result<(), OpenError> {
        const MIB: u64 = 1 << 20;
        let spool_here = sys::fs::free_space(&std::env::temp_dir()).is_ok_and(|free| free < bytes);
        let need = bytes.saturating_mul(if spool_here { 3 } else { 2 }).saturating_add(WAL_MARGIN);
        match sys::fs::free_space(dir_of(&self.path)) {
            Ok(free) if free < need => Err(OpenError::Refused(format!(
                "the file system of the store {} has {} MiB free; this run needs up to {} MiB to keep its result: \
                 free some space, or give another file with --db PATH (or --no-store)",
                self.path.display(),
                free / MIB,
                need.div_ceil(MIB)
            ))),
            _ => Ok(()),
        }
    }

    /// Keeps a run's whole result; returns its id. The compressed document goes to an unnamed
    /// temporary file first, then into a blob of its size in pieces: at no moment does a whole
    /// copy of it sit in rtgauge's memory (a long run's phases and timelines make it large).
    /// The timelines go to a table of their own, one compact blob per series (`columns`). A run
    /// whose UUID is stored already is not stored again: its id comes back.
    fn save(&self, r: &RunResult, timelines: &[(usize, TimelineData)], row: &NewRow) -> Result<Saved, StoreError> {
        let encoding = |e: std::io::Error| format!("encoding the run for the store: {e}");
        let sql = |e| failure(&self.path, e);
        // Under the write lock from the start: the UUID looked up is still free when inserted.
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate).map_err(sql)?;
        let stored: Option<i64> =
            tx.query_row("SELECT id FROM runs WHERE uuid = ?1", [&row.uuid], |r| r.get(0)).optional().map_err(sql)?;
        if let Some(id) = stored {
            return Ok(Saved { id, already: true });
        }
        let (mut document, size) = spool(r, &self.path).map_err(encoding)?;
        if let Some(k) = &row.kernel_config {
            tx.execute(
                "INSERT OR IGNORE INTO kernel_configs (sha256, options) VALUES (?1, ?2)",
                params![k.sha256, super::compress_options(&k.options).map_err(encoding)?],
            )
            .map_err(sql)?;
        }
        let kernel_config = row.kernel_config_sha256();
        let run = &row.row;
        tx.execute(
            "INSERT INTO runs (started_at, label, host, kernel, preemption, scenario, probes, worst_ns, verdict, status, \
             imported_from, uuid, board, kernel_config, shortest_cycle_ns, series, part) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            params![
                run.started_at,
                run.label,
                run.host,
                run.kernel,
                run.preemption,
                run.scenario,
                run.probes,
                run.worst_ns.map(|w| w as i64),
                run.verdict,
                run.status,
                run.imported_from,
                row.uuid,
                run.board,
                kernel_config,
                row.figures.shortest_cycle_ns.map(clamp),
                run.series,
                run.part,
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        insert_figures(&tx, id, &row.figures, true).map_err(sql)?;
        tx.execute("INSERT INTO documents (run, document) VALUES (?1, zeroblob(?2))", params![id, size as i64]).map_err(sql)?;
        {
            let mut blob = tx.blob_open(rusqlite::MAIN_DB, "documents", "document", id, false).map_err(sql)?;
            document.rewind().map_err(encoding)?;
            std::io::copy(&mut document, &mut blob)
                .map_err(|e| format!("writing the store {} failed: {e}", self.path.display()))?;
        }
        {
            let mut insert = tx.prepare_cached("INSERT INTO timelines (run, entry, data) VALUES (?1, ?2, ?3)").map_err(sql)?;
            super::encode_timelines(timelines, |i, blob| {
                insert.execute(params![id, i as i64, blob]).map(drop).map_err(|e| sql_error(&self.path, e))
            })?;
        }
        tx.commit().map_err(sql)?;
        Ok(Saved { id, already: false })
    }

    fn list(&self, filter: &Filter) -> Result<Vec<RunRow>, StoreError> {
        super::sql::list(self, filter)
    }

    /// One pass over the index on (board, id) (a store of an older layout: over the rows).
    fn boards(&self, filter: &Filter) -> Result<Vec<BoardRow>, StoreError> {
        super::sql::boards(self, filter)
    }

    /// The boards, found one after another along the index on (board, id DESC) (a few hundred
    /// probes, not a pass over every run), then each board's newest runs as the top of its
    /// range of that index. (A store of an older layout, only read, has no such index: the runs
    /// numbered per board from the newest, all of them.)
    fn recent_per_board(&self, filter: &Filter, per_board: u32) -> Result<Vec<RunRow>, StoreError> {
        let (wher, mut values) = super::sql::clauses(&self.dialect(), filter);
        let board = self.board_column();
        let sql_err = |e| failure(&self.path, e);
        if self.layout < 5 {
            values.push(Param::Int(per_board.into()));
            let sql = format!(
                "SELECT {} FROM runs WHERE id IN (SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY {board} \
                 ORDER BY id DESC) AS n FROM runs{wher}) WHERE n <= ?{}) ORDER BY id",
                self.row_columns(),
                values.len()
            );
            return self.rows(&sql, &values);
        }
        let mut q = self
            .conn
            .prepare_cached(
                "WITH RECURSIVE b (name) AS (SELECT min(board) FROM runs UNION ALL \
                 SELECT (SELECT min(board) FROM runs WHERE board > b.name) FROM b WHERE b.name IS NOT NULL) \
                 SELECT name FROM b WHERE name IS NOT NULL",
            )
            .map_err(sql_err)?;
        let boards: Vec<String> = q.query_map([], |r| r.get(0)).map_err(sql_err)?.collect::<Result<_, _>>().map_err(sql_err)?;
        let and = if wher.is_empty() { " WHERE" } else { " AND" };
        // Each board's runs newest first, the view's other conditions checked on the way: with
        // a label or a kernel the planner would take that column's index and read every run of
        // the label, for every board (a fleet filtered by a common label took 300 ms). A time
        // range keeps the planner's choice: the start's index finds the few runs in it (walking
        // every board's runs for the last 30 days took 560 ms).
        let hint = if filter.since.is_none() && filter.until.is_none() { " INDEXED BY runs_board_id" } else { "" };
        let sql = format!(
            "SELECT {} FROM runs{hint}{wher}{and} board = ?{} ORDER BY id DESC LIMIT ?{}",
            self.row_columns(),
            values.len() + 1,
            values.len() + 2
        );
        let mut all = Vec::new();
        for name in &boards {
            let mut bound = values.clone();
            bound.push(Param::Text(name.into()));
            bound.push(Param::Int(per_board.into()));
            all.extend(self.rows(&sql, &bound)?);
        }
        Ok(all)
    }

    /// The runs' rows and their figures' (clustered by run), read in one transaction.
    fn figures(&self, ids: &[i64]) -> Result<Option<HashMap<i64, Figures>>, StoreError> {
        super::sql::figures(self, ids, &self.shown())
    }

    fn count(&self, filter: &Filter) -> Result<u64, StoreError> {
        super::sql::count(self, filter)
    }

    fn last_id(&self) -> Result<Option<i64>, StoreError> {
        super::sql::last_id(self)
    }

    fn has_id(&self, id: i64) -> Result<bool, StoreError> {
        super::sql::has_id(self, id)
    }

    fn latest_labelled(&self, label: &str) -> Result<Option<i64>, StoreError> {
        super::sql::latest_labelled(self, label)
    }

    fn by_uuid_prefix(&self, prefix: &str) -> Result<Vec<i64>, StoreError> {
        super::sql::by_uuid_prefix(self, prefix)
    }

    fn kernel_config_before(&self, board: &str) -> Result<Option<super::Earlier>, StoreError> {
        super::sql::kernel_config_before(self, board, &self.shown())
    }

    fn kernel_options(&self, sha256: &str) -> Result<Option<BTreeMap<String, String>>, StoreError> {
        super::sql::kernel_options(self, sha256, &self.shown())
    }

    /// The whole result of run `id`.
    fn load(&self, id: i64) -> Result<RunResult, StoreError> {
        let unreadable = |e: &dyn std::fmt::Display| format!("run {id} in the store {} cannot be read: {e}", self.path.display());
        // (A store of an older layout only read has no UUIDs, and its documents in `runs`.)
        let query = if self.layout >= 4 {
            "SELECT documents.document, runs.uuid FROM runs JOIN documents ON documents.run = runs.id WHERE runs.id = ?1"
        } else {
            "SELECT document, NULL FROM runs WHERE id = ?1"
        };
        let mut statement = self.conn.prepare_cached(query).map_err(|e| failure(&self.path, e))?;
        let mut rows = statement.query([id]).map_err(|e| failure(&self.path, e))?;
        let row =
            rows.next().map_err(|e| failure(&self.path, e))?.ok_or_else(|| StoreError::NotFound(unreadable(&"no such run")))?;
        let mut r: RunResult = match row.get_ref(0).map_err(|e| failure(&self.path, e))? {
            ValueRef::Text(text) => serde_json::from_slice(text).map_err(|e| unreadable(&e))?,
            ValueRef::Blob(blob) => super::decompress_document(blob).map_err(|e| unreadable(&e))?,
            _ => return Err(unreadable(&"its document is neither JSON nor compressed JSON").into()),
        };
        // A document stored before runs had UUIDs gets the one the store gave it.
        if r.uuid.is_none() {
            let uuid: Option<String> = row.get(1).map_err(|e| failure(&self.path, e))?;
            r.identified(uuid.and_then(|u| uuid::Uuid::parse_str(&u).ok()));
        }
        // A store of layout 1 or 2 that was only read (not migrated) keeps every timeline inside
        // its documents.
        if self.layout < 3 {
            return Ok(r);
        }
        let mut timelines =
            self.conn.prepare_cached("SELECT entry, data FROM timelines WHERE run = ?1").map_err(|e| failure(&self.path, e))?;
        let mut rows = timelines.query([id]).map_err(|e| failure(&self.path, e))?;
        while let Some(row) = rows.next().map_err(|e| failure(&self.path, e))? {
            let entry: i64 = row.get(0).map_err(|e| failure(&self.path, e))?;
            let data = row.get_ref(1).and_then(|v| v.as_blob().map_err(Into::into)).map_err(|e| failure(&self.path, e))?;
            super::restore_timeline(&mut r, entry, data).map_err(|e| unreadable(&e))?;
        }
        Ok(r)
    }

    /// The label of run `id`, if it has one.
    fn label(&self, id: i64) -> Result<Option<String>, StoreError> {
        super::sql::label(self, id)
    }

    /// Deletes run `id`.
    fn delete(&self, id: i64, uuid: Option<&str>) -> Result<bool, StoreError> {
        super::sql::delete(self, id, uuid)
    }

    fn refuse_writes(&self) -> Result<(), StoreError> {
        self.conn.pragma_update(None, "query_only", true).map_err(|e| failure(&self.path, e))?;
        // A reader that stays open keeps a small page cache of its own (the operating system
        // caches the file): its memory is bounded, and reached soon, however long it serves.
        self.conn.pragma_update(None, "cache_size", following_cache()).map_err(|e| failure(&self.path, e))
    }

    fn snapshot(&self) -> Option<String> {
        let dir = super::dir_of(&self.path);
        self.immutable.then(|| {
            format!(
                "the store {} can only be read as it is now by this user: SQLite's shared-memory file cannot be \
                 made beside it (in {}), so runs stored later would not be shown; run it as a user that may \
                 write in that directory (the store's owner)",
                self.path.display(),
                dir.display()
            )
        })
    }
}

/// Where a compressed document waits until its size is known: an unnamed temporary file, or
/// memory where no temporary file can be made.
enum Spool {
    File(std::fs::File),
    Memory(std::io::Cursor<Vec<u8>>),
}

impl Spool {
    fn rewind(&mut self) -> std::io::Result<()> {
        use std::io::Seek;
        match self {
            Spool::File(f) => f.rewind(),
            Spool::Memory(m) => m.rewind(),
        }
    }
}

impl std::io::Write for Spool {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Spool::File(f) => f.write(buf),
            Spool::Memory(m) => m.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Spool::File(f) => f.flush(),
            Spool::Memory(m) => m.flush(),
        }
    }
}

impl std::io::Read for Spool {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Spool::File(f) => f.read(buf),
            Spool::Memory(m) => m.read(buf),
        }
    }
}

/// `r` compressed into the first spool that takes it whole: an unnamed temporary file in the
/// temporary directory, else (that directory full or unusable) one in the store's directory,
/// else memory. Returns it with the compressed size.
fn spool(r: &RunResult, store: &Path) -> std::io::Result<(Spool, u64)> {
    let beside = || {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().read(true).write(true).mode(0o600).custom_flags(libc::O_TMPFILE).open(dir_of(store))
    };
    let files: [&dyn Fn() -> std::io::Result<std::fs::File>; 2] = [&tempfile::tempfile, &beside];
    for file in files {
        if let Ok(f) = file() {
            let mut s = Spool::File(f);
            if let Ok(size) = compress_into(r, &mut s) {
                return Ok((s, size));
            }
        }
    }
    let mut s = Spool::Memory(std::io::Cursor::new(Vec::new()));
    let size = compress_into(r, &mut s)?;
    Ok((s, size))
}

/// The `file:` URI of `path` for SQLite: every byte but letters, digits and `/._-~` written
/// as `%XX` (`?` and `#` would start a query and a fragment), an absolute path with an empty
/// authority (`file:///abs`).
fn file_uri(path: &Path) -> String {
    let mut uri = String::from(if path.is_absolute() { "file://" } else { "file:" });
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/._-~".contains(&b) {
            uri.push(b as char);
        } else {
            uri += &format!("%{b:02X}");
        }
    }
    uri
}

/// The write-ahead log beside a store.
fn wal_of(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push("-wal");
    PathBuf::from(p)
}

/// Refuses a file that exists but does not begin as a SQLite database does (an empty file
/// included: a store is never half-made, see [`create`]).
fn check_header(path: &Path) -> Result<(), OpenError> {
    use std::io::Read;
    let mut head = [0u8; 16];
    let shown = path.display();
    let unreadable = |e: std::io::Error| {
        OpenError::Unreachable(format!("cannot read the store {shown}: {e}; give another with --db PATH or --no-store"))
    };
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).map_err(unreadable)?;
    if n < 16 || &head != SQLITE_HEADER {
        return Err(OpenError::Refused(format!(
            "{shown} is not a SQLite database (an rtgauge store); it is left as it is: give another file with --db PATH"
        )));
    }
    Ok(())
}

/// Creates a new store at `path` as a whole: made complete (layout, identity, WAL) under a
/// temporary name beside it, then linked into place, so no rtgauge ever sees a half-made one;
/// if another rtgauge linked its own first, that one is used.
fn create(path: &Path) -> Result<(), OpenError> {
    let shown = path.display();
    let unreachable = |what: &str, e: &dyn std::fmt::Display| {
        OpenError::Unreachable(format!("cannot {what} the store {shown}: {e}; give another with --db PATH or --no-store"))
    };
    let dir = dir_of(path);
    // (Its mode whatever the umask: readable by all, written by its owner; each missing
    // directory made inside its parent as opened, no link another user planted followed.)
    crate::sys::files::make_dir_all(dir, 0o755).map_err(|e| unreachable("make the directory of", &e))?;
    // The directory held open: the store is made and linked in there, whatever is renamed or
    // swapped on its path meanwhile.
    let held = crate::sys::files::open_dir_checked(dir).map_err(|e| unreachable("make the directory of", &e))?;
    let held_dir = PathBuf::from(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&held)));
    let name = path.file_name().ok_or_else(|| unreachable("create", &"it names no file"))?;
    let tmp = tempfile::Builder::new().prefix(".rtgauge-store-").tempfile_in(&held_dir).map_err(|e| unreachable("create", &e))?;
    // Dropped before `tmp` on every way out, success or failure (a full disk, a file size
    // limit): no `.rtgauge-store-*` file is left beside the store.
    let _companions = Companions(tmp.path().to_path_buf());
    {
        let conn = Connection::open(tmp.path()).map_err(|e| unreachable("create", &e))?;
        // Large pages: a long run's timelines are tens of MB of blobs, written page by page.
        conn.pragma_update(None, "page_size", PAGE_BYTES as i64).map_err(|e| refused(path, e))?;
        let store = Sqlite { conn, path: tmp.path().to_path_buf(), layout: 0, immutable: false };
        store.check_and_migrate()?;
        // Back to a single file before it is linked (the WAL mode stays in its header).
        store.conn.pragma_update(None, "wal_checkpoint", "TRUNCATE").map_err(|e| refused(path, e))?;
    }
    match std::fs::hard_link(tmp.path(), held_dir.join(name)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(unreachable("create", &e)),
    }
}

/// SQLite's companion files of a store being made (`-wal`, `-shm`, `-journal`), removed when
/// dropped (its connection closed first).
struct Companions(PathBuf);

impl Drop for Companions {
    fn drop(&mut self) {
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Refuses a store reached through a symbolic link another user could have planted, on the way
/// to its directory or at its own name (`sys::files::planted`): rtgauge, as root, neither writes
/// nor migrates a file such a link names. A path not there yet is no refusal (it is made, inside
/// its directory as opened: see [`create`]).
fn no_planted_link(path: &Path) -> Result<(), OpenError> {
    let shown = path.display();
    let dir = dir_of(path);
    match crate::sys::files::open_dir_checked(dir) {
        Ok(_) => {}
        Err(e) if crate::sys::files::is_refusal(&e) => {
            return Err(OpenError::Refused(format!("the store {shown} is not used: {e}; give another with --db PATH")))
        }
        Err(_) => return Ok(()),
    }
    if let (Ok(link), Ok(d)) = (std::fs::symlink_metadata(path), std::fs::metadata(dir)) {
        if link.file_type().is_symlink() && crate::sys::files::planted(&link, &d) {
            return Err(OpenError::Refused(format!(
                "the store {shown} is a symbolic link of user {} in a directory other users can write, which rtgauge \
                 does not follow as root; give another with --db PATH",
                std::os::unix::fs::MetadataExt::uid(&link)
            )));
        }
    }
    Ok(())
}

/// A SQLite error while checking a store: it is refused, or cannot be reached.
fn refused(path: &Path, e: rusqlite::Error) -> OpenError {
    use rusqlite::ErrorCode::*;
    match e.sqlite_error_code() {
        Some(ReadOnly | CannotOpen | PermissionDenied) => OpenError::Unreachable(sql_error(path, e)),
        _ => OpenError::Refused(sql_error(path, e)),
    }
}

/// An operation's failure, typed: a file that cannot be written, a constraint: refusals;
/// anything else (another program's lock held too long, a corrupt file, the disk) a failure;
/// said as [`sql_error`] says it.
fn failure(path: &Path, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode::*;
    // (a lock held too long is a failure: it may be gone the next time)
    let refused = matches!(e.sqlite_error_code(), Some(ReadOnly | PermissionDenied | ConstraintViolation));
    let text = sql_error(path, e);
    if refused {
        StoreError::Refused(text)
    } else {
        StoreError::Failed(text)
    }
}

/// A SQLite error as one line naming the file and what to do.
fn sql_error(path: &Path, e: rusqlite::Error) -> String {
    use rusqlite::ErrorCode::*;
    let shown = path.display();
    match e.sqlite_error_code() {
        Some(DatabaseBusy | DatabaseLocked) => format!(
            "the store {shown} is locked by another program (waited {} s); let it finish, or give another file with --db PATH",
            BUSY_TIMEOUT.as_secs()
        ),
        Some(DatabaseCorrupt | NotADatabase) => {
            format!("the store {shown} is corrupt; it is left as it is: move it away or give another file with --db PATH")
        }
        Some(ReadOnly | CannotOpen | PermissionDenied) => {
            format!("the store {shown} cannot be written ({e}); give another file with --db PATH")
        }
        Some(DiskFull) => format!("the store {shown} cannot grow: the disk is full"),
        _ => format!("the store {shown}: {e}"),
    }
}
