//! The spool: where a run waits when the shared store it was meant for (a lab's PostgreSQL)
//! could not take it at the end (the network down, the server restarting, its disk full, a
//! lock), and how it is delivered later — by the next run with that store, or by
//! `rtgauge push --to URL` — exactly once.
//!
//! The spool is beside the local store (`spool/` in its directory), one SQLite store per
//! destination, named after the destination (the URL without its password): a waiting run is
//! kept whole, with its UUID, label, board and kernel configuration, by the same code as any
//! store. Delivery copies each waiting run into the destination, where a run is stored once by
//! its UUID, and only then removes it from the spool: a delivery cut short (the server gone
//! again, rtgauge stopped) leaves the runs not yet removed waiting, and delivering one of them a
//! second time finds it there already. Two deliveries at once store each run once too.

use super::{default_location, dir_of, local_data_dir, Location, RunRow, Store, StoreError};
use crate::result::RunResult;
use crate::vocab::Count;
use std::path::PathBuf;

/// The spool's directory: `spool/` beside the local store (the directory of `RTGAUGE_DB` when
/// it is a file, else rtgauge's local data directory); `None` without either.
pub fn dir() -> Option<PathBuf> {
    match default_location() {
        Some(Location::File(p)) => Some(dir_of(&p).join("spool")),
        _ => Some(local_data_dir()?.join("spool")),
    }
}

/// The spool file of the runs waiting for `destination`: what names it ([`key_of`]), readable,
/// then 8 hex digits of its SHA-256 (two names that read alike stay apart).
pub fn file_for(destination: &Location) -> Option<PathBuf> {
    let key = key_of(destination);
    let digest = sha2::Digest::finalize(<sha2::Sha256 as sha2::Digest>::new_with_prefix(key.as_bytes()));
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let readable: String = key
        .split_once("://")
        .map_or(key.as_str(), |(_, rest)| rest)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-.@".contains(c) { c } else { '_' })
        .take(64)
        .collect();
    Some(dir()?.join(format!("{readable}-{hex}.db")))
}

/// What names a destination: a database as `USER@HOST:PORT/DBNAME` (the host in lower case, the
/// default port and user written out, whatever else the URL says — its password, its TLS mode,
/// its time-outs — left out), so every spelling of one database keeps one spool; a file's path
/// as given.
fn key_of(destination: &Location) -> String {
    match destination {
        Location::Postgres(url) => super::postgres::destination_of(url).unwrap_or_else(|| destination.shown()),
        other => other.shown(),
    }
}

/// Keeps `r` in the spool of `destination` (its directory made, mode 0700); returns the spool
/// file, and what was found on the way (a damaged spool set aside: see [`set_aside`]). `label`,
/// and the kernel configuration, travel with the run.
pub fn keep(
    r: &mut RunResult,
    destination: &Location,
    label: Option<&str>,
    kernel_config: Option<super::KernelOptions>,
) -> Result<(PathBuf, Vec<String>), StoreError> {
    keep_text(r, destination, label, kernel_config).map_err(StoreError::Failed)
}

/// [`keep`], its failure as text.
fn keep_text(
    r: &mut RunResult,
    destination: &Location,
    label: Option<&str>,
    kernel_config: Option<super::KernelOptions>,
) -> Result<(PathBuf, Vec<String>), String> {
    let (file, _guard, spool, notes) = open_for_keeping(destination)?;
    spool.save(r, label, None, kernel_config)?;
    Ok((file, notes))
}

/// Makes sure, before a run measures, that its result can wait in the spool of `destination`
/// (a run whose shared store does not answer): the spool made or opened (a damaged one set
/// aside); the spool file and what was found.
pub fn ready(destination: &Location) -> Result<(PathBuf, Vec<String>), StoreError> {
    ready_text(destination).map_err(StoreError::Failed)
}

/// [`ready`], its failure as text.
fn ready_text(destination: &Location) -> Result<(PathBuf, Vec<String>), String> {
    let (file, _guard, _spool, notes) = open_for_keeping(destination)?;
    Ok((file, notes))
}

/// The spool of `destination`, opened to keep a run in it, while a shared lock on its
/// directory is held (the guard): a damaged spool is set aside only under the exclusive lock,
/// so a run is never kept in a file being set aside. A spool that is damaged (not a SQLite
/// store, corrupt, another program's) is set aside and a new one made: the notes say so.
fn open_for_keeping(destination: &Location) -> Result<(PathBuf, Option<std::fs::File>, Store, Vec<String>), String> {
    let file =
        file_for(destination).ok_or("there is no local data directory for a spool (neither XDG_DATA_HOME nor HOME is set)")?;
    let dir = dir_of(&file);
    crate::sys::files::make_dir_all(dir, 0o700)
        .map_err(|e| format!("the spool directory {} cannot be made: {e}", dir.display()))?;
    let guard = lock_dir(dir, false)?;
    let mut notes = Vec::new();
    let spool = match open_checked(&file) {
        Ok(s) => s,
        Err(Spoiled::Damaged(why, identity)) => {
            drop(guard);
            notes.push(set_aside(&file, &why, identity)?);
            let guard = lock_dir(dir, false)?;
            let spool = open_checked(&file).map_err(Spoiled::into_message)?;
            return Ok((file, guard, spool, notes));
        }
        Err(e) => return Err(e.into_message()),
    };
    Ok((file, guard, spool, notes))
}

/// The spool directory `dir`, opened and locked: shared (keeping a run, delivering) or
/// exclusive (setting a damaged spool aside; waits up to 10 s for the holders to finish).
/// `None`: the file system takes no lock (some network file systems): the work goes on unlocked,
/// as it did before locks were taken.
fn lock_dir(dir: &std::path::Path, exclusive: bool) -> Result<Option<std::fs::File>, String> {
    let d = crate::sys::files::open_dir_checked(dir)
        .and_then(|d| std::fs::File::open(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&d))))
        .map_err(|e| format!("the spool directory {} cannot be opened: {e}", dir.display()))?;
    let locked = if exclusive {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match crate::sys::fd::try_lock_exclusive(&d) {
                Ok(true) => break Ok(()),
                Ok(false) if std::time::Instant::now() < until => std::thread::sleep(std::time::Duration::from_millis(20)),
                Ok(false) => break Err(std::io::Error::from(std::io::ErrorKind::WouldBlock)),
                Err(e) => break Err(e),
            }
        }
    } else {
        crate::sys::fd::lock_shared(&d)
    };
    match locked {
        Ok(()) => Ok(Some(d)),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::EBADF | libc::EINVAL)) => Ok(None),
        Err(e) => Err(format!("the spool directory {} cannot be locked: {e}", dir.display())),
    }
}

/// Why a spool cannot be used.
enum Spoiled {
    /// The file is damaged: not a SQLite store, corrupt, another program's (why), and which
    /// file it was (its device and inode: the one to set aside, not one made since).
    Damaged(String, Option<(u64, u64)>),
    /// Anything else (its directory not to be trusted, a file system error): the whole message.
    Other(String),
}

impl Spoiled {
    fn into_message(self) -> String {
        match self {
            Spoiled::Damaged(why, _) => format!("the spool: {why}"),
            Spoiled::Other(m) => m,
        }
    }
}

/// Moves a damaged spool `file` aside, never deleting it: renamed (with its write-ahead log and
/// shared-memory files, if any) to `NAME.damaged-YYYYMMDDTHHMMSSZ` in the same directory,
/// under the exclusive lock of the directory, never over another file; then every run that can
/// still be read from it is kept again in a new spool at `file` (delivered with the rest), and
/// the file set aside keeps whatever could not be read. The note that says so.
fn set_aside(file: &std::path::Path, why: &str, identity: Option<(u64, u64)>) -> Result<String, String> {
    use std::os::unix::fs::MetadataExt;
    let dir = dir_of(file);
    let _exclusive = lock_dir(dir, true)?;
    // Another process may have set it aside (and made a new one) while this one waited: only
    // the file found damaged is set aside, never a new one.
    let now = std::fs::symlink_metadata(file).ok().map(|m| (m.dev(), m.ino()));
    if now.is_none() || (identity.is_some() && now != identity) {
        return Ok(format!("the spool {} was damaged ({why}) and has been set aside by another rtgauge", file.display()));
    }
    // 2026-11-28T17:21:35Z written 20261128T172135Z
    let stamp: String = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut aside = dir.join(format!("{name}.damaged-{stamp}"));
    let mut n = 1;
    while std::fs::symlink_metadata(&aside).is_ok() {
        n += 1;
        aside = dir.join(format!("{name}.damaged-{stamp}-{n}"));
    }
    // (never over another file: where the file system has no RENAME_NOREPLACE, a link made
    // exclusively, then the old name removed)
    let no_replace = |from: &std::path::Path, to: &std::path::Path| -> std::io::Result<()> {
        match rustix::fs::renameat_with(rustix::fs::CWD, from, rustix::fs::CWD, to, rustix::fs::RenameFlags::NOREPLACE) {
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
                std::fs::hard_link(from, to).and_then(|()| std::fs::remove_file(from))
            }
            done => done.map_err(Into::into),
        }
    };
    no_replace(file, &aside).map_err(|e| {
        format!("the spool {} is damaged ({why}) and could not be set aside ({e}); move it away yourself", file.display())
    })?;
    for tail in ["-wal", "-shm"] {
        let from = PathBuf::from(format!("{}{tail}", file.display()));
        if std::fs::symlink_metadata(&from).is_ok() {
            let _ = no_replace(&from, std::path::Path::new(&format!("{}{tail}", aside.display())));
        }
    }
    let (saved, lost) = salvage(&aside, file);
    let what = match (saved, lost.is_empty()) {
        (0, true) => "no run could be read from it".to_string(),
        (n, true) => {
            format!("{} read from it {} in the spool again", Count(n as u64, "run"), if n == 1 { "waits" } else { "wait" })
        }
        (n, false) => format!(
            "{} read from it {} in the spool again; {} could not be read ({})",
            Count(n as u64, "run"),
            if n == 1 { "waits" } else { "wait" },
            Count(lost.len() as u64, "run"),
            lost.join(", ")
        ),
    };
    Ok(format!("the spool {} was damaged ({why}): {what}; it was set aside as {}, not deleted", file.display(), aside.display()))
}

/// Keeps again in a new spool at `file` every run that can be read from the damaged spool
/// `aside`: how many, and the runs that could not be read.
fn salvage(aside: &std::path::Path, file: &std::path::Path) -> (usize, Vec<String>) {
    let Ok(Some(old)) = Store::open_read(&Location::File(aside.to_path_buf())) else { return (0, Vec::new()) };
    let Ok(rows) = old.list(&super::Filter::default()) else { return (0, vec!["its list of runs".into()]) };
    let mut lost = Vec::new();
    let mut saved = 0;
    let mut new: Option<Store> = None;
    for row in &rows {
        let name = || format!("run {}", row.uuid.as_deref().and_then(|u| u.get(..8)).unwrap_or("?"));
        let (mut r, kernel_config) = match super::read_run(&old, row) {
            Ok(read) => read,
            Err(e) => {
                lost.push(format!("{}: {e}", name()));
                continue;
            }
        };
        if new.is_none() {
            match open_checked(file) {
                Ok(s) => new = Some(s),
                Err(e) => {
                    lost.push(format!("{}: {}", name(), e.into_message()));
                    continue;
                }
            }
        }
        let Some(to) = &new else { continue };
        match to.save(&mut r, row.label.as_deref(), row.imported_from.as_deref(), kernel_config) {
            Ok(_) => saved += 1,
            Err(e) => lost.push(format!("{}: {e}", name())),
        }
    }
    (saved, lost)
}

/// The spool store `file`, opened (made if there is none), after its directory and the file are
/// checked: rtgauge, as root, keeps runs only in a directory no other user can write into, and
/// never through a link. A file that is not a spool rtgauge can read whole is `Damaged`.
fn open_checked(file: &std::path::Path) -> Result<Store, Spoiled> {
    let dir = dir_of(file);
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| Spoiled::Other(format!("the spool directory {} cannot be read: {e}", dir.display())))?;
    let why_not = if meta.is_dir() {
        // Its own mode and owner, and no directory on the way to it that another user could swap.
        crate::sys::files::trusted(&meta)
            .err()
            .map(String::from)
            .or_else(|| crate::sys::files::untouchable_dir(dir).err().map(|e| e.to_string()))
    } else {
        Some("it is not a directory".into())
    };
    if let Some(why) = why_not {
        return Err(Spoiled::Other(format!(
            "the spool directory {} is not used: {why}; remove it, rtgauge makes it again",
            dir.display()
        )));
    }
    match std::fs::symlink_metadata(file) {
        // Something else at the spool's name (a directory, a FIFO, a link): damaged as a spool, set
        // aside as it is (renamed, never followed, never deleted).
        Ok(m) if !m.is_file() => {
            use std::os::unix::fs::MetadataExt;
            return Err(Spoiled::Damaged(format!("it is {}, not a file", crate::sys::files::kind(&m)), Some((m.dev(), m.ino()))));
        }
        _ => {}
    }
    // Damage is what the file holds — not SQLite, corrupt, another program's database — never
    // what the moment brings (a lock, a full disk, a newer rtgauge's layout). (What the store's
    // own message advises — another --db — is not for a spool.)
    let damaged = |e: super::OpenError| match e {
        super::OpenError::Refused(m)
            if ["is corrupt", "is not a SQLite database", "of another program"].iter().any(|d| m.contains(d)) =>
        {
            use std::os::unix::fs::MetadataExt;
            let identity = std::fs::symlink_metadata(file).ok().map(|m| (m.dev(), m.ino()));
            Spoiled::Damaged(m.split("; it is left as it is").next().unwrap_or(&m).to_string(), identity)
        }
        other => Spoiled::Other(format!("the spool: {other}")),
    };
    let store = Store::open(&Location::File(file.to_path_buf())).map_err(damaged)?;
    store.check_whole().map_err(damaged)?;
    Ok(store)
}

/// What a delivery did.
#[derive(Debug, Default)]
pub struct Delivered {
    /// The runs the destination has now, in the order delivered.
    pub runs: Vec<Arrived>,
    /// Why the delivery stopped before the last run, if it did (the runs left wait on).
    pub stopped: Option<String>,
    /// How many runs still wait.
    pub left: usize,
    /// The spool file.
    pub file: Option<PathBuf>,
    /// What was found damaged (a spool that cannot be read whole, runs that cannot be read),
    /// and where it was set aside: said by every command that delivers.
    pub damaged: Vec<String>,
}

/// A run delivered.
#[derive(Debug, Clone)]
pub struct Arrived {
    pub uuid: Option<String>,
    /// Its id in the destination.
    pub id: i64,
    /// Whether the destination had it already (a delivery before was cut short after storing it).
    pub already: bool,
}

/// Delivers the runs waiting in the spool of `destination` into `to` (the destination, opened),
/// oldest first, each removed from the spool once the destination has it. `Ok` with nothing
/// stored when nothing waits; a spool that cannot be read is an error.
///
/// Other deliveries may run at the same time (runs of this board ending together, a push): a run
/// one of them took is theirs to remove, and a run kept in the spool meanwhile may be given the
/// id of one removed (SQLite gives a deleted highest id again), so a run is copied only while it
/// is the run listed and removed only if it still is. `mine`, the UUID of a run this delivery is
/// for, is looked for in the destination when another delivery took it.
pub fn deliver(to: &Store, destination: &Location, mine: Option<&str>) -> Result<Delivered, StoreError> {
    deliver_text(to, destination, mine).map_err(StoreError::Failed)
}

/// [`deliver`], its failure as text.
fn deliver_text(to: &Store, destination: &Location, mine: Option<&str>) -> Result<Delivered, String> {
    let Some(file) = file_for(destination) else { return Ok(Delivered::default()) };
    match std::fs::symlink_metadata(&file) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Delivered::default()),
        Err(e) => return Err(format!("the spool {} cannot be read: {e}", file.display())),
    }
    let mut done = Delivered { file: Some(file.clone()), ..Delivered::default() };
    // A spool damaged past reading whole is set aside, what can be read of it (a truncated
    // file's first runs, say) kept again in a new one, which is delivered.
    let spool = match open_checked(&file) {
        Ok(s) => s,
        Err(Spoiled::Other(m)) => return Err(m),
        Err(Spoiled::Damaged(why, identity)) => {
            done.damaged.push(set_aside(&file, &why, identity).unwrap_or_else(|e| e));
            match open_checked(&file) {
                Ok(s) => s,
                Err(Spoiled::Damaged(..) | Spoiled::Other(_)) if std::fs::symlink_metadata(&file).is_err() => return Ok(done),
                Err(e) => return Err(e.into_message()),
            }
        }
    };
    // Shared with the runs being kept and the other deliveries: a damaged spool is set aside only
    // once none of them is at work in it.
    let guard = lock_dir(dir_of(&file), false)?;
    let waiting = spool.list(&super::Filter::default())?;
    // Whether the spool still holds the run `row` lists (its id and its UUID).
    let holds = |row: &RunRow| -> Result<bool, String> {
        Ok(match &row.uuid {
            Some(u) => match spool.resolve(u) {
                Ok(id) => id == row.id,
                Err(super::StoreError::NotFound(_)) => false,
                Err(e) => return Err(e.to_string()),
            },
            None => spool.has(row.id)?,
        })
    };
    let mut unreadable = Vec::new();
    for (n, row) in waiting.iter().enumerate() {
        // A run the spool cannot give back whole is passed over (and said), never lost in
        // silence: the rest are delivered, and the file is set aside once only such runs are left.
        let (mut r, kernel_config) = match super::read_run(&spool, row) {
            Ok(read) => read,
            Err(_) if !holds(row)? => continue,
            Err(e) => {
                unreadable.push(format!("run {} ({e})", row.uuid.as_deref().and_then(|u| u.get(..8)).unwrap_or("?")));
                continue;
            }
        };
        match to.save(&mut r, row.label.as_deref(), row.imported_from.as_deref(), kernel_config) {
            Ok(saved) => {
                done.runs.push(Arrived { uuid: row.uuid.clone(), id: saved.id, already: saved.already });
                // Only now: a run removed before the destination had it could be lost. Only
                // this run: the id may have been given to a run kept since.
                let removed = match &row.uuid {
                    Some(u) => spool.delete_if_still(row.id, u).map(drop),
                    None => spool.delete(row.id),
                };
                if let Err(e) = removed {
                    done.stopped = Some(format!("a delivered run could not be removed from the spool: {e}"));
                    done.left = waiting.len() - n;
                    done.damaged.extend(unreadable_said(&unreadable, &file));
                    return Ok(done);
                }
            }
            // Another delivery took it first: it is the destination's now, or on its way there.
            Err(_) if !holds(row)? => continue,
            Err(e) => {
                done.stopped = Some(e.to_string());
                done.left = waiting.len() - n;
                done.damaged.extend(unreadable_said(&unreadable, &file));
                return Ok(done);
            }
        }
    }
    if !unreadable.is_empty() {
        use std::os::unix::fs::MetadataExt;
        let identity = std::fs::symlink_metadata(&file).ok().map(|m| (m.dev(), m.ino()));
        drop((spool, guard));
        let why = format!("could not be read: {}", unreadable.join(", "));
        done.damaged.push(set_aside(&file, &why, identity).unwrap_or_else(|e| e));
    }
    // This delivery's run, taken by another: where the destination has it.
    if let Some(mine) = mine.filter(|m| done.of(m).is_none()) {
        if let Ok(id) = to.resolve(mine) {
            done.runs.push(Arrived { uuid: Some(mine.to_string()), id, already: true });
        }
    }
    Ok(done)
}

/// The runs a delivery cut short found unreadable, each said (they stay in the spool until a
/// delivery that goes to the end sets it aside).
fn unreadable_said(unreadable: &[String], file: &std::path::Path) -> Vec<String> {
    unreadable.iter().map(|u| format!("{u} in the spool {} could not be read; it stays there", file.display())).collect()
}

impl Delivered {
    /// Where the run with `uuid` is in the destination, if this delivery brought it.
    pub fn of(&self, uuid: &str) -> Option<&Arrived> {
        self.runs.iter().find(|r| r.uuid.as_deref() == Some(uuid))
    }

    /// What the delivery did, a line each, each begun with a line break (empty when nothing
    /// waited); the run `except` (said on a line of its own) left out.
    pub fn said_except(&self, except: Option<&str>) -> String {
        let mut text = self.arrivals_except(except);
        if let Some(why) = &self.stopped {
            let file = self.file.as_ref().map(|f| f.display().to_string()).unwrap_or_default();
            text += &format!(
                "\n{} still {} in the spool {file}: {why}.",
                Count(self.left as u64, "run"),
                if self.left == 1 { "waits" } else { "wait" }
            );
        }
        text
    }

    /// The runs delivered, as [`Delivered::said_except`] says them, without why the delivery
    /// stopped (for a message that says it itself).
    pub fn arrivals_except(&self, except: Option<&str>) -> String {
        let others: Vec<&Arrived> = self.runs.iter().filter(|r| except.is_none() || r.uuid.as_deref() != except).collect();
        let ids = |v: &[&&Arrived]| v.iter().map(|r| r.id.to_string()).collect::<Vec<_>>().join(", ");
        let (stored, already): (Vec<&&Arrived>, Vec<&&Arrived>) = others.iter().partition(|r| !r.already);
        let mut text = String::new();
        if !stored.is_empty() {
            text += &format!(
                "\nDelivered from the spool: {} (now {} {}).",
                Count(stored.len() as u64, "run"),
                if stored.len() == 1 { "run" } else { "runs" },
                ids(&stored)
            );
        }
        if !already.is_empty() {
            text += &format!(
                "\nFrom the spool, already stored: {} {}.",
                if already.len() == 1 { "run" } else { "runs" },
                ids(&already)
            );
        }
        text
    }

    /// [`Delivered::said_except`] with none left out.
    pub fn said(&self) -> String {
        self.said_except(None)
    }
}

/// The damaged spools of `destination` set aside earlier (`NAME.db.damaged-TIME`), oldest first:
/// what could not be read of them stays there, for a person to look at.
pub fn set_aside_files(destination: &Location) -> Vec<PathBuf> {
    let Some(file) = file_for(destination) else { return Vec::new() };
    let Some(name) = file.file_name().map(|n| format!("{}.damaged-", n.to_string_lossy())) else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(dir_of(&file)) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            n.starts_with(&name) && !n.ends_with("-wal") && !n.ends_with("-shm")
        })
        .collect();
    found.sort();
    found
}

/// Whether two locations name one destination (URLs alike without their passwords).
pub fn same_destination(a: &Location, b: &Location) -> bool {
    key_of(a) == key_of(b)
}
