//! Load specifications as users write them: `--load hackbench:groups=10,pipe`,
//! `--load vm:workers=8,bytes=20M@30s..90s`, `--load 'cmd:stress-ng --cpu 2'`. Pure parsing into
//! [`LoadSpec`]; defaults that depend on the machine (CPU count) are filled in by [`LoadSpec::resolve`].

use crate::result::load::{Generator, LoadPolicy};
use crate::vocab::units::{parse_duration_ns, Nanos};
use serde::{Deserialize, Serialize};

/// One load with its place on the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    /// The specification as written.
    pub text: String,
    pub generator: Generator,
    /// Offset from the start of the run at which the load starts (None: before the probes start).
    pub start_ns: Option<u64>,
    /// Offset at which it stops (None: when the probes stop).
    pub end_ns: Option<u64>,
    /// Nice value of the load's processes.
    pub nice: Option<i32>,
    /// Scheduling policy of the load's processes (default SCHED_OTHER).
    pub policy: Option<LoadPolicy>,
}

/// A load's `policy=` value: `other`, `batch`, `idle`, `fifo:N`, `rr:N`.
fn parse_policy(v: &str) -> Option<LoadPolicy> {
    let prio = |p: &str| p.parse::<i32>().ok().and_then(|p| crate::vocab::policy::check_rt_priority(p).ok());
    match v.split_once(':') {
        None => match v {
            "other" => Some(LoadPolicy::Other),
            "batch" => Some(LoadPolicy::Batch),
            "idle" => Some(LoadPolicy::Idle),
            _ => None,
        },
        Some(("fifo", p)) => prio(p).map(LoadPolicy::Fifo),
        Some(("rr", p)) => prio(p).map(LoadPolicy::Rr),
        _ => None,
    }
}

/// The generator names, as typed.
pub const NAMES: &[&str] = &["hackbench", "cpu", "vm", "io", "fork", "proc", "net", "timers", "cmd", "cmd-once"];

/// Parses a size: `4096`, `4K`, `20M`, `1G` (powers of 1024; `B` optional).
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim().trim_end_matches(['B', 'b']);
    let (num, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1u64 << 10),
        'm' | 'M' => (&t[..t.len() - 1], 1 << 20),
        'g' | 'G' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let v: f64 = num.parse().ok()?;
    // Too large saturates at u64::MAX, which every caller's limit refuses by name.
    (v >= 0.0 && v.is_finite()).then_some((v * mult as f64) as u64)
}

/// Limits of what one load may ask for: beyond them a value is a typing error, not a load.
pub const MAX_WORKERS: u32 = 4096;
/// hackbench tasks (groups × fds × 2: senders and receivers).
pub const MAX_HACKBENCH_TASKS: u64 = 65_536;
pub const MAX_TIMERS: u32 = 65_536;
/// Bytes per vm worker, per io file.
pub const MAX_BYTES: u64 = 1 << 40;
/// Bytes of one hackbench message, one io block.
pub const MAX_MESSAGE: u64 = 1 << 30;
/// The largest UDP payload over IPv4.
pub const MAX_DATAGRAM: u64 = 65_507;

fn err(spec: &str, msg: impl std::fmt::Display) -> String {
    format!("--load '{spec}': {msg}")
}

/// Splits a `--load` value into specifications: items separated by commas start a new load
/// when they begin with a generator name, and are options of the previous load otherwise.
/// `cmd:` takes the rest of the value as its command line.
pub fn split_list(value: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = value;
    while !rest.is_empty() {
        let starts_cmd = |s: &str| s.starts_with("cmd:") || s.starts_with("cmd-once:");
        if starts_cmd(rest.trim_start()) {
            out.push(rest.trim().to_string());
            break;
        }
        let (item, tail) = rest.split_once(',').unwrap_or((rest, ""));
        let name = item.trim().split([':', '@']).next().unwrap_or("");
        match out.last_mut() {
            Some(last) if !NAMES.contains(&name) && name != "none" => {
                last.push(',');
                last.push_str(item.trim());
            }
            _ => out.push(item.trim().to_string()),
        }
        rest = tail;
    }
    out
}

/// Splits off a trailing `@START..END` (either side may be empty) from a specification.
fn split_phase(spec: &str) -> Result<(&str, Option<u64>, Option<u64>), String> {
    let Some(at) = spec.rfind('@') else {
        return Ok((spec, None, None));
    };
    let phase = &spec[at + 1..];
    let Some((a, b)) = phase.split_once("..") else {
        // Not a phase (e.g. user@host inside a command line).
        return Ok((spec, None, None));
    };
    let off = |t: &str| -> Result<Option<u64>, String> {
        if t.trim().is_empty() {
            Ok(None)
        } else {
            parse_duration_ns(t, None).map(Some).map_err(|e| err(spec, format!("phase {e}; write @START..END, e.g. @30s..90s")))
        }
    };
    let (start, end) = (off(a)?, off(b)?);
    if let (Some(s), Some(e)) = (start, end) {
        if e <= s {
            return Err(err(spec, format!("the phase ends ({}) before it starts ({}); e.g. @30s..90s", Nanos(e), Nanos(s))));
        }
    }
    Ok((&spec[..at], start, end))
}

fn parse_count(spec: &str, key: &str, v: &str, max: u32) -> Result<u32, String> {
    match v.parse::<u64>() {
        Ok(n) if n > u64::from(max) => Err(err(spec, format!("{key}={v} is more than the limit of {max}"))),
        Ok(n) if n > 0 => Ok(n as u32),
        _ => Err(err(spec, format!("{key}={v} must be a whole number above 0, e.g. {key}=4"))),
    }
}

fn parse_bytes(spec: &str, key: &str, v: &str, max: u64) -> Result<u64, String> {
    if v.trim_start().starts_with('-') {
        return Err(err(spec, format!("{key}={v} is negative; give a size, e.g. {key}=20M")));
    }
    match parse_size(v) {
        Some(n) if n > max => Err(err(spec, format!("{key}={v} is more than the limit of {max} bytes"))),
        Some(n) if n > 0 => Ok(n),
        _ => Err(err(spec, format!("{key}={v} is not a size; give bytes with K, M or G, e.g. {key}=20M"))),
    }
}

impl LoadSpec {
    /// Parses one specification. `0` in a count means "one per CPU" and is resolved later.
    pub fn parse(spec: &str) -> Result<LoadSpec, crate::vocab::Error> {
        Self::parse_text(spec).map_err(crate::vocab::Error::Invalid)
    }

    /// [`Self::parse`], its failure as text.
    fn parse_text(spec: &str) -> Result<LoadSpec, String> {
        let text = spec.trim().to_string();
        let (cmd_name, cmd_rest) = text.split_once(':').unwrap_or((&text, ""));
        if cmd_name == "cmd" || cmd_name == "cmd-once" {
            let (line, start, end) = split_phase(cmd_rest)?;
            let argv = shlex::split(line).ok_or_else(|| err(spec, "unbalanced quotes in the command line"))?;
            if argv.is_empty() {
                return Err(err(spec, "no command given; e.g. --load 'cmd:stress-ng --cpu 2'"));
            }
            return Ok(LoadSpec {
                text: text.clone(),
                generator: Generator::Cmd { argv, restart: cmd_name == "cmd" },
                start_ns: start,
                end_ns: end,
                nice: None,
                policy: None,
            });
        }
        let (body, start, end) = split_phase(&text)?;
        let (name, opts) = body.split_once(':').unwrap_or((body, ""));
        let mut generator = match name {
            "hackbench" => Generator::Hackbench { groups: 10, fds: 20, size: 100, loops: 100, pipe: false, threads: false },
            "cpu" => Generator::Cpu { workers: 0 },
            "vm" => Generator::Vm { workers: 0, bytes: 32 << 20 },
            "io" => Generator::Io { workers: 1, size: 16 << 20, block: 64 << 10 },
            "fork" => Generator::Fork { workers: 1 },
            "proc" => Generator::Proc { workers: 1 },
            "net" => Generator::Net { workers: 1, size: 64, target: None },
            "timers" => Generator::Timers { count: 64, period_ns: 100_000 },
            "" => return Err(err(spec, "empty load; e.g. --load hackbench or --load none")),
            other => return Err(err(spec, format!("unknown generator '{other}'; use one of {}, or none", NAMES.join(", ")))),
        };
        let mut nice = None;
        let mut policy = None;
        let mut seen: Vec<&str> = Vec::new();
        for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            let (k, v) = opt.split_once('=').map_or((opt, ""), |(k, v)| (k.trim(), v.trim()));
            // An option given twice would leave one of its values unused, unsaid.
            if seen.contains(&k) {
                return Err(err(spec, format!("option '{k}' is given twice; give each option once")));
            }
            seen.push(k);
            if k == "policy" {
                policy = Some(parse_policy(v).ok_or_else(|| {
                    err(spec, format!("policy={v} is not other, batch, idle, fifo:N or rr:N (N 1-99), e.g. policy=fifo:50"))
                })?);
                continue;
            }
            if k == "nice" {
                nice = Some(
                    v.parse::<i32>()
                        .ok()
                        .filter(|n| (-20..=19).contains(n))
                        .ok_or_else(|| err(spec, format!("nice={v} must lie between -20 and 19, e.g. nice=10")))?,
                );
                continue;
            }
            let bad_opt = |valid: &str| err(spec, format!("'{opt}' is not an option of {name}; it takes {valid}"));
            match &mut generator {
                Generator::Hackbench { groups, fds, size, loops, pipe, threads } => match (k, v) {
                    ("groups", v) => *groups = parse_count(spec, k, v, u32::MAX)?,
                    ("fds", v) => *fds = parse_count(spec, k, v, u32::MAX)?,
                    ("size", v) | ("datasize", v) => *size = parse_bytes(spec, k, v, MAX_MESSAGE)? as usize,
                    ("loops", v) => *loops = u64::from(parse_count(spec, k, v, u32::MAX)?),
                    ("pipe", "") => *pipe = true,
                    ("sockets", "") => *pipe = false,
                    ("threads", "") => *threads = true,
                    ("processes", "") => *threads = false,
                    _ => return Err(bad_opt("groups=N, fds=N, size=BYTES, loops=N, pipe|sockets, threads|processes, nice=N")),
                },
                Generator::Cpu { workers } | Generator::Fork { workers } | Generator::Proc { workers } => match k {
                    "workers" => *workers = parse_count(spec, k, v, MAX_WORKERS)?,
                    _ => return Err(bad_opt("workers=N, nice=N")),
                },
                Generator::Vm { workers, bytes } => match k {
                    "workers" => *workers = parse_count(spec, k, v, MAX_WORKERS)?,
                    "bytes" => *bytes = parse_bytes(spec, k, v, MAX_BYTES)?,
                    _ => return Err(bad_opt("workers=N, bytes=SIZE, nice=N")),
                },
                Generator::Io { workers, size, block } => match k {
                    "workers" => *workers = parse_count(spec, k, v, MAX_WORKERS)?,
                    "size" => *size = parse_bytes(spec, k, v, MAX_BYTES)?,
                    "block" => *block = parse_bytes(spec, k, v, MAX_MESSAGE)?,
                    _ => return Err(bad_opt("workers=N, size=SIZE, block=SIZE, nice=N")),
                },
                Generator::Net { workers, size, target } => match k {
                    "workers" => *workers = parse_count(spec, k, v, MAX_WORKERS)?,
                    "size" => *size = parse_bytes(spec, k, v, MAX_DATAGRAM)? as usize,
                    "target" => {
                        crate::vocab::address::send_target(v, crate::vocab::address::Use::OneWay)
                            .map_err(|e| err(spec, format!("{e}, e.g. target=10.0.0.2:9000")))?;
                        *target = Some(v.to_string());
                    }
                    _ => return Err(bad_opt("workers=N, size=BYTES, target=ADDR:PORT, nice=N")),
                },
                Generator::Timers { count, period_ns } => match k {
                    "count" => *count = parse_count(spec, k, v, MAX_TIMERS)?,
                    "period" => {
                        *period_ns = parse_duration_ns(v, None)
                            .ok()
                            .filter(|&p| p >= 1_000)
                            .ok_or_else(|| err(spec, format!("period={v} must be a time of at least 1us, e.g. period=100us")))?
                    }
                    _ => return Err(bad_opt("count=N, period=TIME, nice=N")),
                },
                Generator::Cmd { .. } => unreachable!("handled above"),
            }
        }
        if let Generator::Io { size, block, .. } = &generator {
            if block > size {
                return Err(err(spec, "block is larger than size; e.g. io:size=16M,block=64K"));
            }
        }
        if let Generator::Hackbench { groups, fds, .. } = &generator {
            let tasks = u64::from(*groups) * u64::from(*fds) * 2;
            if tasks > MAX_HACKBENCH_TASKS {
                return Err(err(
                    spec,
                    format!(
                        "groups × fds × 2 = {tasks} tasks is more than the limit of {MAX_HACKBENCH_TASKS}; e.g. groups=10,fds=20"
                    ),
                ));
            }
        }
        Ok(LoadSpec { text, generator, start_ns: start, end_ns: end, nice, policy })
    }

    /// Fills in the defaults that depend on the machine: "one worker per CPU".
    pub fn resolve(mut self, cpus: usize) -> LoadSpec {
        let cpus = cpus.max(1) as u32;
        match &mut self.generator {
            Generator::Cpu { workers } | Generator::Vm { workers, .. } if *workers == 0 => *workers = cpus,
            _ => {}
        }
        self
    }
}

/// Parses every `--load` value. `none` alone means: measure an idle system on purpose.
/// Returns `None` for `none`, otherwise the loads.
pub fn parse_loads(values: &[String]) -> Result<Option<Vec<LoadSpec>>, crate::vocab::Error> {
    parse_loads_text(values).map_err(crate::vocab::Error::Invalid)
}

/// [`parse_loads`], its failure as text.
fn parse_loads_text(values: &[String]) -> Result<Option<Vec<LoadSpec>>, String> {
    let items: Vec<String> = values.iter().flat_map(|v| split_list(v)).collect();
    if items.iter().any(|i| i == "none") {
        if items.len() > 1 {
            return Err("--load none cannot be combined with other loads: drop 'none' or the others".into());
        }
        return Ok(None);
    }
    Ok(Some(items.iter().map(|i| LoadSpec::parse(i)).collect::<Result<Vec<_>, _>>()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_split_on_generator_names() {
        assert_eq!(split_list("hackbench,cpu,vm"), vec!["hackbench", "cpu", "vm"]);
        assert_eq!(split_list("hackbench:groups=10,pipe,cpu:workers=2"), vec!["hackbench:groups=10,pipe", "cpu:workers=2"]);
        assert_eq!(split_list("cpu,cmd:stress-ng --cpu 2,3"), vec!["cpu", "cmd:stress-ng --cpu 2,3"]);
        assert_eq!(split_list("none"), vec!["none"]);
    }

    #[test]
    fn options_and_phases() {
        let l = LoadSpec::parse("hackbench:groups=4,pipe,threads,size=512,loops=50@30s..90s").unwrap();
        assert_eq!(l.generator, Generator::Hackbench { groups: 4, fds: 20, size: 512, loops: 50, pipe: true, threads: true });
        assert_eq!((l.start_ns, l.end_ns), (Some(30_000_000_000), Some(90_000_000_000)));
        assert_eq!(LoadSpec::parse("cpu:policy=fifo:50").unwrap().policy, Some(LoadPolicy::Fifo(50)));
        assert_eq!(LoadSpec::parse("cpu:policy=batch").unwrap().policy, Some(LoadPolicy::Batch));
        let l = LoadSpec::parse("vm:workers=8,bytes=20M,nice=10").unwrap();
        assert_eq!(l.generator, Generator::Vm { workers: 8, bytes: 20 << 20 });
        assert_eq!(l.nice, Some(10));
        let l = LoadSpec::parse("io@5s..").unwrap();
        assert_eq!((l.start_ns, l.end_ns), (Some(5_000_000_000), None));
        let l = LoadSpec::parse("cmd:ping -f user@host").unwrap();
        assert_eq!(l.generator, Generator::Cmd { argv: vec!["ping".into(), "-f".into(), "user@host".into()], restart: true });
        let l = LoadSpec::parse("cmd-once:sh -c 'make -j4'@1s..2s").unwrap();
        assert_eq!(l.generator, Generator::Cmd { argv: vec!["sh".into(), "-c".into(), "make -j4".into()], restart: false });
        assert_eq!(l.start_ns, Some(1_000_000_000));
        assert_eq!(LoadSpec::parse("cpu").unwrap().resolve(4).generator, Generator::Cpu { workers: 4 });
        assert_eq!(
            LoadSpec::parse("timers:count=8,period=50us").unwrap().generator,
            Generator::Timers { count: 8, period_ns: 50_000 }
        );
        assert_eq!(parse_loads(&["none".into()]), Ok(None));
    }

    #[test]
    fn bad_specs_say_what_and_how() {
        for (spec, words) in [
            ("frobnicate", "unknown generator"),
            ("vm:bytes=-5M", "negative"),
            ("vm:colour=red", "not an option of vm"),
            ("cpu:workers=0", "above 0"),
            ("hackbench@90s..30s", "ends"),
            ("io:size=1M,block=2M", "block is larger"),
            ("net:target=nowhere", "ADDR:PORT"),
            ("net:target=127.0.0.1:0", "port 0"),
            ("net:target=0.0.0.0:9000", "any"),
            ("cmd:", "no command"),
            ("cmd:echo 'unbalanced", "quotes"),
            ("timers:period=10ns", "at least 1us"),
            ("cpu:nice=40", "nice"),
            ("cpu:policy=fifo:100", "policy"),
            ("cpu:policy=deadline", "policy"),
            ("cpu:workers=4294967296", "limit of 4096"),
            ("vm:bytes=99999999999999999999G", "limit"),
            ("vm:bytes=1e30G", "limit"),
            ("net:size=100000", "limit of 65507"),
            ("hackbench:groups=100000,fds=100000", "limit of 65536"),
            ("timers:count=999999", "limit"),
        ] {
            let e = LoadSpec::parse(spec).unwrap_err();
            assert!(e.contains(words), "{spec}: {e}");
            assert!(e.starts_with("--load '"), "{e}");
        }
        assert!(parse_loads(&["none,cpu".into()]).is_err());
    }
}
