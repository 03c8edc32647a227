//! `rtgauge push` and the spool, through the real binary, against a throw-away cluster of
//! Debian's PostgreSQL (tests/common/pg.rs): runs copied from a SQLite store to PostgreSQL and
//! back, whole, with their UUIDs, labels and boards; pushing twice stores once; the filters and
//! the runs named; a run the server did not take at its end waits in the spool, and `push` —
//! or the next run — delivers it exactly once, two deliveries at once included. Every store,
//! spool and journal is in the test's temporary directory.

mod common;

use common::{pg, rtgauge, wait_until_measuring};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// The binary with `args`, its store and spool in `home` (RTGAUGE_DB there, so the spool is
/// `home/spool`).
fn cmd(home: &Path, args: &[&str]) -> Command {
    let mut c = rtgauge(args);
    c.env("RTGAUGE_DB", home.join("runs.db")).env("XDG_DATA_HOME", home.join("data"));
    c
}

/// Runs it: exit status, stdout, stderr.
fn cli(home: &Path, args: &[&str]) -> (i32, String, String) {
    let out: Output = cmd(home, args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Its standard output, the command asserted to succeed.
fn ok(home: &Path, args: &[&str]) -> String {
    let (code, out, err) = cli(home, args);
    assert_eq!(code, 0, "{args:?}: {err}{out}");
    no_password(&[&out, &err]);
    out
}

fn no_password(texts: &[&str]) {
    for t in texts {
        assert!(!t.contains(pg::ROLE_PASSWORD) && !t.contains(&pg::encode(pg::ROLE_PASSWORD)), "the password shown: {t}");
    }
}

fn listed(home: &Path, db: &str, extra: &[&str]) -> Vec<Value> {
    let out = ok(home, &[&["list", "--json", "--db", db][..], extra].concat());
    serde_json::from_str::<Value>(&out).unwrap().as_array().unwrap().clone()
}

fn shown(home: &Path, db: &str, run: &str) -> Value {
    serde_json::from_str(&ok(home, &["show", run, "--json", "--db", db])).unwrap()
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(name).display().to_string()
}

fn uuids(rows: &[Value]) -> Vec<String> {
    let mut u: Vec<String> = rows.iter().map(|r| r["uuid"].as_str().unwrap().to_string()).collect();
    u.sort();
    u
}

/// A short idle run on CPU 0 into `db`: `loops` periods, no warm-up, no load, `extra` options.
fn short_run<'a>(loops: &'a str, db: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    [&["run", "--loops", loops, "--warmup", "0", "--cpus", "0", "--load", "none", "--db", db][..], extra].concat()
}

/// A short measured run into `db` (no load, one CPU), with `extra` options.
fn measure(home: &Path, db: &str, extra: &[&str]) -> Value {
    let json = home.join(format!("run-{}.json", uuid_like()));
    let args = [&short_run("200", db, &[])[..], extra].concat();
    let args = [&args[..], &["--json", json.to_str().unwrap()]].concat();
    ok(home, &args);
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

/// `c` started, its output collected, once it measures.
fn measuring(mut c: Command) -> std::process::Child {
    let child = c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    wait_until_measuring(child.id());
    child
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// Runs of a SQLite store pushed to PostgreSQL, again (stored once), by name and by filter, and
/// back to another file: whole, with their UUIDs, labels, boards and origins.
#[test]
fn runs_pushed_to_postgresql_and_back_are_whole_and_stored_once() {
    let Some(c) = pg::shared() else { return };
    let url = c.url(&c.database("push", true));
    let home = tempfile::tempdir().unwrap();
    let local = home.path().join("runs.db").display().to_string();
    let a = measure(home.path(), &local, &["--board", "bench-a", "--label", "first"]);
    let b = measure(home.path(), &local, &["--board", "bench-b", "--label", "second"]);
    ok(home.path(), &["import", "--db", &local, "--board", "bench-a", &fixture("cyclictest-h100.json")]);
    let here = listed(home.path(), &local, &[]);
    assert_eq!(here.len(), 3);

    // By board: the two runs of bench-a.
    let out = ok(home.path(), &["push", "--board", "bench-a", "--to", &url]);
    assert!(out.starts_with("Copied 2 runs to ") && out.contains("runs 1 → 1, 3 → 2"), "{out}");
    assert!(out.contains(&rtgauge::store::postgres::redact(&url)), "{out}");
    // Everything: only the third goes; then nothing.
    let out = ok(home.path(), &["push", "--to", &url]);
    assert!(out.starts_with("Copied 1 run to ") && out.contains("(run 2 → 3); 2 runs there already."), "{out}");
    let out = ok(home.path(), &["push", "--to", &url]);
    assert!(out.starts_with("No run copied to ") && out.contains("3 runs there already."), "{out}");
    // Named runs, again: stored once.
    let out = ok(home.path(), &["push", "first", &a["uuid"].as_str().unwrap()[..8], "last", "--to", &url]);
    assert!(out.contains("No run copied") && out.contains("2 runs there already"), "{out}");

    let there = listed(home.path(), &url, &[]);
    assert_eq!(there.len(), 3, "{there:?}");
    assert_eq!(uuids(&there), uuids(&here), "the same runs, by their identity");
    for (doc, label, board) in [(&a, "first", "bench-a"), (&b, "second", "bench-b")] {
        let uuid = doc["uuid"].as_str().unwrap();
        let row = there.iter().find(|r| r["uuid"] == uuid).unwrap();
        assert_eq!((row["label"].as_str(), row["board"].as_str()), (Some(label), Some(board)), "{row}");
        assert_eq!(&shown(home.path(), &url, uuid), doc, "the whole document, in PostgreSQL");
    }
    let imported = there.iter().find(|r| r["imported_from"].is_string()).expect("the import's origin travels");
    assert!(imported["imported_from"].as_str().unwrap().ends_with("cyclictest-h100.json"), "{imported}");

    // And back, into a new file: the same documents.
    let back = home.path().join("back.db").display().to_string();
    let out = ok(home.path(), &["push", "--db", &url, "--since", "2000-01-01", "--to", &back]);
    assert!(out.starts_with("Copied 3 runs to "), "{out}");
    for r in &here {
        let uuid = r["uuid"].as_str().unwrap();
        assert_eq!(shown(home.path(), &back, uuid), shown(home.path(), &local, uuid), "{uuid} back from PostgreSQL");
    }
    let out = ok(home.path(), &["push", "--db", &url, "--to", &back]);
    assert!(out.contains("3 runs there already"), "{out}");

    // Bad input: one line, exit 2, nothing copied.
    for (args, says) in [
        (vec!["push", "--db", &local, "--to", &local], "the store the runs are read from"),
        (vec!["push", "last", "--to", &local], "the store the runs are read from"),
        (vec!["push", "nosuchlabel", "--to", &url], "no run 'nosuchlabel'"),
        (vec!["push", "--since", "yesterday-ish", "--to", &url], "--since yesterday-ish"),
        (vec!["push", "--to", "postgres://rtg@127.0.0.1:1/x"], "127.0.0.1:1"),
        (vec!["push"], "--to"),
    ] {
        let (code, out, err) = cli(home.path(), &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says) && out.is_empty(), "{args:?}: {err}");
        if !args.is_empty() && args.len() > 1 {
            assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
        }
    }
    assert_eq!(listed(home.path(), &url, &[]).len(), 3);
    // The local store as the destination (RTGAUGE_DB names it): its spool, if any, is delivered;
    // nothing else is copied, nothing is said wrong.
    let out = ok(home.path(), &["push", "--to", &local]);
    assert!(out.starts_with("Nothing to copy to "), "{out}");
    // A failing push makes no destination.
    let never = home.path().join("never.db");
    for args in [
        vec!["push", "nosuchlabel", "--to", never.to_str().unwrap()],
        vec!["push", "--db", "/nonexistent/x.db", "--to", never.to_str().unwrap()],
    ] {
        let (code, _, err) = cli(home.path(), &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(!never.exists(), "{args:?}: the destination was made");
    }
}

/// The server stopped while a run measures: the run ends as measured (its verdict's status),
/// says that it waits in the spool, and the spool holds it (no password anywhere). The server
/// back: the next run delivers it before itself, once; a run spooled again is delivered by
/// `push --to` — twice at once, stored once.
#[test]
fn a_run_the_server_did_not_take_waits_in_the_spool_and_is_delivered_exactly_once() {
    let Some(own) = pg::own() else { return };
    let url = own.url(&own.database("spool", true));
    let home = tempfile::tempdir().unwrap();
    let spool_dir = home.path().join("spool");

    let spooled = |label: &str| {
        let json = home.path().join(format!("{label}.json"));
        let child = cmd(
            home.path(),
            &[
                "run",
                "-D",
                "3s",
                "--cpus",
                "0",
                "--load",
                "none",
                "--db",
                &url,
                "--label",
                label,
                "--json",
                json.to_str().unwrap(),
            ],
        );
        let child = measuring(child);
        own.stop();
        let out = child.wait_with_output().unwrap();
        let (stdout, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        no_password(&[&stdout, &err]);
        // Nothing lost: the run's own status, not an error.
        assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
        assert!(err.contains("waits in the spool") && err.contains("rtgauge push --to postgres://rtg@127.0.0.1"), "{err}");
        let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert!(err.contains(&doc["uuid"].as_str().unwrap()[..8]), "the run named: {err}");
        own.start_again();
        doc
    };

    let first = spooled("first");
    let files: Vec<_> = std::fs::read_dir(&spool_dir).unwrap().flatten().map(|e| e.path()).collect();
    let spool = files.iter().find(|f| f.extension().is_some_and(|e| e == "db")).expect("a spool store").clone();
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&spool_dir).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o700, "the spool's directory is private");
    let spool_db = spool.display().to_string();
    let waiting = listed(home.path(), &spool_db, &[]);
    assert_eq!((waiting.len(), waiting[0]["uuid"].as_str()), (1, first["uuid"].as_str()), "{waiting:?}");
    no_password(&[&String::from_utf8_lossy(&std::fs::read(&spool).unwrap())]);
    assert!(listed(home.path(), &url, &[]).is_empty(), "not stored before it is delivered");

    // The next run with this store delivers it, then is stored itself.
    let (code, out, err) = cli(home.path(), &short_run("100", &url, &[]));
    assert!(matches!(code, 0 | 1), "{err}");
    assert!(out.contains("Stored as run 2 in ") && out.contains("Delivered from the spool: 1 run (now run 1)."), "{out}");
    let there = listed(home.path(), &url, &[]);
    assert_eq!(there.len(), 2);
    assert_eq!((there[0]["uuid"].as_str(), there[0]["label"].as_str()), (first["uuid"].as_str(), Some("first")));
    assert_eq!(shown(home.path(), &url, "first"), first, "delivered whole");
    assert!(listed(home.path(), &spool_db, &[]).is_empty(), "gone from the spool once delivered");

    // Spooled again; two pushes at once deliver it once.
    let second = spooled("second");
    // (the second spells the database another way: the same spool)
    let other_spelling = format!("{}?sslmode=prefer&connect_timeout=20", url.replacen("postgres://", "postgresql://", 1));
    let pushes: Vec<_> = [&url, &other_spelling]
        .iter()
        .map(|u| cmd(home.path(), &["push", "--to", u]).stdout(std::process::Stdio::piped()).spawn().unwrap())
        .collect();
    let said: Vec<String> = pushes
        .into_iter()
        .map(|p| {
            let out = p.wait_with_output().unwrap();
            assert!(out.status.success());
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .collect();
    let there = listed(home.path(), &url, &[]);
    assert_eq!(there.len(), 3, "stored once: {there:?}");
    let stored: Vec<&Value> = there.iter().filter(|r| r["uuid"] == second["uuid"]).collect();
    assert_eq!(stored.len(), 1);
    // One push stored it; the other found it there, or found the spool empty. (PostgreSQL's ids
    // may leave a gap where the other's insert gave way.)
    let id = stored[0]["id"].as_i64().unwrap();
    let delivered = format!("Delivered from the spool: 1 run (now run {id}).");
    assert_eq!(said.iter().filter(|s| s.contains(&delivered)).count(), 1, "{said:?}");
    assert!(
        said.iter().all(|s| s.contains(&delivered)
            || s.contains(&format!("From the spool, already stored: run {id}."))
            || s.starts_with("No run copied")),
        "{said:?}"
    );
    assert!(listed(home.path(), &spool_db, &[]).is_empty());
    // Nothing waits: push says so and stores nothing.
    let out = ok(home.path(), &["push", "--to", &url]);
    assert!(out.starts_with("No run copied to ") && !out.contains("Delivered"), "{out}");
    assert_eq!(listed(home.path(), &url, &[]).len(), 3);
}

/// The postmaster of `own` and every process it started, stopped (`SIGSTOP`: a server that holds
/// its connections and answers nothing) or let go on (`SIGCONT`).
fn freeze(own: &pg::Cluster, signal: &str) {
    let pid_file = std::fs::read_to_string(own.dir().join("data/postmaster.pid")).unwrap();
    let pm: u32 = pid_file.lines().next().unwrap().trim().parse().unwrap();
    let mut pids = vec![pm];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pm) {
            pids.push(e.file_name().to_string_lossy().parse().unwrap());
        }
    }
    let ok = Command::new("kill").arg(format!("-{signal}")).args(pids.iter().map(u32::to_string)).status().unwrap();
    assert!(ok.success());
}

/// A server that stops answering while a run measures (its processes stopped, its connections
/// held): the end of the run waits no longer than RTGAUGE_STORE_TIMEOUT, ends with the run's own
/// status, and the run waits in the spool; the server back, `push` delivers it once.
#[test]
fn a_server_that_stops_answering_costs_the_time_limit_and_the_run_waits_in_the_spool() {
    let Some(own) = pg::own() else { return };
    let url = own.url(&own.database("frozen", true));
    let home = tempfile::tempdir().unwrap();
    let json = home.path().join("frozen.json");
    let mut child = cmd(
        home.path(),
        &[
            "run",
            "-D",
            "2s",
            "--cpus",
            "0",
            "--load",
            "none",
            "--db",
            &url,
            "--label",
            "frozen",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    child.env("RTGAUGE_STORE_TIMEOUT", "3");
    let child = measuring(child);
    freeze(&own, "STOP");
    let t = std::time::Instant::now();
    let out = child.wait_with_output();
    let waited = t.elapsed();
    freeze(&own, "CONT");
    let out = out.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    no_password(&[&err, &String::from_utf8_lossy(&out.stdout)]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    assert!(err.contains("did not take it within 3 s") && err.contains("waits in the spool"), "{err}");
    assert!(waited < std::time::Duration::from_secs(30), "the time limit held: {waited:?}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let out = ok(home.path(), &["push", "--to", &url]);
    assert!(out.contains("Delivered from the spool: 1 run (now run "), "{out}");
    let there = listed(home.path(), &url, &[]);
    assert_eq!((there.len(), there[0]["uuid"].as_str()), (1, doc["uuid"].as_str()), "{there:?}");
    assert_eq!(shown(home.path(), &url, "frozen"), doc);
}

/// The spool file in `home/spool` of the database `url` names (the `.db` named after it).
fn spool_file(home: &Path, url: &str) -> std::path::PathBuf {
    let db = url.rsplit('/').next().unwrap().split('?').next().unwrap();
    let files: Vec<_> = std::fs::read_dir(home.join("spool")).unwrap().flatten().map(|e| e.path()).collect();
    files
        .iter()
        .find(|f| {
            f.extension().is_some_and(|e| e == "db") && f.file_name().unwrap().to_string_lossy().contains(&format!("_{db}-"))
        })
        .unwrap_or_else(|| panic!("a spool store for {db} in {files:?}"))
        .clone()
}

/// The files in `home/spool` set aside as damaged.
fn set_aside(home: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(home.join("spool"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().unwrap().to_string_lossy().contains(".db.damaged-")
                && !p.to_string_lossy().ends_with("-shm")
                && !p.to_string_lossy().ends_with("-wal")
        })
        .collect();
    v.sort();
    v
}

/// The lab away when a board's run starts (nothing listening: a board up before its network, a
/// server restarting): the run measures all the same, says once where its result waits, and
/// keeps it (and every part of a rotated run) in the spool; when the server is back the next run
/// delivers them, oldest first, each once. What can never succeed — a wrong password, a
/// database that is not there — is still refused before measuring, in one line.
#[test]
fn a_board_measures_while_the_lab_is_away_and_its_runs_arrive_in_order_once() {
    let Some(own) = pg::own() else { return };
    let url = own.url(&own.database("away", true));
    let home = tempfile::tempdir().unwrap();
    own.stop();
    // A one-shot run, then a rotated run of three parts, all while nothing answers.
    let json = home.path().join("away.json");
    let (code, out, err) = cli(home.path(), &short_run("100", &url, &["--label", "away", "--json", json.to_str().unwrap()]));
    no_password(&[&out, &err]);
    assert!(matches!(code, 0 | 1), "measured, its own status: {err}");
    assert!(err.contains("does not answer now") && err.contains("the run measures all the same"), "{err}");
    assert!(
        err.contains("waits in the spool")
            && err.contains(&format!("rtgauge push --to {}", rtgauge::store::postgres::redact(&url))),
        "{err}"
    );
    let first: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(err.contains(&first["uuid"].as_str().unwrap()[..8]), "the run named: {err}");
    let (code, _, err) = cli(
        home.path(),
        &[
            "run", "-q", "-D", "3s", "--rotate", "1s", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", &url, "--label",
            "rotor",
        ],
    );
    assert!(matches!(code, 0 | 1), "{err}");
    assert!(err.matches("waits in the spool").count() >= 3, "every part waits: {err}");
    let spool = spool_file(home.path(), &url).display().to_string();
    let waiting = listed(home.path(), &spool, &[]);
    assert_eq!(waiting.len(), 4, "the run and its three parts wait: {waiting:?}");
    // Never on the lab while it is away.
    own.start_again();
    assert!(listed(home.path(), &url, &[]).is_empty());
    // Back: the next run delivers them before itself, in the order measured, each once.
    let (code, out, err) = cli(home.path(), &short_run("100", &url, &[]));
    assert!(matches!(code, 0 | 1), "{err}");
    assert!(
        out.contains("Delivered from the spool: 4 runs (now runs 1, 2, 3, 4).") && out.contains("Stored as run 5 in "),
        "{out}"
    );
    let there = listed(home.path(), &url, &[]);
    let order: Vec<&str> = there.iter().map(|r| r["uuid"].as_str().unwrap()).collect();
    let waited: Vec<&str> = waiting.iter().map(|r| r["uuid"].as_str().unwrap()).collect();
    assert_eq!(&order[..4], &waited[..], "in the order they were measured");
    assert_eq!(there.len(), 5);
    assert_eq!(shown(home.path(), &url, "away"), first, "delivered whole");
    assert!(listed(home.path(), &spool, &[]).is_empty(), "the spool is empty once delivered");
    let out = ok(home.path(), &["push", "--to", &url]);
    assert!(!out.contains("Delivered"), "nothing delivered twice: {out}");
    assert_eq!(listed(home.path(), &url, &[]).len(), 5);

    // A server that takes no more connections (for this role: CONNECTION LIMIT 0, SQLSTATE
    // 53300, as a full server says): the same; once it takes them, the next run delivers.
    let busy_db = own.database("busy", true);
    own.superuser("postgres")
        .batch_execute(&format!(
            "CREATE ROLE rtgbusy LOGIN PASSWORD 'busy-Pa55' CONNECTION LIMIT 0; GRANT ALL ON DATABASE {busy_db} TO rtgbusy"
        ))
        .unwrap();
    own.superuser(&busy_db).batch_execute("GRANT ALL ON SCHEMA public TO rtgbusy").unwrap();
    let busy = own.url_as("rtgbusy", Some("busy-Pa55"), &busy_db, "");
    let (code, _, err) = cli(home.path(), &short_run("50", &busy, &[]));
    assert!(matches!(code, 0 | 1) && err.contains("takes no more connections") && err.contains("waits in the spool"), "{err}");
    own.superuser("postgres").batch_execute("ALTER ROLE rtgbusy CONNECTION LIMIT -1").unwrap();
    let (code, out, err) = cli(home.path(), &short_run("50", &busy, &[]));
    assert!(
        matches!(code, 0 | 1) && out.contains("Delivered from the spool: 1 run (now run 1).") && out.contains("Stored as run 2"),
        "{out}{err}"
    );

    // A host that takes the connection and says nothing (a hung server, a proxy): the same,
    // within the connection's time-out at the start and at the end.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hung = format!("postgres://{}@127.0.0.1:{}/x?connect_timeout=2", pg::ROLE, silent.local_addr().unwrap().port());
    let t = std::time::Instant::now();
    let (code, _, err) = cli(home.path(), &short_run("50", &hung, &[]));
    assert!(matches!(code, 0 | 1) && err.contains("waits in the spool"), "{err}");
    assert!(t.elapsed() < std::time::Duration::from_secs(30), "{:?}", t.elapsed());
    drop(silent);

    // Stopped while the hung host holds its connection (SIGTERM before the connection's 20 s
    // are up): it stops at once, its result in the spool.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hung = format!("postgres://{}@127.0.0.1:{}/x?connect_timeout=20", pg::ROLE, silent.local_addr().unwrap().port());
    let child = cmd(home.path(), &["run", "-q", "-D", "30s", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", &hung])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let (status, err) = stopped(child, "TERM", std::time::Duration::from_secs(1));
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "held up {:?} by a server that does not answer: {err}",
        t.elapsed()
    );
    assert!(matches!(status.code(), Some(0 | 1)) && err.contains("waits in the spool"), "{status}: {err}");
    drop(silent);

    // What can never succeed is refused before measuring (a run of 300 s would otherwise go on).
    for (bad, says) in [
        (own.url_as(pg::ROLE, Some("Wrong-Pa55-xyz"), &own.database("away2", true), ""), "refused the password"),
        (own.url("no_such_db"), "there is no database no_such_db"),
    ] {
        let t = std::time::Instant::now();
        let (code, out, err) = cli(home.path(), &["run", "-D", "300s", "--load", "none", "--db", &bad]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says) && err.trim_end().lines().count() == 1 && out.is_empty(), "{err}");
        assert!(!err.contains("Wrong-Pa55"), "{err}");
        assert!(t.elapsed() < std::time::Duration::from_secs(60), "before measuring");
    }
    assert_eq!(listed(home.path(), &spool, &[]).len(), 0, "nothing spooled for them");
}

/// A spool damaged in several ways — its bytes overwritten at random, cut short in the middle,
/// emptied, one run's document made unreadable — is never passed over in silence: the run that
/// finds it warns, names it and where it was set aside (never deleted); `push` says the same and
/// exits 1; every run that can still be read from it is delivered, once.
#[test]
fn a_damaged_spool_is_said_set_aside_and_what_can_be_read_of_it_delivered() {
    if common::native_only("a damaged spool's handling") {
        return;
    }
    let Some(own) = pg::own() else { return };
    let home = tempfile::tempdir().unwrap();
    // Runs kept in the spool while the lab is away.
    let spool_runs = |url: &str, n: usize| {
        own.stop();
        for i in 0..n {
            let (code, _, err) = cli(home.path(), &short_run("50", url, &["--label", &format!("s{i}")]));
            assert!(matches!(code, 0 | 1) && err.contains("waits in the spool"), "{err}");
        }
        own.start_again();
        spool_file(home.path(), url)
    };
    type Damage = fn(&Path);
    let damages: [(&str, Damage, bool); 5] = [
        (
            "random bytes",
            |f| {
                let len = std::fs::metadata(f).unwrap().len() as usize;
                let bytes: Vec<u8> = (0..len).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8).collect();
                std::fs::write(f, bytes).unwrap();
            },
            true,
        ),
        (
            "cut short after its first page",
            |f| {
                // (the page size from the header: the file's end may be free pages alone)
                let head = std::fs::read(f).unwrap();
                let page = match u16::from_be_bytes([head[16], head[17]]) {
                    1 => 65536,
                    n => u64::from(n),
                };
                std::fs::OpenOptions::new().write(true).open(f).unwrap().set_len(page).unwrap();
            },
            true,
        ),
        ("emptied", |f| std::fs::write(f, b"").unwrap(), true),
        (
            "a directory at its name",
            |f| {
                std::fs::remove_file(f).unwrap();
                std::fs::create_dir(f).unwrap();
            },
            true,
        ),
        (
            "one document unreadable",
            |f| {
                let c = rusqlite::Connection::open(f).unwrap();
                c.execute("UPDATE documents SET document = x'00112233' WHERE run = (SELECT min(run) FROM documents)", [])
                    .unwrap();
            },
            false,
        ),
    ];
    for (round, (what, damage, by_push)) in damages.into_iter().enumerate() {
        let url = own.url(&own.database(&format!("dmg{round}"), true));
        let file = spool_runs(&url, 3);
        // Fold the write-ahead log in, so the damage reaches what the runs are kept in.
        rusqlite::Connection::open(&file).unwrap().execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
        let before = set_aside(home.path()).len();
        damage(&file);
        let (code, out, err) =
            if by_push { cli(home.path(), &["push", "--to", &url]) } else { cli(home.path(), &short_run("50", &url, &[])) };
        no_password(&[&out, &err]);
        let aside = set_aside(home.path());
        assert_eq!(aside.len(), before + 1, "{what}: the damaged spool set aside: {aside:?}; exit {code}: {out}{err}");
        let name =
            aside.iter().find(|p| std::fs::metadata(p).is_ok()).unwrap().file_name().unwrap().to_string_lossy().into_owned();
        assert!(err.contains("was damaged") && err.contains("set aside as") && err.contains("not deleted"), "{what}: {err}");
        assert!(aside.iter().any(|p| err.contains(&p.display().to_string())), "{what}: where it went is said: {err} ({name})");
        if by_push {
            assert_eq!(code, 1, "{what}: push fails: {out}{err}");
        } else {
            assert!(matches!(code, 0 | 1), "{what}: the run's own status: {err}");
            assert!(err.contains("could not be read"), "{what}: the unreadable run named: {err}");
        }
        let there = listed(home.path(), &url, &[]);
        let uuids: std::collections::HashSet<&str> = there.iter().map(|r| r["uuid"].as_str().unwrap()).collect();
        assert_eq!(uuids.len(), there.len(), "{what}: each stored once");
        if what == "one document unreadable" {
            // The two readable runs and the run itself; the damaged one kept aside, not lost.
            assert_eq!(there.len(), 3, "{what}: {there:?}; {out}{err}");
        }
        // Whatever could be read was delivered, and the spool is clean again.
        // (no spool at all when nothing was left to keep in a new one)
        let db = url.rsplit('/').next().unwrap().to_string();
        let left: Vec<_> = std::fs::read_dir(home.path().join("spool"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().unwrap().to_string_lossy().contains(&format!("_{db}-")) && p.extension().is_some_and(|e| e == "db")
            })
            .collect();
        for spool in left {
            assert!(listed(home.path(), &spool.display().to_string(), &[]).is_empty(), "{what}: nothing is left waiting");
        }
        let (code, out, err) = cli(home.path(), &["push", "--to", &url]);
        assert_eq!(code, 0, "{what}: a push after it finds nothing wrong: {out}{err}");
        assert!(
            err.contains("set aside as damaged") && err.contains(".db.damaged-"),
            "{what}: the file set aside is recalled: {err}"
        );
    }
}

/// No credential needs to be on the command line (where `ps` shows it to every user), each of
/// the PostgreSQL conventions tested through the binary against the real server: the password
/// only in `~/.pgpass`; host, port, database, user and password only in a service file
/// (`service=` in the URL, or `PGSERVICE`), a service file others may write refused; all of them
/// only in the environment (PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD); a client
/// certificate and key (`sslcert`/`sslkey`, or PGSSLCERT/PGSSLKEY) for a role that logs in by
/// certificate, a key others may read refused. A password written in `--db` is used, with a
/// warning that `ps` shows it.
#[test]
fn credentials_come_from_the_password_file_a_service_file_the_environment_or_a_certificate() {
    use std::os::unix::fs::PermissionsExt;
    if common::native_only("the PostgreSQL client's credentials") {
        return;
    }
    let Some(c) = pg::shared() else { return };
    let db = c.database("creds", true);
    let home = tempfile::tempdir().unwrap();
    let bare = c.url_as(pg::ROLE, None, &db, "");
    // Nothing but what the test gives: no service, no environment of the caller's.
    let clean = |args: &[&str]| {
        let mut cmd = cmd(home.path(), args);
        cmd.env("HOME", home.path()).env("PGSYSCONFDIR", home.path().join("no-such-dir"));
        for v in [
            "PGPASSWORD",
            "PGPASSFILE",
            "PGSERVICE",
            "PGSERVICEFILE",
            "PGHOST",
            "PGPORT",
            "PGDATABASE",
            "PGUSER",
            "PGSSLMODE",
            "PGSSLCERT",
            "PGSSLKEY",
            "PGSSLROOTCERT",
        ] {
            cmd.env_remove(v);
        }
        cmd
    };
    let run_ok = |mut cmd: Command, what: &str| {
        let out = cmd.output().unwrap();
        let (o, e) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
        assert!(out.status.success(), "{what}: {e}{o}");
        no_password(&[&o, &e]);
        assert!(!e.contains("warning"), "{what}: no warning: {e}");
        o
    };
    // The password file alone.
    let pgpass = home.path().join(".pgpass");
    let escaped = pg::ROLE_PASSWORD.replace('\\', "\\\\").replace(':', "\\:");
    std::fs::write(&pgpass, format!("127.0.0.1:{}:{db}:{}:{escaped}\n", c.port, pg::ROLE)).unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = run_ok(clean(&short_run("50", &bare, &[])), "~/.pgpass");
    assert!(out.contains("Stored as run 1"), "{out}");
    std::fs::remove_file(&pgpass).unwrap();
    // A service file: in the URL, or named by PGSERVICE.
    let services = home.path().join(".pg_service.conf");
    std::fs::write(
        &services,
        format!(
            "# the lab\n[other]\nhost=192.0.2.1\n\n[lab]\nhost = 127.0.0.1\nport={}\ndbname={db}\nuser={}\npassword={}\n",
            c.port,
            pg::ROLE,
            pg::ROLE_PASSWORD
        ),
    )
    .unwrap();
    std::fs::set_permissions(&services, std::fs::Permissions::from_mode(0o600)).unwrap();
    let listed = |o: &str| serde_json::from_str::<Value>(o).unwrap().as_array().unwrap().len();
    assert_eq!(listed(&run_ok(clean(&["list", "--json", "--db", "postgres://?service=lab"]), "service=")), 1);
    let mut by_env = clean(&["list", "--json", "--db", "postgresql://"]);
    by_env.env("PGSERVICE", "lab");
    assert_eq!(listed(&run_ok(by_env, "PGSERVICE")), 1);
    // What the URL says wins over the service: another database (not there).
    let out = clean(&["list", "--db", "postgres:///no_such_db?service=lab"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no database no_such_db"), "{}", String::from_utf8_lossy(&out.stderr));
    for (what, mode, service, says) in [
        ("a service file others may write", 0o666, "lab", "not believed"),
        ("a password in a service file others may read", 0o644, "lab", "chmod 600"),
        ("a service that is not there", 0o600, "nowhere", "'nowhere'"),
    ] {
        std::fs::set_permissions(&services, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = clean(&["list", "--db", &format!("postgres://?service={service}")]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains(says) && err.trim_end().lines().count() == 1, "{what}: {err}");
        no_password(&[&err]);
    }
    std::fs::remove_file(&services).unwrap();
    // The environment alone.
    let mut env = clean(&["list", "--json", "--db", "postgres://"]);
    env.env("PGHOST", "127.0.0.1").env("PGPORT", c.port.to_string()).env("PGDATABASE", &db).env("PGUSER", pg::ROLE);
    env.env("PGPASSWORD", pg::ROLE_PASSWORD);
    assert_eq!(listed(&run_ok(env, "PG* variables")), 1);
    // A password in --db: taken, and warned of.
    let out = common::rtgauge_as_written(&["list", "--db", &c.url(&db)])
        .env("HOME", home.path())
        .env_remove("PGPASSWORD")
        .env_remove("PGSERVICE")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.contains("shown to every user of this machine (ps)") && err.contains("PGPASSWORD"),
        "{err}"
    );
    no_password(&[&err]);

    // A client certificate.
    if !c.tls() {
        common::skip(common::Skip::Missing, "client certificates: openssl made no certificate (apt-get install openssl)");
        return;
    }
    let certdb = format!("{db}_cert");
    c.superuser("postgres").batch_execute(&format!("CREATE DATABASE {certdb} OWNER {}", pg::CERT_ROLE)).unwrap();
    let (crt, key) = c.client_certificate();
    let mine = home.path().join("client.key");
    std::fs::copy(&key, &mine).unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ca = c.certificate().display().to_string();
    let url =
        |q: &str| format!("postgres://{}@localhost:{}/{certdb}?sslmode=verify-full&sslrootcert={ca}{q}", pg::CERT_ROLE, c.port);
    let with_cert = url(&format!("&sslcert={}&sslkey={}", crt.display(), mine.display()));
    let out = run_ok(clean(&short_run("50", &with_cert, &[])), "sslcert");
    assert!(out.contains("Stored as run 1"), "{out}");
    let mut by_env = clean(&["list", "--json", "--db", &url("")]);
    by_env.env("PGSSLCERT", &crt).env("PGSSLKEY", &mine);
    assert_eq!(listed(&run_ok(by_env, "PGSSLCERT")), 1);
    // No certificate: the server refuses the role; a key others may read: refused before.
    let out = clean(&["list", "--db", &url("")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = clean(&["list", "--db", &with_cert]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(2) && err.contains("chmod 600") && err.trim_end().lines().count() == 1, "{err}");
}

/// How a command stopped by a signal ended: `Ok(code)` for an exit, `Err(signal)` when the
/// signal ended it.
fn ending(status: std::process::ExitStatus) -> Result<i32, i32> {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => Ok(c),
        (None, Some(s)) => Err(s),
        _ => unreachable!("a process ends by an exit or a signal"),
    }
}

/// Sends `sig` to `child` once it has run `after`, and waits at most 30 s for its end.
fn stopped(mut child: std::process::Child, sig: &str, after: std::time::Duration) -> (std::process::ExitStatus, String) {
    std::thread::sleep(after);
    common::signal(&child, sig);
    let t = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(t.elapsed() < std::time::Duration::from_secs(30), "still running 30 s after SIG{sig}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// SIGTERM and SIGINT end every long-running command on both stores as documented: a forever
/// run stores its open part as `partial` and exits 0; `push` (either way between SQLite and
/// PostgreSQL), `list` and `export` end at once, ended by the signal as any Unix tool is
/// (never an abort, never a panic), leaving no half of anything: a push again completes with
/// every run stored once, an export's file is whole or not there. (`serve`: tests/serve.rs.)
#[test]
fn sigterm_and_sigint_end_every_long_running_command_cleanly_on_both_stores() {
    if common::native_only("how the commands stop on signals") {
        return;
    }
    let Some(c) = pg::shared() else { return };
    let url = c.url(&c.database("signals", true));
    let home = tempfile::tempdir().unwrap();
    let local = home.path().join("runs.db").display().to_string();
    // A store of 40 runs (distinct files: distinct runs).
    let src = std::fs::read_to_string(fixture("oslat.json")).unwrap();
    for i in 0..40 {
        let f = home.path().join(format!("o{i}.json"));
        let mut v: Value = serde_json::from_str(&src).unwrap();
        v["rtgauge-test-copy"] = i.into();
        std::fs::write(&f, v.to_string()).unwrap();
        ok(home.path(), &["import", "--db", &local, "--label", &format!("copy-{i}"), f.to_str().unwrap()]);
    }
    let quick = std::time::Duration::from_millis(150);
    let clean = |what: &str, status: std::process::ExitStatus, err: &str| {
        assert!(!err.contains("panicked") && !err.contains("runtime"), "{what}: {err}");
        match ending(status) {
            Ok(0) => {}
            Err(s) if s == libc::SIGTERM || s == libc::SIGINT => {}
            other => panic!("{what}: ended {other:?}: {err}"),
        }
    };
    for (from, to, sig) in [(&local, &url, "TERM"), (&url, &home.path().join("back.db").display().to_string(), "INT")] {
        let child = cmd(home.path(), &["push", "--db", from, "--to", to])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (status, err) = stopped(child, sig, quick);
        clean(&format!("push to {to} on SIG{sig}"), status, &err);
        // Again, to the end: every run there once.
        ok(home.path(), &["push", "--db", from, "--to", to]);
        let there = listed(home.path(), to, &[]);
        assert_eq!(there.len(), 40, "{to}");
        assert_eq!(uuids(&there).iter().collect::<std::collections::HashSet<_>>().len(), 40, "each once");
    }
    for db in [&local, &url] {
        for sig in ["TERM", "INT"] {
            let child = cmd(home.path(), &["list", "--json", "--db", db])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let (status, err) = stopped(child, sig, std::time::Duration::from_millis(30));
            clean(&format!("list of {db} on SIG{sig}"), status, &err);
            let file = home.path().join(format!("export-{sig}.csv"));
            let _ = std::fs::remove_file(&file);
            let child = cmd(home.path(), &["export", "last", "--db", db, "-f", "json", "-o", file.to_str().unwrap()])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let (status, err) = stopped(child, sig, std::time::Duration::from_millis(30));
            clean(&format!("export of {db} on SIG{sig}"), status, &err);
            if file.exists() {
                serde_json::from_slice::<Value>(&std::fs::read(&file).unwrap()).expect("an export's file is whole");
            }
        }
        // A forever run, rotated: its open part stored as partial, exit 0.
        let before = listed(home.path(), db, &[]).len();
        for sig in ["TERM", "INT"] {
            let child = measuring(cmd(
                home.path(),
                &["run", "-q", "-D", "forever", "--rotate", "1s", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", db],
            ));
            let (status, err) = stopped(child, sig, std::time::Duration::from_millis(300));
            assert_eq!(ending(status), Ok(0), "run -D forever on {db}, SIG{sig}: {err}");
        }
        let after = listed(home.path(), db, &[]);
        assert!(after.len() >= before + 2, "each forever run kept its open part: {} then {}", before, after.len());
        assert!(after.iter().filter(|r| r["status"] == "partial").count() >= 2, "{after:?}");
    }
}

/// A run whose document was edited in its store (a start in 2099, after its end) is not pushed:
/// a copy between stores is held to what an import is held to. One line, exit 2, nothing copied.
#[test]
fn a_run_edited_in_its_store_is_not_pushed() {
    use std::io::{Read, Write};
    let home = tempfile::tempdir().unwrap();
    let local = home.path().join("runs.db").display().to_string();
    ok(home.path(), &["import", "--db", &local, &fixture("oslat.json")]);
    let c = rusqlite::Connection::open(&local).unwrap();
    let blob: Vec<u8> = c.query_row("SELECT document FROM documents", [], |r| r.get(0)).unwrap();
    let mut text = String::new();
    flate2::read::ZlibDecoder::new(&blob[..]).read_to_string(&mut text).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["started_at"] = "2099-01-01T00:00:00.000Z".into();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(doc.to_string().as_bytes()).unwrap();
    c.execute("UPDATE documents SET document = ?1", [z.finish().unwrap()]).unwrap();
    drop(c);
    let to = home.path().join("lab.db").display().to_string();
    let (code, out, err) = cli(home.path(), &["push", "--db", &local, "--to", &to]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("not copied") && err.contains("started_at") && err.trim_end().lines().count() == 1, "{err}");
    assert!(listed(home.path(), &to, &[]).is_empty(), "nothing copied");
}
