//! `rtgauge compare A B [C...]`: stored runs side by side (`crate::report::compare`), on the
//! terminal, as JSON, as an HTML page and/or images; exit 1 on a regression (`--fail-if-worse`).

use super::args::CompareArgs;
use super::stored::{existing, html_sink, named_runs, png_out, write_page, wrote_images};
use crate::report::compare::{self, Options};
use crate::report::out;
use anyhow::{anyhow, Result};

/// `rtgauge compare`.
pub fn compare(a: &CompareArgs) -> Result<u8> {
    let o = Options::parse(a.cycle_time.as_deref(), a.budget.as_deref(), a.fail_if_worse.as_deref(), &a.metrics)?;
    let mut names: Vec<String> = a.baseline.iter().cloned().collect();
    names.extend(a.runs.iter().cloned());
    if names.len() < 2 {
        return Err(anyhow!(
            "compare needs two runs or more, e.g. rtgauge compare stock-kernel rt-kernel (rtgauge list shows them)"
        ));
    }
    let png = png_out(&a.png)?;
    let sink = html_sink(a.html.as_deref())?;
    let s = existing(a.store.db.as_deref())?;
    let runs = named_runs(&s, &names)?;
    if runs.len() < 2 {
        return Err(anyhow!("these name one run only ({}); compare needs two or more", runs[0].name()));
    }
    let c = compare::compare(&runs, &o, &|r: &crate::result::RunResult| s.kernel_config_of(r).map_err(String::from))?;
    if let Some(images) = &png {
        wrote_images(images.write(&compare::images(&runs, &c)).map_err(anyhow::Error::msg)?);
    }
    if let (Some(sink), Some(path)) = (sink, &a.html) {
        let page = compare::html(&runs, &c).map_err(anyhow::Error::msg)?;
        write_page(sink, &page, &format!("the comparison of {} runs", runs.len()), path)?;
    } else if a.json {
        out::json(&c)?;
    } else {
        out::text(&compare::text(&runs, &c))?;
    }
    Ok(if c.regressed() { 1 } else { 0 })
}
