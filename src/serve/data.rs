//! What each page reads from the store, assembled into [`super::model`]'s values: a few bounded
//! queries per page (the boards; each board's last runs; the figures of the runs shown), never a
//! scan of every document. Called on a blocking thread with a store connection of the pool.

use super::model::{BoardPage, BoardRun, Change, Fleet, FleetRow, Regression, View, BOARD_RUNS, REGRESSION_SHARE, SPARK_RUNS};
use super::query::filter;
use super::Failure;
use crate::report::html::Named;
use crate::store::figures::Figures;
use crate::store::{Filter, RunRow, Store};
use std::collections::{BTreeMap, HashMap};

/// The most boards the fleet page shows (a lab has tens or hundreds).
pub const FLEET_BOARDS: usize = 2_000;

/// The fleet page: every board with a run the view passes, its latest run and its last runs
/// (the newest [`SPARK_RUNS`] stored, in the order they were measured).
pub fn fleet(s: &Store, view: &View) -> Result<Fleet, Failure> {
    let f = filter(view)?;
    let boards = s.boards(&f).map_err(Failure::Store)?;
    let recent = s.recent_per_board(&f, SPARK_RUNS).map_err(Failure::Store)?;
    let mut by_board: BTreeMap<&str, Vec<&RunRow>> = BTreeMap::new();
    for r in &recent {
        by_board.entry(r.board.as_str()).or_default().push(r);
    }
    // In the order they were measured (a run delivered late from a spool, or imported, has a
    // higher id than runs measured after it): the latest is the last measured.
    for runs in by_board.values_mut() {
        runs.sort_by(|a, b| (&a.started_at, a.id).cmp(&(&b.started_at, b.id)));
    }
    // The latest run of each board and the previous one of the same scenario and probes (among
    // its last runs), whose figures are read together.
    let mut pairs = Vec::new();
    for b in boards.iter().take(FLEET_BOARDS) {
        let Some(runs) = by_board.get(b.board.as_str()) else { continue };
        let Some(latest) = runs.last() else { continue };
        let previous =
            runs[..runs.len() - 1].iter().rev().find(|r| r.scenario == latest.scenario && r.probes == latest.probes).copied();
        pairs.push((b, runs, *latest, previous));
    }
    let ids: Vec<i64> = pairs.iter().flat_map(|(_, _, l, p)| std::iter::once(l.id).chain(p.map(|p| p.id))).collect();
    let figures = figures_of(s, &ids)?;
    let rows = pairs
        .into_iter()
        .map(|(b, runs, latest, previous)| {
            let now = figures.get(&latest.id).cloned().unwrap_or_default();
            let regressions = match previous {
                Some(p) => regressions(&now, figures.get(&p.id).unwrap_or(&Figures::default()), p.id),
                None => Vec::new(),
            };
            FleetRow {
                board: b.clone(),
                latest: latest.clone(),
                figures: now,
                spark: runs.iter().map(|r| (r.id, r.started_at.clone(), r.worst_ns)).collect(),
                regressions,
            }
        })
        .collect();
    Ok(Fleet { view: view.clone(), rows })
}

/// The figures of `ids`, read in calls of the store's bound.
fn figures_of(s: &Store, ids: &[i64]) -> Result<HashMap<i64, Figures>, Failure> {
    let mut all = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(5_000) {
        all.extend(s.figures(chunk).map_err(Failure::Store)?);
    }
    Ok(all)
}

/// The latency series of `now` whose worst case or p99.9 is worse than in `before` by more
/// than [`REGRESSION_SHARE`].
pub fn regressions(now: &Figures, before: &Figures, previous: i64) -> Vec<Regression> {
    let mut out = Vec::new();
    for n in now.series.iter().filter(|s| s.latency) {
        let Some(b) = before.series.iter().find(|b| b.series == n.series && b.latency) else { continue };
        for (figure, now_ns, before_ns) in [("max", n.max_ns, b.max_ns), ("p99.9", n.p999_ns, b.p999_ns)] {
            if let (Some(now_ns), Some(before_ns)) = (now_ns, before_ns) {
                if now_ns as f64 > before_ns as f64 * (1.0 + REGRESSION_SHARE) {
                    out.push(Regression { series: n.series.clone(), figure, before_ns, now_ns, previous });
                }
            }
        }
    }
    out
}

/// The board page: the board's newest runs the view passes (below `before`, for older pages),
/// in the order they were measured, their figures, the board as its latest run describes it,
/// and what changed between runs.
pub fn board(s: &Store, name: &str, view: &View, before: Option<i64>) -> Result<BoardPage, Failure> {
    let mut f = filter(view)?;
    f.board = Some(name.to_string());
    let total = s.count(&f).map_err(Failure::Store)?;
    if total == 0 || before.is_some() {
        let any = s.count(&Filter { board: Some(name.to_string()), ..Filter::default() }).map_err(Failure::Store)?;
        if any == 0 {
            return Err(Failure::NotFound(format!(
                "no board '{}' in the store; the fleet page (/) lists the boards",
                crate::report::shown(name)
            )));
        }
    }
    let mut rows = s.list(&Filter { before_id: before, newest: Some(BOARD_RUNS), ..f }).map_err(Failure::Store)?;
    // In the order they were measured (a run imported or delivered late has a higher id than
    // runs measured after it): the latest is the last measured, changes are between neighbours
    // in time.
    rows.sort_by(|a, b| (&a.started_at, a.id).cmp(&(&b.started_at, b.id)));
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let mut figures = figures_of(s, &ids)?;
    let runs: Vec<BoardRun> =
        rows.into_iter().map(|row| BoardRun { figures: figures.remove(&row.id).unwrap_or_default(), row }).collect();
    let changes = changes(&runs);
    let (board, kernel) = match runs.last() {
        Some(latest) => {
            let r = s.load(latest.row.id).map_err(Failure::Store)?;
            (r.board, Some(r.system.kernel_release))
        }
        None => (None, None),
    };
    Ok(BoardPage { name: name.to_string(), view: view.clone(), before, total_runs: total, runs, board, kernel, changes })
}

/// What changed from each run to the next: kernel release, preemption model, kernel configuration.
fn changes(runs: &[BoardRun]) -> Vec<Change> {
    let short = |h: &Option<String>| h.as_deref().map_or("(not recorded)".to_string(), |h| h.chars().take(8).collect());
    runs.windows(2)
        .filter_map(|w| {
            let (a, b) = (&w[0], &w[1]);
            let mut what = Vec::new();
            if a.row.kernel != b.row.kernel {
                what.push(format!("kernel {} → {}", a.row.kernel, b.row.kernel));
            }
            if a.row.preemption != b.row.preemption {
                what.push(format!("preemption {} → {}", a.row.preemption, b.row.preemption));
            }
            let (ka, kb) = (&a.figures.kernel_config, &b.figures.kernel_config);
            if ka != kb && kb.is_some() {
                what.push(format!("kernel configuration {} → {}", short(ka), short(kb)));
            }
            (!what.is_empty()).then(|| Change { run: b.row.id, previous: a.row.id, started_at: b.row.started_at.clone(), what })
        })
        .collect()
}

/// A run the page names (an id, a label, a UUID or `last`), whole.
pub fn named(s: &Store, run: &str) -> Result<Named, Failure> {
    let id = s.resolve(run).map_err(Failure::NotFound)?;
    let mut result = s.load(id).map_err(Failure::Store)?;
    // (a run of an older version gets its forecast as `rtgauge show` gives it; nothing is written)
    crate::forecast::analyse(&mut result);
    Ok(Named { id, label: s.label(id).map_err(Failure::Store)?, result })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::figures::SeriesFigures;

    fn series(name: &str, latency: bool, p999: u64, max: u64) -> SeriesFigures {
        SeriesFigures {
            entry: 0,
            series: name.into(),
            latency,
            samples: 1000,
            missed: 0,
            p99_ns: Some(p999 / 2),
            p999_ns: Some(p999),
            max_ns: Some(max),
            bins: Vec::new(),
            day_level_ns: None,
            day_low_ns: None,
            day_high_ns: None,
            forecast_note: None,
        }
    }

    fn figures(s: Vec<SeriesFigures>) -> Figures {
        Figures { shortest_cycle_ns: None, kernel_config: None, series: s, forecasts: true }
    }

    #[test]
    fn a_regression_is_a_latency_series_worse_by_more_than_the_share() {
        let before = figures(vec![series("timer", true, 10_000, 50_000), series("period", false, 10, 10)]);
        // 10 % worse exactly is no regression; 10 % and 1 ns more is; a series that counts in no
        // worst case, or that the previous run lacks, is not judged.
        let now = figures(vec![
            series("timer", true, 11_000, 55_001),
            series("period", false, 1_000, 1_000),
            series("wakeup.task", true, 90_000, 90_000),
        ]);
        let r = regressions(&now, &before, 7);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(
            (r[0].series.as_str(), r[0].figure, r[0].before_ns, r[0].now_ns, r[0].previous),
            ("timer", "max", 50_000, 55_001, 7)
        );
        assert!(regressions(&before, &before, 7).is_empty());
    }

    #[test]
    fn changes_name_the_kernel_preemption_and_configuration_between_consecutive_runs() {
        let run = |id: i64, kernel: &str, preemption: &str, config: Option<&str>| BoardRun {
            row: RunRow {
                id,
                uuid: None,
                started_at: format!("2026-11-0{id}T00:00:00.000Z"),
                label: None,
                board: "b".into(),
                host: "b".into(),
                kernel: kernel.into(),
                preemption: preemption.into(),
                scenario: None,
                probes: "timer".into(),
                worst_ns: None,
                verdict: "none".into(),
                status: "complete".into(),
                imported_from: None,
                series: None,
                part: None,
            },
            figures: Figures { kernel_config: config.map(str::to_string), ..Figures::default() },
        };
        let runs = [
            run(1, "6.1-rt", "PREEMPT_RT", Some("aaaaaaaaaaaa")),
            run(2, "6.1-rt", "PREEMPT_RT", Some("aaaaaaaaaaaa")),
            run(3, "6.12-rt", "PREEMPT_RT", Some("bbbbbbbbbbbb")),
            run(4, "6.12-rt", "PREEMPT_DYNAMIC", Some("bbbbbbbbbbbb")),
        ];
        let c = changes(&runs);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!((c[0].run, c[0].previous), (3, 2));
        assert_eq!(c[0].what, ["kernel 6.1-rt → 6.12-rt", "kernel configuration aaaaaaaa → bbbbbbbb"]);
        assert_eq!(c[1].what, ["preemption PREEMPT_RT → PREEMPT_DYNAMIC"]);
    }
}
