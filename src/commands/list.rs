//! `rtgauge list`: a line per stored run (or JSON), filtered by host, board, kernel, scenario,
//! label, verdict and date, every filter given together; the table shows the newest 100 unless
//! `--limit N` or `--all` says (and how many older ones match).

use super::args::ListArgs;
use crate::report::{out, summary};
use crate::store::{self, Filter};
use crate::vocab::units::us;
use anyhow::Result;

/// `rtgauge list`.
pub fn list(a: &ListArgs) -> Result<u8> {
    let since = a.since.as_deref().map(since_rfc3339).transpose()?;
    let filter = Filter {
        host: a.host.clone(),
        board: a.board.clone(),
        kernel: a.kernel.clone(),
        scenario: a.scenario.clone(),
        label: a.label.clone(),
        verdict: a.verdict.clone(),
        since,
        until: None,
        before_id: None,
        // The table shows the newest runs unless told: a lab's store holds 100 000 of them.
        newest: if a.all { None } else { a.limit.or((!a.json).then_some(SHOWN)) },
    };
    let (rows, more) = match store::open_existing(a.store.db.as_deref()).map_err(anyhow::Error::msg)? {
        Some(s) => {
            let rows = s.list(&filter).map_err(anyhow::Error::msg)?;
            // How many older ones match too (counted only when the bound was reached).
            let more = match filter.newest {
                Some(n) if rows.len() as u64 >= n && !a.json => s.count(&filter).map_err(anyhow::Error::msg)? - n,
                _ => 0,
            };
            (rows, more)
        }
        None => (Vec::new(), 0),
    };
    if a.json {
        out::json(&rows)?;
        return Ok(0);
    }
    if rows.is_empty() {
        let filtered = [&a.host, &a.board, &a.kernel, &a.scenario, &a.label, &a.verdict, &a.since].iter().any(|f| f.is_some());
        let matching = if filtered { " that match" } else { "" };
        out::text(&format!("no runs stored{matching}\n"))?;
        return Ok(0);
    }
    // The runs of a continuous measurement (`run --rotate`) are one series: a column says
    // which and where, when any run shown has one.
    let series = rows.iter().any(|r| r.series.is_some());
    let cells = rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                r.id.to_string(),
                r.started_at.chars().take(19).collect::<String>().replace('T', " "),
                cut(r.label.as_deref().unwrap_or_default()),
                cut(&r.board),
                cut(&r.host),
                cut(&r.kernel),
                cut(&r.preemption),
                cut(r.scenario.as_deref().unwrap_or_default()),
                if r.imported_from.is_some() { format!("{} (imported)", r.probes) } else { r.probes.clone() },
                r.worst_ns.map_or("-".into(), us),
                if r.status == "complete" { r.verdict.clone() } else { format!("{} ({})", r.verdict, r.status) },
            ];
            if series {
                cells.push(match (&r.series, r.part) {
                    (Some(s), Some(p)) => format!("{} #{p}", s.get(..8).unwrap_or(s)),
                    _ => String::new(),
                });
            }
            cells
        })
        .collect();
    let mut header =
        vec!["id", "date (UTC)", "label", "board", "host", "kernel", "preemption", "scenario", "probes", "worst µs", "verdict"];
    if series {
        header.push("series");
    }
    out::text(&summary::table(&header, 9..10, cells))?;
    if more > 0 {
        out::text(&format!(
            "{} not shown (the table holds the newest {}); --limit N shows the newest N, --all every one.\n",
            crate::vocab::Count(more, "older run"),
            rows.len()
        ))?;
    }
    Ok(0)
}

/// How many runs the table shows unless `--limit` or `--all` says.
const SHOWN: u64 = 100;

/// The most of a name (a label, a board, a host, a kernel release, a scenario: text from the
/// documents) a line of `list` shows (`list --json` and `show --json` give it whole): a name of
/// 10 000 characters keeps the table readable.
const NAME_SHOWN: usize = 32;

/// A name as `list` shows it: up to [`NAME_SHOWN`] characters, longer ones cut with `…`.
fn cut(name: &str) -> String {
    if name.chars().count() <= NAME_SHOWN {
        return name.to_string();
    }
    name.chars().take(NAME_SHOWN - 1).chain(['…']).collect()
}

/// `--since`'s value as an RFC 3339 time ([`crate::vocab::when::moment`]).
pub(super) fn since_rfc3339(v: &str) -> Result<String> {
    crate::vocab::when::moment("--since", v).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::since_rfc3339;

    /// On a 32-bit system (armv7) the system clock's type ends in 2038: a full date-time past it
    /// was refused as "not a date".
    #[test]
    fn since_takes_dates_and_times_past_2038_on_every_system() {
        assert_eq!(since_rfc3339("2999-01-01").unwrap(), "2999-01-01T00:00:00.000Z");
        assert_eq!(since_rfc3339("2999-01-01T08:00:00Z").unwrap(), "2999-01-01T08:00:00.000Z");
        assert_eq!(since_rfc3339("2999-01-01T08:00:00+02:00").unwrap(), "2999-01-01T06:00:00.000Z");
        assert_eq!(since_rfc3339("2999-01-01T08:00:00.25").unwrap(), "2999-01-01T08:00:00.250Z");
        assert_eq!(since_rfc3339("2026-11-01 08:00:00").unwrap(), "2026-11-01T08:00:00.000Z");
        for bad in ["2999-13-01", "2026-02-30", "2027-02-29", "2026-04-31", "yesterday", "2026-11-01T25:00:00Z", ""] {
            assert!(since_rfc3339(bad).is_err(), "{bad}");
        }
        // Ages in the one duration grammar of every option, weeks included; another unit is named.
        assert!(since_rfc3339("2w").is_ok() && since_rfc3339("1.5h").is_ok());
        for (bad, unit) in [("1y", "'y'"), ("1h30m", "'h30m'"), ("7days", "'days'")] {
            let e = since_rfc3339(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("unknown unit {unit}")) && e.contains("give an age"), "{bad}: {e}");
        }
    }
}
