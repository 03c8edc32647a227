//! oslat's text output, what it prints on standard output (rt-tests 1.10 to 2.x, with `-q` or
//! without, `-z`, `-b`, `-B`): without `-q` its settings first (`Total runtime:`, `CPU list:`,
//! ...), then a column per core: `Core:`, `Counter Freq:`, a line per bucket `NNN (us): c0 c1 ...`
//! (the last one `(including overflows)`: from there on, open-ended), `Minimum:`, `Average:`,
//! `Maximum:`, `Max-Min:` and `Duration:`. Read as its `--json` file is: a bucket labelled N µs
//! is kept at N µs, the open-ended last bucket counted beyond the histogram (at the maximum).

use super::counts::{count, latency, mean, Counts, Num};
use super::{Foreign, ForeignSeries, MAX_SERIES};
use std::io::BufRead;

/// The longest line read (4096 cores of 12-digit counts fit).
const MAX_LINE: u64 = 1 << 17;

/// Whether `first` (the file's first bytes) starts as oslat's text output does.
pub fn is_oslat(first: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&first[..first.len().min(64)]);
    text.trim_start().starts_with("oslat V")
}

/// What a summary line (`Minimum:`, ...) holds: a number per core, then its unit in brackets.
fn numbers<'a>(values: &'a str, what: &str, n: u64) -> Result<Vec<&'a str>, String> {
    let v: Vec<&str> = values.split_whitespace().take_while(|w| !w.starts_with('(')).collect();
    if v.is_empty() || v.len() > MAX_SERIES {
        return Err(format!("line {n}: '{what}:' is not followed by a number per core"));
    }
    Ok(v)
}

/// Reads oslat's text output from `input`; the run's times are the file's (`mtime`).
pub fn parse(input: &mut dyn BufRead, mtime: &str) -> Result<Foreign, crate::vocab::Error> {
    parse_text(input, mtime).map_err(crate::vocab::Error::Invalid)
}

/// [`parse`], its failure as text.
fn parse_text(input: &mut dyn BufRead, mtime: &str) -> Result<Foreign, String> {
    let mut raw = Vec::new();
    let mut n = 0u64;
    let mut version: Option<String> = None;
    let mut cores: Option<Vec<usize>> = None;
    // Per bucket line: its label in µs, the counts per core, and whether it is the open-ended last.
    let mut buckets: Vec<(u64, Vec<u64>, bool)> = Vec::new();
    let mut summary: std::collections::BTreeMap<&'static str, Vec<String>> = Default::default();
    while let Some(text) = super::read::text_line(input, &mut raw, MAX_LINE, &mut n, "oslat output")? {
        let line = text.trim();
        if let Some(v) = line.strip_prefix("oslat V") {
            if version.is_some() {
                return Err(format!("line {n}: a second 'oslat V' line: give the output of one run"));
            }
            version = Some(v.trim().to_string());
            continue;
        }
        if version.is_none() && !line.is_empty() {
            return Err(format!("line {n}: oslat's output starts with its 'oslat V' line"));
        }
        let Some((key, values)) = line.split_once(':') else { continue };
        let key = key.trim();
        if key == "Core" {
            if cores.is_some() {
                return Err(format!("line {n}: a second 'Core:' line: give the output of one run"));
            }
            let c: Option<Vec<usize>> =
                numbers(values, key, n)?.iter().map(|v| v.parse().ok().filter(|&c| c < super::MAX_CPU)).collect();
            cores = Some(c.ok_or_else(|| format!("line {n}: 'Core:' is not followed by a CPU number per core"))?);
            continue;
        }
        if let Some(label) = key.strip_suffix("(us)").map(str::trim) {
            let Some(c) = &cores else { return Err(format!("line {n}: a bucket before the 'Core:' line")) };
            let us: u64 = label
                .parse()
                .ok()
                .filter(|_| label.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| format!("line {n}: bucket '{label}' is not a number of µs"))?;
            latency(Num::U(us), 1000, &format!("line {n}: bucket {us} µs"))?;
            if buckets.last().is_some_and(|(last, _, open)| *open || *last >= us) {
                return Err(format!("line {n}: bucket {us} µs does not follow the one before in order"));
            }
            let v = numbers(values, "a bucket", n)?;
            if v.len() != c.len() {
                return Err(format!("line {n}: bucket {us} µs has {} counts for {} cores", v.len(), c.len()));
            }
            let counts = v
                .iter()
                .map(|w| {
                    let c = w.parse::<u64>().map_err(|_| format!("line {n}: bucket {us} µs: '{w}' is not a count"))?;
                    count(Num::U(c), &format!("line {n}: bucket {us} µs"))
                })
                .collect::<Result<Vec<u64>, String>>()?;
            buckets.push((us, counts, values.contains("(including overflows)")));
            continue;
        }
        let known = ["Minimum", "Average", "Maximum", "Duration"];
        if let Some(k) = known.iter().find(|k| **k == key) {
            if cores.is_none() {
                return Err(format!("line {n}: '{key}:' before the 'Core:' line"));
            }
            if summary.insert(k, numbers(values, key, n)?.iter().map(|s| s.to_string()).collect()).is_some() {
                return Err(format!("line {n}: a second '{key}:' line: give the output of one run"));
            }
        }
    }
    let Some(cores) = cores else { return Err("no 'Core:' line: not oslat output (run it to the end)".into()) };
    for k in ["Minimum", "Average", "Maximum", "Duration"] {
        match summary.get(k) {
            None => return Err(format!("no '{k}:' line: the output ends before oslat's summary")),
            Some(v) if v.len() != cores.len() => return Err(format!("'{k}:' has {} values for {} cores", v.len(), cores.len())),
            Some(_) => {}
        }
    }
    if buckets.is_empty() {
        return Err("no bucket lines ('NNN (us): ...'): not oslat's histogram".into());
    }
    let open_from = buckets.iter().find(|b| b.2).map(|b| b.0);
    let mut series = Vec::new();
    let mut duration_s: f64 = 0.0;
    for (i, &cpu) in cores.iter().enumerate() {
        let what = format!("core {cpu}");
        if series.iter().any(|s: &ForeignSeries| s.cpu == cpu) {
            return Err(format!("core {cpu} is named twice on the 'Core:' line"));
        }
        let mut h = Counts::default();
        let mut open = 0u64;
        for (us, counts, is_open) in &buckets {
            if *is_open {
                open = counts[i];
            } else {
                h.add(latency(Num::U(*us), 1000, &format!("{what}: bucket {us} µs"))?, counts[i])
                    .map_err(|e| format!("{what}: {e}"))?;
            }
        }
        let samples = h
            .total()
            .checked_add(open)
            .filter(|&s| s <= super::counts::MAX_COUNT)
            .ok_or_else(|| format!("{what}: its histogram holds more than a measurement counts"))?;
        if samples == 0 {
            return Err(format!("{what}: its buckets count no loop at all"));
        }
        let figure = |k: &str| summary[k][i].as_str();
        let whole = |k: &str| -> Result<u64, String> {
            let v: u64 = figure(k).parse().map_err(|_| format!("{what}: '{k}:' {} is not a number of µs", figure(k)))?;
            latency(Num::U(v), 1000, &format!("{what}: {k}"))
        };
        let avg: f64 = figure("Average").parse().map_err(|_| format!("{what}: 'Average:' is not a number of µs"))?;
        let d: f64 = figure("Duration").parse().map_err(|_| format!("{what}: 'Duration:' is not a number of seconds"))?;
        if !(d > 0.0 && d <= 366.0 * 86_400.0) {
            return Err(format!("{what}: 'Duration:' is not a duration (more than 0 s, at most a year)"));
        }
        duration_s = duration_s.max(d);
        let s = ForeignSeries {
            cpu,
            samples,
            min_ns: Some(whole("Minimum")?),
            mean_ns: Some(mean(Num::F(avg), 1000, &format!("{what}: Average"))?),
            max_ns: Some(whole("Maximum")?),
            histogram: Some(h),
            overflows: open,
            interval_ns: None,
        };
        s.check(&what, 1000)?;
        // (values in the open-ended last bucket lie from its label on: the maximum too)
        if let Some(from) = open_from.filter(|_| open > 0) {
            if s.max_ns.is_some_and(|m| m < from.saturating_mul(1000)) {
                return Err(format!("{what}: its last bucket (from {from} µs on) counts loops, but its maximum is below it"));
            }
        }
        series.push(s);
    }
    series.sort_by_key(|s| s.cpu);
    // (its loop has no interval; its output says nothing of priority, locked memory or time)
    let unknown =
        vec!["config.policy", "config.priority", "config.mlockall", "config.interval_ns", "config.warmup", "started_at"];
    let mut f = Foreign::of_text("oslat", "oslat-text", series, unknown, mtime);
    f.tool_version = version.filter(|v| !v.is_empty());
    f.measured_ns = Some((duration_s * 1e9) as u64);
    f.notes = vec![
        match open_from {
            Some(from) => format!(
                "imported from oslat: samples are its busy loop's iterations, values their lengths; its last bucket (from \
                 {from} µs on) is counted at each CPU's maximum, so percentiles that reach it are upper bounds"
            ),
            None => "imported from oslat: samples are its busy loop's iterations, values their lengths".to_string(),
        },
        "oslat's text output names no kernel or time: the time is the file's".to_string(),
    ];
    Ok(f)
}
