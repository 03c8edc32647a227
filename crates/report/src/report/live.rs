//! The live view: one line per measurement thread (probe and CPU) (samples, current max, p99 so far, missed) and the
//! time left, redrawn a few times a second on standard error when it is a terminal. Hidden
//! with `--quiet` or when standard error is not a terminal.

use crate::vocab::units::us;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

pub struct LiveView {
    _multi: MultiProgress,
    clock: ProgressBar,
    lines: Vec<ProgressBar>,
}

impl LiveView {
    /// A live view with one line per measurement thread (`labels`, e.g. `timer cpu0`) lasting `total` (None for a run of unknown length),
    /// or `None` when it should not be drawn.
    pub fn new(quiet: bool, labels: &[String], total: Option<Duration>) -> Option<LiveView> {
        if quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4));
        let clock = match total {
            Some(t) => {
                let b = multi.add(ProgressBar::new(t.as_millis() as u64));
                b.set_style(
                    ProgressStyle::with_template("{bar:30} {msg}  (Ctrl-C stops and keeps the data)").expect("valid template"),
                );
                b
            }
            None => {
                let b = multi.add(ProgressBar::new_spinner());
                b.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
                b
            }
        };
        let lines = labels
            .iter()
            .map(|_| {
                let b = multi.add(ProgressBar::new_spinner());
                b.set_style(ProgressStyle::with_template("{msg}").expect("valid template"));
                b
            })
            .collect();
        Some(LiveView { _multi: multi, clock, lines })
    }

    /// Redraws with the figures so far: per thread (samples, missed, max, p99).
    pub fn update(
        &self,
        elapsed: Duration,
        total: Option<Duration>,
        warming_up: bool,
        labels: &[String],
        stats: &[(u64, u64, Option<u64>, Option<u64>)],
    ) {
        let left = total.map(|t| t.saturating_sub(elapsed));
        self.clock.set_position(elapsed.as_millis() as u64);
        let phase = if warming_up { "warming up" } else { "measuring" };
        self.clock.set_message(match left {
            Some(l) => format!("{phase}, {:.0} s left", l.as_secs_f64().ceil()),
            None => format!("{phase}, {:.0} s", elapsed.as_secs_f64()),
        });
        let opt = |v: Option<u64>| v.map_or("-".to_string(), us);
        for ((line, label), &(samples, missed, max, p99)) in self.lines.iter().zip(labels).zip(stats) {
            line.set_message(format!(
                "  {label:<12} samples {samples:>10}   max {:>10} µs   p99 {:>10} µs   missed {missed:>6}",
                opt(max),
                opt(p99),
            ));
        }
    }

    /// Removes the live lines so the summary stands alone.
    pub fn finish(self) {
        for l in &self.lines {
            l.finish_and_clear();
        }
        self.clock.finish_and_clear();
    }
}
