//! `rtgauge restore`, and what every command that changes the system does first
//! ([`recover_killed_run`]): put back what a killed run left changed (its tuning journal) and
//! remove what it left running (its loads' cgroup, its trace instances).

use super::Command;
use crate::report::{self, out};

/// What every command that changes the system does first (see [`super::recovers_first`]): a run
/// killed with its guardian may have left settings changed, and its loads' cgroup with whatever
/// a load left running in it; they are put back and removed, and said (by `restore` as its
/// output). Returns what was put back, for `restore`.
pub fn before(command: &Command) -> Result<Option<crate::tuning::journal::Restored>, crate::vocab::Error> {
    before_text(command).map_err(crate::vocab::Error::System)
}

/// [`before`], its failure as text.
fn before_text(command: &Command) -> Result<Option<crate::tuning::journal::Restored>, String> {
    if !super::recovers_first(command) {
        return Ok(None);
    }
    let restoring = matches!(command, Command::Restore);
    let recovered = recover_killed_run(restoring)?;
    if let Some(r) = recovered.as_ref().filter(|_| !restoring) {
        say_recovered(r);
    }
    Ok(recovered)
}

/// Restores what a run killed with its guardian left changed, and removes its loads' cgroups
/// and trace instances. Only `restore` says which cgroups it removed (`say_removed`): a run that
/// starts while another was just killed may meet that cgroup while its guardian is still
/// removing it, and must not print a line about it. A file at the journal's path that is not
/// rtgauge's own is an error, and is left untouched.
fn recover_killed_run(say_removed: bool) -> Result<Option<crate::tuning::journal::Restored>, String> {
    let recovered = crate::tuning::journal::recover()?;
    let mut removed = crate::load::contain::remove_stale();
    // And the trace instances such a run left tracing (tracefs is one for the system).
    removed.extend(crate::trace::remove_stale());
    if say_removed {
        removed.iter().for_each(|line| out::err_line(&format!("rtgauge: {line}")));
    }
    Ok(recovered)
}

/// Says, before another command, what was put back (`restore` says it as its output).
fn say_recovered(r: &crate::tuning::journal::Restored) {
    for line in r.notes.iter().chain(&r.done) {
        out::err_line(&format!("rtgauge: restored: {line}"));
    }
    for line in &r.failed {
        out::err_line(&format!("rtgauge: warning: could not restore: {line}"));
    }
}

/// `rtgauge restore`: says what was put back (done before any command runs, see `main`), or
/// that there was nothing to, or that a live run holds the journal.
pub fn restore(recovered: Option<&crate::tuning::journal::Restored>) -> anyhow::Result<u8> {
    match recovered {
        Some(r) => {
            let mut text = String::new();
            for line in r.notes.iter().chain(&r.done) {
                text += &format!("{}\n", report::shown(line));
            }
            for line in &r.failed {
                text += &format!("could not restore: {}\n", report::shown(line));
            }
            text +=
                &format!("Restored what a killed run had left changed ({} put back, {} failed).\n", r.done.len(), r.failed.len());
            out::text(&text)?;
            Ok(if r.failed.is_empty() { 0 } else { 2 })
        }
        None => {
            let live: Vec<String> = crate::tuning::journal::locations()
                .into_iter()
                .filter(|p| p.exists())
                .map(|p| format!("{} is held by a running rtgauge, which restores it when it ends", p.display()))
                .collect();
            if live.is_empty() {
                out::text("Nothing to restore: no run left settings changed.\n")?;
            } else {
                out::text(&format!("Nothing to restore now: {}.\n", live.join("; ")))?;
            }
            Ok(0)
        }
    }
}
