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

use super::{default_location, dir_of, local_data_dir, Location, RunRow, Store};
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
/// file. `label`, and the kernel configuration, travel with the run.
pub fn keep(
    r: &mut RunResult,
    destination: &Location,
    label: Option<&str>,
    kernel_config: Option<super::KernelOptions>,
) -> Result<PathBuf, String> {
    let file =
        file_for(destination).ok_or("there is no local data directory for a spool (neither XDG_DATA_HOME nor HOME is set)")?;
    let dir = dir_of(&file);
    crate::sys::files::make_dir_all(dir, 0o700)
        .map_err(|e| format!("the spool directory {} cannot be made: {e}", dir.display()))?;
    let spool = open_checked(&file)?;
    spool.save(r, label, None, kernel_config)?;
    Ok(file)
}

/// The spool store `file`, opened (made if there is none), after its directory and the file are
/// checked: rtgauge, as root, keeps runs only in a directory no other user can write into, and
/// never through a link.
fn open_checked(file: &std::path::Path) -> Result<Store, String> {
    let dir = dir_of(file);
    let meta =
        std::fs::symlink_metadata(dir).map_err(|e| format!("the spool directory {} cannot be read: {e}", dir.display()))?;
    let why_not = if meta.is_dir() { crate::sys::files::trusted(&meta).err() } else { Some("it is not a directory".into()) };
    if let Some(why) = why_not {
        return Err(format!("the spool directory {} is not used: {why}; remove it, rtgauge makes it again", dir.display()));
    }
    match std::fs::symlink_metadata(file) {
        Ok(m) if !m.is_file() => {
            return Err(format!(
                "the spool {} is {}, not a file; it is not used: remove it",
                file.display(),
                crate::sys::files::kind(&m)
            ))
        }
        _ => {}
    }
    Store::open(&Location::File(file.to_path_buf())).map_err(|e| format!("the spool: {e}"))
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
pub fn deliver(to: &Store, destination: &Location, mine: Option<&str>) -> Result<Delivered, String> {
    let Some(file) = file_for(destination) else { return Ok(Delivered::default()) };
    match std::fs::symlink_metadata(&file) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Delivered::default()),
        Err(e) => return Err(format!("the spool {} cannot be read: {e}", file.display())),
    }
    let spool = open_checked(&file)?;
    let waiting = spool.list(&super::Filter::default())?;
    let mut done = Delivered { file: Some(file), ..Delivered::default() };
    // Whether the spool still holds the run `row` lists (its id and its UUID).
    let holds = |row: &RunRow| -> Result<bool, String> {
        Ok(match &row.uuid {
            Some(u) => spool.resolve(u).ok() == Some(row.id),
            None => spool.has(row.id)?,
        })
    };
    for (n, row) in waiting.iter().enumerate() {
        match super::copy_run(&spool, row, to) {
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
                    return Ok(done);
                }
            }
            // Another delivery took it first: it is the destination's now, or on its way there.
            Err(_) if !holds(row)? => continue,
            Err(e) => {
                done.stopped = Some(e);
                done.left = waiting.len() - n;
                return Ok(done);
            }
        }
    }
    // This delivery's run, taken by another: where the destination has it.
    if let Some(mine) = mine.filter(|m| done.of(m).is_none()) {
        if let Ok(id) = to.resolve(mine) {
            done.runs.push(Arrived { uuid: Some(mine.to_string()), id, already: true });
        }
    }
    Ok(done)
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

/// Whether two locations name one destination (URLs alike without their passwords).
pub fn same_destination(a: &Location, b: &Location) -> bool {
    key_of(a) == key_of(b)
}
