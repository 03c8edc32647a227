//! Reading a file a user names, bounded: only a regular file (a FIFO, a device or a directory is
//! refused before anything is read), at most a given number of bytes, and it must be text. Every file rtgauge reads on a
//! user's word goes through here.

use std::io::Read;
use std::path::Path;

/// The most a scenario file may hold.
pub const SCENARIO_CAP: u64 = 1 << 20;

/// Why a user's file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("it is larger than {0} bytes")]
    TooLarge(u64),
    #[error("it is not UTF-8 text")]
    NotText,
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Reads at most `cap` bytes of text from `path`; more is an error (nothing beyond `cap + 1`
/// bytes is ever read).
pub fn read_text(path: &Path, cap: u64) -> Result<String, ReadError> {
    read_text_of(path, cap).map(|(text, _)| text)
}

/// As [`read_text`], with the metadata of the very file read (its owner and mode, from the
/// descriptor the text came through: a second look by name could find another file there).
pub fn read_text_of(path: &Path, cap: u64) -> Result<(String, std::fs::Metadata), ReadError> {
    let (bytes, meta) = read_bytes_of(path, cap)?;
    Ok((String::from_utf8(bytes).map_err(|_| ReadError::NotText)?, meta))
}

/// Reads at most `cap` bytes from `path` (a font, for instance); more is an error.
pub fn read_bytes(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    read_bytes_of(path, cap).map(|(bytes, _)| bytes)
}

fn read_bytes_of(path: &Path, cap: u64) -> Result<(Vec<u8>, std::fs::Metadata), ReadError> {
    // Only a regular file: a FIFO would block the open, a device never end.
    let file = crate::sys::files::open_regular(path)?;
    let meta = file.metadata()?;
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge(cap));
    }
    Ok((bytes, meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_is_refused_and_a_large_file_after_the_cap() {
        let f0 = tempfile::NamedTempFile::new().unwrap();
        assert!(matches!(read_text(Path::new("/dev/zero"), 4096), Err(ReadError::Io(_))));
        std::fs::write(f0.path(), vec![b'x'; 5000]).unwrap();
        assert!(matches!(read_text(f0.path(), 4096), Err(ReadError::TooLarge(4096))));
        assert!(matches!(read_text(Path::new("/"), 4096), Err(ReadError::Io(_))));
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), [0xff, 0xfe]).unwrap();
        assert!(matches!(read_text(f.path(), 4096), Err(ReadError::NotText)));
        std::fs::write(f.path(), "name = \"x\"\n").unwrap();
        assert_eq!(read_text(f.path(), 4096).unwrap(), "name = \"x\"\n");
    }
}
