//! Where a run's result goes: the summary (standard output, or standard error when the JSON
//! document goes to standard output), the JSON document, and the store — each failure said,
//! none losing the others; a store that fails at the end gets a rescue file instead.

use crate::report::{json::JsonSink, summary};
use crate::result::RunResult;
use crate::store::{self, Store};
use anyhow::Result;
use std::io::Write;

use super::checks::{check_file_size_limit, result_size_estimate};
use super::resolved::Resolved;
use super::warnings::{busy_loop_warnings, load_priority_warnings, once};
use super::{EXIT_FAILED, EXIT_PASSED};
use crate::result::system::SystemInfo;
use crate::scenario::RunPlan;
use anyhow::anyhow;

/// Where the run's result will go, opened and checked before anything runs, and the warnings
/// gathered on the way (said as they are known, kept in the result).
pub struct Outputs {
    sink: Option<JsonSink>,
    store: Option<Store>,
    pub warnings: Vec<String>,
    /// Warnings already said on the screen the summary goes to (both a terminal): not said again.
    said_before: Vec<String>,
}

impl Outputs {
    /// The JSON destination opened, the warnings known before the run said, the store checked
    /// (every page of it, room for the result; a default store out of reach is a warning in the
    /// result) and so is the room for the JSON document.
    /// The board's kernel options are compared with its last stored run's once the store is
    /// open (before measuring).
    pub(super) fn open(run: &mut super::Context) -> Result<Outputs> {
        let mut outputs = Outputs::open_for(&run.plan, &run.resolved, &run.system, &run.keep)?;
        outputs.compare_config(&mut run.board, run.kernel_config.as_ref());
        Ok(outputs)
    }

    fn open_for(plan: &RunPlan, resolved: &Resolved, system: &SystemInfo, keep: &store::Request) -> Result<Outputs> {
        let sink = plan.json.as_ref().map(JsonSink::open).transpose()?;
        let mut warnings = load_priority_warnings(plan, &resolved.probes, &resolved.load_specs, system);
        warnings.extend(busy_loop_warnings(&resolved.probes));
        // A continuous run leaves a CPU it does not measure to its own work, by default the first
        // it may use: said, so that nobody looks for that CPU's figures.
        if plan.cpus.is_none() && plan.continuous.works_while_measuring() && system.allowed_cpus.len() > 1 {
            warnings.push(format!(
                "CPU {} is not measured: a continuous run (--rotate, -D forever, --metrics) leaves it to rtgauge's own work \
                 (keeping the parts, serving the metrics); --cpus chooses the CPUs measured, leaving at least one out",
                system.allowed_cpus[0]
            ));
        }
        let mut warnings = once(warnings);
        for w in &warnings {
            crate::report::out::err_line(&format!("rtgauge: warning: {w}"));
        }
        crate::sys::mem::release_code_pages();
        // The store is checked before anything runs, and written once the threads have stopped.
        let result_bytes = result_size_estimate(resolved);
        if let Some(crate::scenario::JsonTarget::File(path)) = &plan.json {
            // (A device or FIFO has no size to limit.)
            if std::fs::metadata(path).map_or(true, |m| m.is_file()) {
                check_file_size_limit("--json", path, result_bytes)?;
            }
        }
        let said = warnings.len();
        let store = keep.open(result_bytes, &mut warnings).map_err(anyhow::Error::msg)?;
        // What opening a shared store found (it does not answer: where the result will wait) is
        // said now, once, as the warnings before it. (The default store out of reach is said
        // with the summary, as before.)
        if keep.is_shared() {
            for w in &warnings[said..] {
                crate::report::out::err_line(&format!("rtgauge: warning: {w}"));
            }
        }
        // Said on the screen the summary goes to as well (both a terminal): not said again there.
        use std::io::IsTerminal;
        let said_before: Vec<String> =
            if std::io::stdout().is_terminal() && std::io::stderr().is_terminal() { warnings.clone() } else { Vec::new() };
        Ok(Outputs { sink, store, warnings, said_before })
    }

    /// Names in `board` the kernel options that differ from the last run of the same board in
    /// the store (before measuring: the store is open); a store that cannot say is a warning.
    fn compare_config(&mut self, board: &mut crate::result::board::Board, now: Option<&store::KernelOptions>) {
        let (Some(store), Some(now)) = (&self.store, now) else { return };
        match store.kernel_config_before(&board.name) {
            Ok(Some(before)) => {
                board.config_changes =
                    Some(crate::audit::board::config_changes(before.id, before.uuid, &before.options, &now.options));
            }
            Ok(None) => {}
            Err(e) => self.warnings.push(format!("the kernel configuration is not compared with the board's last run: {e}")),
        }
    }

    /// The store, taken for the keeper of a rotated run's parts (given back with `put_store`).
    pub(super) fn take_store(&mut self) -> Option<Store> {
        self.store.take()
    }

    /// The store given back by the keeper (`None`: it was lost with the keeper's thread; the
    /// last part then goes to a rescue file).
    pub(super) fn put_store(&mut self, store: Option<Store>) {
        self.store = store;
    }

    /// The warnings gathered so far, for the result (which keeps each once: see `assemble`).
    pub(super) fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

/// The reporting stage: the summary and the JSON document written, the result kept in the
/// store (or a rescue file); the exit status, or the error that ends the command.
pub(super) fn report_and_keep(mut result: RunResult, outputs: Outputs, run: &super::Context) -> Result<u8> {
    let (keep, kernel_config) = (&run.keep, run.kernel_config.clone());
    let json_on_stdout = outputs.sink.as_ref().is_some_and(JsonSink::is_stdout);
    // The result is kept even when the JSON document could not be written (and the other way
    // round): each failure is said, none loses the other.
    let reported = report(&result, outputs.sink, outputs.store.is_some(), &outputs.said_before);
    crate::sys::mem::release_code_pages();
    match keep_result(&mut result, outputs.store, keep, kernel_config) {
        // Where the summary went.
        // Also under --quiet: the run's id is what a script needs to show, export or compare it.
        Kept::Stored(line) => {
            let _ = say(json_on_stdout, &format!("{line}\n"));
        }
        Kept::Nowhere => {}
        // A store asked for by name that did not get the run: the run did not do what was asked.
        Kept::Rescued(why) if keep.explicit => {
            if let Err(e) = &reported {
                let _ = say(true, &format!("rtgauge: error: {}\n", format!("{e:#}").replace('\n', " ")));
            }
            return Err(anyhow!("{why}"));
        }
        Kept::Rescued(why) => {
            let _ = say(true, &format!("rtgauge: warning: {why}\n"));
        }
        // Nothing lost and nothing to do: the spool delivers it.
        Kept::Spooled(why) => {
            let _ = say(true, &format!("rtgauge: warning: {why}\n"));
        }
    }
    reported
}

/// Writes `text` to standard error (`to_stderr`) or output, a failure ignored: the terminal a
/// run was started from may be gone by its end (SIGHUP: a closed terminal, a dropped ssh
/// connection), and what follows (keeping the result) must still happen.
pub(super) fn say(to_stderr: bool, text: &str) -> std::io::Result<()> {
    if to_stderr {
        let mut err = std::io::stderr().lock();
        err.write_all(text.as_bytes()).and_then(|()| err.flush())
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    }
}

/// Keeps a closed part of a rotated run while measuring goes on: in the store (a shared one
/// through the spool, delivered here; a shared one that did not answer before is tried again,
/// and kept once it answers), else in a rescue file; the sentence that says where.
pub(super) fn keep_part(result: &mut RunResult, store: &mut Option<Store>, keep: &store::Request) -> String {
    let label = keep.label.as_deref();
    if let Some(location) = keep.location.as_ref().filter(|_| keep.is_shared()) {
        let uuid = result.uuid.map(|u| u.to_string()).unwrap_or_default();
        let (file, notes) = match store::spool::keep(result, location, label, None) {
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
            match store::Store::open(location) {
                Ok(s) => *store = Some(s),
                Err(e) => return format!("waits in the spool {} ({e}){notes}", file.display()),
            }
        }
        let Some(s) = store.as_ref() else { unreachable!("opened above") };
        return match store::spool::deliver(s, location, Some(&uuid)) {
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
    match store::rescue(result, beside) {
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

/// Says a closed part in a line on standard error: its place in the series, its span, its
/// worst case and missed periods, its verdict, where it was kept.
pub(super) fn say_part(result: &RunResult, kept: &str) {
    let Some(c) = &result.continuous else { return };
    let hms = |t: &str| t.get(11..19).unwrap_or(t).to_string();
    let worst = result.probes.iter().filter(|p| p.in_worst_case()).filter_map(|p| p.max_ns).max();
    let missed: u64 = result.probes.iter().filter(|p| p.in_worst_case()).map(|p| p.missed).sum();
    let verdict = match (result.verdict.criteria_given, result.verdict.passed) {
        (false, _) => "no criteria",
        (true, true) => "passed",
        (true, false) => "failed",
    };
    let worst = worst.map_or("no value".to_string(), |w| format!("worst {}", crate::vocab::units::Nanos(w)));
    let _ = say(
        true,
        &format!(
            "rtgauge: series {}, part {} ({}–{} UTC): {verdict}\n  {worst}, {missed} missed; {kept}\n",
            c.series.to_string().get(..8).unwrap_or_default(),
            c.index,
            hms(&result.started_at),
            hms(&result.ended_at),
        ),
    );
}

/// Where a run's result was kept.
enum Kept {
    /// In the store: the line that says so.
    Stored(String),
    /// Nowhere, as asked (`--no-store`) or as warned before measuring.
    Nowhere,
    /// The store failed at the end: why, and the rescue file the result went to instead.
    Rescued(String),
    /// The shared store failed at the end: why, and the spool the result waits in.
    Spooled(String),
}

/// Keeps the result in the store, if there is one. A store that cannot be written at the end
/// (locked, full, its temporary directory full, damaged) does not lose the run: it is written
/// to a rescue file (`store::rescue`), which the message names with the command that stores
/// it later.
fn keep_result(
    result: &mut RunResult,
    store: Option<Store>,
    keep: &store::Request,
    kernel_config: Option<store::KernelOptions>,
) -> Kept {
    // A shared store: the run is kept first where nothing can hang, in the spool, then the spool
    // is delivered (the runs that waited before first), within a time limit; a run the server
    // does not take waits on, nothing lost. A server that did not answer before the run is
    // tried again now. Only when no spool can be had is it stored directly.
    let shared = keep.location.as_ref().filter(|_| keep.is_shared());
    let mut spool_failed = String::new();
    if let Some(location) = shared {
        match store::spool::keep(result, location, keep.label.as_deref(), kernel_config.clone()) {
            Ok((file, notes)) => {
                for n in notes {
                    let _ = say(true, &format!("rtgauge: warning: {n}\n"));
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
                let _ = say(true, &format!("rtgauge: warning: {why}\n"));
            }
            return Kept::Nowhere;
        }
    };
    let e = match store.save(result, keep.label.as_deref(), None, kernel_config.clone()) {
        Ok(saved) => {
            if !spool_failed.is_empty() {
                // (never passed over in silence, even when the run is stored directly; a run not
                // stored says it with the rest, below)
                let _ = say(true, &format!("rtgauge: warning: the run was not kept in the spool first{spool_failed}\n"));
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
fn rescue_said(result: &RunResult, beside: Option<std::path::PathBuf>, db: &str, e: &str, keep: &store::Request) -> String {
    match store::rescue(result, beside) {
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

/// The summary goes to stdout unless stdout carries the JSON document; then the document.
/// A summary that could not be written to standard output (a full disk, the reader gone) is an
/// error once the document is written: the command ends with it after the result is kept.
/// `stored`: the run goes to a store too (a JSON reader that went away then costs no rescue file).
fn report(result: &RunResult, sink: Option<JsonSink>, stored: bool, said_before: &[String]) -> Result<u8> {
    let text = summary::render_after(result, said_before);
    let on_stderr = sink.as_ref().is_some_and(JsonSink::is_stdout);
    let said = say(on_stderr, &text);
    if let Some(sink) = sink {
        sink.write_kept(result, stored)?;
    }
    if !on_stderr {
        said.map_err(crate::report::out::OutputError::from)?;
    }
    Ok(if result.verdict.passed { EXIT_PASSED } else { EXIT_FAILED })
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
fn deliver_within(
    store: Option<Store>,
    location: &store::Location,
    result: &RunResult,
    file: &std::path::Path,
    keep: &store::Request,
) -> Kept {
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
        .and_then(|s| store::spool::deliver(&s, &to, Some(&mine)).map_err(String::from));
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
            let _ = say(true, &format!("rtgauge: warning: {n}\n"));
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
fn db_hint(keep: &store::Request) -> String {
    match (&keep.location, store::default_location()) {
        (Some(l), Some(d)) if *l == d => String::new(),
        (Some(l), _) => format!(" --db {}", shell_word(&l.shown())),
        (None, _) => String::new(),
    }
}

use crate::vocab::text::shell_word;
