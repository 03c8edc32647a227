//! `rtgauge show RUN`: a stored run's summary, or its whole result document (`--json`).

use super::args::ShowArgs;
use super::stored::{existing, load};
use crate::report::{out, summary};
use anyhow::Result;

/// `rtgauge show RUN`.
pub fn show(a: &ShowArgs) -> Result<u8> {
    let s = existing(a.store.db.as_deref())?;
    let id = s.resolve(&a.run).map_err(anyhow::Error::msg)?;
    let r = load(&s, id)?;
    if a.json {
        out::json(&r)?;
    } else {
        out::text(&summary::render(&r))?;
    }
    Ok(0)
}
