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

#[path = "../common/mod.rs"]
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
    assert!(matches!(e, rtgauge::store::StoreError::NotFound(_)), "{e:?}");
    let e = e.to_string();
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

mod figures;
mod listing;
mod refusals;
mod writers;
#[allow(unused_imports)]
use {figures::*, listing::*, refusals::*, writers::*};
