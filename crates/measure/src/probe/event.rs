//! The external-event probe: the ARM9/ARM11 paper's IRQ response and the Cortex-A53 slides'
//! kernel-timestamped interrupt. One thread at the run's RT priority waits for a device's events:
//! - `gpio=CHIP:LINE` — a GPIO line through the GPIO character device (uAPI v2), as an input
//!   with edge detection (`edge=rising|falling|both`; `bias=pull-up|pull-down|disabled`). The kernel timestamps each edge in its
//!   interrupt handler (CLOCK_MONOTONIC); the value is the thread's wake-up − that timestamp.
//!   The line's sequence numbers reveal the edges the kernel had to drop (missed).
//! - `uio=/dev/uioN` — a UIO device: a blocking `read` returns the device's interrupt count, so a
//!   jump of more than one is missed events (the paper's `num_events − old_events > 1`). UIO
//!   carries no timestamp: the values are the intervals between wake-ups (series `interval`),
//!   whose spread is the event source's jitter plus the wake-up's; a latency needs a reference
//!   outside the machine (a scope on an output). After each event the thread acknowledges the
//!   device if told how (`ack=BAR:OFFSET=VALUE`, a 32-bit write into the PCI device's
//!   `resourceBAR`, for a driver such as `uio_pci_generic` that leaves that to user space) and
//!   re-enables its interrupt (writes 1 to the device where the driver has interrupt control;
//!   else, for a PCI device, clears INTx Disable in its config space).
//!
//! Events are accounted as events, not periods: each falls in a window of the interval (its
//! phase, its warm-up); a quiet window is not missed. Counts: `events`, every event taken
//! after the start. The device is opened, checked and configured in the thread's set-up: an
//! absent device, a line that is an output or in use, a file that is not a UIO device are
//! one-line errors before anything runs. The loop allocates nothing, locks nothing, prints
//! nothing; it waits with `ppoll` in slices so a stop is seen within 50 ms.

use super::options::{named, schedule, Given, ProbeOptions, RunTiming};
use super::{Accounting, Class, Handoff, Missed, Plugin, Probe, Role, RtLoop, Schedule};
use crate::result::RunResult;
use crate::sys;
use crate::vocab::units::Nanos;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// The probe's name in `--measure`, results and requirements.
pub const NAME: &str = "event";
/// The series a UIO source reports (intervals); a GPIO source reports one unnamed series.
pub const UIO_SERIES: &[&str] = &["interval"];
/// Its own count: events taken after the start.
pub const COUNTERS: &[&str] = &["events"];
const EVENTS: usize = 0;
/// How long the loop waits before it looks at the stop flag again.
const SLICE_NS: u64 = 50_000_000;

/// The loop's look-out: a periodic timer expiring every [`SLICE_NS`] and exactly at `end_ns`,
/// the last window's end (its first expiry the one that lands there, counted back). The loop
/// waits for its device or this timer, so no timer is programmed while it waits for an event
/// (a timeout would arm one on every wait and cancel it on every wake-up, inside what is
/// measured).
fn look_out(timer: &sys::timer::PeriodicTimer, now_ns: u64, end_ns: u64) -> std::io::Result<()> {
    timer.arm(first_look(now_ns, end_ns), SLICE_NS)
}

/// The look-out's first expiry after `now_ns`: `end_ns` less a whole number of slices (at or
/// before `now_ns` only when the end has passed: then it is due at once).
fn first_look(now_ns: u64, end_ns: u64) -> u64 {
    let first = end_ns - (end_ns.saturating_sub(now_ns) / SLICE_NS) * SLICE_NS;
    if first <= now_ns {
        first + SLICE_NS
    } else {
        first
    }
}

/// Waits for `device` or the look-out; true when the device is readable. An expiry of the
/// look-out is taken (read) here; a failing wait waits for the next expiry instead.
#[inline(always)]
fn device_ready(device: &impl std::os::fd::AsRawFd, look: &sys::timer::PeriodicTimer) -> bool {
    match sys::fd::readable_first(device, look) {
        Ok(true) => true,
        _ => {
            look.wait();
            false
        }
    }
}
/// Edge events the kernel keeps for the line while the thread is away (its default is 16).
const KERNEL_EVENT_BUFFER: u32 = 1024;
/// Edge events read at once.
const READ_EVENTS: usize = 64;

/// Which edges of a GPIO line are events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    Rising,
    Falling,
    Both,
}

/// The edges by name (`edge=NAME`).
pub const EDGES: &[(&str, Edge)] = &[("rising", Edge::Rising), ("falling", Edge::Falling), ("both", Edge::Both)];

/// A GPIO input's bias (`bias=`): an open-collector source needs a pull-up. `None`: as the line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bias {
    PullUp,
    PullDown,
    Disabled,
}

/// The biases by name (`bias=NAME`).
pub const BIASES: &[(&str, Bias)] = &[("pull-up", Bias::PullUp), ("pull-down", Bias::PullDown), ("disabled", Bias::Disabled)];

/// The register write that acknowledges a UIO device's interrupt: `value` at `offset` of the
/// PCI device's `resource{bar}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    pub bar: u8,
    pub offset: u64,
    pub value: u32,
}

/// Where the events come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Gpio { chip: PathBuf, line: u32, edge: Edge, bias: Option<Bias> },
    Uio { device: PathBuf, ack: Option<Ack> },
}

/// The event probe, for the registry.
pub const PLUGIN: Plugin = Plugin {
    name: NAME,
    shapes: &[&[], UIO_SERIES],
    options: "gpio=/dev/gpiochipN:LINE with edge=rising|falling|both (rising) and bias=pull-up|pull-down|disabled, \
              or uio=/dev/uioN with \
              ack=BAR:OFFSET=VALUE; interval=DURATION (the window events are placed in)",
    help,
    parse,
    missed: Missed::Event,
    published: |series| series.is_none().then_some(Class::Irq),
    foreign: &[],
    summary: Some(summary),
    series_priority: super::priority_setting,
    swept: |_| false,
    offers: &[],
};

/// `--measure`'s help on the event probe.
fn help() -> String {
    format!("{NAME} (external events on one CPU: gpio=CHIP:LINE with edge=, bias=, or uio=/dev/uioN with ack=BAR:OFFSET=VALUE)")
}

/// The event probe's options, `event:gpio=/dev/gpiochip0:17[,edge=rising]` or
/// `event:uio=/dev/uio0[,ack=0:0x64=1]`, with `interval=` (the windows events are placed in).
#[derive(Debug, Clone)]
pub struct Options {
    /// `None`: the run's interval.
    pub interval_ns: Option<u64>,
    pub source: Source,
}

fn parse(given: &Given) -> Result<Arc<dyn ProbeOptions>, crate::vocab::Error> {
    parse_text(given).map_err(crate::vocab::Error::Invalid)
}

/// [`parse`], its failure as text.
fn parse_text(given: &Given) -> Result<Arc<dyn ProbeOptions>, String> {
    let bad = |what: String, e: &str| format!("--measure '{}': {what}; e.g. {e}", given.text);
    let (mut gpio, mut uio, mut edge, mut ack, mut bias) = (None, None, None, None, None);
    let mut interval_ns = None;
    for (k, v) in given.options {
        match k.as_str() {
            "gpio" => {
                gpio = Some(gpio_option(v).ok_or_else(|| bad(format!("gpio={v} is not CHIP:LINE"), "gpio=/dev/gpiochip0:17"))?)
            }
            "uio" if !v.is_empty() => uio = Some(PathBuf::from(v)),
            "uio" => return Err(bad("uio= needs the device".into(), "uio=/dev/uio0")),
            "edge" => {
                edge =
                    Some(named(EDGES, v).ok_or_else(|| bad(format!("edge={v} is not rising, falling or both"), "edge=rising"))?)
            }
            "bias" => {
                bias = Some(
                    named(BIASES, v)
                        .ok_or_else(|| bad(format!("bias={v} is not pull-up, pull-down or disabled"), "bias=pull-up"))?,
                )
            }
            "ack" => {
                ack = Some(ack_option(v).ok_or_else(|| {
                    bad(format!("ack={v} is not BAR:OFFSET=VALUE (a 32-bit write into the device's PCI BAR)"), "ack=0:0x64=1")
                })?)
            }
            "interval" => interval_ns = Some(given.interval(v)?),
            other => return Err(given.unknown(other)),
        }
    }
    let source = match (gpio, uio) {
        (Some((chip, line)), None) if ack.is_none() => Source::Gpio { chip, line, edge: edge.unwrap_or(Edge::Rising), bias },
        (Some(_), None) => {
            return Err(bad("ack= is for a UIO device, not a GPIO line".into(), "event:uio=/dev/uio0,ack=0:0x64=1"))
        }
        (None, Some(device)) if edge.is_none() && bias.is_none() => Source::Uio { device, ack },
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
    Ok(Arc::new(Options { interval_ns, source }))
}

impl ProbeOptions for Options {
    fn interval_ns(&self) -> Option<u64> {
        self.interval_ns
    }
    fn bind(&self, _text: &str, timing: RunTiming) -> Result<Arc<dyn Probe>, crate::vocab::Error> {
        let schedule = schedule(timing, self.interval_ns.unwrap_or(timing.interval_ns));
        Ok(Arc::new(EventProbe { schedule, source: self.source.clone() }))
    }
}

/// `CHIP:LINE`: a chip's path (or its name under /dev) and a line offset.
fn gpio_option(v: &str) -> Option<(PathBuf, u32)> {
    let (chip, line) = v.rsplit_once(':')?;
    let line = line.trim().parse().ok()?;
    let chip = if chip.contains('/') { chip.to_string() } else { format!("/dev/{chip}") };
    (!chip.ends_with('/')).then(|| (chip.into(), line))
}

/// `BAR:OFFSET=VALUE`, numbers decimal or 0x-hex.
fn ack_option(v: &str) -> Option<Ack> {
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
    Some(Ack { bar, offset: number(offset)?, value })
}

/// The event probe, resolved before the run.
#[derive(Debug, Clone)]
pub struct EventProbe {
    pub schedule: Schedule,
    pub source: Source,
}

impl Probe for EventProbe {
    fn name(&self) -> &'static str {
        NAME
    }
    fn schedule(&self) -> Schedule {
        self.schedule
    }
    fn settings(&self) -> Vec<String> {
        let mut s = vec![format!("interval={}", Nanos(self.schedule.interval_ns))];
        match &self.source {
            Source::Gpio { chip, line, edge, bias } => {
                let edge = EDGES.iter().find(|(_, e)| e == edge).map_or("?", |(n, _)| n);
                s.push(format!("gpio={}:{line}", chip.display()));
                s.push(format!("edge={edge}"));
                if let Some(b) = bias {
                    s.push(format!("bias={}", BIASES.iter().find(|(_, x)| x == b).map_or("?", |(n, _)| n)));
                }
            }
            Source::Uio { device, ack } => {
                s.push(format!("uio={}", device.display()));
                if let Some(a) = ack {
                    s.push(format!("ack={}:{:#x}={:#x}", a.bar, a.offset, a.value));
                }
            }
        }
        s
    }
    fn accounting(&self) -> Accounting {
        Accounting::Events
    }
    fn counters(&self) -> &'static [&'static str] {
        COUNTERS
    }
    fn series(&self) -> &'static [&'static str] {
        match self.source {
            Source::Gpio { .. } => &[],
            Source::Uio { .. } => UIO_SERIES,
        }
    }
    fn measures(&self, _series: usize) -> Option<&'static str> {
        matches!(self.source, Source::Uio { .. }).then_some(UIO_SERIES[0])
    }
    fn check_cpus(&self, cpus: &[usize]) -> Result<(), crate::vocab::Error> {
        if cpus.len() == 1 {
            return Ok(());
        }
        let example = self.settings().get(1).cloned().unwrap_or_default();
        Err(crate::vocab::Error::Invalid(format!(
            "event: one device has one reader: give the probe one CPU, e.g. --measure event:{example}@{}",
            cpus.last().copied().unwrap_or(0)
        )))
    }
    fn instance(&self, cpu: usize, _cpus: &[usize]) -> Result<Vec<Role>, crate::vocab::Error> {
        let p = self.clone();
        Ok(vec![Role::single(
            cpu,
            Box::new(move || match &p.source {
                Source::Gpio { chip, line, edge, bias } => {
                    Ok(Box::new(open_gpio(p.schedule, chip, *line, (*edge, *bias)).map_err(crate::vocab::Error::System)?)
                        as Box<dyn RtLoop>)
                }
                Source::Uio { device, ack } => {
                    Ok(Box::new(open_uio(p.schedule, device, *ack).map_err(crate::vocab::Error::System)?) as Box<dyn RtLoop>)
                }
            }),
        )])
    }
}

/// The look-out timer of a loop, made in its set-up.
fn look_out_timer() -> Result<sys::timer::PeriodicTimer, String> {
    sys::timer::PeriodicTimer::new().map_err(|e| format!("cannot make a timerfd ({e}): check that this kernel has timerfd"))
}

// ---- GPIO -------------------------------------------------------------------------------

/// Requests `line` of `chip` as an input with edge detection, after checking it exists, is an
/// input and is free.
fn open_gpio(schedule: Schedule, chip: &Path, line: u32, (edge, bias): (Edge, Option<Bias>)) -> Result<GpioLoop, String> {
    use gpiocdev::line::{Direction, EdgeDetection, EventClock};
    let name = chip.display();
    if !chip.exists() {
        return Err(format!("no GPIO chip {name}: the chips here are /dev/gpiochip* (gpiodetect lists them)"));
    }
    if let Err(e) = std::fs::OpenOptions::new().read(true).write(true).open(chip) {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            return Err(format!("cannot open {name} ({e}); run as root or give access to the chip (its group, e.g. gpio)"));
        }
    }
    let c = gpiocdev::Chip::from_path(chip)
        .map_err(|e| format!("{name} is not a GPIO chip ({e}); give a /dev/gpiochipN, e.g. gpio=/dev/gpiochip0:17"))?;
    let lines = c
        .info()
        .map_err(|e| format!("cannot read {name}'s description ({e}); give a GPIO chip, e.g. gpio=/dev/gpiochip0:17"))?
        .num_lines;
    if line >= lines {
        return Err(format!("{name} has {lines} lines (0..{}), not line {line}; gpioinfo lists them", lines.saturating_sub(1)));
    }
    let info = c
        .line_info(line)
        .map_err(|e| format!("cannot read line {line} of {name} ({e}); check it with gpioinfo or choose another line"))?;
    if info.used {
        let by = if info.consumer.is_empty() { "another user".to_string() } else { format!("'{}'", info.consumer) };
        return Err(format!(
            "line {line} of {name} is busy, held by {by}: free it (unload or unbind that user) or choose another line"
        ));
    }
    if info.direction == Direction::Output {
        return Err(format!(
            "line {line} of {name} is an output: rtgauge will not turn a driven line into an input; choose an input line"
        ));
    }
    let detect = match edge {
        Edge::Rising => EdgeDetection::RisingEdge,
        Edge::Falling => EdgeDetection::FallingEdge,
        Edge::Both => EdgeDetection::BothEdges,
    };
    let request = gpiocdev::Request::builder()
        .on_chip(chip)
        .with_consumer("rtgauge")
        .with_line(line)
        .as_input()
        .with_edge_detection(detect)
        .with_event_clock(EventClock::Monotonic)
        .with_kernel_event_buffer_size(KERNEL_EVENT_BUFFER)
        .with_bias(bias.map(|b| match b {
            Bias::PullUp => gpiocdev::line::Bias::PullUp,
            Bias::PullDown => gpiocdev::line::Bias::PullDown,
            Bias::Disabled => gpiocdev::line::Bias::Disabled,
        }))
        .request()
        .map_err(|e| {
            if c.line_info(line).is_ok_and(|i| i.used) {
                format!("line {line} of {name} is busy (taken meanwhile): free it or choose another line")
            } else {
                format!("cannot request line {line} of {name} as an input with edge detection ({e}); its chip may not raise edge interrupts: choose another line (gpioinfo lists them)")
            }
        })?;
    let words = request.edge_event_u64_size();
    let look = look_out_timer()?;
    Ok(GpioLoop { schedule, words, buffer: vec![0; words * READ_EVENTS], request, look })
}

/// The reader of one GPIO line's edge events.
struct GpioLoop {
    schedule: Schedule,
    request: gpiocdev::Request,
    look: sys::timer::PeriodicTimer,
    /// Raw events as read (`words` u64 each).
    buffer: Vec<u64>,
    words: usize,
}

impl RtLoop for GpioLoop {
    /// Waits for edges until the last window ends; each edge is an event of the window its
    /// kernel timestamp falls in, valued wake-up − timestamp, with the edges its line sequence
    /// number skipped as missed. Edges stamped before the start are not the run's.
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        let (s, out) = (self.schedule, &mut out[0]);
        let end = start_ns + s.periods * s.interval_ns;
        let (mut last_seqno, mut events) = (None::<u32>, 0u64);
        let armed = look_out(&self.look, sys::time::monotonic_ns(), end).is_ok();
        while armed && !stop.load(Relaxed) {
            if sys::time::monotonic_ns() >= end {
                break;
            }
            if !device_ready(&self.request, &self.look) {
                continue;
            }
            let Ok(n) = self.request.read_edge_events_into_slice(&mut self.buffer) else { continue };
            let woke = sys::time::monotonic_ns();
            for raw in self.buffer[..n].chunks_exact(self.words) {
                let Ok(e) = self.request.edge_event_from_slice(raw) else { continue };
                let skipped = last_seqno.map_or(0, |l| e.line_seqno.wrapping_sub(l).saturating_sub(1));
                last_seqno = Some(e.line_seqno);
                if e.timestamp_ns < start_ns || e.timestamp_ns >= end {
                    continue;
                }
                events += 1;
                out.event_after(
                    s.window_of(start_ns, e.timestamp_ns),
                    Some(woke.saturating_sub(e.timestamp_ns)),
                    u64::from(skipped),
                );
            }
            out.count(EVENTS, events);
        }
        out.accounted_through(s.windows_passed(start_ns, sys::time::monotonic_ns()));
    }
}

// ---- UIO --------------------------------------------------------------------------------

/// Opens a UIO device, after checking it is one; maps its acknowledgement register if given.
fn open_uio(schedule: Schedule, device: &Path, ack: Option<Ack>) -> Result<UioLoop, String> {
    let name = device.display();
    if !device.exists() {
        return Err(format!(
            "no UIO device {name}: the devices here are listed in /sys/class/uio (load the device's UIO driver)"
        ));
    }
    let base = device.file_name().map(|b| b.to_string_lossy().into_owned()).unwrap_or_default();
    let class = Path::new("/sys/class/uio").join(&base);
    if !base.starts_with("uio") || !class.exists() {
        return Err(format!("{name} is not a UIO device (no /sys/class/uio/{base}); give a /dev/uioN, e.g. uio=/dev/uio0"));
    }
    let dev = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
        .map_err(|e| format!("cannot open {name} ({e}); run as root or give access to the device"))?;
    let count = std::fs::File::open(class.join("event")).map_err(|e| {
        format!("cannot read /sys/class/uio/{base}/event ({e}); mount sysfs (mount -t sysfs sysfs /sys) and run as root")
    })?;
    let register = match ack {
        None => None,
        Some(a) => {
            let path = class.join(format!("device/resource{}", a.bar));
            let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).map_err(|e| {
                format!(
                    "ack={}:{:#x}: cannot open {} ({e}); ack= needs a PCI device and one of its BARs (its resourceN files)",
                    a.bar,
                    a.offset,
                    path.display()
                )
            })?;
            let r = sys::dev::Register::map(&file, a.offset).map_err(|e| {
                format!(
                    "ack={}:{:#x}: cannot map {} ({e}); give an offset within the BAR (lspci -v shows its size)",
                    a.bar,
                    a.offset,
                    path.display()
                )
            })?;
            Some((r, a.value))
        }
    };
    // How the interrupt is re-enabled: by writing 1 to the device where its driver has
    // interrupt control; else, for a PCI device (uio_pci_generic masks INTx in its handler), by
    // clearing INTx Disable in its command register, as the kernel's UIO how-to does.
    let rearm = if (&dev).write(&1u32.to_ne_bytes()).is_ok() {
        Rearm::Write
    } else {
        match std::fs::OpenOptions::new().read(true).write(true).open(class.join("device/config")) {
            Ok(config) => Rearm::PciIntx(config),
            Err(_) => Rearm::Driver,
        }
    };
    let look = look_out_timer()?;
    Ok(UioLoop { schedule, dev, count, register, rearm, look, text: [0; 24] })
}

/// The reader of one UIO device.
struct UioLoop {
    schedule: Schedule,
    dev: std::fs::File,
    /// The device's `event` attribute: its interrupt count.
    count: std::fs::File,
    register: Option<(sys::dev::Register, u32)>,
    rearm: Rearm,
    look: sys::timer::PeriodicTimer,
    text: [u8; 24],
}

/// How a UIO device's interrupt is re-enabled after each event.
enum Rearm {
    /// Writing 1 to the device (its driver's interrupt control).
    Write,
    /// Clearing INTx Disable (bit 10 of the command register) in the PCI device's config space.
    PciIntx(std::fs::File),
    /// The driver's kernel part does it.
    Driver,
}

/// The byte of the PCI command register holding INTx Disable, and the bit.
const PCI_COMMAND_HIGH: u64 = 5;
const PCI_INTX_DISABLE: u8 = 0x04;

impl UioLoop {
    /// The device's interrupt count now (its sysfs `event`), read without allocating.
    fn count_now(&mut self) -> Option<u32> {
        let n = self.count.read_at(&mut self.text, 0).ok()?;
        let digits = self.text[..n].iter().take_while(|b| b.is_ascii_digit());
        Some(digits.fold(0u32, |v, d| v.wrapping_mul(10).wrapping_add(u32::from(d - b'0'))))
    }

    /// Acknowledges the device and re-enables its interrupt.
    #[inline(always)]
    fn rearm(&mut self) {
        if let Some((r, v)) = &self.register {
            r.write(*v);
        }
        match &self.rearm {
            Rearm::Write => drop((&self.dev).write(&1u32.to_ne_bytes())),
            Rearm::PciIntx(config) => {
                let mut high = [0u8];
                if config.read_at(&mut high, PCI_COMMAND_HIGH).is_ok() && high[0] & PCI_INTX_DISABLE != 0 {
                    let _ = config.write_at(&[high[0] & !PCI_INTX_DISABLE], PCI_COMMAND_HIGH);
                }
            }
            Rearm::Driver => {}
        }
    }
}

impl RtLoop for UioLoop {
    /// From the start, waits for the device's interrupts until the last window ends. Each read
    /// returns the device's count: the jump from the last count less one is missed events; the
    /// value is the interval since the previous wake-up (the first event after the start has
    /// none). Counts that do not move (an interrupt from before the start) are not events.
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        let (s, out) = (self.schedule, &mut out[0]);
        let end = start_ns + s.periods * s.interval_ns;
        sys::time::sleep_until_monotonic(start_ns);
        let Some(mut last) = self.count_now() else { return };
        self.rearm();
        let (mut previous, mut events, mut word) = (None::<u64>, 0u64, [0u8; 4]);
        let armed = look_out(&self.look, sys::time::monotonic_ns(), end).is_ok();
        while armed && !stop.load(Relaxed) {
            if sys::time::monotonic_ns() >= end {
                break;
            }
            if !device_ready(&self.dev, &self.look) || self.dev.read_exact(&mut word).is_err() {
                continue;
            }
            let woke = sys::time::monotonic_ns();
            self.rearm();
            let count = u32::from_ne_bytes(word);
            let jump = count.wrapping_sub(last);
            if jump == 0 || jump > u32::MAX / 2 {
                continue; // not a new interrupt (one from before the start)
            }
            last = count;
            events += 1;
            out.event_after(s.window_of(start_ns, woke), previous.map(|p| woke - p), u64::from(jump - 1));
            out.count(EVENTS, events);
            previous = Some(woke);
        }
        out.accounted_through(s.windows_passed(start_ns, sys::time::monotonic_ns()));
    }
}

// ---- its section of the summary ----

/// Its section of the summary: the external events per CPU.
fn summary(r: &RunResult) -> String {
    event_report(r)
}

/// The external events per CPU: taken, missed by the device's own numbering, and for a UIO
/// source what its values are.
fn event_report(r: &RunResult) -> String {
    let mut s = String::new();
    for p in r.probes.iter().filter(|p| p.probe == NAME && p.cpu.is_some()) {
        let events = p.counts.get(COUNTERS[0]).copied().unwrap_or(0);
        if s.is_empty() {
            s += "
External events, per CPU:
";
        }
        let what = if p.measures.is_some() {
            "the values are intervals between wake-ups: UIO carries no timestamp, a latency needs a reference outside (a scope on an output)"
        } else {
            "the values are wake-up − the kernel's timestamp of the edge"
        };
        let _ = writeln!(
            s,
            "  {}: {events} events taken ({} in the warm-up), {} missed (skipped in the device's numbering); {what}",
            p.scope(),
            p.warmup_samples,
            p.missed.saturating_add(p.warmup_missed)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{first_look, SLICE_NS};

    #[test]
    fn the_look_out_expires_exactly_at_the_end_and_never_in_the_past() {
        let ms = 1_000_000;
        // 120 ms left: 20, 70, 120 ms from now — the last one on the end.
        assert_eq!(first_look(1_000 * ms, 1_120 * ms), 1_020 * ms);
        // A whole number of slices left: the first slice ahead, not now.
        assert_eq!(first_look(1_000 * ms, 1_100 * ms), 1_000 * ms + SLICE_NS);
        // Less than a slice left: the end itself.
        assert_eq!(first_look(1_000 * ms, 1_030 * ms), 1_030 * ms);
        // Past the end: already due, it fires at once (and the loop ends on its own check).
        assert!(first_look(1_000 * ms, 900 * ms) <= 1_000 * ms);
        for left in [1, SLICE_NS - 1, SLICE_NS, SLICE_NS + 1, 7 * SLICE_NS + 3] {
            let (now, end) = (5_000 * ms, 5_000 * ms + left);
            let first = first_look(now, end);
            assert!(first > now && first - now <= SLICE_NS, "left {left}: first {first}");
            assert_eq!((end - first) % SLICE_NS, 0, "left {left}: an expiry lands on the end");
        }
    }
}
