//! The store's operations written once, over a dialect: `list`, `count`, `boards`, the ids a
//! name means (`last_id`, `has_id`, `latest_labelled`, `by_uuid_prefix`), a run's `label`, the
//! kernel configurations (`kernel_options`, `kernel_config_before`), the dashboard's `figures`
//! and `delete`. Each backend says how it runs a query and reads its values, how it takes a
//! snapshot and a write transaction ([`Sql`]), and what its layout names differently
//! ([`Dialect`]): its placeholders, the column that names a run's board, a row's columns, a
//! UUID as text and as a bound value, which tables it has, how a bound text is kept. The SQL is
//! the same text for both.
//!
//! What stays per backend, and why: saving a run (SQLite streams a document into a blob in
//! pieces, through its incremental blob I/O; PostgreSQL binds it whole and stores by
//! `ON CONFLICT`: two different write paths, not two spellings of one), loading one (a
//! document streamed out of a blob against one read whole), each board's newest runs (SQLite
//! numbers them along an index with a window; PostgreSQL skips along the boards' hashes with a
//! lateral join: each the plan its planner makes fast), the checks before measuring (a file
//! against a server), and the migrations (one ladder per backend, declared as data).

use super::figures::{BoardRow, Figures, SeriesFigures};
use super::{Bound, Earlier, Filter, RunRow, StoreError};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

/// A value bound to a query.
#[derive(Debug, Clone)]
pub(super) enum Param<'a> {
    Int(i64),
    Text(Cow<'a, str>),
}

/// A value read from a query's row.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) enum Value {
    #[default]
    Null,
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
}

/// A row read, its values in the order of the query's columns.
pub(super) struct Row(pub Vec<Value>);

impl Row {
    fn int(&self, i: usize) -> Option<i64> {
        match self.0.get(i) {
            Some(Value::Int(v)) => Some(*v),
            _ => None,
        }
    }

    fn text(&self, i: usize) -> Option<String> {
        match self.0.get(i) {
            Some(Value::Text(t)) => Some(t.clone()),
            _ => None,
        }
    }

    /// Text `i`, taken out of the row (not copied).
    fn take_text(&mut self, i: usize) -> Option<String> {
        match self.0.get_mut(i).map(std::mem::take) {
            Some(Value::Text(t)) => Some(t),
            _ => None,
        }
    }

    fn bytes(&self, i: usize) -> Option<&[u8]> {
        match self.0.get(i) {
            Some(Value::Bytes(b)) => Some(b),
            _ => None,
        }
    }
}

/// What a backend's layout names differently.
pub(super) struct Dialect {
    /// The character before a placeholder's number: `$1` (PostgreSQL), `?1` (SQLite).
    pub placeholder: char,
    /// The column that names a run's board (a store of an older layout, only read: its host).
    pub board: &'static str,
    /// The columns of a [`RunRow`], in the order [`run_row`] reads them.
    pub row_columns: &'static str,
    /// A run's UUID as text, in a query over `runs`.
    pub uuid_text: &'static str,
    /// Whether the layout keeps kernel configurations (`kernel_configs`).
    pub kernel_configs: bool,
    /// A text as a column keeps it (PostgreSQL's text holds no NUL).
    pub text: fn(&str) -> Cow<'_, str>,
    /// What follows a placeholder bound to a UUID's text (PostgreSQL's column is a `uuid`).
    pub uuid_param: &'static str,
    /// Whether the layout keeps runs' UUIDs in a column of their own.
    pub uuids: bool,
    /// Whether the layout keeps the dashboard's figures (`figures`), and their forecasts.
    pub figures: Option<Forecasts>,
    /// The tables of a run's parts, deleted before it (those its `runs` row does not cascade to).
    pub parts: &'static [&'static str],
}

/// Whether a layout's figures hold the forecasts' columns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Forecasts {
    Kept,
    NotKept,
}

/// A text kept as it is (SQLite's text holds any).
pub(super) fn as_is(s: &str) -> Cow<'_, str> {
    Cow::Borrowed(s)
}

/// How a backend runs a query: its values bound, its rows read (`doing`: for its error).
pub(super) trait Sql {
    fn dialect(&self) -> Dialect;
    fn query(&self, doing: &str, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, StoreError>;
    /// A statement that reads nothing; the rows it changed.
    fn execute(&self, doing: &str, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError>;
    /// `work` in one snapshot: every query it makes reads the store as it was at its start.
    fn snapshot(&self, doing: &str, work: &mut dyn FnMut() -> Result<(), StoreError>) -> Result<(), StoreError>;
    /// `work` in one write transaction, the write lock taken before it starts (no other writer
    /// comes between its reads and its writes); undone whole when it fails.
    fn write(&self, doing: &str, work: &mut dyn FnMut() -> Result<bool, StoreError>) -> Result<bool, StoreError>;
}

/// `filter`'s conditions as a `WHERE` clause (empty without any) and the values it binds: each
/// condition one clause, its value bound, never written into the SQL.
pub(super) fn clauses<'f>(d: &Dialect, filter: &'f Filter) -> (String, Vec<Param<'f>>) {
    let mut conditions: Vec<String> = Vec::new();
    let mut values: Vec<Param> = Vec::new();
    for (column, op, v) in filter.conditions() {
        let column = if column == "board" { d.board } else { column };
        values.push(match v {
            Bound::Text(t) => Param::Text((d.text)(t)),
            Bound::Id(id) => Param::Int(*id),
        });
        conditions.push(format!("{column} {op} {}{}", d.placeholder, values.len()));
    }
    let wher = if conditions.is_empty() { String::new() } else { format!(" WHERE {}", conditions.join(" AND ")) };
    (wher, values)
}

/// A row of [`Dialect::row_columns`], its texts taken, not copied.
pub(super) fn run_row(mut r: Row) -> RunRow {
    let mut text = |i: usize| r.take_text(i);
    let (uuid, started_at, label, board, host) = (text(12), text(1), text(2), text(13), text(3));
    let (kernel, preemption, scenario, probes) = (text(4), text(5), text(6), text(7));
    let (verdict, status, imported_from, series) = (text(9), text(10), text(11), text(14));
    RunRow {
        id: r.int(0).unwrap_or_default(),
        uuid,
        started_at: started_at.unwrap_or_default(),
        label,
        board: board.unwrap_or_default(),
        host: host.unwrap_or_default(),
        kernel: kernel.unwrap_or_default(),
        preemption: preemption.unwrap_or_default(),
        scenario,
        probes: probes.unwrap_or_default(),
        worst_ns: r.int(8).map(|w| w as u64),
        verdict: verdict.unwrap_or_default(),
        status: status.unwrap_or_default(),
        imported_from,
        series,
        part: r.int(15),
    }
}

/// The runs that pass `filter`, oldest first; only the newest `filter.newest` of them when given
/// (taken from the top of the ids, then put back in order).
pub(super) fn list(db: &dyn Sql, filter: &Filter) -> Result<Vec<RunRow>, StoreError> {
    let d = db.dialect();
    let (wher, values) = clauses(&d, filter);
    let order = match filter.newest {
        Some(n) => format!(" DESC LIMIT {}", n.min(i64::MAX as u64)),
        None => String::new(),
    };
    let sql = format!("SELECT {} FROM runs{wher} ORDER BY id{order}", d.row_columns);
    let mut rows: Vec<RunRow> = db.query("listing the runs", &sql, &values)?.into_iter().map(run_row).collect();
    if filter.newest.is_some() {
        rows.reverse();
    }
    Ok(rows)
}

/// How many runs pass `filter` (`filter.newest` aside).
pub(super) fn count(db: &dyn Sql, filter: &Filter) -> Result<u64, StoreError> {
    let (wher, values) = clauses(&db.dialect(), filter);
    let rows = db.query("counting the runs", &format!("SELECT count(*) FROM runs{wher}"), &values)?;
    Ok(rows.first().and_then(|r| r.int(0)).unwrap_or(0) as u64)
}

/// The boards that have a run passing `filter`, each with its runs' count, first and last start
/// and latest id (one pass over the index on the board and id).
pub(super) fn boards(db: &dyn Sql, filter: &Filter) -> Result<Vec<BoardRow>, StoreError> {
    let d = db.dialect();
    let (wher, values) = clauses(&d, filter);
    let board = d.board;
    let sql = format!("SELECT {board}, count(*), min(started_at), max(started_at), max(id) FROM runs{wher} GROUP BY {board}");
    let rows = db.query("listing the boards", &sql, &values)?;
    Ok(rows
        .iter()
        .map(|r| BoardRow {
            board: r.text(0).unwrap_or_default(),
            runs: r.int(1).unwrap_or(0) as u64,
            first_started_at: r.text(2).unwrap_or_default(),
            last_started_at: r.text(3).unwrap_or_default(),
            latest: r.int(4).unwrap_or_default(),
        })
        .collect())
}

/// The one integer (or none) of a query's first row.
fn one_int(db: &dyn Sql, doing: &str, sql: &str, params: &[Param<'_>]) -> Result<Option<i64>, StoreError> {
    Ok(db.query(doing, sql, params)?.first().and_then(|r| r.int(0)))
}

/// The latest run's id.
pub(super) fn last_id(db: &dyn Sql) -> Result<Option<i64>, StoreError> {
    one_int(db, "finding the run", "SELECT max(id) FROM runs", &[])
}

/// Whether run `id` is there.
pub(super) fn has_id(db: &dyn Sql, id: i64) -> Result<bool, StoreError> {
    let p = db.dialect().placeholder;
    Ok(one_int(db, "finding the run", &format!("SELECT max(id) FROM runs WHERE id = {p}1"), &[Param::Int(id)])?.is_some())
}

/// The latest run labelled `label`.
pub(super) fn latest_labelled(db: &dyn Sql, label: &str) -> Result<Option<i64>, StoreError> {
    let d = db.dialect();
    let sql = format!("SELECT max(id) FROM runs WHERE label = {}1", d.placeholder);
    one_int(db, "finding the run", &sql, &[Param::Text((d.text)(label))])
}

/// The label of run `id`, if it has one.
pub(super) fn label(db: &dyn Sql, id: i64) -> Result<Option<String>, StoreError> {
    let sql = format!("SELECT label FROM runs WHERE id = {}1", db.dialect().placeholder);
    Ok(db.query("reading the run", &sql, &[Param::Int(id)])?.first().and_then(|r| r.text(0)))
}

/// The options of the kernel configuration whose text has SHA-256 `sha256`, if kept (`shown`:
/// the store, for the error of one that does not read).
pub(super) fn kernel_options(db: &dyn Sql, sha256: &str, shown: &str) -> Result<Option<BTreeMap<String, String>>, StoreError> {
    let d = db.dialect();
    if !d.kernel_configs {
        return Ok(None);
    }
    let sql = format!("SELECT options FROM kernel_configs WHERE sha256 = {}1", d.placeholder);
    let rows = db.query("reading a kernel configuration", &sql, &[Param::Text(sha256.into())])?;
    let Some(blob) = rows.first().and_then(|r| r.bytes(0)) else { return Ok(None) };
    super::decompress_options(blob)
        .map(Some)
        .map_err(|e| StoreError::Failed(format!("the kernel configuration {sha256} in the store {shown} cannot be read: {e}")))
}

/// The kernel configuration of the latest run of `board` that recorded one (`shown`: the
/// store, for the error of one that does not read).
pub(super) fn kernel_config_before(db: &dyn Sql, board: &str, shown: &str) -> Result<Option<Earlier>, StoreError> {
    let d = db.dialect();
    if !d.kernel_configs {
        return Ok(None);
    }
    let sql = format!(
        "SELECT runs.id, {}, kernel_configs.options FROM runs JOIN kernel_configs \
         ON kernel_configs.sha256 = runs.kernel_config WHERE runs.board = {}1 ORDER BY runs.id DESC LIMIT 1",
        d.uuid_text, d.placeholder
    );
    let rows = db.query("reading the board's last run", &sql, &[Param::Text((d.text)(board))])?;
    let Some(row) = rows.first() else { return Ok(None) };
    let id = row.int(0).unwrap_or_default();
    let options = super::decompress_options(row.bytes(2).unwrap_or_default())
        .map_err(|e| format!("the kernel configuration of run {id} in the store {shown} cannot be read: {e}"))?;
    Ok(Some(Earlier { id, uuid: row.text(1), options }))
}

/// The runs whose UUID starts with `prefix` (canonical: lower-case, dashed; see
/// `store::uuid_prefix`), at most 10, oldest first: a range on the UUID's index, from the
/// prefix followed by zeros to it followed by `f`s.
pub(super) fn by_uuid_prefix(db: &dyn Sql, prefix: &str) -> Result<Vec<i64>, StoreError> {
    let d = db.dialect();
    let digits: String = prefix.chars().filter(|c| *c != '-').collect();
    if !d.uuids || digits.len() > 32 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Ok(Vec::new());
    }
    let padded = |fill: char| {
        let mut x = digits.to_ascii_lowercase();
        while x.len() < 32 {
            x.push(fill);
        }
        format!("{}-{}-{}-{}-{}", &x[0..8], &x[8..12], &x[12..16], &x[16..20], &x[20..32])
    };
    let (p, cast) = (d.placeholder, d.uuid_param);
    let sql = format!("SELECT id FROM runs WHERE uuid BETWEEN {p}1{cast} AND {p}2{cast} ORDER BY id LIMIT 10");
    let rows = db.query("finding the run", &sql, &[Param::Text(padded('0').into()), Param::Text(padded('f').into())])?;
    Ok(rows.iter().filter_map(|r| r.int(0)).collect())
}

/// The dashboard's figures of runs `ids` (their rows, then their series, in one snapshot); none
/// where the layout keeps none (`shown`: the store, for the error of one that does not read).
pub(super) fn figures(db: &dyn Sql, ids: &[i64], shown: &str) -> Result<Option<HashMap<i64, Figures>>, StoreError> {
    let d = db.dialect();
    let Some(forecasts) = d.figures else { return Ok(None) };
    let list: Vec<String> = (1..=ids.len()).map(|i| format!("{}{i}", d.placeholder)).collect();
    let list = list.join(", ");
    let bound: Vec<Param> = ids.iter().map(|&id| Param::Int(id)).collect();
    let columns = match forecasts {
        Forecasts::Kept => "day_level_ns, day_low_ns, day_high_ns, forecast_note",
        Forecasts::NotKept => "CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS TEXT)",
    };
    let (mut runs, mut series) = (Vec::new(), Vec::new());
    db.snapshot("reading the runs' figures", &mut || {
        if ids.is_empty() {
            return Ok(());
        }
        let sql = format!("SELECT id, shortest_cycle_ns, kernel_config FROM runs WHERE id IN ({list})");
        runs = db.query("reading the runs' figures", &sql, &bound)?;
        let sql = format!(
            "SELECT run, entry, series, latency, samples, missed, p99_ns, p999_ns, max_ns, bins, {columns} \
             FROM figures WHERE run IN ({list}) ORDER BY run, entry"
        );
        series = db.query("reading the runs' figures", &sql, &bound)?;
        Ok(())
    })?;
    let mut all: HashMap<i64, Figures> = runs
        .iter()
        .map(|r| {
            let f = Figures {
                shortest_cycle_ns: r.int(1).map(|v| v as u64),
                kernel_config: r.text(2),
                series: Vec::new(),
                forecasts: true,
            };
            (r.int(0).unwrap_or_default(), f)
        })
        .collect();
    for mut r in series {
        let run = r.int(0).unwrap_or_default();
        let (series, note) = (r.take_text(2).unwrap_or_default(), r.take_text(13));
        let unsigned = |i: usize| r.int(i).map(|v| v as u64);
        let bins = super::figures::decode_bins(r.bytes(9).unwrap_or_default())
            .ok_or_else(|| StoreError::Failed(format!("the figures of run {run} in the store {shown} are damaged")))?;
        let s = SeriesFigures {
            entry: r.int(1).unwrap_or_default() as u32,
            series,
            latency: r.int(3).is_some_and(|v| v != 0),
            samples: unsigned(4).unwrap_or(0),
            missed: unsigned(5).unwrap_or(0),
            p99_ns: unsigned(6),
            p999_ns: unsigned(7),
            max_ns: unsigned(8),
            bins,
            day_level_ns: unsigned(10),
            day_low_ns: unsigned(11),
            day_high_ns: unsigned(12),
            forecast_note: note,
        };
        if let Some(f) = all.get_mut(&run) {
            f.series.push(s);
        }
    }
    if forecasts == Forecasts::NotKept {
        all.values_mut().for_each(super::figures::without_forecasts);
    }
    Ok(Some(all))
}

/// Deletes run `id` with its parts, only if it still has `uuid` when one is given (a run stored
/// since may have its id: SQLite gives a deleted highest id again); whether a run was deleted.
pub(super) fn delete(db: &dyn Sql, id: i64, uuid: Option<&str>) -> Result<bool, StoreError> {
    let d = db.dialect();
    let p = d.placeholder;
    let doing = "deleting the run";
    db.write(doing, &mut || {
        if let Some(uuid) = uuid {
            let sql = format!("SELECT {} FROM runs WHERE id = {p}1", d.uuid_text);
            let theirs = db.query(doing, &sql, &[Param::Int(id)])?.first().and_then(|r| r.text(0));
            if theirs.as_deref() != Some(uuid) {
                return Ok(false);
            }
        }
        for part in d.parts {
            db.execute(doing, &format!("DELETE FROM {part} WHERE run = {p}1"), &[Param::Int(id)])?;
        }
        Ok(db.execute(doing, &format!("DELETE FROM runs WHERE id = {p}1"), &[Param::Int(id)])? > 0)
    })
}
