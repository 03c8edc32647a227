//! The dashboard's plots, drawn on the report's SVG canvas (`report::svg`) with a link and a
//! title on every mark, small at 1 000 runs: a board's long-term plot
//! (worst case, p99.9 and p99 of one series per run against time, and beside them the latency
//! its forecast says is exceeded once per day with its 95 % interval; log latency, kernel changes
//! marked, each mark a link to its run), its heat map of latency by run (one column per run,
//! its histogram as colour on a log count scale: OSADL's 3-D plot in 2-D) and the fleet page's
//! sparkline of a board's worst case. Latency axes read as durations (`20 µs`, `1 ms`); every
//! text from a run is escaped.

use super::{day, dur, instant, when};
use crate::report::markup::Html;
use crate::report::svg::{num as c, path_data, Axis, Canvas};
use crate::serve::model::{BoardRun, Change};
use crate::store::figures::{SeriesFigures, BINS, BINS_PER_DECADE, BIN_LOWEST_NS};
use rtgauge_report::{html, html_into};
use std::fmt::Write as _;

/// Width of the board page's plots, in SVG pixels (the page is 1 240 px wide at most).
pub const WIDTH: u32 = 1200;
/// Height of the long-term plot.
pub const LONG_HEIGHT: u32 = 360;

/// The colours of the three figures: worst case, p99.9, p99.
const MAX_COLOUR: &str = "#d62728";
const P999_COLOUR: &str = "#ff7f0e";
const P99_COLOUR: &str = "#1f77b4";
/// The colour of the forecast's once-per-day level and its interval.
const FORECAST_COLOUR: &str = "#7b3fa0";

/// The SVG element begun: its size, a view box (it scales with the page), its text style.
fn svg_start(w: u32, h: u32, class: &str, label: &str) -> Canvas {
    Canvas::new(w as f64, h as f64, Some(class), label)
}

/// A series of one run, by its name.
fn series_of<'a>(r: &'a BoardRun, name: &str) -> Option<&'a SeriesFigures> {
    r.figures.series.iter().find(|s| s.series == name)
}

/// The run's start in seconds since the epoch (that of the run before when its text does not
/// read as a time).
fn times(runs: &[BoardRun]) -> Vec<i64> {
    let mut last = 0;
    runs.iter()
        .map(|r| {
            last = instant(&r.row.started_at).map_or(last, |t| t.timestamp());
            last
        })
        .collect()
}

/// The runs where the kernel changed (index into `runs`, and whether the release changed — else
/// only its configuration or preemption model), with the sentence saying what changed.
fn change_marks(runs: &[BoardRun], changes: &[Change]) -> Vec<(usize, bool, String)> {
    changes
        .iter()
        .filter_map(|ch| {
            let i = runs.iter().position(|r| r.row.id == ch.run)?;
            let release = runs.iter().find(|r| r.row.id == ch.previous).is_none_or(|p| p.row.kernel != runs[i].row.kernel);
            Some((i, release, ch.what.join("; ")))
        })
        .collect()
}

/// A duration axis' label of `us` µs: `20 µs`, `1 ms`.
fn us_label(us: f64) -> String {
    dur((us * 1e3).round() as u64)
}

/// The long-term plot of series `name`: per run its worst case, p99.9 and p99 against the run's
/// start, and the once-per-day level of its forecast (a diamond on a bar over its 95 % interval,
/// an arrow at the top where the interval has no upper end; no mark where a CPU's forecast does
/// not apply: the worst case's title says why), latency on a log scale; a dashed line where the
/// kernel changed, labelled with the new release; every mark a link to its run. `runs` oldest
/// first.
pub fn long_term(runs: &[BoardRun], name: &str, changes: &[Change]) -> Html {
    const L: f64 = 82.0;
    const R: f64 = 16.0;
    const T: f64 = 30.0;
    const B: f64 = 54.0;
    let (w, h) = (WIDTH as f64, LONG_HEIGHT as f64);
    let (pw, ph) = (w - L - R, h - T - B);
    let mut s = svg_start(
        WIDTH,
        LONG_HEIGHT,
        "long-term",
        &format!("{name}: worst case, p99.9, p99 and the once-per-day forecast per run against time"),
    );
    let figs: Vec<Option<&SeriesFigures>> = runs.iter().map(|r| series_of(r, name)).collect();
    let mut values: Vec<u64> =
        figs.iter().flatten().flat_map(|f| [f.max_ns, f.p999_ns, f.p99_ns]).flatten().filter(|&v| v > 0).collect();
    // The forecasts (levels and intervals) up to a decade over the highest measured figure: one
    // further leaves the plot at its top (an arrow), rather than squeezing every measured figure
    // into its bottom.
    let cap = values.iter().max().map_or(u64::MAX, |&m| m.saturating_mul(10));
    values.extend(
        figs.iter()
            .flatten()
            .flat_map(|f| [f.day_level_ns, f.day_low_ns, f.day_high_ns])
            .flatten()
            .map(|v| v.min(cap))
            .filter(|&v| v > 0),
    );
    let (Some(&lo), Some(&hi)) = (values.iter().min(), values.iter().max()) else {
        html_into!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">No figures of {} in these runs.</text>",
            w / 2.0,
            h / 2.0,
            name
        );
        return s.finish();
    };
    // y: log10 of µs, whole decades around the values.
    let ylo = (lo as f64 / 1e3).log10().floor();
    let mut yhi = (hi as f64 / 1e3).log10().ceil();
    if yhi <= ylo {
        yhi = ylo + 1.0;
    }
    let y = |ns: u64| T + ph - ((ns.max(1) as f64 / 1e3).log10() - ylo) / (yhi - ylo) * ph;
    // x: the runs' starts, with a margin.
    let ts = times(runs);
    let (t0, t1) = time_span(&ts);
    let x = |t: i64| L + (t - t0) as f64 / (t1 - t0).max(1) as f64 * pw;

    // The frame, the grid and the axes' labels.
    html_into!(s, "<rect x=\"{L}\" y=\"{T}\" width=\"{}\" height=\"{}\" fill=\"#fff\" stroke=\"#bbb\"/>", c(pw), c(ph));
    s += "<g class=\"y-axis\">";
    for (us, major) in Axis::log(10f64.powf(ylo), 10f64.powf(yhi)).ticks(10) {
        let yy = T + ph - (us.log10() - ylo) / (yhi - ylo) * ph;
        html_into!(s, "<line x1=\"{L}\" x2=\"{_0}\" y1=\"{yy}\" y2=\"{yy}\" stroke=\"{_1}\"/><text x=\"{_2}\" y=\"{_3}\" text-anchor=\"end\"{_4}>{_5}</text>", _0 = c(L + pw), _1 = if major { "#ddd" } else { "#f0f0f0" }, _2 = c(L - 6.0), _3 = c(yy + 4.0), _4 = Html::lit(if major { "" } else { " fill=\"#666\"" }), _5 = us_label(us), yy = c(yy));
    }
    html_into!(
        s,
        "<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">latency (log scale)</text></g>",
        c(T + ph / 2.0)
    );
    s += "<g class=\"x-axis\">";
    let (ticks, date) = time_ticks(t0, t1);
    for (t, label) in ticks {
        let xx = x(t);
        // A label at the plot's right end ends at its tick (it would be cut).
        let anchor = if xx + label.len() as f64 * 4.0 > w { "end" } else { "middle" };
        html_into!(s, "<line x1=\"{_0}\" x2=\"{_0}\" y1=\"{T}\" y2=\"{_1}\" stroke=\"#eee\"/><line x1=\"{_0}\" x2=\"{_0}\" y1=\"{_1}\" y2=\"{_2}\" stroke=\"#888\"/><text x=\"{_0}\" y=\"{_3}\" text-anchor=\"{anchor}\">{label}</text>", _0 = c(xx), _1 = c(T + ph), _2 = c(T + ph + 5.0), _3 = c(T + ph + 19.0), anchor = anchor, label = label);
    }
    html_into!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">start of the run (UTC{})</text></g>",
        c(L + pw / 2.0),
        c(h - 10.0),
        date.map_or(String::new(), |d| format!(", {d}"))
    );

    // Kernel changes: a dashed line each, labelled with the new release where there is room.
    let mut last_label = f64::MIN;
    s += "<g class=\"changes\">";
    for (i, release, what) in change_marks(runs, changes) {
        let xx = c(x(ts[i]));
        let (colour, dash) = if release { ("#555", "5 4") } else { ("#999", "2 3") };
        html_into!(s, "<line x1=\"{xx}\" x2=\"{xx}\" y1=\"{T}\" y2=\"{_0}\" stroke=\"{colour}\" stroke-dasharray=\"{dash}\"><title>run {_1}: {_2}</title></line>", _0 = c(T + ph), _1 = runs[i].row.id, _2 = &what, xx = xx, colour = colour, dash = dash);
        if release && x(ts[i]) - last_label > 120.0 {
            last_label = x(ts[i]);
            // Right of its line, or left of it where it would leave the plot.
            let kernel = &runs[i].row.kernel;
            let room = L + pw - x(ts[i]);
            let (lx, anchor) = if room > kernel.chars().count() as f64 * 6.5 + 6.0 {
                (x(ts[i]) + 3.0, "start")
            } else {
                (x(ts[i]) - 3.0, "end")
            };
            html_into!(s, "<text x=\"{_0}\" y=\"{_1}\" text-anchor=\"{anchor}\" font-size=\"11\" fill=\"#333\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">{_2}</text>", _0 = c(lx), _1 = c(T + 12.0), _2 = kernel, anchor = anchor);
        }
    }
    s += "</g>";

    // Points shrink as runs grow in number.
    let r: f64 = match runs.len() {
        0..=60 => 4.0,
        61..=250 => 2.8,
        251..=600 => 2.0,
        _ => 1.5,
    };
    // The lines fade as the points crowd: the points are what a reader reads then.
    let line = if runs.len() > 250 { ".3" } else { ".55" };

    // The forecast first, under the figures: per run whose forecast applies on every CPU, a bar
    // over the 95 % interval of its once-per-day level (to the plot's top, with an arrow, where
    // the interval has no upper end) and a diamond at the level; a thin line through the levels.
    let forecasts = figs.iter().flatten().filter(|f| f.day_level_ns.is_some()).count();
    if forecasts > 0 {
        let d = path_data(
            figs.iter().enumerate().map(|(i, f)| f.and_then(|f| f.day_level_ns).map(|v| (x(ts[i]), y(v).clamp(T, T + ph)))),
        );
        // Bars and arrows lighten as the runs crowd: the levels are what a reader reads then.
        let bar = (r * 0.9).max(1.5);
        let (shade, arrow) = if runs.len() > 250 { (".2", 2.5) } else { (".35", 4.0) };
        html_into!(s, "<g class=\"forecast\" fill=\"{FORECAST_COLOUR}\" stroke=\"{FORECAST_COLOUR}\"><path d=\"{d}\" fill=\"none\" stroke-width=\"1\" stroke-opacity=\"{line}\"/>", d = d, line = line);
        for (i, f) in figs.iter().enumerate() {
            let Some(f) = f else { continue };
            let (Some(level), Some(low)) = (f.day_level_ns, f.day_low_ns) else { continue };
            let row = &runs[i].row;
            let xx = x(ts[i]);
            // (Past the plot's top: to the top, with an arrow, as an interval with no upper end.)
            let top = f.day_high_ns.map_or(T, |h| y(h).clamp(T, T + ph));
            let open = top <= T;
            let interval = match f.day_high_ns {
                Some(high) => format!("{}–{}", dur(low), dur(high)),
                None => format!("from {}, no upper end within 1 h", dur(low)),
            };
            html_into!(s, "<a href=\"/run/{id}\"><title>run {id} · {at} · {kernel}: once per day (forecast) {level} (95 % {interval}){note}</title>\
<line x1=\"{xx}\" x2=\"{xx}\" y1=\"{low}\" y2=\"{top}\" stroke-width=\"{bar}\" stroke-opacity=\"{shade}\"/>", id = row.id, at = &when(&row.started_at), kernel = &row.kernel, level = dur(level), note = f.forecast_note.as_deref().map(|n| html!(" · {}", n)).unwrap_or_default(), xx = c(xx), low = c(y(low).clamp(T, T + ph)), top = c(top), bar = c(bar), interval = interval, shade = shade);
            if open {
                html_into!(
                    s,
                    "<path d=\"M{_0} {_1}L{_2} {T}L{_3} {_4}\" fill=\"none\" stroke-width=\"1.2\" stroke-opacity=\"{shade}\"/>",
                    _0 = c(xx - arrow),
                    _1 = c(T + arrow * 1.5),
                    _2 = c(xx),
                    _3 = c(xx + arrow),
                    _4 = c(T + arrow * 1.5),
                    shade = shade
                );
            }
            // (a level past the plot's top sits at the top, its value in the title)
            let (yl, k) = (y(level).clamp(T, T + ph), r + 1.5);
            html_into!(
                s,
                "<path d=\"M{} {}L{} {}L{} {}L{} {}Z\" stroke=\"#fff\" stroke-width=\".8\"/></a>",
                c(xx),
                c(yl - k),
                c(xx + k),
                c(yl),
                c(xx),
                c(yl + k),
                c(xx - k),
                c(yl)
            );
        }
        s += "</g>";
    }

    // The three figures: a thin line through each, and a linked point per run (the worst case last,
    // on top); the worst case's title says why a run has no forecast mark.
    type Pick = fn(&SeriesFigures) -> Option<u64>;
    let figures: [(&str, &str, Pick); 3] =
        [("p99", P99_COLOUR, |f| f.p99_ns), ("p99.9", P999_COLOUR, |f| f.p999_ns), ("max", MAX_COLOUR, |f| f.max_ns)];
    for (label, colour, pick) in figures {
        let d = path_data(figs.iter().enumerate().map(|(i, f)| f.and_then(pick).map(|v| (x(ts[i]), y(v).clamp(T, T + ph)))));
        html_into!(s, "<g class=\"fig\" fill=\"{colour}\"><path d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1\" stroke-opacity=\"{line}\"/>", colour = colour, d = d, line = line);
        for (i, f) in figs.iter().enumerate() {
            let Some(v) = f.and_then(pick) else { continue };
            let row = &runs[i].row;
            let why = match f {
                Some(f) if label == "max" && f.day_level_ns.is_none() && runs[i].figures.forecasts => {
                    f.forecast_note.as_deref().map(|n| html!(" · forecast not applicable: {}", n)).unwrap_or_default()
                }
                _ => Html::new(),
            };
            html_into!(s, "<a href=\"/run/{id}\"><circle cx=\"{_0}\" cy=\"{_1}\" r=\"{r}\"><title>run {id} · {_2} · {_3}: {label} {_4}{why}</title></circle></a>", _0 = c(x(ts[i])), _1 = c(y(v)), _2 = &when(&row.started_at), _3 = &row.kernel, _4 = dur(v), id = row.id, r = r, label = label, why = why);
        }
        s += "</g>";
    }

    // The legend, above the plot on the right: the forecast's mark (where one is drawn) beside
    // the worst case.
    let mut lx = L + pw - 250.0;
    if forecasts > 0 {
        let fx = lx - 180.0;
        html_into!(s, "<g fill=\"{FORECAST_COLOUR}\" stroke=\"{FORECAST_COLOUR}\"><line x1=\"{0}\" x2=\"{0}\" y1=\"6\" y2=\"24\" stroke-width=\"3.5\" stroke-opacity=\".35\"/><path d=\"M{0} 9.5L{1} 15L{0} 20.5L{2} 15Z\" stroke=\"#fff\" stroke-width=\".8\"/></g><text x=\"{3}\" y=\"19\">once per day (forecast)</text>", c(fx), c(fx + 5.5), c(fx - 5.5), c(fx + 9.0));
    }
    for (label, colour) in [("worst case", MAX_COLOUR), ("p99.9", P999_COLOUR), ("p99", P99_COLOUR)] {
        html_into!(
            s,
            "<circle cx=\"{_0}\" cy=\"15\" r=\"4.5\" fill=\"{colour}\"/><text x=\"{_1}\" y=\"19\">{label}</text>",
            _0 = c(lx),
            _1 = c(lx + 8.0),
            colour = colour,
            label = label
        );
        lx += if label == "worst case" { 100.0 } else { 70.0 };
    }
    html_into!(
        s,
        "<text x=\"{L}\" y=\"19\" fill=\"#555\">{} · {} · dashed: kernel changed, dotted: its configuration</text>",
        name,
        crate::vocab::Count(runs.len() as u64, "run")
    );
    s.finish()
}

/// The time axis of runs started at `ts` (seconds since the epoch): from the first to the last
/// with a margin of a twentieth of their span on each side, and at least a minute in all (a page
/// of one run, or of runs seconds apart, is drawn around them, not on an hour's axis).
fn time_span(ts: &[i64]) -> (i64, i64) {
    let (lo, hi) = (ts.iter().copied().min().unwrap_or(0), ts.iter().copied().max().unwrap_or(0));
    let margin = ((hi - lo) / 20).max(1);
    let (mut t0, mut t1) = (lo - margin, hi + margin);
    if t1 - t0 < 60 {
        let mid = (lo + hi) / 2;
        (t0, t1) = (mid - 30, mid + 30);
    }
    (t0, t1)
}

/// The time axis' ticks between `t0` and `t1` (seconds since the epoch): at most about eight, on
/// whole seconds, minutes, hours, days, months or years, each labelled as briefly as keeps the
/// labels distinct (`14:03:20`, `14:05`, `11-28 14:00`, `2026-11-28`, `2026-11`, `2026`); where
/// every tick falls on one day, the times alone, and that day (returned) for the axis' title.
fn time_ticks(t0: i64, t1: i64) -> (Vec<(i64, String)>, Option<String>) {
    use chrono::{DateTime, Datelike, TimeZone, Utc};
    const M: i64 = 60;
    const H: i64 = 3_600;
    const D: i64 = 86_400;
    let span = (t1 - t0).max(1);
    let fmt = |t: i64, f: &str| DateTime::<Utc>::from_timestamp(t, 0).map(|d| d.format(f).to_string()).unwrap_or_default();
    let steps =
        [1, 2, 5, 10, 15, 30, M, 2 * M, 5 * M, 10 * M, 15 * M, 30 * M, H, 2 * H, 3 * H, 6 * H, 12 * H, D, 2 * D, 7 * D, 14 * D];
    if let Some(&step) = steps.iter().find(|&&s| span / s <= 8) {
        let first = (t0.div_euclid(step) + 1) * step;
        let ticks: Vec<i64> = (0..).map(|k| first + k * step).take_while(|&t| t <= t1).collect();
        let one_day = ticks.first().zip(ticks.last()).is_some_and(|(a, b)| fmt(*a, "%F") == fmt(*b, "%F"));
        let f = match step {
            s if s < M => "%H:%M:%S",
            s if s < D && one_day => "%H:%M",
            s if s < D => "%m-%d %H:%M",
            _ => "%Y-%m-%d",
        };
        let date = (one_day && step < D).then(|| fmt(ticks[0], "%Y-%m-%d"));
        return (ticks.into_iter().map(|t| (t, fmt(t, f))).collect(), date);
    }
    // Months: every 1, 2, 3, 6 or 12, from the first of a month.
    let months = span / (30 * D) + 1;
    let every: i32 = [1, 2, 3, 6, 12, 24, 60].into_iter().find(|&m| months / i64::from(m) <= 8).unwrap_or(120);
    let Some(start) = DateTime::<Utc>::from_timestamp(t0, 0) else { return (Vec::new(), None) };
    let mut m = (start.year() * 12 + start.month0() as i32) / every * every;
    let mut out = Vec::new();
    while let Some(t) = Utc.with_ymd_and_hms(m.div_euclid(12), m.rem_euclid(12) as u32 + 1, 1, 0, 0, 0).single() {
        let t = t.timestamp();
        if t > t1 {
            break;
        }
        if t >= t0 {
            out.push((t, fmt(t, if every >= 12 { "%Y" } else { "%Y-%m" })));
        }
        m += every;
    }
    (out, None)
}

/// Labels for runs started at `ts` (seconds since the epoch), as briefly as keeps neighbours
/// apart: `2026-11-28` when no two neighbours share a day; else with their time (`11-28 14:03`,
/// seconds where two share a minute); where all share one day, the times alone and that day
/// (returned) for the axis' title.
fn run_labels(ts: &[i64]) -> (Vec<String>, Option<String>) {
    use chrono::{DateTime, Utc};
    let fmt = |t: i64, f: &str| DateTime::<Utc>::from_timestamp(t, 0).map(|d| d.format(f).to_string()).unwrap_or_default();
    let apart = |f: &str| ts.windows(2).all(|w| fmt(w[0], f) != fmt(w[1], f));
    let one_day = ts.first().zip(ts.last()).is_some_and(|(a, b)| fmt(*a, "%F") == fmt(*b, "%F"));
    let f = if one_day && ts.len() > 1 {
        if apart("%H:%M") {
            "%H:%M"
        } else {
            "%H:%M:%S"
        }
    } else if apart("%Y-%m-%d") {
        "%Y-%m-%d"
    } else if ts.first().zip(ts.last()).is_some_and(|(a, b)| fmt(*a, "%Y") != fmt(*b, "%Y")) {
        // (over more than one year, the year stays)
        if apart("%Y-%m-%d %H:%M") {
            "%Y-%m-%d %H:%M"
        } else {
            "%Y-%m-%d %H:%M:%S"
        }
    } else if apart("%m-%d %H:%M") {
        "%m-%d %H:%M"
    } else {
        "%m-%d %H:%M:%S"
    };
    let date = (one_day && ts.len() > 1).then(|| ts.first().map(|&t| fmt(t, "%Y-%m-%d"))).flatten();
    (ts.iter().map(|&t| fmt(t, f)).collect(), date)
}

/// The lowest value of heat-map bin `i`, in ns, as `store::figures` defines the bins: 0 for
/// bin 0 (under 1 µs), then `BINS_PER_DECADE` a decade from 1 µs (a decade's first bin starts
/// on its power of ten).
pub fn bin_low_ns(i: usize) -> u64 {
    if i == 0 {
        return 0;
    }
    let k = i - 1;
    let (decade, step) = (k / BINS_PER_DECADE, k % BINS_PER_DECADE);
    let v = BIN_LOWEST_NS as f64 * 10f64.powi(decade as i32) * 10f64.powf(step as f64 / BINS_PER_DECADE as f64);
    v.round() as u64
}

/// How many colours the heat map's count scale has.
const LEVELS: usize = 12;

/// The colour of level `k` of `LEVELS`: viridis, light (few samples: yellow, still visible on
/// white) to dark (many: purple).
fn level_colour(k: usize) -> String {
    const STOPS: [(f64, f64, f64); 5] =
        [(253.0, 231.0, 37.0), (94.0, 201.0, 98.0), (33.0, 145.0, 140.0), (59.0, 82.0, 139.0), (68.0, 1.0, 84.0)];
    let f = k as f64 / (LEVELS - 1) as f64 * (STOPS.len() - 1) as f64;
    let (i, t) = ((f.floor() as usize).min(STOPS.len() - 2), f - f.floor().min((STOPS.len() - 2) as f64));
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// A count as the legend reads it: `1`, `100`, `10k`, `2M`.
fn count_label(n: u64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{}M", n / 1_000_000),
        n if n >= 10_000 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// The heat map of series `name`, "latency by run": one column per run (oldest left), a row per
/// latency bin (log), the count as colour on a log scale with its legend; empty bins white.
pub fn heat_map(runs: &[BoardRun], name: &str, changes: &[Change]) -> Html {
    const L: f64 = 82.0;
    const R: f64 = 130.0;
    const T: f64 = 12.0;
    const B: f64 = 58.0;
    let n = runs.len().max(1);
    // Columns of a whole pixel at least: a wider plot past 1 000 runs.
    let pw = (WIDTH as f64 - L - R).max(n as f64);
    let w = L + pw + R;
    let hists: Vec<Option<&[u64]>> = runs
        .iter()
        .map(|r| series_of(r, name).map(|s| s.bins.as_slice()).filter(|b| b.len() == BINS && b.iter().any(|&c| c > 0)))
        .collect();
    let nonempty = |b: &[u64]| (b.iter().position(|&c| c > 0), b.iter().rposition(|&c| c > 0));
    let mut range: Option<(usize, usize)> = None;
    for b in hists.iter().flatten() {
        if let (Some(a), Some(z)) = nonempty(b) {
            range = Some(range.map_or((a, z), |(x, y)| (x.min(a), y.max(z))));
        }
    }
    let Some((a, z)) = range else {
        let mut s = svg_start(w as u32, 60, "heat-map", &format!("{name}: no histogram"));
        html_into!(
            s,
            "<text x=\"{}\" y=\"34\" text-anchor=\"middle\">No histogram of {} in these runs.</text>",
            c(w / 2.0),
            name
        );
        return s.finish();
    };
    // Whole decades of bins (their edges are labelled), bin 0 and the last as they are.
    let decade_start = |b: usize| if b == 0 { 0 } else { 1 + (b - 1) / BINS_PER_DECADE * BINS_PER_DECADE };
    let lo = decade_start(a);
    let hi = if z == 0 || z >= BINS - 1 { z } else { decade_start(z) + BINS_PER_DECADE - 1 };
    let rows = hi - lo + 1;
    let rh = (300.0 / rows as f64).clamp(3.0, 24.0);
    let ph = rows as f64 * rh;
    let h = T + ph + B;
    let cw = pw / n as f64;
    let max_count = hists.iter().flatten().flat_map(|b| b.iter()).copied().max().unwrap_or(1).max(1);
    let level = |cnt: u64| -> usize {
        if max_count <= 1 {
            return LEVELS - 1;
        }
        ((cnt as f64).log10() / (max_count as f64).log10() * (LEVELS - 1) as f64).round() as usize
    };

    let mut s =
        svg_start(w.ceil() as u32, h.ceil() as u32, "heat-map", &format!("{name}: latency by run, samples per bin as colour"));
    html_into!(s, "<rect x=\"{L}\" y=\"{T}\" width=\"{}\" height=\"{}\" fill=\"#fff\" stroke=\"#bbb\"/>", c(pw), c(ph));
    // The cells: a path per colour, in units of (column, bin) scaled into the plot; consecutive
    // bins of a column in the same colour are one rectangle.
    let mut paths = vec![String::new(); LEVELS];
    for (j, b) in hists.iter().enumerate() {
        let Some(b) = b else { continue };
        let mut k = lo;
        while k <= hi {
            if b[k] == 0 {
                k += 1;
                continue;
            }
            let lv = level(b[k]);
            let mut e = k + 1;
            while e <= hi && b[e] > 0 && level(b[e]) == lv {
                e += 1;
            }
            let _ = write!(paths[lv], "M{j} {}h1v{}h-1z", k - lo, e - k);
            k = e;
        }
    }
    html_into!(s, "<g transform=\"translate({L} {}) scale({} {})\" shape-rendering=\"crispEdges\">", c(T + ph), cw, -rh);
    for (lv, d) in paths.iter().enumerate().filter(|(_, d)| !d.is_empty()) {
        html_into!(s, "<path fill=\"{_0}\" d=\"{d}\"/>", _0 = level_colour(lv), d = d);
    }
    s += "</g>";
    // The y axis: a label on every decade's edge, bin 0 and the last bin said in words.
    // (Bin 0 and the last bin: their rows' labels replace the edges' beside them where a row is
    // too low for both.)
    let y_of = |edge: usize| T + ph - (edge - lo) as f64 * rh;
    let crowded = rh < 14.0;
    for edge in lo..=hi + 1 {
        let text = match edge {
            0 => continue,
            e if e == BINS => continue,
            1 if lo == 0 && crowded => continue,
            e if e == BINS - 1 && hi == BINS - 1 && crowded => continue,
            e if (e - 1) % BINS_PER_DECADE == 0 => dur(bin_low_ns(e)),
            _ => continue,
        };
        let yy = y_of(edge);
        html_into!(s, "<line x1=\"{_0}\" x2=\"{L}\" y1=\"{_1}\" y2=\"{_1}\" stroke=\"#888\"/><text x=\"{_2}\" y=\"{_3}\" text-anchor=\"end\">{text}</text>", _0 = c(L - 5.0), _1 = c(yy), _2 = c(L - 8.0), _3 = c(yy + 4.0), text = text);
    }
    if lo == 0 {
        html_into!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">&lt; {}</text>",
            c(L - 8.0),
            c(y_of(0) - rh / 2.0 + 4.0),
            dur(bin_low_ns(1))
        );
    }
    if hi == BINS - 1 {
        html_into!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">≥ {}</text>",
            c(L - 8.0),
            c(y_of(hi) - rh / 2.0 + 4.0),
            dur(bin_low_ns(hi))
        );
    }
    html_into!(s, "<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">latency (log scale; {BINS_PER_DECADE} bins a decade)</text>", c(T + ph / 2.0));
    // The x axis: about eight runs named by their day (and id, when there are few).
    let few = runs.len() <= 12;
    let picks: Vec<usize> = if few {
        (0..runs.len()).collect()
    } else {
        let mut v: Vec<usize> = (0..8).map(|k| (k * (runs.len() - 1) + 3) / 7).collect();
        v.dedup();
        v
    };
    let ts = times(runs);
    let (labels, date) = run_labels(&picks.iter().map(|&j| ts[j]).collect::<Vec<_>>());
    for (j, label) in picks.into_iter().zip(labels) {
        let xx = L + (j as f64 + 0.5) * cw;
        let row = &runs[j].row;
        html_into!(s, "<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#888\"/><text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>", c(xx), c(T + ph), c(T + ph + 5.0), c(T + ph + 19.0), &label);
        if few {
            html_into!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\" font-size=\"11\">run {}</text>",
                c(xx),
                c(T + ph + 33.0),
                row.id
            );
        }
    }
    html_into!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">runs, oldest left: one column each ({}{})</text>",
        c(L + pw / 2.0),
        c(h - 6.0),
        crate::vocab::Count(runs.len() as u64, "run"),
        date.map_or(String::new(), |d| format!(", started on {d} UTC"))
    );
    // Kernel changes: a dashed line at the first run of each.
    for (i, release, what) in change_marks(runs, changes) {
        let xx = c(L + i as f64 * cw);
        html_into!(s, "<line x1=\"{xx}\" x2=\"{xx}\" y1=\"{T}\" y2=\"{_0}\" stroke=\"#c00\" stroke-width=\"1.5\" stroke-dasharray=\"{_1}\"><title>run {_2}: {_3}</title></line>", _0 = c(T + ph), _1 = if release { "5 4" } else { "2 3" }, _2 = runs[i].row.id, _3 = &what, xx = xx);
    }
    // A link over each column, titled with the run.
    for (j, r) in runs.iter().enumerate() {
        let f = series_of(r, name);
        let samples = f.map_or(0, |f| f.samples);
        let worst = f.and_then(|f| f.max_ns).map(dur).unwrap_or_else(|| "-".into());
        html_into!(s, "<a href=\"/run/{id}\"><rect x=\"{_0}\" y=\"{T}\" width=\"{_1}\" height=\"{_2}\" fill=\"#000\" fill-opacity=\"0\"><title>run {id} · {_3} · {_4}: {samples} samples, worst case {worst}</title></rect></a>", _0 = c(L + j as f64 * cw), _1 = c(cw), _2 = c(ph), _3 = &when(&r.row.started_at), _4 = &r.row.kernel, id = r.row.id, samples = samples, worst = worst);
    }
    // The legend: the count scale, many samples on top, and white for none.
    let lx = L + pw + 24.0;
    let lh = ph.clamp(120.0, 220.0);
    let step = lh / LEVELS as f64;
    html_into!(
        s,
        "<text x=\"{}\" y=\"{}\">samples</text><text x=\"{}\" y=\"{}\">in the bin</text>",
        c(lx),
        c(T + 12.0),
        c(lx),
        c(T + 27.0)
    );
    let top = T + 38.0;
    for k in 0..LEVELS {
        let yy = top + (LEVELS - 1 - k) as f64 * step;
        html_into!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"18\" height=\"{}\" fill=\"{}\"/>",
            c(lx),
            c(yy),
            c(step + 0.5),
            level_colour(k)
        );
    }
    let scale_y = |cnt: u64| {
        if max_count <= 1 {
            return top + step / 2.0;
        }
        let f = (cnt as f64).log10() / (max_count as f64).log10();
        top + lh - step / 2.0 - f * (lh - step)
    };
    let mut marks: Vec<u64> = std::iter::successors(Some(1u64), |v| v.checked_mul(10)).take_while(|&v| v <= max_count).collect();
    // Not more than six labels: every other decade of a wide count range.
    while marks.len() > 6 {
        marks = marks.into_iter().step_by(2).collect();
    }
    let mut last_y = f64::MAX;
    for m in marks {
        let yy = scale_y(m);
        if last_y - yy < 14.0 {
            continue;
        }
        last_y = yy;
        html_into!(s, "<text x=\"{}\" y=\"{}\">{}</text>", c(lx + 24.0), c(yy + 4.0), count_label(m));
    }
    let ey = top + lh + 10.0;
    html_into!(
        s,
        "<rect x=\"{}\" y=\"{}\" width=\"18\" height=\"{}\" fill=\"#fff\" stroke=\"#999\"/><text x=\"{}\" y=\"{}\">none</text>",
        c(lx),
        c(ey),
        c(step.max(10.0)),
        c(lx + 24.0),
        c(ey + step.max(10.0) / 2.0 + 4.0)
    );
    s.finish()
}

/// The fleet page's sparkline: a board's worst case over its last runs (oldest first), on a log
/// scale between its least and its greatest; each point titled with its run and value; the
/// latest marked, in red when it regressed.
pub fn sparkline(spark: &[(i64, String, Option<u64>)], regressed: bool) -> Html {
    const W: f64 = 120.0;
    const H: f64 = 24.0;
    const PAD: f64 = 3.0;
    let mut s = Canvas::new(W, H, Some("spark"), &format!("worst case of the last {} runs", spark.len()));
    let values: Vec<f64> = spark.iter().filter_map(|p| p.2).map(|v| (v.max(1) as f64).log10()).collect();
    let (Some(lo), Some(hi)) = (values.iter().copied().reduce(f64::min), values.iter().copied().reduce(f64::max)) else {
        return s.finish();
    };
    let x = |i: usize| if spark.len() <= 1 { W / 2.0 } else { PAD + i as f64 * (W - 2.0 * PAD) / (spark.len() - 1) as f64 };
    let y = |v: u64| {
        let l = (v.max(1) as f64).log10();
        if hi - lo < 1e-9 {
            H / 2.0
        } else {
            H - PAD - (l - lo) / (hi - lo) * (H - 2.0 * PAD)
        }
    };
    let d = path_data(spark.iter().enumerate().map(|(i, p)| p.2.map(|v| (x(i), y(v)))));
    html_into!(s, "<path d=\"{d}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.2\"/>", d = d);
    let last = spark.iter().rposition(|p| p.2.is_some());
    for (i, (id, at, v)) in spark.iter().enumerate() {
        let Some(v) = v else { continue };
        let (r, fill) = match (Some(i) == last, regressed) {
            (true, true) => (2.6, "#d62728"),
            (true, false) => (2.6, "#1f77b4"),
            _ => (1.6, "#1f77b4"),
        };
        html_into!(
            s,
            "<circle cx=\"{_0}\" cy=\"{_1}\" r=\"{r}\" fill=\"{fill}\"><title>run {id} · {_2}: worst case {_3}</title></circle>",
            _0 = c(x(i)),
            _1 = c(y(*v)),
            _2 = &day(at),
            _3 = dur(*v),
            r = r,
            fill = fill,
            id = id
        );
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_start_on_their_decades() {
        assert_eq!(bin_low_ns(0), 0);
        assert_eq!(bin_low_ns(1), 1_000);
        assert_eq!(bin_low_ns(11), 10_000);
        assert_eq!(bin_low_ns(BINS - 1), 10_000_000_000);
        // The store's own definition, once it is there.
        if let Ok(r) = std::panic::catch_unwind(|| crate::store::figures::bin_range(11)) {
            assert_eq!(r.0, bin_low_ns(11));
            for i in [0, 1, 5, 21, 40, BINS - 1] {
                assert_eq!(crate::store::figures::bin_range(i).0, bin_low_ns(i), "bin {i}");
            }
        }
    }

    #[test]
    fn time_ticks_are_few_distinct_and_in_order_at_every_span() {
        for span in [
            1,
            10,
            60,
            300,
            600,
            5 * 3600,
            20 * 3600,
            3 * 86_400,
            40 * 86_400,
            400 * 86_400,
            2 * 365 * 86_400,
            3 * 365 * 86_400,
            20 * 365 * 86_400,
        ] {
            let (t0, t1) = time_span(&[1_790_000_000, 1_790_000_000 + span]);
            assert!(t0 < 1_790_000_000 && t1 > 1_790_000_000 + span, "a margin: {span}");
            assert!((t1 - t0) <= (span * 11 / 10).max(60) + 2, "the axis spans the runs: {span}: {}", t1 - t0);
            let (ticks, _) = time_ticks(t0, t1);
            assert!((2..=10).contains(&ticks.len()), "{span}: {ticks:?}");
            assert!(ticks.windows(2).all(|w| w[0].0 < w[1].0));
            assert!(ticks.iter().all(|(t, l)| *t >= t0 && *t <= t1 && !l.is_empty()));
            let labels: std::collections::BTreeSet<&String> = ticks.iter().map(|(_, l)| l).collect();
            assert_eq!(labels.len(), ticks.len(), "distinct labels: {span}: {ticks:?}");
        }
        // A page of one run: a minute around it.
        assert_eq!(time_span(&[1_790_000_000]), (1_790_000_000 - 30, 1_790_000_000 + 30));
    }

    #[test]
    fn run_labels_tell_neighbours_apart() {
        let t = 1_790_000_000 - 1_790_000_000 % 86_400 + 3_600;
        let (labels, date) = run_labels(&[t, t + 60, t + 240]);
        assert_eq!((labels, date.as_deref()), (vec!["01:00".to_string(), "01:01".into(), "01:04".into()], Some("2026-09-21")));
        let (labels, _) = run_labels(&[t, t + 5, t + 10]);
        assert_eq!(labels, ["01:00:00", "01:00:05", "01:00:10"]);
        let (labels, date) = run_labels(&[t, t + 86_400, t + 2 * 365 * 86_400]);
        assert_eq!((labels, date), (vec!["2026-09-21".to_string(), "2026-09-22".into(), "2028-09-20".into()], None));
        let (labels, _) = run_labels(&[t, t + 60, t + 86_400]);
        assert_eq!(labels, ["09-21 01:00", "09-21 01:01", "09-22 01:00"]);
    }

    #[test]
    fn the_palette_runs_from_light_to_dark() {
        assert_eq!(level_colour(0), "#fde725");
        assert_eq!(level_colour(LEVELS - 1), "#440154");
    }

    /// A series no run has still gives one whole SVG element per plot, saying so.
    #[test]
    fn plots_of_nothing_are_whole_svg() {
        for svg in [long_term(&[], "timer", &[]), heat_map(&[], "timer", &[])] {
            resvg::usvg::roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
            assert_eq!((svg.matches("<svg").count(), svg.matches("</svg>").count()), (1, 1), "{svg}");
            assert!(svg.contains("in these runs."), "{svg}");
        }
    }

    #[test]
    fn a_sparkline_titles_every_point() {
        let spark: Vec<(i64, String, Option<u64>)> = (1..=30)
            .map(|i| (i, format!("2026-11-{:02}T10:00:00Z", i % 28 + 1), (i != 7).then_some(10_000 + i as u64 * 100)))
            .collect();
        let s = sparkline(&spark, true);
        assert_eq!(s.matches("<title>").count(), 29);
        assert!(s.contains("#d62728"));
        resvg::usvg::roxmltree::Document::parse(&s).unwrap();
        assert!(sparkline(&[], false).ends_with("</svg>"));
    }
}
