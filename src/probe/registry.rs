//! Every probe by name: parsing `--measure NAME[:options][@CPUS]` (the syntax is the registry's;
//! each probe's module parses its own options, once, without touching the system) and building
//! the probe for a run's timing. Adding a probe means its module and one line in `PROBES`;
//! nothing else names it.

use super::options::{Given, ProbeOptions};
use super::{event, noise, period, timer, udp, wakeup, Class, Missed, Plugin, Probe};
use crate::result::RunResult;
use crate::vocab::cpus::parse_cpu_list;
use std::sync::Arc;

pub use super::options::RunTiming;

/// Every probe, in the order help and summaries list them.
const PROBES: &[Plugin] = &[timer::PLUGIN, period::PLUGIN, wakeup::PLUGIN, noise::PLUGIN, udp::PLUGIN, event::PLUGIN];

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

impl crate::result::ProbeResult {
    /// Whether this entry is its probe's headline series (see [`is_headline`]): a stored entry
    /// names its probe and series, and which series leads is the probe's to say.
    pub fn is_headline(&self) -> bool {
        is_headline(&self.probe, self.series.as_deref())
    }
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
pub fn parse(text: &str) -> Result<MeasureSpec, String> {
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
pub fn build(spec: &MeasureSpec, timing: RunTiming) -> Result<Arc<dyn Probe>, String> {
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

    /// Places outside a probe's module and the registry that may name a probe, with why: the
    /// same word for something else. (path from the crate's root, the name as written)
    const NAMED_ELSEWHERE: &[(&str, &str, &str)] = &[
        ("src/load/spec.rs", "\"period\"", "the cyclic load's own option, period="),
        // The udp-echo command is the UDP probe's other end, and runs its echo loop.
        ("src/commands/udp_echo.rs", "probe::udp", "udp-echo runs the UDP probe's echo"),
    ];

    /// The places in `line` (code, not a comment) that name probe `name`: a path to its module
    /// (`probe::udp`, `super::udp`, or the name in a `probe::{...}` / `super::{...}` group), its
    /// `NAME`, or the name as a string literal, unless the literal is a noun counted (on a line
    /// with `Count(` or with its plural, `"periods"`).
    fn names_in(line: &str, name: &str) -> Vec<String> {
        let code = line.trim_start();
        if code.starts_with("//") {
            return Vec::new();
        }
        let word = |s: &str, at: usize| {
            let after = s[at + name.len()..].chars().next();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        };
        let mut found = Vec::new();
        for prefix in ["probe::", "super::"] {
            for (at, _) in code.match_indices(&format!("{prefix}{name}")) {
                if word(code, at + prefix.len()) {
                    found.push(format!("{prefix}{name}"));
                }
            }
            for (at, _) in code.match_indices(&format!("{prefix}{{")) {
                let group = &code[at + prefix.len() + 1..];
                let group = &group[..group.find('}').unwrap_or(group.len())];
                if group.split([',', ' ']).any(|item| item == name || item.starts_with(&format!("{name}::"))) {
                    found.push(format!("{prefix}{{{name}}}"));
                }
            }
        }
        if code.contains(&format!("{name}::NAME")) {
            found.push(format!("{name}::NAME"));
        }
        let literal = format!("\"{name}\"");
        let noun = code.contains("Count(") || code.contains(&format!("\"{name}s\""));
        if code.contains(&literal) && !noun {
            found.push(literal);
        }
        found
    }

    /// Whether `path` (from the crate's root) is probe `name`'s own: its module, or the registry.
    fn own(path: &str, name: &str) -> bool {
        path == "src/probe/registry.rs"
            || path == format!("src/probe/{name}.rs")
            || path.starts_with(&format!("src/probe/{name}/"))
    }

    /// Every `.rs` file under `dir`, with its path from the crate's root.
    fn sources(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }

    /// Adding a probe means its module and one line in `PROBES`: no other file names a probe
    /// (its module's path, its `NAME`, its name as a string literal), outside unit tests (from a
    /// `#[cfg(test)] mod` to the end of its file), comments and [`NAMED_ELSEWHERE`]. Stored and
    /// imported results reach a probe's kind through the registry (`published`, `missed_of`,
    /// `of_tool`), by name.
    #[test]
    fn no_probe_is_named_outside_its_module_and_the_registry() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        sources(root, &root.join("src"), &mut files);
        files.sort();
        let mut named = Vec::new();
        for (path, text) in &files {
            let lines: Vec<&str> = text.lines().collect();
            let tests = lines
                .windows(2)
                .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod "))
                .unwrap_or(lines.len());
            for (n, line) in lines[..tests].iter().enumerate() {
                for name in names() {
                    if own(path, name) {
                        continue;
                    }
                    for what in names_in(line, name) {
                        if !NAMED_ELSEWHERE.iter().any(|&(p, w, _)| p == path && w == what) {
                            named.push(format!("{path}:{}: {what}", n + 1));
                        }
                    }
                }
            }
        }
        assert!(named.is_empty(), "probes named outside their module and the registry:\n{}", named.join("\n"));
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
    }
}
