//! Scenario files (TOML): a named, described measurement set-up — duration, probe settings,
//! loads with their phases, requirements — that `rtgauge run --scenario FILE|NAME` runs.
//! Built-in scenarios (one per set-up of the sources: the ARM9/ARM11 paper, the Cortex-A53 slides, the Freescale/OCERA paper) are shipped inside the binary from `scenarios/`.
//! Every value is validated where it stands: an error names the file, the line and the key.
//! Pure: parsing and validation only.

use super::require::parse_requirement;
use super::{PlanError, RunInput};
use crate::load::spec::LoadSpec;
use crate::vocab::cpus::parse_cpu_list;
use crate::vocab::units::{parse_duration_ns, parse_percent};
use serde::Deserialize;
use toml::Spanned;

/// The built-in scenarios: (name, TOML text).
pub const BUILT_IN: &[(&str, &str)] = &[
    ("worst-case", include_str!("../../../../scenarios/worst-case.toml")),
    ("arm-paper", include_str!("../../../../scenarios/arm-paper.toml")),
    ("arm-chain", include_str!("../../../../scenarios/arm-chain.toml")),
    ("cortex-a53", include_str!("../../../../scenarios/cortex-a53.toml")),
    ("firmtimers", include_str!("../../../../scenarios/firmtimers.toml")),
    ("ocera", include_str!("../../../../scenarios/ocera.toml")),
    ("am3356", include_str!("../../../../scenarios/am3356.toml")),
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioToml {
    name: Spanned<String>,
    description: Option<Spanned<String>>,
    duration: Option<Spanned<String>>,
    loops: Option<Spanned<u64>>,
    warmup: Option<Spanned<String>>,
    cpus: Option<Spanned<String>>,
    load_cpus: Option<Spanned<String>>,
    cpu_dma_latency: Option<Spanned<String>>,
    /// The timeline's window (`--window`).
    window: Option<Spanned<String>>,
    mlock: Option<Spanned<bool>>,
    probes: Option<ProbesToml>,
    /// Probes as `--measure` writes them: `measure = ["timer@0-1"]` [default: the timer].
    #[serde(default)]
    measure: Vec<Spanned<String>>,
    #[serde(default)]
    loads: Vec<LoadToml>,
    verdict: Option<VerdictToml>,
    /// `--trace`: `"worst"` or a threshold (`"100us"`).
    trace: Option<Spanned<String>>,
    /// What `--tune` changes for the run: `[tune]` with `all = true` or items set to true.
    tune: Option<std::collections::BTreeMap<String, Spanned<bool>>>,
}

/// `[probes.timer]`: the run's own settings (`--interval`, `--priority`, `--policy`), under the
/// timer probe's name for compatibility with the files written before probes had options; not
/// the timer probe's options, which go in `measure = [...]` like every probe's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProbesToml {
    timer: Option<TimerToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TimerToml {
    interval: Option<Spanned<String>>,
    priority: Option<Spanned<i64>>,
    policy: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadToml {
    spec: Spanned<String>,
    start: Option<Spanned<String>>,
    end: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VerdictToml {
    cycle_time: Option<Spanned<String>>,
    budget: Option<Spanned<String>>,
    #[serde(default)]
    require: Vec<Spanned<String>>,
}

/// A validated scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// Where it came from: `built-in` or the file's path.
    pub source: String,
    /// Its values, as if typed on the command line.
    pub input: RunInput,
}

struct Ctx<'a> {
    origin: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn line(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())].matches('\n').count() + 1
    }
    fn err<T>(&self, span: std::ops::Range<usize>, key: &str, msg: impl std::fmt::Display) -> Result<T, PlanError> {
        Err(PlanError(format!("{}:{}: {key}: {msg}", self.origin, self.line(span.start))))
    }
    fn duration(&self, v: &Option<Spanned<String>>, key: &str, example: &str) -> Result<Option<String>, PlanError> {
        match v {
            None => Ok(None),
            Some(s) => match parse_duration_ns(s.get_ref(), None) {
                Ok(_) => Ok(Some(s.get_ref().clone())),
                Err(e) => self.err(s.span(), key, format!("{e}; e.g. {key} = \"{example}\"")),
            },
        }
    }
    fn cpus(&self, v: &Option<Spanned<String>>, key: &str) -> Result<Option<String>, PlanError> {
        match v {
            None => Ok(None),
            Some(s) if s.get_ref() == "all" => Ok(None),
            Some(s) => match parse_cpu_list(s.get_ref()) {
                Ok(_) => Ok(Some(s.get_ref().clone())),
                Err(e) => self.err(s.span(), key, format!("{e}; e.g. {key} = \"0,2-3\" or \"all\"")),
            },
        }
    }
}

/// Parses and validates a scenario. `origin` names it in errors (a path, or `built-in:NAME`).
pub fn parse(text: &str, origin: &str, source: &str) -> Result<Scenario, PlanError> {
    let cx = Ctx { origin, text };
    let t: ScenarioToml = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(0, |s| cx.line(s.start));
        PlanError(format!("{origin}:{line}: {}", e.message().replace('\n', " ")))
    })?;
    let mut input = RunInput {
        duration: cx.duration(&t.duration, "duration", "10m")?,
        loops: t.loops.as_ref().map(|l| l.get_ref().to_string()),
        cpus: cx.cpus(&t.cpus, "cpus")?,
        load_cpus: cx.cpus(&t.load_cpus, "load_cpus")?,
        no_mlock: t.mlock.as_ref().is_some_and(|m| !*m.get_ref()),
        window: cx.duration(&t.window, "window", "1s")?,
        ..Default::default()
    };
    if let Some(tr) = &t.trace {
        if tr.get_ref() != "worst" {
            input.trace = cx.duration(&t.trace, "trace", "100us")?;
        } else {
            input.trace = Some("worst".into());
        }
    }
    if let Some(tune) = &t.tune {
        let mut items = Vec::new();
        for (k, v) in tune {
            let known = k == "all" || crate::tuning::TuneItem::from_name(k).is_some();
            if !known {
                return cx.err(
                    v.span(),
                    &format!("tune.{k}"),
                    format!("not something --tune changes: use all or {}", crate::tuning::TuneItem::names()),
                );
            }
            if *v.get_ref() {
                items.push(k.clone());
            }
        }
        if !items.is_empty() {
            input.tune = Some(items.join(","));
        }
    }
    for m in &t.measure {
        if let Err(e) = crate::probe::registry::parse(m.get_ref()) {
            return cx.err(m.span(), "measure", e);
        }
        input.measure.push(m.get_ref().clone());
    }
    if let (Some(d), Some(l)) = (&t.duration, &t.loops) {
        let _ = d;
        return cx.err(l.span(), "loops", "both duration and loops given: keep one");
    }
    if let Some(w) = &t.warmup {
        let v = w.get_ref();
        if !v.chars().all(|c| c.is_ascii_digit()) && parse_duration_ns(v, None).is_err() {
            return cx.err(w.span(), "warmup", "neither a time nor a number of samples; e.g. warmup = \"1s\"");
        }
        input.warmup = Some(v.clone());
    }
    if let Some(c) = &t.cpu_dma_latency {
        let v = c.get_ref();
        if v != "off" && parse_duration_ns(v, Some(1e3)).is_err() {
            return cx.err(c.span(), "cpu_dma_latency", "neither a time nor \"off\"; e.g. cpu_dma_latency = \"0\"");
        }
        input.cpu_dma_latency = Some(v.clone());
    }
    if let Some(timer) = t.probes.as_ref().and_then(|p| p.timer.as_ref()) {
        input.interval = cx.duration(&timer.interval, "probes.timer.interval", "1ms")?;
        if let Some(p) = &timer.priority {
            if let Err(e) = crate::vocab::policy::check_rt_priority(*p.get_ref() as i32) {
                return cx.err(p.span(), "probes.timer.priority", format!("{e}; e.g. priority = 80"));
            }
            input.priority = Some(*p.get_ref() as i32);
        }
        if let Some(p) = &timer.policy {
            input.policy = Some(match p.get_ref().as_str() {
                "fifo" => crate::vocab::policy::Policy::Fifo,
                "rr" => crate::vocab::policy::Policy::Rr,
                "other" => crate::vocab::policy::Policy::Other,
                "deadline" => crate::vocab::policy::Policy::Deadline,
                other => return cx.err(p.span(), "probes.timer.policy", format!("'{other}' is not fifo, rr, deadline or other")),
            });
            if input.policy.is_some_and(|p| !p.has_priority()) {
                input.priority = None;
            }
        }
    }
    for (i, l) in t.loads.iter().enumerate() {
        let key = format!("loads[{i}]");
        let mut spec = l.spec.get_ref().clone();
        if l.start.is_some() || l.end.is_some() {
            if spec.contains('@') && !spec.starts_with("cmd") {
                return cx.err(l.spec.span(), &format!("{key}.spec"), "has a phase (@..) and start/end too: keep one");
            }
            let start = cx.duration(&l.start, &format!("{key}.start"), "30s")?.unwrap_or_default();
            let end = cx.duration(&l.end, &format!("{key}.end"), "90s")?.unwrap_or_default();
            spec = format!("{spec}@{start}..{end}");
        }
        if let Err(e) = LoadSpec::parse(&spec) {
            return cx.err(l.spec.span(), &format!("{key}.spec"), e.trim_start_matches("--load "));
        }
        input.load.push(spec);
    }
    if let Some(v) = &t.verdict {
        input.cycle_time = cx.duration(&v.cycle_time, "verdict.cycle_time", "1ms")?;
        if let Some(b) = &v.budget {
            if parse_percent(b.get_ref()).is_none() {
                return cx.err(b.span(), "verdict.budget", "not a percentage between 0 and 100; e.g. budget = \"25%\"");
            }
            input.budget = Some(b.get_ref().clone());
        }
        for r in &v.require {
            if let Err(e) = parse_requirement(r.get_ref()) {
                return cx.err(r.span(), "verdict.require", e);
            }
            input.require.push(r.get_ref().clone());
        }
    }
    Ok(Scenario {
        name: t.name.get_ref().clone(),
        description: t.description.map(|d| d.into_inner()).unwrap_or_default(),
        source: source.to_string(),
        input,
    })
}

/// Whether `--scenario` names a file rather than a built-in scenario: only when written as a
/// path (`./am3356`, `/abs/path`, `lab/x`) or as a TOML file (`x.toml`). A bare name is always a
/// built-in one, so a file of that name that another user left in the current directory is
/// never run in its place.
pub fn names_a_file(name_or_path: &str) -> bool {
    name_or_path.contains('/') || name_or_path.ends_with(".toml")
}

/// Finds a scenario by built-in name, or by file path (see [`names_a_file`]).
pub fn load(name_or_path: &str) -> Result<Scenario, PlanError> {
    if names_a_file(name_or_path) {
        let path = std::path::Path::new(name_or_path);
        let shown = crate::vocab::shown(name_or_path);
        let cannot = |e: &dyn std::fmt::Display| {
            PlanError(format!(
                "--scenario cannot read '{shown}': {e}; give a TOML scenario file (at most {} bytes) or a built-in name \
                 (rtgauge scenarios lists them)",
                super::userfile::SCENARIO_CAP
            ))
        };
        let (text, meta) = super::userfile::read_text_of(path, super::userfile::SCENARIO_CAP).map_err(|e| cannot(&e))?;
        let scenario = parse(&text, name_or_path, name_or_path)?;
        if runs_commands(&scenario.input) {
            // A file that makes rtgauge run commands as root must be as trusted as rtgauge: the
            // file read, judged by its own descriptor's owner and mode.
            if let Err(why) = crate::sys::files::trusted(&meta) {
                return Err(PlanError(format!(
                    "--scenario '{shown}' runs commands (a cmd: load) but {why}: refused, as anyone who can write it could \
                     run commands through rtgauge; make it yours and not writable by others (chown, chmod go-w)"
                )));
            }
        }
        return Ok(scenario);
    }
    match BUILT_IN.iter().find(|(n, _)| *n == name_or_path) {
        Some((n, text)) => parse(text, &format!("built-in:{n}"), "built-in"),
        None => {
            let file_hint = if std::path::Path::new(name_or_path).exists() {
                format!(
                    "; to run the file '{0}' of this directory, write it as a path: --scenario ./{0}",
                    crate::vocab::shown(name_or_path)
                )
            } else {
                String::new()
            };
            Err(PlanError(format!(
                "--scenario '{}' is not a built-in scenario ({}){file_hint}; see rtgauge scenarios",
                crate::vocab::shown(name_or_path),
                BUILT_IN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )))
        }
    }
}

/// Whether a scenario's loads run commands of its own (`cmd:`, `cmd-once:`).
fn runs_commands(input: &RunInput) -> bool {
    input
        .load
        .iter()
        .flat_map(|v| crate::load::spec::split_list(v))
        .any(|s| s.trim_start().starts_with("cmd:") || s.trim_start().starts_with("cmd-once:"))
}

impl RunInput {
    /// This input with every value given in `over` replacing its own; requirements add up.
    pub fn overlay(mut self, over: RunInput) -> RunInput {
        macro_rules! take {
            ($($f:ident),*) => { $( if over.$f.is_some() { self.$f = over.$f; } )* };
        }
        take!(
            interval,
            warmup,
            priority,
            policy,
            dl_runtime,
            dl_deadline,
            cpus,
            cycle_time,
            budget,
            json,
            cpu_dma_latency,
            load_cpus,
            window,
            tune,
            trace,
            rotate,
            metrics,
            metrics_file,
            metrics_buckets
        );
        if over.duration.is_some() || over.loops.is_some() {
            self.duration = over.duration;
            self.loops = over.loops;
        }
        if over.policy.is_some_and(|p| !p.has_priority()) && over.priority.is_none() {
            self.priority = None;
        }
        if !over.load.is_empty() {
            self.load = over.load;
        }
        if !over.measure.is_empty() {
            self.measure = over.measure;
        }
        self.require.extend(over.require);
        self.no_mlock |= over.no_mlock;
        self.quiet |= over.quiet;
        self.metrics_public |= over.metrics_public;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::RunPlan;

    #[test]
    fn every_built_in_scenario_is_valid() {
        for (name, _) in BUILT_IN {
            let s = load(name).unwrap();
            assert_eq!(&s.name, name);
            assert!(!s.description.is_empty());
            RunPlan::from_input(&s.input).unwrap();
        }
    }

    #[test]
    fn a_tune_table_names_what_to_tune() {
        let t = parse("name = \"x\"\n[tune]\nshield = true\nrt-throttling = true\ngovernor = false\n", "f", "f").unwrap();
        assert_eq!(t.input.tune.as_deref(), Some("rt-throttling,shield"));
        let plan = crate::scenario::RunPlan::from_input(&t.input).unwrap();
        assert_eq!(plan.tune, vec![crate::tuning::TuneItem::RtThrottling, crate::tuning::TuneItem::Shield]);
        let all = parse("name = \"x\"\n[tune]\nall = true\n", "f", "f").unwrap();
        assert_eq!(crate::scenario::RunPlan::from_input(&all.input).unwrap().tune.len(), crate::tuning::TuneItem::ALL.len());
        let e = parse("name = \"x\"\n[tune]\nturbo = true\n", "f.toml", "f.toml").unwrap_err().0;
        assert!(e.starts_with("f.toml:3: tune.turbo:") && e.contains("shield"), "{e}");
        assert!(parse("name = \"x\"\n[tune]\nshield = \"yes\"\n", "f", "f").is_err());
    }

    #[test]
    fn errors_name_the_file_line_and_key() {
        let text = "name = \"x\"\nduration = \"10m\"\n\n[probes.timer]\ninterval = \"fast\"\n";
        let e = parse(text, "my.toml", "my.toml").unwrap_err().0;
        assert!(e.starts_with("my.toml:5: probes.timer.interval:"), "{e}");
        let text = "name = \"x\"\n[[loads]]\nspec = \"vm:bytes=-1M\"\n";
        let e = parse(text, "f.toml", "f.toml").unwrap_err().0;
        assert!(e.starts_with("f.toml:3: loads[0].spec:") && e.contains("negative"), "{e}");
        let text = "name = \"x\"\ncolour = \"red\"\n";
        let e = parse(text, "f.toml", "f.toml").unwrap_err().0;
        assert!(e.starts_with("f.toml:2:") && e.contains("colour"), "{e}");
        let text = "name = \"x\"\n[verdict]\nrequire = [\"max<1us\", \"bogus<1us\"]\n";
        let e = parse(text, "f.toml", "f.toml").unwrap_err().0;
        assert!(e.starts_with("f.toml:3: verdict.require:") && e.contains("not a metric"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn command_line_overrides_the_scenario() {
        let s = load("arm-paper").unwrap();
        let merged = s.input.clone().overlay(RunInput {
            duration: Some("5s".into()),
            require: vec!["missed==0".into()],
            ..Default::default()
        });
        let plan = RunPlan::from_input(&merged).unwrap();
        assert_eq!(plan.length, crate::scenario::RunLength::Duration(5_000_000_000));
        assert_eq!(plan.priority, 80);
        assert!(plan.requirements.len() > s.input.require.len());
    }
}
