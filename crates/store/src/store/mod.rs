//! Stage nine of the flow: the store. Every run's whole result document (histograms included)
//! is kept, so reports and comparisons can be redrawn without measuring again. The store is
//! opened (and checked) before anything is measured, and written only after the measurement
//! threads have stopped.
//!
//! This file is the store's logic, the same for every backend: where the store is (`--db`: a
//! file, or a server's URL), what a run asks of it and how it is checked before measuring
//! ([`Request`]), the rescue file when it fails at the end, which run a name means (an id, a
//! label, `last`, a UUID or its start: [`Store::resolve`]), what `list` shows and filters
//! ([`RunRow`], [`Filter`]), and a run's identity: every run is stored once, by its UUID. What
//! a backend does is the [`Backend`] trait: the SQLite file (`sqlite/`, its layouts in
//! `sqlite/migrate.rs`; `columns.rs`), the embedded default, and a lab's shared PostgreSQL
//! database (`postgres/`, reaching the server in `postgres/connect.rs` and its layouts in
//! `postgres/migrate.rs`; `--db postgres://…`). [`Location`]'s `open` and `open_read` are the one place that picks the
//! backend. What both backends write is made here: the compressed document
//! ([`compress_into`]), the timelines' blobs ([`encode_timelines`]), the row ([`row_of`]).

mod columns;
mod document;
pub mod figures;
pub mod keeper;
pub mod postgres;
pub mod spool;
mod sql;
mod sqlite;

use document::*;
pub use document::{rescue, row_of};
pub use sqlite::fix_page_memory;

use crate::result::timeline::TimelineData;
use crate::result::RunResult;
use crate::sys;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Why a store cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// The file is there but is not a store rtgauge may write: not SQLite, corrupt, another
    /// program's, a newer layout, locked. Always an error: it is never written over.
    Refused(String),
    /// The file or its directory cannot be reached or made (permissions, a read-only file
    /// system): an error for a store that was asked for, a warning for the default one.
    Unreachable(String),
    /// A server that does not answer now but may later: no route to it, nothing listening,
    /// no answer in time, its name not resolved yet, starting up or shutting down, taking no
    /// more connections. A run measures all the same, its result kept in the spool.
    Away(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Refused(m) | OpenError::Unreachable(m) | OpenError::Away(m) => f.write_str(m),
        }
    }
}

/// Why an operation on an open store failed: what a caller may do about it differs (the spool
/// keeps a run while its server is away; a refusal is said and the run rescued; a failure is
/// an error). Each says itself in one line, without a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The server does not answer now, or the connection was lost: it may answer later.
    #[error("{0}")]
    Away(String),
    /// The store refused: a right it does not grant, a constraint, a store or layout not its
    /// own, a document that is not a run's.
    #[error("{0}")]
    Refused(String),
    /// No run is named so (an id, a label, a UUID or its start that the store does not have).
    #[error("{0}")]
    NotFound(String),
    /// The request itself is wrong: a UUID's start that names several runs, too many runs at
    /// once.
    #[error("{0}")]
    Asked(String),
    /// Anything else: the disk, a damaged file, a document that does not read.
    #[error("{0}")]
    Failed(String),
}

impl StoreError {
    /// Whether the store is away for now (see [`StoreError::Away`]).
    pub fn is_away(&self) -> bool {
        matches!(self, StoreError::Away(_))
    }
}

/// A store that could not be opened, as an operation's failure.
impl From<OpenError> for StoreError {
    fn from(e: OpenError) -> StoreError {
        match e {
            OpenError::Away(m) => StoreError::Away(m),
            OpenError::Refused(m) => StoreError::Refused(m),
            OpenError::Unreachable(m) => StoreError::Failed(m),
        }
    }
}

/// A private helper's message, as a failure.
impl From<String> for StoreError {
    fn from(m: String) -> StoreError {
        StoreError::Failed(m)
    }
}

/// What it says, for the callers whose own errors are sentences.
impl From<StoreError> for String {
    fn from(e: StoreError) -> String {
        e.to_string()
    }
}

/// Where a store is: `--db` or `RTGAUGE_DB` as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database (`postgres://` or `postgresql://`): the URL as given. It may hold
    /// a password, so it is never shown as it is: see [`Location::shown`].
    Postgres(String),
    /// A value that reads as a database's address rtgauge does not take (another scheme, a
    /// mistyped one, libpq's `host=... password=...` form): never a file's name (it may hold a
    /// password); why, for the error, without the value.
    Unusable(String),
}

impl Location {
    /// `--db`'s value: a PostgreSQL URL, or a file's path.
    pub fn of(db: &Path) -> Location {
        let text = db.as_os_str().as_encoded_bytes();
        let is_url = |scheme: &[u8]| text.len() >= scheme.len() && text[..scheme.len()].eq_ignore_ascii_case(scheme);
        if is_url(b"postgres://") || is_url(b"postgresql://") {
            return Location::Postgres(db.to_string_lossy().into_owned());
        }
        if let Some(why) = not_a_path(&db.to_string_lossy()) {
            return Location::Unusable(why);
        }
        Location::File(db.to_path_buf())
    }

    /// As messages show it: a file's path; a URL without its password.
    pub fn shown(&self) -> String {
        match self {
            Location::File(p) => p.display().to_string(),
            Location::Postgres(url) => postgres::redact(url),
            Location::Unusable(_) => "(the store named by --db or RTGAUGE_DB)".into(),
        }
    }

    /// The backend for this location, opened for writing (created, checked and migrated).
    fn open(&self) -> Result<Box<dyn Backend>, OpenError> {
        match self {
            Location::File(p) => Ok(Box::new(sqlite::Sqlite::open(p)?)),
            Location::Postgres(url) => Ok(Box::new(postgres::PgStore::open(url)?)),
            Location::Unusable(why) => Err(OpenError::Refused(why.clone())),
        }
    }

    /// The backend for this location, opened as it is for reading; `None`: a database that
    /// holds no store yet (a file that is not there is found out before).
    fn open_read(&self) -> Result<Option<Box<dyn Backend>>, OpenError> {
        match self {
            Location::File(p) => Ok(Some(Box::new(sqlite::Sqlite::open_read(p)?))),
            Location::Postgres(url) => Ok(postgres::PgStore::open_read(url)?.map(|s| Box::new(s) as Box<dyn Backend>)),
            Location::Unusable(why) => Err(OpenError::Refused(why.clone())),
        }
    }
}

/// Why a `--db` value that is not a PostgreSQL URL is no file's path either: another scheme
/// (`mysql://`, `pgsql://`), a PostgreSQL scheme mistyped (`postgres:/`, `postgres:`), or
/// libpq's key/value form (`host=... dbname=... password=...`). `None`: a path.
fn not_a_path(db: &str) -> Option<String> {
    let fix = "write a PostgreSQL database as postgres://USER@HOST:PORT/DBNAME, or give a file's path";
    let lower = db.to_ascii_lowercase();
    if let Some((scheme, _)) = lower.split_once("://") {
        if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c)) {
            return Some(format!("--db: '{scheme}://' is not a store rtgauge knows; {fix}"));
        }
    }
    if lower.starts_with("postgres:") || lower.starts_with("postgresql:") {
        return Some(format!("--db: a PostgreSQL URL begins postgres:// (two slashes); {fix}"));
    }
    let keys = ["host=", "hostaddr=", "dbname=", "user=", "password=", "port=", "sslmode="];
    let words: Vec<&str> = lower.split_whitespace().collect();
    if words.iter().any(|w| keys.iter().any(|k| w.starts_with(k))) && (words.len() > 1 || lower.contains("password=")) {
        return Some(format!("--db: libpq's 'key=value' form is not taken; {fix}"));
    }
    None
}

pub use crate::vocab::secrets::{password_on_command_line, scrub_command_line};

/// What a backend does; the store's logic (`Store`) is the same for all of them. A store may
/// be handed to another thread (the end of a run stores on one of its own, within a time limit).
trait Backend: Send {
    /// Where it is, as messages show it (a file's path, a URL without its password).
    fn shown(&self) -> String;
    /// Folds what was written into the store proper (SQLite: the write-ahead log into the
    /// database) and lets go of the memory the writing held (SQLite: its page cache, bounded
    /// from then on), for a store kept open while runs are saved one after another.
    fn fold(&self) {}
    /// The directory a rescue file goes to first, if the store is a local file.
    fn rescue_dir(&self) -> Option<PathBuf>;
    /// Checks, before measuring, that every part of the store reads (and, for a server, that
    /// its tables are there).
    fn check_whole(&self) -> Result<(), OpenError>;
    /// Checks, before measuring, that a result of up to `bytes` has room.
    fn check_room(&self, bytes: u64) -> Result<(), OpenError>;
    /// Keeps the document `r` (its timelines lent apart, `timelines`) as `row`, in one
    /// transaction; a run whose UUID is there already is not stored again.
    fn save(&self, r: &RunResult, timelines: &[(usize, TimelineData)], row: &NewRow) -> Result<Saved, StoreError>;
    /// The runs that pass `filter`, oldest first (only the newest `filter.newest` of them, if
    /// given).
    fn list(&self, filter: &Filter) -> Result<Vec<RunRow>, StoreError>;
    /// How many runs pass `filter` (`filter.newest` aside).
    fn count(&self, filter: &Filter) -> Result<u64, StoreError>;
    /// The latest run's id.
    fn last_id(&self) -> Result<Option<i64>, StoreError>;
    /// Whether run `id` is there.
    fn has_id(&self, id: i64) -> Result<bool, StoreError>;
    /// The latest run labelled `label`.
    fn latest_labelled(&self, label: &str) -> Result<Option<i64>, StoreError>;
    /// The runs (up to 10) whose UUID, written in its canonical form, starts with `prefix`.
    fn by_uuid_prefix(&self, prefix: &str) -> Result<Vec<i64>, StoreError>;
    /// The kernel configuration of the latest run of `board` that recorded one.
    fn kernel_config_before(&self, board: &str) -> Result<Option<Earlier>, StoreError>;
    /// The options of the kernel configuration whose text has SHA-256 `sha256`, if kept.
    fn kernel_options(&self, sha256: &str) -> Result<Option<BTreeMap<String, String>>, StoreError>;
    /// The whole result of run `id`, its UUID in it.
    fn load(&self, id: i64) -> Result<RunResult, StoreError>;
    /// The label of run `id`, if it has one.
    fn label(&self, id: i64) -> Result<Option<String>, StoreError>;
    /// Deletes run `id` (its figures with it), only if its UUID is `uuid` when one is given, in
    /// one step (no other writer between the check and the delete); whether it was deleted.
    fn delete(&self, id: i64, uuid: Option<&str>) -> Result<bool, StoreError>;
    /// The boards that have a run passing `filter` (`filter.newest` aside), by name.
    fn boards(&self, filter: &Filter) -> Result<Vec<figures::BoardRow>, StoreError>;
    /// Each board's newest `per_board` runs that pass `filter`: by board, oldest first.
    fn recent_per_board(&self, filter: &Filter, per_board: u32) -> Result<Vec<RunRow>, StoreError>;
    /// The figures of runs `ids` (up to [`FIGURES_AT_ONCE`] of them; those there), as kept
    /// beside their rows; `None`: a store of an older layout, read as it is, keeps none.
    fn figures(&self, ids: &[i64]) -> Result<Option<HashMap<i64, figures::Figures>>, StoreError>;
    /// Makes this connection refuse every write from now on (a reader that must not write).
    fn refuse_writes(&self) -> Result<(), StoreError>;
    /// Why this connection reads the store as a snapshot that will not change while it is open
    /// (a SQLite store read where its shared-memory file cannot be made); `None`: it follows
    /// the store.
    fn snapshot(&self) -> Option<String> {
        None
    }
}

/// The most ids a backend is asked the figures of at once (an `IN` list's length).
const FIGURES_AT_ONCE: usize = 500;
/// The most ids [`Store::figures`] takes in one call.
pub const FIGURES_MAX: usize = 5_000;

/// An open store.
pub struct Store {
    backend: Box<dyn Backend>,
}

/// One run as `rtgauge list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunRow {
    pub id: i64,
    /// Its identity across stores (null only in a store of an older layout read as it is).
    pub uuid: Option<String>,
    pub started_at: String,
    pub label: Option<String>,
    /// The board's name (`--board`; the host name by default and for runs stored before).
    pub board: String,
    pub host: String,
    pub kernel: String,
    pub preemption: String,
    pub scenario: Option<String>,
    pub probes: String,
    pub worst_ns: Option<u64>,
    pub verdict: String,
    pub status: String,
    pub imported_from: Option<String>,
    /// A rotated run's series (its UUID) and its place in it (`rtgauge run --rotate`).
    pub series: Option<String>,
    pub part: Option<i64>,
}

/// A run on its way into the store: its row, its UUID, and the kernel configuration it ran on.
pub struct NewRow {
    row: RunRow,
    uuid: String,
    kernel_config: Option<KernelOptions>,
    /// What the dashboard reads of it (`figures`), kept beside its row.
    figures: figures::Figures,
}

impl NewRow {
    /// The SHA-256 of its kernel configuration: the options' given (then kept), else the one
    /// its document records (its options not kept here).
    fn kernel_config_sha256(&self) -> Option<&str> {
        self.kernel_config.as_ref().map(|k| k.sha256.as_str()).or(self.figures.kernel_config.as_deref())
    }
}

pub use crate::result::board::KernelOptions;

pub use crate::keep::Earlier;

/// What a save did: the run's id, and whether it was there already (its UUID stored before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Saved {
    pub id: i64,
    pub already: bool,
}

/// Which runs `rtgauge list` shows: every condition given, together.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub host: Option<String>,
    pub board: Option<String>,
    pub kernel: Option<String>,
    pub scenario: Option<String>,
    pub label: Option<String>,
    /// `pass`, `fail` or `none` (as `list` shows it).
    pub verdict: Option<String>,
    /// RFC 3339 time: runs started at or after it.
    pub since: Option<String>,
    /// RFC 3339 time: runs started before it.
    pub until: Option<String>,
    /// Only runs whose id is below it (a page of a long list: the next page starts below the
    /// lowest id shown).
    pub before_id: Option<i64>,
    /// Only the newest this many of them (the highest ids); `None`: every one.
    pub newest: Option<u64>,
}

impl Filter {
    /// The conditions given: (column, operator, value); each backend binds the values.
    pub(super) fn conditions(&self) -> impl Iterator<Item = (&'static str, &'static str, Bound<'_>)> {
        let texts = [
            ("host", "=", &self.host),
            ("board", "=", &self.board),
            ("kernel", "=", &self.kernel),
            ("scenario", "=", &self.scenario),
            ("label", "=", &self.label),
            ("verdict", "=", &self.verdict),
            ("started_at", ">=", &self.since),
            ("started_at", "<", &self.until),
        ];
        let texts = texts.into_iter().filter_map(|(column, op, value)| value.as_ref().map(|v| (column, op, Bound::Text(v))));
        texts.chain(self.before_id.as_ref().map(|id| ("id", "<", Bound::Id(id))))
    }
}

/// The value a condition of a [`Filter`] binds.
#[derive(Debug, Clone, Copy)]
pub(super) enum Bound<'a> {
    Text(&'a String),
    Id(&'a i64),
}

/// What `rtgauge run` asks of the store: where (`None`: keep nothing), the run's label and board.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub location: Option<Location>,
    /// The board's name (`--board`; `None`: the host name).
    pub board: Option<String>,
    pub label: Option<String>,
    /// Why nothing is kept when no path is known, for a warning.
    pub why_not: Option<String>,
    /// The path was asked for (`--db`, `RTGAUGE_DB`): failing to reach it is an error.
    pub explicit: bool,
}

impl Request {
    /// From `--db`, `--no-store` and `--label`.
    pub fn new(db: Option<&Path>, no_store: bool, label: Option<&str>) -> Result<Request, StoreError> {
        Self::new_text(db, no_store, label).map_err(StoreError::Asked)
    }

    /// [`Self::new`], its failure as text.
    fn new_text(db: Option<&Path>, no_store: bool, label: Option<&str>) -> Result<Request, String> {
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
            return Ok(Request { location: None, label, board: None, why_not: None, explicit: false });
        }
        let explicit = db.is_some() || std::env::var_os("RTGAUGE_DB").is_some_and(|v| !v.is_empty());
        match db.map(Location::of).or_else(default_location) {
            Some(location) => Ok(Request { location: Some(location), label, board: None, why_not: None, explicit }),
            None => Ok(Request {
                location: None,
                label,
                board: None,
                why_not: Some("the run is not stored: neither RTGAUGE_DB, XDG_DATA_HOME nor HOME is set; give --db PATH".into()),
                explicit,
            }),
        }
    }

    /// With `--board NAME` (`None`: the host name); an empty name is refused.
    pub fn with_board(mut self, board: Option<&str>) -> Result<Request, StoreError> {
        if board == Some("") {
            return Err(StoreError::Asked(
                "--board '' is empty; give the board's name, e.g. rpi4-lab-3 (or leave it out: the host name)".into(),
            ));
        }
        self.board = board.map(str::to_string);
        Ok(self)
    }

    /// Opens the store before measuring, checked as fully as it can be (every page read, room
    /// for a result of up to `result_bytes`): `Ok(None)` when nothing is to be kept, or when the
    /// default store cannot be reached (`warnings` says why); a file that is not a store rtgauge
    /// may write, is damaged, or has no room is an error.
    pub fn open(&self, result_bytes: u64, warnings: &mut Vec<String>) -> Result<Option<Store>, StoreError> {
        let Some(location) = &self.location else { return Ok(None) };
        let checked = match location {
            Location::File(path) => sqlite::check_file_size_limit(path, result_bytes),
            Location::Postgres(_) | Location::Unusable(_) => Ok(()),
        }
        .and_then(|()| Store::open(location))
        .and_then(|s| s.check_whole().and_then(|()| s.check_room(result_bytes)).map(|()| s));
        match checked {
            Ok(s) => Ok(Some(s)),
            Err(OpenError::Unreachable(m)) if !self.explicit => {
                warnings.push(format!("the run will not be stored: {m}"));
                Ok(None)
            }
            // The lab away (a board up before its network, a server restarting): the run
            // measures, kept in the spool, which must be usable now; the end of the run (or of
            // each part) tries the server again, then the next run or `push` delivers it.
            Err(OpenError::Away(m)) if matches!(location, Location::Postgres(_)) => match spool::ready(location) {
                Ok((file, notes)) => {
                    warnings.extend(notes);
                    warnings.push(format!(
                        "the store does not answer now ({m}); the run measures all the same and its result waits in the \
                         spool {} until the server takes it: at the end of this run, the next run with this store or \
                         rtgauge push --to {}",
                        file.display(),
                        crate::vocab::text::shell_word(&location.shown())
                    ));
                    Ok(None)
                }
                Err(e) => Err(StoreError::Failed(format!("{m}; and no result could wait in the spool: {e}"))),
            },
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the run's store is a shared one (a lab's PostgreSQL), whose runs go through the
    /// spool.
    pub fn is_shared(&self) -> bool {
        matches!(self.location, Some(Location::Postgres(_)))
    }
}

/// The directory a file is in (`.` for a bare name).
fn dir_of(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// The store a command reads (`list`, `show`, `export`, `report`, `compare`): `--db`, else
/// the default, opened read-only; `Ok(None)` when there is no such file (one that cannot be
/// reached is an error naming why).
pub fn open_existing(db: Option<&Path>) -> Result<Option<Store>, StoreError> {
    match existing_location(db)? {
        Some(l) => Store::open_read(&l).map_err(StoreError::from),
        None => Ok(None),
    }
}

/// The store a command changes (`delete`): as [`open_existing`], opened for writing.
pub fn open_existing_for_writing(db: Option<&Path>) -> Result<Option<Store>, StoreError> {
    let Some(location) = existing_location(db)? else { return Ok(None) };
    // A database that holds no store is none, as a file that is not there: nothing is made in it.
    if let Location::Postgres(_) = location {
        if Store::open_read(&location)?.is_none() {
            return Ok(None);
        }
    }
    Ok(Store::open(&location).map(Some)?)
}

/// The store if there is one: `--db`, else the default; a file that is not there is none (a
/// server's database is always there to ask).
fn existing_location(db: Option<&Path>) -> Result<Option<Location>, String> {
    let Some(location) = db.map(Location::of).or_else(default_location) else {
        return Err("no store: neither RTGAUGE_DB, XDG_DATA_HOME nor HOME is set; give --db PATH".into());
    };
    if let Location::Unusable(why) = &location {
        return Err(why.clone());
    }
    let Location::File(path) = &location else { return Ok(Some(location)) };
    // Not `exists()`, which reads a directory rtgauge may not search as "no file".
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(Some(location)),
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
    Some(local_data_dir()?.join("runs.db"))
}

/// rtgauge's local data directory (where the default store is): `$XDG_DATA_HOME/rtgauge`, else
/// `~/.local/share/rtgauge`.
pub fn local_data_dir() -> Option<PathBuf> {
    let var = |k| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let data = var("XDG_DATA_HOME").or_else(|| var("HOME").map(|h| h.join(".local/share")))?;
    Some(data.join("rtgauge"))
}

/// [`default_path`] as a location (`RTGAUGE_DB` may be a URL).
pub fn default_location() -> Option<Location> {
    default_path().map(|p| Location::of(&p))
}

impl Store {
    /// Opens the store at `location`, creating it if there is none; checks that an existing one
    /// is an rtgauge store and brings its layout up to date.
    pub fn open(location: &Location) -> Result<Store, OpenError> {
        Ok(Store { backend: location.open()? })
    }

    /// Opens the existing store at `location` for reading only, as it is: nothing migrated or
    /// written; `None` when a database holds no store yet.
    pub fn open_read(location: &Location) -> Result<Option<Store>, OpenError> {
        Ok(location.open_read()?.map(|backend| Store { backend }))
    }

    /// Checks, before measuring, that every part of the store reads (a damaged one is refused
    /// now, not when the run is saved).
    pub fn check_whole(&self) -> Result<(), OpenError> {
        self.backend.check_whole()
    }

    /// Checks, before measuring, that a result of up to `bytes` can be written into the store.
    pub fn check_room(&self, bytes: u64) -> Result<(), OpenError> {
        self.backend.check_room(bytes)
    }

    /// Where the store is, as messages show it (a file's path; a URL without its password).
    pub fn shown(&self) -> String {
        self.backend.shown()
    }

    /// Folds the runs saved so far into the store proper and lets go of the memory the writing
    /// held (a rotated run's store, open for months: its write-ahead log and page cache would
    /// otherwise grow with every run).
    pub fn fold(&self) {
        self.backend.fold();
    }

    /// The directory a rescue file goes to first (beside a store that is a file).
    pub fn rescue_dir(&self) -> Option<PathBuf> {
        self.backend.rescue_dir()
    }

    /// Keeps a run's whole result: its id, and whether it was there already (a run is stored
    /// once, by its UUID; a document without one gets a new one here). `r` is lent for the
    /// save (its timelines go apart) and comes back whole. `kernel_config`: the configuration
    /// the run's kernel was built with, kept once per text, to compare the board's runs.
    pub fn save(
        &self,
        r: &mut RunResult,
        label: Option<&str>,
        imported_from: Option<&str>,
        kernel_config: Option<KernelOptions>,
    ) -> Result<Saved, StoreError> {
        let uuid = *r.uuid.get_or_insert_with(uuid::Uuid::new_v4);
        let mut row = row_of(r);
        row.label = label.map(str::to_string);
        row.imported_from = imported_from.map(str::to_string);
        let figures = figures::figures_of(r);
        let new = NewRow { row, uuid: uuid.to_string(), kernel_config, figures };
        let timelines = r.timelines_taken();
        let saved = self.backend.save(r, &timelines, &new);
        r.timelines_put_back(timelines);
        saved
    }

    /// The runs that pass `filter`, oldest first (only the newest `filter.newest` of them, if
    /// given).
    pub fn list(&self, filter: &Filter) -> Result<Vec<RunRow>, StoreError> {
        self.backend.list(filter)
    }

    /// How many runs pass `filter` (`filter.newest` aside).
    pub fn count(&self, filter: &Filter) -> Result<u64, StoreError> {
        self.backend.count(filter)
    }

    /// The id of RUN: `last`, an id, a label (its latest run), or a UUID or its start (8 hex
    /// digits or more; a label so written is taken as the label).
    pub fn resolve(&self, run: &str) -> Result<i64, StoreError> {
        let b = &self.backend;
        let found = if run == "last" {
            b.last_id()?
        } else if let Ok(id) = run.parse::<i64>() {
            if b.has_id(id)? {
                Some(id)
            } else {
                self.by_uuid(run)?
            }
        } else {
            match b.latest_labelled(run)? {
                Some(id) => Some(id),
                None => self.by_uuid(run)?,
            }
        };
        found.ok_or_else(|| {
            StoreError::NotFound(format!(
                "no run '{run}' in the store {}; rtgauge list shows the runs (give an id, a label, a UUID or 'last')",
                self.shown()
            ))
        })
    }

    /// The run whose UUID starts with `run`, if it reads as one; several is an error.
    fn by_uuid(&self, run: &str) -> Result<Option<i64>, StoreError> {
        let Some(prefix) = uuid_prefix(run) else { return Ok(None) };
        let ids = self.backend.by_uuid_prefix(&prefix)?;
        match ids[..] {
            [] => Ok(None),
            [id] => Ok(Some(id)),
            _ => Err(StoreError::Asked(format!(
                "'{run}' starts the UUIDs of several runs in the store {} ({}); give more of it",
                self.shown(),
                ids.iter().map(|i| format!("run {i}")).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// Whether run `id` is there.
    pub fn has(&self, id: i64) -> Result<bool, StoreError> {
        self.backend.has_id(id)
    }

    /// The kernel configuration of the latest run of `board` that recorded one.
    pub fn kernel_config_before(&self, board: &str) -> Result<Option<Earlier>, StoreError> {
        self.backend.kernel_config_before(board)
    }

    /// The kernel configuration a run ran on, as this store keeps it (`None`: the run recorded
    /// none, or its options are not kept here).
    pub fn kernel_config_of(&self, r: &RunResult) -> Result<Option<KernelOptions>, StoreError> {
        let Some(sha256) = r.board.as_ref().and_then(|b| b.kernel_config.as_ref()).map(|k| k.sha256.clone()) else {
            return Ok(None);
        };
        Ok(self.backend.kernel_options(&sha256)?.map(|options| KernelOptions { sha256, options }))
    }

    /// The whole result of run `id`.
    pub fn load(&self, id: i64) -> Result<RunResult, StoreError> {
        self.backend.load(id)
    }

    /// The label of run `id`, if it has one.
    pub fn label(&self, id: i64) -> Result<Option<String>, StoreError> {
        self.backend.label(id)
    }

    /// The boards that have a run passing `filter` (`filter.newest` aside), by name.
    pub fn boards(&self, filter: &Filter) -> Result<Vec<figures::BoardRow>, StoreError> {
        let mut boards = self.backend.boards(filter)?;
        // (By the names' bytes, whatever the database's collation.)
        boards.sort_unstable_by(|a, b| a.board.cmp(&b.board));
        Ok(boards)
    }

    /// Each board's newest `per_board` runs that pass `filter` (`filter.newest` aside): by board
    /// name, each board's oldest first.
    pub fn recent_per_board(&self, filter: &Filter, per_board: u32) -> Result<Vec<RunRow>, StoreError> {
        if per_board == 0 {
            return Ok(Vec::new());
        }
        let mut rows = self.backend.recent_per_board(filter, per_board)?;
        rows.sort_unstable_by(|a, b| a.board.cmp(&b.board).then(a.id.cmp(&b.id)));
        Ok(rows)
    }

    /// The figures of runs `ids` (those there; at most [`FIGURES_MAX`] ids a call), each run's
    /// series in the order of its combined entries. A store of an older layout, read as it is,
    /// keeps none: they are made from the runs' documents (slower), without the forecasts'
    /// (`Figures::forecasts` false; a store of the layout before keeps the others but not those).
    pub fn figures(&self, ids: &[i64]) -> Result<HashMap<i64, figures::Figures>, StoreError> {
        if ids.len() > FIGURES_MAX {
            return Err(StoreError::Asked(format!(
                "the figures of {} runs were asked for at once; ask for {FIGURES_MAX} at most",
                ids.len()
            )));
        }
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut all = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(FIGURES_AT_ONCE) {
            match self.backend.figures(chunk)? {
                Some(found) => all.extend(found),
                None => {
                    for &id in chunk {
                        if self.backend.has_id(id)? {
                            let r = self.backend.load(id)?;
                            let mut f = figures::figures_from(&r.combined, &r.verdict, r.board.as_ref());
                            figures::without_forecasts(&mut f);
                            all.insert(id, f);
                        }
                    }
                }
            }
        }
        Ok(all)
    }

    /// Opens the store at `location` for a reader that stays open and must never write (the
    /// dashboard): as [`Store::open_read`], then every write refused by the connection itself; a
    /// connection that would read a snapshot of the store (never showing a run stored after it
    /// opened) is an error saying why. `None`: a database that holds no store.
    pub fn open_following(location: &Location) -> Result<Option<Store>, StoreError> {
        let Some(s) = Store::open_read(location).map_err(StoreError::from)? else { return Ok(None) };
        if let Some(why) = s.backend.snapshot() {
            return Err(StoreError::Refused(why));
        }
        s.backend.refuse_writes()?;
        Ok(Some(s))
    }

    /// Deletes run `id`.
    pub fn delete(&self, id: i64) -> Result<(), StoreError> {
        self.backend.delete(id, None).map(drop)
    }

    /// Deletes run `id` if it is still the run with `uuid` (a spool's delivered run: a run kept
    /// in the spool since may have the same id, as SQLite gives a deleted highest id again);
    /// whether it was deleted.
    pub fn delete_if_still(&self, id: i64, uuid: &str) -> Result<bool, StoreError> {
        self.backend.delete(id, Some(uuid))
    }
}

/// Copies run `row` of store `from` into store `to`, whole, as it is: its UUID (so a run copied
/// twice is stored once), label, origin and kernel configuration kept.
///
/// `row` may be from a listing made before: the run loaded must still have its UUID (a run stored
/// since can have the id of one deleted since), else it is an error and nothing is copied.
pub fn copy_run(from: &Store, row: &RunRow, to: &Store) -> Result<Saved, StoreError> {
    let (mut r, kernel_config) = read_run(from, row)?;
    to.save(&mut r, row.label.as_deref(), row.imported_from.as_deref(), kernel_config)
}

/// What [`copy_run`] reads of run `row` in `from`: its whole result, with its kernel
/// configuration's options where kept.
pub fn read_run(from: &Store, row: &RunRow) -> Result<(RunResult, Option<KernelOptions>), StoreError> {
    let r = from.load(row.id)?;
    if let Some(listed) = &row.uuid {
        if r.uuid.map(|u| u.to_string()).as_ref() != Some(listed) {
            return Err(StoreError::NotFound(format!(
                "run {} of {} is no longer the run {listed} it was listed as",
                row.id,
                from.shown()
            )));
        }
    }
    let kernel_config = from.kernel_config_of(&r)?;
    Ok((r, kernel_config))
}

/// `run` as the start of a UUID in its canonical form (lower case, hyphens after the 8th, 12th,
/// 16th and 20th digit), when it is 8 to 32 hexadecimal digits (hyphens anywhere ignored).
fn uuid_prefix(run: &str) -> Option<String> {
    let digits: String = run.chars().filter(|&c| c != '-').collect();
    if !(8..=32).contains(&digits.len()) || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = String::with_capacity(36);
    for (i, c) in digits.chars().enumerate() {
        if [8, 12, 16, 20].contains(&i) {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_prefix_is_8_to_32_hex_digits_written_canonically() {
        assert_eq!(uuid_prefix("3F2A9C41").as_deref(), Some("3f2a9c41"));
        assert_eq!(uuid_prefix("3f2a9c41-0b1c").as_deref(), Some("3f2a9c41-0b1c"));
        assert_eq!(uuid_prefix("3f2a9c410b1c").as_deref(), Some("3f2a9c41-0b1c"));
        let full = "3f2a9c41-0b1c-4d2e-8f3a-0123456789ab";
        assert_eq!(uuid_prefix(full).as_deref(), Some(full));
        for not in ["3f2a9c4", "rt-kernel", "3f2a9c4g", "", "3f2a9c41-0b1c-4d2e-8f3a-0123456789abc"] {
            assert_eq!(uuid_prefix(not), None, "{not}");
        }
    }

    #[test]
    fn a_postgresql_url_is_a_location_of_its_own_shown_without_its_password() {
        let l = Location::of(Path::new("postgres://lab:s3cret@db:5432/rt?sslmode=require"));
        assert!(matches!(l, Location::Postgres(_)));
        assert_eq!(l.shown(), "postgres://lab@db:5432/rt?sslmode=require");
        assert!(matches!(Location::of(Path::new("PostgreSQL://db/rt")), Location::Postgres(_)));
        assert_eq!(Location::of(Path::new("postgres.db")), Location::File("postgres.db".into()));
        assert_eq!(postgres::redact("postgres://db/rt"), "postgres://db/rt");
        assert_eq!(postgres::redact("postgresql://u@db/p@ss"), "postgresql://u@db/p@ss");
    }

    #[test]
    fn a_database_address_rtgauge_does_not_take_is_no_file() {
        for db in [
            "pgsql://u:pw@h/db",
            "mysql://u@h/db",
            "postgres:/u:pw@h/db",
            "postgresql:u@h",
            "host=127.0.0.1 port=5432 user=raw password=RawPw123 dbname=lab",
            "password=x",
        ] {
            let l = Location::of(Path::new(db));
            let Location::Unusable(why) = &l else { panic!("{db}: {l:?}") };
            assert!(!why.contains("pw") && !why.contains("RawPw123") && why.contains("postgres://USER@HOST"), "{why}");
            assert!(!l.shown().contains("pw"));
        }
        for path in ["runs.db", "/var/lib/rtgauge/runs.db", "./host=a.db", "my store.db"] {
            assert_eq!(Location::of(Path::new(path)), Location::File(path.into()), "{path}");
        }
    }

    #[test]
    fn a_command_line_keeps_no_database_password() {
        let args =
            ["rtgauge", "run", "--db", "postgres://lab:s3cret@db/rt", "--db=POSTGRESQL://a:b%40c@h/x?password=p", "-D", "1s"];
        let scrubbed = scrub_command_line(args.iter().map(|a| a.to_string()).collect());
        assert_eq!(scrubbed, ["rtgauge", "run", "--db", "postgres://lab@db/rt", "--db=POSTGRESQL://a@h/x", "-D", "1s"]);
        let libpq = scrub_command_line(vec!["--db".into(), "host=h password=RawPw123 dbname=x".into(), "Password=a&b".into()]);
        assert_eq!(libpq, ["--db", "host=h password=*** dbname=x", "Password=***&b"]);
    }

    #[test]
    fn an_import_and_a_migration_give_a_file_the_same_uuid() {
        let sha = "ab".repeat(32);
        let u = crate::result::content_uuid_of_hex(&sha).unwrap();
        assert_eq!(u.get_version_num(), 8);
        let doc = format!(r#"{{"schema":"x","imported":{{"sha256":"{sha}"}}}}"#);
        assert_eq!(identity_of_document(doc.as_bytes()), Some(u));
        assert_eq!(identity_of_document(b"{\"schema\":\"x\"}"), None);
    }
}
