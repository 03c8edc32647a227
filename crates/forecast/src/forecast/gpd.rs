//! The generalised Pareto distribution (GPD) of the excesses over a threshold: the maximum-
//! likelihood fit (Grimshaw's reduction to one dimension), the 95 % likelihood-ratio confidence
//! region of (σ, ξ), and return levels with their profile-likelihood intervals taken over that
//! region (Coles 2001, §4.3–4.4).
//!
//! Survival of an excess y ≥ 0: (1 + ξ·y/σ)^(-1/ξ), or exp(-y/σ) at ξ = 0. The excesses come
//! from a histogram: each bucket above the threshold is one excess (its midpoint) with a count.

/// χ²₁'s 95 % point: a (σ, ξ) lies in the confidence region when the deviance 2·(ℓ̂ − ℓ) is
/// at most this.
pub const CHI2_1_95: f64 = 3.841_458_820_694_124;

/// Shapes beyond these are not searched: below −1 the likelihood is unbounded (no MLE), above 5
/// the tail has no moment worth the name and the region is called open there.
pub const SHAPE_MIN: f64 = -1.0;
pub const SHAPE_MAX: f64 = 5.0;

/// The excesses over the threshold, grouped: each distinct excess (a histogram bucket's
/// midpoint) with its count, and the bucket's edges.
#[derive(Debug, Clone)]
pub struct Excesses {
    pub y: Vec<f64>,
    pub n: Vec<f64>,
    /// Each bucket's lower and upper edge (as excesses; equal to `y` for exact values).
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
    /// How many there are (the counts' sum), the largest and their mean.
    pub k: f64,
    pub max: f64,
    pub mean: f64,
    /// Whether the likelihood treats each value as lying somewhere in its bucket (interval
    /// censored) rather than at its midpoint: set by [`fit`] where the buckets are wide against
    /// the tail's scale (the histogram's 3 significant digits are 16 ns wide at 16–32 µs, a
    /// twentieth of a bounded tail's 300-ns scale there).
    pub binned: bool,
}

/// The mean bucket width, against the fitted scale, from which the likelihood is the binned one.
const BINNED_FROM: f64 = 0.005;

impl Excesses {
    /// From exact (excess, count) pairs; `None` when there are none or an excess is not positive.
    pub fn new(pairs: impl IntoIterator<Item = (f64, u64)>) -> Option<Excesses> {
        Excesses::from_buckets(pairs.into_iter().map(|(y, c)| (y, y, c)))
    }

    /// From histogram buckets as (lower edge, upper edge, count), excesses over the threshold.
    pub fn from_buckets(buckets: impl IntoIterator<Item = (f64, f64, u64)>) -> Option<Excesses> {
        let (mut y, mut n, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (a, b, c) in buckets {
            if c == 0 {
                continue;
            }
            let mid = 0.5 * (a + b);
            if !(mid > 0.0 && mid.is_finite() && a >= 0.0 && b >= a) {
                return None;
            }
            y.push(mid);
            n.push(c as f64);
            lo.push(a);
            hi.push(b);
        }
        let k: f64 = n.iter().sum();
        if k == 0.0 {
            return None;
        }
        let mean = y.iter().zip(&n).map(|(y, n)| y * n).sum::<f64>() / k;
        let max = y.iter().copied().fold(0.0, f64::max);
        Some(Excesses { y, n, lo, hi, k, max, mean, binned: false })
    }

    /// The count-weighted mean bucket width.
    fn mean_width(&self) -> f64 {
        self.lo.iter().zip(&self.hi).zip(&self.n).map(|((a, b), n)| (b - a) * n).sum::<f64>() / self.k
    }

    /// The log-likelihood at (σ, ξ); −∞ where an excess lies beyond the tail's end.
    pub fn loglik(&self, sigma: f64, xi: f64) -> f64 {
        if sigma.is_nan() || sigma <= 0.0 || !xi.is_finite() {
            return f64::NEG_INFINITY;
        }
        if self.binned {
            let mut s = 0.0;
            for i in 0..self.y.len() {
                let (a, b) = (self.lo[i], self.hi[i]);
                let p = if b > a { survival(sigma, xi, a) - survival(sigma, xi, b) } else { density(sigma, xi, a) };
                if p.is_nan() || p <= 0.0 {
                    return f64::NEG_INFINITY;
                }
                s += self.n[i] * p.ln();
            }
            return s;
        }
        if xi.abs() < 1e-9 {
            return -self.k * sigma.ln() - self.k * self.mean / sigma;
        }
        let c = xi / sigma;
        let mut s = 0.0;
        for (y, n) in self.y.iter().zip(&self.n) {
            let t = 1.0 + c * y;
            if t <= 0.0 {
                return f64::NEG_INFINITY;
            }
            s += n * t.ln();
        }
        -self.k * sigma.ln() - (1.0 + 1.0 / xi) * s
    }

    /// Grimshaw's reduction: for θ = ξ/σ, the shape that maximises the likelihood is the mean of
    /// ln(1 + θ·y), and σ = ξ/θ.
    fn shape_at(&self, theta: f64) -> f64 {
        let mut s = 0.0;
        for (y, n) in self.y.iter().zip(&self.n) {
            let t = 1.0 + theta * y;
            if t <= 0.0 {
                return f64::NEG_INFINITY;
            }
            s += n * t.ln_1p_safe(theta * y);
        }
        s / self.k
    }

    /// (σ, ξ, ℓ) at θ.
    fn profile(&self, theta: f64) -> (f64, f64, f64) {
        if (theta * self.mean).abs() < 1e-10 {
            return (self.mean, 0.0, self.loglik(self.mean, 0.0));
        }
        let xi = self.shape_at(theta);
        let sigma = xi / theta;
        (sigma, xi, self.loglik(sigma, xi))
    }
}

/// ln(1 + x) computed accurately for small x (the caller passes 1 + x and x).
trait Ln1p {
    fn ln_1p_safe(self, x: f64) -> f64;
}
impl Ln1p for f64 {
    fn ln_1p_safe(self, x: f64) -> f64 {
        if x.abs() < 1e-4 {
            x.ln_1p()
        } else {
            self.ln()
        }
    }
}

/// The maximum-likelihood estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mle {
    pub sigma: f64,
    pub xi: f64,
    pub loglik: f64,
}

/// The MLE of (σ, ξ) over ξ ∈ [−1, 5]: a grid over θ, then a golden-section search around its
/// best point, at the buckets' midpoints; where the buckets are wide against the scale found,
/// refined on the binned likelihood (and `e` marked binned). `None` when the best lies on the
/// boundary of the shapes searched.
pub fn fit(e: &mut Excesses) -> Option<Mle> {
    // θ·mean is dimensionless. Below 0 the support ends at −1/θ, which must lie beyond the
    // largest excess; the shape must stay at or above −1 (ξ(θ) grows with θ).
    let lo = {
        let mut a = -1.0 / e.max * (1.0 - 1e-9);
        let mut b = 0.0;
        if e.shape_at(a) >= SHAPE_MIN {
            b = a;
        } else {
            for _ in 0..80 {
                let m = 0.5 * (a + b);
                if e.shape_at(m) < SHAPE_MIN {
                    a = m;
                } else {
                    b = m;
                }
            }
        }
        b
    };
    let mut grid: Vec<f64> = (0..=24).map(|i| lo * (1.0 - i as f64 / 24.0)).collect();
    grid.extend((-16..=28).map(|j| 10f64.powf(j as f64 / 4.0) / e.mean));
    let mut best: Option<(usize, f64)> = None;
    let values: Vec<(f64, f64, f64)> = grid.iter().map(|&t| e.profile(t)).collect();
    for (i, &(_, xi, l)) in values.iter().enumerate() {
        if l.is_finite() && (SHAPE_MIN..=SHAPE_MAX).contains(&xi) && best.is_none_or(|(_, b)| l > b) {
            best = Some((i, l));
        }
    }
    let (i, _) = best?;
    let (mut a, mut b) = (grid[i.saturating_sub(1)], grid[(i + 1).min(grid.len() - 1)]);
    // (the grid is ascending in θ; a golden-section search on the bracket around the best)
    let g = 0.5 * (5f64.sqrt() - 1.0);
    let score = |t: f64| {
        let (_, xi, l) = e.profile(t);
        if (SHAPE_MIN..=SHAPE_MAX).contains(&xi) && l.is_finite() {
            l
        } else {
            f64::NEG_INFINITY
        }
    };
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (score(c), score(d));
    for _ in 0..60 {
        if (b - a).abs() <= 1e-10 * (a.abs() + b.abs()) {
            break;
        }
        if fc > fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = score(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = score(d);
        }
    }
    let t = if fc > fd { c } else { d };
    let (sigma, xi, loglik) = e.profile(t);
    let at_edge = xi <= SHAPE_MIN + 1e-3 || xi >= SHAPE_MAX - 1e-3;
    // (a scale below a hundredth of a nanosecond: values that do not spread, no tail)
    if !(loglik.is_finite() && sigma >= 0.01) || at_edge {
        return None;
    }
    if e.mean_width() < BINNED_FROM * sigma {
        return Some(Mle { sigma, xi, loglik });
    }
    // Wide buckets: the binned likelihood, from the midpoints' estimate.
    e.binned = true;
    let (p, l) = nelder_mead(|p| if p[1] < SHAPE_MIN { f64::NEG_INFINITY } else { e.loglik(p[0].exp(), p[1]) }, [sigma.ln(), xi]);
    let m = Mle { sigma: p[0].exp(), xi: p[1], loglik: l };
    let at_edge = m.xi <= SHAPE_MIN + 1e-3 || m.xi >= SHAPE_MAX - 1e-3;
    (l.is_finite() && m.sigma >= 0.01 && !at_edge).then_some(m)
}

/// The maximum of `f` over two dimensions by Nelder and Mead's simplex, from `start`.
fn nelder_mead(f: impl Fn([f64; 2]) -> f64, start: [f64; 2]) -> ([f64; 2], f64) {
    let mut pts = [start, [start[0] + 0.1, start[1]], [start[0], start[1] + 0.05]];
    let mut val = pts.map(&f);
    for _ in 0..400 {
        // Best first.
        let mut idx = [0, 1, 2];
        idx.sort_by(|&a, &b| val[b].total_cmp(&val[a]));
        pts = idx.map(|i| pts[i]);
        val = idx.map(|i| val[i]);
        if (val[0] - val[2]).abs() < 1e-10 * (1.0 + val[0].abs()) && val[2].is_finite() {
            break;
        }
        let c = [(pts[0][0] + pts[1][0]) / 2.0, (pts[0][1] + pts[1][1]) / 2.0];
        let at = |t: f64| [c[0] + t * (pts[2][0] - c[0]), c[1] + t * (pts[2][1] - c[1])];
        let r = at(-1.0);
        let fr = f(r);
        if fr > val[0] {
            let x = at(-2.0);
            let fx = f(x);
            (pts[2], val[2]) = if fx > fr { (x, fx) } else { (r, fr) };
        } else if fr > val[1] {
            (pts[2], val[2]) = (r, fr);
        } else {
            let k = if fr > val[2] { at(-0.5) } else { at(0.5) };
            let fk = f(k);
            if fk > val[2].max(fr) {
                (pts[2], val[2]) = (k, fk);
            } else {
                for i in 1..3 {
                    pts[i] = [(pts[0][0] + pts[i][0]) / 2.0, (pts[0][1] + pts[i][1]) / 2.0];
                    val[i] = f(pts[i]);
                }
            }
        }
    }
    (pts[0], val[0])
}

/// A point of the confidence region's boundary; `open` when the region goes on past the shapes
/// searched in its direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Edge {
    pub sigma: f64,
    pub xi: f64,
    pub open: bool,
}

/// How many directions the region's boundary is sought in.
const RAYS: usize = 48;

/// The boundary of the 95 % likelihood-ratio region {(σ, ξ): 2·(ℓ̂ − ℓ(σ, ξ)) ≤ χ²₁(0.95)}, found
/// along rays from the MLE in the coordinates (ln σ, ξ) scaled by the observed information (in
/// which the region is near a circle of radius 1.96). `None` when the information is not
/// positive definite (no region to speak of).
pub fn region(e: &Excesses, m: &Mle) -> Option<Vec<Edge>> {
    let ll = |p: [f64; 2]| {
        if p[1] < SHAPE_MIN {
            return f64::NEG_INFINITY;
        }
        e.loglik(p[0].exp(), p[1])
    };
    let p0 = [m.sigma.ln(), m.xi];
    // The observed information by central differences.
    let h = [1e-3, 1e-3];
    let f0 = m.loglik;
    let at = |da: f64, db: f64| ll([p0[0] + da, p0[1] + db]);
    let d00 = (at(h[0], 0.0) - 2.0 * f0 + at(-h[0], 0.0)) / (h[0] * h[0]);
    let d11 = (at(0.0, h[1]) - 2.0 * f0 + at(0.0, -h[1])) / (h[1] * h[1]);
    let d01 = (at(h[0], h[1]) - at(h[0], -h[1]) - at(-h[0], h[1]) + at(-h[0], -h[1])) / (4.0 * h[0] * h[1]);
    let (i00, i01, i11) = (-d00, -d01, -d11);
    let det = i00 * i11 - i01 * i01;
    if !(i00 > 0.0 && i11 > 0.0 && det > 0.0 && det.is_finite()) {
        return None;
    }
    // Covariance = information⁻¹, and its Cholesky factor L: p = p0 + L·u.
    let (c00, c01, c11) = (i11 / det, -i01 / det, i00 / det);
    let l00 = c00.sqrt();
    let l10 = c01 / l00;
    let l11 = (c11 - l10 * l10).max(0.0).sqrt();
    let target = CHI2_1_95;
    let mut edges = Vec::with_capacity(RAYS);
    for r in 0..RAYS {
        let phi = r as f64 / RAYS as f64 * std::f64::consts::TAU;
        let (u0, u1) = (phi.cos(), phi.sin());
        let dir = [l00 * u0, l10 * u0 + l11 * u1];
        let point = |s: f64| [p0[0] + s * dir[0], p0[1] + s * dir[1]];
        let dev = |s: f64| {
            let v = ll(point(s));
            if v.is_finite() {
                2.0 * (f0 - v)
            } else {
                f64::INFINITY
            }
        };
        // Bracket: the deviance passes the target somewhere in (0, hi]; unless the shape leaves
        // the searched range first (the region is open in this direction).
        let (mut lo, mut hi) = (0.0, 2.0);
        let mut f_hi = dev(hi);
        let mut open = false;
        while f_hi < target {
            lo = hi;
            hi *= 2.0;
            if point(hi)[1] > SHAPE_MAX || hi > 1e4 {
                open = true;
                break;
            }
            f_hi = dev(hi);
        }
        if open {
            // (the point where the search stopped: the largest shape searched)
            let s = if dir[1] > 0.0 { ((SHAPE_MAX - p0[1]) / dir[1]).min(hi) } else { lo };
            let p = point(s);
            edges.push(Edge { sigma: p[0].exp(), xi: p[1], open: true });
            continue;
        }
        let mut f_lo = dev(lo) - target;
        let mut g_hi = f_hi - target;
        // Illinois regula falsi, falling back to bisection where the deviance is infinite.
        let mut side = 0;
        for _ in 0..60 {
            if hi - lo <= 1e-6 * hi {
                break;
            }
            let s = if g_hi.is_finite() { (lo * g_hi - hi * f_lo) / (g_hi - f_lo) } else { 0.5 * (lo + hi) };
            let s = if s > lo && s < hi { s } else { 0.5 * (lo + hi) };
            let fs = dev(s) - target;
            if fs > 0.0 {
                hi = s;
                g_hi = fs;
                if side == -1 {
                    f_lo *= 0.5;
                }
                side = -1;
            } else {
                lo = s;
                f_lo = fs;
                if side == 1 && g_hi.is_finite() {
                    g_hi *= 0.5;
                }
                side = 1;
            }
        }
        let p = point(0.5 * (lo + hi));
        edges.push(Edge { sigma: p[0].exp(), xi: p[1], open: false });
    }
    Some(edges)
}

/// The level exceeded on average `l` times less often than the threshold (`l` = the expected
/// exceedances of the threshold over the horizon), as an excess over the threshold.
pub fn excess_at(sigma: f64, xi: f64, l: f64) -> f64 {
    if xi.abs() < 1e-9 {
        sigma * l.ln()
    } else {
        sigma * (l.powf(xi) - 1.0) / xi
    }
}

/// The density of excess `y`.
pub fn density(sigma: f64, xi: f64, y: f64) -> f64 {
    if y < 0.0 {
        return 0.0;
    }
    if xi.abs() < 1e-9 {
        return (-y / sigma).exp() / sigma;
    }
    let t = 1.0 + xi * y / sigma;
    if t <= 0.0 {
        0.0
    } else {
        t.powf(-1.0 / xi - 1.0) / sigma
    }
}

/// The survival of excess `y`: the probability an exceedance goes beyond the threshold by more.
pub fn survival(sigma: f64, xi: f64, y: f64) -> f64 {
    if y <= 0.0 {
        return 1.0;
    }
    if xi.abs() < 1e-9 {
        return (-y / sigma).exp();
    }
    let t = 1.0 + xi * y / sigma;
    if t <= 0.0 {
        0.0
    } else {
        t.powf(-1.0 / xi)
    }
}

/// The excess at `l` with its 95 % interval over the region's boundary: (low, high), high
/// `None` when the region is open towards higher levels.
pub fn interval_at(m: &Mle, edges: &[Edge], l: f64) -> (f64, f64, Option<f64>) {
    let at = excess_at(m.sigma, m.xi, l);
    let (mut low, mut high, mut open_high) = (at, at, false);
    for e in edges {
        let v = excess_at(e.sigma, e.xi, l);
        if v < low {
            low = v;
        }
        if v > high {
            high = v;
            open_high = e.open;
        }
    }
    (at, low, (!open_high).then_some(high))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Excesses of a known GPD at its quantiles (n evenly spread probabilities): the fit finds
    /// its parameters.
    fn quantiles(sigma: f64, xi: f64, n: usize) -> Excesses {
        Excesses::new((0..n).map(|i| {
            let p = (i as f64 + 0.5) / n as f64;
            let y = if xi == 0.0 { -sigma * (1.0 - p).ln() } else { sigma * ((1.0 - p).powf(-xi) - 1.0) / xi };
            (y, 1)
        }))
        .unwrap()
    }

    #[test]
    fn the_fit_finds_the_parameters_of_a_known_tail() {
        for (sigma, xi) in [(1000.0, 0.0), (1000.0, 0.3), (500.0, -0.3), (2000.0, 0.8)] {
            let mut e = quantiles(sigma, xi, 2000);
            let m = fit(&mut e).unwrap();
            assert!((m.sigma / sigma - 1.0).abs() < 0.03, "σ {} for {sigma}", m.sigma);
            assert!((m.xi - xi).abs() < 0.03, "ξ {} for {xi}", m.xi);
            let edges = region(&e, &m).unwrap();
            let xs: Vec<f64> = edges.iter().map(|e| e.xi).collect();
            let (lo, hi) = (xs.iter().copied().fold(f64::MAX, f64::min), xs.iter().copied().fold(f64::MIN, f64::max));
            assert!(lo < m.xi && m.xi < hi, "{lo} < {} < {hi}", m.xi);
            // Every boundary point's deviance is the 95 % point.
            for e2 in edges.iter().filter(|e| !e.open) {
                let d = 2.0 * (m.loglik - e.loglik(e2.sigma, e2.xi));
                assert!((d - CHI2_1_95).abs() < 1e-3, "deviance {d}");
            }
        }
    }

    /// Values in buckets as wide as a tenth of the scale: the binned likelihood finds the
    /// parameters the midpoints would miss.
    #[test]
    fn wide_buckets_are_fitted_as_buckets() {
        let (sigma, xi, w) = (300.0, -0.25, 30.0);
        let mut counts = std::collections::BTreeMap::new();
        for i in 0..4000 {
            let p = (i as f64 + 0.5) / 4000.0;
            let y = sigma * ((1.0 - p).powf(-xi) - 1.0) / xi;
            *counts.entry((y / w).floor() as u64).or_insert(0u64) += 1;
        }
        let mut e = Excesses::from_buckets(counts.iter().map(|(&b, &c)| (b as f64 * w, (b + 1) as f64 * w, c))).unwrap();
        let m = fit(&mut e).unwrap();
        assert!(e.binned);
        assert!((m.sigma / sigma - 1.0).abs() < 0.03 && (m.xi - xi).abs() < 0.03, "{m:?}");
    }

    /// The same excesses fitted by SciPy's `genpareto.fit` (an established implementation; its
    /// shape `c` is ξ) and by rtgauge: the parameters agree within 1 % (ξ within 0.01 where it
    /// is near 0), and rtgauge's likelihood is at least SciPy's. Skipped, with a note, where
    /// Python's SciPy is not installed (`apt-get install python3-scipy`; .ci/run installs it).
    #[test]
    fn the_fit_agrees_with_scipy() {
        // Debian's Python, where its python3-scipy is installed (not whichever `python3` comes
        // first on the PATH: a pyenv's, without SciPy, once made this test pass untested).
        const PYTHON: &str = "/usr/bin/python3";
        let scipy = std::process::Command::new(PYTHON).args(["-c", "import scipy.stats"]).output();
        if !scipy.is_ok_and(|o| o.status.success()) {
            // As the integration tests' `skip` (tests/common/mod.rs): a failure under CI, else a
            // line on the test binary's own standard error (not the captured output).
            assert!(
                std::env::var_os("CI").is_none_or(|v| v.is_empty()),
                "SciPy is needed under CI (.ci/run installs python3-scipy)"
            );
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED: the cross-check with SciPy: no SciPy (apt-get install python3-scipy)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut rng = rtgauge_truth::Rng::new(2025);
        for (sigma, xi, n) in [(3000.0, 0.25, 1000), (5000.0, 0.0, 1000), (300.0, -0.25, 1000), (1000.0, 0.6, 300)] {
            let y: Vec<f64> = (0..n)
                .map(|_| {
                    let u = rng.uniform();
                    if xi == 0.0 {
                        -sigma * u.ln()
                    } else {
                        sigma * (u.powf(-xi) - 1.0) / xi
                    }
                })
                .collect();
            let path = dir.path().join("excesses.txt");
            std::fs::write(&path, y.iter().map(|v| format!("{v:.6}\n")).collect::<String>()).unwrap();
            let script = "import sys, numpy as np, scipy.stats as st\n\
                          y = np.loadtxt(sys.argv[1])\n\
                          c, loc, scale = st.genpareto.fit(y, floc=0)\n\
                          print(c, scale, st.genpareto.logpdf(y, c, 0, scale).sum())";
            let out = std::process::Command::new(PYTHON).args(["-c", script]).arg(&path).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let v: Vec<f64> = String::from_utf8_lossy(&out.stdout).split_whitespace().map(|t| t.parse().unwrap()).collect();
            let (xi_s, sigma_s, ll_s) = (v[0], v[1], v[2]);
            let mut e = Excesses::new(y.iter().map(|&v| (v, 1))).unwrap();
            let m = fit(&mut e).unwrap();
            assert!(!e.binned);
            assert!((m.sigma / sigma_s - 1.0).abs() < 0.01, "σ {} against SciPy's {sigma_s} ({sigma}, {xi})", m.sigma);
            assert!((m.xi - xi_s).abs() < 0.01_f64.max(0.01 * xi_s.abs()), "ξ {} against SciPy's {xi_s} ({sigma}, {xi})", m.xi);
            assert!(m.loglik >= ll_s - 1e-6, "likelihood {} below SciPy's {ll_s}", m.loglik);
        }
    }

    #[test]
    fn levels_and_survival_agree() {
        for xi in [-0.4, 0.0, 0.5] {
            let y = excess_at(100.0, xi, 1000.0);
            assert!((survival(100.0, xi, y) - 1e-3).abs() < 1e-9);
        }
    }
}
