//! The loads never hold a run past its end. A load at a high RT priority on every CPU starves
//! everything below it — on a PREEMPT_RT kernel even the `ktimers` threads that wake a
//! SCHED_OTHER coordinator from its sleep, so the coordinator would never see the planned end
//! or a Ctrl-C. The watchdog is a thread at SCHED_DEADLINE: it runs ahead of every SCHED_FIFO
//! task, outside RT throttling, and its own timer fires in hard-IRQ context. It waits in one
//! `poll` until the planned end (or a signal, through the signal handler's self-pipe), so it
//! never wakes during the measurement; then, unless the coordinator is done by then, it moves
//! every thread of the run's loads to SCHED_OTHER, once a second until the coordinator is done.
//! The coordinator then wakes, and stops the loads as usual.

use super::contain::Version;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// Finds the threads of the run's loads: in its cgroup, else in its loads' process groups.
#[derive(Clone, Default)]
pub struct Demoter {
    pub cgroup: Option<(PathBuf, Version)>,
    pub groups: Arc<Mutex<BTreeSet<i32>>>,
}

impl Demoter {
    fn threads(&self) -> Vec<i32> {
        let read_ids = |p: PathBuf| -> Vec<i32> {
            std::fs::read_to_string(p).map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect()).unwrap_or_default()
        };
        if let Some((path, v)) = &self.cgroup {
            return read_ids(path.join(if *v == Version::V2 { "cgroup.threads" } else { "tasks" }));
        }
        let groups = self.groups.lock().map(|g| g.clone()).unwrap_or_default();
        let mut tids = Vec::new();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
            // /proc/PID/stat: "pid (comm) state ppid pgrp ..."; comm may hold blanks and parentheses.
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
            let pgrp = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse::<i32>().ok());
            if pgrp.is_some_and(|g| groups.contains(&g)) {
                let tasks = std::fs::read_dir(e.path().join("task")).into_iter().flatten().flatten();
                tids.extend(tasks.filter_map(|t| t.file_name().to_string_lossy().parse::<i32>().ok()));
                tids.push(pid);
            }
        }
        tids
    }

    /// Moves every RT thread of the loads to SCHED_OTHER; returns how many it moved.
    pub fn demote(&self) -> usize {
        self.threads().into_iter().filter(|&t| crate::sys::sched::demote_task(t)).count()
    }
}

/// rtgauge's side of the running watchdog.
pub struct Watchdog {
    /// When the watchdog acts (CLOCK_MONOTONIC; `u64::MAX`: not yet armed).
    deadline: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    wake: UnixStream,
    /// How the watchdog runs: `SCHED_DEADLINE`, or why it could not.
    pub how: Result<(), String>,
    /// Threads it moved to SCHED_OTHER.
    demoted: Arc<AtomicU64>,
}

/// CPU the watchdog may use: 2 ms in every 20 ms (it needs a fraction of that once, at the end).
const RUNTIME_NS: u64 = 2_000_000;
const PERIOD_NS: u64 = 20_000_000;

impl Watchdog {
    /// Starts the watchdog, not yet armed. `wake`: the read end of the socket the signal
    /// handlers write to; `notify`: a write end of it, for [`Watchdog::arm`] and the end;
    /// `stop`: the run's stop flag.
    pub fn start(wake: UnixStream, notify: UnixStream, stop: Arc<AtomicBool>, demoter: Demoter) -> std::io::Result<Watchdog> {
        let deadline = Arc::new(AtomicU64::new(u64::MAX));
        let done = Arc::new(AtomicBool::new(false));
        let demoted = Arc::new(AtomicU64::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        let (d, dn, dm) = (deadline.clone(), done.clone(), demoted.clone());
        std::thread::Builder::new().name("rtgauge-watchdog".into()).stack_size(64 * 1024).spawn(move || {
            let how = crate::sys::sched::set_thread_deadline(RUNTIME_NS, PERIOD_NS, PERIOD_NS).map_err(|e| e.to_string());
            let _ = tx.send(how);
            watch(wake, &d, &dn, &stop, &demoter, &dm);
        })?;
        let how = rx.recv().unwrap_or_else(|_| Err("the watchdog thread ended at once".into()));
        Ok(Watchdog { deadline, done, wake: notify, how, demoted })
    }

    /// Sets when the watchdog acts unless the run is over by then.
    pub fn arm(&mut self, deadline_ns: u64) {
        self.deadline.store(deadline_ns, Relaxed);
        let _ = self.wake.write(b"a");
    }

    /// The run no longer needs the watchdog; returns how many threads it moved to SCHED_OTHER.
    pub fn finish(mut self) -> u64 {
        self.done.store(true, Relaxed);
        let _ = self.wake.write(b"d");
        self.demoted.load(Relaxed)
    }
}

fn watch(
    mut wake: UnixStream,
    deadline: &AtomicU64,
    done: &AtomicBool,
    stop: &AtomicBool,
    demoter: &Demoter,
    demoted: &AtomicU64,
) {
    let _ = wake.set_nonblocking(true);
    let mut buf = [0u8; 64];
    let mut acting = false;
    while !done.load(Relaxed) {
        let until = if acting {
            Some(crate::sys::time::monotonic_ns() + 1_000_000_000)
        } else {
            Some(deadline.load(Relaxed)).filter(|&d| d != u64::MAX)
        };
        if crate::sys::fd::wait_readable_until(&wake, until).is_err() {
            return;
        }
        while wake.read(&mut buf).is_ok_and(|n| n > 0) {}
        if done.load(Relaxed) {
            return;
        }
        acting |= stop.load(Relaxed) || crate::sys::time::monotonic_ns() >= deadline.load(Relaxed);
        if acting {
            demoted.fetch_add(demoter.demote() as u64, Relaxed);
        }
    }
}
