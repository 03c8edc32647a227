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

use super::figures::{BoardRow, Figures, SeriesFigures};
use super::{Bound, Filter, NewRow, OpenError, RunRow, Saved};
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

/// One step of the layout: SQL, then what SQL alone cannot do (layout 2: the figures of every
/// run already stored, from its document).
struct Migration {
    sql: &'static str,
    fill: Option<Fill>,
}

/// What a migration does besides its SQL, in its transaction.
type Fill = fn(&mut postgres::Transaction<'_>) -> Result<(), postgres::Error>;

/// The layouts, in order: migration `i` takes layout `i` to `i + 1` (layout 0: an empty schema).
/// The version is PostgreSQL's own, not SQLite's `user_version`.
const MIGRATIONS: &[Migration] = &[
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
fn fill_figures(tx: &mut postgres::Transaction<'_>) -> Result<(), postgres::Error> {
    const BATCH: i64 = 200;
    let mut after = i64::MIN;
    loop {
        let rows = tx.query("SELECT id, document FROM runs WHERE id > $1 ORDER BY id LIMIT $2", &[&after, &BATCH])?;
        let Some(last) = rows.last() else { return Ok(()) };
        after = last.get(0);
        let (mut ids, mut shortest, mut configs, mut figures) = (Vec::new(), Vec::new(), Vec::new(), FigureRows::default());
        for row in &rows {
            let id: i64 = row.get(0);
            let Ok(f) = super::figures_of_document(row.get(1)) else { continue };
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
fn fill_forecasts(tx: &mut postgres::Transaction<'_>) -> Result<(), postgres::Error> {
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
            let Some(figures) = super::forecasts_of_document(row.get(1), &kept) else { continue };
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
struct FigureRows {
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
    fn add(&mut self, id: i64, f: &Figures) {
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
            self.bins.push(super::figures::encode_bins(&s.bins));
            self.day_level.push(s.day_level_ns.map(clamp));
            self.day_low.push(s.day_low_ns.map(clamp));
            self.day_high.push(s.day_high_ns.map(clamp));
            self.note.push(s.forecast_note.as_deref().map(|n| column_text(n).into_owned()));
        }
    }

    /// Inserts them all, in one statement; `forecasts`: with their forecasts' columns (layout 3
    /// on; layout 2's migration writes the others).
    fn insert(&self, c: &mut impl postgres::GenericClient, forecasts: bool) -> Result<(), postgres::Error> {
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
fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
/// The advisory lock a migration holds (per database): \"rtga\".
const MIGRATION_LOCK: i64 = 0x7274_6761;
/// A connection that could not be made.
enum Connect {
    /// What PostgreSQL (or the network) said.
    Pg(postgres::Error),
    /// Nothing within the connection's time-out.
    NoAnswer(Duration),
    /// The attempt could not be started.
    NoThread(String),
}

/// How long a whole connection (TCP, TLS, start-up, password exchange) may take unless the URL
/// says (`connect_timeout`): generous, for a server busy with many boards at once.
const CONNECT_DEADLINE: Duration = Duration::from_secs(30);
/// How long a connection attempt waits for a host that does not answer, unless the URL says.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a write waits for data the server does not acknowledge (a dropped link).
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a write waits for a lock another session holds.
const LOCK_TIMEOUT: &str = "10s";
/// Where libpq (Debian's) looks for the server when the URL names no host.
const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// Whether `--db` names a PostgreSQL database rather than a SQLite file (the scheme in any case).
pub fn is_url(db: &str) -> bool {
    let starts = |scheme: &str| db.get(..scheme.len()).is_some_and(|s| s.eq_ignore_ascii_case(scheme));
    starts("postgres://") || starts("postgresql://")
}

/// How the connection is encrypted (`sslmode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// Not 0 once the command is being stopped by a signal (a run's SIGINT or SIGTERM): a
/// connection still being made is given up on at once.
static GIVE_UP: std::sync::OnceLock<Arc<std::sync::atomic::AtomicUsize>> = std::sync::OnceLock::new();

/// Gives up on every connection being made once `signalled` is not 0 (the signal a run's
/// handlers record): a server that does not answer holds up no stop.
pub fn give_up_when(signalled: Arc<std::sync::atomic::AtomicUsize>) {
    let _ = GIVE_UP.set(signalled);
}

/// Where to connect and as whom, the password resolved; shown only as [`Target::shown`].
struct Target {
    config: Config,
    tls: MakeRustlsConnect,
    /// The URL without its password.
    shown: String,
    /// `HOST:PORT` (or the socket's directory), for messages.
    at: String,
    user: String,
    dbname: String,
    /// The password, to scrub from any message that might echo it.
    secret: Option<String>,
    /// Why `~/.pgpass` was not read (it may be read by others, it is another user's).
    pgpass_note: Option<String>,
    /// How long the whole connection may take (the URL's `connect_timeout`, else
    /// [`CONNECT_DEADLINE`]).
    deadline: Duration,
}

impl Target {
    /// Parses a `postgres://` or `postgresql://` URL and resolves its password.
    fn parse(url: &str) -> Result<Target, String> {
        let shown = redact(url);
        let bad = |why: &dyn std::fmt::Display| {
            format!("the database URL {shown} does not parse ({why}); write it as postgres://USER@HOST:PORT/DBNAME")
        };
        if !is_url(url) {
            return Err(bad(&"it does not begin with postgres:// or postgresql://"));
        }
        // (The scheme in lower case: POSTGRES:// is the same URL.)
        let lowered;
        let url = match url.split_once("://") {
            Some((scheme, rest)) if scheme.bytes().any(|b| b.is_ascii_uppercase()) => {
                lowered = format!("{}://{rest}", scheme.to_ascii_lowercase());
                lowered.as_str()
            }
            _ => url,
        };
        // What the URL leaves out comes from its service (`service=NAME` or PGSERVICE: the
        // service file) and then from libpq's environment variables (PGHOST, PGSSLMODE, ...).
        let merged = with_defaults(url).map_err(|e| format!("{e} (the database {shown})"))?;
        let url = merged.as_str();
        // sslmode, sslrootcert, sslcert and sslkey are rtgauge's to read (tokio-postgres knows
        // neither verify-* nor certificates); the rest goes to tokio-postgres as it is.
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let (mut sslmode, mut rootcert, mut rest) = (SslMode::Prefer, None, Vec::new());
        let (mut client_cert, mut client_key) = (None, None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "sslmode" => {
                    sslmode = match v {
                        "disable" => SslMode::Disable,
                        "allow" | "prefer" => SslMode::Prefer,
                        "require" => SslMode::Require,
                        "verify-ca" => SslMode::VerifyCa,
                        "verify-full" => SslMode::VerifyFull,
                        _ => {
                            return Err(bad(&format_args!(
                                "sslmode={v}; give disable, prefer, require, verify-ca or verify-full"
                            )))
                        }
                    }
                }
                "sslrootcert" => rootcert = Some(percent_decode(v)),
                "sslcert" => client_cert = Some(percent_decode(v)),
                "sslkey" => client_key = Some(percent_decode(v)),
                "connect_timeout"
                | "application_name"
                | "options"
                | "keepalives"
                | "keepalives_idle"
                | "tcp_user_timeout"
                | "target_session_attrs"
                | "load_balance_hosts"
                | "channel_binding"
                | "user"
                | "password"
                | "host"
                | "hostaddr"
                | "port"
                | "dbname"
                | "sslnegotiation" => rest.push(pair),
                _ => {
                    return Err(bad(&format_args!(
                        "'{k}' is not a parameter rtgauge knows; give service, sslmode, sslrootcert, sslcert, sslkey, \
                         connect_timeout, application_name, options, keepalives, tcp_user_timeout or target_session_attrs"
                    )))
                }
            }
        }
        // What the client library would only call "invalid": the port and the host, named.
        let authority = base.split_once("://").map_or("", |(_, r)| r).split('/').next().unwrap_or("");
        let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        for one in hostport.split(',').filter(|h| !h.starts_with('[')) {
            if let Some((host, port)) = one.rsplit_once(':') {
                if port.parse::<u16>().map_or(true, |p| p == 0) {
                    return Err(bad(&format_args!("the port '{port}' is not a port number (1-65535)")));
                }
                if host.is_empty() {
                    return Err(bad(&format_args!("it names a port but no host")));
                }
            }
        }
        let rebuilt = if rest.is_empty() { base.to_string() } else { format!("{base}?{}", rest.join("&")) };
        let mut config: Config = rebuilt.parse().map_err(|e: postgres::Error| bad(&e))?;
        // libpq: sslrootcert=system checks against the system's roots, and means verify-full
        // unless a mode is given.
        if rootcert.as_deref() == Some("system") && !query.split('&').any(|p| p.starts_with("sslmode=")) {
            sslmode = SslMode::VerifyFull;
        }
        if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
            config.host_path(DEFAULT_SOCKET_DIR);
        }
        let deadline = config.get_connect_timeout().copied().unwrap_or(CONNECT_DEADLINE);
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(TCP_USER_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("rtgauge");
        }
        config.ssl_mode(match sslmode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
        let user = match config.get_user() {
            Some(u) => u.to_string(),
            None => {
                let u = std::env::var("PGUSER").ok().filter(|u| !u.is_empty()).or_else(|| whoami::username().ok());
                let u = u.ok_or_else(|| bad(&"it names no user, and neither PGUSER nor the system says who you are"))?;
                config.user(&u);
                u
            }
        };
        let dbname = config.get_dbname().unwrap_or(&user).to_string();
        let host = match config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(h)) => h.clone(),
            Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => config.get_hostaddrs().first().map(|a| a.to_string()).unwrap_or_default(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let at = if host.starts_with('/') { format!("{host} (port {port})") } else { format!("{host}:{port}") };
        let mut pgpass_note = None;
        let secret = match config.get_password() {
            Some(p) => Some(String::from_utf8_lossy(p).into_owned()),
            None => {
                let from_env = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty());
                let found = from_env.or_else(|| match pgpass(&host, port, &dbname, &user) {
                    Ok(p) => p,
                    Err(note) => {
                        pgpass_note = Some(note);
                        None
                    }
                });
                if let Some(p) = &found {
                    config.password(p);
                }
                found
            }
        };
        // (no certificate where nothing is encrypted)
        let client = match sslmode {
            SslMode::Disable => None,
            _ => client_identity(client_cert.as_deref(), client_key.as_deref())
                .map_err(|e| format!("{e} (the database {shown})"))?,
        };
        let tls = tls_config(sslmode, rootcert.as_deref(), client).map_err(|e| format!("{e} (the database {shown})"))?;
        Ok(Target { config, tls, shown, at, user, dbname, secret, pgpass_note, deadline })
    }

    /// Connects, logged in, within the URL's `connect_timeout` as libpq counts it (else within
    /// [`CONNECT_DEADLINE`]): the whole connection (TCP, TLS, the start-up and the password
    /// exchange), not only the TCP connect —
    /// a host that takes the connection and then says nothing (a hung server, a proxy with
    /// nothing behind it, another service on the port) is given up on in time. The attempt runs
    /// on a thread of its own, which is left behind, blocked, when it does not end in time.
    fn connect(&self) -> Result<Client, Connect> {
        let (config, tls) = (self.config.clone(), self.tls.clone());
        let limit = self.deadline;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("rtgauge-pg-connect".into())
            .spawn(move || {
                let _ = tx.send(config.connect(tls));
            })
            .map_err(|e| Connect::NoThread(e.to_string()))?;
        // Waited for in short steps: a signal that stops the command (see [`give_up_when`])
        // ends the wait at once, as a server that did not answer.
        let start = std::time::Instant::now();
        loop {
            let left = limit.saturating_sub(start.elapsed());
            match rx.recv_timeout(left.min(Duration::from_millis(50))) {
                Ok(connected) => return connected.map_err(Connect::Pg),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err(Connect::NoAnswer(limit)),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    let stopped = GIVE_UP.get().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed) != 0);
                    if stopped || start.elapsed() >= limit {
                        return Err(Connect::NoAnswer(limit));
                    }
                }
            }
        }
    }

    /// [`Target::error`] for a connection that failed.
    fn connect_error(&self, doing: &str, e: &Connect) -> String {
        match e {
            Connect::Pg(e) => self.error(doing, e),
            Connect::NoAnswer(limit) => format!(
                "the host at {} took the connection but did not answer as PostgreSQL within {} s (connect_timeout); \
                 check that --db names a PostgreSQL server (host and port) and that it is not hung",
                self.at,
                limit.as_secs_f64()
            ),
            Connect::NoThread(e) => format!("connecting to {}: no thread for it ({e})", self.at),
        }
    }

    /// A PostgreSQL error as one line naming the problem and what to do, while `doing`
    /// (e.g. "storing the run"); never with the password in it.
    fn error(&self, doing: &str, e: &postgres::Error) -> String {
        let (shown, at, user, db) = (&self.shown, &self.at, &self.user, &self.dbname);
        let text = match e.as_db_error() {
            Some(d) => {
                let m = d.message();
                match *d.code() {
                    SqlState::INVALID_PASSWORD => format!(
                        "PostgreSQL at {at} refused the password of user {user} ({m}); give the right one in PGPASSWORD, \
                         ~/.pgpass or the URL"
                    ),
                    SqlState::INVALID_AUTHORIZATION_SPECIFICATION => format!(
                        "PostgreSQL at {at} does not let user {user} into the database {db} ({m}); allow it in the \
                         server's pg_hba.conf, or give another user in --db"
                    ),
                    SqlState::INVALID_CATALOG_NAME => {
                        format!("there is no database {db} at {at}; create it (createdb -O {user} {db}) or name another in --db")
                    }
                    SqlState::INSUFFICIENT_PRIVILEGE => format!(
                        "user {user} {} {doing} in the database {db} at {at} ({m}); have its owner grant it, or \
                         give another database with --db",
                        // "may not create ...", "lacks a right needed for storing ..."
                        if doing.split(' ').next().is_some_and(|w| w.ends_with("ing")) {
                            "lacks a right needed for"
                        } else {
                            "may not"
                        }
                    ),
                    SqlState::READ_ONLY_SQL_TRANSACTION => format!(
                        "the database {db} at {at} is read-only (a standby?) and cannot take the run; give the \
                         primary's URL with --db"
                    ),
                    SqlState::DISK_FULL | SqlState::OUT_OF_MEMORY | SqlState::PROGRAM_LIMIT_EXCEEDED => {
                        format!("the PostgreSQL server at {at} cannot take the run ({m}); free room on it, or give another --db")
                    }
                    SqlState::LOCK_NOT_AVAILABLE => format!(
                        "the database {db} at {at} is locked by another session (waited {LOCK_TIMEOUT}); let it \
                         finish, or give another --db"
                    ),
                    SqlState::ADMIN_SHUTDOWN | SqlState::CRASH_SHUTDOWN | SqlState::CANNOT_CONNECT_NOW => format!(
                        "the PostgreSQL server at {at} is shutting down or starting ({m}) while {doing}; try again when \
                         it is up"
                    ),
                    SqlState::TOO_MANY_CONNECTIONS => {
                        format!("the PostgreSQL server at {at} takes no more connections ({m}); try again later")
                    }
                    _ => format!("the database {shown}: {m} (while {doing})"),
                }
            }
            None if e.is_closed() => format!(
                "the connection to PostgreSQL at {at} was lost while {doing}; check the network and the server, then \
                 try again"
            ),
            None => {
                let chain = chain(e);
                let io = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>());
                match io.map(std::io::Error::kind) {
                    Some(std::io::ErrorKind::ConnectionRefused) => format!(
                        "nothing answers at {at} (connection refused); check that PostgreSQL runs there and the host \
                         and port in --db"
                    ),
                    Some(std::io::ErrorKind::TimedOut) => {
                        format!("the host at {at} does not answer ({chain}); check the network and the host and port in --db")
                    }
                    Some(std::io::ErrorKind::NotFound) if at.starts_with('/') => {
                        format!("no PostgreSQL server listens in {at}; give its host in --db (postgres://USER@HOST:PORT/DBNAME)")
                    }
                    Some(
                        std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe,
                    ) => {
                        format!("the connection to PostgreSQL at {at} was lost while {doing} ({chain}); try again")
                    }
                    _ if chain.contains("password missing") => {
                        let note = self.pgpass_note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
                        format!(
                            "PostgreSQL at {at} asks user {user} for a password and none was given{note}; set \
                             PGPASSWORD, or add a line HOST:PORT:DBNAME:USER:PASSWORD to ~/.pgpass (mode 0600)"
                        )
                    }
                    _ if chain.contains("lookup address") || chain.contains("Name or service not known") => {
                        format!("the host of {shown} is not known ({chain}); check its name in --db")
                    }
                    _ if chain.contains("does not support TLS") => format!(
                        "the server at {at} does not offer TLS, which the URL's sslmode asks for; enable ssl on the \
                         server, or give sslmode=prefer"
                    ),
                    _ if chain.contains("certificate") || chain.contains("Certificate") => format!(
                        "the server at {at} is not trusted ({chain}); install its CA in the system's roots or give \
                         sslrootcert=PATH in --db"
                    ),
                    _ => format!("the database {shown}: {chain} (while {doing})"),
                }
            }
        };
        self.scrub(text)
    }

    /// A message with the password, should anything have echoed it, cut out.
    fn scrub(&self, text: String) -> String {
        match self.secret.as_deref().filter(|s| s.len() >= 3) {
            Some(s) if text.contains(s) => text.replace(s, "********"),
            _ => text,
        }
    }
}

/// An error and its causes, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(c) = source {
        let t = c.to_string();
        if !s.contains(&t) {
            s += &format!(": {t}");
        }
        source = c.source();
    }
    s.replace(['\n', '\r'], " ")
}

/// The URL as it may be shown: without the password of its user part or a `password=` option.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.chars().take(200).collect() };
    let (authority, tail) = rest.find(['/', '?']).map_or((rest, ""), |i| rest.split_at(i));
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => format!("{}@{hosts}", userinfo.split(':').next().unwrap_or("")),
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query.split('&').filter(|p| !p.starts_with("password=")).collect();
            if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The database a URL names, as `USER@HOST:PORT/DBNAME` — the host in lower case, the default
/// port, user and database written out, the password and every option left out — so that two
/// spellings of one database are known as one (the spool's name); `None` when it does not parse.
pub fn destination_of(url: &str) -> Option<String> {
    let t = Target::parse(url).ok()?;
    Some(format!("{}@{}/{}", t.user, t.at.to_lowercase(), t.dbname))
}

/// `%XX` sequences decoded (a query value).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The password for (host, port, dbname, user) in `PGPASSFILE` or `~/.pgpass`, looked up as
/// libpq does: lines `hostname:port:database:username:password`, `*` matching anything, `\:`
/// and `\\` escapes, the first matching line wins; a socket directory matches `localhost`.
/// `Err` says why the file was not read (not the user's, or readable by others): libpq ignores
/// such a file too.
fn pgpass(host: &str, port: u16, dbname: &str, user: &str) -> Result<Option<String>, String> {
    use std::os::unix::fs::MetadataExt;
    let path = match std::env::var_os("PGPASSFILE").filter(|p| !p.is_empty()) {
        Some(p) => std::path::PathBuf::from(p),
        None => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(h) => std::path::Path::new(&h).join(".pgpass"),
            None => return Ok(None),
        },
    };
    let shown = path.display();
    let Ok(meta) = std::fs::metadata(&path) else { return Ok(None) };
    if !meta.is_file() {
        return Err(format!("{shown} is not a file"));
    }
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(format!("{shown} is ignored: it belongs to another user"));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!("{shown} is ignored: others may read it (mode {:04o}); chmod 600 it", meta.mode() & 0o7777));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{shown} cannot be read: {e}"))?;
    Ok(pgpass_match(&text, host, port, dbname, user))
}

/// The password of the first line of a `.pgpass` text that matches.
fn pgpass_match(text: &str, host: &str, port: u16, dbname: &str, user: &str) -> Option<String> {
    let port = port.to_string();
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = pgpass_fields(line);
        let [h, p, d, u, password] = fields.as_slice() else { continue };
        let host_ok = h == "*" || h == host || (host.starts_with('/') && h == "localhost");
        if host_ok && (p == "*" || *p == port) && (d == "*" || d == dbname) && (u == "*" || u == user) {
            return Some(password.clone());
        }
    }
    None
}

/// A `.pgpass` line split at its unescaped colons into at most five fields (the password takes
/// the rest), escapes undone.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().into_iter().for_each(|f| f.extend(chars.next())),
            ':' if fields.len() < 5 => fields.push(String::new()),
            _ => fields.last_mut().into_iter().for_each(|f| f.push(c)),
        }
    }
    fields
}

/// The parameters a URL's service or the environment may give (libpq's names), and the
/// environment variable of each (none: not taken from the environment).
const DEFAULTS: &[(&str, Option<&str>)] = &[
    ("host", Some("PGHOST")),
    ("hostaddr", Some("PGHOSTADDR")),
    ("port", Some("PGPORT")),
    ("dbname", Some("PGDATABASE")),
    ("user", Some("PGUSER")),
    // (PGPASSWORD is read with ~/.pgpass, after: see Target::parse)
    ("password", None),
    ("sslmode", Some("PGSSLMODE")),
    ("sslrootcert", Some("PGSSLROOTCERT")),
    ("sslcert", Some("PGSSLCERT")),
    ("sslkey", Some("PGSSLKEY")),
    ("connect_timeout", Some("PGCONNECT_TIMEOUT")),
    ("application_name", Some("PGAPPNAME")),
    ("options", Some("PGOPTIONS")),
    ("target_session_attrs", Some("PGTARGETSESSIONATTRS")),
    ("keepalives", None),
    ("keepalives_idle", None),
    ("tcp_user_timeout", None),
    ("channel_binding", None),
    ("load_balance_hosts", None),
    ("sslnegotiation", None),
];

/// `url` with what it leaves out filled in as libpq does: first from its service — `service=`
/// in the URL, else `PGSERVICE` — read from `PGSERVICEFILE` or `~/.pg_service.conf`, else
/// `PGSYSCONFDIR/pg_service.conf` (`/etc/postgresql-common/pg_service.conf`), then from the
/// environment variables in [`DEFAULTS`]. A credential or a host then need not be on the command
/// line (where `ps` shows it to every user).
fn with_defaults(url: &str) -> Result<String, String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let rest = base.split_once("://").map_or("", |(_, r)| r);
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hostport) = authority.rsplit_once('@').unwrap_or(("", authority));
    let (mut service, mut pairs) = (None, Vec::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("service", v)) => service = Some(percent_decode(v)),
            _ => pairs.push(pair.to_string()),
        }
    }
    let given = |key: &str, pairs: &[String]| {
        let in_url = match key {
            "user" => !userinfo.split(':').next().unwrap_or("").is_empty(),
            "password" => userinfo.contains(':'),
            "host" | "hostaddr" => !hostport.is_empty() && !hostport.starts_with(':'),
            "port" => {
                hostport.rsplit_once(':').is_some_and(|(h, p)| !p.contains(']') && !h.is_empty() || hostport.starts_with(':'))
            }
            "dbname" => !path.is_empty(),
            _ => false,
        };
        in_url || pairs.iter().any(|p| p.split('=').next() == Some(key))
    };
    let service = service.or_else(|| std::env::var("PGSERVICE").ok().filter(|s| !s.is_empty()));
    if let Some(name) = &service {
        for (k, v) in service_params(name)? {
            if !given(&k, &pairs) {
                pairs.push(format!("{k}={}", percent_encode(&v)));
            }
        }
    }
    for (key, var) in DEFAULTS {
        let Some(var) = var else { continue };
        if let Some(v) = std::env::var(var).ok().filter(|v| !v.is_empty()) {
            if !given(key, &pairs) {
                pairs.push(format!("{key}={}", percent_encode(&v)));
            }
        }
    }
    Ok(if pairs.is_empty() { base.to_string() } else { format!("{base}?{}", pairs.join("&")) })
}

/// `s` percent-encoded for a URL's query value.
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// The parameters of service `name` in the first service file that has it (see
/// [`with_defaults`]). A file another user could have written is not believed: refused.
fn service_params(name: &str) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    match std::env::var_os("PGSERVICEFILE").filter(|p| !p.is_empty()) {
        Some(f) => files.push(std::path::PathBuf::from(f)),
        None => files.extend(
            std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| std::path::Path::new(&h).join(".pg_service.conf")),
        ),
    }
    let sysconf = std::env::var_os("PGSYSCONFDIR").filter(|p| !p.is_empty()).unwrap_or_else(|| "/etc/postgresql-common".into());
    files.push(std::path::Path::new(&sysconf).join("pg_service.conf"));
    for file in &files {
        let shown = file.display();
        let meta = match std::fs::metadata(file) {
            Ok(m) => m,
            Err(_) => continue,
        };
        if !meta.is_file() {
            return Err(format!("the service file {shown} is not a file"));
        }
        crate::sys::files::trusted(&meta).map_err(|why| {
            format!("the service file {shown} is not believed: {why}; make it root's or yours, writable by no one else")
        })?;
        let text = std::fs::read_to_string(file).map_err(|e| format!("the service file {shown} cannot be read: {e}"))?;
        if let Some(params) = service_section(&text, name) {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            // A password there is a secret as in ~/.pgpass: not believed from a file others may read.
            if params.iter().any(|(k, _)| k == "password") && meta.mode() & 0o077 != 0 {
                return Err(format!(
                    "the service file {shown} holds a password and others may read it (mode {:04o}); chmod 600 it",
                    meta.permissions().mode() & 0o7777
                ));
            }
            let known = |k: &str| DEFAULTS.iter().any(|(d, _)| *d == k);
            if let Some((k, _)) = params.iter().find(|(k, _)| !known(k)) {
                return Err(format!("the service {name} in {shown} sets '{k}', which rtgauge does not take"));
            }
            return Ok(params);
        }
    }
    Err(format!(
        "the service '{name}' (service= or PGSERVICE) is in none of {}; add a section [{name}] to one",
        files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
    ))
}

/// The `key=value` lines of section `[name]` of a service file's text, as libpq reads them
/// (`#` comments, blank lines, spaces around the key and the value ignored).
fn service_section(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut found: Option<Vec<(String, String)>> = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if found.is_some() {
                break;
            }
            if section.trim() == name {
                found = Some(Vec::new());
            }
            continue;
        }
        if let (Some(params), Some((k, v))) = (found.as_mut(), line.split_once('=')) {
            params.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    found
}

/// A client certificate and its key, as libpq finds them: `sslcert` and `sslkey` (URL, service
/// or PGSSLCERT/PGSSLKEY), else `~/.postgresql/postgresql.crt` and `.key` when both are there.
/// The key must be the user's (or root's) and readable by no one else, as libpq requires.
type ClientIdentity = Option<(Vec<rustls::pki_types::CertificateDer<'static>>, rustls::pki_types::PrivateKeyDer<'static>)>;

fn client_identity(cert: Option<&str>, key: Option<&str>) -> Result<ClientIdentity, String> {
    use rustls::pki_types::pem::PemObject;
    use std::os::unix::fs::MetadataExt;
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| std::path::PathBuf::from(h).join(".postgresql"));
    let (cert, key) = match (cert, key) {
        (Some(c), Some(k)) => (std::path::PathBuf::from(c), std::path::PathBuf::from(k)),
        (Some(c), None) => (std::path::PathBuf::from(c), home.clone().map(|h| h.join("postgresql.key")).unwrap_or_default()),
        (None, Some(k)) => (home.clone().map(|h| h.join("postgresql.crt")).unwrap_or_default(), std::path::PathBuf::from(k)),
        (None, None) => {
            let Some(h) = home else { return Ok(None) };
            let (c, k) = (h.join("postgresql.crt"), h.join("postgresql.key"));
            if !c.is_file() || !k.is_file() {
                return Ok(None);
            }
            (c, k)
        }
    };
    let meta = std::fs::metadata(&key)
        .map_err(|e| format!("the client key {} cannot be read ({e}); give sslkey=PATH", key.display()))?;
    let uid = rustix::process::geteuid().as_raw();
    if !meta.is_file() || (meta.uid() != uid && meta.uid() != 0) {
        return Err(format!("the client key {} is not a file of yours or root's; give sslkey=PATH of your own", key.display()));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "the client key {} may be read by others (mode {:04o}); chmod 600 it",
            key.display(),
            meta.mode() & 0o7777
        ));
    }
    let certs = rustls::pki_types::CertificateDer::pem_file_iter(&cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("the client certificate {} cannot be read ({e}); give sslcert=PATH (PEM)", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("the client certificate {} holds no certificate; give sslcert=PATH (PEM)", cert.display()));
    }
    let private = rustls::pki_types::PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| format!("the client key {} cannot be read ({e}); give sslkey=PATH (PEM)", key.display()))?;
    Ok(Some((certs, private)))
}

/// rustls' configuration for `mode`: the server's certificate checked against `rootcert` (a PEM
/// file, or `system`) or the system's roots for `verify-*`, not checked for `prefer`/`require`
/// (libpq's meaning: encrypted, whoever answers); `client`, the certificate rtgauge shows.
fn tls_config(mode: SslMode, rootcert: Option<&str>, client: ClientIdentity) -> Result<MakeRustlsConnect, String> {
    use rustls::client::WebPkiServerVerifier;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS cannot be set up: {e}"))?;
    let config = match mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => {
            authenticated(builder.dangerous().with_custom_certificate_verifier(Arc::new(Unchecked(provider))), client)?
        }
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let mut roots = rustls::RootCertStore::empty();
            match rootcert.filter(|r| *r != "system") {
                Some(path) => {
                    use rustls::pki_types::pem::PemObject;
                    let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
                        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                        .map_err(|e| {
                            format!("the root certificates in {path} cannot be read ({e}); give a PEM file as sslrootcert")
                        })?;
                    roots.add_parsable_certificates(certs);
                }
                None => {
                    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
                }
            }
            if roots.is_empty() {
                return Err(
                    "no root certificates to check the server with (none in the system's store); install ca-certificates, \
                     or give sslrootcert=PATH"
                        .into(),
                );
            }
            let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| format!("TLS cannot be set up: {e}"))?;
            let verifier = Verified { inner, check_name: mode == SslMode::VerifyFull };
            authenticated(builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier)), client)?
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The configuration with the client's certificate, if it has one.
fn authenticated(
    builder: rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert>,
    client: ClientIdentity,
) -> Result<rustls::ClientConfig, String> {
    match client {
        Some((certs, key)) => builder.with_client_auth_cert(certs, key).map_err(|e| {
            format!("the client certificate or its key cannot be used ({e}); give sslcert= and sslkey= of one pair (PEM)")
        }),
        None => Ok(builder.with_no_client_auth()),
    }
}

/// `sslmode=prefer|require`: the certificate is not checked (libpq's meaning); the handshake's
/// signatures still are.
#[derive(Debug)]
struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

/// `sslmode=verify-ca|verify-full`: the chain checked against the roots; the name too for
/// verify-full.
#[derive(Debug)]
struct Verified {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    check_name: bool,
}

mod verifiers {
    use super::{Unchecked, Verified};
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};

    impl ServerCertVerifier for Unchecked {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<ServerCertVerified, Error> {
            Ok(ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
        }
        fn verify_tls13_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }

    impl ServerCertVerifier for Verified {
        fn verify_server_cert(
            &self,
            end: &CertificateDer<'_>,
            intermediates: &[CertificateDer<'_>],
            name: &ServerName<'_>,
            ocsp: &[u8],
            now: UnixTime,
        ) -> Result<ServerCertVerified, Error> {
            match self.inner.verify_server_cert(end, intermediates, name, ocsp, now) {
                Err(Error::InvalidCertificate(
                    CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
                )) if !self.check_name => Ok(ServerCertVerified::assertion()),
                other => other,
            }
        }
        fn verify_tls12_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            self.inner.verify_tls12_signature(m, c, d)
        }
        fn verify_tls13_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            self.inner.verify_tls13_signature(m, c, d)
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.inner.supported_verify_schemes()
        }
    }
}

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
        store.check_and_migrate()?;
        store.layout = MIGRATIONS.len() as i64;
        Ok(store)
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

    /// Checks the database's identity and layout, then migrates it in one transaction, under
    /// an advisory lock, its identity read again under the lock.
    fn check_and_migrate(&self) -> Result<(), OpenError> {
        let t = &self.target;
        let c = &mut **self.client.borrow_mut();
        let known = MIGRATIONS.len() as i64;
        if self.identity(c, "opening the store")? == Identity::Store(known) {
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
        for (i, m) in MIGRATIONS.iter().enumerate().skip(from as usize) {
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
    fn save(&self, r: &RunResult, timelines: &[(usize, TimelineData)], row: &NewRow) -> Result<Saved, String> {
        let prepared = prepare(r, timelines, row)?;
        let t = &self.target;
        let mut c = self.client.borrow_mut();
        if c.is_closed() {
            *c = Conn(Some(t.connect().map_err(|e| t.connect_error("connecting again to store the run", &e))?));
        }
        match write(&mut c, &prepared, row) {
            // Lost (idle through a long run, a server restart): once more on a new connection; the
            // UUID makes a write that did commit after all a no-op.
            Err(e) if lost(&e) => {
                *c = Conn(Some(t.connect().map_err(|e| t.connect_error("connecting again to store the run", &e))?));
                write(&mut c, &prepared, row).map_err(|e| t.error("storing the run", &e))
            }
            saved => saved.map_err(|e| t.error("storing the run", &e)),
        }
    }

    /// The runs that pass `filter`, oldest first: each condition given is one clause, its
    /// value bound, never written into the SQL; only the newest `filter.newest` of them when
    /// given (taken from the top of the ids, then put back in order).
    fn list(&self, filter: &Filter) -> Result<Vec<RunRow>, String> {
        let texts = texts_of(filter);
        let (filter_sql, values) = clauses(&texts);
        let order = match filter.newest {
            Some(n) => format!(" DESC LIMIT {}", n.min(i64::MAX as u64)),
            None => String::new(),
        };
        let cols = self.row_columns();
        let sql = format!("SELECT {cols} FROM runs{filter_sql} ORDER BY id{order}");
        let mut rows = self.rows("listing the runs", &sql, &values)?;
        if filter.newest.is_some() {
            rows.reverse();
        }
        Ok(rows)
    }

    fn boards(&self, filter: &Filter) -> Result<Vec<BoardRow>, String> {
        let texts = texts_of(filter);
        let (filter_sql, values) = clauses(&texts);
        let sql =
            format!("SELECT board, count(*), min(started_at), max(started_at), max(id) FROM runs{filter_sql} GROUP BY board");
        let t = &self.target;
        let rows = self.client.borrow_mut().query(&sql, &values).map_err(|e| t.error("listing the boards", &e))?;
        Ok(rows
            .iter()
            .map(|r| BoardRow {
                board: r.get(0),
                runs: r.get::<_, i64>(1) as u64,
                first_started_at: r.get(2),
                last_started_at: r.get(3),
                latest: r.get(4),
            })
            .collect())
    }

    /// Each board's newest runs as the top of its range of the index on (md5(board), id), the
    /// boards' hashes found one after another along that index (a few hundred probes, not a
    /// pass over every run). Two boards whose names share an MD5 (only ever made on purpose)
    /// share a range: each is then read by its name. (A store of layout 1, only read, has no
    /// such index: the runs numbered per board from the newest, all of them.)
    fn recent_per_board(&self, filter: &Filter, per_board: u32) -> Result<Vec<RunRow>, String> {
        let texts = texts_of(filter);
        let (filter_sql, mut values) = clauses(&texts);
        let per_board = i64::from(per_board);
        values.push(&per_board);
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
        let t = &self.target;
        let doing = "listing each board's runs";
        let found = self.client.borrow_mut().query(&sql, &values).map_err(|e| t.error(doing, &e))?;
        let mut boards_of: HashMap<String, std::collections::BTreeSet<String>> = HashMap::new();
        let mut rows = Vec::with_capacity(found.len());
        for r in &found {
            let row = run_row(r);
            boards_of.entry(r.get(16)).or_default().insert(row.board.clone());
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
            bound.push(board);
            rows.extend(self.rows(doing, &one, &bound)?);
        }
        Ok(rows)
    }

    /// The runs' rows, then their figures, in one snapshot.
    fn figures(&self, ids: &[i64]) -> Result<Option<HashMap<i64, Figures>>, String> {
        if self.layout < 2 {
            return Ok(None);
        }
        let t = &self.target;
        let doing = "reading the runs' figures";
        let fail = |e: postgres::Error| t.error(doing, &e);
        let mut c = self.client.borrow_mut();
        let mut tx = c
            .build_transaction()
            .read_only(true)
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .start()
            .map_err(fail)?;
        let ids = ids.to_vec();
        let runs = tx.query("SELECT id, shortest_cycle_ns, kernel_config FROM runs WHERE id = ANY($1)", &[&ids]).map_err(fail)?;
        let mut all: HashMap<i64, Figures> = runs
            .iter()
            .map(|r| {
                let f = Figures {
                    shortest_cycle_ns: r.get::<_, Option<i64>>(1).map(|v| v as u64),
                    kernel_config: r.get(2),
                    series: Vec::new(),
                    forecasts: true,
                };
                (r.get(0), f)
            })
            .collect();
        // (A store of layout 2, only read, keeps no forecast.)
        let forecasts = self.layout >= 3;
        let columns = if forecasts {
            "day_level_ns, day_low_ns, day_high_ns, forecast_note"
        } else {
            "NULL::int8, NULL::int8, NULL::int8, NULL::text"
        };
        let rows = tx
            .query(
                &format!(
                    "SELECT run, entry, series, latency, samples, missed, p99_ns, p999_ns, max_ns, bins, {columns} \
                     FROM figures WHERE run = ANY($1) ORDER BY run, entry"
                ),
                &[&ids],
            )
            .map_err(fail)?;
        tx.commit().map_err(fail)?;
        for r in rows {
            let run: i64 = r.get(0);
            let unsigned = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v as u64);
            let series = SeriesFigures {
                entry: r.get::<_, i32>(1) as u32,
                series: r.get(2),
                latency: r.get(3),
                samples: r.get::<_, i64>(4) as u64,
                missed: r.get::<_, i64>(5) as u64,
                p99_ns: unsigned(6),
                p999_ns: unsigned(7),
                max_ns: unsigned(8),
                bins: super::figures::decode_bins(r.get(9))
                    .ok_or_else(|| format!("the figures of run {run} in the store {} are damaged", t.shown))?,
                day_level_ns: unsigned(10),
                day_low_ns: unsigned(11),
                day_high_ns: unsigned(12),
                forecast_note: r.get(13),
            };
            if let Some(f) = all.get_mut(&run) {
                f.series.push(series);
            }
        }
        if !forecasts {
            all.values_mut().for_each(super::figures::without_forecasts);
        }
        Ok(Some(all))
    }

    fn count(&self, filter: &Filter) -> Result<u64, String> {
        let texts = texts_of(filter);
        let (filter_sql, values) = clauses(&texts);
        let t = &self.target;
        let row = self
            .client
            .borrow_mut()
            .query_one(&format!("SELECT count(*) FROM runs{filter_sql}"), &values)
            .map_err(|e| t.error("counting the runs", &e))?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    fn last_id(&self) -> Result<Option<i64>, String> {
        self.one("SELECT max(id) FROM runs", &[])
    }

    fn has_id(&self, id: i64) -> Result<bool, String> {
        self.one::<Option<i64>>("SELECT max(id) FROM runs WHERE id = $1", &[&id]).map(|f| f.is_some())
    }

    fn latest_labelled(&self, label: &str) -> Result<Option<i64>, String> {
        self.one("SELECT max(id) FROM runs WHERE label = $1", &[&column_text(label)])
    }

    /// A range on the UUID's unique index: from the prefix followed by zeros to it followed by
    /// `f`s.
    fn by_uuid_prefix(&self, prefix: &str) -> Result<Vec<i64>, String> {
        let digits: String = prefix.chars().filter(|c| *c != '-').collect();
        let padded = |fill: char| {
            let mut d = digits.clone();
            while d.len() < 32 {
                d.push(fill);
            }
            format!("{}-{}-{}-{}-{}", &d[0..8], &d[8..12], &d[12..16], &d[16..20], &d[20..32])
        };
        if digits.len() > 32 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(Vec::new());
        }
        let (low, high) = (padded('0'), padded('f'));
        let t = &self.target;
        let rows = self
            .client
            .borrow_mut()
            .query(
                "SELECT id FROM runs WHERE uuid BETWEEN $1::text::uuid AND $2::text::uuid ORDER BY id LIMIT 10",
                &[&low, &high],
            )
            .map_err(|e| t.error("finding the run", &e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn kernel_config_before(&self, board: &str) -> Result<Option<super::Earlier>, String> {
        let t = &self.target;
        let row = self
            .client
            .borrow_mut()
            .query_opt(
                "SELECT runs.id, runs.uuid::text, kernel_configs.options FROM runs JOIN kernel_configs \
                 ON kernel_configs.sha256 = runs.kernel_config WHERE runs.board = $1 ORDER BY runs.id DESC LIMIT 1",
                &[&column_text(board)],
            )
            .map_err(|e| t.error("reading the board's last run", &e))?;
        let Some(row) = row else { return Ok(None) };
        let id: i64 = row.get(0);
        let options = super::decompress_options(row.get(2))
            .map_err(|e| format!("the kernel configuration of run {id} in the store {} cannot be read: {e}", t.shown))?;
        Ok(Some(super::Earlier { id, uuid: row.get(1), options }))
    }

    fn kernel_options(&self, sha256: &str) -> Result<Option<BTreeMap<String, String>>, String> {
        let t = &self.target;
        let row = self
            .client
            .borrow_mut()
            .query_opt("SELECT options FROM kernel_configs WHERE sha256 = $1", &[&sha256])
            .map_err(|e| t.error("reading a kernel configuration", &e))?;
        row.map(|r| super::decompress_options(r.get(0)))
            .transpose()
            .map_err(|e| format!("the kernel configuration {sha256} in the store {} cannot be read: {e}", t.shown))
    }

    /// The whole result of run `id` (one snapshot: its document and timelines as one).
    fn load(&self, id: i64) -> Result<RunResult, String> {
        let t = &self.target;
        let unreadable = |e: &dyn std::fmt::Display| format!("run {id} in the store {} cannot be read: {e}", t.shown);
        let mut c = self.client.borrow_mut();
        let mut tx = c.build_transaction().read_only(true).start().map_err(|e| t.error("reading the run", &e))?;
        let row = tx
            .query_opt("SELECT document, uuid::text FROM runs WHERE id = $1", &[&id])
            .map_err(|e| t.error("reading the run", &e))?
            .ok_or_else(|| unreadable(&"no such run"))?;
        let mut r = super::decompress_document(row.get(0)).map_err(|e| unreadable(&e))?;
        if r.uuid.is_none() {
            r.uuid = uuid::Uuid::parse_str(row.get(1)).ok();
        }
        drop(row);
        let rows =
            tx.query("SELECT entry, data FROM timelines WHERE run = $1", &[&id]).map_err(|e| t.error("reading the run", &e))?;
        for row in rows {
            let entry: i32 = row.get(0);
            super::restore_timeline(&mut r, entry.into(), row.get(1)).map_err(|e| unreadable(&e))?;
        }
        tx.commit().map_err(|e| t.error("reading the run", &e))?;
        Ok(r)
    }

    fn label(&self, id: i64) -> Result<Option<String>, String> {
        let t = &self.target;
        let row = self
            .client
            .borrow_mut()
            .query_opt("SELECT label FROM runs WHERE id = $1", &[&id])
            .map_err(|e| t.error("reading the run", &e))?;
        Ok(row.and_then(|r| r.get(0)))
    }

    /// Deletes run `id` (its timelines go with it).
    fn delete(&self, id: i64, uuid: Option<&str>) -> Result<bool, String> {
        let t = &self.target;
        let mut c = self.client.borrow_mut();
        let n = match uuid {
            None => c.execute("DELETE FROM runs WHERE id = $1", &[&id]),
            Some(u) => c.execute("DELETE FROM runs WHERE id = $1 AND uuid = $2::text::uuid", &[&id, &u]),
        };
        n.map(|n| n > 0).map_err(|e| t.error("deleting the run", &e))
    }

    fn refuse_writes(&self) -> Result<(), String> {
        let t = &self.target;
        self.client
            .borrow_mut()
            .batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            .map_err(|e| t.error("making the session read-only", &e))
    }
}

/// A row of [`ROW_COLUMNS`] (and maybe more after them).
fn run_row(r: &postgres::Row) -> RunRow {
    RunRow {
        id: r.get(0),
        uuid: r.get(12),
        started_at: r.get(1),
        label: r.get(2),
        board: r.get(13),
        host: r.get(3),
        kernel: r.get(4),
        preemption: r.get(5),
        scenario: r.get(6),
        probes: r.get(7),
        worst_ns: r.get::<_, Option<i64>>(8).map(|w| w as u64),
        verdict: r.get(9),
        status: r.get(10),
        imported_from: r.get(11),
        series: r.get(14),
        part: r.get(15),
    }
}

/// The columns of a [`RunRow`], in the order [`run_row`] reads them (a store of a layout before
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
    fn rows(&self, doing: &str, sql: &str, values: &[&(dyn ToSql + Sync)]) -> Result<Vec<RunRow>, String> {
        let t = &self.target;
        let rows = self.client.borrow_mut().query(sql, values).map_err(|e| t.error(doing, &e))?;
        Ok(rows.iter().map(run_row).collect())
    }

    /// The one value of a query's one row.
    fn one<T: for<'a> postgres::types::FromSql<'a>>(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<T, String> {
        let t = &self.target;
        self.client.borrow_mut().query_one(sql, params).map(|r| r.get(0)).map_err(|e| t.error("finding the run", &e))
    }
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

/// A condition's value as the columns keep it (text: see [`column_text`]).
enum Param {
    Text(String),
    Id(i64),
}

/// `filter`'s conditions with their values as the columns keep them.
fn texts_of(filter: &Filter) -> Vec<(&'static str, &'static str, Param)> {
    filter
        .conditions()
        .map(|(column, op, v)| {
            let v = match v {
                Bound::Text(t) => Param::Text(column_text(t).into_owned()),
                Bound::Id(id) => Param::Id(*id),
            };
            (column, op, v)
        })
        .collect()
}

/// Conditions ([`texts_of`]) as a `WHERE` clause (empty without any) and the values it binds.
fn clauses<'a>(texts: &'a [(&'static str, &'static str, Param)]) -> (String, Vec<&'a (dyn ToSql + Sync)>) {
    let mut conditions: Vec<String> = Vec::new();
    let mut values: Vec<&(dyn ToSql + Sync)> = Vec::new();
    for (column, op, v) in texts {
        values.push(match v {
            Param::Text(t) => t,
            Param::Id(id) => id,
        });
        conditions.push(format!("{column} {op} ${}", values.len()));
    }
    let filter = if conditions.is_empty() { String::new() } else { format!(" WHERE {}", conditions.join(" AND ")) };
    (filter, values)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            redact("postgres://rt:s3cret@db.lab:5433/runs?sslmode=require"),
            "postgres://rt@db.lab:5433/runs?sslmode=require"
        );
        assert_eq!(redact("postgresql://rt:p%40ss@h/db?password=x&sslmode=disable"), "postgresql://rt@h/db?sslmode=disable");
        assert_eq!(redact("postgres://h/db?password=x"), "postgres://h/db");
        assert_eq!(redact("postgres://u@h"), "postgres://u@h");
        assert_eq!(redact("postgres://u:pw@h"), "postgres://u@h");
    }

    #[test]
    fn pgpass_lines_match_as_libpq_reads_them() {
        let text = "# comment\n\
                    other:5432:*:rt:no\n\
                    db\\:lab:*:runs:rt:colon\\:in\\\\it\n\
                    *:5433:*:*:wild:card\n\
                    localhost:5432:runs:rt:sock\n";
        assert_eq!(pgpass_match(text, "db:lab", 5432, "runs", "rt").as_deref(), Some("colon:in\\it"));
        assert_eq!(pgpass_match(text, "anyhost", 5433, "x", "y").as_deref(), Some("wild:card"), "the password keeps its colons");
        assert_eq!(pgpass_match(text, "/var/run/postgresql", 5432, "runs", "rt").as_deref(), Some("sock"));
        assert_eq!(pgpass_match(text, "other", 5432, "runs", "nobody"), None);
    }

    #[test]
    fn a_url_parses_with_its_tls_mode_and_a_bad_one_says_how_to_write_it() {
        let e = Target::parse("postgres://rt:pw@127.0.0.1:5999/lab?sslmode=verify-ca&sslrootcert=/nonexistent").err();
        assert!(e.as_deref().is_some_and(|e| e.contains("sslrootcert") && !e.contains("pw@")), "{e:?}");
        let t = match Target::parse("postgresql://rt:pw@127.0.0.1:5999/lab?sslmode=require&connect_timeout=3") {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        };
        assert_eq!((t.at.as_str(), t.user.as_str(), t.dbname.as_str()), ("127.0.0.1:5999", "rt", "lab"));
        assert_eq!(t.shown, "postgresql://rt@127.0.0.1:5999/lab?sslmode=require&connect_timeout=3");
        let e = Target::parse("postgres://rt:pw@h/lab?sslmode=sometimes").err().unwrap_or_default();
        assert!(e.contains("sslmode=sometimes") && e.contains("postgres://USER@HOST:PORT/DBNAME") && !e.contains(":pw"), "{e}");
        let e = Target::parse("postgres://rt:pw@h:notaport/lab").err().unwrap_or_default();
        assert!(e.starts_with("the database URL postgres://rt@h:notaport/lab does not parse"), "{e}");
    }
}
