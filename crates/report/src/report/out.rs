//! Standard output as a file like any other. Every command writes its output here, never with
//! `print!` (which panics when a write fails), and each write is flushed and its error kept:
//!
//! - the reader went away (a broken pipe: `rtgauge list | head -1`): the command stops quietly,
//!   with nothing on standard error and exit status 141 — what a shell shows for a Unix tool
//!   that SIGPIPE ended (`cat`, `grep`), so `set -o pipefail` still sees that the output was
//!   cut short (a gate's pass is never read from half a report);
//! - any other write error (a full disk): one line naming it, exit status 2;
//! - standard output closed (`>&-`; Rust's runtime puts `/dev/null` there, so writes would
//!   vanish): one line, exit status 2, instead of a success that wrote nothing.
//!
//! Text is written with its control characters escaped ([`super::shown_text`]) and JSON with
//! the few JSON leaves raw written as JSON escapes ([`super::shown_json`]): nothing from a file
//! reaches the terminal as a control sequence.

use std::io::Write;

/// 128 + SIGPIPE: the exit status of a command whose reader went away.
pub const EXIT_BROKEN_PIPE: u8 = 141;

/// Why the output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The reader went away: the command stops quietly (see [`exit_status`]).
    #[error("standard output was closed by its reader (broken pipe)")]
    BrokenPipe,
    #[error("standard output is closed (or not open for writing), so nothing could be written; redirect it to a file, e.g. '> out.txt'")]
    Closed,
    #[error("writing to standard output failed: {0}; write to another file or free some space")]
    Failed(std::io::Error),
}

impl From<std::io::Error> for OutputError {
    fn from(e: std::io::Error) -> OutputError {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            OutputError::BrokenPipe
        } else {
            OutputError::Failed(e)
        }
    }
}

/// Whether standard output can take output: an error when it was closed.
pub fn check_open() -> Result<(), OutputError> {
    if crate::sys::fd::stdout_was_closed() {
        return Err(OutputError::Closed);
    }
    Ok(())
}

/// Writes `bytes` as they are (an HTML page, a document) and flushes them.
pub fn bytes(bytes: &[u8]) -> Result<(), OutputError> {
    check_open()?;
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}

/// Writes a text rtgauge composed, its control characters escaped.
pub fn text(s: &str) -> Result<(), OutputError> {
    bytes(super::shown_text(s).as_bytes())
}

/// Writes a JSON text (a document already serialised), safe for a terminal.
pub fn json_text(s: &str) -> Result<(), OutputError> {
    bytes(super::shown_json(s).as_bytes())
}

/// Writes an export of `rtgauge export` in `format`: the JSON formats as JSON, the others as text.
pub fn export(format: &str, text: &str) -> Result<(), OutputError> {
    if format.ends_with("json") {
        json_text(text)
    } else {
        self::text(text)
    }
}

/// Writes `doc` as pretty-printed JSON with a final newline.
pub fn json<T: serde::Serialize + ?Sized>(doc: &T) -> anyhow::Result<()> {
    let mut s = serde_json::to_string_pretty(doc)?;
    s.push('\n');
    Ok(json_text(&s)?)
}

/// Whether `e` is (or was caused by) the reader of standard output going away: the command
/// stops without a word, with [`EXIT_BROKEN_PIPE`]. Every other output error is an error as
/// any other (one line, exit status 2).
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| matches!(c.downcast_ref::<OutputError>(), Some(OutputError::BrokenPipe)))
}

/// Writes one line to standard error (an error, a warning, a note), its control characters
/// escaped; a standard error that cannot be written (the terminal closed: SIGHUP, a dropped ssh
/// connection) loses the line, never what follows it (keeping a run's result).
pub fn err_line(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(super::shown_text(line).as_bytes()).and_then(|()| err.write_all(b"\n")).and_then(|()| err.flush());
}
