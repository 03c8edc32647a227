//! Moments as users write them on the command line and in the dashboard's URLs: a date, a
//! time, or an age counted back from now, as the RFC 3339 text the store compares.

use super::Error;
/// `--since`'s value (and `until`'s): a date (`2026-11-01`), a time (`2026-11-01T08:00:00Z`, with
/// an offset or read as UTC) or an age (`7d`, `2w`) counted back from now, as the RFC 3339 time
/// (UTC, milliseconds) the store compares as text. `what` names the option in errors.
pub fn moment(what: &str, v: &str) -> Result<String, Error> {
    moment_text(what, v).map_err(Error::Invalid)
}

/// [`moment`], its failure as text.
fn moment_text(what: &str, v: &str) -> Result<String, String> {
    let bad = || format!("{what} {v}: not a date (2026-11-01), a time (2026-11-01T08:00:00Z) or an age (7d, 12h)");
    // Dates and times compare as text with the stored RFC 3339 times (UTC), whatever the year: a
    // 32-bit system's clock ends in 2038.
    let b = v.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() == 10 && digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10) {
        // A day the calendar has (not 2026-02-30).
        let exists = chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d").is_ok();
        return if exists { Ok(format!("{v}T00:00:00.000Z")) } else { Err(bad()) };
    }
    let age = crate::vocab::units::parse_age(v);
    // A number followed by a word that is not one of the grammar's units (`1y`, `1h30m`) is an
    // age mistyped: say which unit (a date or time goes on to be read below).
    if let Err(e @ crate::vocab::units::DurationError::UnknownUnit(_, unit)) = &age {
        if unit.starts_with(char::is_alphabetic) {
            return Err(format!("{what} {v}: {e}; give an age (7d, 2w), a date (2026-11-01) or a time (2026-11-01T08:00:00Z)"));
        }
    }
    if let Ok(age) = age {
        // Counted from the epoch in checked arithmetic: an age reaching before 1970 (`1000000d`)
        // or beyond any date is an error, not a panic.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| format!("{what} {v}: the system clock is set before 1970; set it, or give a date"))?;
        let before_1970 =
            || format!("{what} {v}: reaches back before 1970, before any run; give a shorter age or a date, e.g. 2026-11-01");
        let t = now.checked_sub(age).ok_or_else(before_1970)?;
        let t = i64::try_from(t.as_secs())
            .ok()
            .and_then(|s| chrono::DateTime::from_timestamp(s, t.subsec_nanos()))
            .ok_or_else(bad)?;
        return Ok(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    }
    // A time is parsed without the system clock's type (chrono counts in 64 bits): with an
    // offset (RFC 3339), or without one, read as UTC.
    let utc = chrono::DateTime::parse_from_rfc3339(v).map(|t| t.with_timezone(&chrono::Utc)).or_else(|_| {
        ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
            .iter()
            .find_map(|f| chrono::NaiveDateTime::parse_from_str(v, f).ok())
            .map(|t| t.and_utc())
            .ok_or_else(bad)
    })?;
    Ok(utc.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}
