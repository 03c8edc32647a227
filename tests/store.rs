//! The store: every run is kept whole (the document `show --json` gives back is the one the run
//! wrote), several runs at once are all kept, `list` filters, `delete` removes, and a file that
//! is not an rtgauge store (garbage, corrupt, another program's database) is refused with exit 2
//! before anything is measured and left byte for byte as it was.

mod common;
use common::*;
use serde_json::Value;

fn db_in(dir: &tempfile::TempDir) -> String {
    dir.path().join("runs.db").to_string_lossy().into_owned()
}

fn list(db: &str, extra: &[&str]) -> Vec<Value> {
    let out = rtgauge(&[&["list", "--json", "--db", db][..], extra].concat()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().unwrap().clone()
}

#[test]
fn a_stored_run_gives_back_its_whole_document_and_can_be_listed_shown_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let run = ["--loops", "200", "--warmup", "0", "--load", "none", "--db", &db];
    let (code, doc, out) = run_json(&[&run[..], &["--label", "first", "--require", "samples>=1"]].concat());
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    let (_, second, _) = run_json(&run);
    let rows = list(&db, &[]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!((rows[0]["label"].as_str(), rows[0]["verdict"].as_str()), (Some("first"), Some("pass")));
    assert_eq!((rows[1]["label"].is_null(), rows[1]["verdict"].as_str()), (true, Some("none")));
    assert_eq!(rows[0]["kernel"], doc["system"]["kernel_release"]);
    assert_eq!(rows[0]["probes"], "timer");
    // The whole document comes back, every number of it, by id, label or 'last'.
    for (which, expected) in [("first", &doc), ("last", &second), (&rows[0]["id"].to_string()[..], &doc)] {
        let out = rtgauge(&["show", which, "--json", "--db", &db]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(&shown, expected, "show {which}");
    }
    let out = rtgauge(&["show", "first", "--db", &db]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Verdict: PASS"), "the summary, as the run printed it");
    assert_eq!(list(&db, &["--label", "first"]).len(), 1);
    assert_eq!(list(&db, &["--host", "no-such-host"]).len(), 0);
    assert_eq!(list(&db, &["--since", "1h"]).len(), 2);
    assert_eq!(list(&db, &["--since", "2999-01-01"]).len(), 0);
    assert!(rtgauge(&["delete", "first", "--db", &db]).output().unwrap().status.success());
    assert_eq!(list(&db, &[]).len(), 1);
    let out = rtgauge(&["show", "first", "--db", &db]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run 'first'"));
}

#[test]
fn runs_at_the_same_time_are_all_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let runs: Vec<_> = (0..4)
        .map(|i| {
            let label = format!("concurrent-{i}");
            rtgauge(&["run", "-q", "--loops", "300", "--warmup", "0", "--load", "none", "--db", &db, "--label", &label])
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
    let mut labels: Vec<String> = list(&db, &[]).iter().map(|r| r["label"].as_str().unwrap().to_string()).collect();
    labels.sort();
    assert_eq!(labels, ["concurrent-0", "concurrent-1", "concurrent-2", "concurrent-3"]);
}

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
        let out = rtgauge(&["run", "-D", "30s", "--load", "none", "--db", &p]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{p}: {err}");
        assert!(err.contains(says) && err.contains("--db PATH") && err.trim_end().lines().count() == 1, "{p}: {err}");
        assert!(t.elapsed() < std::time::Duration::from_secs(20), "refused before measuring");
        assert!(out.stdout.is_empty(), "nothing measured");
        assert_eq!(std::fs::read(path).unwrap(), before, "{p} left byte for byte as it was");
        let out = rtgauge(&["list", "--db", &p]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "list refuses it too");
        assert_eq!(std::fs::read(path).unwrap(), before, "{p} left as it was by list");
    }
}

/// A store that cannot be written at the end of a run (another process holds its write lock past
/// the store's 10 s wait) costs only a warning: the run's exit status and its JSON document are
/// those of the measurement, and nothing half-written is left in the store.
#[test]
fn a_store_unwritable_at_the_end_costs_only_a_warning() {
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
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("warning: the run was measured but not stored"), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the JSON document came out");
    assert!(doc["probes"].as_array().unwrap().iter().all(|p| u(&p["samples"]) + u(&p["missed"]) == 1000), "{doc}");
    assert!(list(&db, &[]).is_empty(), "nothing stored");
}

/// Documents are stored compressed (layout 2); a store of layout 1, whose documents are JSON
/// text, is brought forward on opening and its runs still read whole beside new ones.
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
    assert_eq!(version, 3);
    // Layout 3: the new run's timelines in a table of their own (one blob per CPU), the old
    // run's still inside its document.
    let blobs = |id: i64| -> i64 { c.query_row("SELECT count(*) FROM timelines WHERE run = ?1", [id], |r| r.get(0)).unwrap() };
    assert_eq!(blobs(1), 0);
    assert_eq!(blobs(2), new_doc["probes"].as_array().unwrap().len() as i64);
    let kinds: Vec<String> = c
        .prepare("SELECT typeof(document) FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kinds, ["text", "blob"], "the old document kept as it was, the new one compressed");
}
