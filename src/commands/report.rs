//! `rtgauge report RUN...`: stored runs as the summary with text histograms, or as one
//! self-contained HTML page (`--html`) and/or images (`--png`).

use super::args::ReportArgs;
use super::stored::{existing, html_sink, named_runs, png_out, write_page, wrote_images};
use crate::report::{self, html, out, summary};
use anyhow::Result;

/// `rtgauge report RUN...`: the summary with text histograms, or `--html FILE` and/or
/// `--png DIR`. Every destination and the font are checked before anything is drawn.
pub fn report(a: &ReportArgs) -> Result<u8> {
    let png = png_out(&a.png)?;
    let sink = html_sink(a.html.as_deref())?;
    let s = existing(a.store.db.as_deref())?;
    let runs = named_runs(&s, &a.runs)?;
    if let (Some(sink), Some(path)) = (sink, &a.html) {
        let page = html::render(&runs).map_err(anyhow::Error::msg)?;
        write_page(sink, &page, &format!("the report of {} run(s)", runs.len()), path)?;
    }
    if let Some(out) = &png {
        wrote_images(out.write(&html::plots(&runs).map_err(anyhow::Error::msg)?).map_err(anyhow::Error::msg)?);
    }
    if a.html.is_none() && png.is_none() {
        for n in &runs {
            out::text(&format!("=== {}\n", report::shown(&n.name())))?;
            out::text(&summary::render(&n.result))?;
            out::text(&summary::text_histograms(&n.result))?;
        }
    }
    Ok(0)
}
