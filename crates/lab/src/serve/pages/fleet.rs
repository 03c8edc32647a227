//! The fleet page `/`: one row per board — its latest run (when, kernel, preemption model,
//! scenario, label), that run's worst case and p99.9 per latency series, its verdict, the
//! shortest cycle time it supports, a sparkline of the worst case over its last runs, and the
//! regressions against the board's previous run of the same scenario. Sortable by any column
//! with the script; each latest run can be picked for a comparison.

use super::frame::{compare_bar, page, Place};
use super::{cycle_cell, dur, pick, plot, run_cells, series_cells, verdict, RUN_HEADERS, SERIES_HEADERS};
use crate::report::markup::{Html, Shown};
use crate::serve::model::{percent, Fleet, FleetRow, Regression, View};
use rtgauge_report::html;

/// The fleet page.
pub fn fleet(f: &Fleet, store_shown: &str) -> Html {
    let mut b = Html::lit("<h1>Fleet</h1>");
    if f.rows.is_empty() {
        if f.view == View::default() {
            b += "<p>No run is stored here yet. Measure one on a board with <code>rtgauge run</code> (it keeps its result \
in the local store, or in the store <code>--db</code> names), or store another tool's file with \
<code>rtgauge import FILE</code>; then reload this page.</p>";
        } else {
            b += "<p>No board has a run that passes these filters. <a href=\"/\">Show every board.</a></p>";
        }
        return page("Fleet", store_shown, &f.view, Place::Fleet, &b);
    }
    let runs: u64 = f.rows.iter().map(|r| r.board.runs).sum();
    let regressed = f.rows.iter().filter(|r| !r.regressions.is_empty()).count();
    b += html!(
        "<p class=\"muted\">{} · {} · {}. Latencies in µs; the worst case and p99.9 of each latency series of the board's latest run; \
regressions are against the board's previous run measured alike, where the histograms show more than chance \
(docs/dashboard.md).</p>",
        Shown(crate::vocab::Count(f.rows.len() as u64, "board")),
        Shown(crate::vocab::Count(runs, "run")),
        if regressed == 1 { "1 board with a regression".to_string() } else { format!("{regressed} boards with a regression") },
    );
    b += "<form class=\"compare\" method=\"get\" action=\"/compare\">";
    b += compare_bar();
    b += html!(
        "<table class=\"runs fleet\"><thead><tr><th></th><th class=\"sortable\">board</th><th class=\"sortable n\">runs</th>{run}\
{series}<th class=\"sortable\">verdict</th><th class=\"sortable n\">shortest cycle</th><th>worst case, last runs</th>\
<th class=\"sortable\">regressions</th></tr></thead><tbody>",
        run = Html::lit(RUN_HEADERS),
        series = Html::lit(SERIES_HEADERS),
    );
    for r in &f.rows {
        b += row(r);
    }
    b += "</tbody></table></form>";
    page("Fleet", store_shown, &f.view, Place::Fleet, &b)
}

fn row(r: &FleetRow) -> Html {
    let mut h = Html::lit("<tr>");
    h += html!(
        "<td>{}</td><td class=\"name\"><a href=\"/board/{}\">{}</a></td><td class=\"n\" data-v=\"{}\">{}</td>",
        pick(r.latest.id),
        percent(&r.board.board),
        r.board.board,
        r.board.runs,
        r.board.runs
    );
    h += run_cells(&r.latest);
    h += series_cells(&r.figures);
    h += html!("<td>{}</td>", verdict(&r.latest.verdict));
    h += cycle_cell(&r.figures);
    h += html!("<td>{}</td>", plot::sparkline(&r.spark, !r.regressions.is_empty()));
    h += html!("<td data-v=\"{}\">", r.regressions.len());
    for g in &r.regressions {
        h += badge(g, r.latest.id);
    }
    h += "</td></tr>";
    h
}

/// A regression's mark: `▲ timer max +32 %`, titled with the figures, the run compared with, what
/// made the two comparable and the test the shift passed, linked to the comparison of the two
/// runs.
fn badge(g: &Regression, latest: i64) -> Html {
    let share = if g.before_ns > 0 { (g.now_ns as f64 / g.before_ns as f64 - 1.0) * 100.0 } else { f64::INFINITY };
    let share = if share.is_finite() { format!("+{share:.0} %") } else { "new".to_string() };
    html!(
        "<a class=\"reg\" href=\"/compare?runs={prev},{latest}\" title=\"regression: {series} {fig} {before} → {now} against run {prev}, the board's previous run of the same scenario measured alike ({compared}); {test}\">▲ regression<br><small>{series} {fig} {share}</small></a>",
        prev = g.previous,
        latest = latest,
        compared = g.compared.trim_start_matches("alike: "),
        test = g.test,
        series = g.series,
        fig = g.figure,
        before = dur(g.before_ns),
        now = dur(g.now_ns),
        share = share,
    )
}

#[cfg(test)]
mod tests {
    use super::super::sample;
    use super::super::tests::{same_origin, well_formed};
    use super::*;

    #[test]
    fn an_empty_store_says_how_to_store_a_run() {
        let h = fleet(&sample::fleet(0, false), "store.sqlite");
        assert!(h.contains("No run is stored here yet"));
        assert!(h.contains("rtgauge run"));
        assert!(!h.contains("<table class=\"runs"));
        let filtered = Fleet { view: View { kernel: Some("5.4".into()), ..View::default() }, rows: Vec::new() };
        assert!(fleet(&filtered, "s").contains("No board has a run that passes these filters"));
    }

    #[test]
    fn a_fleet_of_one_and_of_three_boards_has_a_row_each() {
        for n in [1, 3] {
            let f = sample::fleet(n, false);
            let h = fleet(&f, "store.sqlite");
            assert_eq!(h.matches("<a href=\"/board/").count(), n);
            assert_eq!(h.matches("<svg").count(), n, "a sparkline each");
            assert_eq!(well_formed(&h), n);
            assert_eq!(h.matches("name=\"runs\"").count(), n);
            for r in &f.rows {
                assert!(h.contains(&format!("href=\"/run/{}\"", r.latest.id)));
                assert_eq!(h.matches(&format!("value=\"{}\"", r.latest.id)).count(), 1);
            }
            same_origin(&h);
        }
    }

    #[test]
    fn a_regression_is_marked_and_names_the_run_before() {
        let f = sample::fleet(3, false);
        let with: Vec<&FleetRow> = f.rows.iter().filter(|r| !r.regressions.is_empty()).collect();
        assert!(!with.is_empty());
        let h = fleet(&f, "s");
        let marks: usize = f.rows.iter().map(|r| r.regressions.len()).sum();
        assert_eq!(h.matches("class=\"reg\"").count(), marks);
        for r in with {
            for g in &r.regressions {
                assert!(h.contains(&format!("href=\"/compare?runs={},{}\"", g.previous, r.latest.id)));
                assert!(h.contains(&format!("against run {}", g.previous)));
            }
        }
    }

    #[test]
    fn hostile_names_show_as_text_everywhere() {
        let f = sample::fleet(3, true);
        let h = fleet(&f, "<script>alert('store')</script>");
        assert_eq!(h.matches("<script").count(), 1, "only the page's own script");
        assert!(!h.contains("<img"));
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        // The link to a hostile board keeps its name percent-encoded.
        assert!(h.contains("href=\"/board/%3Cscript%3Ealert%281%29%3C%2Fscript%3E\""));
        well_formed(&h);
        same_origin(&h);
    }
}
