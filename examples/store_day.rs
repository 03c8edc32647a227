//! How long the store takes to keep a 24 h result of 64 CPUs (issue 9's target: under 100 ms),
//! timed on the library's own `Store::save`. Run by `bench/store_day.py`, which gives it a real
//! result document (one CPU) to widen: 64 per-CPU entries, each with a day of 1 s timeline
//! windows (86 400) whose maxima and p99 vary from window to window.
//!
//!     cargo run --release --example store_day -- TEMPLATE.json [REPEATS]

use rtgauge::result::timeline::TimelineData;
use rtgauge::result::RunResult;
use rtgauge::store::{Location, Store};

const CPUS: usize = 64;
const WINDOWS: u64 = 86_400;

fn main() {
    let mut args = std::env::args().skip(1);
    let template = args.next().expect("a result document to widen");
    let repeats: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let mut r: RunResult = serde_json::from_str(&std::fs::read_to_string(template).unwrap()).unwrap();
    let one = r.probes[0].clone();
    r.probes = (0..CPUS)
        .map(|cpu| {
            let mut p = one.clone();
            p.cpu = Some(cpu);
            // A pseudo-random walk: values change in every window, as a real day's do.
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ cpu as u64;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            p.timeline = Some(TimelineData {
                window_ns: 1_000_000_000,
                start_ns: 1_000_000_000,
                count: (0..WINDOWS).map(|_| 1000).collect(),
                missed: (0..WINDOWS).map(|_| u64::from(next() % 500 == 0)).collect(),
                max_ns: (0..WINDOWS).map(|_| 20_000 + next() % 200_000).collect(),
                p99_ns: (0..WINDOWS).map(|_| 10_000 + next() % 40_000).collect(),
            });
            p
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&Location::File(dir.path().join("day.db"))).unwrap();
    let mut times = Vec::new();
    for _ in 0..repeats {
        // Each save a run of its own (a run already stored by its UUID is not stored again).
        r.uuid = Some(uuid::Uuid::new_v4());
        let t = std::time::Instant::now();
        let id = store.save(&mut r, None, None, None).unwrap().id;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        // Read back once: every window must come back.
        if times.len() == 1 {
            let back = store.load(id).unwrap();
            assert_eq!(back.probes.len(), CPUS);
            assert_eq!(back.probes[CPUS - 1].timeline, r.probes[CPUS - 1].timeline);
        }
    }
    let size = std::fs::metadata(dir.path().join("day.db")).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(dir.path().join("day.db-wal")).map(|m| m.len()).unwrap_or(0);
    times.sort_by(f64::total_cmp);
    println!(
        "store a 24 h result of {CPUS} CPUs ({} windows each): median {:.1} ms, min {:.1} ms, max {:.1} ms over {repeats} saves; \
         store file(s) {:.1} MB after them",
        WINDOWS,
        times[times.len() / 2],
        times[0],
        times[times.len() - 1],
        size as f64 / 1e6
    );
}
