//! The dashboard's pages, drawn on the server from [`super::model`]: plain HTML with inline SVG,
//! usable without script. `frame` is every page's head, navigation and filter form; `fleet` the
//! page `/`; `board` the page `/board/NAME`; `plot` the SVG they draw (the long-term plot, the
//! heat map of latency by run, the sparkline); `dashboard.js` the little script they load from
//! rtgauge itself (sorting tables, picking runs to compare across pages). Every page is
//! `report::markup`'s [`Html`]: every text a run carries (board, host, kernel, scenario, label)
//! is escaped by construction, in text and in attributes alike.

pub mod board;
pub mod fleet;
pub mod frame;
pub mod plot;

pub use board::board;
pub use fleet::fleet;

use crate::report::markup::Html;
use crate::store::figures::{Figures, SeriesFigures};
use crate::store::RunRow;
use rtgauge_report::html;

/// `/static/dashboard.js`: sorting a table by a column, and runs picked for a comparison.
pub const SCRIPT: &str = include_str!("dashboard.js");

/// A page made elsewhere (the run's report, a comparison) with the dashboard's navigation on
/// top: links to `trail`'s pages, and the store's name.
pub fn with_nav(page: &Html, store: &str, trail: &[(String, String)]) -> Html {
    let links = Html::join(trail.iter().map(|(text, href)| html!("<a href=\"{}\">{}</a>", href, text)), " › ");
    let nav = html!(
        "<nav style=\"font-size:.9em;padding:.4em 0;border-bottom:1px solid #ddd\">{} \
         <span style=\"color:#666;float:right\">rtgauge dashboard · {}</span></nav>",
        links,
        store
    );
    page.with_after_body(nav)
}

/// A latency in µs with one decimal, as the dashboard's tables show it (`45.6`); `-` for none.
pub(crate) fn us1(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), |ns| format!("{:.1}", ns as f64 / 1e3))
}

/// A latency as a sentence reads it (`45.6 µs`, `1.2 ms`).
pub(crate) fn dur(ns: u64) -> String {
    crate::vocab::units::Nanos(ns).to_string()
}

/// A run's start as an instant, if its text is RFC 3339.
pub(crate) fn instant(started_at: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(started_at.trim()).ok().map(|t| t.with_timezone(&chrono::Utc))
}

/// A run's start as the tables show it: `2026-11-20 14:03` in UTC (the text as stored when it
/// does not read as a time).
pub(crate) fn when(started_at: &str) -> String {
    match instant(started_at) {
        Some(t) => t.format("%Y-%m-%d %H:%M").to_string(),
        None => started_at.to_string(),
    }
}

/// A run's start as a day: `2026-11-20`.
pub(crate) fn day(started_at: &str) -> String {
    match instant(started_at) {
        Some(t) => t.format("%Y-%m-%d").to_string(),
        None => started_at.chars().take(10).collect(),
    }
}

/// The latency series of a run's figures (those that count in a worst case), in its order.
pub(crate) fn latency(f: &Figures) -> impl Iterator<Item = &SeriesFigures> {
    f.series.iter().filter(|s| s.latency)
}

/// The verdict of a run as a small coloured mark, styled as the report's verdict box.
pub(crate) fn verdict(v: &str) -> Html {
    let class = match v {
        "pass" => "pass",
        "fail" => "fail",
        _ => "none",
    };
    html!("<span class=\"chip {}\">{}</span>", class, v)
}

/// The checkbox that picks run `id` for a comparison (inside a page's `form.compare`).
pub(crate) fn pick(id: i64) -> Html {
    html!("<input type=\"checkbox\" name=\"runs\" value=\"{id}\" aria-label=\"pick run {id} to compare\">", id = id)
}

/// The three cells of a run's latency series in a table: their names, worst cases and p99.9,
/// one line each (sortable by the worst of them).
pub(crate) fn series_cells(f: &Figures) -> Html {
    let s: Vec<&SeriesFigures> = latency(f).collect();
    if s.is_empty() {
        return Html::lit("<td class=\"muted\">none</td><td class=\"n\">-</td><td class=\"n\">-</td>");
    }
    let lines = |v: Vec<Html>| Html::join(v, "<br>");
    let worst = s.iter().filter_map(|s| s.max_ns).max();
    let p999 = s.iter().filter_map(|s| s.p999_ns).max();
    let data = |v: Option<u64>| v.map(|v| html!(" data-v=\"{}\"", v)).unwrap_or_default();
    html!(
        "<td class=\"series\">{}</td><td class=\"n\"{}>{}</td><td class=\"n\"{}>{}</td>",
        lines(s.iter().map(|s| Html::text(&s.series)).collect()),
        data(worst),
        lines(s.iter().map(|s| Html::text(&us1(s.max_ns))).collect()),
        data(p999),
        lines(s.iter().map(|s| Html::text(&us1(s.p999_ns))).collect()),
    )
}

/// The cells every run row has, three of them: the run (linked) and its start; its kernel and
/// preemption model; its scenario and label. Headed by [`RUN_HEADERS`].
pub(crate) fn run_cells(r: &RunRow) -> Html {
    let opt = |v: &Option<String>| v.as_deref().unwrap_or("-").to_string();
    let t = instant(&r.started_at).map_or(r.id, |t| t.timestamp());
    html!(
        "<td class=\"nowrap\" data-v=\"{t}\"><a href=\"/run/{id}\">run {id}</a><br><span class=\"muted\" title=\"{at}\">{when}</span></td>\
<td><span class=\"nowrap\">{kernel}</span><br><span class=\"muted\">{pre}</span></td><td>{sc}<br><span class=\"muted\">{label}</span></td>",
        t = t,
        id = r.id,
        at = r.started_at,
        when = when(&r.started_at),
        kernel = r.kernel,
        pre = r.preemption,
        sc = opt(&r.scenario),
        label = opt(&r.label),
    )
}

/// The headers of [`run_cells`].
pub(crate) const RUN_HEADERS: &str = "<th class=\"sortable\">run, started (UTC)</th><th class=\"sortable\">kernel, preemption</th><th class=\"sortable\">scenario, label</th>";

/// The headers of [`series_cells`].
pub(crate) const SERIES_HEADERS: &str =
    "<th>series</th><th class=\"sortable n\">worst µs</th><th class=\"sortable n\">p99.9 µs</th>";

/// The shortest cycle time a run supports, as a cell.
pub(crate) fn cycle_cell(f: &Figures) -> Html {
    match f.shortest_cycle_ns {
        Some(ns) => html!("<td class=\"n\" data-v=\"{}\">{}</td>", ns, dur(ns)),
        None => Html::lit("<td class=\"n muted\">-</td>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `<svg>…</svg>` of a page, for a well-formedness check.
    pub(crate) fn svgs(page: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut rest = page;
        while let Some(a) = rest.find("<svg") {
            let Some(b) = rest[a..].find("</svg>") else { panic!("an <svg> without its end") };
            out.push(&rest[a..a + b + 6]);
            rest = &rest[a + b + 6..];
        }
        out
    }

    /// Checks every SVG of a page parses as XML.
    pub(crate) fn well_formed(page: &str) -> usize {
        let all = svgs(page);
        for s in &all {
            if let Err(e) = resvg::usvg::roxmltree::Document::parse(s) {
                panic!("an SVG is not well-formed: {e}\n{}", &s[..s.len().min(2000)]);
            }
        }
        all.len()
    }

    /// Every `src=` and `href=` value of a page.
    pub(crate) fn links(page: &str) -> Vec<String> {
        let mut out = Vec::new();
        for attr in [" src=\"", " href=\"", " action=\""] {
            let mut rest = page;
            while let Some(a) = rest.find(attr) {
                let v = &rest[a + attr.len()..];
                let end = v.find('"').expect("an attribute's end");
                out.push(v[..end].to_string());
                rest = &v[end..];
            }
        }
        out
    }

    /// Whether every link of a page stays on the dashboard (a path, a query or a fragment).
    pub(crate) fn same_origin(page: &str) {
        for l in links(page) {
            assert!(
                (l.starts_with('/') && !l.starts_with("//")) || l.starts_with('?') || l.starts_with('#'),
                "a link leaves the dashboard: {l}"
            );
        }
    }

    #[test]
    fn latencies_read_in_microseconds_with_one_decimal() {
        assert_eq!(us1(Some(45_649)), "45.6");
        assert_eq!(us1(None), "-");
        assert_eq!(when("2026-11-20T14:03:07.123+01:00"), "2026-11-20 13:03");
        assert_eq!(when("not a time"), "not a time");
    }

    /// Sample pages to look at: `RTGAUGE_PAGES_OUT=/tmp/p24 cargo test --lib sample_pages --
    /// --ignored`, then open them (or screenshot them with headless Chromium).
    #[test]
    #[ignore = "writes sample pages into $RTGAUGE_PAGES_OUT for a look"]
    fn sample_pages() {
        let Ok(dir) = std::env::var("RTGAUGE_PAGES_OUT") else { return };
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let store = "/var/lib/rtgauge/store.sqlite";
        let write = |name: &str, page: crate::report::markup::Html| std::fs::write(dir.join(name), page.as_str()).unwrap();
        write("fleet-200.html", fleet(&sample::fleet(200, false), store));
        write("fleet-3-hostile.html", fleet(&sample::fleet(3, true), store));
        write("fleet-0.html", fleet(&sample::fleet(0, false), store));
        write("board-5.html", board(&sample::board(5, false), store));
        let b = sample::board(1000, false);
        let t = std::time::Instant::now();
        let page = board(&b, store);
        eprintln!("a board page of 1000 runs: {} bytes in {:?}", page.len(), t.elapsed());
        write("board-1000.html", page);
        let f = sample::fleet(200, false);
        let t = std::time::Instant::now();
        let page = fleet(&f, store);
        eprintln!("a fleet page of 200 boards: {} bytes in {:?}", page.len(), t.elapsed());
        write("board-40-hostile.html", board(&sample::board(40, true), store));
        write("board-1.html", board(&sample::board(1, false), store));
    }
}

/// Made-up fleets and boards for the pages' tests and for a look at them (`sample_pages` in
/// `mod.rs`): deterministic, with kernel changes, regressions, runs without some figures, and
/// (on request) names a user could have written to break a page.
#[cfg(test)]
pub(crate) mod sample {
    use crate::result::board::{Board, KernelConfigId};
    use crate::serve::model::{BoardPage, BoardRun, Change, Fleet, FleetRow, Regression, View};
    use crate::store::figures::{BoardRow, Figures, SeriesFigures, BINS, BINS_PER_DECADE};
    use crate::store::RunRow;

    /// A deterministic stream of numbers in [0, 1).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    pub const HOSTILE_BOARD: &str = "<script>alert(1)</script>";

    /// The heat-map bin of `ns`, as `store::figures` defines the bins.
    fn bin(ns: u64) -> usize {
        if ns < 1_000 {
            return 0;
        }
        (1 + ((ns as f64 / 1e3).log10() * BINS_PER_DECADE as f64).floor() as usize).min(BINS - 1)
    }

    /// A series' figures around `p99` ns, with a worst case `spike` times it.
    fn series(entry: u32, name: &str, p99: u64, spike: f64, samples: u64) -> SeriesFigures {
        let max = (p99 as f64 * spike) as u64;
        let mut bins = vec![0u64; BINS];
        // A bell (in log latency) centred a third of the way below p99, then a thinning tail up to
        // the worst case.
        let (b0, b99, bmax) = (bin(p99 / 12), bin(p99), bin(max));
        let centre = bin(p99 / 3) as f64;
        let weights: Vec<f64> = (b0..=b99).map(|b| (-((b as f64 - centre) / 2.5).powi(2)).exp()).collect();
        let total: f64 = weights.iter().sum();
        let body = samples - samples / 100;
        for (b, w) in (b0..=b99).zip(&weights) {
            bins[b] += (body as f64 * w / total) as u64;
        }
        let mut c = (samples / 100).max(1);
        for b in bins.iter_mut().take(bmax).skip(b99 + 1) {
            *b += c;
            c = (c / 5).max(1);
        }
        bins[bmax] += 1;
        SeriesFigures {
            entry,
            series: name.to_string(),
            latency: true,
            samples,
            missed: 0,
            p99_ns: Some(p99),
            p999_ns: Some((p99 as f64 * (1.0 + (spike - 1.0) / 3.0)) as u64),
            max_ns: Some(max),
            bins,
            day_level_ns: None,
            day_low_ns: None,
            day_high_ns: None,
            forecast_note: None,
        }
    }

    /// A series' forecast, from its figures (no draw of the stream, so the figures stay as they
    /// were): most runs' once-per-day level a little over the worst case, with an interval (some
    /// without an upper end); every fourth not applicable, with a reason.
    fn forecast(s: &mut SeriesFigures) {
        let (Some(p99), Some(max)) = (s.p99_ns, s.max_ns) else { return };
        if p99 % 4 == 0 {
            s.forecast_note =
                Some("cpu2: the tails of the run's first and second halves differ (Kolmogorov–Smirnov p = 0.003)".into());
            return;
        }
        let level = max as f64 * (1.1 + (p99 % 7) as f64 * 0.05);
        s.day_level_ns = Some(level as u64);
        s.day_low_ns = Some((max as f64 * 1.01) as u64);
        s.day_high_ns = (p99 % 5 != 0).then_some((level * 1.6) as u64);
    }

    fn figures(rng: &mut Rng, base: f64, kernel_config: &str) -> Figures {
        let p99 = (base * (0.8 + 0.4 * rng.next())) as u64;
        let spike = 1.5 + if rng.next() < 0.05 { 40.0 * rng.next() } else { 3.0 * rng.next() };
        let timer = series(0, "timer", p99, spike, 600_000);
        let wakeup = series(1, "wakeup.task", p99 * 2, spike * 0.8 + 0.5, 300_000);
        let cycle = SeriesFigures { entry: 2, series: "cycle".into(), latency: false, bins: Vec::new(), ..timer.clone() };
        let (mut timer, mut wakeup) = (timer, wakeup);
        forecast(&mut timer);
        forecast(&mut wakeup);
        Figures {
            shortest_cycle_ns: timer.max_ns.max(wakeup.max_ns).map(|m| (m * 2).div_ceil(10_000) * 10_000),
            kernel_config: Some(kernel_config.to_string()),
            series: vec![timer, wakeup, cycle],
            forecasts: true,
        }
    }

    fn at(day: f64) -> String {
        let t = 1_767_225_600 + (day * 86_400.0) as i64; // 2026-01-01
        chrono::DateTime::from_timestamp(t, 0).map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)).unwrap_or_default()
    }

    fn row(id: i64, board: &str, started_at: String, kernel: &str, hostile: bool, worst: Option<u64>, verdict: &str) -> RunRow {
        RunRow {
            id,
            uuid: None,
            started_at,
            label: match (hostile, id % 3) {
                (true, _) => Some("\"><img src=x onerror=alert(1)>".into()),
                (false, 0) => Some(format!("nightly-{id}")),
                _ => None,
            },
            board: board.to_string(),
            host: if hostile { "host\u{1b}[31m<b>".into() } else { format!("{board}.lab") },
            kernel: kernel.to_string(),
            preemption: "PREEMPT_RT".into(),
            scenario: Some(if hostile { "'; DROP TABLE runs; --<i>".into() } else { "stress-ng".into() }),
            probes: "timer,wakeup".into(),
            worst_ns: worst,
            verdict: verdict.into(),
            status: "complete".into(),
            imported_from: None,
            series: None,
            part: None,
        }
    }

    const KERNELS: [&str; 3] = ["6.1.0-rt7", "6.6.0-rt15", "6.12.0-rt5"];

    /// A board page of `n` runs (oldest first) over about two years, three kernel releases and a
    /// configuration change.
    pub fn board(n: usize, hostile: bool) -> BoardPage {
        let mut rng = Rng(42);
        let name = if hostile { HOSTILE_BOARD.to_string() } else { "board-0".to_string() };
        let kernel_of = |i: usize| if hostile { "6.12<b>rt</b>" } else { KERNELS[(i * 3 / n.max(1)).min(2)] };
        let config_of = |i: usize| format!("{:064x}", (i * 3 / n.max(1)) as u64 * 7 + u64::from(i >= n * 5 / 6) + 0xabc);
        let span = (n as f64 * 0.7).clamp(0.2, 730.0);
        let mut runs = Vec::new();
        for i in 0..n {
            let kernel = kernel_of(i);
            let base = [22_000.0, 15_000.0, 11_000.0][(i * 3 / n.max(1)).min(2)];
            let mut f = figures(&mut rng, base, &config_of(i));
            if i == n / 2 && n > 2 {
                // A run without a p99.9 of its wake-up series (an import that did not say).
                f.series[1].p999_ns = None;
            }
            if hostile {
                // A reason that would be markup, were it not escaped.
                f.series[0].day_level_ns = None;
                f.series[0].forecast_note = Some("cpu0: <img src=x onerror=alert(3)>".into());
            }
            let worst = f.series.iter().filter(|s| s.latency).filter_map(|s| s.max_ns).max();
            let started = at(i as f64 * span / n.max(1) as f64 + 0.3 * rng.next());
            let verdict = if worst.unwrap_or(0) > 200_000 { "fail" } else { "pass" };
            runs.push(BoardRun { row: row(1_000 + i as i64 * 7, &name, started, kernel, hostile, worst, verdict), figures: f });
        }
        let mut changes = Vec::new();
        for i in 1..n {
            let (a, b) = (&runs[i - 1], &runs[i]);
            let mut what = Vec::new();
            if a.row.kernel != b.row.kernel {
                what.push(format!("kernel {} → {}", a.row.kernel, b.row.kernel));
            }
            if a.figures.kernel_config != b.figures.kernel_config {
                let short = |s: &Option<String>| s.as_deref().map(|s| s[56..].to_string()).unwrap_or_default();
                what.push(format!(
                    "kernel configuration {} → {}",
                    short(&a.figures.kernel_config),
                    short(&b.figures.kernel_config)
                ));
            }
            if !what.is_empty() {
                changes.push(Change { run: b.row.id, previous: a.row.id, started_at: b.row.started_at.clone(), what });
            }
        }
        let board = Board {
            name: name.clone(),
            model: Some(if hostile { "Raspberry <Pi> 4 \"Model B\"".into() } else { "Raspberry Pi 4 Model B Rev 1.4".into() }),
            compatible: vec!["raspberrypi,4-model-b".into(), "brcm,bcm2711".into()],
            cmdline: Some("console=ttyS0,115200 isolcpus=2,3 nohz_full=2,3 rcu_nocbs=2,3 irqaffinity=0,1".into()),
            kernel_config: runs
                .last()
                .and_then(|r: &BoardRun| r.figures.kernel_config.clone())
                .map(|sha256| KernelConfigId { source: "/proc/config.gz".into(), sha256 }),
            ..Board::default()
        };
        BoardPage {
            name,
            view: View::default(),
            total_runs: n as u64,
            before: None,
            kernel: runs.last().map(|r| r.row.kernel.clone()),
            board: (n > 0).then_some(board),
            runs,
            changes,
        }
    }

    /// A fleet of `n` boards, every third with a regression.
    pub fn fleet(n: usize, hostile: bool) -> Fleet {
        let mut rng = Rng(7);
        let mut rows = Vec::new();
        for k in 0..n {
            let name = match (hostile, k) {
                (true, 0) => HOSTILE_BOARD.to_string(),
                (true, 1) => "a b/c?d=e&f#g".to_string(),
                _ => format!("board-{k:03}"),
            };
            let base = 8_000.0 + 30_000.0 * rng.next();
            let kernel = if hostile && k == 2 { "6.12<b>rt</b>" } else { KERNELS[k % 3] };
            let mut spark = Vec::new();
            let mut last_id = 0;
            for i in 0..30 {
                let id = (k * 500 + i * 13 + 1) as i64;
                let f = figures(&mut rng, base, "ab");
                let worst = f.series.iter().filter(|s| s.latency).filter_map(|s| s.max_ns).max();
                spark.push((id, at(i as f64 * 3.0), if i == 11 { None } else { worst }));
                last_id = id;
            }
            let mut f = figures(&mut rng, base, "ab");
            let regressions = if k % 3 == 1 {
                let s = &mut f.series[0];
                let now = s.max_ns.unwrap_or(0) * 3;
                s.max_ns = Some(now);
                vec![Regression {
                    series: "timer".into(),
                    figure: "max",
                    before_ns: now / 3,
                    now_ns: now,
                    previous: last_id - 13,
                    compared: "alike: the same probes (timer) on CPUs 0-1 at the same intervals, the same loads (none), \
                               periods within a factor of 2"
                        .into(),
                    test: "40 of the latest run's 60 000 values at or over 1.000 ms against 3 of the previous run's \
                           60 000: so many from one distribution has probability below 0.001"
                        .into(),
                }]
            } else {
                Vec::new()
            };
            let worst = f.series.iter().filter(|s| s.latency).filter_map(|s| s.max_ns).max();
            if let (Some(last), Some(_)) = (spark.last_mut(), worst) {
                last.2 = worst;
            }
            let verdict = ["pass", "fail", "none"][k % 3];
            rows.push(FleetRow {
                board: BoardRow {
                    board: name.clone(),
                    runs: 30 + k as u64,
                    first_started_at: at(0.0),
                    last_started_at: at(87.0),
                    latest: last_id,
                },
                latest: row(last_id, &name, at(87.0), kernel, hostile, worst, verdict),
                figures: f,
                spark,
                regressions,
            });
        }
        Fleet { view: View::default(), rows }
    }
}

#[cfg(test)]
mod nav_tests {
    #[test]
    fn a_report_gets_the_navigation_after_its_body_tag_escaped() {
        let page = crate::report::markup::Html::lit("<html><head></head><body class=\"x\"><h1>r</h1></body></html>");
        let trail = [("Fleet".to_string(), "/".to_string()), ("<b>".to_string(), "/board/%3Cb%3E".to_string())];
        let out = super::with_nav(&page, "a&b.db", &trail).into_string();
        assert!(out.starts_with("<html><head></head><body class=\"x\"><nav"), "{out}");
        assert!(out.contains("<a href=\"/board/%3Cb%3E\">&lt;b&gt;</a>") && out.contains("a&amp;b.db"), "{out}");
        assert!(!out.contains("<b>"));
    }
}
