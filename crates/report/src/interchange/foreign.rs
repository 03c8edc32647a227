//! The other tools' JSON results, told apart by their content: cyclictest's and oslat's `--json`
//! (rt-tests 2.x: `cmdline:` and a `thread` object; oslat's threads have a counter `freq`), and
//! jitterdebugger's `results.json` (a `cpu` object). Read as a stream into [`Doc`], which keeps
//! the few fields rtgauge uses and skips the rest; each histogram goes straight into
//! [`Counts`] in ns, so the unit (which the file may state after its histograms) is read
//! first, in a pass that skips the histograms ([`Doc::sniff`]).

use super::counts::{count, latency, mean, Counts, Num, Text};
use super::{option_value, rfc2822_to_rfc3339, Foreign, ForeignSeries, MAX_SERIES};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use std::fmt;

/// What a foreign JSON result holds that rtgauge uses.
#[derive(Debug, Default)]
pub struct Doc {
    /// An rtgauge result's layout (`rtgauge.result.v2`).
    pub schema: Option<String>,
    pub cmdline: Option<String>,
    pub rt_test_version: Option<String>,
    pub start_time: Option<String>,
    pub end_time: Option<String>,
    /// jitterdebugger's results.json version.
    pub version: Option<Num>,
    pub sysinfo: Sys,
    /// The `thread` object (rt-tests), by thread number.
    pub threads: Option<Vec<(u64, Thread)>>,
    /// The `cpu` object (jitterdebugger), by CPU number.
    pub cpus: Option<Vec<(u64, Thread)>>,
}

/// An rt-tests or jitterdebugger `sysinfo` object.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct Sys {
    pub nodename: Text,
    pub release: Text,
    pub version: Text,
    pub machine: Text,
    pub realtime: Option<Num>,
    pub resolution_in_ns: Option<Num>,
}

/// One thread (rt-tests) or CPU (jitterdebugger).
#[derive(Debug, Default)]
pub struct Thread {
    pub histogram: Option<Hist>,
    pub cycles: Option<Num>,
    pub count: Option<Num>,
    pub min: Option<Num>,
    pub avg: Option<Num>,
    pub max: Option<Num>,
    pub cpu: Option<Num>,
    pub freq: Option<Num>,
    pub duration: Option<Num>,
}

/// A histogram object `{"VALUE": COUNT}` read in ns; values from `open_from` on are counted
/// apart (oslat's last bucket holds every value from there on).
#[derive(Debug, Default)]
pub struct Hist {
    pub counts: Counts,
    pub open: u64,
}

/// How to read the histograms: in units of `unit_ns`, or not at all (`None`: skipped).
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    pub unit_ns: Option<u64>,
    pub open_from: Option<u64>,
}

impl Doc {
    /// Everything but the histograms (skipped), to learn the format and its unit.
    pub fn sniff<R: std::io::Read>(r: R) -> Result<Doc, serde_json::Error> {
        Doc::read(r, Reading { unit_ns: None, open_from: None })
    }

    /// The whole document, histograms as `how` says.
    pub fn read<R: std::io::Read>(r: R, how: Reading) -> Result<Doc, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_reader(r);
        let doc = how.deserialize(&mut de)?;
        de.end()?;
        Ok(doc)
    }

    /// The tool of an rt-tests command line (`/usr/bin/oslat …` → `oslat`).
    fn tool(&self) -> Option<&str> {
        self.cmdline.as_deref().and_then(|c| c.split_whitespace().next()).map(|t| t.rsplit('/').next().unwrap_or(t))
    }

    pub fn is_oslat(&self) -> bool {
        self.tool() == Some("oslat") || self.threads.iter().flatten().any(|(_, t)| t.freq.is_some())
    }

    /// How to read this document's histograms (its unit), as [`Doc::sniff`] found it.
    pub fn reading(&self) -> Result<Reading, crate::vocab::Error> {
        self.reading_text().map_err(crate::vocab::Error::Invalid)
    }

    /// [`Self::reading`], its failure as text.
    fn reading_text(&self) -> Result<Reading, String> {
        if self.threads.is_some() && self.is_oslat() {
            let buckets = oslat_buckets(self)?;
            Ok(Reading {
                unit_ns: Some(1000),
                open_from: Some(buckets.checked_mul(1000).ok_or("-b is beyond any bucket count")?),
            })
        } else if self.threads.is_some() {
            Ok(Reading {
                unit_ns: Some(super::cyclictest::unit_ns(self.cmdline.as_deref().unwrap_or_default())),
                open_from: None,
            })
        } else if self.cpus.is_some() {
            Ok(Reading { unit_ns: Some(jitterdebugger_unit(self)?), open_from: None })
        } else {
            Err("not a result rtgauge can import: neither cyclictest or oslat --json (a 'thread' object), jitterdebugger's \
                 results.json (a 'cpu' object), nor an rtgauge result"
                .into())
        }
    }
}

impl<'de> DeserializeSeed<'de> for Reading {
    type Value = Doc;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Doc, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Reading {
    type Value = Doc;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Doc, A::Error> {
        let mut doc = Doc::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "schema" => doc.schema = map.next_value::<Text>()?.0,
                "cmdline:" => doc.cmdline = map.next_value::<Text>()?.0,
                "rt_test_version:" => doc.rt_test_version = map.next_value::<Text>()?.0,
                "start_time" => doc.start_time = map.next_value::<Text>()?.0,
                "end_time" => doc.end_time = map.next_value::<Text>()?.0,
                "version" => doc.version = map.next_value::<super::counts::MaybeNum>()?.0,
                "sysinfo" => doc.sysinfo = map.next_value()?,
                "thread" => doc.threads = map.next_value_seed(Members { how: self, what: "thread" })?,
                "cpu" => doc.cpus = map.next_value_seed(Members { how: self, what: "cpu" })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(doc)
    }
}

/// The `thread` or `cpu` object: members by number (`None`: the value is not an object).
#[derive(Clone, Copy)]
struct Members {
    how: Reading,
    what: &'static str,
}

impl<'de> DeserializeSeed<'de> for Members {
    type Value = Option<Vec<(u64, Thread)>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Members {
    type Value = Option<Vec<(u64, Thread)>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a '{}' object", self.what)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let n = out.len() + 1;
            let number = key
                .parse::<u64>()
                .map_err(|_| de::Error::custom(format!("{} key #{n} is not a {} number", self.what, self.what)))?;
            if out.len() == MAX_SERIES {
                return Err(de::Error::custom(format!("more than {MAX_SERIES} {}s: more than rtgauge imports", self.what)));
            }
            let what = format!("{} {number}", self.what);
            out.push((number, map.next_value_seed(Member { how: self.how, what: &what })?));
        }
        Ok(Some(out))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// One thread or CPU.
struct Member<'a> {
    how: Reading,
    what: &'a str,
}

impl<'de> DeserializeSeed<'de> for Member<'_> {
    type Value = Thread;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Thread, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Member<'_> {
    type Value = Thread;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} as an object", self.what)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Thread, A::Error> {
        let mut t = Thread::default();
        while let Some(key) = map.next_key::<String>()? {
            let slot = match key.as_str() {
                "histogram" => {
                    t.histogram = match self.how.unit_ns {
                        None => {
                            map.next_value::<IgnoredAny>()?;
                            Some(Hist::default())
                        }
                        Some(unit_ns) => {
                            Some(map.next_value_seed(HistSeed { unit_ns, open_from: self.how.open_from, what: self.what })?)
                        }
                    };
                    continue;
                }
                "cycles" => &mut t.cycles,
                "count" => &mut t.count,
                "min" => &mut t.min,
                "avg" => &mut t.avg,
                "max" => &mut t.max,
                "cpu" => &mut t.cpu,
                "freq" => &mut t.freq,
                "duration" => &mut t.duration,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = map.next_value()?;
        }
        Ok(t)
    }
}

struct HistSeed<'a> {
    unit_ns: u64,
    open_from: Option<u64>,
    what: &'a str,
}

impl<'de> DeserializeSeed<'de> for HistSeed<'_> {
    type Value = Hist;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Hist, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for HistSeed<'_> {
    type Value = Hist;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}'s histogram as an object", self.what)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Hist, A::Error> {
        let what = self.what;
        let mut h = Hist::default();
        let mut entries = 0u64;
        while let Some(key) = map.next_key::<String>()? {
            entries += 1;
            let value = key
                .parse::<u64>()
                .map_err(|_| de::Error::custom(format!("{what}: histogram bucket #{entries} is not a number")))?;
            let n = count(map.next_value::<Num>()?, &format!("{what}: the count of histogram bucket {value}"))
                .map_err(de::Error::custom)?;
            let ns =
                latency(Num::U(value), self.unit_ns, &format!("{what}: histogram bucket {value}")).map_err(de::Error::custom)?;
            if self.open_from.is_some_and(|o| ns >= o) {
                h.open =
                    h.open.checked_add(n).filter(|&o| o <= super::counts::MAX_COUNT).ok_or_else(|| {
                        de::Error::custom(format!("{what}: a histogram holding more than a measurement counts"))
                    })?;
            } else {
                h.counts.add(ns, n).map_err(|e| de::Error::custom(format!("{what}: {e}")))?;
            }
        }
        Ok(h)
    }
}

/// The longest measurement an imported file may say it took, in s (a year).
const MAX_DURATION_S: f64 = 366.0 * 86_400.0;

/// What every rt-tests 2.x `--json` file says of itself (tool version, times, command line,
/// system), around the `series` read from it.
pub fn rt_tests(
    doc: &Doc,
    mtime: &str,
    (tool, format, probe): (&'static str, &'static str, &'static str),
    series: Vec<ForeignSeries>,
) -> Foreign {
    // RFC 2822 as rt-tests writes, or RFC 3339 (rtgauge's export); else the file's time.
    let read = |t: &str| {
        rfc2822_to_rfc3339(t).or_else(|| {
            let t = chrono::DateTime::parse_from_rfc3339(t.trim()).ok()?;
            Some(t.with_timezone(&chrono::Utc).format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        })
    };
    let time = |t: &Option<String>| t.as_deref().and_then(read).unwrap_or_else(|| mtime.into());
    let dated = doc.start_time.as_deref().and_then(read).is_some();
    let mut f = Foreign {
        tool,
        tool_version: doc.rt_test_version.clone(),
        format,
        probe,
        started_at: time(&doc.start_time),
        ended_at: time(&doc.end_time),
        command_line: doc.cmdline.clone(),
        series,
        unknown: if dated { Vec::new() } else { vec!["started_at"] },
        ..Default::default()
    };
    system_from(&doc.sysinfo, &mut f);
    f
}

/// Host and kernel from an rt-tests or jitterdebugger `sysinfo` object.
pub fn system_from(sys: &Sys, f: &mut Foreign) {
    let text = |t: &Text| t.0.clone().unwrap_or_else(|| "unknown".into());
    f.host = text(&sys.nodename);
    f.kernel_release = text(&sys.release);
    f.kernel_version = text(&sys.version);
    f.machine = text(&sys.machine);
    f.realtime = sys.realtime.map(|r| r == Num::U(1));
}

/// A member's CPU: its `cpu` field, else its number.
pub fn cpu_of(number: u64, t: &Thread, what: &str) -> Result<usize, crate::vocab::Error> {
    cpu_of_text(number, t, what).map_err(crate::vocab::Error::Invalid)
}

/// [`cpu_of`], its failure as text.
fn cpu_of_text(number: u64, t: &Thread, what: &str) -> Result<usize, String> {
    let cpu = match t.cpu {
        Some(n) => count(n, &format!("{what}: cpu"))?,
        None => number,
    };
    usize::try_from(cpu).ok().filter(|&c| c < super::MAX_CPU).ok_or_else(|| format!("{what}: cpu {cpu} is beyond any CPU number"))
}

/// A required number of a member.
pub fn required(n: Option<Num>, key: &str, what: &str) -> Result<Num, crate::vocab::Error> {
    required_text(n, key, what).map_err(crate::vocab::Error::Invalid)
}

/// [`required`], its failure as text.
fn required_text(n: Option<Num>, key: &str, what: &str) -> Result<Num, String> {
    n.ok_or_else(|| format!("{what} has no number '{key}'"))
}

/// The buckets oslat was given (`-b`, 32 by default).
fn oslat_buckets(doc: &Doc) -> Result<u64, String> {
    match option_value(doc.cmdline.as_deref().unwrap_or_default(), "-b", "--bucket-size") {
        None => Ok(32),
        Some(b) => b
            .parse()
            .ok()
            .filter(|&b| (1..=1_000_000).contains(&b))
            .ok_or_else(|| "oslat's -b is not a bucket count from 1 to 1000000".into()),
    }
}

/// jitterdebugger's unit (`sysinfo.resolution_in_ns`, 1000 when absent): 1 ns to 1 ms.
fn jitterdebugger_unit(doc: &Doc) -> Result<u64, String> {
    match doc.sysinfo.resolution_in_ns {
        None => Ok(1000),
        Some(n) => count(n, "sysinfo.resolution_in_ns")
            .ok()
            .filter(|u| (1..=1_000_000).contains(u))
            .ok_or_else(|| "sysinfo.resolution_in_ns is not a resolution (a whole number of ns from 1 to 1000000)".into()),
    }
}

/// A foreign JSON result of any supported tool, its histograms read `how` ([`Doc::reading`]).
pub fn from_doc(doc: &Doc, how: Reading, mtime: &str) -> Result<Foreign, crate::vocab::Error> {
    from_doc_text(doc, how, mtime).map_err(crate::vocab::Error::Invalid)
}

/// [`from_doc`], its failure as text.
fn from_doc_text(doc: &Doc, how: Reading, mtime: &str) -> Result<Foreign, String> {
    if doc.reading().map(|r| (r.unit_ns, r.open_from)) != Ok((how.unit_ns, how.open_from)) {
        return Err(
            "the file changed while it was read (its unit is not the one read first); import it once it is written".into()
        );
    }
    if doc.threads.is_some() && doc.is_oslat() {
        oslat_json(doc, how, mtime)
    } else if doc.threads.is_some() {
        Ok(super::cyclictest::from_json(doc, how, mtime)?)
    } else {
        jitterdebugger_json(doc, how, mtime)
    }
}

/// jitterdebugger's `results.json`: per CPU a histogram, count, min, max, avg in units of
/// `sysinfo.resolution_in_ns`; samples beyond its histogram are absent from it.
fn jitterdebugger_json(doc: &Doc, how: Reading, mtime: &str) -> Result<Foreign, String> {
    let unit = how.unit_ns.unwrap_or(1000);
    let mut series = Vec::new();
    for (number, c) in doc.cpus.iter().flatten() {
        let what = format!("cpu {number}");
        let hist = c.histogram.as_ref().ok_or_else(|| format!("{what} has no histogram"))?;
        let samples = count(required(c.count, "count", &what)?, &format!("{what}: count"))?;
        let s = ForeignSeries {
            cpu: cpu_of(*number, &Thread::default(), &what)?,
            samples,
            min_ns: Some(latency(required(c.min, "min", &what)?, unit, &format!("{what}: min"))?),
            mean_ns: Some(mean(required(c.avg, "avg", &what)?, unit, &format!("{what}: avg"))?),
            max_ns: Some(latency(required(c.max, "max", &what)?, unit, &format!("{what}: max"))?),
            overflows: samples.checked_sub(hist.counts.total()).ok_or_else(|| {
                format!("{what}: its histogram holds {} samples but its count is {samples}", hist.counts.total())
            })?,
            histogram: Some(hist.counts.clone()),
            interval_ns: None,
        };
        s.check(&what, unit)?;
        series.push(s);
    }
    series.sort_by_key(|s| s.cpu);
    let mut f = Foreign {
        tool: "jitterdebugger",
        tool_version: doc.version.and_then(|n| count(n, "version").ok()).map(|n| format!("results.json version {n}")),
        format: "jitterdebugger-json",
        probe: crate::probe::registry::of_tool("jitterdebugger"),
        resolution_ns: unit,
        started_at: mtime.into(),
        ended_at: mtime.into(),
        series,
        ..Default::default()
    };
    system_from(&doc.sysinfo, &mut f);
    f.unknown = vec!["config.policy", "config.priority", "config.mlockall", "config.interval_ns", "config.warmup", "started_at"];
    f.notes = vec![
        "imported from jitterdebugger, which counts no missed periods: 'missed' is 0 by construction".into(),
        "jitterdebugger's results.json holds no interval, priority or time: the time is the file's".into(),
    ];
    Ok(f)
}

/// oslat's `--json`: per thread a histogram of loop times (µs; its last bucket holds every
/// value from the bucket count on), min, avg, max and the duration.
fn oslat_json(doc: &Doc, how: Reading, mtime: &str) -> Result<Foreign, String> {
    let command_line = doc.cmdline.clone().unwrap_or_default();
    let buckets = how.open_from.unwrap_or(32_000) / 1000;
    let mut series = Vec::new();
    let mut duration_s: f64 = 0.0;
    for (number, t) in doc.threads.iter().flatten() {
        let what = format!("thread {number}");
        let hist = t.histogram.as_ref().ok_or_else(|| format!("{what} has no histogram"))?;
        // The last bucket is open-ended: its values are counted at the maximum (an upper bound).
        let samples = hist
            .counts
            .total()
            .checked_add(hist.open)
            .filter(|&s| s <= super::counts::MAX_COUNT)
            .ok_or_else(|| format!("{what}: its histogram holds more than a measurement counts"))?;
        if let Some(d) = t.duration {
            let d = match d {
                Num::U(v) => v as f64,
                Num::I(v) => v as f64,
                Num::F(f) => f,
            };
            if !(0.0..=MAX_DURATION_S).contains(&d) {
                return Err(format!("{what}: duration is not a duration (0 to a year, in s)"));
            }
            duration_s = duration_s.max(d);
        }
        let s = ForeignSeries {
            cpu: cpu_of(*number, t, &what)?,
            samples,
            min_ns: Some(latency(required(t.min, "min", &what)?, 1000, &format!("{what}: min"))?),
            mean_ns: Some(mean(required(t.avg, "avg", &what)?, 1000, &format!("{what}: avg"))?),
            max_ns: Some(latency(required(t.max, "max", &what)?, 1000, &format!("{what}: max"))?),
            histogram: Some(hist.counts.clone()),
            overflows: hist.open,
            interval_ns: None,
        };
        s.check(&what, 1000)?;
        series.push(s);
    }
    series.sort_by_key(|s| s.cpu);
    let mut f = rt_tests(doc, mtime, ("oslat", "oslat-json", crate::probe::registry::of_tool("oslat")), series);
    f.resolution_ns = 1000;
    f.priority = option_value(&command_line, "-f", "--rtprio").and_then(|p| p.parse().ok());
    // oslat's loop has no interval; its file says nothing of locked memory or a warm-up.
    f.unknown = vec!["config.mlockall", "config.interval_ns", "config.warmup"];
    if doc.cmdline.is_none() {
        f.unknown.extend(["config.policy", "config.priority"]);
    }
    // (at most a year: 3.2e16 ns)
    f.measured_ns = Some((duration_s * 1e9) as u64);
    f.notes = vec![format!(
        "imported from oslat: samples are its busy loop's iterations, values their lengths; its last bucket (from {buckets} µs \
         on) is counted at each CPU's maximum, so percentiles that reach it are upper bounds"
    )];
    Ok(f)
}
