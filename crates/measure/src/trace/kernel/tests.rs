//! The plumbing of a kernel-tracer probe on this machine's kernel, whose tracers are few (no
//! timerlat here): the run-wide set-up of a tracer (`nop`) in an instance of the run's own,
//! journaled; lines in timerlat's format written into that instance's buffer (its
//! `trace_marker`) and read back by the reader loop through handoffs, as a run's collector gets
//! them, a period the tracer skipped seen as a gap; the instance removed and the journal left
//! with nothing to undo; a tracer the kernel lacks, and a shared setting the journal would not
//! put back, refused with what to do.

use super::*;
use crate::probe::kernel::{timerlat_line, TraceReader};
use crate::probe::{Handoff, RtLoop, Sample, ThreadCounters};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

fn tracer(name: &'static str, family: &'static str, beside_trace: bool) -> KernelTracer {
    KernelTracer {
        tracer: name,
        config: "CONFIG_TRACING",
        instance: vec![("trace_clock", "local".into()), ("buffer_size_kb", "64".into())],
        shared: vec![],
        cpus_file: None,
        beside_trace,
        family,
    }
}

/// A journal of this test's own (the instance it makes is journaled as a run's is).
fn journal(dir: &std::path::Path) -> crate::tuning::journal::Journal {
    std::env::set_var("RTGAUGE_JOURNAL", dir.join("tuning.journal"));
    crate::tuning::journal::Journal::open(&["rtgauge-unit-test".into()]).unwrap_or_else(|e| panic!("{e:?}")).0
}

fn drained(mut ring: rtrb::Consumer<Sample>) -> Vec<(u64, u64)> {
    std::iter::from_fn(|| ring.pop().ok()).map(|s| (s.period, s.latency_ns)).collect()
}

/// Removes a trace instance when dropped.
struct Gone(std::path::PathBuf);

impl Drop for Gone {
    fn drop(&mut self) {
        let _ = crate::sys::tracefs::remove_instance(&self.0);
    }
}

#[test]
fn a_tracer_probes_facts_come_from_the_kernels_trace_buffer_and_its_instance_goes() {
    if crate::sys::process::effective_uid() != 0 || !crate::sys::tracefs::supported() {
        println!("SKIPPED: a trace instance needs root and tracefs");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut j = journal(tmp.path());
    // The lines go to the buffer of the CPU the writer runs on.
    let cpu = 0;
    crate::sys::sched::pin_thread_to_cpu(cpu).unwrap();
    let session = KernelSession::start(&mut j, &tracer("nop", "test", true), &[cpu]).unwrap();
    let instance = session.instance().clone();
    // (removed whatever the test finds, so that a failure leaves nothing behind)
    let _gone = Gone(instance.dir.clone());
    assert!(instance.dir.is_dir());
    assert_eq!(std::fs::read_to_string(instance.dir.join("current_tracer")).unwrap().trim(), "nop");
    assert!(std::fs::read_to_string(instance.dir.join("trace_clock")).unwrap().contains("[local]"));

    let mut marker = std::fs::OpenOptions::new().write(true).open(instance.dir.join("trace_marker")).unwrap();
    // A line the tracer wrote before the run's start is not the run's: the reader lets it go.
    marker.write_all(b"#97 context thread timer_latency 97000 ns").unwrap();

    let (thread_ring, thread_facts) = rtrb::RingBuffer::new(64);
    let (irq_ring, irq_facts) = rtrb::RingBuffer::new(64);
    let mut out = [
        Handoff::new(thread_ring, Arc::new(ThreadCounters::default()), 0),
        Handoff::new(irq_ring, Arc::new(ThreadCounters::default()), 0),
    ];
    let mut reader = TraceReader::open(&instance.pipe_of(cpu), timerlat_line, vec![Some(0), Some(1)], 5).unwrap();
    let stop = AtomicBool::new(false);
    let started = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            started.store(true, Relaxed);
            reader.run(0, &stop, &mut out);
            stop.store(true, Relaxed);
        });
        while !started.load(Relaxed) {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        // What timerlat prints, period by period (#3 of the thread lost), each line one write,
        // from this thread on the CPU read.
        for n in 1..=5u64 {
            marker.write_all(format!("#{n} context    irq timer_latency {} ns", 100 * n).as_bytes()).unwrap();
            if n != 3 {
                marker.write_all(format!("#{n} context thread timer_latency {} ns", 1000 * n).as_bytes()).unwrap();
            }
        }
        marker.write_all(b"a line of another writer, not a fact").unwrap();
        // (a reader that never ends fails the test instead of hanging it)
        let t0 = std::time::Instant::now();
        while !stop.load(Relaxed) && t0.elapsed() < std::time::Duration::from_secs(20) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        stop.store(true, Relaxed);
    });
    drop(marker);
    assert_eq!(drained(thread_facts), [(1, 1000), (2, 2000), (4, 4000), (5, 5000)], "the thread's facts, #3 a gap");
    assert_eq!(drained(irq_facts), [(1, 100), (2, 200), (3, 300), (4, 400), (5, 500)]);

    // The reader's thread has ended (and let go of the pipe) before a run removes the instance.
    drop(reader);
    drop(out);
    assert_eq!(session.finish(), Vec::<String>::new(), "nothing lost from the buffer");
    assert!(!instance.dir.exists(), "the instance is removed");
    let restored = j.restore();
    assert!(restored.failed.is_empty(), "{:?}", restored.failed);

    // A tracer this kernel does not have is refused with its option and the kernels that have it.
    let mut j = journal(tmp.path());
    let lacking = tracer("no-such-tracer", "test", true);
    let e = KernelSession::start(&mut j, &lacking, &[cpu]).err().expect("refused");
    assert!(e.contains("this kernel has no no-such-tracer tracer (CONFIG_TRACING"), "{e}");
    assert!(matches!(e, crate::vocab::Error::Unsupported(_)), "a tracer the kernel lacks is unsupported: {e:?}");
    // A shared setting the journal would not put back is refused before anything is written
    // (the system's own tracer is only read).
    let mut unsafe_setting = tracer("nop", "test", true);
    unsafe_setting.shared = vec![("current_tracer", "nop".into())];
    let e = KernelSession::start(&mut j, &unsafe_setting, &[cpu]).err().expect("refused");
    assert!(e.contains("current_tracer is not set: refused"), "{e}");
    assert!(matches!(e, crate::vocab::Error::Invalid(_)), "a setting the journal would not undo is refused as asked: {e:?}");
    assert!(j.restore().failed.is_empty());
}
