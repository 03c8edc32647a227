//! An rtgauge result document coming back (`rtgauge import` of an export, or of a run kept in
//! a rescue file), checked as any other file: every entry's figures consistent (min ≤ every
//! percentile ≤ max, percentiles in order, the mean between the extremes, the histogram's
//! buckets ascending and their total equal to the samples less those lost in the hand-off,
//! every CPU's entries adding up to the combined one), the histogram's encoded copy rebuilt
//! from its bucket list (never decoded from the file: a crafted one can claim gigabytes), and
//! the verdict recomputed from the document's own criteria (cycle time, budget, requirements)
//! and figures, as `rtgauge run` decides it: what an RT engineer reads as PASS is rtgauge's
//! judgement of the figures shown beside it, never a word the file says. A verdict that differs
//! from the file's is replaced and said so in the warnings.

use super::counts::MAX_COUNT;
use crate::result::histogram::{HistogramData, ENCODING};
use crate::result::histogram::{HIST_HIGHEST_NS, HIST_LOWEST_NS, HIST_SIGFIG};
use crate::result::imported::{Imported, UNKNOWABLE};
use crate::result::{ProbeResult, RunResult};
use crate::vocab::units::us;

/// The longest time a document may state: a run is at most 366 days (see the run's limits),
/// and an offset or a time within it no more.
const MAX_SPAN_NS: u64 = 366 * 86_400 * 1_000_000_000;
/// The largest monotonic clock reading (a century of uptime).
const MAX_CLOCK_NS: u64 = 100 * 366 * 86_400 * 1_000_000_000;

fn at_most(what: &str, v: u64, max: u64) -> Result<(), String> {
    if v > max {
        return Err(format!("{what} is {v}, beyond anything a run measures (at most {max})"));
    }
    Ok(())
}

/// Every count and time of the document in the range a run can give it.
fn check_ranges(r: &RunResult) -> Result<(), String> {
    at_most("monotonic_start_ns", r.monotonic_start_ns, MAX_CLOCK_NS)?;
    at_most("measured_ns", r.measured_ns, MAX_SPAN_NS)?;
    if let Some(res) = r.imported.as_ref().and_then(|i| i.resolution_ns) {
        if !(1..=crate::result::imported::MAX_RESOLUTION_NS).contains(&res) {
            return Err("imported.resolution_ns is not a resolution (1 ns to 1 ms)".into());
        }
    }
    let c = &r.config;
    // (0 is an interval not known: only a run imported from a file that did not say it)
    if c.interval_ns == 0 && !crate::result::imported::unknown(r, "config.interval_ns") {
        return Err("config.interval_ns is 0".into());
    }
    at_most("config.interval_ns", c.interval_ns, MAX_SPAN_NS)?;
    for (what, v) in [
        ("config.cycle_time_ns", c.cycle_time_ns),
        ("config.duration_ns", c.duration_ns),
        ("config.window_ns", c.window_ns),
        ("config.dl_runtime_ns", c.dl_runtime_ns),
        ("config.dl_deadline_ns", c.dl_deadline_ns),
    ] {
        if let Some(v) = v {
            at_most(what, v, MAX_SPAN_NS)?;
        }
    }
    at_most("config.loops", c.loops.unwrap_or(0), MAX_COUNT)?;
    for (i, pc) in c.probes.iter().enumerate() {
        at_most(&format!("config.probes[{i}].interval_ns"), pc.interval_ns, MAX_SPAN_NS)?;
        at_most(&format!("config.probes[{i}].periods"), pc.periods, MAX_COUNT)?;
        at_most(&format!("config.probes[{i}].warmup_periods"), pc.warmup_periods, MAX_COUNT)?;
    }
    let entries = r.probes.iter().chain(&r.combined).chain(r.phases.iter().flat_map(|ph| ph.probes.iter().chain(&ph.combined)));
    for p in entries {
        let what = |field: &str| format!("{}: {field}", name(p));
        for (field, v) in [
            ("missed", p.missed),
            ("warmup_samples", p.warmup_samples),
            ("warmup_missed", p.warmup_missed),
            ("handoff_overflows", p.handoff_overflows),
            ("page_faults", p.page_faults.unwrap_or(0)),
        ] {
            at_most(&what(field), v, MAX_COUNT)?;
        }
        for (k, v) in &p.counts {
            at_most(&what(&format!("counts.{}", crate::vocab::shown(k))), *v, MAX_COUNT)?;
        }
        at_most(&what("max_at_ns"), p.max_at_ns.unwrap_or(0), MAX_SPAN_NS)?;
    }
    Ok(())
}

/// The earliest start an imported run may have: the clock's epoch (1970-01-01T00:00:00Z), where
/// a board without a real-time clock starts until its clock is set; nothing is measured before.
const EARLIEST_UNIX_S: u64 = 0;
/// How far a document's wall-clock times may lie past this machine's clock (a board's clock a
/// little ahead).
const FUTURE_SLACK_S: u64 = 86_400;

/// The allowance between the wall clock's span of a run and what its monotonic clock measured:
/// the times are written to the millisecond, and the wall clock may be stepped while a run
/// measures (NTP); 1 s, and 1 % of a long run.
fn slack_ns(span_ns: u64) -> u64 {
    1_000_000_000 + span_ns / 100
}

/// Every time the document states consistent with every other: `started_at` and `ended_at`
/// RFC 3339 times, in order, neither before 1970 (the clock's epoch) nor (beyond a day) after
/// this machine's clock; what was measured within their span; each entry's worst
/// case at a time within it; each timeline's windows within it, its columns of one length and
/// its totals equal to the entry's counts, its largest value the entry's maximum, in the
/// window of `max_at_ns`. The first inconsistency is named.
fn check_times(r: &RunResult) -> Result<(), String> {
    let when = |field: &str, t: &str| -> Result<u64, String> {
        let parsed = chrono::DateTime::parse_from_rfc3339(t)
            .map_err(|_| format!("{field} '{}' is not an RFC 3339 time", crate::vocab::shown(t)))?;
        let secs = parsed.timestamp();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if secs < EARLIEST_UNIX_S as i64 {
            return Err(format!("{field} {} is before 1970, the clock's epoch: no run measured then", crate::vocab::shown(t)));
        }
        if secs as u64 > now + FUTURE_SLACK_S {
            return Err(format!("{field} {} is in the future (this machine's clock says otherwise)", crate::vocab::shown(t)));
        }
        Ok(secs as u64 * 1_000_000_000 + u64::from(parsed.timestamp_subsec_nanos()))
    };
    let (start, end) = (when("started_at", &r.started_at)?, when("ended_at", &r.ended_at)?);
    if end < start {
        return Err(format!("ended_at {} is before started_at {}", r.ended_at, r.started_at));
    }
    // A run imported from another tool's file that did not state when it ran or how long (its
    // file's time stands for both; `imported.unknown` says so) has no span to hold the rest to.
    let unknown = |f: &str| r.imported.as_ref().is_some_and(|i| i.unknown.iter().any(|u| u == f));
    if unknown("started_at") || unknown("measured_ns") {
        return Ok(());
    }
    let span = end - start;
    let within = span + slack_ns(span);
    // (the warm-up is not added: a part of a rotated run, or a run stopped in its warm-up, did
    // not spend what its configuration plans)
    if r.measured_ns > within {
        return Err(format!(
            "measured_ns {} is longer than the run's span from started_at to ended_at ({})",
            crate::vocab::units::Nanos(r.measured_ns),
            crate::vocab::units::Nanos(span)
        ));
    }
    let phased = r
        .phases
        .iter()
        .enumerate()
        .flat_map(|(i, ph)| ph.probes.iter().chain(&ph.combined).map(move |p| (p, format!("phase {i}: "))));
    for (p, at) in r.probes.iter().chain(&r.combined).map(|p| (p, String::new())).chain(phased) {
        if let Some(t) = p.max_at_ns {
            if t > within {
                return Err(format!(
                    "{at}{}: max_at_ns {} is past the run's end ({} from started_at to ended_at)",
                    name(p),
                    crate::vocab::units::Nanos(t),
                    crate::vocab::units::Nanos(span)
                ));
            }
        }
        if let Some(tl) = &p.timeline {
            check_timeline(p, tl, within).map_err(|e| format!("{at}{}: timeline: {e}", name(p)))?;
        }
    }
    Ok(())
}

/// One entry's timeline against its figures and the run's span (`within`, slack included).
fn check_timeline(p: &ProbeResult, tl: &crate::result::timeline::TimelineData, within: u64) -> Result<(), String> {
    let n = tl.count.len();
    if [tl.missed.len(), tl.max_ns.len(), tl.p99_ns.len()].iter().any(|&l| l != n) {
        return Err(format!(
            "its columns differ in length (count {n}, missed {}, max_ns {}, p99_ns {})",
            tl.missed.len(),
            tl.max_ns.len(),
            tl.p99_ns.len()
        ));
    }
    if n == 0 {
        return Ok(());
    }
    if tl.window_ns == 0 {
        return Err("window_ns is 0".into());
    }
    let end = (n as u64).checked_mul(tl.window_ns).and_then(|w| w.checked_add(tl.start_ns));
    // (the last window may run past the end of the run: it is cut by it)
    if end.is_none_or(|e| e - tl.window_ns > within) {
        return Err(format!(
            "{n} windows of {} from {} reach past the run's end",
            crate::vocab::units::Nanos(tl.window_ns),
            crate::vocab::units::Nanos(tl.start_ns)
        ));
    }
    let total = |column: &[u64], what: &str| -> Result<u64, String> {
        column
            .iter()
            .try_fold(0u64, |sum, &v| sum.checked_add(v).filter(|&t| t <= MAX_COUNT))
            .ok_or_else(|| format!("its {what} add up to more than {MAX_COUNT} (2^53), beyond anything a run counts"))
    };
    let (count, missed) = (total(&tl.count, "counts")?, total(&tl.missed, "missed periods")?);
    if count != p.samples {
        return Err(format!("its counts add up to {count}, the entry's samples are {}", p.samples));
    }
    if missed != p.missed {
        return Err(format!("its missed periods add up to {missed}, the entry's are {}", p.missed));
    }
    if let Some(i) = (0..n).find(|&i| tl.p99_ns[i] > tl.max_ns[i] || (tl.count[i] == 0 && tl.max_ns[i] != 0)) {
        return Err(format!("window {i}'s p99 is above its maximum, or it has a value and no count"));
    }
    let largest = tl.max_ns.iter().copied().max().unwrap_or(0);
    if let Some(max) = p.max_ns.filter(|_| p.samples > 0) {
        // A value lost in the hand-off is in the entry's extremes (the thread's own) but in no
        // window: the timeline may then fall short of the maximum, never exceed it.
        if largest > max || (largest != max && p.handoff_overflows == 0) {
            return Err(format!("its largest value is {largest} ns, the entry's maximum {max} ns"));
        }
        if let Some(t) = p.max_at_ns.filter(|_| p.handoff_overflows == 0) {
            // (the window of the period whose deadline is t, as the collector counts it)
            let window = t.max(1).checked_sub(1 + tl.start_ns).map(|d| (d / tl.window_ns) as usize);
            if window.is_none_or(|w| w >= n || tl.max_ns[w] != max) {
                return Err(format!(
                    "max_at_ns {} falls in {}, not in a window whose largest value is the maximum {max} ns",
                    crate::vocab::units::Nanos(t),
                    window.filter(|&w| w < n).map_or("no window".to_string(), |w| format!("window {w}"))
                ));
            }
        }
    }
    Ok(())
}

/// Whether `r` is a document rtgauge could have written: every count and time in range, its
/// times consistent with each other, each entry's figures with its histogram, every CPU's
/// entries adding up to the combined one. The first inconsistency is named. What `import`
/// checks, and what a run copied between stores (`push`) is held to.
pub fn check(r: &RunResult) -> Result<(), crate::vocab::Error> {
    check_text(r).map_err(crate::vocab::Error::Invalid)
}

/// [`check`], its failure as text.
fn check_text(r: &RunResult) -> Result<(), String> {
    check_ranges(r)?;
    check_times(r)?;
    // Each entry on its own, then how they add up, then each entry's percentiles against its
    // histogram (the first inconsistency named is the plainest).
    for p in r.probes.iter().chain(&r.combined) {
        check_entry(p, "")?;
    }
    for (i, phase) in r.phases.iter().enumerate() {
        for p in phase.probes.iter().chain(&phase.combined) {
            check_entry(p, &format!("phase {i}: "))?;
        }
        check_combined(&phase.probes, &phase.combined, &format!("phase {i}: "))?;
    }
    check_combined(&r.probes, &r.combined, "")?;
    let all = r.probes.iter().chain(&r.combined).map(|p| (p, String::new())).chain(
        r.phases
            .iter()
            .enumerate()
            .flat_map(|(i, ph)| ph.probes.iter().chain(&ph.combined).map(move |p| (p, format!("phase {i}: ")))),
    );
    for (p, at) in all {
        if let (true, Some(min), Some(max)) = (p.histogram.total_count > 0, p.min_ns, p.max_ns) {
            check_against_histogram(p, &format!("{at}{}", name(p)), min, max)?;
        }
    }
    Ok(())
}

/// [`check`] for a run kept in a store: a run imported from another tool's file holds that
/// tool's placeholders where its file said nothing (an interval of 0, ...), so only its times
/// are checked; a run rtgauge measured is checked whole.
pub fn check_stored(r: &RunResult) -> Result<(), crate::vocab::Error> {
    check_stored_text(r).map_err(crate::vocab::Error::Invalid)
}

/// [`check_stored`], its failure as text.
fn check_stored_text(r: &RunResult) -> Result<(), String> {
    match &r.imported {
        Some(i) if i.tool != "rtgauge" => check_times(r),
        _ => Ok(check(r)?),
    }
}

/// `r`, read from `source` (SHA-256 `sha256`), checked and marked as imported.
pub fn import(r: RunResult, source: &str, sha256: String) -> Result<RunResult, crate::vocab::Error> {
    import_text(r, source, sha256).map_err(crate::vocab::Error::Invalid)
}

/// [`import`], its failure as text.
fn import_text(mut r: RunResult, source: &str, sha256: String) -> Result<RunResult, String> {
    check(&r)?;
    for p in r.probes.iter_mut().chain(r.combined.iter_mut()).chain(r.phases.iter_mut().flat_map(|ph| {
        let (a, b) = (&mut ph.probes, &mut ph.combined);
        a.iter_mut().chain(b.iter_mut())
    })) {
        p.histogram = rebuilt(&p.histogram).map_err(|e| format!("{}: {e}", name(p)))?;
        // Which percentiles the histogram resolves: counted anew, never the file's word.
        p.percentiles = p.percentiles.counted(p.histogram.total_count);
    }
    recompute_verdict(&mut r)?;
    // What the file says it was imported from before is a claim: it is kept as a warning; the
    // fields it says its own source left unstated stay unknown (a claim of knowing less).
    let mut unknown = Vec::new();
    // (a document of a file rtgauge imported before keeps that file's resolution: its values
    // are still the other tool's)
    let mut resolution_ns = Some(1);
    if let Some(before) = r.imported.take() {
        unknown = UNKNOWABLE.iter().filter(|u| before.unknown(u)).map(|u| u.to_string()).collect();
        resolution_ns = Some(before.resolution());
        r.warnings.push(format!(
            "the file says it holds a run imported from {} ({}); what rtgauge read is an rtgauge result document",
            before.tool.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(40).collect::<String>(),
            before.format.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(40).collect::<String>()
        ));
    }
    // A run keeps its identity wherever its document goes: a document rtgauge wrote names its
    // run's UUID (a run written with --json and stored too, or rescued to a file, is stored
    // once however it arrives); one of an older version, without it, is identified by the
    // file's content (the same file imported twice is stored once).
    let uuid = r.uuid.or_else(|| crate::result::content_uuid_of_hex(&sha256));
    r.identified(uuid);
    // A password a document's command line holds (an older rtgauge's, a hand-made file) is not
    // kept or shown.
    let command_line = crate::vocab::secrets::scrub_command_line(r.command_line.clone());
    r.ran_as(command_line);
    r.imported_as(Imported {
        resolution_ns,
        tool: "rtgauge".into(),
        tool_version: Some(r.tool_version.clone()),
        format: "rtgauge-json".into(),
        source: source.into(),
        sha256: Some(sha256),
        command_line: Some(r.command_line.join(" ")),
        unknown,
    });
    Ok(r)
}

/// An entry as an error names it: `timer/cpu0`, `timer/all`.
fn name(p: &ProbeResult) -> String {
    format!("{}/{}", p.label(), p.scope())
}

/// Whether one entry's figures are ones rtgauge could have written.
fn check_entry(p: &ProbeResult, at: &str) -> Result<(), String> {
    let what = format!("{at}{}", name(p));
    let h = &p.histogram;
    if h.encoding != ENCODING {
        return Err(format!("{what}: a histogram encoded otherwise than {ENCODING}"));
    }
    if h.lowest_ns != HIST_LOWEST_NS || h.significant_digits != HIST_SIGFIG || !(2..=HIST_HIGHEST_NS).contains(&h.highest_ns) {
        return Err(format!(
            "{what}: a histogram of another range or precision than rtgauge's ({HIST_LOWEST_NS} ns to 1 h, {HIST_SIGFIG} digits)"
        ));
    }
    let mut total = 0u64;
    let mut last: Option<u64> = None;
    let mut range: Option<(u64, u64)> = None;
    for [lo, hi, n] in h.buckets.triples() {
        if last.is_some_and(|l| lo <= l) {
            return Err(format!("{what}: its histogram's buckets are not in ascending order"));
        }
        if lo > h.highest_ns {
            return Err(format!("{what}: its histogram holds a value beyond its own range"));
        }
        last = Some(lo);
        total = total
            .checked_add(n)
            .filter(|&t| t <= MAX_COUNT)
            .ok_or_else(|| format!("{what}: its histogram holds more than a measurement counts"))?;
        if n > 0 {
            // (the highest value of the first bucket, the lowest of the last)
            range = Some(range.map_or((hi, lo), |(first_hi, _)| (first_hi, lo)));
        }
    }
    if total != h.total_count {
        return Err(format!("{what}: its histogram's buckets hold {total} samples but it says {}", h.total_count));
    }
    if p.samples > MAX_COUNT {
        return Err(format!("{what}: {} samples, beyond what a measurement counts (at most 2^53)", p.samples));
    }
    if let (Some(min), Some(max)) = (p.min_ns, p.max_ns) {
        if min > max {
            return Err(format!("{what}: its minimum ({} µs) is above its maximum ({} µs)", us(min), us(max)));
        }
    }
    if p.samples > 0 && p.histogram.total_count > 0 && (p.min_ns.is_none() || p.max_ns.is_none()) {
        return Err(format!("{what}: {} samples but no minimum or maximum", p.samples));
    }
    let mut previous: Option<(f64, u64)> = None;
    for (q, v) in p.percentiles.iter() {
        let (q, Some(v)) = (q.q, v) else { continue };
        if total == 0 {
            return Err(format!("{what}: a p{q} without a histogram to take it from"));
        }
        if p.min_ns.is_some_and(|min| v < min) || p.max_ns.is_some_and(|max| v > max) {
            return Err(format!(
                "{what}: its p{q} ({} µs) is outside its minimum and maximum ({} to {} µs)",
                us(v),
                p.min_ns.map_or("-".into(), us),
                p.max_ns.map_or("-".into(), us)
            ));
        }
        if let Some((pq, pv)) = previous.filter(|&(_, pv)| v < pv) {
            return Err(format!("{what}: its p{q} ({} µs) is below its p{pq} ({} µs)", us(v), us(pv)));
        }
        previous = Some((q, v));
    }
    if let (Some(m), Some(min), Some(max)) = (p.mean_ns, p.min_ns, p.max_ns) {
        // (the mean is written to 0.1 ns)
        if !m.is_finite() || m + 0.1 < min as f64 || m > max as f64 + 0.1 {
            return Err(format!("{what}: its mean is outside its minimum and maximum ({} to {} µs)", us(min), us(max)));
        }
    }
    if total > 0 {
        // Every sample that reached the collector is in the histogram; those lost in the
        // hand-off are counted apart (an imported file's samples beyond its tool's histogram
        // are in it, at the maximum).
        if total.checked_add(p.handoff_overflows) != Some(p.samples) {
            return Err(format!(
                "{what}: its histogram holds {total} samples and {} were lost in the hand-off, but it counts {}",
                p.handoff_overflows, p.samples
            ));
        }
        // The extremes are exact (lost samples included); the histogram's values lie between.
        let (first_hi, last_lo) = range.unwrap_or((0, 0));
        if let Some(min) = p.min_ns.filter(|&min| min > first_hi) {
            return Err(format!("{what}: its histogram holds values below its minimum ({} µs)", us(min)));
        }
        if let Some(max) = p.max_ns.filter(|&max| max < last_lo) {
            return Err(format!("{what}: its histogram holds values of {} µs, above its maximum ({} µs)", us(last_lo), us(max)));
        }
    }
    Ok(())
}

/// The percentiles are the histogram's (as rtgauge takes them: `aggregate::percentile`, the
/// bucket's value clamped to the exact extremes): a percentile edited apart from the histogram
/// beside it is refused, so a verdict recomputed from the figures is the histogram's too.
fn check_against_histogram(p: &ProbeResult, what: &str, min: u64, max: u64) -> Result<(), String> {
    let h = &p.histogram;
    let mut hist = hdrhistogram::Histogram::<u64>::new_with_bounds(h.lowest_ns, h.highest_ns, h.significant_digits)
        .map_err(|_| format!("{what}: a histogram of bounds rtgauge does not write"))?;
    for [lo, _, count] in h.buckets.triples() {
        hist.record_n(lo, count).map_err(|_| format!("{what}: its histogram holds a value beyond its own range"))?;
    }
    for (q, v) in p.percentiles.iter() {
        let (q, Some(v)) = (q.q, v) else { continue };
        let taken = crate::aggregate::percentile(&hist, q, min, max);
        if v != taken {
            return Err(format!("{what}: its p{q} ({} µs) is not its histogram's ({} µs)", us(v), us(taken)));
        }
    }
    Ok(())
}

/// Every CPU's entries of a probe (and series) must add up to its combined entry.
fn check_combined(per_cpu: &[ProbeResult], combined: &[ProbeResult], at: &str) -> Result<(), String> {
    for c in combined {
        let parts: Vec<&ProbeResult> =
            per_cpu.iter().filter(|p| p.probe == c.probe && p.series == c.series && p.cpu.is_some()).collect();
        if parts.is_empty() {
            continue;
        }
        let what = format!("{at}{}", name(c));
        let samples = parts.iter().try_fold(0u64, |s, p| s.checked_add(p.samples));
        if samples != Some(c.samples) {
            return Err(format!(
                "{what}: {} samples, but its CPUs' add up to {}",
                c.samples,
                samples.map_or("more than 2^64".into(), |s| s.to_string())
            ));
        }
        let max = parts.iter().filter_map(|p| p.max_ns).max();
        if max != c.max_ns {
            return Err(format!("{what}: its maximum is not the largest of its CPUs'"));
        }
        let min = parts.iter().filter_map(|p| p.min_ns).min();
        if min != c.min_ns {
            return Err(format!("{what}: its minimum is not the smallest of its CPUs'"));
        }
    }
    Ok(())
}

/// The histogram rebuilt from its bucket list (checked by [`check_entry`]) and encoded anew.
fn rebuilt(h: &HistogramData) -> Result<HistogramData, String> {
    let mut hist = hdrhistogram::Histogram::<u64>::new_with_bounds(h.lowest_ns, h.highest_ns, h.significant_digits)
        .map_err(|_| "a histogram of bounds rtgauge does not write".to_string())?;
    for [lo, _, n] in h.buckets.triples() {
        hist.record_n(lo, n).map_err(|_| "its histogram holds a value beyond its own range".to_string())?;
    }
    Ok(HistogramData::encode(&hist))
}

/// The verdict, as `rtgauge run` decides it from the document's criteria and figures (and the
/// analysis of the run, made again).
fn recompute_verdict(r: &mut RunResult) -> Result<(), String> {
    let v = verdict_of(r)?;
    if (v.passed, v.criteria_given, v.checks.len()) != (r.verdict.passed, r.verdict.criteria_given, r.verdict.checks.len()) {
        r.warnings.push(format!(
            "the file's verdict is not the one its figures and criteria give: rtgauge's is kept ({})",
            v.headline()
        ));
    }
    r.judged(v);
    Ok(())
}

/// The verdict rtgauge gives `r` by its figures and the criteria its configuration holds (its
/// requirements, cycle time and budget), its analyses made again first; `Err`: a criterion it
/// cannot read.
pub fn verdict_of(r: &mut RunResult) -> Result<crate::result::verdict::Verdict, crate::vocab::Error> {
    verdict_of_text(r).map_err(crate::vocab::Error::Invalid)
}

/// [`verdict_of`], its failure as text.
fn verdict_of_text(r: &mut RunResult) -> Result<crate::result::verdict::Verdict, String> {
    let criteria = crate::verdict::Criteria::of_config(&r.config)?;
    // The analysis a requirement may judge is rtgauge's own, made again from the figures.
    r.unanalysed();
    crate::forecast::analyse(r);
    Ok(crate::verdict::judge(r, &criteria))
}
