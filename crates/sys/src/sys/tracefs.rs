//! The kernel's tracing file system, as a file system: where it is mounted (or under debugfs),
//! mounting it, its files written and read, the tracers the kernel offers, CPU masks as it
//! writes them, and an instance stopped and removed. What rtgauge makes in it and journals
//! (`--trace`'s instances, a kernel-tracer probe's) is `trace`'s, in the measuring crate.

use std::path::{Path, PathBuf};

/// tracefs under debugfs, on older systems.
pub const UNDER_DEBUGFS: &str = "/sys/kernel/debug/tracing";

/// Writes `value` to the tracefs file `path`; the error names both.
pub fn write(path: &Path, value: &str) -> Result<(), crate::vocab::Error> {
    write_text(path, value).map_err(crate::vocab::Error::System)
}

/// [`write`], its failure as text.
fn write_text(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("cannot write {value} to {}: {e}", path.display()))
}

/// Reads a tracefs (or procfs, sysfs) file whole, each read into a page's room at least: some of
/// the kernel's files refuse a read smaller than their whole text (`osnoise/cpus` gives EINVAL,
/// seen in Debian's 6.1 RT kernel), and `std::fs::read_to_string` begins with a small probe.
pub fn read(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 4096];
    let mut n = 0;
    loop {
        if buf.len() - n < 4096 {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        // (a setting's file is short: a runaway one is not read on)
        if n > 1 << 20 {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "longer than 1 MiB"));
        }
    }
    buf.truncate(n);
    String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// /proc/mounts escapes blanks and backslashes as octal (`\040`).
fn unescape(s: &str) -> String {
    s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
}

/// Every tracefs mount, in mount order: (source, mount point).
pub fn mounts() -> Vec<(String, PathBuf)> {
    let text = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"tracefs")).then(|| (unescape(f[0]), PathBuf::from(unescape(f[1]))))
        })
        .collect()
}

/// The trace roots to look in: every tracefs mount, and tracefs under debugfs.
pub fn roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = mounts().into_iter().map(|(_, r)| r).collect();
    roots.push(PathBuf::from(UNDER_DEBUGFS));
    roots.dedup();
    roots
}

/// Whether the kernel has tracefs at all (CONFIG_TRACING).
pub fn supported() -> bool {
    std::fs::read_to_string("/proc/filesystems").unwrap_or_default().lines().any(|l| l.trim_end().ends_with("tracefs"))
}

/// Mounts tracefs at `at` with the source `source` (what /proc/mounts shows in its first
/// column); the error says to run as root when that is why.
pub fn mount(source: &str, at: &str) -> Result<(), crate::vocab::Error> {
    mount_text(source, at).map_err(crate::vocab::Error::System)
}

/// [`mount`], its failure as text.
fn mount_text(source: &str, at: &str) -> Result<(), String> {
    super::fs::mount_kernel_fs(source, "tracefs", at).map_err(|e| {
        let fix = if e.kind() == std::io::ErrorKind::PermissionDenied { ": run as root" } else { "" };
        format!("cannot mount tracefs at {at}: {e}{fix}")
    })
}

/// The tracers the kernel offers (`available_tracers` of the tracefs at `root`).
pub fn available_tracers(root: &Path) -> std::io::Result<Vec<String>> {
    let text = std::fs::read_to_string(root.join("available_tracers"))?;
    Ok(text.split_whitespace().map(str::to_string).collect())
}

/// Stops the instance at `dir` and removes it (and everything set in it).
pub fn remove_instance(dir: &Path) -> std::io::Result<()> {
    let _ = std::fs::write(dir.join("tracing_on"), "0");
    std::fs::remove_dir(dir)
}

/// A CPU mask as tracefs writes it: hexadecimal, in 32-bit groups separated by commas, the
/// highest first.
pub fn cpu_mask(cpus: &[usize]) -> String {
    let groups = cpus.iter().max().map_or(1, |m| m / 32 + 1);
    (0..groups)
        .rev()
        .map(|g| {
            let bits = cpus.iter().filter(|&&c| c / 32 == g).fold(0u32, |m, &c| m | 1 << (c % 32));
            format!("{bits:08x}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_masks_in_32_bit_groups() {
        assert_eq!(super::cpu_mask(&[1]), "00000002");
        assert_eq!(super::cpu_mask(&[33]), "00000002,00000000");
        assert_eq!(super::cpu_mask(&[0, 1, 3]), "0000000b");
        assert_eq!(super::cpu_mask(&[0, 32]), "00000001,00000001");
    }

    #[test]
    fn mount_points_with_blanks_are_read_back() {
        assert_eq!(super::unescape("/mnt/a\\040b"), "/mnt/a b");
    }
}
