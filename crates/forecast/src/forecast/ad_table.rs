//! The p-value of the Anderson–Darling statistic A² for a generalised Pareto fit whose scale and
//! shape were both estimated by maximum likelihood: Choulakian & Stephens's asymptotic table
//! ("Goodness-of-fit tests for the generalized Pareto distribution", Technometrics 43(4),
//! 478–484, 2001; Table 2, case 3), its rows by the shape ξ (ξ > 0 a heavy tail; the paper's
//! k is −ξ). Between rows the critical points are interpolated linearly in ξ (beyond the rows,
//! the nearest row's); between columns, log p linearly in A² (beyond the columns, the nearest
//! segment's slope, the p-value kept within [10⁻⁶, 1]).

/// Upper-tail probabilities of the columns.
const P: [f64; 8] = [0.5, 0.25, 0.1, 0.05, 0.025, 0.01, 0.005, 0.001];

/// (ξ, the critical points of A² at each of [`P`]), ξ descending.
const ROWS: [(f64, [f64; 8]); 10] = [
    (0.9, [0.339, 0.471, 0.641, 0.771, 0.905, 1.086, 1.226, 1.559]),
    (0.5, [0.356, 0.499, 0.685, 0.830, 0.978, 1.180, 1.336, 1.707]),
    (0.2, [0.376, 0.534, 0.741, 0.903, 1.069, 1.296, 1.471, 1.893]),
    (0.1, [0.386, 0.550, 0.766, 0.935, 1.110, 1.348, 1.532, 1.966]),
    (0.0, [0.397, 0.569, 0.796, 0.974, 1.158, 1.409, 1.603, 2.064]),
    (-0.1, [0.410, 0.591, 0.831, 1.020, 1.215, 1.481, 1.687, 2.176]),
    (-0.2, [0.426, 0.617, 0.873, 1.074, 1.283, 1.567, 1.788, 2.314]),
    (-0.3, [0.445, 0.649, 0.924, 1.140, 1.365, 1.672, 1.909, 2.475]),
    (-0.4, [0.468, 0.688, 0.985, 1.221, 1.465, 1.799, 2.058, 2.674]),
    (-0.5, [0.496, 0.735, 1.061, 1.321, 1.590, 1.958, 2.243, 2.922]),
];

/// The critical points at shape `xi`.
fn row(xi: f64) -> [f64; 8] {
    let xi = xi.clamp(ROWS[ROWS.len() - 1].0, ROWS[0].0);
    for w in ROWS.windows(2) {
        let ((hi, a), (lo, b)) = (w[0], w[1]);
        if xi <= hi && xi >= lo {
            let t = (hi - xi) / (hi - lo);
            let mut out = [0.0; 8];
            for i in 0..8 {
                out[i] = a[i] + t * (b[i] - a[i]);
            }
            return out;
        }
    }
    ROWS[0].1
}

/// P(A² > `a2`) for a fit of shape `xi`.
pub fn p_value(a2: f64, xi: f64) -> f64 {
    if !a2.is_finite() {
        return 0.0;
    }
    let c = row(xi);
    let seg = (0..7).find(|&i| a2 <= c[i + 1]).unwrap_or(6);
    let (x0, x1) = (c[seg], c[seg + 1]);
    let (l0, l1) = (P[seg].ln(), P[seg + 1].ln());
    let lp = l0 + (a2 - x0) / (x1 - x0) * (l1 - l0);
    lp.exp().clamp(1e-6, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_read_at_its_points_and_between_them() {
        assert!((p_value(0.974, 0.0) - 0.05).abs() < 1e-9);
        assert!((p_value(1.321, -0.5) - 0.05).abs() < 1e-9);
        assert!((p_value(2.064, 0.0) - 0.001).abs() < 1e-9);
        // Halfway between the rows 0 and −0.1 at 5 %: (0.974 + 1.020) / 2.
        assert!((p_value(0.997, -0.05) - 0.05).abs() < 1e-9);
        // Monotone: a larger A² is less likely.
        assert!(p_value(0.5, 0.2) > p_value(0.8, 0.2) && p_value(0.8, 0.2) > p_value(3.0, 0.2));
        assert!(p_value(0.1, 0.0) <= 1.0 && p_value(10.0, 0.0) >= 1e-6);
    }
}
