//! `rtgauge delete RUN`: a stored run removed from the store.

use super::args::DeleteArgs;
use super::stored::existing_for_writing;
use crate::report::out;
use anyhow::Result;

/// `rtgauge delete RUN`.
pub fn delete(a: &DeleteArgs) -> Result<u8> {
    let s = existing_for_writing(a.store.db.as_deref())?;
    let id = s.resolve(&a.run).map_err(anyhow::Error::msg)?;
    s.delete(id).map_err(anyhow::Error::msg)?;
    out::text(&format!("deleted run {id} from {}\n", s.shown()))?;
    Ok(0)
}
