//! The command-line surface: help that teaches by example, version, the live view on a
//! terminal and nothing but the result when output is not a terminal.

mod common;
use common::*;

#[test]
fn help_teaches_by_example() {
    let out = rtgauge(&["--help"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Examples:") && text.contains("rtgauge run --cycle-time"));
    let out = rtgauge(&["run", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--priority 80 --interval 1ms"), "the sources' cyclictest set-up as a command line");
    assert!(text.contains("cyclictest -m -p 80 -i 1000"));
    for flag in ["--cpus", "--policy", "--warmup", "--loops", "--cycle-time", "--budget", "--require", "--json", "--quiet"] {
        assert!(text.contains(flag), "run --help documents {flag}");
    }
}

#[test]
fn version_prints_the_package_version_and_the_build() {
    let out = rtgauge(&["--version"]).output().unwrap();
    assert!(out.status.success());
    // (the tests run the lab build, the default)
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("rtgauge {} (lab build)", env!("CARGO_PKG_VERSION")));
}

#[test]
fn not_a_terminal_prints_only_the_summary() {
    let out = rtgauge(&["run", "--duration", "300ms", "--warmup", "0", "--cpus", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\u{1b}'), "no escape sequences when not a terminal");
    assert!(text.contains("p99.9") && text.contains("timer all"));
    assert!(out.stderr.is_empty(), "nothing on stderr: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn live_view_on_a_terminal() {
    // `script` gives the program a pseudo-terminal.
    // (script's own copy of the session goes to a file of the test's own)
    let dir = tempfile::tempdir().unwrap();
    let typescript = dir.path().join("typescript");
    let cmd = format!("{} run --duration 2s --warmup 0 --cpus 0", bin_shell());
    let Ok(out) = std::process::Command::new("script").args(["-qec", &cmd]).arg(&typescript).output() else {
        common::skip(common::Skip::Missing, "'script' (util-linux) is not installed");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("s left"), "time left is shown: {text}");
    assert!(text.contains("cpu0") && text.contains("missed"), "per-CPU live line: {text}");
    assert!(text.contains("timer all"), "summary follows");

    let cmd = format!("{} run --quiet --duration 1s --warmup 0 --cpus 0", bin_shell());
    let out = std::process::Command::new("script").args(["-qec", &cmd]).arg(&typescript).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("s left"), "--quiet hides the live view");
}

/// A special file named as the destination (a FIFO of the test's own here; `/dev/stdout`, a
/// serial line) is written through, never replaced by a regular file.
/// On a terminal — the summary and the warnings on one screen — a warning said before the run is
/// not said again in the summary (an RT load's was said three times).
#[test]
fn on_a_terminal_each_warning_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let typescript = dir.path().join("typescript");
    let cpu = online_cpus().last().copied().unwrap_or(0).to_string();
    let cmd = format!(
        "{} run --no-store --loops 50 --warmup 0 --cpus {cpu} --load-cpus {cpu} --load cpu:workers=1,policy=fifo:90",
        bin_shell()
    );
    let out = std::process::Command::new("script").args(["-qec", &cmd]).arg(&typescript).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("timer all"), "the summary is shown: {text}");
    let warned: Vec<&str> = text.lines().filter(|l| l.contains("warning:") && l.contains("at or above")).collect();
    assert_eq!(warned.len(), 1, "{text}");
}

#[test]
fn json_to_a_special_file_writes_through_it_and_never_replaces_it() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // A reader on the other end, there before rtgauge opens it: the test holds the FIFO open for
    // reading and writing (which never waits) while its reader opens it and reads to the end,
    // which comes once rtgauge and the test have both closed it.
    let held = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
    let (opened, ready) = std::sync::mpsc::channel();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::File::open(&fifo).unwrap();
            opened.send(()).unwrap();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut bytes).unwrap();
            bytes
        })
    };
    ready.recv().unwrap();
    let out = rtgauge(&["run", "-q", "--load", "none", "--loops", "20", "--warmup", "0", "--cpus", "0", "--json"])
        .arg(&fifo)
        .output()
        .unwrap();
    drop(held);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&reader.join().unwrap()).unwrap();
    assert_eq!(doc["status"], "complete");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO stays a FIFO");
}

#[test]
fn json_through_a_symlink_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.json");
    let link = dir.path().join("link.json");
    std::fs::write(&real, "old").unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = rtgauge(&[
        "run",
        "-q",
        "--load",
        "none",
        "--loops",
        "20",
        "--warmup",
        "0",
        "--cpus",
        "0",
        "--json",
        link.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
    assert_eq!(doc["schema"], rtgauge::result::SCHEMA);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "no stray file: {names:?}");
}

/// `run --help` names every choice the parser accepts: each wait method of the timer (itimer
/// was missing), each wake mechanism of the wake-up chain, each probe and each load.
#[test]
fn run_help_names_every_wait_method_wake_mechanism_probe_and_load() {
    let out = rtgauge(&["run", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let words: Vec<&str> = text.split(|c: char| c.is_whitespace() || "|=,;:()'[]".contains(c)).collect();
    let named = |w: &str| words.contains(&w);
    for (name, _) in rtgauge::probe::timer::WAIT_METHODS {
        assert!(named(name), "wait={name} in run --help");
    }
    for (name, _) in rtgauge::probe::wakeup::VIA {
        assert!(named(name), "via={name} in run --help");
    }
    for name in rtgauge::probe::registry::names() {
        assert!(named(name), "probe {name} in run --help");
    }
    for name in rtgauge::load::spec::NAMES {
        assert!(named(name), "load {name} in run --help");
    }
}

/// Every source a summary, report or scenario names is said in a line of `--help` (the
/// top-level help, `run`'s and `report`'s), and `docs/sources.md` gives its full reference.
#[test]
fn help_says_what_each_named_source_is() {
    let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/sources.md")).unwrap();
    for args in [&["--help"][..], &["run", "--help"], &["report", "--help"]] {
        let out = rtgauge(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("docs/sources.md"), "{args:?}");
        for s in rtgauge::report::reference::SOURCES {
            assert!(
                text.lines().any(|l| l.trim_start().starts_with(&format!("{}: ", s.short))),
                "{args:?}: a line for {}",
                s.short
            );
            assert!(docs.contains(&format!("## {}", s.short)) && docs.contains(s.title), "docs/sources.md: {}", s.short);
        }
    }
}

/// Each JSON Schema's title names the version its `$id` names.
#[test]
fn every_schema_document_titles_the_version_its_id_names() {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut seen = 0;
    for entry in std::fs::read_dir(&docs).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let (Some(id), Some(title)) = (schema["$id"].as_str(), schema["title"].as_str()) else { continue };
        let version =
            id.rsplit_once(".v").map(|(_, v)| v).unwrap_or_else(|| panic!("{}: $id {id} names no version", path.display()));
        assert!(title.contains(&format!("version {version} ")), "{}: $id {id}, title '{title}'", path.display());
        seen += 1;
    }
    assert!(seen >= 1);
}

/// A binary the kernel cannot execute (a cross-built rtgauge under qemu-user without
/// binfmt_misc: its loads' guardian is rtgauge started again) says what is missing and how to
/// run it, in one line, before measuring.
#[test]
fn a_binary_the_kernel_cannot_execute_says_what_is_missing_and_how_to_run_it() {
    use std::os::unix::fs::PermissionsExt;
    if runner().is_some() {
        // Under an emulator the emulator itself carries out rtgauge's execve (qemu-arm ran the
        // planted file's start as its own): the kernel's ENOEXEC this test provokes never comes.
        // The native run of the suite tests it.
        common::skip(common::Skip::Here, "under an emulator: the kernel's ENOEXEC is the emulator's to see");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // An executable file of no format the kernel knows (another architecture's ELF is the same
    // ENOEXEC): named as the emulator rtgauge starts itself through.
    let foreign = dir.path().join("foreign-binary");
    std::fs::write(&foreign, b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\xff\xff").unwrap();
    std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o755)).unwrap();
    let db = dir.path().join("s.db");
    let out = rtgauge(&["run", "--loops", "100", "--load", "cpu", "--db", db.to_str().unwrap()])
        .env("RTGAUGE_RUNNER", &foreign)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = err.lines().find(|l| l.contains("cannot start the load guardian")).unwrap_or_else(|| panic!("{err}"));
    for words in ["cannot execute", "qemu-user", "binfmt_misc", "--load none", "RTGAUGE_RUNNER"] {
        assert!(line.contains(words), "{words}: {line}");
    }
    assert!(out.stdout.is_empty(), "nothing measured");
}
