//! A kernel-tracer probe's own parts: timerlat's lines read as it prints them, and the
//! conflicts refused before anything runs. The plumbing on this machine's kernel (set-up,
//! reader, journal) is tested with the set-up, in `trace::kernel`.

use super::*;

fn tracer(name: &'static str, family: &'static str, beside_trace: bool) -> KernelTracer {
    KernelTracer { tracer: name, config: "CONFIG_TRACING", instance: vec![], shared: vec![], beside_trace, family }
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
