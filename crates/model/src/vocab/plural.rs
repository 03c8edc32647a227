//! Counts in sentences: "1 period", "2 periods", "0 periods". Every sentence that puts a number
//! before a noun says it through here, so that a run of one period, one CPU or one warm-up
//! cycle never reads "1 periods".

use std::fmt;

/// `n` and the noun, singular for exactly one: `Count(1, "period")` shows "1 period",
/// `Count(3, "period")` "3 periods". Nouns whose plural is not `-s` are named by [`count_of`].
#[derive(Debug, Clone, Copy)]
pub struct Count<'a>(pub u64, pub &'a str);

impl fmt::Display for Count<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.0, noun(self.0, self.1))
    }
}

/// The noun for `n` of it: `one` for exactly one, else its plural (`-s`; `-es` after s, x, z, ch
/// and sh; `-ies` after a consonant and y; the same word for "series"; a name in capitals, as
/// CPU or IRQ, takes `s`).
pub fn noun(n: u64, one: &str) -> String {
    if n == 1 {
        return one.to_string();
    }
    plural(one)
}

/// The plural of `one`.
pub fn plural(one: &str) -> String {
    let lower = one.to_ascii_lowercase();
    if lower.ends_with("series") {
        return one.to_string();
    }
    let before_y = one.len().checked_sub(2).and_then(|i| one.as_bytes().get(i)).copied();
    if lower.ends_with('y') && before_y.is_some_and(|c| !b"aeiouAEIOU".contains(&c)) {
        return format!("{}ies", &one[..one.len() - 1]);
    }
    if ["s", "x", "z", "ch", "sh"].iter().any(|e| lower.ends_with(e)) && !one.chars().all(|c| c.is_ascii_uppercase()) {
        return format!("{one}es");
    }
    format!("{one}s")
}

/// `n` and the noun, with its plural named: `count_of(2, "child", "children")`.
pub fn count_of(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(Count(1, "period").to_string(), "1 period");
        assert_eq!(Count(0, "period").to_string(), "0 periods");
        assert_eq!(Count(2, "warm-up period").to_string(), "2 warm-up periods");
        assert_eq!(Count(1, "CPU").to_string(), "1 CPU");
        assert_eq!(Count(4, "CPU").to_string(), "4 CPUs");
        assert_eq!(Count(3, "entry").to_string(), "3 entries");
        assert_eq!(Count(3, "day").to_string(), "3 days");
        assert_eq!(Count(2, "series").to_string(), "2 series");
        assert_eq!(Count(2, "process").to_string(), "2 processes");
        assert_eq!(Count(2, "patch").to_string(), "2 patches");
        assert_eq!(count_of(1, "child", "children"), "1 child");
        assert_eq!(count_of(5, "child", "children"), "5 children");
    }
}
