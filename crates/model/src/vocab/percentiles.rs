//! The one table of reported percentiles. The summary's columns, the result's `pN_ns` fields,
//! the verdict's exact lookups and the result schema all come from [`REPORTED`]; a percentile
//! added here appears everywhere at once. Also when a percentile means what it says: p needs
//! [`VALUES_BEYOND`] values at or beyond it, `10/(1 − p)` values in all
//! ([`Percentile::values_needed`]); taken from fewer it is the maximum, or near it, and is
//! reported as not resolved.

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
    /// A column of every latency table, resolved or not (`false`: a column only where some row
    /// of the table resolves it, so a short run's table is not widened by a column of maxima).
    pub always_shown: bool,
}

const fn p(q: f64, label: &'static str, key: &'static str, always_shown: bool) -> Percentile {
    Percentile { q, label, key, always_shown }
}

/// Every percentile rtgauge reports, ascending.
pub const REPORTED: [Percentile; 7] = [
    p(50.0, "p50", "p50_ns", true),
    p(90.0, "p90", "p90_ns", true),
    p(99.0, "p99", "p99_ns", true),
    p(99.9, "p99.9", "p999_ns", true),
    p(99.99, "p99.99", "p9999_ns", true),
    p(99.999, "p99.999", "p99999_ns", true),
    p(99.9999, "p99.9999", "p999999_ns", false),
];

/// How many values a percentile needs at or beyond it to mean more than the largest few.
pub const VALUES_BEYOND: u64 = 10;

/// The document's field listing an entry's percentiles that are not resolved.
pub const UNRESOLVED_KEY: &str = "unresolved_percentiles";

impl Percentile {
    /// The fewest values that resolve it: [`VALUES_BEYOND`] at or beyond it, `10 / (1 − p)` in
    /// all (1 000 for p99, 1 000 000 for p99.999). Taken from fewer, it is the maximum or one
    /// of the few largest values, whatever the percentile.
    pub fn values_needed(&self) -> u64 {
        (VALUES_BEYOND as f64 * 100.0 / (100.0 - self.q)).round() as u64
    }
    /// Whether `values` values (a histogram's count) resolve it.
    pub fn resolved_by(&self, values: u64) -> bool {
        values >= self.values_needed()
    }
}

/// The reported percentiles' values, in the order of [`REPORTED`]; `None` where nothing was
/// measured. In a document, one field per percentile (`p99_ns`, ...) and the list of those not
/// resolved ([`UNRESOLVED_KEY`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Values {
    values: [Option<u64>; REPORTED.len()],
    /// Which values were taken from too few values to resolve them (see [`Values::counted`]);
    /// `None`: not known (values not yet counted, a document written before it was kept).
    unresolved: Option<[bool; REPORTED.len()]>,
}

impl Values {
    /// The value of the reported percentile `q` (in percent), if `q` is one of them.
    pub fn get(&self, q: f64) -> Option<Option<u64>> {
        REPORTED.iter().position(|p| (p.q - q).abs() < 1e-9).map(|i| self.values[i])
    }
    /// (percentile, value) pairs, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (&'static Percentile, Option<u64>)> + '_ {
        REPORTED.iter().zip(self.values)
    }
    /// The values computed by `f` for each reported percentile.
    pub fn from_fn(mut f: impl FnMut(f64) -> Option<u64>) -> Values {
        Values { values: REPORTED.map(|p| f(p.q)), unresolved: None }
    }
    /// These values, taken from a histogram of `count` values: each one `count` does not
    /// resolve is marked (a percentile without a value is not).
    pub fn counted(self, count: u64) -> Values {
        let mut unresolved = [false; REPORTED.len()];
        for (i, (p, v)) in self.iter().enumerate() {
            unresolved[i] = v.is_some() && !p.resolved_by(count);
        }
        Values { unresolved: Some(unresolved), ..self }
    }
    /// The percentiles with a value that `count` values do not resolve, ascending.
    pub fn unresolved_by(&self, count: u64) -> impl Iterator<Item = &'static Percentile> + '_ {
        self.iter().filter(move |(p, v)| v.is_some() && !p.resolved_by(count)).map(|(p, _)| p)
    }
    /// The percentiles marked as not resolved, as the values were counted or a document says
    /// (`None`: not known).
    pub fn marked(&self) -> Option<Vec<&'static Percentile>> {
        self.unresolved.map(|u| REPORTED.iter().zip(u).filter(|(_, u)| *u).map(|(p, _)| p).collect())
    }
}

impl Serialize for Values {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(REPORTED.len() + 1))?;
        for (p, v) in self.iter() {
            m.serialize_entry(p.key, &v)?;
        }
        if let Some(marked) = self.marked() {
            m.serialize_entry(UNRESOLVED_KEY, &marked.iter().map(|p| p.key).collect::<Vec<_>>())?;
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
                    if k == UNRESOLVED_KEY {
                        // (a name that is no reported percentile's field is no mark)
                        let keys: Vec<String> = map.next_value()?;
                        out.unresolved = Some(REPORTED.map(|p| keys.iter().any(|k| k == p.key)));
                        continue;
                    }
                    match REPORTED.iter().position(|p| p.key == k) {
                        Some(i) => out.values[i] = map.next_value()?,
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
        assert!(!json.contains(UNRESOLVED_KEY), "not counted: not known");
    }

    #[test]
    fn a_percentile_needs_ten_values_beyond_it() {
        let needed: Vec<u64> = REPORTED.iter().map(Percentile::values_needed).collect();
        assert_eq!(needed, [20, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000]);
        let p99 = REPORTED[2];
        assert!(p99.resolved_by(1_000) && !p99.resolved_by(999));
    }

    #[test]
    fn unresolved_percentiles_are_marked_and_travel_with_the_values() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Doc {
            #[serde(flatten)]
            v: Values,
        }
        // 10 000 values resolve up to p99.9; p99.99 and above are marked, a missing value is not.
        let d = Doc { v: Values::from_fn(|q| (q < 99.9999).then_some(7)).counted(10_000) };
        let marked: Vec<&str> = d.v.marked().unwrap().iter().map(|p| p.label).collect();
        assert_eq!(marked, ["p99.99", "p99.999"]);
        assert_eq!(d.v.unresolved_by(10_000).map(|p| p.label).collect::<Vec<_>>(), marked);
        let five_thousand: Vec<&str> = d.v.unresolved_by(5_000).map(|p| p.label).collect();
        assert_eq!(five_thousand, ["p99.9", "p99.99", "p99.999"]);
        let json = serde_json::to_string(&d).unwrap();
        assert!(json.contains(r#""unresolved_percentiles":["p9999_ns","p99999_ns"]"#), "{json}");
        assert_eq!(serde_json::from_str::<Doc>(&json).unwrap(), d);
        // A document written before p99.9999 and the marks: loads, nothing marked, nothing known.
        let old: Doc = serde_json::from_str(r#"{"p50_ns":1,"p99999_ns":9}"#).unwrap();
        assert_eq!((old.v.get(99.9999), old.v.get(99.999), old.v.marked()), (Some(None), Some(Some(9)), None));
    }
}
