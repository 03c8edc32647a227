//! What each page reads from the store, assembled into [`super::model`]'s values: a few bounded
//! queries per page (the boards; each board's last runs; the figures of the runs shown), never a
//! scan of every document. Called on a blocking thread with a store connection of the pool.

use super::model::{
    BoardPage, BoardRun, Change, Fleet, FleetRow, Regression, View, BOARD_RUNS, REGRESSION_ALPHA, REGRESSION_SHARE, SPARK_RUNS,
};
use super::query::filter;
use super::Failure;
use crate::report::html::Named;
use crate::result::{ProbeResult, RunResult};
use crate::store::figures::Figures;
use crate::store::{Filter, RunRow, Store};
use std::collections::{BTreeMap, HashMap};

/// The most boards the fleet page shows (a lab has tens or hundreds).
pub const FLEET_BOARDS: usize = 2_000;

/// The fleet page: every board with a run the view passes, its latest run and its last runs
/// (the newest [`SPARK_RUNS`] stored, in the order they were measured).
pub fn fleet(s: &Store, view: &View) -> Result<Fleet, Failure> {
    let f = filter(view)?;
    let boards = s.boards(&f).map_err(Failure::from)?;
    let recent = s.recent_per_board(&f, SPARK_RUNS).map_err(Failure::from)?;
    let mut by_board: BTreeMap<&str, Vec<&RunRow>> = BTreeMap::new();
    for r in &recent {
        by_board.entry(r.board.as_str()).or_default().push(r);
    }
    // In the order they were measured (a run delivered late from a spool, or imported, has a
    // higher id than runs measured after it): the latest is the last measured.
    for runs in by_board.values_mut() {
        runs.sort_by(|a, b| (&a.started_at, a.id).cmp(&(&b.started_at, b.id)));
    }
    // The latest run of each board and the earlier ones of the same scenario and probes (among
    // its last runs, the newest [`COMPARED`]), whose figures are read together.
    let mut pairs = Vec::new();
    for b in boards.iter().take(FLEET_BOARDS) {
        let Some(runs) = by_board.get(b.board.as_str()) else { continue };
        let Some(latest) = runs.last() else { continue };
        let earlier: Vec<&RunRow> = runs[..runs.len() - 1]
            .iter()
            .rev()
            .filter(|r| r.scenario == latest.scenario && r.probes == latest.probes)
            .take(COMPARED)
            .copied()
            .collect();
        pairs.push((b, runs, *latest, earlier));
    }
    let ids: Vec<i64> = pairs.iter().flat_map(|(_, _, l, e)| std::iter::once(l.id).chain(e.iter().map(|p| p.id))).collect();
    let figures = figures_of(s, &ids)?;
    let mut rows = Vec::with_capacity(pairs.len());
    for (b, runs, latest, earlier) in pairs {
        let now = figures.get(&latest.id).cloned().unwrap_or_default();
        // The previous comparable run: the newest of the earlier ones as long (within a factor
        // of 2 in every latency series' periods: the same CPUs and length, near enough) and, where
        // the figures suspect a regression, measured alike as its document says (else the next).
        let mut found = Vec::new();
        let mut latest_doc: Option<RunResult> = None;
        for p in &earlier {
            let Some(before) = figures.get(&p.id).filter(|f| alike(&now, f)) else { continue };
            let suspects = regressions(&now, before, p.id);
            // (the documents are read only where the figures suspect a regression)
            if suspects.is_empty() {
                break;
            }
            if latest_doc.is_none() {
                latest_doc = Some(s.load(latest.id).map_err(Failure::from)?);
            }
            let doc = latest_doc.as_ref().expect("loaded above");
            if let Some(g) = confirmed(doc, &s.load(p.id).map_err(Failure::from)?, suspects) {
                found = g;
                break;
            }
        }
        let regressions = found;
        rows.push(FleetRow {
            board: b.clone(),
            latest: latest.clone(),
            figures: now,
            spark: runs.iter().map(|r| (r.id, r.started_at.clone(), r.worst_ns)).collect(),
            regressions,
        });
    }
    Ok(Fleet { view: view.clone(), rows })
}

/// The earlier runs of the same scenario and probes a board's latest is compared with, at most.
const COMPARED: usize = 3;

/// Whether figures `now` and `before` are of alike runs: the same latency series, each with
/// periods (served and missed) within a factor of 2 of the other's (a run on every CPU against
/// one on a single CPU, or a 30-s run against a 10-s one, is not alike: the worst of more
/// values is higher by itself).
fn alike(now: &Figures, before: &Figures) -> bool {
    let latency = |f: &Figures| -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> =
            f.series.iter().filter(|s| s.latency).map(|s| (s.series.clone(), s.samples + s.missed)).collect();
        v.sort();
        v
    };
    let (a, b) = (latency(now), latency(before));
    !a.is_empty()
        && a.len() == b.len()
        && a.iter().zip(&b).all(|((sa, na), (sb, nb))| sa == sb && *na > 0 && *nb > 0 && na.max(nb) / na.min(nb).max(&1) < 2)
}

/// The regressions of `suspects` (from the figures) that hold between the documents `now` and
/// `before`: the runs measured alike — the same probes on the same CPUs at the same intervals,
/// under the same loads, for periods within a factor of 2 — and, per suspect, a shift the
/// histograms show is no chance: more of the latest run's values lie at or over the previous
/// run's figure than its share of the two runs' values makes likely (one-sided binomial test of
/// the values over it, conditional on their total, p < [`REGRESSION_ALPHA`]). `None` when the
/// runs were not measured alike.
pub fn confirmed(now: &RunResult, before: &RunResult, suspects: Vec<Regression>) -> Option<Vec<Regression>> {
    let compared = like(now, before)?;
    let mut out = Vec::new();
    for mut g in suspects {
        let entry = |r: &'_ RunResult| -> Option<ProbeResult> { r.combined.iter().find(|p| p.label() == g.series).cloned() };
        let (Some(n), Some(b)) = (entry(now), entry(before)) else { continue };
        // The cut: the lowest value of the histogram bucket that holds the previous figure (both
        // histograms have the same buckets).
        let cut = crate::result::histogram::bucket_range(crate::result::histogram::index_of(g.before_ns)).0;
        let over = |p: &ProbeResult| -> u64 { p.histogram.buckets.triples().filter(|t| t[0] >= cut).map(|t| t[2]).sum() };
        let (on, ob) = (over(&n), over(&b));
        // (the values: a missed period has none)
        let (pn, pb) = (n.samples, b.samples);
        let share = pn as f64 / (pn + pb).max(1) as f64;
        let p = crate::forecast::checks::binomial_at_least(on, on + ob, share);
        if p >= REGRESSION_ALPHA {
            continue;
        }
        g.test = format!(
            "{} of the latest run's {} values at or over {} against {} of the previous run's {}: so many from one \
             distribution has probability {} (one-sided binomial test of the values over it, given their total)",
            crate::vocab::length::grouped(on),
            crate::vocab::length::grouped(pn),
            crate::vocab::units::Nanos(cut),
            crate::vocab::length::grouped(ob),
            crate::vocab::length::grouped(pb),
            if p < 0.001 { "below 0.001".to_string() } else { format!("{p:.3}") }
        );
        g.compared = compared.clone();
        out.push(g);
    }
    Some(out)
}

/// Whether runs `a` and `b` were measured alike, with how (one sentence); `None` when not.
fn like(a: &RunResult, b: &RunResult) -> Option<String> {
    let probes = |r: &RunResult| -> Vec<(String, Vec<usize>, u64)> {
        let mut v: Vec<_> = r.config.probes.iter().map(|p| (p.name.clone(), p.cpus.clone(), p.interval_ns)).collect();
        v.sort();
        v
    };
    let entries = |r: &RunResult| -> Vec<(String, String)> {
        let mut v: Vec<_> = r.probes.iter().map(|p| (p.label(), p.scope())).collect();
        v.sort();
        v
    };
    let loads = |r: &RunResult| -> (String, Vec<String>) {
        let mut l = r.config.loads.clone();
        l.sort();
        (r.config.load_source.clone(), l)
    };
    if probes(a) != probes(b) || entries(a) != entries(b) || loads(a) != loads(b) {
        return None;
    }
    let cpus: Vec<usize> = {
        let mut c: Vec<usize> = a.probes.iter().filter_map(|p| p.cpu).collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    let loads = if a.config.loads.is_empty() { "none".to_string() } else { a.config.loads.join(", ") };
    Some(format!(
        "alike: the same probes ({}) on {} {} at the same intervals, the same loads ({}), periods within a factor of 2",
        a.config.probes.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "),
        if cpus.len() == 1 { "CPU" } else { "CPUs" },
        crate::vocab::cpus::format_cpu_list(&cpus),
        loads
    ))
}

/// The figures of `ids`, read in calls of the store's bound.
fn figures_of(s: &Store, ids: &[i64]) -> Result<HashMap<i64, Figures>, Failure> {
    let mut all = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(5_000) {
        all.extend(s.figures(chunk).map_err(Failure::from)?);
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
                    out.push(Regression {
                        series: n.series.clone(),
                        figure,
                        before_ns,
                        now_ns,
                        previous,
                        compared: String::new(),
                        test: String::new(),
                    });
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
    let total = s.count(&f).map_err(Failure::from)?;
    if total == 0 || before.is_some() {
        let any = s.count(&Filter { board: Some(name.to_string()), ..Filter::default() }).map_err(Failure::from)?;
        if any == 0 {
            return Err(Failure::NotFound(format!(
                "no board '{}' in the store; the fleet page (/) lists the boards",
                crate::report::shown(name)
            )));
        }
    }
    let mut rows = s.list(&Filter { before_id: before, newest: Some(BOARD_RUNS), ..f }).map_err(Failure::from)?;
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
            let r = s.load(latest.row.id).map_err(Failure::from)?;
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
    let id = s.resolve(run).map_err(Failure::from)?;
    let mut result = s.load(id).map_err(Failure::from)?;
    // (a run of an older version gets its forecast as `rtgauge show` gives it; nothing is written)
    crate::forecast::analyse(&mut result);
    Ok(Named { id, label: s.label(id).map_err(Failure::from)?, result })
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
