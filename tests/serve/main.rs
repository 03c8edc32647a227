//! `rtgauge serve`, the dashboard, tested as a person would use it. A store with runs of several
//! boards (a board of 24 runs over two kernels, one whose name holds a space and a slash, one of
//! a single run, imports of cyclictest, oslat and jitterdebugger files, a real short run, and a
//! board named `<script>alert(1)</script>` whose run is labelled `"><img src=x onerror=alert(2)>`),
//! made once as a SQLite file and once as a PostgreSQL database (tests/common/pg.rs), is served by
//! the real binary on 127.0.0.1 port 0 (the port read from its first line on stderr), and one
//! server per store answers every check in turn:
//!
//! - every page and API route answers 200 with its content type, to HEAD too; POST, PUT, PATCH
//!   and DELETE are 405 and the store is unchanged; an unknown path is 404; a bad parameter 400
//!   (a missing run 404) with one line of text, never 500;
//! - while 20 stalled clients are connected (half a request line and nothing more; pipelined
//!   requests for big pages never read) a normal request is answered within 2 s, and another
//!   process stores a run meanwhile (no lock held on the store);
//! - ground truth: the fleet page and `/api/boards` name every board the store holds and no
//!   other (`rtgauge list --json`), each board page and `/api/runs?board=` every run of the board,
//!   `/api/runs/ID` is `rtgauge show ID --json`, a board's series has one point per run with the
//!   document's combined figures, `before=`/`limit=` pages partition the runs exactly;
//! - every link on the fleet, a board, a run and a compare page answers 200, and no page loads
//!   anything from elsewhere (the run report's list of sources cites its documents' addresses);
//! - a board name and a label written to attack the page appear escaped everywhere, raw nowhere;
//! - Debian's headless Chromium draws the fleet, a board, a run and a compare page (the
//!   screenshots are not blank: `RTGAUGE_TEST_SHOTS=DIR` keeps them) and their DOM holds every
//!   board and run;
//! - SIGTERM stops it within 2 s, status 0, with stalled clients connected.
//!
//! Then what needs a server of its own: SIGINT likewise; loopback by default, a warning that the
//! dashboard has no authentication on any other address; bad `--listen` values and a store that
//! is not there refused in one line (exit 2); and memory: the server's RSS after 100 000 requests
//! within 10 % of its RSS after the first 1 000.

#[path = "../common/mod.rs"]
mod common;

use common::*;
use rtgauge::report::markup::Html;
use rtgauge::serve::model::percent;
use rtgauge::store::{Location, Store};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A board name and a label as an attacker (or a careless user) would write them.
const EVIL_BOARD: &str = "<script>alert(1)</script>";
const EVIL_LABEL: &str = "\"><img src=x onerror=alert(2)>";
/// The board of many runs, and one whose name must be percent-encoded in a URL.
const ALPHA: &str = "alpha-imx8";
const SLASHED: &str = "beta rpi4/lab 2";
/// The line the server starts with (the store, then `at http://ADDR:PORT/`).
const STARTED: &str = "rtgauge serve: the dashboard of ";
const HTML: &str = "text/html; charset=utf-8";

/// `native` as a bound, five times it under an emulator (start-up and exit of an emulated
/// binary on a busy host are slow).
fn bound(native: Duration) -> Duration {
    if runner().is_some() {
        native * 5
    } else {
        native
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 by hand: a request, a response (Content-Length, chunked, or to the end), keep-alive.
// ---------------------------------------------------------------------------------------------

struct Response {
    status: u16,
    /// Names in lower case.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
    fn content_type(&self) -> String {
        self.header("content-type").unwrap_or_default().to_ascii_lowercase()
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

fn invalid(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what)
}

/// The bytes of a request for `target` (a body of `{}` for the methods that carry one).
fn request_bytes(method: &str, target: &str, addr: SocketAddr) -> Vec<u8> {
    let body = if matches!(method, "POST" | "PUT" | "PATCH") { "{}" } else { "" };
    let mut r = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: rtgauge-tests\r\nAccept: */*\r\n");
    if !body.is_empty() {
        r += &format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len());
    }
    r += "\r\n";
    r += body;
    r.into_bytes()
}

/// Reads one response; `head`: to a HEAD request (no body whatever the headers say). Gives
/// whether the connection may be used again.
fn read_response(r: &mut BufReader<TcpStream>, head: bool) -> std::io::Result<(Response, bool)> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the server closed the connection"));
    }
    let status: u16 = line
        .strip_prefix("HTTP/1.")
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| invalid(format!("not a status line: {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(invalid("the headers ended early".into()));
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').ok_or_else(|| invalid(format!("not a header: {l:?}")))?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let get = |k: &str| headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.to_ascii_lowercase());
    let mut keep = get("connection").is_none_or(|v| v != "close");
    let chunked = get("transfer-encoding").is_some_and(|v| v.contains("chunked"));
    let length = get("content-length");
    let mut body = Vec::new();
    if head || status / 100 == 1 || status == 204 || status == 304 {
    } else if chunked {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let size = line.trim().split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16).map_err(|_| invalid(format!("not a chunk size: {line:?}")))?;
            if size == 0 {
                // The trailer, up to an empty line.
                loop {
                    line.clear();
                    if r.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            line.clear();
            r.read_line(&mut line)?;
        }
    } else if let Some(n) = length {
        let n: usize = n.parse().map_err(|_| invalid(format!("not a length: {n}")))?;
        body.resize(n, 0);
        r.read_exact(&mut body)?;
    } else {
        r.read_to_end(&mut body)?;
        keep = false;
    }
    Ok((Response { status, headers, body }, keep))
}

/// A client connection to the server, kept alive between requests (made again when the server
/// closed it).
struct Conn {
    addr: SocketAddr,
    stream: Option<BufReader<TcpStream>>,
}

impl Conn {
    fn new(addr: SocketAddr) -> Conn {
        Conn { addr, stream: None }
    }

    fn request(&mut self, method: &str, target: &str) -> Response {
        self.try_request(method, target).unwrap_or_else(|e| panic!("{method} {target}: {e}"))
    }

    fn get(&mut self, target: &str) -> Response {
        self.request("GET", target)
    }

    fn try_request(&mut self, method: &str, target: &str) -> std::io::Result<Response> {
        for attempt in 0..2 {
            let fresh = self.stream.is_none();
            if fresh {
                let s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(10))?;
                // A page of a debug build on a busy host takes its time.
                s.set_read_timeout(Some(Duration::from_secs(120)))?;
                s.set_write_timeout(Some(Duration::from_secs(30)))?;
                s.set_nodelay(true)?;
                self.stream = Some(BufReader::new(s));
            }
            let Some(r) = self.stream.as_mut() else { unreachable!("connected above") };
            let sent = r.get_mut().write_all(&request_bytes(method, target, self.addr));
            match sent.and_then(|()| read_response(r, method == "HEAD")) {
                Ok((resp, keep)) => {
                    if !keep {
                        self.stream = None;
                    }
                    return Ok(resp);
                }
                // A kept connection the server closed meanwhile: once more on a new one.
                Err(e) => {
                    self.stream = None;
                    if fresh || attempt == 1 {
                        return Err(e);
                    }
                }
            }
        }
        unreachable!("the second attempt returns")
    }
}

/// `n` connections that send half a request line and then nothing.
fn half_requests(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /api/bo").unwrap();
            s
        })
        .collect()
}

/// `n` connections that ask for `first` and then `target` `times` times in a row (pipelined)
/// and never read an answer: the server's writes to them stall once the socket buffers are full.
fn unread_requests(addr: SocketAddr, n: usize, first: &str, target: &str, times: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let s = TcpStream::connect(addr).unwrap();
            s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut all = request_bytes("GET", first, addr);
            for _ in 0..times {
                all.extend(request_bytes("GET", target, addr));
            }
            // (A server that stopped reading is no failure here: what is asserted is that others
            // are still served.)
            let _ = (&s).write_all(&all);
            s
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The server.
// ---------------------------------------------------------------------------------------------

struct Server {
    child: Option<Child>,
    addr: SocketAddr,
    /// Its first line on stderr.
    line: String,
    /// Every line it wrote to stderr so far.
    lines: Arc<Mutex<Vec<String>>>,
    drain: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Starts `rtgauge serve --db DB --listen LISTEN`; returns once it says where it serves.
    fn start(db: &str, listen: &str) -> Server {
        Server::start_with(&["serve", "--db", db, "--listen", listen])
    }

    fn start_with(args: &[&str]) -> Server {
        let mut child = rtgauge(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let kept = lines.clone();
        let drain = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                kept.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        let t = Instant::now();
        let line = loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(l) if l.starts_with(STARTED) => break l,
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait().unwrap();
                    panic!("{args:?} ended ({status}) before serving: {:?}", lines.lock().unwrap());
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if t.elapsed() > Duration::from_secs(60) {
                        let _ = child.kill();
                        let _ = child.wait();
                        panic!("{args:?} did not say where it serves within 60 s: {:?}", lines.lock().unwrap());
                    }
                }
            }
        };
        let port = line
            .split(" at http://")
            .nth(1)
            .and_then(|a| a.split_whitespace().next())
            .and_then(|a| a.trim_end_matches('/').rsplit(':').next())
            .and_then(|p| p.parse::<u16>().ok())
            .unwrap_or_else(|| panic!("no address in its first line: {line}"));
        assert_ne!(port, 0, "the real port is printed, not 0: {line}");
        Server { child: Some(child), addr: SocketAddr::from(([127, 0, 0, 1], port)), line, lines, drain: Some(drain) }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).expect("running")
    }

    fn conn(&self) -> Conn {
        Conn::new(self.addr)
    }

    /// GET `target` on a connection of its own.
    fn get(&self, target: &str) -> Response {
        self.conn().get(target)
    }

    /// GET `target`, which must answer 200: its text.
    fn page(&self, target: &str) -> String {
        let r = self.get(target);
        assert_eq!(r.status, 200, "GET {target}: {}", r.text());
        r.text()
    }

    fn api(&self, target: &str) -> Value {
        let r = self.get(target);
        assert_eq!(r.status, 200, "GET {target}: {}", r.text());
        r.json()
    }

    fn stderr(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Sends SIG`sig` and asserts the server exits within 2 s with status 0; its stderr.
    fn stop(mut self, sig: &str) -> Vec<String> {
        let mut child = self.child.take().expect("running");
        signal(&child, sig);
        let t = Instant::now();
        let limit = bound(Duration::from_secs(2));
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if t.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!("rtgauge serve did not stop within {limit:?} of SIG{sig}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(0), "SIG{sig}: {status}; {:?}", self.stderr());
        if let Some(d) = self.drain.take() {
            let _ = d.join();
        }
        self.stderr()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The store.
// ---------------------------------------------------------------------------------------------

/// A store of a test's own: a SQLite file in a temporary directory, or a fresh database of the
/// test binary's PostgreSQL cluster.
struct Backend {
    dir: tempfile::TempDir,
    db: String,
    name: &'static str,
}

impl Backend {
    fn sqlite() -> Backend {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("runs.db").to_string_lossy().into_owned();
        Backend { dir, db, name: "sqlite" }
    }

    /// `None` (a note printed) where PostgreSQL cannot start, outside CI.
    fn postgres(hint: &str) -> Option<Backend> {
        let c = pg::shared()?;
        let name = c.database(hint, true);
        Some(Backend { dir: tempfile::tempdir().unwrap(), db: c.url(&name), name: "postgresql" })
    }
}

/// The runs of the store that a test refers to by name.
struct Made {
    /// The runs of ALPHA, oldest first.
    alpha: Vec<i64>,
    /// The run of the board EVIL_BOARD, labelled EVIL_LABEL.
    evil: i64,
    /// The real (measured) run.
    real: i64,
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(name)
}

/// The binary with `args`: the exit status and both streams as text.
fn cli(args: &[&str]) -> (i32, String, String) {
    let out = rtgauge(args).stdin(Stdio::null()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = cli(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// `rtgauge list --json --db DB EXTRA`: every run that passes, oldest first.
fn list(db: &str, extra: &[&str]) -> Vec<Value> {
    let out = ok(&[&["list", "--json", "--db", db][..], extra].concat());
    serde_json::from_str::<Value>(&out).unwrap().as_array().unwrap().clone()
}

fn ids_of(rows: &[Value]) -> BTreeSet<i64> {
    rows.iter().map(|r| r["id"].as_i64().unwrap()).collect()
}

fn show_json(db: &str, run: &str) -> Value {
    serde_json::from_str(&ok(&["show", run, "--json", "--db", db])).unwrap()
}

/// Day `day` of 2025 (from 1 January), 06:00 UTC, as the store keeps start times.
fn day_of_2025(day: u64) -> String {
    let d = chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap() + chrono::Days::new(day);
    format!("{}T06:00:00.000Z", d.format("%Y-%m-%d"))
}

/// Fills the store at `db`: through the library's `Store::save` (an imported cyclictest run, a
/// UUID, board, kernel, start and worst case each): ALPHA's 24 runs, weekly, on two kernels;
/// SLASHED's 3; `gamma-x86`'s 1. Through the binary: a cyclictest histogram imported on
/// EVIL_BOARD labelled EVIL_LABEL, a jitterdebugger and an oslat file (a series of its own,
/// `noise`) on `delta-jd`, and a real 1-s run on `epsilon-real`.
fn make_store(db: &str) -> Made {
    let store = Store::open(&Location::of(Path::new(db))).unwrap_or_else(|e| panic!("{e}"));
    let template = rtgauge::interchange::import(&fixture("cyclictest-h100.json")).unwrap_or_else(|e| panic!("{e}"));
    let mut n = 0u128;
    let mut save = |board: &str, label: Option<&str>, kernel: &str, day: u64, scale: f64| -> i64 {
        n += 1;
        let mut r = template.clone();
        r.uuid = Some(format!("00000000-0000-4000-8000-{n:012x}").parse().unwrap());
        r.board = Some(rtgauge::audit::board::named(board));
        r.system.kernel_release = kernel.to_string();
        r.started_at = day_of_2025(day);
        // A worst case that moves from run to run (the long-term plot has something to show).
        for p in r.probes.iter_mut().chain(&mut r.combined) {
            if let Some(m) = p.max_ns.as_mut() {
                *m = (*m as f64 * scale) as u64;
            }
        }
        store.save(&mut r, label, None, None).unwrap_or_else(|e| panic!("{e}")).id
    };
    let mut alpha = Vec::new();
    for k in 0..24u64 {
        let kernel = if k < 12 { "6.1.0-rt" } else { "6.12.0-rt" };
        let label = if k % 3 == 0 { format!("alpha-{k}") } else { "nightly".to_string() };
        alpha.push(save(ALPHA, Some(&label), kernel, k * 7, 1.0 + (k % 5) as f64 * 0.5));
    }
    for (k, day) in [10, 40, 80].into_iter().enumerate() {
        save(SLASHED, None, "6.6.0-rt", day, 1.0 + k as f64);
    }
    save("gamma-x86", Some("once"), "6.12.0-rt", 100, 1.0);
    drop(store);
    let file = |f: &str| fixture(f).display().to_string();
    ok(&["import", "--db", db, "--board", EVIL_BOARD, "--label", EVIL_LABEL, &file("cyclictest-hist.txt")]);
    ok(&[
        "import",
        "--db",
        db,
        "--board",
        "delta-jd",
        "--label",
        "jd",
        &file("jitterdebugger-results.json"),
        &file("oslat.json"),
    ]);
    ok(&["run", "-q", "-D", "1s", "--warmup", "0", "--load", "none", "--board", "epsilon-real", "--label", "real", "--db", db]);
    let only = |board: &str| -> i64 {
        let rows = list(db, &["--board", board]);
        assert_eq!(rows.len(), 1, "{board}: {rows:?}");
        rows[0]["id"].as_i64().unwrap()
    };
    Made { alpha, evil: only(EVIL_BOARD), real: only("epsilon-real") }
}

mod alone;
mod checks;
mod pages;
#[allow(unused_imports)]
use {alone::*, checks::*, pages::*};
