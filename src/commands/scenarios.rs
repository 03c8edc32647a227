//! `rtgauge scenarios [NAME]`: the built-in scenarios listed, or one printed as TOML to start
//! a file of one's own.

use crate::report::out;
use crate::scenario;

/// `rtgauge scenarios [NAME]`: the built-in scenarios, or one of them as TOML.
pub fn scenarios(name: Option<&str>) -> anyhow::Result<u8> {
    match name {
        None => {
            let mut list = String::new();
            for (n, text) in scenario::file::BUILT_IN {
                let s = scenario::file::parse(text, n, "built-in")?;
                list += &format!("{n:<12} {}\n", s.description);
            }
            list += "\nRun one with rtgauge run --scenario NAME; print one with rtgauge scenarios NAME to start a file of your own.\n";
            out::text(&list)?;
        }
        Some(n) => match scenario::file::BUILT_IN.iter().find(|(b, _)| *b == n) {
            Some((_, text)) => out::text(text)?,
            None => anyhow::bail!("no built-in scenario '{n}'; rtgauge scenarios lists them"),
        },
    }
    Ok(0)
}
