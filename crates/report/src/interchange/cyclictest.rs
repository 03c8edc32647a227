//! cyclictest's two result formats, read and written: its `--json` file (rt-tests 2.x: two keys
//! end in a colon, `cmdline:` and `rt_test_version:`; samples beyond `-h` are absent from the
//! histogram; without `-h` there is none) and its histogram output (`-h US`: one row per µs, a
//! column per thread, then `# Total:` (not in every version), `# Min/Avg/Max Latencies:`,
//! `# Histogram Overflows:` and the overflow trailer). Written, they are what OSADL's gnuplot
//! scripts and other cyclictest tooling read.

use super::counts::{count, latency, mean, Counts, Num, MAX_COUNT, MAX_LATENCY_NS};
use super::foreign::{cpu_of, required, Doc, Reading};
use super::{has_flag, option_value, Foreign, ForeignSeries, MAX_SERIES};
use crate::result::{ProbeResult, RunResult};
use serde_json::Value;
use std::io::{BufRead, Write};

/// The most rows `export --format cyclictest-hist` writes: a second in 1 µs rows. Values from
/// there on are counted as overflows, as cyclictest counts those beyond its `-h`.
pub const MAX_ROWS: u64 = 1_000_000;

/// The longest line of histogram output read (1024 threads of 9-digit counts fit many times).
const MAX_LINE: u64 = 1 << 20;

/// The unit of cyclictest's figures: µs, or ns with `--nsecs`.
pub fn unit_ns(command_line: &str) -> u64 {
    if has_flag(command_line, "-N", "--nsecs") {
        1
    } else {
        1000
    }
}

/// A cyclictest `--json` document, its histograms read `how`.
pub fn from_json(doc: &Doc, how: Reading, mtime: &str) -> Result<Foreign, crate::vocab::Error> {
    from_json_text(doc, how, mtime).map_err(crate::vocab::Error::Invalid)
}

/// [`from_json`], its failure as text.
fn from_json_text(doc: &Doc, how: Reading, mtime: &str) -> Result<Foreign, String> {
    // Only cyclictest's own command line tells its options (a file another tool wrote in this
    // format, rtgauge's export among them, holds that tool's).
    let cyclictest = doc
        .cmdline
        .as_deref()
        .and_then(|c| c.split_whitespace().next())
        .is_some_and(|w| w.rsplit('/').next() == Some("cyclictest"));
    let command_line = doc.cmdline.clone().filter(|_| cyclictest).unwrap_or_default();
    let unit = how.unit_ns.unwrap_or(1000);
    let (interval, distance) = intervals(&command_line)?;
    let mut series = Vec::new();
    for (number, t) in doc.threads.iter().flatten() {
        let what = format!("thread {number}");
        let cycles = count(t.cycles.ok_or_else(|| format!("{what} has no cycle count"))?, &format!("{what}: cycles"))?;
        let histogram = t.histogram.as_ref().map(|h| h.counts.clone());
        let in_hist = histogram.as_ref().map_or(0, Counts::total);
        // Without -h, rt-tests writes an empty histogram (or none).
        let histogram = histogram.filter(|_| in_hist > 0 || cycles == 0);
        // Thread N ran at the interval plus N distances (cyclictest's `-d`); without a command
        // line, at an interval the file does not say.
        let own = distance.checked_mul(*number).and_then(|d| d.checked_add(interval)).filter(|&i| i <= MAX_LATENCY_NS);
        let s = ForeignSeries {
            cpu: cpu_of(*number, t, &what)?,
            interval_ns: Some(own.filter(|_| cyclictest).unwrap_or(0)),
            samples: cycles,
            min_ns: Some(latency(required(t.min, "min", &what)?, unit, &format!("{what}: min"))?),
            mean_ns: Some(mean(required(t.avg, "avg", &what)?, unit, &format!("{what}: avg"))?),
            max_ns: Some(latency(required(t.max, "max", &what)?, unit, &format!("{what}: max"))?),
            overflows: match histogram {
                Some(_) => cycles
                    .checked_sub(in_hist)
                    .ok_or_else(|| format!("{what}: its histogram holds {in_hist} samples but it counted {cycles} cycles"))?,
                None => 0,
            },
            histogram,
        };
        s.check(&what, unit)?;
        series.push(s);
    }
    series.sort_by_key(|s| s.cpu);
    let mut f = super::foreign::rt_tests(
        doc,
        mtime,
        ("cyclictest", "cyclictest-json", crate::probe::registry::of_tool("cyclictest")),
        series,
    );
    f.interval_ns = interval;
    f.resolution_ns = unit;
    f.priority = option_value(&command_line, "-p", "--priority").and_then(|p| p.parse().ok());
    f.mlockall = has_flag(&command_line, "-m", "--mlockall");
    if !cyclictest {
        // (cyclictest has no warm-up: with its command line, none is known to have been)
        f.interval_ns = 0;
        f.unknown.extend(["config.policy", "config.priority", "config.mlockall", "config.interval_ns", "config.warmup"]);
    }
    f.notes = notes(&f, option_value(&command_line, "-h", "--histogram"));
    Ok(f)
}

/// The interval of cyclictest's first thread and the distance between its threads' intervals,
/// in ns, from its command line: `-i` (1000 µs by default) and `-d` (500 µs by default; with
/// `-h` every thread runs at the same interval).
fn intervals(command_line: &str) -> Result<(u64, u64), String> {
    let us = |short: &str, long: &str, default: u64, what: &str| -> Result<u64, String> {
        match option_value(command_line, short, long) {
            None => Ok(default * 1000),
            Some(v) => v
                .parse::<u64>()
                .ok()
                .and_then(|v| v.checked_mul(1000))
                .filter(|&ns| ns <= MAX_LATENCY_NS)
                .ok_or_else(|| format!("its command line's {short} is not {what} (0 µs to an hour)")),
        }
    };
    let interval = us("-i", "--interval", 1000, "an interval")?;
    if interval == 0 {
        return Err("its command line's -i is not an interval (1 µs to an hour)".into());
    }
    let same = option_value(command_line, "-h", "--histogram").is_some() || has_flag(command_line, "-H", "--histofall");
    let distance = if same { 0 } else { us("-d", "--distance", 500, "a distance")? };
    Ok((interval, distance))
}

/// What to know about cyclictest's figures once imported.
fn notes(f: &Foreign, hist_limit: Option<&str>) -> Vec<String> {
    let mut notes = vec!["imported from cyclictest, which counts no missed periods: 'missed' is 0 by construction".to_string()];
    let over: u64 = f.series.iter().map(|s| s.overflows).fold(0, u64::saturating_add);
    if f.series.iter().any(|s| s.histogram.is_none()) {
        notes.push("the file has no histogram (cyclictest ran without -h): percentiles are unknown".into());
    } else if over > 0 {
        // (a number: the limit is not quoted from the file)
        let limit = hist_limit.and_then(|h| h.parse::<u64>().ok());
        notes.push(format!(
            "{over} samples lay beyond cyclictest's histogram{} and are absent from it: they are counted at each CPU's \
             maximum, so percentiles that reach them are upper bounds",
            limit.map_or(String::new(), |h| format!(" (-h {h}: {h} µs)"))
        ));
    }
    notes
}

/// The trailer lines of histogram output rtgauge reads, in µs or counts.
const TRAILER: [&str; 5] = ["Total", "Min Latencies", "Avg Latencies", "Max Latencies", "Histogram Overflows"];

/// cyclictest's histogram output, read line by line: one row per µs (ascending), a count per
/// thread, then the trailer. Nothing but the counts per thread is kept.
pub fn parse_hist(input: &mut dyn BufRead, mtime: &str) -> Result<Foreign, crate::vocab::Error> {
    parse_hist_text(input, mtime).map_err(crate::vocab::Error::Invalid)
}

/// [`parse_hist`], its failure as text.
fn parse_hist_text(input: &mut dyn BufRead, mtime: &str) -> Result<Foreign, String> {
    let not_hist = |n: u64| format!("line {n} is not cyclictest histogram output (nor another supported result)");
    let mut counts: Vec<Counts> = Vec::new();
    let mut last_row: Option<u64> = None;
    let mut trailer: [Option<Vec<u64>>; 5] = Default::default();
    let mut raw = Vec::new();
    let mut n = 0u64;
    // Whether every row's last count is the sum of the others (a `-H` summary column).
    let (mut sums_in_last, mut summary_column) = (true, false);
    // `-v`'s samples per thread, and the CPU and interval the run names for each.
    let mut verbose: Vec<Counts> = Vec::new();
    let (mut thread_cpu, mut thread_interval) = (std::collections::BTreeMap::new(), std::collections::BTreeMap::new());
    while let Some(text) = super::read::text_line(input, &mut raw, MAX_LINE, &mut n, "cyclictest histogram output")? {
        // Without -q cyclictest redraws its status lines with the terminal's cursor moves
        // (`ESC [ 4 A`) before them: taken away.
        let unescaped = without_escapes(text);
        let line = unescaped.trim();
        if let Some(rest) = line.strip_prefix('#') {
            let Some((key, values)) = rest.split_once(':') else { continue };
            let Some(k) = TRAILER.iter().position(|t| *t == key.trim()) else { continue };
            let values: Option<Vec<u64>> = values.split_whitespace().map(|v| v.parse().ok()).collect();
            let values = values
                .filter(|v| !v.is_empty() && v.len() <= MAX_SERIES)
                .ok_or_else(|| format!("line {n}: '# {}:' is not followed by a number per thread", TRAILER[k]))?;
            if trailer[k].is_some() {
                return Err(format!("line {n}: a second '# {}:' line", TRAILER[k]));
            }
            trailer[k] = Some(values);
            continue;
        }
        if line.is_empty() || line.starts_with("T:") || line.starts_with("policy:") {
            continue;
        }
        // `-v`: a line per sample, `THREAD: CYCLE: LATENCY` (µs), and what the run says of each
        // thread (`Thread N using cpu C.`, `Thread N Interval: US`).
        if let Some(sample) = verbose_sample(line) {
            let (t, _cycle, us) = sample.ok_or_else(|| format!("line {n}: a -v sample that is not THREAD: CYCLE: LATENCY"))?;
            if t >= MAX_SERIES {
                return Err(format!("line {n}: thread {t}: more than {MAX_SERIES} threads: more than rtgauge imports"));
            }
            if verbose.len() <= t {
                verbose.resize_with(t + 1, Counts::default);
            }
            let ns = latency(Num::U(us), 1000, &format!("line {n}: thread {t}'s sample"))?;
            verbose[t].add(ns, 1).map_err(|e| format!("line {n}, thread {t}: {e}"))?;
            continue;
        }
        if let Some(rest) = line.strip_prefix("Thread ") {
            let (t, what) = rest.split_once(' ').unwrap_or((rest, ""));
            if let Ok(t) = t.parse::<usize>() {
                if let Some(cpu) = what.strip_prefix("using cpu ").and_then(|c| c.trim_end_matches('.').parse::<usize>().ok()) {
                    thread_cpu.insert(t, cpu.min(super::MAX_CPU - 1));
                } else if let Some(i) = what.strip_prefix("Interval: ").and_then(|i| i.trim().parse::<u64>().ok()) {
                    thread_interval.insert(t, i);
                }
                continue;
            }
        }
        if line.starts_with("Using ") || line.starts_with("Max CPUs") || line.starts_with("Online CPUs") {
            continue;
        }
        let cells: Option<Vec<u64>> = line.split_whitespace().map(|c| c.parse().ok()).collect();
        let cells = cells.filter(|c| c.len() >= 2).ok_or_else(|| not_hist(n))?;
        let (us, row) = (cells[0], &cells[1..]);
        if let Some(l) = last_row.filter(|&l| us <= l) {
            return Err(format!("line {n}: row {us} µs after row {l} µs (rows ascend, one per µs)"));
        }
        if trailer.iter().any(Option::is_some) {
            return Err(format!("line {n}: a histogram row after the trailer"));
        }
        last_row = Some(us);
        if counts.is_empty() {
            if row.len() > MAX_SERIES {
                return Err(format!("line {n}: more than {MAX_SERIES} threads: more than rtgauge imports"));
            }
            counts = vec![Counts::default(); row.len()];
        } else if row.len() != counts.len() {
            return Err(format!("line {n} has {} counts where the rows before it have {}", row.len(), counts.len()));
        }
        let ns = latency(Num::U(us), 1000, &format!("line {n}: row {us} µs"))?;
        for (t, &c) in row.iter().enumerate() {
            counts[t].add(ns, c).map_err(|e| format!("line {n}, thread {t}: {e}"))?;
        }
        // (whether the last count could be the others' sum: -H's summary column)
        let (last, others) = row.split_last().unwrap_or((&0, &[]));
        if others.iter().try_fold(0u64, |a, &c| a.checked_add(c)) != Some(*last) {
            sums_in_last = false;
        }
    }
    if !verbose.is_empty() {
        if last_row.is_some() || trailer.iter().any(Option::is_some) {
            return Err("both -v samples and a histogram: give the output of one run with one of them".into());
        }
        return from_samples(verbose, &thread_cpu, &thread_interval, mtime);
    }
    let [mut total, min, avg, mut max, mut over] = trailer;
    // `-H`/`--histofall`: a last column of all threads together, whose Min and Avg lines have no
    // value (there is one fewer) while Total, Max and Overflows have one. Recognised as that
    // column, checked against the threads' and left out: it is no CPU.
    let columns = counts.len();
    let one_fewer = |l: &Option<Vec<u64>>| l.as_ref().is_some_and(|v| v.len() + 1 == columns);
    let summary_said = columns >= 3 && (one_fewer(&min) || one_fewer(&avg));
    let summary_found = columns >= 3 && min.is_none() && avg.is_none() && sums_in_last && last_row.is_some();
    if summary_said || summary_found {
        if !sums_in_last {
            return Err(format!(
                "the last of the {columns} columns is not the sum of the others in every row, yet '# Min Latencies:' has one \
                 value fewer: not cyclictest --histofall output"
            ));
        }
        let threads = columns - 1;
        let sum = |v: &[u64]| v[..threads].iter().try_fold(0u64, |a, &c| a.checked_add(c));
        for (name, line, whole) in [
            ("Total", &total, total.as_ref().and_then(|v| sum(v))),
            ("Max Latencies", &max, max.as_ref().and_then(|v| v[..threads.min(v.len())].iter().copied().max())),
            ("Histogram Overflows", &over, over.as_ref().and_then(|v| sum(v))),
        ] {
            if let Some(v) = line.as_ref().filter(|v| v.len() == columns) {
                if Some(v[threads]) != whole {
                    return Err(format!(
                        "'# {name}:' gives the summary column {} where its threads give {}: not cyclictest --histofall output",
                        v[threads],
                        whole.map_or("no value".to_string(), |w| w.to_string())
                    ));
                }
            }
        }
        counts.truncate(threads);
        for line in [&mut total, &mut max, &mut over] {
            if let Some(v) = line.as_mut().filter(|v| v.len() == columns) {
                v.truncate(threads);
            }
        }
        summary_column = true;
    }
    let threads = if counts.is_empty() {
        max.as_ref()
            .or(min.as_ref())
            .map(Vec::len)
            .ok_or("not cyclictest histogram output: no histogram rows and no '# Max Latencies:' line")?
    } else {
        counts.len()
    };
    counts.resize_with(threads, Counts::default);
    for (name, line) in TRAILER.iter().zip([&total, &min, &avg, &max, &over]) {
        if let Some(v) = line.as_ref().filter(|v| v.len() != threads) {
            return Err(format!("'# {name}:' has {} values for {threads} threads", v.len()));
        }
    }
    let column = |line: &Option<Vec<u64>>, t: usize| line.as_ref().map(|v| v[t]);
    let rows = last_row.map_or(0, |l| l.saturating_add(1));
    let mut series = Vec::new();
    for (t, histogram) in counts.into_iter().enumerate() {
        let what = format!("thread {t}");
        let in_hist = histogram.total();
        let total = match column(&total, t) {
            Some(total) => count(Num::U(total), &format!("{what}: Total"))?,
            None => in_hist,
        };
        if total != in_hist {
            return Err(format!("{what}: '# Total: {total}' but its histogram rows hold {in_hist}"));
        }
        let overflows = count(Num::U(column(&over, t).unwrap_or(0)), &format!("{what}: Histogram Overflows"))?;
        let samples = total
            .checked_add(overflows)
            .filter(|&s| s <= MAX_COUNT)
            .ok_or_else(|| format!("{what}: Total and Histogram Overflows together are beyond what a measurement counts"))?;
        let us = |v: Option<u64>, name: &str| v.map(|v| latency(Num::U(v), 1000, &format!("{what}: {name}"))).transpose();
        let range = histogram.range();
        let s = ForeignSeries {
            cpu: t,
            samples,
            min_ns: us(column(&min, t), "Min Latencies")?.or(range.map(|r| r.0)),
            mean_ns: match column(&avg, t) {
                Some(a) => Some(mean(Num::U(a), 1000, &format!("{what}: Avg Latencies"))?),
                None => histogram.mean(),
            },
            max_ns: us(column(&max, t), "Max Latencies")?.or(range.map(|r| r.1)),
            histogram: Some(histogram),
            overflows,
            interval_ns: None,
        };
        s.check(&what, 1000)?;
        if overflows > 0 && s.max_ns.is_some_and(|m| m < rows.saturating_mul(1000)) {
            return Err(format!(
                "{what}: {overflows} overflows (values of {rows} µs or more) but its maximum is {} µs",
                s.max_ns.unwrap_or(0) / 1000
            ));
        }
        series.push(s);
    }
    // Its output holds the counts and nothing of how they were obtained.
    let unknown =
        vec!["config.policy", "config.priority", "config.mlockall", "config.interval_ns", "config.warmup", "started_at"];
    let mut f = text_output("cyclictest-hist", series, unknown, mtime);
    f.notes = notes(&f, last_row.map(|r| r.saturating_add(1).to_string()).as_deref());
    f.notes.push(
        "cyclictest's histogram output names no CPU, interval, kernel or time: thread N is shown as cpu N, the time is \
         the file's"
            .into(),
    );
    if summary_column {
        f.notes.push(
            "its summary column (-H/--histofall: all threads together) was checked against the threads' and is not counted as \
             a CPU; rtgauge's own 'all' row is made from the threads"
                .into(),
        );
    }
    Ok(f)
}

/// A run read from cyclictest's text output (`format`): its threads' `series`, the fields it
/// does not state (`unknown`), the file's time for the run's; nothing of the system it ran on.
fn text_output(format: &'static str, series: Vec<ForeignSeries>, unknown: Vec<&'static str>, mtime: &str) -> Foreign {
    Foreign::of_text("cyclictest", format, series, unknown, mtime)
}

/// A `-v` sample line (`THREAD: CYCLE: LATENCY`, three numbers): `None` when the line is not
/// of that shape; `Some(None)` when it is but a number does not read.
fn verbose_sample(line: &str) -> Option<Option<(usize, u64, u64)>> {
    let parts: Vec<&str> = line.split(':').map(str::trim).collect();
    if parts.len() != 3 || !parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    Some(match (parts[0].parse(), parts[1].parse(), parts[2].parse()) {
        (Ok(t), Ok(c), Ok(v)) => Some((t, c, v)),
        _ => None,
    })
}

/// cyclictest's `-v` output: every sample of every thread, exact to its µs. Each thread's CPU
/// and interval where the output names them (`Thread N using cpu C.`, `Thread N Interval: US`),
/// else thread N shown as cpu N and the interval unknown.
fn from_samples(
    threads: Vec<Counts>,
    cpus: &std::collections::BTreeMap<usize, usize>,
    intervals: &std::collections::BTreeMap<usize, u64>,
    mtime: &str,
) -> Result<Foreign, String> {
    // cyclictest (rt-tests 2.40) prints each thread's interval plus one distance (`-d`): with
    // `-i 1000`, "Thread 0 Interval: 1500" for a thread that runs at 1000 µs (its cycles and
    // its run time say so). The distance is the step between consecutive threads' printed
    // intervals; with one thread it, and so the interval, is not known.
    let printed: Vec<u64> = intervals.values().copied().collect();
    let steps: Vec<i128> = printed.windows(2).map(|w| i128::from(w[1]) - i128::from(w[0])).collect();
    let distance = match steps.first() {
        Some(&d) if d >= 0 && steps.iter().all(|&s| s == d) && intervals.keys().copied().eq(0..printed.len()) => Some(d as u64),
        _ => None,
    };
    // (every thread's, or none: a thread whose interval cannot be read makes the others' doubtful)
    let derived: Option<std::collections::BTreeMap<usize, u64>> = distance.and_then(|d| {
        intervals
            .iter()
            .map(|(&t, &us)| {
                us.checked_sub(d)
                    .and_then(|us| us.checked_mul(1000))
                    .filter(|&ns| ns > 0 && ns <= MAX_LATENCY_NS)
                    .map(|ns| (t, ns))
            })
            .collect()
    });
    let mut series = Vec::new();
    for (t, samples) in threads.into_iter().enumerate() {
        let total = samples.total();
        if total == 0 {
            continue;
        }
        let range = samples.range();
        let interval_ns = derived.as_ref().and_then(|d| d.get(&t).copied());
        let s = ForeignSeries {
            cpu: cpus.get(&t).copied().unwrap_or(t),
            samples: total,
            min_ns: range.map(|r| r.0),
            mean_ns: samples.mean(),
            max_ns: range.map(|r| r.1),
            histogram: Some(samples),
            overflows: 0,
            interval_ns,
        };
        s.check(&format!("thread {t}"), 1000)?;
        series.push(s);
    }
    let named_cpus = series.iter().all(|s| cpus.values().any(|&c| c == s.cpu));
    let known_intervals = series.iter().all(|s| s.interval_ns.is_some());
    let mut unknown = vec!["config.policy", "config.priority", "config.mlockall", "config.warmup", "started_at"];
    if !known_intervals {
        unknown.push("config.interval_ns");
    }
    let mut f = text_output("cyclictest-verbose", series, unknown, mtime);
    f.notes = notes(&f, None);
    f.notes.push(format!(
        "read from cyclictest's -v output: every sample exactly (to its µs); {}",
        if named_cpus { "each thread's CPU as the output names it" } else { "thread N is shown as cpu N where no CPU is named" }
    ));
    if !intervals.is_empty() {
        f.notes.push(if known_intervals {
            "cyclictest -v prints each thread's interval plus one distance (-d): the intervals are read as printed less the \
             step between consecutive threads'"
                .to_string()
        } else {
            "cyclictest -v prints each thread's interval plus one distance (-d), which one thread's output does not tell: \
             the interval is not known"
                .to_string()
        });
    }
    Ok(f)
}

/// `text` without the terminal's control sequences (`ESC [ … letter`, as cyclictest's status
/// lines carry them without -q).
fn without_escapes(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // parameters, then one final letter
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() || d == '@' || d == '~' {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    std::borrow::Cow::Owned(out)
}

/// The entries of `probe` (its headline series) per CPU.
fn entries<'a>(r: &'a RunResult, probe: &str) -> Vec<&'a ProbeResult> {
    r.probes
        .iter()
        .filter(|p| p.probe == probe && crate::probe::registry::is_headline(&p.probe, p.series.as_deref()) && p.cpu.is_some())
        .collect()
}

/// Counts per µs bucket (values truncated to µs, as cyclictest's) of an entry's histogram.
fn micro_buckets(p: &ProbeResult) -> std::collections::BTreeMap<u64, u64> {
    let mut m = std::collections::BTreeMap::new();
    // A bucket straddling a microsecond's edge (16 992–17 007 ns) holds values of its upper
    // microsecond too: its values lie within the exact minimum and maximum, and so does its row.
    let (least, most) = (p.min_ns.unwrap_or(0) / 1000, p.max_ns.unwrap_or(u64::MAX) / 1000);
    for [lo, _, n] in p.histogram.buckets.triples() {
        let c: &mut u64 = m.entry((lo / 1000).clamp(least, most.max(least))).or_insert(0);
        *c = c.saturating_add(n);
    }
    m
}

/// A run's `probe` as cyclictest's histogram output with `rows` rows (values of `rows` µs or more
/// are overflows; `None`: enough rows for every value, at most [`MAX_ROWS`]), written to `out`
/// row by row.
pub fn write_hist(r: &RunResult, probe: &str, rows: Option<u64>, out: &mut dyn Write) -> Result<(), super::export::Failure> {
    use super::export::Failure;
    if let Some(n) = rows.filter(|&n| n > MAX_ROWS) {
        return Err(Failure::Refused(format!(
            "--rows {n}: at most {MAX_ROWS} rows (1 s in 1 µs rows); larger values are counted as overflows"
        )));
    }
    let ps = entries(r, probe);
    if ps.is_empty() {
        return Err(Failure::Refused(format!("the run has no '{probe}' figures per CPU")));
    }
    let buckets: Vec<_> = ps.iter().map(|p| micro_buckets(p)).collect();
    let top = buckets.iter().filter_map(|b| b.keys().last()).max().copied().unwrap_or(0);
    let rows = rows.unwrap_or(top.saturating_add(1).min(MAX_ROWS));
    out.write_all(b"# Histogram\n")?;
    let mut line = String::new();
    for us in 0..rows {
        line.clear();
        line += &format!("{us:06} ");
        for (i, b) in buckets.iter().enumerate() {
            line += &format!("{}{:06}", if i > 0 { "\t" } else { "" }, b.get(&us).unwrap_or(&0));
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    let sum = |it: &mut dyn Iterator<Item = u64>| it.fold(0u64, u64::saturating_add);
    let in_range = |i: usize| sum(&mut buckets[i].range(..rows).map(|(_, n)| *n));
    let over = |i: usize| sum(&mut buckets[i].range(rows..).map(|(_, n)| *n));
    let mut trailer = |name: &str, width: usize, f: &dyn Fn(usize) -> u64| -> std::io::Result<()> {
        let mut s = format!("# {name}:");
        for i in 0..ps.len() {
            s += &format!(" {:0width$}", f(i));
        }
        s.push('\n');
        out.write_all(s.as_bytes())
    };
    trailer("Total", 9, &in_range)?;
    trailer("Min Latencies", 5, &|i| ps[i].min_ns.unwrap_or(0) / 1000)?;
    trailer("Avg Latencies", 5, &|i| ps[i].mean_ns.map_or(0, |m| (m / 1000.0) as u64))?;
    trailer("Max Latencies", 5, &|i| ps[i].max_ns.unwrap_or(0) / 1000)?;
    trailer("Histogram Overflows", 5, &over)?;
    out.write_all(b"# Histogram Overflow at cycle number:\n")?;
    for (i, _) in ps.iter().enumerate() {
        // rtgauge keeps no cycle numbers of single samples: the count stands for them.
        let n = over(i);
        writeln!(out, "# Thread {i}:{}", if n > 0 { format!(" # {n:05} others") } else { String::new() })?;
    }
    Ok(())
}

/// A run's `probe` as a cyclictest `--json` document (rt-tests 2.x layout, µs).
pub fn write_json(r: &RunResult, probe: &str) -> Result<String, crate::vocab::Error> {
    write_json_text(r, probe).map_err(crate::vocab::Error::Invalid)
}

/// [`write_json`], its failure as text.
fn write_json_text(r: &RunResult, probe: &str) -> Result<String, String> {
    let ps = entries(r, probe);
    if ps.is_empty() {
        return Err(format!("the run has no '{probe}' figures per CPU"));
    }
    let mut threads = serde_json::Map::new();
    for (i, p) in ps.iter().enumerate() {
        let hist: serde_json::Map<String, Value> =
            micro_buckets(p).into_iter().map(|(us, n)| (us.to_string(), n.into())).collect();
        threads.insert(
            i.to_string(),
            serde_json::json!({
                "histogram": hist,
                "cycles": p.samples,
                "min": p.min_ns.unwrap_or(0) / 1000,
                "max": p.max_ns.unwrap_or(0) / 1000,
                "avg": p.mean_ns.map_or(0.0, |m| (m / 10.0).round() / 100.0),
                "cpu": p.cpu,
                "node": 0,
            }),
        );
    }
    let sys = &r.system;
    let doc = serde_json::json!({
        "file_version": 1,
        "cmdline:": super::export::command_line(r),
        "rt_test_version:": format!("rtgauge {}", r.tool_version),
        "start_time": r.started_at,
        "end_time": r.ended_at,
        "return_code": if r.verdict.passed { 0 } else { 1 },
        "sysinfo": {
            "sysname": "Linux", "nodename": sys.hostname, "release": sys.kernel_release,
            "version": sys.kernel_version, "machine": sys.architecture, "realtime": u8::from(sys.preemption.realtime)
        },
        "num_threads": ps.len(),
        "resolution_in_ns": 0,
        "thread": threads,
    });
    Ok(serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimum of exactly 17 µs lies in the bucket 16 992–17 007 ns: its row is 17, not 16
    /// (a row below the minimum is a file `import` refuses).
    #[test]
    fn a_bucket_across_a_microsecond_edge_counts_in_the_row_of_the_values_it_holds() {
        let mut h = crate::result::histogram::new_histogram();
        h.record(17_000).unwrap();
        h.record(25_000).unwrap();
        let stats = crate::aggregate::LatencyStats {
            samples: 2,
            missed: 0,
            warmup_samples: 0,
            warmup_missed: 0,
            handoff_overflows: 0,
            min_ns: Some(17_000),
            mean_ns: Some(21_000.0),
            sum_ns: 42_000,
            percentiles: crate::vocab::percentiles::Values::from_fn(|_| Some(25_000)),
            max_ns: Some(25_000),
            max_at_ns: Some(0),
            bounds: None,
        };
        let p =
            crate::aggregate::probe_result(("timer", None), Some(0), &stats, crate::result::histogram::HistogramData::encode(&h));
        assert_eq!(micro_buckets(&p).into_iter().collect::<Vec<_>>(), vec![(17, 1), (24, 1)]);
    }
}
