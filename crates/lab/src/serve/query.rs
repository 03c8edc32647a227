//! A page's query string read strictly: every parameter known to the page, each given once and
//! bounded in length, dates and ages as `list --since` reads them. A URL names a view, so a
//! mistyped parameter is an error (400) naming it, never silently ignored. Parameters that begin
//! with `_` (a cache buster a tool adds) are ignored; an empty value (a form's empty field) is
//! no value.

use super::model::View;
use super::Failure;
use crate::store::Filter;

/// The longest value a parameter may have (a board's name may be long; the request's head is
/// bounded by the server too).
const LONGEST: usize = 16 * 1024;

/// The parameters of one request.
#[derive(Debug)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    /// The query string (`None`: there was none).
    pub fn parse(q: Option<&str>) -> Result<Params, Failure> {
        let pairs: Vec<(String, String)> = match q {
            Some(q) => serde_urlencoded::from_str(q)
                .map_err(|_| Failure::BadRequest("the query string is not URL-encoded text (key=value&...)".into()))?,
            None => Vec::new(),
        };
        let pairs: Vec<(String, String)> =
            pairs.into_iter().filter(|(k, v)| !k.starts_with('_') && !v.trim().is_empty()).collect();
        if let Some((k, _)) = pairs.iter().find(|(_, v)| v.len() > LONGEST) {
            return Err(Failure::BadRequest(format!("parameter {k} is longer than {LONGEST} bytes")));
        }
        Ok(Params { pairs })
    }

    /// Refuses any parameter not in `known` (what the page takes), and any given twice but `runs`.
    pub fn only(&self, known: &[&str]) -> Result<(), Failure> {
        for (i, (k, _)) in self.pairs.iter().enumerate() {
            if !known.contains(&k.as_str()) {
                return Err(Failure::BadRequest(format!(
                    "unknown parameter '{}'; this page takes {}",
                    crate::report::shown(k),
                    known.join(", ")
                )));
            }
            if k != "runs" && self.pairs[..i].iter().any(|(o, _)| o == k) {
                return Err(Failure::BadRequest(format!("parameter {k} is given twice; give it once")));
            }
        }
        Ok(())
    }

    /// The value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Every value of `key` (`runs=1&runs=2`), each split at commas (`runs=1,2`).
    pub fn all(&self, key: &str) -> Vec<String> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .flat_map(|(_, v)| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string))
            .collect()
    }

    /// A whole number in `range`, or `default` when not given.
    pub fn number(&self, key: &str, range: std::ops::RangeInclusive<u64>, default: u64) -> Result<u64, Failure> {
        let Some(v) = self.get(key) else { return Ok(default) };
        match v.parse::<u64>() {
            Ok(n) if range.contains(&n) => Ok(n),
            _ => Err(Failure::BadRequest(format!(
                "{key}={}: give a whole number from {} to {}",
                crate::report::shown(v),
                range.start(),
                range.end()
            ))),
        }
    }

    /// `before=ID`: runs below that id (the next page of a long list).
    pub fn before(&self) -> Result<Option<i64>, Failure> {
        self.get("before")
            .map(|v| match v.parse::<i64>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(Failure::BadRequest(format!(
                    "before={}: give a run's id (a whole number above 0)",
                    crate::report::shown(v)
                ))),
            })
            .transpose()
    }

    /// The view the parameters name (board, kernel, scenario, label, since, until), checked.
    pub fn view(&self) -> Result<View, Failure> {
        let text = |k: &str| self.get(k).map(str::to_string);
        let view = View {
            board: text("board"),
            kernel: text("kernel"),
            scenario: text("scenario"),
            label: text("label"),
            since: text("since"),
            until: text("until"),
        };
        filter(&view)?;
        Ok(view)
    }
}

/// The view's parameters every page takes.
pub const VIEW: [&str; 6] = ["board", "kernel", "scenario", "label", "since", "until"];

/// The store's filter for a view (its since and until read as `list --since` reads them).
pub fn filter(view: &View) -> Result<Filter, Failure> {
    let moment = |what: &str, v: &Option<String>| {
        v.as_deref().map(|v| crate::vocab::when::moment(what, v).map_err(|e| Failure::BadRequest(e.into()))).transpose()
    };
    Ok(Filter {
        board: view.board.clone(),
        kernel: view.kernel.clone(),
        scenario: view.scenario.clone(),
        label: view.label.clone(),
        since: moment("since", &view.since)?,
        until: moment("until", &view.until)?,
        ..Filter::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(r: Result<impl std::fmt::Debug, Failure>) -> String {
        match r {
            Err(Failure::BadRequest(m)) => m,
            other => panic!("not a bad request: {other:?}"),
        }
    }

    #[test]
    fn a_query_is_read_strictly() {
        let p = Params::parse(Some("board=a%20b&since=7d&_=123&label=")).unwrap();
        assert_eq!(p.get("board"), Some("a b"));
        assert_eq!(p.get("label"), None, "an empty field is no value");
        p.only(&VIEW).unwrap();
        assert!(p.view().unwrap().since.is_some());
        assert!(bad(Params::parse(Some("bord=a")).unwrap().only(&VIEW)).contains("unknown parameter 'bord'"));
        assert!(bad(Params::parse(Some("board=a&board=b")).unwrap().only(&VIEW)).contains("twice"));
        assert!(bad(Params::parse(Some("since=yesterday")).unwrap().view()).starts_with("since yesterday: not a date"));
        let p = Params::parse(Some("limit=0&before=x")).unwrap();
        assert!(bad(p.number("limit", 1..=1000, 100)).contains("from 1 to 1000"));
        assert!(bad(p.before()).contains("before=x"));
        let p = Params::parse(Some("runs=1,2&runs=last")).unwrap();
        p.only(&["runs"]).unwrap();
        assert_eq!(p.all("runs"), ["1", "2", "last"]);
        let long = format!("board={}", "x".repeat(17 * 1024));
        assert!(bad(Params::parse(Some(&long))).contains("longer than"));
    }
}
