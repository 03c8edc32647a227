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
    let rescued = err.split("saved to '").nth(1).and_then(|t| t.split('\'').next()).unwrap_or_else(|| panic!("named: {err}"));
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
    assert_eq!(version, 4);
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
        .prepare("SELECT typeof(document) FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kinds, ["text", "text", "text", "blob"], "the old documents kept as they were, the new one compressed");
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(name)
}

fn ok(args: &[&str]) -> String {
    let out = rtgauge(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Whether `text` holds a character a terminal would act on or hide: a control character
/// (C0 but the line breaks and tabs of the layout, DEL, C1) or a bidirectional override.
fn raw_control(text: &str) -> Option<char> {
    text.chars().find(|&c| (c.is_control() && c != '\n' && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c))
}

/// An imported host name and kernel string, and a label, carrying terminal controls (set the
/// title, clear the screen, a carriage return and a line break that fake a row, C1's CSI, a
/// right-to-left override): `list`, `show`, `report` and `compare` show them escaped (`\x1b`),
/// one row per run, and JSON keeps them exactly.
#[test]
fn control_characters_from_an_imported_file_are_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(fixture("jitterdebugger-results.json")).unwrap()).unwrap();
    let host = "evil\u{1b}]0;pwned\u{7}\r\n9  2026-01-01 fake row\u{9b}2J\u{202e}";
    doc["sysinfo"]["nodename"] = host.into();
    doc["sysinfo"]["release"] = "6.1\u{1b}[2J\u{7f}".into();
    let file = dir.path().join("results.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let label = "lab\u{1b}[31mel\u{7}";
    ok(&["import", "--db", &db, "--label", label, file.to_str().unwrap()]);
    ok(&["import", "--db", &db, "--label", "plain", fixture("jitterdebugger-results.json").to_str().unwrap()]);
    let list_text = ok(&["list", "--db", &db]);
    assert_eq!(list_text.lines().count(), 3, "a header and one row per run: {list_text}");
    for text in [
        list_text,
        ok(&["show", label, "--db", &db]),
        ok(&["show", "1", "--db", &db]),
        ok(&["report", "1", "--db", &db]),
        ok(&["compare", "1", "2", "--db", &db]),
    ] {
        assert_eq!(raw_control(&text), None, "{text}");
        assert!(text.contains("\\x1b"), "the escape is shown: {text}");
    }
    let rows = list(&db, &[]);
    assert_eq!(rows[0]["host"], host, "JSON keeps the value exactly");
    assert_eq!(rows[0]["label"], label);
    let json = ok(&["show", "1", "--json", "--db", &db]);
    assert_eq!(raw_control(&json), None, "JSON writes them as escapes: {json}");
}

/// `list --since 1000000d` reaches before 1970 (and a larger age beyond any date): a one-line
/// error, exit 2, never a panic.
#[test]
fn list_since_an_age_beyond_the_epoch_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    ok(&["import", "--db", &db, fixture("oslat.json").to_str().unwrap()]);
    for since in ["1000000d", "100000000y", "99999999999999999999d", "18446744073709551615s"] {
        let out = rtgauge(&["list", "--since", since, "--db", &db]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{since}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{since}: {err}");
        assert!(!err.contains("panicked"), "{since}: {err}");
    }
    assert_eq!(list(&db, &["--since", "3650d"]).len(), 1);
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
        ok(&["import", "--db", &db, "--label", label, fixture(f).to_str().unwrap()]);
    }
    let mode = |p: &std::path::Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    let before = std::fs::read(&db).unwrap();
    for (file_mode, dir_mode) in [(0o644, 0o755), (0o444, 0o555)] {
        mode(std::path::Path::new(&db), file_mode);
        mode(dir.path(), dir_mode);
        for args in [
            vec!["list"],
            vec!["list", "--json"],
            vec!["show", "x"],
            vec!["show", "last", "--json"],
            vec!["export", "x", "--format", "csv"],
            vec!["report", "x"],
            vec!["compare", "x", "y"],
        ] {
            let out = nobody(&[&args[..], &["--db", &db]].concat()).output().unwrap();
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
    let out = rtgauge(&["run", "-D", "30s", "--load", "none", "--db", &db]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("corrupt") && err.contains("--db PATH") && err.trim_end().lines().count() == 1, "{err}");
    assert!(t.elapsed() < std::time::Duration::from_secs(20), "refused before measuring");
    assert!(out.stdout.is_empty(), "nothing measured");
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "left byte for byte as it was");
}

/// The compressed document is spooled through the temporary directory; one that cannot take it
/// (missing, full) lost the run: the store's own directory spools it instead.
#[test]
fn a_run_whose_temporary_directory_is_unusable_is_still_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let out = rtgauge(&["run", "-q", "--loops", "200", "--warmup", "0", "--load", "none", "--db", &db])
        .env("TMPDIR", dir.path().join("no-such-dir"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(list(&db, &[]).len(), 1, "stored");
}

/// `list` gives each run the verdict its summary gives: a run that failed (here a CPU that
/// measured nothing, with no criteria asked) is `fail`, not `none`; `none` is only a run that
/// passed without criteria.
#[test]
fn a_run_that_failed_without_criteria_is_listed_as_failed_not_none() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let mut doc: Value = serde_json::from_slice(&std::fs::read(fixture("cyclictest-no-h.json")).unwrap()).unwrap();
    for k in ["cycles", "min", "max"] {
        doc["thread"]["1"][k] = 0.into();
    }
    doc["thread"]["1"]["avg"] = 0.0.into();
    let failed = dir.path().join("one-thread-measured-nothing.json");
    std::fs::write(&failed, serde_json::to_vec(&doc).unwrap()).unwrap();
    ok(&["import", "--db", &db, failed.to_str().unwrap(), "--label", "failed"]);
    ok(&["import", "--db", &db, fixture("cyclictest-no-h.json").to_str().unwrap(), "--label", "plain"]);
    let summary = ok(&["show", "failed", "--db", &db]);
    assert!(summary.contains("FAIL"), "the summary fails it: {summary}");
    let rows = list(&db, &[]);
    let verdict = |label: &str| rows.iter().find(|r| r["label"] == label).map(|r| r["verdict"].as_str().unwrap().to_string());
    assert_eq!(verdict("failed").as_deref(), Some("fail"), "{rows:?}");
    assert_eq!(verdict("plain").as_deref(), Some("none"), "passed without criteria: {rows:?}");
    let text = ok(&["list", "--db", &db]);
    let line = text.lines().find(|l| l.contains("failed")).unwrap();
    assert!(line.trim_end().ends_with("fail"), "{text}");
}

/// `--quiet` drops the live view, never the line naming the stored run: a script needs the id
/// (on standard output, or on standard error when the JSON document has standard output).
#[test]
fn quiet_still_names_the_stored_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let run = ["run", "-q", "--loops", "50", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", &db];
    let out = rtgauge(&run).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("Stored as run 1 in").count(), 1, "{text}");
    let out = rtgauge(&[&run[..], &["--json", "-"]].concat()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("standard output is the document alone");
    assert!(doc.is_object());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Stored as run 2 in"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A count of one reads in the singular: an import of one thread is "1 CPU", not "1 CPUs"
/// (the same counted nouns as a one-period run's "1 period" and "1 warm-up period").
#[test]
fn an_import_of_one_cpu_says_1_cpu_not_1_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let mut doc: Value = serde_json::from_slice(&std::fs::read(fixture("cyclictest-no-h.json")).unwrap()).unwrap();
    doc["thread"].as_object_mut().unwrap().remove("1");
    doc["num_threads"] = 1.into();
    let one = dir.path().join("one-thread.json");
    std::fs::write(&one, serde_json::to_vec(&doc).unwrap()).unwrap();
    let text = ok(&["import", "--db", &db, one.to_str().unwrap()]);
    assert!(text.contains(", 1 CPU, ") && !text.contains("1 CPUs"), "{text}");
}

/// Every run has a UUID: a measured run a new one each time; an imported file one made from its
/// content, so the same file imported twice is stored once ("already stored as run N"). `show`
/// finds a run by its UUID and by its first 8 hex digits as well as by id and label.
#[test]
fn a_run_is_identified_by_its_uuid_and_a_file_imported_twice_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let file = fixture("cyclictest-h100.json");
    let first = ok(&["import", "--db", &db, file.to_str().unwrap()]);
    assert!(first.starts_with("Imported "), "{first}");
    let again = ok(&["import", "--db", &db, file.to_str().unwrap()]);
    assert!(again.contains("already stored as run 1") && !again.starts_with("Imported "), "{again}");
    let rows = list(&db, &[]);
    assert_eq!(rows.len(), 1, "stored once: {rows:?}");
    let uuid = rows[0]["uuid"].as_str().unwrap().to_string();
    assert_eq!(uuid.len(), 36, "{uuid}");
    // Another store gives the same file the same UUID.
    let other = dir.path().join("other.db").to_string_lossy().into_owned();
    ok(&["import", "--db", &other, file.to_str().unwrap()]);
    assert_eq!(list(&other, &[])[0]["uuid"].as_str(), Some(&uuid[..]), "the file's identity, whatever the store");
    let run = ["--loops", "20", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", &db];
    let (_, a, _) = run_json(&run);
    let (_, b, _) = run_json(&run);
    let (a_uuid, b_uuid) = (a["uuid"].as_str().unwrap(), b["uuid"].as_str().unwrap());
    assert_ne!(a_uuid, b_uuid, "each measured run its own");
    assert_eq!(&a_uuid[14..15], "4", "a random (v4) UUID: {a_uuid}");
    assert_eq!(list(&db, &[]).len(), 3);
    for which in [a_uuid, &a_uuid[..8], &a_uuid.to_uppercase()[..13]] {
        let shown: Value = serde_json::from_str(&ok(&["show", which, "--json", "--db", &db])).unwrap();
        assert_eq!(shown, a, "show {which}");
    }
    assert_eq!(serde_json::from_str::<Value>(&ok(&["show", &uuid, "--json", "--db", &db])).unwrap()["uuid"], uuid.as_str());
    for (which, says) in [(&a_uuid[..7], "no run"), ("ffffffff", "no run")] {
        let out = rtgauge(&["show", which, "--db", &db]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{which}: {err}");
        assert!(err.contains(says) && err.trim_end().lines().count() == 1, "{which}: {err}");
    }
}

/// `--board NAME` names the board (the host name by default) in the result and the store, and
/// `list` filters by board, kernel, scenario, label, verdict and date, all of them together.
#[test]
fn runs_are_filtered_by_board_kernel_scenario_label_verdict_and_date_together() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let run = ["--loops", "20", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", &db];
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
    ok(&["import", "--db", &db, "--board", "x86-box", "--label", "nightly", fixture("oslat.json").to_str().unwrap()]);
    let kernel = default["system"]["kernel_release"].as_str().unwrap();
    let ids = |extra: &[&str]| -> Vec<u64> { list(&db, extra).iter().map(|r| u(&r["id"])).collect() };
    assert_eq!(ids(&["--board", "rpi4-lab-3"]).len(), if named["board"]["kernel_config"].is_object() { 2 } else { 1 });
    assert_eq!(ids(&["--board", "rpi4-lab-3", "--label", "nightly", "--verdict", "pass"]), [2]);
    assert_eq!(ids(&["--label", "nightly"]).len(), 2);
    assert_eq!(ids(&["--label", "nightly", "--board", "x86-box", "--verdict", "none"]).len(), 1);
    assert_eq!(ids(&["--label", "nightly", "--board", "x86-box", "--verdict", "pass"]), Vec::<u64>::new());
    assert_eq!(ids(&["--board", "rpi4-lab-3", "--kernel", kernel, "--since", "1h"]).first(), Some(&2));
    assert_eq!(ids(&["--board", "rpi4-lab-3", "--kernel", "no-such-kernel"]), Vec::<u64>::new());
    assert_eq!(ids(&["--scenario", "no-such-scenario"]), Vec::<u64>::new());
    assert_eq!(list(&db, &["--board", default["system"]["hostname"].as_str().unwrap()])[0]["id"], 1);
    let out = rtgauge(&["list", "--verdict", "maybe", "--db", &db]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let text = ok(&["list", "--db", &db]);
    assert!(text.lines().next().unwrap().contains("board"), "{text}");
    assert!(text.contains("rpi4-lab-3") && text.contains("x86-box"), "{text}");
}

/// A label and a board holding quotes, SQL, control characters or 10 000 characters are stored
/// and given back exactly as text (JSON), shown escaped (`list`, `show`), and filter exactly.
#[test]
fn labels_and_boards_with_quotes_sql_controls_and_10000_characters_are_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let long = "é".repeat(10_000);
    let names = ["o'brien \"lab\"", "x'; DROP TABLE runs; --", "a' OR '1'='1", "ctl\u{1b}[2J\u{7}\r\nfake row", long.as_str()];
    for (i, name) in names.iter().enumerate() {
        let mut doc: Value = serde_json::from_slice(&std::fs::read(fixture("cyclictest-no-h.json")).unwrap()).unwrap();
        doc["thread"]["0"]["max"] = (u(&doc["thread"]["0"]["max"]) + i as u64).into(); // a file of its own
        let file = dir.path().join(format!("f{i}.json"));
        std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
        let label = format!("label {name}");
        ok(&["import", "--db", &db, "--board", name, "--label", &label, file.to_str().unwrap()]);
        let rows = list(&db, &["--board", name]);
        assert_eq!(rows.len(), 1, "{name:?}: {rows:?}");
        assert_eq!((rows[0]["board"].as_str(), rows[0]["label"].as_str()), (Some(*name), Some(&label[..])));
        assert_eq!(list(&db, &["--label", &label]).len(), 1);
        let shown: Value = serde_json::from_str(&ok(&["show", &label, "--json", "--db", &db])).unwrap();
        assert_eq!(shown["board"]["name"], *name);
        let summary = ok(&["show", &label, "--db", &db]);
        assert_eq!(raw_control(&summary), None, "{summary}");
        assert!(summary.lines().filter(|l| l.starts_with("board ")).all(|l| l.chars().count() <= 80), "{summary}");
    }
    assert_eq!(list(&db, &[]).len(), names.len(), "every run stored, the table whole");
    let text = ok(&["list", "--db", &db]);
    assert_eq!(text.lines().count(), names.len() + 1, "a header and one row per run: {text}");
    assert_eq!(raw_control(&text), None, "{text}");
    assert!(text.contains("\\x1b") && text.lines().all(|l| l.chars().count() < 400), "long names cut in the table: {text}");
}

/// `--db postgres://...` (and `postgresql://`, and RTGAUGE_DB) is a PostgreSQL database, not a
/// file: a server that does not answer is one line, exit 2, before measuring, the URL's password
/// never shown, and no file made. (tests/pg_store.rs runs the commands against a real server.)
#[test]
fn a_postgresql_url_nothing_answers_at_is_refused_cleanly_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    for url in ["postgres://lab:s3cret@127.0.0.1:1/rt", "POSTGRESQL://lab:s3cret@127.0.0.1:1/rt?sslmode=require"] {
        for (args, env) in [
            (vec!["list", "--db", url], false),
            (vec!["show", "last", "--db", url], false),
            (vec!["import", "--db", url, fixture("oslat.json").to_str().unwrap()], false),
            (vec!["run", "-D", "30s", "--load", "none"], true),
        ] {
            let mut c = rtgauge(&args);
            c.current_dir(dir.path());
            if env {
                c.env("RTGAUGE_DB", url);
            }
            let t = std::time::Instant::now();
            let out = c.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("nothing answers at 127.0.0.1:1") && err.trim_end().lines().count() == 1, "{err}");
            assert!(!err.contains("s3cret"), "{err}");
            assert!(out.stdout.is_empty() && t.elapsed() < std::time::Duration::from_secs(20), "before measuring");
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no file made");
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
