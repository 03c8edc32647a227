//! What the store's commands print: `rtgauge list` (a line per run, or JSON), `rtgauge show`
//! (a stored run's summary, or its whole document), `rtgauge delete`, and the way in and out:
//! `rtgauge import` (other tools' files into the store) and `rtgauge export`; `rtgauge report`.

use crate::cli::{DeleteArgs, ExportArgs, ImportArgs, ListArgs, ReportArgs, ShowArgs};
use crate::report::json::{Asked, JsonSink};
use crate::report::out;
use crate::scenario::JsonTarget;
use crate::store::{self, Filter, Store};
use crate::vocab::units::us;
use anyhow::{anyhow, Result};

/// The store named by `--db` (or the default), which must exist, opened for reading only
/// (`show`, `export`, `report`, `compare`: a read-only store or another user's serves).
pub(super) fn existing(db: Option<&std::path::Path>) -> Result<Store> {
    found(db, store::open_existing(db).map_err(anyhow::Error::msg)?)
}

/// The store named by `--db` (or the default), which must exist, opened for writing (`delete`).
fn existing_for_writing(db: Option<&std::path::Path>) -> Result<Store> {
    found(db, store::open_existing_for_writing(db).map_err(anyhow::Error::msg)?)
}

/// The store, or an error naming where none was found.
fn found(db: Option<&std::path::Path>, store: Option<Store>) -> Result<Store> {
    match store {
        Some(s) => Ok(s),
        None => Err(anyhow!(
            "no store at {}: 'rtgauge run' keeps its runs there; give another with --db PATH",
            db.map(std::path::Path::to_path_buf).or_else(store::default_path).unwrap_or_default().display()
        )),
    }
}

/// `rtgauge list`.
pub fn list(a: &ListArgs) -> Result<u8> {
    let since = a.since.as_deref().map(since_rfc3339).transpose()?;
    let filter = Filter { host: a.host.clone(), label: a.label.clone(), since };
    let rows = match store::open_existing(a.store.db.as_deref()).map_err(anyhow::Error::msg)? {
        Some(s) => s.list(&filter).map_err(anyhow::Error::msg)?,
        None => Vec::new(),
    };
    if a.json {
        out::json(&rows)?;
        return Ok(0);
    }
    if rows.is_empty() {
        let matching = if a.host.is_some() || a.label.is_some() || a.since.is_some() { " that match" } else { "" };
        out::text(&format!("no runs stored{matching}\n"))?;
        return Ok(0);
    }
    let cells = rows
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                r.started_at.chars().take(19).collect::<String>().replace('T', " "),
                r.label.clone().unwrap_or_default(),
                r.host.clone(),
                r.kernel.clone(),
                r.preemption.clone(),
                r.scenario.clone().unwrap_or_default(),
                if r.imported_from.is_some() { format!("{} (imported)", r.probes) } else { r.probes.clone() },
                r.worst_ns.map_or("-".into(), us),
                if r.status == "complete" { r.verdict.clone() } else { format!("{} ({})", r.verdict, r.status) },
            ]
        })
        .collect();
    let header = ["id", "date (UTC)", "label", "host", "kernel", "preemption", "scenario", "probes", "worst µs", "verdict"];
    out::text(&super::summary::table(&header, 8..9, cells))?;
    Ok(0)
}

/// `--since`: a date, a time, or an age (`7d`) before now; as RFC 3339 for comparing.
fn since_rfc3339(v: &str) -> Result<String> {
    let bad = || anyhow!("--since {v}: not a date (2026-11-01), a time (2026-11-01T08:00:00Z) or an age (7d, 12h)");
    // Dates and times compare as text with the stored RFC 3339 times (UTC), whatever the year: a
    // 32-bit system's clock ends in 2038.
    let b = v.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() == 10 && digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10) {
        let (m, d) = (v[5..7].parse::<u32>().unwrap_or(0), v[8..10].parse::<u32>().unwrap_or(0));
        return if (1..=12).contains(&m) && (1..=31).contains(&d) { Ok(format!("{v}T00:00:00.000Z")) } else { Err(bad()) };
    }
    if let Ok(age) = humantime::parse_duration(v) {
        // Counted from the epoch in checked arithmetic: an age reaching before 1970 (`1000000d`)
        // or beyond any date is an error, not a panic.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| anyhow!("--since {v}: the system clock is set before 1970; set it, or give a date"))?;
        let before_1970 =
            || anyhow!("--since {v}: reaches back before 1970, before any run; give a shorter age or a date, e.g. 2026-11-01");
        let t = now.checked_sub(age).ok_or_else(before_1970)?;
        let t = i64::try_from(t.as_secs())
            .ok()
            .and_then(|s| chrono::DateTime::from_timestamp(s, t.subsec_nanos()))
            .ok_or_else(bad)?;
        return Ok(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    }
    // A time is parsed without the system clock's type (chrono counts in 64 bits): with an
    // offset (RFC 3339), or without one, read as UTC.
    let utc = chrono::DateTime::parse_from_rfc3339(v).map(|t| t.with_timezone(&chrono::Utc)).or_else(|_| {
        ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
            .iter()
            .find_map(|f| chrono::NaiveDateTime::parse_from_str(v, f).ok())
            .map(|t| t.and_utc())
            .ok_or_else(bad)
    })?;
    Ok(utc.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// `rtgauge show RUN`.
pub fn show(a: &ShowArgs) -> Result<u8> {
    let s = existing(a.store.db.as_deref())?;
    let id = s.resolve(&a.run).map_err(anyhow::Error::msg)?;
    let r = s.load(id).map_err(anyhow::Error::msg)?;
    if a.json {
        out::json(&r)?;
    } else {
        out::text(&super::summary::render(&r))?;
    }
    Ok(0)
}

/// `rtgauge delete RUN`.
pub fn delete(a: &DeleteArgs) -> Result<u8> {
    let s = existing_for_writing(a.store.db.as_deref())?;
    let id = s.resolve(&a.run).map_err(anyhow::Error::msg)?;
    s.delete(id).map_err(anyhow::Error::msg)?;
    out::text(&format!("deleted run {id} from {}\n", s.path().display()))?;
    Ok(0)
}

/// `rtgauge export RUN --format F`: the format, the rows and the destination are checked before
/// the run is read; a file is written whole or not at all; standard output is written as the
/// export goes (a histogram of a million rows is never held whole), and a reader that stops
/// reading (`| head`) ends it quietly.
pub fn export(a: &ExportArgs) -> Result<u8> {
    use crate::interchange::cyclictest::MAX_ROWS;
    use crate::interchange::export::{export, Failure, FORMATS};
    if !FORMATS.contains(&a.format.as_str()) {
        return Err(anyhow!("--format {}: not a format; give one of {}", a.format, FORMATS.join(", ")));
    }
    match a.rows {
        Some(0) => return Err(anyhow!("--rows 0: give at least one row, e.g. --rows 400 (as cyclictest -h 400)")),
        Some(n) if n > MAX_ROWS => {
            return Err(anyhow!(
                "--rows {n}: at most {MAX_ROWS} rows (1 s in 1 µs rows); larger values are counted as overflows, e.g. --rows 400"
            ))
        }
        _ => {}
    }
    let target = a.output.clone().map_or(JsonTarget::Stdout, JsonTarget::File);
    let sink = JsonSink::open(&target).map_err(|e| anyhow!("{}", format!("{e:#}").replace("--json", "-o")))?;
    let s = existing(a.store.db.as_deref())?;
    let id = s.resolve(&a.run).map_err(anyhow::Error::msg)?;
    let r = s.load(id).map_err(anyhow::Error::msg)?;
    if let Some(p) = a.probe.as_deref().filter(|p| !r.probes.iter().any(|e| e.probe == *p)) {
        let has: Vec<&str> = r.config.probes.iter().map(|c| c.name.as_str()).collect();
        return Err(anyhow!("--probe {p}: run {id} has no such probe (it has {})", has.join(", ")));
    }
    let failed = |e: Failure, to: &str| match e {
        Failure::Refused(why) => anyhow!("run {id}: {why}"),
        Failure::Write(e) => anyhow!("writing {} to {to} failed: {e}", a.format),
    };
    if sink.is_stdout() {
        out::check_open()?;
        if a.format != "cyclictest-hist" {
            // (bounded, as below) written with its control characters escaped.
            let mut text = Vec::new();
            export(&r, &a.format, a.probe.as_deref(), a.rows, &mut text).map_err(|e| failed(e, "memory"))?;
            out::export(&a.format, &String::from_utf8_lossy(&text))?;
            return Ok(0);
        }
        // Numbers and words of rtgauge's own only: streamed as it goes.
        let mut w = std::io::BufWriter::new(std::io::stdout().lock());
        let written = export(&r, &a.format, a.probe.as_deref(), a.rows, &mut w)
            .and_then(|()| std::io::Write::flush(&mut w).map_err(Failure::Write));
        return match written {
            Ok(()) => Ok(0),
            Err(Failure::Write(e)) => Err(anyhow::Error::from(out::OutputError::from(e))),
            Err(e) => Err(failed(e, "standard output")),
        };
    }
    // (bounded: at most MAX_ROWS rows)
    let mut text = Vec::new();
    export(&r, &a.format, a.probe.as_deref(), a.rows, &mut text).map_err(|e| failed(e, "memory"))?;
    sink.write_bytes(&text).map_err(|e| anyhow!("writing {} failed: {e}", a.format))?;
    Ok(0)
}

/// `rtgauge import FILE...`: every file is read and understood before any is stored.
pub fn import(a: &ImportArgs) -> Result<u8> {
    let mut runs =
        a.files.iter().map(|f| crate::interchange::import(f)).collect::<Result<Vec<_>, String>>().map_err(anyhow::Error::msg)?;
    let keep = store::Request::new(a.store.db.as_deref(), false, a.label.as_deref()).map_err(anyhow::Error::msg)?;
    let Some(path) = keep.path.clone() else {
        return Err(anyhow!("{}", keep.why_not.unwrap_or_else(|| "no store".into())));
    };
    let s = Store::open(&path).map_err(|e| anyhow!("{e}"))?;
    for (file, r) in a.files.iter().zip(&mut runs) {
        let source = r.imported.as_ref().map(|i| i.source.clone());
        let id = s.save(r, a.label.as_deref(), source.as_deref()).map_err(anyhow::Error::msg)?;
        let what = r
            .imported
            .as_ref()
            .map_or(String::new(), |i| format!("{} {}", i.tool, i.tool_version.as_deref().unwrap_or("(version not recorded)")));
        let worst = r.probes.iter().filter_map(|p| p.max_ns).max().map_or("-".into(), us);
        out::text(&format!(
            "Imported {} ({}, {}, worst case {worst} µs) as run {id} in {} ('rtgauge show {id}').\n",
            super::shown(&file.display().to_string()),
            super::shown(&what),
            crate::vocab::Count(r.probes.len() as u64, "CPU"),
            super::shown(&s.path().display().to_string())
        ))?;
    }
    Ok(0)
}

/// The runs named on the command line, each once, in the order given.
pub(super) fn named_runs(s: &Store, runs: &[String]) -> Result<Vec<super::html::Named>> {
    let mut out: Vec<super::html::Named> = Vec::new();
    for run in runs {
        let id = s.resolve(run).map_err(anyhow::Error::msg)?;
        if out.iter().any(|n| n.id == id) {
            continue;
        }
        let result = s.load(id).map_err(anyhow::Error::msg)?;
        out.push(super::html::Named { id, label: s.label(id).map_err(anyhow::Error::msg)?, result });
    }
    Ok(out)
}

/// Opens `--html FILE` (`-`: standard output) before anything is read (a destination that
/// cannot be written is an error before any work).
pub(super) fn html_sink(path: Option<&std::path::Path>) -> Result<Option<JsonSink>> {
    let asked = Asked { option: "--html", example: "report.html" };
    let target =
        |p: &std::path::Path| if p == std::path::Path::new("-") { JsonTarget::Stdout } else { JsonTarget::File(p.into()) };
    path.map(|p| JsonSink::open_as(&target(p), asked)).transpose()
}

/// Writes an HTML page where `--html` said: the file whole (and says so on standard error),
/// or standard output.
pub(super) fn write_page(sink: JsonSink, page: &str, what: &str, path: &std::path::Path) -> Result<()> {
    if sink.is_stdout() {
        out::bytes(page.as_bytes())?;
        return Ok(());
    }
    sink.write_bytes(page.as_bytes()).map_err(|e| anyhow!("writing {what} to {} failed: {e}", path.display()))?;
    crate::report::out::err_line(&format!("Wrote {what} to {}.", path.display()));
    Ok(())
}

/// `rtgauge report RUN...`: the summary with text histograms, or `--html FILE` and/or
/// `--png DIR`. Every destination and the font are checked before anything is drawn.
pub fn report(a: &ReportArgs) -> Result<u8> {
    let sink = html_sink(a.html.as_deref())?;
    let png = png_out(&a.png)?;
    let s = existing(a.store.db.as_deref())?;
    let runs = named_runs(&s, &a.runs)?;
    if let (Some(sink), Some(path)) = (sink, &a.html) {
        let page = super::html::render(&runs).map_err(anyhow::Error::msg)?;
        write_page(sink, &page, &format!("the report of {} run(s)", runs.len()), path)?;
    }
    if let Some(out) = &png {
        wrote_images(out.write(&super::html::plots(&runs).map_err(anyhow::Error::msg)?).map_err(anyhow::Error::msg)?);
    }
    if a.html.is_none() && png.is_none() {
        for n in &runs {
            out::text(&format!("=== {}\n", super::shown(&n.name())))?;
            out::text(&super::summary::render(&n.result))?;
            out::text(&super::summary::text_histograms(&n.result))?;
        }
    }
    Ok(0)
}

/// `--png DIR [--font FILE]`, checked: the directory writable, a font found.
pub(super) fn png_out(a: &crate::cli::PngArgs) -> Result<Option<super::png::PngOut>> {
    a.png.as_deref().map(|dir| super::png::PngOut::prepare(dir, a.font.as_deref()).map_err(anyhow::Error::msg)).transpose()
}

/// Says which images were written.
pub(super) fn wrote_images(files: Vec<std::path::PathBuf>) {
    let dir = files.first().and_then(|f| f.parent()).map(|d| d.display().to_string()).unwrap_or_default();
    let names: Vec<String> = files.iter().filter_map(|f| f.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
    if names.is_empty() {
        crate::report::out::err_line("No plot to draw: nothing was measured in these runs.");
    } else {
        crate::report::out::err_line(&format!("Wrote {} image(s) to {dir}: {}.", names.len(), names.join(", ")));
    }
}

#[cfg(test)]
mod tests {
    use super::since_rfc3339;

    /// On a 32-bit system (armv7) the system clock's type ends in 2038: a full date-time past it
    /// was refused as "not a date".
    #[test]
    fn since_takes_dates_and_times_past_2038_on_every_system() {
        assert_eq!(since_rfc3339("2999-01-01").unwrap(), "2999-01-01T00:00:00.000Z");
        assert_eq!(since_rfc3339("2999-01-01T08:00:00Z").unwrap(), "2999-01-01T08:00:00.000Z");
        assert_eq!(since_rfc3339("2999-01-01T08:00:00+02:00").unwrap(), "2999-01-01T06:00:00.000Z");
        assert_eq!(since_rfc3339("2999-01-01T08:00:00.25").unwrap(), "2999-01-01T08:00:00.250Z");
        assert_eq!(since_rfc3339("2026-11-01 08:00:00").unwrap(), "2026-11-01T08:00:00.000Z");
        for bad in ["2999-13-01", "yesterday", "2026-11-01T25:00:00Z", ""] {
            assert!(since_rfc3339(bad).is_err(), "{bad}");
        }
    }
}
