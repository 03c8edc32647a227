//! Where a run's result goes: the summary (standard output, or standard error when the JSON
//! document goes to standard output), the JSON document, and the store — each failure said,
//! none losing the others. The store is a `keep::Destination` the command line gave the run
//! (`store::keeper`: the spool, rescue files): the run knows no store.

use crate::keep::{Destination, Keep, Kept};
use crate::report::{json::JsonSink, summary};
use crate::result::RunResult;
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
    /// Where the result is kept (`None` while the keeper of a rotated run's parts has it, or
    /// once it was lost with the keeper's thread).
    destination: Option<Box<dyn Destination>>,
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
        let mut outputs = Outputs::open_for(&run.plan, &run.resolved, &run.system, &*run.keep)?;
        outputs.compare_config(&mut run.board, run.kernel_config.as_ref());
        Ok(outputs)
    }

    fn open_for(plan: &RunPlan, resolved: &Resolved, system: &SystemInfo, keep: &dyn Keep) -> Result<Outputs> {
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
        let destination = keep.open(result_bytes, &mut warnings)?;
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
        Ok(Outputs { sink, destination: Some(destination), warnings, said_before })
    }

    /// Names in `board` the kernel options that differ from the last run of the same board in
    /// the store (before measuring: the store is open); a store that cannot say is a warning.
    fn compare_config(&mut self, board: &mut crate::result::board::Board, now: Option<&crate::result::board::KernelOptions>) {
        let (Some(destination), Some(now)) = (&self.destination, now) else { return };
        match destination.kernel_config_before(&board.name) {
            Ok(Some(before)) => {
                board.config_changes =
                    Some(crate::audit::board::config_changes(before.id, before.uuid, &before.options, &now.options));
            }
            Ok(None) => {}
            Err(e) => self.warnings.push(format!("the kernel configuration is not compared with the board's last run: {e}")),
        }
    }

    /// The destination, taken for the keeper of a rotated run's parts (given back with
    /// `put_destination`).
    pub(super) fn take_destination(&mut self) -> Option<Box<dyn Destination>> {
        self.destination.take()
    }

    /// The destination given back by the keeper (`None`: it was lost with the keeper's
    /// thread; the last part is then kept as when no store answered before measuring).
    pub(super) fn put_destination(&mut self, destination: Option<Box<dyn Destination>>) {
        self.destination = destination;
    }

    /// The warnings gathered so far, for the result (which keeps each once: see `assemble`).
    pub(super) fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

/// The reporting stage: the summary and the JSON document written, the result kept in the
/// store (or a rescue file); the exit status, or the error that ends the command.
pub(super) fn report_and_keep(mut result: RunResult, outputs: Outputs, run: &super::Context) -> Result<u8> {
    // The assembly's code (the forecast's above all) let go before the report's is run: each
    // stage of the end of a run holds only its own code resident (`sys::mem::release_code_pages`).
    crate::sys::mem::release_code_pages();
    let (keep, kernel_config) = (&*run.keep, run.kernel_config.clone());
    let json_on_stdout = outputs.sink.as_ref().is_some_and(JsonSink::is_stdout);
    // The result is kept even when the JSON document could not be written (and the other way
    // round): each failure is said, none loses the other.
    let destination = outputs.destination.unwrap_or_else(|| keep.lost());
    let reported = report(&result, outputs.sink, destination.stores(), &outputs.said_before);
    crate::sys::mem::release_code_pages();
    match destination.keep(&mut result, kernel_config) {
        // Where the summary went.
        // Also under --quiet: the run's id is what a script needs to show, export or compare it.
        Kept::Stored(line) => {
            let _ = say(json_on_stdout, &format!("{line}\n"));
        }
        Kept::Nowhere => {}
        // A store asked for by name that did not get the run: the run did not do what was asked.
        Kept::Rescued(why) if keep.explicit() => {
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
