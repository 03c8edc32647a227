//! The result document matches the documented schema: `docs/result-schema.json` validates it,
//! and `docs/result-schema.md` describes every field it contains.

mod common;
use common::*;
use serde_json::Value;

fn schema() -> Value {
    serde_json::from_str(include_str!("../docs/result-schema.json")).unwrap()
}

fn field_names(v: &Value, out: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                field_names(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| field_names(x, out)),
        _ => {}
    }
}

#[test]
fn documents_validate_against_the_schema_and_every_field_is_described() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let (_, complete, _) = run_json(&["--duration", "300ms", "--warmup", "10", "--cycle-time", "1s", "--require", "p99.9<1s"]);
    let (_, other, _) = run_json(&["--loops", "50", "--warmup", "0", "--cpus", "0", "--policy", "other", "--no-mlock"]);
    let (_, period, _) = run_json(&[
        "--loops",
        "60",
        "--warmup",
        "0",
        "--measure",
        "period:interval=5ms@0",
        "--measure",
        "timer",
        "--load",
        "none",
    ]);
    let (_, wakeup, _) = run_json(&["--loops", "30", "--warmup", "0", "--cpus", "0", "--measure", "wakeup", "--load", "none"]);
    let ping_pong = ["--loops", "30", "--warmup", "0", "--measure", "wakeup:shape=ping-pong@0", "--load", "none"];
    let (_, ping_pong, _) = run_json(&ping_pong);
    let (_, noise, _) = run_json(&["--loops", "30", "--warmup", "0", "--measure", "noise:threshold=100ns@0", "--load", "none"]);
    let sweep = ["--measure", "wakeup:rate=sweep,rates=500/1000,all@0", "--require", "wakeup.rate>=500"];
    let (_, sweep, _) = run_json(&[&["-D", "300ms", "--warmup", "0", "--load", "none"][..], &sweep].concat());
    assert!(sweep["probes"][0]["sweep"]["steps"][1]["outcome"].is_string() && !sweep["phases"][1]["steps"].is_null(), "{sweep}");
    let prose = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/result-schema.md")).unwrap();
    // A UDP run against an echo on loopback (on the port it was given), for its counts.
    let (mut echo, target) = start_echo(rtgauge(&["udp-echo", "--listen", "127.0.0.1:0", "-D", "60s"]));
    let (_, udp, _) =
        run_json(&["--loops", "30", "--warmup", "0", "--measure", &format!("udp:target={target}@0"), "--load", "none"]);
    let _ = echo.kill();
    let _ = echo.wait();
    assert!(udp["probes"][0]["counts"]["sent"].as_u64().is_some(), "{}", udp["probes"][0]);
    // A traced run (every new worst case is traced: the first values after the start are some).
    let (_, traced, _) = run_json(&["--loops", "300", "--warmup", "0", "--cpus", "0", "--load", "none", "--trace"]);
    if std::fs::read_to_string("/proc/filesystems").unwrap_or_default().contains("tracefs") {
        assert!(!traced["trace"]["captures"].as_array().unwrap().is_empty(), "{}", traced["trace"]);
    }
    for doc in [&complete, &other, &period, &wakeup, &ping_pong, &noise, &udp, &sweep, &traced] {
        let errors: Vec<String> = validator.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path)).collect();
        assert!(errors.is_empty(), "schema violations: {errors:#?}");
        let mut names = Default::default();
        field_names(doc, &mut names);
        for name in names {
            assert!(prose.contains(&format!("`{name}`")), "docs/result-schema.md does not describe `{name}`");
        }
    }
    assert_eq!(complete["schema"], rtgauge::result::SCHEMA);
}

#[test]
fn the_schema_rejects_what_it_should() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let (_, mut doc, _) = run_json(&["--loops", "20", "--warmup", "0", "--cpus", "0"]);
    assert!(validator.is_valid(&doc));
    doc["probes"][0]["undocumented"] = Value::from(1);
    assert!(!validator.is_valid(&doc), "unknown fields are refused");
    doc["probes"][0].as_object_mut().unwrap().remove("undocumented");
    doc["probes"][0].as_object_mut().unwrap().remove("max_ns");
    assert!(!validator.is_valid(&doc), "required fields are required");
}

/// Documents of earlier layouts still validate against their schemas, kept in docs/ (the
/// fixtures were written by rtgauge before the v2 and v3 layouts), and the current schema
/// tells them apart.
#[test]
fn version_1_documents_validate_against_the_version_1_schema() {
    earlier_version_validates(include_str!("../docs/result-schema.v1.json"), include_str!("fixtures/result-v1.json"), 1);
}

#[test]
fn version_2_documents_validate_against_the_version_2_schema() {
    earlier_version_validates(include_str!("../docs/result-schema.v2.json"), include_str!("fixtures/result-v2.json"), 2);
}

fn earlier_version_validates(schema_text: &str, doc_text: &str, version: u32) {
    let old: Value = serde_json::from_str(schema_text).unwrap();
    let doc: Value = serde_json::from_str(doc_text).unwrap();
    assert_eq!(doc["schema"], format!("rtgauge.result.v{version}"));
    let errors: Vec<String> = jsonschema::validator_for(&old).unwrap().iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(!jsonschema::validator_for(&schema()).unwrap().is_valid(&doc), "the current schema tells them apart");
}

/// The schema's percentile fields are the library's table of reported percentiles, no more.
#[test]
fn the_schema_lists_exactly_the_reported_percentiles() {
    let s = schema();
    let props = s["$defs"]["probe_result"]["properties"].as_object().unwrap();
    let in_schema: Vec<&str> =
        props.keys().map(String::as_str).filter(|k| k.starts_with('p') && k.ends_with("_ns") && *k != "probe").collect();
    let mut table: Vec<&str> = rtgauge::vocab::percentiles::REPORTED.iter().map(|p| p.key).collect();
    table.sort_unstable(); // the schema's keys come sorted
    assert_eq!(in_schema, table);
}

/// Every enumeration of probe names in the schema (the configuration's and the entries') lists
/// exactly the probes rtgauge has, and the entries' series every series a probe may report.
#[test]
fn the_schema_names_every_probe_and_series() {
    fn enums<'a>(v: &'a Value, out: &mut Vec<&'a Vec<Value>>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, v)| match (k.as_str(), v) {
                ("enum", Value::Array(a)) => out.push(a),
                _ => enums(v, out),
            }),
            Value::Array(a) => a.iter().for_each(|v| enums(v, out)),
            _ => {}
        }
    }
    let s = schema();
    let mut all = Vec::new();
    enums(&s, &mut all);
    let mut probes: Vec<&str> = rtgauge::probe::registry::names();
    probes.sort_unstable();
    let listed: Vec<Vec<&str>> = all
        .iter()
        .filter(|a| a.iter().any(|v| v == "timer"))
        .map(|a| {
            let mut v: Vec<&str> = a.iter().map(|v| v.as_str().unwrap()).collect();
            v.sort_unstable();
            v
        })
        .collect();
    assert!(listed.len() >= 2, "the configuration's and the entries' probe names");
    assert!(listed.iter().all(|l| *l == probes), "{listed:?} != {probes:?}");
    let series = &s["$defs"]["probe_result"]["properties"]["series"]["enum"];
    for name in probes {
        for one in rtgauge::probe::registry::series_of(name).unwrap() {
            assert!(series.as_array().unwrap().iter().any(|v| v == one), "series {name}.{one} is not in the schema");
        }
    }
}

/// `--measure` gives a probe its own interval and CPUs.
#[test]
fn a_probe_with_its_own_interval_and_cpus_keeps_its_own_accounting() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let (code, doc, out) = run_json(&[
        "--measure",
        "timer:interval=500us@0",
        "--loops",
        "40",
        "--warmup",
        "0",
        "--load",
        "none",
        "--require",
        "timer.missed>=0",
    ]);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
    let typed: rtgauge::result::RunResult = serde_json::from_value(doc).unwrap();
    let p = &typed.config.probes[0];
    // Without --interval the run's interval is the first probe's own: --loops counts its periods.
    assert_eq!((p.name.as_str(), p.interval_ns, p.periods), ("timer", 500_000, 40));
    assert_eq!((typed.config.interval_ns, typed.probes[0].samples + typed.probes[0].missed), (500_000, 40));
    assert_eq!(typed.verdict.checks[0].expr, "timer.missed>=0");
}

/// The schema's `unresolved_percentiles` may name exactly the reported percentiles' fields.
#[test]
fn the_schema_lets_every_reported_percentile_be_unresolved() {
    let s = schema();
    let listed = &s["$defs"]["probe_result"]["properties"]["unresolved_percentiles"]["items"]["enum"];
    let keys: Vec<&str> = rtgauge::vocab::percentiles::REPORTED.iter().map(|p| p.key).collect();
    assert_eq!(listed.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>(), keys);
}

/// A forecast that applies (a fit, return levels, one without an upper end) and a convergence,
/// as the library's types write them, validate: the schema follows `result::forecast`.
#[test]
fn the_schema_takes_a_forecast_that_applies() {
    use rtgauge::result::forecast::{Convergence, Fit, Forecast, Record, ReturnLevel, TestOutcome};
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let (_, mut doc, _) = run_json(&["--loops", "20", "--warmup", "0", "--cpus", "0", "--load", "none"]);
    let level = |horizon: &str, high: Option<f64>| ReturnLevel {
        horizon: horizon.into(),
        periods: 3.6e6,
        level_ns: 52_100.5,
        low_ns: 49_800.0,
        high_ns: high,
    };
    let forecast = Forecast {
        method: "peaks-over-threshold".into(),
        periods: 3_600_000,
        interval_ns: 1_000_000,
        measured_ns: 3_600_000_000_000,
        threshold_ns: Some(20_000),
        exceedances: 1000,
        fit: Some(Fit {
            shape: -0.2,
            shape_low: -0.3,
            shape_high: -0.1,
            scale_ns: 4100.5,
            tail: "bounded".into(),
            endpoint_ns: Some(40_500.0),
            region: vec![[4000.0, -0.3], [4200.0, -0.1]],
        }),
        tests: vec![TestOutcome {
            name: "anderson-darling".into(),
            statistic: 0.4,
            p_value: 0.3,
            passed: true,
            detail: "the 1000 values over 20 µs against the fitted tail".into(),
        }],
        assumed: Some(rtgauge::forecast::UNTESTED.into()),
        not_applicable: None,
        return_levels: vec![level("1h", Some(56_300.0)), level("1y", None), level("1e9 periods", None)],
    };
    let convergence = Convergence {
        start_ns: 0,
        end_ns: 3_600_000_000_000,
        records: vec![Record { at_ns: 0, max_ns: 30_000 }, Record { at_ns: 1_000_000_000, max_ns: 40_000 }],
        last_rise_ns: 1_000_000_000,
        periods_since: 3_599_000,
        settled_percent: 99.9,
        records_last_half: 0,
        rising: false,
    };
    doc["probes"][0]["forecast"] = serde_json::to_value(&forecast).unwrap();
    doc["probes"][0]["convergence"] = serde_json::to_value(&convergence).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
    doc["probes"][0]["forecast"]["fit"]["tail"] = Value::from("light");
    assert!(!validator.is_valid(&doc), "a tail is heavy, bounded or exponential");
}
