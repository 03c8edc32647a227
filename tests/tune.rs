//! `run --tune`: each setting is changed during the run, recorded with its original value, and
//! put back — at the normal end, on SIGINT, on an error after tuning, by the guardian when
//! rtgauge is killed, and by `rtgauge restore` when rtgauge and its guardian both are. The
//! settings are compared by snapshots taken before, during and after. The tests take turns
//! (they change system-wide settings) and each keeps its journal in a private file.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Every setting `--tune` may change, as the kernel shows it now.
fn snapshot() -> BTreeMap<String, String> {
    let mut s = BTreeMap::new();
    for f in ["/proc/sys/kernel/sched_rt_runtime_us", "/proc/irq/default_smp_affinity"] {
        s.insert(f.to_string(), read(f));
    }
    for e in std::fs::read_dir("/proc/irq").unwrap().flatten() {
        let p = e.path().join("smp_affinity_list");
        if p.exists() {
            s.insert(p.display().to_string(), read(&p.display().to_string()));
        }
    }
    for c in online_cpus() {
        let g = format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor");
        if std::path::Path::new(&g).exists() {
            s.insert(g.clone(), read(&g));
        }
    }
    for dir in ["/sys/fs/cgroup/cpuset", "/sys/fs/cgroup"] {
        let mut made: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("rtgauge-shield") || n.starts_with("rtgauge-system"))
            .collect();
        made.sort();
        s.insert(format!("{dir}: rtgauge cpusets"), made.join(" "));
    }
    let balance = "/sys/fs/cgroup/cpuset/cpuset.sched_load_balance";
    s.insert(balance.to_string(), read(balance));
    // Where init may run (a task the shield moves, and moves back).
    s.insert("init's CPUs".to_string(), cpus_allowed(1));
    s
}

fn cpus_allowed(pid: u32) -> String {
    read(&format!("/proc/{pid}/status"))
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("")
        .trim()
        .to_string()
}

fn journal() -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("tuning.journal").display().to_string();
    (d, p)
}

/// Starts `rtgauge run --cpus 1 --tune... -D 30s` with its journal at `journal`, once it measures.
fn start_tuned(tune: &str, journal: &str, extra: &[&str]) -> Child {
    let mut args = vec!["run", "-q", "--cpus", "1", "--load", "none", "--warmup", "0", "--json", "-", tune];
    args.extend_from_slice(extra);
    if !extra.contains(&"-D") {
        args.extend(["-D", "30s"]);
    }
    let child = rtgauge(&args).env("RTGAUGE_JOURNAL", journal).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_until_measuring(child.id());
    child
}

fn finish(child: Child) -> (i32, Value, String) {
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), doc, err)
}

fn two_cpus() -> bool {
    let ok = online_cpus().len() >= 2;
    if !ok {
        common::skip(common::Skip::Here, "--tune's shield and interrupt moves need a CPU left for everything else");
    }
    ok
}

/// The record of `setting` (its start) in the result.
fn record<'a>(doc: &'a Value, setting: &str) -> &'a Value {
    doc["tuning"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["setting"].as_str().unwrap().starts_with(setting))
        .unwrap_or_else(|| panic!("no {setting} in {}", doc["tuning"]))
}

#[test]
fn tune_changes_every_setting_during_the_run_and_restores_it_after() {
    let _t = turn();
    if !two_cpus() {
        return;
    }
    let (_d, j) = journal();
    let before = snapshot();
    let run = start_tuned("--tune", &j, &["-D", "3s"]);
    let during = snapshot();
    assert_eq!(during["/proc/sys/kernel/sched_rt_runtime_us"], "-1", "RT throttling off during the run");
    assert!(std::path::Path::new(&j).exists(), "the journal is kept while tuned");
    let (code, doc, err) = finish(run);
    assert_eq!(code, 0, "{err}");
    let after = snapshot();
    assert_eq!(after, before, "every setting is back after the run");

    // Each change is recorded with its original value, and as restored.
    let rt = record(&doc, "/proc/sys/kernel/sched_rt_runtime_us");
    assert_eq!(rt["original"].as_str(), Some(before["/proc/sys/kernel/sched_rt_runtime_us"].as_str()));
    assert_eq!((rt["applied"].as_bool(), rt["restored"].as_bool()), (Some(true), Some(true)), "{rt}");
    // Interrupts that could go to CPU 1 went to CPU 0, except those the kernel will not move.
    let irq = record(&doc, "interrupt affinity");
    assert_eq!(irq["applied"], true, "{irq}");
    // (Counts in the text; each interrupt, its CPUs before and its outcome in the items.)
    let items = irq["items"].as_array().cloned().unwrap_or_default();
    let fixed: Vec<&str> = items.iter().filter(|i| i["outcome"] != "moved").map(|i| i["name"].as_str().unwrap()).collect();
    assert!(irq["value"].as_str().unwrap().len() < 200, "the line says counts: {irq}");
    for (k, v) in &before {
        let Some(n) = k.strip_prefix("/proc/irq/").and_then(|r| r.strip_suffix("/smp_affinity_list")) else { continue };
        let was_on_1 = v.split(',').any(|p| match p.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().unwrap()..=b.parse().unwrap()).contains(&1),
            None => p == "1",
        });
        let stays = fixed.contains(&n);
        if was_on_1 && !stays {
            assert_eq!(during[k], "0", "IRQ {n} moved off CPU 1 during the run");
        } else {
            assert_eq!(during[k], *v, "IRQ {n} untouched");
        }
    }
    // The shield: its cpusets existed during the run (cgroup v1 here) and init ran on CPU 0 only.
    let shield = record(&doc, "cpuset shield");
    if shield["applied"] == true {
        assert_eq!(during["init's CPUs"], "0", "init was moved off the shielded CPU");
        assert!(during.iter().any(|(k, v)| k.ends_with("rtgauge cpusets") && v.contains("rtgauge-shield")), "{during:?}");
        assert_eq!(shield["restored"], true);
    } else {
        eprintln!("shield not applied here: {}", shield["error"]);
    }
    // No cpufreq here means nothing to set: recorded as not applied, with why.
    let gov = record(&doc, "cpufreq governor");
    if gov["applied"] == false {
        assert!(gov["error"].as_str().unwrap().contains("no cpufreq"), "{gov}");
    }
    assert!(!std::path::Path::new(&j).exists(), "the journal is gone once everything is back");
}

#[test]
fn a_cpuset_shield_keeps_a_busy_process_off_the_shielded_cpu() {
    let _t = turn();
    if !two_cpus() {
        return;
    }
    let (_d, j) = journal();
    let mut busy = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
    let pid = busy.id();
    let free = cpus_allowed(pid);
    let run = start_tuned("--tune=shield", &j, &["-D", "3s"]);
    let shielded = cpus_allowed(pid);
    // Where it ran, twenty times over a second.
    let mut ran_on = std::collections::BTreeSet::new();
    for _ in 0..20 {
        let stat = read(&format!("/proc/{pid}/stat"));
        let cpu = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(36)?.parse::<u32>().ok());
        ran_on.extend(cpu);
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, doc, err) = finish(run);
    let after = cpus_allowed(pid);
    let _ = busy.kill();
    let _ = busy.wait();
    assert_eq!(code, 0, "{err}");
    let shield = record(&doc, "cpuset shield");
    assert_eq!(shield["applied"], true, "{shield}");
    assert_eq!(shielded, "0", "the busy process may run on CPU 0 only while CPU 1 is shielded");
    assert_eq!(ran_on.into_iter().collect::<Vec<_>>(), vec![0], "and it ran on CPU 0 only");
    assert_eq!(after, free, "after the run it may run where it could before");
}

/// SIGKILL of rtgauge alone: its guardian puts everything back.
#[test]
fn a_killed_run_is_restored_by_its_guardian() {
    let _t = turn();
    if !two_cpus() {
        return;
    }
    let (_d, j) = journal();
    let before = snapshot();
    let mut run = start_tuned("--tune", &j, &[]);
    assert_ne!(snapshot(), before, "tuned");
    run.kill().unwrap();
    run.wait().unwrap();
    let t = Instant::now();
    while snapshot() != before && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(snapshot(), before, "the guardian restored every setting");
    assert!(!std::path::Path::new(&j).exists());
}

/// The guardian of process `pid` (its child running `__guardian`).
fn guardians_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| {
            let stat = read(&format!("/proc/{p}/stat"));
            let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok());
            ppid == Some(pid) && read(&format!("/proc/{p}/cmdline")).contains("__guardian")
        })
        .collect()
}

/// SIGKILL of rtgauge and its guardian: the settings stay changed until `rtgauge restore`
/// (or any later rtgauge) puts them back, saying what it restored.
#[test]
fn after_sigkill_of_run_and_guardian_restore_puts_everything_back() {
    let _t = turn();
    if !two_cpus() {
        return;
    }
    let (_d, j) = journal();
    let before = snapshot();
    let mut run = start_tuned("--tune", &j, &[]);
    let guardians = guardians_of(run.id());
    assert_eq!(guardians.len(), 1, "one guardian watches the journal");
    for g in guardians {
        std::process::Command::new("kill").args(["-KILL", &g.to_string()]).status().unwrap();
    }
    run.kill().unwrap();
    run.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let left = snapshot();
    assert_eq!(left["/proc/sys/kernel/sched_rt_runtime_us"], "-1", "nobody restored yet");
    assert!(std::path::Path::new(&j).exists(), "the journal survived");
    let out = rtgauge(&["restore"]).env("RTGAUGE_JOURNAL", &j).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("ended without restoring"), "{text}");
    assert!(
        text.contains(&format!("/proc/sys/kernel/sched_rt_runtime_us = {}", before["/proc/sys/kernel/sched_rt_runtime_us"])),
        "{text}"
    );
    assert_eq!(snapshot(), before, "restore put every setting back");
    let again = rtgauge(&["restore"]).env("RTGAUGE_JOURNAL", &j).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("Nothing to restore"));
}

/// Ctrl-C, SIGTERM, and an error after the tuning (a probe whose set-up the system refuses):
/// restored.
#[test]
fn sigint_sigterm_and_an_error_after_tuning_restore_everything() {
    let _t = turn();
    if !two_cpus() {
        return;
    }
    let (_d, j) = journal();
    let before = snapshot();
    for sig in ["INT", "TERM"] {
        let run = start_tuned("--tune=rt-throttling,irq-affinity", &j, &[]);
        signal(&run, sig);
        let (code, doc, err) = finish(run);
        assert_eq!(code, 0, "{err}");
        assert_eq!(doc["status"], "partial");
        assert_eq!(snapshot(), before, "restored after SIG{sig}");
    }

    // No POSIX message queue may be opened: the wake-up chain's set-up fails after tuning.
    let out = std::process::Command::new("prlimit")
        .arg("--msgqueue=0:0")
        .args(bin_argv())
        .args(["run", "--loops", "10", "--load", "none", "--cpus", "1", "--tune=rt-throttling", "--measure", "wakeup:via=mq@1"])
        .env("RTGAUGE_JOURNAL", &j)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(snapshot(), before, "restored after the error");
}

#[test]
fn only_one_run_tunes_at_a_time() {
    let _t = turn();
    if !two_cpus() {
        return;
    }
    let (_d, j) = journal();
    let first = start_tuned("--tune=rt-throttling", &j, &[]);
    let out = rtgauge(&["run", "--loops", "10", "--cpus", "1", "--load", "none", "--tune=rt-throttling"])
        .env("RTGAUGE_JOURNAL", &j)
        .output()
        .unwrap();
    signal(&first, "INT");
    let _ = finish(first);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is tuning this system now") && err.trim_end().lines().count() == 1, "{err}");
}

#[test]
fn bad_tune_lists_are_one_line_and_exit_2() {
    for t in ["--tune=fast", "--tune=shield,", "--tune=", "--tune=all,bogus"] {
        let out = rtgauge(&["run", "--loops", "5", t]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{t}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{t}: {err}");
    }
}

/// Without the privilege to tune: each setting says why it was not changed, and the run goes on.
#[test]
fn without_privileges_tuning_is_refused_per_setting_and_the_run_goes_on() {
    if !nobody_can_run() {
        return;
    }
    let (_d, j) = journal();
    let out = nobody(&[
        "run", "-q", "--loops", "50", "--warmup", "0", "--cpus", "0", "--policy", "other", "--load", "none", "--tune", "--json",
        "-",
    ])
    .env("RTGAUGE_JOURNAL", "/proc/rtgauge-cannot-be-here/journal")
    .output()
    .unwrap();
    drop(j);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tuned: Vec<&Value> =
        doc["tuning"].as_array().unwrap().iter().filter(|t| !t["setting"].as_str().unwrap().starts_with("/dev/")).collect();
    assert_eq!(tuned.len(), 4, "{}", doc["tuning"]);
    for t in tuned {
        assert_eq!(t["applied"], false, "{t}");
        assert!(t["error"].as_str().unwrap().contains("nothing was changed"), "{t}");
    }
    assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("could not tune")));
}

const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";

/// A journal as rtgauge writes it: 0600, its header (of this boot or `boot_id`), then `undos`.
fn write_journal(path: &std::path::Path, boot_id: &str, undos: &[Value]) {
    use std::os::unix::fs::PermissionsExt;
    let header = serde_json::json!({"pid": 1, "boot_id": boot_id, "started_at": "2026-11-23T00:00:00.000Z", "command_line": ["rtgauge", "run", "--tune"]});
    let mut text = format!("{header}\n");
    for u in undos {
        text += &format!("{u}\n");
    }
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A journal left by a run of this boot is restored; one from an earlier boot (a power cut) is
/// only removed, with a word: the boot reset every setting. Shown on RT throttling, a setting
/// rtgauge tunes, changed by the test (in turn with the other tuning tests) and put back.
#[test]
fn a_left_journal_is_restored_unless_it_is_from_an_earlier_boot() {
    let _t = turn();
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("tuning.journal");
    let boot = read("/proc/sys/kernel/random/boot_id");
    let before = read(RT_RUNTIME);
    // (-1 is always taken; a smaller runtime may not be, with RT group scheduling)
    let changed = if before == "-1" { "950000" } else { "-1" };
    for (boot_id, restored) in [(boot.as_str(), true), ("00000000-0000-0000-0000-000000000000", false)] {
        std::fs::write(RT_RUNTIME, changed).unwrap();
        write_journal(
            &j,
            boot_id,
            &[serde_json::json!({"undo": "write", "path": RT_RUNTIME, "original": before, "set": changed})],
        );
        let out = rtgauge(&["restore"]).env("RTGAUGE_JOURNAL", &j).output().unwrap();
        let now = read(RT_RUNTIME);
        std::fs::write(RT_RUNTIME, &before).unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert_eq!(now, if restored { before.as_str() } else { changed }, "{text}");
        if restored {
            assert!(text.contains("(1 put back, 0 failed)"), "one change is one put back: {text}");
        } else {
            assert!(text.contains("before a reboot") && text.contains("(0 put back, 0 failed)"), "{text}");
        }
        assert!(!j.exists(), "the journal is gone either way");
    }
}

/// The victims of a crafted journal: files and a directory of the test's own, each a member of
/// a class of what a journal must never make rtgauge do as root.
struct Victims {
    dir: tempfile::TempDir,
}

impl Victims {
    fn new() -> Victims {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("victim"), "precious\n").unwrap();
        std::fs::write(dir.path().join("secret"), "root:$6$hash:19000:0:99999:7:::\n").unwrap();
        std::fs::create_dir(dir.path().join("keep")).unwrap();
        std::fs::create_dir(dir.path().join("rtgauge-1234")).unwrap();
        Victims { dir }
    }
    fn p(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
    fn untouched(&self) {
        assert_eq!(read(&self.p("victim")), "precious");
        assert!(read(&self.p("secret")).starts_with("root:"));
        assert!(!std::path::Path::new(&self.p("stolen")).exists(), "nothing copied");
        assert!(std::path::Path::new(&self.p("keep")).is_dir() && std::path::Path::new(&self.p("rtgauge-1234")).is_dir());
    }
}

/// A crafted journal (a valid header, as root, this boot) asks for writes, copies, removals and
/// an unmount outside what rtgauge tunes: each is refused and named, none is carried out, and
/// the restore exits 2.
#[test]
fn a_crafted_journal_changes_nothing_outside_the_settings_rtgauge_tunes() {
    let v = Victims::new();
    let j = v.dir.path().join("crafted.journal");
    let boot = read("/proc/sys/kernel/random/boot_id");
    let undos = [
        serde_json::json!({"undo": "write", "path": v.p("victim"), "original": "pwned", "set": "x"}),
        // A setting's path with a way out of it, and a setting rtgauge does not tune.
        serde_json::json!({"undo": "write", "path": format!("/proc/sys/kernel/../../..{}", v.p("victim")), "original": "1", "set": "x"}),
        serde_json::json!({"undo": "write", "path": "/proc/sys/kernel/core_pattern", "original": "|/tmp/evil", "set": "x"}),
        // A setting rtgauge tunes, with a value of another shape.
        serde_json::json!({"undo": "write", "path": RT_RUNTIME, "original": "950000\n/bin/sh", "set": "-1"}),
        serde_json::json!({"undo": "move-all", "from": [v.p("secret")], "to": v.p("stolen")}),
        serde_json::json!({"undo": "remove-dir", "path": v.p("keep")}),
        serde_json::json!({"undo": "remove-dir", "path": v.p("rtgauge-1234")}),
        serde_json::json!({"undo": "unmount", "path": v.dir.path()}),
    ];
    write_journal(&j, &boot, &undos);
    let out = rtgauge(&["restore"]).env("RTGAUGE_JOURNAL", &j).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    v.untouched();
    assert_eq!(text.matches("refused:").count(), undos.len(), "each entry refused and named: {text}");
    for named in [v.p("victim"), "core_pattern".into(), v.p("secret"), v.p("keep"), v.p("rtgauge-1234")] {
        assert!(text.contains(&named), "{named} named: {text}");
    }
    assert!(!text.contains("$6$"), "nothing of a file is shown: {text}");
}

/// A file at the journal's path that is not a journal rtgauge may trust — text, an empty file
/// it did not make, a FIFO, a directory, a symbolic link (even to a real journal), a journal
/// others may write or another user owns — is refused with exit 2 by every command that reads
/// the journal, and left exactly as it was.
#[test]
fn a_journal_path_that_is_not_rtgauges_journal_is_refused_and_left_as_it_was() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let d = tempfile::tempdir().unwrap();
    let boot = read("/proc/sys/kernel/random/boot_id");
    let real = d.path().join("real.journal");
    write_journal(&real, &boot, &[]);
    let mut cases: Vec<(&str, std::path::PathBuf)> = Vec::new();
    let text = d.path().join("notes.txt");
    std::fs::write(&text, "not a journal\n").unwrap();
    cases.push(("a text file", text));
    // Empty and 0600, as rtgauge makes its journal (a lock file, say): still not one.
    let empty = d.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o600)).unwrap();
    cases.push(("an empty file it did not make", empty));
    // A device node of the test's own (the null device's numbers): not even opened.
    let node = d.path().join("node");
    assert!(std::process::Command::new("mknod").arg(&node).args(["c", "1", "3"]).status().unwrap().success());
    cases.push(("a device", node));
    let fifo = d.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    cases.push(("a FIFO", fifo));
    let dir = d.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    cases.push(("a directory", dir));
    let link = d.path().join("link.journal");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    cases.push(("a symbolic link", link));
    let open = d.path().join("open.journal");
    write_journal(&open, &boot, &[]);
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
    cases.push(("a journal every user may write", open));
    let theirs = d.path().join("theirs.journal");
    write_journal(&theirs, &boot, &[]);
    std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
    cases.push(("another user's journal", theirs));
    let commands: [&[&str]; 4] = [
        &["check"],
        &["restore"],
        &["run", "--loops", "5", "--load", "none", "--tune=rt-throttling"],
        &["load", "cpu", "-D", "1s"],
    ];
    for (what, path) in &cases {
        let meta = std::fs::symlink_metadata(path).unwrap();
        // (a FIFO is not read: the test would wait for a writer)
        let read_file = |p: &std::path::Path| std::fs::symlink_metadata(p).unwrap().is_file().then(|| std::fs::read(p).unwrap());
        let content = read_file(path);
        for args in commands {
            let out = rtgauge(args).env("RTGAUGE_JOURNAL", path).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{what}, {args:?}: {err}");
            assert!(err.contains("not one rtgauge may trust") && err.trim_end().lines().count() == 1, "{what}, {args:?}: {err}");
            let now = std::fs::symlink_metadata(path).unwrap();
            assert_eq!(
                (now.ino(), now.mode(), now.uid(), now.len()),
                (meta.ino(), meta.mode(), meta.uid(), meta.len()),
                "{what}"
            );
            assert_eq!(read_file(path), content, "{what}: left as it was");
        }
    }
    assert!(real.exists(), "the link's target is untouched");
}

/// A journal rtgauge wrote (valid, of this boot, 0600, root's) in a directory another user
/// controls — writable by every user without the sticky bit, writable by its group, owned by
/// another user, reached through a link another user planted in a shared directory — is
/// refused by every command that reads a journal (`check`, `restore`, `run`, `load`), exit 2,
/// one line, and left as it was: not restored, not removed.
#[test]
fn a_journal_in_a_directory_another_user_controls_is_refused_by_every_command() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let d = tempfile::tempdir().unwrap();
    let boot = read("/proc/sys/kernel/random/boot_id");
    let dir = |name: &str, mode: u32, owner: Option<u32>| {
        let p = d.path().join(name);
        std::fs::create_dir(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        std::os::unix::fs::chown(&p, owner, None).unwrap();
        p
    };
    let mut cases: Vec<(&str, std::path::PathBuf, std::path::PathBuf)> = Vec::new();
    for (what, name, mode, owner) in [
        ("a directory every user may write, not sticky", "open", 0o777, None),
        ("a directory its group may write", "group", 0o770, None),
        ("another user's directory", "theirs", 0o755, Some(65534)),
    ] {
        let at = dir(name, mode, owner).join("tuning.journal");
        cases.push((what, at.clone(), at));
    }
    // A private directory of root's inside another user's directory (who could rename it away
    // and put one of theirs in its place).
    let outer = dir("outer", 0o755, Some(65534));
    let inner = outer.join("rt");
    std::fs::create_dir(&inner).unwrap();
    std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o700)).unwrap();
    cases.push(("a directory of root's inside another user's", inner.join("tuning.journal"), inner.join("tuning.journal")));
    // A private directory of root's, reached through a link that user nobody put in a shared one.
    let private = dir("private", 0o700, None);
    let shared = dir("shared", 0o1777, None);
    let link = shared.join("j");
    std::os::unix::fs::symlink(&private, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
    cases.push(("a link another user planted on the way", link.join("tuning.journal"), private.join("tuning.journal")));
    let commands: [&[&str]; 4] = [
        &["check"],
        &["restore"],
        &["run", "--loops", "5", "--load", "none", "--tune=rt-throttling"],
        &["load", "cpu", "-D", "1s"],
    ];
    for (what, named, real) in &cases {
        write_journal(real, &boot, &[]);
        let before = (std::fs::read(real).unwrap(), std::fs::metadata(real).unwrap().ino());
        for args in commands {
            let out = rtgauge(args).env("RTGAUGE_JOURNAL", named).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{what}, {args:?}: {err}");
            assert!(err.contains("not one rtgauge may trust") && err.trim_end().lines().count() == 1, "{what}, {args:?}: {err}");
            assert!(real.exists(), "{what}, {args:?}: the journal was acted on (removed): {err}");
            let now = (std::fs::read(real).unwrap(), std::fs::metadata(real).unwrap().ino());
            assert_eq!(now, before, "{what}, {args:?}: left as it was");
        }
    }
}

/// Under a umask of 000, the journal's directory rtgauge makes is 0700 and the journal 0600; the
/// result it writes is 0644 (not 0666).
#[test]
fn under_umask_000_what_rtgauge_makes_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let _t = turn();
    let d = tempfile::tempdir().unwrap();
    let jdir = d.path().join("made/by/rtgauge");
    let j = jdir.join("tuning.journal");
    let result = d.path().join("result.json");
    let mut argv = bin_argv();
    argv.extend(
        ["run", "-q", "--cpus", "0", "--load", "none", "--warmup", "0", "-D", "30s", "--tune=rt-throttling", "--json"]
            .map(String::from),
    );
    argv.push(result.display().to_string());
    let run = std::process::Command::new("sh")
        .arg("-c")
        .arg("umask 000; exec \"$@\"")
        .arg("sh")
        .args(&argv)
        .env("RTGAUGE_JOURNAL", &j)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_measuring(run.id());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let (dir_mode, journal_mode) = (mode(&jdir), mode(&j));
    signal(&run, "INT");
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!((dir_mode, journal_mode), (0o700, 0o600));
    assert_eq!(mode(&result), 0o644);
}
