//! store: writers (a part of tests/store/main.rs, whose helpers it uses).

use super::*;

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
pub(crate) const READER_BOUND: Duration = Duration::from_secs(5);

/// The application name the readers give the server (`PGAPPNAME`), by which the sampler tells
/// their sessions from the writers' (a writer's session shows a SELECT too, and the server's
/// view may show a statement's text beside the wait of the next one).
const READER_NAME: &str = "rtgauge-reader";

/// `runs` measuring runs (short: 100 periods on one CPU, no load), `distinct` imports of files
/// of their own, `same` imports of one and the same file and `pushes` pushes of the same 5 runs
/// from another store, all started together on one store,
/// while two readers run `list` and `show` in a loop. Every writer exits 0 and says nothing
/// went wrong; every distinct run is stored exactly once (its label once, under the id its
/// writer named); ids and UUIDs are unique; the file imported by many at once is stored once
/// (one writer stored it, every other names that run); every reader answered, exit 0, within
/// [`READER_BOUND`].
pub(crate) fn writers_at_once_through_the_binary(b: &Backend, runs: usize, distinct: usize, same: usize, pushes: usize) {
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
                        // measured is the store's, not the queue for the two CPUs. Under an
                        // emulator the time is not checked and the readers run at the writers'
                        // priority: emulated readers ahead of them starved a writer holding
                        // SQLite's lock past its busy timeout (CI, stop 46).
                        // (the password in the environment, as a user keeps it off the command line)
                        let (args, password) = password_in_environment(&[&args[..], &["--db", db]].concat());
                        let nice = if runner().is_some() { "0" } else { "-10" };
                        let mut reader = std::process::Command::new("nice");
                        reader.args(["-n", nice]).args(bin_argv()).args(&args);
                        if let Some(p) = password {
                            reader.env("PGPASSWORD", p);
                        }
                        // Named for the server's account below (PostgreSQL's own variable):
                        // a writer's wait (its migration's advisory lock, a row another writer
                        // is inserting) is a writer's, not a reader's.
                        reader.env("PGAPPNAME", READER_NAME);
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
        // for a lock, reading sessions seen).
        let sampler = b.pg.as_ref().map(|(c, name)| {
            let (stop, name) = (&stop, name.clone());
            s.spawn(move || {
                let mut admin = c.superuser("postgres");
                let mut seen = (0u64, 0i64, 0i64, 0i64);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let row = admin
                        .query_one(
                            "SELECT count(*) FILTER (WHERE state = 'active'), count(*) FILTER (WHERE wait_event_type = 'Lock'), count(*) \
                             FROM pg_stat_activity WHERE datname = $1 AND application_name = $2",
                            &[&name, &READER_NAME],
                        )
                        .unwrap();
                    seen = (
                        seen.0 + 1,
                        seen.1 + row.get::<_, i64>(0),
                        seen.2 + row.get::<_, i64>(1),
                        seen.3 + row.get::<_, i64>(2),
                    );
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
                if runner().is_some() {
                    // Emulated, a writer's SCRAM handshake with a dozen others on two CPUs
                    // took over the default 30 s (CI, stop 46): the time is the emulator's.
                    c.env("PGCONNECT_TIMEOUT", "300");
                }
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
            let (samples, reading, waiting, sessions) = sampler.join().unwrap();
            eprintln!(
                "the server seen {samples} times: {sessions} reading sessions, {reading} active, {waiting} waiting for a lock"
            );
            // The readers' sessions were seen (the name tells them): the account is theirs.
            assert!(sessions > 0, "the sampler never saw a reader's session named {READER_NAME}");
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
pub(crate) fn fifty_writers_at_once_on_postgresql_store_every_run_once_and_readers_never_wait() {
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
pub(crate) fn twelve_writers_at_once_on_sqlite_store_every_run_once_and_readers_never_wait() {
    writers_at_once_through_the_binary(&Backend::sqlite(), 3, 4, 3, 2);
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL alone: bad input through the binary.
// ---------------------------------------------------------------------------------------------
