//! Import and export: other tools' real result files (tests/fixtures/import, made with Debian's
//! rt-tests and jitterdebugger) come into the store with exactly the figures their tools printed;
//! a run exported and imported again keeps every number; the export formats carry what their
//! readers need (cyclictest's histogram trailer, JUnit test cases per check).

#[path = "../common/mod.rs"]
mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

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
    let schema: Value = serde_json::from_str(include_str!("../../docs/result-schema.json")).unwrap();
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
    // µs (the default), ns (-N: sysinfo.resolution_in_ns 1), one CPU at another interval (-a 1 -i 500)
    for (name, unit) in [
        ("jitterdebugger-results.json", 1000),
        ("jitterdebugger-N-results.json", 1),
        ("jitterdebugger-a1-i500-results.json", 1000),
    ] {
        let jd: Value = serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap();
        let doc = import(&db, &fixture(name));
        assert_eq!(doc["imported"]["tool"], "jitterdebugger");
        assert_eq!(doc["imported"]["resolution_ns"], unit, "{name}");
        let cpus = jd["cpu"].as_object().unwrap();
        assert_eq!(per_cpu(&doc).len(), cpus.len(), "{name}");
        for ((n, c), p) in cpus.iter().zip(per_cpu(&doc)) {
            assert_eq!(u(&p["cpu"]), n.parse::<u64>().unwrap(), "{name}");
            assert_eq!(
                (u(&p["samples"]), u(&p["min_ns"]), u(&p["max_ns"])),
                (u(&c["count"]), u(&c["min"]) * unit, u(&c["max"]) * unit),
                "{name}"
            );
            let mean = c["avg"].as_f64().unwrap() * unit as f64;
            assert!((p["mean_ns"].as_f64().unwrap() - mean).abs() <= 0.05 + mean * 1e-12, "{name}: {} vs {mean}", p["mean_ns"]);
            let in_histogram: u64 = c["histogram"].as_object().unwrap().values().map(u).sum();
            assert_eq!(u(&p["histogram"]["total_count"]), in_histogram.max(u(&c["count"])), "{name}");
        }
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
    // The run keeps its identity: back in its own store it is there already, stored once.
    let out = rtgauge(&["import", "--db", &db, file.to_str().unwrap()]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("already stored as run 1"), "{said}");
    let other = dir.path().join("other.db").to_string_lossy().into_owned();
    let mut again = import(&other, &file);
    assert_eq!(again["imported"]["format"], "rtgauge-json");
    again.as_object_mut().unwrap().remove("imported");
    assert_eq!(again["uuid"], doc["uuid"], "the run's own UUID");
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
    // A file past the cap (sparse: nothing is written) and a FIFO, which would block a reader.
    let huge = dir.path().join("huge.json");
    std::fs::File::create(&huge).unwrap().set_len(300 << 20).unwrap();
    let fifo = dir.path().join("fifo.json");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let cases: Vec<(Vec<&str>, &[&str])> = vec![
        (vec!["import", "/nonexistent.json"], &["/nonexistent.json", "No such file"]),
        (vec!["import", huge.to_str().unwrap()], &["huge.json", "larger than"]),
        (vec!["import", fifo.to_str().unwrap()], &["fifo.json", "not a regular file"]),
        (vec!["import", dir.path().to_str().unwrap()], &["a directory"]),
        (vec!["import", notes.to_str().unwrap()], &["notes.txt", "not cyclictest histogram output"]),
        (vec!["import", half.to_str().unwrap()], &["half.json", "not valid JSON"]),
        (vec!["import", good.to_str().unwrap(), other.to_str().unwrap()], &["other.json", "not a result rtgauge can import"]),
        (vec!["export", "last", "--format", "xls"], &["--format xls", "csv, junit"]),
        (vec!["export", "last", "--format", "cyclictest-hist", "--rows", "0"], &["--rows 0", "e.g. --rows 400"]),
        (vec!["export", "last", "--format", "cyclictest-hist", "--rows", "1000000000000"], &["--rows 1000000000000", "at most"]),
        (vec!["export", "last", "--format", "csv", "-o", "/nonexistent-dir/x.csv"], &["/nonexistent-dir/x.csv"]),
    ];
    for (args, says) in cases {
        let out = bounded(rtgauge(&[&args[..], &["--db", &db]].concat()), 60);
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

/// Runs `cmd` (standard input closed, output collected) for at most `secs` seconds: a command
/// that blocks (on a FIFO, say) is killed and fails the test.
fn bounded(mut cmd: Command, secs: u64) -> Output {
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output().unwrap()));
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(out) => out,
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            panic!("{cmd:?} did not end within {secs} s");
        }
    }
}

/// How many runs `db` holds.
fn stored(db: &str) -> usize {
    let out = rtgauge(&["list", "--json", "--db", db]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().unwrap().len()
}

/// A fixture's JSON, changed by `edit`, written as `name` in `dir`.
fn edited(dir: &Path, fixture_name: &str, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(fixture(fixture_name)).unwrap()).unwrap();
    edit(&mut v);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    path
}

/// A fixture's text with `from` replaced by `to`, written as `name` in `dir`.
fn replaced(dir: &Path, fixture_name: &str, name: &str, from: &str, to: &str) -> PathBuf {
    let text = std::fs::read_to_string(fixture(fixture_name)).unwrap();
    assert!(text.contains(from), "{fixture_name} has no '{from}'");
    let path = dir.join(name);
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    path
}

/// Imports `file` into `db`, which must fail with exit 2 and one line that names the file and
/// says every one of `says` (and does not panic); returns the line.
fn refused(db: &str, file: &Path, says: &[&str]) -> String {
    let out = bounded(rtgauge(&["import", "--db", db, file.to_str().unwrap()]), 120);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{}: {err}", file.display());
    assert_eq!(err.trim_end().lines().count(), 1, "{}: one line: {err}", file.display());
    assert!(!err.contains("panicked"), "{err}");
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(err.contains(name) && says.iter().all(|s| err.contains(s)), "{name} should say {says:?}: {err}");
    err
}

/// A measured-looking rtgauge result document: a fixture imported and exported as `json`.
fn rtgauge_export(dir: &Path, db: &str) -> PathBuf {
    import(db, &fixture("cyclictest-h100.json"));
    let path = dir.join("export.json");
    let out = rtgauge(&["export", "last", "--db", db, "--format", "json", "-o", path.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    path
}

/// An rtgauge document at `path`, changed by `edit`, written as `name` beside it: a run of its
/// own, so without the UUID of the run it was made from (a document keeps its run's identity
/// wherever it goes: the same UUID is stored once).
fn edited_export(path: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("uuid");
    edit(&mut v);
    let out = path.with_file_name(name);
    std::fs::write(&out, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    out
}

#[test]
fn an_import_whose_min_exceeds_its_max_is_refused_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let d = dir.path();
    let export = rtgauge_export(d, &db);
    let before = stored(&db);
    let files = [
        edited(d, "cyclictest-h100.json", "ct.json", |v| v["thread"]["0"]["min"] = (u(&v["thread"]["0"]["max"]) + 5).into()),
        edited(d, "jitterdebugger-results.json", "jd.json", |v| v["cpu"]["1"]["min"] = (u(&v["cpu"]["1"]["max"]) + 1).into()),
        edited(d, "oslat.json", "os.json", |v| v["thread"]["0"]["max"] = 0.into()),
        replaced(d, "cyclictest-hist.txt", "hist.txt", "# Min Latencies: 00015", "# Min Latencies: 09999"),
        edited_export(&export, "rt.json", |v| v["probes"][0]["min_ns"] = (u(&v["probes"][0]["max_ns"]) + 1).into()),
    ];
    for f in &files {
        refused(&db, f, &["minimum", "above its maximum"]);
    }
    assert_eq!(stored(&db), before, "nothing stored");
}

#[test]
fn an_import_whose_histogram_total_is_not_its_count_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let d = dir.path();
    let export = rtgauge_export(d, &db);
    // jitterdebugger: a count of 0 beside a full histogram.
    refused(
        &db,
        &edited(d, "jitterdebugger-results.json", "jd.json", |v| v["cpu"]["0"]["count"] = 0.into()),
        &["cpu 0", "count is 0"],
    );
    refused(
        &db,
        &edited(d, "cyclictest-h100.json", "ct.json", |v| v["thread"]["1"]["cycles"] = 3.into()),
        &["thread 1", "3 cycles"],
    );
    let total = replaced(d, "cyclictest-hist.txt", "hist.txt", "# Total: 000000989", "# Total: 000000988");
    refused(&db, &total, &["thread 0", "Total: 988", "989"]);
    let cols = replaced(d, "cyclictest-hist.txt", "cols.txt", "000020 000037\t000048", "000020 000037\t000048\t000005");
    refused(&db, &cols, &["line", "3 counts", "have 2"]);
    refused(
        &db,
        &edited_export(&export, "rt.json", |v| v["probes"][1]["samples"] = (u(&v["probes"][1]["samples"]) + 7).into()),
        &["timer/cpu1", "histogram holds"],
    );
    let combined =
        edited_export(&export, "rt-all.json", |v| v["combined"][0]["max_ns"] = (u(&v["combined"][0]["max_ns"]) + 1).into());
    refused(&db, &combined, &["timer/all", "largest of its CPUs'"]);
}

#[test]
fn an_import_with_counts_or_units_out_of_range_is_refused_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let d = dir.path();
    let export = rtgauge_export(d, &db);
    let huge: Value = serde_json::from_str("18446744073709551621").unwrap(); // 2^64 + 5 (a float to serde)
    let cases: Vec<(PathBuf, &[&str])> = vec![
        (edited(d, "cyclictest-h100.json", "ct-cycles.json", |v| v["thread"]["0"]["cycles"] = huge.clone()), &["cycles", "2^53"]),
        (
            edited(d, "cyclictest-h100.json", "ct-bucket.json", |v| v["thread"]["0"]["histogram"]["15"] = (1u64 << 63).into()),
            &["bucket 15", "2^53"],
        ),
        (edited(d, "cyclictest-h100.json", "ct-neg.json", |v| v["thread"]["0"]["min"] = (-4).into()), &["min", "negative"]),
        (
            edited(d, "cyclictest-h100.json", "ct-hour.json", |v| v["thread"]["0"]["max"] = 4_000_000_000u64.into()),
            &["max", "beyond an hour"],
        ),
        (
            edited(d, "jitterdebugger-results.json", "jd-unit.json", |v| {
                v["sysinfo"]["resolution_in_ns"] = 1_000_000_000_000_000_000u64.into()
            }),
            &["resolution_in_ns"],
        ),
        (
            replaced(
                d,
                "jitterdebugger-results.json",
                "jd-unit-f.json",
                "\"resolution_in_ns\": 1000",
                "\"resolution_in_ns\": 1e18",
            ),
            &["resolution_in_ns"],
        ),
        (edited(d, "oslat.json", "os-neg.json", |v| v["thread"]["1"]["histogram"]["1"] = (-5).into()), &["thread 1", "negative"]),
        (replaced(d, "cyclictest-hist.txt", "hist-huge.txt", "000020 000037", "000020 18446744073709551615"), &["line", "2^53"]),
        (
            replaced(
                d,
                "cyclictest-hist.txt",
                "hist-over.txt",
                "# Histogram Overflows: 00011",
                "# Histogram Overflows: 18446744073709551615",
            ),
            &["thread 0", "Overflows"],
        ),
        (edited_export(&export, "rt-samples.json", |v| v["probes"][0]["samples"] = u64::MAX.into()), &["timer/cpu0", "2^53"]),
        (edited_export(&export, "rt-budget.json", |v| v["config"]["budget_percent"] = 0.0.into()), &["budget_percent"]),
    ];
    for (f, says) in &cases {
        refused(&db, f, says);
    }
}

#[test]
fn an_rtgauge_export_edited_to_a_max_below_its_percentiles_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let export = rtgauge_export(dir.path(), &db);
    // The maximum cut to just above the median: p90 and above now exceed it.
    let cut = edited_export(&export, "cut.json", |v| {
        let p = &mut v["probes"][0];
        p["max_ns"] = (u(&p["p50_ns"]) + 1).into();
    });
    refused(&db, &cut, &["timer/cpu0", "p90", "outside its minimum and maximum"]);
    let unordered = edited_export(&export, "unordered.json", |v| {
        let p = &mut v["probes"][1];
        p["p99_ns"] = (u(&p["p90_ns"]) - 1).into();
    });
    refused(&db, &unordered, &["timer/cpu1", "p99", "below its p90"]);
    // The bucket list cut short of the total it claims.
    let buckets = edited_export(&export, "buckets.json", |v| {
        v["probes"][0]["histogram"]["buckets"].as_array_mut().unwrap().pop();
    });
    refused(&db, &buckets, &["timer/cpu0", "buckets hold"]);
}

/// Percentiles edited apart from the histogram beside them (a failing p50 lowered to pass) are
/// refused: the verdict recomputed on import would otherwise judge forged figures. Counts and
/// times beyond anything a run gives are refused too, each naming its field.
#[test]
fn an_rtgauge_export_whose_figures_are_not_its_histograms_or_out_of_range_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let export = rtgauge_export(dir.path(), &db);
    let lowered = edited_export(&export, "lowered.json", |v| {
        for key in ["probes", "combined"] {
            for p in v[key].as_array_mut().unwrap() {
                p["p50_ns"] = p["min_ns"].clone();
            }
        }
    });
    refused(&db, &lowered, &["p50", "is not its histogram's"]);
    for (field, say) in [("missed", "missed"), ("max_at_ns", "max_at_ns"), ("warmup_samples", "warmup_samples")] {
        let huge = edited_export(&export, &format!("huge-{field}.json"), |v| {
            v["probes"][0][field] = u64::MAX.into();
        });
        refused(&db, &huge, &[say, "beyond anything a run measures"]);
    }
    let start = edited_export(&export, "start.json", |v| v["measured_ns"] = u64::MAX.into());
    refused(&db, &start, &["measured_ns"]);
    assert_eq!(stored(&db), 1, "only the fixture the export came from");
}

/// A string far beyond what any tool writes (a 5 MiB host name) is refused while it is read:
/// what the parser holds stays bounded.
#[test]
fn an_import_with_an_endless_string_is_refused_as_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let file = edited(dir.path(), "cyclictest-h100.json", "long-host.json", |v| {
        v["sysinfo"]["nodename"] = "a".repeat(5 << 20).into();
    });
    refused(&db, &file, &["a string of more than"]);
    assert_eq!(stored(&db), 0);
}

#[test]
fn an_imported_verdict_is_recomputed_not_copied() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let export = rtgauge_export(dir.path(), &db);
    // "PASS" with criteria but no checks: the document gives no criteria, so none.
    let pass = edited_export(&export, "pass.json", |v| {
        v["verdict"] = serde_json::json!({"passed": true, "criteria_given": true, "cycle_time_ns": null,
            "budget_percent": 25.0, "shortest_cycle_time_ns": null, "checks": []});
    });
    let doc = import(&db, &pass);
    assert_eq!((&doc["verdict"]["criteria_given"], doc["verdict"]["checks"].as_array().unwrap().len()), (&Value::Bool(false), 0));
    assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("verdict")), "{}", doc["warnings"]);
    // The document's own requirement judged against its figures, whatever the verdict says.
    let strict = edited_export(&export, "strict.json", |v| {
        v["config"]["requirements"] = serde_json::json!(["max<1us"]);
    });
    let doc = import(&db, &strict);
    assert_eq!(doc["verdict"]["passed"], false, "{}", doc["verdict"]);
    assert!(doc["verdict"]["checks"].as_array().unwrap().iter().all(|c| c["expr"] == "max<1us" && c["passed"] == false));
    let out = rtgauge(&["show", "last", "--db", &db]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL"), "{}", String::from_utf8_lossy(&out.stdout));
    // A requirement this rtgauge cannot read is an error, not a pass.
    let nonsense = edited_export(&export, "nonsense.json", |v| v["config"]["requirements"] = serde_json::json!(["whatever"]));
    refused(&db, &nonsense, &["config.requirements[0]"]);
}

#[test]
fn imported_provenance_is_the_file_rtgauge_read_and_its_hash() {
    use sha2::{Digest, Sha256};
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let export = rtgauge_export(dir.path(), &db);
    // The document claims another origin; it is imported through a symbolic link.
    let claims = edited_export(&export, "claims.json", |v| {
        v["imported"] = serde_json::json!({"tool": "cyclictest", "tool_version": "9.99", "format": "cyclictest-json",
            "source": "/lab/golden/board-7.json", "sha256": "00", "command_line": "cyclictest"});
    });
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&claims, &link).unwrap();
    let doc = import(&db, &link);
    let hash: String = Sha256::digest(std::fs::read(&claims).unwrap()).iter().map(|b| format!("{b:02x}")).collect();
    let real = std::fs::canonicalize(&claims).unwrap();
    assert_eq!(doc["imported"]["source"], real.to_str().unwrap(), "the file opened, not the link or the claim");
    assert_eq!(doc["imported"]["sha256"], hash.as_str());
    assert_eq!((doc["imported"]["tool"].as_str(), doc["imported"]["format"].as_str()), (Some("rtgauge"), Some("rtgauge-json")));
    for name in ["cyclictest-hist.txt", "jitterdebugger-results.json"] {
        let doc = import(&db, &fixture(name));
        let hash: String = Sha256::digest(std::fs::read(fixture(name)).unwrap()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(doc["imported"]["sha256"], hash.as_str(), "{name}");
    }
}

#[test]
fn import_errors_never_echo_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let d = dir.path();
    let secret = "hunter2-s3cr3t";
    // A file only its owner reads, reached through a link, in the formats rtgauge tells apart.
    let shadow = d.join("shadow");
    std::fs::write(&shadow, format!("root:{secret}:19000:0:99999:7:::\n")).unwrap();
    std::fs::set_permissions(&shadow, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let link = d.join("link.txt");
    std::os::unix::fs::symlink(&shadow, &link).unwrap();
    let files = [
        link,
        edited(d, "cyclictest-h100.json", "type.json", |v| v["thread"]["0"]["min"] = secret.into()),
        edited(d, "cyclictest-h100.json", "key.json", |v| {
            let t = v["thread"]["0"].clone();
            v["thread"][secret] = t;
        }),
        edited(d, "jitterdebugger-results.json", "bucket.json", |v| v["cpu"]["0"]["histogram"][secret] = 1.into()),
        replaced(d, "cyclictest-hist.txt", "row.txt", "000020 000037", &format!("000020 {secret}")),
    ];
    for f in &files {
        let err = refused(&db, f, &[]);
        assert!(!err.contains(secret) && !err.contains("19000"), "{err}");
    }
    let export = rtgauge_export(d, &db);
    let status = edited_export(&export, "status.json", |v| v["status"] = secret.into());
    let err = refused(&db, &status, &["line", "column"]);
    assert!(!err.contains(secret), "{err}");
}

/// A cyclictest `--json` file of one thread with `buckets` histogram buckets of 1 ns
/// (`--nsecs`), written as it goes.
fn big_cyclictest_json(path: &Path, buckets: u64) {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    write!(f, "{{\"cmdline:\": \"cyclictest -N\", \"thread\": {{\"0\": {{\"histogram\": {{").unwrap();
    for i in 1..=buckets {
        write!(f, "{}\"{i}\": 1", if i > 1 { "," } else { "" }).unwrap();
    }
    let avg = (buckets + 1) as f64 / 2.0;
    write!(f, "}}, \"cycles\": {buckets}, \"min\": 1, \"max\": {buckets}, \"avg\": {avg}}}}}}}").unwrap();
    f.flush().unwrap();
}

mod more;
#[allow(unused_imports)]
use more::*;
