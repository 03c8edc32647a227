//! serve: checks (a part of tests/serve/main.rs, whose helpers it uses).

use super::*;

// ---------------------------------------------------------------------------------------------
// The checks, on one server over one store.
// ---------------------------------------------------------------------------------------------

/// Every route of the contract, as (target, what its content type must be).
pub(crate) fn routes(db: &str, m: &Made) -> Vec<(String, &'static str)> {
    let alpha = percent(ALPHA);
    let uuid = list(db, &["--board", "epsilon-real"])[0]["uuid"].as_str().unwrap().to_string();
    let some: Vec<String> = m.alpha.iter().take(7).map(i64::to_string).chain([m.real.to_string()]).collect();
    vec![
        ("/".into(), HTML),
        (format!("/?board={alpha}&kernel=6.12.0-rt&label=nightly&since=2025-01-01&until=2030-01-01"), HTML),
        ("/?scenario=no-such-scenario&since=7d".into(), HTML),
        (format!("/board/{alpha}"), HTML),
        (format!("/board/{alpha}?before={}&since=2025-01-01", m.alpha[10]), HTML),
        (format!("/board/{}", percent(SLASHED)), HTML),
        (format!("/run/{}", m.real), HTML),
        (format!("/run/{}", m.alpha[0]), HTML),
        ("/run/last".into(), HTML),
        ("/run/real".into(), HTML),
        (format!("/run/{uuid}"), HTML),
        (format!("/compare?runs={},{}", m.alpha[0], m.alpha[23]), HTML),
        (format!("/compare?runs={}", some.join(",")), HTML),
        ("/api/boards".into(), "json"),
        ("/api/runs".into(), "json"),
        ("/api/runs?limit=1000".into(), "json"),
        (format!("/api/runs?board={alpha}&kernel=6.12.0-rt&label=nightly&since=2025-01-01&until=2030-01-01&limit=5"), "json"),
        (format!("/api/runs?board={alpha}&before={}", m.alpha[5]), "json"),
        ("/api/runs?scenario=no-such-scenario".into(), "json"),
        (format!("/api/runs/{}", m.real), "json"),
        ("/api/runs/last".into(), "json"),
        (format!("/api/runs/{uuid}"), "json"),
        (format!("/api/boards/{alpha}/series?probe=timer"), "json"),
        (format!("/api/boards/{alpha}/series?probe=timer&since=2025-02-01&until=2025-05-01&limit=3"), "json"),
        ("/static/dashboard.js".into(), "javascript"),
        ("/healthz".into(), "health"),
    ]
}

pub(crate) fn content_type_is(r: &Response, kind: &str, what: &str) {
    let ct = r.content_type();
    match kind {
        HTML => assert_eq!(ct, HTML, "{what}"),
        "json" => assert!(ct.starts_with("application/json"), "{what}: {ct}"),
        "javascript" => assert!(ct.contains("javascript"), "{what}: {ct}"),
        _ => {}
    }
}

/// Every route answers GET and HEAD with 200 and its content type (a HEAD with no body: the
/// next response on the same connection reads right); POST, PUT, PATCH and DELETE are 405 and
/// leave the store as it was.
pub(crate) fn every_route_answers(s: &Server, db: &str, m: &Made) {
    let mut c = s.conn();
    for (path, kind) in routes(db, m) {
        let r = c.get(&path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.text());
        content_type_is(&r, kind, &format!("GET {path}"));
        if kind == "health" {
            assert_eq!(r.text().trim(), "ok");
        }
        if kind == "json" {
            r.json();
        }
        if kind == HTML {
            let t = r.text();
            assert!(t.trim_start().to_ascii_lowercase().starts_with("<!doctype html"), "GET {path}: {}", &t[..t.len().min(200)]);
        }
        let h = c.request("HEAD", &path);
        assert_eq!(h.status, 200, "HEAD {path}");
        content_type_is(&h, kind, &format!("HEAD {path}"));
        assert_eq!(c.get("/healthz").text().trim(), "ok", "after HEAD {path}: no body was sent");
    }
    let before = list(db, &[]);
    for (path, _) in routes(db, m) {
        for method in ["POST", "PUT", "PATCH", "DELETE"] {
            let r = c.request(method, &path);
            assert_eq!(r.status, 405, "{method} {path}: {}", r.text());
        }
    }
    assert_eq!(list(db, &[]), before, "nothing written");
}

/// An unknown path is 404; a bad parameter 400, a run that is not there 404, each with one line
/// of text; nothing 500.
pub(crate) fn unknown_paths_and_bad_parameters_are_refused(s: &Server) {
    let mut c = s.conn();
    let more = [format!("/board/{}/more", percent(ALPHA))];
    for path in [
        "/nope",
        "/api",
        "/api/nope",
        "/api/runs/1/more",
        "/board",
        "/board/",
        "/board/no-such-board",
        more[0].as_str(),
        "/run",
        "/run/",
        "/static/nope.js",
        "/static/../Cargo.toml",
        "/static/..%2F..%2FCargo.toml",
        "/static/%2e%2e/%2e%2e/Cargo.toml",
        "/healthz/more",
        "/index.html",
    ] {
        let r = c.get(path);
        assert_eq!(r.status, 404, "GET {path}: {}", r.text());
    }
    let alpha = percent(ALPHA);
    let bad: Vec<(String, &[u16])> = vec![
        ("/api/runs?limit=0".into(), &[400]),
        ("/api/runs?limit=1000000".into(), &[400]),
        ("/api/runs?limit=1001".into(), &[400]),
        ("/api/runs?limit=-1".into(), &[400]),
        ("/api/runs?limit=ten".into(), &[400]),
        ("/api/runs?since=garbage".into(), &[400]),
        ("/api/runs?until=garbage".into(), &[400]),
        ("/api/runs?since=2025-02-30".into(), &[400]),
        ("/api/runs?before=x".into(), &[400]),
        ("/?since=garbage".into(), &[400]),
        ("/?until=1y".into(), &[400]),
        (format!("/board/{alpha}?before=x"), &[400]),
        (format!("/board/{alpha}?since=garbage"), &[400]),
        (format!("/api/boards/{alpha}/series?probe=timer&limit=0"), &[400]),
        (format!("/api/boards/{alpha}/series?probe=timer&limit=1000000"), &[400]),
        (format!("/api/boards/{alpha}/series?probe=timer&since=garbage"), &[400]),
        ("/compare".into(), &[400]),
        ("/compare?runs=".into(), &[400]),
        ("/compare?runs=1".into(), &[400]),
        ("/compare?runs=1,2,3,4,5,6,7,8,9".into(), &[400]),
        ("/compare?runs=1,999999".into(), &[400, 404]),
        ("/run/999999".into(), &[404]),
        ("/run/no-such-label".into(), &[404]),
        ("/api/runs/999999".into(), &[404]),
        ("/api/runs/no-such-label".into(), &[404]),
    ];
    for (path, allowed) in bad {
        let r = c.get(&path);
        let text = r.text();
        assert!(allowed.contains(&r.status), "GET {path}: {} (expected one of {allowed:?}): {text}", r.status);
        let line = text.trim_end();
        assert!(!line.is_empty() && !line.contains('\n'), "GET {path}: one line of text, not {text:?}");
    }
}

/// What no route takes is refused before any route sees it, on every path: a method other than
/// GET and HEAD (OPTIONS, CONNECT and TRACE too) 405 with `Allow: GET, HEAD`; a malformed
/// percent-escape or escapes that are not UTF-8, in the path or the query, 400; a series no run
/// of the board has 400 naming it and listing the board's series. One line of text each.
pub(crate) fn strict_requests_are_refused(s: &Server) {
    let mut c = s.conn();
    let alpha = percent(ALPHA);
    for (method, target) in [
        ("OPTIONS", "/".to_string()),
        ("OPTIONS", "/api/runs".to_string()),
        ("OPTIONS", "*".to_string()),
        ("OPTIONS", "/no-such-page".to_string()),
        ("TRACE", "/".to_string()),
        ("CONNECT", format!("{}", s.addr)),
        ("CONNECT", "/api/boards".to_string()),
        ("PROPFIND", format!("/board/{alpha}")),
    ] {
        // (a new connection each: a server may close one after a CONNECT)
        let r = Conn::new(s.addr).request(method, &target);
        assert_eq!(r.status, 405, "{method} {target}: {}", r.text());
        assert_eq!(r.header("allow"), Some("GET, HEAD"), "{method} {target}");
        assert_eq!(r.text().lines().count(), 1, "{method} {target}: {}", r.text());
    }
    for (target, word) in [
        ("/api/runs?label=%ZZ".to_string(), "%ZZ"),
        ("/api/runs?label=%".to_string(), "percent-escape"),
        ("/api/runs?label=a%2".to_string(), "percent-escape"),
        ("/?label=%FF".to_string(), "UTF-8"),
        (format!("/board/{alpha}%ZZ"), "%ZZ"),
        ("/run/%C3%28".to_string(), "UTF-8"),
        (format!("/api/boards/{alpha}/series?probe=timr"), "timr"),
        (format!("/api/boards/{alpha}/series?probe=wakeup"), "wakeup"),
    ] {
        let r = c.get(&target);
        assert_eq!(r.status, 400, "GET {target}: {}", r.text());
        let text = r.text();
        assert!(text.contains(word) && text.trim_end().lines().count() == 1, "GET {target}: {text}");
    }
    // The unknown series' answer lists the board's series; a known one is answered.
    let r = c.get(&format!("/api/boards/{alpha}/series?probe=timr"));
    assert!(r.text().contains("its series: ") && r.text().contains("timer"), "{}", r.text());
    assert_eq!(c.get(&format!("/api/boards/{alpha}/series?probe=timer")).status, 200);
    assert_eq!(c.get("/api/runs?label=a%2Bb%20c").status, 200, "well-formed escapes are taken");
}

/// An idle server (no request ever, or one answered and its connection closed) stops on
/// SIGTERM and on SIGINT with status 0: nothing holds the store's connections but the server,
/// and letting them go must not abort it (on PostgreSQL it did: exit 134).
pub(crate) fn idle_servers_stop_cleanly(db: &str) {
    for sig in ["TERM", "INT"] {
        let never = Server::start(db, "127.0.0.1:0");
        std::thread::sleep(Duration::from_millis(200));
        let said = never.stop(sig);
        assert!(!said.iter().any(|l| l.contains("panic") || l.contains("runtime")), "SIG{sig}, no request: {said:?}");
        let served = Server::start(db, "127.0.0.1:0");
        assert_eq!(served.get("/api/runs?limit=1").status, 200);
        assert_eq!(served.get("/").status, 200);
        std::thread::sleep(Duration::from_millis(300));
        let said = served.stop(sig);
        assert!(!said.iter().any(|l| l.contains("panic") || l.contains("runtime")), "SIG{sig}, after requests: {said:?}");
    }
}

/// While 20 stalled clients are connected (10 sent half a request line, 10 asked for big pages
/// and read nothing), others are served within 2 s, and another process stores a run (the
/// server holds no lock on the store for them); `late-board` is stored.
pub(crate) fn stalled_clients_hold_nobody_up(s: &Server, db: &str, m: &Made) {
    let half = half_requests(s.addr, 10);
    let unread = unread_requests(s.addr, 10, &format!("/run/{}", m.real), "/api/runs?limit=1000", 100);
    // Time for the server to read what they sent and fill their sockets.
    std::thread::sleep(Duration::from_millis(500));
    let limit = bound(Duration::from_secs(2));
    for path in ["/healthz", "/api/boards", "/api/runs?limit=5", "/"] {
        let t = Instant::now();
        let r = s.get(path);
        assert_eq!(r.status, 200, "GET {path} with stalled clients connected: {}", r.text());
        assert!(t.elapsed() < limit, "GET {path} took {:?} with 20 stalled clients connected", t.elapsed());
    }
    let t = Instant::now();
    let file = fixture("cyclictest-hist-no-total-no-zero-rows.txt").display().to_string();
    ok(&["import", "--db", db, "--board", "late-board", "--label", "late", &file]);
    assert!(t.elapsed() < bound(Duration::from_secs(9)), "a store while serving stalled clients took {:?}", t.elapsed());
    drop((half, unread));
}

/// The dashboard shows what the store holds (`rtgauge list --json`, `show --json`): every board
/// and no other, every run of each, its whole document, its series' figures; pages of
/// `/api/runs` partition the runs.
pub(crate) fn it_shows_what_the_store_holds(s: &Server, db: &str) {
    let all = list(db, &[]);
    let mut by_board: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in &all {
        by_board.entry(r["board"].as_str().unwrap().to_string()).or_default().push(r.clone());
    }
    let names: BTreeSet<String> = by_board.keys().cloned().collect();
    assert_eq!(names.len(), 7, "the store as made: {names:?}");
    // /api/boards: every board, its count of runs, its first and last start, its latest run.
    let boards = s.api("/api/boards");
    let listed: BTreeMap<String, &Value> =
        boards["boards"].as_array().unwrap().iter().map(|b| (b["board"].as_str().unwrap().to_string(), b)).collect();
    assert_eq!(listed.keys().cloned().collect::<BTreeSet<_>>(), names, "/api/boards names every board and no other");
    for (name, rows) in &by_board {
        let b = listed[name];
        let starts: Vec<&str> = rows.iter().map(|r| r["started_at"].as_str().unwrap()).collect();
        let (first, last) = (*starts.iter().min().unwrap(), *starts.iter().max().unwrap());
        assert_eq!(b["runs"].as_u64(), Some(rows.len() as u64), "{name}: {b}");
        assert_eq!(b["first_started_at"], first, "{name}: {b}");
        assert_eq!(b["last_started_at"], last, "{name}: {b}");
        let latest = b["latest"]["id"].as_i64().unwrap_or_else(|| panic!("{name}: no latest run: {b}"));
        assert!(ids_of(rows).contains(&latest) && b["latest"]["started_at"] == last, "{name}: {b}");
    }
    // The fleet page: a row (a link to its page) for every board and no other.
    let fleet = s.page("/");
    assert_eq!(board_links("/", &fleet), names, "the fleet page links to every board and no other");
    for name in &names {
        assert!(shows(&fleet, name), "the fleet page names {name}");
    }
    // A filtered fleet: that board only.
    let only = format!("/?board={}", percent(SLASHED));
    assert_eq!(board_links(&only, &s.page(&only)), BTreeSet::from([SLASHED.to_string()]), "{only}");
    // The documents, as `show --json` gives them, and /api/runs/ID the same.
    let mut docs = BTreeMap::new();
    for id in ids_of(&all) {
        let doc = show_json(db, &id.to_string());
        assert_eq!(s.api(&format!("/api/runs/{id}")), doc, "/api/runs/{id} is `rtgauge show {id} --json`");
        docs.insert(id, doc);
    }
    assert_eq!(s.api("/api/runs/last"), show_json(db, "last"));
    assert_eq!(s.api("/api/runs/nightly"), show_json(db, "nightly"), "a label: its latest run");
    // Each board: its page and /api/runs list every run of it; its series every point.
    for (name, rows) in &by_board {
        let ids = ids_of(rows);
        assert_eq!(ids_of(&list(db, &["--board", name])), ids);
        let page = format!("/board/{}", percent(name));
        assert_eq!(run_links(&page, &s.page(&page)), ids, "{page} links to every run of the board and no other");
        let api = s.api(&format!("/api/runs?board={}&limit=1000", percent(name)));
        assert_eq!(ids_of(api["runs"].as_array().unwrap()), ids, "/api/runs?board={name}");
        assert!(api["next_before"].is_null(), "{name}: one page holds them all: {}", api["next_before"]);
        for row in api["runs"].as_array().unwrap() {
            let id = row["id"].as_i64().unwrap();
            let stored = all.iter().find(|r| r["id"] == id).unwrap();
            assert_eq!(row, stored, "/api/runs's row of run {id} is `list --json`'s");
        }
        let series = s.api(&format!("/api/boards/{}/series?probe=timer", percent(name)));
        assert_eq!((&series["board"], &series["series"]), (&Value::from(name.as_str()), &Value::from("timer")), "{series}");
        let points: BTreeMap<i64, &Value> =
            series["points"].as_array().unwrap().iter().map(|p| (p["run"].as_i64().unwrap(), p)).collect();
        let want: BTreeMap<i64, &Value> = ids
            .iter()
            .filter_map(|id| {
                let combined = docs[id]["combined"].as_array()?;
                combined.iter().find(|e| e["probe"] == "timer" && e["series"].is_null()).map(|e| (*id, e))
            })
            .collect();
        assert_eq!(
            points.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{name}: a point per run with a timer series"
        );
        for (id, e) in &want {
            let p = points[id];
            assert_eq!(p["max_ns"], e["max_ns"], "{name}, run {id}: the point's maximum is the document's: {p}");
            assert_eq!(p["samples"], e["samples"], "{name}, run {id}: {p}");
            assert_eq!(p["started_at"], docs[id]["started_at"], "{name}, run {id}: {p}");
        }
    }
    // Filters: the same runs as `list`'s.
    let alpha = percent(ALPHA);
    for (query, args) in [
        ("label=nightly", vec!["--label", "nightly"]),
        ("kernel=6.12.0-rt", vec!["--kernel", "6.12.0-rt"]),
        ("since=2025-03-01", vec!["--since", "2025-03-01"]),
        (
            &format!("board={alpha}&kernel=6.1.0-rt&since=2025-02-01")[..],
            vec!["--board", ALPHA, "--kernel", "6.1.0-rt", "--since", "2025-02-01"],
        ),
    ] {
        let api = s.api(&format!("/api/runs?{query}&limit=1000"));
        assert_eq!(ids_of(api["runs"].as_array().unwrap()), ids_of(&list(db, &args)), "/api/runs?{query}");
    }
    // Pages: before= and limit= partition the runs exactly.
    for (first, limit, want) in [
        ("/api/runs?limit=7".to_string(), 7, ids_of(&all)),
        (format!("/api/runs?board={alpha}&limit=5"), 5, ids_of(&by_board[ALPHA])),
        ("/api/runs?limit=1".to_string(), 1, ids_of(&all)),
    ] {
        let mut seen = Vec::new();
        let mut next = first.clone();
        let mut before = i64::MAX;
        for _ in 0..=want.len() + 1 {
            let page = s.api(&next);
            let ids: Vec<i64> = page["runs"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect();
            assert!(ids.len() <= limit, "{next}: {} rows over the limit {limit}", ids.len());
            assert!(ids.iter().all(|&i| i < before), "{next}: a run not below {before}: {ids:?}");
            seen.extend(&ids);
            match page["next_before"].as_i64() {
                Some(b) => {
                    before = b;
                    next = format!("{first}&before={b}");
                }
                None => {
                    assert!(page["next_before"].is_null(), "{next}: {}", page["next_before"]);
                    before = i64::MIN;
                    break;
                }
            }
        }
        assert_eq!(before, i64::MIN, "{first}: the pages end");
        let unique: BTreeSet<i64> = seen.iter().copied().collect();
        assert_eq!(unique.len(), seen.len(), "{first}: a run on two pages: {seen:?}");
        assert_eq!(unique, want, "{first}: the pages hold every run");
    }
}

/// Every link on the fleet page, two board pages, a run page and a compare page answers 200,
/// and none of them loads anything from elsewhere.
pub(crate) fn every_link_answers(s: &Server, m: &Made) {
    let compare = format!("/compare?runs={},{},{}", m.alpha[0], m.evil, m.real);
    let pages = [
        ("/".to_string(), false),
        (format!("/board/{}", percent(ALPHA)), false),
        (format!("/board/{}", percent(EVIL_BOARD)), false),
        (format!("/run/{}", m.real), true),
        (compare, true),
    ];
    let mut links = BTreeSet::new();
    for (page, cites) in &pages {
        links.extend(same_origin_links(page, &s.page(page), *cites));
    }
    assert!(links.len() > 20, "the pages link to their boards and runs: {links:?}");
    let mut c = s.conn();
    for l in &links {
        let r = c.get(l);
        assert_eq!(r.status, 200, "a link {l}: {}", r.text());
    }
}

/// The board name and label written to attack the page are shown escaped in every page that
/// shows them, raw in none.
pub(crate) fn names_are_escaped(s: &Server, m: &Made) {
    let board = format!("/board/{}", percent(EVIL_BOARD));
    let pages = [
        ("/".to_string(), true),
        (format!("/?label={}", percent(EVIL_LABEL)), true),
        (format!("/?board={}", percent(EVIL_BOARD)), true),
        (board.clone(), true),
        (format!("{board}?since=2000-01-01"), true),
        (format!("/run/{}", m.evil), false),
        (format!("/compare?runs={},{}", m.evil, m.real), false),
    ];
    for (page, names_board) in pages {
        let html = s.page(&page);
        for raw in [EVIL_BOARD, EVIL_LABEL, "<script>alert", "<img src=x"] {
            assert!(!html.contains(raw), "{page} holds {raw:?} raw");
        }
        let (attrs, _) = attributes(&html);
        assert!(!attrs.iter().any(|a| a.name == "onerror" || (a.tag == "img" && a.value == "x")), "{page}: a tag was injected");
        if names_board {
            assert!(html.contains("&lt;script&gt;alert(1)"), "{page} names the board, escaped");
        }
        assert!(html.contains("&gt;&lt;img src=x"), "{page} shows the label, escaped");
    }
}

/// A browser to render the pages with; `None` (and a note) where there is none, outside CI.
pub(crate) fn browser() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()));
    if found.is_none() {
        common::skip(common::Skip::Missing, "the pages in Chromium: no Chromium (apt-get install chromium); .ci/run installs it");
    }
    found
}

/// Runs headless Chromium on `url` with `args` (at most 120 s); its standard output.
pub(crate) fn chromium(browser: &str, args: &[String], url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,2000"])
        .args(["--no-first-run", "--disable-extensions", "--disable-background-networking", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let read = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = read(Box::new(child.stdout.take().unwrap()));
    let err = read(Box::new(child.stderr.take().unwrap()));
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("Chromium did not finish {url} within 120 s: {}", err.join().unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(!out.is_empty() || args.iter().any(|a| a.starts_with("--screenshot")), "Chromium gave nothing for {url}: {err}");
    out
}

/// Decodes a PNG file: width, height, RGB of each pixel.
pub(crate) fn decode_png(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    let per = buf.len() / (info.width * info.height) as usize;
    (info.width, info.height, buf.chunks(per).map(|p| if per >= 3 { [p[0], p[1], p[2]] } else { [p[0]; 3] }).collect())
}

/// Chromium draws the fleet, a board, a run and a compare page (screenshots that are not blank:
/// many pixels drawn in many colours) and their DOM, scripts run, holds every board (the fleet
/// page), every run of the board (its page) and the runs shown, loads nothing from elsewhere
/// and has no tag injected.
pub(crate) fn pages_in_chromium(s: &Server, db: &str, m: &Made, backend: &str) {
    let Some(browser) = browser() else { return };
    let dir = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("RTGAUGE_TEST_SHOTS").map(PathBuf::from);
    let names: BTreeSet<String> = list(db, &[]).iter().map(|r| r["board"].as_str().unwrap().to_string()).collect();
    let alpha_page = format!("/board/{}", percent(ALPHA));
    let compare = format!("/compare?runs={},{},{}", m.alpha[0], m.alpha[23], m.real);
    let pages = [
        ("fleet", "/".to_string()),
        ("board", alpha_page.clone()),
        ("evil-board", format!("/board/{}", percent(EVIL_BOARD))),
        ("run", format!("/run/{}", m.real)),
        ("compare", compare.clone()),
    ];
    for (name, page) in &pages {
        let url = format!("http://{}{page}", s.addr);
        if *name != "evil-board" {
            let shot = dir.path().join(format!("{backend}-{name}.png"));
            chromium(browser, &[format!("--screenshot={}", shot.display())], &url);
            assert!(shot.exists(), "no screenshot of {page}");
            if let Some(k) = &keep {
                std::fs::create_dir_all(k).unwrap();
                std::fs::copy(&shot, k.join(shot.file_name().unwrap())).unwrap();
            }
            let (w, h, px) = decode_png(&shot);
            assert!(w >= 1000 && h >= 1000, "{page}: a screenshot of {w}x{h}");
            let drawn = px.iter().filter(|p| p.iter().any(|&c| c < 230)).count();
            let colours: HashSet<[u8; 3]> = px.iter().copied().collect();
            assert!(drawn > 10_000, "{page} rendered almost blank: {drawn} pixels drawn of {}", px.len());
            assert!(colours.len() > 20, "{page} rendered in {} colours only", colours.len());
        }
        let dom = chromium(browser, &["--dump-dom".to_string()], &url);
        same_origin_links(page, &dom, matches!(*name, "run" | "compare"));
        let (attrs, _) = attributes(&dom);
        assert!(!attrs.iter().any(|a| a.name == "onerror"), "{page}: a tag was injected into the DOM");
        assert!(!dom.contains("<script>alert") && !dom.contains(EVIL_LABEL), "{page}: a name raw in the DOM");
        match *name {
            "fleet" => {
                for b in &names {
                    assert!(shows(&dom, b), "the fleet page's DOM names board {b}");
                }
            }
            "board" => assert_eq!(run_links(page, &dom), m.alpha.iter().copied().collect(), "{page}'s DOM links every run"),
            "evil-board" => assert!(dom.contains("&lt;script&gt;alert(1)"), "{page}'s DOM names the board"),
            "run" => assert!(dom.contains(&format!("run {} ", m.real)), "{page}'s DOM names the run"),
            _ => {
                for id in [m.alpha[0], m.alpha[23], m.real] {
                    assert!(dom.contains(&format!("run {id} ")), "{page}'s DOM names run {id}");
                }
            }
        }
    }
}

/// The whole dashboard over one store, one server answering every check in turn; SIGTERM stops
/// it within 2 s, status 0, with stalled clients connected.
pub(crate) fn the_dashboard(b: Backend) {
    let m = make_store(&b.db);
    let s = Server::start(&b.db, "127.0.0.1:0");
    assert!(s.line.contains(&format!(" at http://127.0.0.1:{}/", s.addr.port())), "{}", s.line);
    assert!(!s.line.contains(pg::ROLE_PASSWORD) && !s.line.contains(&pg::encode(pg::ROLE_PASSWORD)), "a password: {}", s.line);
    if b.name == "sqlite" {
        assert!(s.line.contains(&b.db), "it names the store: {}", s.line);
    }
    let t = Instant::now();
    every_route_answers(&s, &b.db, &m);
    unknown_paths_and_bad_parameters_are_refused(&s);
    strict_requests_are_refused(&s);
    stalled_clients_hold_nobody_up(&s, &b.db, &m);
    it_shows_what_the_store_holds(&s, &b.db);
    every_link_answers(&s, &m);
    names_are_escaped(&s, &m);
    pages_in_chromium(&s, &b.db, &m, b.name);
    eprintln!("{}: the checks took {:.1} s", b.name, t.elapsed().as_secs_f64());
    // A client that sent half a request, one that reads nothing, one kept alive and idle.
    let mut idle = s.conn();
    assert_eq!(idle.get("/healthz").status, 200);
    let stalled = (half_requests(s.addr, 2), unread_requests(s.addr, 2, "/", "/api/runs?limit=1000", 100), idle);
    std::thread::sleep(Duration::from_millis(300));
    let stderr = s.stop("TERM");
    drop(stalled);
    assert!(stderr[0].starts_with(STARTED), "its first line says where it serves: {stderr:?}");
    assert!(!stderr.iter().any(|l| l.contains("authentication")), "no warning on the loopback address: {stderr:?}");
    idle_servers_stop_cleanly(&b.db);
    drop(b.dir);
}

#[test]
pub(crate) fn the_dashboard_of_a_sqlite_store() {
    the_dashboard(Backend::sqlite());
}

#[test]
pub(crate) fn the_dashboard_of_a_postgresql_store() {
    if let Some(b) = Backend::postgres("serve") {
        the_dashboard(b);
    }
}

// ---------------------------------------------------------------------------------------------
// What needs a server of its own.
