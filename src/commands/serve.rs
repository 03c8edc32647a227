//! `rtgauge serve [--db STORE] [--listen ADDR:PORT]`: the read-only dashboard over a store
//! (`crate::serve`), until Ctrl-C or SIGTERM.

use super::args::ServeArgs;
use anyhow::Result;

/// `rtgauge serve`.
pub fn serve(a: &ServeArgs) -> Result<u8> {
    crate::serve::serve(a.store.db.as_deref(), &a.listen).map_err(anyhow::Error::msg)
}
