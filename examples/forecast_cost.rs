//! The cost of the analysis of a day-long run on many CPUs (BENCHMARKS.md, "The forecast's
//! cost"): 64 series of 86 400 000 values (24 h at 1 ms) with 1-s windows (86 400, as a 24-h run
//! keeps them), half with an exponential tail, half with a heavy one; the forecast and the
//! convergence of all of them, timed REPEATS times, median printed.
//!
//! cargo run --release --example forecast_cost [CPUS [REPEATS]]

use rtgauge::forecast::convergence;
use rtgauge_truth::{draw_in, forecast_of, Rng, Tail, INTERVAL_NS};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cpus: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(64);
    let repeats: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let n = 86_400_000u64;
    let mut rng = Rng::new(64);
    let draws: Vec<_> = (0..cpus)
        .map(|c| {
            let tail = if c % 2 == 0 { Tail::Exponential { scale: 5_000.0 } } else { Tail::Gpd { sigma: 3_000.0, xi: 0.25 } };
            draw_in(tail, n, 0.0, 1000, &mut rng)
        })
        .collect();
    let start = 1_000_000_000u64;
    let mut times = Vec::new();
    let mut applied = 0;
    for _ in 0..repeats {
        let t = Instant::now();
        applied = 0;
        for d in &draws {
            let f = forecast_of(d);
            let c = convergence::of(&d.timeline, (start, start + d.n * INTERVAL_NS), Some(d.max), INTERVAL_NS);
            applied += usize::from(f.applies() && c.is_some());
        }
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{cpus} series of {n} values, {} windows each: the analysis took {:.3} s (median of {repeats}; min {:.3}, max {:.3}); forecasts applied: {applied}",
        draws[0].timeline.len(),
        times[times.len() / 2],
        times[0],
        times[times.len() - 1]
    );
}
