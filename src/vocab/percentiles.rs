//! The one table of reported percentiles. The summary's columns, the result's `pN_ns` fields,
//! the verdict's exact lookups and the result schema all come from [`REPORTED`]; a percentile
//! added here appears everywhere at once.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One reported percentile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentile {
    /// In percent: 99.9 for p99.9.
    pub q: f64,
    /// As users write it (`--require 'p99.9<50us'`) and as the summary heads its column.
    pub label: &'static str,
    /// The result document's field.
    pub key: &'static str,
}

const fn p(q: f64, label: &'static str, key: &'static str) -> Percentile {
    Percentile { q, label, key }
}

/// Every percentile rtgauge reports, ascending.
pub const REPORTED: [Percentile; 6] = [
    p(50.0, "p50", "p50_ns"),
    p(90.0, "p90", "p90_ns"),
    p(99.0, "p99", "p99_ns"),
    p(99.9, "p99.9", "p999_ns"),
    p(99.99, "p99.99", "p9999_ns"),
    p(99.999, "p99.999", "p99999_ns"),
];

/// The reported percentiles' values, in the order of [`REPORTED`]; `None` where nothing was
/// measured. In a document, one field per percentile (`p99_ns`, ...).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Values(pub [Option<u64>; REPORTED.len()]);

impl Values {
    /// The value of the reported percentile `q` (in percent), if `q` is one of them.
    pub fn get(&self, q: f64) -> Option<Option<u64>> {
        REPORTED.iter().position(|p| (p.q - q).abs() < 1e-9).map(|i| self.0[i])
    }
    /// (percentile, value) pairs, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (&'static Percentile, Option<u64>)> + '_ {
        REPORTED.iter().zip(self.0)
    }
    /// The values computed by `f` for each reported percentile.
    pub fn from_fn(mut f: impl FnMut(f64) -> Option<u64>) -> Values {
        Values(REPORTED.map(|p| f(p.q)))
    }
}

impl Serialize for Values {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(REPORTED.len()))?;
        for (p, v) in self.iter() {
            m.serialize_entry(p.key, &v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Values {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Values;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("percentile fields such as p99_ns")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Values, A::Error> {
                let mut out = Values::default();
                while let Some(k) = map.next_key::<String>()? {
                    match REPORTED.iter().position(|p| p.key == k) {
                        Some(i) => out.0[i] = map.next_value()?,
                        None => drop(map.next_value::<serde::de::IgnoredAny>()?),
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_ascending_and_its_names_agree() {
        for w in REPORTED.windows(2) {
            assert!(w[0].q < w[1].q);
        }
        for p in REPORTED {
            assert_eq!(p.label.trim_start_matches('p').parse::<f64>().unwrap(), p.q);
            assert_eq!(p.key, format!("{}_ns", p.label.replace('.', "")));
        }
    }

    #[test]
    fn values_travel_as_one_field_each() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Doc {
            a: u8,
            #[serde(flatten)]
            v: Values,
        }
        let d = Doc { a: 1, v: Values::from_fn(|q| (q < 99.99).then_some(q as u64)) };
        let json = serde_json::to_string(&d).unwrap();
        assert!(json.contains("\"p999_ns\":99") && json.contains("\"p99999_ns\":null"), "{json}");
        assert_eq!(serde_json::from_str::<Doc>(&json).unwrap(), d);
        assert_eq!(d.v.get(99.0), Some(Some(99)));
        assert_eq!(d.v.get(95.0), None);
    }
}
