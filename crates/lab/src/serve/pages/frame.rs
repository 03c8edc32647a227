//! Every dashboard page's frame: the document's head (title, the report's style and the
//! dashboard's, the script from `/static/dashboard.js`), the navigation (the fleet, the store's
//! name) and the filter form (a plain GET form: a URL names a view, and it works without
//! script). Nothing is loaded from elsewhere.

use crate::report::html::STYLE;
use crate::report::markup::Html;
use crate::serve::model::{percent, View};
use rtgauge_report::html;

/// The dashboard's style, after the report's: wider pages (a 1280 px screen used), the
/// navigation bar, the filter form, compact tables and the plots' marks.
const DASHBOARD_STYLE: &str = "
body{max-width:1240px;padding:0 1.2em 2em}
nav.top{display:flex;gap:1.2em;align-items:baseline;flex-wrap:wrap;padding:.6em 0;border-bottom:2px solid #ddd}
nav.top .brand{font-weight:700;color:#222;text-decoration:none} nav.top .store{margin-left:auto;color:#666;font-size:.85em;word-break:break-all}
form.filter{display:flex;flex-wrap:wrap;gap:.4em .8em;align-items:flex-end;margin:.7em 0;font-size:.85em}
form.filter label{display:flex;flex-direction:column;color:#555} form.filter input{font:inherit;padding:.15em .3em;width:9em}
form.filter a{align-self:center}
table.runs{width:100%} table.runs td,table.runs th{padding:.2em .45em;vertical-align:top} table.runs td.series{color:#555}
table.runs tbody tr:hover{background:#f7f9fc}
th.sortable{cursor:pointer;user-select:none;text-decoration:underline dotted #aaa;text-underline-offset:3px}
th[aria-sort=ascending]::after{content:' \\2191'} th[aria-sort=descending]::after{content:' \\2193'}
.nowrap{white-space:nowrap} td.name{min-width:7em;overflow-wrap:anywhere} table.runs td{font-size:.95em}
.chip{padding:.05em .45em;border-radius:4px;font-size:.9em;white-space:nowrap}
a.reg{display:inline-block;line-height:1.25;background:#fbe3e3;border:1px solid #e08080;color:#a11;border-radius:4px;padding:0 .35em;margin:0 .2em .15em 0;font-size:.85em;text-decoration:none;white-space:nowrap}
.compare-bar{display:flex;gap:.8em;align-items:center;margin:.4em 0;font-size:.9em}
svg.spark{display:block} svg a circle:hover{stroke:#000;stroke-width:1.5}
figure.wide svg{width:100%;height:auto}
ul.changes{font-size:.88em;columns:2 30em} .paging{margin:1em 0}
";

/// A field of the filter form: its name, its value in the view, and its placeholder.
type Field<'a> = (&'static str, &'a Option<String>, &'static str);

/// Which page the frame is around: the fleet, or one board (its filter form then keeps to it).
pub enum Place<'a> {
    Fleet,
    Board(&'a str),
}

/// A whole page: `body` in the frame, titled `title` (text, escaped here).
pub fn page(title: &str, store_shown: &str, view: &View, place: Place, body: &Html) -> Html {
    let mut h = html!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<title>{title} · rtgauge dashboard</title><style>{style}{dashboard}</style><script src=\"/static/dashboard.js\" defer></script></head><body>",
        title = title,
        style = Html::lit(STYLE),
        dashboard = Html::lit(DASHBOARD_STYLE),
    );
    h += html!(
        "<nav class=\"top\"><a class=\"brand\" href=\"/\">rtgauge dashboard</a><a href=\"/\">Fleet</a>{}<span class=\"store\">store: {}</span></nav>",
        match place {
            Place::Board(name) => html!("<a href=\"/board/{}\">board {}</a>", percent(name), name),
            Place::Fleet => Html::new(),
        },
        store_shown
    );
    h += filter_form(view, &place);
    h += body;
    h += "</body></html>\n";
    h
}

/// The filter form, prefilled from the view: board (on the fleet page), kernel, scenario,
/// label, since and until. A GET form: the URL it leads to names the view.
fn filter_form(view: &View, place: &Place) -> Html {
    let (action, fields): (String, &[Field]) = match place {
        Place::Fleet => ("/".to_string(), &[("board", &view.board, "any")]),
        Place::Board(name) => (format!("/board/{}", percent(name)), &[]),
    };
    let common: [Field; 5] = [
        ("kernel", &view.kernel, "any"),
        ("scenario", &view.scenario, "any"),
        ("label", &view.label, "any"),
        ("since", &view.since, "e.g. 7d"),
        ("until", &view.until, "e.g. 2026-11-20"),
    ];
    let mut h = html!("<form class=\"filter\" method=\"get\" action=\"{}\">", action);
    for (name, value, hint) in fields.iter().chain(common.iter()) {
        h += html!(
            "<label>{name}<input type=\"text\" name=\"{name}\" value=\"{value}\" placeholder=\"{hint}\"></label>",
            name = *name,
            value = value.as_deref().unwrap_or(""),
            hint = *hint
        );
    }
    h += "<button type=\"submit\">Show</button>";
    if *view != View::default() {
        h += html!("<a href=\"{}\">clear the filters</a>", action);
    }
    h += "</form>";
    h
}

/// The bar above a table of runs: the button that compares the runs picked (2 to 8; the script
/// remembers picks across pages and counts them).
pub fn compare_bar() -> Html {
    Html::lit(
        "<div class=\"compare-bar\"><button type=\"submit\">Compare the runs picked</button>\
<span class=\"picked muted\">pick 2 to 8 runs with the boxes</span>\
<button type=\"button\" class=\"unpick\" hidden>Unpick all</button></div>",
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::same_origin;
    use super::*;

    #[test]
    fn the_frame_loads_its_script_from_the_dashboard_and_escapes_the_store_and_the_view() {
        let view = View { board: Some("\"><script>alert(1)</script>".into()), ..View::default() };
        let h = page("<b>x</b>", "<img src=x>", &view, Place::Fleet, &Html::new()).into_string();
        assert!(h.starts_with("<!doctype html>"));
        assert!(h.contains("<script src=\"/static/dashboard.js\" defer></script>"));
        assert_eq!(h.matches("<script").count(), 1, "{h}");
        assert!(!h.contains("<img"));
        assert!(h.contains("value=\"&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;\""));
        assert!(h.contains("<title>&lt;b&gt;x&lt;/b&gt; · rtgauge dashboard</title>"));
        same_origin(&h);
    }

    #[test]
    fn a_board_page_filters_within_its_board() {
        let view = View { kernel: Some("6.12".into()), ..View::default() };
        let h = page("b", "s", &view, Place::Board("a b/c"), &Html::new()).into_string();
        assert!(h.contains("action=\"/board/a%20b%2Fc\""));
        assert!(!h.contains("name=\"board\""));
        assert!(h.contains("name=\"kernel\" value=\"6.12\""));
        assert!(h.contains("clear the filters"));
    }
}
