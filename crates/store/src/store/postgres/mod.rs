//! The store in a PostgreSQL database (`--db postgres://USER@HOST:PORT/DBNAME`): a lab's many
//! boards keep their runs, whole, in one shared database. The same guarantees as the SQLite
//! store (see the parent module): the database says it is rtgauge's (the table `rtgauge_meta`
//! holds `application = rtgauge` and `layout = N`), migrations move an older layout forward in
//! one transaction (under an advisory lock, so two rtgauges never migrate at once), and a
//! database of another program (tables in rtgauge's schema but no marker) or of a newer rtgauge
//! is refused and left as it is. A writer checks before measuring that it can connect,
//! authenticate, read the layout and write (a trial insert rolled back); the run is written
//! after the measurement threads stopped, once (`ON CONFLICT (uuid) DO NOTHING`: concurrent
//! writers and repeated pushes store a run once).
//!
//! Documents are the same zlib-compressed JSON as SQLite's (layout 2 on), in a BYTEA; timelines
//! are kept out of them, one compact blob per series in the table `timelines` (see `columns`).
//! Layout 2 keeps what the dashboard reads of each run beside its row (`figures`, see
//! `store/figures.rs`), filled for the runs stored before by its migration; layout 3 adds to
//! each series' figures the once-per-day return level of its forecast (or why there is none).
//!
//! Passwords come from the URL, `PGPASSWORD` or `~/.pgpass` (`PGPASSFILE`), looked up as libpq
//! does; they appear in no message: the URL is shown without its password. TLS with rustls:
//! `sslmode=require` encrypts (as libpq, without checking who answers), `verify-ca` and
//! `verify-full` check the server's certificate against the system's roots (or `sslrootcert`),
//! `verify-full` its name too.

use super::figures::{BoardRow, Figures};
use super::sql::{Dialect, Forecasts, Param, Row, Sql, Value};
use super::{Filter, NewRow, OpenError, RunRow, Saved, StoreError};
use crate::result::timeline::TimelineData;
use crate::result::RunResult;
use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, Config};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres_rustls::MakeRustlsConnect;

mod connect;
mod migrate;

pub use crate::vocab::secrets::{is_postgres_url as is_url, redact_url as redact};
use connect::*;
pub use connect::{destination_of, give_up_when};
use migrate::*;

/// An open store in a PostgreSQL database.
pub struct PgStore {
    client: RefCell<Conn>,
    target: Target,
    /// The layout as opened: the latest once migrated; a store only read keeps its own.
    layout: i64,
}

/// The synchronous client, which may be dropped anywhere. Closing it runs the client's own
/// runtime, and a runtime cannot be started from within another: a store dropped on a thread
/// that runs an asynchronous runtime (the dashboard's, the metrics server's) would abort the
/// process ("Cannot start a runtime from within a runtime"). There it is closed on a thread of
/// its own instead.
struct Conn(Option<Client>);

impl std::ops::Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.0.as_ref().expect("a connection is present until dropped")
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        self.0.as_mut().expect("a connection is present until dropped")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let Some(client) = self.0.take() else { return };
        if tokio::runtime::Handle::try_current().is_err() {
            return drop(client);
        }
        let slot = Arc::new(std::sync::Mutex::new(Some(client)));
        let theirs = Arc::clone(&slot);
        let spawned = std::thread::Builder::new().name("rtgauge-pg-close".into()).spawn(move || {
            drop(theirs.lock().map(|mut c| c.take()));
        });
        if spawned.is_err() {
            // No thread to be had: the connection is left open, and ends with the process.
            if let Ok(mut c) = slot.lock() {
                std::mem::forget(c.take());
            }
        }
    }
}

/// What a database holds in rtgauge's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    /// No table at all: a store can be made there.
    Empty,
    /// An rtgauge store of this layout.
    Store(i64),
}

impl PgStore {
    /// Opens the store at `url` for writing: connects, checks that the database is an rtgauge
    /// store (or holds nothing) of a layout this rtgauge knows, and brings the layout up to
    /// date (creating the store in an empty database).
    pub fn open(url: &str) -> Result<PgStore, OpenError> {
        let mut store = PgStore::connect(url)?;
        store.check_and_migrate(MIGRATIONS.len())?;
        store.layout = MIGRATIONS.len() as i64;
        Ok(store)
    }

    /// Brings the store at `url` up to `layout` of the ladder and no further (a store at that
    /// layout or past it is left as it is), in one transaction; its layout after. For the
    /// ladder's test, which takes a store up one step per connection (`tests/store`).
    #[doc(hidden)]
    pub fn migrate_to(url: &str, layout: usize) -> Result<i64, OpenError> {
        let store = PgStore::connect(url)?;
        store.check_and_migrate(layout.min(MIGRATIONS.len()))?;
        let identity = store.identity(&mut **store.client.borrow_mut(), "reading the store")?;
        Ok(match identity {
            Identity::Store(v) => v,
            Identity::Empty => 0,
        })
    }

    /// Opens the store at `url` for reading only, as it is (nothing is migrated or written):
    /// `Ok(None)` when the database holds no store yet.
    pub fn open_read(url: &str) -> Result<Option<PgStore>, OpenError> {
        let mut store = PgStore::connect(url)?;
        let doing = "reading the store";
        let identity = store.identity(&mut **store.client.borrow_mut(), doing)?;
        Ok(match identity {
            Identity::Empty => None,
            Identity::Store(layout) => {
                store.layout = layout;
                Some(store)
            }
        })
    }

    fn connect(url: &str) -> Result<PgStore, OpenError> {
        let target = Target::parse(url).map_err(OpenError::Refused)?;
        let client = target.connect().map_err(|e| match e {
            Connect::Pg(e) => open_error(&target, "connecting", &e),
            // No answer within the time-out: away for now, as a host that cannot be reached.
            other @ Connect::NoAnswer(_) => OpenError::Away(target.connect_error("connecting", &other)),
            other => OpenError::Unreachable(target.connect_error("connecting", &other)),
        })?;
        Ok(PgStore { client: RefCell::new(Conn(Some(client))), target, layout: 0 })
    }

    /// What the database holds in the schema rtgauge uses (the first of the search path).
    fn identity(&self, c: &mut impl postgres::GenericClient, doing: &str) -> Result<Identity, OpenError> {
        let t = &self.target;
        let fail = |e: postgres::Error| open_error(t, doing, &e);
        let schema: Option<String> = c.query_one("SELECT current_schema()::text", &[]).map_err(fail)?.get(0);
        let Some(schema) = schema else {
            return Err(OpenError::Refused(format!(
                "the database {} has no schema to keep runs in (its search_path names none that exists); create one, \
                 or give another database with --db",
                t.shown
            )));
        };
        let another = || {
            OpenError::Refused(format!(
                "the database {} holds tables of another program (schema {schema}), not an rtgauge store; it is left as \
                 it is: give another database (or a search_path=SCHEMA option) with --db",
                t.shown
            ))
        };
        // One scan of the catalog, so one snapshot: another rtgauge's migration, committed between
        // two looks, would show its tables without its marker.
        let row = c
            .query_one(
                "SELECT count(*) FILTER (WHERE c.relname = 'rtgauge_meta' AND c.relkind = 'r'), count(*) \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')",
                &[],
            )
            .map_err(fail)?;
        let (meta, tables): (i64, i64) = (row.get(0), row.get(1));
        if meta == 0 {
            return if tables == 0 { Ok(Identity::Empty) } else { Err(another()) };
        }
        let rows = match c.query("SELECT key::text, value::text FROM rtgauge_meta", &[]) {
            Ok(rows) => rows,
            // A table of that name with other columns: not ours.
            Err(e) if e.code() == Some(&SqlState::UNDEFINED_COLUMN) => return Err(another()),
            Err(e) => return Err(fail(e)),
        };
        let value = |k: &str| rows.iter().find(|r| r.get::<_, String>(0) == k).map(|r| r.get::<_, String>(1));
        if value("application").as_deref() != Some("rtgauge") {
            return Err(another());
        }
        let layout = value("layout").and_then(|v| v.parse::<i64>().ok()).ok_or_else(another)?;
        let known = MIGRATIONS.len() as i64;
        if layout > known {
            return Err(OpenError::Refused(format!(
                "the store {} was written by a newer rtgauge (layout {layout}, this one knows up to {known}); use that \
                 version, or another database with --db",
                t.shown
            )));
        }
        Ok(Identity::Store(layout))
    }

    /// Checks the database's identity and layout, then migrates it up to layout `upto` in one
    /// transaction, under an advisory lock, its identity read again under the lock.
    fn check_and_migrate(&self, upto: usize) -> Result<(), OpenError> {
        let t = &self.target;
        let c = &mut **self.client.borrow_mut();
        if matches!(self.identity(c, "opening the store")?, Identity::Store(v) if v >= upto as i64) {
            return Ok(());
        }
        let doing = "create the store's tables";
        let fail = |e: postgres::Error| refused(t, doing, &e);
        let encoding: String = c.query_one("SHOW server_encoding", &[]).map_err(fail)?.get(0);
        if encoding != "UTF8" {
            return Err(OpenError::Refused(format!(
                "the database {} is encoded in {encoding}; rtgauge keeps text as UTF-8: create it with createdb -E UTF8 \
                 -T template0, or give another database with --db",
                t.shown
            )));
        }
        let mut tx = c.transaction().map_err(fail)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).map_err(fail)?;
        let from = match self.identity(&mut tx, "opening the store")? {
            Identity::Empty => 0,
            Identity::Store(v) => v,
        };
        for (i, m) in MIGRATIONS.iter().enumerate().take(upto).skip(from as usize) {
            tx.batch_execute(m.sql).map_err(fail)?;
            if let Some(fill) = m.fill {
                fill(&mut tx).map_err(fail)?;
            }
            let layout = (i + 1).to_string();
            tx.execute(
                "INSERT INTO rtgauge_meta (key, value) VALUES ('layout', $1) ON CONFLICT (key) DO UPDATE SET value = $1",
                &[&layout],
            )
            .map_err(fail)?;
        }
        tx.execute("INSERT INTO rtgauge_meta (key, value) VALUES ('application', 'rtgauge') ON CONFLICT (key) DO NOTHING", &[])
            .map_err(fail)?;
        tx.commit().map_err(fail)
    }

    /// Checks that the store's tables are all there (the server keeps their integrity).
    pub fn check_whole(&self) -> Result<(), OpenError> {
        let t = &self.target;
        let mut c = self.client.borrow_mut();
        let row = c
            .query_one(
                "SELECT to_regclass(format('%I.runs', current_schema())) IS NOT NULL \
                 AND to_regclass(format('%I.timelines', current_schema())) IS NOT NULL \
                 AND to_regclass(format('%I.figures', current_schema())) IS NOT NULL",
                &[],
            )
            .map_err(|e| refused(t, "checking the store", &e))?;
        if row.get::<_, bool>(0) {
            return Ok(());
        }
        Err(OpenError::Refused(format!(
            "the store {} lacks some of its tables (runs, timelines, figures); it is left as it is: give another database with --db",
            t.shown
        )))
    }

    /// Checks, before measuring, that a run can be written: a trial row in `runs`, `timelines`
    /// and `figures`, rolled back (no id is used up). `_bytes` (the result's size) is not checked:
    /// the server's room is not known to a client.
    pub fn check_room(&self, _bytes: u64) -> Result<(), OpenError> {
        let t = &self.target;
        let doing = "write the store's tables";
        let fail = |e: postgres::Error| refused(t, doing, &e);
        let mut c = self.client.borrow_mut();
        let mut tx = c.transaction().map_err(fail)?;
        tx.batch_execute(&format!("SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")).map_err(fail)?;
        tx.execute(
            "INSERT INTO runs (id, uuid, started_at, board, host, kernel, preemption, probes, verdict, status, document) \
             VALUES (-1, '00000000-0000-0000-0000-000000000000', '', '', '', '', '', '', '', 'check', '')",
            &[],
        )
        .map_err(fail)?;
        tx.execute("INSERT INTO timelines (run, entry, data) VALUES (-1, 0, '')", &[]).map_err(fail)?;
        tx.execute(
            "INSERT INTO figures (run, entry, series, latency, samples, missed, bins) VALUES (-1, 0, '', false, 0, 0, '')",
            &[],
        )
        .map_err(fail)?;
        // The trial gave its id; a run takes one from the sequence.
        let sequence: bool = tx
            .query_one(
                "SELECT has_sequence_privilege(pg_get_serial_sequence(format('%I.runs', current_schema()), 'id'), 'USAGE')",
                &[],
            )
            .map_err(fail)?
            .get(0);
        tx.rollback().map_err(fail)?;
        if sequence {
            return Ok(());
        }
        Err(OpenError::Refused(format!(
            "user {} may not write the store's tables in the database {} at {} (no USAGE on the sequence of runs.id); \
             have its owner grant it, or give another database with --db",
            t.user, t.dbname, t.at
        )))
    }

    /// Where a run the server did not take is rescued: the local store's directory.
    fn rescue_dir_local() -> Option<std::path::PathBuf> {
        super::local_data_dir().filter(|d| d.is_dir())
    }
}

impl super::Backend for PgStore {
    fn shown(&self) -> String {
        self.target.shown.clone()
    }

    /// A run the server did not take goes to the local store's directory (if there is one),
    /// else the current one.
    fn rescue_dir(&self) -> Option<std::path::PathBuf> {
        PgStore::rescue_dir_local()
    }

    fn check_whole(&self) -> Result<(), OpenError> {
        PgStore::check_whole(self)
    }

    fn check_room(&self, bytes: u64) -> Result<(), OpenError> {
        PgStore::check_room(self, bytes)
    }

    /// Keeps a run's whole result: the compressed document in `runs`, the timelines in
    /// `timelines`, the kernel configuration in `kernel_configs` (once per SHA-256), in one
    /// transaction; a run whose UUID is stored already is not stored again (its id comes back,
    /// `already`). A connection that was lost while measuring is made again, once.
    fn save(&self, r: &RunResult, timelines: &[(usize, TimelineData)], row: &NewRow) -> Result<Saved, StoreError> {
        let prepared = prepare(r, timelines, row)?;
        let t = &self.target;
        let mut c = self.client.borrow_mut();
        if c.is_closed() {
            *c = Conn(Some(t.connect().map_err(|e| t.connect_failed("connecting again to store the run", &e))?));
        }
        match write(&mut c, &prepared, row) {
            // Lost (idle through a long run, a server restart): once more on a new connection; the
            // UUID makes a write that did commit after all a no-op.
            Err(e) if lost(&e) => {
                *c = Conn(Some(t.connect().map_err(|e| t.connect_failed("connecting again to store the run", &e))?));
                write(&mut c, &prepared, row).map_err(|e| t.failed("storing the run", &e))
            }
            saved => saved.map_err(|e| t.failed("storing the run", &e)),
        }
    }

    fn list(&self, filter: &Filter) -> Result<Vec<RunRow>, StoreError> {
        super::sql::list(self, filter)
    }

    fn boards(&self, filter: &Filter) -> Result<Vec<BoardRow>, StoreError> {
        super::sql::boards(self, filter)
    }

    /// Each board's newest runs as the top of its range of the index on (md5(board), id), the
    /// boards' hashes found one after another along that index (a few hundred probes, not a
    /// pass over every run). Two boards whose names share an MD5 (only ever made on purpose)
    /// share a range: each is then read by its name. (A store of layout 1, only read, has no
    /// such index: the runs numbered per board from the newest, all of them.)
    fn recent_per_board(&self, filter: &Filter, per_board: u32) -> Result<Vec<RunRow>, StoreError> {
        let (filter_sql, mut values) = super::sql::clauses(&self.dialect(), filter);
        values.push(Param::Int(per_board.into()));
        let n = values.len();
        let cols = self.row_columns();
        if self.layout < 2 {
            let sql = format!(
                "SELECT {cols} FROM runs WHERE id IN (SELECT id FROM (SELECT id, ROW_NUMBER() OVER \
                 (PARTITION BY board ORDER BY id DESC) AS n FROM runs{filter_sql}) w WHERE n <= ${n}) ORDER BY id"
            );
            return self.rows("listing each board's runs", &sql, &values);
        }
        let and = if filter_sql.is_empty() { " WHERE" } else { " AND" };
        let sql = format!(
            "WITH RECURSIVE hashes (h) AS (SELECT min(md5(board)) FROM runs UNION ALL \
             SELECT (SELECT min(md5(board)) FROM runs WHERE md5(board) > hashes.h) FROM hashes WHERE hashes.h IS NOT NULL) \
             SELECT r.*, hashes.h FROM hashes CROSS JOIN LATERAL (SELECT {cols} FROM runs{filter_sql}{and} \
             md5(board) = hashes.h ORDER BY id DESC LIMIT ${n}) r"
        );
        let doing = "listing each board's runs";
        let found = self.query(doing, &sql, &values)?;
        let mut boards_of: HashMap<String, std::collections::BTreeSet<String>> = HashMap::new();
        let mut rows = Vec::with_capacity(found.len());
        for mut r in found {
            let hash = match r.0.get_mut(16).map(std::mem::take) {
                Some(Value::Text(h)) => h,
                _ => String::new(),
            };
            let row = super::sql::run_row(r);
            boards_of.entry(hash).or_default().insert(row.board.clone());
            rows.push(row);
        }
        let shared: std::collections::BTreeSet<String> = boards_of.into_values().filter(|b| b.len() > 1).flatten().collect();
        if shared.is_empty() {
            return Ok(rows);
        }
        rows.retain(|r| !shared.contains(&r.board));
        let one = format!("SELECT {cols} FROM runs{filter_sql}{and} board = ${} ORDER BY id DESC LIMIT ${n}", n + 1);
        for board in &shared {
            let mut bound = values.clone();
            bound.push(Param::Text(board.into()));
            rows.extend(self.rows(doing, &one, &bound)?);
        }
        Ok(rows)
    }

    /// The runs' rows, then their figures, in one snapshot.
    fn figures(&self, ids: &[i64]) -> Result<Option<HashMap<i64, Figures>>, StoreError> {
        super::sql::figures(self, ids, &self.target.shown)
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
        super::sql::kernel_config_before(self, board, &self.target.shown)
    }

    fn kernel_options(&self, sha256: &str) -> Result<Option<BTreeMap<String, String>>, StoreError> {
        super::sql::kernel_options(self, sha256, &self.target.shown)
    }

    /// The whole result of run `id` (one snapshot: its document and timelines as one).
    fn load(&self, id: i64) -> Result<RunResult, StoreError> {
        let t = &self.target;
        let unreadable = |e: &dyn std::fmt::Display| format!("run {id} in the store {} cannot be read: {e}", t.shown);
        let mut c = self.client.borrow_mut();
        let mut tx = c.build_transaction().read_only(true).start().map_err(|e| t.failed("reading the run", &e))?;
        let row = tx
            .query_opt("SELECT document, uuid::text FROM runs WHERE id = $1", &[&id])
            .map_err(|e| t.failed("reading the run", &e))?
            .ok_or_else(|| StoreError::NotFound(unreadable(&"no such run")))?;
        let mut r = super::decompress_document(row.get(0)).map_err(|e| unreadable(&e))?;
        if r.uuid.is_none() {
            r.identified(uuid::Uuid::parse_str(row.get(1)).ok());
        }
        drop(row);
        let rows =
            tx.query("SELECT entry, data FROM timelines WHERE run = $1", &[&id]).map_err(|e| t.failed("reading the run", &e))?;
        for row in rows {
            let entry: i32 = row.get(0);
            super::restore_timeline(&mut r, entry.into(), row.get(1)).map_err(|e| unreadable(&e))?;
        }
        tx.commit().map_err(|e| t.failed("reading the run", &e))?;
        Ok(r)
    }

    fn label(&self, id: i64) -> Result<Option<String>, StoreError> {
        super::sql::label(self, id)
    }

    /// Deletes run `id` (its timelines and figures go with it: the tables cascade).
    fn delete(&self, id: i64, uuid: Option<&str>) -> Result<bool, StoreError> {
        super::sql::delete(self, id, uuid)
    }

    fn refuse_writes(&self) -> Result<(), StoreError> {
        let t = &self.target;
        self.client
            .borrow_mut()
            .batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            .map_err(|e| t.failed("making the session read-only", &e))
    }
}

/// The columns of a [`RunRow`], in the order `sql::run_row` reads them (a store of a layout before
/// 4, only read, has no series: NULL).
const ROW_COLUMNS: &str = "id, started_at, label, host, kernel, preemption, scenario, probes, worst_ns, verdict, status, \
     imported_from, uuid::text, board, series, part";
const ROW_COLUMNS_BEFORE_4: &str = "id, started_at, label, host, kernel, preemption, scenario, probes, worst_ns, verdict, \
     status, imported_from, uuid::text, board, NULL::text, NULL::int8";

impl PgStore {
    /// The columns of a row, as this store's layout has them.
    fn row_columns(&self) -> &'static str {
        if self.layout >= 4 {
            ROW_COLUMNS
        } else {
            ROW_COLUMNS_BEFORE_4
        }
    }

    /// The rows `sql` (selecting [`ROW_COLUMNS`]) gives, while `doing`.
    fn rows(&self, doing: &str, sql: &str, values: &[Param<'_>]) -> Result<Vec<RunRow>, StoreError> {
        Ok(self.query(doing, sql, values)?.into_iter().map(super::sql::run_row).collect())
    }
}

/// The shared operations' SQL (`store::sql`) as PostgreSQL runs it.
impl Sql for PgStore {
    fn dialect(&self) -> Dialect {
        Dialect {
            placeholder: '$',
            board: "board",
            row_columns: self.row_columns(),
            uuid_text: "runs.uuid::text",
            kernel_configs: true,
            text: column_text,
            uuid_param: "::text::uuid",
            uuids: true,
            figures: match self.layout {
                ..=1 => None,
                2 => Some(Forecasts::NotKept),
                _ => Some(Forecasts::Kept),
            },
            parts: &[],
        }
    }

    fn execute(&self, doing: &str, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let owned = owned(params);
        let bound: Vec<&(dyn ToSql + Sync)> = owned.iter().map(|b| b.as_ref()).collect();
        let t = &self.target;
        self.client.borrow_mut().execute(sql, &bound).map_err(|e| t.failed(doing, &e))
    }

    fn snapshot(&self, doing: &str, work: &mut dyn FnMut() -> Result<(), StoreError>) -> Result<(), StoreError> {
        self.transaction(doing, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", &mut || work().map(|()| true)).map(drop)
    }

    fn write(&self, doing: &str, work: &mut dyn FnMut() -> Result<bool, StoreError>) -> Result<bool, StoreError> {
        self.transaction(doing, "BEGIN", work)
    }

    fn query(&self, doing: &str, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, StoreError> {
        let owned = owned(params);
        let bound: Vec<&(dyn ToSql + Sync)> = owned.iter().map(|b| b.as_ref()).collect();
        let t = &self.target;
        let rows = self.client.borrow_mut().query(sql, &bound).map_err(|e| t.failed(doing, &e))?;
        Ok(rows.iter().map(|r| Row((0..r.len()).map(|i| value_of(r, i)).collect())).collect())
    }
}

/// Values as PostgreSQL binds them.
fn owned(params: &[Param<'_>]) -> Vec<Box<dyn ToSql + Sync>> {
    params
        .iter()
        .map(|p| match p {
            Param::Int(i) => Box::new(*i) as Box<dyn ToSql + Sync>,
            Param::Text(t) => Box::new(t.to_string()),
        })
        .collect()
}

impl PgStore {
    /// `work` between `begin` and `COMMIT` (`ROLLBACK` when it fails: its error is the one said).
    fn transaction(
        &self,
        doing: &str,
        begin: &str,
        work: &mut dyn FnMut() -> Result<bool, StoreError>,
    ) -> Result<bool, StoreError> {
        let t = &self.target;
        self.client.borrow_mut().batch_execute(begin).map_err(|e| t.failed(doing, &e))?;
        match work() {
            Ok(done) => {
                self.client.borrow_mut().batch_execute("COMMIT").map_err(|e| t.failed(doing, &e))?;
                Ok(done)
            }
            Err(e) => {
                let _ = self.client.borrow_mut().batch_execute("ROLLBACK");
                Err(e)
            }
        }
    }
}

/// Column `i` of row `r` as a [`Value`], by its type (integers, bytes; anything else as text).
fn value_of(r: &postgres::Row, i: usize) -> Value {
    use postgres::types::Type;
    let ty = r.columns()[i].type_().clone();
    let v = if ty == Type::INT8 {
        r.try_get::<_, Option<i64>>(i).ok().flatten().map(Value::Int)
    } else if ty == Type::INT4 {
        r.try_get::<_, Option<i32>>(i).ok().flatten().map(|v| Value::Int(v.into()))
    } else if ty == Type::INT2 {
        r.try_get::<_, Option<i16>>(i).ok().flatten().map(|v| Value::Int(v.into()))
    } else if ty == Type::BOOL {
        r.try_get::<_, Option<bool>>(i).ok().flatten().map(|v| Value::Int(v.into()))
    } else if ty == Type::BYTEA {
        r.try_get::<_, Option<Vec<u8>>>(i).ok().flatten().map(Value::Bytes)
    } else {
        r.try_get::<_, Option<String>>(i).ok().flatten().map(Value::Text)
    };
    v.unwrap_or(Value::Null)
}

/// A run ready to be written: its compressed document, its timelines' blobs, its kernel
/// configuration's options compressed.
struct Prepared {
    document: Vec<u8>,
    entries: Vec<i32>,
    blobs: Vec<Vec<u8>>,
    kernel_options: Option<Vec<u8>>,
}

/// Encodes a run for the store, as every backend does (the parent module's encoders): in
/// memory, as a BYTEA parameter is one buffer (the timelines, the bulk of a long run, are
/// apart from the document).
fn prepare(r: &RunResult, timelines: &[(usize, TimelineData)], row: &NewRow) -> Result<Prepared, String> {
    let encoding = |e: std::io::Error| format!("encoding the run for the store: {e}");
    let mut document = Vec::new();
    super::compress_into(r, &mut document).map_err(encoding)?;
    let (mut entries, mut blobs) = (Vec::with_capacity(timelines.len()), Vec::with_capacity(timelines.len()));
    super::encode_timelines(timelines, |i, blob| {
        entries.push(i32::try_from(i).map_err(|_| format!("entry {i} is past what the store keeps"))?);
        blobs.push(blob);
        Ok(())
    })?;
    let kernel_options = row.kernel_config.as_ref().map(|k| super::compress_options(&k.options)).transpose().map_err(encoding)?;
    Ok(Prepared { document, entries, blobs, kernel_options })
}

/// One transaction: the run's row (unless its UUID is there), its kernel configuration (unless
/// that is there), then its timelines in one statement, and its figures in another.
fn write(c: &mut Client, p: &Prepared, new: &NewRow) -> Result<Saved, postgres::Error> {
    let mut tx = c.transaction()?;
    tx.batch_execute(&format!("SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))?;
    let r = &new.row;
    let worst = r.worst_ns.map(|w| i64::try_from(w).unwrap_or(i64::MAX));
    let text = column_text;
    let kernel_config = new.kernel_config_sha256();
    let shortest = new.figures.shortest_cycle_ns.map(clamp);
    // A run stored before (an import repeated, a push again) is found first, so it takes no id
    // from the sequence; two writers of one run at once meet at the UUID's unique index below.
    let stored = tx.query_opt("SELECT id FROM runs WHERE uuid = $1::text::uuid", &[&new.uuid])?;
    if let Some(row) = stored {
        let id: i64 = row.get(0);
        tx.rollback()?;
        return Ok(Saved { id, already: true });
    }
    let inserted = tx.query_opt(
        "INSERT INTO runs (uuid, started_at, label, board, host, kernel, preemption, scenario, probes, worst_ns, \
         verdict, status, imported_from, document, kernel_config, shortest_cycle_ns, series, part) \
         VALUES ($1::text::uuid, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) \
         ON CONFLICT (uuid) DO NOTHING RETURNING id",
        &[
            &new.uuid,
            &text(&r.started_at),
            &r.label.as_deref().map(column_text),
            &text(&r.board),
            &text(&r.host),
            &text(&r.kernel),
            &text(&r.preemption),
            &r.scenario.as_deref().map(column_text),
            &text(&r.probes),
            &worst,
            &r.verdict,
            &r.status,
            &r.imported_from.as_deref().map(column_text),
            &p.document,
            &kernel_config,
            &shortest,
            &r.series.as_deref().map(column_text),
            &r.part,
        ],
    )?;
    let Some(row) = inserted else {
        let id: i64 = tx.query_one("SELECT id FROM runs WHERE uuid = $1::text::uuid", &[&new.uuid])?.get(0);
        tx.rollback()?;
        return Ok(Saved { id, already: true });
    };
    let id: i64 = row.get(0);
    if let (Some(sha256), Some(options)) = (kernel_config, &p.kernel_options) {
        tx.execute(
            "INSERT INTO kernel_configs (sha256, options) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING",
            &[&sha256, options],
        )?;
    }
    if !p.entries.is_empty() {
        tx.execute(
            "INSERT INTO timelines (run, entry, data) SELECT $1, e, d FROM unnest($2::int4[], $3::bytea[]) AS t (e, d)",
            &[&id, &p.entries, &p.blobs],
        )?;
    }
    let mut figures = FigureRows::default();
    figures.add(id, &new.figures);
    figures.insert(&mut tx, true)?;
    tx.commit()?;
    Ok(Saved { id, already: false })
}

/// Text as a column keeps it: PostgreSQL's text holds no NUL, which is shown as `␀` (the
/// document keeps the text exactly).
fn column_text(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\0') {
        s.replace('\0', "\u{2400}").into()
    } else {
        s.into()
    }
}

/// Whether an error means the connection is gone (closed, broken, or ended by the server's
/// shutdown), so that the same work may be tried again on a new one.
fn lost(e: &postgres::Error) -> bool {
    let io = e.as_db_error().is_none() && std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
    e.is_closed() || io || e.code() == Some(&SqlState::ADMIN_SHUTDOWN)
}

/// Whether `e` says the server is away for now (it may answer later): no route, nothing
/// listening, no answer in time, a name not resolved yet (a board up before its network), the
/// connection lost, the server starting up or shutting down or taking no more connections. What
/// can never succeed as given — a wrong password, an unknown user or database, a server that is
/// not trusted, a right refused — is not.
pub(super) fn away(e: &postgres::Error) -> bool {
    use std::io::ErrorKind as K;
    if let Some(code) = e.code() {
        return [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::CONFIGURATION_LIMIT_EXCEEDED,
        ]
        .contains(code);
    }
    if e.is_closed() {
        return true;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                K::ConnectionRefused
                    | K::ConnectionReset
                    | K::ConnectionAborted
                    | K::NotConnected
                    | K::TimedOut
                    | K::HostUnreachable
                    | K::NetworkUnreachable
                    | K::NetworkDown
                    | K::AddrNotAvailable
                    | K::UnexpectedEof
                    | K::BrokenPipe
                    // (a server's socket directory with no socket yet: a server not started)
                    | K::NotFound
            ) || matches!(io.raw_os_error(), Some(libc::EHOSTDOWN | libc::EHOSTUNREACH | libc::ENETUNREACH))
                || chain(s).contains("lookup address");
        }
        source = s.source();
    }
    chain(e).contains("lookup address") || chain(e).contains("Name or service not known")
}

/// A failure while opening: the server away for now (`Away`), cannot be reached or refuses us
/// (`Unreachable`), or the database is not one rtgauge may use (`Refused`).
fn open_error(t: &Target, doing: &str, e: &postgres::Error) -> OpenError {
    match e.code() {
        Some(&SqlState::INSUFFICIENT_PRIVILEGE | &SqlState::READ_ONLY_SQL_TRANSACTION) => OpenError::Refused(t.error(doing, e)),
        _ if away(e) => OpenError::Away(t.error(doing, e)),
        _ => OpenError::Unreachable(t.error(doing, e)),
    }
}

/// A failure while checking or migrating the store.
fn refused(t: &Target, doing: &str, e: &postgres::Error) -> OpenError {
    if away(e) {
        OpenError::Away(t.error(doing, e))
    } else if e.as_db_error().is_some() {
        OpenError::Refused(t.error(doing, e))
    } else {
        OpenError::Unreachable(t.error(doing, e))
    }
}
