//! The error every crate's public functions return (but the store's, which has its own
//! `StoreError`): one line naming the problem and the fix, and its class, which a caller matches
//! on. The command line shows the line and exits 2 whatever the class; a caller below it decides
//! by the class whether to go on (a probe the kernel lacks is skipped, a value that does not
//! read is refused, a system call that failed is reported).
//!
//! A module's private helpers may still return `Result<_, String>`; the public function that
//! calls them says which class their text is (`.map_err(Error::Invalid)`). A `String` turns into
//! no class by itself: there is no `From<String>`.

use std::fmt;

/// What went wrong, by its class, with the one line that names it and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// What was asked cannot be: a value, option, requirement or file that does not read
    /// (bad input; nothing was changed).
    Invalid(String),
    /// The system has not what was asked for: a tracer, a controller, a file system or a
    /// feature this kernel or machine lacks.
    Unsupported(String),
    /// The system refused or failed: a file, a process, a socket, the kernel.
    System(String),
}

impl Error {
    /// Its line, whatever its class.
    pub fn message(&self) -> &str {
        match self {
            Error::Invalid(m) | Error::Unsupported(m) | Error::System(m) => m,
        }
    }

    /// The same class with its line given a prefix (`context: line`).
    pub fn context(self, context: impl fmt::Display) -> Error {
        self.map(|m| format!("{context}: {m}"))
    }

    /// The same class with its line changed by `f`.
    pub fn map(self, f: impl FnOnce(String) -> String) -> Error {
        match self {
            Error::Invalid(m) => Error::Invalid(f(m)),
            Error::Unsupported(m) => Error::Unsupported(f(m)),
            Error::System(m) => Error::System(f(m)),
        }
    }

    /// An I/O error as a system failure, `what` saying of what (`reading FILE`).
    pub fn io(what: impl fmt::Display, e: &std::io::Error) -> Error {
        Error::System(format!("{what}: {e}"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

/// Its line, to read as text (`e.contains("…")`), whatever its class.
impl std::ops::Deref for Error {
    type Target = str;
    fn deref(&self) -> &str {
        self.message()
    }
}

/// Its line compared with text, whatever its class.
impl PartialEq<&str> for Error {
    fn eq(&self, other: &&str) -> bool {
        self.message() == *other
    }
}

impl PartialEq<str> for Error {
    fn eq(&self, other: &str) -> bool {
        self.message() == other
    }
}

/// For a private helper that returns text: the line alone (its class is the caller's to keep).
impl From<Error> for String {
    fn from(e: Error) -> String {
        match e {
            Error::Invalid(m) | Error::Unsupported(m) | Error::System(m) => m,
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_is_kept_with_its_class_through_context_and_into_text() {
        let e = Error::Unsupported("this kernel has no timerlat tracer".into()).context("probe timerlat");
        assert_eq!(e, Error::Unsupported("probe timerlat: this kernel has no timerlat tracer".into()));
        assert_eq!(e.to_string(), "probe timerlat: this kernel has no timerlat tracer");
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        assert_eq!(Error::io("reading /x", &io), Error::System("reading /x: gone".into()));
        let text: String = Error::Invalid("--interval must be greater than zero".into()).into();
        assert_eq!(text, "--interval must be greater than zero");
    }
}
