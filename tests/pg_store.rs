//! The store's PostgreSQL backend, through the library (`rtgauge::store::postgres`), against a
//! throw-away cluster of Debian's PostgreSQL (tests/common/pg.rs): the marker and layout, a
//! database of another program or of a newer rtgauge refused untouched, the errors a user meets
//! (a host that does not answer, a wrong or missing password, no right to create tables or to
//! write), passwords from PGPASSWORD and ~/.pgpass and never in a message, runs stored whole and
//! once (UUIDs, many writers at once), filters, text as text, TLS, a lost connection. Nothing
//! here measures.

mod common;

use common::pg;
use rtgauge::result::RunResult;
use rtgauge::store::postgres::{Filter, Keep, PgStore};
use rtgauge::store::OpenError;
use std::sync::Mutex;

/// Tests that set PGPASSWORD/PGPASSFILE/HOME hold this (the variables are the process's).
static ENV: Mutex<()> = Mutex::new(());

fn cluster() -> Option<&'static pg::Cluster> {
    pg::shared()
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

fn keep<'a>(uuid: &'a str, board: &'a str, label: Option<&'a str>) -> Keep<'a> {
    Keep { uuid, board, label, imported_from: None }
}

fn open(url: &str) -> PgStore {
    PgStore::open(url).unwrap_or_else(|e| panic!("{e}"))
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
    assert_eq!(tables(c, &db), ["rtgauge_meta", "runs", "timelines"]);
    // The trial write used no id: the first run is run 1.
    let mut r = result();
    let saved = open(&c.url(&db)).save(&mut r, &keep(&uuid(1), "board-a", None)).unwrap();
    assert_eq!((saved.id, saved.new), (1, true));
    // A reader of an empty database finds no store, and makes none.
    let empty = c.database("empty", true);
    assert!(PgStore::open_read(&c.url(&empty)).unwrap().is_none());
    assert!(tables(c, &empty).is_empty());
}

#[test]
fn a_run_is_stored_whole_once_and_found_by_id_uuid_label_and_last() {
    let Some(c) = cluster() else { return };
    let db = c.database("whole", true);
    let store = open(&c.url(&db));
    let mut r = result();
    let before = serde_json::to_value(&r).unwrap();
    let id = uuid(0xabc);
    let saved = store.save(&mut r, &keep(&id, "imx8-01", Some("rt-kernel"))).unwrap();
    assert!(saved.new);
    assert_eq!(serde_json::to_value(&r).unwrap(), before, "the result comes back whole from save");
    // Stored again (a second push, a retry): once.
    let again = store.save(&mut r, &keep(&id, "imx8-01", Some("rt-kernel"))).unwrap();
    assert_eq!((again.id, again.new), (saved.id, false));
    let reader = PgStore::open_read(&c.url(&db)).unwrap().unwrap();
    for name in [saved.id.to_string(), id.clone(), id.to_uppercase(), "rt-kernel".into(), "last".into()] {
        assert_eq!(reader.resolve(&name).unwrap(), saved.id, "{name}");
    }
    let e = reader.resolve("nothing-like-it").unwrap_err();
    assert!(e.starts_with("no run 'nothing-like-it' in the store postgres://rtg@127.0.0.1:"), "{e}");
    assert!(!e.contains(pg::ROLE_PASSWORD) && !e.contains(&pg::encode(pg::ROLE_PASSWORD)), "{e}");
    let loaded = reader.load(saved.id).unwrap();
    assert_eq!(serde_json::to_value(&loaded).unwrap(), before, "the document and its timeline come back exactly");
    assert_eq!(reader.label(saved.id).unwrap().as_deref(), Some("rt-kernel"));
    assert_eq!(reader.uuid(saved.id).unwrap(), Some(id.clone()));
    let listed = reader.list(&Filter::default()).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].uuid.as_str(), listed[0].board.as_str()), (id.as_str(), "imx8-01"));
    assert_eq!(listed[0].row.label.as_deref(), Some("rt-kernel"));
    assert_eq!(listed[0].row.started_at, r.started_at);
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
    let e = err(PgStore::open(&c.url(&db)));
    assert!(matches!(e, OpenError::Refused(_)), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("holds tables of another program") && e.contains("left as it is") && e.contains("--db"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
    assert!(err(PgStore::open_read(&c.url(&db))).to_string().contains("another program"));
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
    assert!(err(PgStore::open(&c.url(&db))).to_string().contains("another program"));
    assert_eq!(tables(c, &db), ["rtgauge_meta"]);
}

#[test]
fn a_store_of_a_newer_layout_is_refused_and_left_untouched() {
    let Some(c) = cluster() else { return };
    let db = c.database("newer", true);
    drop(open(&c.url(&db)));
    c.superuser(&db).batch_execute("UPDATE rtgauge_meta SET value = '99' WHERE key = 'layout'").unwrap();
    for e in [err(PgStore::open(&c.url(&db))), err(PgStore::open_read(&c.url(&db)))] {
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
    let e = err(PgStore::open(&c.url_as(pg::ROLE, Some(wrong), &db, "")));
    assert!(matches!(e, OpenError::Unreachable(_)), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("refused the password of user rtg") && e.contains("PGPASSWORD"), "{e}");
    assert!(!e.contains(wrong) && !e.contains('\n'), "{e}");
    assert!(e.contains(&format!("127.0.0.1:{}", c.port)), "{e}");
    let e = err(PgStore::open(&c.url("no_such_db"))).to_string();
    assert!(e.contains("there is no database no_such_db") && e.contains("createdb"), "{e}");
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://rtg:{}@127.0.0.1:{port}/x", pg::encode(pg::ROLE_PASSWORD));
    let e = err(PgStore::open(&url)).to_string();
    assert!(e.starts_with(&format!("nothing answers at 127.0.0.1:{port} (connection refused)")), "{e}");
    // A URL that does not parse: the password is not shown either.
    let e = err(PgStore::open("postgres://rtg:Hidden-123@127.0.0.1:99999/x")).to_string();
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
    let e = err(PgStore::open(&url)).to_string();
    assert!(e.contains("asks user rtg for a password and none was given") && e.contains(".pgpass"), "{e}");
    std::env::set_var("PGPASSWORD", pg::ROLE_PASSWORD);
    drop(open(&url));
    std::env::remove_var("PGPASSWORD");
    let pgpass = home.path().join(".pgpass");
    let escaped = pg::ROLE_PASSWORD.replace('\\', "\\\\").replace(':', "\\:");
    std::fs::write(&pgpass, format!("# lab\nother:*:*:*:nope\n127.0.0.1:{}:{db}:rtg:{escaped}\n", c.port)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = err(PgStore::open(&url)).to_string();
    assert!(e.contains("others may read it (mode 0644); chmod 600 it"), "libpq ignores such a file too: {e}");
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    drop(open(&url));
    std::env::set_var("PGPASSFILE", home.path().join("elsewhere"));
    assert!(err(PgStore::open(&url)).to_string().contains("none was given"), "PGPASSFILE names the file");
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
    let e = err(PgStore::open(&c.url(&db)));
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
                    let own = store.save(&mut r, &keep(&uuid(1000 + w as u128), &format!("board-{w}"), None)).unwrap();
                    let shared = store.save(&mut r, &keep(&uuid(7), "shared", None)).unwrap();
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
    let uuids: std::collections::BTreeSet<&str> = runs.iter().map(|r| r.uuid.as_str()).collect();
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
    store.save(&mut r, &keep(&uuid(1), &long, Some(odd))).unwrap();
    r.started_at = "2030-02-01T00:00:00.000Z".into();
    r.system.kernel_release = "6.12.0-rt".into();
    store.save(&mut r, &keep(&uuid(2), "plain", Some(&long))).unwrap();
    let all = store.list(&Filter::default()).unwrap();
    assert_eq!(all[0].board, long);
    assert_eq!(all[0].row.label.as_deref(), Some(odd));
    assert_eq!(all[1].row.label.as_deref(), Some(long.as_str()));
    let only = |f: Filter| store.list(&f).unwrap().iter().map(|l| l.row.id).collect::<Vec<_>>();
    assert_eq!(only(Filter { board: Some(long.clone()), ..Filter::default() }), [1]);
    assert_eq!(only(Filter { label: Some(odd.into()), ..Filter::default() }), [1]);
    assert_eq!(only(Filter { kernel: Some("6.12.0-rt".into()), ..Filter::default() }), [2]);
    assert_eq!(only(Filter { since: Some("2030-01-15T00:00:00Z".into()), ..Filter::default() }), [2]);
    assert_eq!(only(Filter { board: Some("plain".into()), since: Some("2031-01-01".into()), ..Filter::default() }), [0; 0]);
    let verdict = all[0].row.verdict.clone();
    assert_eq!(only(Filter { verdict: Some(verdict), ..Filter::default() }), [1, 2]);
    assert_eq!(store.resolve(odd).unwrap(), 1);
    assert_eq!(store.resolve(&long).unwrap(), 2);
    assert_eq!(tables(c, &db), ["rtgauge_meta", "runs", "timelines"], "no table dropped");
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
    let e = err(PgStore::open(&local("sslmode=verify-full"))).to_string();
    assert!(e.contains("is not trusted") && e.contains("sslrootcert"), "{e}");
    // verify-full checks the name: 127.0.0.1 is not the certificate's; verify-ca does not.
    let by_ip = |query: &str| c.url_as(pg::ROLE, Some(pg::ROLE_PASSWORD), &db, query);
    let e = err(PgStore::open(&by_ip(&format!("sslmode=verify-full&sslrootcert={cert}")))).to_string();
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
    let saved = store.save(&mut r, &keep(&uuid(5), "b", None)).unwrap();
    assert!(saved.new);
    assert_eq!(store.list(&Filter::default()).unwrap().len(), 1);
}

#[test]
fn a_server_gone_at_the_end_is_a_one_line_error_and_nothing_half_written() {
    let Some(own) = pg::own() else { return };
    let db = own.database("gone", true);
    let store = open(&own.url(&db));
    own.stop();
    let mut r = result();
    let e = store.save(&mut r, &keep(&uuid(9), "b", None)).unwrap_err();
    assert!(!e.contains('\n') && !e.contains(pg::ROLE_PASSWORD), "{e}");
    assert!(e.contains(&format!("127.0.0.1:{}", own.port)) && (e.contains("nothing answers") || e.contains("lost")), "{e}");
}
