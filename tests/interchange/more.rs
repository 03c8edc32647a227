//! interchange: more (a part of tests/interchange/main.rs, whose helpers it uses).

use super::*;

/// Importing streams: a 23 MB file goes in within 128 MB of address space (read whole and
/// parsed as a JSON tree it took about ten times its size).
#[test]
pub(crate) fn import_memory_follows_what_is_kept_not_the_file_size() {
    if runner().is_some() {
        common::skip(common::Skip::Here, "an emulator's own address space does not fit the limit");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let file = dir.path().join("big.json");
    big_cyclictest_json(&file, 2_000_000);
    assert!(std::fs::metadata(&file).unwrap().len() > 20 << 20);
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!("ulimit -v 131072 && exec {} import --db '{db}' '{}'", bin_shell(), file.display()));
    let out = bounded(cmd, 300);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(u(&show(&db, "last")["probes"][0]["samples"]), 2_000_000);
}

/// `export --format cyclictest-hist` is bounded (at most a million rows, more is an error) and
/// written as it goes: a run whose maximum is most of an hour gives a million rows and the rest
/// as overflows, and a reader that stops early ends it quietly.
#[test]
pub(crate) fn cyclictest_hist_export_is_bounded_and_written_as_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let long = edited(dir.path(), "cyclictest-h100.json", "long.json", |v| {
        let t = &mut v["thread"]["0"];
        t["max"] = 3_000_000_000u64.into();
        let cycles = u(&t["cycles"]);
        t["cycles"] = (cycles + 1).into();
        t["histogram"]["3000000000"] = 1.into();
    });
    import(&db, &long);
    for rows in ["1000001", "1000000000000"] {
        let out = bounded(rtgauge(&["export", "last", "--db", &db, "--format", "cyclictest-hist", "--rows", rows]), 60);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("--rows {rows}")) && err.contains("at most 1000000") && out.stdout.is_empty(), "{err}");
    }
    let text = export(&db, "last", "cyclictest-hist", &[]);
    assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 1_000_000, "at most a million rows");
    assert!(trailer(&text, "Histogram Overflows")[0] >= 1, "the value beyond them an overflow");
    // A reader that stops after 10 bytes: no panic, no message.
    let mut child = rtgauge(&["export", "last", "--db", &db, "--format", "cyclictest-hist"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 10];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut head).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(&head, b"# Histogra");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(141), "a broken pipe ends it as SIGPIPE would a Unix tool: {:?}", out.status);
}

/// Every header field of an import is what the file says, and "unknown" where it says nothing:
/// cyclictest's threads each at their own interval (`-d`, 500 µs by default without `-h`); its
/// histogram output, jitterdebugger's and a cyclictest file without its command line state no
/// policy, memory locking or interval; in the summary, the HTML report, the JSON and rteval's XML.
#[test]
pub(crate) fn an_import_states_each_threads_interval_and_unknown_where_the_file_says_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let summary = |run: &str| {
        let out = rtgauge(&["show", run, "--db", &db]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // -i 1000 -t 2 without -h: thread 1 ran at 1.5 ms.
    let doc = import(&db, &fixture("cyclictest-no-h.json"));
    let intervals: Vec<(Value, u64)> =
        doc["config"]["probes"].as_array().unwrap().iter().map(|p| (p["cpus"].clone(), u(&p["interval_ns"]))).collect();
    assert_eq!(intervals, [(serde_json::json!([0]), 1_000_000), (serde_json::json!([1]), 1_500_000)]);
    let longest = per_cpu(&doc).iter().zip([1_000_000, 1_500_000]).map(|(p, i)| u(&p["samples"]) * i).max().unwrap();
    assert_eq!(u(&doc["measured_ns"]), longest, "the longest thread's cycles × its interval");
    assert!(doc["imported"].get("unknown").is_none(), "its command line states them all: {}", doc["imported"]);
    assert!(summary("last").contains("timer on CPUs 0, interval 1 ms; timer on CPUs 1, interval 1.5 ms, SCHED_FIFO 80"));
    // With -h, every thread at -i.
    let doc = import(&db, &fixture("cyclictest-h100.json"));
    assert_eq!(doc["config"]["probes"].as_array().unwrap().len(), 1);
    let no_command_line = edited(dir.path(), "cyclictest-no-h.json", "no-cmdline.json", |v| {
        v.as_object_mut().unwrap().remove("cmdline:");
    });
    for file in [fixture("cyclictest-hist.txt"), fixture("jitterdebugger-results.json"), no_command_line] {
        let doc = import(&db, &file);
        let unknown = doc["imported"]["unknown"].as_array().unwrap_or_else(|| panic!("{}", doc["imported"]));
        for field in ["config.policy", "config.mlockall", "config.interval_ns"] {
            assert!(unknown.iter().any(|u| u == field), "{file:?}: {unknown:?}");
        }
        let text = summary("last");
        let header = text.lines().find(|l| l.starts_with("rtgauge ")).unwrap();
        assert!(header.contains("interval unknown, scheduling policy unknown, memory locking unknown"), "{file:?}: {header}");
        assert!(!header.contains("SCHED_OTHER") && !header.contains("NOT locked"), "{header}");
        let xml = export(&db, "last", "rteval-xml", &[]);
        assert!(xml.contains("<core id=") && !xml.contains("priority=\""), "no priority where none is known: {xml}");
        let html = dir.path().join("report.html");
        let out = rtgauge(&["report", "last", "--db", &db, "--html", html.to_str().unwrap()]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(std::fs::read_to_string(&html).unwrap().contains("scheduling policy unknown, memory locking unknown"));
    }
    // The histogram output states no time and no length either. (Run 3: a file is stored once.)
    let doc = show(&db, "3");
    assert_eq!(doc["imported"]["source"], std::fs::canonicalize(fixture("cyclictest-hist.txt")).unwrap().to_str().unwrap());
    let unknown = doc["imported"]["unknown"].as_array().unwrap();
    assert!(["measured_ns", "started_at"].iter().all(|f| unknown.iter().any(|u| u == f)), "{unknown:?}");
    let text = summary("3");
    assert!(text.contains("(how long is unknown)") && text.contains("time unknown (the file's own is"), "{text}");
}

/// Every time a document states is checked against every other on import: times in order and
/// plausible, what was measured within their span, the worst case at a time within it and in
/// the timeline's window that holds it, the timeline's totals equal to the counts (a count
/// beyond 2^53 refused). Each forgery of a real run's export (two CPUs, a timeline each) is
/// refused naming the field, exit 2, one line; the run as measured, and as written with another
/// time zone, is taken.
#[test]
pub(crate) fn an_rtgauge_export_whose_times_contradict_each_other_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let real = dir.path().join("real.json");
    let out = rtgauge(&[
        "run",
        "-D",
        "3s",
        "--cpus",
        "0-1",
        "--warmup",
        "0",
        "--load",
        "none",
        "--no-store",
        "-q",
        "--json",
        real.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(real.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
    assert!(doc["probes"][0]["timeline"]["count"].as_array().is_some_and(|c| c.len() >= 2), "a timeline to forge");
    // The worst case's window on CPU 0, and another window.
    let tl = &doc["probes"][0]["timeline"];
    let (start, window) = (u(&tl["start_ns"]), u(&tl["window_ns"]));
    let at = u(&doc["probes"][0]["max_at_ns"]);
    let its = ((at - 1 - start) / window) as usize;
    let other = if its == 0 { 1 } else { 0 };
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit, &[&str])> = vec![
        ("future.json", Box::new(|v| v["started_at"] = "9999-01-01T00:00:00.000Z".into()), &["started_at", "future"]),
        ("past.json", Box::new(|v| v["started_at"] = "1900-01-01T00:00:00.000Z".into()), &["started_at", "before 1970"]),
        ("garbled.json", Box::new(|v| v["ended_at"] = "yesterday".into()), &["ended_at", "RFC 3339"]),
        (
            "reversed.json",
            Box::new(|v| {
                let (s, e) = (v["started_at"].clone(), v["ended_at"].clone());
                v["started_at"] = e;
                v["ended_at"] = s;
            }),
            &["ended_at", "before started_at"],
        ),
        (
            "longer.json",
            Box::new(|v| v["measured_ns"] = 30_000_000_000u64.into()),
            &["measured_ns", "longer than the run's span"],
        ),
        (
            "late-max.json",
            Box::new(|v| {
                v["probes"][0]["max_at_ns"] = 300_000_000_000u64.into();
                v["combined"][0]["max_at_ns"] = 300_000_000_000u64.into();
            }),
            &["timer/cpu0", "max_at_ns", "past the run's end"],
        ),
        (
            "moved-max.json",
            Box::new(move |v| {
                let moved = start + other as u64 * window + window / 2;
                v["probes"][0]["max_at_ns"] = moved.into();
            }),
            &["timer/cpu0", "timeline", "max_at_ns"],
        ),
        (
            "huge-count.json",
            Box::new(|v| v["probes"][0]["timeline"]["count"][0] = (1u64 << 60).into()),
            &["timer/cpu0", "timeline", "2^53"],
        ),
        (
            "more-counted.json",
            Box::new(|v| {
                let c = u(&v["probes"][1]["timeline"]["count"][0]);
                v["probes"][1]["timeline"]["count"][0] = (c + 1).into();
            }),
            &["timer/cpu1", "timeline", "samples"],
        ),
        (
            "missed.json",
            Box::new(|v| {
                let m = u(&v["probes"][0]["timeline"]["missed"][0]);
                v["probes"][0]["timeline"]["missed"][0] = (m + 5).into();
            }),
            &["timer/cpu0", "timeline", "missed"],
        ),
        (
            "short-column.json",
            Box::new(|v| {
                v["probes"][0]["timeline"]["p99_ns"].as_array_mut().unwrap().pop();
            }),
            &["timer/cpu0", "timeline", "length"],
        ),
        (
            "lower-max.json",
            Box::new(move |v| {
                let w = &mut v["probes"][0]["timeline"]["max_ns"][its];
                *w = (u(w) - 1).into();
            }),
            &["timer/cpu0", "timeline"],
        ),
        (
            "windows-past.json",
            Box::new(|v| v["probes"][0]["timeline"]["start_ns"] = 3_600_000_000_000u64.into()),
            &["timer/cpu0", "timeline", "past the run's end"],
        ),
    ];
    for (name, edit, says) in &cases {
        let f = edited_export(&real, name, edit);
        refused(&db, &f, says);
    }
    assert_eq!(stored(&db), 0, "nothing forged stored");
    // The same instants written with a time zone of +02:00: the same run, taken.
    let shifted = edited_export(&real, "zoned.json", |v| {
        for k in ["started_at", "ended_at"] {
            let t = chrono::DateTime::parse_from_rfc3339(v[k].as_str().unwrap()).unwrap();
            let zoned = t.with_timezone(&chrono::FixedOffset::east_opt(7200).unwrap());
            v[k] = zoned.to_rfc3339_opts(chrono::SecondsFormat::Millis, false).into();
        }
    });
    import(&db, &shifted);
    import(&db, &real);
    assert_eq!(stored(&db), 2);
}

/// Every histogram output of the real cyclictest (rt-tests 2.40; fixtures' commands in
/// tests/fixtures/import/README.md) imports with cyclictest's own figures: `-H`/`--histofall`'s
/// summary column is recognised (its Min and Avg lines have no value for it) and never counted
/// as a CPU, with or without `-q` (the status lines' cursor moves), one thread or many
/// (`-t`, `--smp`); each thread's samples are its Total and Overflows, its minimum and maximum
/// its trailer's; the JSON cyclictest wrote of the same run gives the same threads. A summary
/// column that is not its threads' sum is refused.
#[test]
pub(crate) fn every_cyclictest_histogram_output_imports_with_cyclictests_own_figures() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    for (name, threads) in [
        ("cyclictest-H-q.txt", 2),
        ("cyclictest-H-not-quiet.txt", 2),
        ("cyclictest-h-not-quiet.txt", 2),
        ("cyclictest-H-one-thread.txt", 1),
        ("cyclictest-H-smp.txt", 2),
        ("cyclictest-H.json-stdout.txt", 2),
        ("cyclictest-hist.txt", 2),
    ] {
        let text = std::fs::read_to_string(fixture(name)).unwrap();
        let doc = import(&db, &fixture(name));
        let probes = doc["probes"].as_array().unwrap();
        assert_eq!(probes.len(), threads, "{name}: one entry per thread, no summary column among them");
        let (total, over, min, max) = (
            trailer(&text, "Total"),
            trailer(&text, "Histogram Overflows"),
            trailer(&text, "Min Latencies"),
            trailer(&text, "Max Latencies"),
        );
        for (t, p) in probes.iter().enumerate() {
            assert_eq!(u(&p["samples"]), total[t] + over[t], "{name}: thread {t}'s samples");
            assert_eq!(u(&p["min_ns"]), min[t] * 1000, "{name}: thread {t}'s minimum");
            assert_eq!(u(&p["max_ns"]), max[t] * 1000, "{name}: thread {t}'s maximum");
        }
        let all: u64 = probes.iter().map(|p| u(&p["samples"])).sum();
        assert_eq!(u(&doc["combined"][0]["samples"]), all, "{name}: all CPUs together are the threads'");
        if total.len() == threads + 1 {
            assert_eq!(total[threads], total[..threads].iter().sum::<u64>(), "{name}: the file's own summary agrees");
            assert!(
                doc["warnings"].to_string().contains("summary column"),
                "{name}: the summary column is said: {}",
                doc["warnings"]
            );
        }
    }
    // The same run as JSON and as histogram output: the same threads.
    let other = dir.path().join("same-run.db").display().to_string();
    let json = import(&other, &fixture("cyclictest-H.json"));
    let text = import(&other, &fixture("cyclictest-H.json-stdout.txt"));
    for t in 0..2 {
        for k in ["min_ns", "max_ns"] {
            assert_eq!(json["probes"][t][k], text["probes"][t][k], "thread {t}: {k}");
        }
    }
    // A summary column that is not the sum of its threads.
    let forged = dir.path().join("forged-H.txt");
    let original = std::fs::read_to_string(fixture("cyclictest-H-q.txt")).unwrap();
    let row = original.lines().find(|l| l.starts_with("000030 ")).unwrap();
    let mut cells: Vec<String> = row.split_whitespace().map(String::from).collect();
    let last: u64 = cells.last().unwrap().parse().unwrap();
    *cells.last_mut().unwrap() = format!("{:06}", last + 1);
    std::fs::write(&forged, original.replace(row, &format!("{} {}", cells[0], cells[1..].join("\t")))).unwrap();
    refused(&db, &forged, &["not the sum", "--histofall"]);
}

/// cyclictest's `-v` output (a line per sample) imports every sample exactly: per thread its
/// count of lines, its smallest and largest value, the CPU and the interval the output names
/// (`Thread N using cpu C.`, `Thread N Interval: US`).
#[test]
pub(crate) fn cyclictest_verbose_output_imports_every_sample() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let text = std::fs::read_to_string(fixture("cyclictest-v.txt")).unwrap();
    let mut samples: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    let mut intervals: std::collections::BTreeMap<u64, u64> = Default::default();
    for line in text.lines() {
        let parts: Vec<&str> = line.split(':').map(str::trim).collect();
        if parts.len() == 3 && parts.iter().all(|p| p.parse::<u64>().is_ok()) {
            samples.entry(parts[0].parse().unwrap()).or_default().push(parts[2].parse().unwrap());
        }
        if let Some(rest) = line.strip_prefix("Thread ").filter(|l| l.contains("Interval: ")) {
            let (t, i) = rest.split_once(" Interval: ").unwrap();
            intervals.insert(t.parse().unwrap(), i.trim().parse().unwrap());
        }
    }
    assert_eq!(samples.len(), 2, "the fixture has two threads");
    let doc = import(&db, &fixture("cyclictest-v.txt"));
    assert_eq!(doc["imported"]["format"], "cyclictest-verbose");
    for (t, values) in &samples {
        let p = doc["probes"].as_array().unwrap().iter().find(|p| p["cpu"] == *t).unwrap_or_else(|| panic!("cpu {t}"));
        assert_eq!(u(&p["samples"]), values.len() as u64, "thread {t}: a sample per line");
        assert_eq!(u(&p["min_ns"]), values.iter().min().unwrap() * 1000, "thread {t}");
        assert_eq!(u(&p["max_ns"]), values.iter().max().unwrap() * 1000, "thread {t}");
        // (-v prints each interval plus one distance: the step between the threads')
        let step = intervals[&1] - intervals[&0];
        let real = intervals[t] - step;
        let probe = doc["config"]["probes"].as_array().unwrap().iter().any(|c| u(&c["interval_ns"]) == real * 1000);
        assert!(probe, "thread {t}'s interval {real} µs: {}", doc["config"]["probes"]);
    }
}

/// Another tool's histogram gets a forecast (docs/forecast.md, "Binned values" and "A
/// histogram without a timeline"): 2 000 000 values of an exponential tail (scale 5 µs) in
/// cyclictest's whole-µs buckets, which the goodness-of-fit test once refused for their ties.
/// Its values' resolution is kept (1 µs), its assumption stated wherever it is shown, its
/// levels given per periods (the file names no interval: nothing in time, nothing "at 1 ns"),
/// and a requirement relies on it only with --assume-independent: without, the check is not
/// judged and fails (exit 1), saying what to give; with, it is judged.
#[test]
pub(crate) fn a_cyclictest_histogram_is_forecast_with_its_untested_assumption_stated() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("exponential.txt");
    cyclictest_histogram(&file, 1, 2_000_000, 10.0, 5.0, 7);
    let doc = import(&db_in(&dir), &file);
    assert_eq!(doc["imported"]["resolution_ns"], 1000, "{}", doc["imported"]);
    let f = &per_cpu(&doc)[0]["forecast"];
    assert!(f["not_applicable"].is_null(), "forecast: {f}");
    assert_eq!(f["interval_ns"], 0, "the file names no interval: {f}");
    assert!(f["assumed"].as_str().unwrap().starts_with("independence and stationarity assumed, not tested"), "{f}");
    let horizons: Vec<&str> = f["return_levels"].as_array().unwrap().iter().map(|l| l["horizon"].as_str().unwrap()).collect();
    assert_eq!(horizons, ["1e6 periods", "1e9 periods"], "{f}");
    let text = String::from_utf8(rtgauge(&["show", "last", "--db", &db_in(&dir)]).output().unwrap().stdout).unwrap();
    let section = text.split("Was the run long enough?").nth(1).unwrap_or_else(|| panic!("{text}"));
    let flat = section.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("cpu settled 1e6 periods 1e9 periods tail"), "{section}");
    assert!(flat.contains("forecast with independence and stationarity assumed, not tested"), "{section}");
    assert!(!flat.contains(" at 1 ns") && !flat.contains("≈3 h for 1h"), "no time from an unknown interval: {section}");
    let html =
        String::from_utf8(rtgauge(&["report", "last", "--db", &db_in(&dir), "--html", "-"]).output().unwrap().stdout).unwrap();
    assert!(html.contains("<b>Assumed:</b> Independence and stationarity assumed, not tested"), "the HTML report says it");
    for (extra, code, judged) in [(None, 1, false), (Some("--assume-independent"), 0, true)] {
        let db = dir.path().join(format!("{code}.db")).display().to_string();
        let mut args = vec!["import", "--db", &db, "--require", "once-in-1e9<1s", file.to_str().unwrap()];
        args.extend(extra);
        let out = rtgauge(&args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
        let check = &show(&db, "last")["verdict"]["checks"][0];
        assert_eq!(check["expr"], "once-in-1e9<1000000us", "{check}");
        let observed = check["observed"].as_str().unwrap();
        if judged {
            assert!(check["passed"] == true && observed.contains("forecast"), "{check}");
        } else {
            assert!(check["passed"] == false && observed.contains("give --assume-independent"), "{check}");
            assert!(stdout.contains("FAIL: 1 of 1 check failed"), "{stdout}");
        }
    }
}

/// oslat's text output as the real oslat printed it (tests/fixtures/import/README.md): with
/// `-q` and without (its settings first), `-z` (zero buckets omitted, `...` between), `-b 8`,
/// `-B` (the buckets shifted by the bias), one core or two. Each imports with oslat's own
/// figures: per core the cycles (the sum of its bucket counts, the open-ended last bucket's
/// beyond the histogram), its minimum and maximum as printed, the bucket counts at their
/// labels; and the text printed beside a `--json` file imports as that file does.
#[test]
pub(crate) fn oslat_text_output_imports_with_oslats_own_figures() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    for name in ["oslat-q.txt", "oslat-not-quiet.txt", "oslat-z-one-core.txt", "oslat-b8.txt", "oslat-B.txt"] {
        let text = std::fs::read_to_string(fixture(name)).unwrap();
        // The file as a reader sees it: the cores, each bucket's label and counts, the summary.
        let values = |key: &str| -> Vec<String> {
            let line = text.lines().find(|l| l.trim_start().starts_with(key)).unwrap_or_else(|| panic!("{name}: {key}"));
            line.split_once(':').unwrap().1.split_whitespace().take_while(|w| !w.starts_with('(')).map(String::from).collect()
        };
        let cores: Vec<u64> = values("Core:").iter().map(|c| c.parse().unwrap()).collect();
        let buckets: Vec<(u64, Vec<u64>, bool)> = text
            .lines()
            .filter_map(|l| {
                let (label, rest) = l.trim().split_once(" (us):")?;
                let counts = rest.split_whitespace().take_while(|w| !w.starts_with('(')).map(|c| c.parse().unwrap()).collect();
                Some((label.parse().ok()?, counts, rest.contains("including overflows")))
            })
            .collect();
        assert!(!buckets.is_empty(), "{name}");
        let doc = import(&db, &fixture(name));
        assert_eq!(doc["imported"]["format"], "oslat-text", "{name}");
        assert_eq!(doc["imported"]["tool_version"], "2.40", "{name}");
        let entries = per_cpu(&doc);
        assert_eq!(entries.len(), cores.len(), "{name}: an entry per core");
        for (i, (cpu, e)) in cores.iter().zip(&entries).enumerate() {
            let what = format!("{name}, core {cpu}");
            assert_eq!(u(&e["cpu"]), *cpu, "{what}");
            let total: u64 = buckets.iter().map(|b| b.1[i]).sum();
            assert_eq!(u(&e["samples"]), total, "{what}: its cycles are its buckets' counts");
            assert_eq!(u(&e["min_ns"]), values("Minimum:")[i].parse::<u64>().unwrap() * 1000, "{what}");
            assert_eq!(u(&e["max_ns"]), values("Maximum:")[i].parse::<u64>().unwrap() * 1000, "{what}");
            // Every bucket but the open-ended last at its label; the last beyond the histogram,
            // counted at the maximum.
            let kept: Vec<[u64; 3]> =
                e["histogram"]["buckets"].as_array().unwrap().iter().map(|b| [u(&b[0]), u(&b[1]), u(&b[2])]).collect();
            for (label, counts, open) in buckets.iter().filter(|b| b.1[i] > 0) {
                let at = if *open { u(&e["max_ns"]) } else { label * 1000 };
                let got: u64 = kept.iter().filter(|b| b[0] <= at && at <= b[1]).map(|b| b[2]).sum();
                assert!(got >= counts[i], "{what}: bucket {label} µs holds {} (got {got} where it lies)", counts[i]);
            }
        }
    }
    // The same run's --json file and standard output: the same figures.
    let json = import(&db, &fixture("oslat-with-stdout.json"));
    let text = import(&db, &fixture("oslat-with-stdout.json-stdout.txt"));
    for (a, b) in per_cpu(&json).iter().zip(per_cpu(&text)) {
        for k in ["cpu", "samples", "min_ns", "max_ns"] {
            assert_eq!(a[k], b[k], "{k}");
        }
        assert_eq!(a["histogram"]["buckets"], b["histogram"]["buckets"]);
    }
}

/// cyclictest `-v --json`: one run written twice, its JSON (no histogram without `-h`) and its
/// samples on standard output. Each thread's interval is the same both ways (1000 and 1500 µs
/// at `-i 1000` and the default `-d 500`), though `-v` prints "Interval: 1500" and "2000" (the
/// interval plus one distance: a 1000-loop run of one thread takes 1 s, not 1.5); the samples
/// are those `-v` printed (it may not print a thread's last before the run ends: never more
/// than the JSON's cycles), on the CPUs the JSON names; and with one thread the interval is not
/// known (`cyclictest-v.txt` has two: known).
#[test]
pub(crate) fn cyclictest_verbose_with_json_imports_alike_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let json = import(&db, &fixture("cyclictest-v.json"));
    let text = import(&db, &fixture("cyclictest-v.json-stdout.txt"));
    assert_eq!(text["imported"]["format"], "cyclictest-verbose");
    let intervals = |d: &Value| -> Vec<(Value, u64)> {
        d["config"]["probes"].as_array().unwrap().iter().map(|p| (p["cpus"].clone(), u(&p["interval_ns"]))).collect()
    };
    assert_eq!(intervals(&json), intervals(&text), "the same intervals both ways");
    assert_eq!(intervals(&json).iter().map(|i| i.1).collect::<Vec<_>>(), [1_000_000, 1_500_000]);
    let (a, b) = (per_cpu(&json), per_cpu(&text));
    assert_eq!((a.len(), b.len()), (2, 2));
    for (a, b) in a.iter().zip(&b) {
        assert_eq!(a["cpu"], b["cpu"]);
        assert!(u(&b["samples"]) <= u(&a["samples"]) && u(&b["samples"]) > 0, "{b} against {a}");
        assert!(u(&b["max_ns"]) <= u(&a["max_ns"]) && u(&b["min_ns"]) >= u(&a["min_ns"]), "{b} against {a}");
    }
    // One thread: its printed interval less a distance the output does not tell.
    let one = dir.path().join("one.txt");
    let text = std::fs::read_to_string(fixture("cyclictest-v.json-stdout.txt")).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.starts_with("Thread 1") && !l.trim_start().starts_with("1:"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&one, kept).unwrap();
    let doc = import(&db, &one);
    assert!(doc["imported"]["unknown"].as_array().unwrap().iter().any(|u| u == "config.interval_ns"), "{}", doc["imported"]);
}

/// oslat's text output that its tool could not have printed is refused in one line, exit 2,
/// nothing stored: a core number beyond any CPU, a core whose buckets count nothing, a duration
/// of 0, a bucket beyond an hour, a bucket label that is not a number, the open-ended last
/// bucket above the maximum. And a run imported from a file that did not say its interval
/// goes out as rtgauge's JSON and comes back in (its interval still not known).
#[test]
pub(crate) fn oslat_text_that_oslat_could_not_print_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let base = std::fs::read_to_string(fixture("oslat-b8.txt")).unwrap();
    let bucket_line =
        |label: &str| base.lines().find(|l| l.trim_start().starts_with(&format!("{label} (us)"))).unwrap().to_string();
    let zero_counts: String = base
        .lines()
        .map(|l| match l.split_once(" (us):") {
            Some((label, rest)) => {
                format!("{label} (us):\t 0 0{}\n", if rest.contains("including") { " (including overflows)" } else { "" })
            }
            None => format!("{l}\n"),
        })
        .collect();
    let cases: Vec<(String, &str)> = vec![
        (base.replace("Core:\t 0 1", "Core:\t 18446744073709551615 1"), "'Core:' is not followed by a CPU number"),
        (zero_counts, "its buckets count no loop at all"),
        (
            base.replace(&base.lines().find(|l| l.contains("Duration:")).unwrap().to_string(), "    Duration:\t 0 0 (sec)"),
            "'Duration:' is not a duration",
        ),
        (
            base.replace(&bucket_line("008"), &bucket_line("008").replace("008 (us)", "18446744073709551615 (us)")),
            "beyond an hour",
        ),
        (base.replace("002 (us)", "2x (us)"), "bucket '2x' is not a number of µs"),
        (base.replace(&bucket_line("008"), &bucket_line("008").replace("008 (us)", "9999999 (us)")), "its maximum is below it"),
    ];
    for (i, (text, says)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("bad-{i}.txt"));
        std::fs::write(&file, text).unwrap();
        let out = rtgauge(&["import", "--db", &db, file.to_str().unwrap()]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "case {i}: {stderr}");
        assert!(
            stderr.starts_with("rtgauge: error: ") && stderr.trim_end().lines().count() == 1 && stderr.contains(says),
            "case {i}: {stderr}"
        );
    }
    assert!(!std::path::Path::new(&db).exists() || list_count(&db) == 0, "nothing stored");
    // An unknown interval goes out and comes back.
    import(&db, &fixture("oslat-b8.txt"));
    let json = dir.path().join("x.json");
    export(&db, "last", "json", &["-o", json.to_str().unwrap()]);
    let again = dir.path().join("again.db").display().to_string();
    let doc = import(&again, &json);
    assert_eq!(doc["config"]["interval_ns"], 0, "{}", doc["config"]);
    assert!(doc["imported"]["unknown"].as_array().unwrap().iter().any(|u| u == "config.interval_ns"));
}

/// The runs a store holds, by `rtgauge list --json`.
pub(crate) fn list_count(db: &str) -> usize {
    let out = rtgauge(&["list", "--json", "--db", db]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().unwrap().len()
}
