//! Reading a file to import, as rtgauge can vouch for it: opened once, without blocking (a FIFO
//! or a device is refused before anything is read), only a regular file of at most
//! [`super::IMPORT_CAP`] bytes; streamed (never held whole), with the SHA-256 of exactly the
//! bytes parsed and the path the open file really has. Errors say where (line and column) and
//! what was wrong, never what the file holds: a file rtgauge (root) can read may be one its
//! user cannot.

use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read, Seek};
use std::path::Path;

/// A file opened for import.
pub struct Opened {
    pub file: File,
    /// The path of the file opened (its links resolved), as the kernel has it.
    pub path: String,
}

/// Opens `path` for import: a regular file (a FIFO would block, a device never ends) of at most
/// `cap` bytes.
pub fn open(path: &Path, cap: u64) -> Result<Opened, crate::vocab::Error> {
    open_text(path, cap).map_err(crate::vocab::Error::System)
}

/// [`open`], its failure as text.
fn open_text(path: &Path, cap: u64) -> Result<Opened, String> {
    // A regular file only, refused without blocking otherwise (a FIFO would wait for a writer).
    let file = crate::sys::files::open_regular(path).map_err(|e| format!("{e}; give the result file itself"))?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if meta.len() > cap {
        return Err(format!("it is larger than {cap} bytes, more than any result file holds"));
    }
    use std::os::fd::AsRawFd;
    let path = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .or_else(|_| std::fs::canonicalize(path))
        .unwrap_or_else(|_| path.to_path_buf());
    Ok(Opened { file, path: path.display().to_string() })
}

impl Opened {
    /// A reader of the file from its start (at most `cap` bytes: a file that grew beyond them
    /// while read is refused).
    pub fn reader(&mut self, cap: u64) -> Result<Hashing<&File>, crate::vocab::Error> {
        self.reader_text(cap).map_err(crate::vocab::Error::System)
    }

    /// [`Self::reader`], its failure as text.
    fn reader_text(&mut self, cap: u64) -> Result<Hashing<&File>, String> {
        self.file.rewind().map_err(|e| e.to_string())?;
        Ok(Hashing { inner: &self.file, hasher: Sha256::new(), read: 0, cap })
    }
}

/// A reader that hashes what passes through it and refuses more than `cap` bytes.
pub struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    read: u64,
    cap: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read = self.read.saturating_add(n as u64);
        if self.read > self.cap {
            return Err(std::io::Error::other(format!("it grew larger than {} bytes while it was read", self.cap)));
        }
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

impl<R: Read> Hashing<R> {
    /// The SHA-256 (hex) of every byte read, after reading whatever is left: the hash is of the
    /// whole file as read, not of a part.
    pub fn finish(self) -> Result<String, crate::vocab::Error> {
        self.finish_text().map_err(crate::vocab::Error::System)
    }

    /// [`Self::finish`], its failure as text.
    fn finish_text(mut self) -> Result<String, String> {
        let mut rest = [0u8; 8192];
        while self.read(&mut rest).map_err(|e| e.to_string())? > 0 {}
        Ok(self.hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// A JSON error as one sentence with its place in the file, never quoting the file: serde's
/// messages repeat the offending value (`invalid type: string "…"`), which may be a line of a
/// file only root can read.
pub fn json_error(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let at = format!("at line {} column {}", e.line(), e.column());
    let text = e.to_string();
    let message = text.strip_suffix(&format!(" {at}")).unwrap_or(&text);
    // What serde itself says it expected (its own words, from rtgauge's types).
    let expected = message.rfind(", expected ").map_or(String::new(), |i| format!(" ({})", &message[i + 2..]));
    match e.classify() {
        Category::Io => message.to_string(),
        Category::Eof => format!("not valid JSON: it ends early ({at})"),
        Category::Syntax => format!("not valid JSON: {message} ({at})"),
        Category::Data if message.starts_with("invalid type") || message.starts_with("invalid value") => {
            format!("a value of the wrong type or out of range {at}{expected}")
        }
        Category::Data if message.starts_with("unknown variant") || message.starts_with("unknown field") => {
            format!("a name this rtgauge does not know {at}{expected}")
        }
        // rtgauge's own messages, and serde's that name only rtgauge's fields (`missing field`).
        Category::Data => format!("{message}, {at}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_errors_never_quote_the_file() {
        let secret = "root:$6$abcdef:19000:0:99999:7:::";
        let doc = format!("{{\"n\": \"{secret}\"}}");
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            n: u64,
        }
        let e = serde_json::from_str::<T>(&doc).unwrap_err();
        assert!(e.to_string().contains(secret), "serde quotes it: {e}");
        let said = json_error(&e);
        assert!(!said.contains("root") && said.contains("line 1 column"), "{said}");
        let e = serde_json::from_str::<serde_json::Value>(&format!("{secret}\n")).unwrap_err();
        assert!(!json_error(&e).contains("root"), "{}", json_error(&e));
    }
}

/// The longest string a JSON file to import may hold (a host name, a warning, an encoded
/// histogram: kilobytes in any file a tool wrote).
pub const MAX_STRING: u64 = 4 << 20;
/// The most string bytes, all strings together (object keys included), a JSON file may hold: the
/// numbers of a long run are numbers, not strings, so a file far beyond this is no tool's.
pub const MAX_STRINGS: u64 = 64 << 20;

/// A JSON text passed through, refused as soon as one string grows beyond [`MAX_STRING`] bytes
/// or all of them beyond [`MAX_STRINGS`]: what the parser keeps of a file's strings stays
/// bounded, however large the file (a 150 MB host name took 750 MB).
pub struct JsonCaps<R> {
    inner: R,
    in_string: bool,
    escaped: bool,
    this: u64,
    all: u64,
}

impl<R> JsonCaps<R> {
    pub fn new(inner: R) -> JsonCaps<R> {
        JsonCaps { inner, in_string: false, escaped: false, this: 0, all: 0 }
    }

    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: Read> Read for JsonCaps<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in &buf[..n] {
            if !self.in_string {
                if b == b'"' {
                    self.in_string = true;
                    self.this = 0;
                }
                continue;
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                continue;
            }
            self.this += 1;
            self.all += 1;
            if self.this > MAX_STRING {
                return Err(std::io::Error::other(format!(
                    "it holds a string of more than {MAX_STRING} bytes, which no tool writes"
                )));
            }
            if self.all > MAX_STRINGS {
                return Err(std::io::Error::other(format!(
                    "its strings hold more than {MAX_STRINGS} bytes together, which no tool writes"
                )));
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod caps_tests {
    use super::*;

    #[test]
    fn a_string_beyond_the_cap_is_refused_while_read() {
        let long = format!("{{\"a\": \"{}\"}}", "x".repeat(MAX_STRING as usize + 1));
        let mut out = Vec::new();
        assert!(JsonCaps::new(long.as_bytes()).read_to_end(&mut out).is_err());
        let fine = "{\"a\\\"b\": \"c\\\\\", \"n\": [1, 2]}";
        let mut out = Vec::new();
        JsonCaps::new(fine.as_bytes()).read_to_end(&mut out).unwrap();
        assert_eq!(out, fine.as_bytes());
    }
}

/// The next line of a text output (`what`: "cyclictest histogram output"), read into `raw`
/// and numbered in `n`: `None` at the end; an error for a line longer than `max` bytes or not
/// UTF-8 (a binary file given by mistake), naming the line.
pub fn text_line<'a>(
    input: &mut dyn std::io::BufRead,
    raw: &'a mut Vec<u8>,
    max: u64,
    n: &mut u64,
    what: &str,
) -> Result<Option<&'a str>, String> {
    raw.clear();
    let got = std::io::BufRead::read_until(&mut std::io::Read::take(&mut *input, max), b'\n', raw).map_err(|e| e.to_string())?;
    if got == 0 {
        return Ok(None);
    }
    *n += 1;
    if got as u64 == max && raw.last() != Some(&b'\n') {
        return Err(format!("line {n} is longer than {max} bytes: not {what}"));
    }
    std::str::from_utf8(raw).map(Some).map_err(|_| format!("line {n} is not text: not {what}"))
}
