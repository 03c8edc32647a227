//! Writes the result document as JSON, to a file opened before the run (so a bad path fails
//! before anything is measured) or to standard output.

use crate::result::RunResult;
use crate::scenario::JsonTarget;
use anyhow::Context;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

/// An open destination for the result document.
pub enum JsonSink {
    Stdout,
    File(PathBuf, File),
}

impl JsonSink {
    /// Opens (creates or truncates) the destination now, so that an unwritable path is a
    /// usage error before the measurement rather than a lost result after it.
    pub fn open(target: &JsonTarget) -> anyhow::Result<JsonSink> {
        Ok(match target {
            JsonTarget::Stdout => JsonSink::Stdout,
            JsonTarget::File(p) => {
                let f = File::create(p).map_err(|e| {
                    anyhow::anyhow!("--json cannot write '{}': {e}; choose a writable path, e.g. --json result.json", p.display())
                })?;
                JsonSink::File(p.clone(), f)
            }
        })
    }

    pub fn is_stdout(&self) -> bool {
        matches!(self, JsonSink::Stdout)
    }

    /// Writes the document, pretty-printed, with a final newline.
    pub fn write(self, result: &RunResult) -> anyhow::Result<()> {
        match self {
            JsonSink::Stdout => {
                let mut out = std::io::stdout().lock();
                serde_json::to_writer_pretty(&mut out, result)?;
                writeln!(out)?;
            }
            JsonSink::File(path, mut f) => {
                serde_json::to_writer_pretty(&mut f, result)
                    .map_err(std::io::Error::from)
                    .and_then(|_| writeln!(f))
                    .with_context(|| format!("writing the result to '{}'", path.display()))?;
                f.sync_all().ok();
            }
        }
        Ok(())
    }
}
