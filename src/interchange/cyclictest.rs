//! cyclictest's two result formats, read and written: its `--json` file (rt-tests 2.x: two keys
//! end in a colon, `cmdline:` and `rt_test_version:`; samples beyond `-h` are absent from the
//! histogram; without `-h` there is none) and its histogram output (`-h US`: one row per µs, a
//! column per thread, then `# Total:` (not in every version), `# Min/Avg/Max Latencies:`,
//! `# Histogram Overflows:` and the overflow trailer). Written, they are what OSADL's gnuplot
//! scripts and other cyclictest tooling read.

use super::{has_flag, option_value, Foreign, ForeignSeries};
use crate::result::{ProbeResult, RunResult};
use serde_json::Value;
use std::fmt::Write;

/// The unit of cyclictest's figures: µs, or ns with `--nsecs`.
fn unit_ns(command_line: &str) -> u64 {
    if has_flag(command_line, "-N", "--nsecs") {
        1
    } else {
        1000
    }
}

/// A cyclictest `--json` document.
pub fn from_json(v: &Value, mtime: &str) -> Result<Foreign, String> {
    let command_line = v["cmdline:"].as_str().unwrap_or_default().to_string();
    let unit = unit_ns(&command_line);
    let threads = v["thread"].as_object().ok_or("no 'thread' object")?;
    let mut series = Vec::new();
    for (key, t) in threads {
        let number = |k: &str| t[k].as_f64().ok_or_else(|| format!("thread {key} has no number '{k}'"));
        let cycles = t["cycles"].as_u64().ok_or_else(|| format!("thread {key} has no cycle count"))?;
        let histogram = match t.get("histogram").and_then(Value::as_object) {
            None => None,
            Some(h) => Some(
                h.iter()
                    .map(|(b, n)| {
                        Ok((b.parse::<u64>().map_err(|_| format!("histogram bucket '{b}'"))? * unit, n.as_u64().unwrap_or(0)))
                    })
                    .collect::<Result<Vec<_>, String>>()?,
            ),
        };
        let in_hist: u64 = histogram.iter().flatten().map(|b| b.1).sum();
        // Without -h, rt-tests writes an empty histogram (or none).
        let histogram = histogram.filter(|_| in_hist > 0 || cycles == 0);
        series.push(ForeignSeries {
            cpu: t["cpu"].as_u64().or_else(|| key.parse().ok()).unwrap_or(0) as usize,
            samples: cycles,
            min_ns: Some(number("min")? as u64 * unit),
            mean_ns: Some(number("avg")? * unit as f64),
            max_ns: Some(number("max")? as u64 * unit),
            overflows: if histogram.is_some() { cycles.saturating_sub(in_hist) } else { 0 },
            histogram,
        });
    }
    series.sort_by_key(|s| s.cpu);
    let mut f = super::foreign::rt_tests(v, mtime, ("cyclictest", "cyclictest-json", "timer"), series);
    f.interval_ns = option_value(&command_line, "-i", "--interval").and_then(|i| i.parse::<u64>().ok()).unwrap_or(1000) * 1000;
    f.priority = option_value(&command_line, "-p", "--priority").and_then(|p| p.parse().ok());
    f.mlockall = has_flag(&command_line, "-m", "--mlockall");
    f.notes = notes(&f, option_value(f.command_line.as_deref().unwrap_or_default(), "-h", "--histogram"));
    Ok(f)
}

/// What to know about cyclictest's figures once imported.
fn notes(f: &Foreign, hist_limit: Option<&str>) -> Vec<String> {
    let mut notes = vec!["imported from cyclictest, which counts no missed periods: 'missed' is 0 by construction".to_string()];
    let over: u64 = f.series.iter().map(|s| s.overflows).sum();
    if f.series.iter().any(|s| s.histogram.is_none()) {
        notes.push("the file has no histogram (cyclictest ran without -h): percentiles are unknown".into());
    } else if over > 0 {
        notes.push(format!(
            "{over} samples lay beyond cyclictest's histogram{} and are absent from it: they are counted at each CPU's \
             maximum, so percentiles that reach them are upper bounds",
            hist_limit.map_or(String::new(), |h| format!(" (-h {h}: {h} µs)"))
        ));
    }
    notes
}

/// cyclictest's histogram output.
pub fn parse_hist(text: &str, mtime: &str) -> Result<Foreign, String> {
    let mut rows: Vec<(u64, Vec<u64>)> = Vec::new();
    let mut trailer = std::collections::HashMap::new();
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix('#') {
            if let Some((key, values)) = rest.split_once(':') {
                let values: Option<Vec<u64>> = values.split_whitespace().map(|v| v.parse().ok()).collect();
                if let Some(values) = values.filter(|v| !v.is_empty()) {
                    trailer.entry(key.trim().to_string()).or_insert(values);
                }
            }
            continue;
        }
        let cells: Option<Vec<u64>> = line.split_whitespace().map(|c| c.parse().ok()).collect();
        match cells {
            Some(c) if c.len() >= 2 => rows.push((c[0], c[1..].to_vec())),
            _ if line.is_empty() || line.starts_with("T:") || line.starts_with("policy:") => {}
            _ => return Err(format!("not cyclictest histogram output (or another supported result): line '{}'", short(line))),
        }
    }
    let threads = trailer
        .get("Max Latencies")
        .or(trailer.get("Min Latencies"))
        .map(Vec::len)
        .or(rows.first().map(|r| r.1.len()))
        .ok_or("not cyclictest histogram output: no histogram rows and no '# Max Latencies:' line")?;
    let column = |key: &str, t: usize| trailer.get(key).and_then(|v| v.get(t)).copied();
    let mut series = Vec::new();
    for t in 0..threads {
        let histogram: Vec<(u64, u64)> =
            rows.iter().filter_map(|(us, c)| c.get(t).filter(|&&n| n > 0).map(|&n| (us * 1000, n))).collect();
        let in_hist: u64 = histogram.iter().map(|b| b.1).sum();
        let total = column("Total", t).unwrap_or(in_hist);
        if total != in_hist {
            return Err(format!("thread {t}: '# Total: {total}' but its histogram rows hold {in_hist}"));
        }
        let overflows = column("Histogram Overflows", t).unwrap_or(0);
        let samples = total + overflows;
        let weighted: f64 = histogram.iter().map(|&(v, n)| v as f64 * n as f64).sum();
        series.push(ForeignSeries {
            cpu: t,
            samples,
            min_ns: column("Min Latencies", t).map(|v| v * 1000).or(histogram.first().map(|b| b.0)),
            mean_ns: column("Avg Latencies", t).map(|v| (v * 1000) as f64).or((in_hist > 0).then(|| weighted / in_hist as f64)),
            max_ns: column("Max Latencies", t).map(|v| v * 1000).or(histogram.last().map(|b| b.0)),
            histogram: Some(histogram),
            overflows,
        });
    }
    let mut f = Foreign {
        tool: "cyclictest",
        format: "cyclictest-hist",
        probe: "timer",
        started_at: mtime.into(),
        ended_at: mtime.into(),
        host: "unknown".into(),
        kernel_release: "unknown".into(),
        kernel_version: "unknown".into(),
        machine: "unknown".into(),
        series,
        ..Default::default()
    };
    f.notes = notes(&f, rows.last().map(|r| (r.0 + 1).to_string()).as_deref());
    f.notes.push(
        "cyclictest's histogram output names no CPU, interval, kernel or time: thread N is shown as cpu N, the time is \
         the file's"
            .into(),
    );
    Ok(f)
}

fn short(line: &str) -> String {
    line.chars().take(60).collect()
}

/// The entries of `probe` (its headline series) per CPU.
fn entries<'a>(r: &'a RunResult, probe: &str) -> Vec<&'a ProbeResult> {
    r.probes.iter().filter(|p| p.probe == probe && p.is_headline() && p.cpu.is_some()).collect()
}

/// Counts per µs bucket (values truncated to µs, as cyclictest's) of an entry's histogram.
fn micro_buckets(p: &ProbeResult) -> std::collections::BTreeMap<u64, u64> {
    let mut m = std::collections::BTreeMap::new();
    for [lo, _, n] in p.histogram.buckets.triples() {
        *m.entry(lo / 1000).or_insert(0) += n;
    }
    m
}

/// A run's `probe` as cyclictest's histogram output with `rows` rows (values of `rows` µs or more
/// are overflows; `None`: enough rows for every value).
pub fn write_hist(r: &RunResult, probe: &str, rows: Option<u64>) -> Result<String, String> {
    let ps = entries(r, probe);
    if ps.is_empty() {
        return Err(format!("the run has no '{probe}' figures per CPU"));
    }
    let buckets: Vec<_> = ps.iter().map(|p| micro_buckets(p)).collect();
    let top = buckets.iter().filter_map(|b| b.keys().last()).max().copied().unwrap_or(0);
    let rows = rows.unwrap_or(top + 1);
    let mut s = String::from("# Histogram\n");
    for us in 0..rows {
        let cells: Vec<String> = buckets.iter().map(|b| format!("{:06}", b.get(&us).unwrap_or(&0))).collect();
        let _ = writeln!(s, "{us:06} {}", cells.join("\t"));
    }
    let line = |s: &mut String, name: &str, width: usize, f: &dyn Fn(usize) -> u64| {
        let _ = write!(s, "# {name}:");
        for i in 0..ps.len() {
            let _ = write!(s, " {:0width$}", f(i));
        }
        s.push('\n');
    };
    let in_range = |i: usize| buckets[i].range(..rows).map(|(_, n)| n).sum::<u64>();
    let over = |i: usize| buckets[i].range(rows..).map(|(_, n)| n).sum::<u64>();
    line(&mut s, "Total", 9, &in_range);
    line(&mut s, "Min Latencies", 5, &|i| ps[i].min_ns.unwrap_or(0) / 1000);
    line(&mut s, "Avg Latencies", 5, &|i| ps[i].mean_ns.map_or(0, |m| (m / 1000.0) as u64));
    line(&mut s, "Max Latencies", 5, &|i| ps[i].max_ns.unwrap_or(0) / 1000);
    line(&mut s, "Histogram Overflows", 5, &over);
    s.push_str("# Histogram Overflow at cycle number:\n");
    for (i, _) in ps.iter().enumerate() {
        // rtgauge keeps no cycle numbers of single samples: the count stands for them.
        let n = over(i);
        let _ = writeln!(s, "# Thread {i}:{}", if n > 0 { format!(" # {n:05} others") } else { String::new() });
    }
    Ok(s)
}

/// A run's `probe` as a cyclictest `--json` document (rt-tests 2.x layout, µs).
pub fn write_json(r: &RunResult, probe: &str) -> Result<String, String> {
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
        "cmdline:": r.command_line.join(" "),
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
