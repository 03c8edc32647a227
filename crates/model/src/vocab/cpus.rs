//! CPU lists in the kernel's notation (`0,2-3`), as used by `--cpus`, `taskset -c` and
//! `/sys/devices/system/cpu/online`. Pure parsing; checking against the online CPUs happens
//! when the plan is resolved against the audited system.

use super::Error;
/// Parses a CPU list such as `0,2-3` into a sorted, de-duplicated list of CPU numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, Error> {
    parse_cpu_list_text(text).map_err(Error::Invalid)
}

/// [`parse_cpu_list`], its failure as text.
fn parse_cpu_list_text(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!("'{text}' has an empty element"));
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let lo: usize = lo.parse().map_err(|_| format!("'{part}' is not a CPU number or range"))?;
        let hi: usize = hi.parse().map_err(|_| format!("'{part}' is not a CPU number or range"))?;
        if hi < lo {
            return Err(format!("range '{part}' ends before it starts"));
        }
        if hi >= 4096 {
            return Err(format!("CPU {hi} is beyond any machine's CPU numbers"));
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats a CPU list compactly in the kernel's notation (`0-3,6`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse_cpu_list("0,2-3"), Ok(vec![0, 2, 3]));
        assert_eq!(parse_cpu_list("3,1,1"), Ok(vec![1, 3]));
        assert_eq!(parse_cpu_list("0-1\n"), Ok(vec![0, 1]));
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("1,,2").is_err());
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(format_cpu_list(&[1]), "1");
    }
}
