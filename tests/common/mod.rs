//! Helpers shared by the integration tests: run the real binary, parse its result document,
//! and check the structural invariants every result must satisfy.
#![allow(dead_code)]

/// A throw-away PostgreSQL cluster (the store's PostgreSQL backend).
pub mod pg;

use serde_json::Value;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

/// Whether a thread's name (`comm`, at most 15 bytes) is a measurement thread's:
/// `rtgauge-<probe><cpu>[role]`, with one of the probes' names (the registry's), all short
/// enough that the CPU's first digit is always within the 15 bytes.
pub fn is_measurement_thread(comm: &str) -> bool {
    let Some(rest) = comm.trim_end().strip_prefix("rtgauge-") else { return false };
    rtgauge::probe::registry::names()
        .iter()
        .any(|p| rest.strip_prefix(p).is_some_and(|cpu| cpu.starts_with(|c: char| c.is_ascii_digit())))
}

/// The rtgauge binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rtgauge"))
}

/// An emulator to run the binary with (e.g. `qemu-aarch64-static` when testing a cross-built
/// binary), from `RTGAUGE_RUNNER`; `None` for a native binary.
pub fn runner() -> Option<String> {
    std::env::var("RTGAUGE_RUNNER").ok().filter(|r| !r.trim().is_empty())
}

/// Whether a test of code that is the same Rust on every architecture is skipped here, under an
/// emulator (`.ci/run` runs under qemu-user only what can differ there); says so when it is.
pub fn native_only(what: &str) -> bool {
    let skipped = runner().is_some();
    if skipped {
        skip(Skip::Here, &format!("under an emulator: {what} is tested natively"));
    }
    skipped
}

/// Why a test leaves a check out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Skip {
    /// Something the suite needs and `.ci/run` provides (a program or package, root): under CI
    /// its absence fails the test.
    Missing,
    /// What cannot be checked where the test runs: by design (under an emulator, whose own
    /// memory, stack or system calls would be measured; on another C library), or a property of
    /// the machine or kernel no installation gives (two CPUs, RT group scheduling, a cgroup
    /// hierarchy, a port another program holds). Never a failure.
    Here,
}

/// Whether the suite runs under CI (`CI` set and not empty: `.ci/run` sets it).
pub fn under_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// Checks skipped by this test binary so far (printed when it exits: [`skip`]).
static SKIPPED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Says that the calling test leaves `what` unchecked, and counts it. The line `SKIPPED: what`
/// goes to the test binary's own standard error, not through the test's captured output (which
/// libtest shows only for a failing test), so that it is seen; when the binary exits, after
/// libtest's `test result:` line, it says how many checks it skipped (`.ci/run` adds them up in
/// its closing lines). Under CI a [`Skip::Missing`] requirement fails the test instead: CI
/// installs everything the suite needs, and a test passing there without testing is a defect.
pub fn skip(why: Skip, what: &str) {
    use std::io::Write;
    assert!(why != Skip::Missing || !under_ci(), "needed under CI (.ci/run provides it): {what}");
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| {
        extern "C" fn say_how_many() {
            use std::io::Write;
            let n = SKIPPED.load(std::sync::atomic::Ordering::SeqCst);
            let _ = writeln!(std::io::stderr(), "skipped: {n} check(s) of this test binary (the SKIPPED lines above)");
        }
        // SAFETY: registers a function without arguments that only writes to standard error.
        unsafe { libc::atexit(say_how_many) };
    });
    SKIPPED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let _ = writeln!(std::io::stderr(), "SKIPPED: {what}");
}

/// Waits (at most 60 s) until process `pid` is measuring — one of its measurement threads
/// (named `rtgauge-<probe><cpu>`) waits in its loop's sleep or timer read, or a busy loop (the noise probe's,
/// which never sleeps) runs after it was seen waiting for its start — instead of assuming how
/// long start-up takes: on a busy host under an emulator it took over 1.5 s (CI), and a signal
/// or a stall sent earlier lands in the set-up instead of the measurement.
///
/// Only measurement threads count: rtgauge's other threads (`rtgauge-pg-connect`,
/// `rtgauge-store`, `rtgauge-metrics`, `rtgauge-watchdog`) also wait on futexes and then run,
/// some of them before the store is even opened (CI under qemu-user took the connecting
/// thread for a measuring one, and a server stopped "while measuring" was stopped before).
pub fn wait_until_measuring(pid: u32) {
    let t = std::time::Instant::now();
    let read = |task: &std::path::Path, f: &str| std::fs::read_to_string(task.join(f)).unwrap_or_default();
    // Threads seen set up and waiting for their start (blocked on a futex, not sleeping).
    let mut waiting = std::collections::HashSet::new();
    loop {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>());
        let tasks = match tasks {
            Ok(t) => t,
            Err(e) => panic!("process {pid} ended before it measured: {e}"),
        };
        // Ended (a zombie until the test reaps it): it will never measure.
        let own = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            !own.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
            "process {pid} ended before it measured: run the test's command by hand to see why"
        );
        for task in &tasks {
            if !is_measurement_thread(&read(task, "comm")) {
                continue;
            }
            let wchan = read(task, "wchan");
            // The state follows the name in parentheses: "123 (rtgauge-noise1) R ...".
            let running = read(task, "stat").rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('R'));
            // A loop sleeps to its deadline, or (the wake-up chain's handler) reads its timerfd, whose
            // wait channel is the kernel's generic do_wait_intr_irq.
            let in_loop_wait = ["nanosleep", "timerfd", "do_wait_intr"].iter().any(|w| wchan.contains(w));
            if in_loop_wait || (running && waiting.contains(task)) {
                return;
            }
            if wchan.contains("futex") {
                waiting.insert(task.clone());
            }
        }
        assert!(t.elapsed() < Duration::from_secs(60), "process {pid} not measuring within 60 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Once `run` is measuring, waits `after_ms` more, then stalls `cpu` for `ms` milliseconds with
/// `rtgauge stall` (a busy SCHED_FIFO 99 thread); returns the stall's own report (its start, end
/// and actual `duration_ns`).
pub fn stall_while_measuring(run: &std::process::Child, after_ms: u64, cpu: usize, ms: u64) -> Value {
    wait_until_measuring(run.id());
    std::thread::sleep(Duration::from_millis(after_ms));
    let stall = rtgauge(&["stall", "--cpu", &cpu.to_string(), "--duration", &format!("{ms}ms")]).output().unwrap();
    assert!(stall.status.success(), "{}", String::from_utf8_lossy(&stall.stderr));
    serde_json::from_slice(&stall.stdout).unwrap()
}

/// A load's duration for a test that needs its worker to start and act within it: `native_ms`,
/// or 5 s under an emulator, where a worker process on a busy host took over a second to start
/// (CI saw the armv7 net worker and the aarch64 vm worker do nothing in 1.25 s and 0.5 s).
pub fn load_time(native_ms: u64) -> String {
    format!("{}ms", if runner().is_some() { native_ms.max(5_000) } else { native_ms })
}

/// The argv that starts the binary: `[runner,] binary`. Every process this test binary starts
/// (through any tool: sh, script, strace, taskset, unshare) keeps its runs in the test binary's
/// own store, never in the user's: `RTGAUGE_DB` is set for the whole process before the first.
pub fn bin_argv() -> Vec<String> {
    static STORE: std::sync::Once = std::sync::Once::new();
    STORE.call_once(|| {
        std::env::set_var("RTGAUGE_DB", test_store());
        // Every journal a test's run keeps is a file of the test binary's own (a test that
        // needs another sets RTGAUGE_JOURNAL on its command).
        std::env::set_var("RTGAUGE_JOURNAL", test_journal());
    });
    let mut v: Vec<String> = runner().map(|r| r.split_whitespace().map(String::from).collect()).unwrap_or_default();
    v.push(bin().display().to_string());
    v
}

/// The binary's argv as one shell word list, for `sh -c` and `script -c`.
pub fn bin_shell() -> String {
    bin_argv().join(" ")
}

/// A command for the binary (its runs kept in the test binary's own store, see [`bin_argv`]).
/// A database password written in a PostgreSQL URL among `args` is given as a user would who
/// keeps it off the command line: the URL without it, the password in `PGPASSWORD` (the same
/// password for every URL of the command; else the arguments are left as written). A test of
/// what rtgauge does with a password on its command line uses [`rtgauge_as_written`].
pub fn rtgauge(args: &[&str]) -> Command {
    let (args, password) = password_in_environment(args);
    let mut c = rtgauge_as_written(&args.iter().map(String::as_str).collect::<Vec<_>>());
    if let Some(p) = password {
        c.env("PGPASSWORD", p);
    }
    c
}

/// A command for the binary with `args` exactly as written.
pub fn rtgauge_as_written(args: &[&str]) -> Command {
    let argv = bin_argv();
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]).args(args);
    c
}

/// `args` with the password taken out of every `postgres://USER:PASSWORD@…` URL, and that
/// password (decoded), when all of them have one and the same.
pub fn password_in_environment(args: &[&str]) -> (Vec<String>, Option<String>) {
    let mut found: Vec<String> = Vec::new();
    let stripped: Vec<String> = args
        .iter()
        .map(|a| {
            let (prefix, url) = match a.strip_prefix("--db=") {
                Some(u) => ("--db=", u),
                None => ("", *a),
            };
            let Some((scheme, rest)) =
                url.split_once("://").filter(|(s, _)| s.eq_ignore_ascii_case("postgres") || s.eq_ignore_ascii_case("postgresql"))
            else {
                return a.to_string();
            };
            let end = rest.find(['/', '?']).unwrap_or(rest.len());
            let Some((userinfo, host)) = rest[..end].rsplit_once('@') else { return a.to_string() };
            let Some((user, password)) = userinfo.split_once(':') else { return a.to_string() };
            found.push(percent_decoded(password));
            format!("{prefix}{scheme}://{user}@{host}{}", &rest[end..])
        })
        .collect();
    match found.first() {
        Some(p) if found.iter().all(|f| f == p) => (stripped, Some(p.clone())),
        _ => (args.iter().map(|a| a.to_string()).collect(), None),
    }
}

fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The binary run as `nobody` with no capability (no RT priority, no memory lock, no root's
/// files), `args` after it; the test store out of its reach (the default one, unwritable, is only
/// a warning).
pub fn nobody(args: &[&str]) -> Command {
    let mut c = Command::new("setpriv");
    c.env_remove("RTGAUGE_DB");
    c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"])
        .args(bin_argv())
        .args(args);
    c
}

/// Whether `nobody` can execute the binary (a build below an unreadable home cannot); says so
/// when not, and the test returns.
pub fn nobody_can_run() -> bool {
    let ok = nobody(&["--version"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        skip(Skip::Here, &format!("the user 'nobody' cannot execute {} (a build below an unreadable home)", bin_shell()));
    }
    ok
}

/// The directory of this test binary's own files (made 0700): its store, the spool beside it
/// (`spool/`), its journal. Removed when the test binary exits.
pub fn test_dir() -> std::path::PathBuf {
    static MADE: std::sync::Once = std::sync::Once::new();
    let dir = std::env::temp_dir().join(format!("rtgauge-tests-{}.d", std::process::id()));
    MADE.call_once(|| {
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        // SAFETY: `remove_test_dir` is an `extern "C" fn()` that neither unwinds nor returns a
        // value; registering it with the C library's `atexit` has no other requirement.
        unsafe {
            libc::atexit(remove_test_dir);
        }
    });
    dir
}

/// At the test binary's exit: its own directory ([`test_dir`]), with what its tests left in it.
extern "C" fn remove_test_dir() {
    let dir = std::env::temp_dir().join(format!("rtgauge-tests-{}.d", std::process::id()));
    let _ = std::fs::remove_dir_all(dir);
}

/// The store of this test binary's runs.
pub fn test_store() -> std::path::PathBuf {
    test_dir().join("runs.db")
}

/// The tuning journal of this test binary's runs.
pub fn test_journal() -> std::path::PathBuf {
    let dir = test_dir().join("journal.d");
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    dir.join("tuning.journal")
}

/// Runs `rtgauge run ARGS --json -` and returns the exit status and the parsed document.
pub fn run_json(args: &[&str]) -> (i32, Value, Output) {
    let mut all = vec!["run", "--quiet", "--json", "-"];
    all.extend_from_slice(args);
    let out = rtgauge(&all).output().expect("rtgauge runs");
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not a JSON document ({e}); stderr: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().expect("exited normally"), doc, out)
}

/// Number of online CPUs as the kernel lists them.
pub fn online_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let mut v = Vec::new();
    for part in text.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => v.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()),
            None => v.push(part.parse().unwrap()),
        }
    }
    v
}

pub fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// Invariants of one probe entry: ordered statistics, histogram consistent with the counts.
pub fn check_probe_invariants(p: &Value) {
    let samples = u(&p["samples"]);
    check_timeline(p);
    let hist = &p["histogram"];
    let buckets = hist["buckets"].as_array().unwrap();
    let in_buckets: u64 = buckets.iter().map(|b| u(&b[2])).sum();
    assert_eq!(u(&hist["total_count"]), in_buckets, "bucket counts add up to total_count");
    assert_eq!(
        in_buckets + u(&p["handoff_overflows"]),
        samples,
        "every sample is in the histogram unless it overflowed the hand-off"
    );
    if samples == 0 {
        assert!(p["max_ns"].is_null() && p["min_ns"].is_null());
        return;
    }
    // min, every reported percentile (the library's own table), max.
    let mut order = vec!["min_ns"];
    order.extend(rtgauge::vocab::percentiles::REPORTED.iter().map(|q| q.key));
    order.push("max_ns");
    let vals: Vec<u64> = order.iter().map(|k| u(&p[*k])).collect();
    for w in vals.windows(2) {
        assert!(w[0] <= w[1], "statistics out of order {vals:?} in {}", p["cpu"]);
    }
    let mean = p["mean_ns"].as_f64().unwrap();
    let max = *vals.last().unwrap();
    assert!(mean >= vals[0] as f64 - 1.0 && mean <= max as f64 + 1.0, "min <= mean <= max");
    // The largest bucket holds the maximum (HDR buckets hold it within their precision), unless
    // the maximum was among the values lost in the hand-off (the thread keeps it exactly).
    let last = buckets.last().unwrap();
    if u(&p["handoff_overflows"]) == 0 {
        assert!(u(&last[0]) <= max && max <= u(&last[1]), "max lies in the top bucket");
    } else {
        assert!(u(&last[0]) <= max, "max lies in or above the top bucket");
    }
}

/// A per-CPU entry's timeline partitions its counts exactly: the windows' `count` sum to its
/// samples, their `missed` to its missed periods; each window's p99 lies at or below its maximum,
/// and the largest window maximum is the entry's (unless the maximum was lost in the hand-off).
pub fn check_timeline(p: &Value) {
    let t = &p["timeline"];
    if p["cpu"].is_null() || t.is_null() {
        assert!(t.is_null(), "a combined entry has no timeline");
        return;
    }
    let col = |k: &str| t[k].as_array().unwrap().iter().map(u).collect::<Vec<u64>>();
    let (count, missed, max, p99) = (col("count"), col("missed"), col("max_ns"), col("p99_ns"));
    assert!([missed.len(), max.len(), p99.len()].iter().all(|&n| n == count.len()), "columns of one length: {t}");
    assert_eq!(count.iter().sum::<u64>(), u(&p["samples"]), "the windows' counts sum to the samples");
    assert_eq!(missed.iter().sum::<u64>(), u(&p["missed"]), "the windows' missed sum to the missed");
    assert!(p99.iter().zip(&max).all(|(q, m)| q <= m), "p99 <= max in every window");
    if u(&p["handoff_overflows"]) == 0 {
        assert_eq!(
            max.iter().max().copied().filter(|&m| m > 0),
            p["max_ns"].as_u64(),
            "the largest window maximum is the maximum"
        );
    }
}

/// A private TMPDIR: it marks every process started under it (in its environment) and receives
/// the io generator's temporary directories.
pub struct Marker(pub tempfile::TempDir);

impl Marker {
    pub fn new() -> Marker {
        Marker(tempfile::tempdir().unwrap())
    }
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = rtgauge(args);
        c.env("TMPDIR", self.0.path());
        c
    }
    /// Processes whose environment carries this marker.
    pub fn processes(&self) -> Vec<String> {
        let needle = format!("TMPDIR={}", self.0.path().display());
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let pid = e.file_name().to_string_lossy().into_owned();
            if !pid.chars().all(|c| c.is_ascii_digit()) || pid == std::process::id().to_string() {
                continue;
            }
            let Ok(env) = std::fs::read(e.path().join("environ")) else {
                continue;
            };
            if env.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
                let cmd = std::fs::read_to_string(e.path().join("cmdline")).unwrap_or_default().replace('\0', " ");
                let state = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                // Zombies are dead already (waiting to be reaped by their parent).
                if state.split_whitespace().nth(2).is_none_or(|s| s != "Z") {
                    found.push(format!("{pid}: {cmd}"));
                }
            }
        }
        found
    }
    /// The processes that run what they were started for: without the launchers still on their
    /// way to exec (`rtgauge __contain -- PROGRAM`, whose command line names the program too).
    pub fn started(&self) -> Vec<String> {
        self.processes().into_iter().filter(|p| !p.contains(" __contain ")).collect()
    }
    pub fn files(&self) -> Vec<String> {
        std::fs::read_dir(self.0.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
    }
    /// Waits (at most 60 s: start-up under an emulator on a busy host is slow) until `ready`
    /// holds for this marker, instead of assuming how long start-up takes.
    pub fn wait_for(&self, what: &str, ready: impl Fn(&Marker) -> bool) {
        let t = std::time::Instant::now();
        while !ready(self) {
            assert!(t.elapsed() < Duration::from_secs(60), "{what}: not within 60 s: {:?}", self.processes());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    /// Asserts nothing is left, allowing the kernel a moment to finish killing.
    pub fn assert_clean(&self, when: &str) {
        for _ in 0..50 {
            if self.processes().is_empty() && self.files().is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("after {when}: processes {:?}, files {:?}", self.processes(), self.files());
    }
}

/// Sends signal `sig` (`INT`, `TERM`, `KILL`) to `child`.
pub fn signal(child: &std::process::Child, sig: &str) {
    std::process::Command::new("kill").args(["-s", sig, &child.id().to_string()]).status().unwrap();
}

/// A result document as the library's typed result.
pub fn typed(doc: Value) -> rtgauge::result::RunResult {
    serde_json::from_value(doc).expect("the document is a RunResult")
}

/// The entry of `probe` (its only series) on `cpu`.
pub fn entry<'a>(r: &'a rtgauge::result::RunResult, probe: &str, cpu: usize) -> &'a rtgauge::result::ProbeResult {
    r.probes.iter().find(|p| p.probe == probe && p.cpu == Some(cpu)).unwrap_or_else(|| panic!("no {probe}/cpu{cpu}"))
}

/// Runs `rtgauge run -q --json - -D DURATION --warmup 0 --load none --measure MEASURE`, stalls
/// `cpu` for `ms` milliseconds once it has measured `after_ms`, and returns the result (the run
/// must exit 0) with the stall's own report (`duration_ns`, `start_ns`, `end_ns`). The stall must
/// lie inside the measurement (a precondition, not the property tested): on a busy host an
/// emulated `rtgauge stall` can take seconds to start and land after the run (CI saw it once);
/// such an attempt is made again, at most three times.
pub fn run_with_stall(measure: &str, duration: &str, cpu: usize, after_ms: u64, ms: u64) -> (rtgauge::result::RunResult, Value) {
    // A stall holds a whole CPU: the stall tests of one test binary take turns (two stalls at
    // FIFO 99 on one CPU queue behind each other and blur both ground truths).
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    for attempt in 1..=3 {
        let run = rtgauge(&["run", "-q", "--json", "-", "-D", duration, "--warmup", "0", "--load", "none", "--measure", measure])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stall = stall_while_measuring(&run, after_ms, cpu, ms);
        let out = run.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let r = typed(serde_json::from_slice(&out.stdout).unwrap());
        let (start, end) = (r.monotonic_start_ns, r.monotonic_start_ns + r.measured_ns);
        if (start..=end).contains(&u(&stall["start_ns"])) && u(&stall["end_ns"]) <= end || attempt == 3 {
            assert!(u(&stall["end_ns"]) <= end, "the stall {stall} ended after the run ({start}..{end}) three times");
            return (r, stall);
        }
        eprintln!("attempt {attempt}: the stall {stall} fell outside the run ({start}..{end}); again");
    }
    unreachable!("the third attempt returns")
}

/// Starts `rtgauge udp-echo` as `cmd` gives it and returns once it listens, with the address it
/// says it listens on (its first line on stderr).
pub fn start_echo(mut cmd: Command) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("listening on "), "the echo did not start: {line}");
    let addr = line.trim().rsplit(' ').next().unwrap().to_string();
    (child, addr)
}

/// The message of a caught panic.
pub fn panic_text(e: &Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

/// A cyclictest --json file of one thread: `(µs, count)` rows.
pub fn cyclictest_json(rows: &[(u64, u64)]) -> String {
    let hist: Vec<String> = rows.iter().map(|(us, n)| format!("\"{us}\": {n}")).collect();
    let cycles: u64 = rows.iter().map(|r| r.1).sum();
    let (min, max) = (rows.iter().map(|r| r.0).min().unwrap(), rows.iter().map(|r| r.0).max().unwrap());
    let avg = rows.iter().map(|(us, n)| us * n).sum::<u64>() as f64 / cycles as f64;
    format!(
        "{{\"file_version\": 1, \"cmdline:\": \"cyclictest -m -p 80 -i 1000 -l {cycles} -h 200000 -q -t 1 -a 0 --json=ct.json\", \
         \"rt_test_version:\": \"2.40\", \"start_time\": \"Mon, 23 Nov 2026 09:09:22 +0000\", \"end_time\": \"Mon, 23 Nov 2026 \
         09:09:23 +0000\", \"return_code\": 0, \"sysinfo\": {{\"sysname\": \"Linux\", \"nodename\": \"board\", \"release\": \
         \"6.12.0\", \"version\": \"#1 SMP PREEMPT_RT\", \"machine\": \"aarch64\", \"realtime\": 1}}, \"num_threads\": 1, \
         \"resolution_in_ns\": 0, \"thread\": {{\"0\": {{\"histogram\": {{{}}}, \"cycles\": {cycles}, \"min\": {min}, \"max\": {max}, \
         \"avg\": {avg:.2}, \"cpu\": 0, \"node\": 0}}}}}}",
        hist.join(", ")
    )
}

/// An rtgauge document of one CPU whose values follow an exponential tail: 20 000 values at the
/// quantiles of an exponential distribution of scale 40 µs from 10 µs, as a cyclictest file,
/// imported into a store of its own in `dir` and exported; without its origin and UUID (so that
/// it imports as a new run), and without a timeline (the caller gives it one).
pub fn exponential_document(dir: &std::path::Path) -> Value {
    let n = 20_000u64;
    let mut counts = std::collections::BTreeMap::new();
    for i in 1..=n {
        let q = (i as f64 - 0.5) / n as f64;
        *counts.entry((10.0 - 40.0 * (1.0 - q).ln()) as u64).or_insert(0u64) += 1;
    }
    let rows: Vec<(u64, u64)> = counts.into_iter().collect();
    let file = dir.join("exponential.json");
    std::fs::write(&file, cyclictest_json(&rows)).unwrap();
    let db = dir.join("exponential.db").display().to_string();
    let out = rtgauge(&["import", "--db", &db, "--label", "plain", file.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = rtgauge(&["export", "plain", "--db", &db, "-f", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["imported"] = Value::Null;
    doc.as_object_mut().unwrap().remove("uuid");
    // A run that says when it ran: it ended as long after it started as it measured.
    let start = chrono::DateTime::parse_from_rfc3339(doc["started_at"].as_str().unwrap()).unwrap();
    let end = start + chrono::Duration::nanoseconds(u(&doc["measured_ns"]) as i64 + 1_000_000_000);
    doc["ended_at"] = end.to_rfc3339_opts(chrono::SecondsFormat::Millis, true).into();
    doc
}

/// `p`'s timeline made steady: `windows` windows of 500 ms sharing its samples, their maxima
/// spread pseudo-randomly between half its maximum and its maximum (which one window holds);
/// `sorted`: the same maxima in ascending order (a worst case rising all run).
pub fn steady_timeline(p: &mut Value, windows: u64, sorted: bool) {
    let (samples, max) = (u(&p["samples"]), u(&p["max_ns"]));
    let mut x = 12_345u64;
    let mut maxima: Vec<u64> = (0..windows)
        .map(|_| {
            x = (x * 1_103_515_245 + 12_345) % (1 << 31);
            max / 2 + (max - max / 2) * (x >> 8) / (1 << 23)
        })
        .collect();
    maxima[13] = max;
    if sorted {
        maxima.sort();
    }
    let mut count = vec![samples / windows; windows as usize];
    count[0] += samples % windows;
    let o = p.as_object_mut().unwrap();
    o.remove("forecast");
    o.remove("convergence");
    o.insert(
        "timeline".into(),
        serde_json::json!({"window_ns": 500_000_000u64, "start_ns": 0, "count": count, "missed": vec![0; windows as usize],
            "max_ns": maxima, "p99_ns": vec![max / 4; windows as usize]}),
    );
}

/// Reads `child`'s output on another thread until it ends (a large document would otherwise
/// fill the pipe): its pid, and where its output arrives.
pub fn collect(child: std::process::Child) -> (String, std::sync::mpsc::Receiver<Output>) {
    let pid = child.id().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output().unwrap()));
    (pid, rx)
}

/// Kills process `pid`, whose output comes on `rx`, and fails the test with `why` and its stderr.
pub fn kill_and_fail(pid: &str, rx: std::sync::mpsc::Receiver<Output>, why: &str) -> ! {
    let _ = Command::new("kill").args(["-KILL", pid]).status();
    let out = rx.recv().unwrap();
    panic!("{why}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Waits for `child` at most `limit`, reading its output meanwhile; kills it and fails the test
/// if it does not end.
pub fn wait_bounded(child: std::process::Child, limit: Duration, what: &str) -> (Duration, Output) {
    let t = std::time::Instant::now();
    let (pid, rx) = collect(child);
    match rx.recv_timeout(limit) {
        Ok(out) => (t.elapsed(), out),
        Err(_) => kill_and_fail(&pid, rx, &format!("{what} did not end within {limit:?}")),
    }
}

/// A cyclictest histogram (`-h 400 -q` text) of `threads` threads, `n` values each: `base` µs
/// plus an exponential of mean `scale` µs, truncated to whole µs as cyclictest writes them,
/// drawn from a stream fixed by `stream`.
pub fn cyclictest_histogram(path: &std::path::Path, threads: usize, n: u64, base: f64, scale: f64, stream: u64) {
    let mut state = stream.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut uniform = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    const ROWS: usize = 400;
    let mut rows = vec![vec![0u64; threads]; ROWS];
    let (mut min, mut max, mut sum) = (vec![u64::MAX; threads], vec![0u64; threads], vec![0u64; threads]);
    for t in 0..threads {
        for _ in 0..n {
            let v = ((base - scale * uniform().ln()) as usize).min(ROWS - 1);
            rows[v][t] += 1;
            min[t] = min[t].min(v as u64);
            max[t] = max[t].max(v as u64);
            sum[t] += v as u64;
        }
    }
    let mut text = String::from("# /dev/cpu_dma_latency set to 0us\n# Histogram\n");
    let line = |vals: Vec<String>| vals.join(" ");
    for (i, r) in rows.iter().enumerate() {
        text += &format!("{i:06} {}\n", line(r.iter().map(|c| format!("{c:06}")).collect()));
    }
    text += &format!("# Total: {}\n", line((0..threads).map(|_| format!("{n:09}")).collect()));
    text += &format!("# Min Latencies: {}\n", line(min.iter().map(|v| format!("{v:05}")).collect()));
    text += &format!("# Avg Latencies: {}\n", line(sum.iter().map(|s| format!("{:05}", s / n)).collect()));
    text += &format!("# Max Latencies: {}\n", line(max.iter().map(|v| format!("{v:05}")).collect()));
    text += &format!("# Histogram Overflows: {}\n", line((0..threads).map(|_| "00000".to_string()).collect()));
    std::fs::write(path, text).unwrap();
}
