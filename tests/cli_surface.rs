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
fn version_prints_the_package_version() {
    let out = rtgauge(&["--version"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("rtgauge {}", env!("CARGO_PKG_VERSION")));
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
        eprintln!("SKIPPED: 'script' (util-linux) is not installed");
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
