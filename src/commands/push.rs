//! `rtgauge push [RUN...] --to URL|PATH`: stored runs copied, whole, into another store — a
//! board's runs into the lab's PostgreSQL, or back into a file — and the runs waiting in the
//! spool for that store delivered. A run keeps its UUID wherever it goes, so pushing twice
//! stores once, and two boards (or two pushes) at once never store a run twice.

use super::args::PushArgs;
use super::list::since_rfc3339;
use super::stored::existing;
use crate::report::{self, out};
use crate::store::{self, Filter, Location, RunRow, Store};
use anyhow::{anyhow, Result};
use std::collections::HashSet;

/// `rtgauge push`: the source read and the runs chosen first (bad input changes nothing, no
/// destination is made for it), then the spool for the destination delivered, then the runs
/// copied.
pub fn push(a: &PushArgs) -> Result<u8> {
    let since = a.since.as_deref().map(since_rfc3339).transpose()?;
    if a.board.as_deref() == Some("") {
        return Err(anyhow!("--board '' is empty; give the board's name, e.g. rpi4-lab-3"));
    }
    let to_location = Location::of(&a.to);
    let from_location = a.store.db.as_deref().map(Location::of).or_else(store::default_location);
    // The destination is the source (RTGAUGE_DB names the lab's database, say): only its spool
    // is delivered; there is nothing else to copy.
    let same = from_location.as_ref().is_some_and(|f| same_store(f, &to_location));
    if same && (!a.runs.is_empty() || a.store.db.is_some()) {
        return Err(anyhow!(
            "--to names the store the runs are read from ({}); give another store with --to, or the source with --db",
            to_location.shown()
        ));
    }
    // The source, when there is one to copy from (none is no error when only the spool is to
    // be delivered), and the runs it gives.
    let from = if same {
        None
    } else {
        match store::open_existing(a.store.db.as_deref()).map_err(anyhow::Error::msg)? {
            Some(s) => Some(s),
            None if a.runs.is_empty() && a.store.db.is_none() => None,
            None => Some(existing(a.store.db.as_deref())?),
        }
    };
    let filter = Filter { board: a.board.clone(), since, ..Filter::default() };
    let rows = match &from {
        Some(from) => chosen(from, &a.runs, &filter)?,
        None => Vec::new(),
    };
    // Spools set aside as damaged before (by a push or a run): said by each push, until removed.
    let aside = store::spool::set_aside_files(&to_location);
    if !aside.is_empty() {
        let them = if aside.len() == 1 { "it" } else { "them" };
        crate::report::out::err_line(&format!(
            "rtgauge: warning: set aside as damaged earlier: {}; what could not be read is still there: look at {them} \
             (sqlite3), then remove {them}",
            aside.iter().map(|a| report::shown(&a.display().to_string()).into_owned()).collect::<Vec<_>>().join(", "),
        ));
    }
    let waiting = store::spool::file_for(&to_location).is_some_and(|f| f.exists());
    if rows.is_empty() && !waiting {
        out::text(&format!(
            "Nothing to copy to {}: no run matches, and none waits in the spool.\n",
            report::shown(&to_location.shown())
        ))?;
        return Ok(0);
    }
    // The destination: made if it is a file that is not there yet, only now that there is
    // something to write.
    let to = Store::open(&to_location).map_err(|e| anyhow!("{e}"))?;
    let delivered = store::spool::deliver(&to, &to_location, None).map_err(anyhow::Error::msg)?;
    // A damaged spool (or runs in it that cannot be read) is said, and makes the push fail once
    // everything that could be delivered and copied is.
    for n in &delivered.damaged {
        crate::report::out::err_line(&format!("rtgauge: warning: {}", report::shown(n)));
    }
    let status = if delivered.damaged.is_empty() { 0 } else { 1 };

    if let Some(why) = &delivered.stopped {
        return Err(anyhow!(
            "{} of the spool {} not delivered to {}: {why}; rtgauge push --to {} again delivers {} ({} delivered now)",
            crate::vocab::Count(delivered.left as u64, "run"),
            delivered.file.as_ref().map(|f| f.display().to_string()).unwrap_or_default(),
            to.shown(),
            crate::vocab::text::shell_word(&to.shown()),
            if delivered.left == 1 { "it" } else { "them" },
            delivered.runs.len()
        ));
    }
    let spool_lines = delivered.said();
    let Some(from) = from else {
        say_done(&to, &[], 0, &spool_lines)?;
        return Ok(status);
    };
    // What the destination has already is not read again (a run is there once, by its UUID).
    let there: HashSet<String> =
        to.list(&Filter::default()).map_err(anyhow::Error::msg)?.into_iter().filter_map(|r| r.uuid).collect();
    let mut copied = Vec::new();
    let mut already = 0usize;
    for row in &rows {
        if row.uuid.as_ref().is_some_and(|u| there.contains(u)) {
            already += 1;
            continue;
        }
        // Held to what an import is held to: a document edited in the store is not carried on.
        let not_copied = |e: store::StoreError| {
            anyhow!("run {} was not copied to {}: {e}; the runs before it were ({})", row.id, to.shown(), copied_list(&copied))
        };
        let (mut r, kernel_config) = store::read_run(&from, row).map_err(not_copied)?;
        crate::interchange::check_document(&r)
            .map_err(|e| not_copied(store::StoreError::Refused(format!("its document is inconsistent ({e})"))))?;
        let saved = to.save(&mut r, row.label.as_deref(), row.imported_from.as_deref(), kernel_config).map_err(not_copied)?;
        if saved.already {
            already += 1;
        } else {
            copied.push((row.id, saved.id));
        }
    }
    say_done(&to, &copied, already, &spool_lines)?;
    Ok(status)
}

/// Whether two locations are the same store (the same file, or the same URL without password).
fn same_store(a: &Location, b: &Location) -> bool {
    match (a, b) {
        (Location::File(x), Location::File(y)) => match (std::fs::metadata(x), std::fs::metadata(y)) {
            (Ok(m), Ok(n)) => {
                std::os::unix::fs::MetadataExt::dev(&m) == std::os::unix::fs::MetadataExt::dev(&n)
                    && std::os::unix::fs::MetadataExt::ino(&m) == std::os::unix::fs::MetadataExt::ino(&n)
            }
            _ => x == y,
        },
        (Location::Postgres(_), Location::Postgres(_)) => store::spool::same_destination(a, b),
        _ => false,
    }
}

/// The runs to copy, oldest first: those named (each once), or every run that passes `filter`.
fn chosen(from: &Store, runs: &[String], filter: &Filter) -> Result<Vec<RunRow>> {
    let all = from.list(filter).map_err(anyhow::Error::msg)?;
    if runs.is_empty() {
        return Ok(all);
    }
    let mut ids = Vec::new();
    for run in runs {
        let id = from.resolve(run).map_err(anyhow::Error::msg)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let picked: Vec<RunRow> = all.into_iter().filter(|r| ids.contains(&r.id)).collect();
    if picked.len() < ids.len() {
        return Err(anyhow!("a run named is not among the runs --board and --since leave; give the runs, or the filters, alone"));
    }
    Ok(picked)
}

/// "run 3 → 41", "runs 3 → 41, 4 → 42", at most 6 pairs written ("… and 94 more").
fn copied_list(copied: &[(i64, i64)]) -> String {
    if copied.is_empty() {
        return "none".into();
    }
    let pair = |(a, b): &(i64, i64)| format!("{a} → {b}");
    let mut pairs: Vec<String> = copied.iter().take(5).map(pair).collect();
    if copied.len() == 6 {
        pairs.push(pair(&copied[5]));
    } else if copied.len() > 6 {
        pairs.push(format!("… and {} more", copied.len() - 5));
    }
    format!("{} {}", if copied.len() == 1 { "run" } else { "runs" }, pairs.join(", "))
}

/// Says what was copied where.
fn say_done(to: &Store, copied: &[(i64, i64)], already: usize, spool_lines: &str) -> Result<()> {
    let location = to.shown();
    let shown = report::shown(&location);
    if copied.is_empty() && already == 0 && !spool_lines.is_empty() {
        out::text(&format!("{}\n", spool_lines.trim_start()))?;
        return Ok(());
    }
    let mut text = match copied.len() {
        0 => format!("No run copied to {shown}"),
        n => format!("Copied {} to {shown} ({})", crate::vocab::Count(n as u64, "run"), copied_list(copied)),
    };
    if already > 0 {
        text += &format!("; {} there already", crate::vocab::Count(already as u64, "run"));
    }
    text += ".";
    text += spool_lines;
    out::text(&format!("{text}\n"))?;
    Ok(())
}
