//! Continuous runs (`-D forever`, `--rotate`) and live metrics (`--metrics`,
//! `--metrics-file`), tested as a lab would: the rotated runs' counts partition the periods
//! elapsed exactly, across an injected stall; SIGTERM keeps the open part; the parts land in
//! SQLite and PostgreSQL stores and on the dashboard as consecutive runs of one series; Debian's
//! Prometheus scrapes the metrics and its queries agree with the run's own figures; Debian's
//! node_exporter serves the metrics file. Bad input is refused in one line before measuring.
//! Every store, file and server is the test's own (temporary directories, loopback ports).

#[path = "../common/mod.rs"]
mod common;

use common::{rtgauge, signal, u, wait_until_measuring};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The CPU the tests measure (CPU 0 is left to rtgauge's own work).
const CPU: &str = "1";

/// Whether this machine has a CPU to measure beside the one rtgauge works on.
fn two_cpus() -> bool {
    let ok = common::online_cpus().len() >= 2;
    if !ok {
        common::skip(common::Skip::Here, "continuous runs need two CPUs (one measured, one for rtgauge's own work)");
    }
    ok
}

/// A store in a temporary directory of the test's own, where there are two CPUs to measure on
/// (see [`two_cpus`]).
fn store_of_its_own() -> Option<(tempfile::TempDir, String)> {
    if !two_cpus() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    Some((dir, db))
}

/// A free loopback port (bound and let go: the tests start their servers right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// GET `path` from 127.0.0.1:`port` with `accept`: (status, content type, body).
fn get(port: u16, path: &str, accept: Option<&str>) -> (u16, String, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{accept}Connection: close\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let kind = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-type:").map(|v| v.trim().to_string()))
        .unwrap_or_default();
    (status, kind, body.to_string())
}

/// GET `path`, `None` when nothing answers (the run has ended).
fn try_get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    // (HTTP/1.0: the answer is never chunked.)
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let ok = raw.lines().next().is_some_and(|l| l.split_whitespace().nth(1) == Some("200"));
    ok.then(|| raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string()))?
}

/// The stored runs of `db`, oldest first, each whole (`show --json`).
fn stored_runs(db: &str) -> Vec<Value> {
    let out = rtgauge(&["list", "--db", db, "--json", "--all"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.sort_by_key(|r| r["id"].as_i64());
    rows.iter()
        .map(|r| {
            let id = r["id"].to_string();
            let out = rtgauge(&["show", &id, "--db", db, "--json"]).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let mut doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            doc["row"] = r.clone();
            doc
        })
        .collect()
}

/// The per-CPU entry of the timer on the measured CPU.
fn timer(doc: &Value) -> &Value {
    doc["probes"].as_array().unwrap().iter().find(|p| p["probe"] == "timer" && p["cpu"] == 1).expect("timer on CPU 1")
}

/// Checks that `runs` are one series, in order: the same series, places 0.., each naming the
/// one before, each starting where the one before ended; every part but the last complete and
/// holding exactly its periods. Returns (samples + missed) over all parts.
fn check_series(runs: &[Value], rotate_ns: u64, interval_ns: u64) -> u64 {
    assert!(runs.len() >= 2, "a rotated run keeps parts: {}", runs.len());
    let series = runs[0]["continuous"]["series"].as_str().unwrap().to_string();
    let mut total = 0;
    for (k, r) in runs.iter().enumerate() {
        let c = &r["continuous"];
        assert_eq!(c["series"], series.as_str(), "one series");
        assert_eq!(u(&c["index"]), k as u64, "consecutive places");
        assert_eq!(u(&c["offset_ns"]), k as u64 * rotate_ns, "each part starts where the one before ended");
        assert_eq!(u(&c["rotate_ns"]), rotate_ns);
        let previous = if k == 0 { Value::Null } else { runs[k - 1]["uuid"].clone() };
        assert_eq!(c["previous"], previous, "part {k} names the one before");
        assert_eq!(r["row"]["series"], series.as_str(), "list shows the series");
        assert_eq!(u(&r["row"]["part"]), k as u64);
        let t = timer(r);
        let periods = u(&t["samples"]) + u(&t["missed"]) + u(&t["warmup_samples"]) + u(&t["warmup_missed"]);
        if k + 1 < runs.len() {
            assert_eq!(r["status"], "complete", "part {k} is complete");
            assert_eq!(periods, rotate_ns / interval_ns, "part {k} holds exactly its periods");
            assert!(t["timeline"].is_object(), "part {k} has its own timeline");
        }
        total += periods;
    }
    total
}

/// The periods elapsed across a cut are counted exactly once: a 9 s run rotated every 3 s, its
/// CPU stalled for 600 ms across the first cut, keeps three linked runs whose samples and
/// missed periods sum to the 9 000 periods measured, the stall's missed periods among them.
#[test]
fn rotated_runs_partition_the_periods_exactly_across_a_stall_at_the_cut() {
    let Some((_dir, db)) = store_of_its_own() else { return };
    let run = rtgauge(&[
        "run", "-q", "-D", "9s", "--rotate", "3s", "--warmup", "0", "--cpus", CPU, "-i", "1ms", "--load", "none", "--db", &db,
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Measuring from about here: the stall starts 2.7 s in and lasts 600 ms, across the cut at 3 s.
    let stall = common::stall_while_measuring(&run, 2_700, 1, 600);
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("a new series"), "the series is said: {stderr}");
    assert_eq!(stderr.matches(", part ").count(), 2, "each closed part is said: {stderr}");
    let runs = stored_runs(&db);
    assert_eq!(runs.len(), 3, "three parts of 3 s");
    assert_eq!(check_series(&runs, 3_000_000_000, 1_000_000), 9_000, "every period once");
    assert_eq!(runs[2]["status"], "complete", "the last part ends at the planned end");
    let missed: u64 = runs.iter().map(|r| u(&timer(r)["missed"])).sum();
    let stalled = u(&stall["duration_ns"]) / 1_000_000;
    assert!(missed + 2 >= stalled * 9 / 10, "the stall's {stalled} periods are missed somewhere: {missed}");
    // The list shows them as one measurement.
    let list = rtgauge(&["list", "--db", &db]).output().unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    let series = runs[0]["continuous"]["series"].as_str().unwrap();
    for k in 0..3 {
        assert!(text.contains(&format!("{} #{k}", &series[..8])), "list shows part {k}: {text}");
    }
}

/// SIGTERM ends a forever run at once and keeps the open part as `partial`; the parts before it
/// are complete and linked; starting again begins a new series, and says so.
#[test]
fn sigterm_keeps_the_open_part_and_a_restart_begins_a_new_series() {
    let Some((_dir, db)) = store_of_its_own() else { return };
    let args = ["run", "-q", "-D", "forever", "--rotate", "2s", "--warmup", "0", "-i", "1ms", "--load", "none", "--db", &db];
    let run = rtgauge(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_until_measuring(run.id());
    std::thread::sleep(Duration::from_millis(5_000));
    signal(&run, "TERM");
    let t = Instant::now();
    let out = run.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(20), "stopped in time");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let runs = stored_runs(&db);
    check_series(&runs, 2_000_000_000, 1_000_000);
    let last = runs.last().unwrap();
    assert_eq!(last["status"], "partial", "the open part is kept, partial");
    assert_eq!(last["interrupted_by"], "SIGTERM");
    assert!(u(&last["measured_ns"]) < 2_000_000_000);
    // The forever run measured CPU 1 only: CPU 0 was left to its own work.
    assert_eq!(last["config"]["cpus"], serde_json::json!([1]));
    // Again: a new series.
    let again =
        rtgauge(&["run", "-q", "-D", "3s", "--rotate", "1s", "--warmup", "0", "--load", "none", "--db", &db]).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    let runs2 = stored_runs(&db);
    let new: Vec<&Value> = runs2[runs.len()..].iter().collect();
    assert_eq!(new.len(), 3);
    assert_ne!(new[0]["continuous"]["series"], runs[0]["continuous"]["series"], "a restart begins a new series");
    assert_eq!(new[0]["continuous"]["previous"], Value::Null);
    assert!(String::from_utf8_lossy(&again.stderr).contains("a new series"));
    // The CPU left out is said, before measuring and in the last part's document.
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("CPU 0 is not measured"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(new[2]["warnings"].to_string().contains("CPU 0 is not measured"), "{}", new[2]["warnings"]);
}

/// The parts of a rotated run in a PostgreSQL store, and on the dashboard's board page of a
/// SQLite store, as consecutive runs.
#[test]
fn rotated_runs_land_in_postgresql_and_on_the_board_page_in_order() {
    if !two_cpus() {
        return;
    }
    let args = |db: &str| -> Vec<String> {
        ["run", "-q", "-D", "4s", "--rotate", "1s", "--warmup", "0", "--load", "none", "--board", "rotor", "--db", db]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    if let Some(pg) = common::pg::shared() {
        let url = pg.url(&pg.database("rotated", true));
        let spool = tempfile::tempdir().unwrap();
        let a = args(&url);
        let out = rtgauge(&a.iter().map(String::as_str).collect::<Vec<_>>()).env("XDG_DATA_HOME", spool.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let runs = stored_runs(&url);
        assert_eq!(runs.len(), 4, "four parts of 1 s in PostgreSQL");
        assert_eq!(check_series(&runs, 1_000_000_000, 1_000_000), 4_000);
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    let a = args(&db);
    let out = rtgauge(&a.iter().map(String::as_str).collect::<Vec<_>>()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = stored_runs(&db);
    check_series(&runs, 1_000_000_000, 1_000_000);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut serve = rtgauge(&["serve", "--db", &db, "--listen", &listen]).stderr(Stdio::null()).spawn().unwrap();
    let page = wait_for_page(port, "/board/rotor");
    let _ = serve.kill();
    let _ = serve.wait();
    // The board page lists its runs in the order measured: the parts one after another.
    let at: Vec<usize> = runs
        .iter()
        .map(|r| {
            let link = format!("/run/{}", r["row"]["id"]);
            page.find(&format!("\"{link}\"")).unwrap_or_else(|| panic!("the board page links {link}"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "consecutive runs, in order: {at:?}");
}

/// GETs `path` until the server answers 200 (at most 30 s); the body.
fn wait_for_page(port: u16, path: &str) -> String {
    let t = Instant::now();
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            let (status, _, body) = get(port, path, None);
            assert_eq!(status, 200, "{path}: {body}");
            return body;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "the server did not answer");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The metrics as served while measuring: the text format and OpenMetrics by `Accept`, the
/// same figures; GET only; clients that send half a request or never read do not hold up the
/// run (one that never reads is let go with a warning); the counts at the end equal the run's.
#[test]
fn metrics_are_served_in_both_formats_and_equal_the_run_at_its_end() {
    if !two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let prom = dir.path().join("rtgauge.prom");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    // Long enough for a client that never reads to be let go (after 20 s without taking anything;
    // under an emulator the server takes seconds more to fill the client's socket).
    let seconds: u64 = if common::runner().is_some() { 50 } else { 32 };
    let run = rtgauge(&[
        "run",
        "-q",
        "-D",
        &format!("{seconds}s"),
        "--warmup",
        "0",
        "--cpus",
        CPU,
        "--load",
        "none",
        "--no-store",
        "--metrics",
        &listen,
        "--json",
        json.to_str().unwrap(),
        "--metrics-buckets",
        "10us,50us,100us,1ms,1s",
        "--metrics-file",
        prom.to_str().unwrap(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    wait_until_measuring(run.id());
    std::thread::sleep(Duration::from_millis(1_500));
    // Clients that hold connections: half a request line, and whole requests (thousands, their
    // answers more than the socket's buffers hold) never read.
    let mut held = Vec::new();
    for i in 0..10 {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        if i % 2 == 0 {
            s.write_all(b"GET /metr").unwrap();
        } else {
            let _ = s.write_all(&b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(5_000));
        }
        held.push(s);
    }
    let (status, kind, text) = get(port, "/metrics", None);
    assert_eq!(status, 200);
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    assert!(text.contains("rtgauge_latency_seconds_bucket{probe=\"timer\",series=\"timer\",cpu=\"1\",le=\"5e-05\"}"), "{text}");
    assert!(!text.contains("cpu=\"0\""), "CPU 0 is not measured");
    let (status, kind, om) = get(port, "/metrics", Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"));
    assert_eq!(status, 200);
    assert!(kind.starts_with("application/openmetrics-text; version=1.0.0"), "{kind}");
    assert!(om.trim_end().ends_with("# EOF"), "OpenMetrics ends with # EOF");
    for path in ["/", "/metrics/x", "/api"] {
        assert_eq!(get(port, path, None).0, 404, "{path}");
    }
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 405"), "no write endpoint: {answer}");
    // Scraped to the end, the figures served only grow; the last ones, in the metrics file
    // written as the run ends (and served in the moment before it exits), are the run's own.
    let samples = |body: &str| -> Option<u64> {
        body.lines().find(|l| l.starts_with("rtgauge_samples_total{")).and_then(|l| l.rsplit(' ').next()?.parse().ok())
    };
    let mut run = run;
    let mut served = Vec::new();
    while run.try_wait().unwrap().is_none() {
        if let Some(v) = try_get(port, "/metrics").and_then(|b| samples(&b)) {
            served.push(v);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = run.wait_with_output().unwrap();
    drop(held);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let t = timer(&doc);
    assert_eq!(u(&t["samples"]) + u(&t["missed"]), seconds * 1_000, "the run measured every period despite the clients");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("took nothing of its answer") && stderr.contains("the measurement goes on"), "{stderr}");
    assert_eq!(stderr.matches("took nothing of its answer").count(), 1, "said once a minute at most: {stderr}");
    assert!(served.len() > 10, "scraped all along: {} answers", served.len());
    assert!(served.windows(2).all(|w| w[0] <= w[1]), "the samples served only grow: {served:?}");
    assert!(served.iter().all(|&v| v <= u(&t["samples"])), "never more than the run measured: {served:?}");
    let last = samples(&std::fs::read_to_string(&prom).unwrap());
    assert_eq!(last, Some(u(&t["samples"])), "the last figures published are the run's");
}

/// A server the test started, stopped when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Debian's `program`, or `None` (said) where it is not installed — never under CI, where
/// `.ci/run` installs it.
fn installed(program: &str, package: &str) -> Option<PathBuf> {
    let path = Path::new("/usr/bin").join(program);
    if path.exists() {
        return Some(path);
    }
    common::skip(common::Skip::Missing, &format!("{program} is not installed (apt-get install {package})"));
    None
}

/// Starts `cmd` and waits (at most 60 s) until it answers 200 at `path` on `port`.
fn start_server(mut cmd: Command, port: u16, path: &str) -> Server {
    let server = Server(cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    let t = Instant::now();
    while try_get(port, path).is_none() {
        assert!(t.elapsed() < Duration::from_secs(60), "{cmd:?} did not answer at {path}");
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

/// Prometheus's answer to `query` at `time` (unix seconds): its `data.result`.
fn promql(port: u16, query: &str, time: f64) -> Vec<Value> {
    let q = serde_urlencoded::to_string([("query", query), ("time", &format!("{time:.3}"))]).unwrap();
    let body = try_get(port, &format!("/api/v1/query?{q}")).unwrap_or_else(|| panic!("Prometheus answered no {query}"));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{query}: {v}");
    v["data"]["result"].as_array().unwrap().clone()
}

/// The bucket of `x` seconds among `bounds` (the index of the first bound at or above it).
fn bucket(bounds: &[f64], x: f64) -> usize {
    bounds.iter().position(|&b| x <= b * (1.0 + 1e-9)).unwrap_or(bounds.len())
}

/// Debian's Prometheus scrapes a 20 s run every second (loopback, a data directory of the
/// test's own): every scraped `rtgauge_samples_total` lies between the run's own counts one
/// scrape before and at its instant (the run's timeline, per second); `histogram_quantile(0.99)`
/// lands in the bucket holding the run's p99; the largest window maximum is the run's maximum
/// (a 60 ms stall, injected) in its bucket.
#[test]
fn prometheus_scrapes_figures_that_agree_with_the_run() {
    if !two_cpus() {
        return;
    }
    let Some(prometheus) = installed("prometheus", "prometheus") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (metrics_port, prom_port) = (free_port(), free_port());
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            // Twice per window (1 s), as docs/continuous.md asks: a scrape every window could
            // miss one window's maximum between two scrapes.
            "global:\n  scrape_interval: 500ms\n  scrape_timeout: 500ms\nscrape_configs:\n  - job_name: rtgauge\n    \
             static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
        ),
    )
    .unwrap();
    let mut cmd = Command::new(prometheus);
    cmd.arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"));
    let _prometheus = start_server(cmd, prom_port, "/-/ready");
    let json = dir.path().join("r.json");
    let listen = format!("127.0.0.1:{metrics_port}");
    let run = rtgauge(&[
        "run",
        "-q",
        "-D",
        "20s",
        "--warmup",
        "0",
        "--cpus",
        CPU,
        "-i",
        "1ms",
        "--load",
        "none",
        "--no-store",
        "--metrics",
        &listen,
        "--json",
        json.to_str().unwrap(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    common::stall_while_measuring(&run, 8_000, 1, 60);
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let t = timer(&doc);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();

    // Samples: each scrape against the run's own count at that instant, within one scrape.
    let scraped = promql(prom_port, "rtgauge_samples_total{cpu=\"1\"}[2m]", now);
    assert_eq!(scraped.len(), 1, "one series for CPU 1: {scraped:?}");
    let values = scraped[0]["values"].as_array().unwrap();
    assert!(values.len() >= 10, "scraped every second: {}", values.len());
    let started = chrono::DateTime::parse_from_rfc3339(doc["started_at"].as_str().unwrap()).unwrap();
    // Period 0 starts 50 ms after the run's clock is read.
    let origin = started.timestamp_millis() as f64 / 1e3 + 0.05;
    let tl = &t["timeline"];
    let (start, window) = (u(&tl["start_ns"]) as f64 / 1e9, u(&tl["window_ns"]) as f64 / 1e9);
    let counts: Vec<u64> = tl["count"].as_array().unwrap().iter().map(u).collect();
    let counted = |until: f64, whole: bool| -> u64 {
        counts
            .iter()
            .enumerate()
            .filter(|(w, _)| {
                let (a, b) = (start + *w as f64 * window, start + (*w as f64 + 1.0) * window);
                if whole {
                    b <= until
                } else {
                    a < until
                }
            })
            .map(|(_, c)| c)
            .sum()
    };
    for v in values {
        let at = v[0].as_f64().unwrap() - origin;
        let n: u64 = v[1].as_str().unwrap().parse().unwrap();
        // Published every 250 ms; a scrape takes the last published; the clocks agree to ~50 ms.
        let (low, high) = (counted(at - 1.4, true), counted(at + 0.2, false));
        assert!(low <= n && n <= high, "scraped {n} at {at:.3} s: the run counted {low}..{high} then");
    }
    // p99: in the bucket that holds the run's own.
    let bounds: Vec<f64> = (0..=6).flat_map(|d| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(d - 6))).filter(|&b| b <= 1.0).collect();
    let p99 = promql(prom_port, "histogram_quantile(0.99, last_over_time(rtgauge_latency_seconds_bucket{cpu=\"1\"}[2m]))", now);
    let p99: f64 = p99[0]["value"][1].as_str().unwrap().parse().unwrap();
    let own = u(&t["p99_ns"]) as f64 / 1e9;
    assert_eq!(bucket(&bounds, p99), bucket(&bounds, own), "Prometheus's p99 {p99} s and the run's {own} s");
    // The worst case: the stall's, the largest window maximum.
    let max = promql(prom_port, "max_over_time(rtgauge_window_max_seconds{cpu=\"1\"}[2m])", now);
    let max: f64 = max[0]["value"][1].as_str().unwrap().parse().unwrap();
    let own = u(&t["max_ns"]) as f64 / 1e9;
    assert!(own >= 0.05, "the stall is the worst case: {own}");
    assert_eq!(bucket(&bounds, max), bucket(&bounds, own), "the largest window maximum {max} s and the run's {own} s");
}

/// `--metrics-file` for node_exporter's textfile collector: written while measuring, with the
/// run's last figures at its end; Debian's node_exporter serves it.
#[test]
fn node_exporter_serves_the_metrics_file() {
    if !two_cpus() {
        return;
    }
    let Some(exporter) = installed("prometheus-node-exporter", "prometheus-node-exporter") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rtgauge.prom");
    let json = dir.path().join("r.json");
    let run = rtgauge(&[
        "run",
        "-q",
        "-D",
        "4s",
        "--warmup",
        "0",
        "--cpus",
        CPU,
        "--load",
        "none",
        "--no-store",
        "--window",
        "1s",
        "--metrics-file",
        file.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    wait_until_measuring(run.id());
    std::thread::sleep(Duration::from_millis(2_500));
    let during = std::fs::read_to_string(&file).expect("written while measuring");
    assert!(during.contains("rtgauge_samples_total{"), "{during}");
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o644);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers.len(), 2, "no temporary file left: {leftovers:?}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let samples = u(&timer(&doc)["samples"]);
    let port = free_port();
    let mut cmd = Command::new(exporter);
    cmd.arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--collector.disable-defaults")
        .arg("--collector.textfile")
        .arg(format!("--collector.textfile.directory={}", dir.path().display()));
    let _exporter = start_server(cmd, port, "/metrics");
    let body = try_get(port, "/metrics").unwrap();
    let line = body
        .lines()
        .find(|l| l.starts_with("rtgauge_samples_total{") && l.contains("cpu=\"1\""))
        .unwrap_or_else(|| panic!("node_exporter serves the file: {body}"));
    assert_eq!(line.rsplit(' ').next().unwrap().parse::<u64>().unwrap(), samples, "the run's last figures");
    assert!(!body.lines().any(|l| l.starts_with("node_textfile_scrape_error") && l.ends_with(" 1")), "the file parses");
}

/// Bad input: each refused in one line naming the problem and the fix, exit 2, before
/// measuring (the store is never made).
#[test]
fn bad_continuous_input_is_one_line_exit_2_before_measuring() {
    if !two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = format!("127.0.0.1:{}", taken.local_addr().unwrap().port());
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "x").unwrap();
    let in_file = format!("{}/x.prom", plain.display());
    let a_dir = dir.path().join("adir");
    std::fs::create_dir(&a_dir).unwrap();
    let all = format!("0-{}", common::online_cpus().len() - 1);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["-D", "1h", "--rotate", "2h"], "longer than the run"),
        (vec!["-D", "10s", "--rotate", "500ms"], "shorter than the window"),
        (vec!["-D", "10s", "--rotate", "500ms", "--window", "200ms"], "not a whole number of windows"),
        (vec!["-D", "10s", "--rotate", "5s", "--window", "10s"], "shorter than the window"),
        (vec!["-D", "10s", "--rotate", "1500ms"], "not a whole number of windows"),
        (vec!["-D", "forever", "--rotate", "0s"], "greater than zero"),
        (vec!["--metrics", "nowhere"], "not an address and port"),
        (vec!["--metrics", "0.0.0.0:9464"], "--metrics-public"),
        (vec!["--metrics", &taken], "cannot listen there"),
        (vec!["--metrics-file", "/nonexistent-rtgauge-dir/x.prom"], "cannot write"),
        (vec!["--metrics-file", &in_file], "Not a directory"),
        (vec!["--metrics-file", a_dir.to_str().unwrap()], "it is a directory"),
        (vec!["--metrics", "127.0.0.1:0", "--metrics-buckets", "1ms,10us"], "ascending"),
        (vec!["--metrics-buckets", "1us..1s"], "applies to --metrics"),
        (vec!["--metrics-public"], "applies to --metrics"),
        (vec!["--metrics", "127.0.0.1:0", "--cpus", &all], "need a CPU rtgauge does not measure"),
        (vec!["-D", "forever", "--cpus", &all], "need a CPU rtgauge does not measure"),
        (vec!["-D", "10s", "--rotate", "2s", "--load", "cpu@1s..2s"], "has a phase"),
        (vec!["-D", "10s", "--rotate", "2s", "--trace", "100us"], "--trace follows the worst case"),
    ];
    for (args, says) in cases {
        let mut all_args = vec!["run", "-q", "--load", "none", "--db", db.to_str().unwrap()];
        if args.contains(&"--load") {
            all_args.truncate(2);
            all_args.extend(["--db", db.to_str().unwrap()]);
        }
        all_args.extend(args.iter().copied());
        let t = Instant::now();
        let out = rtgauge(&all_args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(stderr.starts_with("rtgauge: error: ") && stderr.contains(says), "{args:?} says '{says}': {stderr}");
        assert!(t.elapsed() < Duration::from_secs(10), "{args:?}: refused before measuring");
        assert!(!db.exists(), "{args:?}: nothing measured, no store made");
    }
}

/// An event-accounted probe (the noise probe: a fact only where the CPU was taken from it)
/// rotated: its quiet windows before each cut are quiet, not missed — no part counts a missed
/// window while its thread runs throughout.
#[test]
fn a_rotated_noise_probe_counts_no_quiet_window_missed() {
    let Some((_dir, db)) = store_of_its_own() else { return };
    let out = rtgauge(&[
        "run",
        "-q",
        "--measure",
        "noise@1",
        "-D",
        "4s",
        "--rotate",
        "1s",
        "--warmup",
        "0",
        "--load",
        "none",
        "--db",
        &db,
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = stored_runs(&db);
    assert_eq!(runs.len(), 4, "four parts of 1 s");
    for (k, r) in runs.iter().enumerate() {
        assert_eq!(u(&r["continuous"]["index"]), k as u64);
        let noise = r["probes"].as_array().unwrap().iter().find(|p| p["probe"] == "noise" && p["cpu"] == 1).unwrap();
        assert_eq!(u(&noise["missed"]), 0, "part {k}: no quiet window counted missed");
        assert!(!r["warnings"].to_string().contains("did not run"), "part {k}: {}", r["warnings"]);
    }
}

mod memory;
