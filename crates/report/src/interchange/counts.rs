//! The figures of an imported file, checked as they are read: numbers of any JSON spelling
//! ([`Num`]) turned into counts and latencies only when they are in range, and a histogram kept
//! as counts per HdrHistogram bucket ([`Counts`]), allocated only where values fall, so that
//! memory follows what is kept, not the file's size. Every sum is checked: nothing wraps.

use crate::result::histogram::{bucket_range, index_of, HIST_HIGHEST_NS};
use hdrhistogram::Histogram;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The largest count an imported file may hold, per histogram and per series: a sample every
/// nanosecond for 104 days, and the largest integer a mean's floating-point arithmetic holds
/// exactly. No tool prints more; a file that does was not printed by one.
pub const MAX_COUNT: u64 = 1 << 53;

/// The largest latency an imported file may hold (one hour, the top of rtgauge's histograms):
/// a longer "latency" is a unit or an edit gone wrong, not a measurement.
pub const MAX_LATENCY_NS: u64 = HIST_HIGHEST_NS;

/// A JSON number however it is spelt (`5`, `-5`, `5.0`, `5e3`); checked before use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    U(u64),
    I(i64),
    F(f64),
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Num, E> {
                Ok(Num::U(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Num, E> {
                Ok(if v >= 0 { Num::U(v.unsigned_abs()) } else { Num::I(v) })
            }
            fn visit_f64<E>(self, v: f64) -> Result<Num, E> {
                Ok(Num::F(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// A count (cycles, a histogram bucket's count): a whole number from 0 to [`MAX_COUNT`].
pub(super) fn count(n: Num, what: &str) -> Result<u64, String> {
    let v = match n {
        Num::U(v) => Some(v),
        Num::F(f) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= MAX_COUNT as f64 => Some(f as u64),
        _ => None,
    };
    match (v, n) {
        (Some(v), _) if v <= MAX_COUNT => Ok(v),
        (_, Num::I(_)) => Err(format!("{what} is negative")),
        (_, Num::F(f)) if f.is_finite() && f >= 0.0 && f.fract() != 0.0 => Err(format!("{what} is not a whole number")),
        _ => Err(format!("{what} is beyond what a measurement counts (at most 2^53)")),
    }
}

/// A latency of `n` units of `unit_ns` each, in ns: at least 0, at most [`MAX_LATENCY_NS`]
/// (fractions of a unit are kept to the ns, truncated).
pub(super) fn latency(n: Num, unit_ns: u64, what: &str) -> Result<u64, String> {
    let ns = match n {
        Num::U(v) => v.checked_mul(unit_ns),
        Num::F(f) if f.is_finite() && f >= 0.0 => {
            let ns = f * unit_ns as f64;
            (ns <= MAX_LATENCY_NS as f64).then_some(ns as u64)
        }
        Num::I(_) => return Err(format!("{what} is negative: not a latency")),
        Num::F(_) => return Err(format!("{what} is negative or not a number: not a latency")),
    };
    ns.filter(|&ns| ns <= MAX_LATENCY_NS).ok_or_else(|| format!("{what} is beyond an hour: not a latency (a wrong unit?)"))
}

/// A mean latency of `n` units of `unit_ns`, in ns (checked as [`latency`]).
pub(super) fn mean(n: Num, unit_ns: u64, what: &str) -> Result<f64, String> {
    let v = match n {
        Num::U(v) => v as f64,
        Num::F(f) => f,
        Num::I(v) => v as f64,
    };
    let ns = v * unit_ns as f64;
    if !ns.is_finite() || ns < 0.0 {
        return Err(format!("{what} is negative or not a number: not a latency"));
    }
    if ns > MAX_LATENCY_NS as f64 {
        return Err(format!("{what} is beyond an hour: not a latency (a wrong unit?)"));
    }
    Ok(ns)
}

/// A number, when the value is one; any other value reads as `None` and is skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MaybeNum(pub Option<Num>);

impl<'de> Deserialize<'de> for MaybeNum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MaybeNum, D::Error> {
        let t = d.deserialize_any(Loose { numbers: true })?;
        Ok(MaybeNum(t.1))
    }
}

/// A string, when the value is one; any other value (a number, an object) reads as `None`
/// and is skipped without being kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Text(pub Option<String>);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        Ok(Text(d.deserialize_any(Loose { numbers: false })?.0))
    }
}

/// Takes any value, keeping it only when it is a string or (`numbers`) a number; whatever else
/// is skipped without being kept.
struct Loose {
    numbers: bool,
}

type Kept = (Option<String>, Option<Num>);

impl<'de> Visitor<'de> for Loose {
    type Value = Kept;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_str<E>(self, v: &str) -> Result<Kept, E> {
        Ok((Some(v.to_string()), None))
    }
    fn visit_string<E>(self, v: String) -> Result<Kept, E> {
        Ok((Some(v), None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Kept, E> {
        Ok((None, None))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Kept, E> {
        Ok((None, self.numbers.then_some(if v >= 0 { Num::U(v.unsigned_abs()) } else { Num::I(v) })))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Kept, E> {
        Ok((None, self.numbers.then_some(Num::U(v))))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Kept, E> {
        Ok((None, self.numbers.then_some(Num::F(v))))
    }
    fn visit_unit<E>(self) -> Result<Kept, E> {
        Ok((None, None))
    }
    fn visit_none<E>(self) -> Result<Kept, E> {
        Ok((None, None))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Kept, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Kept, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok((None, None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Kept, A::Error> {
        while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok((None, None))
    }
}

/// Counts per HdrHistogram bucket (the project-wide layout), in chunks allocated only where
/// values fall; with the exact total, sum and extremes of what was added.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    chunks: Vec<Option<Box<[u64; CHUNK]>>>,
    total: u64,
    sum: u128,
    range: Option<(u64, u64)>,
}

const CHUNK: usize = 64;

impl Counts {
    /// Adds `n` values of `value_ns` (at most [`MAX_LATENCY_NS`]); the total stays within
    /// [`MAX_COUNT`].
    pub(super) fn add(&mut self, value_ns: u64, n: u64) -> Result<(), String> {
        if value_ns > MAX_LATENCY_NS {
            return Err("a histogram value beyond an hour: not a latency (a wrong unit?)".into());
        }
        if n == 0 {
            return Ok(());
        }
        self.total = self
            .total
            .checked_add(n)
            .filter(|&t| t <= MAX_COUNT)
            .ok_or("a histogram holding more than a measurement counts (at most 2^53)")?;
        // value ≤ 2^42 and n ≤ 2^53: the product and the sum of at most 2^53 of them fit.
        self.sum += u128::from(value_ns) * u128::from(n);
        self.range = Some(self.range.map_or((value_ns, value_ns), |(lo, hi)| (lo.min(value_ns), hi.max(value_ns))));
        let i = index_of(value_ns);
        let (c, o) = (i / CHUNK, i % CHUNK);
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || None);
        }
        let chunk = self.chunks[c].get_or_insert_with(|| Box::new([0; CHUNK]));
        // (bounded by the total, checked above)
        chunk[o] += n;
        Ok(())
    }

    /// Every count of `other` added.
    pub(super) fn merge(&mut self, other: &Counts) -> Result<(), String> {
        let (sum, range) = (self.sum, self.range);
        for (i, n) in other.buckets() {
            self.add(bucket_range(i).0, n)?;
        }
        // (each at most 2^53 values of at most 2^42 ns: the sum fits)
        self.sum = sum + other.sum;
        self.range = match (range, other.range) {
            (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
            (a, b) => a.or(b),
        };
        Ok(())
    }

    fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.chunks
            .iter()
            .enumerate()
            .filter_map(|(c, ch)| ch.as_ref().map(|ch| (c, ch)))
            .flat_map(|(c, ch)| (0..CHUNK).map(move |o| (c * CHUNK + o, ch[o])).filter(|&(_, n)| n > 0))
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// The smallest and largest value added (`None`: none).
    pub fn range(&self) -> Option<(u64, u64)> {
        self.range
    }

    /// The exact mean of the values added (`None`: none).
    pub fn mean(&self) -> Option<f64> {
        (self.total > 0).then(|| self.sum as f64 / self.total as f64)
    }

    /// Records every count into `h` (a histogram of the project-wide layout).
    pub fn record_into(&self, h: &mut Histogram<u64>) {
        for (i, n) in self.buckets() {
            h.saturating_record_n(bucket_range(i).0, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_counts_and_latencies_only_in_range() {
        assert_eq!(count(Num::U(5), "x"), Ok(5));
        assert_eq!(count(Num::F(5.0), "x"), Ok(5));
        assert!(count(Num::I(-1), "x").unwrap_err().contains("negative"));
        assert!(count(Num::U(u64::MAX), "x").unwrap_err().contains("2^53"));
        assert!(count(Num::F(1e30), "x").unwrap_err().contains("2^53"));
        assert!(count(Num::F(0.5), "x").unwrap_err().contains("whole"));
        assert_eq!(latency(Num::U(15), 1000, "min"), Ok(15_000));
        assert!(latency(Num::U(1000), 1_000_000_000_000_000_000, "max").unwrap_err().contains("beyond an hour"));
        assert!(latency(Num::F(f64::NAN), 1, "max").is_err());
        assert!(latency(Num::I(-3), 1, "max").is_err());
    }

    #[test]
    fn counts_keep_exact_totals_and_refuse_overflow() {
        let mut c = Counts::default();
        c.add(15_000, 3).unwrap();
        c.add(2_000, 1).unwrap();
        assert_eq!((c.total(), c.range(), c.mean()), (4, Some((2_000, 15_000)), Some(47_000.0 / 4.0)));
        assert!(c.add(1, MAX_COUNT).is_err(), "the total would pass 2^53");
        assert!(c.add(MAX_LATENCY_NS + 1, 1).is_err());
        let mut h = crate::result::histogram::new_histogram();
        c.record_into(&mut h);
        assert_eq!(h.len(), 4);
        let mut d = Counts::default();
        d.add(1_000, 1).unwrap();
        d.merge(&c).unwrap();
        assert_eq!((d.total(), d.range()), (5, Some((1_000, 15_000))));
        assert_eq!(d.mean(), Some(48_000.0 / 5.0));
    }
}
