//! The journal of original values: before rtgauge changes a system setting for a run, it
//! writes down how to undo the change — and syncs it to disk — so that whatever ends the
//! run, everything is put back. The run itself restores at its end (normal, Ctrl-C, SIGTERM,
//! an error); its guardian process restores when rtgauge dies without doing so (a second
//! Ctrl-C, a panic, SIGKILL); and the next rtgauge invocation, or `rtgauge restore`, restores
//! what a journal left by a killed run still holds (both rtgauge and its guardian killed, a
//! power cut: a journal from an earlier boot is only removed, the boot reset everything).
//!
//! The journal is a file of JSON lines: a header (pid, boot id, start, command line), then one
//! [`Undo`] per line. A live run holds an exclusive lock on it; a journal nobody locks is left
//! over. One run at a time may tune the system.

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// How to undo one change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "undo", rename_all = "kebab-case")]
pub enum Undo {
    /// Write `original` back to the file at `path` (rtgauge wrote `set`).
    Write { path: String, original: String, set: String },
    /// Give task `pid` (the one started at `starttime`: pids are reused) its CPUs back.
    Affinity { pid: i32, starttime: u64, cpus: Vec<usize> },
    /// Move every task or process listed in each of `from` (cgroup `tasks` / `cgroup.procs`
    /// files) into `to`.
    MoveAll { from: Vec<String>, to: String },
    /// Remove the directory rtgauge made (a cgroup, a trace instance).
    RemoveDir { path: String },
    /// Unmount the file system rtgauge mounted.
    Unmount { path: String },
}

/// The journal's first line.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Header {
    pid: u32,
    boot_id: String,
    started_at: String,
    command_line: Vec<String>,
}

/// What a restore did, one line per change put back or not.
#[derive(Debug, Clone, Default)]
pub struct Restored {
    pub done: Vec<String>,
    pub failed: Vec<String>,
}

impl Restored {
    pub fn is_empty(&self) -> bool {
        self.done.is_empty() && self.failed.is_empty()
    }
}

/// The journal a run holds while it tunes.
pub struct Journal {
    file: File,
    path: PathBuf,
    entries: Vec<Undo>,
}

/// Where the journal is kept: `RTGAUGE_JOURNAL`, else `/var/lib/rtgauge/tuning.journal` (it
/// survives a power cut, so the next run can say what happened), else under `/run`.
pub fn locations() -> Vec<PathBuf> {
    match std::env::var_os("RTGAUGE_JOURNAL").filter(|p| !p.is_empty()) {
        Some(p) => vec![PathBuf::from(p)],
        None => vec![PathBuf::from("/var/lib/rtgauge/tuning.journal"), PathBuf::from("/run/rtgauge/tuning.journal")],
    }
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Opens `path` (made if missing) and locks it; `Ok(None)` when a live rtgauge holds it.
fn open_locked(path: &Path) -> Result<Option<File>, String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    }
    for _ in 0..3 {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        if !crate::sys::try_lock_exclusive(&file).map_err(|e| format!("cannot lock {}: {e}", path.display()))? {
            return Ok(None);
        }
        // The holder before us may have removed the file after we opened it: lock the one that is there.
        use std::os::unix::fs::MetadataExt;
        let same = match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        };
        if same {
            return Ok(Some(file));
        }
    }
    Err(format!("{} keeps being replaced", path.display()))
}

/// Reads a left-over journal: its header and its undo entries (a torn last line is skipped).
fn read_journal(file: &mut File) -> (Option<Header>, Vec<Undo>) {
    let mut text = String::new();
    let _ = file.rewind();
    // A journal holds a line per change: a few MiB at most even with every task of a big machine.
    let _ = file.take(64 << 20).read_to_string(&mut text);
    let mut lines = text.lines();
    let header = lines.next().and_then(|l| serde_json::from_str(l).ok());
    (header, lines.filter_map(|l| serde_json::from_str(l).ok()).collect())
}

impl Journal {
    /// Opens the journal for a run that will tune: restores first what a killed run left in it
    /// (returned, to be told), and fails when another live rtgauge is tuning this system.
    pub fn open(command_line: &[String]) -> Result<(Journal, Restored), String> {
        let mut errors = Vec::new();
        for path in locations() {
            match open_locked(&path) {
                Ok(Some(mut file)) => {
                    let restored = restore_left_over(&mut file);
                    file.set_len(0).and_then(|_| file.rewind()).map_err(|e| format!("cannot reset {}: {e}", path.display()))?;
                    let header = Header {
                        pid: std::process::id(),
                        boot_id: boot_id(),
                        started_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
                        command_line: command_line.to_vec(),
                    };
                    let mut j = Journal { file, path, entries: Vec::new() };
                    j.append(&(serde_json::to_string(&header).unwrap_or_default() + "\n"))
                        .map_err(|e| format!("cannot write {}: {e}", j.path.display()))?;
                    return Ok((j, restored));
                }
                Ok(None) => {
                    let holder = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|t| serde_json::from_str::<Header>(t.lines().next()?).ok())
                        .map_or("another rtgauge".to_string(), |h| format!("rtgauge (pid {})", h.pid));
                    return Err(format!(
                        "{holder} is tuning this system now ({}): wait for it to end, or run without --tune",
                        path.display()
                    ));
                }
                Err(e) => errors.push(e),
            }
        }
        Err(format!("no journal of original values can be kept ({})", errors.join("; ")))
    }

    /// Where the journal is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append(&mut self, text: &str) -> std::io::Result<()> {
        self.file.seek(std::io::SeekFrom::End(0))?;
        self.file.write_all(text.as_bytes())?;
        self.file.sync_data()
    }

    /// Writes down how to undo changes about to be made, on disk before any of them is made.
    pub fn record(&mut self, undos: &[Undo]) -> Result<(), String> {
        if undos.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        for u in undos {
            text += &serde_json::to_string(u).unwrap_or_default();
            text.push('\n');
        }
        self.append(&text).map_err(|e| format!("cannot write the journal {}: {e}", self.path.display()))?;
        self.entries.extend_from_slice(undos);
        Ok(())
    }

    /// Undoes every change, the last first, and removes the journal.
    pub fn restore(mut self) -> Restored {
        let entries = std::mem::take(&mut self.entries);
        let restored = undo_all(&entries);
        let _ = std::fs::remove_file(&self.path);
        restored
    }
}

/// Restores what a journal nobody holds still lists, unless the system rebooted since.
fn restore_left_over(file: &mut File) -> Restored {
    let (header, entries) = read_journal(file);
    let Some(h) = header else { return Restored::default() };
    if entries.is_empty() {
        return Restored::default();
    }
    if h.boot_id != boot_id() {
        return Restored {
            done: vec![format!(
                "run {} (pid {}, {}) ended without restoring {} change(s), before a reboot that undid them: nothing left to restore",
                h.command_line.join(" "),
                h.pid,
                h.started_at,
                entries.len()
            )],
            failed: vec![],
        };
    }
    let mut r = undo_all(&entries);
    r.done.insert(
        0,
        format!("run {} (pid {}, {}) ended without restoring; put back:", h.command_line.join(" "), h.pid, h.started_at),
    );
    r
}

/// At the start of an invocation (or `rtgauge restore`): restores what a journal left by a
/// killed run holds, where this process may. `None` when there was nothing to do.
pub fn recover() -> Option<Restored> {
    let mut all = Restored::default();
    for path in locations() {
        all.merge(recover_at(&path, std::time::Duration::ZERO));
    }
    (!all.is_empty()).then_some(all)
}

/// Restores the journal at `path` once nobody holds it: the guardian waits up to `wait` for
/// rtgauge's lock to go with it.
pub fn recover_at(path: &Path, wait: std::time::Duration) -> Restored {
    let until = std::time::Instant::now() + wait;
    loop {
        let Ok(mut file) = OpenOptions::new().read(true).write(true).open(path) else { return Restored::default() };
        match crate::sys::try_lock_exclusive(&file) {
            Ok(true) => {
                let r = restore_left_over(&mut file);
                let _ = std::fs::remove_file(path);
                return r;
            }
            Ok(false) if std::time::Instant::now() < until => std::thread::sleep(std::time::Duration::from_millis(20)),
            _ => return Restored::default(),
        }
    }
}

impl Restored {
    fn merge(&mut self, other: Restored) {
        self.done.extend(other.done);
        self.failed.extend(other.failed);
    }
}

/// Undoes `entries`, the last first.
fn undo_all(entries: &[Undo]) -> Restored {
    let mut r = Restored::default();
    for u in entries.iter().rev() {
        match undo(u) {
            Ok(Some(line)) => r.done.push(line),
            Ok(None) => {}
            Err(e) => r.failed.push(e),
        }
    }
    r
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Undoes one change; `Ok(None)` when there was nothing to undo (already as it was, or gone).
fn undo(u: &Undo) -> Result<Option<String>, String> {
    match u {
        Undo::Write { path, original, set } => {
            if !Path::new(path).exists() {
                return Ok(None);
            }
            if read_trimmed(path).as_deref() == Some(original.as_str()) {
                return Ok(None);
            }
            std::fs::write(path, original).map_err(|e| format!("{path}: cannot write back '{original}': {e}"))?;
            Ok(Some(format!("{path} = {original} (rtgauge had set {set})")))
        }
        Undo::Affinity { pid, starttime, cpus } => {
            let same = crate::audit::tasks::TaskStat::of(*pid).is_some_and(|t| t.starttime == *starttime)
                || crate::audit::tasks::TaskStat::of_thread(*pid, *pid).is_some_and(|t| t.starttime == *starttime);
            if !same || crate::sys::task_affinity(*pid).is_ok_and(|now| now == *cpus) {
                return Ok(None);
            }
            crate::sys::set_task_affinity(*pid, cpus).map_err(|e| format!("task {pid}: cannot give back its CPUs: {e}"))?;
            Ok(None)
        }
        Undo::MoveAll { from, to } => {
            let mut moved = 0;
            for f in from {
                let ids: Vec<String> = read_trimmed(f).unwrap_or_default().lines().map(str::to_string).collect();
                for id in ids {
                    if std::fs::write(to, &id).is_ok() {
                        moved += 1;
                    }
                }
            }
            Ok((moved > 0).then(|| format!("{moved} task(s) moved back to {to}")))
        }
        Undo::RemoveDir { path } => {
            if !Path::new(path).exists() {
                return Ok(None);
            }
            // A cgroup empties a moment after its last task left.
            let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
            loop {
                match std::fs::remove_dir(path) {
                    Ok(()) => return Ok(Some(format!("{path} removed"))),
                    Err(_) if std::time::Instant::now() < until => std::thread::sleep(std::time::Duration::from_millis(10)),
                    Err(e) => return Err(format!("{path}: cannot remove it: {e}")),
                }
            }
        }
        Undo::Unmount { path } => {
            crate::sys::unmount(path).map_err(|e| format!("{path}: cannot unmount it: {e}"))?;
            Ok(Some(format!("{path} unmounted")))
        }
    }
}
