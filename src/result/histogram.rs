//! Lossless encodings of a latency histogram inside the result document: the standard
//! HdrHistogram V2 compressed format (base64), readable by every HdrHistogram implementation,
//! and a sparse bucket list for scripts and plots.

use crate::aggregate::new_histogram;
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

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
    pub buckets: Vec<[u64; 3]>,
}

impl HistogramData {
    pub fn encode(h: &Histogram<u64>) -> HistogramData {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut bytes).expect("serialising to memory cannot fail");
        let buckets = h
            .iter_recorded()
            .map(|v| {
                let x = v.value_iterated_to();
                [h.lowest_equivalent(x), h.highest_equivalent(x), v.count_at_value()]
            })
            .collect();
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
        assert_eq!(d.buckets.iter().map(|b| b[2]).sum::<u64>(), h.len());
        let back = d.decode().unwrap();
        assert_eq!(back, h);
        assert!(d.buckets.iter().all(|b| b[0] <= b[1]));
    }
}
