//! The PostgreSQL store's layouts: each migration's SQL and what SQL alone cannot do (the
//! figures and forecasts of runs stored before), applied in one transaction under an advisory lock.

use super::*;

/// One step of the layout: SQL, then what SQL alone cannot do (layout 2: the figures of every
/// run already stored, from its document).
pub(super) struct Migration {
    pub(super) sql: &'static str,
    pub(super) fill: Option<Fill>,
}

/// What a migration does besides its SQL, in its transaction.
pub(super) type Fill = fn(&mut postgres::Transaction<'_>) -> Result<(), postgres::Error>;

/// The layouts, in order: migration `i` takes layout `i` to `i + 1` (layout 0: an empty schema).
/// The version is PostgreSQL's own, not SQLite's `user_version`.
pub(super) const MIGRATIONS: &[Migration] = &[
    Migration {
        sql: "
    CREATE TABLE rtgauge_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE runs (
        id BIGSERIAL PRIMARY KEY,
        uuid UUID NOT NULL UNIQUE,
        started_at TEXT NOT NULL,
        label TEXT,
        board TEXT NOT NULL,
        host TEXT NOT NULL,
        kernel TEXT NOT NULL,
        preemption TEXT NOT NULL,
        scenario TEXT,
        probes TEXT NOT NULL,
        worst_ns BIGINT,
        verdict TEXT NOT NULL,
        status TEXT NOT NULL,
        imported_from TEXT,
        document BYTEA NOT NULL,
        -- The SHA-256 of the kernel's build configuration (its options in kernel_configs).
        kernel_config TEXT
    );
    -- Already compressed: stored out of line without a second (futile) compression.
    ALTER TABLE runs ALTER COLUMN document SET STORAGE EXTERNAL;
    -- Hash indexes for the names: a label or board of 10 000 characters is stored (a B-tree
    -- entry cannot exceed a third of a page).
    CREATE INDEX runs_board ON runs USING hash (board);
    CREATE INDEX runs_label ON runs USING hash (label);
    CREATE INDEX runs_kernel ON runs USING hash (kernel);
    -- `list --since`, and with --board too (PostgreSQL combines the two indexes).
    CREATE INDEX runs_started ON runs (started_at);
    CREATE TABLE timelines (
        run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        entry INTEGER NOT NULL,
        data BYTEA NOT NULL,
        PRIMARY KEY (run, entry)
    );
    ALTER TABLE timelines ALTER COLUMN data SET STORAGE EXTERNAL;
    -- Each kernel configuration once, by the SHA-256 of its text: a board's runs compared
    -- option by option.
    CREATE TABLE kernel_configs (
        sha256 TEXT PRIMARY KEY,
        options BYTEA NOT NULL
    );
",
        fill: None,
    },
    Migration {
        sql: "
    -- Layout 2: what the dashboard (`rtgauge serve`) reads of a run without its document: per
    -- combined entry its figures and its histogram in coarse log-spaced bins (store/figures.rs;
    -- the bins as LEB128 varints); per run the shortest cycle time it supports. Filled here for
    -- the runs stored before, from their documents.
    ALTER TABLE runs ADD COLUMN shortest_cycle_ns BIGINT;
    CREATE TABLE figures (
        run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        entry INTEGER NOT NULL,
        series TEXT NOT NULL,
        latency BOOLEAN NOT NULL,
        samples BIGINT NOT NULL,
        missed BIGINT NOT NULL,
        p99_ns BIGINT,
        p999_ns BIGINT,
        max_ns BIGINT,
        bins BYTEA NOT NULL,
        PRIMARY KEY (run, entry)
    );
    -- Each board's newest runs: a range of this index per board (a board's name may be too long
    -- for a B-tree entry: its MD5 stands for it, the name itself checked on the row).
    CREATE INDEX runs_board_id ON runs (md5(board), id);
",
        fill: Some(fill_figures),
    },
    Migration {
        sql: "
    -- Layout 3: per series of each run the latency its forecast says is exceeded once per day
    -- of operation, with its 95 % interval (the highest over the series' CPUs; no upper end:
    -- NULL), or why there is none (store/figures.rs). Filled here for the runs stored before,
    -- from their documents (a document of an older version gets its forecast made).
    ALTER TABLE figures ADD COLUMN day_level_ns BIGINT, ADD COLUMN day_low_ns BIGINT,
        ADD COLUMN day_high_ns BIGINT, ADD COLUMN forecast_note TEXT;
",
        fill: Some(fill_forecasts),
    },
    Migration {
        sql: "
    -- Layout 4: a rotated run's series and its place in it (`rtgauge run --rotate`): the runs
    -- of one continuous measurement, in order. Runs stored before belong to none.
    ALTER TABLE runs ADD COLUMN series TEXT, ADD COLUMN part BIGINT;
    CREATE INDEX runs_series ON runs (series, part);
",
        fill: None,
    },
];

/// Layout 2's fill: the figures of every run stored before, from its document, a batch of runs
/// at a time (a store of 100 000 runs migrates in bounded memory); and its kernel
/// configuration's SHA-256 where its document records one the row lacks. A document that does
/// not read gets no figures (`load` says what is wrong with it).
pub(super) fn fill_figures(tx: &mut postgres::Transaction<'_>) -> Result<(), postgres::Error> {
    const BATCH: i64 = 200;
    let mut after = i64::MIN;
    loop {
        let rows = tx.query("SELECT id, document FROM runs WHERE id > $1 ORDER BY id LIMIT $2", &[&after, &BATCH])?;
        let Some(last) = rows.last() else { return Ok(()) };
        after = last.get(0);
        let (mut ids, mut shortest, mut configs, mut figures) = (Vec::new(), Vec::new(), Vec::new(), FigureRows::default());
        for row in &rows {
            let id: i64 = row.get(0);
            let Ok(f) = super::super::figures_of_document(row.get(1)) else { continue };
            ids.push(id);
            shortest.push(f.shortest_cycle_ns.map(clamp));
            configs.push(f.kernel_config.clone());
            figures.add(id, &f);
        }
        drop(rows);
        tx.execute(
            "UPDATE runs SET shortest_cycle_ns = t.s, kernel_config = coalesce(runs.kernel_config, t.k) \
             FROM unnest($1::int8[], $2::int8[], $3::text[]) AS t (id, s, k) WHERE runs.id = t.id",
            &[&ids, &shortest, &configs],
        )?;
        figures.insert(tx, false)?;
    }
}

/// Layout 3's fill: the once-per-day return level of every series of every run stored before,
/// from its whole document and timelines, a few runs at a time (a long run's document and
/// timelines are tens of MB); a document of an older version gets its forecast made here. A run
/// that does not read keeps none.
pub(super) fn fill_forecasts(tx: &mut postgres::Transaction<'_>) -> Result<(), postgres::Error> {
    const BATCH: i64 = 16;
    let mut after = i64::MIN;
    loop {
        let rows = tx.query("SELECT id, document FROM runs WHERE id > $1 ORDER BY id LIMIT $2", &[&after, &BATCH])?;
        let Some(last) = rows.last() else { return Ok(()) };
        after = last.get(0);
        let mut f = FigureRows::default();
        for row in &rows {
            let id: i64 = row.get(0);
            let kept: Vec<(i64, Vec<u8>)> = tx
                .query("SELECT entry, data FROM timelines WHERE run = $1", &[&id])?
                .iter()
                .map(|t| (i64::from(t.get::<_, i32>(0)), t.get(1)))
                .collect();
            let Some(figures) = super::super::forecasts_of_document(row.get(1), &kept) else { continue };
            f.add(id, &figures);
        }
        drop(rows);
        tx.execute(
            "UPDATE figures SET day_level_ns = t.l, day_low_ns = t.lo, day_high_ns = t.hi, forecast_note = t.note \
             FROM unnest($1::int8[], $2::int4[], $3::int8[], $4::int8[], $5::int8[], $6::text[]) \
             AS t (run, entry, l, lo, hi, note) WHERE figures.run = t.run AND figures.entry = t.entry",
            &[&f.run, &f.entry, &f.day_level, &f.day_low, &f.day_high, &f.note],
        )?;
    }
}

/// Figures as columns, to insert many rows in one statement.
#[derive(Default)]
pub(super) struct FigureRows {
    run: Vec<i64>,
    entry: Vec<i32>,
    series: Vec<String>,
    latency: Vec<bool>,
    samples: Vec<i64>,
    missed: Vec<i64>,
    p99: Vec<Option<i64>>,
    p999: Vec<Option<i64>>,
    max: Vec<Option<i64>>,
    bins: Vec<Vec<u8>>,
    day_level: Vec<Option<i64>>,
    day_low: Vec<Option<i64>>,
    day_high: Vec<Option<i64>>,
    note: Vec<Option<String>>,
}

impl FigureRows {
    /// Adds run `id`'s series.
    pub(super) fn add(&mut self, id: i64, f: &Figures) {
        for s in &f.series {
            self.run.push(id);
            self.entry.push(i32::try_from(s.entry).unwrap_or(i32::MAX));
            self.series.push(column_text(&s.series).into_owned());
            self.latency.push(s.latency);
            self.samples.push(clamp(s.samples));
            self.missed.push(clamp(s.missed));
            self.p99.push(s.p99_ns.map(clamp));
            self.p999.push(s.p999_ns.map(clamp));
            self.max.push(s.max_ns.map(clamp));
            self.bins.push(super::super::figures::encode_bins(&s.bins));
            self.day_level.push(s.day_level_ns.map(clamp));
            self.day_low.push(s.day_low_ns.map(clamp));
            self.day_high.push(s.day_high_ns.map(clamp));
            self.note.push(s.forecast_note.as_deref().map(|n| column_text(n).into_owned()));
        }
    }

    /// Inserts them all, in one statement; `forecasts`: with their forecasts' columns (layout 3
    /// on; layout 2's migration writes the others).
    pub(super) fn insert(&self, c: &mut impl postgres::GenericClient, forecasts: bool) -> Result<(), postgres::Error> {
        if self.run.is_empty() {
            return Ok(());
        }
        let mut values: Vec<&(dyn ToSql + Sync)> = vec![
            &self.run,
            &self.entry,
            &self.series,
            &self.latency,
            &self.samples,
            &self.missed,
            &self.p99,
            &self.p999,
            &self.max,
            &self.bins,
        ];
        let sql = if forecasts {
            values.extend([&self.day_level as &(dyn ToSql + Sync), &self.day_low, &self.day_high, &self.note]);
            "INSERT INTO figures (run, entry, series, latency, samples, missed, p99_ns, p999_ns, max_ns, bins, \
             day_level_ns, day_low_ns, day_high_ns, forecast_note) \
             SELECT * FROM unnest($1::int8[], $2::int4[], $3::text[], $4::bool[], $5::int8[], $6::int8[], $7::int8[], \
             $8::int8[], $9::int8[], $10::bytea[], $11::int8[], $12::int8[], $13::int8[], $14::text[])"
        } else {
            "INSERT INTO figures (run, entry, series, latency, samples, missed, p99_ns, p999_ns, max_ns, bins) \
             SELECT * FROM unnest($1::int8[], $2::int4[], $3::text[], $4::bool[], $5::int8[], $6::int8[], $7::int8[], \
             $8::int8[], $9::int8[], $10::bytea[])"
        };
        c.execute(sql, &values).map(drop)
    }
}

/// A count or time as PostgreSQL's BIGINT holds it.
pub(super) fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
/// The advisory lock a migration holds (per database): \"rtga\".
pub(super) const MIGRATION_LOCK: i64 = 0x7274_6761;
