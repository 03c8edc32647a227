//! The board page `/board/NAME`: the board's long-term view. Per latency series its long-term
//! plot (worst case, p99.9 and p99 per run against time, beside them the latency the run's
//! forecast says is exceeded once per day with its interval, kernel changes marked, each point a
//! link to its run) and its heat map of latency by run; the board's runs as a table (newest
//! first, paged with `?before=ID`, each run can be picked for a comparison); its configuration
//! as its latest run describes it, and what changed between runs.

use super::frame::{compare_bar, page, Place};
use super::{cycle_cell, day, latency, pick, plot, run_cells, series_cells, verdict, when, RUN_HEADERS, SERIES_HEADERS};
use crate::report::board::{dmi, short_hash};
use crate::report::markup::Html;
use crate::serve::model::{percent, BoardPage, BoardRun, View};
use rtgauge_report::html;

/// The board page.
pub fn board(b: &BoardPage, store_shown: &str) -> Html {
    let mut h = html!("<h1>Board {}</h1>", b.name);
    if b.runs.is_empty() {
        if b.before.is_some() {
            h += html!("<p>No older run of this board passes these filters. <a href=\"{}\">Its newest runs.</a></p>", &newest(b));
        } else if b.view == View::default() {
            h += "<p>No run of this board is stored.</p>";
        } else {
            h += html!(
                "<p>No run of this board passes these filters. <a href=\"/board/{}\">Every run of the board.</a></p>",
                percent(&b.name)
            );
        }
        h += configuration(b);
        return page(&format!("Board {}", b.name), store_shown, &b.view, Place::Board(&b.name), &h);
    }
    let (first, last) = (&b.runs[0].row, &b.runs[b.runs.len() - 1].row);
    let span = if b.runs.len() == 1 {
        html!("on {}", &when(&first.started_at))
    } else {
        html!("from {} to {}", &when(&first.started_at), &when(&last.started_at))
    };
    h += html!(
        "<p class=\"muted\">{_0} {_1} these filters; shown: {_2}, {span}{_3}{_4}. Latencies in µs.</p>",
        _0 = crate::vocab::Count(b.total_runs, "run"),
        _1 = if b.total_runs == 1 { "passes" } else { "pass" },
        _2 = if b.runs.len() as u64 == b.total_runs { Html::lit("all") } else { html!("{} of them", b.runs.len()) },
        _3 = b.before.map(|id| html!(", older than run {id}", id = id)).unwrap_or_default(),
        _4 = b.kernel.as_deref().map(|k| html!("; latest kernel {}", k)).unwrap_or_default(),
        span = span
    );
    let names = series_names(&b.runs);
    if names.len() > 1 {
        h += "<p>Series: ";
        h += Html::join(names.iter().map(|n| html!("<a href=\"#series-{}\">{}</a>", &anchor(n), n)), " · ");
        h += " · <a href=\"#runs\">runs</a> · <a href=\"#configuration\">configuration</a></p>";
    }
    for n in &names {
        h += html!("<h2 id=\"series-{}\">{}</h2>", &anchor(n), n);
        h += html!(
            "<h3>Worst case, p99.9, p99 and the once-per-day forecast per run</h3><figure class=\"wide\">{}</figure>{}",
            plot::long_term(&b.runs, n, &b.changes),
            forecast_note(&b.runs, n)
        );
        h += html!("<h3>Latency by run</h3><p class=\"muted note\">Each column is a run's histogram of {}: the samples in each latency bin as colour (log scale), empty bins white.</p><figure class=\"wide\">{}</figure>", n, plot::heat_map(&b.runs, n, &b.changes));
    }
    if names.is_empty() {
        h += "<p>These runs have no latency series to plot.</p>";
    }
    h += runs_table(b);
    h += configuration(b);
    page(&format!("Board {}", b.name), store_shown, &b.view, Place::Board(&b.name), &h)
}

/// What the long-term plot's forecast marks are, and for how many of the runs: where the store
/// keeps no forecast (an older layout, read as it is), that instead.
fn forecast_note(runs: &[BoardRun], name: &str) -> Html {
    let with: Vec<&BoardRun> = runs.iter().filter(|r| r.figures.series.iter().any(|s| s.series == name)).collect();
    if with.iter().any(|r| !r.figures.forecasts) {
        return Html::lit(
            "<p class=\"muted note\">No once-per-day forecast is shown: this store's layout keeps none (the dashboard \
never changes a store; the next <code>rtgauge run</code>, <code>import</code> or <code>push</code> into it brings it up to \
date).</p>",
        );
    }
    let drawn = with.iter().filter(|r| r.figures.series.iter().any(|s| s.series == name && s.day_level_ns.is_some())).count();
    html!(
        "<p class=\"muted note\">Once per day (forecast): the latency the run's forecast says is exceeded on average once \
per day of operation at its period, the highest of its CPUs', on a bar over its 95 % interval (an arrow at the top: no upper \
end, or beyond the plot). Drawn for {} of these {}; where a CPU's forecast does not apply none is drawn, and the worst \
case's title says why. A forecast holds for that run's load and configuration only.</p>",
        if drawn == 0 { "none".to_string() } else { drawn.to_string() },
        crate::vocab::Count(with.len() as u64, "run")
    )
}

/// The latency series of the runs, those of the newest run first.
fn series_names(runs: &[BoardRun]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in runs.iter().rev() {
        for s in latency(&r.figures) {
            if !names.contains(&s.series) {
                names.push(s.series.clone());
            }
        }
    }
    names
}

/// A series' name as a fragment of the page's address.
fn anchor(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect()
}

/// The address of the board's newest runs in this view.
fn newest(b: &BoardPage) -> String {
    format!("/board/{}{}", percent(&b.name), b.view.query())
}

/// The runs as a table, newest first, with their boxes for a comparison and the links to the
/// pages before and after.
fn runs_table(b: &BoardPage) -> Html {
    let mut h = Html::lit("<h2 id=\"runs\">Runs</h2><form class=\"compare\" method=\"get\" action=\"/compare\">");
    h += compare_bar();
    h += html!(
        "<table class=\"runs\"><thead><tr><th></th>{RUN_HEADERS}{SERIES_HEADERS}<th class=\"sortable\">verdict</th>\
<th class=\"sortable n\">shortest cycle</th><th class=\"sortable\">status</th></tr></thead><tbody>"
    );
    for r in b.runs.iter().rev() {
        h += html!("<tr><td>{}</td>", pick(r.row.id));
        h += run_cells(&r.row);
        h += series_cells(&r.figures);
        h += html!("<td>{}</td>", verdict(&r.row.verdict));
        h += cycle_cell(&r.figures);
        h += html!("<td>{}</td></tr>", &r.row.status);
    }
    h += "</tbody></table></form><p class=\"paging\">";
    let shown = b.runs.len() as u64;
    let older = match b.before {
        None => shown < b.total_runs,
        Some(_) => shown >= crate::serve::model::BOARD_RUNS,
    };
    if b.before.is_some() {
        h += html!("<a href=\"{}\">← the newest runs</a> ", &newest(b));
    }
    if let (true, Some(lowest)) = (older, b.runs.iter().map(|r| r.row.id).min()) {
        let q = b.view.query();
        let sep = if q.is_empty() { "?" } else { "&" };
        h += html!("<a href=\"{}\">older runs →</a>", &format!("/board/{}{q}{sep}before={lowest}", percent(&b.name)));
    }
    h + "</p>"
}

/// The board as its latest run describes it, and what changed between the runs shown.
fn configuration(b: &BoardPage) -> Html {
    let mut h = Html::lit("<h2 id=\"configuration\">Configuration</h2>");
    let mut rows: Vec<(&str, Html)> = Vec::new();
    let latest = b.runs.last();
    if let Some(bd) = &b.board {
        rows.extend(bd.model.as_deref().map(|m| ("model (device tree)", Html::text(m))));
        if !bd.compatible.is_empty() {
            rows.push(("compatible (device tree)", Html::text(&bd.compatible.join(", "))));
        }
        rows.extend(dmi(bd).map(|d| ("DMI system", Html::text(&d))));
    }
    rows.extend(b.kernel.as_deref().map(|k| ("kernel", Html::text(k))));
    if let Some(r) = latest {
        rows.push(("preemption model", Html::text(&r.row.preemption)));
    }
    let hash = b
        .board
        .as_ref()
        .and_then(|bd| bd.kernel_config.as_ref().map(|k| k.sha256.clone()))
        .or_else(|| latest.and_then(|r| r.figures.kernel_config.clone()));
    match hash {
        Some(s) => rows.push(("kernel configuration", html!("SHA-256 <code title=\"{}\">{}</code>", &s, short_hash(&s)))),
        None => rows.push(("kernel configuration", Html::lit("not recorded"))),
    }
    if let Some(c) = b.board.as_ref().and_then(|bd| bd.cmdline.as_deref()) {
        rows.push(("kernel command line", html!("<code>{}</code>", c)));
    }
    if let Some(r) = latest {
        rows.push(("as of", html!("<a href=\"/run/{0}\">run {0}</a>, {1}", r.row.id, &when(&r.row.started_at))));
    }
    h += "<table class=\"board\"><tbody>";
    for (k, v) in rows {
        h += html!("<tr><th>{k}</th><td>{v}</td></tr>", k = k, v = v);
    }
    h += "</tbody></table>";
    h += "<h3>What changed between runs</h3>";
    if b.changes.is_empty() {
        h += "<p>Nothing: the runs shown ran on the same kernel, kernel configuration and preemption model.</p>";
        return h;
    }
    h += html!(
        "<p class=\"muted\">Newest first; {}.</p><ul class=\"changes\">",
        crate::vocab::Count(b.changes.len() as u64, "change")
    );
    for c in b.changes.iter().rev() {
        let what = Html::join(c.what.iter().map(|w| Html::text(w)), "; ");
        h += html!("<li><a href=\"/run/{run}\">run {run}</a> ({_0}): {_1} — <a href=\"/compare?runs={prev},{run}\">compare with run {prev}</a></li>", _0 = &day(&c.started_at), _1 = what, run = c.run, prev = c.previous);
    }
    h + "</ul>"
}

#[cfg(test)]
mod tests {
    use super::super::sample;
    use super::super::tests::{same_origin, svgs, well_formed};
    use super::*;

    /// The `<a href="/run/` links of the long-term plots.
    fn plot_links(page: &str) -> usize {
        svgs(page).iter().filter(|s| s.contains("class=\"long-term\"")).map(|s| s.matches("<a href=\"/run/").count()).sum()
    }

    #[test]
    fn a_board_of_5_and_of_1000_runs_links_every_point_to_its_run() {
        for n in [1, 5, 1000] {
            let b = sample::board(n, false);
            let names = series_names(&b.runs);
            assert_eq!(names.len(), 2);
            let h = board(&b, "store.sqlite");
            let points: usize = b
                .runs
                .iter()
                .flat_map(|r| latency(&r.figures))
                .map(|s| [s.max_ns, s.p999_ns, s.p99_ns].iter().flatten().count())
                .sum();
            let forecasts = b.runs.iter().flat_map(|r| latency(&r.figures)).filter(|s| s.day_level_ns.is_some()).count();
            assert!(n < 5 || (forecasts > 0 && forecasts < n * names.len()), "some runs' forecasts apply, not all");
            assert_eq!(plot_links(&h), points + forecasts);
            // Three figures a run a series, but for the sample's run without a p99.9; and a
            // forecast's mark where it applies, titled so.
            assert_eq!(plot_links(&h), n * 3 * names.len() - usize::from(n > 2) + forecasts);
            assert_eq!(h.matches(": once per day (forecast) ").count(), forecasts);
            let not_applicable = b
                .runs
                .iter()
                .flat_map(|r| latency(&r.figures))
                .filter(|s| s.day_level_ns.is_none() && s.forecast_note.is_some())
                .count();
            assert_eq!(h.matches(" · forecast not applicable: cpu2: ").count(), not_applicable, "on the worst case's title");
            let with_forecast = names
                .iter()
                .filter(|n| b.runs.iter().flat_map(|r| latency(&r.figures)).any(|s| &s.series == *n && s.day_level_ns.is_some()))
                .count();
            assert_eq!(h.matches("once per day (forecast)</text>").count(), with_forecast, "in the legend of a plot with one");
            // Two plots a series, well-formed.
            assert_eq!(well_formed(&h), 2 * names.len());
            // The table: a row and a box per run.
            assert_eq!(h.matches("name=\"runs\" value=").count(), n);
            same_origin(&h);
        }
    }

    #[test]
    fn kernel_changes_are_marked_and_listed() {
        let b = sample::board(40, false);
        assert!(!b.changes.is_empty());
        let h = board(&b, "s");
        for c in &b.changes {
            assert!(h.contains(&format!("href=\"/compare?runs={},{}\"", c.previous, c.run)));
        }
        let lt: Vec<&str> = svgs(&h).into_iter().filter(|s| s.contains("class=\"long-term\"")).collect();
        assert_eq!(lt[0].matches("stroke-dasharray").count(), b.changes.len());
    }

    #[test]
    fn paging_keeps_the_view() {
        let mut b = sample::board(5, false);
        b.total_runs = 20;
        b.view = View { kernel: Some("6.12 rt".into()), ..View::default() };
        let lowest = b.runs[0].row.id;
        let h = board(&b, "s");
        assert!(h.contains(&format!("href=\"/board/board-0?kernel=6.12%20rt&amp;before={lowest}\"")), "{h}");
        b.total_runs = 5;
        assert!(!board(&b, "s").contains("older runs"));
        b.before = Some(99);
        let h = board(&b, "s");
        assert!(h.contains("href=\"/board/board-0?kernel=6.12%20rt\""));
        assert!(!h.contains("older runs"));
    }

    #[test]
    fn hostile_names_show_as_text_everywhere() {
        let b = sample::board(40, true);
        let h = board(&b, "<script>alert(2)</script>");
        assert_eq!(h.matches("<script").count(), 1, "only the page's own script");
        assert!(!h.contains("<img"));
        assert!(h.contains("<h1>Board &lt;script&gt;alert(1)&lt;/script&gt;</h1>"));
        assert!(h.contains("action=\"/board/%3Cscript%3Ealert%281%29%3C%2Fscript%3E\""));
        well_formed(&h);
        same_origin(&h);
    }

    #[test]
    fn a_store_that_keeps_no_forecast_is_said_to_and_nothing_drawn() {
        let mut b = sample::board(5, false);
        for r in &mut b.runs {
            crate::store::figures::without_forecasts(&mut r.figures);
        }
        let h = board(&b, "s");
        assert_eq!(h.matches("this store's layout keeps none").count(), 2, "under each series' plot");
        assert!(!h.contains("once per day (forecast) ") && !h.contains("forecast not applicable"));
    }

    #[test]
    fn an_empty_board_page_says_so() {
        let mut b = sample::board(0, false);
        b.view = View { label: Some("x".into()), ..View::default() };
        let h = board(&b, "s");
        assert!(h.contains("No run of this board passes these filters"));
        assert_eq!(well_formed(&h), 0);
    }
}
