//! tests/report: the SVG plots read as elements, each warning said once, and whether a run was
//! long enough in the summary, `show`, `compare` and the HTML (a part of tests/report/main.rs,
//! whose helpers it uses).

use super::*;

/// An element of an SVG plot: its tag, its attributes and (a `<text>`) its text.
struct Element {
    tag: String,
    attrs: Vec<(String, String)>,
    text: String,
}

impl Element {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
    fn num(&self, name: &str) -> f64 {
        self.attr(name).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
    }
    /// Its leftmost x: a rectangle's or a text's `x`, a line's least point.
    fn left(&self) -> f64 {
        match self.attr("points") {
            Some(p) => p.split_whitespace().filter_map(|xy| xy.split(',').next()?.parse::<f64>().ok()).fold(f64::MAX, f64::min),
            None => self.num("x"),
        }
    }
    /// The colour and opacity a mark is drawn in (a rectangle's fill, a line's stroke).
    fn ink(&self) -> (String, String) {
        let colour = if self.tag == "rect" { self.attr("fill") } else { self.attr("stroke") };
        (colour.unwrap_or("").to_string(), self.attr("opacity").unwrap_or("1").to_string())
    }
}

/// The elements of an SVG plot as `report::svg` writes it (one element a tag, attributes quoted).
fn svg_elements(svg: &str) -> Vec<Element> {
    let mut out = Vec::new();
    for chunk in svg.split('<').skip(1) {
        if chunk.starts_with('/') {
            continue;
        }
        let (head, rest) = chunk.split_once('>').unwrap_or((chunk, ""));
        let head = head.trim_end_matches('/');
        let (tag, mut attrs_text) = head.split_once(' ').unwrap_or((head, ""));
        let mut attrs = Vec::new();
        while let Some((name, after)) = attrs_text.split_once("=\"") {
            let (value, next) = after.split_once('"').unwrap_or((after, ""));
            attrs.push((name.trim().to_string(), value.to_string()));
            attrs_text = next;
        }
        out.push(Element {
            tag: tag.to_string(),
            attrs,
            text: if tag == "text" { rest.trim().to_string() } else { String::new() },
        });
    }
    out
}

/// Every plot of an HTML report or comparison: (its kind, its elements).
fn html_plots(html: &str) -> Vec<(String, Vec<Element>)> {
    html.split("<figure class=\"plot ")
        .skip(1)
        .map(|f| {
            let (kind, rest) = f.split_once('"').unwrap();
            (kind.to_string(), svg_elements(rest.split("</figure>").next().unwrap()))
        })
        .collect()
}

/// A linear axis of 500 µs bins up to the maximum put a run's every sample but one 150 ms stall
/// into its first bin: the histogram's latency axis is logarithmic, its bins of equal width on
/// it, so the body shows as many bins below 1 ms and the outlier as one bin beyond 100 ms; and
/// no tick of any plot is a bare number like "20000.0".
#[test]
fn a_histogram_with_one_150_ms_outlier_shows_the_body_of_the_distribution() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let file = dir.path().join("ct.json");
    let rows = [(12, 40), (15, 120), (18, 300), (22, 250), (27, 150), (33, 80), (41, 40), (52, 15), (70, 4), (150_000, 1)];
    std::fs::write(&file, common::cyclictest_json(&rows)).unwrap();
    ok(&["import", "--db", &db, "--label", "stall", file.to_str().unwrap()]);
    let html = ok(&["report", "stall", "--db", &db, "--html", "-"]);
    let plots = html_plots(&html);
    let (_, hist) = plots.iter().find(|(k, _)| k == "histogram").expect("a histogram");
    let tick = |label: &str| {
        hist.iter()
            .find(|e| e.tag == "text" && e.text == label)
            .map(|e| e.num("x"))
            .unwrap_or_else(|| panic!("no '{label}' tick"))
    };
    let (one_ms, hundred_ms, legend) = (tick("1 ms"), tick("100 ms"), tick("cpu0") - 30.0);
    // The CPU's bars: its colour, shaded (its legend's patch lies right of the plot).
    let bars: Vec<&Element> =
        hist.iter().filter(|e| e.tag == "rect" && e.ink() == ("#1F77B4".into(), "0.25".into()) && e.num("x") < legend).collect();
    let body = bars.iter().filter(|b| b.num("x") + b.num("width") <= one_ms).count();
    assert!(body >= rows.len() - 1, "the body in {body} bins below 1 ms, one per value");
    assert!(bars.iter().any(|b| b.num("x") >= hundred_ms), "the 150 ms sample's bin");
    for (kind, elements) in &plots {
        for t in elements.iter().filter(|e| e.tag == "text") {
            let bare = !t.text.is_empty() && t.text.contains('.') && t.text.chars().all(|c| c.is_ascii_digit() || c == '.');
            assert!(!bare, "{kind}: a tick without its unit: '{}'", t.text);
        }
    }
}

/// Windows with missed periods were red bars and load phases shaded areas without a legend
/// entry, and compare's legend ran off the plot with long run names: every plot's every mark
/// (a colour and opacity it is drawn in) is in its legend, and every line of a legend fits
/// within the plot's width.
#[test]
fn every_mark_of_every_plot_has_a_legend_entry_that_fits_the_plot() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    // A run with a timeline holding missed periods on one CPU and two load phases: an imported
    // cyclictest run, exported and given them, imported again as an rtgauge document.
    let file = dir.path().join("ct.json");
    std::fs::write(&file, common::cyclictest_json(&[(12, 200), (20, 500), (35, 290), (90, 10)])).unwrap();
    ok(&["import", "--db", &db, "--label", "plain", file.to_str().unwrap()]);
    let mut doc: Value = serde_json::from_str(&ok(&["export", "plain", "--db", &db, "-f", "json"])).unwrap();
    doc["imported"] = Value::Null;
    // A run of its own: without the UUID of the run it was made from (which the store has).
    doc.as_object_mut().unwrap().remove("uuid");
    let samples = u(&doc["probes"][0]["samples"]);
    let windows = 10;
    doc["probes"][0]["timeline"] = serde_json::json!({
        "window_ns": 100_000_000u64, "start_ns": 0,
        "count": vec![samples / windows; windows as usize],
        "missed": [0, 0, 0, 2, 0, 0, 0, 1, 0, 0],
        "max_ns": [40_000, 60_000, 50_000, 90_000, 45_000, 70_000, 80_000, 65_000, 55_000, 50_000],
        "p99_ns": [30_000, 35_000, 32_000, 36_000, 31_000, 33_000, 34_000, 35_000, 30_000, 32_000],
    });
    doc["probes"][0]["missed"] = 3.into();
    doc["phases"] = serde_json::json!([
        {"start_ns": 0, "end_ns": 400_000_000u64, "loads": [], "probes": [], "combined": []},
        {"start_ns": 400_000_000u64, "end_ns": 700_000_000u64, "loads": ["hackbench:groups=10,pipe", "cpu:policy=fifo:90"], "probes": [], "combined": []},
        {"start_ns": 700_000_000u64, "end_ns": 1_000_000_000u64, "loads": ["vm:workers=2"], "probes": [], "combined": []},
    ]);
    let timed = dir.path().join("timed.json");
    std::fs::write(&timed, doc.to_string()).unwrap();
    let long = "a-kernel-built-with-every-option-the-board-vendor-recommends";
    ok(&["import", "--db", &db, "--label", long, timed.to_str().unwrap()]);
    let report = ok(&["report", long, "--db", &db, "--html", "-"]);
    let compare = ok(&["compare", "plain", long, "--db", &db, "--html", "-"]);
    let mut kinds = Vec::new();
    for (kind, elements) in html_plots(&report).into_iter().chain(html_plots(&compare)) {
        let width = elements.iter().find(|e| e.tag == "svg").map(|e| e.num("width")).unwrap();
        // The legend's lines: text from its left edge on (its marks 24 px left of them).
        let legend_x = elements
            .iter()
            .filter(|e| e.tag == "text" && e.attr("text-anchor") == Some("start") && e.attr("opacity") == Some("1"))
            .map(|e| e.num("x"))
            .fold(f64::MAX, f64::min);
        assert!(legend_x < width, "{kind}: no legend");
        let marks: Vec<&Element> = elements
            .iter()
            .filter(|e| e.tag == "rect" || e.tag == "polyline")
            .filter(|e| !["#000000", "#FFFFFF", "none", ""].contains(&e.ink().0.as_str()))
            .collect();
        let legend: Vec<(String, String)> = marks.iter().filter(|e| e.left() >= legend_x - 30.0).map(|e| e.ink()).collect();
        for m in marks.iter().filter(|e| e.left() < legend_x - 30.0) {
            assert!(legend.contains(&m.ink()), "{kind}: a mark drawn in {:?} has no legend entry", m.ink());
        }
        for t in elements.iter().filter(|e| e.tag == "text" && e.num("x") >= legend_x) {
            // (a sans-serif face's characters average under 0.6 em)
            let right = t.num("x") + t.text.chars().count() as f64 * 0.6 * t.num("font-size");
            assert!(right <= width, "{kind}: the legend's '{}' runs off the plot ({right:.0} > {width})", t.text);
        }
        kinds.push(kind);
    }
    assert!(kinds.contains(&"timeline".to_string()) && kinds.iter().filter(|k| *k == "histogram").count() == 2, "{kinds:?}");
    // The timeline's marks are named: the missed windows and the load phases among them.
    let (_, timeline) = html_plots(&report).into_iter().find(|(k, _)| k == "timeline").unwrap();
    let texts: String = timeline.iter().filter(|e| e.tag == "text").map(|e| e.text.clone() + " ").collect();
    assert!(texts.contains("missed") && texts.contains("a load running"), "{texts}");
}

/// A warning reached twice (here a FIFO load given twice, each at or above the measurement's
/// priority) was said twice before the run and twice in the summary: each warning is said once
/// before the run, once in the summary and kept once in the result.
#[test]
fn each_warning_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let cpu = online_cpus().last().copied().unwrap_or(0).to_string();
    let out = rtgauge(&[
        "run",
        "-q",
        "--no-store",
        "--loops",
        "50",
        "--warmup",
        "0",
        "--cpus",
        &cpu,
        "--load-cpus",
        &cpu,
        "--json",
        json.to_str().unwrap(),
        "--load",
        "cpu:workers=1,policy=fifo:90",
        "--load",
        "cpu:workers=1,policy=fifo:90",
    ])
    .output()
    .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.code() == Some(0) || out.status.code() == Some(1), "{stderr}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let warnings: Vec<&str> = doc["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert!(warnings.iter().any(|w| w.contains("at or above")), "{warnings:?}");
    for w in &warnings {
        assert_eq!(warnings.iter().filter(|v| v == &w).count(), 1, "kept once: {w}");
        assert!(stdout.matches(&format!("warning: {w}")).count() <= 1, "the summary says it once: {w}\n{stdout}");
        assert!(stderr.matches(&format!("warning: {w}")).count() <= 1, "said once before the run: {w}\n{stderr}");
    }
    let rt = warnings.iter().find(|w| w.contains("at or above")).unwrap();
    assert_eq!(stdout.matches(rt).count(), 1, "{stdout}");
}

/// The rows of the first table in `section` after its header (starting with `head`): a row
/// starts with a CPU's number, or (a CPU's further run in a comparison) with 4 spaces; the notes
/// under it start with 2.
fn table_rows<'a>(section: &'a str, head: &str) -> Vec<&'a str> {
    let row = |l: &&str| l.starts_with("    ") || l.trim_start().starts_with(|c: char| c.is_ascii_digit());
    section.lines().skip_while(|l| !l.starts_with(head)).skip(1).take_while(row).collect()
}

/// Text with every run of whitespace one space (the summary wraps its notes).
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether the run was long enough, for every CPU: the run's own summary and `show` have the
/// section, a row per CPU, and for each CPU either its return levels or "not applicable: " with
/// the document's reason (never a level then); the rule of three is said.
#[test]
fn the_summary_says_for_every_cpu_whether_the_run_was_long_enough() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let (code, doc, out) = run_json(&["-D", "1500ms", "--warmup", "0", "--window", "250ms", "--load", "none", "--db", &db]);
    assert!(code == 0 || code == 1, "{}", String::from_utf8_lossy(&out.stderr));
    let summary = String::from_utf8_lossy(&out.stderr).into_owned();
    let shown = ok(&["show", "last", "--db", &db]);
    for text in [&summary, &shown] {
        let section = text.split("Was the run long enough?").nth(1).unwrap_or_else(|| panic!("no section: {text}"));
        let table = section.split("\ntimer:\n").nth(1).expect("the timer's table");
        let rows = table_rows(table, "cpu settled");
        for p in doc["probes"].as_array().unwrap().iter().filter(|p| p["probe"] == "timer") {
            let f = &p["forecast"];
            assert!(f.is_object(), "every CPU's latency series has a forecast: {p}");
            let cpu = u(&p["cpu"]);
            let row = rows.iter().find(|r| r.split_whitespace().next() == Some(&cpu.to_string())).expect("a row per CPU");
            match f["not_applicable"].as_str() {
                Some(why) => {
                    assert_eq!(row.matches("n/a").count(), 3, "no level where it does not apply: {row}");
                    assert!(flat(section).contains(&format!("not applicable: {}", flat(why))), "{section}");
                    assert!(f["return_levels"].as_array().unwrap().is_empty());
                }
                None => {
                    assert!(!row.contains("n/a") && row.matches('(').count() == 3, "1h, 1d, 1y with intervals: {row}");
                    // (each level in the unit that suits it, named in its cell)
                    let units = row.matches(") µs").count() + row.matches(") ms").count() + row.matches(") s").count();
                    assert_eq!(units, 3 - row.matches(">1h").count(), "each level with its unit: {row}");
                }
            }
        }
        assert!(flat(section).contains("by the rule of three"), "{section}");
    }
}

/// A stored document without convergence and forecast (an older version's, here a run's own
/// JSON with them removed, imported) gets them when read: `show` (text and JSON) and `compare`
/// show both runs' forecasts side by side, the same for the same figures.
#[test]
fn a_document_without_a_forecast_gets_one_when_shown_and_compared() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let doc = stored_run(&db, "new", &["--load", "none"]);
    let mut old = doc.clone();
    old.as_object_mut().unwrap().remove("uuid");
    for p in old["probes"].as_array_mut().unwrap() {
        let p = p.as_object_mut().unwrap();
        assert!(p.remove("forecast").is_some() == (p["probe"] == "timer"));
        p.remove("convergence");
    }
    let file = dir.path().join("old.json");
    std::fs::write(&file, old.to_string()).unwrap();
    ok(&["import", "--db", &db, "--label", "old", file.to_str().unwrap()]);
    let shown: Value = serde_json::from_str(&ok(&["show", "old", "--json", "--db", &db])).unwrap();
    for (p, q) in shown["probes"].as_array().unwrap().iter().zip(doc["probes"].as_array().unwrap()) {
        assert_eq!(p["forecast"], q["forecast"], "the same document gives the same forecast");
        assert_eq!(p["convergence"], q["convergence"]);
    }
    let text = ok(&["show", "old", "--db", &db]);
    assert!(text.contains("Was the run long enough?"), "{text}");
    // Compare: a row per CPU, each with both runs' cells (levels, or why not).
    let (code, c) = compare_json(&db, &["new", "old"]);
    assert_eq!(code, 0);
    let rows = c["forecasts"].as_array().unwrap();
    let cpus: Vec<u64> = doc["probes"].as_array().unwrap().iter().map(|p| u(&p["cpu"])).collect();
    assert_eq!(rows.len(), cpus.len(), "{rows:?}");
    for (row, cpu) in rows.iter().zip(&cpus) {
        assert_eq!((row["series"].as_str(), row["scope"].as_str()), (Some("timer"), Some(format!("cpu{cpu}").as_str())));
        let cells = row["runs"].as_array().unwrap();
        assert_eq!(cells.iter().map(|c| u(&c["run"])).collect::<Vec<_>>(), [1, 2]);
        for cell in cells {
            assert!(cell["not_applicable"].is_string() != (cell["return_levels"].as_array().unwrap().len() == 3), "{cell}");
        }
        assert_eq!(cells[0]["return_levels"], cells[1]["return_levels"]);
    }
    let text = ok(&["compare", "new", "old", "--db", &db]);
    let section = text.split("Was each run long enough?").nth(1).unwrap_or_else(|| panic!("{text}"));
    let table = table_rows(section, "cpu run");
    assert_eq!(table.len(), 2 * cpus.len(), "a row per CPU and run: {section}");
    let runs: Vec<&str> = table
        .iter()
        .map(|l| if l.starts_with("    ") { l.split_whitespace().next() } else { l.split_whitespace().nth(1) })
        .map(Option::unwrap)
        .collect();
    assert_eq!(runs, ["new", "old"].repeat(cpus.len()), "{section}");
}

/// The figures of an HTML page's exceedance plots, each with its CPU's heading before it
/// (`timer on cpu0`).
fn exceedance_figures(html: &str) -> Vec<(String, String)> {
    html.split("<h5>")
        .skip(1)
        .filter_map(|part| {
            let heading = part.split("</h5>").next()?.to_string();
            let figure = part.split("<figure class=\"plot exceedance\">").nth(1)?.split("</figure>").next()?.to_string();
            Some((heading, figure))
        })
        .collect()
}

/// Two rtgauge documents of one CPU with the same exponential tail (20 000 values at the
/// quantiles of an exponential distribution of scale 40 µs, as a cyclictest file, imported and
/// exported) and a timeline of 40 windows: `steady`'s window maxima in a pseudo-random order,
/// `rising`'s the same sorted, a worst case that rises in every window. Each imported under its
/// name, without a convergence or forecast (rtgauge makes its own).
fn steady_and_rising_runs(db: &str, dir: &Path) {
    let doc = common::exponential_document(dir);
    for (label, sorted) in [("steady", false), ("rising", true)] {
        let mut d = doc.clone();
        common::steady_timeline(&mut d["probes"][0], 40, sorted);
        let path = dir.join(format!("{label}.json"));
        std::fs::write(&path, d.to_string()).unwrap();
        ok(&["import", "--db", db, "--label", label, path.to_str().unwrap()]);
    }
}

/// "Was the run long enough?" in the HTML report: a run whose worst case has settled and whose
/// tail is exponential gets its tail named, its return levels listed and its plot draws the
/// fitted tail; the same values with the window maxima sorted (a worst case rising all run) are
/// "still rising" and "not applicable: <the reason>" (escaped), with the tests still listed, no
/// return level, and a plot of the measured points alone. The comparison shows both side by side.
#[test]
fn the_forecast_is_drawn_where_it_applies_and_not_applicable_is_said_where_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    steady_and_rising_runs(&db, dir.path());
    let section = |label: &str| {
        let html = ok(&["report", label, "--db", &db, "--html", "-"]);
        assert_eq!(html.matches("Was the run long enough? (timer)").count(), 1, "{label}");
        let figures = exceedance_figures(&html);
        assert_eq!(figures.len(), 1, "{label}: a plot for its one CPU");
        assert_eq!(figures[0].0, "timer on cpu0");
        assert!(figures[0].1.starts_with("<svg") && figures[0].1.contains("measured"));
        let section = html.split("<h5>timer on cpu0</h5>").nth(1).unwrap().split("<h3>").next().unwrap().to_string();
        (section, figures[0].1.contains("fitted tail"))
    };

    let (steady, fitted) = section("steady");
    assert!(fitted, "the fitted tail is drawn where the forecast applies");
    assert!(steady.contains(" tail (ξ = ") && steady.contains("not rising"), "{steady}");
    for horizon in ["hour", "day", "year"] {
        assert!(steady.contains(&format!("<td>{horizon} (of operation at 1 ms)</td>")), "the level once per {horizon}");
    }
    assert!(steady.contains("Without a model</b> (the rule of three)") && steady.contains("3 000 000 periods"));
    assert!(!steady.contains("not applicable"), "{steady}");

    let (rising, fitted) = section("rising");
    assert!(!fitted, "no fitted tail where the forecast does not apply");
    assert!(rising.contains("still rising"), "a record in every window: {rising}");
    assert!(rising.contains(">not applicable: ") && rising.contains("forecast not applicable: "), "{rising}");
    assert!(rising.contains("<td>anderson-darling</td>") && rising.contains("<td>ljung-box</td>"), "the tests still listed");
    assert!(!rising.contains("once per") && !rising.contains("return level"), "never a level: {rising}");
    assert!(rising.contains("p &lt; 0.001") && !rising.contains("p < 0.001"), "text escaped");

    let html = ok(&["compare", "steady", "rising", "--db", &db, "--html", "-"]);
    let block = html.split("<h3>Was the run long enough? (timer)</h3>").nth(1).expect("the forecasts side by side");
    let row = |what: &str| block.split("<tr>").find(|r| r.contains(&format!("<td>{what}</td>"))).unwrap().to_string();
    assert!(row("last rise").contains("<td>cpu0</td>") && row("last rise").contains("still rising"));
    let tail = row("tail");
    assert!(tail.contains(" tail (ξ = ") && tail.contains("not applicable: "), "{tail}");
    assert_eq!(row("once per year").matches("<td>-</td>").count(), 1, "a level for the steady run only");
}

/// Runs are named by their board wherever they are named: two `nightly` runs of two boards are
/// told apart in the comparison's table (label, id where labels collide, board), the report's
/// title names the board (not the host), and the JUnit export carries the board, the host, the
/// kernel and the run's UUID as properties.
#[test]
fn runs_are_named_by_their_board() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    let fx =
        |n: &str| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(n).display().to_string();
    for (board, file) in [("rpi4-lab-a", "cyclictest-hist.txt"), ("imx8-lab-b", "cyclictest-H-q.txt")] {
        ok(&["import", "--db", &db, "--board", board, "--label", "nightly", &fx(file)]);
    }
    let table = ok(&["compare", "1", "2", "--db", &db]);
    assert!(table.contains("1 nightly (rpi4-lab-a)") && table.contains("2 nightly (imx8-lab-b)"), "{table}");
    let page = dir.path().join("r.html");
    ok(&["report", "2", "--db", &db, "--html", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("run 2 (nightly) on imx8-lab-b"), "the report's title names the board");
    let xml = ok(&["export", "1", "--db", &db, "-f", "junit"]);
    let uuid = serde_json::from_str::<serde_json::Value>(&ok(&["show", "1", "--db", &db, "--json"])).unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    for property in [
        "name=\"board\" value=\"rpi4-lab-a\"",
        &format!("name=\"run_uuid\" value=\"{uuid}\""),
        "name=\"kernel_release\"",
        "name=\"host\"",
    ] {
        assert!(xml.contains(property), "{property} in {xml}");
    }
    assert!(xml.contains("testsuite name=\"rtgauge timer on rpi4-lab-a\""), "{xml}");
    // CSV: each row names its run's UUID, board and kernel release (last columns); a board a user
    // named to break a spreadsheet stays one quoted field, never a formula.
    let csv = ok(&["export", "1", "--db", &db, "-f", "csv"]);
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().ends_with(",max_ns,run_uuid,board,kernel_release"), "{csv}");
    for row in lines {
        assert!(row.ends_with(&format!(",{uuid},rpi4-lab-a,unknown")), "{row}");
    }
    ok(&["import", "--db", &db, "--board", "=HYPERLINK(\"x\"),b", &fx("oslat-q.txt")]);
    let csv = ok(&["export", "last", "--db", &db, "-f", "csv"]);
    for row in csv.lines().skip(1) {
        assert!(row.contains(",\"'=HYPERLINK(\"\"x\"\"),b\","), "{row}");
        assert_eq!(row.matches(',').count(), csv.lines().next().unwrap().matches(',').count() + 1, "{row}");
    }
}
