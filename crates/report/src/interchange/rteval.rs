//! `rtgauge export --format rteval-xml`: a run in the layout of rteval's `summary.xml`, so the
//! tooling built around rteval's reports reads it. Root `<rteval>` with `<run_info>` (duration
//! and start), `<uname>` (node, kernel with `is_RT`, architecture), `<loads>` (rtgauge's loads),
//! and `<Measurements><Profile>` holding one `<cyclictest>` element for the timer (the
//! measurement rteval runs) and a `<rtgauge probe="…">` element for each other series. Each
//! holds a `<system>` element (all CPUs) and a `<core id priority>` per CPU with rteval's
//! `<statistics>` (samples, minimum, maximum, median, mode, range, mean,
//! mean_absolute_deviation, standard_deviation, in µs) and its `<histogram>` of 1 µs buckets.
//! As rteval does, the statistics are computed from the 1 µs histogram; the maximum is the
//! measured one (µs, rounded down, as cyclictest prints it).

use crate::result::{ProbeResult, RunResult};
use crate::vocab::text::xml_escape;
use std::fmt::Write;

/// rteval's statistics of a histogram of 1 µs buckets (index µs, count).
#[derive(Debug, PartialEq)]
pub struct Stats {
    pub samples: u64,
    pub min: u64,
    pub max: u64,
    pub median: f64,
    pub mode: u64,
    pub mean: f64,
    pub mad: f64,
    pub stddev: f64,
}

/// The statistics rteval derives from a 1 µs histogram (`None`: no samples).
pub fn stats(buckets: &[(u64, u64)]) -> Option<Stats> {
    // (saturating: a stored document's counts are not summed past 2^64, whatever it holds)
    let samples: u64 = buckets.iter().map(|b| b.1).fold(0, u64::saturating_add);
    if samples == 0 {
        return None;
    }
    let (min, max) = (buckets.iter().find(|b| b.1 > 0)?.0, buckets.iter().rev().find(|b| b.1 > 0)?.0);
    let mean = buckets.iter().map(|&(i, n)| i as f64 * n as f64).sum::<f64>() / samples as f64;
    let mode = buckets.iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))?.0;
    // The median: the middle sample, or the mean of the two middle ones.
    let nth = |k: u64| {
        let mut seen = 0;
        buckets.iter().find(|b| {
            seen = u64::saturating_add(seen, b.1);
            seen > k
        })
    };
    let median =
        if samples % 2 == 1 { nth(samples / 2)?.0 as f64 } else { (nth(samples / 2 - 1)?.0 + nth(samples / 2)?.0) as f64 / 2.0 };
    let mad = buckets.iter().map(|&(i, n)| (i as f64 - mean).abs() * n as f64).sum::<f64>() / samples as f64;
    let var = buckets.iter().map(|&(i, n)| (i as f64 - mean).powi(2) * n as f64).sum::<f64>();
    let stddev = if samples > 1 { (var / (samples - 1) as f64).sqrt() } else { 0.0 };
    Some(Stats { samples, min, max, median, mode, mean, mad, stddev })
}

/// One `<system>` or `<core>` element.
fn element(tag: &str, attrs: &str, p: &ProbeResult) -> String {
    let b = p.histogram.rebin(1_000);
    let mut s = format!("      <{tag}{attrs}>\n        <statistics>\n");
    match stats(&b) {
        None => s += "          <samples>0</samples>\n",
        Some(st) => {
            let max = p.max_ns.map_or(st.max, |m| (m / 1_000).max(st.max));
            let _ = writeln!(s, "          <samples>{}</samples>", st.samples);
            for (k, v) in [
                ("minimum", st.min.to_string()),
                ("maximum", max.to_string()),
                ("median", st.median.to_string()),
                ("mode", st.mode.to_string()),
                ("range", (max - st.min).to_string()),
                ("mean", format!("{:.3}", st.mean)),
                ("mean_absolute_deviation", format!("{:.3}", st.mad)),
                ("standard_deviation", format!("{:.3}", st.stddev)),
            ] {
                let _ = writeln!(s, "          <{k} unit=\"us\">{v}</{k}>");
            }
        }
    }
    s += "        </statistics>\n";
    if !b.is_empty() {
        let _ = writeln!(s, "        <histogram nbuckets=\"{}\">", b.len());
        for (i, n) in &b {
            let _ = writeln!(s, "          <bucket index=\"{i}\" value=\"{n}\"/>");
        }
        s += "        </histogram>\n";
    }
    let _ = writeln!(s, "      </{tag}>");
    s
}

/// The run as rteval's summary.xml.
pub fn write(r: &RunResult) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(s, "<rteval version=\"rtgauge {}\">", xml_escape(&r.tool_version));
    let secs = r.measured_ns / 1_000_000_000;
    let (date, time) = r.started_at.split_once('T').unwrap_or((&r.started_at, ""));
    let _ = writeln!(
        s,
        "  <run_info days=\"{}\" hours=\"{}\" minutes=\"{}\" seconds=\"{}\">\n    <date>{}</date>\n    <time>{}</time>\n  </run_info>",
        secs / 86_400,
        secs / 3_600 % 24,
        secs / 60 % 60,
        secs % 60,
        xml_escape(date),
        xml_escape(time.trim_end_matches('Z'))
    );
    let sys = &r.system;
    let _ = writeln!(
        s,
        "  <uname>\n    <node>{}</node>\n    <kernel is_RT=\"{}\">{}</kernel>\n    <arch>{}</arch>\n  </uname>",
        xml_escape(&sys.hostname),
        u8::from(sys.preemption.realtime),
        xml_escape(&sys.kernel_release),
        xml_escape(&sys.architecture)
    );
    s += "  <loads>\n";
    for l in &r.loads {
        let _ = writeln!(s, "    <command_line name=\"{}\" runs=\"{}\" failed=\"{}\"/>", xml_escape(&l.spec), l.runs, l.failed);
    }
    s += "  </loads>\n  <Measurements>\n    <Profile loads=\"";
    let _ = writeln!(s, "{}\">", u8::from(!r.loads.is_empty()));
    let mut labels: Vec<String> = Vec::new();
    for p in r.probes.iter().filter(|p| p.cpu.is_some()) {
        if !labels.contains(&p.label()) {
            labels.push(p.label());
        }
    }
    let command = xml_escape(&super::export::command_line(r));
    for label in labels {
        let entries: Vec<&ProbeResult> = r.probes.iter().filter(|p| p.label() == label && p.cpu.is_some()).collect();
        let (open, close) = if label == crate::probe::registry::of_tool("cyclictest") {
            (format!("    <cyclictest command_line=\"{command}\">\n"), "    </cyclictest>\n".to_string())
        } else {
            (
                format!("    <rtgauge probe=\"{}\" command_line=\"{command}\">\n", xml_escape(&label)),
                "    </rtgauge>\n".to_string(),
            )
        };
        s += &open;
        let all = r.combined.iter().find(|p| p.label() == label).unwrap_or(entries[0]);
        let desc = format!(" description=\"({} cores) {}\"", entries.len(), xml_escape(&sys.cpu_model));
        s += &element("system", &desc, all);
        for p in entries {
            let priority = priority_of(r, p).map_or(String::new(), |n| format!(" priority=\"{n}\""));
            let attrs = format!(" id=\"{}\"{priority}", p.cpu.unwrap_or(0));
            s += &element("core", &attrs, p);
        }
        s += &close;
    }
    s += "    </Profile>\n  </Measurements>\n</rteval>\n";
    s
}

/// The RT priority `p`'s thread ran at: its probe's own, as its stored settings say (the
/// registry's `series_priority`), else the run's; `None` when not known or not an RT priority.
fn priority_of(r: &RunResult, p: &ProbeResult) -> Option<i32> {
    let c = &r.config;
    if !c.policy.has_priority()
        || crate::result::imported::unknown(r, "config.priority")
        || crate::result::imported::unknown(r, "config.policy")
    {
        return None;
    }
    let config = c.probes.iter().find(|pc| pc.name == p.probe && p.cpu.is_none_or(|cpu| pc.cpus.contains(&cpu)));
    let own = config.and_then(|pc| crate::probe::registry::series_priority(&p.probe, &pc.settings, p.series.as_deref()));
    Some(own.unwrap_or(c.priority))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_as_rteval_derives_them() {
        let st = stats(&[(10, 1), (11, 2), (20, 1)]).unwrap();
        assert_eq!((st.samples, st.min, st.max, st.mode), (4, 10, 20, 11));
        assert_eq!(st.median, 11.0, "the mean of the two middle samples, 11 and 11");
        assert_eq!(st.mean, 13.0);
        assert_eq!(st.mad, 3.5);
        assert!((st.stddev - (66.0f64 / 3.0).sqrt()).abs() < 1e-12, "squares 9 + 4 + 4 + 49 over n - 1");
        assert_eq!(stats(&[(5, 1), (7, 1)]).unwrap().median, 6.0);
        assert!(stats(&[]).is_none());
    }
}
