//! The timerlat probe: the kernel's own timer-latency tracer (the source of `rtla timerlat`) as
//! a probe like any other. Per measured CPU the kernel arms a timer every period; its interrupt
//! handler records how late it ran (series `irq`) and wakes a kernel thread (`timerlat/N`, FIFO
//! 95), which records how late it ran (series `thread`). What the user-space `timer` probe sees
//! as one figure is split in two: a late `irq` is the interrupt's (interrupts off, a firmware or
//! hypervisor stall), a late `thread` with a prompt `irq` is the scheduler's (a higher-priority
//! thread, a non-preemptible section).
//!
//! The tracer runs in a trace instance of the run's own (`trace::kernel`); its period and CPUs
//! are the shared `osnoise/` settings, each journaled before it is set and written back after
//! the run, also after a crash (`rtgauge restore`). The facts come from each CPU's text pipe,
//! read by [`TraceReader`] on a CPU the run does not measure where there is one; the kernel's
//! own count of periods (`#N`) places each fact, so a period it skipped is missed.
//!
//! A kernel without the tracer (`CONFIG_TIMERLAT_TRACER`: Debian's PREEMPT_RT kernels have it,
//! its standard ones not) is refused before measuring with the option named.

use super::kernel::{timerlat_line, KernelInstance, KernelTracer, TraceReader};
use super::options::{schedule, Given, ProbeOptions, RunTiming};
use super::{Class, Missed, Plugin, Probe, Role, RtLoop, Schedule};
use crate::result::RunResult;
use crate::vocab::units::{opt_us, Nanos};
use crate::vocab::Error;
use std::fmt::Write;
use std::sync::Arc;

/// The probe's name in `--measure`, results and requirements.
pub const NAME: &str = "timerlat";

/// Its series, the headline first (what an RT thread sees), as the parser numbers them.
pub const SERIES: &[&str] = &["thread", "irq"];

/// The RT priority of the kernel's timerlat threads (the kernel's default; rtla's `-P` can
/// change it, rtgauge does not).
pub const THREAD_PRIORITY: i32 = 95;

/// The periods the kernel accepts (`osnoise/timerlat_period_us`), in whole microseconds.
const PERIOD_US: std::ops::RangeInclusive<u64> = 100..=1_000_000;

/// The timerlat probe, for the registry.
pub const PLUGIN: Plugin = Plugin {
    name: NAME,
    shapes: &[SERIES],
    options: "interval=DURATION (100us..1s, whole microseconds; the run's interval otherwise)",
    help,
    parse,
    missed: Missed::Period,
    published: |series| match series {
        Some("irq") => Some(Class::Irq),
        _ => Some(Class::Timer),
    },
    foreign: &[],
    summary: Some(summary),
    series_priority: |_, series| (series != Some("irq")).then_some(THREAD_PRIORITY),
    swept: |_| false,
    offers: &[],
};

/// `--measure`'s help on the timerlat probe.
fn help() -> String {
    format!(
        "{NAME} (the kernel's timerlat tracer, as rtla timerlat: each wake-up split into the timer interrupt's \
         latency, irq, and its kernel thread's, thread; needs CONFIG_TIMERLAT_TRACER; interval=)"
    )
}

/// Its section of the summary: per CPU, which half of the wake-up came late, the interrupt or
/// the thread after it. A run without it whose timer-like figure failed its criteria is pointed
/// to it: the question it answers is the first an RT engineer asks of a late wake-up.
fn summary(r: &RunResult) -> String {
    let mut s = String::new();
    let of = |series: &'static str| r.probes.iter().filter(move |p| p.probe == NAME && p.series.as_deref() == Some(series));
    for thread in of(SERIES[0]) {
        let Some(irq) = of(SERIES[1]).find(|p| p.cpu == thread.cpu) else { continue };
        if s.is_empty() {
            let _ =
                writeln!(s, "\nThe kernel's timerlat (irq: its timer's interrupt; thread: its thread, FIFO {THREAD_PRIORITY}):");
        }
        let why = match (irq.max_ns, thread.max_ns) {
            (Some(i), Some(t)) if t > i.saturating_mul(2) => {
                "most of the worst wake-up was the thread's, after its interrupt: if\n    it is too late, look at the \
                 scheduler (a thread of higher priority, a\n    section that does not preempt)"
            }
            (Some(_), Some(_)) => {
                "most of the worst wake-up was the interrupt's: if it is too late, look\n    at interrupts held off, \
                 firmware (SMIs) or a hypervisor, which no\n    scheduling setting changes"
            }
            _ => "nothing measured",
        };
        let _ = writeln!(
            s,
            "  {}: irq max {} µs, thread max {} µs:\n    {why}",
            thread.scope(),
            opt_us(irq.max_ns),
            opt_us(thread.max_ns)
        );
    }
    let timer_like_failed = r.verdict.checks.iter().any(|c| {
        !c.passed && c.scope.split('/').next().is_some_and(|probe| super::registry::published(probe, None) == Some(Class::Timer))
    });
    if s.is_empty() && timer_like_failed {
        let _ = writeln!(
            s,
            "\nTo tell whether the timer's interrupt or the thread after it came late,\nmeasure with --measure \
             {NAME}@CPUS (needs CONFIG_TIMERLAT_TRACER)."
        );
    }
    s
}

/// The timerlat probe's options, `timerlat[:interval=DURATION]`.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// `None`: the run's interval.
    pub interval_ns: Option<u64>,
}

fn parse(given: &Given) -> Result<Arc<dyn ProbeOptions>, Error> {
    let mut o = Options { interval_ns: None };
    for (k, v) in given.options {
        match k.as_str() {
            "interval" => o.interval_ns = Some(given.interval(v)?),
            other => return Err(Error::Invalid(given.unknown(other))),
        }
    }
    Ok(Arc::new(o))
}

impl ProbeOptions for Options {
    fn interval_ns(&self) -> Option<u64> {
        self.interval_ns
    }
    fn bind(&self, text: &str, timing: RunTiming) -> Result<Arc<dyn Probe>, Error> {
        let interval_ns = self.interval_ns.unwrap_or(timing.interval_ns);
        if !interval_ns.is_multiple_of(1_000) || !PERIOD_US.contains(&(interval_ns / 1_000)) {
            let whose = if self.interval_ns.is_some() { "its interval=" } else { "the run's --interval" };
            return Err(Error::Invalid(format!(
                "--measure '{text}': the kernel's timerlat takes a period of whole microseconds within 100us..1s, and \
                 {whose} is {}; e.g. timerlat:interval=1ms",
                Nanos(interval_ns)
            )));
        }
        Ok(Arc::new(TimerlatProbe { schedule: schedule(timing, interval_ns) }))
    }
}

/// The timerlat probe: its periods, which are the kernel tracer's.
#[derive(Debug, Clone, Copy)]
pub struct TimerlatProbe {
    pub schedule: Schedule,
}

impl Probe for TimerlatProbe {
    fn name(&self) -> &'static str {
        NAME
    }
    fn schedule(&self) -> Schedule {
        self.schedule
    }
    fn settings(&self) -> Vec<String> {
        vec![
            format!("interval={}", Nanos(self.schedule.interval_ns)),
            format!("priority={THREAD_PRIORITY} (the kernel's timerlat threads)"),
        ]
    }
    fn series(&self) -> &'static [&'static str] {
        SERIES
    }
    fn instance(&self, _cpu: usize, _cpus: &[usize]) -> Result<Vec<Role>, Error> {
        // Only ever asked once the kernel's tracer runs (see `kernel_instance`).
        Err(Error::Unsupported(format!("--measure {NAME} measures with the kernel's timerlat tracer, not started")))
    }
    fn kernel(&self) -> Option<KernelTracer> {
        Some(KernelTracer {
            tracer: NAME,
            config: "CONFIG_TIMERLAT_TRACER",
            // The instance's own clock: the default `global` one put osnoise's times 26 ms off
            // in the RT guest.
            instance: vec![("trace_clock", "local".into())],
            shared: vec![
                ("osnoise/timerlat_period_us", (self.schedule.interval_ns / 1_000).to_string()),
                // Another user's thresholds would stop the trace midway.
                ("osnoise/stop_tracing_us", "0".into()),
                ("osnoise/stop_tracing_total_us", "0".into()),
                ("osnoise/print_stack", "0".into()),
            ],
            cpus_file: Some("osnoise/cpus"),
            // (--trace's worst-case trigger follows rtgauge's own threads, not the kernel's)
            beside_trace: false,
            family: "osnoise",
        })
    }
    fn kernel_instance(&self, cpu: usize, _cpus: &[usize], kernel: &KernelInstance) -> Result<Vec<Role>, Error> {
        let (pipe, Schedule { periods, interval_ns, .. }) = (kernel.pipe_of(cpu), self.schedule);
        let setup = move || -> Result<Box<dyn RtLoop>, Error> {
            // Series 0 (thread) and 1 (irq) are this role's handoffs 0 and 1; irq opens a period;
            // a late thread makes the kernel skip the periods it passed.
            let reader = TraceReader::open(&pipe, timerlat_line, vec![Some(0), Some(1)], periods)?;
            Ok(Box::new(reader.opened_by(1).skipping_after(0, interval_ns)))
        };
        Ok(vec![Role {
            name: "reader",
            cpu: kernel.reader_cpu.unwrap_or(cpu),
            priority: None,
            series: vec![0, 1],
            setup: Box::new(setup),
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::registry::{build, parse};

    fn timing(interval_ns: u64) -> RunTiming {
        RunTiming { interval_ns, warmup_ns: 0, total_ns: 1_000_000_000 }
    }

    #[test]
    fn its_period_is_the_kernels_whole_microseconds_and_its_settings_are_journaled_ones() {
        let p = build(&parse("timerlat@0").unwrap(), timing(1_000_000)).unwrap();
        assert_eq!(p.series(), ["thread", "irq"]);
        assert_eq!(p.schedule().periods, 1_000);
        let k = p.kernel().expect("a kernel tracer");
        assert_eq!(
            (k.tracer, k.config, k.family, k.cpus_file),
            ("timerlat", "CONFIG_TIMERLAT_TRACER", "osnoise", Some("osnoise/cpus"))
        );
        assert!(k.shared.contains(&("osnoise/timerlat_period_us", "1000".into())), "{:?}", k.shared);
        let p = build(&parse("timerlat:interval=250us").unwrap(), timing(1_000_000)).unwrap();
        assert_eq!(p.kernel().unwrap().shared[0].1, "250");
        for (bad, says) in [
            ("timerlat:interval=50us", "its interval= is 50"),
            ("timerlat:interval=1500ns", "whole microseconds"),
            ("timerlat:speed=1", "no option 'speed'"),
        ] {
            let e = parse(bad).and_then(|s| build(&s, timing(1_000_000))).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // The run's interval, when it is not the kernel's kind of period, is named as such.
        let e = build(&parse("timerlat").unwrap(), timing(20_000)).unwrap_err().to_string();
        assert!(e.contains("the run's --interval is 20"), "{e}");
    }
}
