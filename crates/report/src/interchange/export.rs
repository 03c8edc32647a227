//! `rtgauge export RUN --format F`: a stored run in the form another tool reads — its whole
//! result document (`json`), a table per probe and CPU (`csv`), JUnit XML with one test case per
//! check (requirement and CPU) for Jenkins, GitLab and LAVA (`junit`), or cyclictest's
//! `--json` and histogram output (`cyclictest-json`, `cyclictest-hist`).

use crate::result::{ProbeResult, RunResult};
use crate::vocab::percentiles::REPORTED;
use crate::vocab::text::xml_escape;
use std::fmt::Write as _;
use std::io::Write;

/// The formats `export` writes.
pub const FORMATS: [&str; 6] = ["json", "csv", "junit", "cyclictest-json", "cyclictest-hist", "rteval-xml"];

/// Why an export did not complete: the run cannot be written so (nothing was written), or
/// writing failed.
#[derive(Debug)]
pub enum Failure {
    Refused(String),
    Write(std::io::Error),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Write(e)
    }
}

/// `r` in `format`, written to `out` (the cyclictest histogram row by row: it can be long);
/// `probe` chooses the probe of the cyclictest formats (default: the first), `rows` the
/// histogram's rows (`cyclictest-hist`, at most [`super::cyclictest::MAX_ROWS`]).
pub fn export(r: &RunResult, format: &str, probe: Option<&str>, rows: Option<u64>, out: &mut dyn Write) -> Result<(), Failure> {
    let probe = probe.or(r.probes.first().map(|p| p.probe.as_str())).unwrap_or(crate::probe::registry::of_tool("cyclictest"));
    let text = match format {
        "json" => serde_json::to_string_pretty(r).map(|s| s + "\n").map_err(|e| Failure::Refused(e.to_string()))?,
        "csv" => csv(r),
        "junit" => junit(r),
        "cyclictest-json" => super::cyclictest::write_json(r, probe).map_err(|e| Failure::Refused(e.into()))?,
        "cyclictest-hist" => return super::cyclictest::write_hist(r, probe, rows, out),
        "rteval-xml" => super::rteval::write(r),
        other => return Err(Failure::Refused(format!("--format {other}: not a format; give one of {}", FORMATS.join(", ")))),
    };
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// One row per probe (and series) and CPU, then the combined rows (`cpu` = `all`); values in ns.
/// The command line that produced a run's figures: the other tool's for an imported run (when
/// its file held one), else rtgauge's.
pub(super) fn command_line(r: &RunResult) -> String {
    match r.imported.as_ref().and_then(|i| i.command_line.as_ref()) {
        Some(c) => c.clone(),
        None => r.command_line.join(" "),
    }
}

/// A CSV field as RFC 4180 writes it (quoted where it holds a comma, a quote or a line break),
/// and never read as a formula by a spreadsheet: text a user wrote that starts with `=`, `+`,
/// `-`, `@` or a tab or carriage return gets a `'` before it (OWASP's advice on CSV injection).
fn csv_field(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{text}") } else { text.to_string() };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// A row per probe and CPU (and per probe over all its CPUs), each naming the run it is of: its
/// UUID, board and kernel release in the last columns (the first stay as they were).
fn csv(r: &RunResult) -> String {
    let mut header =
        vec!["probe", "series", "cpu", "samples", "missed", "warmup_samples", "handoff_overflows", "min_ns", "mean_ns"];
    header.extend(REPORTED.iter().map(|q| q.key));
    header.extend(["max_ns", "run_uuid", "board", "kernel_release"]);
    let run = [r.uuid.map_or(String::new(), |u| u.to_string()), csv_field(board_name(r)), csv_field(&r.system.kernel_release)];
    let mut s = header.join(",") + "\n";
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    for p in r.probes.iter().chain(&r.combined) {
        let mut cells = vec![
            p.probe.clone(),
            p.series.clone().unwrap_or_default(),
            p.cpu.map_or("all".into(), |c| c.to_string()),
            p.samples.to_string(),
            p.missed.to_string(),
            p.warmup_samples.to_string(),
            p.handoff_overflows.to_string(),
            opt(p.min_ns),
            p.mean_ns.map_or(String::new(), |m| format!("{m:.1}")),
        ];
        cells.extend(p.percentiles.iter().map(|(_, v)| opt(v)));
        cells.push(opt(p.max_ns));
        cells.extend(run.iter().cloned());
        s += &(cells.join(",") + "\n");
    }
    s
}

/// JUnit XML: a test suite per run, a test case per check (criterion and scope); with no
/// criteria, one test case per probe and CPU that passes when it measured something.
/// The board a run was measured on: its name (`--board`), else its host's.
fn board_name(r: &RunResult) -> &str {
    r.board.as_ref().map_or(r.system.hostname.as_str(), |b| b.name.as_str())
}

fn junit(r: &RunResult) -> String {
    let name =
        format!("rtgauge {} on {}", r.config.probes.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join("+"), board_name(r));
    let mut cases = String::new();
    let mut failures = 0;
    let mut case = |class: &str, test: &str, failure: Option<String>, out: String| {
        let _ = write!(cases, "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">", xml_escape(class), xml_escape(test));
        if let Some(f) = failure {
            failures += 1;
            let _ = write!(cases, "<failure message=\"{}\" type=\"criterion\"/>", xml_escape(&f));
        }
        let _ = writeln!(cases, "<system-out>{}</system-out></testcase>", xml_escape(&out));
    };
    if r.verdict.checks.is_empty() {
        for p in &r.probes {
            let failure = (p.samples == 0).then(|| "nothing was measured".to_string());
            case(&format!("rtgauge.{}", p.label()), &p.scope(), failure, entry_line(p));
        }
    } else {
        for c in &r.verdict.checks {
            let failure = (!c.passed).then(|| format!("{} failed on {}: observed {}", c.expr, c.scope, c.observed));
            case(
                &format!("rtgauge.{}", c.scope.split('/').next().unwrap_or("run")),
                &format!("{} {}", c.expr, c.scope),
                failure,
                format!("observed {}", c.observed),
            );
        }
    }
    let tests = cases.matches("<testcase ").count();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" timestamp=\"{}\" hostname=\"{}\">\n    <properties>\n{}    </properties>\n{cases}  </testsuite>\n</testsuites>\n",
        xml_escape(&name),
        xml_escape(&r.started_at),
        xml_escape(&r.system.hostname),
        properties(r)
    )
}

/// How the run was obtained, as JUnit properties.
fn properties(r: &RunResult) -> String {
    let mut props = vec![
        ("board", board_name(r).to_string()),
        ("host", r.system.hostname.clone()),
        ("run_uuid", r.uuid.map(|u| u.to_string()).unwrap_or_default()),
        ("kernel_release", r.system.kernel_release.clone()),
        ("command_line", r.command_line.join(" ")),
        ("kernel", format!("{} {}", r.system.kernel_release, r.system.kernel_version)),
        ("preemption", r.system.preemption.model.clone()),
        ("status", format!("{:?}", r.status).to_lowercase()),
        ("rtgauge_version", r.tool_version.clone()),
        ("verdict", r.verdict.headline()),
    ];
    if let Some(i) = &r.imported {
        props.push(("imported_from", format!("{} {} ({})", i.tool, i.tool_version.as_deref().unwrap_or("?"), i.source)));
    }
    props.iter().map(|(k, v)| format!("      <property name=\"{k}\" value=\"{}\"/>\n", xml_escape(v))).collect()
}

fn entry_line(p: &ProbeResult) -> String {
    let us = |v: Option<u64>| v.map_or("-".into(), crate::vocab::units::us);
    format!(
        "samples {} missed {} min {} µs p99 {} µs max {} µs",
        p.samples,
        p.missed,
        us(p.min_ns),
        us(p.percentiles.get(99.0).flatten()),
        us(p.max_ns)
    )
}
