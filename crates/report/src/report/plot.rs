//! The report's plots, drawn as SVG by [`super::svg`] (the dashboard's draw with it too): a
//! series' latency histogram per CPU with both axes logarithmic (OSADL's style: the body and an
//! outlier decades above it both show), its percentile curve (latency against "nines": 90 %,
//! 99 %, 99.9 %…, where a worst case shows as the curve's end), latency against time from the
//! run's timeline with the load phases marked (the OCERA figures), and the probability of
//! exceedance with the forecast's fitted tail. Latency ticks read as durations (`20 µs`,
//! `1 ms`); every mark of a plot has its entry in the legend beside it. Every plot is built from
//! what the result document keeps (histogram buckets, timeline windows, phases): never samples.

use super::markup::Html;
use super::svg::{Anchor, Axis, Canvas, Chart, Font, Ink, Mesh, Pen, BLACK, WHITE};
use crate::result::forecast::{Convergence, Forecast};
use crate::result::{PhaseResult, ProbeResult};

/// Width and height of every plot, in SVG pixels.
pub const SIZE: (u32, u32) = (900, 380);
/// Bins of a histogram per decade of latency (above 10 µs; below, bins of 1 µs: see [`log_edges`]).
pub const BINS_PER_DECADE: usize = 20;
/// The histogram's bin edges in a decade: 10^(k/20), to two significant digits (×10).
const MANTISSAS: [u64; BINS_PER_DECADE] = [10, 11, 13, 14, 16, 18, 20, 22, 25, 28, 32, 35, 40, 45, 50, 56, 63, 71, 79, 89];

/// Colour of the `i`-th CPU's curve.
fn colour(i: usize) -> Ink {
    const C: [Ink; 8] = [
        Ink::rgb(31, 119, 180),
        Ink::rgb(214, 39, 40),
        Ink::rgb(44, 160, 44),
        Ink::rgb(255, 127, 14),
        Ink::rgb(148, 103, 189),
        Ink::rgb(140, 86, 75),
        Ink::rgb(227, 119, 194),
        Ink::rgb(23, 190, 207),
    ];
    C[i % C.len()]
}

/// Text sizes, in px: a plot's title, its ticks and axes' titles (legible in a report 1 280 px
/// wide and on a slide).
const TITLE_FONT: f64 = 17.0;
const TICK_FONT: f64 = 13.0;
/// The margin round every plot, and the room of its title and of its axes' labels.
const MARGIN: f64 = 12.0;
const TITLE_ROOM: f64 = 27.0;
const X_LABEL_ROOM: f64 = 44.0;
const Y_LABEL_ROOM: f64 = 78.0;

/// The right margin every plot keeps for its legend, outside the plotting area (a legend inside
/// it covered the top of a curve).
const LEGEND_WIDTH: f64 = 210.0;
/// The legend's text: its size, and the characters a line of it holds within the legend's
/// width (a sans-serif face averages under 0.6 em a character).
const LEGEND_FONT: f64 = 13.0;
const LEGEND_CHARS: usize = 21;
/// Lines a legend entry takes at most (then it ends with "…").
const LEGEND_LINES: usize = 3;
/// Opacity of a histogram's bars (the step curve over them is opaque).
const BAR_SHADE: f64 = 0.25;

/// A plot begun: its canvas, white, titled, and its chart of axes `x` and `y` in the area left
/// of the legend.
fn begin(title: &str, x: Axis, y: Axis) -> (Canvas, Chart) {
    let (w, h) = (SIZE.0 as f64, SIZE.1 as f64);
    // (text from outside — a probe's or a run's name — with its control characters escaped)
    let title = crate::vocab::shown(title);
    let mut canvas = Canvas::new(w, h, None, &title);
    canvas.fill(WHITE);
    let right = w - LEGEND_WIDTH;
    canvas.text(((MARGIN + right) / 2.0, MARGIN + TITLE_FONT), &title, Font::new(TITLE_FONT).anchor(Anchor::Middle));
    let chart = Chart { left: MARGIN + Y_LABEL_ROOM, top: MARGIN + TITLE_ROOM, right, bottom: h - MARGIN - X_LABEL_ROOM, x, y };
    (canvas, chart)
}

/// The mesh of a chart: its ticks labelled by `x_label` and `y_label`, its axes titled.
fn mesh(
    canvas: &mut Canvas,
    chart: &Chart,
    x: (&str, &dyn Fn(f64) -> String),
    y: (&str, &dyn Fn(f64) -> String),
    x_ticks: usize,
) {
    chart.mesh(canvas, &Mesh { x_label: x.1, y_label: y.1, x_title: x.0, y_title: y.0, font: TICK_FONT, x_ticks });
}

/// What a legend entry shows of its mark: a line of the curve's pen, a patch of a mark's
/// colour, a histogram's bar (shaded, edged in its colour), or a shaded span (a load phase, its
/// start a line of its colour).
#[derive(Clone, Copy)]
enum Mark {
    Line(Pen),
    Patch(Ink),
    Bar(Ink),
    Span(Ink, f64),
    /// A dashed line of the pen (a running maximum), with a dot at its end (its last rise).
    DashDot(Pen),
    /// A dashed line of the pen (a reference line, a threshold).
    Dashed(Pen),
    /// A dot of the colour (measured points).
    Dot(Ink),
    /// A dot of the colour on a horizontal bar (a return level with its interval).
    DotBar(Ink),
}

/// The legend, in the right margin: each mark's sample and its name, wrapped within the
/// margin's width, as many as fit (then how many more).
fn legend(canvas: &mut Canvas, entries: &[(String, Mark)]) {
    const LINE: f64 = 16.0;
    const GAP: f64 = 6.0;
    let x = SIZE.0 as f64 - LEGEND_WIDTH + 8.0;
    let bottom = SIZE.1 as f64 - 50.0;
    let mut y = 48.0;
    let font = Font::new(LEGEND_FONT);
    for (i, (label, mark)) in entries.iter().enumerate() {
        let lines = wrap(&crate::vocab::shown(label), LEGEND_CHARS, LEGEND_LINES);
        let height = lines.len() as f64 * LINE;
        let last = i + 1 == entries.len();
        // The room of this entry, and of a "… N more" line after it unless it is the last.
        if y + height + if last { 0.0 } else { LINE } > bottom {
            canvas.text((x, y + 4.0), &format!("… {} more", entries.len() - i), font);
            break;
        }
        let (l, r) = (x, x + 18.0);
        match *mark {
            Mark::Line(pen) => canvas.line(&[(l, y), (r, y)], pen),
            Mark::Patch(c) => canvas.rect((l, y - 5.0), (r, y + 5.0), c),
            Mark::Bar(c) => {
                canvas.rect((l, y - 5.0), (r, y + 5.0), c.alpha(BAR_SHADE));
                canvas.line(&[(l, y + 5.0), (l, y - 5.0), (r, y - 5.0), (r, y + 5.0)], c.pen(2.0));
            }
            Mark::Span(c, alpha) => {
                canvas.rect((l, y - 5.0), (r, y + 5.0), c.alpha(alpha));
                canvas.line(&[(l, y - 5.0), (l, y + 5.0)], c.pen(1.0));
            }
            Mark::Dashed(pen) => {
                for (a, b) in [(0.0, 4.0), (7.0, 11.0), (14.0, 18.0)] {
                    canvas.line(&[(l + a, y), (l + b, y)], pen);
                }
            }
            Mark::DashDot(pen) => {
                for (a, b) in [(0.0, 4.0), (7.0, 11.0)] {
                    canvas.line(&[(l + a, y), (l + b, y)], pen);
                }
                canvas.circle((l + 15.0, y), 4.0, Some(pen.ink), Some(BLACK.pen(1.0)));
            }
            Mark::Dot(c) => canvas.circle((l + 9.0, y), 3.0, Some(c), None),
            Mark::DotBar(c) => {
                canvas.line(&[(l, y), (r, y)], c.pen(2.0));
                canvas.line(&[(l, y - 4.0), (l, y + 4.0)], c.pen(2.0));
                canvas.line(&[(r, y - 4.0), (r, y + 4.0)], c.pen(2.0));
                canvas.circle((l + 9.0, y), 4.0, Some(c), None);
            }
        }
        for (k, line) in lines.iter().enumerate() {
            canvas.text((x + 24.0, y + 4.0 + k as f64 * LINE), line, font);
        }
        y += height + GAP;
    }
}

/// `text` in lines of at most `width` characters, broken at spaces (a longer word after a dash,
/// comma, colon or slash, else anywhere), at most `max_lines` of them, the last ending with "…" when text is left.
fn wrap(text: &str, width: usize, max_lines: usize) -> Vec<String> {
    let width = width.max(2);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word = word.to_string();
        loop {
            let (have, len) = (line.chars().count(), word.chars().count());
            let room = if have == 0 { width } else { width.saturating_sub(have + 1) };
            if len <= room {
                if have > 0 {
                    line.push(' ');
                }
                line += &word;
                break;
            }
            if have > 0 && len <= width {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            // A word longer than the room: cut it after its last dash, comma, colon or slash within
            // the room (a long word on a line of its own: anywhere, if it has none).
            let cut_at = if have > 0 { room } else { width };
            let head: String = word.chars().take(cut_at).collect();
            let at_mark = head.rfind(['-', ',', ':', '/']).map(|b| head[..=b].chars().count()).filter(|&n| n > 1);
            let cut = at_mark.unwrap_or(if have > 0 { 0 } else { cut_at });
            if cut == 0 {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            let rest: String = word.chars().skip(cut).collect();
            if have > 0 {
                line.push(' ');
            }
            line.extend(word.chars().take(cut));
            lines.push(std::mem::take(&mut line));
            word = rest;
            if word.is_empty() {
                break;
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        let last = &mut lines[max_lines - 1];
        let keep: String = last.chars().take(width - 1).collect();
        *last = format!("{keep}…");
    }
    lines
}

/// A latency in µs (an axis' value) as an engineer reads it: `20 µs`, `1 ms`, `150 ms`.
fn duration_label(us: f64) -> String {
    if !us.is_finite() || us <= 0.0 {
        return String::new();
    }
    crate::vocab::units::Nanos((us * 1e3).round() as u64).to_string()
}

/// A count (an axis' value): `1`, `100`, `10k`, `2M`; none below 1 (the floor of empty bins).
fn count_label(n: f64) -> String {
    match n {
        n if n < 1.0 => String::new(),
        n if n >= 1e6 => format!("{}M", trim(n / 1e6)),
        n if n >= 1e4 => format!("{}k", trim(n / 1e3)),
        n => format!("{n:.0}"),
    }
}

/// A number without trailing zeros: `0.5`, `2`, `3600` (a time axis' tick, with its unit).
fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The power of ten at or below `v` (> 0): a logarithmic axis starting there has a labelled tick
/// at its start.
fn decade_floor(v: f64) -> f64 {
    10f64.powf(v.log10().floor())
}

/// The `k`-th edge of the histograms' grid (ns): `MANTISSAS` per decade, whole ns, whole µs from
/// 1 µs on (bins of 1 µs below 10 µs, as cyclictest's and OSADL's; a µs-resolution import
/// leaves no empty bins between its values). None past u64.
fn grid_edge(k: i64) -> Option<u64> {
    let (decade, m) = (k.div_euclid(BINS_PER_DECADE as i64), MANTISSAS[k.rem_euclid(BINS_PER_DECADE as i64) as usize]);
    let v = match decade {
        d if d < 0 => return Some(0),
        0 => (m + 5) / 10,
        d => m.checked_mul(10u64.checked_pow(d as u32 - 1)?)?,
    };
    Some(if v >= 1_000 { (v + 500) / 1_000 * 1_000 } else { v })
}

/// The bin edges (ns) of a histogram of values from `min_ns` to `max_ns`: logarithmic (see
/// [`grid_edge`]), from the edge at or below the least value above 0 to the first above `max_ns`.
pub fn log_edges(min_ns: u64, max_ns: u64) -> Vec<u64> {
    let min = min_ns.max(1);
    let max = max_ns.max(min);
    let mut k = ((min as f64).log10() * BINS_PER_DECADE as f64).floor() as i64 + 1;
    while grid_edge(k).is_none_or(|e| e > min) {
        k -= 1;
    }
    let mut edges: Vec<u64> = Vec::new();
    loop {
        let Some(e) = grid_edge(k) else {
            edges.push(u64::MAX);
            break;
        };
        if edges.last() != Some(&e) {
            edges.push(e);
        }
        if e > max {
            break;
        }
        k += 1;
    }
    edges
}

/// An entry's counts in the bins between `edges` (a value in the bin whose lower edge is at or
/// below it; 0 — a tool's "under 1 µs" — in the first).
pub fn bin_counts(p: &ProbeResult, edges: &[u64]) -> Vec<u64> {
    let mut counts = vec![0u64; edges.len().saturating_sub(1).max(1)];
    for [lo, _, n] in p.histogram.buckets.triples() {
        let i = edges.partition_point(|&e| e <= lo).saturating_sub(1).min(counts.len() - 1);
        counts[i] = counts[i].saturating_add(n);
    }
    counts
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

/// The histogram of one series, OSADL's way: both axes logarithmic, latency in bins of equal
/// width on it (20 a decade; 1 µs below 10 µs), so the body of the distribution and an outlier
/// decades above it both show. Per CPU a shaded bar per non-empty bin under a step curve (an
/// empty bin lies on the axis' floor).
pub fn histogram(title: &str, curves: &[Curve]) -> Html {
    let entries: Vec<&ProbeResult> = curves.iter().map(|c| c.1).collect();
    let lows = entries.iter().flat_map(|p| p.histogram.buckets.triples().map(|t| t[0]));
    let (min_ns, max_ns) = lows.fold((u64::MAX, 0), |(a, b), v| (if v > 0 { a.min(v) } else { a }, b.max(v)));
    let min_ns = if min_ns == u64::MAX { max_ns.max(1_000) } else { min_ns };
    let edges = log_edges(min_ns, max_ns);
    let binned: Vec<Vec<u64>> = entries.iter().map(|p| bin_counts(p, &edges)).collect();
    let top = binned.iter().flatten().copied().max().unwrap_or(1).max(1) as f64;
    let x = |e: u64| e as f64 / 1e3;
    let (x_lo, x_hi) = (decade_floor(x(edges[0])), x(edges[edges.len() - 1]));
    let (mut canvas, chart) = begin(title, Axis::log(x_lo, x_hi), Axis::log(0.5, top * 2.0));
    let x_title = format!("latency (log; {BINS_PER_DECADE} bins a decade, 1 µs below 10 µs)");
    mesh(&mut canvas, &chart, (&x_title, &duration_label), ("samples in the bin (log)", &count_label), 10);
    let (a, b) = chart.corners();
    canvas.clip(a, b);
    let mut labels = Vec::new();
    for (i, ((label, _), counts)) in curves.iter().zip(&binned).enumerate() {
        let c = colour(i);
        canvas.crisp();
        for (b, &n) in counts.iter().enumerate().filter(|(_, &n)| n > 0) {
            canvas.rect(chart.at((x(edges[b]), 0.5)), chart.at((x(edges[b + 1]), n as f64)), c.alpha(BAR_SHADE));
        }
        canvas.uncrisp();
        let (Some(first), Some(last)) = (counts.iter().position(|&n| n > 0), counts.iter().rposition(|&n| n > 0)) else {
            continue;
        };
        let mut pts = vec![(x(edges[first]), 0.5)];
        for b in first..=last {
            let y = (counts[b] as f64).max(0.5);
            pts.push((x(edges[b]), y));
            pts.push((x(edges[b + 1]), y));
        }
        pts.push((x(edges[last + 1]), 0.5));
        canvas.line(&chart.points(&pts), c.pen(2.0));
        labels.push((label.clone(), Mark::Bar(c)));
    }
    canvas.unclip();
    legend(&mut canvas, &labels);
    canvas.finish()
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
pub fn percentiles(title: &str, named: &[Curve]) -> Html {
    let curves: Vec<Vec<(f64, f64)>> = named.iter().map(|c| percentile_points(c.1)).collect();
    let x_end = curves.iter().flatten().map(|p| p.0).fold(1.0f64, f64::max).ceil();
    let (lo, hi) = curves.iter().flatten().fold((f64::MAX, 0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let (lo, hi) = if hi > 0.0 { (decade_floor(lo), hi * 1.25) } else { (0.1, 10.0) };
    let (mut canvas, chart) = begin(title, Axis::linear(0.0, x_end), Axis::log(lo, hi));
    mesh(&mut canvas, &chart, ("percentile of samples", &nines_label), ("latency (log)", &duration_label), x_end as usize + 1);
    let (a, b) = chart.corners();
    canvas.clip(a, b);
    let mut labels = Vec::new();
    for (i, ((label, _), pts)) in named.iter().zip(curves).enumerate() {
        let pen = colour(i).pen(2.0);
        canvas.line(&chart.points(&pts), pen);
        labels.push((label.clone(), Mark::Line(pen)));
    }
    canvas.unclip();
    legend(&mut canvas, &labels);
    canvas.finish()
}

/// Latency against time: per CPU the windows' maximum (solid) and p99 (thin), the windows with
/// missed periods marked in a band of the CPU's at the top, and the load phases shaded and named.
pub fn timeline(title: &str, entries: &[&ProbeResult], phases: &[PhaseResult]) -> Result<Html, crate::vocab::Error> {
    let with: Vec<&ProbeResult> =
        entries.iter().copied().filter(|p| p.timeline.as_ref().is_some_and(|t| !t.is_empty())).collect();
    let Some(first) = with.first().and_then(|p| p.timeline.as_ref()) else {
        return Err(crate::vocab::Error::Invalid(format!("{}: no timeline to draw", crate::vocab::shown(title))));
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
    // A band at the top per CPU with missed periods, above every value.
    let bands = with.iter().filter(|p| p.timeline.as_ref().is_some_and(|t| t.missed.iter().any(|&m| m > 0))).count();
    let room = 2.0 * MISSED_BAND.powi(bands as i32);
    let (lo, hi) = if hi > 0 { (decade_floor(lo as f64 / 1e3), hi as f64 / 1e3 * room) } else { (0.1, 10.0 * room) };
    let (mut canvas, chart) = begin(title, Axis::linear(0.0, end_s.max(w)), Axis::log(lo, hi));
    let x_title = format!("time from the start of the run (windows of {})", crate::vocab::units::Nanos(first.window_ns));
    mesh(&mut canvas, &chart, (&x_title, &|v| format!("{} s", trim(v))), ("latency (log)", &duration_label), 10);
    let (a, b) = chart.corners();
    canvas.clip(a, b);
    let shaded = shade_phases(&mut canvas, &chart, phases);
    let mut labels = Vec::new();
    let mut band = 0;
    for (i, p) in with.iter().enumerate() {
        let Some(t) = p.timeline.as_ref() else { continue };
        let c = colour(i);
        let at = |k: usize| t.start_ns as f64 / 1e9 + (k as f64 + 0.5) * w;
        for (column, pen, label) in
            [(&t.max_ns, c.pen(2.0), format!("{} max", name(p))), (&t.p99_ns, c.alpha(0.5).pen(1.0), format!("{} p99", name(p)))]
        {
            for seg in runs_of_values(column) {
                let pts: Vec<(f64, f64)> = seg.map(|k| (at(k), column[k] as f64 / 1e3)).collect();
                // (a window alone: a dot of the line's width, as a line of one point draws nothing)
                match pts.as_slice() {
                    [one] => canvas.circle(chart.at(*one), pen.width, Some(pen.ink), None),
                    _ => canvas.line(&chart.points(&pts), pen),
                }
            }
            labels.push((label, Mark::Line(pen)));
        }
        if let Some(c) = p.convergence.as_ref() {
            if running_maximum(&mut canvas, &chart, c, colour(i)) {
                labels.push((format!("{} running maximum (dot: its last rise)", name(p)), Mark::DashDot(running_pen(colour(i)))));
            }
        }
        if t.missed.iter().any(|&m| m > 0) {
            let top = hi / 1.1 / MISSED_BAND.powi(band);
            band += 1;
            for (k, _) in t.missed.iter().enumerate().filter(|(_, &m)| m > 0) {
                let x = t.start_ns as f64 / 1e9 + k as f64 * w;
                canvas.rect(chart.at((x, top / 1.2)), chart.at((x + w, top)), c);
            }
            labels.push((format!("{}: a window with missed periods", name(p)), Mark::Patch(c)));
        }
    }
    canvas.unclip();
    if shaded {
        labels.push(("a load running (named at its foot)".to_string(), Mark::Span(PHASE_SHADE, PHASE_ALPHA)));
    }
    legend(&mut canvas, &labels);
    Ok(canvas.finish())
}

/// The pen of a CPU's running maximum on the timeline (dashed; its window maxima are solid).
fn running_pen(c: Ink) -> Pen {
    c.pen(2.0)
}

/// Draws the running maximum of a series from its convergence: a dashed step line from its
/// first record to the end of its span, rising at each record, with a dot at its last rise.
/// Whether it drew anything (a convergence without records has nothing to draw).
fn running_maximum(canvas: &mut Canvas, chart: &Chart, c: &Convergence, colour: Ink) -> bool {
    let Some(last) = c.records.last() else { return false };
    let (s, us) = (|ns: u64| ns as f64 / 1e9, |ns: u64| ns as f64 / 1e3);
    let mut pts: Vec<(f64, f64)> = Vec::new();
    for r in &c.records {
        if let Some(&(_, before)) = pts.last() {
            pts.push((s(r.at_ns), before));
        }
        pts.push((s(r.at_ns), us(r.max_ns)));
    }
    pts.push((s(c.end_ns.max(last.at_ns)), us(last.max_ns)));
    canvas.line(&chart.points(&pts), running_pen(colour).dashed(7.0, 5.0));
    let at = chart.at((s(c.last_rise_ns), us(last.max_ns)));
    canvas.circle(at, 5.0, Some(colour), Some(BLACK.pen(1.0)));
    true
}

/// The factor between the tops of two CPUs' bands of missed periods (log axis).
const MISSED_BAND: f64 = 1.25;
/// The colour of a load phase, and its opacity.
const PHASE_SHADE: Ink = Ink::rgb(255, 170, 90);
const PHASE_ALPHA: f64 = 0.3;
/// The size of a phase's name (px), and the pixels of a character of it.
const PHASE_FONT: f64 = 16.0;
const PHASE_CHAR_PX: f64 = 0.6 * PHASE_FONT;

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

/// Shades the phases that ran loads, a line at each one's start, each named at its foot in up to
/// two lines within its width (none where no word fits). Whether any was shaded.
fn shade_phases(canvas: &mut Canvas, chart: &Chart, phases: &[PhaseResult]) -> bool {
    let (bottom, top) = (chart.y.lo, chart.y.hi);
    let mut any = false;
    for p in phases.iter().filter(|p| !p.loads.is_empty()) {
        any = true;
        let (a, b) = (p.start_ns as f64 / 1e9, p.end_ns as f64 / 1e9);
        canvas.rect(chart.at((a, bottom)), chart.at((b, top)), PHASE_SHADE.alpha(PHASE_ALPHA));
        canvas.line(&[chart.at((a, bottom)), chart.at((a, top))], PHASE_SHADE.pen(1.0));
        let ((x0, y0), (x1, _)) = (chart.at((a, bottom)), chart.at((b, bottom)));
        let chars = ((x1.min(chart.right) - x0 - 8.0).max(0.0) / PHASE_CHAR_PX) as usize;
        if chars < 4 {
            continue;
        }
        let text = crate::vocab::shown(&p.loads.join(", ")).into_owned();
        let lines = wrap(&text, chars, 2);
        let font = Font::new(PHASE_FONT).ink(BLACK.alpha(0.8));
        for (k, l) in lines.iter().enumerate() {
            canvas.text((x0 + 4.0, y0 + 6.0 - (lines.len() - k) as f64 * 19.0), l, font);
        }
    }
    any
}

/// The colours of the probability-of-exceedance plot: measured points, the fitted tail and its
/// band, the return levels, the threshold and the reference probabilities.
const MEASURED: Ink = Ink::rgb(31, 119, 180);
const FITTED: Ink = Ink::rgb(214, 39, 40);
const LEVELS: Ink = Ink::rgb(20, 20, 20);
const GUIDE: Ink = Ink::rgb(120, 120, 120);
/// Opacity of the fitted tail's 95 % band.
const BAND_ALPHA: f64 = 0.18;
/// The per-period probabilities every exceedance plot marks with a line.
pub const REFERENCE_PROBABILITIES: [f64; 2] = [1e-6, 1e-9];
/// The measured points kept: the next one at least this far along either log axis (decades).
const THIN_X: f64 = 0.02;
const THIN_Y: f64 = 0.05;

/// The measured probability per period of a value above each bucket's upper edge (µs,
/// probability): the values above it over the periods, thinned along both log axes (the last
/// point, the rarest, always kept); none where no value lies above.
pub fn exceedance_points(p: &ProbeResult, periods: u64) -> Vec<(f64, f64)> {
    let total: u64 = p.histogram.buckets.triples().fold(0, |s, t| s.saturating_add(t[2]));
    let periods = periods.max(total).max(1) as f64;
    let mut pts: Vec<(f64, f64)> = Vec::new();
    let mut skipped = None;
    let mut cum = 0u64;
    for [_, hi, n] in p.histogram.buckets.triples() {
        cum = cum.saturating_add(n);
        let above = total.saturating_sub(cum);
        if above == 0 {
            break;
        }
        let pt = (hi.max(1) as f64 / 1e3, above as f64 / periods);
        let far = pts.last().is_none_or(|&(x, y)| (pt.0 / x).log10() >= THIN_X || (y / pt.1).log10() >= THIN_Y);
        if far {
            pts.push(pt);
            skipped = None;
        } else {
            skipped = Some(pt);
        }
    }
    pts.extend(skipped);
    pts
}

/// The x-axis' end of an exceedance plot (µs) and whether a return level's interval has no
/// upper end: the highest level's upper bound, or where no upper bound is finite, 10 times the
/// highest value drawn (measured, level or bound).
pub fn exceedance_x_end(p: &ProbeResult, f: Option<&Forecast>) -> (f64, bool) {
    let levels = f.filter(|f| f.applies()).map_or(&[][..], |f| &f.return_levels[..]);
    let finite = levels.iter().flat_map(|l| [Some(l.level_ns), Some(l.low_ns), l.high_ns]).flatten();
    let highest = finite.chain(p.max_ns.map(|m| m as f64)).filter(|v| v.is_finite()).fold(1e3, f64::max) / 1e3;
    let open = levels.iter().any(|l| l.high_ns.is_none());
    // (no further than an hour, or 1 000 times the worst case: the measured points keep their room)
    let worst = p.max_ns.map_or(1e3, |m| m as f64 / 1e3);
    let end = if open { highest * 10.0 } else { highest * 1.5 };
    (end.min(crate::vocab::units::MOST_LATENCY_NS / 1e3).min(worst * 1e3).max(worst * 1.5), open)
}

/// The probability of exceedance of one series on one CPU: latency against the probability per
/// period of a value above it, both axes logarithmic. The measured points from the histogram;
/// with a forecast that applies, the fitted tail above its threshold (the generalised Pareto
/// distribution: rate · S(x − u)) with its 95 % band (the range of the survival over the
/// likelihood's confidence region), the threshold, and the return levels as points with their
/// intervals as bars; reference lines at 1e-6 and 1e-9 per period.
pub fn exceedance(title: &str, p: &ProbeResult, f: Option<&Forecast>) -> Html {
    let periods = f.map_or(p.samples.saturating_add(p.missed), |f| f.periods).max(1);
    let measured = exceedance_points(p, periods);
    let fit = f.filter(|f| f.applies()).and_then(|f| Some((f, f.fit.as_ref()?, f.threshold_ns? as f64)));
    let least = p.histogram.buckets.triples().map(|t| t[0]).filter(|&v| v > 0).min().unwrap_or(1_000);
    let x_lo = decade_floor(least as f64 / 1e3);
    let (x_hi, _) = exceedance_x_end(p, f);
    let x_hi = x_hi.max(x_lo * 10.0);
    let rarest = fit.map_or(1.0, |(f, _, _)| f.return_levels.iter().map(|l| 1.0 / l.periods).fold(1.0, f64::min));
    let y_lo = decade_floor(rarest.min(1.0 / periods as f64).min(REFERENCE_PROBABILITIES[1]) / 10.0);
    // Every decade labelled up to 7 of them, else every other one (or third…): labels of a
    // forecast reaching days would overlap.
    let step = ((x_hi / x_lo).log10() / 7.0).ceil().max(1.0) as i32;
    let (mut canvas, chart) = begin(title, Axis::log(x_lo, x_hi), Axis::log(y_lo, 2.0));
    mesh(
        &mut canvas,
        &chart,
        ("latency x (log)", &|v| decade_label(v, step)),
        ("probability per period of a value over x (log)", &probability_label),
        10,
    );
    let (a, b) = chart.corners();
    let mut labels = Vec::new();
    let small = Font::new(TICK_FONT);
    for (k, &q) in REFERENCE_PROBABILITIES.iter().enumerate() {
        let pen = GUIDE.pen(1.0).dashed(6.0, 6.0);
        canvas.line(&[chart.at((x_lo, q)), chart.at((x_hi, q))], pen);
        let (x, y) = chart.at((x_lo, q));
        canvas.text((x + 6.0, y - 8.0), &format!("{} per period", probability_label(q)), small.ink(GUIDE));
        if k == 0 {
            labels.push(("1e-6 and 1e-9 per period".to_string(), Mark::Dashed(pen)));
        }
    }
    if let Some((f, fit, u)) = fit {
        let rate = f.exceedances as f64 / periods as f64;
        let u_us = u / 1e3;
        // The band: per x over the threshold, the least and greatest survival over the
        // confidence region's boundary (and the fit itself).
        let steps = 120;
        let xs: Vec<f64> = (0..=steps).map(|k| u_us * (x_hi / u_us).powf(k as f64 / steps as f64)).collect();
        let at = |sigma: f64, xi: f64, x: f64| rate * crate::forecast::gpd::survival(sigma, xi, x * 1e3 - u);
        let clamp = |y: f64| y.clamp(y_lo, 1.0);
        let (mut upper, mut lower) = (Vec::new(), Vec::new());
        for &x in &xs {
            let values = fit.region.iter().map(|&[s, xi]| at(s, xi, x)).chain([at(fit.scale_ns, fit.shape, x)]);
            let (lo, hi) = values.fold((f64::MAX, 0f64), |(a, b), v| (a.min(v), b.max(v)));
            if hi < y_lo {
                break;
            }
            upper.push((x, clamp(hi)));
            lower.push((x, clamp(lo)));
        }
        let band: Vec<(f64, f64)> = upper.iter().copied().chain(lower.iter().rev().copied()).collect();
        canvas.clip(a, b);
        if band.len() >= 3 {
            canvas.polygon(&chart.points(&band), FITTED.alpha(BAND_ALPHA));
            labels.push(("95 % band of the fitted tail".to_string(), Mark::Patch(FITTED.alpha(BAND_ALPHA))));
        }
        let mut line = Vec::new();
        for &x in &xs {
            let y = at(fit.scale_ns, fit.shape, x);
            line.push((x, clamp(y)));
            if y < y_lo {
                break;
            }
        }
        canvas.line(&chart.points(&line), FITTED.pen(2.0));
        labels.push((format!("fitted tail ({} tail)", fit.tail), Mark::Line(FITTED.pen(2.0))));
        let threshold = FITTED.pen(1.0).dashed(5.0, 4.0);
        canvas.line(&[chart.at((u_us, y_lo)), chart.at((u_us, 1.0))], threshold);
        canvas.unclip();
        labels.push((format!("threshold {}", crate::vocab::units::Nanos(u.round() as u64)), Mark::Dashed(threshold)));
        for l in &f.return_levels {
            let y = 1.0 / l.periods;
            // (what lies past the axis' end is drawn to its edge, with an arrow: nothing is
            // drawn outside the plot)
            let a = (l.low_ns / 1e3).min(x_hi);
            let beyond = l.high_ns.is_none_or(|h| h / 1e3 > x_hi);
            let b = l.high_ns.map_or(x_hi, |h| h / 1e3).min(x_hi);
            let pen = LEVELS.pen(2.0);
            let ((xa, ya), (xb, _)) = (chart.at((a, y)), chart.at((b, y)));
            canvas.line(&[(xa, ya), (xb, ya)], pen);
            if l.low_ns / 1e3 < x_hi {
                canvas.line(&[(xa, ya - 5.0), (xa, ya + 5.0)], pen);
            }
            if beyond {
                // No upper end, or one past the axis: an arrow at the plot's edge.
                canvas.line(&[(xb - 8.0, ya - 5.0), (xb, ya), (xb - 8.0, ya + 5.0)], pen);
            } else {
                canvas.line(&[(xb, ya - 5.0), (xb, ya + 5.0)], pen);
            }
            let centre = chart.at(((l.level_ns / 1e3).min(x_hi), y));
            if l.level_ns / 1e3 <= x_hi {
                canvas.circle(centre, 5.0, Some(LEVELS), None);
            }
            let horizon = match l.horizon.as_str() {
                "1h" => "hour",
                "1d" => "day",
                "1y" => "year",
                other => other,
            };
            let text = format!("once per {}", crate::vocab::shown(horizon));
            // (a label of a level at the edge stays inside the plot)
            canvas.text(((centre.0 - 36.0).min(chart.right - 110.0), ya - 14.0), &text, small.ink(LEVELS));
        }
        if !f.return_levels.is_empty() {
            labels.push(("return levels with 95 % intervals".to_string(), Mark::DotBar(LEVELS)));
        }
    }
    canvas.clip(a, b);
    for &pt in &measured {
        canvas.circle(chart.at(pt), 3.0, Some(MEASURED), None);
    }
    canvas.unclip();
    labels.insert(0, ("measured".to_string(), Mark::Dot(MEASURED)));
    legend(&mut canvas, &labels);
    canvas.finish()
}

/// A latency axis' label at its powers of ten whose exponent is a multiple of `step` (none
/// between): a duration (`100 µs`, `10 s`), from 100 s on in minutes, hours or days (`17 min`,
/// `2.8 h`, `12 days`).
fn decade_label(us: f64, step: i32) -> String {
    let e = us.log10();
    if !us.is_finite() || us <= 0.0 || (e - e.round()).abs() > 1e-6 || (e.round() as i32).rem_euclid(step) != 0 {
        return String::new();
    }
    if us < 100e6 {
        return duration_label(us);
    }
    crate::vocab::length::span(us * 1e3)
}

/// A probability (an axis' value): its power of ten as `1e-6` (and `1`); none between them.
fn probability_label(p: f64) -> String {
    let e = p.log10();
    if !p.is_finite() || p <= 0.0 || (e - e.round()).abs() > 1e-6 {
        return String::new();
    }
    match e.round() as i32 {
        e if e >= 0 => "1".to_string(),
        e => format!("1e{e}"),
    }
}

/// A file-name stem from a label: lower-case letters, digits and dashes.
pub fn slug(label: &str) -> String {
    let s: String = label.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_logarithmic_and_whole_microseconds_from_1_us() {
        let e = log_edges(10_000, 150_000_000);
        assert_eq!(&e[..3], &[10_000, 11_000, 13_000]);
        assert!(*e.last().unwrap() > 150_000_000 && e.len() < 5 * BINS_PER_DECADE + 2, "{e:?}");
        assert_eq!(log_edges(1_500, 9_500), vec![1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000, 8_000, 9_000, 10_000]);
        assert!(log_edges(1, 1).windows(2).all(|w| w[0] < w[1]));
        assert_eq!(*log_edges(1, u64::MAX).last().unwrap(), u64::MAX);
    }

    #[test]
    fn axis_labels_are_durations() {
        assert_eq!(duration_label(20.0), "20 µs");
        assert_eq!(duration_label(1000.0), "1 ms");
        assert_eq!(duration_label(150_000.0), "150 ms");
        assert_eq!(duration_label(0.5), "500 ns");
        assert_eq!(count_label(20000.0), "20k");
        assert_eq!(count_label(0.5), "");
        assert_eq!(decade_label(1e3, 1), "1 ms");
        assert_eq!(decade_label(1e9, 1), "17 min");
        assert_eq!(decade_label(1e12, 1), "12 days");
        assert_eq!(decade_label(1e15, 1), "32 years");
        assert_eq!(decade_label(1e9, 2), "");
        assert_eq!(decade_label(2e3, 1), "");
        assert_eq!(probability_label(1e-6), "1e-6");
        assert_eq!(probability_label(0.1), "1e-1");
        assert_eq!(probability_label(1.0), "1");
        assert_eq!(probability_label(3e-6), "");
    }

    #[test]
    fn legend_text_wraps_within_its_width() {
        assert_eq!(
            wrap("run 8 (rt-kernel-with-a-long-label) on vm, 6.18.44-fc", 22, 3),
            vec!["run 8 (rt-kernel-with-", "a-long-label) on vm,", "6.18.44-fc"]
        );
        assert_eq!(wrap("hackbench:groups=10,pipe, cpu:policy=fifo:90", 20, 2), vec!["hackbench:groups=10,", "pipe,…"]);
        assert!(wrap(&"x".repeat(100), 10, 2).iter().all(|l| l.chars().count() <= 10));
        assert_eq!(wrap(&"x".repeat(100), 10, 2)[1].chars().last(), Some('…'));
        assert_eq!(wrap("cpu0", 22, 3), vec!["cpu0"]);
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
