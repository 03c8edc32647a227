//! Lossless encodings of a latency histogram inside the result document: the standard
//! HdrHistogram V2 compressed format (base64), readable by every HdrHistogram implementation,
//! and a sparse bucket list for scripts and plots.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Lowest and highest trackable latency, and precision, of every latency histogram.
pub const HIST_LOWEST_NS: u64 = 1;
pub const HIST_HIGHEST_NS: u64 = 3_600_000_000_000;
pub const HIST_SIGFIG: u8 = 3;

/// A new, empty latency histogram with the project-wide bounds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(HIST_LOWEST_NS, HIST_HIGHEST_NS, HIST_SIGFIG).expect("valid constant bounds")
}

/// HdrHistogram layout for 3 significant digits and a lowest value of 1 ns: 2048 sub-buckets
/// per bucket, of which the upper half (1024) is new in every bucket after the first.
const SUB_BUCKET_MASK: u64 = 2047;
const HALF_MAGNITUDE: u32 = 10;
const HALF_COUNT: usize = 1 << HALF_MAGNITUDE;
const LEADING_ZERO_BASE: u32 = 64 - 11;

/// Index of `v`'s bucket in the HdrHistogram counts array.
pub fn index_of(v: u64) -> usize {
    let bucket = LEADING_ZERO_BASE - (v | SUB_BUCKET_MASK).leading_zeros();
    let sub = (v >> bucket) as usize;
    ((bucket as usize + 1) << HALF_MAGNITUDE) + sub - HALF_COUNT
}

/// The lowest and highest value of the bucket at `index`.
pub fn bucket_range(index: usize) -> (u64, u64) {
    (value_of(index), value_of(index + 1).saturating_sub(1).max(value_of(index)))
}

/// Lowest value of the bucket at `index` (recording it lands in the same bucket).
pub fn value_of(index: usize) -> u64 {
    let mut bucket = (index >> HALF_MAGNITUDE) as i64 - 1;
    let mut sub = (index & (HALF_COUNT - 1)) + HALF_COUNT;
    if bucket < 0 {
        sub -= HALF_COUNT;
        bucket = 0;
    }
    (sub as u64) << bucket
}

/// Name of the `data` encoding.
pub const ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// A histogram as stored in the result document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HistogramData {
    pub encoding: String,
    pub lowest_ns: u64,
    pub highest_ns: u64,
    pub significant_digits: u8,
    pub total_count: u64,
    pub data: String,
    /// Every non-empty bucket as `[lowest_ns, highest_ns, count]`, ascending.
    pub buckets: Buckets,
}

/// The non-empty buckets, kept as (bucket index, count) — 12 bytes each instead of 24 — and
/// written as `[lowest_ns, highest_ns, count]` triples (the bounds follow from the index).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Buckets {
    index: Vec<u32>,
    count: Vec<u64>,
}

impl Buckets {
    /// Every bucket as `[lowest_ns, highest_ns, count]`.
    pub fn triples(&self) -> impl Iterator<Item = [u64; 3]> + '_ {
        self.index.iter().zip(&self.count).map(|(&i, &n)| {
            let (lo, hi) = bucket_range(i as usize);
            [lo, hi, n]
        })
    }
}

impl Serialize for Buckets {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.triples())
    }
}

impl<'de> Deserialize<'de> for Buckets {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let triples = Vec::<[u64; 3]>::deserialize(d)?;
        let mut b = Buckets::default();
        for [lo, _, n] in triples {
            b.index.push(index_of(lo) as u32);
            b.count.push(n);
        }
        Ok(b)
    }
}

impl HistogramData {
    /// The counts re-binned to `width` ns: (bin index, count) of every non-empty bin,
    /// ascending; a bucket counts in the bin of its lowest value.
    pub fn rebin(&self, width: u64) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for [lo, _, n] in self.buckets.triples() {
            let b = lo / width.max(1);
            match out.last_mut() {
                Some((last, c)) if *last == b => *c += n,
                _ => out.push((b, n)),
            }
        }
        out
    }

    pub fn encode(h: &Histogram<u64>) -> HistogramData {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut bytes).expect("serialising to memory cannot fail");
        let mut buckets = Buckets::default();
        for v in h.iter_recorded() {
            buckets.index.push(index_of(v.value_iterated_to()) as u32);
            buckets.count.push(v.count_at_value());
        }
        buckets.index.shrink_to_fit();
        buckets.count.shrink_to_fit();
        HistogramData {
            encoding: ENCODING.to_string(),
            lowest_ns: h.low(),
            highest_ns: h.high(),
            significant_digits: h.sigfig(),
            total_count: h.len(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            buckets,
        }
    }

    /// Restores the histogram from `data`.
    pub fn decode(&self) -> Result<Histogram<u64>, String> {
        if self.encoding != ENCODING {
            return Err(format!("unknown histogram encoding '{}'", self.encoding));
        }
        let bytes = base64::engine::general_purpose::STANDARD.decode(&self.data).map_err(|e| e.to_string())?;
        let h: Histogram<u64> = Deserializer::new().deserialize(&mut bytes.as_slice()).map_err(|e| format!("{e:?}"))?;
        let mut out = new_histogram();
        out.add(&h).map_err(|e| format!("{e:?}"))?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_is_lossless() {
        let mut h = new_histogram();
        for v in [1u64, 17, 1_000, 1_234_567, 42_000_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let d = HistogramData::encode(&h);
        assert_eq!(d.total_count, h.len());
        assert_eq!(d.buckets.triples().map(|b| b[2]).sum::<u64>(), h.len());
        let back = d.decode().unwrap();
        assert_eq!(back, h);
        for (b, v) in d.buckets.triples().zip(h.iter_recorded()) {
            let x = v.value_iterated_to();
            assert_eq!(b, [h.lowest_equivalent(x), h.highest_equivalent(x), v.count_at_value()]);
        }
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(serde_json::from_str::<HistogramData>(&json).unwrap(), d);
    }
}
