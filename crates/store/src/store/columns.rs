//! Timelines as the store keeps them: not inside the JSON document (a day on 64 CPUs is 5.5
//! million windows, 130 MB of JSON that took seconds to compress) but one compact blob per
//! series — each column as LEB128 varints, runs of equal values (a window's count, its missed
//! periods) as (value, length) pairs. Lossless: decoding gives back exactly what was encoded.

use crate::result::timeline::TimelineData;

const MAGIC: &[u8; 4] = b"RTL1";
/// A column's encoding: every value in a fixed number of bytes, or (value, run length) pairs.
const FIXED: u8 = 2;
const RUNS: u8 = 1;

/// `v` as a LEB128 varint (the figures' bins are written so too).
pub(super) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The LEB128 varint at `at`, which moves past it; `None` when the data ends first.
pub(super) fn get(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

fn column(out: &mut Vec<u8>, values: &[u64]) {
    let runs = values.windows(2).filter(|w| w[0] != w[1]).count() + usize::from(!values.is_empty());
    if runs * 2 < values.len() {
        out.push(RUNS);
        put(out, runs as u64);
        let mut i = 0;
        while i < values.len() {
            let n = values[i..].iter().take_while(|&&v| v == values[i]).count();
            put(out, values[i]);
            put(out, n as u64);
            i += n;
        }
    } else {
        // Every value in as many little-endian bytes as the largest needs: a day on 64 CPUs is
        // 11 million maxima and p99s, written at memory speed.
        let width = values.iter().max().map_or(1, |&m| (8 - m.leading_zeros() as usize / 8).max(1));
        out.push(FIXED);
        out.push(width as u8);
        out.reserve(values.len() * width);
        for v in values {
            out.extend_from_slice(&v.to_le_bytes()[..width]);
        }
    }
}

fn read_column(data: &[u8], at: &mut usize, len: usize) -> Option<Vec<u64>> {
    let kind = *data.get(*at)?;
    *at += 1;
    let mut v = Vec::with_capacity(len);
    match kind {
        FIXED => {
            let width = *data.get(*at)? as usize;
            *at += 1;
            if !(1..=8).contains(&width) {
                return None;
            }
            let bytes = data.get(*at..*at + len.checked_mul(width)?)?;
            *at += bytes.len();
            v.extend(bytes.chunks_exact(width).map(|c| {
                let mut b = [0u8; 8];
                b[..width].copy_from_slice(c);
                u64::from_le_bytes(b)
            }));
        }
        RUNS => {
            let runs = get(data, at)?;
            for _ in 0..runs {
                let (value, n) = (get(data, at)?, get(data, at)? as usize);
                if v.len() + n > len {
                    return None;
                }
                v.extend(std::iter::repeat_n(value, n));
            }
        }
        _ => return None,
    }
    (v.len() == len).then_some(v)
}

/// A timeline as a blob.
pub fn encode(t: &TimelineData) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + t.len() * 8);
    out.extend_from_slice(MAGIC);
    put(&mut out, t.window_ns);
    put(&mut out, t.start_ns);
    put(&mut out, t.len() as u64);
    for c in [&t.count, &t.missed, &t.max_ns, &t.p99_ns] {
        column(&mut out, c);
    }
    out
}

/// A blob back into its timeline; `None` when it is not one.
pub fn decode(data: &[u8]) -> Option<TimelineData> {
    if data.get(..4)? != MAGIC {
        return None;
    }
    let mut at = 4;
    let (window_ns, start_ns, len) = (get(data, &mut at)?, get(data, &mut at)?, get(data, &mut at)? as usize);
    // A column holds at least a byte per window or per run: a length beyond that is not ours.
    if len > data.len().saturating_mul(1 << 20) {
        return None;
    }
    let mut cols = Vec::with_capacity(4);
    for _ in 0..4 {
        cols.push(read_column(data, &mut at, len)?);
    }
    let p99_ns = cols.pop()?;
    let max_ns = cols.pop()?;
    let missed = cols.pop()?;
    let count = cols.pop()?;
    Some(TimelineData { window_ns, start_ns, count, missed, max_ns, p99_ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeline_comes_back_exactly() {
        let n = 5000;
        let t = TimelineData {
            window_ns: 1_000_000_000,
            start_ns: 1_000_000_000,
            count: (0..n).map(|i| if i == 7 { 998 } else { 1000 }).collect(),
            missed: (0..n).map(|i| u64::from(i == 7) * 2).collect(),
            max_ns: (0..n).map(|i| 20_000 + (i * 7919) % 90_000).collect(),
            p99_ns: (0..n).map(|i| 15_000 + (i * 104_729) % 50_000).collect(),
        };
        let blob = encode(&t);
        assert_eq!(decode(&blob), Some(t.clone()));
        assert!(blob.len() < n as usize * 8, "{} bytes for {n} windows", blob.len());
        assert_eq!(decode(&encode(&TimelineData::default())), Some(TimelineData::default()));
        assert_eq!(decode(&u64::MAX.to_le_bytes()), None);
        assert_eq!(decode(&blob[..blob.len() - 1]), None, "a cut blob is refused");
    }
}
