//! The other tools' JSON results, told apart by their content: cyclictest's and oslat's `--json`
//! (rt-tests 2.x: `cmdline:` and a `thread` object; oslat's threads have a counter `freq`), and
//! jitterdebugger's `results.json` (a `cpu` object).

use super::{option_value, rfc2822_to_rfc3339, Foreign, ForeignSeries};
use serde_json::Value;

/// A foreign JSON result of any supported tool.
pub fn from_json(v: &Value, mtime: &str) -> Result<Foreign, String> {
    let tool = v["cmdline:"].as_str().and_then(|c| c.split_whitespace().next()).map(|t| t.rsplit('/').next().unwrap_or(t));
    let threads = v["thread"].as_object();
    let oslat = tool == Some("oslat") || threads.is_some_and(|t| t.values().any(|t| t.get("freq").is_some()));
    if threads.is_some() && oslat {
        oslat_json(v, mtime)
    } else if threads.is_some() {
        super::cyclictest::from_json(v, mtime)
    } else if v["cpu"].is_object() {
        jitterdebugger_json(v, mtime)
    } else {
        Err("not a result rtgauge can import: neither cyclictest or oslat --json (a 'thread' object), jitterdebugger's \
             results.json (a 'cpu' object), nor an rtgauge result"
            .into())
    }
}

/// What every rt-tests 2.x `--json` file says of itself (tool version, times, command line,
/// system), around the `series` read from it.
pub fn rt_tests(
    v: &Value,
    mtime: &str,
    (tool, format, probe): (&'static str, &'static str, &'static str),
    series: Vec<ForeignSeries>,
) -> Foreign {
    let time = |k: &str| v[k].as_str().and_then(rfc2822_to_rfc3339).unwrap_or_else(|| mtime.into());
    let mut f = Foreign {
        tool,
        tool_version: v["rt_test_version:"].as_str().map(str::to_string),
        format,
        probe,
        started_at: time("start_time"),
        ended_at: time("end_time"),
        command_line: v["cmdline:"].as_str().map(str::to_string),
        series,
        ..Default::default()
    };
    system_from(&v["sysinfo"], &mut f);
    f
}

/// Host and kernel from an rt-tests or jitterdebugger `sysinfo` object.
pub fn system_from(sys: &Value, f: &mut Foreign) {
    let text = |k: &str| sys[k].as_str().unwrap_or("unknown").to_string();
    f.host = text("nodename");
    f.kernel_release = text("release");
    f.kernel_version = text("version");
    f.machine = text("machine");
    f.realtime = sys["realtime"].as_u64().map(|r| r == 1);
}

/// A histogram object `{"VALUE": COUNT}` in units of `unit_ns`.
fn histogram(h: &Value, unit_ns: u64) -> Result<Vec<(u64, u64)>, String> {
    let h = h.as_object().ok_or("a histogram that is not an object")?;
    let mut buckets = h
        .iter()
        .map(|(b, n)| Ok((b.parse::<u64>().map_err(|_| format!("histogram bucket '{b}'"))? * unit_ns, n.as_u64().unwrap_or(0))))
        .collect::<Result<Vec<_>, String>>()?;
    buckets.sort_unstable();
    Ok(buckets)
}

fn number(t: &Value, key: &str, what: &str) -> Result<f64, String> {
    t[key].as_f64().ok_or_else(|| format!("{what} has no number '{key}'"))
}

/// jitterdebugger's `results.json`: per CPU a histogram, count, min, max, avg in units of
/// `sysinfo.resolution_in_ns`.
fn jitterdebugger_json(v: &Value, mtime: &str) -> Result<Foreign, String> {
    let unit = v["sysinfo"]["resolution_in_ns"].as_u64().filter(|&u| u > 0).unwrap_or(1000);
    let mut series = Vec::new();
    for (cpu, c) in v["cpu"].as_object().into_iter().flatten() {
        let what = format!("cpu {cpu}");
        let hist = histogram(&c["histogram"], unit)?;
        let count = c["count"].as_u64().ok_or_else(|| format!("{what} has no count"))?;
        let in_hist: u64 = hist.iter().map(|b| b.1).sum();
        series.push(ForeignSeries {
            cpu: cpu.parse().map_err(|_| format!("cpu '{cpu}' is not a number"))?,
            samples: count,
            min_ns: Some(number(c, "min", &what)? as u64 * unit),
            mean_ns: Some(number(c, "avg", &what)? * unit as f64),
            max_ns: Some(number(c, "max", &what)? as u64 * unit),
            overflows: count.saturating_sub(in_hist),
            histogram: Some(hist),
        });
    }
    series.sort_by_key(|s| s.cpu);
    let mut f = Foreign {
        tool: "jitterdebugger",
        tool_version: v["version"].as_u64().map(|n| format!("results.json version {n}")),
        format: "jitterdebugger-json",
        probe: "timer",
        started_at: mtime.into(),
        ended_at: mtime.into(),
        series,
        ..Default::default()
    };
    system_from(&v["sysinfo"], &mut f);
    f.notes = vec![
        "imported from jitterdebugger, which counts no missed periods: 'missed' is 0 by construction".into(),
        "jitterdebugger's results.json holds no interval, priority or time: the time is the file's".into(),
    ];
    Ok(f)
}

/// oslat's `--json`: per thread a histogram of loop times (µs; its last bucket holds every
/// value from the bucket count on), min, avg, max and the duration.
fn oslat_json(v: &Value, mtime: &str) -> Result<Foreign, String> {
    let command_line = v["cmdline:"].as_str().unwrap_or_default().to_string();
    let buckets: u64 = option_value(&command_line, "-b", "--bucket-size").and_then(|b| b.parse().ok()).unwrap_or(32);
    let mut series = Vec::new();
    let mut duration_s: f64 = 0.0;
    for (key, t) in v["thread"].as_object().into_iter().flatten() {
        let what = format!("thread {key}");
        let mut hist = histogram(&t["histogram"], 1000)?;
        // The last bucket is open-ended: its values are counted at the maximum (an upper bound).
        let open: u64 = hist.iter().filter(|b| b.0 >= buckets * 1000).map(|b| b.1).sum();
        hist.retain(|b| b.0 < buckets * 1000);
        let samples = hist.iter().map(|b| b.1).sum::<u64>() + open;
        duration_s = duration_s.max(t["duration"].as_f64().unwrap_or(0.0));
        series.push(ForeignSeries {
            cpu: t["cpu"].as_u64().or_else(|| key.parse().ok()).unwrap_or(0) as usize,
            samples,
            min_ns: Some((number(t, "min", &what)? * 1000.0) as u64),
            mean_ns: Some(number(t, "avg", &what)? * 1000.0),
            max_ns: Some((number(t, "max", &what)? * 1000.0) as u64),
            histogram: Some(hist),
            overflows: open,
        });
    }
    series.sort_by_key(|s| s.cpu);
    let mut f = rt_tests(v, mtime, ("oslat", "oslat-json", "noise"), series);
    f.priority = option_value(&command_line, "-f", "--rtprio").and_then(|p| p.parse().ok());
    f.measured_ns = Some((duration_s * 1e9) as u64);
    f.notes = vec![format!(
        "imported from oslat: samples are its busy loop's iterations, values their lengths; its last bucket (from {buckets} µs \
         on) is counted at each CPU's maximum, so percentiles that reach it are upper bounds"
    )];
    Ok(f)
}
