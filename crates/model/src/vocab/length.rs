//! How long a run must be, in the words a reader plans a run with: the rule of three (with no
//! value over a bound in n periods, the per-period probability of exceeding it is below 3/n at
//! 95 % confidence: (1 − p)ⁿ = 0.05 gives p ≈ −ln 0.05 / n ≈ 3/n), the periods a claim needs,
//! and long times and large counts written for people.

/// The per-period probability of exceeding a bound no value passed in `n` periods, at 95 %
/// confidence.
pub fn rule_of_three(n: u64) -> f64 {
    3.0 / n.max(1) as f64
}

/// The periods without a value over a bound that support a per-period probability of `p`.
pub fn periods_for(p: f64) -> f64 {
    3.0 / p
}

/// A count with its thousands apart: `1 000 000`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// Two significant digits (at least the whole part): 1.7, 17, 170.
pub fn significant(v: f64) -> String {
    let t = if v < 10.0 { format!("{v:.1}") } else { format!("{v:.0}") };
    t.strip_suffix(".0").map_or(t.clone(), str::to_string)
}

/// A long time as a reader plans a run: two significant digits in s, min, h, days or years.
pub fn span(ns: f64) -> String {
    let s = ns / 1e9;
    if s < 1.0 {
        return super::units::Nanos(ns.max(0.0).round() as u64).to_string();
    }
    let (v, unit) = match s {
        s if s < 60.0 => (s, "s"),
        s if s < 3600.0 => (s / 60.0, "min"),
        s if s < 2.0 * 86400.0 => (s / 3600.0, "h"),
        s if s < 2.0 * 365.25 * 86400.0 => (s / 86400.0, "days"),
        s => (s / (365.25 * 86400.0), "years"),
    };
    format!("{} {unit}", significant(v))
}

/// The settled share (the part of the run since the worst case last rose) as every view writes
/// it, in percent: one decimal below 10 %, whole percent above.
pub fn settled(percent: f64) -> String {
    if percent < 10.0 {
        format!("{percent:.1}")
    } else {
        format!("{percent:.0}")
    }
}

/// A probability written short: `5e-5`, `1.2e-9`, `0.02`.
pub fn probability(p: f64) -> String {
    if p >= 0.01 {
        return significant(p * 100.0).to_string() + " %";
    }
    probability_like(p)
}

/// A number of periods written short: `3 000 000`, or `3e9` from a hundred million.
pub fn periods(n: f64) -> String {
    if n < 1e8 {
        grouped(n.round() as u64)
    } else {
        probability_like(n)
    }
}

/// A number written short in powers of ten: `1.6e6`, `3e9`, `5e-5`.
pub fn probability_like(n: f64) -> String {
    let e = n.log10().floor();
    let m = significant(n / 10f64.powf(e));
    if m == "1" {
        format!("1e{e}")
    } else {
        format!("{m}e{e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_read_as_people_plan_them() {
        assert_eq!(rule_of_three(60_000), 5e-5);
        assert_eq!(periods_for(1e-6), 3_000_000.0);
        assert_eq!(periods(3e6), "3 000 000");
        assert_eq!(periods(3e9), "3e9");
        assert_eq!(span(3e6 * 1e6), "50 min");
        assert_eq!(span(3e9 * 1e6), "35 days");
        assert_eq!(span(3e18), "95 years");
        assert_eq!(probability(5e-5), "5e-5");
        assert_eq!(probability(1.2e-9), "1.2e-9");
        assert_eq!(probability(0.05), "5 %");
    }
}
