//! File systems: free space (`statvfs`), unnamed files given a name once written (`O_TMPFILE`,
//! `linkat`), and mounting and unmounting the kernel's file systems (tracefs).

use std::io;

/// Bytes this process may still write to the file system holding `path` (`statvfs`): the
/// blocks free to unprivileged users, or every free block for root (who may use the reserve).
pub fn free_space(path: &std::path::Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let st = rustix::fs::statvfs(c.as_c_str())?;
    let blocks = if super::process::effective_uid() == 0 { st.f_bfree } else { st.f_bavail };
    Ok(blocks.saturating_mul(st.f_frsize))
}

/// Opens an unnamed file in directory `dir` (`O_TMPFILE`): it has no name until
/// [`link_into`] gives it one, so a process killed while writing it leaves nothing behind.
pub fn open_unnamed_in(dir: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).mode(0o600).custom_flags(libc::O_TMPFILE).open(dir)
}

/// Gives the unnamed file `file` the name `path` (`linkat` through `/proc/self/fd`, which
/// needs no privilege). Fails if `path` exists.
pub fn link_into(file: &std::fs::File, path: &std::path::Path) -> io::Result<()> {
    use rustix::fs::{AtFlags, CWD};
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let from = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(io::Error::other)?;
    let to = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    Ok(rustix::fs::linkat(CWD, from.as_c_str(), CWD, to.as_c_str(), AtFlags::SYMLINK_FOLLOW)?)
}

/// Mounts a kernel file system of type `fstype` (`tracefs`, ...) at `dir` (`mount(2)`, no flags),
/// with `source` as its source name (what /proc/mounts shows in its first column: rtgauge names
/// its own mounts so that another rtgauge can tell them from the system's).
pub fn mount_kernel_fs(source: &str, fstype: &str, dir: &str) -> io::Result<()> {
    let c = |s: &str| std::ffi::CString::new(s).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL));
    let (src, target, kind) = (c(source)?, c(dir)?, c(fstype)?);
    let no_data: Option<&std::ffi::CStr> = None;
    Ok(rustix::mount::mount(src.as_c_str(), target.as_c_str(), kind.as_c_str(), rustix::mount::MountFlags::empty(), no_data)?)
}

/// Unmounts the file system at `dir` (`umount2`, lazily: a reader still inside keeps it until done).
pub fn unmount(dir: &str) -> io::Result<()> {
    let target = std::ffi::CString::new(dir).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    Ok(rustix::mount::unmount(target.as_c_str(), rustix::mount::UnmountFlags::DETACH)?)
}
