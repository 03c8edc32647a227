//! The forecast's ground truth at full size (docs/forecast.md, "Ground truth"): for each known
//! tail and each run size, over DRAWS independent draws, how often the forecast applied and how
//! often its 95 % intervals covered the true return levels.
//!
//! cargo run --release --example forecast_truth [DRAWS [START]]

use rtgauge_truth::{study, Tail};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let draws: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let start: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1);
    let tails = [
        ("exponential", Tail::Exponential { scale: 5_000.0 }, 0.0),
        ("gumbel", Tail::Gumbel { mu: 20_000.0, beta: 3_000.0 }, 0.0),
        ("pareto xi=0.25", Tail::Gpd { sigma: 3_000.0, xi: 0.25 }, 0.0),
        ("bounded xi=-0.25", Tail::Gpd { sigma: 5_000.0, xi: -0.25 }, 0.0),
        ("mixture p=1e-4", Tail::Mixture { p: 1e-4 }, 0.0),
        ("exponential, trend x2", Tail::Exponential { scale: 5_000.0 }, 1.0),
    ];
    let sizes = [("1 min", 60_000u64), ("1 h", 3_600_000), ("1 d", 86_400_000)];
    println!("{draws} draws each, stream {start}; coverage of the 95 % intervals among the draws the forecast applied to");
    println!(
        "{:<22} {:>6} {:>10} {:>7} {:>7} {:>7} {:>6} {:>6} {:>9}  not applicable",
        "tail", "size", "applied", "1h", "1d", "1y", "xi<0", "below", "under"
    );
    for (name, tail, drift) in tails {
        for (size, n) in sizes {
            let t = std::time::Instant::now();
            let s = study(tail, n, drift, draws, start ^ n);
            let pct = |c: usize| {
                if s.applicable == 0 {
                    "-".to_string()
                } else {
                    format!("{:.1}%", 100.0 * c as f64 / s.applicable as f64)
                }
            };
            println!(
                "{name:<22} {size:>6} {:>10} {:>7} {:>7} {:>7} {:>6} {:>6} {:>9}  {:?} ({:.1} s)",
                format!("{}/{}", s.applicable, s.draws),
                pct(s.covered[0]),
                pct(s.covered[1]),
                pct(s.covered[2]),
                pct(s.negative_shape),
                s.below_observed,
                format!("{:?}", s.under),
                s.reasons,
                t.elapsed().as_secs_f64()
            );
        }
    }
}
