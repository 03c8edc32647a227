//! A kernel-tracer probe's own parts: timerlat's lines read as it prints them, and the
//! conflicts refused before anything runs. The plumbing on this machine's kernel (set-up,
//! reader, journal) is tested with the set-up, in `trace::kernel`.

use super::*;

fn tracer(name: &'static str, family: &'static str, beside_trace: bool) -> KernelTracer {
    KernelTracer {
        tracer: name,
        config: "CONFIG_TRACING",
        instance: vec![],
        shared: vec![],
        cpus_file: None,
        beside_trace,
        family,
    }
}

#[test]
fn timerlats_lines_are_read_as_it_prints_them() {
    let line = b"     <idle>-0       [000] d.h1.  54.029328: #1     context    irq timer_latency       932 ns";
    assert_eq!(timerlat_line(line), Some(KernelFact { count: 1, series: 1, value_ns: 932 }));
    let line = b"       <...>-867    [000] .....  54.029339: #1     context thread timer_latency     11700 ns";
    assert_eq!(timerlat_line(line), Some(KernelFact { count: 1, series: 0, value_ns: 11700 }));
    for not in [&b"# tracer: timerlat"[..], b"#1 context irq timer_latency 932 us", b"#x context irq timer_latency 1 ns", b""] {
        assert_eq!(timerlat_line(not), None, "{}", String::from_utf8_lossy(not));
    }
}

#[derive(Debug)]
struct Kernel(&'static str, Option<KernelTracer>);

impl Probe for Kernel {
    fn name(&self) -> &'static str {
        self.0
    }
    fn schedule(&self) -> super::super::Schedule {
        super::super::Schedule { interval_ns: 1_000_000, warmup_periods: 0, periods: 1 }
    }
    fn settings(&self) -> Vec<String> {
        Vec::new()
    }
    fn instance(&self, _cpu: usize, _cpus: &[usize]) -> Result<Vec<super::super::Role>, crate::vocab::Error> {
        Ok(Vec::new())
    }
    fn kernel(&self) -> Option<KernelTracer> {
        self.1.clone()
    }
}

#[test]
fn two_tracers_of_one_family_or_one_beside_trace_are_refused() {
    let own = Kernel("own", None);
    let a = Kernel("a", Some(tracer("timerlat", "osnoise", false)));
    let b = Kernel("b", Some(tracer("osnoise", "osnoise", true)));
    let c = Kernel("c", Some(tracer("other", "other", true)));
    assert!(check_conflicts(&[&own, &a, &c], false).is_ok());
    let e = check_conflicts(&[&a, &b], false).unwrap_err();
    assert!(e.contains("--measure a and b both need the kernel's osnoise family"), "{e}");
    let e = check_conflicts(&[&own, &a], true).unwrap_err();
    assert!(e.contains("--measure a runs the kernel's timerlat tracer, which cannot run beside --trace"), "{e}");
    assert!(check_conflicts(&[&own, &b, &c], true).is_ok());
}

/// The reader on timerlat's lines as a FIFO gives them: a thread's line before the first
/// interrupt's is not a period's start; a thread 3.5 intervals late makes the kernel skip three
/// periods its count never shows, missed where they fell in both series; the reader ends by
/// itself once every period is accounted for.
#[test]
fn a_late_thread_skips_the_periods_it_passed_in_both_series() {
    use super::super::{Handoff, RtLoop, Sample, ThreadCounters};
    use std::io::Write;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("trace_pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut reader =
        TraceReader::open(&fifo, timerlat_line, vec![Some(0), Some(1)], 8).unwrap().opened_by(1).skipping_after(0, 1_000);
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let (thread_ring, mut thread_facts) = rtrb::RingBuffer::<Sample>::new(64);
    let (irq_ring, mut irq_facts) = rtrb::RingBuffer::<Sample>::new(64);
    let mut out = [
        Handoff::new(thread_ring, Arc::new(ThreadCounters::default()), 0),
        Handoff::new(irq_ring, Arc::new(ThreadCounters::default()), 0),
    ];
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let running = s.spawn(|| reader.run(0, &stop, &mut out));
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut text = String::from("x-1 [001] 1.0: #0 context thread timer_latency 50 ns\n");
        for (n, irq, thread) in [(1, 10, 100), (2, 20, 3_500), (3, 30, 300), (4, 40, 400), (5, 50, 500), (6, 60, 600)] {
            text += &format!("<idle>-0 [001] d.h1. 1.{n}: #{n} context irq timer_latency {irq} ns\n");
            text += &format!("timerlat/1-9 [001] ..... 1.{n}: #{n} context thread timer_latency {thread} ns\n");
        }
        writer.write_all(text.as_bytes()).unwrap();
        let t0 = std::time::Instant::now();
        while !running.is_finished() && t0.elapsed() < std::time::Duration::from_secs(20) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(running.is_finished(), "the reader ends once every period is accounted for");
    });
    let facts = |ring: &mut rtrb::Consumer<Sample>| {
        std::iter::from_fn(|| ring.pop().ok()).map(|s| (s.period, s.latency_ns, s.missed_after)).collect::<Vec<_>>()
    };
    assert_eq!(facts(&mut thread_facts), [(1, 100, 0), (2, 3_500, 3), (6, 300, 0), (7, 400, 0), (8, 500, 0)]);
    assert_eq!(facts(&mut irq_facts), [(1, 10, 0), (2, 20, 0), (6, 30, 0), (7, 40, 0), (8, 50, 0)]);
    assert!(out.iter().all(|h| h.done() == 8));
}
