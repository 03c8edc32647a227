//! The store, one suite for both backends: every test of the store's behaviour that is not
//! specific to one backend is written once against a [`Backend`] (a SQLite file in a temporary
//! directory, or a fresh database of the test binary's throw-away PostgreSQL cluster,
//! tests/common/pg.rs) and run for each by [`both!`] (`NAME::sqlite`, `NAME::postgres`): a run
//! stored at its end and its whole document given back by `show`/`export` (by id, label, `last`,
//! UUID and an 8-hex-digit prefix), `report`, `compare`, `delete`; a file imported twice stored
//! once with no id gap; `list`'s filters, alone and together; names of any text (quotes, SQL,
//! control characters, 10 000 characters) stored and shown as text; another program's store and
//! one of a newer layout refused untouched; a new store's layout made in one step; many writers
//! at once through the binary while readers keep answering. Then what one backend has alone:
//! SQLite's files (garbage, corruption, permissions, a write lock held past the busy timeout,
//! an older layout migrated), PostgreSQL's URLs, credentials, roles, TLS, a server gone or a
//! connection dropped mid-write. A refused store is refused with exit 2 and one line before
//! anything is measured, and no output holds a password.

mod common;

use common::*;
use rtgauge::result::RunResult;
use rtgauge::store::{Filter, Location, OpenError, Saved, Store};
use serde_json::Value;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where a test's store is: a SQLite file in the test's temporary directory, or a database of
/// its own on the test binary's PostgreSQL cluster (the directory then holds the test's files).
struct Backend {
    dir: tempfile::TempDir,
    /// `--db`'s value: the file's path, or the database's URL (with the role's password).
    db: String,
    /// The cluster and the database's name.
    pg: Option<(&'static pg::Cluster, String)>,
}

impl Backend {
    fn sqlite() -> Backend {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("runs.db").to_string_lossy().into_owned();
        Backend { dir, db, pg: None }
    }

    /// A fresh database owned by the tests' role; `None` where PostgreSQL cannot start (a note
    /// is printed; under CI that panics).
    fn postgres(hint: &str) -> Option<Backend> {
        let c = pg::shared()?;
        let name = c.database(hint, true);
        Some(Backend { dir: tempfile::tempdir().unwrap(), db: c.url(&name), pg: Some((c, name)) })
    }

    /// Another, empty store of the same kind.
    fn another(&self, hint: &str) -> Backend {
        match self.pg {
            None => Backend::sqlite(),
            Some(_) => Backend::postgres(hint).expect("the cluster is running"),
        }
    }

    fn db(&self) -> &str {
        &self.db
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn is_pg(&self) -> bool {
        self.pg.is_some()
    }

    fn location(&self) -> Location {
        Location::of(Path::new(&self.db))
    }

    /// The store as messages and the result's command line name it (a URL without its password).
    fn shown(&self) -> String {
        match &self.pg {
            Some((c, name)) => format!("postgres://{}@127.0.0.1:{}/{name}", pg::ROLE, c.port),
            None => self.db.clone(),
        }
    }

    /// The newest layout this rtgauge knows.
    fn known_layout(&self) -> i64 {
        if self.is_pg() {
            4
        } else {
            7
        }
    }

    /// The store's own tables.
    fn store_tables(&self) -> Vec<String> {
        let t: &[&str] = if self.is_pg() {
            &["figures", "kernel_configs", "rtgauge_meta", "runs", "timelines"]
        } else {
            &["documents", "figures", "kernel_configs", "runs", "timelines"]
        };
        t.iter().map(|s| s.to_string()).collect()
    }

    /// A connection to the SQLite file (made only if the file is there).
    fn sqlite_conn(&self) -> Option<rusqlite::Connection> {
        Path::new(&self.db).exists().then(|| rusqlite::Connection::open(&self.db).unwrap())
    }

    /// Runs `sql` on the store directly (SQLite: the file; PostgreSQL: as the superuser).
    fn exec(&self, sql: &str) {
        match &self.pg {
            Some((c, name)) => c.superuser(name).batch_execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}")),
            None => rusqlite::Connection::open(&self.db).unwrap().execute_batch(sql).unwrap_or_else(|e| panic!("{sql}: {e}")),
        }
    }

    /// The integer a query gives, asked of the store directly.
    fn count(&self, sql: &str) -> i64 {
        match &self.pg {
            Some((c, name)) => c.superuser(name).query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")).get(0),
            None => self.sqlite_conn().expect("the store's file").query_row(sql, [], |r| r.get(0)).unwrap(),
        }
    }

    /// The tables in the store's database, sorted (none for a file that is not there).
    fn tables(&self) -> Vec<String> {
        match &self.pg {
            Some((c, name)) => tables(c, name),
            None => match self.sqlite_conn() {
                None => Vec::new(),
                Some(c) => c
                    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY 1")
                    .unwrap()
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect(),
            },
        }
    }

    /// Everything the store holds, to compare before and after: the file's bytes (and its
    /// log's), or every table's rows as text.
    fn snapshot(&self) -> Vec<u8> {
        match &self.pg {
            Some((c, name)) => {
                let mut s = c.superuser(name);
                let mut all = Vec::new();
                for t in tables(c, name) {
                    let rows: Option<String> = s
                        .query_one(&format!("SELECT string_agg(t::text, E'\\n' ORDER BY t::text) FROM \"{t}\" t"), &[])
                        .unwrap()
                        .get(0);
                    all.extend(format!("{t}:\n{}\n", rows.unwrap_or_default()).into_bytes());
                }
                all
            }
            None => {
                let mut all = std::fs::read(&self.db).unwrap_or_default();
                all.extend(std::fs::read(format!("{}-wal", self.db)).unwrap_or_default());
                all
            }
        }
    }

    /// The store's marker and layout: (the application it names, the layout's version).
    fn marker(&self) -> (String, i64) {
        match &self.pg {
            Some(_) => (
                self.text("SELECT value FROM rtgauge_meta WHERE key = 'application'"),
                self.text("SELECT value FROM rtgauge_meta WHERE key = 'layout'").parse().unwrap(),
            ),
            None => {
                let c = self.sqlite_conn().unwrap();
                let id: i64 = c.query_row("PRAGMA application_id", [], |r| r.get(0)).unwrap();
                let app = if id == 0x7274_6761 { "rtgauge".to_string() } else { format!("{id:#x}") };
                (app, c.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap())
            }
        }
    }

    fn text(&self, sql: &str) -> String {
        let (c, name) = self.pg.as_ref().unwrap();
        c.superuser(name).query_one(sql, &[]).unwrap().get(0)
    }

    /// Marks the store as one of layout `n`.
    fn set_layout(&self, n: i64) {
        match self.pg {
            Some(_) => self.exec(&format!("UPDATE rtgauge_meta SET value = '{n}' WHERE key = 'layout'")),
            None => self.exec(&format!("PRAGMA user_version = {n}")),
        }
    }

    /// Makes the (empty) store another program's: `marked` false, a table of its own and no
    /// marker; true, a marker that names another program (SQLite: an rtgauge store whose
    /// application_id is not rtgauge's; PostgreSQL: an `rtgauge_meta` that is not rtgauge's).
    fn make_foreign(&self, marked: bool) {
        match (&self.pg, marked) {
            (Some(_), false) => self.exec(&format!(
                "CREATE TABLE orders (id int); INSERT INTO orders VALUES (7); ALTER TABLE orders OWNER TO {}",
                pg::ROLE
            )),
            (Some(_), true) => self.exec(&format!(
                "CREATE TABLE rtgauge_meta (key text, value text); INSERT INTO rtgauge_meta VALUES ('application', 'other'); \
                 ALTER TABLE rtgauge_meta OWNER TO {}",
                pg::ROLE
            )),
            (None, false) => self.exec("CREATE TABLE orders (id int); INSERT INTO orders VALUES (7);"),
            (None, true) => {
                ok(&["import", "--db", &self.db, &fixture("oslat.json")]);
                self.exec("PRAGMA application_id = 305419896");
            }
        }
    }
}

/// A test written once, run for both backends: `NAME::sqlite` and `NAME::postgres` (which
/// returns, after a note, where PostgreSQL cannot start outside CI).
macro_rules! both {
    ($name:ident) => {
        mod $name {
            #[test]
            fn sqlite() {
                super::$name(super::Backend::sqlite())
            }
            #[test]
            fn postgres() {
                if let Some(b) = super::Backend::postgres(stringify!($name)) {
                    super::$name(b)
                }
            }
        }
    };
}

/// Tests that set PGPASSWORD/PGPASSFILE/HOME hold this (the variables are the process's).
static ENV: Mutex<()> = Mutex::new(());

/// How long a `run` that must be refused before measuring asks to measure, and the bound its
/// refusal must come within: far apart, so that a refusal slowed by an emulator and a busy
/// machine (armv7 under qemu-user with the whole suite in parallel took 25 s) is still told from
/// a run that measured first.
const REFUSED_RUN_ASKS: &str = "300s";
const BEFORE_MEASURING: Duration = Duration::from_secs(200);

fn cluster() -> Option<&'static pg::Cluster> {
    pg::shared()
}

/// The binary with `args`: the exit status and both streams as text.
fn cli(args: &[&str]) -> (i32, String, String) {
    let out = rtgauge(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = cli(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    no_password(&format!("{args:?}"), &[&out, &err]);
    out
}

/// Asserts that no output holds the role's password, as written or percent-encoded.
fn no_password(what: &str, texts: &[&str]) {
    for t in texts {
        assert!(!t.contains(pg::ROLE_PASSWORD) && !t.contains(&pg::encode(pg::ROLE_PASSWORD)), "{what}: the password shown: {t}");
    }
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(name).display().to_string()
}

fn list(db: &str, extra: &[&str]) -> Vec<Value> {
    let out = ok(&[&["list", "--json", "--db", db][..], extra].concat());
    serde_json::from_str::<Value>(&out).unwrap().as_array().unwrap().clone()
}

/// The tables of the public schema of database `db`, sorted.
fn tables(c: &pg::Cluster, db: &str) -> Vec<String> {
    c.superuser(db)
        .query("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Whether `text` holds a character a terminal would act on or hide: a control character
/// (C0 but the line breaks and tabs of the layout, DEL, C1) or a bidirectional override.
fn raw_control(text: &str) -> Option<char> {
    text.chars().find(|&c| (c.is_control() && c != '\n' && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c))
}

/// The commands that only read a store holding runs labelled `x` and `y`.
const READING: [&[&str]; 7] = [
    &["list"],
    &["list", "--json"],
    &["show", "x"],
    &["show", "last", "--json"],
    &["export", "x", "--format", "csv"],
    &["report", "x"],
    &["compare", "x", "y"],
];

/// A copy of the imported cyclictest file made a file of its own by `n` (its content, so its
/// UUID, differs), written into `dir`.
fn distinct_file(dir: &Path, n: u64) -> String {
    let mut doc: Value = serde_json::from_slice(&std::fs::read(fixture("cyclictest-no-h.json")).unwrap()).unwrap();
    doc["thread"]["0"]["max"] = (u(&doc["thread"]["0"]["max"]) + n).into();
    let file = dir.join(format!("f{n}.json"));
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    file.display().to_string()
}

/// Runs `args` (a store command, or `run`) and asserts it is refused: exit 2, one line on stderr
/// that holds `says` and no password (nor `secret`), nothing on stdout, before measuring (a `run`
/// asks for REFUSED_RUN_ASKS and is refused within BEFORE_MEASURING; its JSON document, asked for
/// a file, is not written). Returns the line.
fn refused(dir: &Path, args: &[&str], env: Option<&str>, says: &str, secret: &str) -> String {
    let json = dir.join(format!("refused-{}.json", std::process::id()));
    let mut all: Vec<&str> = args.to_vec();
    let json_s = json.display().to_string();
    if args[0] == "run" {
        all.extend(["-D", REFUSED_RUN_ASKS, "--load", "none", "--json", &json_s]);
    }
    let mut cmd = rtgauge(&all);
    if let Some(db) = env {
        cmd.env("RTGAUGE_DB", db);
    }
    let t = Instant::now();
    let out = cmd.output().unwrap();
    let (stdout, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(says) && err.trim_end().lines().count() == 1, "{args:?}: {err}");
    assert!(stdout.is_empty(), "{args:?}: nothing measured, nothing shown: {stdout}");
    assert!(t.elapsed() < BEFORE_MEASURING, "{args:?}: refused before measuring ({:?})", t.elapsed());
    assert!(!json.exists(), "{args:?}: the run's document was not written");
    no_password(&format!("{args:?}"), &[&stdout, &err]);
    assert!(secret.is_empty() || !stdout.contains(secret) && !err.contains(secret), "{args:?}: {err}");
    err.into_owned()
}

/// A result with histograms (an imported cyclictest run) and a timeline of 500 windows.
fn result() -> RunResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest-h100.json");
    let mut r = rtgauge::interchange::import(&path).unwrap_or_else(|e| panic!("{e}"));
    let n = 500;
    r.probes[0].timeline = Some(rtgauge::result::timeline::TimelineData {
        window_ns: 1_000_000_000,
        start_ns: 0,
        count: (0..n).map(|i| 1000 - i % 3).collect(),
        missed: vec![0; n as usize],
        max_ns: (0..n).map(|i| 20_000 + i * 17).collect(),
        p99_ns: (0..n).map(|i| 10_000 + i * 3).collect(),
    });
    r
}

fn uuid(n: u128) -> String {
    let h = format!("{n:032x}");
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

fn pg_location(url: &str) -> Location {
    Location::Postgres(url.to_string())
}

fn open(url: &str) -> Store {
    Store::open(&pg_location(url)).unwrap_or_else(|e| panic!("{e}"))
}

fn pg_open(url: &str) -> Result<Store, OpenError> {
    Store::open(&pg_location(url))
}

/// Gives `r` its UUID and board.
fn mark(r: &mut RunResult, uuid: &str, board: &str) {
    r.uuid = Some(uuid.parse().unwrap());
    r.board = Some(rtgauge::audit::board::named(board));
}

/// Stores `r` as the run of UUID `uuid` on `board`, labelled `label`.
fn save(store: &Store, r: &mut RunResult, uuid: &str, board: &str, label: Option<&str>) -> Saved {
    mark(r, uuid, board);
    store.save(r, label, None, None).unwrap_or_else(|e| panic!("{e}"))
}

fn err<T>(r: Result<T, OpenError>) -> OpenError {
    match r {
        Ok(_) => panic!("opened, though it should not"),
        Err(e) => e,
    }
}

fn db_in(dir: &tempfile::TempDir) -> String {
    dir.path().join("runs.db").to_string_lossy().into_owned()
}

// ---------------------------------------------------------------------------------------------
// One suite, two backends.
// ---------------------------------------------------------------------------------------------

/// A run is stored at its end (`--db`, and `RTGAUGE_DB` naming it as `--db` does); its whole
/// document comes back, every number of it, by id, label, `last`, UUID and its first 8 hex
/// digits (`show --json`, `export -f json`); `list` filters; `report`, `compare` and `delete`
/// work on it, and a deleted run's timelines go with it. The result's command line names the
/// store without its password.
fn a_run_is_stored_at_its_end_then_listed_shown_exported_reported_compared_and_deleted(b: Backend) {
    let db = b.db();
    let run = ["--loops", "200", "--warmup", "0", "--load", "none", "--db", db, "--board", "lab-a"];
    let (code, doc, out) = run_json(&[&run[..], &["--label", "first", "--require", "samples>=1"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("Stored as run 1 in {}", b.shown())), "{err}");
    no_password("run", &[&err, &doc.to_string()]);
    let line = doc["command_line"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect::<Vec<_>>().join(" ");
    assert!(line.contains(&format!("--db {}", b.shown())), "{line}");
    // RTGAUGE_DB names it as --db does.
    let out = rtgauge(&["run", "--quiet", "--json", "-", "--loops", "100", "--warmup", "0", "--load", "none"])
        .env("RTGAUGE_DB", db)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("Stored as run 2 in {}", b.shown())), "{err}");
    let second: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = list(db, &[]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!((rows[0]["label"].as_str(), rows[0]["verdict"].as_str()), (Some("first"), Some("pass")));
    assert_eq!((rows[1]["label"].is_null(), rows[1]["verdict"].as_str()), (true, Some("none")));
    assert_eq!(rows[0]["board"], "lab-a");
    assert_eq!(rows[0]["kernel"], doc["system"]["kernel_release"]);
    assert_eq!(rows[0]["probes"], "timer");
    assert_eq!(rows[0]["uuid"], doc["uuid"]);
    // The kernel's configuration, where the run read one, kept once for the two runs.
    if !doc["board"]["kernel_config"].is_null() {
        assert_eq!(b.count("SELECT count(*) FROM kernel_configs"), 1);
        // Its options, as `compare` reads them, by the SHA-256 the document names.
        let store = Store::open(&b.location()).unwrap();
        let mut r: RunResult = serde_json::from_value(doc.clone()).unwrap();
        assert!(store.kernel_config_of(&r).unwrap().is_some_and(|k| !k.options.is_empty()));
        r.board.as_mut().unwrap().kernel_config.as_mut().unwrap().sha256 = "0".repeat(64);
        assert_eq!(store.kernel_config_of(&r).unwrap(), None);
    }
    let uuid = doc["uuid"].as_str().unwrap();
    for (which, expected) in [("1", &doc), ("first", &doc), ("last", &second), (uuid, &doc), (&uuid[..8], &doc)] {
        let shown: Value = serde_json::from_str(&ok(&["show", which, "--json", "--db", db])).unwrap();
        assert_eq!(&shown, expected, "show {which}");
    }
    assert!(ok(&["show", "first", "--db", db]).contains("Verdict: PASS"), "the summary, as the run printed it");
    assert_eq!(serde_json::from_str::<Value>(&ok(&["export", "first", "-f", "json", "--db", db])).unwrap(), doc, "export");
    assert!(ok(&["export", "1", "-f", "csv", "--db", db]).lines().count() >= 2);
    let page = b.dir().join("r.html");
    ok(&["report", "1", "--db", db, "--html", page.to_str().unwrap()]);
    assert!(std::fs::metadata(&page).unwrap().len() > 0);
    // Run 1 on lab-a, run 2 on the host's board.
    assert!(ok(&["compare", "1", "2", "--db", db]).contains("the comparison is across boards"));
    assert_eq!(list(db, &["--label", "first"]).len(), 1);
    assert_eq!(list(db, &["--host", "no-such-host"]).len(), 0);
    assert_eq!(list(db, &["--since", "1h"]).len(), 2);
    assert_eq!(list(db, &["--since", "2999-01-01"]).len(), 0);
    ok(&["delete", "2", "--db", db]);
    assert_eq!(list(db, &[]).len(), 1);
    assert_eq!(b.count("SELECT count(*) FROM timelines WHERE run = 2"), 0, "its timelines went with it");
    ok(&["delete", "first", "--db", db]);
    assert_eq!(list(db, &[]).len(), 0);
    let (code, _, err) = cli(&["show", "first", "--db", db]);
    assert_eq!(code, 2);
    assert!(err.contains("no run 'first'"), "{err}");
    // A password written on the command line: used, warned of (ps shows it), kept nowhere.
    if db.starts_with("postgres") {
        let out = rtgauge_as_written(&[
            "run", "--quiet", "--json", "-", "--loops", "50", "--warmup", "0", "--load", "none", "--db", db,
        ])
        .env_remove("PGPASSWORD")
        .output()
        .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("shown to every user of this machine (ps)"), "{err}");
        let kept: Value = serde_json::from_slice(&out.stdout).unwrap();
        no_password("run with the password in --db", &[&err, &kept.to_string()]);
        let line = kept["command_line"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect::<Vec<_>>().join(" ");
        assert!(line.contains(&format!("--db {}", b.shown())), "{line}");
        let out = rtgauge(&["delete", "last", "--db", db]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
both!(a_run_is_stored_at_its_end_then_listed_shown_exported_reported_compared_and_deleted);

fn runs_at_the_same_time_are_all_stored(b: Backend) {
    let db = b.db();
    let runs: Vec<_> = (0..4)
        .map(|i| {
            let label = format!("concurrent-{i}");
            rtgauge(&["run", "-q", "--loops", "300", "--warmup", "0", "--load", "none", "--db", db, "--label", &label])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for r in runs {
        let out = r.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(!String::from_utf8_lossy(&out.stderr).contains("not stored"), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut labels: Vec<String> = list(db, &[]).iter().map(|r| r["label"].as_str().unwrap().to_string()).collect();
    labels.sort();
    assert_eq!(labels, ["concurrent-0", "concurrent-1", "concurrent-2", "concurrent-3"]);
}
both!(runs_at_the_same_time_are_all_stored);

/// A new store gets rtgauge's marker and the newest layout in one step, opens again as it is,
/// and its trial write (before measuring) used no id: the first run is run 1. A reader of a
/// database that holds no store finds none and makes none.
fn a_new_store_gets_its_marker_and_layout_and_opens_again(b: Backend) {
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    store.check_whole().unwrap();
    store.check_room(1 << 20).unwrap();
    drop(store);
    assert_eq!(b.marker(), ("rtgauge".to_string(), b.known_layout()));
    assert_eq!(b.tables(), b.store_tables());
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let mut r = result();
    let saved = save(&store, &mut r, &uuid(1), "board-a", None);
    assert_eq!((saved.id, saved.already), (1, false));
    assert_eq!(b.marker(), ("rtgauge".to_string(), b.known_layout()));
    let empty = b.another("empty");
    if b.is_pg() {
        assert!(Store::open_read(&empty.location()).unwrap().is_none());
    } else {
        assert!(Store::open_read(&empty.location()).is_err(), "no file: nothing to read");
    }
    assert!(empty.tables().is_empty());
    assert!(b.is_pg() || !Path::new(empty.db()).exists(), "no file made");
}
both!(a_new_store_gets_its_marker_and_layout_and_opens_again);

/// A store of another program (its tables and no marker, or a marker naming another program)
/// is refused by every command before measuring, in one line, and left untouched.
fn another_programs_store_is_refused_by_every_command_and_left_untouched(b: Backend) {
    for marked in [false, true] {
        let b = b.another("foreign");
        b.make_foreign(marked);
        let says = match (b.is_pg(), marked) {
            (true, false) => "holds tables of another program",
            (false, _) => "is a SQLite database of another program",
            (true, true) => "another program",
        };
        let before = b.snapshot();
        let tables = b.tables();
        let db = b.db();
        for (args, by_env) in store_commands(db) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            refused(b.dir(), &args, by_env.then_some(db), says, "");
        }
        assert_eq!(b.tables(), tables, "nothing created");
        assert!(b.snapshot() == before, "left untouched (marked: {marked})");
    }
    // Through the library too.
    let f = b.another("foreignlib");
    f.make_foreign(false);
    let e = err(Store::open(&f.location()));
    assert!(matches!(e, OpenError::Refused(_)), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("another program") && e.contains("left as it is") && e.contains("--db") && !e.contains('\n'), "{e}");
    assert!(err(Store::open_read(&f.location())).to_string().contains("another program"));
}
both!(another_programs_store_is_refused_by_every_command_and_left_untouched);

/// A store written by a newer rtgauge (a layout this one does not know) is refused by every
/// command, and by the library, and left untouched.
fn a_store_of_a_newer_layout_is_refused_and_left_untouched(b: Backend) {
    let db = b.db();
    ok(&["import", "--db", db, &fixture("oslat.json")]);
    b.set_layout(99);
    let before = b.snapshot();
    let says = format!("written by a newer rtgauge (layout 99, this one knows up to {})", b.known_layout());
    for args in [
        vec!["list", "--db", db],
        vec!["show", "last", "--db", db],
        vec!["delete", "1", "--db", db],
        vec!["import", "--db", db, &fixture("cyclictest-h100.json")],
        vec!["run", "--db", db],
    ] {
        refused(b.dir(), &args, None, &says, "");
    }
    for e in [err(Store::open(&b.location())), err(Store::open_read(&b.location()).map(|s| s.unwrap()))] {
        assert!(e.to_string().contains(&says), "{e}");
    }
    assert!(b.snapshot() == before, "left untouched");
    assert_eq!(b.marker().1, 99);
}
both!(a_store_of_a_newer_layout_is_refused_and_left_untouched);

/// Every run has a UUID: a measured run a new one each time; an imported file one made from its
/// content, so the same file imported twice is stored once ("already stored as run N") and the
/// next run takes the next id (no gap). `show` finds a run by its UUID and by its first 8 hex
/// digits as well as by id and label. A command that reads a store that is not there makes none.
fn a_file_imported_twice_is_stored_once_with_no_id_gap_and_found_by_its_uuid(b: Backend) {
    let db = b.db();
    for args in [vec!["list", "--db", db], vec!["delete", "1", "--db", db]] {
        let (_, out, err) = cli(&args);
        assert!(out.is_empty() || args[0] == "list", "{args:?}: {out}");
        no_password("an empty store", &[&out, &err]);
    }
    assert!(b.tables().is_empty(), "nothing made by list or delete");
    assert!(b.is_pg() || !Path::new(db).exists(), "no file made by list or delete");
    let file = fixture("cyclictest-h100.json");
    let first = ok(&["import", &file, "--db", db, "--board", "imx8-01", "--label", "nightly"]);
    assert!(first.starts_with("Imported ") && first.contains(&format!("as run 1 in {}", b.shown())), "{first}");
    let again = ok(&["import", &file, "--db", db]);
    assert!(again.contains("already stored as run 1") && again.contains("not stored again"), "{again}");
    assert!(!again.starts_with("Imported "), "{again}");
    let rows = list(db, &[]);
    assert_eq!(rows.len(), 1, "stored once: {rows:?}");
    let uuid = rows[0]["uuid"].as_str().unwrap().to_string();
    assert_eq!(uuid.len(), 36, "{uuid}");
    // Another store gives the same file the same UUID.
    let other = b.another("other");
    ok(&["import", "--db", other.db(), &file]);
    assert_eq!(list(other.db(), &[])[0]["uuid"].as_str(), Some(&uuid[..]), "the file's identity, whatever the store");
    ok(&["import", &fixture("oslat.json"), &fixture("jitterdebugger-results.json"), "--db", db, "--board", "rpi4"]);
    ok(&["import", &fixture("cyclictest-hist.txt"), "--db", db, "--board", "imx8-01", "--label", "other"]);
    let ids = |extra: &[&str]| list(db, extra).iter().map(|r| r["id"].as_i64().unwrap()).collect::<Vec<_>>();
    assert_eq!(ids(&[]), [1, 2, 3, 4], "no id lost to the import stored once");
    assert_eq!(ids(&["--board", "imx8-01"]), [1, 4]);
    assert_eq!(ids(&["--board", "rpi4"]), [2, 3]);
    assert_eq!(ids(&["--label", "nightly"]), [1]);
    assert_eq!(ids(&["--board", "imx8-01", "--label", "other"]), [4]);
    assert_eq!(ids(&["--board", "nobody"]), [0i64; 0]);
    assert_eq!(ids(&["--since", "2999-01-01"]), [0i64; 0]);
    let started: Vec<String> = list(db, &[]).iter().map(|r| r["started_at"].as_str().unwrap().to_string()).collect();
    let newest = started.iter().max().unwrap().clone();
    let since = ids(&["--since", &newest]);
    assert!(!since.is_empty() && since.len() < 4 || started.iter().all(|s| *s == newest), "{since:?} of {started:?}");
    let out = ok(&["list", "--db", db, "--board", "rpi4"]);
    assert_eq!(out.lines().count(), 3, "a header and two runs: {out}");
    // Measured runs: a new (v4) UUID each.
    let run = ["--loops", "20", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", db];
    let (_, a, _) = run_json(&run);
    let (_, bb, _) = run_json(&run);
    let (a_uuid, b_uuid) = (a["uuid"].as_str().unwrap(), bb["uuid"].as_str().unwrap());
    assert_ne!(a_uuid, b_uuid, "each measured run its own");
    assert_eq!(&a_uuid[14..15], "4", "a random (v4) UUID: {a_uuid}");
    assert_eq!(ids(&[]), [1, 2, 3, 4, 5, 6]);
    for which in [a_uuid, &a_uuid[..8], &a_uuid.to_uppercase()[..13]] {
        let shown: Value = serde_json::from_str(&ok(&["show", which, "--json", "--db", db])).unwrap();
        assert_eq!(shown, a, "show {which}");
    }
    assert_eq!(serde_json::from_str::<Value>(&ok(&["show", &uuid, "--json", "--db", db])).unwrap()["uuid"], uuid.as_str());
    for which in [&a_uuid[..7], "ffffffff"] {
        let (code, _, err) = cli(&["show", which, "--db", db]);
        assert_eq!(code, 2, "{which}: {err}");
        assert!(err.contains("no run") && err.trim_end().lines().count() == 1, "{which}: {err}");
    }
}
both!(a_file_imported_twice_is_stored_once_with_no_id_gap_and_found_by_its_uuid);

/// `--board NAME` names the board (the host name by default) in the result and the store, and
/// `list` filters by board, kernel, scenario, label, verdict and date, each alone and all
/// together.
fn runs_are_filtered_by_board_kernel_scenario_label_verdict_and_date_together(b: Backend) {
    let db = b.db();
    let run = ["--loops", "20", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", db];
    let (_, default, _) = run_json(&run);
    assert_eq!(default["board"]["name"], default["system"]["hostname"], "the host name by default");
    let (_, named, _) =
        run_json(&[&run[..], &["--board", "rpi4-lab-3", "--label", "nightly", "--require", "samples>=1"]].concat());
    assert_eq!(named["board"]["name"], "rpi4-lab-3");
    if let Some(k) = named["board"]["kernel_config"].as_object() {
        assert_eq!(k["sha256"].as_str().map(str::len), Some(64), "{k:?}");
        // The same board's second run: its kernel options compared with the first's (none differ).
        assert_eq!(named["board"]["config_changes"], Value::Null, "the board's first run");
        let (_, next, _) = run_json(&[&run[..], &["--board", "rpi4-lab-3"]].concat());
        let changes = &next["board"]["config_changes"];
        assert_eq!(changes["since_run"], 2, "{changes}");
        assert!(changes["added"].as_array().unwrap().is_empty() && changes["changed"].as_array().unwrap().is_empty());
    }
    ok(&["import", "--db", db, "--board", "x86-box", "--label", "nightly", &fixture("oslat.json")]);
    let kernel = default["system"]["kernel_release"].as_str().unwrap();
    let ids = |extra: &[&str]| -> Vec<u64> { list(db, extra).iter().map(|r| u(&r["id"])).collect() };
    let three = named["board"]["kernel_config"].is_object();
    let last = if three { 4 } else { 3 };
    assert_eq!(ids(&["--board", "rpi4-lab-3"]).len(), if three { 2 } else { 1 });
    assert_eq!(ids(&["--board", "x86-box"]), [last]);
    assert_eq!(ids(&["--board", "rpi4-lab-3", "--label", "nightly", "--verdict", "pass"]), [2]);
    assert_eq!(ids(&["--verdict", "pass"]), [2]);
    assert_eq!(ids(&["--kernel", kernel]).len(), if three { 3 } else { 2 }, "the measured runs");
    assert_eq!(ids(&["--label", "nightly"]).len(), 2);
    assert_eq!(ids(&["--label", "nightly", "--board", "x86-box", "--verdict", "none"]).len(), 1);
    assert_eq!(ids(&["--label", "nightly", "--board", "x86-box", "--verdict", "pass"]), Vec::<u64>::new());
    assert_eq!(ids(&["--board", "rpi4-lab-3", "--kernel", kernel, "--since", "1h"]).first(), Some(&2));
    assert_eq!(
        ids(&["--board", "rpi4-lab-3", "--kernel", kernel, "--label", "nightly", "--verdict", "pass", "--since", "1h"]),
        [2],
        "all of them together"
    );
    assert_eq!(ids(&["--board", "rpi4-lab-3", "--kernel", kernel, "--since", "2999-01-01"]), Vec::<u64>::new());
    assert_eq!(ids(&["--board", "rpi4-lab-3", "--kernel", "no-such-kernel"]), Vec::<u64>::new());
    assert_eq!(ids(&["--scenario", "no-such-scenario"]), Vec::<u64>::new());
    assert_eq!(list(db, &["--board", default["system"]["hostname"].as_str().unwrap()])[0]["id"], 1);
    let (code, _, err) = cli(&["list", "--verdict", "maybe", "--db", db]);
    assert_eq!(code, 2, "{err}");
    let text = ok(&["list", "--db", db]);
    assert!(text.lines().next().unwrap().contains("board"), "{text}");
    assert!(text.contains("rpi4-lab-3") && text.contains("x86-box"), "{text}");
}
both!(runs_are_filtered_by_board_kernel_scenario_label_verdict_and_date_together);

/// The library's filters (every condition, alone and together, a scenario's too) and names of
/// any text (quotes, SQL, control characters, 10 000 characters) as board and label.
fn filters_and_names_of_any_text(b: Backend) {
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let odd = "it's \"quoted\"; DROP TABLE runs; --\u{7}\t\u{1b}[31m";
    let long: String = "ß".repeat(10_000);
    let mut r = result();
    r.started_at = "2030-01-01T00:00:00.000Z".into();
    save(&store, &mut r, &uuid(1), &long, Some(odd));
    r.started_at = "2030-02-01T00:00:00.000Z".into();
    r.system.kernel_release = "6.12.0-rt".into();
    r.config.scenario = Some(rtgauge::result::ScenarioRef { name: "nightly-stress".into(), source: "built-in".into() });
    save(&store, &mut r, &uuid(2), "plain", Some(&long));
    let all = store.list(&Filter::default()).unwrap();
    assert_eq!(all[0].board, long);
    assert_eq!(all[0].label.as_deref(), Some(odd));
    assert_eq!(all[1].label.as_deref(), Some(long.as_str()));
    let only = |f: Filter| store.list(&f).unwrap().iter().map(|l| l.id).collect::<Vec<_>>();
    assert_eq!(only(Filter { board: Some(long.clone()), ..Filter::default() }), [1]);
    assert_eq!(only(Filter { label: Some(odd.into()), ..Filter::default() }), [1]);
    assert_eq!(only(Filter { kernel: Some("6.12.0-rt".into()), ..Filter::default() }), [2]);
    assert_eq!(only(Filter { scenario: Some("nightly-stress".into()), ..Filter::default() }), [2]);
    assert_eq!(only(Filter { since: Some("2030-01-15T00:00:00Z".into()), ..Filter::default() }), [2]);
    assert_eq!(only(Filter { board: Some("plain".into()), since: Some("2031-01-01".into()), ..Filter::default() }), [0; 0]);
    let verdict = all[0].verdict.clone();
    assert_eq!(only(Filter { verdict: Some(verdict.clone()), ..Filter::default() }), [1, 2]);
    let together = Filter {
        board: Some("plain".into()),
        kernel: Some("6.12.0-rt".into()),
        scenario: Some("nightly-stress".into()),
        label: Some(long.clone()),
        verdict: Some(verdict),
        since: Some("2030-01-15T00:00:00Z".into()),
        until: Some("2030-02-02T00:00:00Z".into()),
        before_id: Some(3),
        host: None,
        newest: None,
    };
    assert_eq!(only(together), [2]);
    // The newest of them only (`list`'s bound), and how many there are in all.
    assert_eq!(only(Filter { newest: Some(1), ..Filter::default() }), [2]);
    assert_eq!(only(Filter { newest: Some(5), ..Filter::default() }), [1, 2]);
    assert_eq!(store.count(&Filter { newest: Some(1), ..Filter::default() }).unwrap(), 2);
    assert_eq!(store.count(&Filter { board: Some(long.clone()), ..Filter::default() }).unwrap(), 1);
    assert_eq!(store.resolve(odd).unwrap(), 1);
    assert_eq!(store.resolve(&long).unwrap(), 2);
    assert_eq!(b.tables(), b.store_tables(), "no table dropped");
}
both!(filters_and_names_of_any_text);

/// A run stored through the library comes back whole, once (a second save of its UUID is the
/// first's id), and is found by id, UUID (any case), label and `last`.
fn a_run_is_stored_whole_once_and_found_by_id_uuid_label_and_last(b: Backend) {
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let mut r = result();
    let id = uuid(0xabc);
    mark(&mut r, &id, "imx8-01");
    let before = serde_json::to_value(&r).unwrap();
    let saved = save(&store, &mut r, &id, "imx8-01", Some("rt-kernel"));
    assert!(!saved.already);
    assert_eq!(serde_json::to_value(&r).unwrap(), before, "the result comes back whole from save");
    let again = save(&store, &mut r, &id, "imx8-01", Some("rt-kernel"));
    assert_eq!((again.id, again.already), (saved.id, true));
    let reader = Store::open_read(&b.location()).unwrap().unwrap();
    for name in [saved.id.to_string(), id.clone(), id.to_uppercase(), "rt-kernel".into(), "last".into()] {
        assert_eq!(reader.resolve(&name).unwrap(), saved.id, "{name}");
    }
    let e = reader.resolve("nothing-like-it").unwrap_err();
    assert!(e.starts_with(&format!("no run 'nothing-like-it' in the store {}", b.shown())), "{e}");
    no_password("resolve", &[&e]);
    let loaded = reader.load(saved.id).unwrap();
    assert_eq!(serde_json::to_value(&loaded).unwrap(), before, "the document and its timeline come back exactly");
    assert_eq!(reader.label(saved.id).unwrap().as_deref(), Some("rt-kernel"));
    let listed = reader.list(&Filter::default()).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].uuid.as_deref(), listed[0].board.as_str()), (Some(id.as_str()), "imx8-01"));
    assert_eq!(listed[0].label.as_deref(), Some("rt-kernel"));
    assert_eq!(listed[0].started_at, r.started_at);
    store.delete(saved.id).unwrap();
    assert!(reader.list(&Filter::default()).unwrap().is_empty());
    assert_eq!(b.count("SELECT count(*) FROM timelines"), 0, "its timelines went with it");
}
both!(a_run_is_stored_whole_once_and_found_by_id_uuid_label_and_last);

/// A run listed (as a spool's delivery lists what waits), then copied and removed by another
/// delivery, its id then given to a run kept since (SQLite gives a deleted highest id again):
/// copying from the old listing copies nothing, and removing the listed run leaves the new one.
/// A spooled run was lost that way in CI (2026-11-27) when ten runs ended together: a delivery
/// removed, by its id alone, a run it had not delivered. `b` is the source (the spool's part);
/// the destination is a SQLite store of its own.
fn a_run_listed_then_replaced_is_neither_copied_nor_removed(b: Backend) {
    let from = Store::open(&Location::of(Path::new(b.db()))).unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let to = Store::open(&Location::File(dir.path().join("to.db"))).unwrap_or_else(|e| panic!("{e}"));
    let (first, second) = (uuid(0x51), uuid(0x52));
    let first_id = save(&from, &mut result(), &first, "board-a", Some("first")).id;
    let listed = from.list(&Filter::default()).unwrap();
    let row = listed.iter().find(|r| r.uuid.as_deref() == Some(first.as_str())).expect("listed").clone();
    // Another delivery takes it: copied, then removed (it is still the run listed).
    rtgauge::store::copy_run(&from, &row, &to).unwrap_or_else(|e| panic!("{e}"));
    assert!(from.delete_if_still(row.id, &first).unwrap());
    let second_id = save(&from, &mut result(), &second, "board-a", Some("second")).id;
    if !b.is_pg() {
        assert_eq!(second_id, first_id, "the case: SQLite gave the removed id again");
    }
    // The old listing again: nothing copied, nothing removed.
    assert!(rtgauge::store::copy_run(&from, &row, &to).is_err(), "run {} is no longer {first}", row.id);
    assert!(!from.delete_if_still(row.id, &first).unwrap(), "the run kept since is not removed");
    assert_eq!(from.resolve(&second).unwrap(), second_id, "the run kept since is still there");
    let arrived: Vec<Option<String>> = to.list(&Filter::default()).unwrap().into_iter().map(|r| r.uuid).collect();
    assert_eq!(arrived, vec![Some(first)], "the destination has the first run, once, and not the second");
}
both!(a_run_listed_then_replaced_is_neither_copied_nor_removed);

/// Runs of three boards for the dashboard's queries: board `a` 5 runs, `b` 3, `c` 1 (an oslat
/// import: other series), interleaved, a day apart in the order of their ids (2026-01-01 on);
/// their ids in that order, and each one's board.
fn dashboard_runs(store: &Store) -> Vec<(i64, &'static str)> {
    let oslat = rtgauge::interchange::import(Path::new(&fixture("oslat.json"))).unwrap_or_else(|e| panic!("{e}"));
    let boards = ["a", "b", "a", "c", "a", "b", "a", "b", "a"];
    let mut out = Vec::new();
    for (i, board) in boards.into_iter().enumerate() {
        let mut r = if board == "c" { oslat.clone() } else { result() };
        r.started_at = format!("2026-01-{:02}T00:00:00.000Z", i + 1);
        let saved = save(store, &mut r, &uuid(0xd00 + i as u128), board, Some(if i % 2 == 0 { "even" } else { "odd" }));
        out.push((saved.id, board));
    }
    out
}

/// The figures the store keeps of every run are those its document gives (`figures_of`): the
/// series in the order of the combined entries, their counts, and bins that sum to each
/// histogram's total count; a run not there has none; more than 5 000 ids at once is refused.
fn the_figures_of_a_stored_run_are_its_documents(b: Backend) {
    use rtgauge::store::figures::{figures_of, BINS};
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let runs = dashboard_runs(&store);
    let ids: Vec<i64> = runs.iter().map(|(id, _)| *id).chain([9_999]).collect();
    for reader in [Store::open_read(&b.location()).unwrap().unwrap(), store] {
        let figures = reader.figures(&ids).unwrap();
        assert_eq!(figures.len(), runs.len(), "every run there, none for an id not there");
        for (id, _) in &runs {
            let mut doc = reader.load(*id).unwrap();
            let as_stored = serde_json::to_value(&doc).unwrap();
            let f = &figures[id];
            assert_eq!(f, &figures_of(&mut doc), "run {id}");
            assert_eq!(serde_json::to_value(&doc).unwrap(), as_stored, "run {id}: its document left as it was");
            assert!(f.forecasts);
            for s in &f.series {
                // A latency series has its once-per-day level or the reason why not (a CPU's), never
                // both; another series neither.
                match (s.latency, s.day_level_ns, s.forecast_note.as_deref()) {
                    (true, Some(l), None) => {
                        assert!(s.day_low_ns.is_some_and(|low| low <= l) && s.day_high_ns.is_none_or(|h| h >= l), "{s:?}")
                    }
                    (true, None, Some(note)) => assert!(note.starts_with("cpu") && s.day_low_ns.is_none(), "{s:?}"),
                    (false, None, None) => {}
                    _ => panic!("run {id}: {s:?}"),
                }
            }
            assert_eq!(f.series.len(), doc.combined.len());
            assert!(!f.series.is_empty());
            for (s, p) in f.series.iter().zip(&doc.combined) {
                assert_eq!((s.series.as_str(), s.samples, s.missed), (p.label().as_str(), p.samples, p.missed));
                assert_eq!(s.bins.len(), BINS);
                assert_eq!(s.bins.iter().sum::<u64>(), p.histogram.total_count, "run {id} {}", s.series);
                assert!(p.histogram.total_count > 0);
            }
            assert_eq!(f.shortest_cycle_ns, doc.verdict.shortest_cycle_time_ns);
        }
        assert!(reader.figures(&[]).unwrap().is_empty());
        let e = reader.figures(&(1..=5_001).collect::<Vec<i64>>()).unwrap_err();
        assert_eq!(e, "the figures of 5001 runs were asked for at once; ask for 5000 at most");
        assert_eq!(reader.figures(&(1..=5_000).collect::<Vec<i64>>()).unwrap().len(), runs.len());
    }
    // A run deleted: its figures with it.
    let store = Store::open(&b.location()).unwrap();
    let (gone, _) = runs[0];
    let before = b.count("SELECT count(*) FROM figures");
    store.delete(gone).unwrap();
    assert_eq!(b.count(&format!("SELECT count(*) FROM figures WHERE run = {gone}")), 0);
    assert_eq!(b.count("SELECT count(*) FROM figures"), before - 1, "its one series");
    assert!(!store.figures(&ids).unwrap().contains_key(&gone));
}
both!(the_figures_of_a_stored_run_are_its_documents);

/// `boards` counts each board's runs (among those a filter passes) with its first and last
/// start and its latest run; `recent_per_board` gives exactly each board's newest N, by board
/// then oldest first; `until` and `before_id` bound `list` and `count` as well.
fn boards_and_each_boards_newest_runs(b: Backend) {
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let runs = dashboard_runs(&store);
    let of = |board: &str| -> Vec<i64> { runs.iter().filter(|(_, b)| *b == board).map(|(id, _)| *id).collect() };
    let day = |id: i64| format!("2026-01-{:02}T00:00:00.000Z", runs.iter().position(|(i, _)| *i == id).unwrap() + 1);
    for reader in [Store::open_read(&b.location()).unwrap().unwrap(), store] {
        let boards = reader.boards(&Filter::default()).unwrap();
        let shown: Vec<(&str, u64, i64)> = boards.iter().map(|r| (r.board.as_str(), r.runs, r.latest)).collect();
        assert_eq!(shown, [("a", 5, of("a")[4]), ("b", 3, of("b")[2]), ("c", 1, of("c")[0])]);
        for r in &boards {
            assert_eq!(r.first_started_at, day(of(&r.board)[0]));
            assert_eq!(r.last_started_at, day(r.latest));
        }
        let odd = Filter { label: Some("odd".into()), ..Filter::default() };
        let shown: Vec<(String, u64)> = reader.boards(&odd).unwrap().into_iter().map(|r| (r.board, r.runs)).collect();
        assert_eq!(shown, [("b".to_string(), 3), ("c".to_string(), 1)], "the filter's runs alone");

        let recent = |filter: &Filter, n: u32| -> Vec<(String, i64)> {
            reader.recent_per_board(filter, n).unwrap().into_iter().map(|r| (r.board, r.id)).collect()
        };
        let newest = |board: &str, n: usize, below: i64| -> Vec<(String, i64)> {
            let ids: Vec<i64> = of(board).into_iter().filter(|&id| id < below).collect();
            ids[ids.len().saturating_sub(n)..].iter().map(|&id| (board.to_string(), id)).collect()
        };
        for n in [1, 2, 3, 30] {
            let expected = [newest("a", n, i64::MAX), newest("b", n, i64::MAX), newest("c", n, i64::MAX)].concat();
            assert_eq!(recent(&Filter::default(), n as u32), expected, "the newest {n} per board");
        }
        assert!(recent(&Filter::default(), 0).is_empty());
        let below = runs[6].0;
        let paged = Filter { before_id: Some(below), ..Filter::default() };
        let expected = [newest("a", 2, below), newest("b", 2, below), newest("c", 2, below)].concat();
        assert_eq!(recent(&paged, 2), expected, "before an id");
        let rows = reader.recent_per_board(&Filter::default(), 1).unwrap();
        assert_eq!(rows[0].started_at, day(rows[0].id));
        assert_eq!((rows[0].label.as_deref(), rows[0].uuid.is_some()), (Some("even"), true));

        // until: runs started before it; before_id: ids below it; with since, a window.
        let until = Filter { until: Some(day(runs[3].0)), ..Filter::default() };
        let ids = |f: &Filter| reader.list(f).unwrap().into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(&until), runs[..3].iter().map(|r| r.0).collect::<Vec<_>>());
        assert_eq!(reader.count(&until).unwrap(), 3);
        assert_eq!(ids(&paged), runs[..6].iter().map(|r| r.0).collect::<Vec<_>>());
        let window = Filter { since: Some(day(runs[2].0)), before_id: Some(runs[5].0), board: Some("a".into()), ..until };
        assert_eq!(ids(&window), [runs[2].0]);
        assert_eq!(reader.count(&window).unwrap(), 1);
        let shown: Vec<(String, u64)> = reader.boards(&window).unwrap().into_iter().map(|r| (r.board, r.runs)).collect();
        assert_eq!(shown, [("a".to_string(), 1)]);
    }
}
both!(boards_and_each_boards_newest_runs);

/// `figures` as a store that keeps no forecast gives them: no level, and a note on each latency
/// series that says so.
fn without_forecasts(figures: &std::collections::HashMap<i64, rtgauge::store::figures::Figures>) -> Vec<(i64, String)> {
    let mut out: Vec<(i64, String)> = figures
        .iter()
        .map(|(id, f)| {
            let mut f = f.clone();
            for s in &mut f.series {
                (s.day_level_ns, s.day_low_ns, s.day_high_ns) = (None, None, None);
                s.forecast_note = s.latency.then(|| rtgauge::store::figures::NOT_KEPT.to_string());
            }
            f.forecasts = false;
            (*id, format!("{f:?}"))
        })
        .collect();
    out.sort();
    out
}

/// What a store of a layout before the series' columns (SQLite 6, PostgreSQL 3) lacks.
const WITHOUT_SERIES: &str = "DROP INDEX runs_series; ALTER TABLE runs DROP COLUMN series; ALTER TABLE runs DROP COLUMN part";

/// A store of three layouts before (SQLite 4, PostgreSQL 1: no figures) is read as it is, its
/// figures made from the documents (but the forecasts': none kept, and each latency series says
/// so); opened for writing, it gets them filled from its documents, the same as a run stored now
/// gets them, forecasts included.
fn a_store_of_an_older_layout_gets_its_figures_filled(b: Backend) {
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let runs = dashboard_runs(&store);
    let ids: Vec<i64> = runs.iter().map(|(id, _)| *id).collect();
    let kept = store.figures(&ids).unwrap();
    drop(store);
    b.exec("DROP TABLE figures; DROP INDEX runs_board_id; ALTER TABLE runs DROP COLUMN shortest_cycle_ns");
    b.exec(WITHOUT_SERIES);
    b.set_layout(b.known_layout() - 3);
    let before = if b.is_pg() { b.snapshot() } else { Vec::new() };
    let reader = Store::open_read(&b.location()).unwrap().unwrap();
    assert_eq!(without_forecasts(&reader.figures(&ids).unwrap()), without_forecasts(&kept), "made from the documents");
    assert!(reader.figures(&ids).unwrap().values().all(|f| !f.forecasts));
    assert_eq!(reader.boards(&Filter::default()).unwrap().len(), 3);
    assert_eq!(reader.recent_per_board(&Filter::default(), 2).unwrap().len(), 5);
    drop(reader);
    if b.is_pg() {
        assert!(b.snapshot() == before, "read, not migrated");
    }
    assert_eq!(b.marker().1, b.known_layout() - 3, "read, not migrated");
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.marker().1, b.known_layout());
    assert_eq!(b.tables(), b.store_tables());
    assert_eq!(b.count("SELECT count(*) FROM figures"), runs.len() as i64, "one series each");
    assert_eq!(store.figures(&ids).unwrap(), kept, "filled from the documents");
    let mut r = result();
    let new = save(&store, &mut r, &uuid(0xe00), "a", None);
    assert_eq!(store.figures(&[new.id]).unwrap()[&new.id], rtgauge::store::figures::figures_of(&mut store.load(new.id).unwrap()));
}
both!(a_store_of_an_older_layout_gets_its_figures_filled);

/// A forecast that applies, of once-per-day level `level` ns (interval `low`..`high`).
fn applying(level: f64, low: f64, high: Option<f64>) -> rtgauge::result::forecast::Forecast {
    use rtgauge::result::forecast::{Fit, Forecast, ReturnLevel};
    let at = |horizon: &str, periods: f64, k: f64| ReturnLevel {
        horizon: horizon.into(),
        periods,
        level_ns: level * k,
        low_ns: low * k,
        high_ns: high.map(|h| h * k),
    };
    Forecast {
        method: "peaks-over-threshold".into(),
        periods: 60_000,
        interval_ns: 1_000_000,
        measured_ns: 60_000_000_000,
        threshold_ns: Some(20_000),
        exceedances: 60,
        fit: Some(Fit {
            shape: -0.1,
            shape_low: -0.3,
            shape_high: 0.1,
            scale_ns: 2_000.0,
            tail: "exponential".into(),
            endpoint_ns: None,
            region: vec![[1_500.0, -0.3], [2_500.0, 0.1]],
        }),
        tests: Vec::new(),
        assumed: None,
        not_applicable: None,
        return_levels: vec![at("1h", 3.6e6, 0.8), at("1d", 8.64e7, 1.0), at("1y", 3.15e10, 1.3)],
    }
}

/// A forecast that does not apply, for `why`.
fn not_applying(why: &str) -> rtgauge::result::forecast::Forecast {
    rtgauge::result::forecast::Forecast {
        fit: None,
        not_applicable: Some(why.into()),
        return_levels: Vec::new(),
        ..applying(1.0, 1.0, None)
    }
}

/// The once-per-day levels (level, low, high) given to the CPUs of a run, in turn.
const LEVELS: [(f64, f64, f64); 3] =
    [(41_000.0, 38_000.0, 52_000.0), (45_000.0, 36_000.0, 50_000.0), (43_000.0, 39_500.0, 61_000.0)];

/// Runs whose documents carry forecasts set by hand (on an imported cyclictest run of 4 CPUs):
/// every CPU's applying, with an interval each (the stored level, low and high are the highest
/// of the CPUs'); every CPU's applying, one without an upper end (no high); one CPU's not
/// applying (no level; its reason, after the CPU). Their ids, in that order.
fn forecast_runs(store: &Store) -> [i64; 3] {
    let make = |n: u128, set: &dyn Fn(usize) -> rtgauge::result::forecast::Forecast| {
        let mut r = result();
        let cpus: Vec<usize> =
            r.probes.iter().enumerate().filter(|(_, p)| p.cpu.is_some() && p.samples > 0).map(|(i, _)| i).collect();
        assert!(cpus.len() >= 2, "{} CPUs", cpus.len());
        for (k, &i) in cpus.iter().enumerate() {
            r.probes[i].forecast = Some(set(k));
        }
        r.started_at = format!("2026-02-{:02}T00:00:00.000Z", n + 1);
        save(store, &mut r, &uuid(0xf00 + n), "forecast", None).id
    };
    let all = make(0, &|k| {
        let (l, lo, hi) = LEVELS[k % 3];
        applying(l, lo, Some(hi))
    });
    let open = make(1, &|k| applying(30_000.0, 29_000.0, (k != 1).then_some(40_000.0)));
    let some =
        make(2, &|k| if k == 1 { not_applying("too few values over the threshold (7)") } else { applying(1e4, 9e3, None) });
    [all, open, some]
}

/// The forecast a stored run's figures carry, per series: the once-per-day level the highest of
/// its CPUs' with the highest low and high (none when a CPU's interval has no upper end), or, when
/// a CPU's forecast does not apply, no level and that CPU's reason; the document is stored as it
/// was given (no forecast written into it).
fn the_forecast_of_a_stored_run_is_kept_with_its_figures(b: Backend) {
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let [all, open, some] = forecast_runs(&store);
    let mut plain = result();
    let plain = save(&store, &mut plain, &uuid(0xf10), "forecast", None).id;
    let f = store.figures(&[all, open, some, plain]).unwrap();
    let timer = |id: i64| f[&id].series.iter().find(|s| s.latency).unwrap().clone();
    let s = timer(all);
    let cpus = store.load(all).unwrap().probes.iter().filter(|p| p.cpu.is_some() && p.samples > 0).count();
    let highest = |pick: fn(&(f64, f64, f64)) -> f64| (0..cpus).map(|k| pick(&LEVELS[k % 3]) as u64).max();
    assert_eq!(
        (s.day_level_ns, s.day_low_ns, s.day_high_ns, s.forecast_note),
        (highest(|l| l.0), highest(|l| l.1), highest(|l| l.2), None),
        "{cpus} CPUs"
    );
    let s = timer(open);
    assert_eq!((s.day_level_ns, s.day_low_ns, s.day_high_ns, s.forecast_note), (Some(30_000), Some(29_000), None, None));
    let s = timer(some);
    assert_eq!((s.day_level_ns, s.day_low_ns, s.day_high_ns), (None, None, None));
    let cpu = store.load(some).unwrap().probes.iter().filter(|p| p.cpu.is_some() && p.samples > 0).nth(1).unwrap().scope();
    assert_eq!(s.forecast_note.as_deref(), Some(&*format!("{cpu}: too few values over the threshold (7)")));
    // The run stored without forecasts: its figures have one made, its document none.
    let s = timer(plain);
    assert!(s.day_level_ns.is_some() != s.forecast_note.is_some(), "{s:?}");
    assert!(store.load(plain).unwrap().probes.iter().all(|p| p.forecast.is_none() && p.convergence.is_none()));
    assert!(store.load(all).unwrap().probes.iter().filter(|p| p.cpu.is_some()).all(|p| p.forecast.is_some()));
}
both!(the_forecast_of_a_stored_run_is_kept_with_its_figures);

/// A store of two layouts before (SQLite 5, PostgreSQL 2: figures without forecasts) is read as
/// it is: no level, each latency series saying the store keeps none, the other figures as
/// kept; opened for writing, it gets every run's forecast filled from its document (made for a
/// document without one), the same as a run stored now gets.
fn a_store_of_the_layout_before_gets_its_forecasts_filled(b: Backend) {
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let runs = dashboard_runs(&store);
    let ids: Vec<i64> = runs.iter().map(|(id, _)| *id).chain(forecast_runs(&store)).collect();
    let kept = store.figures(&ids).unwrap();
    assert!(kept.values().flat_map(|f| &f.series).any(|s| s.day_level_ns.is_some()), "some level to fill");
    assert!(kept.values().flat_map(|f| &f.series).any(|s| s.forecast_note.is_some()), "some reason to fill");
    drop(store);
    for column in ["day_level_ns", "day_low_ns", "day_high_ns", "forecast_note"] {
        b.exec(&format!("ALTER TABLE figures DROP COLUMN {column}"));
    }
    b.exec(WITHOUT_SERIES);
    b.set_layout(b.known_layout() - 2);
    let before = if b.is_pg() { b.snapshot() } else { Vec::new() };
    let reader = Store::open_read(&b.location()).unwrap().unwrap();
    let read = reader.figures(&ids).unwrap();
    assert_eq!(without_forecasts(&read), without_forecasts(&kept), "the other figures as kept, no forecast");
    let rows = reader.list(&Filter::default()).unwrap();
    assert!(!rows.is_empty() && rows.iter().all(|r| r.series.is_none()), "a layout without series reads without them");
    assert!(read.values().all(|f| !f.forecasts));
    drop(reader);
    if b.is_pg() {
        assert!(b.snapshot() == before, "read, not migrated");
    }
    assert_eq!(b.marker().1, b.known_layout() - 2, "read, not migrated");
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.marker().1, b.known_layout());
    assert_eq!(store.figures(&ids).unwrap(), kept, "filled from the documents");
}
both!(a_store_of_the_layout_before_gets_its_forecasts_filled);

/// 50 writers (threads of the library) at once on one new store: each opens it (one migrates,
/// the others wait), stores a run of its own and one every writer stores: every run once.
/// (Under an emulator, 10: each emulated password exchange and save takes seconds of the host's
/// two CPUs, and 50 at once outlast the connection's and the lock's time limits.)
fn many_writers_at_once_store_every_run_once(b: Backend) {
    let writers = if runner().is_some() { 10 } else { 50 };
    let location = b.location();
    let ids: Vec<(i64, i64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let location = &location;
                s.spawn(move || {
                    let store = Store::open(location).unwrap_or_else(|e| panic!("{e}"));
                    let mut r = result();
                    let own = save(&store, &mut r, &uuid(1000 + w as u128), &format!("board-{w}"), None);
                    let shared = save(&store, &mut r, &uuid(7), "shared", None);
                    (own.id, shared.id)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let shared: std::collections::BTreeSet<i64> = ids.iter().map(|i| i.1).collect();
    assert_eq!(shared.len(), 1, "one id for the run every writer stored: {shared:?}");
    let runs = Store::open(&location).unwrap().list(&Filter::default()).unwrap();
    assert_eq!(runs.len(), writers + 1);
    let uuids: std::collections::BTreeSet<&str> = runs.iter().filter_map(|r| r.uuid.as_deref()).collect();
    assert_eq!(uuids.len(), writers + 1);
    assert_eq!(b.count("SELECT count(*) FROM timelines"), writers as i64 + 1, "one timeline per stored run");
}
both!(many_writers_at_once_store_every_run_once);

/// A label and a board holding quotes, SQL, control characters or 10 000 characters are stored
/// and given back exactly as text (JSON), shown escaped (`list`, `show`), and filter exactly;
/// no table is dropped.
fn labels_and_boards_with_quotes_sql_controls_and_10000_characters_are_text(b: Backend) {
    let db = b.db();
    let long = "é".repeat(10_000);
    let names = [
        "o'brien \"lab\"",
        "x'; DROP TABLE runs; --",
        "a' OR '1'='1",
        "ctl\u{1b}[2J\u{7}\r\nfake row",
        "it's \"x\"; DROP TABLE runs; -- \u{7}\t\u{1b}[31mred",
        long.as_str(),
    ];
    for (i, name) in names.iter().enumerate() {
        let file = distinct_file(b.dir(), i as u64);
        let label = format!("label {name}");
        ok(&["import", "--db", db, "--board", name, "--label", &label, &file]);
        let rows = list(db, &["--board", name]);
        assert_eq!(rows.len(), 1, "{name:?}: {rows:?}");
        assert_eq!((rows[0]["board"].as_str(), rows[0]["label"].as_str()), (Some(*name), Some(&label[..])));
        assert_eq!(list(db, &["--label", &label]).len(), 1);
        let shown: Value = serde_json::from_str(&ok(&["show", &label, "--json", "--db", db])).unwrap();
        assert_eq!(shown["board"]["name"], *name, "--json gives it back exactly");
        let text = ok(&["show", &label, "--db", db]);
        assert_eq!(raw_control(&text), None, "control characters shown escaped: {text}");
        assert!(text.lines().filter(|l| l.starts_with("board ")).all(|l| l.chars().count() <= 80), "{text}");
    }
    assert_eq!(list(db, &[]).len(), names.len(), "every run stored, the table whole");
    let text = ok(&["list", "--db", db]);
    assert_eq!(text.lines().count(), names.len() + 1, "a header and one row per run: {text}");
    assert_eq!(raw_control(&text), None, "{text}");
    assert!(text.contains("\\x1b") && text.lines().all(|l| l.chars().count() < 400), "long names cut in the table: {text}");
    assert_eq!(b.tables(), b.store_tables(), "no table dropped");
}
both!(labels_and_boards_with_quotes_sql_controls_and_10000_characters_are_text);

/// A kernel release with quotes, SQL, control characters or 10 000 characters (an rtgauge
/// document says what it likes) is stored, filtered by `--kernel` exactly, given back whole by
/// `--json`, and shown escaped by `list` and `show`.
fn kernel_names_of_any_text_are_stored_filtered_and_shown_as_text(b: Backend) {
    let db = b.db();
    ok(&["import", "--db", db, "--label", "base", &distinct_file(b.dir(), 7)]);
    let doc: Value = serde_json::from_str(&ok(&["export", "base", "--db", db, "-f", "json"])).unwrap();
    let long = format!("6.12.0-rt{}", "9".repeat(10_000));
    let kernels = ["6.12'; DROP TABLE runs; --", "6.12 \"rt\" \u{1b}[2J\u{7}\r\nfake", long.as_str()];
    for (i, kernel) in kernels.iter().enumerate() {
        let mut d = doc.clone();
        d.as_object_mut().unwrap().remove("uuid");
        d.as_object_mut().unwrap().remove("imported");
        d["system"]["kernel_release"] = Value::from(*kernel);
        let file = b.dir().join(format!("k{i}.json"));
        std::fs::write(&file, serde_json::to_vec(&d).unwrap()).unwrap();
        ok(&["import", "--db", db, "--label", &format!("k{i}"), file.to_str().unwrap()]);
        let rows = list(db, &["--kernel", kernel]);
        assert_eq!(rows.len(), 1, "{kernel:?}: {rows:?}");
        assert_eq!(rows[0]["kernel"].as_str(), Some(*kernel));
        let shown: Value = serde_json::from_str(&ok(&["show", &format!("k{i}"), "--json", "--db", db])).unwrap();
        assert_eq!(shown["system"]["kernel_release"].as_str(), Some(*kernel), "given back exactly");
        let text = ok(&["show", &format!("k{i}"), "--db", db]);
        assert_eq!(raw_control(&text), None, "{text}");
    }
    let text = ok(&["list", "--db", db]);
    assert_eq!(raw_control(&text), None, "{text}");
    assert_eq!(text.lines().count(), 1 + 1 + kernels.len(), "a header and one row per run: {text}");
    assert!(text.lines().all(|l| l.chars().count() < 400), "a long release cut in the table: {text}");
    assert_eq!(b.tables(), b.store_tables(), "no table dropped");
}
both!(kernel_names_of_any_text_are_stored_filtered_and_shown_as_text);

/// An imported host name and kernel string, and a label, carrying terminal controls (set the
/// title, clear the screen, a carriage return and a line break that fake a row, C1's CSI, a
/// right-to-left override): `list`, `show`, `report` and `compare` show them escaped (`\x1b`),
/// one row per run, and JSON keeps them exactly.
fn control_characters_from_an_imported_file_are_shown_escaped(b: Backend) {
    let db = b.db();
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(fixture("jitterdebugger-results.json")).unwrap()).unwrap();
    let host = "evil\u{1b}]0;pwned\u{7}\r\n9  2026-01-01 fake row\u{9b}2J\u{202e}";
    let kernel = "6.1\u{1b}[2J\u{7f}";
    doc["sysinfo"]["nodename"] = host.into();
    doc["sysinfo"]["release"] = kernel.into();
    let file = b.dir().join("results.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let label = "lab\u{1b}[31mel\u{7}";
    ok(&["import", "--db", db, "--label", label, file.to_str().unwrap()]);
    ok(&["import", "--db", db, "--label", "plain", &fixture("jitterdebugger-results.json")]);
    let list_text = ok(&["list", "--db", db]);
    assert_eq!(list_text.lines().count(), 3, "a header and one row per run: {list_text}");
    for text in [
        list_text,
        ok(&["show", label, "--db", db]),
        ok(&["show", "1", "--db", db]),
        ok(&["report", "1", "--db", db]),
        ok(&["compare", "1", "2", "--db", db]),
    ] {
        assert_eq!(raw_control(&text), None, "{text}");
        assert!(text.contains("\\x1b"), "the escape is shown: {text}");
    }
    let rows = list(db, &[]);
    assert_eq!(rows[0]["host"], host, "JSON keeps the value exactly");
    assert_eq!(rows[0]["kernel"], kernel);
    assert_eq!(rows[0]["label"], label);
    assert_eq!(list(db, &["--kernel", kernel]).len(), 1, "and filters by it exactly");
    let json = ok(&["show", "1", "--json", "--db", db]);
    assert_eq!(raw_control(&json), None, "JSON writes them as escapes: {json}");
}
both!(control_characters_from_an_imported_file_are_shown_escaped);

/// `list --since 1000000d` reaches before 1970 (and a larger age beyond any date): a one-line
/// error, exit 2, never a panic.
fn list_since_an_age_beyond_the_epoch_is_an_error_not_a_panic(b: Backend) {
    let db = b.db();
    ok(&["import", "--db", db, &fixture("oslat.json")]);
    for since in ["1000000d", "100000000y", "99999999999999999999d", "18446744073709551615s"] {
        let (code, _, err) = cli(&["list", "--since", since, "--db", db]);
        assert_eq!(code, 2, "{since}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{since}: {err}");
        assert!(!err.contains("panicked"), "{since}: {err}");
    }
    assert_eq!(list(db, &["--since", "3650d"]).len(), 1);
}
both!(list_since_an_age_beyond_the_epoch_is_an_error_not_a_panic);

/// `list` gives each run the verdict its summary gives: a run that failed (here a CPU that
/// measured nothing, with no criteria asked) is `fail`, not `none`; `none` is only a run that
/// passed without criteria.
fn a_run_that_failed_without_criteria_is_listed_as_failed_not_none(b: Backend) {
    let db = b.db();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(fixture("cyclictest-no-h.json")).unwrap()).unwrap();
    for k in ["cycles", "min", "max"] {
        doc["thread"]["1"][k] = 0.into();
    }
    doc["thread"]["1"]["avg"] = 0.0.into();
    let failed = b.dir().join("one-thread-measured-nothing.json");
    std::fs::write(&failed, serde_json::to_vec(&doc).unwrap()).unwrap();
    ok(&["import", "--db", db, failed.to_str().unwrap(), "--label", "failed"]);
    ok(&["import", "--db", db, &fixture("cyclictest-no-h.json"), "--label", "plain"]);
    let summary = ok(&["show", "failed", "--db", db]);
    assert!(summary.contains("FAIL"), "the summary fails it: {summary}");
    let rows = list(db, &[]);
    let verdict = |label: &str| rows.iter().find(|r| r["label"] == label).map(|r| r["verdict"].as_str().unwrap().to_string());
    assert_eq!(verdict("failed").as_deref(), Some("fail"), "{rows:?}");
    assert_eq!(verdict("plain").as_deref(), Some("none"), "passed without criteria: {rows:?}");
    assert_eq!(list(db, &["--verdict", "fail"]).len(), 1);
    let text = ok(&["list", "--db", db]);
    let line = text.lines().find(|l| l.contains("failed")).unwrap();
    assert!(line.trim_end().ends_with("fail"), "{text}");
}
both!(a_run_that_failed_without_criteria_is_listed_as_failed_not_none);

/// `--quiet` drops the live view, never the line naming the stored run: a script needs the id
/// (on standard output, or on standard error when the JSON document has standard output).
fn quiet_still_names_the_stored_run(b: Backend) {
    let db = b.db();
    let run = ["run", "-q", "--loops", "50", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", db];
    let (code, text, err) = cli(&run);
    assert_eq!(code, 0, "{err}");
    assert_eq!(text.matches(&format!("Stored as run 1 in {}", b.shown())).count(), 1, "{text}");
    let out = rtgauge(&[&run[..], &["--json", "-"]].concat()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("standard output is the document alone");
    assert!(doc.is_object());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Stored as run 2 in"), "{}", String::from_utf8_lossy(&out.stderr));
}
both!(quiet_still_names_the_stored_run);

/// A count of one reads in the singular: an import of one thread is "1 CPU", not "1 CPUs"
/// (the same counted nouns as a one-period run's "1 period" and "1 warm-up period").
fn an_import_of_one_cpu_says_1_cpu_not_1_cpus(b: Backend) {
    let db = b.db();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(fixture("cyclictest-no-h.json")).unwrap()).unwrap();
    doc["thread"].as_object_mut().unwrap().remove("1");
    doc["num_threads"] = 1.into();
    let one = b.dir().join("one-thread.json");
    std::fs::write(&one, serde_json::to_vec(&doc).unwrap()).unwrap();
    let text = ok(&["import", "--db", db, one.to_str().unwrap()]);
    assert!(text.contains(", 1 CPU, ") && !text.contains("1 CPUs"), "{text}");
}
both!(an_import_of_one_cpu_says_1_cpu_not_1_cpus);

/// The compressed document is spooled through the temporary directory; one that cannot take it
/// (missing, full) lost the run: the run is stored all the same.
fn a_run_whose_temporary_directory_is_unusable_is_still_stored(b: Backend) {
    let out = rtgauge(&["run", "-q", "--loops", "200", "--warmup", "0", "--load", "none", "--db", b.db()])
        .env("TMPDIR", b.dir().join("no-such-dir"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(list(b.db(), &[]).len(), 1, "stored");
}
both!(a_run_whose_temporary_directory_is_unusable_is_still_stored);

// ---------------------------------------------------------------------------------------------
// Many writers at once, through the binary, while readers read.
// ---------------------------------------------------------------------------------------------

/// How long one reader's command (`list`, `show`: a process started, the store opened, read and
/// shown) may take while the writers run. Alone it takes 0.11 s (0.06 s of CPU in a debug build,
/// most of it the password's SCRAM exchange). Fifty writers started at once keep both CPUs busy
/// for 5 to 10 s, so the readers run at a higher CPU priority (nice -10): what is left of their
/// time is the store's and the server's (up to 1.9 s measured with 50 writers). A reader that
/// met a writer's lock would wait for it up to the store's lock wait, 10 s (SQLite's busy
/// timeout, PostgreSQL's lock_timeout): 5 s lies between the two. On PostgreSQL the server's own
/// account says more: no session of rtgauge's reading (a SELECT) ever waits for a lock while the
/// writers run (pg_stat_activity, sampled every 10 ms).
const READER_BOUND: Duration = Duration::from_secs(5);

/// `runs` measuring runs (short: 100 periods on one CPU, no load), `distinct` imports of files
/// of their own, `same` imports of one and the same file and `pushes` pushes of the same 5 runs
/// from another store, all started together on one store,
/// while two readers run `list` and `show` in a loop. Every writer exits 0 and says nothing
/// went wrong; every distinct run is stored exactly once (its label once, under the id its
/// writer named); ids and UUIDs are unique; the file imported by many at once is stored once
/// (one writer stored it, every other names that run); every reader answered, exit 0, within
/// [`READER_BOUND`].
fn writers_at_once_through_the_binary(b: &Backend, runs: usize, distinct: usize, same: usize, pushes: usize) {
    let db = b.db().to_string();
    ok(&["import", "--db", &db, "--label", "seed", &distinct_file(b.dir(), 100_000)]);
    // The runs every push copies, from a SQLite store of their own.
    let source = b.dir().join("source.db").display().to_string();
    const PUSHED: usize = 5;
    if pushes > 0 {
        for i in 0..PUSHED {
            ok(&["import", "--db", &source, "--label", &format!("pushed-{i}"), &distinct_file(b.dir(), 200_000 + i as u64)]);
        }
    }
    let files: Vec<String> = (0..distinct).map(|i| distinct_file(b.dir(), i as u64)).collect();
    let shared_file = distinct_file(b.dir(), 99_999);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (writers, readers) = std::thread::scope(|s| {
        let readers: Vec<_> = [vec!["list", "--json"], vec!["show", "last", "--json"], vec!["show", "seed"]]
            .into_iter()
            .map(|args| {
                let (db, stop) = (&db, &stop);
                s.spawn(move || {
                    let mut times = Vec::new();
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) || times.is_empty() {
                        let t = Instant::now();
                        // At a higher CPU priority than the writers' (nice -10): the time
                        // measured is the store's, not the queue for the two CPUs.
                        // (the password in the environment, as a user keeps it off the command line)
                        let (args, password) = password_in_environment(&[&args[..], &["--db", db]].concat());
                        let mut reader = std::process::Command::new("nice");
                        reader.args(["-n", "-10"]).args(bin_argv()).args(&args);
                        if let Some(p) = password {
                            reader.env("PGPASSWORD", p);
                        }
                        let out = reader.output().unwrap();
                        let (code, out, err) = (
                            out.status.code().unwrap_or(-1),
                            String::from_utf8_lossy(&out.stdout).into_owned(),
                            String::from_utf8_lossy(&out.stderr).into_owned(),
                        );
                        // (its time, whether the writers were still running when it answered)
                        times.push((t.elapsed(), !stop.load(std::sync::atomic::Ordering::Relaxed)));
                        assert_eq!(code, 0, "reader {args:?}: {err}");
                        assert!(err.is_empty() && !out.is_empty(), "reader {args:?}: {err}");
                    }
                    times
                })
            })
            .collect();
        // PostgreSQL: the server's account of every session of rtgauge's, every 10 ms while the
        // writers run: (samples, reading sessions seen active, reading sessions seen waiting
        // for a lock).
        let sampler = b.pg.as_ref().map(|(c, name)| {
            let (stop, name) = (&stop, name.clone());
            s.spawn(move || {
                let mut admin = c.superuser("postgres");
                let mut seen = (0u64, 0i64, 0i64);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let row = admin
                        .query_one(
                            "SELECT count(*) FILTER (WHERE state = 'active'), count(*) FILTER (WHERE wait_event_type = 'Lock') \
                             FROM pg_stat_activity WHERE datname = $1 AND application_name = 'rtgauge' AND query ILIKE 'select%'",
                            &[&name],
                        )
                        .unwrap();
                    seen = (seen.0 + 1, seen.1 + row.get::<_, i64>(0), seen.2 + row.get::<_, i64>(1));
                    std::thread::sleep(Duration::from_millis(10));
                }
                seen
            })
        });
        // Every writer is spawned before any is waited for.
        let mut children = Vec::new();
        for i in 0..runs {
            let (label, board, cpu) = (format!("run-{i}"), format!("board-{i}"), (i % 2).to_string());
            let args = ["run", "-q", "--loops", "100", "--warmup", "0", "--cpus", &cpu, "--load", "none"];
            children.push((label.clone(), rtgauge(&[&args[..], &["--db", &db, "--label", &label, "--board", &board]].concat())));
        }
        for (i, f) in files.iter().enumerate() {
            let label = format!("import-{i}");
            children.push((label.clone(), rtgauge(&["import", f, "--db", &db, "--label", &label, "--board", "importer"])));
        }
        for _ in 0..same {
            children.push(("same".into(), rtgauge(&["import", &shared_file, "--db", &db, "--label", "same"])));
        }
        // Pushes of the same runs from another store, all at once: each run stored once.
        for _ in 0..pushes {
            children.push(("push".into(), rtgauge(&["push", "--db", &source, "--to", &db])));
        }
        let started: Vec<_> = children
            .into_iter()
            .map(|(label, mut c)| {
                let child = c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
                (label, child)
            })
            .collect();
        let t = Instant::now();
        // Each writer's time, as it ends (polled), for the report of the slowest.
        let mut pending: Vec<(String, std::process::Child)> = started;
        let mut writers: Vec<(String, std::process::Output, Duration)> = Vec::new();
        while !pending.is_empty() {
            let mut i = 0;
            while i < pending.len() {
                if pending[i].1.try_wait().unwrap().is_some() {
                    let (label, child) = pending.swap_remove(i);
                    writers.push((label, child.wait_with_output().unwrap(), t.elapsed()));
                } else {
                    i += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let slowest = writers.iter().max_by_key(|w| w.2).map(|w| (w.0.clone(), w.2));
        eprintln!("the slowest writer: {slowest:?}");
        let writers: Vec<(String, std::process::Output)> = writers.into_iter().map(|(l, o, _)| (l, o)).collect();
        eprintln!(
            "{} writers on {} ended within {:?}",
            writers.len(),
            if b.is_pg() { "PostgreSQL" } else { "SQLite" },
            t.elapsed()
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let readers: Vec<Vec<(Duration, bool)>> = readers.into_iter().map(|h| h.join().unwrap()).collect();
        if let Some(sampler) = sampler {
            let (samples, reading, waiting) = sampler.join().unwrap();
            eprintln!("the server seen {samples} times: {reading} reading sessions active, {waiting} waiting for a lock");
            assert_eq!(waiting, 0, "a reading session of rtgauge's waited for a lock");
        }
        (writers, readers)
    });
    for (label, out) in &writers {
        let (stdout, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "writer {label}: {err}");
        assert!(err.trim().is_empty(), "writer {label}: no error, no warning: {err}");
        no_password(label, &[&stdout, &err]);
    }
    let rows = list(&db, &[]);
    let pushed = if pushes > 0 { PUSHED } else { 0 };
    assert_eq!(rows.len(), 1 + runs + distinct + usize::from(same > 0) + pushed, "{rows:?}");
    let ids: std::collections::BTreeSet<i64> = rows.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    let uuids: std::collections::BTreeSet<&str> = rows.iter().map(|r| r["uuid"].as_str().unwrap()).collect();
    assert_eq!((ids.len(), uuids.len()), (rows.len(), rows.len()), "ids and UUIDs unique");
    let id_of = |label: &str| -> i64 {
        let found: Vec<i64> = rows.iter().filter(|r| r["label"] == label).map(|r| r["id"].as_i64().unwrap()).collect();
        assert_eq!(found.len(), 1, "{label} stored exactly once: {rows:?}");
        found[0]
    };
    for (label, out) in writers.iter().filter(|(l, _)| l != "push") {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let id = id_of(label);
        if label.starts_with("run-") {
            assert!(stdout.contains(&format!("Stored as run {id} in")), "{label}: {stdout}");
        } else if label.starts_with("import-") {
            assert!(stdout.starts_with("Imported ") && stdout.contains(&format!("as run {id} in")), "{label}: {stdout}");
        }
    }
    // Every pushed run stored once; the pushes copied it once among them, the others found it.
    let copied: usize = writers
        .iter()
        .filter(|(l, _)| l == "push")
        .map(|(_, o)| {
            let said = String::from_utf8_lossy(&o.stdout).into_owned();
            assert!(said.starts_with("Copied ") || said.starts_with("No run copied"), "{said}");
            said.strip_prefix("Copied ").and_then(|t| t.split(' ').next()).map_or(0, |n| n.parse().unwrap())
        })
        .sum();
    assert_eq!(copied, pushed, "each pushed run copied by one push");
    for i in 0..pushed {
        id_of(&format!("pushed-{i}"));
    }
    if same > 0 {
        let id = id_of("same");
        let outs: Vec<String> =
            writers.iter().filter(|(l, _)| l == "same").map(|(_, o)| String::from_utf8_lossy(&o.stdout).into_owned()).collect();
        assert_eq!(
            outs.iter().filter(|o| o.starts_with("Imported ") && o.contains(&format!("as run {id} in"))).count(),
            1,
            "{outs:?}"
        );
        assert_eq!(outs.iter().filter(|o| o.contains(&format!("already stored as run {id} "))).count(), same - 1, "{outs:?}");
    }
    let all: Vec<Duration> = readers.iter().flatten().map(|r| r.0).collect();
    let worst = all.iter().max().copied().unwrap_or_default();
    let during: Vec<usize> = readers.iter().map(|r| r.iter().filter(|a| a.1).count()).collect();
    eprintln!(
        "readers: {} answers ({during:?} per reader while the writers ran), the slowest {worst:?}; ids {:?}..={:?}",
        all.len(),
        ids.first(),
        ids.last()
    );
    // Under an emulator (RTGAUGE_RUNNER) every process is many times slower: the time is not
    // the store's, and only the server's account and the counts above are checked.
    assert!(runner().is_some() || worst < READER_BOUND, "a reader waited {worst:?}");
    assert!(during.iter().all(|&n| n >= 1), "every reader answered while the writers ran: {during:?}");
}

/// 50 writers at once on one PostgreSQL database (10 measuring runs, 20 imports of files of
/// their own, 10 imports of one file, 10 pushes of the same 5 runs from a SQLite store) while
/// readers read.
#[test]
fn fifty_writers_at_once_on_postgresql_store_every_run_once_and_readers_never_wait() {
    let Some(b) = Backend::postgres("fifty") else { return };
    if runner().is_some() {
        // Emulated, each process costs seconds of CPU: fewer writers, the same checks.
        eprintln!("NOTE: under an emulator, 12 writers instead of 50");
        return writers_at_once_through_the_binary(&b, 2, 4, 4, 2);
    }
    writers_at_once_through_the_binary(&b, 10, 20, 10, 10);
}

/// 12 writers at once on one SQLite store (3 runs, 4 distinct imports, 3 of one file, 2 pushes):
/// SQLite takes one writer at a time; the others wait through its busy timeout, and none fails.
#[test]
fn twelve_writers_at_once_on_sqlite_store_every_run_once_and_readers_never_wait() {
    writers_at_once_through_the_binary(&Backend::sqlite(), 3, 4, 3, 2);
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL alone: bad input through the binary.
// ---------------------------------------------------------------------------------------------

/// Every command that takes a store, for `db` (a file or a URL): (arguments, RTGAUGE_DB instead
/// of --db).
fn store_commands(db: &str) -> Vec<(Vec<String>, bool)> {
    let file = fixture("oslat.json");
    [
        vec!["list", "--db", db],
        vec!["show", "last", "--db", db],
        vec!["export", "last", "-f", "json", "--db", db],
        vec!["delete", "1", "--db", db],
        vec!["import", &file, "--db", db],
        vec!["run", "--db", db],
    ]
    .into_iter()
    .map(|a| (a.into_iter().map(String::from).collect(), false))
    .chain([(vec!["run".to_string()], true), (vec!["list".to_string()], true)])
    .collect()
}

/// Runs every store command on `db` and asserts each is refused (see [`refused`]); under an
/// emulator, where each process is slow, `list` and `run` only.
fn every_command_refused(dir: &Path, db: &str, says: &str, secret: &str) {
    let emulated = runner().is_some();
    for (args, env) in store_commands(db) {
        if emulated && (env || !["list", "run"].contains(&args[0].as_str())) {
            continue;
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(dir, &args, env.then_some(db), says, secret);
    }
}

/// A URL that does not parse (a port out of range or not a number, an unknown sslmode, an
/// unknown parameter, a parameter of the wrong kind, junk) is refused by every command before
/// anything is measured, in one line that shows the URL without its password; so are a URL
/// with no host before its port and one whose root certificates are not there.
#[test]
fn a_database_url_that_does_not_parse_is_refused_before_measuring_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "Hidden-Pa55-123";
    for (url, says) in [
        (
            format!("postgres://rtg:{secret}@127.0.0.1:99999/x"),
            "the database URL postgres://rtg@127.0.0.1:99999/x does not parse",
        ),
        (format!("postgres://rtg:{secret}@127.0.0.1:port/x"), "the database URL postgres://rtg@127.0.0.1:port/x does not parse"),
        (format!("postgres://rtg:{secret}@127.0.0.1:-1/x"), "does not parse"),
        (format!("postgres://rtg:{secret}@127.0.0.1:5432/x?sslmode=bogus"), "sslmode=bogus; give disable, prefer, require"),
        (format!("postgres://rtg:{secret}@127.0.0.1:5432/x?foo=bar"), "'foo' is not a parameter rtgauge knows"),
        (format!("postgres://rtg:{secret}@127.0.0.1:5432/x?connect_timeout=soon"), "does not parse"),
        (format!("postgresql://rtg:{secret}@[::1/x"), "the database URL postgresql://rtg@[::1/x does not parse"),
        (format!("postgres://rtg:{secret}@:5432/x"), "it names a port but no host"),
        (format!("postgres://rtg:{secret}@127.0.0.1:0/x"), "the port '0' is not a port number (1-65535)"),
        (format!("postgres://rtg:{secret}@127.0.0.1:5432/x?sslmode=verify-full&sslrootcert=/no/such.pem"), "cannot be read"),
    ] {
        every_command_refused(dir.path(), &url, says, secret);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no file made");
}

/// `--db postgres://...` (and `postgresql://`, and RTGAUGE_DB) is a PostgreSQL database, not a
/// file: for a command that reads or imports, a server that does not answer is one line, exit 2,
/// the URL's password never shown, and no file made. (A run measures all the same, its result in
/// the spool: tests/push.rs.)
#[test]
fn a_postgresql_url_nothing_answers_at_is_refused_cleanly_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    for url in ["postgres://lab:s3cret@127.0.0.1:1/rt", "POSTGRESQL://lab:s3cret@127.0.0.1:1/rt?sslmode=require"] {
        for (args, env) in [
            (vec!["list", "--db", url], false),
            (vec!["show", "last", "--db", url], false),
            (vec!["import", "--db", url, &fixture("oslat.json")], false),
            (vec!["list"], true),
        ] {
            let mut c = rtgauge(&args);
            c.current_dir(dir.path());
            if env {
                c.env("RTGAUGE_DB", url);
            }
            let t = Instant::now();
            let out = c.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("nothing answers at 127.0.0.1:1") && err.trim_end().lines().count() == 1, "{err}");
            assert!(!err.contains("s3cret"), "{err}");
            assert!(out.stdout.is_empty() && t.elapsed() < BEFORE_MEASURING, "before measuring");
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no file made");
}

/// A host that takes the connection and then says nothing (a hung server, a proxy with nothing
/// behind it, another service on the port): every command that reads gives up within the
/// connection's time-out (10 s; `connect_timeout=2` here) with one line, exit 2. (A run measures
/// all the same, its result in the spool: tests/push.rs.)
#[test]
fn a_host_that_accepts_but_never_answers_is_refused_within_the_connect_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            // Accepts and holds every connection, answering nothing.
            let mut held = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match listener.accept() {
                    Ok((c, _)) => held.push(c),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let url = format!("postgres://rtg:Hidden-1@127.0.0.1:{port}/x?connect_timeout=2");
        let result = std::panic::catch_unwind(|| {
            // (a run measures all the same, its result in the spool: tests/push.rs)
            for args in [vec!["list", "--db", &url], vec!["show", "last", "--db", &url]] {
                let mut child =
                    rtgauge(&args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
                let t = Instant::now();
                while child.try_wait().unwrap().is_none() && t.elapsed() < Duration::from_secs(30) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                if child.try_wait().unwrap().is_none() {
                    child.kill().unwrap();
                    child.wait().unwrap();
                    panic!("{args:?}: still waiting after {:?}", t.elapsed());
                }
                let out = child.wait_with_output().unwrap();
                let err = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
                assert!(err.trim_end().lines().count() == 1 && !err.contains("Hidden-1"), "{err}");
                assert!(out.stdout.is_empty() && t.elapsed() < Duration::from_secs(20), "{args:?}: {:?}", t.elapsed());
            }
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        });
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Err(e) = result {
            std::panic::resume_unwind(e);
        }
    });
}

/// A wrong password, and a user the server does not know, are refused by every command in one
/// line, exit 2, before measuring; the password given is shown nowhere.
#[test]
fn a_wrong_password_or_an_unknown_user_is_one_line_exit_2_and_shown_nowhere() {
    let Some(c) = cluster() else { return };
    let db = c.database("cli_creds", true);
    let dir = tempfile::tempdir().unwrap();
    let wrong = "Wr0ng-Pa55word-4242";
    every_command_refused(dir.path(), &c.url_as(pg::ROLE, Some(wrong), &db, ""), "refused the password of user rtg", wrong);
    every_command_refused(dir.path(), &c.url_as("nosuchuser", Some(wrong), &db, ""), "nosuchuser", wrong);
    assert!(tables(c, &db).is_empty(), "nothing made");
    // The right one through PGPASSWORD (no password in the URL).
    let bare = c.url_as(pg::ROLE, None, &db, "");
    let out = rtgauge(&["import", &fixture("oslat.json"), "--db", &bare]).env("PGPASSWORD", pg::ROLE_PASSWORD).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A database the role may connect to but not create tables in (PostgreSQL 15: the public
/// schema is its owner's): the writers are refused before measuring, in one line naming the
/// right that is missing, and nothing is made; a reader finds no store.
#[test]
fn a_role_that_may_only_connect_is_refused_before_measuring_and_nothing_is_made() {
    let Some(c) = cluster() else { return };
    let db = c.database("connectonly", false);
    let url = c.url(&db);
    let dir = tempfile::tempdir().unwrap();
    for args in [vec!["import", &fixture("oslat.json")[..], "--db", &url], vec!["run", "--db", &url]] {
        refused(dir.path(), &args, None, "user rtg may not create the store's tables", "");
    }
    refused(dir.path(), &["run"], Some(&url), "may not create the store's tables", "");
    assert!(tables(c, &db).is_empty(), "the migration's transaction left nothing");
    let (_, out, err) = cli(&["list", "--db", &url]);
    no_password("list", &[&out, &err]);
    assert!(tables(c, &db).is_empty());
}

/// A store the role may read but not write: every reading command serves it; every writing one
/// (run before measuring, import, delete) is refused in one line, and the store is untouched.
#[test]
fn a_role_that_may_read_but_not_write_serves_readers_and_is_refused_to_writers() {
    let Some(c) = cluster() else { return };
    let name = c.database("readonlycli", false);
    let admin = c.url_as("postgres", Some(pg::SUPER_PASSWORD), &name, "");
    ok(&["import", "--db", &admin, "--label", "x", &fixture("cyclictest-h100.json")]);
    ok(&["import", "--db", &admin, "--label", "y", &fixture("cyclictest-hist.txt")]);
    c.superuser(&name).batch_execute(&format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}", pg::ROLE)).unwrap();
    let b = Backend { dir: tempfile::tempdir().unwrap(), db: c.url(&name), pg: Some((c, name)) };
    let before = b.snapshot();
    let db = b.db();
    for args in READING {
        assert!(!ok(&[args, &["--db", db]].concat()).is_empty(), "{args:?}");
    }
    refused(b.dir(), &["run", "--db", db], None, "user rtg may not write the store's tables", "");
    for args in [vec!["import", "--db", db, &fixture("oslat.json")], vec!["delete", "x", "--db", db]] {
        let (code, out, err) = cli(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.trim_end().lines().count() == 1 && (err.contains("permission denied") || err.contains("may not")),
            "{args:?}: {err}"
        );
        assert!(out.is_empty(), "{args:?}: {out}");
        no_password("a read-only role", &[&out, &err]);
    }
    assert!(b.snapshot() == before, "untouched");
}

/// Waits (at most 30 s) until a session of rtgauge's in database `db` waits for a lock, and ends
/// it (as an administrator, a restart or a failover would); returns its pid.
fn end_the_writer_waiting_for_a_lock(c: &pg::Cluster, db: &str) -> i32 {
    let mut admin = c.superuser("postgres");
    let t = Instant::now();
    loop {
        let row = admin
            .query_opt(
                "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'rtgauge' \
                 AND wait_event_type = 'Lock' LIMIT 1",
                &[&db],
            )
            .unwrap();
        if let Some(row) = row {
            let pid: i32 = row.get(0);
            let ended: bool = admin.query_one("SELECT pg_terminate_backend($1)", &[&pid]).unwrap().get(0);
            assert!(ended);
            // Gone before the next one is looked for.
            while admin.query_opt("SELECT 1 FROM pg_stat_activity WHERE pid = $1", &[&pid]).unwrap().is_some() {
                assert!(t.elapsed() < Duration::from_secs(30), "session {pid} not ended");
                std::thread::sleep(Duration::from_millis(10));
            }
            return pid;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "no writer of rtgauge's waits for the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server drops the connection while a run is being written (its writer ended while it
/// waits, inside its transaction, for a lock an administrator holds on `runs`): once, rtgauge
/// connects again and stores the run, once; twice, it gives up: exit 2, one line, and nothing
/// half-written (no row, no timeline, no kernel configuration); a measured run goes to a rescue
/// file that `import` stores.
#[test]
fn a_connection_dropped_mid_write_stores_the_run_once_or_leaves_nothing_half_written() {
    let Some(c) = cluster() else { return };
    let name = c.database("dropped", true);
    let b = Backend { dir: tempfile::tempdir().unwrap(), db: c.url(&name), pg: Some((c, name.clone())) };
    let db = b.db();
    ok(&["import", "--db", db, "--label", "before", &fixture("oslat.json")]);
    let empty = || {
        assert_eq!(b.count("SELECT count(*) FROM runs"), 1, "only the run stored before");
        assert_eq!(b.count("SELECT count(*) FROM timelines WHERE run <> 1"), 0, "no timeline half-written");
    };
    // `ends`: how many of rtgauge's sessions are ended while they wait for the lock.
    // A run checks before measuring that it may write (a trial row in `runs`): the lock is taken
    // once it measures; an import's only write is the run's.
    let write = |args: &[&str], ends: usize, env: &[(&str, &Path)]| -> std::process::Output {
        let mut cmd = rtgauge(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut lock = c.superuser(&name);
        let measures = args[0] == "run";
        let mut child = None;
        if measures {
            child = Some(cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap());
            wait_until_measuring(child.as_ref().unwrap().id());
        }
        let mut tx = lock.transaction().unwrap();
        tx.batch_execute("LOCK TABLE runs IN EXCLUSIVE MODE").unwrap();
        let child = match child {
            Some(c) => c,
            None => cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap(),
        };
        let mut pids = Vec::new();
        for _ in 0..ends {
            pids.push(end_the_writer_waiting_for_a_lock(c, &name));
        }
        tx.rollback().unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(pids.iter().collect::<std::collections::BTreeSet<_>>().len(), ends, "{pids:?}");
        no_password("dropped", &[&String::from_utf8_lossy(&out.stdout), &String::from_utf8_lossy(&out.stderr)]);
        out
    };
    let big = distinct_file(b.dir(), 1);
    // Ended once: made again, stored once.
    let out = write(&["import", &big, "--db", db, "--label", "again"], 1, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(list(db, &["--label", "again"]).len(), 1);
    ok(&["delete", "again", "--db", db]);
    empty();
    // Ended twice: given up, nothing half-written.
    let out = write(&["import", &big, "--db", db, "--label", "lost"], 2, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.trim_end().lines().count() == 1 && err.contains(&format!("127.0.0.1:{}", c.port)), "{err}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    empty();
    // A measured run: nothing lost — it waits in the spool beside the local store (its own exit
    // status, a warning), and `push` delivers it, once.
    let local = b.dir().join("local.db");
    let json = b.dir().join("run.json");
    let run = ["run", "-q", "-D", "2s", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", db];
    let out =
        write(&[&run[..], &["--label", "spooled", "--json", json.to_str().unwrap()]].concat(), 2, &[("RTGAUGE_DB", &local)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    assert!(err.contains("the run was measured but not stored") && err.contains("waits in the spool"), "{err}");
    empty();
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let push = rtgauge(&["push", "--to", db]).env("RTGAUGE_DB", &local).output().unwrap();
    let said = String::from_utf8_lossy(&push.stdout);
    assert!(push.status.success() && said.contains("Delivered from the spool: 1 run (now run "), "{said}");
    let shown: Value = serde_json::from_str(&ok(&["show", "spooled", "--json", "--db", db])).unwrap();
    assert_eq!(shown, doc, "the whole document");
}

// ---------------------------------------------------------------------------------------------
// SQLite alone: files, permissions, a lock held past the busy timeout, older layouts.
// ---------------------------------------------------------------------------------------------

/// A file that is not an rtgauge store is refused before measuring and never written.
#[test]
fn a_corrupt_or_foreign_store_is_refused_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, b"these are someone's notes, not a database\n").unwrap();
    // A SQLite header over garbage: the page size and everything after it make no sense.
    let corrupt = dir.path().join("corrupt.db");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend((0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    std::fs::write(&corrupt, &bytes).unwrap();
    // Another program's SQLite database: made by a run's store, then marked as someone else's.
    let foreign = dir.path().join("foreign.db");
    let foreign_s = foreign.to_string_lossy().into_owned();
    assert!(rtgauge(&["run", "-q", "--loops", "10", "--warmup", "0", "--load", "none", "--db", &foreign_s])
        .output()
        .unwrap()
        .status
        .success());
    let mut f = std::fs::read(&foreign).unwrap();
    f[68..72].copy_from_slice(&0x1234_5678u32.to_be_bytes()); // the header's application_id
    std::fs::write(&foreign, &f).unwrap();
    let _ = std::fs::remove_file(dir.path().join("foreign.db-wal"));
    let _ = std::fs::remove_file(dir.path().join("foreign.db-shm"));
    for (path, says) in [(&garbage, "not a SQLite database"), (&corrupt, "corrupt"), (&foreign, "another program")] {
        let before = std::fs::read(path).unwrap();
        let p = path.to_string_lossy();
        let t = std::time::Instant::now();
        let out = rtgauge(&["run", "-D", REFUSED_RUN_ASKS, "--load", "none", "--db", &p]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{p}: {err}");
        assert!(err.contains(says) && err.contains("--db PATH") && err.trim_end().lines().count() == 1, "{p}: {err}");
        assert!(t.elapsed() < BEFORE_MEASURING, "refused before measuring");
        assert!(out.stdout.is_empty(), "nothing measured");
        assert_eq!(std::fs::read(path).unwrap(), before, "{p} left byte for byte as it was");
        let out = rtgauge(&["list", "--db", &p]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "list refuses it too");
        assert_eq!(std::fs::read(path).unwrap(), before, "{p} left as it was by list");
    }
}

/// A store that cannot be written at the end of a run (another process holds its write lock past
/// the store's 10 s wait) lost the run with a warning and exit 0, though `--db` asked for it: the
/// result goes to a rescue file (the document `--json` writes, mode 0600) that stderr names,
/// the exit status is 2, nothing half-written is left in the store, and `rtgauge import` of the
/// rescue file stores the run later.
#[test]
fn a_store_locked_at_the_end_rescues_the_run_to_a_file_that_import_stores() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let run = rtgauge(&["run", "-q", "--json", "-", "-D", "1s", "--warmup", "0", "--load", "none", "--db", &db])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The store was checked (a write lock tried) before measuring: lock it now.
    wait_until_measuring(run.id());
    let lock = rusqlite::Connection::open(&db).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let out = run.wait_with_output().unwrap();
    lock.execute_batch("ROLLBACK").unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "asked for by --db, not stored: {err}");
    assert!(err.contains("measured but not stored") && err.contains("locked"), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the JSON document came out");
    assert!(doc["probes"].as_array().unwrap().iter().all(|p| u(&p["samples"]) + u(&p["missed"]) == 1000), "{doc}");
    assert!(list(&db, &[]).is_empty(), "nothing stored");
    // (named as a shell word: quoted only where it must be)
    let rescued = err
        .split("saved to ")
        .nth(1)
        .and_then(|t| t.split(" instead").next())
        .map(|t| t.trim_matches('\''))
        .unwrap_or_else(|| panic!("named: {err}"));
    let meta = std::fs::symlink_metadata(rescued).unwrap();
    assert!(meta.is_file() && meta.permissions().mode() & 0o777 == 0o600, "{rescued}: {:o}", meta.permissions().mode());
    let saved: Value = serde_json::from_slice(&std::fs::read(rescued).unwrap()).unwrap();
    assert_eq!(saved, doc, "the rescue file holds the whole document, as --json wrote it");
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(!names.iter().any(|n| n.starts_with(".rtgauge-store-")), "{names:?}");
    let imported = rtgauge(&["import", rescued, "--db", &db]).output().unwrap();
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    let rows = list(&db, &[]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let out = rtgauge(&["show", "last", "--json", "--db", &db]).output().unwrap();
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&shown["started_at"], &shown["probes"]), (&doc["started_at"], &doc["probes"]), "the run as measured");
}

/// Documents are stored compressed (layout 2); a store of layout 1, whose documents are JSON
/// text, is brought forward on opening and its runs still read whole beside new ones. Layout 4
/// gives every run a UUID: its document's own, else one made from the document (two runs with
/// the same document get two), and the board its host.
#[test]
fn a_layout_1_store_with_text_documents_is_migrated_and_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let (_, old_doc, _) = run_json(&["--loops", "100", "--warmup", "0", "--load", "none", "--no-store"]);
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, label TEXT, host TEXT NOT NULL,
             kernel TEXT NOT NULL, preemption TEXT NOT NULL, scenario TEXT, probes TEXT NOT NULL, worst_ns INTEGER,
             verdict TEXT NOT NULL, status TEXT NOT NULL, imported_from TEXT, document TEXT NOT NULL);
             CREATE INDEX runs_label ON runs (label); CREATE INDEX runs_started ON runs (started_at);
             PRAGMA application_id = 1920231265; PRAGMA user_version = 1;",
        )
        .unwrap();
        c.execute(
            "INSERT INTO runs (started_at, label, host, kernel, preemption, probes, verdict, status, document)
             VALUES (?1, 'old', 'h', 'k', 'p', 'timer', 'none', 'complete', ?2)",
            rusqlite::params![old_doc["started_at"].as_str().unwrap(), old_doc.to_string()],
        )
        .unwrap();
        // A document of before UUIDs, twice.
        let mut older = old_doc.clone();
        older.as_object_mut().unwrap().remove("uuid");
        older.as_object_mut().unwrap().remove("board");
        for label in ["older", "older-again"] {
            c.execute(
                "INSERT INTO runs (started_at, label, host, kernel, preemption, probes, verdict, status, document)
                 VALUES (?1, ?2, 'h', 'k', 'p', 'timer', 'none', 'complete', ?3)",
                rusqlite::params![old_doc["started_at"].as_str().unwrap(), label, older.to_string()],
            )
            .unwrap();
        }
    }
    let (code, new_doc, out) = run_json(&["--loops", "100", "--warmup", "0", "--load", "none", "--db", &db, "--label", "new"]);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    for (label, expected) in [("old", &old_doc), ("new", &new_doc)] {
        let out = rtgauge(&["show", label, "--json", "--db", &db]).output().unwrap();
        assert!(out.status.success(), "{label}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(&serde_json::from_slice::<Value>(&out.stdout).unwrap(), expected, "{label} read whole");
    }
    let c = rusqlite::Connection::open(&db).unwrap();
    let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 7);
    let uuids: Vec<(String, String)> = c
        .prepare("SELECT uuid, board FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(uuids.len(), 4);
    assert_eq!(uuids[0].0, old_doc["uuid"].as_str().unwrap(), "the document's own");
    assert_eq!((&uuids[1].1[..], &uuids[3].1[..]), ("h", new_doc["board"]["name"].as_str().unwrap()), "the host for runs before");
    let distinct: std::collections::BTreeSet<&String> = uuids.iter().map(|(u, _)| u).collect();
    assert_eq!(distinct.len(), 4, "every row its own: {uuids:?}");
    for (label, (uuid, _)) in [("older", &uuids[1]), ("older-again", &uuids[2])] {
        let shown: Value = serde_json::from_str(&ok(&["show", label, "--json", "--db", &db])).unwrap();
        assert_eq!(shown["uuid"], uuid.as_str(), "{label}: the store's UUID in the document");
        let by_uuid: Value = serde_json::from_str(&ok(&["show", &uuid[..8], "--json", "--db", &db])).unwrap();
        assert_eq!(by_uuid, shown);
    }
    // Layout 3: the new run's timelines in a table of their own (one blob per CPU), the old
    // run's still inside its document.
    let blobs = |id: i64| -> i64 { c.query_row("SELECT count(*) FROM timelines WHERE run = ?1", [id], |r| r.get(0)).unwrap() };
    assert_eq!(blobs(1), 0);
    assert_eq!(blobs(4), new_doc["probes"].as_array().unwrap().len() as i64);
    let kinds: Vec<String> = c
        .prepare("SELECT typeof(document) FROM documents ORDER BY run")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kinds, ["text", "text", "text", "blob"], "the old documents kept as they were, the new one compressed");
}

/// A store another user may read but not write (0644 in a directory of theirs; 0444 in a 0555
/// directory) serves every command that reads it, and is left as it was; a store that cannot
/// be read says why (never "no runs stored").
#[test]
fn a_store_readable_but_not_writable_serves_every_reading_command() {
    if !nobody_can_run() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    for (f, label) in [("cyclictest-h100.json", "x"), ("cyclictest-hist.txt", "y")] {
        ok(&["import", "--db", &db, "--label", label, &fixture(f)]);
    }
    let mode = |p: &std::path::Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    let before = std::fs::read(&db).unwrap();
    for (file_mode, dir_mode) in [(0o644, 0o755), (0o444, 0o555)] {
        mode(std::path::Path::new(&db), file_mode);
        mode(dir.path(), dir_mode);
        for args in READING {
            let out = nobody(&[args, &["--db", &db]].concat()).output().unwrap();
            assert!(out.status.success(), "{args:?} on a {file_mode:o} store: {}", String::from_utf8_lossy(&out.stderr));
            assert!(!out.stdout.is_empty(), "{args:?}");
        }
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["runs.db"], "nothing made beside it");
    }
    mode(dir.path(), 0o755);
    assert_eq!(std::fs::read(&db).unwrap(), before, "left as it was");
    // Unreadable: the file, or the directory holding the default store.
    mode(std::path::Path::new(&db), 0o600);
    let out = nobody(&["list", "--db", &db]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot read the store"), "{err}");
    mode(std::path::Path::new(&db), 0o644);
    mode(dir.path(), 0o700);
    for out in [nobody(&["list"]).env("RTGAUGE_DB", &db).output().unwrap(), nobody(&["show", "x", "--db", &db]).output().unwrap()]
    {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("cannot read the store") && err.contains("ermission denied"), "{err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("no runs stored"));
    }
}

/// A store damaged past its first page was found only when the run was saved, at its end: every
/// page is read before measuring, and the store refused (exit 2, one line) and left as it was.
#[test]
fn a_store_corrupt_past_its_first_page_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let out = rtgauge(&["run", "-q", "--loops", "10", "--warmup", "0", "--load", "none", "--db", &db]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for companion in ["runs.db-wal", "runs.db-shm"] {
        let _ = std::fs::remove_file(dir.path().join(companion));
    }
    let mut bytes = std::fs::read(&db).unwrap();
    let page = match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65536,
        n => n as usize,
    };
    assert!(bytes.len() > page, "a store of more than one page");
    for (i, b) in bytes[page..].iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(2_654_435_761).rotate_right(13) as u8;
    }
    std::fs::write(&db, &bytes).unwrap();
    let t = std::time::Instant::now();
    let out = rtgauge(&["run", "-D", REFUSED_RUN_ASKS, "--load", "none", "--db", &db]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("corrupt") && err.contains("--db PATH") && err.trim_end().lines().count() == 1, "{err}");
    assert!(t.elapsed() < BEFORE_MEASURING, "refused before measuring");
    assert!(out.stdout.is_empty(), "nothing measured");
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "left byte for byte as it was");
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL alone: a server gone, credentials, rights, TLS, a lost connection.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_run_the_server_did_not_take_nor_the_spool_is_rescued_to_a_file_that_import_stores_later() {
    let Some(own) = pg::own() else { return };
    let db = own.database("cli_rescue", true);
    let url = own.url(&db);
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    std::fs::create_dir_all(data.join("rtgauge")).unwrap();
    // No spool can be made where it goes (a file is in the way): the rescue file is the last resort.
    std::fs::write(home.path().join("spool"), "in the way").unwrap();
    let child = rtgauge(&["run", "-D", "3s", "--load", "none", "--db", &url, "--label", "rescued"])
        .env("XDG_DATA_HOME", &data)
        .env("RTGAUGE_DB", home.path().join("runs.db"))
        .current_dir(home.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_measuring(child.id());
    own.stop();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // As for a SQLite store named with --db: the run did not do what was asked.
    assert_eq!(out.status.code(), Some(2), "{err}");
    no_password("rescue", &[&err, &String::from_utf8_lossy(&out.stdout)]);
    assert!(err.contains("the run was measured but not stored") && err.contains("nor kept in the spool"), "{err}");
    assert!(err.contains("rtgauge import"), "{err}");
    let rescued: Vec<_> = std::fs::read_dir(data.join("rtgauge")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(rescued.len(), 1, "the rescue file beside the local store: {rescued:?} ({err})");
    let file = rescued[0].display().to_string();
    assert!(err.contains(&file), "{err}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&rescued[0]).unwrap()).unwrap();
    no_password("the rescued document", &[&doc.to_string()]);
    own.start_again();
    let (code, out, err) = cli(&["import", &file, "--db", &url, "--label", "rescued"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("as run 1"), "{out}");
    let (code, out, err) = cli(&["show", "rescued", "--json", "--db", &url]);
    assert_eq!(code, 0, "{err}");
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((&shown["started_at"], &shown["uuid"]), (&doc["started_at"], &doc["uuid"]), "the run's own identity");
    let (code, out, err) = cli(&["import", &file, "--db", &url]);
    assert!(code == 0 && out.contains("already stored as run 1"), "imported again, stored once: {out}{err}");
}

#[test]
fn wrong_credentials_a_missing_database_and_a_silent_host_are_one_line_errors_without_the_password() {
    let Some(c) = cluster() else { return };
    let db = c.database("creds", true);
    let wrong = "Wrong-Pa55-xyz";
    let e = err(pg_open(&c.url_as(pg::ROLE, Some(wrong), &db, "")));
    assert!(matches!(e, OpenError::Unreachable(_)), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("refused the password of user rtg") && e.contains("PGPASSWORD"), "{e}");
    assert!(!e.contains(wrong) && !e.contains('\n'), "{e}");
    assert!(e.contains(&format!("127.0.0.1:{}", c.port)), "{e}");
    let e = err(pg_open(&c.url("no_such_db"))).to_string();
    assert!(e.contains("there is no database no_such_db") && e.contains("createdb"), "{e}");
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://rtg:{}@127.0.0.1:{port}/x", pg::encode(pg::ROLE_PASSWORD));
    let e = err(pg_open(&url)).to_string();
    assert!(e.starts_with(&format!("nothing answers at 127.0.0.1:{port} (connection refused)")), "{e}");
    // A URL that does not parse: the password is not shown either.
    let e = err(pg_open("postgres://rtg:Hidden-123@127.0.0.1:99999/x")).to_string();
    assert!(e.starts_with("the database URL postgres://rtg@127.0.0.1:99999/x does not parse") && !e.contains("Hidden"), "{e}");
}

#[test]
fn the_password_comes_from_pgpassword_or_a_private_pgpass() {
    let Some(c) = cluster() else { return };
    let _env = ENV.lock().unwrap_or_else(|p| p.into_inner());
    let db = c.database("pgpass", true);
    let url = c.url_as(pg::ROLE, None, &db, "");
    let home = tempfile::tempdir().unwrap();
    let old_home = std::env::var_os("HOME");
    std::env::set_var("HOME", home.path());
    std::env::remove_var("PGPASSFILE");
    std::env::remove_var("PGPASSWORD");
    let e = err(pg_open(&url)).to_string();
    assert!(e.contains("asks user rtg for a password and none was given") && e.contains(".pgpass"), "{e}");
    std::env::set_var("PGPASSWORD", pg::ROLE_PASSWORD);
    drop(open(&url));
    std::env::remove_var("PGPASSWORD");
    let pgpass = home.path().join(".pgpass");
    let escaped = pg::ROLE_PASSWORD.replace('\\', "\\\\").replace(':', "\\:");
    std::fs::write(&pgpass, format!("# lab\nother:*:*:*:nope\n127.0.0.1:{}:{db}:rtg:{escaped}\n", c.port)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = err(pg_open(&url)).to_string();
    assert!(e.contains("others may read it (mode 0644); chmod 600 it"), "libpq ignores such a file too: {e}");
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    drop(open(&url));
    std::env::set_var("PGPASSFILE", home.path().join("elsewhere"));
    assert!(err(pg_open(&url)).to_string().contains("none was given"), "PGPASSFILE names the file");
    std::env::remove_var("PGPASSFILE");
    if let Some(h) = old_home {
        std::env::set_var("HOME", h);
    }
}

#[test]
fn no_right_to_create_tables_or_to_write_is_refused_before_measuring() {
    let Some(c) = cluster() else { return };
    // Owned by the superuser: the role may connect, but (PostgreSQL 15) not create in public.
    let db = c.database("nocreate", false);
    let e = err(pg_open(&c.url(&db)));
    assert!(matches!(e, OpenError::Refused(_)), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("user rtg may not create the store's tables") && e.contains("grant"), "{e}");
    assert!(tables(c, &db).is_empty(), "the migration's transaction left nothing");
    // A store the role may read but not write.
    let db = c.database("readonly", false);
    let admin_url = c.url_as("postgres", Some(pg::SUPER_PASSWORD), &db, "");
    drop(open(&admin_url));
    c.superuser(&db).batch_execute(&format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}", pg::ROLE)).unwrap();
    let store = open(&c.url(&db));
    let e = store.check_room(1 << 20).unwrap_err().to_string();
    assert!(e.contains("user rtg may not write the store's tables"), "{e}");
    assert!(store.list(&Filter::default()).unwrap().is_empty());
}

#[test]
fn tls_require_encrypts_and_verify_full_checks_the_certificate() {
    let Some(c) = cluster() else { return };
    if !c.tls() {
        eprintln!("NOTE: TLS not tested: openssl made no certificate");
        return;
    }
    let db = c.database("tls", true);
    let encrypted = |url: &str| -> Option<bool> {
        let _store = open(url);
        // The server's view of the connections to the database (the store's, open): encrypted.
        c.superuser("postgres")
            .query_one(
                "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.datname = $1",
                &[&db],
            )
            .unwrap()
            .get(0)
    };
    assert_eq!(encrypted(&c.url_as(pg::ROLE, Some(pg::ROLE_PASSWORD), &db, "sslmode=require")), Some(true));
    assert_eq!(encrypted(&c.url_as(pg::ROLE, Some(pg::ROLE_PASSWORD), &db, "sslmode=disable")), Some(false));
    let local = |query: &str| format!("postgres://rtg:{}@localhost:{}/{db}?{query}", pg::encode(pg::ROLE_PASSWORD), c.port);
    let cert = pg::encode(&c.certificate().display().to_string());
    drop(open(&local(&format!("sslmode=verify-full&sslrootcert={cert}"))));
    // The system's roots do not know the self-signed certificate.
    let e = err(pg_open(&local("sslmode=verify-full"))).to_string();
    assert!(e.contains("is not trusted") && e.contains("sslrootcert"), "{e}");
    // verify-full checks the name: 127.0.0.1 is not the certificate's; verify-ca does not.
    let by_ip = |query: &str| c.url_as(pg::ROLE, Some(pg::ROLE_PASSWORD), &db, query);
    let e = err(pg_open(&by_ip(&format!("sslmode=verify-full&sslrootcert={cert}")))).to_string();
    assert!(e.contains("is not trusted"), "{e}");
    drop(open(&by_ip(&format!("sslmode=verify-ca&sslrootcert={cert}"))));
}

#[test]
fn a_connection_lost_while_measuring_is_made_again_to_store_the_run() {
    let Some(c) = cluster() else { return };
    let db = c.database("lost", true);
    let store = open(&c.url(&db));
    store.check_room(1 << 20).unwrap();
    // The server ends the session (an administrator, a restart, an idle timeout) while the run
    // measures.
    let ended: bool = c
        .superuser("postgres")
        .query_one("SELECT bool_and(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1", &[&db])
        .unwrap()
        .get(0);
    assert!(ended);
    let mut r = result();
    let saved = save(&store, &mut r, &uuid(5), "b", None);
    assert!(!saved.already);
    assert_eq!(store.list(&Filter::default()).unwrap().len(), 1);
}

#[test]
fn a_server_gone_at_the_end_is_a_one_line_error_and_nothing_half_written() {
    let Some(own) = pg::own() else { return };
    let db = own.database("gone", true);
    let store = open(&own.url(&db));
    own.stop();
    let mut r = result();
    r.uuid = Some(uuid(9).parse().unwrap());
    let e = store.save(&mut r, None, None, None).unwrap_err();
    assert!(!e.contains('\n') && !e.contains(pg::ROLE_PASSWORD), "{e}");
    assert!(e.contains(&format!("127.0.0.1:{}", own.port)) && (e.contains("nothing answers") || e.contains("lost")), "{e}");
}

/// The board in `show` and `compare` (issue 23, item 3): `show` names it; `compare` of two runs
/// of the same board on two kernel configurations lists the options that differ (terminal,
/// `--json`, `--html`), from the options the store keeps once per configuration; a run whose
/// configuration the store does not keep (imported from its file) says so; two boards are a
/// comparison across boards. A kernel cannot be rebuilt here, so the two configurations are put
/// in the store as `run` puts one: the store's own `save` with the configuration's options.
#[test]
fn show_and_compare_name_the_board_and_list_the_kernel_options_that_differ() {
    use rtgauge::result::board::{KernelConfigId, KernelOptions};
    use std::collections::BTreeMap;
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let run = ["--loops", "20", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", &db];
    let (code, doc, out) = run_json(&[&run[..], &["--board", "rpi4-lab-3"]].concat());
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    let shown = ok(&["show", "1", "--db", &db]);
    assert!(shown.lines().any(|l| l == "board rpi4-lab-3" || l.starts_with("board rpi4-lab-3: ")), "{shown}");
    assert!(shown.lines().all(|l| !l.starts_with("board ") || l.chars().count() <= 80), "{shown}");

    let options = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let before = options(&[("PREEMPT_RT", "y"), ("HZ", "250"), ("NO_HZ_FULL", "y"), ("DEBUG_PREEMPT", "y")]);
    let now = options(&[("PREEMPT_RT", "y"), ("HZ", "1000"), ("NO_HZ_FULL", "y"), ("RCU_NOCB_CPU", "y")]);
    let store = rtgauge::store::Store::open(&rtgauge::store::Location::File(db.clone().into())).unwrap();
    let on = |sha256: &str| {
        let mut r: rtgauge::result::RunResult = serde_json::from_value(doc.clone()).unwrap();
        r.uuid = None; // a run of its own
        let board = r.board.as_mut().unwrap();
        board.kernel_config = Some(KernelConfigId { source: "/proc/config.gz".into(), sha256: sha256.to_string() });
        board.config_changes = None;
        r
    };
    for (sha256, options) in [("a".repeat(64), before.clone()), ("b".repeat(64), now)] {
        let kept = KernelOptions { sha256: sha256.clone(), options };
        store.save(&mut on(&sha256), None, None, Some(kept.clone())).unwrap();
        assert_eq!(store.kernel_config_of(&on(&sha256)).unwrap(), Some(kept), "kept once, given back whole");
    }
    assert_eq!(store.kernel_config_of(&on(&"c".repeat(64))).unwrap(), None);
    drop(store);

    let text = ok(&["compare", "2", "3", "--db", &db]);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| *l == "Run 3: same board (rpi4-lab-3), another kernel configuration:").expect(&text);
    assert_eq!(
        &lines[at + 1..at + 5],
        [
            "  3 options differ from the baseline's:",
            "    changed CONFIG_HZ: 250 -> 1000",
            "    added   CONFIG_RCU_NOCB_CPU=y",
            "    removed CONFIG_DEBUG_PREEMPT=y"
        ],
        "{text}"
    );
    assert!(text.contains("  run 2: rpi4-lab-3") && text.contains("kernel config aaaaaaaaaaaa"), "{text}");
    let json: Value = serde_json::from_str(&ok(&["compare", "2", "3", "--json", "--db", &db])).unwrap();
    let rel = &json["boards"][0];
    assert_eq!(
        (rel["run"].as_u64(), rel["same_board"].as_str(), rel["same_config"].as_bool()),
        (Some(3), Some("name"), Some(false))
    );
    assert_eq!(rel["changes"]["changed"], serde_json::json!(["CONFIG_HZ: 250 -> 1000"]));
    assert_eq!(rel["changes"]["since_run"], 2);
    assert_eq!(json["runs"][1]["board"]["kernel_config"]["sha256"], "b".repeat(64));
    let page = dir.path().join("compare.html");
    ok(&["compare", "2", "3", "--db", &db, "--html", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    for s in ["<h2>Boards</h2>", "<h4>Changed (1)</h4>", "<code>CONFIG_HZ: 250 -&gt; 1000</code>", "CONFIG_RCU_NOCB_CPU=y"] {
        assert!(html.contains(s), "{s}");
    }

    // The same run's document imported on another configuration: its SHA-256 alone is kept.
    let mut imported = doc.clone();
    imported["uuid"] = Value::Null;
    imported["board"]["kernel_config"] = serde_json::json!({"source": "/proc/config.gz", "sha256": "c".repeat(64)});
    let file = dir.path().join("elsewhere.json");
    std::fs::write(&file, serde_json::to_vec(&imported).unwrap()).unwrap();
    ok(&["import", "--db", &db, file.to_str().unwrap()]);
    let text = ok(&["compare", "2", "4", "--db", &db]);
    assert!(text.contains("Run 4: same board (rpi4-lab-3), another kernel configuration;"), "{text}");
    assert!(text.contains("the store does not keep the options of run 4's configuration"), "{text}");

    // Another board: the comparison is across boards.
    run_json(&[&run[..], &["--board", "x86-box"]].concat());
    let text = ok(&["compare", "1", "5", "--db", &db]);
    assert!(text.contains("Run 5 is on x86-box, the baseline on rpi4-lab-3:\n  the comparison is across boards."), "{text}");
    let boards = text.lines().skip_while(|l| *l != "Boards:").take_while(|l| !l.is_empty());
    assert!(boards.clone().count() == 5 && boards.into_iter().all(|l| l.chars().count() <= 80), "{text}");
}

/// The table shows the newest 100 runs that match and says how many older ones it leaves out;
/// `--limit N` shows the newest N, `--all` every one; `--json` gives every one unless `--limit`
/// says (a lab's store holds 100 000 runs).
fn list_shows_the_newest_runs_unless_told_and_says_how_many_more_match(b: Backend) {
    let db = b.db();
    // 103 files, each its own run (a different file: a different identity).
    let files: Vec<String> = (0..103).map(|n| distinct_file(b.dir.path(), n)).collect();
    let mut import = vec!["import", "--db", db, "--board", "rpi4-lab-3"];
    import.extend(files.iter().map(String::as_str));
    ok(&import);
    let ids = |table: &str| -> Vec<u64> {
        table.lines().filter(|l| !l.contains("not shown")).filter_map(|l| l.split_whitespace().next()?.parse().ok()).collect()
    };
    let table = ok(&["list", "--db", db]);
    assert_eq!(ids(&table), (4..=103).collect::<Vec<u64>>(), "the newest 100, oldest first");
    assert!(
        table.ends_with(
            "3 older runs not shown (the table holds the newest 100); --limit N shows the newest N, --all every one.\n"
        ),
        "{table}"
    );
    let table = ok(&["list", "--db", db, "--limit", "2", "--board", "rpi4-lab-3"]);
    assert_eq!(ids(&table), [102, 103]);
    assert!(table.contains("101 older runs not shown (the table holds the newest 2)"), "{table}");
    assert_eq!(ids(&ok(&["list", "--db", db, "--all"])), (1..=103).collect::<Vec<u64>>());
    let table = ok(&["list", "--db", db, "--limit", "103"]);
    assert_eq!(ids(&table).len(), 103);
    assert!(!table.contains("not shown"), "none left out: nothing said");
    assert_eq!(list(db, &[]).len(), 103, "--json: every one");
    assert_eq!(list(db, &["--limit", "3"]).iter().map(|r| u(&r["id"])).collect::<Vec<_>>(), [101, 102, 103]);
    for bad in [&["--limit", "0"][..], &["--limit", "5", "--all"]] {
        let (code, _, err) = cli(&[&["list", "--db", db][..], bad].concat());
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
}
both!(list_shows_the_newest_runs_unless_told_and_says_how_many_more_match);

both!(a_following_reader_refuses_every_write);
/// The dashboard's connections (`Store::open_following`) refuse writes themselves: deleting a
/// run through one fails and the run is still there; reading goes on.
fn a_following_reader_refuses_every_write(b: Backend) {
    let b = b.another("following");
    let out = rtgauge(&["import", "--db", b.db(), &fixture("oslat.json")]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = list(b.db(), &[])[0]["id"].as_i64().unwrap();
    let s = Store::open_following(&b.location()).unwrap().expect("a store");
    assert!(s.delete(id).is_err(), "a following reader may not delete");
    assert!(s.has(id).unwrap() && s.load(id).is_ok(), "the run is still there, and reads");
}
