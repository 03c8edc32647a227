//! A lab's store at scale, for issue 23's targets (`bench/store_scale.py` drives it): fills a
//! store (a SQLite file or a PostgreSQL URL) with many runs of many boards through the
//! library's own `Store::save`, each a real result document varied as a lab's runs vary; writes
//! a 10-minute 2-CPU result (its timelines at the real window count) for the binary to import;
//! and times `Store::save` of such a run into the filled store.
//!
//!     cargo run --release --example store_scale -- fill TEMPLATE DB RUNS BOARDS [WRITERS [HEAVY]]
//!     cargo run --release --example store_scale -- ten-minutes TEMPLATE DIR COPIES
//!     cargo run --release --example store_scale -- save TEMPLATE DB REPEATS
//!     cargo run --release --example store_scale -- queries DB REPEATS
//!
//! `queries` times what the dashboard asks of a filled store (`rtgauge serve`'s fleet and board
//! pages): the boards, each board's newest 30 runs, and the figures of 400 and of 1 000 runs;
//! and the first `Store::open` for writing (a store of an older layout: its migration).
//!
//! TEMPLATE is a result document of a short run (`rtgauge run -D 2s --cpus 0,1 --json F
//! --no-store`). A filled run keeps the template's histograms and timelines and varies what a
//! lab's runs differ in: a fresh UUID, the board (BOARDS names; its host), the start (spread
//! over two years, in the order of the ids), the kernel (six releases, moving on with time),
//! the scenario, the label and the worst case. With HEAVY, the first board (`rpi4-lab-01`) has
//! every RUNS/HEAVY-th run (HEAVY of them where HEAVY divides RUNS: the dashboard's board page
//! of 1 000 runs, `bench/serve.py`) and the other boards share the rest.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use rtgauge::result::timeline::TimelineData;
use rtgauge::result::{RunResult, ScenarioRef};
use rtgauge::store::{Location, Store};
use std::path::Path;
use std::time::Instant;

const FAMILIES: [&str; 8] =
    ["rpi4-lab", "rpi5-lab", "imx8mp-evk", "am62x-sk", "jetson-orin", "x86-ipc", "stm32mp1-dk", "rk3588-rock5b"];
const KERNELS: [&str; 6] = ["6.6.52-rt43", "6.6.63-rt46", "6.12.0-rt5", "6.12.8-rt8", "6.13.0-rt1", "6.14.2-rt3"];
const SCENARIOS: [Option<&str>; 5] = [None, Some("worst-case"), Some("cortex-a53"), Some("ocera"), Some("firmtimers")];
/// Two years, the span the runs' starts are spread over, ending at the fill's start.
const SPAN_S: i64 = 2 * 365 * 86_400;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_else(|| usage());
    let number = |i: usize| arg(i).parse::<usize>().unwrap_or_else(|_| usage());
    match arg(0) {
        "fill" => fill(
            &template(arg(1)),
            arg(2),
            number(3),
            number(4),
            args.get(5).map_or(1, |_| number(5)),
            args.get(6).map(|_| number(6)).filter(|&h| h > 0),
        ),
        "ten-minutes" => ten_minutes_files(&template(arg(1)), Path::new(arg(2)), number(3)),
        "save" => save(&template(arg(1)), arg(2), number(3)),
        "queries" => queries(arg(1), number(2)),
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: store_scale fill TEMPLATE DB RUNS BOARDS [WRITERS [HEAVY]] | ten-minutes TEMPLATE DIR COPIES \
         | save TEMPLATE DB REPEATS | queries DB REPEATS"
    );
    std::process::exit(2)
}

fn template(path: &str) -> RunResult {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A pseudo-random sequence (xorshift), the same for the same seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The name of board `b`: a family and a number, as a lab names them.
fn board_name(b: usize) -> String {
    format!("{}-{:02}", FAMILIES[b % FAMILIES.len()], b / FAMILIES.len() + 1)
}

/// Run `i` of `runs`, made from the template: what varies from run to run set; its label.
/// `heavy_every`: every so many runs are the first board's, and no other is.
fn varied(
    t: &RunResult,
    i: usize,
    runs: usize,
    boards: usize,
    end: DateTime<Utc>,
    heavy_every: Option<usize>,
) -> (RunResult, Option<String>) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
    rng.next();
    let mut r = t.clone();
    r.uuid = Some(uuid::Uuid::new_v4());
    let board = match heavy_every {
        Some(k) if i.is_multiple_of(k) => 0,
        Some(_) => 1 + rng.below(boards.max(2) as u64 - 1) as usize,
        None => rng.below(boards as u64) as usize,
    };
    let name = board_name(board);
    r.system.hostname = name.clone();
    let mut b = r.board.clone().unwrap_or_default();
    b.name = name;
    b.config_changes = None;
    r.board = Some(b);
    // In the order of the ids, a slot each, somewhere in it.
    let slot = SPAN_S as f64 / runs as f64;
    let at = end - Duration::seconds(SPAN_S)
        + Duration::milliseconds(((i as f64 + rng.below(1000) as f64 / 1000.0) * slot * 1e3) as i64);
    r.started_at = at.to_rfc3339_opts(SecondsFormat::Millis, true);
    r.ended_at = (at + Duration::nanoseconds(r.measured_ns as i64)).to_rfc3339_opts(SecondsFormat::Millis, true);
    // Kernels move on with time, some boards a release behind.
    let era = (i * KERNELS.len() / runs.max(1)).saturating_sub(board % 3 / 2);
    r.system.kernel_release = KERNELS[era.min(KERNELS.len() - 1)].to_string();
    r.config.scenario = SCENARIOS[rng.below(SCENARIOS.len() as u64) as usize]
        .map(|s| ScenarioRef { name: s.to_string(), source: format!("built-in:{s}") });
    let label = match rng.below(100) {
        0..=64 => Some("nightly".to_string()),
        65..=79 => Some("weekly".to_string()),
        80..=84 => Some(format!("pr-{}", 1000 + i / 50)),
        _ => None,
    };
    // The worst case: the template's tail, from as it is to five times it.
    let scale = 1.0 + rng.below(4000) as f64 / 1000.0;
    let measured = r.measured_ns.max(1);
    for p in r.probes.iter_mut().chain(&mut r.combined) {
        if let Some(m) = p.max_ns.as_mut() {
            *m = (*m as f64 * scale) as u64;
        }
        if let Some(at) = p.max_at_ns.as_mut() {
            *at = rng.below(measured);
        }
    }
    (r, label)
}

/// Fills the store at `db` with `runs` runs of `boards` boards, by `writers` writers at once
/// (each with a store of its own, as boards are); `heavy`: the first board's runs, exactly;
/// prints how long it took.
fn fill(t: &RunResult, db: &str, runs: usize, boards: usize, writers: usize, heavy: Option<usize>) {
    let heavy_every = heavy.map(|h| (runs / h.min(runs)).max(1));
    let location = Location::of(Path::new(db));
    // (chrono without its clock, as rtgauge builds it.)
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let end = DateTime::from_timestamp(now, 0).unwrap_or_default();
    let start = Instant::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for w in 0..writers {
            let (location, done) = (&location, &done);
            s.spawn(move || {
                let mut store = Store::open(location).unwrap_or_else(|e| panic!("{e}"));
                for (n, i) in (w..runs).step_by(writers).enumerate() {
                    // A SQLite store's log is folded back into it when it is opened: a writer
                    // opens it again now and then, as a board's runs would.
                    if n > 0 && n % 2000 == 0 && matches!(location, Location::File(_)) {
                        drop(store);
                        store = Store::open(location).unwrap_or_else(|e| panic!("{e}"));
                    }
                    let (mut r, label) = varied(t, i, runs, boards, end, heavy_every);
                    store.save(&mut r, label.as_deref(), None, None).unwrap_or_else(|e| panic!("{e}"));
                    let d = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    if d % 10_000 == 0 {
                        eprintln!("{d} runs stored, {:.0} s", start.elapsed().as_secs_f64());
                    }
                }
            });
        }
    });
    println!(
        "filled: {runs} runs of {boards} boards by {writers} writer(s) in {:.1} s ({:.2} ms a run)",
        start.elapsed().as_secs_f64(),
        start.elapsed().as_secs_f64() * 1e3 / runs as f64
    );
}

/// The template (a run on 2 CPUs) as a 10-minute run: every CPU's series with a timeline of 600
/// windows of 1 s (the default window) whose maxima and p99 vary, its duration 10 minutes. Its
/// histograms and counts stay the template's (an import checks them against each other).
fn ten_minutes(t: &RunResult) -> RunResult {
    const WINDOWS: u64 = 600;
    let mut r = t.clone();
    assert!(r.probes.iter().filter(|p| p.cpu.is_some()).count() >= 2, "a template of a run on 2 CPUs or more");
    for (k, p) in r.probes.iter_mut().enumerate() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ k as u64);
        let max = p.max_ns.unwrap_or(50_000).max(1);
        let (each, rest) = (p.samples / WINDOWS, p.samples % WINDOWS);
        let (missed_each, missed_rest) = (p.missed / WINDOWS, p.missed % WINDOWS);
        // (the windows' maxima below the entry's, which one window reaches; its misses and
        // values spread over the windows: an import checks both against the entry's)
        let mut max_ns: Vec<u64> = (0..WINDOWS).map(|_| max / 4 + rng.below(max - max / 4 + 1)).collect();
        let worst = rng.below(WINDOWS);
        max_ns[worst as usize] = max;
        p.max_at_ns = p.max_ns.map(|_| 1_000_000_000 + worst * 1_000_000_000 + 500_000_000);
        p.timeline = Some(TimelineData {
            window_ns: 1_000_000_000,
            start_ns: 1_000_000_000,
            count: (0..WINDOWS).map(|w| each + u64::from(w < rest)).collect(),
            missed: (0..WINDOWS).map(|w| missed_each + u64::from(w < missed_rest)).collect(),
            max_ns,
            p99_ns: (0..WINDOWS).map(|_| max / 8 + rng.below(max / 8 + 1)).collect(),
        });
    }
    r.measured_ns = WINDOWS * 1_000_000_000;
    r.config.duration_ns = Some(r.measured_ns);
    // Its span holds its 1-s warm-up (the timeline starts there) and the 10 minutes measured, as
    // an import checks.
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(&r.started_at) {
        r.ended_at = (at + Duration::seconds(1 + WINDOWS as i64)).to_rfc3339_opts(SecondsFormat::Millis, true);
    }
    r
}

/// `copies` files of a 10-minute 2-CPU run in `dir` (`ten-minutes-N.json`), each its own run.
fn ten_minutes_files(t: &RunResult, dir: &Path, copies: usize) {
    let mut r = ten_minutes(t);
    for n in 0..copies {
        r.uuid = Some(uuid::Uuid::new_v4());
        let path = dir.join(format!("ten-minutes-{n}.json"));
        std::fs::write(&path, serde_json::to_vec_pretty(&r).unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    println!(
        "{copies} files of a 10-minute 2-CPU run ({} windows a series) in {}",
        r.probes[0].timeline.as_ref().map_or(0, TimelineData::len),
        dir.display()
    );
}

/// Times `Store::save` of a 10-minute 2-CPU run into the store at `db`, `repeats` times (each a
/// run of its own); and once what `rtgauge run` does with the store before measuring (open it,
/// check that every part of it reads).
fn save(t: &RunResult, db: &str, repeats: usize) {
    let location = Location::of(Path::new(db));
    let started = Instant::now();
    let store = Store::open(&location).unwrap_or_else(|e| panic!("{e}"));
    let opened = started.elapsed();
    store.check_whole().unwrap_or_else(|e| panic!("{e}"));
    let checked = started.elapsed() - opened;
    let mut r = ten_minutes(t);
    let mut times = Vec::new();
    for _ in 0..repeats {
        r.uuid = Some(uuid::Uuid::new_v4());
        let start = Instant::now();
        let saved = store.save(&mut r, Some("ten-minutes"), None, None).unwrap_or_else(|e| panic!("{e}"));
        times.push(start.elapsed().as_secs_f64() * 1e3);
        assert!(!saved.already);
        if times.len() == 1 {
            let back = store.load(saved.id).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(back.probes[1].timeline, r.probes[1].timeline, "every window back");
        }
    }
    times.sort_by(f64::total_cmp);
    println!(
        "Store::save of a 10-minute 2-CPU run: median {:.1} ms, min {:.1}, max {:.1} over {repeats} saves; \
         before measuring: Store::open {:.0} ms, check_whole {:.0} ms",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1],
        opened.as_secs_f64() * 1e3,
        checked.as_secs_f64() * 1e3
    );
}

/// Times the dashboard's questions to the store at `db`, `repeats` times each (the median and
/// the largest): `boards`, `recent_per_board(30)`, `figures` of 400 runs (the newest of 200
/// boards' sparklines, or of a board page) and of 1 000; the first `Store::open` (for writing:
/// the migration of a store of an older layout) before.
fn queries(db: &str, repeats: usize) {
    use rtgauge::store::Filter;
    let location = Location::of(Path::new(db));
    let start = Instant::now();
    let store = Store::open(&location).unwrap_or_else(|e| panic!("{e}"));
    println!("Store::open (migrating an older layout): {:.1} s", start.elapsed().as_secs_f64());
    drop(store);
    let store = Store::open_read(&location).unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("no store at {db}"));
    let all = Filter::default();
    let recent = store.recent_per_board(&all, 30).unwrap_or_else(|e| panic!("{e}"));
    let newest: Vec<i64> = {
        let mut ids: Vec<i64> = recent.iter().map(|r| r.id).collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids
    };
    let (ids_400, ids_1000) = (&newest[..newest.len().min(400)], &newest[..newest.len().min(1000)]);
    let time = |what: &str, f: &dyn Fn() -> usize| {
        let mut ms: Vec<f64> = (0..repeats)
            .map(|_| {
                let t = Instant::now();
                let n = f();
                assert!(n > 0, "{what}: nothing");
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        println!("{what:<40} median {:7.1} ms, max {:7.1} ms", ms[ms.len() / 2], ms[ms.len() - 1]);
        ms[ms.len() / 2]
    };
    let boards = time("boards()", &|| store.boards(&all).unwrap_or_else(|e| panic!("{e}")).len());
    let per_board = time("recent_per_board(30)", &|| store.recent_per_board(&all, 30).unwrap_or_else(|e| panic!("{e}")).len());
    let f400 =
        time(&format!("figures({} ids)", ids_400.len()), &|| store.figures(ids_400).unwrap_or_else(|e| panic!("{e}")).len());
    time(&format!("figures({} ids)", ids_1000.len()), &|| store.figures(ids_1000).unwrap_or_else(|e| panic!("{e}")).len());
    let board = store.boards(&all).unwrap_or_else(|e| panic!("{e}")).swap_remove(0).board;
    let one = Filter { board: Some(board.clone()), ..Filter::default() };
    time(&format!("list(board {board}, newest 1000)"), &|| {
        store.list(&Filter { newest: Some(1000), ..one.clone() }).unwrap_or_else(|e| panic!("{e}")).len()
    });
    println!("boards() + recent_per_board(30) + figures(400): {:.1} ms (medians summed)", boards + per_board + f400);
}
