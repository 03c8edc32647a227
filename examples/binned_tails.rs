//! The forecast on binned tails (docs/forecast.md, "Binned values"): generalised Pareto tails
//! with ξ < 0, ξ = 0 and ξ > 0 whose values are truncated to buckets from 0.1 % to 30 % of
//! the tail's scale (as cyclictest truncates to whole µs), and two-population mixtures, each
//! over DRAWS independent draws of N values, with their timeline and without (another tool's
//! histogram): how often the tests wrongly refused a true tail, how often the 95 % intervals
//! of the 1e-6 and 1e-9 per-period levels covered the truth, how often a mixture was refused
//! or forecast at or above the worst case its run saw.
//!
//! cargo run --release --example binned_tails [DRAWS [N [START]]]

use rtgauge_truth::{study_of, Case, Tail};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let draws: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let n: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let start: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(1);
    let tails = [
        ("GPD xi=-0.25", Tail::Gpd { sigma: 5_000.0, xi: -0.25 }),
        ("GPD xi=0", Tail::Exponential { scale: 5_000.0 }),
        ("GPD xi=0.25", Tail::Gpd { sigma: 5_000.0, xi: 0.25 }),
    ];
    let widths = [0.001, 0.01, 0.1, 0.2, 0.3];
    println!("{draws} draws of {n} values each, stream {start}");
    println!("refused: true tails the tests refused (at their 5 % and 1 % levels); 1e-6, 1e-9: coverage of the");
    println!("95 % intervals of the per-period levels among the draws forecast");
    println!(
        "{:<14} {:>14} {:>9} {:>9} {:>8} {:>8}  not applicable",
        "tail", "bucket/scale", "timeline", "refused", "1e-6", "1e-9"
    );
    for (name, tail) in tails {
        // (the scale is the tail's where the forecast fits it: over the threshold it chooses)
        let scale = tail.scale_at(n);
        for w in widths {
            let resolution = ((w * scale) as u64).max(1);
            for timeline in [true, false] {
                let t = std::time::Instant::now();
                let s = study_of(Case { tail, n, drift: 0.0, resolution, timeline }, draws, start ^ resolution);
                let pct =
                    |c: usize, of: usize| if of == 0 { "-".to_string() } else { format!("{:.1}%", 100.0 * c as f64 / of as f64) };
                println!(
                    "{name:<14} {:>14} {:>9} {:>9} {:>8} {:>8}  {:?} ({:.1} s)",
                    format!("{} ns {:.1}%", resolution, w * 100.0),
                    if timeline { "yes" } else { "no" },
                    pct(s.refused, s.draws),
                    pct(s.covered_per_period[0], s.applicable),
                    pct(s.covered_per_period[1], s.applicable),
                    s.reasons,
                    t.elapsed().as_secs_f64()
                );
            }
        }
    }
    println!();
    println!("mixtures: refused, or forecast with no level (10 times the run and more) below the worst case seen");
    for (name, tail) in [("mixture p=1e-4", Tail::Mixture { p: 1e-4 }), ("mixture p=1e-3", Tail::Mixture { p: 1e-3 })] {
        for resolution in [1u64, 1000] {
            for timeline in [true, false] {
                let s = study_of(Case { tail, n, drift: 0.0, resolution, timeline }, draws, start ^ 0x3117 ^ resolution);
                println!(
                    "{name:<14} {:>6} ns {:>9}: refused {:>5.1}%, at or above {:>5.1}%, together {:>5.1}%",
                    resolution,
                    if timeline { "timeline" } else { "none" },
                    100.0 * s.refused as f64 / s.draws as f64,
                    100.0 * s.at_or_above_observed as f64 / s.draws as f64,
                    100.0 * (s.refused + s.at_or_above_observed) as f64 / s.draws as f64,
                );
            }
        }
    }
}
