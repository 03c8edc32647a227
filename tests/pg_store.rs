//! The store's PostgreSQL backend, against a throw-away cluster of Debian's PostgreSQL
//! (tests/common/pg.rs, one per test binary). First the commands, the real binary with `--db
//! postgres://…` or `RTGAUGE_DB` (run, import, list and its filters, show, export, report,
//! compare, delete; another program's database and a wrong password refused in one line, exit
//! 2, no password in any output; a run the server did not take at its end rescued to a file);
//! then the library's store (`rtgauge::store::Store` on a PostgreSQL location): the marker and layout, a
//! database of another program or of a newer rtgauge refused untouched, the errors a user meets
//! (a host that does not answer, a wrong or missing password, no right to create tables or to
//! write), passwords from PGPASSWORD and ~/.pgpass and never in a message, runs stored whole and
//! once (UUIDs, many writers at once), filters, text as text, TLS, a lost connection. Nothing
//! here measures.

mod common;

use common::{pg, rtgauge, run_json, wait_until_measuring};
use rtgauge::result::RunResult;
use rtgauge::store::{Filter, Location, OpenError, Saved, Store};
use serde_json::Value;
use std::sync::Mutex;

/// Tests that set PGPASSWORD/PGPASSFILE/HOME hold this (the variables are the process's).
static ENV: Mutex<()> = Mutex::new(());

fn cluster() -> Option<&'static pg::Cluster> {
    pg::shared()
}

/// The binary with `args`, its output, the exit status and both streams as text.
fn cli(args: &[&str]) -> (i32, String, String) {
    let out = rtgauge(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts that no output holds the role's password, as written or percent-encoded.
fn no_password(what: &str, texts: &[&str]) {
    for t in texts {
        assert!(!t.contains(pg::ROLE_PASSWORD) && !t.contains(&pg::encode(pg::ROLE_PASSWORD)), "{what}: the password shown: {t}");
    }
}

fn fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(name).display().to_string()
}

fn listed(url: &str, extra: &[&str]) -> Vec<Value> {
    let (code, out, err) = cli(&[&["list", "--json", "--db", url][..], extra].concat());
    assert_eq!(code, 0, "list {extra:?}: {err}");
    no_password("list", &[&out, &err]);
    serde_json::from_str::<Value>(&out).unwrap().as_array().unwrap().clone()
}

#[test]
fn a_run_is_stored_at_its_end_then_listed_shown_exported_reported_compared_and_deleted() {
    let Some(c) = cluster() else { return };
    let db = c.database("cli_run", true);
    let url = c.url(&db);
    let run = ["--loops", "200", "--warmup", "0", "--load", "none", "--db", &url, "--board", "lab-a"];
    let (code, doc, out) = run_json(&[&run[..], &["--label", "pg-first"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Stored as run 1 in postgres://rtg@127.0.0.1:"), "{err}");
    no_password("run", &[&err, &doc.to_string()]);
    // The document names the database without its password.
    let line = doc["command_line"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect::<Vec<_>>().join(" ");
    assert!(line.contains(&format!("--db postgres://rtg@127.0.0.1:{}/{db}", c.port)), "{line}");
    // RTGAUGE_DB names it as --db does.
    let out = rtgauge(&["run", "--quiet", "--loops", "100", "--warmup", "0", "--load", "none"])
        .env("RTGAUGE_DB", &url)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Stored as run 2 in postgres://rtg@"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let rows = listed(&url, &[]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!((rows[0]["label"].as_str(), rows[0]["board"].as_str()), (Some("pg-first"), Some("lab-a")));
    assert_eq!(rows[0]["uuid"], doc["uuid"]);
    // The kernel's configuration, where the run read one, kept once for the board's two runs.
    if !doc["board"]["kernel_config"].is_null() {
        let n: i64 = c.superuser(&db).query_one("SELECT count(*) FROM kernel_configs", &[]).unwrap().get(0);
        assert_eq!(n, 1);
        // Its options, as `compare` reads them, by the SHA-256 the document names.
        let mut r: RunResult = serde_json::from_value(doc.clone()).unwrap();
        assert!(open(&url).kernel_config_of(&r).unwrap().is_some_and(|k| !k.options.is_empty()));
        r.board.as_mut().unwrap().kernel_config.as_mut().unwrap().sha256 = "0".repeat(64);
        assert_eq!(open(&url).kernel_config_of(&r).unwrap(), None);
    }
    // The whole document comes back, by id, label, UUID and its start.
    let uuid = doc["uuid"].as_str().unwrap();
    for which in ["1", "pg-first", uuid, &uuid[..8]] {
        let (code, out, err) = cli(&["show", which, "--json", "--db", &url]);
        assert_eq!(code, 0, "show {which}: {err}");
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), doc, "show {which}");
    }
    let (code, out, err) = cli(&["show", "last", "--db", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.is_empty());
    no_password("show", &[&out, &err]);
    let (code, out, err) = cli(&["export", "pg-first", "-f", "json", "--db", &url]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), doc, "export");
    let (code, out, err) = cli(&["export", "1", "-f", "csv", "--db", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().count() >= 2, "{out}");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    let (code, _, err) = cli(&["report", "1", "--db", &url, "--html", page.to_str().unwrap()]);
    assert_eq!(code, 0, "report: {err}");
    let (code, out, err) = cli(&["compare", "1", "2", "--db", &url]);
    assert_eq!(code, 0, "compare: {err}");
    // Run 1 on lab-a, run 2 on the host's board.
    assert!(out.contains("the comparison is across boards"), "{out}");
    no_password("compare", &[&out, &err]);
    let (code, _, err) = cli(&["delete", "2", "--db", &url]);
    assert_eq!(code, 0, "delete: {err}");
    assert_eq!(listed(&url, &[]).len(), 1);
    let timelines: i64 = c.superuser(&db).query_one("SELECT count(*) FROM timelines WHERE run = 2", &[]).unwrap().get(0);
    assert_eq!(timelines, 0, "its timelines went with it");
}

#[test]
fn a_file_imported_twice_is_stored_once_and_list_filters_by_board_since_and_label() {
    let Some(c) = cluster() else { return };
    let db = c.database("cli_import", true);
    let url = c.url(&db);
    // A database that holds no store is none: the commands that need one say so and make nothing.
    for args in [vec!["list", "--db", &url], vec!["delete", "1", "--db", &url]] {
        let (_, out, err) = cli(&args);
        assert!(out.is_empty() || args[0] == "list", "{args:?}: {out}");
        no_password("an empty database", &[&out, &err]);
    }
    assert!(tables(c, &db).is_empty(), "nothing made by list or delete");
    let file = fixture("cyclictest-h100.json");
    let (code, out, err) = cli(&["import", &file, "--db", &url, "--board", "imx8-01", "--label", "nightly"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("as run 1 in postgres://rtg@127.0.0.1:"), "{out}");
    let (code, out, err) = cli(&["import", &file, "--db", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("is already stored as run 1") && out.contains("not stored again"), "{out}");
    no_password("import", &[&out, &err]);
    assert_eq!(listed(&url, &[]).len(), 1, "stored once");
    let (code, _, err) =
        cli(&["import", &fixture("oslat.json"), &fixture("jitterdebugger-results.json"), "--db", &url, "--board", "rpi4"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) =
        cli(&["import", &fixture("cyclictest-hist.txt"), "--db", &url, "--board", "imx8-01", "--label", "other"]);
    assert_eq!(code, 0, "{err}");
    let ids = |extra: &[&str]| listed(&url, extra).iter().map(|r| r["id"].as_i64().unwrap()).collect::<Vec<_>>();
    assert_eq!(ids(&[]), [1, 2, 3, 4]);
    assert_eq!(ids(&["--board", "imx8-01"]), [1, 4]);
    assert_eq!(ids(&["--board", "rpi4"]), [2, 3]);
    assert_eq!(ids(&["--label", "nightly"]), [1]);
    assert_eq!(ids(&["--board", "imx8-01", "--label", "other"]), [4]);
    assert_eq!(ids(&["--board", "nobody"]), [0i64; 0]);
    assert_eq!(ids(&["--since", "2999-01-01"]), [0i64; 0]);
    let started: Vec<String> = listed(&url, &[]).iter().map(|r| r["started_at"].as_str().unwrap().to_string()).collect();
    let newest = started.iter().max().unwrap().clone();
    let since = ids(&["--since", &newest]);
    assert!(!since.is_empty() && since.len() < 4 || started.iter().all(|s| *s == newest), "{since:?} of {started:?}");
    // The table, too.
    let (code, out, err) = cli(&["list", "--db", &url, "--board", "rpi4"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 3, "a header and two runs: {out}");
}

#[test]
fn another_programs_database_is_refused_by_every_command_in_one_line_and_left_untouched() {
    let Some(c) = cluster() else { return };
    let db = c.database("cli_foreign", true);
    c.superuser(&db)
        .batch_execute(&format!(
            "CREATE TABLE orders (id int); INSERT INTO orders VALUES (7); ALTER TABLE orders OWNER TO {}",
            pg::ROLE
        ))
        .unwrap();
    let url = c.url(&db);
    let file = fixture("oslat.json");
    for args in [
        vec!["list", "--db", &url],
        vec!["show", "last", "--db", &url],
        vec!["delete", "1", "--db", &url],
        vec!["import", &file, "--db", &url],
        vec!["run", "-D", "30s", "--load", "none", "--db", &url],
    ] {
        let t = std::time::Instant::now();
        let (code, out, err) = cli(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("holds tables of another program") && err.trim_end().lines().count() == 1, "{args:?}: {err}");
        assert!(out.is_empty() && t.elapsed() < std::time::Duration::from_secs(20), "{args:?}: before measuring");
        no_password("foreign", &[&out, &err]);
    }
    assert_eq!(tables(c, &db), ["orders"], "nothing created");
    let n: i64 = c.superuser(&db).query_one("SELECT count(*) FROM orders", &[]).unwrap().get(0);
    assert_eq!(n, 1);
}

#[test]
fn a_wrong_password_is_one_line_exit_2_and_shown_nowhere() {
    let Some(c) = cluster() else { return };
    let db = c.database("cli_creds", true);
    let wrong = "Wr0ng-Pa55word-4242";
    let url = c.url_as(pg::ROLE, Some(wrong), &db, "");
    let file = fixture("oslat.json");
    for (args, env) in [
        (vec!["list", "--db", &url], false),
        (vec!["show", "last", "--db", &url], false),
        (vec!["export", "last", "-f", "json", "--db", &url], false),
        (vec!["import", &file, "--db", &url], false),
        (vec!["run", "-D", "30s", "--load", "none", "--db", &url], false),
        (vec!["run", "-D", "30s", "--load", "none"], true),
    ] {
        let mut cmd = rtgauge(&args);
        if env {
            cmd.env("RTGAUGE_DB", &url);
        }
        let out = cmd.output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("refused the password of user rtg") && stderr.trim_end().lines().count() == 1, "{stderr}");
        assert!(!stdout.contains(wrong) && !stderr.contains(wrong), "{args:?}: {stderr}");
    }
    // The right one through PGPASSWORD (no password in the URL).
    let bare = c.url_as(pg::ROLE, None, &db, "");
    let out = rtgauge(&["import", &file, "--db", &bare]).env("PGPASSWORD", pg::ROLE_PASSWORD).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_label_with_quotes_sql_and_control_characters_is_stored_and_shown_as_text() {
    let Some(c) = cluster() else { return };
    let db = c.database("cli_label", true);
    let url = c.url(&db);
    let odd = "it's \"x\"; DROP TABLE runs; -- \u{7}\t\u{1b}[31mred";
    let (code, _, err) = cli(&["import", &fixture("oslat.json"), "--db", &url, "--label", odd, "--board", odd]);
    assert_eq!(code, 0, "{err}");
    let rows = listed(&url, &["--label", odd]);
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0]["label"].as_str(), rows[0]["board"].as_str()), (Some(odd), Some(odd)));
    assert_eq!(listed(&url, &["--board", odd]).len(), 1);
    let (code, out, err) = cli(&["show", odd, "--db", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "control characters shown escaped: {out}");
    let (code, out, _) = cli(&["list", "--db", &url]);
    assert_eq!(code, 0);
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out}");
    assert_eq!(tables(c, &db), ["kernel_configs", "rtgauge_meta", "runs", "timelines"], "no table dropped");
}

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

/// A result with histograms (an imported cyclictest run) and a timeline of 500 windows.
fn result() -> RunResult {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest-h100.json");
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

fn pg(url: &str) -> Location {
    Location::Postgres(url.to_string())
}

fn open(url: &str) -> Store {
    Store::open(&pg(url)).unwrap_or_else(|e| panic!("{e}"))
}

fn pg_open(url: &str) -> Result<Store, OpenError> {
    Store::open(&pg(url))
}

fn open_read(url: &str) -> Result<Option<Store>, OpenError> {
    Store::open_read(&pg(url))
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

/// The tables of the public schema, sorted.
fn tables(c: &pg::Cluster, db: &str) -> Vec<String> {
    c.superuser(db)
        .query("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn a_new_store_gets_its_marker_and_layout_and_opens_again() {
    let Some(c) = cluster() else { return };
    let db = c.database("marker", true);
    let store = open(&c.url(&db));
    store.check_whole().unwrap();
    store.check_room(1 << 20).unwrap();
    drop(store);
    let meta: Vec<(String, String)> = c
        .superuser(&db)
        .query("SELECT key, value FROM rtgauge_meta ORDER BY key", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(meta, [("application".to_string(), "rtgauge".to_string()), ("layout".to_string(), "1".to_string())]);
    assert_eq!(tables(c, &db), ["kernel_configs", "rtgauge_meta", "runs", "timelines"]);
    // The trial write used no id: the first run is run 1.
    let mut r = result();
    let saved = save(&open(&c.url(&db)), &mut r, &uuid(1), "board-a", None);
    assert_eq!((saved.id, saved.already), (1, false));
    // A reader of an empty database finds no store, and makes none.
    let empty = c.database("empty", true);
    assert!(open_read(&c.url(&empty)).unwrap().is_none());
    assert!(tables(c, &empty).is_empty());
}

#[test]
fn a_run_is_stored_whole_once_and_found_by_id_uuid_label_and_last() {
    let Some(c) = cluster() else { return };
    let db = c.database("whole", true);
    let store = open(&c.url(&db));
    let mut r = result();
    let id = uuid(0xabc);
    mark(&mut r, &id, "imx8-01");
    let before = serde_json::to_value(&r).unwrap();
    let saved = save(&store, &mut r, &id, "imx8-01", Some("rt-kernel"));
    assert!(!saved.already);
    assert_eq!(serde_json::to_value(&r).unwrap(), before, "the result comes back whole from save");
    // Stored again (a second push, a retry): once.
    let again = save(&store, &mut r, &id, "imx8-01", Some("rt-kernel"));
    assert_eq!((again.id, again.already), (saved.id, true));
    let reader = open_read(&c.url(&db)).unwrap().unwrap();
    for name in [saved.id.to_string(), id.clone(), id.to_uppercase(), "rt-kernel".into(), "last".into()] {
        assert_eq!(reader.resolve(&name).unwrap(), saved.id, "{name}");
    }
    let e = reader.resolve("nothing-like-it").unwrap_err();
    assert!(e.starts_with("no run 'nothing-like-it' in the store postgres://rtg@127.0.0.1:"), "{e}");
    assert!(!e.contains(pg::ROLE_PASSWORD) && !e.contains(&pg::encode(pg::ROLE_PASSWORD)), "{e}");
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
    let left: i64 = c.superuser(&db).query_one("SELECT count(*) FROM timelines", &[]).unwrap().get(0);
    assert_eq!(left, 0, "its timelines went with it");
}

#[test]
fn another_programs_database_is_refused_and_left_untouched() {
    let Some(c) = cluster() else { return };
    let db = c.database("foreign", true);
    c.superuser(&db).batch_execute(&format!("CREATE TABLE orders (id int); ALTER TABLE orders OWNER TO {}", pg::ROLE)).unwrap();
    let e = err(pg_open(&c.url(&db)));
    assert!(matches!(e, OpenError::Refused(_)), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("holds tables of another program") && e.contains("left as it is") && e.contains("--db"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
    assert!(err(open_read(&c.url(&db))).to_string().contains("another program"));
    assert_eq!(tables(c, &db), ["orders"], "nothing created");
    // A table named like rtgauge's marker, but not rtgauge's.
    let db = c.database("foreignmeta", true);
    c.superuser(&db)
        .batch_execute(&format!(
            "CREATE TABLE rtgauge_meta (key text, value text); INSERT INTO rtgauge_meta VALUES ('application', 'other'); \
             ALTER TABLE rtgauge_meta OWNER TO {}",
            pg::ROLE
        ))
        .unwrap();
    assert!(err(pg_open(&c.url(&db))).to_string().contains("another program"));
    assert_eq!(tables(c, &db), ["rtgauge_meta"]);
}

#[test]
fn a_store_of_a_newer_layout_is_refused_and_left_untouched() {
    let Some(c) = cluster() else { return };
    let db = c.database("newer", true);
    drop(open(&c.url(&db)));
    c.superuser(&db).batch_execute("UPDATE rtgauge_meta SET value = '99' WHERE key = 'layout'").unwrap();
    for e in [err(pg_open(&c.url(&db))), err(open_read(&c.url(&db)))] {
        let e = e.to_string();
        assert!(e.contains("written by a newer rtgauge (layout 99, this one knows up to 1)"), "{e}");
    }
    let layout: String = c.superuser(&db).query_one("SELECT value FROM rtgauge_meta WHERE key = 'layout'", &[]).unwrap().get(0);
    assert_eq!(layout, "99");
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
fn many_writers_at_once_store_every_run_once() {
    let Some(c) = cluster() else { return };
    let db = c.database("writers", true);
    let url = c.url(&db);
    let writers = 50;
    let ids: Vec<(i64, i64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let url = &url;
                s.spawn(move || {
                    // Each opens the empty database at once: one migrates, the others wait.
                    let store = open(url);
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
    let runs = open(&url).list(&Filter::default()).unwrap();
    assert_eq!(runs.len(), writers + 1);
    let uuids: std::collections::BTreeSet<&str> = runs.iter().filter_map(|r| r.uuid.as_deref()).collect();
    assert_eq!(uuids.len(), writers + 1);
    let timelines: i64 = c.superuser(&db).query_one("SELECT count(*) FROM timelines", &[]).unwrap().get(0);
    assert_eq!(timelines, writers as i64 + 1, "one timeline per stored run");
}

#[test]
fn filters_and_names_of_any_text() {
    let Some(c) = cluster() else { return };
    let db = c.database("filters", true);
    let store = open(&c.url(&db));
    let odd = "it's \"quoted\"; DROP TABLE runs; --\u{7}\t\u{1b}[31m";
    let long: String = "ß".repeat(10_000);
    let mut r = result();
    r.started_at = "2030-01-01T00:00:00.000Z".into();
    save(&store, &mut r, &uuid(1), &long, Some(odd));
    r.started_at = "2030-02-01T00:00:00.000Z".into();
    r.system.kernel_release = "6.12.0-rt".into();
    save(&store, &mut r, &uuid(2), "plain", Some(&long));
    let all = store.list(&Filter::default()).unwrap();
    assert_eq!(all[0].board, long);
    assert_eq!(all[0].label.as_deref(), Some(odd));
    assert_eq!(all[1].label.as_deref(), Some(long.as_str()));
    let only = |f: Filter| store.list(&f).unwrap().iter().map(|l| l.id).collect::<Vec<_>>();
    assert_eq!(only(Filter { board: Some(long.clone()), ..Filter::default() }), [1]);
    assert_eq!(only(Filter { label: Some(odd.into()), ..Filter::default() }), [1]);
    assert_eq!(only(Filter { kernel: Some("6.12.0-rt".into()), ..Filter::default() }), [2]);
    assert_eq!(only(Filter { since: Some("2030-01-15T00:00:00Z".into()), ..Filter::default() }), [2]);
    assert_eq!(only(Filter { board: Some("plain".into()), since: Some("2031-01-01".into()), ..Filter::default() }), [0; 0]);
    let verdict = all[0].verdict.clone();
    assert_eq!(only(Filter { verdict: Some(verdict), ..Filter::default() }), [1, 2]);
    assert_eq!(store.resolve(odd).unwrap(), 1);
    assert_eq!(store.resolve(&long).unwrap(), 2);
    assert_eq!(tables(c, &db), ["kernel_configs", "rtgauge_meta", "runs", "timelines"], "no table dropped");
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
