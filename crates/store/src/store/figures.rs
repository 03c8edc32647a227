//! What the dashboard (`rtgauge serve`) reads of a run without loading its document: per series
//! (all CPUs together: the run's combined entries) the figures a long-term view plots and its
//! histogram in coarse log-spaced bins (the heat map's column), and the once-per-day return level
//! its forecast gives (the highest of its CPUs', when every CPU's forecast applies; the first
//! reason why not, otherwise); per run, the shortest cycle time it supports and its kernel
//! configuration's hash. Made from the document when a run is saved ([`figures_of`]: a document
//! of an older version gets its forecast made then, `crate::forecast::analyse`), kept in a table
//! of their own, filled for runs stored before by the layouts' migrations. A board page of
//! 1 000 runs reads these rows, not 1 000 documents.

use super::columns::{get, put};
use crate::result::board::Board;
use crate::result::forecast::Forecast;
use crate::result::verdict::Verdict;
use crate::result::{ProbeResult, RunResult};
use serde::Serialize;

/// The heat map's bins: bin 0 holds values under 1 µs; then `BINS_PER_DECADE` log-spaced bins
/// per decade from 1 µs to 10 s; the last bin holds 10 s and more.
pub const BIN_LOWEST_NS: u64 = 1_000;
pub const BINS_PER_DECADE: usize = 10;
pub const DECADES: usize = 7;
pub const BINS: usize = DECADES * BINS_PER_DECADE + 2;

/// The lowest value of every bin but the first (bin `i`'s at `i - 1`): 10^(k/10) µs rounded to
/// whole ns, k = 0 (1 µs) to 70 (10 s).
fn edges() -> &'static [u64; BINS - 1] {
    static EDGES: std::sync::OnceLock<[u64; BINS - 1]> = std::sync::OnceLock::new();
    EDGES.get_or_init(|| {
        std::array::from_fn(|k| (BIN_LOWEST_NS as f64 * 10f64.powf(k as f64 / BINS_PER_DECADE as f64)).round() as u64)
    })
}

/// The bin `ns` falls in.
pub fn bin_of(ns: u64) -> usize {
    // The number of edges at or below `ns`: 0 under 1 µs, `BINS - 1` at 10 s and above.
    edges().partition_point(|&e| e <= ns)
}

/// The lowest value of bin `i` and the lowest of the next (`None` for the last bin).
pub fn bin_range(i: usize) -> (u64, Option<u64>) {
    let e = edges();
    let low = if i == 0 { 0 } else { e[(i - 1).min(BINS - 2)] };
    (low, e.get(i).copied())
}

/// One series of one run (its combined entry: all CPUs together).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesFigures {
    /// Its place among the run's combined entries.
    pub entry: u32,
    /// As requirements name it: `timer`, `wakeup.task`.
    pub series: String,
    /// A latency that counts in a worst case and the cycle time (not a cycle length judged by
    /// bounds, an interval or a rate sweep): [`crate::result::ProbeResult::in_worst_case`].
    pub latency: bool,
    pub samples: u64,
    pub missed: u64,
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
    pub max_ns: Option<u64>,
    /// The histogram's counts in the bins above ([`BINS`] of them; empty for a series without a
    /// histogram).
    #[serde(skip)]
    pub bins: Vec<u64>,
    /// The latency exceeded on average once per day of operation at the series' period, as its
    /// forecast gives it (docs/forecast.md): the highest over the series' CPUs, when every CPU's
    /// forecast applies. `None` when one does not (`forecast_note` says why), for a series that
    /// counts in no worst case, and where the store keeps no forecast.
    pub day_level_ns: Option<u64>,
    /// Its 95 % interval: the highest of the CPUs' lower ends, and of their upper ends (`None`
    /// when a CPU's interval has no upper end: the data allow an arbitrarily heavy tail).
    pub day_low_ns: Option<u64>,
    pub day_high_ns: Option<u64>,
    /// Why there is no level: the first CPU whose forecast does not apply and its reason
    /// (`cpu2: <reason>`), or that the store keeps no forecast ([`NOT_KEPT`]); beside a level,
    /// the assumption it rests on untested (`cpu0: independence and stationarity assumed, ...`:
    /// another tool's histogram).
    pub forecast_note: Option<String>,
}

/// A series' note where the store keeps no forecast: a store of an older layout, read as it is.
pub const NOT_KEPT: &str = "this store's layout keeps no forecast; the next rtgauge run, import or push into it brings it up \
                            to date";

/// What the dashboard reads of one run besides its row.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Figures {
    /// The shortest cycle time the run's worst case supports (the verdict's).
    pub shortest_cycle_ns: Option<u64>,
    /// The SHA-256 of the kernel configuration it ran on, if recorded.
    pub kernel_config: Option<String>,
    /// Its series, in the order of the document's combined entries.
    pub series: Vec<SeriesFigures>,
    /// Whether its series' forecast fields were made (false: a store of an older layout, read as
    /// it is, keeps none; each latency series' `forecast_note` then says so).
    #[serde(skip)]
    pub forecasts: bool,
}

/// One board of the store: how many runs it has (among those a filter passes), when the first
/// and the last started, and the latest's id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoardRow {
    pub board: String,
    pub runs: u64,
    pub first_started_at: String,
    pub last_started_at: String,
    pub latest: i64,
}

/// The figures of a result, as the store keeps them. A series of a CPU that lacks its forecast
/// (a document of an older version, an import) gets one made for them
/// (`crate::forecast::analyses`); `r` is not changed.
pub fn figures_of(r: &RunResult) -> Figures {
    let made = crate::forecast::analyses(r);
    let forecast_of = |i: usize| -> Option<&Forecast> {
        r.probes[i].forecast.as_ref().or_else(|| made.iter().find(|a| a.series == i).map(|a| &a.forecast))
    };
    let mut f = figures_from(&r.combined, &r.verdict, r.board.as_ref());
    with_forecasts(&mut f, &r.combined, &r.probes, &forecast_of);
    f
}

/// The figures of a result from the parts of it they are made of, without the forecasts' (a
/// stored document may be read for these parts alone: [`super::figures_of_document`]).
pub(super) fn figures_from(combined: &[ProbeResult], verdict: &Verdict, board: Option<&Board>) -> Figures {
    Figures {
        shortest_cycle_ns: verdict.shortest_cycle_time_ns,
        kernel_config: board.and_then(|b| b.kernel_config.as_ref()).map(|k| k.sha256.clone()),
        series: combined.iter().enumerate().map(|(i, p)| series_of(i, p)).collect(),
        forecasts: false,
    }
}

/// `f`'s series (made from `combined`) with their once-per-day return level, from the forecasts
/// of the CPUs' entries (`probes`) as they are.
pub(super) fn with_forecasts<'a>(
    f: &mut Figures,
    combined: &[ProbeResult],
    probes: &'a [ProbeResult],
    forecast_of: &dyn Fn(usize) -> Option<&'a Forecast>,
) {
    for (s, c) in f.series.iter_mut().zip(combined) {
        let (level, note) = day_level(c, probes, forecast_of);
        (s.day_level_ns, s.day_low_ns, s.day_high_ns) = match level {
            Some((l, low, high)) => (Some(l), Some(low), high),
            None => (None, None, None),
        };
        s.forecast_note = note;
    }
    f.forecasts = true;
}

/// `f` as a store that keeps no forecast gives it: no level, and each latency series' note says
/// why ([`NOT_KEPT`]).
pub fn without_forecasts(f: &mut Figures) {
    for s in &mut f.series {
        (s.day_level_ns, s.day_low_ns, s.day_high_ns) = (None, None, None);
        s.forecast_note = s.latency.then(|| NOT_KEPT.to_string());
    }
    f.forecasts = false;
}

/// A return level in ns: the level, the low and (if any) the high end of its interval.
type Level = (u64, u64, Option<u64>);

/// The once-per-day return level of the combined entry `c` over its CPUs' entries in `probes`:
/// (level, low, high) in ns, the highest of each when every CPU's forecast applies; else no
/// level and the first CPU's reason why not. Nothing for a series that counts in no worst case.
fn day_level<'a>(
    c: &ProbeResult,
    probes: &'a [ProbeResult],
    forecast_of: &dyn Fn(usize) -> Option<&'a Forecast>,
) -> (Option<Level>, Option<String>) {
    if !c.in_worst_case() {
        return (None, None);
    }
    let ns = |v: f64| v.round() as u64;
    let mut best: Option<(f64, f64, Option<f64>)> = None;
    // (a level that rests on an assumption its data could not test is given with it)
    let mut assumed: Option<String> = None;
    for (i, p) in probes.iter().enumerate().filter(|(_, p)| p.cpu.is_some() && p.probe == c.probe && p.series == c.series) {
        let level = match forecast_of(i) {
            _ if p.samples == 0 => Err("it measured no value".to_string()),
            None => Err("no forecast was made".to_string()),
            Some(f) if !f.applies() => Err(f.not_applicable.clone().unwrap_or_else(|| "no fit".to_string())),
            Some(f) if f.interval_ns == 0 => {
                Err("the period is not known (the file does not say it): the forecast gives levels per periods, not per day"
                    .to_string())
            }
            Some(f) => {
                if let (Some(a), None) = (&f.assumed, &assumed) {
                    assumed = Some(format!("{}: {a}", p.scope()));
                }
                f.return_levels.iter().find(|l| l.horizon == "1d").ok_or_else(|| "no once-per-day level".to_string())
            }
        };
        let l = match level {
            Ok(l) => l,
            Err(why) => return (None, Some(format!("{}: {why}", p.scope()))),
        };
        best = Some(match best {
            None => (l.level_ns, l.low_ns, l.high_ns),
            Some((level, low, high)) => (level.max(l.level_ns), low.max(l.low_ns), high.zip(l.high_ns).map(|(a, b)| a.max(b))),
        });
    }
    // (a level past what a latency histogram holds, one hour, is kept as a note, not a number)
    let most = crate::result::histogram::HIST_HIGHEST_NS as f64;
    match best {
        Some((level, _, _)) if level > most => (
            None,
            Some(format!(
                "the once-per-day level forecast lies beyond {} (a heavy tail)",
                crate::vocab::units::Nanos(most as u64)
            )),
        ),
        Some((level, low, high)) => (Some((ns(level), ns(low), high.filter(|&h| h <= most).map(ns))), assumed),
        None => (None, Some("no CPU's entry of it to forecast from".to_string())),
    }
}

/// One combined entry's figures.
fn series_of(entry: usize, p: &ProbeResult) -> SeriesFigures {
    let mut bins = Vec::new();
    for [lowest, _, count] in p.histogram.buckets.triples() {
        if bins.is_empty() {
            bins = vec![0; BINS];
        }
        bins[bin_of(lowest)] += count;
    }
    SeriesFigures {
        entry: u32::try_from(entry).unwrap_or(u32::MAX),
        series: p.label(),
        latency: p.in_worst_case(),
        samples: p.samples,
        missed: p.missed,
        p99_ns: p.percentiles.get(99.0).flatten(),
        p999_ns: p.percentiles.get(99.9).flatten(),
        max_ns: p.max_ns,
        bins,
        day_level_ns: None,
        day_low_ns: None,
        day_high_ns: None,
        forecast_note: None,
    }
}

/// Bins as the store keeps them: LEB128 varints — how many bins (0 or [`BINS`]), then for each
/// non-empty bin how many empty ones it follows and its count. A series' bins take a few dozen
/// bytes.
pub fn encode_bins(bins: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    put(&mut out, bins.len() as u64);
    let mut skipped = 0u64;
    for &n in bins {
        if n == 0 {
            skipped += 1;
            continue;
        }
        put(&mut out, skipped);
        put(&mut out, n);
        skipped = 0;
    }
    out
}

/// [`encode_bins`] read back; `None` for bytes it did not write.
pub fn decode_bins(bytes: &[u8]) -> Option<Vec<u64>> {
    let mut at = 0;
    let len = usize::try_from(get(bytes, &mut at)?).ok().filter(|&l| l <= BINS)?;
    let mut bins = vec![0; len];
    let mut i = 0usize;
    while at < bytes.len() {
        i = i.checked_add(usize::try_from(get(bytes, &mut at)?).ok()?)?;
        *bins.get_mut(i)? = get(bytes, &mut at)?;
        i += 1;
    }
    Some(bins)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bins_are_log_spaced_from_1_us_to_10_s() {
        assert_eq!(bin_range(0), (0, Some(1_000)));
        assert_eq!(bin_range(1), (1_000, Some(1_259)));
        assert_eq!(bin_range(BINS_PER_DECADE + 1).0, 10_000);
        assert_eq!(bin_range(BINS - 2).1, Some(10_000_000_000));
        assert_eq!(bin_range(BINS - 1), (10_000_000_000, None));
        for i in 0..BINS {
            let (low, next) = bin_range(i);
            assert_eq!(bin_of(low), i, "bin {i}");
            if let Some(next) = next {
                assert!(next > low, "bin {i}: {low}..{next}");
                assert_eq!(bin_of(next - 1), i, "bin {i}");
                assert_eq!(bin_range(i + 1).0, next);
            }
        }
        assert_eq!(bin_of(0), 0);
        assert_eq!(bin_of(999), 0);
        assert_eq!(bin_of(u64::MAX), BINS - 1);
    }

    #[test]
    fn a_histograms_buckets_sum_into_the_bins() {
        let mut h = crate::result::histogram::new_histogram();
        for v in [1u64, 500, 999, 1_000, 1_500, 20_000, 20_001, 3_000_000, 9_999_999_999, 10_000_000_000, 3_000_000_000_000] {
            h.record(v).unwrap();
        }
        h.record_n(45_000, 1_000).unwrap();
        let data = crate::result::histogram::HistogramData::encode(&h);
        let bins = series_of(0, &probe(data.clone())).bins;
        assert_eq!(bins.len(), BINS);
        assert_eq!(bins.iter().sum::<u64>(), data.total_count);
        assert_eq!(bins[0], 3);
        assert_eq!((bins[1], bins[bin_of(1_500)]), (1, 1));
        assert_eq!(bins[bin_of(45_000)], 1_000);
        // A bucket counts in the bin of its lowest value: HdrHistogram's bucket of 10 s itself
        // starts below it.
        assert_eq!(bins[BINS - 2], 2);
        assert_eq!(bins[BINS - 1], 1);
        let empty = crate::result::histogram::HistogramData::encode(&crate::result::histogram::new_histogram());
        assert!(series_of(0, &probe(empty)).bins.is_empty());
    }

    #[test]
    fn bins_are_kept_in_a_few_bytes_and_read_back_whole() {
        let mut bins = vec![0u64; BINS];
        bins[3] = 1;
        bins[4] = 300;
        bins[BINS - 1] = u64::MAX;
        let bytes = encode_bins(&bins);
        assert!(bytes.len() < 24, "{bytes:?}");
        assert_eq!(decode_bins(&bytes), Some(bins));
        assert_eq!(decode_bins(&encode_bins(&[])), Some(Vec::new()));
        assert_eq!(encode_bins(&[]), [0]);
        assert_eq!(decode_bins(&[]), None);
        assert_eq!(decode_bins(&[BINS as u8, BINS as u8, 1]), None, "a bin past the last");
        assert_eq!(decode_bins(&[BINS as u8 + 1]), None);
        assert_eq!(decode_bins(&[BINS as u8, 0, 0x80]), None, "a varint cut short");
    }

    fn probe(histogram: crate::result::histogram::HistogramData) -> ProbeResult {
        let mut p: ProbeResult = serde_json::from_value(serde_json::json!({
            "probe": "timer", "cpu": null, "samples": 5, "missed": 0, "warmup_samples": 0, "warmup_missed": 0,
            "handoff_overflows": 0, "min_ns": null, "mean_ns": null, "max_ns": null, "max_at_ns": null,
            "histogram": {"encoding": "x", "lowest_ns": 1, "highest_ns": 2, "significant_digits": 3,
                          "total_count": 0, "data": "", "buckets": []}
        }))
        .unwrap();
        p.histogram = histogram;
        p
    }
}
