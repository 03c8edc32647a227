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

/// HdrHistogram's V2 cookies (plain and compressed) and header size.
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
const V2_HEADER_SIZE: usize = 40;

/// `v` as HdrHistogram's V2 varint: 7 bits a byte, low first, the ninth byte whole.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    for _ in 0..8 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zig-zag: small magnitudes, of either sign, as small unsigned numbers.
fn zig_zag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
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
    /// How many non-empty buckets there are.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Every bucket as `[lowest_ns, highest_ns, count]`, ascending (or from the top: `rev`).
    pub fn triples(&self) -> impl DoubleEndedIterator<Item = [u64; 3]> + ExactSizeIterator + '_ {
        self.index.iter().zip(&self.count).map(|(&i, &n)| {
            let (lo, hi) = bucket_range(i as usize);
            [lo, hi, n]
        })
    }
}

impl Buckets {
    /// Room allocated beyond the buckets held, in buckets (index and count together): what the
    /// aggregation's tests check is none once a histogram is made.
    pub fn spare(&self) -> usize {
        self.index.capacity() - self.index.len() + self.count.capacity() - self.count.len()
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
        let mut b = Buckets { index: Vec::with_capacity(triples.len()), count: Vec::with_capacity(triples.len()) };
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

    /// What [`HistogramData::encode`] (`hdrhistogram`'s V2 deflate serialiser) gives, byte for
    /// byte, for the standard histogram (the project-wide lowest value and precision,
    /// `highest_ns` its highest trackable value) holding `buckets` — each non-empty bucket as
    /// (index, count), ascending, `total` their sum — without making that histogram; a count
    /// above 2^63 (which `encode` refuses) is written as 2^63 − 1. A dense copy and the
    /// serialiser's buffer each take memory in proportion to the largest value's bucket (8 and 9
    /// bytes a bucket: about 130 KiB each for a worst case of 10 ms); these take a few bytes per
    /// non-empty bucket, so that a continuous run's keeping of a part needs the same memory
    /// whatever the part's worst case.
    pub fn from_buckets(buckets: impl Iterator<Item = (usize, u64)> + Clone, total: u64, highest_ns: u64) -> HistogramData {
        // HdrHistogram's V2 layout: a 40-byte header, then each count up to the largest value's
        // bucket as a zig-zag LEB128 varint, a run of two or more empty buckets as minus its
        // length (the same bytes as `hdrhistogram`'s V2 serialiser writes).
        let mut v2 = Vec::with_capacity(64);
        for word in [V2_COOKIE, 0, 0, u32::from(HIST_SIGFIG)] {
            v2.extend_from_slice(&word.to_be_bytes());
        }
        v2.extend_from_slice(&HIST_LOWEST_NS.to_be_bytes());
        v2.extend_from_slice(&highest_ns.to_be_bytes());
        v2.extend_from_slice(&1.0f64.to_be_bytes());
        let mut next = 0;
        let mut any = false;
        for (i, n) in buckets.clone() {
            match i - next {
                0 => {}
                1 => put_varint(&mut v2, 0),
                gap => put_varint(&mut v2, zig_zag(-(gap as i64))),
            }
            put_varint(&mut v2, zig_zag(i64::try_from(n).unwrap_or(i64::MAX)));
            (next, any) = (i + 1, true);
        }
        if !any {
            // An empty histogram: its one bucket up to the largest value (0), empty.
            put_varint(&mut v2, 0);
        }
        let payload = (v2.len() - V2_HEADER_SIZE) as u32;
        v2[4..8].copy_from_slice(&payload.to_be_bytes());
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, &v2).expect("compressing into memory cannot fail");
        let compressed = z.finish().expect("compressing into memory cannot fail");
        let mut bytes = Vec::with_capacity(8 + compressed.len());
        bytes.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        bytes.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&compressed);
        // Allocated at their exact size: grown by doubling, a part whose values spread over a
        // few more buckets than the one before could take twice the memory (a continuous run's
        // peak then rose with the part that happened to cross a power of two).
        let len = buckets.clone().count();
        let (mut index, mut count) = (Vec::with_capacity(len), Vec::with_capacity(len));
        for (i, n) in buckets {
            index.push(i as u32);
            count.push(n);
        }
        HistogramData {
            encoding: ENCODING.to_string(),
            lowest_ns: HIST_LOWEST_NS,
            highest_ns,
            significant_digits: HIST_SIGFIG,
            total_count: total,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            buckets: Buckets { index, count },
        }
    }

    /// Restores the histogram from `data`.
    pub fn decode(&self) -> Result<Histogram<u64>, crate::vocab::Error> {
        self.decode_text().map_err(crate::vocab::Error::Invalid)
    }

    /// [`Self::decode`], its failure as text.
    fn decode_text(&self) -> Result<Histogram<u64>, String> {
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
