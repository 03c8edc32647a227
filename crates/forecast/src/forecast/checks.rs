//! The tests that decide whether a tail fit applies: goodness of fit (Anderson–Darling on the
//! excesses, with Choulakian & Stephens's critical points for a GPD whose two parameters were
//! estimated), independence (Ljung–Box on the ranks of the window maxima), stationarity (a trend
//! in the window maxima, their two halves compared, the exceedance rates of the load phases
//! compared); and the dashboard's test of a regression (a binomial tail). Each gives its statistic
//! and p-value; the caller decides.

use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

/// The Anderson–Darling statistic A² of excesses grouped in buckets `[lo, hi)` (each with its
/// count `n`) against the fitted GPD's distribution function, on randomised probability-integral
/// transforms: each value of a bucket is placed at a point drawn uniformly between F(lo) and
/// F(hi), so that under the fitted distribution the transformed values are exactly uniform
/// whatever the bucket widths (randomised quantile residuals: Dunn & Smyth, Journal of
/// Computational and Graphical Statistics 5(3), 236–244, 1996). Ties from a histogram's resolution are then no misfit, and the statistic
/// keeps the continuous case's null distribution (a bucket of exact values, lo = hi, stays one
/// point). The draws come from a generator started from `start` (the caller's, taken from
/// the histogram): the same histogram always gets the same statistic.
pub fn anderson_darling(lo: &[f64], hi: &[f64], n: &[f64], cdf: impl Fn(f64) -> f64, start: u64) -> f64 {
    let mut rng = fastrand::Rng::with_seed(start);
    let mut z: Vec<f64> = Vec::new();
    for ((&a, &b), &c) in lo.iter().zip(hi).zip(n) {
        let (fa, fb) = (cdf(a), cdf(b));
        for _ in 0..c as usize {
            let f = fa + rng.f64() * (fb - fa);
            z.push(f.clamp(1e-300, 1.0 - 1e-16));
        }
    }
    z.sort_by(f64::total_cmp);
    let k = z.len();
    if k == 0 {
        return f64::NAN;
    }
    let kf = k as f64;
    let mut s = 0.0;
    for i in 0..k {
        s += (2.0 * i as f64 + 1.0) * (z[i].ln() + (1.0 - z[k - 1 - i]).ln());
    }
    -kf - s / kf
}

/// The p-value of A² for a GPD of shape `xi` with both parameters estimated.
pub fn anderson_darling_p(a2: f64, xi: f64) -> f64 {
    super::ad_table::p_value(a2, xi)
}

/// A series sorted once for the rank tests: its order (indices by ascending value) and each
/// value's average rank (1-based, ties sharing the mean of their ranks).
pub struct Ranked {
    values: Vec<u64>,
    order: Vec<usize>,
    pub ranks: Vec<f64>,
}

impl Ranked {
    pub fn new(values: Vec<u64>) -> Ranked {
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_unstable_by_key(|&i| values[i]);
        let ranks = average_ranks(&order, |a, b| values[a] == values[b]);
        Ranked { values, order, ranks }
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The two-sample Kolmogorov–Smirnov statistic D of the values before `split` against those
    /// from it, and its asymptotic p-value (Kolmogorov's distribution with Stephens's
    /// small-sample correction); from the one sort.
    pub fn halves_ks(&self, split: usize) -> (f64, f64) {
        let (na, nb) = (split as f64, (self.len() - split) as f64);
        if na == 0.0 || nb == 0.0 {
            return (0.0, 1.0);
        }
        let (mut a, mut b, mut d) = (0usize, 0usize, 0.0f64);
        let mut i = 0;
        while i < self.order.len() {
            // (a group of equal values moves both empirical distributions at once)
            let v = self.values[self.order[i]];
            while i < self.order.len() && self.values[self.order[i]] == v {
                if self.order[i] < split {
                    a += 1;
                } else {
                    b += 1;
                }
                i += 1;
            }
            d = d.max((a as f64 / na - b as f64 / nb).abs());
        }
        let ne = na * nb / (na + nb);
        let lambda = (ne.sqrt() + 0.12 + 0.11 / ne.sqrt()) * d;
        (d, kolmogorov_sf(lambda))
    }
}

/// The average rank (1-based) of each value, from `order` (the values' indices in ascending
/// order) and which values are `equal`: ties share the mean of their ranks.
fn average_ranks(order: &[usize], equal: impl Fn(usize, usize) -> bool) -> Vec<f64> {
    let mut ranks = vec![0.0; order.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && equal(order[j + 1], order[i]) {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = avg;
        }
        i = j + 1;
    }
    ranks
}

/// Average ranks (1-based) of `x`, ties sharing the mean of their ranks.
pub fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    average_ranks(&order, |a, b| x[a] == x[b])
}

/// Ljung–Box Q over `lags` lags of the ranks of `x`, and its p-value (χ² with `lags` degrees of
/// freedom). Ranks: one hypervisor spike must not make a series look correlated.
pub fn ljung_box(x: &[f64], lags: usize) -> (f64, f64) {
    ljung_box_of_ranks(&ranks(x), lags)
}

/// [`ljung_box`] of ranks already taken.
pub fn ljung_box_of_ranks(r: &[f64], lags: usize) -> (f64, f64) {
    let m = r.len() as f64;
    let mean = r.iter().sum::<f64>() / m;
    let d: Vec<f64> = r.iter().map(|v| v - mean).collect();
    let c0: f64 = d.iter().map(|v| v * v).sum();
    if c0 == 0.0 {
        return (0.0, 1.0);
    }
    let mut q = 0.0;
    for lag in 1..=lags {
        let c: f64 = d.iter().zip(&d[lag..]).map(|(a, b)| a * b).sum();
        let rho = c / c0;
        q += rho * rho / (m - lag as f64);
    }
    q *= m * (m + 2.0);
    (q, chi2_sf(q, lags as f64))
}

/// Spearman's rank correlation of `x` with time, and the two-sided p-value of no trend (normal
/// approximation, z = ρ·√(m − 1)).
pub fn trend(x: &[f64]) -> (f64, f64) {
    trend_of_ranks(&ranks(x))
}

/// [`trend`] of ranks already taken.
pub fn trend_of_ranks(r: &[f64]) -> (f64, f64) {
    let m = r.len() as f64;
    let mean = (m + 1.0) / 2.0;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (i, v) in r.iter().enumerate() {
        let (a, b) = (i as f64 + 1.0 - mean, v - mean);
        sxy += a * b;
        sxx += a * a;
        syy += b * b;
    }
    if syy == 0.0 {
        return (0.0, 1.0);
    }
    let rho = sxy / (sxx * syy).sqrt();
    let z = rho * (m - 1.0).sqrt();
    (rho, 2.0 * normal_sf(z.abs()))
}

/// The two-sample Kolmogorov–Smirnov statistic D of `a` and `b`, and its asymptotic p-value
/// (Kolmogorov's distribution with Stephens's small-sample correction).
pub fn two_sample_ks(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let v = a[i].min(b[j]);
        while i < a.len() && a[i] <= v {
            i += 1;
        }
        while j < b.len() && b[j] <= v {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    let ne = na * nb / (na + nb);
    let lambda = (ne.sqrt() + 0.12 + 0.11 / ne.sqrt()) * d;
    (d, kolmogorov_sf(lambda))
}

/// P(K > λ) for Kolmogorov's distribution.
fn kolmogorov_sf(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut s = 0.0;
    for j in 1..=100 {
        let t = (-2.0 * (j * j) as f64 * lambda * lambda).exp();
        s += if j % 2 == 1 { t } else { -t };
        if t < 1e-12 {
            break;
        }
    }
    (2.0 * s).clamp(0.0, 1.0)
}

/// Pearson's χ² test that counts `observed` came at rates proportional to `exposure`, and its
/// p-value (χ² with one fewer degrees of freedom than there are groups).
pub fn same_rates(observed: &[f64], exposure: &[f64]) -> (f64, f64) {
    let total: f64 = observed.iter().sum();
    let all: f64 = exposure.iter().sum();
    if total == 0.0 || all == 0.0 || observed.len() < 2 {
        return (0.0, 1.0);
    }
    let mut x2 = 0.0;
    for (o, e) in observed.iter().zip(exposure) {
        let expected = total * e / all;
        if expected > 0.0 {
            x2 += (o - expected).powi(2) / expected;
        }
    }
    (x2, chi2_sf(x2, observed.len() as f64 - 1.0))
}

pub fn chi2_sf(x: f64, dof: f64) -> f64 {
    match ChiSquared::new(dof) {
        Ok(d) if x.is_finite() => d.sf(x.max(0.0)),
        _ => 0.0,
    }
}

pub fn normal_sf(z: f64) -> f64 {
    Normal::standard().sf(z)
}

/// P(X ≥ k) for X binomial of `n` trials of probability `p` (the dashboard's test of a
/// regression: the values over a cut that fall to the latest run).
pub fn binomial_at_least(k: u64, n: u64, p: f64) -> f64 {
    use statrs::distribution::{Binomial, DiscreteCDF};
    if k == 0 {
        return 1.0;
    }
    match Binomial::new(p.clamp(0.0, 1.0), n) {
        Ok(b) => b.sf(k - 1),
        Err(_) => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_share_ties() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
    }

    #[test]
    fn a_rising_series_has_a_trend_and_a_shuffled_one_none() {
        let rising: Vec<f64> = (0..100).map(|i| i as f64 + ((i * 7919) % 13) as f64).collect();
        assert!(trend(&rising).1 < 1e-6);
        let flat: Vec<f64> = (0..100).map(|i| ((i * 7919) % 101) as f64).collect();
        assert!(trend(&flat).1 > 0.05, "{:?}", trend(&flat));
    }

    #[test]
    fn ljung_box_sees_a_correlated_series() {
        // A slow wave: each value like the last.
        let wave: Vec<f64> = (0..200).map(|i| ((i as f64) / 10.0).sin()).collect();
        assert!(ljung_box(&wave, 10).1 < 1e-6);
        // (a hash of the index: values without order)
        let mix = |i: u64| {
            let mut z = i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) >> 11
        };
        let scrambled: Vec<f64> = (0..200u64).map(|i| mix(i) as f64).collect();
        assert!(ljung_box(&scrambled, 10).1 > 0.01, "{:?}", ljung_box(&scrambled, 10));
    }

    #[test]
    fn the_halves_from_one_sort_are_the_two_sample_test() {
        let x: Vec<u64> = (0..301u64).map(|i| (i * 7919) % 1000 + if i >= 150 { 200 } else { 0 }).collect();
        let r = Ranked::new(x.clone());
        let f: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let (a, b) = f.split_at(150);
        assert_eq!(r.halves_ks(150), two_sample_ks(a, b));
        assert_eq!(r.ranks, ranks(&f));
    }

    #[test]
    fn ks_tells_shifted_samples_apart() {
        let a: Vec<f64> = (0..300).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..300).map(|i| i as f64 + 150.0).collect();
        assert!(two_sample_ks(&a, &b).1 < 1e-6);
        let c: Vec<f64> = (0..300).map(|i| i as f64 + 0.5).collect();
        assert!(two_sample_ks(&a, &c).1 > 0.5);
    }

    #[test]
    fn equal_rates_pass_and_different_ones_fail() {
        assert!(same_rates(&[100.0, 102.0], &[1.0, 1.0]).1 > 0.5);
        assert!(same_rates(&[100.0, 300.0], &[1.0, 1.0]).1 < 1e-6);
        assert!((chi2_sf(3.841458820694124, 1.0) - 0.05).abs() < 1e-9);
    }
}
