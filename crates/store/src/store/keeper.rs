//! The store's side of keeping a run (`keep::Keep` and `keep::Destination`, the port the run
//! sees): checked before measuring ([`Request::open`]), a rotated run's parts kept while
//! measuring goes on, the result kept at its end — a lab's store through the spool, delivered
//! within a time limit (`RTGAUGE_STORE_TIMEOUT`), a store that fails at the end replaced by a
//! rescue file whose message names the command that stores it later. Nothing measured is lost.

use super::{spool, KernelOptions, Location, Request, Store};
use crate::keep::{Destination, Earlier, Keep, Kept};
use crate::result::RunResult;
use crate::vocab::text::shell_word;
use crate::vocab::Error;
use std::io::Write;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

impl Keep for Request {
    fn board(&self) -> Option<&str> {
        self.board.as_deref()
    }

    fn is_shared(&self) -> bool {
        Request::is_shared(self)
    }

    fn explicit(&self) -> bool {
        self.explicit
    }

    fn before_run(&self, signalled: Arc<AtomicUsize>, rotating: bool) {
        super::postgres::give_up_when(signalled);
        if rotating {
            super::fix_page_memory();
        }
    }

    fn open(&self, result_bytes: u64, warnings: &mut Vec<String>) -> Result<Box<dyn Destination>, Error> {
        let store = Request::open(self, result_bytes, warnings).map_err(|e| match e {
            super::StoreError::Asked(m) => Error::Invalid(m),
            e => Error::System(e.to_string()),
        })?;
        Ok(Box::new(Opened { request: self.clone(), store, lost: false }))
    }

    fn lost(&self) -> Box<dyn Destination> {
        Box::new(Opened { request: self.clone(), store: None, lost: true })
    }
}

/// A run's destination once opened: the request, and its store if one answered.
struct Opened {
    request: Request,
    store: Option<Store>,
    /// Made again for a store that was open and lost with the thread that kept a rotated run's
    /// parts: its store is opened again at the end, else the result goes to a rescue file.
    lost: bool,
}

impl Destination for Opened {
    fn stores(&self) -> bool {
        self.store.is_some()
    }

    fn kernel_config_before(&self, board: &str) -> Result<Option<Earlier>, Error> {
        match &self.store {
            Some(s) => s.kernel_config_before(board).map_err(|e| Error::System(e.to_string())),
            None => Ok(None),
        }
    }

    fn fold(&self) {
        if let Some(s) = &self.store {
            s.fold();
        }
    }

    fn keep_part(&mut self, result: &mut RunResult) -> String {
        keep_part(result, &mut self.store, &self.request)
    }

    fn keep(self: Box<Self>, result: &mut RunResult, kernel_config: Option<KernelOptions>) -> Kept {
        let Opened { request, store, lost } = *self;
        // A local store that was open before measuring: opened again (a shared one is, through
        // the spool, in `keep_result`); never passed over in silence.
        if let (true, None, Some(location)) = (lost, &store, request.location.as_ref().filter(|_| !request.is_shared())) {
            return match Store::open(location) {
                Ok(s) => keep_result(result, Some(s), &request, kernel_config),
                Err(e) => {
                    let why = format!("it could not be opened again after the thread that kept the parts ended ({e})");
                    Kept::Rescued(rescue_said(result, None, &location.shown(), &why, &request))
                }
            };
        }
        keep_result(result, store, &request, kernel_config)
    }
}

/// Says `text` on standard error, a failure ignored: the terminal a run was started from may be
/// gone by its end (SIGHUP), and keeping the result must still happen.
fn warn(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// Keeps a closed part of a rotated run while measuring goes on: in the store (a shared one
/// through the spool, delivered here; a shared one that did not answer before is tried again,
/// and kept once it answers), else in a rescue file; the sentence that says where.
fn keep_part(result: &mut RunResult, store: &mut Option<Store>, keep: &Request) -> String {
    let label = keep.label.as_deref();
    if let Some(location) = keep.location.as_ref().filter(|_| keep.is_shared()) {
        let uuid = result.uuid.map(|u| u.to_string()).unwrap_or_default();
        let (file, notes) = match spool::keep(result, location, label, None) {
            Ok(kept) => kept,
            Err(e) => {
                return match store {
                    Some(s) => rescued(result, s.rescue_dir(), &s.shown(), &e.to_string(), label),
                    None => rescued(result, None, &location.shown(), &e.to_string(), label),
                }
            }
        };
        let notes: String = notes.iter().map(|n| format!("; warning: {n}")).collect();
        if store.is_none() {
            match Store::open(location) {
                Ok(s) => *store = Some(s),
                Err(e) => return format!("waits in the spool {} ({e}){notes}", file.display()),
            }
        }
        let Some(s) = store.as_ref() else { unreachable!("opened above") };
        return match spool::deliver(s, location, Some(&uuid)) {
            Ok(d) => {
                let damaged: String = d.damaged.iter().map(|n| format!("; warning: {n}")).collect();
                match d.of(&uuid) {
                    Some(a) => format!("stored as run {} in {}{notes}{damaged}", a.id, s.shown()),
                    None => format!(
                        "waits in the spool {} ({}){notes}{damaged}",
                        file.display(),
                        d.stopped.as_deref().unwrap_or("the delivery stopped before it")
                    ),
                }
            }
            Err(e) => format!("waits in the spool {} ({e}){notes}", file.display()),
        };
    }
    let Some(s) = store.as_ref() else { return "not stored (--no-store)".into() };
    match s.save(result, label, None, None) {
        Ok(saved) => format!("stored as run {} in {}", saved.id, s.shown()),
        Err(e) => rescued(result, s.rescue_dir(), &s.shown(), &e.to_string(), label),
    }
}

/// A part the store did not take, saved to a rescue file (`beside`: the store's directory,
/// where it is a file): the sentence that says so.
fn rescued(result: &RunResult, beside: Option<std::path::PathBuf>, shown: &str, why: &str, label: Option<&str>) -> String {
    match super::rescue(result, beside) {
        Ok(file) => format!(
            "not stored ({why}); saved to {}; store it with: rtgauge import {} --db {}{}",
            shell_word(&file.display().to_string()),
            shell_word(&file.display().to_string()),
            shell_word(shown),
            label.map_or(String::new(), |l| format!(" --label {}", shell_word(l)))
        ),
        Err(e) => format!("not stored ({why}); {e}"),
    }
}

/// Keeps the result in the store, if there is one. A store that cannot be written at the end
/// (locked, full, its temporary directory full, damaged) does not lose the run: it is written
/// to a rescue file (`store::rescue`), which the message names with the command that stores
/// it later.
fn keep_result(result: &mut RunResult, store: Option<Store>, keep: &Request, kernel_config: Option<KernelOptions>) -> Kept {
    // A shared store: the run is kept first where nothing can hang, in the spool, then the spool
    // is delivered (the runs that waited before first), within a time limit; a run the server
    // does not take waits on, nothing lost. A server that did not answer before the run is
    // tried again now. Only when no spool can be had is it stored directly.
    let shared = keep.location.as_ref().filter(|_| keep.is_shared());
    let mut spool_failed = String::new();
    if let Some(location) = shared {
        match spool::keep(result, location, keep.label.as_deref(), kernel_config.clone()) {
            Ok((file, notes)) => {
                for n in notes {
                    warn(&format!("rtgauge: warning: {n}\n"));
                }
                return deliver_within(store, location, result, &file, keep);
            }
            Err(e) => spool_failed = format!("; nor kept in the spool: {e}"),
        }
    }
    let store = match (store, shared) {
        (Some(s), _) => s,
        // The server did not answer before the run, and the spool cannot take it: once more.
        (None, Some(location)) => match Store::open(location) {
            Ok(s) => s,
            Err(e) => {
                let e = format!("{e}{spool_failed}");
                return Kept::Rescued(rescue_said(result, None, &location.shown(), &e, keep));
            }
        },
        (None, None) => {
            if let Some(why) = &keep.why_not {
                warn(&format!("rtgauge: warning: {why}\n"));
            }
            return Kept::Nowhere;
        }
    };
    let e = match store.save(result, keep.label.as_deref(), None, kernel_config.clone()) {
        Ok(saved) => {
            if !spool_failed.is_empty() {
                // (never passed over in silence, even when the run is stored directly; a run not
                // stored says it with the rest, below)
                warn(&format!("rtgauge: warning: the run was not kept in the spool first{spool_failed}\n"));
            }
            let (id, shown) = (saved.id, store.shown());
            let stored = if saved.already { "Already stored" } else { "Stored" };
            return Kept::Stored(format!("{stored} as run {id} in {shown}; see it with: rtgauge show {id}{}", db_hint(keep)));
        }
        Err(e) => e,
    };
    let (db, beside) = (store.shown(), store.rescue_dir());
    drop(store);
    let e = format!("{e}{spool_failed}");
    Kept::Rescued(rescue_said(result, beside, &db, &e, keep))
}

/// The run saved to a rescue file (`beside`: the store's directory, where it is a file), the
/// store `db` having failed for `e`: the sentence that says so, with the command that stores it.
fn rescue_said(result: &RunResult, beside: Option<std::path::PathBuf>, db: &str, e: &str, keep: &Request) -> String {
    match super::rescue(result, beside) {
        Ok(file) => {
            let label = keep.label.as_deref().map_or(String::new(), |l| format!(" --label {}", shell_word(l)));
            let file = shell_word(&file.display().to_string());
            format!(
                "the run was measured but not stored: {e}; it was saved to {file} instead; store it with: \
                 rtgauge import {file} --db {}{label}",
                shell_word(db)
            )
        }
        Err(e2) => format!("the run was measured but not stored: {e}; {e2}"),
    }
}

/// How long the end of a run waits for a shared store to take what waits in the spool (the run
/// itself last): `RTGAUGE_STORE_TIMEOUT` seconds, else 120. A server that stops answering (hung,
/// a link that went silent) costs this much, then the run waits in the spool.
fn store_time_limit() -> std::time::Duration {
    let secs = std::env::var("RTGAUGE_STORE_TIMEOUT").ok().and_then(|v| v.parse::<u64>().ok()).filter(|&s| s > 0);
    std::time::Duration::from_secs(secs.unwrap_or(120))
}

/// Delivers the spool of the shared store `location` (opened before measuring: `store`) on a
/// thread of its own, the run `result` (kept in the spool `file`) among what waits, within
/// [`store_time_limit`]: where the run went, and what else the delivery did. The thread is left
/// behind, blocked, when the server does not answer in time; the run still waits in the spool.
fn deliver_within(store: Option<Store>, location: &Location, result: &RunResult, file: &std::path::Path, keep: &Request) -> Kept {
    let shown = store.as_ref().map_or_else(|| location.shown(), Store::shown);
    let uuid = result.uuid.map(|u| u.to_string()).unwrap_or_default();
    let limit = store_time_limit();
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let (to, mine) = (location.clone(), uuid.clone());
    // A run stopped (SIGINT, SIGTERM) whose server did not answer before it is not held up
    // waiting for it again: it waits in the spool.
    let stopped = result.interrupted_by.is_some();
    let spawned = std::thread::Builder::new().name("rtgauge-store".into()).spawn(move || {
        // A server that did not answer before the run is tried once more now.
        let delivered = match store {
            Some(s) => Ok(s),
            None if stopped => Err("the run was stopped before the server answered".to_string()),
            None => Store::open(&to).map_err(|e| e.to_string()),
        }
        .and_then(|s| spool::deliver(&s, &to, Some(&mine)).map_err(String::from));
        let _ = tx.send(delivered);
    });
    let delivered = match spawned {
        Ok(_) => rx
            .recv_timeout(limit)
            .map_err(|_| format!("the server did not take it within {} s (RTGAUGE_STORE_TIMEOUT)", limit.as_secs()))
            .and_then(|d| d),
        Err(e) => Err(format!("no thread to store it ({e})")),
    };
    let waits = |why: &str, others: String| {
        Kept::Spooled(format!(
            "the run was measured but not stored in {shown}: {why}. It waits in the spool {} (run {}): the next run \
             with this store delivers it, or: rtgauge push --to {}{others}",
            file.display(),
            uuid.get(..8).unwrap_or_default(),
            shell_word(&shown)
        ))
    };
    if let Ok(d) = &delivered {
        for n in &d.damaged {
            warn(&format!("rtgauge: warning: {n}\n"));
        }
    }
    match delivered {
        Ok(d) => match d.of(&uuid) {
            Some(arrived) => Kept::Stored(format!(
                // (stored by this delivery or by another at the same time: the run is there, once)
                "Stored as run {id} in {shown}; see it with: rtgauge show {id}{}{}",
                db_hint(keep),
                d.said_except(Some(&uuid)),
                id = arrived.id
            )),
            None => {
                let why = d.stopped.clone().unwrap_or_else(|| "the delivery stopped before it".into());
                waits(&why, d.arrivals_except(Some(&uuid)))
            }
        },
        Err(e) => waits(&e, String::new()),
    }
}

/// `' --db LOCATION'` when the run's store is not the one `rtgauge show` reads by default.
fn db_hint(keep: &Request) -> String {
    match (&keep.location, super::default_location()) {
        (Some(l), Some(d)) if *l == d => String::new(),
        (Some(l), _) => format!(" --db {}", shell_word(&l.shown())),
        (None, _) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run kept through a destination made again after the thread that kept a rotated run's
    /// parts ended (`Keep::lost`): its local store is opened again and the run stored there,
    /// or, when the store cannot be opened, saved to a rescue file the message names; never
    /// passed over.
    #[test]
    fn a_lost_destination_stores_the_run_again_or_rescues_it() {
        let dir = tempfile::tempdir().unwrap();
        let document = include_str!("../../../../tests/fixtures/result-v3.json");
        let path = dir.path().join("store.db");
        let request = Request::new(Some(&path), false, Some("after-a-lost-keeper")).unwrap();
        let mut warnings = Vec::new();
        assert!(request.open(1 << 20, &mut warnings).unwrap().is_some(), "the store is made before measuring");
        let mut result: RunResult = serde_json::from_str(document).unwrap();
        match Keep::lost(&request).keep(&mut result, None) {
            Kept::Stored(line) => assert!(line.contains("Stored as run 1 in"), "{line}"),
            other => panic!("not stored again: {other:?}"),
        }
        let stored = Store::open(&Location::File(path)).unwrap();
        assert_eq!(stored.list(&Default::default()).unwrap().len(), 1);
        // A store that cannot be opened any more: a rescue file, named.
        let gone = dir.path().join("a-file-not-a-directory");
        std::fs::write(&gone, "x").unwrap();
        let request = Request::new(Some(&gone.join("store.db")), false, None).unwrap();
        let mut result: RunResult = serde_json::from_str(document).unwrap();
        match Keep::lost(&request).keep(&mut result, None) {
            Kept::Rescued(why) => {
                assert!(why.contains("could not be opened again") && why.contains("rtgauge import"), "{why}");
                // (the rescue file this test made, removed)
                let file = why.split("saved to ").nth(1).and_then(|r| r.split(" instead").next()).unwrap();
                std::fs::remove_file(file.trim_matches('\'')).unwrap();
            }
            other => panic!("not rescued: {other:?}"),
        }
    }
}
