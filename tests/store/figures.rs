//! store: figures (a part of tests/store/main.rs, whose helpers it uses).

use super::*;

/// Runs of three boards for the dashboard's queries: board `a` 5 runs, `b` 3, `c` 1 (an oslat
/// import: other series), interleaved, a day apart in the order of their ids (2026-01-01 on);
/// their ids in that order, and each one's board.
pub(crate) fn dashboard_runs(store: &Store) -> Vec<(i64, &'static str)> {
    let oslat = rtgauge::interchange::import(Path::new(&fixture("oslat.json"))).unwrap_or_else(|e| panic!("{e}"));
    let boards = ["a", "b", "a", "c", "a", "b", "a", "b", "a"];
    let mut out = Vec::new();
    for (i, board) in boards.into_iter().enumerate() {
        let mut r = if board == "c" { oslat.clone() } else { result() };
        r.started_at = format!("2026-01-{:02}T00:00:00.000Z", i + 1);
        let saved = save(store, &mut r, &uuid(0xd00 + i as u128), board, Some(if i % 2 == 0 { "even" } else { "odd" }));
        out.push((saved.id, board));
    }
    out
}

/// The figures the store keeps of every run are those its document gives (`figures_of`): the
/// series in the order of the combined entries, their counts, and bins that sum to each
/// histogram's total count; a run not there has none; more than 5 000 ids at once is refused.
pub(crate) fn the_figures_of_a_stored_run_are_its_documents(b: Backend) {
    use rtgauge::store::figures::{figures_of, BINS};
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let runs = dashboard_runs(&store);
    let ids: Vec<i64> = runs.iter().map(|(id, _)| *id).chain([9_999]).collect();
    for reader in [Store::open_read(&b.location()).unwrap().unwrap(), store] {
        let figures = reader.figures(&ids).unwrap();
        assert_eq!(figures.len(), runs.len(), "every run there, none for an id not there");
        for (id, _) in &runs {
            let doc = reader.load(*id).unwrap();
            let as_stored = serde_json::to_value(&doc).unwrap();
            let f = &figures[id];
            assert_eq!(f, &figures_of(&doc), "run {id}");
            assert_eq!(serde_json::to_value(&doc).unwrap(), as_stored, "run {id}: its document left as it was");
            assert!(f.forecasts);
            for s in &f.series {
                // A latency series has its once-per-day level or the reason why not (a CPU's), never
                // both; another series neither.
                match (s.latency, s.day_level_ns, s.forecast_note.as_deref()) {
                    (true, Some(l), None) => {
                        assert!(s.day_low_ns.is_some_and(|low| low <= l) && s.day_high_ns.is_none_or(|h| h >= l), "{s:?}")
                    }
                    (true, None, Some(note)) => assert!(note.starts_with("cpu") && s.day_low_ns.is_none(), "{s:?}"),
                    (false, None, None) => {}
                    _ => panic!("run {id}: {s:?}"),
                }
            }
            assert_eq!(f.series.len(), doc.combined.len());
            assert!(!f.series.is_empty());
            for (s, p) in f.series.iter().zip(&doc.combined) {
                assert_eq!((s.series.as_str(), s.samples, s.missed), (p.label().as_str(), p.samples, p.missed));
                assert_eq!(s.bins.len(), BINS);
                assert_eq!(s.bins.iter().sum::<u64>(), p.histogram.total_count, "run {id} {}", s.series);
                assert!(p.histogram.total_count > 0);
            }
            assert_eq!(f.shortest_cycle_ns, doc.verdict.shortest_cycle_time_ns);
        }
        assert!(reader.figures(&[]).unwrap().is_empty());
        let e = reader.figures(&(1..=5_001).collect::<Vec<i64>>()).unwrap_err();
        assert_eq!(
            e,
            rtgauge::store::StoreError::Asked("the figures of 5001 runs were asked for at once; ask for 5000 at most".into())
        );
        assert_eq!(reader.figures(&(1..=5_000).collect::<Vec<i64>>()).unwrap().len(), runs.len());
    }
    // A run deleted: its figures with it.
    let store = Store::open(&b.location()).unwrap();
    let (gone, _) = runs[0];
    let before = b.count("SELECT count(*) FROM figures");
    store.delete(gone).unwrap();
    assert_eq!(b.count(&format!("SELECT count(*) FROM figures WHERE run = {gone}")), 0);
    assert_eq!(b.count("SELECT count(*) FROM figures"), before - 1, "its one series");
    assert!(!store.figures(&ids).unwrap().contains_key(&gone));
}
both!(the_figures_of_a_stored_run_are_its_documents);

/// `boards` counts each board's runs (among those a filter passes) with its first and last
/// start and its latest run; `recent_per_board` gives exactly each board's newest N, by board
/// then oldest first; `until` and `before_id` bound `list` and `count` as well.
pub(crate) fn boards_and_each_boards_newest_runs(b: Backend) {
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let runs = dashboard_runs(&store);
    let of = |board: &str| -> Vec<i64> { runs.iter().filter(|(_, b)| *b == board).map(|(id, _)| *id).collect() };
    let day = |id: i64| format!("2026-01-{:02}T00:00:00.000Z", runs.iter().position(|(i, _)| *i == id).unwrap() + 1);
    for reader in [Store::open_read(&b.location()).unwrap().unwrap(), store] {
        let boards = reader.boards(&Filter::default()).unwrap();
        let shown: Vec<(&str, u64, i64)> = boards.iter().map(|r| (r.board.as_str(), r.runs, r.latest)).collect();
        assert_eq!(shown, [("a", 5, of("a")[4]), ("b", 3, of("b")[2]), ("c", 1, of("c")[0])]);
        for r in &boards {
            assert_eq!(r.first_started_at, day(of(&r.board)[0]));
            assert_eq!(r.last_started_at, day(r.latest));
        }
        let odd = Filter { label: Some("odd".into()), ..Filter::default() };
        let shown: Vec<(String, u64)> = reader.boards(&odd).unwrap().into_iter().map(|r| (r.board, r.runs)).collect();
        assert_eq!(shown, [("b".to_string(), 3), ("c".to_string(), 1)], "the filter's runs alone");

        let recent = |filter: &Filter, n: u32| -> Vec<(String, i64)> {
            reader.recent_per_board(filter, n).unwrap().into_iter().map(|r| (r.board, r.id)).collect()
        };
        let newest = |board: &str, n: usize, below: i64| -> Vec<(String, i64)> {
            let ids: Vec<i64> = of(board).into_iter().filter(|&id| id < below).collect();
            ids[ids.len().saturating_sub(n)..].iter().map(|&id| (board.to_string(), id)).collect()
        };
        for n in [1, 2, 3, 30] {
            let expected = [newest("a", n, i64::MAX), newest("b", n, i64::MAX), newest("c", n, i64::MAX)].concat();
            assert_eq!(recent(&Filter::default(), n as u32), expected, "the newest {n} per board");
        }
        assert!(recent(&Filter::default(), 0).is_empty());
        let below = runs[6].0;
        let paged = Filter { before_id: Some(below), ..Filter::default() };
        let expected = [newest("a", 2, below), newest("b", 2, below), newest("c", 2, below)].concat();
        assert_eq!(recent(&paged, 2), expected, "before an id");
        let rows = reader.recent_per_board(&Filter::default(), 1).unwrap();
        assert_eq!(rows[0].started_at, day(rows[0].id));
        assert_eq!((rows[0].label.as_deref(), rows[0].uuid.is_some()), (Some("even"), true));

        // until: runs started before it; before_id: ids below it; with since, a window.
        let until = Filter { until: Some(day(runs[3].0)), ..Filter::default() };
        let ids = |f: &Filter| reader.list(f).unwrap().into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(&until), runs[..3].iter().map(|r| r.0).collect::<Vec<_>>());
        assert_eq!(reader.count(&until).unwrap(), 3);
        assert_eq!(ids(&paged), runs[..6].iter().map(|r| r.0).collect::<Vec<_>>());
        let window = Filter { since: Some(day(runs[2].0)), before_id: Some(runs[5].0), board: Some("a".into()), ..until };
        assert_eq!(ids(&window), [runs[2].0]);
        assert_eq!(reader.count(&window).unwrap(), 1);
        let shown: Vec<(String, u64)> = reader.boards(&window).unwrap().into_iter().map(|r| (r.board, r.runs)).collect();
        assert_eq!(shown, [("a".to_string(), 1)]);
    }
}
both!(boards_and_each_boards_newest_runs);

/// `figures` as a store that keeps no forecast gives them: no level, and a note on each latency
/// series that says so.
pub(crate) fn without_forecasts(
    figures: &std::collections::HashMap<i64, rtgauge::store::figures::Figures>,
) -> Vec<(i64, String)> {
    let mut out: Vec<(i64, String)> = figures
        .iter()
        .map(|(id, f)| {
            let mut f = f.clone();
            for s in &mut f.series {
                (s.day_level_ns, s.day_low_ns, s.day_high_ns) = (None, None, None);
                s.forecast_note = s.latency.then(|| rtgauge::store::figures::NOT_KEPT.to_string());
            }
            f.forecasts = false;
            (*id, format!("{f:?}"))
        })
        .collect();
    out.sort();
    out
}

/// What a store of a layout before the series' columns (SQLite 6, PostgreSQL 3) lacks.
pub(crate) const WITHOUT_SERIES: &str =
    "DROP INDEX runs_series; ALTER TABLE runs DROP COLUMN series; ALTER TABLE runs DROP COLUMN part";

/// A store of three layouts before (SQLite 4, PostgreSQL 1: no figures) is read as it is, its
/// figures made from the documents (but the forecasts': none kept, and each latency series says
/// so); opened for writing, it gets them filled from its documents, the same as a run stored now
/// gets them, forecasts included.
pub(crate) fn a_store_of_an_older_layout_gets_its_figures_filled(b: Backend) {
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let runs = dashboard_runs(&store);
    let ids: Vec<i64> = runs.iter().map(|(id, _)| *id).collect();
    let kept = store.figures(&ids).unwrap();
    drop(store);
    b.exec("DROP TABLE figures; DROP INDEX runs_board_id; ALTER TABLE runs DROP COLUMN shortest_cycle_ns");
    b.exec(WITHOUT_SERIES);
    b.set_layout(b.known_layout() - 3);
    let before = if b.is_pg() { b.snapshot() } else { Vec::new() };
    let reader = Store::open_read(&b.location()).unwrap().unwrap();
    assert_eq!(without_forecasts(&reader.figures(&ids).unwrap()), without_forecasts(&kept), "made from the documents");
    assert!(reader.figures(&ids).unwrap().values().all(|f| !f.forecasts));
    assert_eq!(reader.boards(&Filter::default()).unwrap().len(), 3);
    assert_eq!(reader.recent_per_board(&Filter::default(), 2).unwrap().len(), 5);
    drop(reader);
    if b.is_pg() {
        assert!(b.snapshot() == before, "read, not migrated");
    }
    assert_eq!(b.marker().1, b.known_layout() - 3, "read, not migrated");
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.marker().1, b.known_layout());
    assert_eq!(b.tables(), b.store_tables());
    assert_eq!(b.count("SELECT count(*) FROM figures"), runs.len() as i64, "one series each");
    assert_eq!(store.figures(&ids).unwrap(), kept, "filled from the documents");
    let mut r = result();
    let new = save(&store, &mut r, &uuid(0xe00), "a", None);
    assert_eq!(store.figures(&[new.id]).unwrap()[&new.id], rtgauge::store::figures::figures_of(&store.load(new.id).unwrap()));
}
both!(a_store_of_an_older_layout_gets_its_figures_filled);

/// A forecast that applies, of once-per-day level `level` ns (interval `low`..`high`).
pub(crate) fn applying(level: f64, low: f64, high: Option<f64>) -> rtgauge::result::forecast::Forecast {
    use rtgauge::result::forecast::{Fit, Forecast, ReturnLevel};
    let at = |horizon: &str, periods: f64, k: f64| ReturnLevel {
        horizon: horizon.into(),
        periods,
        level_ns: level * k,
        low_ns: low * k,
        high_ns: high.map(|h| h * k),
    };
    Forecast {
        method: "peaks-over-threshold".into(),
        periods: 60_000,
        interval_ns: 1_000_000,
        measured_ns: 60_000_000_000,
        threshold_ns: Some(20_000),
        exceedances: 60,
        fit: Some(Fit {
            shape: -0.1,
            shape_low: -0.3,
            shape_high: 0.1,
            scale_ns: 2_000.0,
            tail: "exponential".into(),
            endpoint_ns: None,
            region: vec![[1_500.0, -0.3], [2_500.0, 0.1]],
        }),
        tests: Vec::new(),
        assumed: None,
        not_applicable: None,
        return_levels: vec![at("1h", 3.6e6, 0.8), at("1d", 8.64e7, 1.0), at("1y", 3.15e10, 1.3)],
    }
}

/// A forecast that does not apply, for `why`.
pub(crate) fn not_applying(why: &str) -> rtgauge::result::forecast::Forecast {
    rtgauge::result::forecast::Forecast {
        fit: None,
        not_applicable: Some(why.into()),
        return_levels: Vec::new(),
        ..applying(1.0, 1.0, None)
    }
}

/// The once-per-day levels (level, low, high) given to the CPUs of a run, in turn.
pub(crate) const LEVELS: [(f64, f64, f64); 3] =
    [(41_000.0, 38_000.0, 52_000.0), (45_000.0, 36_000.0, 50_000.0), (43_000.0, 39_500.0, 61_000.0)];

/// Runs whose documents carry forecasts set by hand (on an imported cyclictest run of 4 CPUs):
/// every CPU's applying, with an interval each (the stored level, low and high are the highest
/// of the CPUs'); every CPU's applying, one without an upper end (no high); one CPU's not
/// applying (no level; its reason, after the CPU). Their ids, in that order.
pub(crate) fn forecast_runs(store: &Store) -> [i64; 3] {
    let make = |n: u128, set: &dyn Fn(usize) -> rtgauge::result::forecast::Forecast| {
        let mut r = result();
        let cpus: Vec<usize> =
            r.probes.iter().enumerate().filter(|(_, p)| p.cpu.is_some() && p.samples > 0).map(|(i, _)| i).collect();
        assert!(cpus.len() >= 2, "{} CPUs", cpus.len());
        for (k, &i) in cpus.iter().enumerate() {
            r.probes[i].forecast = Some(set(k));
        }
        r.started_at = format!("2026-02-{:02}T00:00:00.000Z", n + 1);
        save(store, &mut r, &uuid(0xf00 + n), "forecast", None).id
    };
    let all = make(0, &|k| {
        let (l, lo, hi) = LEVELS[k % 3];
        applying(l, lo, Some(hi))
    });
    let open = make(1, &|k| applying(30_000.0, 29_000.0, (k != 1).then_some(40_000.0)));
    let some =
        make(2, &|k| if k == 1 { not_applying("too few values over the threshold (7)") } else { applying(1e4, 9e3, None) });
    [all, open, some]
}

/// The forecast a stored run's figures carry, per series: the once-per-day level the highest of
/// its CPUs' with the highest low and high (none when a CPU's interval has no upper end), or, when
/// a CPU's forecast does not apply, no level and that CPU's reason; the document is stored as it
/// was given (no forecast written into it).
pub(crate) fn the_forecast_of_a_stored_run_is_kept_with_its_figures(b: Backend) {
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let [all, open, some] = forecast_runs(&store);
    let mut plain = result();
    let plain = save(&store, &mut plain, &uuid(0xf10), "forecast", None).id;
    let f = store.figures(&[all, open, some, plain]).unwrap();
    let timer = |id: i64| f[&id].series.iter().find(|s| s.latency).unwrap().clone();
    let s = timer(all);
    let cpus = store.load(all).unwrap().probes.iter().filter(|p| p.cpu.is_some() && p.samples > 0).count();
    let highest = |pick: fn(&(f64, f64, f64)) -> f64| (0..cpus).map(|k| pick(&LEVELS[k % 3]) as u64).max();
    assert_eq!(
        (s.day_level_ns, s.day_low_ns, s.day_high_ns, s.forecast_note),
        (highest(|l| l.0), highest(|l| l.1), highest(|l| l.2), None),
        "{cpus} CPUs"
    );
    let s = timer(open);
    assert_eq!((s.day_level_ns, s.day_low_ns, s.day_high_ns, s.forecast_note), (Some(30_000), Some(29_000), None, None));
    let s = timer(some);
    assert_eq!((s.day_level_ns, s.day_low_ns, s.day_high_ns), (None, None, None));
    let cpu = store.load(some).unwrap().probes.iter().filter(|p| p.cpu.is_some() && p.samples > 0).nth(1).unwrap().scope();
    assert_eq!(s.forecast_note.as_deref(), Some(&*format!("{cpu}: too few values over the threshold (7)")));
    // The run stored without forecasts: its figures have one made, its document none.
    let s = timer(plain);
    assert!(s.day_level_ns.is_some() != s.forecast_note.is_some(), "{s:?}");
    assert!(store.load(plain).unwrap().probes.iter().all(|p| p.forecast.is_none() && p.convergence.is_none()));
    assert!(store.load(all).unwrap().probes.iter().filter(|p| p.cpu.is_some()).all(|p| p.forecast.is_some()));
}
both!(the_forecast_of_a_stored_run_is_kept_with_its_figures);

/// A store of two layouts before (SQLite 5, PostgreSQL 2: figures without forecasts) is read as
/// it is: no level, each latency series saying the store keeps none, the other figures as
/// kept; opened for writing, it gets every run's forecast filled from its document (made for a
/// document without one), the same as a run stored now gets.
pub(crate) fn a_store_of_the_layout_before_gets_its_forecasts_filled(b: Backend) {
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    let runs = dashboard_runs(&store);
    let ids: Vec<i64> = runs.iter().map(|(id, _)| *id).chain(forecast_runs(&store)).collect();
    let kept = store.figures(&ids).unwrap();
    assert!(kept.values().flat_map(|f| &f.series).any(|s| s.day_level_ns.is_some()), "some level to fill");
    assert!(kept.values().flat_map(|f| &f.series).any(|s| s.forecast_note.is_some()), "some reason to fill");
    drop(store);
    for column in ["day_level_ns", "day_low_ns", "day_high_ns", "forecast_note"] {
        b.exec(&format!("ALTER TABLE figures DROP COLUMN {column}"));
    }
    b.exec(WITHOUT_SERIES);
    b.set_layout(b.known_layout() - 2);
    let before = if b.is_pg() { b.snapshot() } else { Vec::new() };
    let reader = Store::open_read(&b.location()).unwrap().unwrap();
    let read = reader.figures(&ids).unwrap();
    assert_eq!(without_forecasts(&read), without_forecasts(&kept), "the other figures as kept, no forecast");
    let rows = reader.list(&Filter::default()).unwrap();
    assert!(!rows.is_empty() && rows.iter().all(|r| r.series.is_none()), "a layout without series reads without them");
    assert!(read.values().all(|f| !f.forecasts));
    drop(reader);
    if b.is_pg() {
        assert!(b.snapshot() == before, "read, not migrated");
    }
    assert_eq!(b.marker().1, b.known_layout() - 2, "read, not migrated");
    let store = Store::open(&b.location()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.marker().1, b.known_layout());
    assert_eq!(store.figures(&ids).unwrap(), kept, "filled from the documents");
}
both!(a_store_of_the_layout_before_gets_its_forecasts_filled);

/// 50 writers (threads of the library) at once on one new store: each opens it (one migrates,
/// the others wait), stores a run of its own and one every writer stores: every run once.
/// (Under an emulator, 10: each emulated password exchange and save takes seconds of the host's
/// two CPUs, and 50 at once outlast the connection's and the lock's time limits.)
pub(crate) fn many_writers_at_once_store_every_run_once(b: Backend) {
    let writers = if runner().is_some() { 10 } else { 50 };
    let location = b.location();
    let ids: Vec<(i64, i64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let location = &location;
                s.spawn(move || {
                    let store = Store::open(location).unwrap_or_else(|e| panic!("{e}"));
                    let mut r = result();
                    let own = save(&store, &mut r, &uuid(1000 + w as u128), &format!("board-{w}"), None);
                    let shared = save(&store, &mut r, &uuid(7), "shared", None);
                    (own.id, shared.id)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let shared: std::collections::BTreeSet<i64> = ids.iter().map(|i| i.1).collect();
    assert_eq!(shared.len(), 1, "one id for the run every writer stored: {shared:?}");
    let runs = Store::open(&location).unwrap().list(&Filter::default()).unwrap();
    assert_eq!(runs.len(), writers + 1);
    let uuids: std::collections::BTreeSet<&str> = runs.iter().filter_map(|r| r.uuid.as_deref()).collect();
    assert_eq!(uuids.len(), writers + 1);
    assert_eq!(b.count("SELECT count(*) FROM timelines"), writers as i64 + 1, "one timeline per stored run");
}
both!(many_writers_at_once_store_every_run_once);

/// A label and a board holding quotes, SQL, control characters or 10 000 characters are stored
/// and given back exactly as text (JSON), shown escaped (`list`, `show`), and filter exactly;
/// no table is dropped.
pub(crate) fn labels_and_boards_with_quotes_sql_controls_and_10000_characters_are_text(b: Backend) {
    let db = b.db();
    let long = "é".repeat(10_000);
    let names = [
        "o'brien \"lab\"",
        "x'; DROP TABLE runs; --",
        "a' OR '1'='1",
        "ctl\u{1b}[2J\u{7}\r\nfake row",
        "it's \"x\"; DROP TABLE runs; -- \u{7}\t\u{1b}[31mred",
        long.as_str(),
    ];
    for (i, name) in names.iter().enumerate() {
        let file = distinct_file(b.dir(), i as u64);
        let label = format!("label {name}");
        ok(&["import", "--db", db, "--board", name, "--label", &label, &file]);
        let rows = list(db, &["--board", name]);
        assert_eq!(rows.len(), 1, "{name:?}: {rows:?}");
        assert_eq!((rows[0]["board"].as_str(), rows[0]["label"].as_str()), (Some(*name), Some(&label[..])));
        assert_eq!(list(db, &["--label", &label]).len(), 1);
        let shown: Value = serde_json::from_str(&ok(&["show", &label, "--json", "--db", db])).unwrap();
        assert_eq!(shown["board"]["name"], *name, "--json gives it back exactly");
        let text = ok(&["show", &label, "--db", db]);
        assert_eq!(raw_control(&text), None, "control characters shown escaped: {text}");
        assert!(text.lines().filter(|l| l.starts_with("board ")).all(|l| l.chars().count() <= 80), "{text}");
    }
    assert_eq!(list(db, &[]).len(), names.len(), "every run stored, the table whole");
    let text = ok(&["list", "--db", db]);
    assert_eq!(text.lines().count(), names.len() + 1, "a header and one row per run: {text}");
    assert_eq!(raw_control(&text), None, "{text}");
    assert!(text.contains("\\x1b") && text.lines().all(|l| l.chars().count() < 400), "long names cut in the table: {text}");
    assert_eq!(b.tables(), b.store_tables(), "no table dropped");
}
both!(labels_and_boards_with_quotes_sql_controls_and_10000_characters_are_text);

/// A kernel release with quotes, SQL, control characters or 10 000 characters (an rtgauge
/// document says what it likes) is stored, filtered by `--kernel` exactly, given back whole by
/// `--json`, and shown escaped by `list` and `show`.
pub(crate) fn kernel_names_of_any_text_are_stored_filtered_and_shown_as_text(b: Backend) {
    let db = b.db();
    ok(&["import", "--db", db, "--label", "base", &distinct_file(b.dir(), 7)]);
    let doc: Value = serde_json::from_str(&ok(&["export", "base", "--db", db, "-f", "json"])).unwrap();
    let long = format!("6.12.0-rt{}", "9".repeat(10_000));
    let kernels = ["6.12'; DROP TABLE runs; --", "6.12 \"rt\" \u{1b}[2J\u{7}\r\nfake", long.as_str()];
    for (i, kernel) in kernels.iter().enumerate() {
        let mut d = doc.clone();
        d.as_object_mut().unwrap().remove("uuid");
        d.as_object_mut().unwrap().remove("imported");
        d["system"]["kernel_release"] = Value::from(*kernel);
        let file = b.dir().join(format!("k{i}.json"));
        std::fs::write(&file, serde_json::to_vec(&d).unwrap()).unwrap();
        ok(&["import", "--db", db, "--label", &format!("k{i}"), file.to_str().unwrap()]);
        let rows = list(db, &["--kernel", kernel]);
        assert_eq!(rows.len(), 1, "{kernel:?}: {rows:?}");
        assert_eq!(rows[0]["kernel"].as_str(), Some(*kernel));
        let shown: Value = serde_json::from_str(&ok(&["show", &format!("k{i}"), "--json", "--db", db])).unwrap();
        assert_eq!(shown["system"]["kernel_release"].as_str(), Some(*kernel), "given back exactly");
        let text = ok(&["show", &format!("k{i}"), "--db", db]);
        assert_eq!(raw_control(&text), None, "{text}");
    }
    let text = ok(&["list", "--db", db]);
    assert_eq!(raw_control(&text), None, "{text}");
    assert_eq!(text.lines().count(), 1 + 1 + kernels.len(), "a header and one row per run: {text}");
    assert!(text.lines().all(|l| l.chars().count() < 400), "a long release cut in the table: {text}");
    assert_eq!(b.tables(), b.store_tables(), "no table dropped");
}
both!(kernel_names_of_any_text_are_stored_filtered_and_shown_as_text);

/// An imported host name and kernel string, and a label, carrying terminal controls (set the
/// title, clear the screen, a carriage return and a line break that fake a row, C1's CSI, a
/// right-to-left override): `list`, `show`, `report` and `compare` show them escaped (`\x1b`),
/// one row per run, and JSON keeps them exactly.
pub(crate) fn control_characters_from_an_imported_file_are_shown_escaped(b: Backend) {
    let db = b.db();
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(fixture("jitterdebugger-results.json")).unwrap()).unwrap();
    let host = "evil\u{1b}]0;pwned\u{7}\r\n9  2026-01-01 fake row\u{9b}2J\u{202e}";
    let kernel = "6.1\u{1b}[2J\u{7f}";
    doc["sysinfo"]["nodename"] = host.into();
    doc["sysinfo"]["release"] = kernel.into();
    let file = b.dir().join("results.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let label = "lab\u{1b}[31mel\u{7}";
    ok(&["import", "--db", db, "--label", label, file.to_str().unwrap()]);
    ok(&["import", "--db", db, "--label", "plain", &fixture("jitterdebugger-results.json")]);
    let list_text = ok(&["list", "--db", db]);
    assert_eq!(list_text.lines().count(), 3, "a header and one row per run: {list_text}");
    for text in [
        list_text,
        ok(&["show", label, "--db", db]),
        ok(&["show", "1", "--db", db]),
        ok(&["report", "1", "--db", db]),
        ok(&["compare", "1", "2", "--db", db]),
    ] {
        assert_eq!(raw_control(&text), None, "{text}");
        assert!(text.contains("\\x1b"), "the escape is shown: {text}");
    }
    let rows = list(db, &[]);
    assert_eq!(rows[0]["host"], host, "JSON keeps the value exactly");
    assert_eq!(rows[0]["kernel"], kernel);
    assert_eq!(rows[0]["label"], label);
    assert_eq!(list(db, &["--kernel", kernel]).len(), 1, "and filters by it exactly");
    let json = ok(&["show", "1", "--json", "--db", db]);
    assert_eq!(raw_control(&json), None, "JSON writes them as escapes: {json}");
}
both!(control_characters_from_an_imported_file_are_shown_escaped);

/// `list --since 1000000d` reaches before 1970 (and a larger age beyond any date): a one-line
/// error, exit 2, never a panic.
pub(crate) fn list_since_an_age_beyond_the_epoch_is_an_error_not_a_panic(b: Backend) {
    let db = b.db();
    ok(&["import", "--db", db, &fixture("oslat.json")]);
    for since in ["1000000d", "100000000y", "99999999999999999999d", "18446744073709551615s"] {
        let (code, _, err) = cli(&["list", "--since", since, "--db", db]);
        assert_eq!(code, 2, "{since}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{since}: {err}");
        assert!(!err.contains("panicked"), "{since}: {err}");
    }
    assert_eq!(list(db, &["--since", "3650d"]).len(), 1);
}
both!(list_since_an_age_beyond_the_epoch_is_an_error_not_a_panic);

/// `list` gives each run the verdict its summary gives: a run that failed (here a CPU that
/// measured nothing, with no criteria asked) is `fail`, not `none`; `none` is only a run that
/// passed without criteria.
pub(crate) fn a_run_that_failed_without_criteria_is_listed_as_failed_not_none(b: Backend) {
    let db = b.db();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(fixture("cyclictest-no-h.json")).unwrap()).unwrap();
    for k in ["cycles", "min", "max"] {
        doc["thread"]["1"][k] = 0.into();
    }
    doc["thread"]["1"]["avg"] = 0.0.into();
    let failed = b.dir().join("one-thread-measured-nothing.json");
    std::fs::write(&failed, serde_json::to_vec(&doc).unwrap()).unwrap();
    ok(&["import", "--db", db, failed.to_str().unwrap(), "--label", "failed"]);
    ok(&["import", "--db", db, &fixture("cyclictest-no-h.json"), "--label", "plain"]);
    let summary = ok(&["show", "failed", "--db", db]);
    assert!(summary.contains("FAIL"), "the summary fails it: {summary}");
    let rows = list(db, &[]);
    let verdict = |label: &str| rows.iter().find(|r| r["label"] == label).map(|r| r["verdict"].as_str().unwrap().to_string());
    assert_eq!(verdict("failed").as_deref(), Some("fail"), "{rows:?}");
    assert_eq!(verdict("plain").as_deref(), Some("none"), "passed without criteria: {rows:?}");
    assert_eq!(list(db, &["--verdict", "fail"]).len(), 1);
    let text = ok(&["list", "--db", db]);
    let line = text.lines().find(|l| l.contains("failed")).unwrap();
    assert!(line.trim_end().ends_with("fail"), "{text}");
}
both!(a_run_that_failed_without_criteria_is_listed_as_failed_not_none);

/// `--quiet` drops the live view, never the line naming the stored run: a script needs the id
/// (on standard output, or on standard error when the JSON document has standard output).
pub(crate) fn quiet_still_names_the_stored_run(b: Backend) {
    let db = b.db();
    let run = ["run", "-q", "--loops", "50", "--warmup", "0", "--cpus", "0", "--load", "none", "--db", db];
    let (code, text, err) = cli(&run);
    assert_eq!(code, 0, "{err}");
    assert_eq!(text.matches(&format!("Stored as run 1 in {}", b.shown())).count(), 1, "{text}");
    let out = rtgauge(&[&run[..], &["--json", "-"]].concat()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("standard output is the document alone");
    assert!(doc.is_object());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Stored as run 2 in"), "{}", String::from_utf8_lossy(&out.stderr));
}
both!(quiet_still_names_the_stored_run);

/// A count of one reads in the singular: an import of one thread is "1 CPU", not "1 CPUs"
/// (the same counted nouns as a one-period run's "1 period" and "1 warm-up period").
pub(crate) fn an_import_of_one_cpu_says_1_cpu_not_1_cpus(b: Backend) {
    let db = b.db();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(fixture("cyclictest-no-h.json")).unwrap()).unwrap();
    doc["thread"].as_object_mut().unwrap().remove("1");
    doc["num_threads"] = 1.into();
    let one = b.dir().join("one-thread.json");
    std::fs::write(&one, serde_json::to_vec(&doc).unwrap()).unwrap();
    let text = ok(&["import", "--db", db, one.to_str().unwrap()]);
    assert!(text.contains(", 1 CPU, ") && !text.contains("1 CPUs"), "{text}");
}
both!(an_import_of_one_cpu_says_1_cpu_not_1_cpus);

/// The compressed document is spooled through the temporary directory; one that cannot take it
/// (missing, full) lost the run: the run is stored all the same.
pub(crate) fn a_run_whose_temporary_directory_is_unusable_is_still_stored(b: Backend) {
    let out = rtgauge(&["run", "-q", "--loops", "200", "--warmup", "0", "--load", "none", "--db", b.db()])
        .env("TMPDIR", b.dir().join("no-such-dir"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(list(b.db(), &[]).len(), 1, "stored");
}
both!(a_run_whose_temporary_directory_is_unusable_is_still_stored);

/// Every column, index and constraint of the store's schema in database `db`, as PostgreSQL's
/// catalog describes them, in order.
fn pg_schema(c: &common::pg::Cluster, db: &str) -> Vec<String> {
    let mut s = c.superuser(db);
    let mut out = Vec::new();
    for (what, sql) in [
        (
            "column",
            "SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || \
             coalesce(column_default, '') FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1",
        ),
        ("index", "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1"),
        (
            "constraint",
            "SELECT conrelid::regclass::text || ' ' || pg_get_constraintdef(oid) FROM pg_constraint \
             WHERE connamespace = 'public'::regnamespace ORDER BY 1",
        ),
        (
            "storage",
            "SELECT attrelid::regclass::text || '.' || attname || ' ' || attstorage::text FROM pg_attribute \
             WHERE attrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r') \
             AND attnum > 0 AND NOT attisdropped ORDER BY 1",
        ),
    ] {
        for r in s.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")) {
            out.push(format!("{what} {}", r.get::<_, String>(0)));
        }
    }
    out
}

/// The PostgreSQL ladder is data (`MIGRATIONS`): a store taken up one layout at a time — each
/// step a connection and a transaction of its own, a run stored as layout 1 kept it (its
/// document compressed in the row) in it from the start — has exactly the columns, indexes,
/// constraints and storage of a store made new, and the run came through every step: layout 2
/// gave it its figures, layout 3 its forecast's level or the reason for none, layout 4 no
/// series; it loads whole. (Named `…::postgres` as every PostgreSQL test, which the foreign
/// architectures' runs under qemu-user skip: the client is the same Rust everywhere.)
mod the_postgresql_ladder_step_by_step {
    #[test]
    fn postgres() {
        super::a_postgresql_store_migrated_step_by_step_equals_one_made_new()
    }
}

fn a_postgresql_store_migrated_step_by_step_equals_one_made_new() {
    use rtgauge::store::postgres::PgStore;
    let Some(made) = Backend::postgres("made_new") else { return };
    drop(Store::open(&made.location()).unwrap_or_else(|e| panic!("{e}")));
    let stepped = made.another("stepped");
    let (Some((c, made_db)), Some((_, stepped_db))) = (&made.pg, &stepped.pg) else { unreachable!() };
    let document = include_str!("../fixtures/result-v3.json");
    let started: Value = serde_json::from_str(document).unwrap();
    let known = made.known_layout();
    for layout in 1..=known {
        let now = PgStore::migrate_to(stepped.db(), layout as usize).unwrap_or_else(|e| panic!("step {layout}: {e}"));
        assert_eq!(now, layout, "each step ends a layout further");
        if layout == 1 {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            std::io::Write::write_all(&mut z, document.as_bytes()).unwrap();
            let compressed = z.finish().unwrap();
            c.superuser(stepped_db)
                .execute(
                    "INSERT INTO runs (uuid, started_at, label, board, host, kernel, preemption, probes, verdict, status, document) \
                     VALUES ('00000000-0000-4000-8000-00000000000a', $1, 'old', 'h', 'h', 'k', 'p', 'timer', 'none', 'complete', $2)",
                    &[&started["started_at"].as_str().unwrap(), &compressed],
                )
                .unwrap();
        }
    }
    let (new, migrated) = (pg_schema(c, made_db), pg_schema(c, stepped_db));
    assert!(new.len() >= 40, "read the schema: {new:?}");
    assert_eq!(migrated, new, "a store migrated step by step has the schema of one made new");
    assert_eq!(stepped.marker().1, known);
    let combined = started["combined"].as_array().unwrap().len() as i64;
    assert_eq!(
        stepped.count("SELECT count(*) FROM figures WHERE run = 1"),
        combined,
        "layout 2 gave each combined series its figures"
    );
    let notes = stepped.count("SELECT count(forecast_note) + count(day_level_ns) FROM figures WHERE run = 1");
    assert!(notes >= 1, "layout 3 gave its latency series a forecast's level or the reason for none");
    assert_eq!(stepped.count("SELECT count(*) FROM runs WHERE series IS NULL AND part IS NULL"), 1, "layout 4: no series");
    let store = Store::open(&stepped.location()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(store.load(1).unwrap_or_else(|e| panic!("{e}")).started_at, started["started_at"].as_str().unwrap());
}
