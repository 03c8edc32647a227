//! Every probe by name: parsing `--measure NAME[:options][@CPUS]` (typed, without touching the
//! system) and building the probe for a run's timing. Adding a probe means one entry in
//! [`PROBES`] and its module; nothing else names it.

use super::{event, noise, period, timer, udp, wakeup, Probe, Schedule};
use crate::vocab::cpus::parse_cpu_list;
use crate::vocab::units::{parse_duration_ns, Nanos};
use std::sync::Arc;

/// A `--measure` as typed, parsed: which probe, its options, on which CPUs (`None`: every
/// measured CPU).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasureSpec {
    pub text: String,
    pub name: &'static str,
    pub options: Vec<(String, String)>,
    pub cpus: Option<Vec<usize>>,
}

/// The run's timing every probe's periods follow: its length, its warm-up, and the interval
/// a probe uses unless its options set one.
#[derive(Debug, Clone, Copy)]
pub struct RunTiming {
    pub interval_ns: u64,
    pub warmup_ns: u64,
    pub total_ns: u64,
}

/// Builds a probe from its spec for the run's timing.
type Builder = fn(&MeasureSpec, RunTiming) -> Result<Arc<dyn Probe>, String>;

/// A probe's entry: name, options it accepts (for messages), constructor.
struct Entry {
    name: &'static str,
    /// Its series (see `Probe::series`) in each shape it can take (the wake-up probe's chain
    /// and ping-pong; the event probe's GPIO line and UIO device), the headline first: for
    /// requirements that name one, and to tell a headline.
    shapes: &'static [&'static [&'static str]],
    /// Its interval unless its options set one; `None`: the run's (`--interval`).
    interval_ns: Option<u64>,
    options: &'static str,
    build: Builder,
}

const PROBES: &[Entry] = &[
    Entry {
        name: timer::NAME,
        shapes: &[&[]],
        interval_ns: None,
        options: "interval=DURATION, wait=nanosleep-abs|nanosleep-rel|timerfd|posix-timer|select|poll|itimer",
        build: build_timer,
    },
    Entry {
        name: period::NAME,
        shapes: &[period::SERIES],
        interval_ns: Some(period::DEFAULT_INTERVAL_NS),
        options: "interval=DURATION (10ms), below=DURATION, above=DURATION, warmup=CYCLES",
        build: build_period,
    },
    Entry {
        name: wakeup::NAME,
        shapes: &[wakeup::SERIES, wakeup::PING_PONG_SERIES],
        interval_ns: None,
        options: "interval=DURATION or rate=PER_SECOND or rate=sweep (with rates=1k/2k/.../150k, bound=DURATION, all), \
                  via=eventfd|futex|pipe|mq|signal|sem|pi-mutex, shape=chain|ping-pong (chain), cross, \
                  priority=2..99 (99)",
        build: build_wakeup,
    },
    Entry {
        name: noise::NAME,
        shapes: &[&[]],
        interval_ns: None,
        options: "threshold=DURATION (1us), interval=DURATION (the window events are placed in)",
        build: build_noise,
    },
    Entry {
        name: udp::NAME,
        shapes: &[&[]],
        interval_ns: None,
        options: "target=ADDR:PORT (an 'rtgauge udp-echo'), rate=PER_SECOND or interval=DURATION, size=BYTES (64), \
                  busy-poll=DURATION, so-priority=N",
        build: build_udp,
    },
    Entry {
        name: event::NAME,
        shapes: &[&[], event::UIO_SERIES],
        interval_ns: None,
        options: "gpio=/dev/gpiochipN:LINE with edge=rising|falling|both (rising) and bias=pull-up|pull-down|disabled, \
                  or uio=/dev/uioN with \
                  ack=BAR:OFFSET=VALUE; interval=DURATION (the window events are placed in)",
        build: build_event,
    },
];

/// The probe `rtgauge run` measures with when no `--measure` is given.
pub fn default_spec() -> MeasureSpec {
    parse(timer::NAME).expect("the default probe parses")
}

/// Every series probe `name` may report, in any of its shapes (empty: one, unnamed), or `None`
/// for no such probe.
pub fn series_of(name: &str) -> Option<Vec<&'static str>> {
    let entry = PROBES.iter().find(|e| e.name == name)?;
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
    let Some(entry) = PROBES.iter().find(|e| e.name == name) else { return false };
    entry.shapes.iter().any(|shape| shape.first().copied() == series)
}

impl crate::result::ProbeResult {
    /// Whether this entry is its probe's headline series (see [`is_headline`]): a stored entry
    /// names its probe and series, and which series leads is the probe's to say.
    pub fn is_headline(&self) -> bool {
        is_headline(&self.probe, self.series.as_deref())
    }
}

/// The names of every probe, for help and messages.
pub fn names() -> Vec<&'static str> {
    PROBES.iter().map(|e| e.name).collect()
}

/// Parses `NAME[:key=value,...][@CPUS]`.
pub fn parse(text: &str) -> Result<MeasureSpec, String> {
    let t = text.trim();
    let (body, cpus) = match t.rsplit_once('@') {
        Some((b, c)) => (b, Some(parse_cpu_list(c).map_err(|e| format!("--measure '{t}': {e}; e.g. timer@0-1"))?)),
        None => (t, None),
    };
    let (name, opts) = body.split_once(':').unwrap_or((body, ""));
    let entry = PROBES
        .iter()
        .find(|e| e.name == name.trim())
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
    let spec = MeasureSpec { text: t.to_string(), name: entry.name, options, cpus };
    // Options are checked now, against a placeholder timing (a minute), so a typo fails before
    // anything runs; what depends on the run's length is checked when the run is resolved.
    (entry.build)(&spec, RunTiming { interval_ns: 1_000_000, warmup_ns: 0, total_ns: 60_000_000_000 })?;
    Ok(spec)
}

/// Builds the probe of `spec` for the run's timing.
pub fn build(spec: &MeasureSpec, timing: RunTiming) -> Result<Arc<dyn Probe>, String> {
    let entry = PROBES.iter().find(|e| e.name == spec.name).expect("parsed specs name known probes");
    (entry.build)(spec, timing)
}

impl MeasureSpec {
    /// The probe's own interval (its `interval=` option, or its default), if it has one; else it
    /// follows the run's.
    pub fn own_interval_ns(&self) -> Option<u64> {
        let entry = PROBES.iter().find(|e| e.name == self.name).expect("known probe");
        let own = |(k, v): &(String, String)| match k.as_str() {
            "interval" => interval_option(self, v).ok(),
            "rate" => rate_option(self, v).ok(),
            _ => None,
        };
        self.options.iter().find_map(own).or(entry.interval_ns)
    }

    fn unknown_option(&self, key: &str) -> String {
        let entry = PROBES.iter().find(|e| e.name == self.name).expect("known probe");
        format!("--measure '{}': {} has no option '{key}'; its options: {}", self.text, self.name, entry.options)
    }
}

/// A probe's schedule in the run's timing, at `interval_ns`.
fn schedule(timing: RunTiming, interval_ns: u64) -> Schedule {
    let warmup_periods = timing.warmup_ns.div_ceil(interval_ns);
    Schedule { interval_ns, warmup_periods, periods: (timing.total_ns / interval_ns).max(warmup_periods) }
}

/// The value named `v` in a table of (name, value): a wait method, a mechanism, an edge.
fn named<T: Copy>(table: &[(&str, T)], v: &str) -> Option<T> {
    table.iter().find(|(n, _)| *n == v).map(|(_, x)| *x)
}

/// The value of `interval=`, checked.
fn interval_option(spec: &MeasureSpec, v: &str) -> Result<u64, String> {
    parse_duration_ns(v, None).ok().filter(|&i| (super::MIN_INTERVAL_NS..=super::MAX_INTERVAL_NS).contains(&i)).ok_or_else(|| {
        format!(
            "--measure '{}': interval={v} is not a time within {}..{}; e.g. interval=1ms",
            spec.text,
            Nanos(super::MIN_INTERVAL_NS),
            Nanos(super::MAX_INTERVAL_NS)
        )
    })
}

/// The value of `rate=` (events or datagrams a second), as an interval, checked.
fn rate_option(spec: &MeasureSpec, v: &str) -> Result<u64, String> {
    // A whole number a second: at most a second apart, at least the shortest interval.
    let range = 1..=1_000_000_000 / super::MIN_INTERVAL_NS;
    v.parse::<u64>().ok().filter(|r| range.contains(r)).map(|r| 1_000_000_000 / r).ok_or_else(|| {
        format!("--measure '{}': rate={v} is not a whole number a second within {range:?}; e.g. rate=1000", spec.text)
    })
}

fn build_timer(spec: &MeasureSpec, timing: RunTiming) -> Result<Arc<dyn Probe>, String> {
    let (mut interval_ns, mut wait) = (timing.interval_ns, crate::sys::WaitMethod::NanosleepAbs);
    for (k, v) in &spec.options {
        match k.as_str() {
            "interval" => interval_ns = interval_option(spec, v)?,
            "wait" => {
                wait = named(timer::WAIT_METHODS, v).ok_or_else(|| {
                    let names: Vec<&str> = timer::WAIT_METHODS.iter().map(|(n, _)| *n).collect();
                    format!("--measure '{}': wait={v} is not a wait method; choose one of {}", spec.text, names.join(", "))
                })?
            }
            other => return Err(spec.unknown_option(other)),
        }
    }
    Ok(Arc::new(timer::TimerProbe { schedule: schedule(timing, interval_ns), wait }))
}

/// `period[:interval=10ms,below=8ms,above=12ms,warmup=1000]`: bounds default to −20 % / +20 %
/// of the interval; the warm-up to the run's (`warmup=` counts cycles).
fn build_period(spec: &MeasureSpec, timing: RunTiming) -> Result<Arc<dyn Probe>, String> {
    let mut interval_ns = period::DEFAULT_INTERVAL_NS;
    let (mut below, mut above, mut warmup) = (None, None, None);
    let time = |k: &str, v: &str| {
        parse_duration_ns(v, None).map_err(|e| {
            format!(
                "--measure '{}': {k}={v}: {e}; give a time with a unit, e.g. {k}={}",
                spec.text,
                if k == "below" { "8ms" } else { "12ms" }
            )
        })
    };
    for (k, v) in &spec.options {
        match k.as_str() {
            "interval" => interval_ns = interval_option(spec, v)?,
            "below" => below = Some(time(k, v)?),
            "above" => above = Some(time(k, v)?),
            "warmup" => {
                warmup =
                    Some(v.parse::<u64>().map_err(|_| {
                        format!("--measure '{}': warmup={v} is not a number of cycles, e.g. warmup=1000", spec.text)
                    })?)
            }
            other => return Err(spec.unknown_option(other)),
        }
    }
    let (below_ns, above_ns) = (below.unwrap_or(interval_ns / 10 * 8), above.unwrap_or(interval_ns / 10 * 12));
    if below_ns > above_ns {
        return Err(format!(
            "--measure '{}': below={} lies above above={}; e.g. below=8ms,above=12ms",
            spec.text,
            Nanos(below_ns),
            Nanos(above_ns)
        ));
    }
    let mut schedule = schedule(timing, interval_ns);
    if let Some(w) = warmup {
        let measured = schedule.periods - schedule.warmup_periods;
        schedule.warmup_periods = w;
        schedule.periods = w
            .checked_add(measured)
            .filter(|p| p.checked_mul(interval_ns).is_some_and(|ns| ns <= super::MAX_RUN_NS))
            .ok_or_else(|| {
                format!(
                    "--measure '{}': warmup={w} cycles makes the run longer than the limit of {}; e.g. warmup=1000",
                    spec.text,
                    Nanos(super::MAX_RUN_NS)
                )
            })?;
    }
    Ok(Arc::new(period::PeriodProbe { schedule, below_ns, above_ns }))
}

/// `wakeup[:interval=1ms|rate=1000|rate=sweep,via=eventfd,shape=chain|ping-pong,cross,priority=99]`;
/// a sweep (of the chain) takes `rates=1k/2k/...`, `bound=DURATION` and `all`.
fn build_wakeup(spec: &MeasureSpec, timing: RunTiming) -> Result<Arc<dyn Probe>, String> {
    let mut p = wakeup::WakeupProbe {
        schedule: schedule(timing, timing.interval_ns),
        via: crate::sys::WakeMethod::Eventfd,
        cross: false,
        priority: wakeup::DEFAULT_PRIORITY,
        sweep: None,
        shape: wakeup::Shape::Chain,
    };
    let (mut swept, mut rates, mut bound, mut all, mut paced) = (false, None, None, false, None);
    for (k, v) in &spec.options {
        match k.as_str() {
            "interval" | "rate" if paced.is_some() => {
                return Err(format!("--measure '{}': give one of interval= and rate=, once", spec.text))
            }
            "interval" => paced = Some(schedule(timing, interval_option(spec, v)?)),
            "rate" if v == "sweep" => {
                swept = true;
                paced = Some(p.schedule);
            }
            "rate" => paced = Some(schedule(timing, rate_option(spec, v)?)),
            "rates" => {
                rates = Some(wakeup::sweep::parse_rates(v).ok_or_else(|| {
                    format!("--measure '{}': rates={v} is not rates a second separated by '/', e.g. rates=1k/10k/100k", spec.text)
                })?)
            }
            "bound" => {
                bound = Some(
                    parse_duration_ns(v, None)
                        .ok()
                        .filter(|&b| b > 0)
                        .ok_or_else(|| format!("--measure '{}': bound={v} is not a time, e.g. bound=100us", spec.text))?,
                )
            }
            "all" if v.is_empty() => all = true,
            "all" => return Err(format!("--measure '{}': write 'all' alone (run every rate), not all={v}", spec.text)),
            "via" => {
                p.via = named(wakeup::VIA, v).ok_or_else(|| {
                    let names: Vec<&str> = wakeup::VIA.iter().map(|(n, _)| *n).collect();
                    format!("--measure '{}': via={v} is not a wake-up mechanism; choose one of {}", spec.text, names.join(", "))
                })?
            }
            "shape" => {
                p.shape = named(wakeup::SHAPES, v).ok_or_else(|| {
                    format!(
                        "--measure '{}': shape={v} is not a shape; choose chain (a handler woken by its timer wakes \
                         a task) or ping-pong (rt-tests' receiver and sender)",
                        spec.text
                    )
                })?
            }
            "cross" if v.is_empty() || v == "yes" => p.cross = true,
            "cross" if v == "no" => p.cross = false,
            "cross" => {
                return Err(format!("--measure '{}': write 'cross' alone (the task, or ping-pong's sender, on the next CPU), not cross={v}", spec.text))
            }
            "priority" => {
                p.priority = v.parse().ok().filter(|n| (2..=99).contains(n)).ok_or_else(|| {
                    format!(
                    "--measure '{}': priority={v} is not an RT priority within 2..99 (the chain's task runs one below); e.g. priority=99",
                    spec.text
                )
                })?
            }
            other => return Err(spec.unknown_option(other)),
        }
    }
    p.schedule = paced.unwrap_or(p.schedule);
    if !swept && (rates.is_some() || bound.is_some() || all) {
        return Err(format!("--measure '{}': rates=, bound= and all are for a sweep; add rate=sweep", spec.text));
    }
    if swept && p.shape != wakeup::Shape::Chain {
        return Err(format!(
            "--measure '{}': rate=sweep raises the chain's rate; drop shape=ping-pong, or time ping-pong at one rate",
            spec.text
        ));
    }
    if swept {
        let rates = rates.as_deref().unwrap_or(wakeup::sweep::DEFAULT_RATES);
        let sweep = wakeup::sweep::Sweep::new(rates, timing.warmup_ns, timing.total_ns, bound, all)
            .map_err(|e| format!("--measure '{}': {e}", spec.text))?;
        p.schedule = sweep.schedule(timing.total_ns);
        p.sweep = Some(sweep);
    }
    Ok(Arc::new(p))
}

/// `noise[:threshold=1us,interval=1ms]`.
fn build_noise(spec: &MeasureSpec, timing: RunTiming) -> Result<Arc<dyn Probe>, String> {
    let mut p = noise::NoiseProbe { schedule: schedule(timing, timing.interval_ns), threshold_ns: noise::DEFAULT_THRESHOLD_NS };
    for (k, v) in &spec.options {
        match k.as_str() {
            "interval" => p.schedule = schedule(timing, interval_option(spec, v)?),
            "threshold" => {
                p.threshold_ns = parse_duration_ns(v, None).ok().filter(|t| (1..=1_000_000_000).contains(t)).ok_or_else(|| {
                    format!("--measure '{}': threshold={v} is not a time within 1 ns..1 s; e.g. threshold=1us", spec.text)
                })?
            }
            other => return Err(spec.unknown_option(other)),
        }
    }
    Ok(Arc::new(p))
}

/// `udp:target=ADDR:PORT[,rate=1000|interval=1ms,size=64,busy-poll=50us,so-priority=6]`.
fn build_udp(spec: &MeasureSpec, timing: RunTiming) -> Result<Arc<dyn Probe>, String> {
    let mut target = None;
    let mut p = udp::UdpProbe {
        schedule: schedule(timing, timing.interval_ns),
        target: "127.0.0.1:9".parse().expect("valid"),
        size: 64,
        busy_poll_us: 0,
        so_priority: None,
    };
    let bad = |what: &str, e: &str| format!("--measure '{}': {what}; e.g. {e}", spec.text);
    for (k, v) in &spec.options {
        match k.as_str() {
            "target" => {
                target = Some(v.parse().map_err(|_| bad(&format!("target={v} is not ADDR:PORT"), "target=192.168.1.2:9000"))?)
            }
            "interval" => p.schedule = schedule(timing, interval_option(spec, v)?),
            "rate" => p.schedule = schedule(timing, rate_option(spec, v)?),
            "size" => {
                p.size = v.parse().ok().filter(|n| (udp::MIN_SIZE..=udp::MAX_SIZE).contains(n)).ok_or_else(|| {
                    bad(&format!("size={v} is not a payload of {}..{} bytes", udp::MIN_SIZE, udp::MAX_SIZE), "size=64")
                })?
            }
            "busy-poll" => {
                let ns = parse_duration_ns(v, None).ok().filter(|&ns| ns <= 1_000_000_000);
                p.busy_poll_us = ns
                    .map(|ns| ns.div_ceil(1000) as u32)
                    .ok_or_else(|| bad(&format!("busy-poll={v} is not a time up to 1 s"), "busy-poll=50us"))?
            }
            "so-priority" => {
                p.so_priority = Some(
                    v.parse()
                        .ok()
                        .filter(|&n: &u32| n <= 6)
                        .ok_or_else(|| bad(&format!("so-priority={v} is not 0..6"), "so-priority=6"))?,
                )
            }
            other => return Err(spec.unknown_option(other)),
        }
    }
    p.target = target.ok_or_else(|| {
        bad("udp needs the echo's address, target=ADDR:PORT ('rtgauge udp-echo' there)", "udp:target=192.168.1.2:9000")
    })?;
    Ok(Arc::new(p))
}

/// `event:gpio=/dev/gpiochip0:17[,edge=rising]` or `event:uio=/dev/uio0[,ack=0:0x64=1]`.
fn build_event(spec: &MeasureSpec, timing: RunTiming) -> Result<Arc<dyn Probe>, String> {
    let bad = |what: String, e: &str| format!("--measure '{}': {what}; e.g. {e}", spec.text);
    let (mut gpio, mut uio, mut edge, mut ack, mut bias) = (None, None, None, None, None);
    let mut schedule = schedule(timing, timing.interval_ns);
    for (k, v) in &spec.options {
        match k.as_str() {
            "gpio" => {
                gpio = Some(gpio_option(v).ok_or_else(|| bad(format!("gpio={v} is not CHIP:LINE"), "gpio=/dev/gpiochip0:17"))?)
            }
            "uio" if !v.is_empty() => uio = Some(std::path::PathBuf::from(v)),
            "uio" => return Err(bad("uio= needs the device".into(), "uio=/dev/uio0")),
            "edge" => {
                edge = Some(
                    named(event::EDGES, v)
                        .ok_or_else(|| bad(format!("edge={v} is not rising, falling or both"), "edge=rising"))?,
                )
            }
            "bias" => {
                bias = Some(
                    named(event::BIASES, v)
                        .ok_or_else(|| bad(format!("bias={v} is not pull-up, pull-down or disabled"), "bias=pull-up"))?,
                )
            }
            "ack" => {
                ack = Some(ack_option(v).ok_or_else(|| {
                    bad(format!("ack={v} is not BAR:OFFSET=VALUE (a 32-bit write into the device's PCI BAR)"), "ack=0:0x64=1")
                })?)
            }
            "interval" => schedule = self::schedule(timing, interval_option(spec, v)?),
            other => return Err(spec.unknown_option(other)),
        }
    }
    let source = match (gpio, uio) {
        (Some((chip, line)), None) if ack.is_none() => {
            event::Source::Gpio { chip, line, edge: edge.unwrap_or(event::Edge::Rising), bias }
        }
        (Some(_), None) => {
            return Err(bad("ack= is for a UIO device, not a GPIO line".into(), "event:uio=/dev/uio0,ack=0:0x64=1"))
        }
        (None, Some(device)) if edge.is_none() && bias.is_none() => event::Source::Uio { device, ack },
        (None, Some(_)) => {
            return Err(bad(
                "edge= and bias= are for a GPIO line, not a UIO device".into(),
                "event:gpio=/dev/gpiochip0:17,edge=rising",
            ))
        }
        (Some(_), Some(_)) => return Err(bad("give one source, gpio= or uio=, not both".into(), "event:gpio=/dev/gpiochip0:17")),
        (None, None) => {
            return Err(bad(
                "event needs its source, gpio=CHIP:LINE or uio=DEVICE".into(),
                "event:gpio=/dev/gpiochip0:17,edge=rising",
            ))
        }
    };
    Ok(Arc::new(event::EventProbe { schedule, source }))
}

/// `CHIP:LINE`: a chip's path (or its name under /dev) and a line offset.
fn gpio_option(v: &str) -> Option<(std::path::PathBuf, u32)> {
    let (chip, line) = v.rsplit_once(':')?;
    let line = line.trim().parse().ok()?;
    let chip = if chip.contains('/') { chip.to_string() } else { format!("/dev/{chip}") };
    (!chip.ends_with('/')).then(|| (chip.into(), line))
}

/// `BAR:OFFSET=VALUE`, numbers decimal or 0x-hex.
fn ack_option(v: &str) -> Option<event::Ack> {
    let number = |t: &str| {
        let t = t.trim();
        t.strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .map_or_else(|| t.parse::<u64>().ok(), |h| u64::from_str_radix(h, 16).ok())
    };
    let (place, value) = v.split_once('=')?;
    let (bar, offset) = place.split_once(':')?;
    let bar = number(bar).filter(|b| *b <= 5)? as u8;
    let value = u32::try_from(number(value)?).ok()?;
    Some(event::Ack { bar, offset: number(offset)?, value })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
