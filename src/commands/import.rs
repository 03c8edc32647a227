//! `rtgauge import FILE...`: other tools' results (and rtgauge's own documents) read, checked
//! and understood (`crate::interchange`), then kept in the store. A file is stored once: its
//! run's UUID, made from the file's SHA-256, already in the store names the run it is.

use super::args::ImportArgs;
use crate::report::{self, out};
use crate::store::{self, Store};
use crate::vocab::units::us;
use anyhow::{anyhow, Result};

/// `rtgauge import FILE...`: every file is read and understood before any is stored.
pub fn import(a: &ImportArgs) -> Result<u8> {
    let given = a
        .require
        .iter()
        .map(|t| crate::scenario::require::parse_requirement(t).map_err(|e| anyhow!("--require {e}")))
        .collect::<Result<Vec<_>>>()?;
    let mut runs = a.files.iter().map(|f| crate::interchange::import(f)).collect::<Result<Vec<_>, _>>()?;
    for (file, r) in a.files.iter().zip(&mut runs) {
        judge(r, &given, a.assume_independent).map_err(|why| anyhow!("{}: {why}", report::shown(&file.display().to_string())))?;
    }
    let keep = store::Request::new(a.store.db.as_deref(), false, a.label.as_deref())
        .and_then(|k| k.with_board(a.board.as_deref()))
        .map_err(anyhow::Error::msg)?;
    let Some(location) = keep.location.clone() else {
        return Err(anyhow!("{}", keep.why_not.unwrap_or_else(|| "no store".into())));
    };
    for r in &mut runs {
        name_board(r, keep.board.as_deref());
    }
    let s = Store::open(&location).map_err(|e| anyhow!("{e}"))?;
    // (the store named, where it was given: the command works pasted as it is)
    let hint =
        a.store.db.as_deref().map_or(String::new(), |db| {
            format!(" --db {}", crate::vocab::text::shell_word(&crate::store::Location::of(db).shown()))
        });
    let mut failed = false;
    for (file, r) in a.files.iter().zip(&mut runs) {
        // (with requirements given, each run's verdict is said: a CI gate over imported files)
        let verdict = if given.is_empty() { String::new() } else { format!("; {}", report::shown(&r.verdict.headline())) };
        failed |= !given.is_empty() && !r.verdict.passed;
        let source = r.imported.as_ref().map(|i| i.source.clone());
        let saved = s.save(r, a.label.as_deref(), source.as_deref(), None).map_err(anyhow::Error::msg)?;
        let id = saved.id;
        if saved.already {
            out::text(&format!(
                "{} is already stored as run {id} in {}; not stored again{}. See it with: rtgauge show {id}{hint}\n",
                report::shown(&file.display().to_string()),
                report::shown(&s.shown()),
                // (the stored run keeps the verdict it was first imported with)
                if verdict.is_empty() {
                    String::new()
                } else {
                    format!("{verdict} (by the requirements given now; the stored run keeps its own)")
                }
            ))?;
            continue;
        }
        let what = r
            .imported
            .as_ref()
            .map_or(String::new(), |i| format!("{} {}", i.tool, i.tool_version.as_deref().unwrap_or("(version not recorded)")));
        let worst = r.probes.iter().filter_map(|p| p.max_ns).max().map_or("-".into(), us);
        out::text(&format!(
            "Imported {} ({}, {}, worst case {worst} µs) as run {id} in {}{verdict}; see it with: rtgauge show {id}{hint}\n",
            report::shown(&file.display().to_string()),
            report::shown(&what),
            crate::vocab::Count(r.probes.len() as u64, "CPU"),
            report::shown(&s.shown())
        ))?;
    }
    Ok(u8::from(failed))
}

/// Judges imported run `r` by requirements `given` too (its own, an rtgauge document's, stay),
/// a forecast with an untested assumption relied on only with `assume_independent`. `Err`: a
/// requirement that judges nothing the file holds, with what to do.
fn judge(
    r: &mut crate::result::RunResult,
    given: &[crate::scenario::require::Requirement],
    assume_independent: bool,
) -> Result<(), String> {
    if given.is_empty() && !assume_independent {
        return Ok(());
    }
    let targets: Vec<crate::verdict::Target> = r.probes.iter().map(crate::verdict::Target::of).collect();
    for q in given {
        if let Some(why) = crate::verdict::why_unjudged(q, &targets) {
            return Err(format!("--require '{}': {}", q.text, why.replace("add --measure", "measure")));
        }
    }
    r.config.requirements.extend(given.iter().map(|q| q.text.clone()));
    r.config.assume_independent |= assume_independent;
    let judged = crate::interchange::verdict_of(r)?;
    r.judged(judged);
    Ok(())
}

/// The board of an imported run: `--board`; else the one an rtgauge document names; else the
/// host the file records; else this host's name.
fn name_board(r: &mut crate::result::RunResult, given: Option<&str>) {
    match (&mut r.board, given) {
        (Some(b), Some(name)) => b.name = name.to_string(),
        (Some(_), None) => {}
        (None, _) => {
            let recorded = Some(r.system.hostname.as_str()).filter(|h| !h.is_empty() && *h != "unknown");
            let name = given.map(str::to_string).or_else(|| recorded.map(str::to_string)).unwrap_or_else(this_host);
            r.on_board(crate::audit::board::named(&name));
        }
    }
}

/// This host's name (`unknown` when the system does not say).
fn this_host() -> String {
    crate::audit::read_trim("/proc/sys/kernel/hostname").filter(|h| !h.is_empty()).unwrap_or_else(|| "unknown".into())
}
