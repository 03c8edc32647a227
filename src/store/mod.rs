//! Stage nine of the flow: the store. Every run's whole result document (histograms included)
//! is kept in an embedded SQLite database (rusqlite, SQLite bundled), so reports and comparisons
//! can be redrawn without measuring again. The file is opened (and checked) before anything is
//! measured, and written only after the measurement threads have stopped.
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
//! compressed JSON took seconds to store.

mod columns;

use crate::result::RunResult;
use crate::sys;
use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// SQLite's `application_id` of an rtgauge store: "rtga".
const APPLICATION_ID: i32 = 0x7274_6761;
/// The layouts, in order: migration `i` takes `user_version` `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        started_at TEXT NOT NULL,
        label TEXT,
        host TEXT NOT NULL,
        kernel TEXT NOT NULL,
        preemption TEXT NOT NULL,
        scenario TEXT,
        probes TEXT NOT NULL,
        worst_ns INTEGER,
        verdict TEXT NOT NULL,
        status TEXT NOT NULL,
        imported_from TEXT,
        document TEXT NOT NULL
    );
    CREATE INDEX runs_label ON runs (label);
    CREATE INDEX runs_started ON runs (started_at);
",
    "
    -- Layout 2: documents are zlib-compressed JSON (BLOB); layout 1's stay TEXT. An older
    -- rtgauge refuses the file (a newer layout) instead of failing on a compressed document.
    CREATE INDEX runs_host ON runs (host);
",
    "
    -- Layout 3: each series' timeline as a compact blob of its own (see columns.rs), kept out of
    -- the document; documents of layout 2 keep theirs inside and still read.
    CREATE TABLE timelines (
        run INTEGER NOT NULL,
        entry INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (run, entry)
    );
",
];
/// The most a stored document may take once decompressed (a 24 h run on 64 CPUs is ~130 MB).
const MAX_DOCUMENT: u64 = 1 << 30;
/// How long a write waits for another rtgauge holding the file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Why a store cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// The file is there but is not a store rtgauge may write: not SQLite, corrupt, another
    /// program's, a newer layout, locked. Always an error: it is never written over.
    Refused(String),
    /// The file or its directory cannot be reached or made (permissions, a read-only file
    /// system): an error for a store that was asked for, a warning for the default one.
    Unreachable(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Refused(m) | OpenError::Unreachable(m) => f.write_str(m),
        }
    }
}

/// An open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// One run as `rtgauge list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunRow {
    pub id: i64,
    pub started_at: String,
    pub label: Option<String>,
    pub host: String,
    pub kernel: String,
    pub preemption: String,
    pub scenario: Option<String>,
    pub probes: String,
    pub worst_ns: Option<u64>,
    pub verdict: String,
    pub status: String,
    pub imported_from: Option<String>,
}

/// Which runs `rtgauge list` shows.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub host: Option<String>,
    pub label: Option<String>,
    /// RFC 3339 time: runs started at or after it.
    pub since: Option<String>,
}

/// What `rtgauge run` asks of the store: where (`None`: keep nothing) and the run's label.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub path: Option<PathBuf>,
    pub label: Option<String>,
    /// Why nothing is kept when no path is known, for a warning.
    pub why_not: Option<String>,
    /// The path was asked for (`--db`, `RTGAUGE_DB`): failing to reach it is an error.
    pub explicit: bool,
}

impl Request {
    /// From `--db`, `--no-store` and `--label`.
    pub fn new(db: Option<&Path>, no_store: bool, label: Option<&str>) -> Result<Request, String> {
        if no_store && db.is_some() {
            return Err("--db and --no-store contradict each other; give one".into());
        }
        if let Some(l) = label.filter(|l| l.is_empty() || l.parse::<i64>().is_ok() || *l == "last") {
            return Err(format!(
                "--label '{l}' would read as a run id or 'last'; give a name with a letter in it, e.g. rt-kernel"
            ));
        }
        let label = label.map(str::to_string);
        if no_store {
            return Ok(Request { path: None, label, why_not: None, explicit: false });
        }
        let explicit = db.is_some() || std::env::var_os("RTGAUGE_DB").is_some_and(|v| !v.is_empty());
        match db.map(Path::to_path_buf).or_else(default_path) {
            Some(path) => Ok(Request { path: Some(path), label, why_not: None, explicit }),
            None => Ok(Request {
                path: None,
                label,
                why_not: Some("the run is not stored: neither RTGAUGE_DB, XDG_DATA_HOME nor HOME is set; give --db PATH".into()),
                explicit,
            }),
        }
    }

    /// Opens the store before measuring, checked as fully as it can be (every page read, room
    /// for a result of up to `result_bytes`): `Ok(None)` when nothing is to be kept, or when the
    /// default store cannot be reached (`warnings` says why); a file that is not a store rtgauge
    /// may write, is damaged, or has no room is an error.
    pub fn open(&self, result_bytes: u64, warnings: &mut Vec<String>) -> Result<Option<Store>, String> {
        let Some(path) = &self.path else { return Ok(None) };
        let checked = check_file_size_limit(path, result_bytes)
            .and_then(|()| Store::open(path))
            .and_then(|s| s.check_whole().and_then(|()| s.check_room(result_bytes)).map(|()| s));
        match checked {
            Ok(s) => Ok(Some(s)),
            Err(OpenError::Unreachable(m)) if !self.explicit => {
                warnings.push(format!("the run will not be stored: {m}"));
                Ok(None)
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Room the store needs beyond the result itself: pages a save touches besides the document's
/// (the row, three indexes, the timelines' table and index, the header), at the largest page.
const WAL_MARGIN: u64 = 16 * 65536;

/// Refuses, before anything is created or measured, a file size limit (`ulimit -f`) under which
/// the store cannot take a result of up to `bytes`: a write past it fails (EFBIG), and the
/// result would be saved only to a rescue file.
fn check_file_size_limit(path: &Path, bytes: u64) -> Result<(), OpenError> {
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

/// The directory a file is in (`.` for a bare name).
fn dir_of(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// The store a command reads (`list`, `show`, `export`, `report`, `compare`): `--db`, else
/// the default, opened read-only; `Ok(None)` when there is no such file (one that cannot be
/// reached is an error naming why).
pub fn open_existing(db: Option<&Path>) -> Result<Option<Store>, String> {
    existing_path(db)?.map(|p| Store::open_read(&p).map_err(|e| e.to_string())).transpose()
}

/// The store a command changes (`delete`): as [`open_existing`], opened for writing.
pub fn open_existing_for_writing(db: Option<&Path>) -> Result<Option<Store>, String> {
    existing_path(db)?.map(|p| Store::open(&p).map_err(|e| e.to_string())).transpose()
}

/// The store's path if there is a file there: `--db`, else the default.
fn existing_path(db: Option<&Path>) -> Result<Option<PathBuf>, String> {
    let Some(path) = db.map(Path::to_path_buf).or_else(default_path) else {
        return Err("no store: neither RTGAUGE_DB, XDG_DATA_HOME nor HOME is set; give --db PATH".into());
    };
    // Not `exists()`, which reads a directory rtgauge may not search as "no file".
    match std::fs::symlink_metadata(&path) {
        Ok(_) => Ok(Some(path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read the store {}: {e}; give another with --db PATH", path.display())),
    }
}

/// Where the store is unless `--db` says: `$RTGAUGE_DB`, else `$XDG_DATA_HOME/rtgauge/runs.db`,
/// else `~/.local/share/rtgauge/runs.db`; `None` when neither variable nor a home is set.
pub fn default_path() -> Option<PathBuf> {
    let var = |k| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = var("RTGAUGE_DB") {
        return Some(p);
    }
    let data = var("XDG_DATA_HOME").or_else(|| var("HOME").map(|h| h.join(".local/share")))?;
    Some(data.join("rtgauge").join("runs.db"))
}

impl Store {
    /// Opens the store at `path`, creating it (and its directory) if there is no file; checks
    /// that an existing file is an rtgauge store and brings its layout up to date.
    pub fn open(path: &Path) -> Result<Store, OpenError> {
        let shown = path.display();
        let unreachable = |what: &str, e: &dyn std::fmt::Display| {
            OpenError::Unreachable(format!("cannot {what} the store {shown}: {e}; give another with --db PATH or --no-store"))
        };
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
        let store = Store { conn, path: path.to_path_buf() };
        store.check_and_migrate()?;
        Ok(store)
    }

    /// Opens the existing store at `path` for reading only, as it is: its identity and layout
    /// are checked, nothing is migrated or written, and a file rtgauge may read but not write
    /// serves. SQLite's connection is read-write where the file allows (so that, as with a
    /// writer, the last one to close tidies away the log files beside the store), read-only
    /// where it does not, and reads the store as a file that does not change where not even
    /// the log's index can be made and no writer holds it.
    pub fn open_read(path: &Path) -> Result<Store, OpenError> {
        let shown = path.display();
        let unreadable = |e: &dyn std::fmt::Display| {
            OpenError::Unreachable(format!("cannot read the store {shown}: {e}; give another with --db PATH"))
        };
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
            let store = Store { conn, path: path.to_path_buf() };
            store.identity(|e| match e.sqlite_error_code() {
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
            Err(OpenError::Unreachable(_)) if !wal_of(path).exists() => open(&format!("{uri}?immutable=1")),
            opened => opened,
        }
    }

    /// Checks the file's identity (an rtgauge store, or an empty database) and that its layout
    /// is one this rtgauge knows; returns the layout's version.
    /// `fail` says what a SQLite error means to the caller (a reader's, a writer's).
    fn identity(&self, fail: impl Fn(rusqlite::Error) -> OpenError) -> Result<i64, OpenError> {
        let c = &self.conn;
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
        for (i, m) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(m).map_err(|e| self.refuse(e))?;
            tx.pragma_update(None, "user_version", i as i64 + 1).map_err(|e| self.refuse(e))?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID).map_err(|e| self.refuse(e))?;
        tx.commit().map_err(|e| self.refuse(e))
    }

    /// Reads every page of the store and checks its structure (`PRAGMA quick_check`): a file
    /// damaged past its first page is refused now, before measuring, not when the run is saved.
    pub fn check_whole(&self) -> Result<(), OpenError> {
        let mut q = self.conn.prepare("PRAGMA quick_check(1)").map_err(|e| self.refuse(e))?;
        let first: String = q.query_row([], |r| r.get(0)).map_err(|e| self.refuse(e))?;
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
    pub fn check_room(&self, bytes: u64) -> Result<(), OpenError> {
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

    /// An error while checking the file: locked, corrupt or unreadable.
    fn refuse(&self, e: rusqlite::Error) -> OpenError {
        refused(&self.path, e)
    }

    /// Where the store is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps a run's whole result; returns its id. The compressed document goes to an unnamed
    /// temporary file first, then into a blob of its size in pieces: at no moment does a whole
    /// copy of it sit in rtgauge's memory (a long run's phases and timelines make it large).
    /// The timelines go to a table of their own, one compact blob per series (`columns`); `r`
    /// is lent for that and comes back whole.
    pub fn save(&self, r: &mut RunResult, label: Option<&str>, imported_from: Option<&str>) -> Result<i64, String> {
        let timelines: Vec<(usize, crate::result::timeline::TimelineData)> =
            r.probes.iter_mut().enumerate().filter_map(|(i, p)| p.timeline.take().map(|t| (i, t))).collect();
        let saved = self.save_parts(r, &timelines, label, imported_from);
        for (i, t) in timelines {
            r.probes[i].timeline = Some(t);
        }
        saved
    }

    fn save_parts(
        &self,
        r: &RunResult,
        timelines: &[(usize, crate::result::timeline::TimelineData)],
        label: Option<&str>,
        imported_from: Option<&str>,
    ) -> Result<i64, String> {
        let encoding = |e: std::io::Error| format!("encoding the run for the store: {e}");
        let (mut document, size) = spool(r, &self.path).map_err(encoding)?;
        let row = row_of(r);
        let sql = |e| sql_error(&self.path, e);
        let tx = self.conn.unchecked_transaction().map_err(sql)?;
        tx.execute(
            "INSERT INTO runs (started_at, label, host, kernel, preemption, scenario, probes, worst_ns, verdict, status, \
             imported_from, document) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, zeroblob(?12))",
            params![
                row.started_at,
                label,
                row.host,
                row.kernel,
                row.preemption,
                row.scenario,
                row.probes,
                row.worst_ns.map(|w| w as i64),
                row.verdict,
                row.status,
                imported_from,
                size as i64
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        {
            let mut blob = tx.blob_open(rusqlite::MAIN_DB, "runs", "document", id, false).map_err(sql)?;
            document.rewind().map_err(encoding)?;
            std::io::copy(&mut document, &mut blob)
                .map_err(|e| format!("writing the store {} failed: {e}", self.path.display()))?;
        }
        {
            let mut insert = tx.prepare_cached("INSERT INTO timelines (run, entry, data) VALUES (?1, ?2, ?3)").map_err(sql)?;
            // Encoded on every CPU at once (measuring is over), a CPU's worth of series at a time.
            let batch = std::thread::available_parallelism().map_or(1, |n| n.get());
            for chunk in timelines.chunks(batch) {
                let blobs: Vec<Vec<u8>> = std::thread::scope(|s| {
                    let handles: Vec<_> = chunk.iter().map(|(_, t)| s.spawn(move || columns::encode(t))).collect();
                    handles.into_iter().map(|h| h.join().map_err(|_| "encoding a timeline failed".to_string())).collect::<Result<
                        Vec<Vec<u8>>,
                        String,
                    >>(
                    )
                })?;
                for ((i, _), blob) in chunk.iter().zip(blobs) {
                    insert.execute(params![id, *i as i64, blob]).map_err(sql)?;
                }
            }
        }
        tx.commit().map_err(sql)?;
        Ok(id)
    }

    /// The runs that pass `filter`, oldest first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<RunRow>, String> {
        let mut q = self
            .conn
            .prepare(
                "SELECT id, started_at, label, host, kernel, preemption, scenario, probes, worst_ns, verdict, status, \
                 imported_from FROM runs WHERE (?1 IS NULL OR host = ?1) AND (?2 IS NULL OR label = ?2) \
                 AND (?3 IS NULL OR started_at >= ?3) ORDER BY id",
            )
            .map_err(|e| sql_error(&self.path, e))?;
        let rows = q
            .query_map(params![filter.host, filter.label, filter.since], |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    started_at: r.get(1)?,
                    label: r.get(2)?,
                    host: r.get(3)?,
                    kernel: r.get(4)?,
                    preemption: r.get(5)?,
                    scenario: r.get(6)?,
                    probes: r.get(7)?,
                    worst_ns: r.get::<_, Option<i64>>(8)?.map(|w| w as u64),
                    verdict: r.get(9)?,
                    status: r.get(10)?,
                    imported_from: r.get(11)?,
                })
            })
            .map_err(|e| sql_error(&self.path, e))?;
        rows.collect::<Result<_, _>>().map_err(|e| sql_error(&self.path, e))
    }

    /// The id of RUN: an id, a label (its latest run), or `last`.
    pub fn resolve(&self, run: &str) -> Result<i64, String> {
        let found: Option<i64> = if run == "last" {
            self.conn.query_row("SELECT max(id) FROM runs", [], |r| r.get(0)).map_err(|e| sql_error(&self.path, e))?
        } else if let Ok(id) = run.parse::<i64>() {
            self.conn
                .query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
                .optional()
                .map_err(|e| sql_error(&self.path, e))?
        } else {
            self.conn
                .query_row("SELECT max(id) FROM runs WHERE label = ?1", [run], |r| r.get(0))
                .map_err(|e| sql_error(&self.path, e))?
        };
        found.ok_or_else(|| {
            format!(
                "no run '{run}' in the store {}; 'rtgauge list' shows the runs (give an id, a label or 'last')",
                self.path.display()
            )
        })
    }

    /// The whole result of run `id`.
    pub fn load(&self, id: i64) -> Result<RunResult, String> {
        let unreadable = |e: &dyn std::fmt::Display| format!("run {id} in the store {} cannot be read: {e}", self.path.display());
        let mut statement =
            self.conn.prepare_cached("SELECT document FROM runs WHERE id = ?1").map_err(|e| sql_error(&self.path, e))?;
        let mut rows = statement.query([id]).map_err(|e| sql_error(&self.path, e))?;
        let row = rows.next().map_err(|e| sql_error(&self.path, e))?.ok_or_else(|| unreadable(&"no such run"))?;
        let mut r: RunResult = match row.get_ref(0).map_err(|e| sql_error(&self.path, e))? {
            ValueRef::Text(text) => serde_json::from_slice(text).map_err(|e| unreadable(&e))?,
            ValueRef::Blob(blob) => {
                let json = std::io::Read::take(flate2::read::ZlibDecoder::new(blob), MAX_DOCUMENT);
                serde_json::from_reader(std::io::BufReader::new(json)).map_err(|e| unreadable(&e))?
            }
            _ => return Err(unreadable(&"its document is neither JSON nor compressed JSON")),
        };
        // A store of layout 1 or 2 that was only read (not migrated) keeps every timeline inside
        // its documents.
        let layout_3: i64 = self
            .conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'timelines'", [], |r| r.get(0))
            .map_err(|e| sql_error(&self.path, e))?;
        if layout_3 == 0 {
            return Ok(r);
        }
        let mut timelines =
            self.conn.prepare_cached("SELECT entry, data FROM timelines WHERE run = ?1").map_err(|e| sql_error(&self.path, e))?;
        let mut rows = timelines.query([id]).map_err(|e| sql_error(&self.path, e))?;
        while let Some(row) = rows.next().map_err(|e| sql_error(&self.path, e))? {
            let entry: i64 = row.get(0).map_err(|e| sql_error(&self.path, e))?;
            let data = row.get_ref(1).and_then(|v| v.as_blob().map_err(Into::into)).map_err(|e| sql_error(&self.path, e))?;
            let t = columns::decode(data).ok_or_else(|| unreadable(&format!("the timeline of its entry {entry} is damaged")))?;
            let p = r
                .probes
                .get_mut(entry as usize)
                .ok_or_else(|| unreadable(&format!("a timeline for entry {entry}, which it lacks")))?;
            p.timeline = Some(t);
        }
        Ok(r)
    }

    /// The label of run `id`, if it has one.
    pub fn label(&self, id: i64) -> Result<Option<String>, String> {
        self.conn.query_row("SELECT label FROM runs WHERE id = ?1", [id], |r| r.get(0)).map_err(|e| sql_error(&self.path, e))
    }

    /// Deletes run `id`.
    pub fn delete(&self, id: i64) -> Result<(), String> {
        let tx = self.conn.unchecked_transaction().map_err(|e| sql_error(&self.path, e))?;
        tx.execute("DELETE FROM timelines WHERE run = ?1", [id]).map_err(|e| sql_error(&self.path, e))?;
        tx.execute("DELETE FROM runs WHERE id = ?1", [id]).map_err(|e| sql_error(&self.path, e))?;
        tx.commit().map_err(|e| sql_error(&self.path, e))
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

/// Saves a result that could not be kept in the store to a rescue file: the whole document as
/// `--json` writes it, in a new file of mode 0600 named `rtgauge-rescued-*.json` with an
/// unpredictable tail, created exclusively (a name or link planted there is never followed or
/// written through); in the store's directory, else the current directory, else the temporary
/// one. A file that cannot be written whole is removed. `rtgauge import FILE` stores it later.
/// Returns where it is.
pub fn rescue(r: &RunResult, store: Option<&Path>) -> Result<PathBuf, String> {
    let mut dirs: Vec<PathBuf> = store.map(|p| dir_of(p).to_path_buf()).into_iter().collect();
    dirs.extend([PathBuf::from("."), std::env::temp_dir()]);
    sys::files::save_new(&dirs, "rtgauge-rescued-", |f| {
        let mut w = std::io::BufWriter::with_capacity(64 * 1024, f);
        serde_json::to_writer_pretty(&mut w, r)?;
        std::io::Write::write_all(&mut w, b"\n")?;
        std::io::Write::flush(&mut w)
    })
    .map_err(|e| format!("no rescue file could be written ({e})"))
}

/// A result as the store keeps it: JSON serialised straight into a zlib compressor writing to
/// `out`; returns the compressed size.
fn compress_into(r: &RunResult, out: &mut impl std::io::Write) -> std::io::Result<u64> {
    let mut counted = Counted { inner: out, bytes: 0 };
    let mut z = flate2::write::ZlibEncoder::new(&mut counted, flate2::Compression::fast());
    let mut w = std::io::BufWriter::with_capacity(64 * 1024, &mut z);
    serde_json::to_writer(&mut w, r)?;
    std::io::Write::flush(&mut w)?;
    drop(w);
    z.finish()?;
    Ok(counted.bytes)
}

/// A writer that counts what passes through it.
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
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
    // (Its mode whatever the umask: readable by all, written by its owner.)
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o755)
        .create(dir)
        .map_err(|e| unreachable("make the directory of", &e))?;
    let tmp = tempfile::Builder::new().prefix(".rtgauge-store-").tempfile_in(dir).map_err(|e| unreachable("create", &e))?;
    // Dropped before `tmp` on every way out, success or failure (a full disk, a file size
    // limit): no `.rtgauge-store-*` file is left beside the store.
    let _companions = Companions(tmp.path().to_path_buf());
    {
        let conn = Connection::open(tmp.path()).map_err(|e| unreachable("create", &e))?;
        // Large pages: a long run's timelines are tens of MB of blobs, written page by page.
        conn.pragma_update(None, "page_size", 65536).map_err(|e| refused(path, e))?;
        let store = Store { conn, path: tmp.path().to_path_buf() };
        store.check_and_migrate()?;
        // Back to a single file before it is linked (the WAL mode stays in its header).
        store.conn.pragma_update(None, "wal_checkpoint", "TRUNCATE").map_err(|e| refused(path, e))?;
    }
    match std::fs::hard_link(tmp.path(), path) {
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

/// A SQLite error while checking a store: it is refused, or cannot be reached.
fn refused(path: &Path, e: rusqlite::Error) -> OpenError {
    use rusqlite::ErrorCode::*;
    match e.sqlite_error_code() {
        Some(ReadOnly | CannotOpen | PermissionDenied) => OpenError::Unreachable(sql_error(path, e)),
        _ => OpenError::Refused(sql_error(path, e)),
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

/// What `rtgauge list` shows of a result.
pub fn row_of(r: &RunResult) -> RunRow {
    let probes: Vec<&str> = r.config.probes.iter().map(|p| p.name.as_str()).collect();
    let worst = r.probes.iter().filter(|p| p.in_worst_case()).filter_map(|p| p.max_ns).max();
    RunRow {
        id: 0,
        started_at: r.started_at.clone(),
        label: None,
        host: r.system.hostname.clone(),
        kernel: r.system.kernel_release.clone(),
        preemption: r.system.preemption.model.clone(),
        scenario: r.config.scenario.as_ref().map(|s| s.name.clone()),
        probes: probes.join(","),
        worst_ns: worst,
        // As the verdict's headline reads it: a run that failed a check fails, criteria given or
        // not (a CPU that measured nothing fails every run); `none` only for a run that passed
        // without criteria.
        verdict: match (r.verdict.criteria_given, r.verdict.passed) {
            (_, false) => "fail".into(),
            (true, true) => "pass".into(),
            (false, true) => "none".into(),
        },
        status: format!("{:?}", r.status).to_lowercase(),
        imported_from: None,
    }
}
