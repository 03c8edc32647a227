//! Writes the result document as JSON, to standard output or to a file. A file is written
//! beside its destination first and renamed over it when complete, so a reader never sees a
//! half-written document and an earlier result at that path survives a failed run. The
//! destination is checked before the run (a bad path fails before anything is measured) without
//! leaving anything there, so a run that is killed leaves no stray file. A destination that is
//! not a regular file (`/dev/null`, a FIFO, a terminal) is written directly, never replaced;
//! a symbolic link is followed, so the link stays and its target gets the document.

use crate::result::RunResult;
use crate::scenario::JsonTarget;
use anyhow::{anyhow, Context};
use std::io::Write;
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// An open destination for the result document.
pub enum JsonSink {
    Stdout,
    File { path: PathBuf, dir: PathBuf, prefix: String },
    /// A device, FIFO or other special file, opened now and written at the end.
    Special { path: PathBuf, file: std::fs::File },
}

fn unwritable(path: &Path, why: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("--json cannot write '{}': {why}; choose a writable path, e.g. --json result.json", path.display())
}

fn temp_file(dir: &Path, prefix: &str) -> std::io::Result<NamedTempFile> {
    tempfile::Builder::new().prefix(prefix).suffix(".partial").tempfile_in(dir)
}

impl JsonSink {
    /// Checks the destination and prepares the file written at the end.
    pub fn open(target: &JsonTarget) -> anyhow::Result<JsonSink> {
        let path = match target {
            JsonTarget::Stdout => return Ok(JsonSink::Stdout),
            JsonTarget::File(p) => p,
        };
        if path.is_dir() {
            return Err(unwritable(path, "it is a directory"));
        }
        if let Ok(meta) = std::fs::metadata(path) {
            if !meta.is_file() {
                let file = std::fs::OpenOptions::new().write(true).open(path).map_err(|e| unwritable(path, e))?;
                return Ok(JsonSink::Special { path: path.clone(), file });
            }
            std::fs::OpenOptions::new().append(true).open(path).map_err(|e| unwritable(path, e))?;
        }
        // Write beside the real file, so that renaming over it keeps a symbolic link intact.
        let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        let path = &resolved;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let prefix = format!(".{name}.");
        // Proves the directory takes new files; removed again at once.
        temp_file(dir, &prefix).map_err(|e| unwritable(path, e))?;
        Ok(JsonSink::File { path: path.to_path_buf(), dir: dir.to_path_buf(), prefix })
    }

    pub fn is_stdout(&self) -> bool {
        matches!(self, JsonSink::Stdout)
    }

    /// Writes the result document, pretty-printed, with a final newline.
    pub fn write(self, result: &RunResult) -> anyhow::Result<()> {
        self.write_value(result)
    }

    /// Writes any serialisable document, pretty-printed, with a final newline.
    pub fn write_value<T: serde::Serialize>(self, result: &T) -> anyhow::Result<()> {
        match self {
            JsonSink::Stdout => {
                let mut out = std::io::stdout().lock();
                serde_json::to_writer_pretty(&mut out, result)?;
                writeln!(out)?;
            }
            JsonSink::Special { path, mut file } => {
                let context = || format!("writing the result to '{}'", path.display());
                serde_json::to_writer_pretty(&mut file, result).with_context(context)?;
                writeln!(file).with_context(context)?;
            }
            JsonSink::File { path, dir, prefix } => {
                let context = || format!("writing the result to '{}'", path.display());
                let mut temp = temp_file(&dir, &prefix).with_context(context)?;
                serde_json::to_writer_pretty(&mut temp, result).with_context(context)?;
                writeln!(temp).with_context(context)?;
                temp.as_file().sync_all().with_context(context)?;
                temp.persist(&path).map_err(|e| e.error).with_context(context)?;
            }
        }
        Ok(())
    }
}
