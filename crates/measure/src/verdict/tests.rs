//! The verdict's tests (a part of `verdict`, its module).

use super::*;
use crate::result::histogram::new_histogram;
use crate::result::histogram::HistogramData;
use crate::scenario::require::parse_requirement;

fn facts(status: Status) -> RunFacts {
    RunFacts {
        status,
        failed_loads: Vec::new(),
        intervals: vec![("timer".into(), vec![0, 1], 1_000_000)],
        assume_independent: false,
    }
}

#[test]
fn a_run_that_measured_nothing_never_passes() {
    let mut empty = probe(1, 10_000, 0);
    empty.samples = 0;
    let r = vec![parse_requirement("missed==0").unwrap()];
    let v = evaluate(&[probe(0, 10_000, 0), empty.clone()], &[all(10_000)], None, 0.25, &r, &facts(Status::Complete));
    assert!(!v.passed);
    assert!(v.checks.iter().any(|c| c.expr == "samples>0" && c.scope == "timer/cpu1" && !c.passed));
    let v = evaluate(&[empty], &[], None, 0.25, &[], &facts(Status::Complete));
    assert!(!v.passed && v.headline().starts_with("FAIL: nothing was measured"), "{}", v.headline());
}

#[test]
fn a_failed_load_fails_a_run_with_criteria() {
    let f = RunFacts { failed_loads: vec!["cmd:false".into()], ..facts(Status::Complete) };
    let r = vec![parse_requirement("missed==0").unwrap()];
    let v = evaluate(&[probe(0, 10_000, 0)], &[all(10_000)], None, 0.25, &r, &f);
    assert!(!v.passed && v.checks.iter().any(|c| c.expr == "loads==ok" && !c.passed));
    assert!(evaluate(&[probe(0, 10_000, 0)], &[all(10_000)], None, 0.25, &[], &f).passed, "no criteria: reported, not judged");
}

fn probe(cpu: usize, max: u64, missed: u64) -> ProbeResult {
    let mut h = new_histogram();
    h.record(1_000).unwrap();
    h.record(max).unwrap();
    ProbeResult {
        probe: "timer".into(),
        series: None,
        cpu: Some(cpu),
        samples: 2,
        missed,
        warmup_samples: 0,
        warmup_missed: 0,
        handoff_overflows: 0,
        page_faults: None,
        min_ns: Some(1_000),
        mean_ns: Some((1_000 + max) as f64 / 2.0),
        percentiles: crate::vocab::percentiles::Values::from_fn(|q| Some(if q == 50.0 { 1_000 } else { max })),
        max_ns: Some(max),
        max_at_ns: Some(0),
        bounds: None,
        counts: Default::default(),
        measures: None,
        noise: None,
        sweep: None,
        timeline: None,
        convergence: None,
        forecast: None,
        histogram: HistogramData::encode(&h),
    }
}

/// A timer series on `cpu` drawn from a known exponential tail over 3 600 000 periods (an
/// hour at 1 ms), with its forecast and convergence made as a run makes them.
fn forecast_probe(cpu: usize, stream: u64) -> ProbeResult {
    use rtgauge_truth::{draw, forecast_of, Rng, Tail};
    let d = draw(Tail::Exponential { scale: 5_000.0 }, 3_600_000, 0.0, &mut Rng::new(stream));
    let mut p = probe(cpu, d.max.0, 0);
    p.samples = d.n;
    p.max_at_ns = Some(d.max.1);
    p.forecast = Some(forecast_of(&d));
    p.convergence =
        crate::forecast::convergence::of(&d.timeline, (1_000_000_000, 1_000_000_000 + d.n * 1_000_000), Some(d.max), 1_000_000);
    p.histogram = d.histogram;
    p.timeline = Some(d.timeline);
    p
}

#[test]
fn a_return_level_is_judged_by_the_end_of_its_interval_and_an_unjudged_one_fails() {
    let p = forecast_probe(0, 11);
    let f = p.forecast.clone().unwrap();
    assert!(f.applies(), "{:?}", f.not_applicable);
    let year = f.return_levels.iter().find(|l| l.horizon == "1y").unwrap().clone();
    let high = year.high_ns.unwrap();
    // Between the estimate and the upper end: the claim is not supported.
    let between = ((year.level_ns + high) / 2.0) as u64;
    let above = high as u64 + 1_000;
    let judge = |req: &str, p: &ProbeResult| {
        let v = evaluate(std::slice::from_ref(p), &[], None, 0.25, &[parse_requirement(req).unwrap()], &facts(Status::Complete));
        v.checks.into_iter().find(|c| c.expr.starts_with("once") || c.expr.starts_with("settled")).unwrap()
    };
    let c = judge(&format!("once-per-1y<{between}ns"), &p);
    assert!(!c.passed && c.observed.contains("upper end of the 95 % interval, forecast"), "{c:?}");
    assert!(judge(&format!("once-per-1y<{above}ns"), &p).passed);
    // The same level asked for in periods.
    assert!(judge(&format!("once-in-3.15576e10<{above}ns"), &p).passed);
    // A forecast that does not apply: not judged, failed, with the reason.
    let mut q = p.clone();
    q.forecast.as_mut().unwrap().not_applicable = Some("the window maxima rose during the run".into());
    let c = judge("once-per-1y<1s", &q);
    assert!(!c.passed && c.observed.starts_with("not judged: forecast not applicable: the window maxima rose"), "{c:?}");
    // No forecast at all, and a level below the threshold (measured, not forecast).
    q.forecast = None;
    assert!(judge("once-per-1y<1s", &q).observed.starts_with("not judged"));
    // A horizon the run covered many times over is measured (here once in 10 000 periods:
    // 360 times in 3 600 000), forecast or not.
    let c = judge("once-in-1e4<1s", &q);
    assert!(c.passed && c.observed.contains("measured"), "{c:?}");
    let c = judge(&format!("once-in-1e4<{}ns", p.max_ns.unwrap() / 2), &p);
    assert!(c.observed.contains("measured") && c.observed_value.unwrap() <= p.max_ns.unwrap() as f64 + 1.0, "{c:?}");
    // Convergence: the share since the last rise against the bound; no timeline, not judged.
    let settled = p.convergence.as_ref().unwrap().settled_percent;
    assert!(judge(&format!("settled>={}%", settled.floor()), &p).passed);
    assert_eq!(judge(&format!("settled>={}%", (settled + 1.0).min(100.0)), &p).passed, settled + 1.0 > 100.0);
    q.convergence = None;
    assert!(judge("settled>=0%", &q).observed.starts_with("not judged"));
}

#[test]
fn the_verdict_says_what_the_runs_length_supports() {
    let p = forecast_probe(0, 12);
    let r = [parse_requirement("max<1s").unwrap(), parse_requirement("p99.99999<1s").unwrap()];
    let v = evaluate(std::slice::from_ref(&p), &[], None, 0.25, &r, &facts(Status::Complete));
    let max = v.support.iter().find(|s| s.starts_with("max<")).unwrap();
    // 3 600 000 periods: below 3/n = 8.3e-7 a period; 1e-6 supported, 1e-9 not.
    assert!(max.contains("3 600 000 periods") && max.contains("8.3e-7") && max.contains("too short to support 1e-9."), "{max}");
    assert!(max.contains("The forecast's estimate: "), "{max}");
    let pct = v.support.iter().find(|s| s.starts_with("p99.99999")).unwrap();
    assert!(pct.contains("1 value in 10 000 000") && pct.contains("too short"), "{pct}");
    // A cycle time makes the same claim of its budget; no criteria, no sentence.
    let v = evaluate(std::slice::from_ref(&p), &[], Some(1_000_000_000), 0.25, &[], &facts(Status::Complete));
    assert!(v.support.iter().any(|s| s.starts_with("cycle time 1 s (timer): no value over 250 ms")), "{:?}", v.support);
    assert!(evaluate(&[p], &[], None, 0.25, &[], &facts(Status::Complete)).support.is_empty());
}

/// All CPUs of the timer together, with this maximum.
fn all(max: u64) -> ProbeResult {
    ProbeResult { cpu: None, ..probe(0, max, 0) }
}

#[test]
fn a_requirement_naming_a_probe_applies_to_that_probe_only() {
    let other = ProbeResult { probe: "other".into(), ..probe(1, 900_000, 0) };
    let r = vec![parse_requirement("timer.max<100us").unwrap(), parse_requirement("missed==0").unwrap()];
    let v = evaluate(&[probe(0, 40_000, 0), other], &[all(900_000)], None, 0.25, &r, &facts(Status::Complete));
    let scopes: Vec<(&str, &str)> = v.checks.iter().map(|c| (c.expr.as_str(), c.scope.as_str())).collect();
    assert_eq!(scopes, [("timer.max<100us", "timer/cpu0"), ("missed==0", "timer/cpu0"), ("missed==0", "other/cpu1")]);
    assert!(v.passed, "the slow CPU belongs to another probe");
}

#[test]
fn intervals_are_judged_only_where_a_requirement_names_their_series() {
    // A UIO source's intervals (100 ms apart) beside a timer at 40 µs.
    let interval = |cpu| ProbeResult {
        probe: "event".into(),
        series: Some("interval".into()),
        measures: Some("interval".into()),
        ..probe(cpu, 100_000_000, 0)
    };
    let (cpus, combined) = ([probe(0, 40_000, 0), interval(1)], [all(40_000), ProbeResult { cpu: None, ..interval(1) }]);
    let r = vec![parse_requirement("max<100us").unwrap()];
    let v = evaluate(&cpus, &combined, Some(1_000_000), 0.25, &r, &facts(Status::Complete));
    assert!(v.passed, "an interval is no latency: {:?}", v.checks);
    assert!(v.checks.iter().any(|c| c.scope == "event.interval/cpu1" && c.expr == "missed==0"));
    assert_eq!(v.shortest_cycle_time_ns, Some(160_000), "from the timer's worst case alone");
    let r = vec![parse_requirement("event.interval.max<50ms").unwrap()];
    let v = evaluate(&cpus, &combined, None, 0.25, &r, &facts(Status::Complete));
    assert!(!v.passed && v.checks.iter().any(|c| c.scope == "event.interval/cpu1" && !c.passed));
}

#[test]
fn a_sweep_is_judged_by_the_rate_it_sustained() {
    use crate::result::sweep::{StepOutcome, SweepResult, SweepStep};
    let step = |rate: u32, outcome| SweepStep {
        rate_per_s: rate,
        interval_ns: 1_000_000_000 / u64::from(rate),
        start_ns: 0,
        end_ns: 0,
        bound_ns: 0,
        planned: 1,
        events: 1,
        missed: 0,
        max_ns: None,
        p99_ns: None,
        outcome,
    };
    // Sustained 2000/s, then missed events at 5000/s (so missed > 0 and a large worst case).
    let sweep = SweepResult::new(vec![
        step(1000, StepOutcome::Sustained),
        step(2000, StepOutcome::Sustained),
        step(5000, StepOutcome::Missed),
    ]);
    let swept = ProbeResult { probe: "wakeup".into(), series: Some("chain".into()), sweep: Some(sweep), ..probe(1, 900_000, 40) };
    let cpus = [probe(0, 40_000, 0), swept.clone()];
    let combined = [all(40_000), ProbeResult { cpu: None, ..swept }];
    // A 1 ms cycle needs 1000 events a second: met; the sweep's worst case and misses do not count.
    let v =
        evaluate(&cpus, &combined, Some(1_000_000), 0.25, &[parse_requirement("max<100us").unwrap()], &facts(Status::Complete));
    assert!(v.passed, "{:?}", v.checks);
    assert!(v.checks.iter().any(|c| c.scope == "wakeup.chain/cpu1" && c.expr == "rate>=1000" && c.observed == "2000"));
    assert_eq!(v.shortest_cycle_time_ns, Some(160_000), "from the timer's worst case alone");
    // A 250 us cycle needs 4000 a second: not met; named, the sweep's figures are judged.
    assert!(!evaluate(&cpus, &combined, Some(250_000), 0.25, &[], &facts(Status::Complete)).passed);
    for (req, passes) in [("wakeup.rate>=2000", true), ("rate>=5000", false), ("wakeup.missed==0", false)] {
        let v = evaluate(&cpus, &combined, None, 0.25, &[parse_requirement(req).unwrap()], &facts(Status::Complete));
        assert_eq!(v.passed, passes, "{req}: {:?}", v.checks);
    }
}

#[test]
fn cycle_time_uses_the_budget_on_every_cpu() {
    let cpus = [probe(0, 200_000, 0), probe(1, 260_000, 0)];
    let v = evaluate(&cpus, &[all(260_000)], Some(1_000_000), 0.25, &[], &facts(Status::Complete));
    assert!(!v.passed);
    assert_eq!(v.checks.len(), 4);
    assert!(v.checks.iter().any(|c| c.scope == "timer/cpu1" && c.expr == "max<=250us" && !c.passed));
    assert_eq!(v.shortest_cycle_time_ns, Some(1_040_000));
    let v = evaluate(&cpus, &[all(260_000)], Some(2_000_000), 0.25, &[], &facts(Status::Complete));
    assert!(v.passed);
}

/// Under a cycle time 10× the interval a missed period is a latency judged by the budget
/// (no `missed==0`); at 0.1× (or equal) it is a missed cycle.
#[test]
fn a_missed_period_is_a_latency_below_the_cycle_time_and_a_missed_cycle_at_it() {
    let ms = 1_000_000;
    let exprs = |v: &Verdict| v.checks.iter().map(|c| c.expr.clone()).collect::<Vec<_>>();
    let late = [probe(0, 3 * ms, 3)];
    let v = evaluate(&late, &[all(3 * ms)], Some(10 * ms), 0.25, &[], &facts(Status::Complete));
    assert!(!v.passed && exprs(&v) == ["max<=2500us"], "3 ms is over 2.5 ms, no missed==0: {:?}", v.checks);
    let v = evaluate(&late, &[all(3 * ms)], Some(20 * ms), 0.25, &[], &facts(Status::Complete));
    assert!(v.passed && exprs(&v) == ["max<=5000us"], "{:?}", v.checks);
    assert!(
        v.rules[0].starts_with("missed periods of timer at 1 ms are latencies judged against the 5 ms budget"),
        "{:?}",
        v.rules
    );
    for ct in [ms / 10, ms] {
        let v = evaluate(&late, &[all(3 * ms)], Some(ct), 0.25, &[], &facts(Status::Complete));
        assert!(!v.passed && exprs(&v).contains(&"missed==0".to_string()), "{:?}", v.checks);
        assert!(v.rules[0].contains("is a missed cycle"), "{:?}", v.rules);
    }
    // A missed period whose latency is in no maximum (a lost event of a chain) is at least the interval.
    let f = RunFacts { intervals: vec![("timer".into(), vec![0], 5 * ms)], ..facts(Status::Complete) };
    let v = evaluate(&[probe(0, ms, 1)], &[all(ms)], Some(10 * ms), 0.25, &[], &f);
    assert!(!v.passed && v.checks[0].observed_value == Some(5e6), "{:?}", v.checks);
}

#[test]
fn missed_deadlines_fail_a_cycle_time() {
    let v = evaluate(&[probe(0, 10_000, 3)], &[all(10_000)], Some(1_000_000), 0.25, &[], &facts(Status::Complete));
    assert!(!v.passed);
}

#[test]
fn requirements_and_partial_runs() {
    let r = vec![parse_requirement("p99.9<=50us").unwrap(), parse_requirement("p95<2us").unwrap()];
    let v = evaluate(&[probe(0, 40_000, 0)], &[all(40_000)], None, 0.25, &r, &facts(Status::Complete));
    assert!(!v.passed, "p95 of {{1us,40us}} is 40us");
    assert_eq!(v.checks.iter().filter(|c| c.passed).count(), 1);
    let v = evaluate(&[probe(0, 40_000, 0)], &[all(40_000)], None, 0.25, &r[..1], &facts(Status::Partial));
    assert!(!v.passed && v.checks.last().unwrap().expr == "status==complete");
    let v = evaluate(&[probe(0, 40_000, 0)], &[all(40_000)], None, 0.25, &[], &facts(Status::Partial));
    assert!(v.passed && !v.criteria_given);
}

/// Before a run: a requirement is refused with what to write instead when no series of the
/// planned probes would be judged by it; the rule is the verdict's own ([`applies`]).
#[test]
fn a_requirement_no_planned_series_measures_says_what_to_write() {
    let t =
        |probe, series, (bounded, not_latency, swept, headline)| Target { probe, series, bounded, not_latency, swept, headline };
    let uio = [t("event", Some("interval"), (false, true, false, true))];
    let ping_pong =
        [t("wakeup", Some("pong"), (false, false, false, true)), t("wakeup", Some("ping"), (false, false, false, false))];
    let why = |text: &str, targets: &[Target]| why_unjudged(&parse_requirement(text).unwrap(), targets);
    // A UIO source's intervals are judged only where the requirement names their series.
    assert!(why("max<2ms", &uio).unwrap().contains("e.g. 'event.interval.max<2000us'"));
    assert!(why("event.max<2ms", &uio).unwrap().contains("e.g. 'event.interval.max<2000us'"));
    assert_eq!(why("event.interval.max<2ms", &uio), None);
    assert_eq!(why("missed==0", &uio), None);
    // A series of another shape, a probe not measured.
    assert!(why("wakeup.task.max<1ms", &ping_pong).unwrap().contains("reports the series pong, ping, not 'task'"));
    assert!(why("timer.max<1ms", &ping_pong).unwrap().contains("it measures wakeup"));
    assert_eq!(why("wakeup.ping.p99<1ms", &ping_pong), None);
    // A figure no probe here gives: the probe that gives it, as its module says it.
    let bounds = "below and above count a period loop's cycles outside its bounds; add --measure period (e.g. \
                  period:interval=10ms) or drop the requirement";
    assert_eq!(why("below==0", &uio).as_deref(), Some(bounds));
    assert_eq!(why("above==0", &ping_pong).as_deref(), Some(bounds));
    let rate = "rate is the rate a wake-up sweep sustained; add --measure wakeup:rate=sweep or drop the requirement";
    assert_eq!(why("rate>=1000", &uio).as_deref(), Some(rate));
    assert!(why("event.max<1ms", &[t("event", None, (false, false, false, true))]).is_none());
    assert!(why("event.interval.max<1ms", &[t("event", None, (false, false, false, true))])
        .unwrap()
        .contains("one series, named by the probe alone"));
    // What the verdict judges after the run is what the check lets through before it.
    let result = ProbeResult { probe: "wakeup".into(), series: Some("pong".into()), ..probe(0, 10_000, 0) };
    let r = parse_requirement("wakeup.pong.max<1ms").unwrap();
    assert!(applies(&r, &Target::of(&result)) && why_unjudged(&r, &ping_pong).is_none());
    let v = evaluate(&[result], &[all(10_000)], None, 0.25, &[r], &facts(Status::Complete));
    assert_eq!(v.checks[0].scope, "wakeup.pong/cpu0");
}
