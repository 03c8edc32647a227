//! Every probe by name: parsing `--measure NAME[:options][@CPUS]` (the syntax is the registry's;
//! each probe's module parses its own options, once, without touching the system) and building
//! the probe for a run's timing. Adding a probe means its module and one line in `PROBES`;
//! nothing else names it.

use super::options::{Given, ProbeOptions};
use super::{event, noise, period, timer, timerlat, udp, wakeup, Class, Figure, Missed, Offer, Plugin, Probe};
use crate::result::RunResult;
use crate::vocab::cpus::parse_cpu_list;
use std::sync::Arc;

pub use super::options::RunTiming;

/// Every probe, in the order help and summaries list them.
const PROBES: &[Plugin] =
    &[timer::PLUGIN, timerlat::PLUGIN, period::PLUGIN, wakeup::PLUGIN, noise::PLUGIN, udp::PLUGIN, event::PLUGIN];

/// The probe `rtgauge run` measures with when no `--measure` is given: the first.
const DEFAULT: &Plugin = &PROBES[0];

/// A `--measure` as typed, parsed: which probe, its options (typed by the probe's module), on
/// which CPUs (`None`: every measured CPU).
#[derive(Debug, Clone)]
pub struct MeasureSpec {
    pub text: String,
    pub name: &'static str,
    pub options: Arc<dyn ProbeOptions>,
    pub cpus: Option<Vec<usize>>,
}

/// Two specs are the same when they say the same (the options are parsed from the text).
impl PartialEq for MeasureSpec {
    fn eq(&self, other: &MeasureSpec) -> bool {
        (&self.text, self.name, &self.cpus) == (&other.text, other.name, &other.cpus)
    }
}

impl Eq for MeasureSpec {}

fn plugin(name: &str) -> Option<&'static Plugin> {
    PROBES.iter().find(|e| e.name == name)
}

/// The probe `rtgauge run` measures with when no `--measure` is given.
pub fn default_spec() -> MeasureSpec {
    parse(DEFAULT.name).expect("the default probe parses")
}

/// Every series probe `name` may report, in any of its shapes (empty: one, unnamed), or `None`
/// for no such probe.
pub fn series_of(name: &str) -> Option<Vec<&'static str>> {
    let entry = plugin(name)?;
    let mut all: Vec<&'static str> = Vec::new();
    for s in entry.shapes.iter().flat_map(|shape| shape.iter()) {
        if !all.contains(s) {
            all.push(s);
        }
    }
    Some(all)
}

/// Whether `series` is a headline of probe `name`: the first series of one of its shapes, or
/// the only, unnamed one (`None`) of a shape that has no names.
pub fn is_headline(name: &str, series: Option<&str>) -> bool {
    let Some(entry) = plugin(name) else { return false };
    entry.shapes.iter().any(|shape| shape.first().copied() == series)
}

/// What a missed one of probe `name`'s results is (a period for a probe not known).
pub fn missed_of(name: &str) -> Missed {
    plugin(name).map_or(Missed::Period, |e| e.missed)
}

/// The kind of published figures series `series` of probe `name` is placed among, if any.
pub fn published(name: &str, series: Option<&str>) -> Option<Class> {
    plugin(name).and_then(|e| (e.published)(series))
}

/// Every probe's own section of the summary of `r`, in the registry's order (each says nothing
/// when `r` has no results of it).
pub fn summaries(r: &RunResult) -> String {
    PROBES.iter().filter_map(|e| e.summary).map(|section| section(r)).collect()
}

/// The probe that measures what another tool (`cyclictest`, `oslat`) measures: its files import
/// as that probe's results. A tool no probe names is taken for the default probe's.
pub fn of_tool(tool: &str) -> &'static str {
    PROBES.iter().find(|e| e.foreign.contains(&tool)).unwrap_or(DEFAULT).name
}

/// The RT priority series `series` of probe `name` ran at, as the probe's stored `settings`
/// say (see [`Plugin::series_priority`]; a probe not known: its `priority=`, if any); `None`: at
/// the run's.
pub fn series_priority(name: &str, settings: &[String], series: Option<&str>) -> Option<i32> {
    plugin(name).map_or_else(|| super::priority_setting(settings, series), |e| (e.series_priority)(settings, series))
}

/// Whether probe `name`'s stored `settings` say it swept its rate (see [`Plugin::swept`]).
pub fn swept(name: &str, settings: &[String]) -> bool {
    plugin(name).is_some_and(|e| (e.swept)(settings))
}

/// How the first probe that gives `figure` gives it (see [`Offer`]), if any does.
pub fn offering(figure: Figure) -> Option<Offer> {
    PROBES.iter().flat_map(|e| e.offers).find(|o| o.figure == figure).copied()
}

/// The names of every probe, for help and messages.
pub fn names() -> Vec<&'static str> {
    PROBES.iter().map(|e| e.name).collect()
}

/// `--measure`'s help: the syntax, then every probe with what it measures and its options.
pub fn measure_help() -> String {
    let probes: Vec<String> = PROBES.iter().map(|e| (e.help)()).collect();
    let d = DEFAULT.name;
    format!(
        "What to measure, repeatable: a probe with options and CPUs, NAME[:key=value,...][@CPUS], e.g. \
         '{d}:interval=500us@0-1'. Probes: {} [default: {d} on every measured CPU]",
        probes.join(", ")
    )
}

/// Parses `NAME[:key=value,...][@CPUS]`.
pub fn parse(text: &str) -> Result<MeasureSpec, crate::vocab::Error> {
    parse_text(text).map_err(crate::vocab::Error::Invalid)
}

/// [`parse`], its failure as text.
fn parse_text(text: &str) -> Result<MeasureSpec, String> {
    let t = text.trim();
    let (body, cpus) = match t.rsplit_once('@') {
        Some((b, c)) => (b, Some(parse_cpu_list(c).map_err(|e| format!("--measure '{t}': {e}; e.g. timer@0-1"))?)),
        None => (t, None),
    };
    let (name, opts) = body.split_once(':').unwrap_or((body, ""));
    let entry = plugin(name.trim())
        .ok_or_else(|| format!("--measure '{t}': unknown probe '{}'; the probes are {}", name.trim(), names().join(", ")))?;
    let mut options = Vec::new();
    for o in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let (k, v) = o.split_once('=').unwrap_or((o, ""));
        options.push((k.trim().to_string(), v.trim().to_string()));
    }
    // An option given twice would leave one of its values unused, unsaid.
    if let Some((k, _)) = options.iter().find(|(k, _)| options.iter().filter(|(o, _)| o == k).count() > 1) {
        return Err(format!("--measure '{t}': option '{k}' is given twice; give each option once"));
    }
    let parsed = (entry.parse)(&Given { text: t, name: entry.name, summary: entry.options, options: &options })?;
    // What depends on the run's timing is checked now against a placeholder (a minute), so a
    // mistake fails before anything runs; the run's own timing is checked when it is resolved.
    parsed.bind(t, RunTiming { interval_ns: 1_000_000, warmup_ns: 0, total_ns: 60_000_000_000 })?;
    Ok(MeasureSpec { text: t.to_string(), name: entry.name, options: parsed, cpus })
}

/// Builds the probe of `spec` for the run's timing.
pub fn build(spec: &MeasureSpec, timing: RunTiming) -> Result<Arc<dyn Probe>, crate::vocab::Error> {
    spec.options.bind(&spec.text, timing)
}

impl MeasureSpec {
    /// The probe's own interval (its `interval=` option, or its default), if it has one; else it
    /// follows the run's.
    pub fn own_interval_ns(&self) -> Option<u64> {
        self.options.interval_ns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Schedule;

    #[test]
    fn measure_specs_parse_and_check_their_options() {
        let s = parse("timer:interval=500us@0-1").unwrap();
        assert_eq!((s.name, s.cpus.clone()), ("timer", Some(vec![0, 1])));
        let p = build(&s, RunTiming { interval_ns: 1_000_000, warmup_ns: 1_000_000, total_ns: 3_000_000 }).unwrap();
        assert_eq!(p.schedule(), Schedule { interval_ns: 500_000, warmup_periods: 2, periods: 6 });
        assert!(parse("nosuch").unwrap_err().contains("unknown probe 'nosuch'"));
        assert!(parse("timer:speed=9").unwrap_err().contains("no option 'speed'"));
        assert!(parse("timer:interval=fast").unwrap_err().contains("interval=fast"));
        assert!(parse("timer@x").unwrap_err().contains("timer@0-1"));
        assert_eq!(default_spec().name, timer::NAME);
    }

    #[test]
    fn event_sources_parse_and_bad_ones_say_what_to_write() {
        let t = RunTiming { interval_ns: 1_000_000, warmup_ns: 0, total_ns: 3_000_000 };
        let p = build(&parse("event:gpio=gpiochip0:17,edge=both,bias=pull-up@1").unwrap(), t).unwrap();
        assert_eq!(p.settings(), ["interval=1 ms", "gpio=/dev/gpiochip0:17", "edge=both", "bias=pull-up"]);
        assert!(p.series().is_empty());
        let p = build(&parse("event:uio=/dev/uio0,ack=0:0x64=1").unwrap(), t).unwrap();
        assert_eq!(p.settings(), ["interval=1 ms", "uio=/dev/uio0", "ack=0:0x64=0x1"]);
        assert_eq!(p.series(), ["interval"]);
        for (bad, says) in [
            ("event", "needs its source"),
            ("event:gpio=/dev/gpiochip0", "not CHIP:LINE"),
            ("event:gpio=/dev/gpiochip0:x", "not CHIP:LINE"),
            ("event:gpio=/dev/gpiochip0:1,edge=up", "edge=up"),
            ("event:gpio=/dev/gpiochip0:1,uio=/dev/uio0", "not both"),
            ("event:gpio=/dev/gpiochip0:1,ack=0:0x64=1", "ack= is for a UIO"),
            ("event:uio=/dev/uio0,edge=rising", "are for a GPIO line"),
            ("event:uio=/dev/uio0,bias=pull-up", "are for a GPIO line"),
            ("event:gpio=/dev/gpiochip0:1,bias=up", "bias=up is not pull-up"),
            ("event:uio=/dev/uio0,ack=9:0x64=1", "BAR:OFFSET=VALUE"),
            ("event:uio=/dev/uio0,ack=0:0x64=0x100000000", "BAR:OFFSET=VALUE"),
            ("event:uio=", "needs the device"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    /// The result's schema names every probe and every series a probe reports, so a document
    /// with a new probe's results validates (`docs/result-schema.json`: `config.probes[].name`,
    /// and `probes[].probe` and `probes[].series`, defined once in `$defs/probe_result`).
    #[test]
    fn the_result_schema_names_every_probe_and_series() {
        let schema: serde_json::Value = serde_json::from_str(include_str!("../../../../docs/result-schema.json")).unwrap();
        let listed = |pointer: &str| {
            let values = schema.pointer(pointer).and_then(|v| v.as_array()).unwrap_or_else(|| panic!("no enum at {pointer}"));
            let mut names: Vec<String> = values.iter().map(|v| v.as_str().unwrap().to_string()).collect();
            names.sort();
            names
        };
        let mut probes: Vec<String> = names().into_iter().map(String::from).collect();
        probes.sort();
        let mut series: Vec<String> = names().into_iter().filter_map(series_of).flatten().map(String::from).collect();
        series.sort();
        series.dedup();
        assert_eq!(listed("/properties/config/properties/probes/items/properties/name/enum"), probes);
        assert_eq!(listed("/$defs/probe_result/properties/probe/enum"), probes);
        assert_eq!(listed("/$defs/probe_result/properties/series/enum"), series);
    }

    /// Places outside a probe's module and the registry that name a probe or a series, each
    /// anchored to its line: (path from the crate's root; the line's trimmed text, or a part of
    /// it that no other line of the file has; what is named there; why: the same word for
    /// something else). An entry exempts that naming on that line only.
    const NAMED_ELSEWHERE: &[(&str, &str, &str, &str)] = &[
        ("src/load/spec.rs", "\"period\" => {", "\"period\"", "the cyclic load's own option, period="),
        // The udp-echo command is the UDP probe's other end, and runs its echo loop.
        ("src/commands/udp_echo.rs", "let plan = probe::udp::EchoPlan", "probe::udp", "udp-echo runs the UDP probe's echo"),
        ("src/commands/udp_echo.rs", "probe::udp::serve(", "probe::udp", "udp-echo runs the UDP probe's echo"),
        ("src/load/watchdog.rs", "join(\"task\")", "\"task\"", "a process's threads, /proc/PID/task"),
        // A scenario file's `[probes.timer]` holds the run's own settings under the timer's name.
        ("src/scenario/file.rs", "\"probes.timer.interval\"", "\"timer.…\"", "the run's interval, in [probes.timer]"),
        ("src/scenario/file.rs", "\"probes.timer.priority\"", "\"timer.…\"", "the run's priority, in [probes.timer]"),
        ("src/scenario/file.rs", "\"probes.timer.policy\"", "\"timer.…\"", "the run's policy, in [probes.timer]"),
        // Examples in the help, written as a user would type them.
        (
            "src/commands/args.rs",
            "rtgauge run --measure timer@0 --measure wakeup:via=mq",
            "\"timer@…\"",
            "an example in run's help",
        ),
        (
            "src/commands/args.rs",
            "rtgauge run --measure timer@0 --measure wakeup:via=mq",
            "\"wakeup:…\"",
            "an example in run's help",
        ),
        (
            "src/commands/args.rs",
            "rtgauge run --measure timer@0 --measure wakeup:via=mq",
            "\"wakeup.…\"",
            "an example in run's help",
        ),
        ("src/commands/args.rs", "rtgauge run --measure udp:target=BOARD_B:9000", "\"udp:…\"", "an example in udp-echo's help"),
        ("src/scenario/require.rs", "'timer.max<1ms'", "\"timer.…\"", "an example in --require's help"),
        ("src/scenario/require.rs", "'wakeup.task.p99<50us'", "\"wakeup.…\"", "an example in --require's help"),
        ("src/scenario/require.rs", "'wakeup.rate>=20000'", "\"wakeup.…\"", "an example in --require's help"),
        // Words timerlat's series share with the kernel's and other tools' vocabularies.
        ("src/audit/checks/cpu.rs", "json!({\"irq\": i.number", "\"irq\"", "an interrupt's number in the audit's JSON"),
        (
            "src/audit/checks/kernel.rs",
            "let rtla: Vec<&str> = [\"timerlat\"",
            "\"timerlat\"",
            "the kernel's tracer, as the audit lists it",
        ),
        ("src/interchange/cyclictest.rs", "\"thread\": threads,", "\"thread\"", "a key of cyclictest's JSON"),
        ("src/interchange/foreign.rs", "\"thread\" => doc.threads", "\"thread\"", "a key of cyclictest's JSON"),
        // (an empty anchor: the whole file, which speaks the kernel's vocabulary of what ran)
        ("src/trace/analysis.rs", "", "\"irq\"", "a traced interrupt, as the analysis tags it"),
        ("src/trace/analysis.rs", "", "\"thread\"", "a traced thread, as the analysis tags it"),
        ("src/trace/mod.rs", "", "\"irq\"", "a traced interrupt, as the trace tags it"),
        ("src/trace/mod.rs", "", "\"thread\"", "a traced thread, as the trace tags it"),
        ("src/trace/mod.rs", "", "\"timerlat\"", "the kernel's tracer, as the trace lists it"),
    ];

    /// A file's text as the rule reads it: per line, its code (comments dropped, each string or
    /// character literal left as `""`); the whole code so read; and its string literals.
    struct Lexed {
        code: Vec<String>,
        all: String,
        literals: Vec<Literal>,
    }

    /// A string literal: the line it starts on (0-based), its content as written, and where it
    /// stands in [`Lexed::all`] (what precedes it tells what it is an argument of).
    struct Literal {
        line: usize,
        text: String,
        at: usize,
    }

    /// Where a string literal opens at `i` (`"`, `b"`, `r"`, `br#"`, ...): the index of its
    /// opening quote, whether it is raw, and its hashes.
    fn string_opens(chars: &[char], i: usize) -> Option<(usize, bool, usize)> {
        if i.checked_sub(1).is_some_and(|p| chars[p].is_alphanumeric() || chars[p] == '_') {
            return None;
        }
        let mut j = i;
        if matches!(chars[j], 'b' | 'c') {
            j += 1;
        }
        let raw = chars.get(j) == Some(&'r');
        if raw {
            j += 1;
        }
        let hashes = chars[j.min(chars.len())..].iter().take_while(|&&c| raw && c == '#').count();
        (chars.get(j + hashes) == Some(&'"')).then_some((j + hashes, raw, hashes))
    }

    /// Splits `text` into code and string literals: `//` and nested `/* */` comments, `"…"` with
    /// escapes, raw and byte strings (`r#"…"#`), and character literals (`'"'`, `'{'`) told from
    /// lifetimes.
    fn lex(text: &str) -> Lexed {
        let chars: Vec<char> = text.chars().collect();
        let mut lexed = Lexed { code: vec![String::new()], all: String::new(), literals: Vec::new() };
        let (mut i, mut line) = (0, 0);
        let newline = |lexed: &mut Lexed, line: &mut usize| {
            lexed.code.push(String::new());
            lexed.all.push('\n');
            *line += 1;
        };
        while i < chars.len() {
            let (c, next) = (chars[i], chars.get(i + 1).copied());
            if c == '\n' {
                newline(&mut lexed, &mut line);
                i += 1;
            } else if c == '/' && next == Some('/') {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            } else if c == '/' && next == Some('*') {
                let mut depth = 0;
                while i < chars.len() {
                    match (chars[i], chars.get(i + 1)) {
                        ('/', Some('*')) => (depth, i) = (depth + 1, i + 2),
                        ('*', Some('/')) => (depth, i) = (depth - 1, i + 2),
                        (d, _) => {
                            if d == '\n' {
                                newline(&mut lexed, &mut line);
                            }
                            i += 1;
                        }
                    }
                    if depth == 0 {
                        break;
                    }
                }
            } else if let Some((quote, raw, hashes)) = string_opens(&chars, i) {
                let (start, mut text) = (line, String::new());
                i = quote + 1;
                while let Some(&d) = chars.get(i) {
                    if d == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#')) {
                        i += 1 + hashes;
                        break;
                    }
                    // An escape is kept as written; the character it escapes never closes.
                    let len = if !raw && d == '\\' { 2 } else { 1 };
                    for &e in &chars[i..(i + len).min(chars.len())] {
                        if e == '\n' {
                            lexed.code.push(String::new());
                            line += 1;
                        }
                        text.push(e);
                    }
                    i += len;
                }
                lexed.literals.push(Literal { line: start, text, at: lexed.all.len() });
                lexed.all += "\"\"";
                lexed.code[line] += "\"\"";
            } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
                // A character literal (a lifetime has no closing quote after one character).
                i += if next == Some('\\') { 3 } else { 2 };
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                lexed.all += "\"\"";
                lexed.code[line] += "\"\"";
            } else {
                lexed.all.push(c);
                lexed.code[line].push(c);
                i += 1;
            }
        }
        lexed
    }

    /// Whether a literal after `before` is the noun `Count(<expr>, "noun")` counts: its second
    /// argument.
    fn counted(before: &str) -> bool {
        let Some(s) = before.trim_end().strip_suffix(',') else { return false };
        let mut depth = 0;
        for (at, c) in s.char_indices().rev() {
            match c {
                ')' | ']' | '}' => depth += 1,
                '(' | '[' | '{' if depth > 0 => depth -= 1,
                '(' => {
                    let callee = &s[..at];
                    return callee.ends_with("Count")
                        && !callee[..callee.len() - 5].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_');
                }
                '[' | '{' | ',' | ';' if depth == 0 => return false,
                _ => {}
            }
        }
        false
    }

    /// Whether literal `k` of `lits`, the word `word`, is a noun: counted (`Count(n, "period")`)
    /// or beside its plural (`if n == 1 { "period" } else { "periods" }`).
    fn noun(lexed: &Lexed, k: usize, word: &str) -> bool {
        let (lits, plural) = (&lexed.literals, format!("{word}s"));
        counted(&lexed.all[..lits[k].at])
            || k.checked_sub(1).is_some_and(|p| lits[p].text == plural)
            || lits.get(k + 1).is_some_and(|n| n.text == plural)
    }

    /// The places in `lexed` (on the lines `keep` accepts) that name probe `name`, with their line
    /// (0-based): a path to its module (`probe::udp`, `super::udp`, or the name in a
    /// `probe::{...}` / `super::{...}` group), its `NAME`, the name as a string literal unless it
    /// is a noun (see [`noun`]), or the name leading `--measure`'s or `--require`'s syntax inside a
    /// literal (`wakeup:rate=sweep`, `timer.p99<50us`, `timer@0`).
    fn probe_named(lexed: &Lexed, name: &str, keep: &dyn Fn(usize) -> bool) -> Vec<(usize, String)> {
        let word = |s: &str, at: usize| {
            let after = s[at + name.len()..].chars().next();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        };
        let mut found = Vec::new();
        for (n, code) in lexed.code.iter().enumerate().filter(|&(n, _)| keep(n)) {
            for prefix in ["probe::", "super::"] {
                for (at, _) in code.match_indices(&format!("{prefix}{name}")) {
                    if word(code, at + prefix.len()) {
                        found.push((n, format!("{prefix}{name}")));
                    }
                }
                for (at, _) in code.match_indices(&format!("{prefix}{{")) {
                    let group = &code[at + prefix.len() + 1..];
                    let group = &group[..group.find('}').unwrap_or(group.len())];
                    if group.split([',', ' ']).any(|item| item == name || item.starts_with(&format!("{name}::"))) {
                        found.push((n, format!("{prefix}{{{name}}}")));
                    }
                }
            }
            if code.contains(&format!("{name}::NAME")) {
                found.push((n, format!("{name}::NAME")));
            }
        }
        let lits = &lexed.literals;
        for (k, lit) in lits.iter().enumerate().filter(|(_, l)| keep(l.line)) {
            if lit.text == name && !noun(lexed, k, name) {
                found.push((lit.line, format!("\"{name}\"")));
            }
            for (at, _) in lit.text.match_indices(name) {
                let starts = !lit.text[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-');
                let mut rest = lit.text[at + name.len()..].chars();
                let (sep, then) = (rest.next(), rest.next());
                let syntax = match sep {
                    Some(':' | '.') => then.is_some_and(|c| c.is_alphanumeric()),
                    Some('@') => true,
                    _ => false,
                };
                if starts && syntax {
                    let line = lit.line + lit.text[..at].matches('\n').count();
                    found.push((line, format!("\"{name}{}…\"", sep.unwrap_or(' '))));
                }
            }
        }
        found
    }

    /// The places in `lexed` (on the lines `keep` accepts) that name series `series` as a string
    /// literal, unless it is a noun (see [`noun`]).
    fn series_named(lexed: &Lexed, series: &str, keep: &dyn Fn(usize) -> bool) -> Vec<(usize, String)> {
        let lits = &lexed.literals;
        (0..lits.len())
            .filter(|&k| keep(lits[k].line) && lits[k].text == series && !noun(lexed, k, series))
            .map(|k| (lits[k].line, format!("\"{series}\"")))
            .collect()
    }

    /// The places in `line` (code, not a comment) that name probe `name` (see [`probe_named`]).
    fn names_in(line: &str, name: &str) -> Vec<String> {
        probe_named(&lex(line), name, &|_| true).into_iter().map(|(_, what)| what).collect()
    }

    /// The lines (0-based) of a file's unit tests: each `#[cfg(test)] mod NAME { ... }`, to the
    /// brace that closes it (code after it is checked).
    fn test_lines(lexed: &Lexed) -> Vec<std::ops::Range<usize>> {
        let code = &lexed.code;
        let mut ranges = Vec::new();
        let mut n = 0;
        while n < code.len() {
            if code[n].trim() != "#[cfg(test)]" {
                n += 1;
                continue;
            }
            let mut m = n + 1;
            while m < code.len() && (code[m].trim().is_empty() || code[m].trim_start().starts_with("#[")) {
                m += 1;
            }
            let opens = code.get(m).is_some_and(|l| {
                let l = l.trim_start();
                (l.starts_with("mod ") || l.starts_with("pub mod ") || l.starts_with("pub(crate) mod ")) && l.contains('{')
            });
            if !opens {
                n += 1;
                continue;
            }
            let mut depth = 0i64;
            let mut end = code.len();
            for (k, l) in code.iter().enumerate().skip(m) {
                depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
                if depth <= 0 {
                    end = k + 1;
                    break;
                }
            }
            ranges.push(n..end);
            n = end;
        }
        ranges
    }

    /// Every naming in file `path` of a probe outside its module and the registry, or of a
    /// series outside `src/probe/`, outside the file's unit tests and comments: (line, 1-based;
    /// what).
    fn named_in(path: &str, text: &str) -> Vec<(usize, String)> {
        let lexed = lex(text);
        let tests = test_lines(&lexed);
        let keep = |n: usize| !tests.iter().any(|r| r.contains(&n));
        let mut found = Vec::new();
        for name in names() {
            if !own(path, name) {
                found.extend(probe_named(&lexed, name, &keep));
            }
        }
        if !path.starts_with("src/probe/") {
            let mut all: Vec<&str> = Vec::new();
            for s in names().into_iter().filter_map(series_of).flatten() {
                if !all.contains(&s) {
                    all.push(s);
                }
            }
            for s in all {
                found.extend(series_named(&lexed, s, &keep));
            }
        }
        found.sort();
        found.into_iter().map(|(n, what)| (n + 1, what)).collect()
    }

    /// The entry of `table` that exempts `what` on `line` of file `path`, if any.
    fn exempt<'a>(
        table: &'a [(&'a str, &'a str, &'a str, &'a str)],
        path: &str,
        line: &str,
        what: &str,
    ) -> Option<&'a (&'a str, &'a str, &'a str, &'a str)> {
        table.iter().find(|&&(p, anchor, w, _)| p == path && w == what && line.trim().contains(anchor))
    }

    /// Whether `path` (from the crate's root) is probe `name`'s own: its module, or the registry.
    fn own(path: &str, name: &str) -> bool {
        path == "src/probe/registry.rs"
            || path == format!("src/probe/{name}.rs")
            || path.starts_with(&format!("src/probe/{name}/"))
    }

    /// Every `.rs` file under `dir`, with its path from the crate's root; but a module's unit
    /// tests in a file of their own (`tests.rs`, declared `#[cfg(test)] mod tests;`).
    fn sources(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(root, &path, out);
            } else if path.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }

    /// Adding a probe means its module and one line in `PROBES`: no other file names a probe
    /// (its module's path, its `NAME`, its name as a string literal or leading `--measure`'s or
    /// `--require`'s syntax in one), and no file outside `src/probe/` names a series of one, outside
    /// unit tests (each `#[cfg(test)] mod`, to its closing brace), comments and [`NAMED_ELSEWHERE`]
    /// (each entry one line). Stored and imported results reach a probe's kind through the
    /// registry (`published`, `missed_of`, `of_tool`, `series_priority`, `swept`, `offering`), by
    /// name.
    #[test]
    fn no_probe_is_named_outside_its_module_and_the_registry() {
        // Every crate of the workspace, each file named by its module's path ("src/load/spec.rs"
        // for crates/measure/src/load/spec.rs: the modules' names are unique in the workspace).
        let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        let mut crates = vec![workspace.clone()];
        crates.extend(std::fs::read_dir(workspace.join("crates")).unwrap().map(|e| e.unwrap().path()));
        for krate in &crates {
            let mut found = Vec::new();
            sources(krate, &krate.join("src"), &mut found);
            files.extend(found);
        }
        assert!(crates.len() >= 8 && files.len() > 100, "read {} files of {} crates", files.len(), crates.len());
        files.sort();
        let mut named = Vec::new();
        let mut used = vec![0; NAMED_ELSEWHERE.len()];
        for (path, text) in &files {
            let lines: Vec<&str> = text.lines().collect();
            for (n, what) in named_in(path, text) {
                let line = lines.get(n - 1).copied().unwrap_or("");
                match exempt(NAMED_ELSEWHERE, path, line, &what) {
                    Some(e) => used[NAMED_ELSEWHERE.iter().position(|x| std::ptr::eq(x, e)).unwrap()] += 1,
                    None => named.push(format!("{path}:{n}: {what}")),
                }
            }
        }
        assert!(named.is_empty(), "probes or series named outside their module and the registry:\n{}", named.join("\n"));
        for (&(path, anchor, what, _), used) in NAMED_ELSEWHERE.iter().zip(used) {
            let text = &files.iter().find(|(p, _)| p == path).unwrap().1;
            let lines = if anchor.is_empty() { 1 } else { text.lines().filter(|l| l.trim().contains(anchor)).count() };
            assert_eq!(lines, 1, "NAMED_ELSEWHERE: '{anchor}' is on {lines} lines of {path}, not one");
            assert!(used >= 1, "NAMED_ELSEWHERE: {what} on '{anchor}' in {path} is never exempted: the entry is stale");
        }
    }

    #[test]
    fn the_rule_finds_each_way_of_naming_a_probe() {
        let found = |line| names_in(line, "timer");
        assert_eq!(found("use crate::probe::timer;"), ["probe::timer"]);
        assert_eq!(found("use crate::probe::{event, timer, udp};"), ["probe::{timer}"]);
        assert_eq!(found("use super::{timer::missed_after, Handoff};"), ["super::{timer}"]);
        assert_eq!(found("if p.probe == crate::probe::timer::NAME {"), ["probe::timer", "timer::NAME"]);
        assert_eq!(found("        probe: \"timer\","), ["\"timer\""]);
        assert!(found("use crate::probe::timers;").is_empty());
        assert!(found("// the timer probe, \"timer\"").is_empty());
        assert!(found("sys::timer_slack(); let t = \"timer wake-up\";").is_empty());
        assert!(names_in("Count(n, \"period\")", "period").is_empty());
        assert!(names_in("if n == 1 { \"period\" } else { \"periods\" }", "period").is_empty());

        // (a) Only the noun `Count(..)` counts is exempt, not the rest of its line.
        assert_eq!(names_in("p == \"udp\" && Count(1, \"x\").to_string() == \"y\"", "udp"), ["\"udp\""]);
        assert_eq!(names_in("(Count(n.max(1), \"period\"), \"period\")", "period"), ["\"period\""]);
        assert_eq!(names_in("f(\"period\", Count(n, \"period\"))", "period"), ["\"period\""]);
        assert!(names_in("crate::vocab::Count(a.unserved(), \"period\"),", "period").is_empty());
        assert_eq!(names_in("NoCount(n, \"period\")", "period"), ["\"period\""]);
        // ... nor a literal beside any plural but its own.
        assert_eq!(names_in("if n == 1 { \"period\" } else { \"cycles\" }", "period"), ["\"period\""]);

        // (b) Production code after a test module is checked; the module's own lines are not,
        // whatever braces its literals and comments hold.
        let file = "fn a() {}\n\
                    #[cfg(test)]\n\
                    mod tests {\n\
                    \x20   fn f() { let s = \"}}\"; let c = '}'; /* } */ let t = \"wakeup\"; }\n\
                    }\n\
                    pub const X: &str = \"wakeup\";\n";
        assert_eq!(named_in("src/report/x.rs", file), [(6, "\"wakeup\"".to_string())]);
        let tests_only = "#[cfg(test)]\n#[allow(dead_code)]\nmod tests {\n    const T: &str = \"wakeup\";\n}\n";
        assert!(named_in("src/report/x.rs", tests_only).is_empty());
        // A string over several lines, a raw string and a char literal of a quote keep the
        // lines and literals straight.
        let file = "let a = \"one \\\n  two\"; let q = '\"';\nlet r = r#\"say \"x\"\"#;\nlet b = \"udp\";\n";
        assert_eq!(named_in("src/report/x.rs", file), [(4, "\"udp\"".to_string())]);

        // (c) A series of a probe as a literal outside src/probe/, and a probe's name leading
        // `--measure`'s or `--require`'s syntax inside a literal.
        let code = "Some(n) if matches!(p.series.as_deref(), Some(\"task\" | \"chain\")) => n - 1,";
        assert_eq!(named_in("src/interchange/x.rs", code), [(1, "\"chain\"".to_string()), (1, "\"task\"".to_string())]);
        assert!(named_in("src/probe/x.rs", code).is_empty(), "src/probe/ knows its series");
        assert_eq!(names_in("\"rate is a sweep's; add --measure wakeup:rate=sweep\"", "wakeup"), ["\"wakeup:…\""]);
        assert_eq!(names_in("\"e.g. 'period:interval=10ms'\"", "period"), ["\"period:…\""]);
        assert_eq!(names_in("\"--require timer.p99<50us\"", "timer"), ["\"timer.…\""]);
        assert_eq!(names_in("\"e.g. timer@0-1\"", "timer"), ["\"timer@…\""]);
        assert!(names_in("\"each period. The period: 10 ms; a sub-period:x\"", "period").is_empty(), "prose is not syntax");

        // (d) An exemption holds for its line alone, not for the same naming elsewhere in the file.
        let table = [("src/load/x.rs", "\"period\" => {", "\"period\"", "the load's own option")];
        assert!(exempt(&table, "src/load/x.rs", "            \"period\" => {", "\"period\"").is_some());
        assert!(exempt(&table, "src/load/x.rs", "if probe == \"period\" {", "\"period\"").is_none());
        assert!(exempt(&table, "src/load/y.rs", "\"period\" => {", "\"period\"").is_none());
        assert!(exempt(&table, "src/load/x.rs", "\"period\" => { probe::period::f() }", "probe::period").is_none());
    }
}
