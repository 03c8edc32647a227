//! Import and export: other tools' real result files (tests/fixtures/import, made with Debian's
//! rt-tests and jitterdebugger) come into the store with exactly the figures their tools printed;
//! a run exported and imported again keeps every number; the export formats carry what their
//! readers need (cyclictest's histogram trailer, JUnit test cases per check).

mod common;
use common::*;
use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(name)
}

fn db_in(dir: &tempfile::TempDir) -> String {
    dir.path().join("runs.db").to_string_lossy().into_owned()
}

/// Imports `file` into `db` and returns the stored document, checked against the schema.
fn import(db: &str, file: &std::path::Path) -> Value {
    let out = rtgauge(&["import", "--db", db, file.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Imported "), "{}", String::from_utf8_lossy(&out.stdout));
    let doc = show(db, "last");
    let schema: Value = serde_json::from_str(include_str!("../docs/result-schema.json")).unwrap();
    let errors: Vec<String> = jsonschema::validator_for(&schema).unwrap().iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{}: {errors:?}", file.display());
    doc
}

fn show(db: &str, run: &str) -> Value {
    let out = rtgauge(&["show", run, "--json", "--db", db]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn export(db: &str, run: &str, format: &str, extra: &[&str]) -> String {
    let out = rtgauge(&[&["export", run, "--db", db, "--format", format][..], extra].concat()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The per-CPU entries of a document, in CPU order.
fn per_cpu(doc: &Value) -> Vec<Value> {
    doc["probes"].as_array().unwrap().clone()
}

#[test]
fn an_imported_cyclictest_json_shows_exactly_what_cyclictest_printed() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    for name in ["cyclictest-h100.json", "cyclictest-no-h.json"] {
        let file: Value = serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap();
        let doc = import(&db, &fixture(name));
        let imported = &doc["imported"];
        assert_eq!(
            (imported["tool"].as_str(), imported["tool_version"].as_str()),
            (Some("cyclictest"), Some("2.40")),
            "{imported}"
        );
        assert_eq!(imported["command_line"], file["cmdline:"]);
        assert!(imported["source"].as_str().unwrap().ends_with(name));
        assert_eq!(doc["system"]["kernel_release"], file["sysinfo"]["release"]);
        let threads = file["thread"].as_object().unwrap();
        assert_eq!(per_cpu(&doc).len(), threads.len());
        for (t, p) in threads.values().zip(per_cpu(&doc)) {
            assert_eq!(p["cpu"], t["cpu"]);
            assert_eq!(u(&p["samples"]), u(&t["cycles"]), "cycles");
            assert_eq!(u(&p["min_ns"]), u(&t["min"]) * 1000, "min");
            assert_eq!(u(&p["max_ns"]), u(&t["max"]) * 1000, "max");
            assert_eq!(p["mean_ns"].as_f64().unwrap(), (t["avg"].as_f64().unwrap() * 1000.0 * 10.0).round() / 10.0, "avg");
            let in_hist: u64 = t["histogram"].as_object().map_or(0, |h| h.values().map(u).sum());
            if in_hist == 0 {
                assert!(p["p99_ns"].is_null(), "without a histogram no percentile: {p}");
            } else {
                // Samples beyond -h are counted at the maximum.
                assert_eq!(u(&p["histogram"]["total_count"]), u(&t["cycles"]));
            }
        }
        let out = rtgauge(&["show", "last", "--db", &db]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.starts_with("imported from cyclictest 2.40 (cyclictest-json"), "{text}");
        let t0 = &threads["0"];
        let avg = format!("{:.3}", t0["avg"].as_f64().unwrap());
        assert!(
            text.contains(&avg) && text.contains(&format!("{}.000", t0["max"])),
            "cyclictest's figures in the summary: {text}"
        );
    }
}

/// The figures of cyclictest's histogram output: its trailer's line `key` per thread.
fn trailer(text: &str, key: &str) -> Vec<u64> {
    let line = text.lines().find(|l| l.starts_with(&format!("# {key}:"))).unwrap();
    line.split(':').nth(1).unwrap().split_whitespace().map(|v| v.parse().unwrap()).collect()
}

#[test]
fn cyclictest_histogram_output_is_imported_with_and_without_total_and_zero_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let text = std::fs::read_to_string(fixture("cyclictest-hist.txt")).unwrap();
    let (total, over) = (trailer(&text, "Total"), trailer(&text, "Histogram Overflows"));
    let (min, avg, max) = (trailer(&text, "Min Latencies"), trailer(&text, "Avg Latencies"), trailer(&text, "Max Latencies"));
    let mut docs = Vec::new();
    for name in ["cyclictest-hist.txt", "cyclictest-hist-no-total-no-zero-rows.txt"] {
        let doc = import(&db, &fixture(name));
        assert_eq!(doc["imported"]["format"], "cyclictest-hist");
        for (t, p) in per_cpu(&doc).iter().enumerate() {
            assert_eq!(u(&p["samples"]), total[t] + over[t], "{name}: cycles = Total + Overflows");
            assert_eq!((u(&p["min_ns"]), u(&p["max_ns"])), (min[t] * 1000, max[t] * 1000), "{name}");
            assert_eq!(p["mean_ns"].as_f64().unwrap(), (avg[t] * 1000) as f64, "{name}");
        }
        docs.push(doc);
    }
    assert_eq!(per_cpu(&docs[0]), per_cpu(&docs[1]), "the same figures whichever variant");
}

#[test]
fn jitterdebugger_and_oslat_results_are_imported_as_printed() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let jd: Value = serde_json::from_str(&std::fs::read_to_string(fixture("jitterdebugger-results.json")).unwrap()).unwrap();
    let doc = import(&db, &fixture("jitterdebugger-results.json"));
    assert_eq!(doc["imported"]["tool"], "jitterdebugger");
    for (c, p) in jd["cpu"].as_object().unwrap().values().zip(per_cpu(&doc)) {
        assert_eq!(
            (u(&p["samples"]), u(&p["min_ns"]), u(&p["max_ns"])),
            (u(&c["count"]), u(&c["min"]) * 1000, u(&c["max"]) * 1000)
        );
        assert_eq!(p["mean_ns"].as_f64().unwrap(), (c["avg"].as_f64().unwrap() * 1000.0 * 10.0).round() / 10.0);
    }
    let os: Value = serde_json::from_str(&std::fs::read_to_string(fixture("oslat.json")).unwrap()).unwrap();
    let doc = import(&db, &fixture("oslat.json"));
    assert_eq!((doc["imported"]["tool"].as_str(), doc["probes"][0]["probe"].as_str()), (Some("oslat"), Some("noise")));
    for (t, p) in os["thread"].as_object().unwrap().values().zip(per_cpu(&doc)) {
        let loops: u64 = t["histogram"].as_object().unwrap().values().map(u).sum();
        assert_eq!((u(&p["samples"]), u(&p["max_ns"])), (loops, u(&t["max"]) * 1000));
    }
}

#[test]
fn a_run_exported_and_imported_again_keeps_every_number() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let (code, doc, out) =
        run_json(&["--loops", "500", "--warmup", "0", "--load", "none", "--db", &db, "--require", "samples>=1"]);
    // (the verdict and the warnings say why, should it ever fail: seen once beside a CI run)
    assert_eq!(code, 0, "{}\n{}", doc["verdict"], String::from_utf8_lossy(&out.stderr));
    let file = dir.path().join("exported.json");
    let out = rtgauge(&["export", "last", "--db", &db, "--format", "json", "-o", file.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut again = import(&db, &file);
    assert_eq!(again["imported"]["format"], "rtgauge-json");
    again.as_object_mut().unwrap().remove("imported");
    assert_eq!(again, doc, "every number of the run, back from its export");

    // Through cyclictest's formats: the figures at cyclictest's resolution (µs).
    for format in ["cyclictest-json", "cyclictest-hist"] {
        let path = dir.path().join(format);
        std::fs::write(&path, export(&db, "1", format, &[])).unwrap();
        let back = import(&db, &path);
        for (a, b) in per_cpu(&doc).iter().zip(per_cpu(&back)) {
            assert_eq!(u(&b["samples"]), u(&a["samples"]) - u(&a["handoff_overflows"]), "{format}");
            assert_eq!(u(&b["max_ns"]), u(&a["max_ns"]) / 1000 * 1000, "{format}: max truncated to µs");
            assert_eq!(u(&b["min_ns"]), u(&a["min_ns"]) / 1000 * 1000, "{format}: min truncated to µs");
        }
    }
}

#[test]
fn cyclictest_histogram_export_has_its_trailer_and_counts_overflows() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    import(&db, &fixture("cyclictest-h100.json"));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(fixture("cyclictest-h100.json")).unwrap()).unwrap();
    let text = export(&db, "last", "cyclictest-hist", &["--rows", "100"]);
    assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 100, "one row per µs as -h 100");
    let (total, over) = (trailer(&text, "Total"), trailer(&text, "Histogram Overflows"));
    for (t, th) in file["thread"].as_object().unwrap().values().enumerate() {
        assert_eq!(total[t] + over[t], u(&th["cycles"]), "every cycle in the histogram or its overflows");
        let in_file: u64 = th["histogram"].as_object().unwrap().values().map(u).sum();
        assert_eq!(total[t], in_file, "the rows hold what cyclictest's histogram held");
    }
    assert_eq!(
        trailer(&text, "Max Latencies"),
        file["thread"].as_object().unwrap().values().map(|t| u(&t["max"])).collect::<Vec<_>>()
    );
    assert!(text.contains("# Histogram Overflow at cycle number:\n# Thread 0:"), "{text}");
}

#[test]
fn junit_has_a_test_case_per_check_and_fails_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let (code, doc, _) = run_json(&[
        "--loops",
        "200",
        "--warmup",
        "0",
        "--load",
        "none",
        "--db",
        &db,
        "--require",
        "max<1ns",
        "--require",
        "samples>=1",
    ]);
    assert_eq!(code, 1, "max<1ns cannot pass");
    let xml = export(&db, "last", "junit", &[]);
    let checks = doc["verdict"]["checks"].as_array().unwrap();
    let failed = checks.iter().filter(|c| c["passed"] == false).count();
    assert_eq!(xml.matches("<testcase ").count(), checks.len(), "{xml}");
    assert_eq!(xml.matches("<failure ").count(), failed, "{xml}");
    assert!(xml.contains(&format!("tests=\"{}\" failures=\"{failed}\"", checks.len())), "{xml}");
    assert!(xml.contains("name=\"max&lt;0.001us timer/cpu0\""), "{xml}");
    let csv = export(&db, "last", "csv", &[]);
    assert_eq!(csv.lines().count(), 1 + doc["probes"].as_array().unwrap().len() + doc["combined"].as_array().unwrap().len());
    assert!(csv.starts_with("probe,series,cpu,samples,missed"), "{csv}");
}

#[test]
fn bad_imports_and_exports_are_one_line_errors_that_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "meeting notes, not a histogram\n").unwrap();
    let half = dir.path().join("half.json");
    std::fs::write(&half, "{\"thread\": {\"0\": {\"cycles\": 5").unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, "{\"name\": \"something else\"}").unwrap();
    let good = fixture("cyclictest-h100.json");
    let cases: Vec<(Vec<&str>, &[&str])> = vec![
        (vec!["import", "/nonexistent.json"], &["/nonexistent.json", "No such file"]),
        (vec!["import", "/dev/zero"], &["/dev/zero", "larger than"]),
        (vec!["import", notes.to_str().unwrap()], &["notes.txt", "not cyclictest histogram output"]),
        (vec!["import", half.to_str().unwrap()], &["half.json", "not valid JSON"]),
        (vec!["import", good.to_str().unwrap(), other.to_str().unwrap()], &["other.json", "not a result rtgauge can import"]),
        (vec!["export", "last", "--format", "xls"], &["--format xls", "csv, junit"]),
        (vec!["export", "last", "--format", "cyclictest-hist", "--rows", "0"], &["--rows 0", "e.g. --rows 400"]),
        (vec!["export", "last", "--format", "csv", "-o", "/nonexistent-dir/x.csv"], &["/nonexistent-dir/x.csv"]),
    ];
    for (args, says) in cases {
        let out = rtgauge(&[&args[..], &["--db", &db]].concat()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(says.iter().all(|s| err.contains(s)), "{args:?} should say {says:?}: {err}");
    }
    assert!(!std::path::Path::new(&db).exists(), "no import stored anything, not even the good file beside a bad one");
}

/// The text of every `<tag …>value</tag>` in `xml`, in order.
fn values(xml: &str, tag: &str) -> Vec<String> {
    xml.split(&format!("<{tag}")).skip(1).map(|s| s.split_once('>').unwrap().1.split('<').next().unwrap().to_string()).collect()
}

/// rteval's layout: per CPU (`<core>`) and over all (`<system>`) the samples, minimum and
/// maximum of the run in µs, and 1 µs buckets that hold every sample; an imported cyclictest
/// file's cycles, min and max exactly as cyclictest printed them.
#[test]
fn rteval_xml_export_has_every_cpu_with_its_figures_and_buckets() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let doc = import(&db, &fixture("cyclictest-h100.json"));
    let xml = export(&db, "last", "rteval-xml", &[]);
    assert!(xml.starts_with("<?xml") && xml.contains("<rteval ") && xml.trim_end().ends_with("</rteval>"));
    assert!(xml.contains("<cyclictest command_line="), "the timer is rteval's cyclictest measurement");
    let cpus = per_cpu(&doc);
    let cores: Vec<&str> = xml.split("<core ").skip(1).collect();
    assert_eq!(cores.len(), cpus.len());
    for (core, p) in cores.iter().zip(&cpus) {
        assert!(core.starts_with(&format!("id=\"{}\"", p["cpu"])), "{core}");
        assert_eq!(values(core, "samples")[0], u(&p["samples"]).to_string());
        assert_eq!(values(core, "minimum")[0], (u(&p["min_ns"]) / 1000).to_string());
        assert_eq!(values(core, "maximum")[0], (u(&p["max_ns"]) / 1000).to_string());
        let body = core.split("</core>").next().unwrap();
        let in_buckets: u64 = body.split("value=\"").skip(1).map(|v| v.split('"').next().unwrap().parse::<u64>().unwrap()).sum();
        assert_eq!(in_buckets, u(&p["samples"]), "the 1 µs buckets hold every sample");
    }
    let system = xml.split("<system ").nth(1).unwrap();
    let total: u64 = cpus.iter().map(|p| u(&p["samples"])).sum();
    assert_eq!(values(system, "samples")[0], total.to_string());
}
