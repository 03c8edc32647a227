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
use std::fs::File;
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

/// What a restore did: one line per change put back (`done`) or not (`failed`), and what was
/// found besides (`notes`: which run left the journal, a reboot that undid it).
#[derive(Debug, Clone, Default)]
pub struct Restored {
    pub notes: Vec<String>,
    pub done: Vec<String>,
    pub failed: Vec<String>,
}

impl Restored {
    pub fn is_empty(&self) -> bool {
        self.notes.is_empty() && self.done.is_empty() && self.failed.is_empty()
    }

    fn merge(&mut self, other: Restored) {
        self.notes.extend(other.notes);
        self.done.extend(other.done);
        self.failed.extend(other.failed);
    }
}

/// The journal a run holds while it tunes.
pub struct Journal {
    file: File,
    path: PathBuf,
    entries: Vec<Undo>,
}

/// Why no journal was opened.
#[derive(Debug)]
pub enum OpenError {
    /// A live rtgauge (`holder`) is tuning this system with the journal at `path`.
    Busy { holder: String, path: PathBuf },
    /// The file at the journal's path is not one rtgauge may trust or remove: it is left as it
    /// was, and the command stops (exit 2).
    Refused(String),
    /// No journal could be kept at any location (a read-only file system, ...).
    Unavailable(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Busy { holder, path } => write!(f, "{holder} is tuning this system now ({})", path.display()),
            OpenError::Refused(e) | OpenError::Unavailable(e) => f.write_str(e),
        }
    }
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

fn shown_path(path: &Path) -> String {
    crate::vocab::shown(&path.display().to_string()).into_owned()
}

/// A refusal of the file at `path`, which is left exactly as it was.
fn refused(path: &Path, why: impl std::fmt::Display) -> OpenError {
    OpenError::Refused(format!(
        "the tuning journal {} is not one rtgauge may trust: {why}; it was left as it is: remove or move it yourself, or \
         point RTGAUGE_JOURNAL at a path of rtgauge's own (e.g. /run/rtgauge/tuning.journal)",
        shown_path(path)
    ))
}

/// Makes the directory the journal lives in (0700) when missing, then judges it ([`judge_dir`]).
fn check_dir(path: &Path) -> Result<(), OpenError> {
    let dir = dir_of(path);
    crate::sys::files::make_dir_all(dir, 0o700)
        .map_err(|e| OpenError::Unavailable(format!("cannot make {}: {e}", shown_path(dir))))?;
    match judge_dir(path)? {
        true => Ok(()),
        false => Err(OpenError::Unavailable(format!("cannot open {}", shown_path(dir)))),
    }
}

/// The directory the journal at `path` lives in (`.` for a bare name).
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Judges the directory the journal at `path` lives in, for every command that reads, restores
/// or writes a journal (one rule for all): no link another user could have planted on the way
/// to it, and no other user able to replace the journal in it (writable by others without the
/// sticky bit, or owned by another user) — else refused, the journal left as it is. `Ok(false)`:
/// the directory is not there (so no journal is).
fn judge_dir(path: &Path) -> Result<bool, OpenError> {
    let dir = dir_of(path);
    // (also no directory on the way to it another user could swap for one of theirs)
    let opened = match crate::sys::files::untouchable_dir(dir) {
        Ok(d) => d,
        // Not there, or not this process's to open (an unprivileged user): no journal it may
        // act on.
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied) => return Ok(false),
        Err(e) if crate::sys::files::is_refusal(&e) => return Err(refused(path, e)),
        Err(e) => return Err(OpenError::Unavailable(format!("cannot open {}: {e}", shown_path(dir)))),
    };
    drop(opened);
    Ok(true)
}

/// What an existing journal file holds, once it is known to be a journal rtgauge may trust.
enum Contents {
    /// Empty: made just now by this process.
    Empty,
    Journal(Header, Vec<Undo>),
}

/// A journal holds a line per change: a few MiB at most even with every task of a big machine.
const JOURNAL_CAP: u64 = 64 << 20;

/// Reads an existing file at the journal's path and says whether it is a journal rtgauge may
/// trust: a regular file (no link is followed), owned by root or the user running rtgauge,
/// writable by nobody else, empty or starting with a journal's first line.
fn recognise(path: &Path, file: &mut File) -> Result<Contents, OpenError> {
    let meta = file.metadata().map_err(|e| refused(path, e))?;
    crate::sys::files::trusted(&meta).map_err(|why| refused(path, why))?;
    if meta.len() == 0 {
        // rtgauge writes a journal's first line as it makes it: an empty file is not one it can
        // tell from any other (a lock file, say), whoever made it.
        return Err(refused(
            path,
            "it is empty, not a journal rtgauge wrote (if a run was killed as it made it, remove the file)",
        ));
    }
    if meta.len() > JOURNAL_CAP {
        return Err(refused(path, format!("it holds {} bytes, more than a journal ever does", meta.len())));
    }
    let mut bytes = Vec::new();
    file.rewind().map_err(|e| refused(path, e))?;
    file.take(JOURNAL_CAP).read_to_end(&mut bytes).map_err(|e| refused(path, e))?;
    let text = String::from_utf8(bytes).map_err(|_| refused(path, "it is not text"))?;
    let mut lines = text.lines();
    let header: Header = lines
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| refused(path, "its first line is not a journal's"))?;
    // A torn last line (a run killed while appending) is skipped.
    Ok(Contents::Journal(header, lines.filter_map(|l| serde_json::from_str(l).ok()).collect()))
}

/// Opens the journal at `path` (made, 0600, if missing) and locks it; `Ok(None)` when a live
/// rtgauge holds it. A file there that is not a journal rtgauge may trust is refused untouched.
fn open_locked(path: &Path) -> Result<Option<(File, Contents)>, OpenError> {
    check_dir(path)?;
    for _ in 0..3 {
        let mut created = false;
        let mut file = match crate::sys::files::open_existing_rw(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match crate::sys::files::create_new(path, 0o600) {
                Ok(f) => {
                    created = true;
                    f
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(OpenError::Unavailable(format!("cannot make {}: {e}", shown_path(path)))),
            },
            Err(e) if crate::sys::files::is_refusal(&e) => return Err(refused(path, e)),
            Err(e) => return Err(OpenError::Unavailable(format!("cannot open {}: {e}", shown_path(path)))),
        };
        let locked = crate::sys::fd::try_lock_exclusive(&file)
            .map_err(|e| OpenError::Unavailable(format!("cannot lock {}: {e}", shown_path(path))))?;
        if !locked {
            // (A live run's journal is empty only for the moment between making it and writing it.)
            if file.metadata().is_ok_and(|m| m.len() > 0) {
                recognise(path, &mut file)?;
            }
            return Ok(None);
        }
        // The holder before us may have removed the file after we opened it: lock the one that is there.
        if same_file(&file, path) {
            // Made just now by this process (and locked before anyone could write to it): empty.
            let contents = if created { Contents::Empty } else { recognise(path, &mut file)? };
            return Ok(Some((file, contents)));
        }
    }
    Err(OpenError::Unavailable(format!("{} keeps being replaced", shown_path(path))))
}

/// Whether `path` (not followed) is still the file `file` has open.
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    }
}

/// Removes the journal at `path` if it is still the file `file` has open: rtgauge removes only
/// the journal it recognised.
fn remove_own(file: &File, path: &Path) {
    if same_file(file, path) {
        let _ = std::fs::remove_file(path);
    }
}

impl Journal {
    /// Opens the journal for a run that will tune: restores first what a killed run left in it
    /// (returned, to be told), and fails when another live rtgauge is tuning this system or
    /// the file at the journal's path is not a journal rtgauge may trust.
    pub fn open(command_line: &[String]) -> Result<(Journal, Restored), OpenError> {
        let mut errors = Vec::new();
        for path in locations() {
            match open_locked(&path) {
                Ok(Some((mut file, contents))) => {
                    let restored = match contents {
                        Contents::Empty => Restored::default(),
                        Contents::Journal(header, entries) => restore_left_over(&header, &entries),
                    };
                    file.set_len(0)
                        .and_then(|_| file.rewind())
                        .map_err(|e| OpenError::Unavailable(format!("cannot reset {}: {e}", shown_path(&path))))?;
                    let header = Header {
                        pid: std::process::id(),
                        boot_id: boot_id(),
                        started_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
                        command_line: command_line.to_vec(),
                    };
                    let mut j = Journal { file, path, entries: Vec::new() };
                    j.append(&(serde_json::to_string(&header).unwrap_or_default() + "\n"))
                        .map_err(|e| OpenError::Unavailable(format!("cannot write {}: {e}", shown_path(&j.path))))?;
                    return Ok((j, restored));
                }
                Ok(None) => {
                    let holder = read_header(&path).map_or("another rtgauge".to_string(), |h| format!("rtgauge (pid {})", h.pid));
                    return Err(OpenError::Busy { holder, path });
                }
                Err(OpenError::Unavailable(e)) => errors.push(e),
                Err(e) => return Err(e),
            }
        }
        Err(OpenError::Unavailable(format!("no journal of original values can be kept ({})", errors.join("; "))))
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
    pub fn record(&mut self, undos: &[Undo]) -> Result<(), crate::vocab::Error> {
        self.record_text(undos).map_err(crate::vocab::Error::System)
    }

    /// [`Self::record`], its failure as text.
    fn record_text(&mut self, undos: &[Undo]) -> Result<(), String> {
        if undos.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        for u in undos {
            text += &serde_json::to_string(u).unwrap_or_default();
            text.push('\n');
        }
        self.append(&text).map_err(|e| format!("cannot write the journal {}: {e}", shown_path(&self.path)))?;
        self.entries.extend_from_slice(undos);
        Ok(())
    }

    /// Undoes every change, the last first, and removes the journal.
    pub fn restore(mut self) -> Restored {
        let entries = std::mem::take(&mut self.entries);
        let restored = undo_all(&entries);
        remove_own(&self.file, &self.path);
        restored
    }
}

/// The first line of the journal a live run holds (to name it), read without following a link.
fn read_header(path: &Path) -> Option<Header> {
    judge_dir(path).ok().filter(|&there| there)?;
    let mut file = crate::sys::files::open_existing_rw(path).ok()?;
    match recognise(path, &mut file).ok()? {
        Contents::Journal(h, _) => Some(h),
        Contents::Empty => None,
    }
}

/// Restores what a journal nobody holds still lists, unless the system rebooted since.
fn restore_left_over(h: &Header, entries: &[Undo]) -> Restored {
    if entries.is_empty() {
        return Restored::default();
    }
    let run =
        format!("run {} (pid {}, {})", crate::vocab::shown(&h.command_line.join(" ")), h.pid, crate::vocab::shown(&h.started_at));
    if h.boot_id != boot_id() {
        return Restored {
            notes: vec![format!(
                "{run} ended without restoring {} change(s), before a reboot that undid them: nothing left to restore",
                entries.len()
            )],
            ..Restored::default()
        };
    }
    let mut r = undo_all(entries);
    r.notes.insert(0, format!("{run} ended without restoring"));
    r
}

/// At the start of an invocation (or `rtgauge restore`): restores what a journal left by a
/// killed run holds, where this process may. `Ok(None)` when there was nothing to do; `Err`
/// when the file at a journal's path is not a journal rtgauge may trust (left as it was).
pub fn recover() -> Result<Option<Restored>, crate::vocab::Error> {
    recover_text().map_err(crate::vocab::Error::System)
}

/// [`recover`], its failure as text.
fn recover_text() -> Result<Option<Restored>, String> {
    let mut all = Restored::default();
    for path in locations() {
        all.merge(recover_at(&path, std::time::Duration::ZERO).map_err(|e| e.to_string())?);
    }
    Ok((!all.is_empty()).then_some(all))
}

/// Restores the journal at `path` once nobody holds it: the guardian waits up to `wait` for
/// rtgauge's lock to go with it. Only a journal rtgauge recognises as its own is restored and
/// removed; anything else at that path is refused and left as it was.
pub fn recover_at(path: &Path, wait: std::time::Duration) -> Result<Restored, OpenError> {
    let until = std::time::Instant::now() + wait;
    // The same judgement of the directory as when a run makes the journal: a journal another
    // user could have put there is never acted on (restored, removed).
    if !judge_dir(path)? {
        return Ok(Restored::default());
    }
    loop {
        let mut file = match crate::sys::files::open_existing_rw(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Restored::default()),
            Err(e) if crate::sys::files::is_refusal(&e) => return Err(refused(path, e)),
            // Not this process's to open (an unprivileged user): nothing it may restore.
            Err(_) => return Ok(Restored::default()),
        };
        match crate::sys::fd::try_lock_exclusive(&file) {
            Ok(true) => {
                let r = match recognise(path, &mut file)? {
                    Contents::Empty => Restored::default(),
                    Contents::Journal(h, entries) => restore_left_over(&h, &entries),
                };
                remove_own(&file, path);
                return Ok(r);
            }
            Ok(false) if std::time::Instant::now() < until => std::thread::sleep(std::time::Duration::from_millis(20)),
            Ok(false) => {
                if file.metadata().is_ok_and(|m| m.len() > 0) {
                    recognise(path, &mut file)?;
                }
                return Ok(Restored::default());
            }
            Err(_) => return Ok(Restored::default()),
        }
    }
}

/// Undoes `entries`, the last first. An entry that is not a setting rtgauge tunes is refused,
/// named, and not carried out.
fn undo_all(entries: &[Undo]) -> Restored {
    let mut r = Restored::default();
    for u in entries.iter().rev() {
        match permitted(u).and_then(|()| undo(u)) {
            Ok(Some(line)) => r.done.push(line),
            Ok(None) => {}
            Err(e) => r.failed.push(e),
        }
    }
    r
}

const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";
const DEFAULT_IRQ_AFFINITY: &str = "/proc/irq/default_smp_affinity";
/// Where rtgauge mounts tracefs when it is not mounted.
pub const TRACEFS_MOUNT: &str = "/sys/kernel/tracing";

/// Whether `path` is absolute and plain: no `.` or `..` component, no empty one, no newline.
fn plain(path: &str) -> bool {
    path.starts_with('/')
        && path.len() > 1
        && !path.ends_with('/')
        && path[1..].split('/').all(|c| !c.is_empty() && c != "." && c != "..")
        && !path.contains(['\n', '\0'])
}

/// The digits of `text`, if it is a non-empty run of them.
fn number(text: &str) -> bool {
    !text.is_empty() && text.len() <= 10 && text.bytes().all(|b| b.is_ascii_digit())
}

/// The mount points of file systems of type `fstype`, from /proc/self/mountinfo.
fn mounts_of(fstype: &str) -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let at = pre.split(' ').nth(4)?;
            (post.split(' ').next() == Some(fstype)).then(|| PathBuf::from(at.replace("\\040", " ")))
        })
        .collect()
}

/// The cgroup hierarchies a shield is made in: the v1 cpuset mount and the cgroup2 mount.
fn cgroup_mounts() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = mounts_of("cgroup2");
    v.extend(mounts_of("cgroup"));
    v
}

/// The settings of the kernel's osnoise family of tracers a kernel-tracer probe may set, shared
/// by every trace instance: `ROOT/osnoise/FILE` in a tracefs root; the file's name.
const SHARED_TRACER_FILES: &[&str] =
    &["period_us", "runtime_us", "stop_tracing_us", "stop_tracing_total_us", "print_stack", "timerlat_period_us", "cpus"];

fn shared_tracer_file(path: &str) -> Option<&'static str> {
    let p = Path::new(path);
    let dir = p.parent()?;
    let name = p.file_name()?.to_str()?;
    let file = SHARED_TRACER_FILES.iter().find(|f| **f == name)?;
    (dir.file_name().is_some_and(|d| d == "osnoise") && dir.parent().is_some_and(|r| trace_roots().iter().any(|t| t == r)))
        .then_some(*file)
}

/// The trace file systems rtgauge may have made instances in.
fn trace_roots() -> Vec<PathBuf> {
    let mut v = mounts_of("tracefs");
    v.push(PathBuf::from("/sys/kernel/debug/tracing"));
    v
}

fn on(path: &str, kinds: &[crate::sys::files::KernelFs]) -> Result<(), String> {
    match crate::sys::files::kernel_fs(Path::new(path)) {
        Ok(Some(k)) if kinds.contains(&k) => Ok(()),
        // Gone (a trace instance or cgroup already removed): nothing to undo, as `undo` finds.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Ok(_) => Err(format!("refused: {} is not on the kernel file system rtgauge tunes it in", crate::vocab::shown(path))),
        Err(e) => Err(format!("{}: {e}", crate::vocab::shown(path))),
    }
}

/// A directory rtgauge makes for a run (`rtgauge-...`) directly inside one of `roots`.
fn own_dir_in(path: &str, roots: &[PathBuf], parent_name: Option<&str>) -> bool {
    let p = Path::new(path);
    let Some(name) = p.file_name().and_then(|n| n.to_str()) else { return false };
    let Some(parent) = p.parent() else { return false };
    let parent = match parent_name {
        Some(n) if parent.file_name().and_then(|x| x.to_str()) == Some(n) => parent.parent(),
        Some(_) => None,
        None => Some(parent),
    };
    name.starts_with("rtgauge-") && parent.is_some_and(|d| roots.iter().any(|r| r == d))
}

/// Whether a journal entry undoes a change rtgauge itself makes: a write back to one of the
/// settings it tunes (RT throttling, an interrupt's affinity, the default interrupt affinity,
/// a cpufreq governor, its cpuset's load balancing, the cgroup2 root's cpuset controller) with a
/// value of that setting's shape; tasks moved out of its own cgroups into another cgroup; the
/// removal of its own cgroup or trace instance directories; the unmount of the tracefs it
/// mounts. Anything else is refused (`Err` names it) and not carried out.
/// Whether the journal would carry out `u` when it is undone: asked before a change is made,
/// so that nothing is changed that could not be put back (a kernel-tracer probe's settings).
pub fn would_undo(u: &Undo) -> Result<(), crate::vocab::Error> {
    would_undo_text(u).map_err(crate::vocab::Error::Invalid)
}

/// [`would_undo`], its failure as text.
fn would_undo_text(u: &Undo) -> Result<(), String> {
    permitted(u)
}

fn permitted(u: &Undo) -> Result<(), String> {
    use crate::sys::files::KernelFs;
    let refuse = |what: &str| Err(format!("refused: the journal asks to {what}, which is not a setting rtgauge tunes"));
    let cgroups = [KernelFs::Cgroup, KernelFs::Cgroup2];
    match u {
        Undo::Write { path, original, .. } => {
            let shown = crate::vocab::shown(path);
            let what = format!("write '{}' to {shown}", crate::vocab::shown(original));
            if !plain(path) || original.len() > 4096 {
                return refuse(&what);
            }
            let cpu_list = || crate::vocab::cpus::parse_cpu_list(original).is_ok();
            let (fits, fs): (bool, &[KernelFs]) = if path == RT_RUNTIME {
                (original.parse::<i64>().is_ok_and(|v| v >= -1), &[KernelFs::Proc])
            } else if path == DEFAULT_IRQ_AFFINITY {
                (!original.is_empty() && original.bytes().all(|b| b.is_ascii_hexdigit() || b == b','), &[KernelFs::Proc])
            } else if let Some(irq) = path.strip_prefix("/proc/irq/").and_then(|r| r.strip_suffix("/smp_affinity_list")) {
                (number(irq) && cpu_list(), &[KernelFs::Proc])
            } else if let Some(cpu) =
                path.strip_prefix("/sys/devices/system/cpu/cpu").and_then(|r| r.strip_suffix("/cpufreq/scaling_governor"))
            {
                let word = !original.is_empty() && original.len() <= 32;
                (number(cpu) && word && original.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), &[KernelFs::Sysfs])
            } else if let Some(file) = shared_tracer_file(path) {
                // A kernel-tracer probe's setting of the osnoise family (probe::kernel).
                let fits = match file {
                    "cpus" => cpu_list(),
                    _ => number(original),
                };
                (fits, &[KernelFs::Tracefs])
            } else {
                let p = Path::new(path);
                let in_root = p.parent().is_some_and(|d| cgroup_mounts().iter().any(|r| r == d));
                match p.file_name().and_then(|n| n.to_str()) {
                    Some("sched_load_balance" | "cpuset.sched_load_balance") if in_root => {
                        (original == "0" || original == "1", &cgroups)
                    }
                    Some("cgroup.subtree_control") if in_root => (original == "-cpuset", &cgroups),
                    _ => return refuse(&what),
                }
            };
            if !fits {
                return refuse(&what);
            }
            on(path, fs)
        }
        Undo::Affinity { pid, cpus, .. } => {
            let online = crate::audit::online_cpus();
            if *pid <= 0 || cpus.is_empty() || cpus.iter().any(|c| !online.contains(c)) {
                return refuse(&format!("give task {pid} CPUs {}", crate::vocab::cpus::format_cpu_list(cpus)));
            }
            Ok(())
        }
        Undo::MoveAll { from, to } => {
            let what =
                format!("move the tasks listed in {} to {}", crate::vocab::shown(&from.join(", ")), crate::vocab::shown(to));
            let roots = cgroup_mounts();
            let task_file =
                |p: &str| plain(p) && matches!(Path::new(p).file_name().and_then(|n| n.to_str()), Some("tasks" | "cgroup.procs"));
            let own = |f: &String| {
                task_file(f) && Path::new(f).parent().is_some_and(|d| own_dir_in(&d.to_string_lossy(), &roots, None))
            };
            let into_cgroup = task_file(to) && roots.iter().any(|r| Path::new(to).starts_with(r));
            if from.is_empty() || !from.iter().all(own) || !into_cgroup {
                return refuse(&what);
            }
            from.iter().try_for_each(|f| on(f, &cgroups))?;
            on(to, &cgroups)
        }
        Undo::RemoveDir { path } => {
            let what = format!("remove the directory {}", crate::vocab::shown(path));
            if !plain(path) {
                return refuse(&what);
            }
            if own_dir_in(path, &cgroup_mounts(), None) {
                on(path, &cgroups)
            } else if own_dir_in(path, &trace_roots(), Some("instances")) {
                on(path, &[KernelFs::Tracefs])
            } else {
                refuse(&what)
            }
        }
        Undo::Unmount { path } => {
            if path != TRACEFS_MOUNT {
                return refuse(&format!("unmount {}", crate::vocab::shown(path)));
            }
            Ok(())
        }
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    crate::sys::tracefs::read(Path::new(path)).ok().map(|s| s.trim().to_string())
}

/// Undoes one change (an entry [`permitted`] let through); `Ok(None)` when there was nothing to
/// undo (already as it was, or gone).
fn undo(u: &Undo) -> Result<Option<String>, String> {
    match u {
        Undo::Write { path, original, set } => {
            if !Path::new(path).exists() {
                return Ok(None);
            }
            if read_trimmed(path).as_deref() == Some(original.as_str()) {
                return Ok(None);
            }
            crate::sys::files::write_setting(Path::new(path), original)
                .map_err(|e| format!("{path}: cannot write back '{original}': {e}"))?;
            Ok(Some(format!("{path} = {original} (rtgauge had set {set})")))
        }
        Undo::Affinity { pid, starttime, cpus } => {
            let same = crate::audit::tasks::TaskStat::of(*pid).is_some_and(|t| t.starttime == *starttime)
                || crate::audit::tasks::TaskStat::of_thread(*pid, *pid).is_some_and(|t| t.starttime == *starttime);
            if !same || crate::sys::sched::task_affinity(*pid).is_ok_and(|now| now == *cpus) {
                return Ok(None);
            }
            crate::sys::sched::set_task_affinity(*pid, cpus)
                .map_err(|e| format!("task {pid}: cannot give back its CPUs: {e}"))?;
            Ok(Some(format!("task {pid} may run on CPUs {} again", crate::vocab::cpus::format_cpu_list(cpus))))
        }
        Undo::MoveAll { from, to } => {
            let mut moved = 0;
            for f in from {
                // A cgroup's task list holds numbers only; anything else is not written on.
                let ids: Vec<u32> = read_trimmed(f).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect();
                for id in ids {
                    if crate::sys::files::write_setting(Path::new(to), &id.to_string()).is_ok() {
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
        Undo::Unmount { path } => release_tracefs(path),
    }
}

/// The source rtgauge mounts tracefs with (the first column of /proc/mounts): a mount of
/// rtgauge's own, which another traced run may share.
pub const TRACEFS_SOURCE: &str = "rtgauge";

/// Unmounts the tracefs at `path` if rtgauge mounted it and no trace instance is left in it: a
/// run that shares the mount keeps it until the last one ends.
fn release_tracefs(path: &str) -> Result<Option<String>, String> {
    let text = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let source = text.lines().rev().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(2) == Some(&"tracefs") && f.get(1) == Some(&path)).then(|| f[0].to_string())
    });
    match source {
        None => Ok(None),
        Some(s) if s != TRACEFS_SOURCE => Err(format!(
            "{path}: a tracefs mount rtgauge did not make (its source is '{}'): left mounted",
            crate::vocab::shown(&s)
        )),
        Some(_) => {
            let left = std::fs::read_dir(Path::new(path).join("instances")).map(|d| d.flatten().count()).unwrap_or(0);
            if left > 0 {
                return Ok(None);
            }
            crate::sys::fs::unmount(path).map_err(|e| format!("{path}: cannot unmount it: {e}"))?;
            Ok(Some(format!("{path} unmounted")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_outside_what_rtgauge_tunes_are_refused() {
        let w = |path: &str, original: &str| Undo::Write { path: path.into(), original: original.into(), set: "x".into() };
        for bad in [
            w("/etc/passwd", "root::0:0::/root:/bin/sh"),
            w("/proc/sys/kernel/../../../etc/shadow", "1"),
            w("/proc/sys/kernel/sched_rt_runtime_us", "950000; rm -rf /"),
            w("/proc/irq/12/smp_affinity_list", "all"),
            w("/proc/sys/kernel/core_pattern", "|/tmp/x"),
            w("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "../x"),
            // (a kernel-tracer probe's shared settings: only the osnoise family's, in a tracefs)
            w("/sys/kernel/tracing/osnoise/period_us", "1000; x"),
            w("/sys/kernel/tracing/osnoise/cpus", "all"),
            w("/sys/kernel/tracing/osnoise/../current_tracer", "nop"),
            w("/sys/kernel/tracing/current_tracer", "nop"),
            w("/tmp/osnoise/period_us", "1000"),
            Undo::RemoveDir { path: "/home".into() },
            Undo::RemoveDir { path: "/tmp/rtgauge-1".into() },
            Undo::Unmount { path: "/home".into() },
            Undo::MoveAll { from: vec!["/etc/shadow".into()], to: "/tmp/stolen".into() },
        ] {
            assert!(permitted(&bad).is_err_and(|e| e.starts_with("refused")), "{bad:?}");
        }
        assert!(plain("/proc/irq/3/smp_affinity_list"));
        assert!(!plain("/proc/irq/./3") && !plain("/proc//irq") && !plain("relative"));
    }
}
