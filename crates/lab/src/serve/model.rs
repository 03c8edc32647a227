//! What each page of the dashboard shows, as data: read from the store by `data.rs`, drawn by
//! `pages/`, and given as JSON by the API (`api.rs`). Plain values: no store, no HTML.

use crate::result::board::Board;
use crate::store::figures::{BoardRow, Figures};
use crate::store::RunRow;
use serde::Serialize;

/// How many of a board's last runs the fleet page's sparkline shows (and where the previous run
/// of the same scenario is looked for).
pub const SPARK_RUNS: u32 = 30;
/// The most runs a board page plots (its newest; older ones are on the next pages).
pub const BOARD_RUNS: u64 = 1_000;
/// The most rows a page of a table or of `/api/runs` holds.
pub const PAGE_ROWS: u64 = 1_000;
/// A latest run regressed when a latency series' worst case or p99.9 is worse than in the
/// board's previous comparable run by more than this share, and the histograms say the shift is
/// no chance ([`REGRESSION_ALPHA`]; docs/dashboard.md, "How a regression is decided").
pub const REGRESSION_SHARE: f64 = 0.10;
/// The significance of the test a regression must pass.
pub const REGRESSION_ALPHA: f64 = 0.01;

/// Which runs a page shows: the query parameters it was asked with (a URL names a view).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct View {
    pub board: Option<String>,
    pub kernel: Option<String>,
    pub scenario: Option<String>,
    pub label: Option<String>,
    /// As given (`7d`, `2026-11-01`, an RFC 3339 time).
    pub since: Option<String>,
    pub until: Option<String>,
}

impl View {
    /// The query string that names this view (`?board=a&since=7d`; empty for none), each value
    /// percent-encoded.
    pub fn query(&self) -> String {
        let mut parts = Vec::new();
        for (k, v) in [
            ("board", &self.board),
            ("kernel", &self.kernel),
            ("scenario", &self.scenario),
            ("label", &self.label),
            ("since", &self.since),
            ("until", &self.until),
        ] {
            if let Some(v) = v {
                parts.push(format!("{k}={}", percent(v)));
            }
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }
}

/// `s` percent-encoded for a URL's path segment or query value: every byte but the unreserved
/// ones (RFC 3986: letters, digits, `-._~`) as `%XX`, and the dots of a name `.` or `..`.
pub fn percent(s: &str) -> String {
    // A path segment `.` or `..` would be taken away by the browser (`/board/..` is `/`).
    if s == "." || s == ".." {
        return s.replace('.', "%2E");
    }
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// A series of the latest run that got worse than in the board's previous run of the same
/// scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Regression {
    /// `timer`, `wakeup.task`.
    pub series: String,
    /// `max` or `p99.9`.
    pub figure: &'static str,
    pub before_ns: u64,
    pub now_ns: u64,
    /// The run compared with.
    pub previous: i64,
    /// What made the two runs comparable, and the test the shift passed (one sentence each).
    pub compared: String,
    pub test: String,
}

/// One board on the fleet page.
#[derive(Debug, Clone, Serialize)]
pub struct FleetRow {
    pub board: BoardRow,
    pub latest: RunRow,
    pub figures: Figures,
    /// Its last runs (up to [`SPARK_RUNS`], oldest first): id, start time and worst case.
    pub spark: Vec<(i64, String, Option<u64>)>,
    pub regressions: Vec<Regression>,
}

/// The fleet page `/`.
#[derive(Debug, Clone, Serialize)]
pub struct Fleet {
    pub view: View,
    pub rows: Vec<FleetRow>,
}

/// One run on a board page.
#[derive(Debug, Clone, Serialize)]
pub struct BoardRun {
    pub row: RunRow,
    pub figures: Figures,
}

/// What changed from one run of a board to the next: its kernel release, its kernel
/// configuration, or its preemption model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The run it changed at, and the run before it.
    pub run: i64,
    pub previous: i64,
    pub started_at: String,
    /// One sentence each: `kernel 6.1.0-rt → 6.12.0-rt`, `kernel configuration 1a2b3c4d →
    /// 5e6f7a8b (+3 options changed)`.
    pub what: Vec<String>,
}

/// The board page `/board/NAME`.
#[derive(Debug, Clone, Serialize)]
pub struct BoardPage {
    pub name: String,
    pub view: View,
    /// How many runs of the board pass the view.
    pub total_runs: u64,
    /// The page's place in the board's runs: `?before=ID` (only runs older than run ID shown);
    /// `None` for the newest.
    pub before: Option<i64>,
    /// Its newest runs that pass the view, up to [`BOARD_RUNS`] (oldest first).
    pub runs: Vec<BoardRun>,
    /// The board as its latest run describes it (model, compatible, DMI, kernel, configuration).
    pub board: Option<Board>,
    /// The kernel release of its latest run.
    pub kernel: Option<String>,
    /// Changes between consecutive runs shown, oldest first.
    pub changes: Vec<Change>,
}
