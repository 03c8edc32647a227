//! A [`Snapshot`] in the Prometheus text exposition format (version 0.0.4) or in OpenMetrics
//! 1.0, whichever the scraper's `Accept` header prefers: every family with its `# HELP` and
//! `# TYPE` (and `# UNIT` for the seconds of OpenMetrics), label values escaped, numbers
//! written as Prometheus's Go client writes them so that they parse back exactly. One pass over
//! the snapshot's figures into one preallocated string: a scrape's work is bounded by the number
//! of series and bounds, nothing else.

use super::Snapshot;
use std::fmt::Write;

/// The content type of the text format.
pub const TEXT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The content type of OpenMetrics.
pub const OPENMETRICS_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Whether a scraper sending `accept` gets OpenMetrics: when it lists
/// `application/openmetrics-text` with a quality at least as high as any `text/plain` it lists
/// (Prometheus 2.x sends `application/openmetrics-text;version=1.0.0,...,text/plain;version=0.0.4;q=0.5,*/*;q=0.1`).
/// The text format otherwise, and for no header or a wildcard.
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    let (mut openmetrics, mut text) = (0.0f64, 0.0f64);
    for entry in accept.unwrap_or("").split(',') {
        let mut parts = entry.split(';');
        let kind = parts.next().unwrap_or("").trim();
        let q = parts
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
            .map_or(Some(1.0), |(_, v)| v.trim().parse::<f64>().ok().filter(|q| (0.0..=1.0).contains(q)))
            .unwrap_or(0.0);
        if kind.eq_ignore_ascii_case("application/openmetrics-text") {
            openmetrics = openmetrics.max(q);
        } else if kind.eq_ignore_ascii_case("text/plain") {
            text = text.max(q);
        }
    }
    openmetrics > 0.0 && openmetrics >= text
}

/// The kinds of family this exposition has.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
    Info,
}

/// The exposition being written.
struct Out {
    o: String,
    openmetrics: bool,
    /// The family's name as its samples begin (`_total`, `_info` included).
    sample: String,
}

impl Out {
    /// Opens a family: `name` is its OpenMetrics name (a counter's without `_total`, an info's
    /// without `_info`); `seconds` when its values are in seconds.
    fn family(&mut self, name: &str, kind: Kind, seconds: bool, help: &str) {
        self.sample.clear();
        self.sample.push_str(name);
        match kind {
            Kind::Counter => self.sample.push_str("_total"),
            Kind::Info => self.sample.push_str("_info"),
            Kind::Gauge | Kind::Histogram => {}
        }
        let (named, kind) = match (self.openmetrics, kind) {
            (true, Kind::Counter) => (name, "counter"),
            (true, Kind::Info) => (name, "info"),
            (false, Kind::Counter) => (self.sample.as_str(), "counter"),
            (false, Kind::Info) => (self.sample.as_str(), "gauge"),
            (_, Kind::Gauge) => (name, "gauge"),
            (_, Kind::Histogram) => (name, "histogram"),
        };
        let o = &mut self.o;
        let _ = write!(o, "# HELP {named} ");
        for c in help.chars() {
            match c {
                '\\' => o.push_str("\\\\"),
                '\n' => o.push_str("\\n"),
                '"' if self.openmetrics => o.push_str("\\\""),
                c => o.push(c),
            }
        }
        let _ = writeln!(o, "\n# TYPE {named} {kind}");
        if seconds && self.openmetrics {
            let _ = writeln!(o, "# UNIT {named} seconds");
        }
    }

    /// Writes `{labels} value` after the sample's name and `suffix` (`_bucket`, `_sum`, ...);
    /// `labels` already escaped, `le` a bucket's bound.
    fn sample(&mut self, suffix: &str, labels: &str, le: Option<&str>, value: Value) {
        let o = &mut self.o;
        o.push_str(&self.sample);
        o.push_str(suffix);
        if !labels.is_empty() || le.is_some() {
            o.push('{');
            o.push_str(labels);
            if let Some(le) = le {
                if !labels.is_empty() {
                    o.push(',');
                }
                let _ = write!(o, "le=\"{le}\"");
            }
            o.push('}');
        }
        o.push(' ');
        match value {
            Value::Count(n) => {
                let _ = write!(o, "{n}");
            }
            Value::Float(v) => float(o, v),
        }
        o.push('\n');
    }
}

/// A sample's value.
#[derive(Clone, Copy)]
enum Value {
    Count(u64),
    Float(f64),
}

fn flag(b: bool) -> Value {
    Value::Count(u64::from(b))
}

fn seconds(ns: u64) -> Value {
    Value::Float(ns as f64 / 1e9)
}

/// `v` as Go's `strconv.FormatFloat(v, 'g', -1, 64)` writes it, as Prometheus's clients do:
/// the shortest digits that parse back to `v`, with an exponent below 1e-4 and from 1e6
/// (`1e-06`, `2.5e-05`, `0.001`, `1`, `3600`, `1e+06`); `+Inf`, `-Inf`, `NaN`.
fn float(o: &mut String, v: f64) {
    if v.is_nan() {
        return o.push_str("NaN");
    }
    if v.is_infinite() {
        return o.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    }
    let start = o.len();
    let _ = write!(o, "{v:e}");
    let exp = o[start..].rsplit_once('e').and_then(|(_, e)| e.parse::<i32>().ok()).unwrap_or(0);
    if v == 0.0 || (-4..6).contains(&exp) {
        o.truncate(start);
        let _ = write!(o, "{v}");
    } else if let Some(at) = o[start..].rfind('e') {
        o.truncate(start + at);
        let _ = write!(o, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs());
    }
}

/// `value` escaped as a label value: backslash, double quote and line feed.
fn escape_label(o: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
}

/// The run's info metric's labels, escaped.
fn info_labels(i: &super::RunInfo) -> String {
    labels(&[
        ("board", &i.board),
        ("kernel", &i.kernel),
        ("preemption", &i.preemption),
        ("scenario", &i.scenario),
        ("version", &i.version),
        ("series", &i.series),
    ])
}

/// `name="value"` pairs, escaped and comma-separated.
fn labels(pairs: &[(&str, &str)]) -> String {
    let mut o = String::with_capacity(pairs.iter().map(|(k, v)| k.len() + v.len() + 4).sum());
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push_str(name);
        o.push_str("=\"");
        escape_label(&mut o, value);
        o.push('"');
    }
    o
}

/// The bytes an exposition takes at most: the longest sample line of a series or a load (a name
/// of up to 40 bytes, its labels, a bound of up to 24 and a value of up to 40) times the lines it
/// has, and the families' metadata: enough that the string is never grown.
fn room(info: &str, series: &[String], loads: &[String], bounds: usize) -> usize {
    let per_series: usize = series.iter().map(|l| (l.len() + 120) * (bounds + 7)).sum();
    let per_load: usize = loads.iter().map(|l| (l.len() + 80) * 3).sum();
    4096 + info.len() + per_series + per_load
}

/// The exposition of `s`, in OpenMetrics when `openmetrics` (ending with `# EOF`), in the text
/// format otherwise. A series whose window maximum or maximum is not known yet has no sample in
/// that family.
pub fn render(s: &Snapshot, openmetrics: bool) -> String {
    // Each series' labels, escaped once for all its families.
    let series: Vec<String> =
        s.series.iter().map(|f| labels(&[("probe", &f.probe), ("series", &f.series), ("cpu", &f.cpu.to_string())])).collect();
    let loads: Vec<String> = s.loads.iter().map(|l| labels(&[("load", &l.name)])).collect();
    let les: Vec<String> = s
        .bounds_ns
        .iter()
        .map(|&b| {
            let mut le = String::new();
            float(&mut le, b as f64 / 1e9);
            le
        })
        .collect();
    let info = info_labels(&s.info);

    let mut out =
        Out { o: String::with_capacity(room(&info, &series, &loads, les.len())), openmetrics, sample: String::with_capacity(64) };

    let what = "The measurement: board, kernel release, preemption model, scenario, rtgauge version and series.";
    out.family("rtgauge_run", Kind::Info, false, what);
    out.sample("", &info, None, Value::Count(1));
    out.family("rtgauge_start_time_seconds", Kind::Gauge, true, "When the measurement began, in seconds since 1970.");
    out.sample("", "", None, Value::Float(s.start_unix_s));
    out.family("rtgauge_rotated_runs", Kind::Counter, false, "Runs closed by --rotate so far.");
    out.sample("", "", None, Value::Count(s.rotated_runs));

    let what = "Latencies measured per probe, series and CPU since the measurement began.";
    out.family("rtgauge_latency_seconds", Kind::Histogram, true, what);
    for (f, l) in s.series.iter().zip(&series) {
        for (&n, le) in f.buckets.iter().zip(&les) {
            out.sample("_bucket", l, Some(le), Value::Count(n));
        }
        out.sample("_bucket", l, Some("+Inf"), Value::Count(f.count));
        out.sample("_sum", l, None, Value::Float(f.sum_ns as f64 / 1e9));
        out.sample("_count", l, None, Value::Count(f.count));
    }
    out.family("rtgauge_samples", Kind::Counter, false, "Latencies measured (periods with a value).");
    for (f, l) in s.series.iter().zip(&series) {
        out.sample("", l, None, Value::Count(f.samples));
    }
    out.family("rtgauge_missed_periods", Kind::Counter, false, "Periods that passed without a value (missed).");
    for (f, l) in s.series.iter().zip(&series) {
        out.sample("", l, None, Value::Count(f.missed));
    }
    out.family("rtgauge_window_max_seconds", Kind::Gauge, true, "The largest latency of the last completed window (--window).");
    for (f, l) in s.series.iter().zip(&series) {
        if let Some(ns) = f.window_max_ns {
            out.sample("", l, None, seconds(ns));
        }
    }
    out.family("rtgauge_max_seconds", Kind::Gauge, true, "The largest latency since the measurement began.");
    for (f, l) in s.series.iter().zip(&series) {
        if let Some(ns) = f.max_ns {
            out.sample("", l, None, seconds(ns));
        }
    }

    out.family("rtgauge_load_running", Kind::Gauge, false, "1 while the load runs, 0 otherwise.");
    for (f, l) in s.loads.iter().zip(&loads) {
        out.sample("", l, None, flag(f.running));
    }
    out.family("rtgauge_load_restarts", Kind::Counter, false, "Times the load was started again.");
    for (f, l) in s.loads.iter().zip(&loads) {
        out.sample("", l, None, Value::Count(f.restarts));
    }
    out.family("rtgauge_load_failed", Kind::Gauge, false, "1 when the load has failed, 0 otherwise.");
    for (f, l) in s.loads.iter().zip(&loads) {
        out.sample("", l, None, flag(f.failed));
    }
    if openmetrics {
        out.o.push_str("# EOF\n");
    }
    out.o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{LoadFigures, RunInfo, SeriesFigures};
    use std::collections::{HashMap, HashSet};
    use std::sync::Arc;

    const UUID: &str = "0b9d6d8e-3f4a-4c1e-9a57-2d4c8e1f6a10";

    /// Two CPUs (one with figures, one not yet), two loads (one running, one failed), 3 bounds.
    fn two_cpus_two_loads() -> Snapshot {
        let cpu = |cpu, buckets: [u64; 3], count, sum_ns, missed, window_max_ns, max_ns| SeriesFigures {
            probe: "timer".into(),
            series: "wakeup".into(),
            cpu,
            buckets: buckets.to_vec(),
            count,
            sum_ns,
            samples: count,
            missed,
            window_max_ns,
            max_ns,
        };
        Snapshot {
            info: RunInfo {
                board: "pi5".into(),
                kernel: "6.12.0-rt5".into(),
                preemption: "PREEMPT_RT".into(),
                scenario: "default".into(),
                version: "0.1.0".into(),
                series: UUID.into(),
            },
            bounds_ns: Arc::from(vec![1_000u64, 2_000, 5_000]),
            series: vec![cpu(1, [3, 7, 9], 10, 25_000, 1, Some(6_000), Some(12_000)), cpu(2, [0, 0, 0], 0, 0, 0, None, None)],
            loads: vec![
                LoadFigures { name: "stress-ng cpu".into(), running: true, restarts: 0, failed: false },
                LoadFigures { name: "iperf".into(), running: false, restarts: 2, failed: true },
            ],
            rotated_runs: 3,
            start_unix_s: 1_764_000_000.5,
        }
    }

    /// Text nobody should be able to break an exposition with.
    const HOSTILE: &str = "a \"quoted\" \\back\\slash\\\nnew line } {x=\"y\"} ünïcødé 板 \\n\r\t#";

    fn hostile() -> Snapshot {
        let mut s = two_cpus_two_loads();
        s.info.board = HOSTILE.into();
        s.info.kernel = format!("{HOSTILE}\\");
        s.info.scenario = "\"".into();
        s.series[0].probe = "}".into();
        s.series[1].series = HOSTILE.into();
        s.loads[1].name = HOSTILE.into();
        let bounds = crate::vocab::buckets::parse(crate::vocab::buckets::DEFAULT).unwrap();
        for f in &mut s.series {
            f.buckets = bounds.iter().enumerate().map(|(i, _)| (i as u64 * 7).min(f.count)).collect();
        }
        s.bounds_ns = Arc::from(bounds);
        s
    }

    #[test]
    fn the_text_format() {
        let l1 = r#"probe="timer",series="wakeup",cpu="1""#;
        let l2 = r#"probe="timer",series="wakeup",cpu="2""#;
        let want = format!(
            r#"# HELP rtgauge_run_info The measurement: board, kernel release, preemption model, scenario, rtgauge version and series.
# TYPE rtgauge_run_info gauge
rtgauge_run_info{{board="pi5",kernel="6.12.0-rt5",preemption="PREEMPT_RT",scenario="default",version="0.1.0",series="{UUID}"}} 1
# HELP rtgauge_start_time_seconds When the measurement began, in seconds since 1970.
# TYPE rtgauge_start_time_seconds gauge
rtgauge_start_time_seconds 1.7640000005e+09
# HELP rtgauge_rotated_runs_total Runs closed by --rotate so far.
# TYPE rtgauge_rotated_runs_total counter
rtgauge_rotated_runs_total 3
# HELP rtgauge_latency_seconds Latencies measured per probe, series and CPU since the measurement began.
# TYPE rtgauge_latency_seconds histogram
rtgauge_latency_seconds_bucket{{{l1},le="1e-06"}} 3
rtgauge_latency_seconds_bucket{{{l1},le="2e-06"}} 7
rtgauge_latency_seconds_bucket{{{l1},le="5e-06"}} 9
rtgauge_latency_seconds_bucket{{{l1},le="+Inf"}} 10
rtgauge_latency_seconds_sum{{{l1}}} 2.5e-05
rtgauge_latency_seconds_count{{{l1}}} 10
rtgauge_latency_seconds_bucket{{{l2},le="1e-06"}} 0
rtgauge_latency_seconds_bucket{{{l2},le="2e-06"}} 0
rtgauge_latency_seconds_bucket{{{l2},le="5e-06"}} 0
rtgauge_latency_seconds_bucket{{{l2},le="+Inf"}} 0
rtgauge_latency_seconds_sum{{{l2}}} 0
rtgauge_latency_seconds_count{{{l2}}} 0
# HELP rtgauge_samples_total Latencies measured (periods with a value).
# TYPE rtgauge_samples_total counter
rtgauge_samples_total{{{l1}}} 10
rtgauge_samples_total{{{l2}}} 0
# HELP rtgauge_missed_periods_total Periods that passed without a value (missed).
# TYPE rtgauge_missed_periods_total counter
rtgauge_missed_periods_total{{{l1}}} 1
rtgauge_missed_periods_total{{{l2}}} 0
# HELP rtgauge_window_max_seconds The largest latency of the last completed window (--window).
# TYPE rtgauge_window_max_seconds gauge
rtgauge_window_max_seconds{{{l1}}} 6e-06
# HELP rtgauge_max_seconds The largest latency since the measurement began.
# TYPE rtgauge_max_seconds gauge
rtgauge_max_seconds{{{l1}}} 1.2e-05
# HELP rtgauge_load_running 1 while the load runs, 0 otherwise.
# TYPE rtgauge_load_running gauge
rtgauge_load_running{{load="stress-ng cpu"}} 1
rtgauge_load_running{{load="iperf"}} 0
# HELP rtgauge_load_restarts_total Times the load was started again.
# TYPE rtgauge_load_restarts_total counter
rtgauge_load_restarts_total{{load="stress-ng cpu"}} 0
rtgauge_load_restarts_total{{load="iperf"}} 2
# HELP rtgauge_load_failed 1 when the load has failed, 0 otherwise.
# TYPE rtgauge_load_failed gauge
rtgauge_load_failed{{load="stress-ng cpu"}} 0
rtgauge_load_failed{{load="iperf"}} 1
"#
        );
        let got = render(&two_cpus_two_loads(), false);
        assert_eq!(got, want, "\n{got}");
    }

    #[test]
    fn the_openmetrics_form() {
        let got = render(&two_cpus_two_loads(), true);
        let text = render(&two_cpus_two_loads(), false);
        // The same samples; the metadata names families as OpenMetrics does.
        let samples = |e: &str| e.lines().filter(|l| !l.starts_with('#')).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(samples(&got), samples(&text));
        for line in [
            "# TYPE rtgauge_run info",
            "# HELP rtgauge_run The measurement: board, kernel release, preemption model, scenario, rtgauge version and series.",
            "# TYPE rtgauge_start_time_seconds gauge\n# UNIT rtgauge_start_time_seconds seconds\nrtgauge_start_time_seconds 1.7640000005e+09",
            "# HELP rtgauge_rotated_runs Runs closed by --rotate so far.\n# TYPE rtgauge_rotated_runs counter\nrtgauge_rotated_runs_total 3",
            "# TYPE rtgauge_latency_seconds histogram\n# UNIT rtgauge_latency_seconds seconds\nrtgauge_latency_seconds_bucket{",
            "# TYPE rtgauge_samples counter\n",
            "# TYPE rtgauge_missed_periods counter\n",
            "# TYPE rtgauge_window_max_seconds gauge\n# UNIT rtgauge_window_max_seconds seconds\n",
            "# TYPE rtgauge_max_seconds gauge\n# UNIT rtgauge_max_seconds seconds\n",
            "# TYPE rtgauge_load_restarts counter\n",
            "# TYPE rtgauge_load_failed gauge\nrtgauge_load_failed{",
        ] {
            assert!(got.contains(line), "{line}\n{got}");
        }
        assert!(!got.contains("_total counter") && !got.contains("_info info"));
        assert_eq!(got.matches("# UNIT").count(), 4);
        assert!(got.ends_with("rtgauge_load_failed{load=\"iperf\"} 1\n# EOF\n"));
        openmetrics_structure(&got);
        openmetrics_structure(&render(&hostile(), true));
        assert!(!text.contains("# UNIT") && !text.contains("# EOF"));
    }

    /// One sample line read back: its name, its labels unescaped, its value.
    fn parse_sample(line: &str) -> (String, Vec<(String, String)>, f64) {
        let end = line.find(['{', ' ']).unwrap();
        let name = line[..end].to_string();
        let mut rest = line[end..].chars().peekable();
        let mut labels = Vec::new();
        if rest.peek() == Some(&'{') {
            rest.next();
            loop {
                let key: String = rest.by_ref().take_while(|&c| c != '=').collect();
                assert_eq!(rest.next(), Some('"'), "{line}");
                let mut value = String::new();
                loop {
                    match rest.next().unwrap() {
                        '"' => break,
                        '\\' => value.push(match rest.next().unwrap() {
                            'n' => '\n',
                            '\\' => '\\',
                            '"' => '"',
                            c => panic!("\\{c} in {line}"),
                        }),
                        '\n' => panic!("a raw line feed in {line}"),
                        c => value.push(c),
                    }
                }
                labels.push((key, value));
                match rest.next() {
                    Some(',') => continue,
                    Some('}') => break,
                    c => panic!("{c:?} after a label in {line}"),
                }
            }
        }
        assert_eq!(rest.next(), Some(' '), "{line}");
        let value: String = rest.collect();
        (name, labels, value.parse().unwrap_or_else(|_| panic!("{line}")))
    }

    /// OpenMetrics's shape: families one after the other, each once, its metadata before its
    /// samples, every sample named as its family's kind allows; no blank line; `# EOF` last.
    fn openmetrics_structure(e: &str) {
        let (body, eof) = e.rsplit_once("# EOF").unwrap();
        assert_eq!(eof, "\n", "# EOF is the last line");
        let mut seen = HashSet::new();
        let (mut family, mut kind) = (String::new(), String::new());
        let mut with_samples = HashSet::new();
        for line in body.lines() {
            assert!(!line.is_empty(), "a blank line in\n{e}");
            if let Some(meta) = line.strip_prefix("# ") {
                let mut words = meta.splitn(3, ' ');
                let (what, name, rest) = (words.next().unwrap(), words.next().unwrap(), words.next().unwrap_or(""));
                assert!(["HELP", "TYPE", "UNIT"].contains(&what), "{line}");
                if name != family {
                    assert!(seen.insert(name.to_string()), "{name} again after another family");
                    family = name.to_string();
                    kind.clear();
                }
                assert!(!with_samples.contains(&family), "metadata after samples: {line}");
                if what == "TYPE" {
                    kind = rest.to_string();
                }
                if what == "UNIT" {
                    assert!(family.ends_with(&format!("_{rest}")), "{line}");
                }
                continue;
            }
            let (name, _, _) = parse_sample(line);
            let suffixes: &[&str] = match kind.as_str() {
                "counter" => &["_total"],
                "gauge" => &[""],
                "histogram" => &["_bucket", "_sum", "_count"],
                "info" => &["_info"],
                k => panic!("kind {k:?} of {family}"),
            };
            assert!(suffixes.iter().any(|s| name == format!("{family}{s}")), "{name} in the family {family} ({kind})");
            with_samples.insert(family.clone());
        }
    }

    type Labels = Vec<(String, String)>;

    /// Every histogram's buckets: ascending bounds, non-decreasing counts, `+Inf` last and equal
    /// to `_count`. Returns how many histograms there were.
    fn cumulative(e: &str) -> usize {
        let mut buckets: HashMap<Labels, Vec<(f64, f64)>> = HashMap::new();
        let mut counts = HashMap::new();
        for line in e.lines().filter(|l| !l.starts_with('#')) {
            let (name, mut labels, value) = parse_sample(line);
            if name == "rtgauge_latency_seconds_bucket" {
                let (k, le) = labels.pop().unwrap();
                assert_eq!(k, "le");
                buckets.entry(labels).or_default().push((le.parse().unwrap(), value));
            } else if name == "rtgauge_latency_seconds_count" {
                counts.insert(labels, value);
            }
        }
        for (labels, b) in &buckets {
            assert!(b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "{labels:?}: {b:?}");
            assert_eq!(b.last().unwrap(), &(f64::INFINITY, counts[labels]), "{labels:?}");
        }
        assert_eq!(buckets.len(), counts.len());
        buckets.len()
    }

    #[test]
    fn the_exposition_fits_the_room_made_for_it() {
        let mut s = hostile();
        s.bounds_ns = Arc::from((1..=100).map(|i| 3_600_000_000_000 - i * 7_777).rev().collect::<Vec<u64>>());
        for f in &mut s.series {
            (f.count, f.samples, f.missed, f.sum_ns) = (u64::MAX, u64::MAX, u64::MAX, u128::MAX);
            (f.window_max_ns, f.max_ns, f.cpu) = (Some(1_234_567_891), Some(3_599_999_999_999), usize::MAX);
            f.buckets = vec![u64::MAX; 100];
        }
        s.loads[0].restarts = u64::MAX;
        s.start_unix_s = 1_764_000_000.123_456_7;
        let series: Vec<String> =
            s.series.iter().map(|f| labels(&[("probe", &f.probe), ("series", &f.series), ("cpu", &f.cpu.to_string())])).collect();
        let loads: Vec<String> = s.loads.iter().map(|l| labels(&[("load", &l.name)])).collect();
        let info = info_labels(&s.info);
        let room = room(&info, &series, &loads, 100);
        for openmetrics in [false, true] {
            let e = render(&s, openmetrics);
            assert_eq!(cumulative(&e), 2);
            assert!(e.len() <= room, "{} bytes in room for {room}", e.len());
            assert!(e.capacity() < 2 * room, "the string was never grown");
        }
    }

    #[test]
    fn buckets_are_cumulative_and_end_at_the_count() {
        for openmetrics in [false, true] {
            assert_eq!(cumulative(&render(&two_cpus_two_loads(), openmetrics)), 2);
            assert_eq!(cumulative(&render(&hostile(), openmetrics)), 2);
        }
    }

    #[test]
    fn user_text_is_escaped_and_reads_back_exactly() {
        let s = hostile();
        for openmetrics in [false, true] {
            let e = render(&s, openmetrics);
            let samples: Vec<_> = e.lines().filter(|l| !l.starts_with('#')).map(parse_sample).collect();
            let label = |name: &str, key: &str| -> Vec<String> {
                samples
                    .iter()
                    .filter(|(n, _, _)| n == name)
                    .flat_map(|(_, l, _)| l.iter().filter(|(k, _)| k == key).map(|(_, v)| v.clone()))
                    .collect()
            };
            assert_eq!(label("rtgauge_run_info", "board"), [HOSTILE]);
            assert_eq!(label("rtgauge_run_info", "kernel"), [format!("{HOSTILE}\\")]);
            assert_eq!(label("rtgauge_run_info", "scenario"), ["\""]);
            assert_eq!(label("rtgauge_samples_total", "probe"), ["}", "timer"]);
            assert_eq!(label("rtgauge_samples_total", "series"), ["wakeup", HOSTILE]);
            assert_eq!(label("rtgauge_load_failed", "load"), ["stress-ng cpu", HOSTILE]);
            // One line per sample: no line feed of a label survived.
            let lines = e.lines().filter(|l| !l.starts_with('#')).count();
            assert_eq!(lines, 1 + 1 + 1 + 2 * (19 + 3) + 2 * 2 + 1 + 1 + 3 * 2);
        }
    }

    #[test]
    fn numbers_are_written_as_prometheus_writes_them() {
        let f = |v: f64| {
            let mut o = String::new();
            float(&mut o, v);
            o
        };
        for (v, text) in [
            (1e-9, "1e-09"),
            (1e-6, "1e-06"),
            (2e-6, "2e-06"),
            (5e-5, "5e-05"),
            (1.5e-7, "1.5e-07"),
            (1e-4, "0.0001"),
            (0.001, "0.001"),
            (0.25, "0.25"),
            (1.0, "1"),
            (0.0, "0"),
            (3600.0, "3600"),
            (123_456.0, "123456"),
            (1e6, "1e+06"),
            (1_234_567.0, "1.234567e+06"),
            (1e21, "1e+21"),
            (1e100, "1e+100"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(f(v), text, "{v}");
        }
        // Every bound of the widest range, and the sums' odd values, parse back exactly.
        let mut bounds = crate::vocab::buckets::parse("1ns..1h").unwrap();
        bounds.extend([3, 999, 1_234_567, 987_654_321_123, 3_599_999_999_999]);
        for ns in bounds {
            let v = ns as f64 / 1e9;
            assert_eq!(f(v).parse::<f64>(), Ok(v), "{ns} ns");
        }
    }

    #[test]
    fn openmetrics_when_asked_for_first() {
        let prometheus_2 = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        let prometheus_3 = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        for (accept, openmetrics) in [
            (Some(prometheus_2), true),
            (Some(prometheus_3), true),
            (Some("Application/OpenMetrics-Text; version=1.0.0"), true),
            (Some("text/plain;q=0.5, application/openmetrics-text;q=0.5"), true),
            (Some("text/plain;version=0.0.4;q=0.5,*/*;q=0.1"), false),
            (Some("application/openmetrics-text;q=0.3,text/plain;q=0.5"), false),
            (Some("application/openmetrics-text;q=0"), false),
            (Some("application/openmetrics-text;q=nonsense"), false),
            (Some("text/plain"), false),
            (Some("*/*"), false),
            (Some(""), false),
            (None, false),
        ] {
            assert_eq!(wants_openmetrics(accept), openmetrics, "{accept:?}");
        }
    }

    /// Debian's `promtool check metrics` (Prometheus's own parser and linter) on `e`.
    fn promtool(e: &str) -> Option<std::process::Output> {
        use std::io::Write as _;
        use std::process::{Command, Stdio};
        let mut child = Command::new("/usr/bin/promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .ok()?;
        child.stdin.take().unwrap().write_all(e.as_bytes()).unwrap();
        Some(child.wait_with_output().unwrap())
    }

    #[test]
    fn promtool_accepts_the_text_format() {
        if !std::path::Path::new("/usr/bin/promtool").exists() {
            // As the integration tests' `skip` (tests/common/mod.rs): a failure under CI, else a
            // line on the test binary's own standard error (not the captured output).
            assert!(
                std::env::var_os("CI").is_none_or(|v| v.is_empty()),
                "promtool is needed under CI (.ci/run installs prometheus)"
            );
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: promtool's check of the text format: no promtool (apt-get install prometheus)"
            );
            return;
        }
        let mut empty = two_cpus_two_loads();
        (empty.series, empty.loads) = (Vec::new(), Vec::new());
        for s in [two_cpus_two_loads(), hostile(), empty] {
            let e = render(&s, false);
            let out = promtool(&e).expect("promtool runs");
            println!(
                "promtool: {}\nstdout: {}stderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.status.success(), "promtool refused\n{e}");
        }
    }
}
