//! Names in namespaces every user shares cannot be taken in advance: a POSIX message queue
//! planted under the name rtgauge used to give its wake-up chain (`/rtgauge-PID-0`) neither
//! stops the run nor is used by it. (Trace instances: tests/trace.rs.)

mod common;
use common::*;
use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn a_message_queue_planted_under_rtgauges_old_name_is_neither_used_nor_in_the_way() {
    // The shell gets the pid rtgauge will have (it execs it) and waits until the queue is planted.
    let mut sh = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "read go && exec {} run -q --loops 50 --warmup 0 --load none --no-store --cpus 0 --measure wakeup:via=mq@0",
            bin_shell()
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let planted = std::path::PathBuf::from(format!("/dev/mqueue/rtgauge-{}-0", sh.id()));
    if std::fs::OpenOptions::new().write(true).create_new(true).open(&planted).is_err() {
        eprintln!("SKIPPED: cannot make a message queue in /dev/mqueue here");
        let _ = sh.kill();
        let _ = sh.wait();
        return;
    }
    writeln!(sh.stdin.take().unwrap(), "go").unwrap();
    let out = sh.wait_with_output().unwrap();
    let still_there = planted.exists();
    let _ = std::fs::remove_file(&planted);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(still_there, "the planted queue is not rtgauge's to remove");
}
