//! The report's plots, drawn as SVG text by plotters: a series' latency histogram per CPU on a
//! logarithmic count axis (OSADL's style), its percentile curve (latency against "nines": 90 %,
//! 99 %, 99.9 %…, where a worst case shows as the curve's end), and latency against time from
//! the run's timeline with the load phases marked (the OCERA figures). Every plot is built from
//! what the result document keeps (histogram buckets, timeline windows, phases): never samples.

use crate::result::{PhaseResult, ProbeResult};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width and height of every plot, in SVG pixels.
pub const SIZE: (u32, u32) = (900, 380);
/// Bins of a histogram plot at most (re-binned from the HDR buckets to a round width).
const MAX_BINS: u64 = 400;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn err(e: impl std::fmt::Display) -> String {
    format!("drawing a plot failed: {e}")
}

/// Colour of the `i`-th CPU's curve.
fn colour(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    C[i % C.len()]
}

/// Draws into an SVG string of [`SIZE`].
fn svg(draw: impl FnOnce(&Area) -> Result<(), String>) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// Every plot's frame: its title, margins and the room of its axis labels.
fn frame<'a, 'b>(root: &'a Area<'b>, title: &str) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    // (text from outside — a probe's or a run's name — with its control characters escaped)
    b.caption(crate::vocab::shown(title), ("sans-serif", 18))
        .margin(12)
        .margin_right(LEGEND_WIDTH)
        .x_label_area_size(40)
        .y_label_area_size(70);
    b
}

/// The right margin every plot keeps for its legend, outside the plotting area (a legend inside
/// it covered the top of a curve).
const LEGEND_WIDTH: u32 = 150;

/// The legend, in the right margin: a line of each curve's style and its name, as many as fit
/// (then how many more).
fn legend(root: &Area, entries: &[(String, ShapeStyle)]) -> Result<(), String> {
    const ROW: i32 = 18;
    let x = SIZE.0 as i32 - LEGEND_WIDTH as i32 + 8;
    let top = 48;
    let fit = ((SIZE.1 as i32 - top - 50) / ROW).max(1) as usize;
    let font = ("sans-serif", 13).into_font().color(&BLACK);
    for (i, (label, style)) in entries.iter().enumerate() {
        let y = top + i as i32 * ROW;
        if i + 1 == fit && entries.len() > fit {
            root.draw(&Text::new(format!("… {} more", entries.len() - i), (x, y - 7), font.clone())).map_err(err)?;
            break;
        }
        root.draw(&PathElement::new(vec![(x, y), (x + 18, y)], *style)).map_err(err)?;
        root.draw(&Text::new(crate::vocab::shown(label).into_owned(), (x + 24, y - 7), font.clone())).map_err(err)?;
    }
    Ok(())
}

/// A round bin width (ns) that keeps `max_ns` within [`MAX_BINS`] bins: 1, 2, 5 × 10^k ns,
/// at least 1 µs (cyclictest's and OSADL's bucket).
pub fn bin_width_ns(max_ns: u64) -> u64 {
    round_width(max_ns, MAX_BINS)
}

/// The least round width (1, 2, 5 × 10^k ns, at least 1 µs) that cuts `span_ns` into fewer
/// than `bins` bins.
pub fn round_width(span_ns: u64, bins: u64) -> u64 {
    let mut w = 1_000u64;
    loop {
        for m in [1, 2, 5] {
            if span_ns / w.saturating_mul(m) < bins {
                return w.saturating_mul(m);
            }
        }
        w = w.saturating_mul(10);
    }
}

/// An entry's buckets re-binned to `width` ns (see `HistogramData::rebin`).
pub fn bins(p: &ProbeResult, width: u64) -> Vec<(u64, u64)> {
    p.histogram.rebin(width)
}

/// The legend's name of an entry: its CPU.
fn name(p: &ProbeResult) -> String {
    p.scope()
}

/// A curve of a plot: an entry and its name in the legend (a CPU, or a run in a comparison).
pub type Curve<'a> = (String, &'a ProbeResult);

/// Curves named by their CPUs.
pub fn by_cpu<'a>(entries: &[&'a ProbeResult]) -> Vec<Curve<'a>> {
    entries.iter().map(|p| (name(p), *p)).collect()
}

/// The histogram of one series: a step curve per CPU, counts on a log axis (an empty bin lies
/// on the axis' floor).
pub fn histogram(title: &str, curves: &[Curve]) -> Result<String, String> {
    let entries: Vec<&ProbeResult> = curves.iter().map(|c| c.1).collect();
    let max_ns = entries.iter().filter_map(|p| p.histogram.buckets.triples().last().map(|t| t[0])).max().unwrap_or(0);
    let width = bin_width_ns(max_ns);
    let binned: Vec<Vec<(u64, u64)>> = entries.iter().map(|p| bins(p, width)).collect();
    let top = binned.iter().flatten().map(|&(_, c)| c).max().unwrap_or(1).max(1) as f64;
    let x_end = ((max_ns / width + 2) * width) as f64 / 1e3;
    svg(|root| {
        let mut chart = frame(root, title).build_cartesian_2d(0f64..x_end, (0.5f64..top * 2.0).log_scale()).map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(format!("latency (µs; bins of {})", crate::vocab::units::Nanos(width)))
            .y_desc("samples (log)")
            .y_label_formatter(&|v| if *v < 1.0 { String::new() } else { format!("{v:.0}") })
            .draw()
            .map_err(err)?;
        let mut labels = Vec::new();
        for (i, ((label, _), b)) in curves.iter().zip(&binned).enumerate() {
            let c = colour(i);
            let mut pts = Vec::with_capacity(b.len() * 4 + 2);
            let mut next = 0u64;
            for &(bin, n) in b {
                let (x0, x1) = ((bin * width) as f64 / 1e3, ((bin + 1) * width) as f64 / 1e3);
                if bin > next {
                    pts.push(((next * width) as f64 / 1e3, 0.5));
                    pts.push((x0, 0.5));
                }
                pts.push((x0, n as f64));
                pts.push((x1, n as f64));
                next = bin + 1;
            }
            pts.push(((next * width) as f64 / 1e3, 0.5));
            chart.draw_series(LineSeries::new(pts, c.stroke_width(2))).map_err(err)?;
            labels.push((label.clone(), c.stroke_width(2)));
        }
        legend(root, &labels)
    })
}

/// "Nines" of a quantile: 0 for 0 %, 1 for 90 %, 2 for 99 %, 3 for 99.9 %.
fn nines(q: f64) -> f64 {
    -(1.0 - q).max(1e-12).log10()
}

/// The percentile label of a whole number of nines (`99.9%`); empty between.
fn nines_label(x: f64) -> String {
    if (x - x.round()).abs() > 1e-9 || x < 0.0 {
        return String::new();
    }
    match x.round() as u32 {
        0 => "0%".into(),
        1 => "90%".into(),
        k => format!("99.{}%", "9".repeat(k as usize - 2)).replace(".%", "%"),
    }
}

/// An entry's percentile curve: (nines, µs) at each bucket's upper edge; the last sample lies
/// at nines = log10(samples).
fn percentile_points(p: &ProbeResult) -> Vec<(f64, f64)> {
    // Saturating: a stored document's counts may be anything.
    let total: u64 = p.histogram.buckets.triples().fold(0, |s, t| s.saturating_add(t[2]));
    let mut pts = Vec::new();
    let mut cum = 0u64;
    for [lo, hi, n] in p.histogram.buckets.triples() {
        if cum == 0 {
            pts.push((0.0, lo.max(1) as f64 / 1e3));
        }
        cum = cum.saturating_add(n);
        let x = if cum >= total { (total as f64).log10() } else { nines(cum as f64 / total as f64) };
        pts.push((x, hi.max(1) as f64 / 1e3));
    }
    pts
}

/// Latency against percentile, one curve per CPU, both axes logarithmic in effect.
pub fn percentiles(title: &str, named: &[Curve]) -> Result<String, String> {
    let curves: Vec<Vec<(f64, f64)>> = named.iter().map(|c| percentile_points(c.1)).collect();
    let x_end = curves.iter().flatten().map(|p| p.0).fold(1.0f64, f64::max).ceil();
    let (lo, hi) = curves.iter().flatten().fold((f64::MAX, 0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let (lo, hi) = if hi > 0.0 { (lo * 0.8, hi * 1.25) } else { (0.1, 10.0) };
    svg(|root| {
        let mut chart = frame(root, title).build_cartesian_2d(0f64..x_end, (lo..hi).log_scale()).map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(x_end as usize + 1)
            .x_label_formatter(&|x| nines_label(*x))
            .x_desc("percentile of samples")
            .y_desc("latency (µs, log)")
            .draw()
            .map_err(err)?;
        let mut labels = Vec::new();
        for (i, ((label, _), pts)) in named.iter().zip(curves).enumerate() {
            let c = colour(i);
            chart.draw_series(LineSeries::new(pts, c.stroke_width(2))).map_err(err)?;
            labels.push((label.clone(), c.stroke_width(2)));
        }
        legend(root, &labels)
    })
}

/// Latency against time: per CPU the windows' maximum (solid) and p99 (thin), windows with
/// missed periods marked at the top in red, and the load phases shaded and named.
pub fn timeline(title: &str, entries: &[&ProbeResult], phases: &[PhaseResult]) -> Result<String, String> {
    let with: Vec<&ProbeResult> =
        entries.iter().copied().filter(|p| p.timeline.as_ref().is_some_and(|t| !t.is_empty())).collect();
    let Some(first) = with.first().and_then(|p| p.timeline.as_ref()) else {
        return Err("no timeline".into());
    };
    let w = first.window_ns as f64 / 1e9;
    let end_s = with
        .iter()
        .filter_map(|p| p.timeline.as_ref())
        .map(|t| (t.start_ns as f64 / 1e9) + t.len() as f64 * w)
        .fold(0f64, f64::max)
        .max(phases.last().map_or(0.0, |p| p.end_ns as f64 / 1e9));
    let values = with.iter().filter_map(|p| p.timeline.as_ref()).flat_map(|t| t.max_ns.iter().chain(&t.p99_ns)).copied();
    let (lo, hi) = values.filter(|&v| v > 0).fold((u64::MAX, 0), |(a, b), v| (a.min(v), b.max(v)));
    let (lo, hi) = if hi > 0 { (lo as f64 / 1e3 * 0.8, hi as f64 / 1e3 * 2.0) } else { (0.1, 10.0) };
    svg(|root| {
        let mut chart = frame(root, title).build_cartesian_2d(0f64..end_s.max(w), (lo..hi).log_scale()).map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(format!("time from the start of the run (s; windows of {})", crate::vocab::units::Nanos(first.window_ns)))
            .y_desc("latency (µs, log)")
            .draw()
            .map_err(err)?;
        shade_phases(&mut chart, phases, hi)?;
        let mut labels = Vec::new();
        for (i, p) in with.iter().enumerate() {
            let t = p.timeline.as_ref().expect("filtered");
            let c = colour(i);
            let at = |k: usize| t.start_ns as f64 / 1e9 + (k as f64 + 0.5) * w;
            for (column, style, label) in [
                (&t.max_ns, c.stroke_width(2), format!("{} max", name(p))),
                (&t.p99_ns, c.mix(0.5).stroke_width(1), format!("{} p99", name(p))),
            ] {
                for seg in runs_of_values(column) {
                    let pts: Vec<(f64, f64)> = seg.map(|k| (at(k), column[k] as f64 / 1e3)).collect();
                    chart.draw_series(LineSeries::new(pts, style)).map_err(err)?;
                }
                labels.push((label, style));
            }
            let missed = t.missed.iter().enumerate().filter(|(_, &m)| m > 0).map(|(k, _)| {
                let x = t.start_ns as f64 / 1e9 + k as f64 * w;
                Rectangle::new([(x, hi / 1.25), (x + w, hi / 1.1)], RED.filled())
            });
            chart.draw_series(missed).map_err(err)?;
        }
        legend(root, &labels)
    })
}

/// The index ranges of consecutive windows holding a value.
fn runs_of_values(column: &[u64]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = None;
    for (k, &v) in column.iter().chain(std::iter::once(&0)).enumerate() {
        match (v > 0, start) {
            (true, None) => start = Some(k),
            (false, Some(s)) => {
                out.push(s..k);
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Shades the phases that ran loads, each named at its bottom left.
fn shade_phases<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<
        'a,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::combinators::LogCoord<f64>>,
    >,
    phases: &[PhaseResult],
    hi: f64,
) -> Result<(), String> {
    let loaded = phases.iter().filter(|p| !p.loads.is_empty());
    for (i, p) in loaded.enumerate() {
        let (a, b) = (p.start_ns as f64 / 1e9, p.end_ns as f64 / 1e9);
        let fill = if i % 2 == 0 { RGBColor(255, 200, 120).mix(0.3) } else { RGBColor(255, 170, 90).mix(0.3) };
        let bottom = chart.y_range().start;
        chart
            .draw_series(std::iter::once(Rectangle::new([(a, bottom), (b, hi)], fill.filled())))
            .map_err(|e| err(format!("{e:?}")))?;
        let text = crate::vocab::shown(&p.loads.join(", ")).into_owned();
        let text = if text.chars().count() > 40 { format!("{}…", text.chars().take(39).collect::<String>()) } else { text };
        chart
            .draw_series(std::iter::once(Text::new(
                text,
                (a, bottom * 1.25),
                ("sans-serif", 12).into_font().color(&BLACK.mix(0.7)),
            )))
            .map_err(|e| err(format!("{e:?}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_round_and_few() {
        assert_eq!(bin_width_ns(0), 1_000);
        assert_eq!(bin_width_ns(399_999), 1_000);
        assert_eq!(bin_width_ns(400_000), 2_000);
        assert_eq!(bin_width_ns(30_000_000), 100_000);
        assert!(u64::MAX / bin_width_ns(u64::MAX) < MAX_BINS);
    }

    #[test]
    fn percentile_labels_are_nines() {
        assert_eq!(nines_label(0.0), "0%");
        assert_eq!(nines_label(2.0), "99%");
        assert_eq!(nines_label(3.0), "99.9%");
        assert_eq!(nines_label(2.5), "");
    }

    #[test]
    fn value_runs_split_at_empty_windows() {
        assert_eq!(runs_of_values(&[0, 3, 4, 0, 5]), vec![1..3, 4..5]);
        assert!(runs_of_values(&[0, 0]).is_empty());
    }
}
