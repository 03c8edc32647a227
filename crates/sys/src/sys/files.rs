//! Files as a root tool must treat them (docs/security.md): every file rtgauge reads on someone's
//! word is opened without blocking and believed only when it is a regular file; every file it
//! trusts (its journal) is owned by root or the user running rtgauge and writable by nobody
//! else; every file and directory it makes gets an explicit mode, whatever the umask; a file it
//! creates or rewrites where another user could have planted a symbolic link is opened without
//! following one.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The file systems rtgauge writes settings into, by `statfs` magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelFs {
    Proc,
    Sysfs,
    Cgroup,
    Cgroup2,
    Tracefs,
    Debugfs,
}

impl KernelFs {
    fn from_magic(magic: i64) -> Option<KernelFs> {
        match magic {
            0x9fa0 => Some(KernelFs::Proc),
            0x6265_6572 => Some(KernelFs::Sysfs),
            0x0027_e0eb => Some(KernelFs::Cgroup),
            0x6367_7270 => Some(KernelFs::Cgroup2),
            0x7472_6163 => Some(KernelFs::Tracefs),
            0x6462_6720 => Some(KernelFs::Debugfs),
            _ => None,
        }
    }
}

/// Which kernel file system `path` is on (`statfs`, following links as the kernel would to
/// write it); `None` for any other file system.
pub fn kernel_fs(path: &Path) -> io::Result<Option<KernelFs>> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let st = rustix::fs::statfs(c.as_c_str())?;
    #[allow(clippy::unnecessary_cast)] // f_type is 32 bits wide on 32-bit targets
    Ok(KernelFs::from_magic(st.f_type as i64))
}

/// What a file is, in words, for a refusal: "a FIFO", "a directory", ...
pub fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// A file refused for what it is (not a regular file, a link rtgauge does not follow, replaced
/// while opened), as opposed to one the system could not open: the refusal, worded for an error
/// line. It travels inside an `io::Error` (kind `InvalidInput`), whose text is this one;
/// [`is_refusal`] tells it from the system's errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(String);

/// Why a file could not be used: the refusal, worded for an error line.
fn refuse(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, Refusal(what))
}

/// Whether `e` is a [`Refusal`] of this module (the file is not one rtgauge may use), not an
/// error of the system.
pub fn is_refusal(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Refusal>())
}

/// A descriptor that names a file without opening it (`O_PATH`): nothing a device does on
/// open (a serial line's DTR, a watchdog arming) happens, and a FIFO does not wait.
fn path_only(path: &Path, follow: bool) -> io::Result<File> {
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    OpenOptions::new().read(true).custom_flags(libc::O_PATH | nofollow | libc::O_CLOEXEC).open(path)
}

/// The path through which `file`'s own inode is opened again (`/proc/self/fd/N`): whatever is
/// at the name it was found by now, the same file.
fn again(file: &File) -> std::path::PathBuf {
    use std::os::fd::AsRawFd;
    std::path::PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// Opens `path` for reading, and only if it is a regular file: a FIFO, a socket, a device or a
/// directory is refused before it is opened at all (it is only named, `O_PATH`, and looked at).
/// Symbolic links the user wrote on the command line are followed to the file they name.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let before = std::fs::metadata(path)?;
    if !before.is_file() {
        return Err(refuse(format!("it is {}, not a regular file", kind(&before))));
    }
    let named = path_only(path, true)?;
    let meta = named_metadata(&named)?;
    if !meta.is_file() || !same_inode(&meta, &before) {
        return Err(refuse(format!("it is {}, not a regular file (or it was replaced while opened)", kind(&meta))));
    }
    OpenOptions::new().read(true).custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC).open(again(&named))
}

/// What a descriptor from [`path_only`] names, looked at through `/proc/self/fd/N` (the kernel
/// resolves it; an emulator's `fstat` of an `O_PATH` descriptor may not tell a FIFO or a link
/// from the file behind it).
fn named_metadata(named: &File) -> io::Result<Metadata> {
    std::fs::metadata(again(named))
}

fn same_inode(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Whether a file or directory rtgauge is about to trust is owned by root or by the user running
/// rtgauge, and writable by nobody else (`Err`: why not, worded for an error line).
pub fn trusted(meta: &Metadata) -> Result<(), crate::vocab::Error> {
    trusted_text(meta).map_err(crate::vocab::Error::Invalid)
}

/// [`trusted`], its failure as text.
fn trusted_text(meta: &Metadata) -> Result<(), String> {
    let uid = super::process::effective_uid();
    if meta.uid() != 0 && meta.uid() != uid {
        return Err(format!("it belongs to user {}, not to root or the user running rtgauge", meta.uid()));
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(format!(
            "its mode {:04o} lets {} write it",
            mode & 0o7777,
            if mode & 0o002 != 0 { "every user" } else { "its group" }
        ));
    }
    Ok(())
}

/// Whether another user could replace an entry of directory `meta` (it is writable by group or
/// others and not sticky, or it belongs to another user who is not root).
pub fn others_can_replace_in(meta: &Metadata) -> bool {
    let mode = meta.permissions().mode();
    let uid = super::process::effective_uid();
    (meta.uid() != 0 && meta.uid() != uid) || (mode & 0o022 != 0 && mode & 0o1000 == 0)
}

/// Makes directory `path` and any missing parent with exactly `mode` (the umask does not widen
/// or narrow it: a directory rtgauge made for its own files is what it means). An existing
/// directory is left as it is; an existing symbolic link at `path` is refused, not followed,
/// and so is a link another user planted on the way to it ([`open_dir_checked`]): each missing
/// directory is made inside its parent as opened, never through a path another user could
/// change meanwhile.
pub fn make_dir_all(path: &Path, mode: u32) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => return open_dir_checked(path).map(drop),
        Ok(m) => return Err(refuse(format!("{} is {}, not a directory", path.display(), kind(&m)))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Some(name) = path.file_name() else { return open_dir_checked(path).map(drop) };
    make_dir_all(parent, 0o755)?;
    let held = open_dir_checked(parent)?;
    let at = again(&held).join(name);
    match std::fs::DirBuilder::new().mode(mode).create(&at) {
        Ok(()) => {
            // (the directory just made, opened without following a link, its mode set exactly)
            let made =
                OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC).open(&at)?;
            made.set_permissions(std::fs::Permissions::from_mode(mode))
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir()) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates a new file at `path` with exactly `mode`: never one that exists, never through a
/// symbolic link (`O_CREAT | O_EXCL`, which follows none), whatever the umask.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    Ok(file)
}

/// Opens an existing file at `path` for reading and writing without following a symbolic link
/// at its last component, and only if it is a regular file (nothing is created).
pub fn open_existing_rw(path: &Path) -> io::Result<File> {
    let before = std::fs::symlink_metadata(path)?;
    if before.file_type().is_symlink() {
        return Err(refuse("it is a symbolic link (rtgauge follows none where it writes as root)".into()));
    }
    if !before.is_file() {
        return Err(refuse(format!("it is {}, not a regular file", kind(&before))));
    }
    let named = path_only(path, false)?;
    // (replaced by a link or another file since: refused)
    let meta = named_metadata(&named)?;
    if !meta.is_file() || !same_inode(&meta, &before) {
        return Err(refuse("it was replaced while it was opened".into()));
    }
    OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC).open(again(&named))
}

/// The most symbolic links followed on one path (the kernel's limit).
const MAX_LINKS: usize = 40;

/// Whether a symbolic link (`link`) in directory `dir` is one another user could have planted:
/// it belongs to neither root, the user running rtgauge nor the directory's owner, or the
/// directory lets others replace it. rtgauge, as root, follows no such link where it writes (as
/// the kernel's `protected_symlinks` would, which a link read by rtgauge itself bypasses).
pub fn planted(link: &Metadata, dir: &Metadata) -> bool {
    let uid = super::process::effective_uid();
    (link.uid() != 0 && link.uid() != uid && link.uid() != dir.uid()) || others_can_replace_in(dir)
}

/// Opens directory `dir` (to write in it by `/proc/self/fd/N/NAME` later: what another user
/// renames or swaps meanwhile no longer matters), walking it component by component without
/// following a symbolic link another user could have planted ([`planted`]); other links are
/// followed. The descriptor names the directory only (`O_PATH`).
pub fn open_dir_checked(dir: &Path) -> io::Result<File> {
    use std::path::Component;
    let mut todo: std::collections::VecDeque<std::ffi::OsString> = std::collections::VecDeque::new();
    let start = |absolute: bool| path_only(Path::new(if absolute { "/" } else { "." }), true);
    let mut cur = start(dir.is_absolute())?;
    let push_front = |todo: &mut std::collections::VecDeque<std::ffi::OsString>, p: &Path| {
        for c in p.components().rev() {
            match c {
                Component::Normal(n) => todo.push_front(n.to_os_string()),
                Component::ParentDir => todo.push_front("..".into()),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
    };
    push_front(&mut todo, dir);
    let mut links = 0;
    while let Some(name) = todo.pop_front() {
        let at = again(&cur).join(&name);
        let meta = std::fs::symlink_metadata(&at)?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(io::Error::from_raw_os_error(libc::ELOOP));
            }
            if planted(&meta, &named_metadata(&cur)?) {
                return Err(refuse(format!(
                    "{} is a symbolic link of user {} in a directory other users can write, which rtgauge does not \
                     follow as root",
                    crate::vocab::shown(&name.to_string_lossy()),
                    meta.uid()
                )));
            }
            let target = std::fs::read_link(&at)?;
            if target.is_absolute() {
                cur = start(true)?;
            }
            push_front(&mut todo, &target);
            continue;
        }
        if !meta.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        cur = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&at)?;
    }
    Ok(cur)
}

/// Opens a special file a user named as a destination (a device, a FIFO) for writing: without
/// following a link at its last component and without waiting (a FIFO with no reader is an
/// error now, not a wait for ever), then made blocking again for the writes.
pub fn open_special_for_writing(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ENXIO) {
                refuse("it is a FIFO no program reads: start its reader first".into())
            } else {
                e
            }
        })?;
    let flags = rustix::fs::fcntl_getfl(&file)?;
    rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)?;
    Ok(file)
}

/// Saves what `write` writes to a new file `PREFIX<unpredictable>.json` (mode 0600, created
/// exclusively: a name or link planted there is never followed) in the first of `dirs` that
/// no other user can touch and that takes it whole, synced; a file not written whole is
/// removed. The rescue of a result that could not go where it was asked: a directory another
/// user controls (theirs, or writable by others without the sticky bit), or reached through a
/// link another user planted, is passed over — there its owner could rename the file and put a
/// forged one under the name rtgauge prints. `Err`: each directory's failure, in one line.
pub fn save_new(
    dirs: &[std::path::PathBuf],
    prefix: &str,
    write: impl FnMut(&mut File) -> io::Result<()>,
) -> Result<std::path::PathBuf, crate::vocab::Error> {
    save_new_text(dirs, prefix, write).map_err(crate::vocab::Error::System)
}

/// [`save_new`], its failure as text.
fn save_new_text(
    dirs: &[std::path::PathBuf],
    prefix: &str,
    mut write: impl FnMut(&mut File) -> io::Result<()>,
) -> Result<std::path::PathBuf, String> {
    let mut failed = Vec::new();
    for dir in dirs {
        let held = match untouchable_dir(dir) {
            Ok(h) => h,
            Err(e) => {
                failed.push(format!("{}: {e}", dir.display()));
                continue;
            }
        };
        let saved = tempfile::Builder::new()
            .prefix(prefix)
            .suffix(".json")
            .permissions(std::fs::Permissions::from_mode(0o600))
            .tempfile_in(again(&held))
            .and_then(|mut f| {
                write(f.as_file_mut())?;
                f.as_file().sync_all()?;
                f.keep().map_err(|e| e.error)
            });
        match saved {
            Ok((_, path)) => {
                // The path by its name, not the held descriptor's.
                let name = path.file_name().map(|n| dir.join(n)).unwrap_or(path);
                return Ok(std::fs::canonicalize(&name).unwrap_or(name));
            }
            Err(e) => failed.push(format!("{}: {e}", dir.display())),
        }
    }
    Err(failed.join("; "))
}

/// Directory `dir`, opened as [`open_dir_checked`] opens it, when no user but root and the one
/// running rtgauge can rename or replace what is in it, nor any directory on the way to it (a
/// sticky directory, such as `/tmp`, protects each entry for its owner: a directory of root's in
/// it is safe); else why not. A directory rtgauge keeps its own files in (the journal, the spool,
/// a rescue file) must be one: there no one can swap a file, or the directory itself, for a forged one.
pub fn untouchable_dir(dir: &Path) -> io::Result<File> {
    let held = open_dir_checked(dir)?;
    let meta = held.metadata()?;
    if others_can_replace_in(&meta) {
        return Err(refuse(format!(
            "another user controls it (owner {}, mode {:04o}): a file there could be replaced",
            meta.uid(),
            meta.permissions().mode() & 0o7777
        )));
    }
    // Each directory on the way, as the kernel resolved it (links followed as checked above).
    let real = std::fs::read_link(again(&held))?;
    let mut child = meta;
    let mut at = real.as_path();
    while let Some(parent) = at.parent() {
        let pmeta = std::fs::metadata(parent)?;
        let uid = super::process::effective_uid();
        let sticky_protects = pmeta.permissions().mode() & 0o1000 != 0 && (child.uid() == 0 || child.uid() == uid);
        if others_can_replace_in(&pmeta) && !sticky_protects {
            return Err(refuse(format!(
                "another user controls {} on the way to it (owner {}, mode {:04o}): it could be swapped",
                crate::vocab::shown(&parent.display().to_string()),
                pmeta.uid(),
                pmeta.permissions().mode() & 0o7777
            )));
        }
        child = pmeta;
        at = parent;
    }
    Ok(held)
}

/// Writes `value` to a kernel setting file that exists (`/proc`, `/sys`, a cgroup): nothing is
/// created, no symbolic link at its last component is followed.
pub fn write_setting(path: &Path, value: &str) -> io::Result<()> {
    use std::io::Write;
    let mut f = OpenOptions::new().write(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)?;
    f.write_all(value.as_bytes())
}

/// The mode a file rtgauge makes for a user gets: `intended` less the umask's bits, so a
/// stricter umask is honoured and a looser one (000) never makes it wider than meant.
pub fn user_mode(intended: u32) -> u32 {
    intended & !umask()
}

/// The process's umask, read from /proc (reading it with umask(2) would change it); the
/// strictest common one when it cannot be read.
pub fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Umask:")).and_then(|v| u32::from_str_radix(v.trim(), 8).ok()))
        .unwrap_or(0o077)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_told_from_the_systems_errors_and_reads_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let e = open_regular(dir.path()).unwrap_err();
        assert!(is_refusal(&e));
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(e.to_string(), "it is a directory, not a regular file");
        assert!(!is_refusal(&open_regular(&dir.path().join("missing")).unwrap_err()));
        assert!(!is_refusal(&io::Error::from_raw_os_error(libc::EINVAL)));
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let e = open_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        assert!(open_regular(dir.path()).unwrap_err().to_string().contains("directory"));
    }

    #[test]
    fn a_new_file_has_its_mode_and_follows_no_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_new(&link, 0o600).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(open_existing_rw(&link).unwrap_err().to_string().contains("symbolic link"));
        let f = create_new(&dir.path().join("new"), 0o640).unwrap();
        assert_eq!(f.metadata().unwrap().permissions().mode() & 0o7777, 0o640);
        let d = dir.path().join("a/b");
        make_dir_all(&d, 0o700).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().permissions().mode() & 0o7777, 0o700);
        assert!(make_dir_all(&link, 0o700).is_err());
    }
}
