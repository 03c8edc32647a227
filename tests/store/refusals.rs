//! store: refusals (a part of tests/store/main.rs, whose helpers it uses).

use super::*;

/// Every command that takes a store, for `db` (a file or a URL): (arguments, RTGAUGE_DB instead
/// of --db).
pub(crate) fn store_commands(db: &str) -> Vec<(Vec<String>, bool)> {
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
pub(crate) fn every_command_refused(dir: &Path, db: &str, says: &str, secret: &str) {
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
pub(crate) fn a_database_url_that_does_not_parse_is_refused_before_measuring_without_its_password() {
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
pub(crate) fn a_postgresql_url_nothing_answers_at_is_refused_cleanly_before_measuring() {
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
pub(crate) fn a_host_that_accepts_but_never_answers_is_refused_within_the_connect_timeout() {
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
pub(crate) fn a_wrong_password_or_an_unknown_user_is_one_line_exit_2_and_shown_nowhere() {
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
pub(crate) fn a_role_that_may_only_connect_is_refused_before_measuring_and_nothing_is_made() {
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
pub(crate) fn a_role_that_may_read_but_not_write_serves_readers_and_is_refused_to_writers() {
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
pub(crate) fn end_the_writer_waiting_for_a_lock(c: &pg::Cluster, db: &str) -> i32 {
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
pub(crate) fn a_connection_dropped_mid_write_stores_the_run_once_or_leaves_nothing_half_written() {
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
pub(crate) fn a_corrupt_or_foreign_store_is_refused_and_left_unchanged() {
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
pub(crate) fn a_store_locked_at_the_end_rescues_the_run_to_a_file_that_import_stores() {
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
pub(crate) fn a_layout_1_store_with_text_documents_is_migrated_and_still_read() {
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
pub(crate) fn a_store_readable_but_not_writable_serves_every_reading_command() {
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
pub(crate) fn a_store_corrupt_past_its_first_page_is_refused_before_measuring() {
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
pub(crate) fn a_run_the_server_did_not_take_nor_the_spool_is_rescued_to_a_file_that_import_stores_later() {
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
pub(crate) fn wrong_credentials_a_missing_database_and_a_silent_host_are_one_line_errors_without_the_password() {
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
pub(crate) fn the_password_comes_from_pgpassword_or_a_private_pgpass() {
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
pub(crate) fn no_right_to_create_tables_or_to_write_is_refused_before_measuring() {
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
pub(crate) fn tls_require_encrypts_and_verify_full_checks_the_certificate() {
    let Some(c) = cluster() else { return };
    if !c.tls() {
        common::skip(common::Skip::Missing, "TLS: openssl made no certificate (apt-get install openssl)");
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
pub(crate) fn a_connection_lost_while_measuring_is_made_again_to_store_the_run() {
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
pub(crate) fn a_server_gone_at_the_end_is_a_one_line_error_and_nothing_half_written() {
    let Some(own) = pg::own() else { return };
    let db = own.database("gone", true);
    let store = open(&own.url(&db));
    own.stop();
    let mut r = result();
    r.uuid = Some(uuid(9).parse().unwrap());
    let e = store.save(&mut r, None, None, None).unwrap_err();
    // (the server away: a caller keeps the run in the spool for it, or rescues it)
    assert!(e.is_away(), "{e:?}");
    let e = e.to_string();
    assert!(!e.contains('\n') && !e.contains(pg::ROLE_PASSWORD), "{e}");
    assert!(e.contains(&format!("127.0.0.1:{}", own.port)) && (e.contains("nothing answers") || e.contains("lost")), "{e}");
}
