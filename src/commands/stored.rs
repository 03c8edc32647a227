//! What the store's commands share: the store named by `--db` opened (it must exist), the runs
//! named on the command line read (each with its convergence and forecast: `load`), and the
//! destinations of pages and images checked before any work and written whole.

use super::args::PngArgs;
#[cfg(feature = "lab")]
use crate::png;
use crate::report::json::{Asked, JsonSink};
use crate::report::{html, out};
use crate::scenario::JsonTarget;
use crate::store::{self, Store};
use anyhow::{anyhow, Result};

/// The store named by `--db` (or the default), which must exist, opened for reading only
/// (`show`, `export`, `report`, `compare`: a read-only store or another user's serves).
pub fn existing(db: Option<&std::path::Path>) -> Result<Store> {
    found(db, store::open_existing(db).map_err(anyhow::Error::msg)?)
}

/// The store named by `--db` (or the default), which must exist, opened for writing (`delete`).
pub fn existing_for_writing(db: Option<&std::path::Path>) -> Result<Store> {
    found(db, store::open_existing_for_writing(db).map_err(anyhow::Error::msg)?)
}

/// The store, or an error naming where none was found.
fn found(db: Option<&std::path::Path>, store: Option<Store>) -> Result<Store> {
    match store {
        Some(s) => Ok(s),
        None => Err(anyhow!(
            "no store at {}: rtgauge run keeps its runs there; give another with --db PATH",
            db.map(store::Location::of).or_else(store::default_location).map(|l| l.shown()).unwrap_or_default()
        )),
    }
}

/// Run `id` of store `s` as `show`, `report`, `compare` and `export` read it: with the
/// convergence and forecast of every latency series that lacks them (a document of an older
/// version, an import of another tool's file) computed from the document (`crate::forecast`),
/// for this reading only: the store is not written.
pub fn load(s: &Store, id: i64) -> Result<crate::result::RunResult> {
    let mut run = s.load(id).map_err(anyhow::Error::msg)?;
    crate::forecast::analyse(&mut run);
    Ok(run)
}

/// The runs named on the command line, each once, in the order given.
pub fn named_runs(s: &Store, runs: &[String]) -> Result<Vec<html::Named>> {
    let mut out: Vec<html::Named> = Vec::new();
    for run in runs {
        let id = s.resolve(run).map_err(anyhow::Error::msg)?;
        if out.iter().any(|n| n.id == id) {
            continue;
        }
        let result = load(s, id)?;
        out.push(html::Named { id, label: s.label(id).map_err(anyhow::Error::msg)?, result });
    }
    Ok(out)
}

/// Opens `--html FILE` (`-`: standard output) before anything is read (a destination that
/// cannot be written is an error before any work).
pub fn html_sink(path: Option<&std::path::Path>) -> Result<Option<JsonSink>> {
    let asked = Asked { option: "--html", example: "report.html" };
    let target =
        |p: &std::path::Path| if p == std::path::Path::new("-") { JsonTarget::Stdout } else { JsonTarget::File(p.into()) };
    path.map(|p| JsonSink::open_as(&target(p), asked)).transpose()
}

/// Writes an HTML page where `--html` said: the file whole (and says so on standard error),
/// or standard output.
pub fn write_page(sink: JsonSink, page: &str, what: &str, path: &std::path::Path) -> Result<()> {
    if sink.is_stdout() {
        out::bytes(page.as_bytes())?;
        return Ok(());
    }
    sink.write_bytes(page.as_bytes()).map_err(|e| anyhow!("writing {what} to {} failed: {e}", path.display()))?;
    crate::report::out::err_line(&format!("Wrote {what} to {}.", path.display()));
    Ok(())
}

/// `--png DIR [--font FILE]`, checked: the directory writable, a font found.
#[cfg(feature = "lab")]
pub fn png_out(a: &PngArgs) -> Result<Option<png::PngOut>> {
    a.png.as_deref().map(|dir| png::PngOut::prepare(dir, a.font.as_deref()).map_err(anyhow::Error::msg)).transpose()
}

/// The board build draws no images: `--png` says which build does, before anything is read.
#[cfg(not(feature = "lab"))]
pub fn png_out(a: &PngArgs) -> Result<Option<NoImages>> {
    match a.png {
        Some(_) => Err(super::in_the_lab_build("--png (the plots as images)")),
        None => Ok(None),
    }
}

/// What the board build writes images with: nothing (`png_out` refuses `--png` there).
#[cfg(not(feature = "lab"))]
pub enum NoImages {}

#[cfg(not(feature = "lab"))]
impl NoImages {
    pub fn write(&self, _plots: &[(String, String)]) -> Result<Vec<std::path::PathBuf>, crate::vocab::Error> {
        match *self {}
    }
}

/// Says which images were written.
pub fn wrote_images(files: Vec<std::path::PathBuf>) {
    let dir = files.first().and_then(|f| f.parent()).map(|d| d.display().to_string()).unwrap_or_default();
    let names: Vec<String> = files.iter().filter_map(|f| f.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
    if names.is_empty() {
        crate::report::out::err_line("No plot to draw: nothing was measured in these runs.");
    } else {
        crate::report::out::err_line(&format!("Wrote {} image(s) to {dir}: {}.", names.len(), names.join(", ")));
    }
}
