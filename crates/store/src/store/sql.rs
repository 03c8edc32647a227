//! The store's reading operations written once, over a dialect: `list`, `count`, `boards`, the
//! ids a name means (`last_id`, `has_id`, `latest_labelled`), a run's `label`, and the kernel
//! configurations (`kernel_options`, `kernel_config_before`). Each backend says how it runs a
//! query and reads its values ([`Sql`]) and what its layout names differently ([`Dialect`]):
//! its placeholders, the column that names a run's board, a row's columns, a UUID as text, how
//! a bound text is kept. The SQL is the same text for both.
//!
//! What stays per backend, and why: saving a run (SQLite streams a document into a blob in
//! pieces; PostgreSQL binds it whole and stores by `ON CONFLICT`), loading one (its timelines
//! in the same snapshot, taken differently), each board's newest runs (SQLite numbers them
//! along an index; PostgreSQL skips along the boards' hashes), the dashboard's figures (an
//! `IN` list against `= ANY` of an array), a UUID's prefix (text against PostgreSQL's `uuid`
//! type), deleting, the checks before measuring, and the migrations (one ladder per backend).

use super::figures::BoardRow;
use super::{Bound, Earlier, Filter, RunRow, StoreError};
use std::borrow::Cow;
use std::collections::BTreeMap;

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
}

/// A text kept as it is (SQLite's text holds any).
pub(super) fn as_is(s: &str) -> Cow<'_, str> {
    Cow::Borrowed(s)
}

/// How a backend runs a query: its values bound, its rows read (`doing`: for its error).
pub(super) trait Sql {
    fn dialect(&self) -> Dialect;
    fn query(&self, doing: &str, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, StoreError>;
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
    let mut text = |i: usize| match r.0.get_mut(i).map(std::mem::take) {
        Some(Value::Text(t)) => Some(t),
        _ => None,
    };
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
