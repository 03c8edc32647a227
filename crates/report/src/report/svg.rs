//! One way to draw: the SVG every plot of rtgauge is written in, the HTML report's (histogram,
//! percentiles, timeline, probability of exceedance: [`super::plot`]) and the dashboard's
//! (long-term plot, heat map, sparkline). A [`Canvas`] writes the elements — lines, shapes,
//! circles, text — through [`super::markup`], so every text drawn is escaped by construction; a
//! [`Chart`] maps values onto a plotting area (each axis linear or logarithmic), clips the marks
//! drawn in it to its frame, and draws its grid, ticks and axis titles. No plotting library:
//! what the plots need is this file, and they stay small and readable as text.
//!
//! The elements keep one form the tests read: `<rect x y width height opacity fill stroke>`,
//! `<polyline fill="none" opacity stroke stroke-width points="x,y …">`, `<circle cx cy r …>`,
//! `<text x y text-anchor font-size opacity fill>`; colours as `#RRGGBB`.

use super::markup::Html;
use crate::{html, html_into};
use std::fmt::Write;

/// A colour and its opacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ink {
    pub rgb: (u8, u8, u8),
    pub opacity: f64,
}

impl Ink {
    /// An opaque colour.
    pub const fn rgb(r: u8, g: u8, b: u8) -> Ink {
        Ink { rgb: (r, g, b), opacity: 1.0 }
    }

    /// The colour at `opacity` (0 to 1).
    pub const fn alpha(self, opacity: f64) -> Ink {
        Ink { rgb: self.rgb, opacity }
    }

    /// A line of this ink, `width` px wide.
    pub const fn pen(self, width: f64) -> Pen {
        Pen { ink: self, width, dash: None }
    }

    /// `#RRGGBB`.
    pub fn hex(&self) -> String {
        format!("#{:02X}{:02X}{:02X}", self.rgb.0, self.rgb.1, self.rgb.2)
    }
}

pub const BLACK: Ink = Ink::rgb(0, 0, 0);
pub const WHITE: Ink = Ink::rgb(255, 255, 255);

/// How a line is drawn: its ink, its width and its dashes (on, off: px).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pen {
    pub ink: Ink,
    pub width: f64,
    pub dash: Option<(f64, f64)>,
}

impl Pen {
    /// The pen drawing dashes `on` px long, `off` px apart.
    pub const fn dashed(self, on: f64, off: f64) -> Pen {
        Pen { dash: Some((on, off)), ..self }
    }

    /// The attributes of a stroke in this pen.
    fn attrs(&self) -> Html {
        let mut a =
            html!(" opacity=\"{}\" stroke=\"{}\" stroke-width=\"{}\"", share(self.ink.opacity), self.ink.hex(), num(self.width));
        if let Some((on, off)) = self.dash {
            html_into!(a, " stroke-dasharray=\"{} {}\"", num(on), num(off));
        }
        a
    }
}

/// A coordinate or size as SVG text: at most one decimal (a tenth of a pixel), none when whole
/// (`12`, `12.5`).
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let s = format!("{v:.1}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// An opacity as SVG text: two decimals at most (`0.25`, `1`).
fn share(v: f64) -> String {
    let s = format!("{:.2}", v.clamp(0.0, 1.0));
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A path's `d` text through points, the pen lifted at each `None` (a gap in a series).
pub fn path_data(points: impl IntoIterator<Item = Option<(f64, f64)>>) -> String {
    let mut d = String::new();
    let mut pen_up = true;
    for p in points {
        match p {
            Some((x, y)) => {
                let _ = write!(d, "{}{} {}", if pen_up { "M" } else { "L" }, num(x), num(y));
                pen_up = false;
            }
            None => pen_up = true,
        }
    }
    d
}

/// How a text is placed on its point: its start, middle or end there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// How a text is drawn: its size (px), its placing and its ink; turned a quarter left (an
/// axis' title beside it) or not. Its point is the text's baseline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Font {
    pub size: f64,
    pub anchor: Anchor,
    pub ink: Ink,
    pub upright: bool,
}

impl Font {
    /// Text of `size` px, black, starting at its point.
    pub const fn new(size: f64) -> Font {
        Font { size, anchor: Anchor::Start, ink: BLACK, upright: true }
    }
    pub const fn anchor(self, anchor: Anchor) -> Font {
        Font { anchor, ..self }
    }
    pub const fn ink(self, ink: Ink) -> Font {
        Font { ink, ..self }
    }
    /// Read from bottom to top (a vertical axis' title).
    pub const fn turned(self) -> Font {
        Font { upright: false, ..self }
    }
}

/// The SVG of one plot, written element by element.
pub struct Canvas {
    pub width: f64,
    pub height: f64,
    out: Html,
}

impl Canvas {
    /// A plot `width` × `height` px that scales with its page (a view box), named for a screen
    /// reader by `label`, with a `class` for the page's style sheet (or none); its text in a
    /// sans-serif face of 13 px unless a text says otherwise.
    pub fn new(width: f64, height: f64, class: Option<&str>, label: &str) -> Canvas {
        let (w, h) = (num(width), num(height));
        let mut out = html!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\"",
            w = &w,
            h = &h
        );
        if let Some(class) = class {
            html_into!(out, " class=\"{class}\"", class = class);
        }
        html_into!(
            out,
            " role=\"img\" aria-label=\"{label}\" font-family=\"system-ui,'DejaVu Sans',sans-serif\" font-size=\"13\">",
            label = label
        );
        Canvas { width, height, out }
    }

    /// Fills the whole plot with `ink` (a background).
    pub fn fill(&mut self, ink: Ink) {
        self.rect((0.0, 0.0), (self.width, self.height), ink);
    }

    /// A filled rectangle between two corners.
    pub fn rect(&mut self, a: (f64, f64), b: (f64, f64), ink: Ink) {
        let (x, y, w, h) = (a.0.min(b.0), a.1.min(b.1), (a.0 - b.0).abs(), (a.1 - b.1).abs());
        html_into!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" opacity=\"{}\" fill=\"{}\" stroke=\"none\"/>",
            num(x),
            num(y),
            num(w),
            num(h),
            share(ink.opacity),
            ink.hex()
        );
    }

    /// A line through `points` (none drawn for fewer than two; a point that is not a number, as
    /// a damaged stored document could give, is left out).
    pub fn line(&mut self, points: &[(f64, f64)], pen: Pen) {
        if points.iter().filter(|p| p.0.is_finite() && p.1.is_finite()).count() < 2 {
            return;
        }
        let mut p = String::with_capacity(points.len() * 12);
        for &(x, y) in points.iter().filter(|p| p.0.is_finite() && p.1.is_finite()) {
            let _ = write!(p, "{},{} ", num(x), num(y));
        }
        html_into!(self.out, "<polyline fill=\"none\"{} points=\"{}\"/>", pen.attrs(), p.trim_end());
    }

    /// A filled polygon through `points`.
    pub fn polygon(&mut self, points: &[(f64, f64)], ink: Ink) {
        if points.iter().filter(|p| p.0.is_finite() && p.1.is_finite()).count() < 3 {
            return;
        }
        let mut p = String::with_capacity(points.len() * 12);
        for &(x, y) in points.iter().filter(|p| p.0.is_finite() && p.1.is_finite()) {
            let _ = write!(p, "{},{} ", num(x), num(y));
        }
        html_into!(
            self.out,
            "<polygon opacity=\"{}\" fill=\"{}\" stroke=\"none\" points=\"{}\"/>",
            share(ink.opacity),
            ink.hex(),
            p.trim_end()
        );
    }

    /// A circle at `centre`, filled with `fill` and edged with `edge` (either may be none).
    pub fn circle(&mut self, centre: (f64, f64), r: f64, fill: Option<Ink>, edge: Option<Pen>) {
        html_into!(self.out, "<circle cx=\"{}\" cy=\"{}\" r=\"{}\"", num(centre.0), num(centre.1), num(r));
        match fill {
            Some(f) => html_into!(self.out, " fill=\"{}\" fill-opacity=\"{}\"", f.hex(), share(f.opacity)),
            None => self.out += " fill=\"none\"",
        }
        match edge {
            Some(pen) => self.out += pen.attrs(),
            None => self.out += " stroke=\"none\"",
        }
        self.out += "/>";
    }

    /// `text` with its baseline's anchor at `at`.
    pub fn text(&mut self, at: (f64, f64), text: &str, font: Font) {
        let (x, y) = (num(at.0), num(at.1));
        html_into!(
            self.out,
            "<text x=\"{x}\" y=\"{y}\" text-anchor=\"{anchor}\" font-size=\"{size}\" opacity=\"{opacity}\" fill=\"{fill}\"",
            anchor = font.anchor.name(),
            size = num(font.size),
            opacity = share(font.ink.opacity),
            fill = font.ink.hex(),
            x = &x,
            y = &y
        );
        if !font.upright {
            html_into!(self.out, " transform=\"rotate(-90 {x} {y})\"", x = &x, y = &y);
        }
        html_into!(self.out, ">{}</text>", text);
    }

    /// What is drawn from here to [`Canvas::unclip`] is cut at the rectangle between `a` and `b`
    /// (a nested viewport: no identifiers, so two plots on one page never share one).
    pub fn clip(&mut self, a: (f64, f64), b: (f64, f64)) {
        let (x, y, w, h) = (num(a.0.min(b.0)), num(a.1.min(b.1)), num((a.0 - b.0).abs()), num((a.1 - b.1).abs()));
        html_into!(
            self.out,
            "<svg x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" viewBox=\"{x} {y} {w} {h}\" overflow=\"hidden\">",
            x = &x,
            y = &y,
            w = &w,
            h = &h
        );
    }

    /// What is drawn from here to [`Canvas::uncrisp`] keeps its edges on whole pixels (bars side
    /// by side show no seam between them).
    pub fn crisp(&mut self) {
        self.out += "<g shape-rendering=\"crispEdges\">";
    }

    /// Ends what [`Canvas::crisp`] began.
    pub fn uncrisp(&mut self) {
        self.out += "</g>";
    }

    /// Ends what [`Canvas::clip`] began.
    pub fn unclip(&mut self) {
        self.out += "</svg>";
    }

    /// The finished SVG element.
    pub fn finish(self) -> Html {
        self.out + "</svg>"
    }

    /// Markup of the caller's appended in place (what [`crate::html_into!`] calls: marks with
    /// links and titles, as the dashboard's plots of a thousand runs write them).
    pub fn push_args(&mut self, args: std::fmt::Arguments<'_>) {
        self.out.push_args(args);
    }
}

impl std::ops::AddAssign<&'static str> for Canvas {
    fn add_assign(&mut self, markup: &'static str) {
        self.out += markup;
    }
}

/// How an axis places its values: evenly, or evenly by their logarithm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear,
    Log,
}

/// An axis: its range of values and its scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub scale: Scale,
}

impl Axis {
    pub fn linear(lo: f64, hi: f64) -> Axis {
        Axis { lo, hi: if hi > lo { hi } else { lo + 1.0 }, scale: Scale::Linear }
    }

    /// A logarithmic axis (its values above 0; `lo` of at most 0 taken as a thousandth of `hi`).
    pub fn log(lo: f64, hi: f64) -> Axis {
        let hi = if hi > 0.0 && hi.is_finite() { hi } else { 1.0 };
        let lo = if lo > 0.0 && lo < hi {
            lo
        } else if lo > 0.0 {
            hi / 10.0
        } else {
            hi / 1e3
        };
        Axis { lo, hi, scale: Scale::Log }
    }

    /// Where `v` lies along the axis: 0 at its low end, 1 at its high end (beyond: outside).
    pub fn fraction(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => (v - self.lo) / (self.hi - self.lo),
            Scale::Log => {
                // (a value at or below 0 lies far below the axis, where a clip hides it)
                let v = if v > 0.0 { v } else { self.lo * 1e-3 };
                (v / self.lo).log10() / (self.hi / self.lo).log10()
            }
        }
    }

    /// The axis' ticks: (value, whether a major one).
    /// - Logarithmic: every power of ten, and 2 and 5 times it over up to two decades (every
    ///   whole multiple within one), those minor.
    /// - Linear: at most `at_most` on a step of 1, 2 or 5 times a power of ten, all major.
    pub fn ticks(&self, at_most: usize) -> Vec<(f64, bool)> {
        let inside = |v: f64| v >= self.lo * (1.0 - 1e-9) && v <= self.hi * (1.0 + 1e-9);
        match self.scale {
            Scale::Log => {
                let (a, b) = (self.lo.log10().floor() as i32, self.hi.log10().ceil() as i32);
                let decades = (self.hi / self.lo).log10();
                let steps: &[f64] = match decades {
                    d if d <= 1.0 => &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
                    d if d <= 2.5 => &[1.0, 2.0, 5.0],
                    _ => &[1.0],
                };
                (a..=b)
                    .flat_map(|e| steps.iter().map(move |&m| (m * 10f64.powi(e), m == 1.0)))
                    .filter(|&(v, _)| inside(v))
                    .collect()
            }
            Scale::Linear => {
                let span = self.hi - self.lo;
                let rough = span / at_most.max(1) as f64;
                let power = 10f64.powf(rough.log10().floor());
                let step = [1.0, 2.0, 5.0, 10.0]
                    .into_iter()
                    .map(|m| m * power)
                    .find(|&s| span / s <= at_most as f64)
                    .unwrap_or(power * 10.0);
                let first = (self.lo / step).ceil() as i64;
                (first..).map(|k| k as f64 * step).take_while(|&v| inside(v)).map(|v| (v, true)).collect()
            }
        }
    }
}

/// A plotting area of a canvas: where it lies (px) and the axes it maps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Chart {
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
    pub x: Axis,
    pub y: Axis,
}

/// What [`Chart::mesh`] labels its axes with: the formatters of the ticks' labels (an empty
/// label leaves a tick unlabelled), the axes' titles, the labels' font and how many ticks the
/// linear x axis may have.
pub struct Mesh<'a> {
    pub x_label: &'a dyn Fn(f64) -> String,
    pub y_label: &'a dyn Fn(f64) -> String,
    pub x_title: &'a str,
    pub y_title: &'a str,
    pub font: f64,
    pub x_ticks: usize,
}

impl Chart {
    /// The point of values (x, y), in px.
    pub fn at(&self, (x, y): (f64, f64)) -> (f64, f64) {
        (self.left + self.x.fraction(x) * (self.right - self.left), self.bottom - self.y.fraction(y) * (self.bottom - self.top))
    }

    /// The points of values, in px.
    pub fn points(&self, values: &[(f64, f64)]) -> Vec<(f64, f64)> {
        values.iter().map(|&v| self.at(v)).collect()
    }

    /// The area's corners: top left, bottom right.
    pub fn corners(&self) -> ((f64, f64), (f64, f64)) {
        ((self.left, self.top), (self.right, self.bottom))
    }

    /// The grid, the axes with their ticks and labels, and the axes' titles.
    pub fn mesh(&self, canvas: &mut Canvas, m: &Mesh) {
        let font = Font::new(m.font);
        for (v, major) in self.y.ticks(10) {
            let (_, y) = self.at((self.x.lo, v));
            canvas.line(&[(self.left, y), (self.right, y)], BLACK.alpha(if major { 0.12 } else { 0.05 }).pen(1.0));
            let label = (m.y_label)(v);
            if !label.is_empty() {
                canvas.line(&[(self.left - 5.0, y), (self.left, y)], BLACK.pen(1.0));
                canvas.text((self.left - 8.0, y + m.font * 0.35), &label, font.anchor(Anchor::End));
            }
        }
        for (v, major) in self.x.ticks(m.x_ticks) {
            let (x, _) = self.at((v, self.y.lo));
            canvas.line(&[(x, self.top), (x, self.bottom)], BLACK.alpha(if major { 0.12 } else { 0.05 }).pen(1.0));
            let label = (m.x_label)(v);
            if !label.is_empty() {
                canvas.line(&[(x, self.bottom), (x, self.bottom + 5.0)], BLACK.pen(1.0));
                canvas.text((x, self.bottom + 8.0 + m.font), &label, font.anchor(Anchor::Middle));
            }
        }
        canvas.line(&[(self.left, self.top), (self.left, self.bottom), (self.right, self.bottom)], BLACK.pen(1.0));
        canvas.text(((self.left + self.right) / 2.0, self.bottom + 2.0 * m.font + 16.0), m.x_title, font.anchor(Anchor::Middle));
        canvas.text((m.font + 4.0, (self.top + self.bottom) / 2.0), m.y_title, font.anchor(Anchor::Middle).turned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.5), "12.5");
        assert_eq!(num(1.0 / 3.0), "0.3");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(f64::NAN), "0");
        assert_eq!((share(0.25), share(1.0), share(0.0)), ("0.25".into(), "1".into(), "0".into()));
    }

    #[test]
    fn log_ticks_are_decades_with_steps_between_when_few() {
        let t: Vec<f64> = Axis::log(10.0, 10_000.0).ticks(10).into_iter().map(|t| t.0).collect();
        assert_eq!(t, vec![10.0, 100.0, 1_000.0, 10_000.0]);
        let t: Vec<(f64, bool)> = Axis::log(10.0, 600.0).ticks(10);
        assert_eq!(t.iter().map(|t| t.0).collect::<Vec<_>>(), vec![10.0, 20.0, 50.0, 100.0, 200.0, 500.0]);
        assert!(t[0].1 && !t[1].1 && t[3].1);
        assert_eq!(Axis::log(2.0, 9.0).ticks(10).len(), 8);
    }

    #[test]
    fn linear_ticks_fall_on_round_steps() {
        let t: Vec<f64> = Axis::linear(0.0, 4.2).ticks(10).into_iter().map(|t| t.0).collect();
        assert_eq!(t, vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]);
        let t: Vec<f64> = Axis::linear(0.0, 6.0).ticks(7).into_iter().map(|t| t.0).collect();
        assert_eq!(t, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(Axis::linear(0.0, 3600.0).ticks(10).len(), 8);
    }

    #[test]
    fn a_chart_maps_values_onto_its_area() {
        let c =
            Chart { left: 100.0, top: 10.0, right: 300.0, bottom: 110.0, x: Axis::linear(0.0, 10.0), y: Axis::log(1.0, 100.0) };
        assert_eq!(c.at((0.0, 1.0)), (100.0, 110.0));
        assert_eq!(c.at((10.0, 100.0)), (300.0, 10.0));
        let (x, y) = c.at((5.0, 10.0));
        assert!((x - 200.0).abs() < 1e-9 && (y - 60.0).abs() < 1e-9);
    }

    #[test]
    fn text_is_escaped_and_the_svg_parses() {
        let mut c = Canvas::new(200.0, 100.0, Some("p"), "a <plot> & \"its\" label");
        c.fill(WHITE);
        c.clip((10.0, 10.0), (190.0, 90.0));
        c.line(&[(0.0, 0.0), (50.5, 20.26)], Ink::rgb(31, 119, 180).pen(2.0).dashed(4.0, 2.0));
        c.polygon(&[(0.0, 0.0), (1.0, 0.0), (1.0, 1.0)], BLACK.alpha(0.2));
        c.circle((5.0, 5.0), 3.0, Some(BLACK), Some(WHITE.pen(1.0)));
        c.unclip();
        c.text((1.0, 2.0), "</text><script>", Font::new(13.0).turned());
        let s = c.finish().into_string();
        assert!(s.contains("&lt;/text&gt;&lt;script&gt;") && !s.contains("<script"), "{s}");
        assert!(s.contains("stroke-dasharray=\"4 2\"") && s.contains("points=\"0,0 50.5,20.3\""), "{s}");
        assert!(s.contains("aria-label=\"a &lt;plot&gt; &amp; &quot;its&quot; label\""), "{s}");
        assert_eq!(s.matches("<svg").count(), 2);
        assert_eq!(s.matches("</svg>").count(), 2);
    }
}
