//! The report's plots as PNG images, for slides (`report --png DIR`, `compare --png DIR`): the
//! very SVG plots of the HTML report, rasterised by resvg at twice their size. Their text needs
//! a font: the system's (a sans-serif face, DejaVu or Liberation preferred) or `--font FILE`.
//! A board without fonts gets an error naming the fix before anything is drawn, never plots
//! without labels. The directory is checked (made, writable) before anything is drawn too.

use crate::report::json::JsonSink;
use crate::scenario::userfile;
use crate::scenario::JsonTarget;
use resvg::usvg::{self, fontdb};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The most a font file given with `--font` may hold.
const FONT_CAP: u64 = 64 << 20;
/// Images are drawn at this multiple of the SVG's size (900 × 380 → 1800 × 760).
const SCALE: f32 = 2.0;
/// Sans-serif families preferred for the plots' text, in order, when the system has several.
const PREFERRED: &[&str] = &["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial", "Helvetica", "FreeSans"];

/// Where the images go and the fonts they are drawn with: everything checked before drawing.
pub struct PngOut {
    dir: PathBuf,
    fonts: Arc<fontdb::Database>,
}

impl PngOut {
    /// Checks the destination (made if missing; a writable directory) and finds a font.
    pub fn prepare(dir: &Path, font: Option<&Path>) -> Result<PngOut, crate::vocab::Error> {
        Self::prepare_text(dir, font).map_err(crate::vocab::Error::Invalid)
    }

    /// [`prepare`], its failure as text.
    fn prepare_text(dir: &Path, font: Option<&Path>) -> Result<PngOut, String> {
        let fonts = fonts(font)?;
        let shown = dir.display();
        if dir.exists() && !dir.is_dir() {
            return Err(format!("--png {shown} is not a directory; give a directory (it is made if missing)"));
        }
        crate::sys::files::make_dir_all(dir, crate::sys::files::user_mode(0o755))
            .map_err(|e| format!("--png {shown}: cannot make the directory: {e}; give another"))?;
        tempfile::tempfile_in(dir).map_err(|e| format!("--png {shown}: cannot write into it: {e}; give a writable directory"))?;
        Ok(PngOut { dir: dir.to_path_buf(), fonts })
    }

    /// Draws each (file stem, SVG) plot into `DIR/STEM.png`; returns the files written.
    pub fn write(&self, plots: &[(String, String)]) -> Result<Vec<PathBuf>, crate::vocab::Error> {
        self.write_text(plots).map_err(crate::vocab::Error::System)
    }

    /// [`Self::write`], its failure as text.
    fn write_text(&self, plots: &[(String, String)]) -> Result<Vec<PathBuf>, String> {
        let options = usvg::Options { fontdb: self.fonts.clone(), ..usvg::Options::default() };
        let mut written = Vec::new();
        for (stem, svg) in plots {
            let png = render(svg, &options).map_err(|e| format!("drawing {stem}.png failed: {e}"))?;
            let path = self.dir.join(format!("{stem}.png"));
            // Written whole, as every file rtgauge writes (an existing one keeps its owner and mode).
            let asked = crate::report::json::Asked { option: "--png", example: "plots" };
            let sink = JsonSink::open_as(&JsonTarget::File(path.clone()), asked).map_err(|e| format!("{e:#}"))?;
            sink.write_bytes(&png).map_err(|e| format!("writing {} failed: {e}", path.display()))?;
            written.push(path);
        }
        Ok(written)
    }
}

/// The font database: `--font FILE` alone, else the system's fonts; its sans-serif family set
/// to a face it holds (the plots name `system-ui`, `DejaVu Sans`, then `sans-serif`).
fn fonts(font: Option<&Path>) -> Result<Arc<fontdb::Database>, String> {
    let mut db = fontdb::Database::new();
    match font {
        Some(path) => {
            let shown = path.display();
            let data =
                userfile::read_bytes(path, FONT_CAP).map_err(|e| format!("--font {shown}: {e}; give a .ttf or .otf file"))?;
            db.load_font_data(data);
            if db.is_empty() {
                return Err(format!("--font {shown} is not a font (TrueType or OpenType); give a .ttf or .otf file"));
            }
        }
        None => {
            db.load_system_fonts();
            if db.is_empty() {
                return Err("no font found on this system to draw the plots' text: give one with --font FILE (a .ttf or \
                     .otf file, e.g. DejaVuSans.ttf copied from another machine)"
                    .into());
            }
        }
    }
    let families: Vec<String> = db.faces().flat_map(|f| f.families.iter().map(|(name, _)| name.clone())).collect();
    let family = PREFERRED
        .iter()
        .find(|p| families.iter().any(|f| f == *p))
        .map(|p| p.to_string())
        .or_else(|| families.iter().find(|f| f.contains("Sans") && !f.contains("Mono")).cloned())
        .or_else(|| families.first().cloned())
        .ok_or("the fonts found name no family; give one with --font FILE")?;
    db.set_sans_serif_family(family);
    Ok(Arc::new(db))
}

/// One SVG as PNG bytes, on its own white background.
fn render(svg: &str, options: &usvg::Options) -> Result<Vec<u8>, String> {
    let tree = usvg::Tree::from_str(svg, options).map_err(|e| e.to_string())?;
    let size = tree.size();
    let (w, h) = ((size.width() * SCALE).ceil() as u32, (size.height() * SCALE).ceil() as u32);
    let mut pixmap = resvg::tiny_skia::Pixmap::new(w.max(1), h.max(1)).ok_or("the image is too large")?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(&tree, resvg::tiny_skia::Transform::from_scale(SCALE, SCALE), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| e.to_string())
}
