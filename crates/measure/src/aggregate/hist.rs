//! The collector's latency histogram: lossless at the project-wide precision (the HdrHistogram
//! layout, 1 ns .. 1 h, 3 significant digits, the same buckets as [`crate::result::histogram::new_histogram`]) but
//! stored sparsely, in chunks allocated only where values fall. A dense HdrHistogram of that
//! range is ~270 KB, all of it resident under `mlockall`; one of these holding a real latency
//! distribution takes a few KB, so histograms per CPU and per phase cost little. Its
//! percentiles and the result document's histogram are read from the sparse counts exactly as
//! HdrHistogram reads them from a dense copy ([`Hist::to_hdr`], which unit tests compare).

use crate::result::histogram::{bucket_range, index_of, value_of, HistogramData, HIST_HIGHEST_NS, HIST_LOWEST_NS, HIST_SIGFIG};
use hdrhistogram::Histogram;

/// Counts per chunk: 512 bytes while every count fits 32 bits, 1 KiB once one does not.
const CHUNK: usize = 64;

/// A run of adjacent counts; widened to 64 bits when a count outgrows 32.
#[derive(Debug, Clone, PartialEq)]
enum Chunk {
    Narrow(Box<[u32; CHUNK]>),
    Wide(Box<[u64; CHUNK]>),
}

impl Chunk {
    fn get(&self, o: usize) -> u64 {
        match self {
            Chunk::Narrow(c) => u64::from(c[o]),
            Chunk::Wide(c) => c[o],
        }
    }
    fn add(&mut self, o: usize, n: u64) {
        if let Chunk::Narrow(c) = self {
            match u32::try_from(u64::from(c[o]) + n) {
                Ok(v) => return c[o] = v,
                Err(_) => *self = Chunk::Wide(Box::new(c.map(u64::from))),
            }
        }
        if let Chunk::Wide(c) = self {
            c[o] = c[o].saturating_add(n);
        }
    }
    #[cfg(test)]
    fn bytes(&self) -> usize {
        match self {
            Chunk::Narrow(_) => CHUNK * 4,
            Chunk::Wide(_) => CHUNK * 8,
        }
    }
}

/// The value at percentile `p` (in percent) of `total` values in `buckets` (each non-empty
/// bucket as `[lowest, highest, count]`, ascending), as HdrHistogram's `value_at_quantile` reads
/// it: the top of the bucket where the count reaches `ceil(p/100 · total)` (at least 1; the
/// bottom for `p` = 0). `None` when there are no values.
pub fn value_at_quantile(buckets: impl Iterator<Item = [u64; 3]>, total: u64, p: f64) -> Option<u64> {
    if total == 0 {
        return None;
    }
    let q = (p / 100.0).min(1.0);
    let target = ((q * total as f64).ceil() as u64).max(1);
    let (mut seen, mut found) = (0, [0, 0]);
    for [lo, hi, n] in buckets {
        (seen, found) = (seen + n, [lo, hi]);
        if seen >= target {
            break;
        }
    }
    Some(if q == 0.0 { found[0] } else { found[1] })
}

/// A sparse latency histogram with exact count, sum, minimum and maximum.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hist {
    chunks: Vec<Option<Chunk>>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Hist {
    /// Records one latency (values above one hour count as one hour).
    pub fn record(&mut self, v: u64) {
        self.record_n(v, 1);
    }

    fn record_n(&mut self, v: u64, n: u64) {
        let v = v.min(HIST_HIGHEST_NS);
        self.add_at(index_of(v), n);
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.count += n;
        self.sum += v as u128 * n as u128;
    }

    /// Adds every count of `other`.
    pub fn add(&mut self, other: &Hist) {
        for (i, n) in other.buckets() {
            self.add_at(i, n);
        }
        if other.count > 0 {
            self.min = if self.count == 0 { other.min } else { self.min.min(other.min) };
            self.max = self.max.max(other.max);
        }
        self.count += other.count;
        self.sum += other.sum;
    }

    fn add_at(&mut self, i: usize, n: u64) {
        let (c, o) = (i / CHUNK, i % CHUNK);
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || None);
        }
        self.chunks[c].get_or_insert_with(|| Chunk::Narrow(Box::new([0; CHUNK]))).add(o, n);
    }

    /// Non-empty buckets as (index, count), ascending.
    fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + Clone + '_ {
        self.chunks
            .iter()
            .enumerate()
            .filter_map(|(c, ch)| ch.as_ref().map(|ch| (c, ch)))
            .flat_map(|(c, ch)| (0..CHUNK).map(move |o| (c * CHUNK + o, ch.get(o))).filter(|&(_, n)| n > 0))
    }

    pub fn len(&self) -> u64 {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Exact sum of the recorded values.
    pub fn sum(&self) -> u128 {
        self.sum
    }
    /// Exact extremes, `None` when empty.
    pub fn min_max(&self) -> Option<(u64, u64)> {
        (self.count > 0).then_some((self.min, self.max))
    }

    /// The value at percentile `p` (in percent), clamped into the exact extremes (the live view).
    pub fn percentile(&self, p: f64) -> Option<u64> {
        let (min, max) = self.min_max()?;
        self.value_at(p).map(|v| v.clamp(min, max))
    }

    /// The value at percentile `p` (in percent) exactly as HdrHistogram's `value_at_quantile`
    /// gives it for [`Hist::to_hdr`], without that dense copy (see [`value_at_quantile`]).
    /// `None` when empty.
    pub fn value_at(&self, p: f64) -> Option<u64> {
        let buckets = self.buckets().map(|(i, n)| {
            let (lo, hi) = bucket_range(i);
            [lo, hi, n]
        });
        value_at_quantile(buckets, self.count, p)
    }

    /// Cumulative counts for a Prometheus histogram: `out[i]` is the number of recorded values
    /// whose bucket's lowest value is at or below `bounds[i]` (`bounds` ascending; `out` as long
    /// as `bounds`, any extra entries on either side are left alone). The buckets are the
    /// HdrHistogram's, 3 significant digits: exact below 2048 ns, then ever wider (4 ns from
    /// 4096 ns, 32 ns from 32 768 ns, 524 µs from 0.54 s), so a bound inside a bucket counts the
    /// whole bucket — values up to 0.1 % above the bound — when the bucket's lowest value is at or
    /// below it. One pass over the chunks, whatever the number of bounds.
    pub fn counts_at_or_below(&self, bounds: &[u64], out: &mut [u64]) {
        let n = bounds.len().min(out.len());
        let (bounds, out) = (&bounds[..n], &mut out[..n]);
        let (mut next, mut seen) = (0, 0u64);
        for (i, count) in self.buckets() {
            let lowest = value_of(i);
            while next < n && bounds[next] < lowest {
                out[next] = seen;
                next += 1;
            }
            if next == n {
                return;
            }
            seen += count;
        }
        out[next..].fill(seen);
    }

    /// The same counts as a standard HdrHistogram with the project-wide lowest value and
    /// precision, its range grown only as far as the largest value (a full 1 ns .. 1 h array
    /// is ~270 KB, and all of it would be resident under `mlockall`).
    pub fn to_hdr(&self) -> Histogram<u64> {
        let mut h =
            Histogram::new_with_bounds(HIST_LOWEST_NS, self.max.max(2 * HIST_LOWEST_NS), HIST_SIGFIG).expect("valid bounds");
        for (i, n) in self.buckets() {
            h.record_n(value_of(i), n).expect("within the project-wide bounds");
        }
        h
    }

    /// The result document's histogram of these counts: what [`HistogramData::encode`] gives
    /// for [`Hist::to_hdr`], byte for byte, without that dense copy (see
    /// [`HistogramData::from_buckets`]).
    pub fn to_data(&self) -> HistogramData {
        HistogramData::from_buckets(self.buckets(), self.count, self.max.max(2 * HIST_LOWEST_NS))
    }

    /// Bytes this histogram holds on the heap.
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<usize>() + self.chunks.iter().flatten().map(Chunk::bytes).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::histogram::new_histogram;

    #[test]
    fn same_buckets_as_hdrhistogram() {
        let mut values = vec![0u64, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 100_000, 1_234_567, HIST_HIGHEST_NS];
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x % (1u64 << (x % 42)).max(1));
        }
        let mut mine = Hist::default();
        let mut theirs = new_histogram();
        for &v in &values {
            mine.record(v);
            theirs.record(v.min(HIST_HIGHEST_NS)).unwrap();
        }
        let mut back = new_histogram();
        back.add(mine.to_hdr()).unwrap();
        assert_eq!(back, theirs);
        assert_eq!(mine.len(), values.len() as u64);
        for p in [50.0, 90.0, 99.0, 99.9] {
            let (min, max) = mine.min_max().unwrap();
            assert_eq!(mine.percentile(p), Some(crate::aggregate::percentile(&theirs, p, min, max)), "p{p}");
        }
    }

    /// The document's histogram made from the sparse counts is the one the dense copy gives,
    /// byte for byte: empty, one value, values at both ends of the range, long runs of empty
    /// buckets and single ones between, counts beyond 32 bits.
    #[test]
    fn its_document_histogram_is_the_dense_copys_byte_for_byte() {
        let mut cases: Vec<Hist> = vec![Hist::default()];
        let mut one = Hist::default();
        one.record(0);
        cases.push(one);
        let mut ends = Hist::default();
        for v in [1, 2, 2047, 2048, 2050, 4100, HIST_HIGHEST_NS, u64::MAX] {
            ends.record(v);
        }
        ends.record_n(1_000, u64::from(u32::MAX) + 7);
        // A count whose varint takes all nine bytes.
        ends.record_n(7, 1 << 56);
        cases.push(ends);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for case in 0..40 {
            let mut h = Hist::default();
            for _ in 0..(case * 97 % 3000) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                h.record_n(x % (1u64 << (x % 44)).max(1), 1 + x % 5);
            }
            cases.push(h);
        }
        for h in &cases {
            let data = h.to_data();
            assert_eq!(data, HistogramData::encode(&h.to_hdr()), "{:?}", h.min_max());
            // Each bucket list takes its exact size, not the next power of two.
            assert_eq!(data.buckets.spare(), 0, "{:?}", h.min_max());
        }
    }

    /// Percentiles read from the sparse counts are HdrHistogram's from the dense copy, for every
    /// reported percentile and the edges (0, 100, beyond 100).
    #[test]
    fn its_percentiles_are_the_dense_copys() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for case in 0..40 {
            let mut h = Hist::default();
            for _ in 0..(1 + case * 131 % 5000) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                h.record_n(x % (1u64 << (x % 40)).max(1), 1 + x % 3);
            }
            let dense = h.to_hdr();
            let ps = crate::vocab::percentiles::REPORTED.iter().map(|r| r.q).chain([0.0, 0.001, 1.0, 33.3, 100.0, 120.0]);
            for p in ps {
                assert_eq!(h.value_at(p), Some(dense.value_at_quantile(p / 100.0)), "p{p}, case {case}");
            }
        }
        assert_eq!(Hist::default().value_at(50.0), None);
    }

    #[test]
    fn a_typical_distribution_takes_a_few_chunks() {
        let mut h = Hist::default();
        for i in 0..100_000u64 {
            h.record(5_000 + (i * 7919) % 60_000);
        }
        h.record(8_000_000);
        assert!(h.heap_bytes() <= 32 * 1024, "{} bytes", h.heap_bytes());
        let mut sum = Hist::default();
        sum.add(&h);
        sum.add(&h);
        assert_eq!((sum.len(), sum.min_max(), sum.sum()), (2 * h.len(), h.min_max(), 2 * h.sum()));
    }

    #[test]
    fn counts_at_or_below_bounds_match_a_brute_force() {
        const S: u64 = 1_000_000_000;
        let bounds = [1, 999, 1_000, 2_000, 2_047, 2_048, 4_097, 5_000, 50_000, 1_000_000, S, 3_600 * S];
        let mut values = vec![0u64, 1, 999, 1_000, 1_001, 2_000, 2_001, 4_096, 4_097, 4_098, 4_099, 5_000, 5_003, 5_004];
        values.extend([49_983, 49_984, 50_000, 50_015, 50_016, S - 1, S, S + 1, S + 524_288, 7_200 * S]);
        let mut x = 88172645463325252u64;
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x % (1u64 << (x % 42)).max(1));
        }
        let mut h = Hist::default();
        for &v in &values {
            h.record(v);
        }
        let mut out = [u64::MAX; 12];
        h.counts_at_or_below(&bounds, &mut out);
        for (b, got) in bounds.iter().zip(out) {
            let lowest_of_bucket = |v: u64| value_of(index_of(v.min(HIST_HIGHEST_NS)));
            let want = values.iter().filter(|&&v| lowest_of_bucket(v) <= *b).count() as u64;
            assert_eq!(got, want, "bound {b}");
        }
        // Exact where the buckets are 1 ns wide; a whole bucket where the bound falls inside one.
        let exact = |b: u64| values.iter().filter(|&&v| v <= b).count() as u64;
        assert_eq!((out[1], out[2], out[3]), (exact(999), exact(1_000), exact(2_000)));
        assert_eq!(out[7], exact(5_003), "5000 ns is the lowest value of the bucket 5000..=5003");
        assert_eq!(out[8], exact(50_015), "50 000 ns lies in the bucket 49 984..=50 015");
        assert_eq!(out[11], values.len() as u64, "everything is at most an hour");

        let mut few = [0u64; 3];
        Hist::default().counts_at_or_below(&[1, 2, 3], &mut few);
        assert_eq!(few, [0, 0, 0]);
        h.counts_at_or_below(&[], &mut []);
    }

    #[test]
    fn counts_beyond_32_bits_are_kept() {
        let mut h = Hist::default();
        h.record_n(1_000, u64::from(u32::MAX));
        h.record_n(1_000, 5);
        h.record(1_001);
        assert_eq!(h.to_hdr().count_at(1_000), u64::from(u32::MAX) + 5);
        assert!(h.to_hdr().high() < 1_000_000, "sized to what it holds");
        assert_eq!(h.len(), u64::from(u32::MAX) + 6);
    }
}
