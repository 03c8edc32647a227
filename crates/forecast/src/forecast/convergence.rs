//! The worst case's convergence: when each new maximum came, from the timeline's per-window
//! maxima (the last one's exact time from `max_at_ns`).

use crate::result::forecast::{Convergence, Record};
use crate::result::timeline::TimelineData;

/// Records in the last half from which the worst case counts as still rising: a series of
/// independent, identically distributed window maxima has on average ln 2 ≈ 0.69 records in its
/// second half (the k-th value is a record with probability 1/k), and 3 or more in fewer than 1
/// run in 20 (P ≈ 0.034 for many windows, Poisson-like).
pub const RISING_RECORDS: u64 = 3;

/// The convergence of a series with timeline `t` over its measured span `[start_ns, end_ns]`
/// (from the start of the run), its maximum at `max_at_ns`, at `interval_ns` a period. `None`
/// without a window that holds a value.
pub fn of(t: &TimelineData, span: (u64, u64), max: Option<(u64, u64)>, interval_ns: u64) -> Option<Convergence> {
    let (start_ns, end_ns) = span;
    // (a timeline that does not fit the span — a document's, not a run's — has no records)
    if t.window_ns == 0
        || t.start_ns > end_ns
        || t.start_ns.saturating_add(t.len() as u64 * t.window_ns) > end_ns.saturating_add(t.window_ns)
    {
        return None;
    }
    let mut records: Vec<Record> = Vec::new();
    for (w, (&m, &c)) in t.max_ns.iter().zip(&t.count).enumerate() {
        if c == 0 || records.last().is_some_and(|r| m <= r.max_ns) {
            continue;
        }
        let at_ns = (t.start_ns + w as u64 * t.window_ns).max(start_ns);
        records.push(Record { at_ns, max_ns: m });
    }
    let last = records.last_mut()?;
    // The exact time of the run's maximum, where it is the last record's value.
    if let Some((max_ns, at)) = max {
        if max_ns == last.max_ns && at >= last.at_ns && at <= end_ns {
            last.at_ns = at;
        }
    }
    let last_rise_ns = last.at_ns;
    let span_ns = end_ns.saturating_sub(start_ns).max(1);
    let since = end_ns.saturating_sub(last_rise_ns);
    let half = start_ns + span_ns / 2;
    let records_last_half = records.iter().skip(1).filter(|r| r.at_ns >= half).count() as u64;
    Some(Convergence {
        start_ns,
        end_ns,
        last_rise_ns,
        periods_since: since / interval_ns.max(1),
        settled_percent: (since as f64 / span_ns as f64 * 1000.0).round() / 10.0,
        records_last_half,
        rising: records_last_half >= RISING_RECORDS,
        records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline(max: &[u64]) -> TimelineData {
        TimelineData {
            window_ns: 1_000_000_000,
            start_ns: 0,
            count: max.iter().map(|&m| u64::from(m > 0) * 1000).collect(),
            missed: vec![0; max.len()],
            max_ns: max.to_vec(),
            p99_ns: vec![0; max.len()],
        }
    }

    #[test]
    fn records_are_the_new_maxima_and_the_last_is_exact() {
        let t = timeline(&[5, 3, 7, 7, 0, 6, 9, 2, 1, 1]);
        let c = of(&t, (0, 10_000_000_000), Some((9, 6_400_000_000)), 1_000_000).unwrap();
        let got: Vec<(u64, u64)> = c.records.iter().map(|r| (r.at_ns, r.max_ns)).collect();
        assert_eq!(got, vec![(0, 5), (2_000_000_000, 7), (6_400_000_000, 9)]);
        assert_eq!(c.last_rise_ns, 6_400_000_000);
        assert_eq!(c.periods_since, 3600);
        assert_eq!(c.settled_percent, 36.0);
        assert_eq!(c.records_last_half, 1);
        assert!(!c.rising);
    }

    #[test]
    fn a_maximum_that_keeps_growing_is_rising() {
        let t = timeline(&[1, 1, 1, 1, 1, 2, 3, 4, 5, 6]);
        let c = of(&t, (0, 10_000_000_000), None, 1_000_000).unwrap();
        assert_eq!(c.records_last_half, 5);
        assert!(c.rising);
        assert!(of(&timeline(&[0, 0]), (0, 2_000_000_000), None, 1).is_none());
        // A timeline longer than the span, or of windows of no length: no records.
        assert!(of(&timeline(&[1, 2, 3]), (0, 1_000_000_000), None, 1).is_none());
        assert!(of(&TimelineData { window_ns: 0, ..timeline(&[1, 2]) }, (0, 2_000_000_000), None, 1).is_none());
    }
}
