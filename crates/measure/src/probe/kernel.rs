//! What a probe built on one of the kernel's tracers (timerlat, osnoise, hwlat) brings to the
//! plug-in model beside a probe's own loops:
//!
//! - its declaration, [`KernelTracer`]: the tracer it runs, the option of the kernel's
//!   configuration that gives it (for the message where it is missing), what it sets in an
//!   instance of its own and in the files every instance shares, and what it cannot run beside
//!   (`--trace`; another probe of its family: only one osnoise-family tracer runs at a time);
//! - the run-wide set-up, made once before the measurement threads and undone at the end
//!   (`trace::kernel`: the tracefs instance made and journaled, each shared file's original
//!   journaled before it is set and written back by the journal);
//! - its facts read from the kernel's trace buffer rather than produced by a loop of its own:
//!   [`TraceReader`], the loop of a thread that reads the instance's per-CPU `trace_pipe` and
//!   hands each line its parser turns into a [`KernelFact`] through the same `Handoff` as every
//!   probe, so the collector, the verdict, the store and the report see a probe like another.
//!
//! [`check_conflicts`] refuses, before anything runs, two probes of one family or a probe that
//! cannot run beside `--trace` when it is asked for.

use super::plugin::{Probe, RtLoop};
use super::Handoff;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// What a kernel-tracer probe needs of the kernel for the whole run (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelTracer {
    /// The tracer, as `available_tracers` names it (`timerlat`).
    pub tracer: &'static str,
    /// The option of the kernel's configuration that gives it (`CONFIG_TIMERLAT_TRACER`).
    pub config: &'static str,
    /// Files of its instance set before the tracer starts, in order (`trace_clock` = `local`).
    pub instance: Vec<(&'static str, String)>,
    /// Files of tracefs every instance (and rtla) shares that it sets (`osnoise/period_us`):
    /// each original is journaled before it is written, and written back at the end.
    pub shared: Vec<(&'static str, String)>,
    /// The shared file that says on which CPUs the tracer runs its threads (`osnoise/cpus`), if
    /// it has one: set, journaled like the others, to the probe's CPUs.
    pub cpus_file: Option<&'static str>,
    /// Whether it may run beside `--trace` (whose instances trace the same CPUs).
    pub beside_trace: bool,
    /// The family of tracers of which the kernel runs one at a time (`osnoise` for osnoise,
    /// timerlat and hwlat): two probes of one family cannot run together.
    pub family: &'static str,
}

/// The instance the run-wide set-up made for a kernel-tracer probe (its directory in tracefs),
/// given to the probe's threads through [`Probe::kernel_instance`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInstance {
    pub dir: PathBuf,
    /// The CPU the readers of the tracer's output run on: one the run does not measure, where
    /// there is one (a reader on a measured CPU would be noise in what the tracer measures);
    /// `None`: each reader runs on the CPU it reads.
    pub reader_cpu: Option<usize>,
}

impl KernelInstance {
    /// The file a CPU's trace is read from as it is written, each line once.
    pub fn pipe_of(&self, cpu: usize) -> PathBuf {
        self.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe"))
    }
}

/// How long a reader sleeps when the tracer's output is empty. It polls rather than waits: a
/// reader waiting on the pipe would have the kernel wake it for each line, from the measured CPU
/// (an irq_work there each period); one that sleeps costs that CPU nothing. At 1 ms periods a CPU
/// writes about 20 lines of 80 bytes in this time, far below the buffer's size.
const POLL: std::time::Duration = std::time::Duration::from_millis(10);

/// One fact a line of a tracer's output says: the tracer's own count of periods on that CPU
/// (`#N`), which series, and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelFact {
    pub count: u64,
    pub series: usize,
    pub value_ns: u64,
}

/// Reads one line of a tracer's output (no allocation: a loop calls it).
pub type ParseLine = fn(&[u8]) -> Option<KernelFact>;

/// Refuses, before anything runs, two kernel-tracer probes of one family, or one that cannot
/// run beside `--trace` when it is asked for.
pub fn check_conflicts(probes: &[&dyn Probe], trace: bool) -> Result<(), crate::vocab::Error> {
    check_conflicts_text(probes, trace).map_err(crate::vocab::Error::Invalid)
}

/// [`check_conflicts`], its failure as text.
fn check_conflicts_text(probes: &[&dyn Probe], trace: bool) -> Result<(), String> {
    let kernel: Vec<(&str, KernelTracer)> = probes.iter().filter_map(|p| p.kernel().map(|k| (p.name(), k))).collect();
    for (i, (name, k)) in kernel.iter().enumerate() {
        if trace && !k.beside_trace {
            return Err(format!(
                "--measure {name} runs the kernel's {} tracer, which cannot run beside --trace; leave one of them out",
                k.tracer
            ));
        }
        if let Some((other, o)) = kernel[..i].iter().find(|(_, o)| o.family == k.family) {
            return Err(format!(
                "--measure {other} and {name} both need the kernel's {} family of tracers ({} and {}), which runs one \
                 at a time; measure them in two runs",
                k.family, o.tracer, k.tracer
            ));
        }
    }
    Ok(())
}

/// The longest line of a tracer's output a reader keeps; a longer one is skipped whole.
const LINE: usize = 512;

/// The loop of a thread that reads one CPU's trace of a kernel tracer (see the module doc): it
/// reads the pipe without blocking, sleeping while it is empty ([`POLL`]), into a buffer of its
/// own, and hands each fact its parser finds through the handoff of the fact's series. Periods
/// are the tracer's own count, from the first fact read (the instance is started before the
/// run, so the first facts fall in the warm-up); the count's gaps are the periods the tracer
/// missed. It ends at a stop or when the run's periods are all accounted for.
pub struct TraceReader {
    pipe: File,
    parse: ParseLine,
    /// The handoff of each series the tracer reports (`None`: a series this thread does not hand).
    slots: Vec<Option<usize>>,
    periods: u64,
    first: Option<u64>,
    /// The series whose fact opens each of the tracer's periods (timerlat's `irq`, printed
    /// before its `thread`): the first period counted is the first this series reports, so no
    /// series' first period is taken for missed. `None`: any series opens one.
    opener: Option<usize>,
    /// The series whose lateness makes the tracer skip periods, and the interval: timerlat's
    /// thread arms its next timer after it ran, at the first period still ahead, so a thread
    /// `k` intervals late skips `k` periods its count never shows (they are missed, here, where
    /// they fell). `None`: the tracer's count shows every period.
    skips: Option<(usize, u64)>,
    /// The periods skipped so far (see `skips`): the count's periods are shifted by them.
    skipped: u64,
    buf: [u8; 4096],
    line: [u8; LINE],
    len: usize,
    /// The rest of the line being read is skipped (it was longer than [`LINE`]).
    skipping: bool,
}

impl TraceReader {
    /// A reader of the pipe at `path` (opened here, in the thread's set-up, without blocking),
    /// for a run of `periods` periods; `slots[s]` is the index of series `s`'s handoff in the
    /// thread's role.
    pub fn open(
        path: &std::path::Path,
        parse: ParseLine,
        slots: Vec<Option<usize>>,
        periods: u64,
    ) -> Result<TraceReader, crate::vocab::Error> {
        Self::open_text(path, parse, slots, periods).map_err(crate::vocab::Error::System)
    }

    /// [`Self::open`], its failure as text.
    fn open_text(
        path: &std::path::Path,
        parse: ParseLine,
        slots: Vec<Option<usize>>,
        periods: u64,
    ) -> Result<TraceReader, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Ok(TraceReader {
            pipe,
            parse,
            slots,
            periods,
            first: None,
            opener: None,
            skips: None,
            skipped: 0,
            buf: [0; 4096],
            line: [0; LINE],
            len: 0,
            skipping: false,
        })
    }

    /// The reader with the series whose fact opens each of the tracer's periods (see the field).
    pub fn opened_by(self, series: usize) -> TraceReader {
        TraceReader { opener: Some(series), ..self }
    }

    /// The reader with the series whose lateness makes the tracer skip periods (see the field).
    pub fn skipping_after(self, series: usize, interval_ns: u64) -> TraceReader {
        TraceReader { skips: Some((series, interval_ns)), ..self }
    }

    /// Takes one line (without its newline) and hands its fact, if it says one; returns whether
    /// the run's periods are all accounted for.
    fn line(&mut self, out: &mut [Handoff]) -> bool {
        let Some(fact) = (self.parse)(&self.line[..self.len]) else { return false };
        if self.first.is_none() && self.opener.is_some_and(|o| o != fact.series) {
            return false;
        }
        let first = *self.first.get_or_insert(fact.count);
        let period = fact.count.saturating_sub(first) + 1 + self.skipped;
        if period > self.periods {
            return true;
        }
        let missed = match self.skips {
            Some((series, interval_ns)) if series == fact.series => {
                super::missed_after(fact.value_ns, interval_ns, self.periods - period)
            }
            _ => 0,
        };
        if let Some(Some(slot)) = self.slots.get(fact.series) {
            if let Some(h) = out.get_mut(*slot) {
                if period > h.done() {
                    h.served(period, fact.value_ns, missed);
                }
            }
        }
        self.skipped += missed;
        period + missed >= self.periods && out.iter().all(|h| h.done() >= self.periods)
    }
}

impl RtLoop for TraceReader {
    fn run(&mut self, _start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        use std::io::Read;
        // What the tracer wrote between its set-up and the run's start is not the run's: the
        // first period is the tracer's first after it (within the start's margin).
        while matches!(self.pipe.read(&mut self.buf), Ok(n) if n > 0) {}
        while !stop.load(Relaxed) {
            // The pipe is read without blocking; when it is empty the loop sleeps (see POLL).
            let n = match self.pipe.read(&mut self.buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::Interrupted => {
                    std::thread::sleep(POLL);
                    continue;
                }
                Err(_) => return,
            };
            for i in 0..n {
                let b = self.buf[i];
                if b == b'\n' {
                    let done = !self.skipping && self.line(out);
                    self.len = 0;
                    self.skipping = false;
                    if done {
                        return;
                    }
                } else if self.len < LINE {
                    self.line[self.len] = b;
                    self.len += 1;
                } else {
                    self.skipping = true;
                }
            }
        }
    }
}

/// timerlat's line: `#N context irq|thread timer_latency X ns` (anywhere in the line, as the
/// trace prints it after its header of task, CPU, flags and time). Series 0 is the thread's,
/// series 1 the interrupt's.
pub fn timerlat_line(line: &[u8]) -> Option<KernelFact> {
    let text = std::str::from_utf8(line).ok()?;
    let at = text.find('#')?;
    let mut words = text[at + 1..].split_ascii_whitespace();
    let count = words.next()?.parse().ok()?;
    if words.next()? != "context" {
        return None;
    }
    let series = match words.next()? {
        "thread" => 0,
        "irq" => 1,
        _ => return None,
    };
    if words.next()? != "timer_latency" {
        return None;
    }
    let value_ns = words.next()?.parse().ok()?;
    (words.next()? == "ns").then_some(KernelFact { count, series, value_ns })
}

#[cfg(test)]
mod tests;
