//! `rtgauge import FILE...`: other tools' results (and rtgauge's own documents) read, checked
//! and understood (`crate::interchange`), then kept in the store.

use super::args::ImportArgs;
use crate::report::{self, out};
use crate::store::{self, Store};
use crate::vocab::units::us;
use anyhow::{anyhow, Result};

/// `rtgauge import FILE...`: every file is read and understood before any is stored.
pub fn import(a: &ImportArgs) -> Result<u8> {
    let mut runs =
        a.files.iter().map(|f| crate::interchange::import(f)).collect::<Result<Vec<_>, String>>().map_err(anyhow::Error::msg)?;
    let keep = store::Request::new(a.store.db.as_deref(), false, a.label.as_deref()).map_err(anyhow::Error::msg)?;
    let Some(path) = keep.path.clone() else {
        return Err(anyhow!("{}", keep.why_not.unwrap_or_else(|| "no store".into())));
    };
    let s = Store::open(&path).map_err(|e| anyhow!("{e}"))?;
    for (file, r) in a.files.iter().zip(&mut runs) {
        let source = r.imported.as_ref().map(|i| i.source.clone());
        let id = s.save(r, a.label.as_deref(), source.as_deref()).map_err(anyhow::Error::msg)?;
        let what = r
            .imported
            .as_ref()
            .map_or(String::new(), |i| format!("{} {}", i.tool, i.tool_version.as_deref().unwrap_or("(version not recorded)")));
        let worst = r.probes.iter().filter_map(|p| p.max_ns).max().map_or("-".into(), us);
        out::text(&format!(
            "Imported {} ({}, {}, worst case {worst} µs) as run {id} in {} ('rtgauge show {id}').\n",
            report::shown(&file.display().to_string()),
            report::shown(&what),
            crate::vocab::Count(r.probes.len() as u64, "CPU"),
            report::shown(&s.path().display().to_string())
        ))?;
    }
    Ok(0)
}
