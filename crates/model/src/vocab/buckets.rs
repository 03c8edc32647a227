//! The bucket bounds of the live latency histogram, as `--metrics-buckets` gives them: a range
//! `FROM..TO` (the 1-2-5 values of every decade within it, FROM and TO included) or a comma list
//! of times, in nanoseconds, ascending.

use super::text::shown;
use super::units::parse_duration_ns;
use super::Error;

/// The default: 1 µs, 2 µs, 5 µs, 10 µs … 1 s, 19 bounds.
pub const DEFAULT: &str = "1us..1s";

/// The most bounds a histogram takes (each is a time series in Prometheus, for every CPU).
pub const MOST_BOUNDS: usize = 100;

/// The largest bound: an hour, the most a latency histogram holds.
const LARGEST_NS: u64 = 3_600_000_000_000;

/// The bounds in nanoseconds, strictly ascending, 1 to [`MOST_BOUNDS`] of them, each from 1 ns to
/// an hour; or a one-line error naming the problem and the fix.
pub fn parse(spec: &str) -> Result<Vec<u64>, Error> {
    parse_text(spec).map_err(Error::Invalid)
}

/// [`parse`], its failure as text.
fn parse_text(spec: &str) -> Result<Vec<u64>, String> {
    let fail = |problem: String, fix: &str| format!("--metrics-buckets '{}': {problem}: {fix}", shown(spec));
    let time = |text: &str| -> Result<u64, String> {
        if text.trim().is_empty() {
            let fix = "write a time for every bound, e.g. --metrics-buckets 10us,50us,1ms or 1us..1s";
            return Err(fail("a bound is empty".into(), fix));
        }
        let ns = parse_duration_ns(text, None)
            .map_err(|e| fail(shown(&e.to_string()).into_owned(), "write each bound as a time, e.g. 10us, 0.5ms or 1s"))?;
        let t = shown(text.trim());
        if ns < 1 {
            return Err(fail(format!("{t} is less than 1ns"), "every bound is at least 1ns, e.g. --metrics-buckets 1us..1s"));
        }
        if ns > LARGEST_NS {
            return Err(fail(
                format!("{t} is more than an hour"),
                "the histogram holds latencies up to 1h, e.g. --metrics-buckets 1us..1h",
            ));
        }
        Ok(ns)
    };
    if spec.trim().is_empty() {
        return Err(fail("no bounds given".into(), "give a range or a list of times, e.g. --metrics-buckets 1us..1s"));
    }
    let bounds = if let Some((from, to)) = spec.split_once("..") {
        if spec.contains(',') {
            return Err(fail(
                "mixes a range and a list".into(),
                "give either FROM..TO or times between commas, e.g. --metrics-buckets 1us..1s",
            ));
        }
        let (from, to) = (time(from)?, time(to)?);
        if from > to {
            return Err(fail(
                "the range ends before it starts".into(),
                "write the smaller time first, e.g. --metrics-buckets 1us..1s",
            ));
        }
        one_two_five(from, to)
    } else {
        let bounds = spec.split(',').map(time).collect::<Result<Vec<u64>, String>>()?;
        if let Some(w) = bounds.windows(2).find(|w| w[0] >= w[1]) {
            let problem =
                format!("is not ascending ({} after {})", crate::vocab::units::Nanos(w[1]), crate::vocab::units::Nanos(w[0]));
            return Err(fail(problem, "list the bounds from smallest to largest, e.g. --metrics-buckets 10us,50us,1ms"));
        }
        bounds
    };
    if bounds.len() > MOST_BOUNDS {
        let problem = format!("{} bounds are too many", bounds.len());
        return Err(fail(problem, "give at most 100, or a range such as --metrics-buckets 1us..1s"));
    }
    Ok(bounds)
}

/// 1, 2 and 5 times every power of ten from `from` to `to`, and `from` and `to` themselves.
fn one_two_five(from: u64, to: u64) -> Vec<u64> {
    let mut bounds = vec![from];
    let mut decade = 1u64;
    while decade <= to {
        bounds.extend([decade, 2 * decade, 5 * decade].into_iter().filter(|&b| from < b && b < to));
        decade = decade.saturating_mul(10);
    }
    if to > from {
        bounds.push(to);
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    #[test]
    fn the_default_is_1_2_5_from_1us_to_1s() {
        let b = parse(DEFAULT).unwrap();
        assert_eq!(b.len(), 19);
        assert_eq!(&b[..4], &[US, 2 * US, 5 * US, 10 * US]);
        assert_eq!(&b[b.len() - 3..], &[200 * MS, 500 * MS, S]);
        assert!(b.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_range_keeps_its_ends() {
        assert_eq!(parse("3us..30us").unwrap(), vec![3 * US, 5 * US, 10 * US, 20 * US, 30 * US]);
        assert_eq!(parse("0.5ms..1ms").unwrap(), vec![500 * US, MS]);
        assert_eq!(parse("1ms..1ms").unwrap(), vec![MS]);
        assert_eq!(parse(" 1ns .. 5ns ").unwrap(), vec![1, 2, 5]);
        assert_eq!(parse("1ns..1h").unwrap().len(), 38 + 1, "1-2-5 from 1 ns up to 2000 s, and 1 h");
        assert_eq!(parse("150us..180us").unwrap(), vec![150 * US, 180 * US]);
    }

    #[test]
    fn a_list_is_taken_as_given() {
        assert_eq!(parse("10us,50us,100us,1ms").unwrap(), vec![10 * US, 50 * US, 100 * US, MS]);
        assert_eq!(parse("250ns").unwrap(), vec![250]);
        assert_eq!(parse("1us, 1.5us ,1h").unwrap(), vec![US, 1_500, 3_600 * S]);
        let most: Vec<String> = (1..=100).map(|i| format!("{i}us")).collect();
        assert_eq!(parse(&most.join(",")).unwrap().len(), 100);
    }

    #[test]
    fn bad_bounds_say_what_and_how() {
        let err = |spec: &str| parse(spec).unwrap_err();
        for (spec, problem) in [
            ("1ms,10us", "'1ms,10us': is not ascending (10 µs after 1 ms): list the bounds from smallest to largest"),
            ("10us,10us", "is not ascending (10 µs after 10 µs)"),
            ("1s..1us", "the range ends before it starts: write the smaller time first"),
            ("0..1s", "0 is less than 1ns"),
            ("0.1ns", "0.1ns is less than 1ns"),
            ("1us..2h", "2h is more than an hour"),
            ("10x", "'10x' has an unknown unit 'x' (use ns, us, ms, s, m, h, d or w): write each bound as a time"),
            ("10", "'10' has no unit"),
            ("-1us..1s", "'-1us' is negative"),
            ("10us,,1ms", "a bound is empty"),
            ("10us,", "a bound is empty"),
            ("", "no bounds given"),
            ("1us..1ms,1s", "mixes a range and a list"),
            ("1us..", "a bound is empty"),
        ] {
            let e = err(spec);
            assert!(e.starts_with(&format!("--metrics-buckets '{spec}': ")), "{e}");
            assert!(e.contains(problem), "{spec}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let many: Vec<String> = (1..=101).map(|i| format!("{i}us")).collect();
        assert!(err(&many.join(",")).contains("101 bounds are too many: give at most 100"));
        assert_eq!(err("\x1b[2J1us"), "--metrics-buckets '\\x1b[2J1us': '\\x1b[2J1us' is not a duration: write each bound as a time, e.g. 10us, 0.5ms or 1s");
    }
}
