//! Reports and comparisons of stored runs: the terminal report's text histogram holds every
//! sample; the HTML report is self-contained, has every plot and renders in a real browser
//! (Debian's headless Chromium: the screenshot is not blank); compare's ratios and verdicts are
//! the runs' own figures; `--fail-if-worse` exits 1 exactly when a figure regressed; every CPU
//! is told whether the run was long enough, stored documents without a forecast get one when
//! read, and `compare` shows the runs' forecasts side by side.

#[path = "../common/mod.rs"]
mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn db_in(dir: &tempfile::TempDir) -> String {
    dir.path().join("runs.db").to_string_lossy().into_owned()
}

/// A short real run kept in `db` under `label` (its verdict may fail: this is a VM).
fn stored_run(db: &str, label: &str, extra: &[&str]) -> Value {
    let (code, doc, out) =
        run_json(&[&["-D", "1500ms", "--warmup", "0", "--window", "250ms", "--db", db, "--label", label][..], extra].concat());
    assert!(code == 0 || code == 1 && doc["verdict"]["passed"] == false, "{}", String::from_utf8_lossy(&out.stderr));
    doc
}

fn ok(args: &[&str]) -> String {
    let out = rtgauge(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The terminal report: the summary, the placement among published figures, and a text
/// histogram whose rows count every sample of the series over all CPUs.
#[test]
fn the_terminal_report_has_a_histogram_holding_every_sample() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let doc = stored_run(&db, "t", &["--load", "cpu:workers=1@500ms..1s"]);
    let text = ok(&["report", "t", "--db", &db]);
    assert!(text.contains("Among published figures") && text.contains("indicative only"), "{text}");
    let all = doc["combined"].as_array().unwrap().iter().find(|p| p["probe"] == "timer").cloned();
    let all = all.unwrap_or_else(|| doc["probes"][0].clone());
    let section = text.split("\ntimer on all (").nth(1).expect("a histogram section");
    let counted: u64 = section
        .lines()
        .skip(1)
        .take_while(|l| l.contains('|'))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(counted, u(&all["histogram"]["total_count"]), "{section}");
    assert!(counted > 0);
}

/// Renders `html` in headless Chromium; `None` (and a note) where Chromium is not installed.
fn screenshot(html: &Path, out: &Path) -> Option<(u32, u32, Vec<u8>)> {
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| std::process::Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()));
    let Some(browser) = browser else {
        common::skip(common::Skip::Missing, "the rendering: no Chromium (apt-get install chromium); .ci/run installs it");
        return None;
    };
    let status = std::process::Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1100,2400"])
        .arg(format!("--screenshot={}", out.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(out.exists(), "no screenshot: {}", String::from_utf8_lossy(&status.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(out).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    Some((info.width, info.height, buf))
}

/// The HTML report holds everything in the file (no script, style sheet, image or font from
/// elsewhere), a histogram, a percentile curve and a timeline per series, the verdict's checks,
/// the placement and the published figures; Chromium renders it to a picture that is not blank.
#[test]
fn the_html_report_is_self_contained_and_renders_every_plot() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let doc = stored_run(
        &db,
        "h",
        &["--measure", "timer", "--measure", "wakeup", "--cycle-time", "1ms", "--load", "cpu:workers=1@500ms..1s"],
    );
    let file = dir.path().join("report.html");
    let out = rtgauge(&["report", "h", "--db", &db, "--html", file.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&file).unwrap();
    for outside in ["<script", "<link", "<img", "<iframe", " src=", "url(", "@import"] {
        assert!(!html.contains(outside), "the report reaches outside itself: {outside}");
    }
    // (the reference list at the end names its sources' addresses, as links a reader follows)
    let page = html.split("<h2 id=\"sources\">").next().unwrap();
    let requests = page.match_indices("http").filter(|(i, _)| !page[*i..].starts_with("http://www.w3.org/")).count();
    assert_eq!(requests, 0, "only XML namespaces may name a URL before the sources");
    // Per series (timer, wakeup.chain, .handler, .task): histogram, percentiles, timeline.
    for kind in ["histogram", "percentiles", "timeline"] {
        assert_eq!(html.matches(&format!("<figure class=\"plot {kind}\"><svg")).count(), 4, "{kind} plots");
    }
    // Per series "Was the run long enough?", and per series and CPU a probability-of-exceedance
    // plot; each timeline draws the CPUs' running maxima.
    let analysed = doc["probes"].as_array().unwrap().iter().filter(|p| p["forecast"].is_object()).count();
    assert!(analysed >= 4, "every series of every CPU is analysed");
    assert_eq!(html.matches("Was the run long enough? (").count(), 4, "a section per series");
    assert_eq!(html.matches("<figure class=\"plot exceedance\"><svg").count(), analysed, "a plot per series and CPU");
    let timelines: Vec<&str> = html.split("<figure class=\"plot timeline\">").skip(1).collect();
    assert!(timelines.iter().all(|t| t.split("</figure>").next().unwrap().contains("running maximum")));
    assert!(html.contains("max&lt;=250us") && html.contains("Among published figures"));
    assert!(html.matches("ARM9/ARM11 paper").count() >= 7, "the published table with its sources");
    let Some((w, h, pixels)) = screenshot(&file, &dir.path().join("shot.png")) else { return };
    assert!(w >= 1000 && h >= 2000, "{w}x{h}");
    let px: Vec<&[u8]> = pixels.chunks(pixels.len() / (w * h) as usize).collect();
    let white = px.iter().filter(|p| p[..3].iter().all(|&c| c > 245)).count();
    let mut colours: Vec<&[u8]> = px.iter().map(|p| &p[..3]).collect();
    colours.sort();
    colours.dedup();
    assert!(white < px.len() * 97 / 100, "the page rendered almost blank: {white} of {} pixels white", px.len());
    assert!(colours.len() > 50, "text and plots draw many colours, saw {}", colours.len());
}

fn compare_json(db: &str, args: &[&str]) -> (i32, Value) {
    let out = rtgauge(&[&["compare", "--db", db, "--json"][..], args].concat()).output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), v)
}

/// Compare of two real runs: each row's figures are the run's own, each ratio its figure over
/// the baseline's; the verdict for a cycle time is what the figures give (every CPU's worst
/// case within 25 % of it, nothing missed).
#[test]
fn compare_of_two_real_runs_gives_their_figures_ratios_and_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let a = stored_run(&db, "a", &[]);
    let b = stored_run(&db, "b", &["--load", "cpu:workers=1"]);
    let (code, c) = compare_json(&db, &["a", "b", "--cycle-time", "2ms"]);
    assert_eq!(code, 0, "no --fail-if-worse, no failure");
    assert_eq!(c["baseline"], 1);
    for (run, doc) in c["runs"].as_array().unwrap().iter().zip([&a, &b]) {
        let fits = doc["probes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["max_ns"].as_u64().is_some_and(|m| m <= 500_000) && u(&p["missed"]) == 0);
        assert_eq!(run["verdict"].as_bool(), Some(fits), "{run}");
    }
    let rows = c["rows"].as_array().unwrap();
    for cpu in online_cpus() {
        let row = rows.iter().find(|r| r["series"] == "timer" && r["scope"] == format!("cpu{cpu}")).expect("a row per CPU");
        let cells = row["runs"].as_array().unwrap();
        assert_eq!(cells.len(), 2);
        let entry = |doc: &Value| doc["probes"].as_array().unwrap().iter().find(|p| p["cpu"] == cpu).unwrap().clone();
        let (ea, eb) = (entry(&a), entry(&b));
        assert_eq!(cells[1]["figures"]["max"].as_f64(), eb["max_ns"].as_f64());
        assert_eq!(cells[0]["figures"]["p99"].as_f64(), ea["p99_ns"].as_f64());
        let ratio = eb["p99_ns"].as_f64().unwrap() / ea["p99_ns"].as_f64().unwrap();
        assert!((cells[1]["ratios"]["p99"].as_f64().unwrap() - ratio).abs() < 1e-9);
        assert_eq!(u(&cells[1]["samples"]), u(&eb["samples"]));
    }
    let text = ok(&["compare", "a", "b", "--db", &db]);
    assert!(text.contains("baseline") && text.contains("p99 vs base"), "{text}");
    let file = dir.path().join("ab.html");
    ok(&["compare", "a", "b", "--db", &db, "--html", file.to_str().unwrap()]);
    let html = std::fs::read_to_string(&file).unwrap();
    assert_eq!(html.matches("<figure class=\"plot histogram\"><svg").count(), 1, "the runs' histograms overlaid in one plot");
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(name)
}

/// `--fail-if-worse` on two imported cyclictest runs with known figures: exit 1 exactly when the
/// other run's p99 or maximum over all CPUs exceeds the baseline's by more than the share.
#[test]
fn fail_if_worse_exits_1_exactly_on_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    for (f, label) in [("cyclictest-h100.json", "x"), ("cyclictest-hist.txt", "y")] {
        ok(&["import", "--db", &db, "--label", label, fixture(f).to_str().unwrap()]);
    }
    let overall = |label: &str| {
        let doc: Value = serde_json::from_str(&ok(&["show", label, "--json", "--db", &db])).unwrap();
        let all = doc["combined"].as_array().unwrap().first().cloned().unwrap_or_else(|| doc["probes"][0].clone());
        (all["p99_ns"].as_f64().unwrap(), all["max_ns"].as_f64().unwrap())
    };
    let (x, y) = (overall("x"), overall("y"));
    for (base, other, (b, o)) in [("x", "y", (x, y)), ("y", "x", (y, x))] {
        for pct in [0.0, 10.0, 1000.0] {
            let worse = o.0 > b.0 * (1.0 + pct / 100.0) || o.1 > b.1 * (1.0 + pct / 100.0);
            let (code, c) = compare_json(&db, &["--baseline", base, other, "--fail-if-worse", &format!("{pct}%")]);
            assert_eq!(code, i32::from(worse), "{base} vs {other} at {pct}%: {}", c["regressions"]);
            assert_eq!(c["regressions"].as_array().unwrap().is_empty(), !worse);
        }
    }
}

/// Decodes a PNG file: width, height, RGBA pixels.
fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    let per = buf.len() / (info.width * info.height) as usize;
    (info.width, info.height, buf.chunks(per).flat_map(|p| [p[0], p[1], p[2], 255]).collect())
}

/// `--png DIR` draws every plot of the report (the same as the HTML's: a histogram, a
/// percentile curve and a timeline per series) and of a comparison as images for slides, at
/// twice the SVG's size, with their text: the title band above each plot holds dark pixels
/// (the caption), and nothing else is drawn there.
#[test]
fn report_and_compare_png_draw_every_plot_with_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let doc = stored_run(&db, "p", &["--load", "cpu:workers=1@500ms..1s"]);
    stored_run(&db, "q", &["--load", "none"]);
    let out_dir = dir.path().join("slides/png");
    let out = rtgauge(&["report", "p", "--db", &db, "--png", out_dir.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(2) && err.contains("no font found") {
        common::skip(
            common::Skip::Missing,
            &format!("no font on this system ({}); .ci/run installs fonts-dejavu-core", err.trim()),
        );
        return;
    }
    assert!(out.status.success(), "{err}");
    let html = dir.path().join("r.html");
    ok(&["report", "p", "--db", &db, "--html", html.to_str().unwrap()]);
    let figures = std::fs::read_to_string(&html).unwrap().matches("<figure class=\"plot").count();
    let mut names: Vec<String> =
        std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    // The series' three plots, and per CPU its probability of exceedance.
    let mut expected: Vec<String> = doc["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["forecast"].is_object())
        .map(|p| format!("run1-timer-exceedance-cpu{}.png", p["cpu"]))
        .collect();
    assert!(!expected.is_empty());
    expected.extend(["histogram", "percentiles", "timeline"].map(|k| format!("run1-timer-{k}.png")));
    expected.sort();
    assert_eq!(names, expected);
    assert_eq!(names.len(), figures, "one image per plot of the HTML report");
    let compared = dir.path().join("cmp");
    let out = rtgauge(&["compare", "p", "q", "--db", &db, "--png", compared.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut more: Vec<String> =
        std::fs::read_dir(&compared).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    more.sort();
    assert_eq!(more, ["compare-1-2-timer-histogram.png", "compare-1-2-timer-percentiles.png"]);
    let files = names.iter().map(|n| out_dir.join(n)).chain(more.iter().map(|n| compared.join(n)));
    for f in files {
        let (w, h, px) = decode_png(&f);
        assert_eq!((w, h), (1800, 760), "{}", f.display());
        let dark = |y0: u32, y1: u32| {
            (y0..y1)
                .flat_map(|y| (0..w).map(move |x| ((y * w + x) * 4) as usize))
                .filter(|&i| px[i..i + 3].iter().all(|&c| c < 100))
                .count()
        };
        assert!(dark(8, 64) > 200, "{}: no caption drawn (is the font used?)", f.display());
        // The curves and marks: pixels in colour (the grid, the axes and the text are grey).
        let coloured = px.chunks(4).filter(|p| p[..3].iter().max().unwrap() - p[..3].iter().min().unwrap() > 80).count();
        assert!(coloured > 1_500, "{}: no curve drawn ({coloured} pixels in colour)", f.display());
    }
}

/// Bad input is one line and exit 2, before anything is read or written.
#[test]
fn bad_report_and_compare_input_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    ok(&["import", "--db", &db, "--label", "x", fixture("cyclictest-h100.json").to_str().unwrap()]);
    let missing_dir = dir.path().join("no/such/dir/r.html");
    // --png: a destination that is a file; fonts that are not fonts, endless or missing
    let not_a_dir = dir.path().join("a-file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let not_a_font = dir.path().join("font.ttf");
    std::fs::write(&not_a_font, "not a font").unwrap();
    let png_dir = dir.path().join("png-out");
    let fifo = dir.path().join("fifo.ttf");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for args in [
        vec!["compare", "x"],
        vec!["compare", "x", "x"],
        vec!["compare", "x", "nosuchrun"],
        vec!["compare", "x", "last", "--fail-if-worse", "lots"],
        vec!["compare", "x", "last", "--fail-if-worse", "-5%"],
        vec!["compare", "x", "last", "--metrics", "p42", "--fail-if-worse", "5%"],
        vec!["compare", "x", "last", "--metrics", "max"],
        vec!["compare", "x", "last", "--cycle-time", "0"],
        vec!["compare", "x", "last", "--budget", "200%"],
        vec!["report", "nosuchrun"],
        vec!["report", "x", "--html", missing_dir.to_str().unwrap()],
        vec!["report", "x", "--png", not_a_dir.to_str().unwrap()],
        vec!["report", "x", "--png", png_dir.to_str().unwrap(), "--font", not_a_font.to_str().unwrap()],
        vec!["report", "x", "--png", png_dir.to_str().unwrap(), "--font", fifo.to_str().unwrap()],
        vec!["report", "x", "--png", png_dir.to_str().unwrap(), "--font", "/no/such/font.ttf"],
        vec!["report", "x", "--font", not_a_font.to_str().unwrap()],
        vec!["compare", "x", "last", "--png", png_dir.to_str().unwrap(), "--font", not_a_font.to_str().unwrap()],
    ] {
        let out = rtgauge(&[&args[..], &["--db", &db]].concat()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    assert!(!missing_dir.exists());
    assert!(!png_dir.exists(), "checked before anything is made");
    assert_eq!(std::fs::read(&not_a_dir).unwrap(), b"x");
}

/// A command whose standard output is a pipe nobody reads any more (its reader closed before
/// the command started): the write fails with EPIPE, never by chance.
fn into_closed_pipe(args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    rtgauge(args).stdout(writer).stderr(std::process::Stdio::piped()).output().unwrap()
}

/// Two imported runs, `x` and `y`, in `db`.
fn two_imported_runs(db: &str) {
    for (f, label) in [("cyclictest-h100.json", "x"), ("cyclictest-hist.txt", "y")] {
        ok(&["import", "--db", db, "--label", label, fixture(f).to_str().unwrap()]);
    }
}

/// `rtgauge list | head -1`: every command that prints stops quietly when the reader of its
/// output goes away — no panic, nothing on standard error, and 141 (128 + SIGPIPE, as a shell
/// shows a Unix tool that SIGPIPE ended) — whatever it prints: a table, a summary, JSON, HTML,
/// an export, help.
#[test]
fn a_reader_that_goes_away_stops_every_printing_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    two_imported_runs(&db);
    for args in [
        vec!["list"],
        vec!["list", "--json"],
        vec!["show", "x"],
        vec!["show", "x", "--json"],
        vec!["report", "x", "y"],
        vec!["report", "x", "--html", "-"],
        vec!["compare", "x", "y"],
        vec!["compare", "x", "y", "--json"],
        vec!["compare", "x", "y", "--html", "-"],
        vec!["export", "x", "--format", "csv"],
        vec!["export", "x", "--format", "json"],
        vec!["export", "x", "--format", "junit"],
    ] {
        let out = into_closed_pipe(&[&args[..], &["--db", &db]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
    for args in [vec!["scenarios"], vec!["scenarios", "worst-case"], vec!["--help"], vec!["--version"], vec!["list", "--help"]] {
        let out = into_closed_pipe(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// `rtgauge list >&-`: output asked for where standard output is closed is an error (one line,
/// exit 2), not a success that wrote nothing.
#[test]
fn output_asked_where_standard_output_is_closed_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    two_imported_runs(&db);
    for args in [
        vec!["list", "--db", &db],
        vec!["list", "--json", "--db", &db],
        vec!["show", "x", "--db", &db],
        vec!["report", "x", "--db", &db],
        vec!["report", "x", "--html", "-", "--db", &db],
        vec!["compare", "x", "y", "--json", "--db", &db],
        vec!["export", "x", "--format", "csv", "--db", &db],
        vec!["scenarios"],
        vec!["--version"],
    ] {
        let out =
            std::process::Command::new("sh").args(["-c", "exec \"$@\" >&-", "sh"]).args(bin_argv()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("standard output is closed"), "{args:?}: {err}");
    }
}

/// `report --html -` writes the page to standard output (as `--json -` does), not to a file
/// named "-"; `--html DIR` names `--html` and a file in the directory, not `--json`.
#[test]
fn html_goes_to_standard_output_with_a_dash_and_a_directory_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    two_imported_runs(&db);
    for args in [vec!["report", "x"], vec!["compare", "x", "y"]] {
        let out = rtgauge(&[&args[..], &["--html", "-", "--db", &db]].concat()).current_dir(dir.path()).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout.starts_with(b"<!DOCTYPE html>"), "{args:?}");
        assert!(!dir.path().join("-").exists(), "{args:?}: no file named '-'");
        let out = rtgauge(&[&args[..], &["--html", dir.path().to_str().unwrap(), "--db", &db]].concat()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--html") && err.contains("directory") && !err.contains("--json"), "{args:?}: {err}");
    }
}

/// A gate never passes for want of figures: a comparison against (or with) a run that measured
/// nothing, with --fail-if-worse against a CPU that measured nothing, or between runs that share
/// no series is an error (exit 2), never "no regression".
#[test]
fn a_comparison_with_nothing_to_compare_is_an_error_not_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    // cyclictest's histogram output with every count 0 (nothing measured), and with one thread
    // that counted nothing.
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "# Histogram\n000000 000000\t000000\n000001 000000\t000000\n# Total: 000000000 000000000\n").unwrap();
    let half = dir.path().join("half.txt");
    std::fs::write(&half, "# Histogram\n000019 000000\t000000\n000020 000005\t000000\n# Total: 000000005 000000000\n").unwrap();
    for (f, label) in [
        (empty, "empty"),
        (half, "half"),
        (fixture("cyclictest-hist.txt"), "full"),
        (fixture("cyclictest-h100.json"), "other"),
        (fixture("oslat.json"), "noise"),
    ] {
        ok(&["import", "--db", &db, "--label", label, f.to_str().unwrap()]);
    }
    for args in [
        vec!["--baseline", "empty", "full", "--fail-if-worse", "10%"],
        vec!["--baseline", "full", "empty", "--fail-if-worse", "10%"],
        vec!["empty", "full"],
        vec!["--baseline", "half", "full", "--fail-if-worse", "10%"],
        vec!["--baseline", "full", "half", "--fail-if-worse", "10%"],
        vec!["--baseline", "noise", "full", "--fail-if-worse", "10%"],
        vec!["full", "noise"],
    ] {
        let out = rtgauge(&[&["compare"][..], &args[..], &["--db", &db]].concat()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}{}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("No regression"), "{args:?}");
    }
    // Runs that measured the same series still compare.
    let out = rtgauge(&["compare", "--baseline", "other", "full", "--fail-if-worse", "1000000%", "--db", &db]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A summary that cannot be written — standard output a file on a full file system (a small
/// tmpfs the test mounts and fills) — is an error once the run is kept: it was lost with exit 0.
#[test]
fn a_run_whose_summary_cannot_be_written_exits_2_with_its_result_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("full");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = std::process::Command::new("mount").args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"]).arg(&mnt).status();
    assert!(mounted.unwrap().success(), "the test mounts a small tmpfs");
    let mut fill = std::fs::File::create(mnt.join("fill")).unwrap();
    while std::io::Write::write_all(&mut fill, &[0u8; 4096]).is_ok() {}
    drop(fill);
    let db = db_in(&dir);
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec {} run -q --loops 50 --warmup 0 --load none --cpus 0 --db {db} > {}",
            bin_shell(),
            mnt.join("summary.txt").display()
        ))
        .output()
        .unwrap();
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("writing to standard output failed") && err.trim_end().lines().count() == 1, "{err}");
    let shown = ok(&["show", "last", "--db", &db, "--json"]);
    let doc: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(doc["status"], "complete", "the run was kept in the store");
}

/// Text from outside in an imported run (a probe's name with an escape sequence) reaches no
/// page raw: the plots' titles and legends escape it as the rest of the report does.
#[test]
fn control_characters_reach_no_plot_of_the_html_report() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let path = dir.path().join("evil.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(fixture("cyclictest-h100.json")).unwrap()).unwrap();
    v["sysinfo"]["nodename"] = "host\u{1b}]0;PWN\u{7}".into();
    std::fs::write(&path, v.to_string()).unwrap();
    ok(&["import", "--db", &db, "--label", "ev\u{1b}[2Jil", path.to_str().unwrap()]);
    let html = dir.path().join("r.html");
    ok(&["report", "last", "--db", &db, "--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains('\u{1b}') && !page.contains('\u{7}'), "no raw control character in the page");
}

/// The percentile cells of each `probe` row of a summary's results table, by column head, and
/// the table's heads.
fn percentile_cells(text: &str) -> (Vec<String>, Vec<Vec<(String, String)>>) {
    let header = text.lines().find(|l| l.starts_with("probe ")).unwrap_or_else(|| panic!("no results table:\n{text}"));
    let heads: Vec<String> = header.split_whitespace().map(String::from).collect();
    let rows = text
        .lines()
        .skip_while(|l| !l.starts_with("probe "))
        .skip(1)
        .take_while(|l| !l.starts_with('('))
        .map(|row| {
            heads
                .iter()
                .cloned()
                .zip(row.split_whitespace().map(String::from))
                .filter(|(h, _)| h.strip_prefix('p').is_some_and(|q| q.parse::<f64>().is_ok()))
                .collect()
        })
        .collect();
    (heads, rows)
}

/// A percentile needs 10/(1 − p) values to mean more than the maximum. A cyclictest run of
/// 1 000 loops per CPU (imported: no measurement) resolves p99 (1 000 values) but not p99.9 and
/// above: those are marked in the summary, the HTML report and the JSON, the summary says how
/// long a run at its 1 ms interval must be to resolve each, and p99.9999 has no column. An
/// oslat run of 69 million values per CPU resolves every percentile: no mark, no note, and the
/// p99.9999 column. A document written before the marks (without them and without p99.9999)
/// still loads and is marked alike.
#[test]
fn percentiles_too_few_values_resolve_are_marked_not_shown_as_measured() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    ok(&["import", "--db", &db, "--label", "short", fixture("cyclictest-h100.json").to_str().unwrap()]);
    let text = ok(&["show", "short", "--db", &db]);
    let (heads, rows) = percentile_cells(&text);
    assert!(!heads.iter().any(|h| h == "p99.9999"), "no row resolves p99.9999: no column\n{text}");
    assert_eq!(rows.len(), 3, "two CPUs and all\n{text}");
    for row in &rows {
        for (head, cell) in row {
            let unresolved = ["p99.9", "p99.99", "p99.999"].contains(&head.as_str());
            assert_eq!(cell.ends_with('*'), unresolved, "{head} = {cell}\n{text}");
        }
    }
    for line in [
        "p99.9: 10 000 values (10 s of one CPU at 1 ms)",
        "p99.999: 1 000 000 values (17 min of one CPU at 1 ms)",
        "p99.9999 (shown once resolved): 10 000 000 values (2.8 h of one CPU at 1 ms)",
    ] {
        assert!(text.contains(line), "no '{line}' in\n{text}");
    }
    let doc: Value = serde_json::from_str(&ok(&["show", "short", "--json", "--db", &db])).unwrap();
    let entries = || doc["probes"].as_array().unwrap().iter().chain(doc["combined"].as_array().unwrap());
    for p in entries() {
        let listed: Vec<&str> = p["unresolved_percentiles"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(listed, ["p999_ns", "p9999_ns", "p99999_ns", "p999999_ns"], "{p}");
        assert_eq!(p["p999999_ns"], p["max_ns"], "p99.9999 of 1 000 values is the maximum");
    }
    let page = dir.path().join("short.html");
    ok(&["report", "short", "--db", &db, "--html", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<td class=\"n unres\"").count(), 9, "three percentiles in three rows");
    assert!(html.contains("p99.999: 1 000 000 values (17 min of one CPU at 1 ms)"));

    // Resolved everywhere: no mark, no note, and the p99.9999 column.
    ok(&["import", "--db", &db, "--label", "long", fixture("oslat.json").to_str().unwrap()]);
    let text = ok(&["show", "long", "--db", &db]);
    let (heads, rows) = percentile_cells(&text);
    assert!(heads.iter().any(|h| h == "p99.9999"), "{text}");
    assert!(rows.iter().flatten().all(|(_, c)| !c.ends_with('*')) && !text.contains("not resolved"), "{text}");
    let doc: Value = serde_json::from_str(&ok(&["show", "long", "--json", "--db", &db])).unwrap();
    assert_eq!(doc["probes"][0]["unresolved_percentiles"], Value::Array(vec![]));

    // A document of before: no p99.9999, no marks. It loads, and is marked from its histogram.
    let export = dir.path().join("old.json");
    std::fs::write(&export, ok(&["export", "short", "--db", &db, "--format", "json"])).unwrap();
    let mut old: Value = serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    for list in ["probes", "combined"] {
        for p in old[list].as_array_mut().unwrap() {
            let p = p.as_object_mut().unwrap();
            assert!(p.remove("p999999_ns").is_some() && p.remove("unresolved_percentiles").is_some());
        }
    }
    // A run of its own: without the UUID of the run it was made from (which the store has).
    old.as_object_mut().unwrap().remove("uuid");
    std::fs::write(&export, old.to_string()).unwrap();
    ok(&["import", "--db", &db, "--label", "old", export.to_str().unwrap()]);
    let text = ok(&["show", "old", "--db", &db]);
    let (_, rows) = percentile_cells(&text);
    assert!(rows.iter().all(|r| r.iter().filter(|(_, c)| c.ends_with('*')).count() == 3), "{text}");
}

/// A real run of 2 000 periods at 1 ms on one CPU: the percentiles its histogram's count does
/// not resolve (p99.9: 10 000 values, and above) are listed in the JSON and marked in the
/// summary, which says how long a run at 1 ms must be to resolve them and has no p99.9999
/// column.
#[test]
fn a_short_runs_high_percentiles_are_marked_unresolved() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let (code, doc, out) = run_json(&["--loops", "2000", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", &db]);
    assert!(code == 0 || code == 1, "{}", String::from_utf8_lossy(&out.stderr));
    let p = &doc["probes"][0];
    let count = u(&p["histogram"]["total_count"]);
    let expected: Vec<&str> = rtgauge::vocab::percentiles::REPORTED
        .iter()
        .filter(|q| !p[q.key].is_null() && count < q.values_needed())
        .map(|q| q.key)
        .collect();
    assert!(expected.contains(&"p9999_ns") && expected.contains(&"p999999_ns"), "{count} values");
    let listed: Vec<&str> = p["unresolved_percentiles"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(listed, expected);
    let text = ok(&["show", "last", "--db", &db]);
    let (heads, rows) = percentile_cells(&text);
    assert!(!heads.iter().any(|h| h == "p99.9999"), "{text}");
    for (head, cell) in &rows[0] {
        let key = rtgauge::vocab::percentiles::REPORTED.iter().find(|q| q.label == head).unwrap().key;
        assert_eq!(cell.ends_with('*'), listed.contains(&key), "{head} = {cell}\n{text}");
    }
    assert!(text.contains("p99.99: 100 000 values (1.7 min of one CPU at 1 ms)"), "{text}");
}

mod plots;
