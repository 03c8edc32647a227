//! The dashboard's pages, drawn on the server from [`super::model`]: plain HTML with inline SVG,
//! usable without script.

pub mod board;
pub mod fleet;

/// The dashboard's little script (sorting tables), served from `/static/dashboard.js`.
pub const SCRIPT: &str = "";

/// A page made elsewhere (the run's report, a comparison) with the dashboard's navigation on
/// top: links to `trail`'s pages, and the store's name.
pub fn with_nav(page: &str, store: &str, trail: &[(String, String)]) -> String {
    use crate::report::html::esc;
    let links: Vec<String> = trail.iter().map(|(text, href)| format!("<a href=\"{}\">{}</a>", esc(href), esc(text))).collect();
    let nav = format!(
        "<nav style=\"font-size:.9em;padding:.4em 0;border-bottom:1px solid #ddd\">{} \
         <span style=\"color:#666;float:right\">rtgauge dashboard · {}</span></nav>",
        links.join(" › "),
        esc(store)
    );
    match page.find("<body").and_then(|at| page[at..].find('>').map(|end| at + end + 1)) {
        Some(at) => format!("{}{nav}{}", &page[..at], &page[at..]),
        None => format!("{nav}{page}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_report_gets_the_navigation_after_its_body_tag_escaped() {
        let page = "<html><head></head><body class=\"x\"><h1>r</h1></body></html>";
        let trail = [("Fleet".to_string(), "/".to_string()), ("<b>".to_string(), "/board/%3Cb%3E".to_string())];
        let out = super::with_nav(page, "a&b.db", &trail);
        assert!(out.starts_with("<html><head></head><body class=\"x\"><nav"), "{out}");
        assert!(out.contains("<a href=\"/board/%3Cb%3E\">&lt;b&gt;</a>") && out.contains("a&amp;b.db"), "{out}");
        assert!(!out.contains("<b>"));
    }
}
