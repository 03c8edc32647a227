//! `rtgauge export RUN --format F`: a stored run written as JSON, CSV, JUnit XML, or in
//! cyclictest's or rteval's formats (`crate::interchange::export`), to a file or standard output.

use super::args::ExportArgs;
use super::stored::{existing, load};
use crate::report::json::JsonSink;
use crate::report::out;
use crate::scenario::JsonTarget;
use anyhow::{anyhow, Result};

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
    let r = load(&s, id)?;
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
