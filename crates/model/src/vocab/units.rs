//! Parsing and printing of the quantities users type: durations (`100us`, `0.5ms`, `24h`),
//! percentages (`25%`) and counts. Pure functions, no system access.

use std::fmt;

/// Nanoseconds per unit, for the units accepted in durations.
const UNITS: &[(&str, f64)] = &[
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
    ("m", 60e9),
    ("min", 60e9),
    ("h", 3600e9),
    ("d", 86400e9),
    ("w", 7.0 * 86400e9),
];

/// Why a duration could not be parsed; the message names the problem, the caller adds the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("'{0}' is negative")]
    Negative(String),
    #[error("'{0}' is not a duration")]
    NotADuration(String),
    #[error("'{0}' has no unit")]
    NoUnit(String),
    #[error("'{0}' has an unknown unit '{1}' (use ns, us, ms, s, m, h, d or w)")]
    UnknownUnit(String, String),
    #[error("'{0}' is too large")]
    TooLarge(String),
}

/// The one grammar of a duration, shared by [`parse_duration_ns`] and [`parse_age`]: a number
/// (digits with at most one point) and a unit of [`UNITS`]; zero needs no unit, and a bare
/// number means `bare_unit_ns` when given. Returns the number as typed and the unit's scale.
fn split(text: &str, bare_unit_ns: Option<f64>) -> Result<(&str, f64), DurationError> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(DurationError::Negative(text.to_string()));
    }
    let at = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(at);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err(DurationError::NotADuration(text.to_string()));
    }
    let unit = unit.trim();
    let scale = if unit.is_empty() && num.bytes().all(|b| b == b'0' || b == b'.') {
        1.0 // zero needs no unit
    } else if unit.is_empty() {
        bare_unit_ns.ok_or_else(|| DurationError::NoUnit(text.to_string()))?
    } else {
        UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, s)| *s)
            .ok_or_else(|| DurationError::UnknownUnit(text.to_string(), unit.to_string()))?
    };
    Ok((num, scale))
}

/// Parses a duration with a unit into nanoseconds: `100us`, `0.5ms`, `1ms`, `10s`, `5m`, `24h`.
/// A bare number is rejected unless `bare_unit_ns` gives the unit it means.
pub fn parse_duration_ns(text: &str, bare_unit_ns: Option<f64>) -> Result<u64, DurationError> {
    let (num, scale) = split(text, bare_unit_ns)?;
    let value: f64 = num.parse().map_err(|_| DurationError::NotADuration(text.to_string()))?;
    let ns = (value * scale).round();
    if !ns.is_finite() || ns > u64::MAX as f64 / 2.0 {
        return Err(DurationError::TooLarge(text.to_string()));
    }
    Ok(ns as u64)
}

/// Parses an age, a duration back from now with a unit (`--since 7d`, `12h`, `2w`), in the same
/// grammar and units as [`parse_duration_ns`] but up to [`std::time::Duration`]'s range (an age
/// reaching before 1970 is the caller's to refuse, in words). A whole number is counted exactly.
pub fn parse_age(text: &str) -> Result<std::time::Duration, DurationError> {
    let (num, scale) = split(text, None)?;
    let too_large = || DurationError::TooLarge(text.to_string());
    let ns: u128 = if num.contains('.') {
        let value: f64 = num.parse().map_err(|_| DurationError::NotADuration(text.to_string()))?;
        let ns = (value * scale).round();
        if !ns.is_finite() || ns >= u128::MAX as f64 {
            return Err(too_large());
        }
        ns as u128
    } else {
        // Every unit is a whole number of nanoseconds.
        let value: u128 = num.parse().map_err(|_| too_large())?;
        value.checked_mul(scale as u128).ok_or_else(too_large)?
    };
    let secs = u64::try_from(ns / 1_000_000_000).map_err(|_| too_large())?;
    Ok(std::time::Duration::new(secs, (ns % 1_000_000_000) as u32))
}

/// Parses a percentage, `25%` or `25`, into a fraction in (0, 1].
pub fn parse_percent(text: &str) -> Option<f64> {
    let t = text.trim().trim_end_matches('%');
    let v: f64 = t.parse().ok()?;
    (v > 0.0 && v <= 100.0).then_some(v / 100.0)
}

/// A duration in nanoseconds, displayed the way an engineer reads it (`1 ms`, `250 µs`, `1.5 s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nanos(pub u64);

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0 as f64;
        let (v, unit) = if self.0 >= 3_600_000_000_000 && self.0.is_multiple_of(3_600_000_000_000) {
            (ns / 3600e9, "h")
        } else if self.0 >= 60_000_000_000 && self.0.is_multiple_of(60_000_000_000) {
            (ns / 60e9, "min")
        } else if self.0 >= 1_000_000_000 {
            (ns / 1e9, "s")
        } else if self.0 >= 1_000_000 {
            (ns / 1e6, "ms")
        } else if self.0 >= 1_000 {
            (ns / 1e3, "µs")
        } else {
            (ns, "ns")
        };
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        write!(f, "{s} {unit}")
    }
}

/// A duration as an option takes it, to paste (`28m`, `1s`, `1500ms`): the largest unit of the
/// grammar ([`parse_duration_ns`]) that holds it whole.
pub fn arg(ns: u64) -> String {
    const UNITS: [(u64, &str); 6] =
        [(3_600_000_000_000, "h"), (60_000_000_000, "m"), (1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us"), (1, "ns")];
    let (size, unit) = UNITS.iter().find(|(size, _)| ns >= *size && ns.is_multiple_of(*size)).copied().unwrap_or((1, "ns"));
    format!("{}{unit}", ns / size)
}

/// Nanoseconds as microseconds with sub-µs precision, the unit of every latency table.
pub fn us(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

/// The largest latency worth a figure: an hour, the most a latency histogram holds
/// (`result::histogram::HIST_HIGHEST_NS`). A forecast's level past it reads "more than 1 h".
pub const MOST_LATENCY_NS: f64 = 3.6e12;

/// A latency that may be very large (a forecast's level or bound) written as the verdict writes
/// latencies: `183.250us` below a second, `12.5s` up to an hour, `more than 1h` beyond.
pub fn us_or_s(ns: f64) -> String {
    if ns < 1e9 {
        format!("{}us", us(ns.round() as u64))
    } else if ns <= MOST_LATENCY_NS {
        let s = format!("{:.3}", ns / 1e9);
        format!("{}s", s.trim_end_matches('0').trim_end_matches('.'))
    } else {
        // (past an hour, the most a latency histogram holds, a figure says nothing more)
        "more than 1h".to_string()
    }
}

/// A value in µs as [`us`] shows it, or `-` for none.
pub fn opt_us(v: Option<u64>) -> String {
    v.map_or("-".to_string(), us)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration_ns("100us", None), Ok(100_000));
        assert_eq!(parse_duration_ns("100µs", None), Ok(100_000));
        assert_eq!(parse_duration_ns("0.5ms", None), Ok(500_000));
        assert_eq!(parse_duration_ns("1ms", None), Ok(1_000_000));
        assert_eq!(parse_duration_ns("10s", None), Ok(10_000_000_000));
        assert_eq!(parse_duration_ns("5m", None), Ok(300_000_000_000));
        assert_eq!(parse_duration_ns("24h", None), Ok(86_400_000_000_000));
        assert_eq!(parse_duration_ns("250ns", None), Ok(250));
        assert_eq!(parse_duration_ns("7", Some(1e9)), Ok(7_000_000_000));
    }

    #[test]
    fn bad_durations_say_why() {
        assert!(matches!(parse_duration_ns("-1ms", None), Err(DurationError::Negative(_))));
        assert!(matches!(parse_duration_ns("abc", None), Err(DurationError::NotADuration(_))));
        assert!(matches!(parse_duration_ns("10", None), Err(DurationError::NoUnit(_))));
        assert!(matches!(parse_duration_ns("10 parsecs", None), Err(DurationError::UnknownUnit(..))));
        assert!(matches!(parse_duration_ns("1.2.3s", None), Err(DurationError::NotADuration(_))));
        assert!(matches!(parse_duration_ns("99999999999999999999h", None), Err(DurationError::TooLarge(_))));
        assert_eq!(parse_duration_ns("0", None), Ok(0));
    }

    #[test]
    fn ages_in_the_units_of_durations() {
        use std::time::Duration;
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_age("12h"), Ok(Duration::from_secs(12 * 3600)));
        assert_eq!(parse_age("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_age("90m"), Ok(Duration::from_secs(90 * 60)));
        assert_eq!(parse_age("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_age("0"), Ok(Duration::ZERO));
        // Beyond the nanosecond range of the other options, up to Duration's.
        assert_eq!(parse_age("1000000d"), Ok(Duration::from_secs(86_400_000_000)));
        assert_eq!(parse_age("18446744073709551615s"), Ok(Duration::from_secs(u64::MAX)));
        assert!(matches!(parse_age("99999999999999999999d"), Err(DurationError::TooLarge(_))));
        assert!(matches!(parse_age("7"), Err(DurationError::NoUnit(_))));
        assert!(matches!(parse_age("2y"), Err(DurationError::UnknownUnit(..))));
        assert!(matches!(parse_age("-1h"), Err(DurationError::Negative(_))));
        assert!(matches!(parse_age("2026-11-01"), Err(DurationError::UnknownUnit(..))));
    }

    #[test]
    fn percent() {
        assert_eq!(parse_percent("25%"), Some(0.25));
        assert_eq!(parse_percent("50"), Some(0.5));
        assert_eq!(parse_percent("0%"), None);
        assert_eq!(parse_percent("150%"), None);
    }

    #[test]
    fn display() {
        assert_eq!(Nanos(1_000_000).to_string(), "1 ms");
        assert_eq!(Nanos(250_000).to_string(), "250 µs");
        assert_eq!(Nanos(1_500_000_000).to_string(), "1.5 s");
        assert_eq!(Nanos(300_000_000_000).to_string(), "5 min");
        assert_eq!(us(1234), "1.234");
    }

    #[test]
    fn an_options_duration_reads_back_as_itself() {
        for ns in [1, 999, 1_000, 1_500_000, 1_000_000_000, 1_500_000_000, 28 * 60_000_000_000, 7_200_000_000_000, 0] {
            let text = super::arg(ns);
            assert!(!text.contains(' '), "{text}");
            assert_eq!(super::parse_duration_ns(&text, None).unwrap(), ns, "{text}");
        }
        assert_eq!(super::arg(28 * 60_000_000_000), "28m");
    }
}
