//! The SQLite store's layouts: each migration's SQL and what SQL alone cannot do (a UUID for
//! every run stored before, the figures and forecasts of runs stored before), applied in one
//! transaction.

use super::*;

/// One step of the layout: SQL, then what SQL alone cannot do (layout 4: a UUID for every run
/// already stored, from its document), then SQL again.
pub(super) struct Migration {
    pub(super) sql: &'static str,
    pub(super) fill: Option<fn(&Connection) -> rusqlite::Result<()>>,
    pub(super) then: &'static str,
}

/// The layouts, in order: migration `i` takes `user_version` `i` to `i + 1`.
pub(super) const MIGRATIONS: &[Migration] = &[
    Migration {
        sql: "
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
        fill: None,
        then: "",
    },
    Migration {
        sql: "
    -- Layout 2: documents are zlib-compressed JSON (BLOB); layout 1's stay TEXT. An older
    -- rtgauge refuses the file (a newer layout) instead of failing on a compressed document.
    CREATE INDEX runs_host ON runs (host);
",
        fill: None,
        then: "",
    },
    Migration {
        sql: "
    -- Layout 3: each series' timeline as a compact blob of its own (see columns.rs), kept out of
    -- the document; documents of layout 2 keep theirs inside and still read.
    CREATE TABLE timelines (
        run INTEGER NOT NULL,
        entry INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (run, entry)
    );
",
        fill: None,
        then: "",
    },
    Migration {
        sql: "
    -- Layout 4: every run's UUID (its identity across stores: the document's own, or for a run
    -- stored before, one made from its document; unique) and its board (the host name for runs
    -- stored before); each kernel configuration once, by the SHA-256 of its text, so a board's
    -- runs can be compared option by option; each document in a table of its own. `list`'s
    -- filters each have an index (label and date: layout 1; host: layout 2; board, board and
    -- date, kernel: here).
    ALTER TABLE runs ADD COLUMN uuid TEXT;
    ALTER TABLE runs ADD COLUMN board TEXT;
    ALTER TABLE runs ADD COLUMN kernel_config TEXT;
    UPDATE runs SET board = host;
    CREATE TABLE kernel_configs (
        sha256 TEXT PRIMARY KEY,
        options BLOB NOT NULL
    );
",
        fill: Some(fill_uuids),
        then: "
    -- The documents in a table of their own (a run's is tens of kB): the rows `list` reads,
    -- filters and counts stay small, a few hundred bytes, however many runs are stored.
    CREATE TABLE documents (
        run INTEGER PRIMARY KEY,
        document BLOB NOT NULL
    );
    INSERT INTO documents (run, document) SELECT id, document FROM runs;
    ALTER TABLE runs DROP COLUMN document;
    CREATE UNIQUE INDEX runs_uuid ON runs (uuid);
    CREATE INDEX runs_board ON runs (board, started_at);
    CREATE INDEX runs_kernel ON runs (kernel);
",
    },
    Migration {
        sql: "
    -- Layout 5: what the dashboard (`rtgauge serve`) reads of a run without its document: per
    -- combined entry its figures and its histogram in coarse log-spaced bins (store/figures.rs;
    -- the bins as LEB128 varints), clustered by run; per run the shortest cycle time it
    -- supports. Filled here for the runs stored before, from their documents. The index on
    -- (board, id DESC): each board's runs numbered from its newest in one pass over the index,
    -- in its order (no sort).
    ALTER TABLE runs ADD COLUMN shortest_cycle_ns INTEGER;
    CREATE TABLE figures (
        run INTEGER NOT NULL,
        entry INTEGER NOT NULL,
        series TEXT NOT NULL,
        latency INTEGER NOT NULL,
        samples INTEGER NOT NULL,
        missed INTEGER NOT NULL,
        p99_ns INTEGER,
        p999_ns INTEGER,
        max_ns INTEGER,
        bins BLOB NOT NULL,
        PRIMARY KEY (run, entry)
    ) WITHOUT ROWID;
    CREATE INDEX runs_board_id ON runs (board, id DESC);
",
        fill: Some(fill_figures),
        then: "",
    },
    Migration {
        sql: "
    -- Layout 6: per series of each run the latency its forecast says is exceeded once per day
    -- of operation, with its 95 % interval (the highest over the series' CPUs; no upper end:
    -- NULL), or why there is none (store/figures.rs). Filled here for the runs stored before,
    -- from their documents (a document of an older version gets its forecast made).
    ALTER TABLE figures ADD COLUMN day_level_ns INTEGER;
    ALTER TABLE figures ADD COLUMN day_low_ns INTEGER;
    ALTER TABLE figures ADD COLUMN day_high_ns INTEGER;
    ALTER TABLE figures ADD COLUMN forecast_note TEXT;
",
        fill: Some(fill_forecasts),
        then: "",
    },
    Migration {
        sql: "
    -- Layout 7: a rotated run's series and its place in it (`rtgauge run --rotate`): the runs
    -- of one continuous measurement, in order. Runs stored before belong to none.
    ALTER TABLE runs ADD COLUMN series TEXT;
    ALTER TABLE runs ADD COLUMN part INTEGER;
    CREATE INDEX runs_series ON runs (series, part);
",
        fill: None,
        then: "",
    },
];

/// Takes a store of layout `i` to `i + 1` inside the transaction `tx` (the migration's SQL, its
/// fill, its closing SQL, the new version): opening a store applies each step from its layout
/// on, in one transaction; a store made new is one that went up every step from nothing.
pub(super) fn step(tx: &Connection, i: usize) -> rusqlite::Result<()> {
    let m = &MIGRATIONS[i];
    tx.execute_batch(m.sql)?;
    if let Some(fill) = m.fill {
        fill(tx)?;
    }
    tx.execute_batch(m.then)?;
    tx.pragma_update(None, "user_version", i as i64 + 1)
}

/// Layout 5's fill: the figures of every run stored before, from its document, one document
/// at a time (the statement steps through them: a store of 100 000 runs migrates in bounded
/// memory); and its kernel configuration's SHA-256 where its document records one the row
/// lacks. A document that does not read gets no figures (`load` says what is wrong with it).
pub(super) fn fill_figures(c: &Connection) -> rusqlite::Result<()> {
    let mut set =
        c.prepare("UPDATE runs SET shortest_cycle_ns = ?2, kernel_config = coalesce(kernel_config, ?3) WHERE id = ?1")?;
    each_document(c, |id, bytes| {
        let Ok(figures) = super::super::figures_of_document(bytes) else { return Ok(()) };
        set.execute(params![id, figures.shortest_cycle_ns.map(clamp), figures.kernel_config])?;
        insert_figures(c, id, &figures, false)
    })
}

/// Calls `each` with every stored document (its run's id and its bytes), one at a time, in the
/// order of the runs: the statement steps through them, so a migration's memory stays bounded
/// however many runs the store holds. A document that is neither text nor a blob is passed over.
pub(super) fn each_document(c: &Connection, mut each: impl FnMut(i64, &[u8]) -> rusqlite::Result<()>) -> rusqlite::Result<()> {
    let mut documents = c.prepare("SELECT run, document FROM documents ORDER BY run")?;
    let mut found = documents.query([])?;
    while let Some(row) = found.next()? {
        let id: i64 = row.get(0)?;
        if let ValueRef::Text(bytes) | ValueRef::Blob(bytes) = row.get_ref(1)? {
            each(id, bytes)?;
        }
    }
    Ok(())
}

/// Layout 6's fill: the once-per-day return level of every series of every run stored before,
/// from its whole document and timelines, one run at a time (bounded memory); a document of an
/// older version gets its forecast made here. A run that does not read keeps none.
pub(super) fn fill_forecasts(c: &Connection) -> rusqlite::Result<()> {
    let mut timelines = c.prepare("SELECT entry, data FROM timelines WHERE run = ?1")?;
    let mut set = c.prepare(
        "UPDATE figures SET day_level_ns = ?3, day_low_ns = ?4, day_high_ns = ?5, forecast_note = ?6 \
         WHERE run = ?1 AND entry = ?2",
    )?;
    each_document(c, |id, bytes| {
        let kept: Vec<(i64, Vec<u8>)> =
            timelines.query_map([id], |t| Ok((t.get(0)?, t.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
        let Some(figures) = super::super::forecasts_of_document(bytes, &kept) else { return Ok(()) };
        for f in &figures.series {
            set.execute(params![
                id,
                f.entry,
                f.day_level_ns.map(clamp),
                f.day_low_ns.map(clamp),
                f.day_high_ns.map(clamp),
                f.forecast_note
            ])?;
        }
        Ok(())
    })
}

/// Keeps the figures of run `id`, one row per series; `forecasts`: with their forecasts'
/// columns (layout 6 on; layout 5's migration writes the others).
pub(super) fn insert_figures(c: &Connection, id: i64, figures: &Figures, forecasts: bool) -> rusqlite::Result<()> {
    let mut insert = c.prepare_cached(if forecasts {
        "INSERT INTO figures (run, entry, series, latency, samples, missed, p99_ns, p999_ns, max_ns, bins, \
         day_level_ns, day_low_ns, day_high_ns, forecast_note) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
    } else {
        "INSERT INTO figures (run, entry, series, latency, samples, missed, p99_ns, p999_ns, max_ns, bins) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
    })?;
    for f in &figures.series {
        let (samples, missed, bins) = (clamp(f.samples), clamp(f.missed), super::super::figures::encode_bins(&f.bins));
        let (p99, p999, max) = (f.p99_ns.map(clamp), f.p999_ns.map(clamp), f.max_ns.map(clamp));
        let mut values: Vec<&dyn rusqlite::ToSql> =
            vec![&id, &f.entry, &f.series, &f.latency, &samples, &missed, &p99, &p999, &max, &bins];
        let (level, low, high) = (f.day_level_ns.map(clamp), f.day_low_ns.map(clamp), f.day_high_ns.map(clamp));
        if forecasts {
            values.extend([&level as &dyn rusqlite::ToSql, &low, &high, &f.forecast_note]);
        }
        insert.execute(values.as_slice())?;
    }
    Ok(())
}

/// A count or time as SQLite's integers hold it.
pub(super) fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
/// Layout 4's fill: every run stored before gets a UUID, in one pass — its document's own (a run
/// stored by an rtgauge that made one, as a migrated layout-1 text may hold), else the one an
/// import of its file gives (from the file's SHA-256, so importing that file again finds it),
/// else one made from the stored document's bytes; a UUID a row before took already (the same
/// file imported twice) is made from the document's bytes and the row's id, so every row has
/// its own.
pub(super) fn fill_uuids(c: &Connection) -> rusqlite::Result<()> {
    let mut rows = c.prepare("SELECT id, document FROM runs WHERE uuid IS NULL ORDER BY id")?;
    let mut set = c.prepare("UPDATE runs SET uuid = ?2 WHERE id = ?1")?;
    let mut taken = std::collections::HashSet::new();
    let mut found = rows.query([])?;
    while let Some(row) = found.next()? {
        let id: i64 = row.get(0)?;
        let bytes: &[u8] = match row.get_ref(1)? {
            ValueRef::Text(t) | ValueRef::Blob(t) => t,
            _ => &[],
        };
        let of_bytes = |salt: Option<i64>| {
            use sha2::Digest;
            let mut h = sha2::Sha256::new();
            h.update(bytes);
            if let Some(id) = salt {
                h.update(id.to_le_bytes());
            }
            crate::result::content_uuid(&h.finalize().into())
        };
        let uuid = super::super::identity_of_document(bytes).unwrap_or_else(|| of_bytes(None));
        let uuid = if taken.insert(uuid) { uuid } else { of_bytes(Some(id)) };
        taken.insert(uuid);
        set.execute(params![id, uuid.to_string()])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every table and index of the store as SQLite keeps its definition, by kind and name.
    fn schema(c: &Connection) -> Vec<(String, String, Option<String>)> {
        c.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    /// The ladder is data (`MIGRATIONS`): a store taken up one layout at a time — each step in a
    /// transaction of its own, the file closed and opened again between steps, a run of layout 1
    /// in it from the start — has exactly the tables, columns and indexes of a store made new,
    /// and the run came through every step (its UUID, board, document, figures and forecast
    /// columns).
    #[test]
    fn a_store_migrated_step_by_step_equals_one_made_new() {
        let new = Connection::open_in_memory().unwrap();
        for i in 0..MIGRATIONS.len() {
            step(&new, i).unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stepped.db");
        let document = include_str!("../../../../../tests/fixtures/result-v3.json");
        let started: serde_json::Value = serde_json::from_str(document).unwrap();
        for i in 0..MIGRATIONS.len() {
            let mut c = Connection::open(&path).unwrap();
            let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
            assert_eq!(version, i as i64, "each step starts where the one before ended");
            let tx = c.transaction().unwrap();
            step(&tx, i).unwrap();
            if i == 0 {
                // A run as rtgauge stored it in layout 1: its document as JSON text in the row.
                tx.execute(
                    "INSERT INTO runs (started_at, label, host, kernel, preemption, probes, verdict, status, document)
                     VALUES (?1, 'old', 'h', 'k', 'p', 'timer', 'none', 'complete', ?2)",
                    params![started["started_at"].as_str().unwrap(), document],
                )
                .unwrap();
            }
            tx.commit().unwrap();
        }
        let stepped = Connection::open(&path).unwrap();
        let (made, migrated) = (schema(&new), schema(&stepped));
        assert!(made.len() >= 12, "read the schema: {made:?}");
        assert_eq!(migrated, made, "a store migrated step by step has the schema of one made new");
        let (uuid, board, series): (Option<String>, String, Option<String>) =
            stepped.query_row("SELECT uuid, board, series FROM runs", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
        assert!(uuid.is_some_and(|u| u.len() == 36), "layout 4 gave the run a UUID");
        assert_eq!((board.as_str(), series), ("h", None), "layout 4: its board its host; layout 7: no series");
        let kept: String = stepped.query_row("SELECT document FROM documents", [], |r| r.get(0)).unwrap();
        assert_eq!(kept, document, "layout 4 moved the document, as it was, to its own table");
        let (figures, notes): (i64, i64) = stepped
            .query_row("SELECT count(*), count(forecast_note) + count(day_level_ns) FROM figures WHERE run = 1", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        let combined = started["combined"].as_array().unwrap().len() as i64;
        assert_eq!(figures, combined, "layout 5 gave each combined series its figures");
        assert!(notes >= 1, "layout 6 gave its latency series a forecast's level or the reason for none");
    }
}
