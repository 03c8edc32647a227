//! The simple generators: cpu, vm, io, fork, proc, net and timers. Each spreads its work over
//! worker threads and loops until `stop` is set.

use super::Counters;
use crate::sys;
use std::fs::{self, File};
use std::hint::black_box;
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::UdpSocket;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Runs `work(worker_index, counter)` on `workers` threads; returns the summed counter.
fn on_threads(workers: u32, work: impl Fn(u32, &AtomicU64) + Sync) -> u64 {
    let total = AtomicU64::new(0);
    std::thread::scope(|s| {
        for w in 0..workers {
            let (work, total) = (&work, &total);
            s.spawn(move || work(w, total));
        }
        // The waiting thread leaves SIGTERM to the working ones: at an RT policy they hold
        // every CPU it could run its handler on, and the stop would wait for the SIGKILL.
        let _ = sys::signal::block_process_signals();
    });
    total.load(Relaxed)
}

/// Integer and floating-point arithmetic, no system calls.
pub fn cpu(workers: u32, stop: &AtomicBool) -> Counters {
    let rounds = on_threads(workers, |w, n| {
        let (mut x, mut f) = (u64::from(w) + 1, 1.0f64);
        while !stop.load(Relaxed) {
            for i in 0..20_000u64 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i | 1);
                f = (f * 1.000_001 + (x >> 40) as f64).sqrt();
            }
            black_box((x, f));
            n.fetch_add(1, Relaxed);
        }
    });
    Counters::from([("rounds".into(), rounds)])
}

/// Maps `bytes`, touches every page (a page fault each), unmaps; again and again. (Explicit
/// mmap/munmap: malloc would keep and reuse the memory after the first round, and fault no more.)
/// Fails (with the reason) when the memory can never be mapped.
pub fn vm(workers: u32, bytes: u64, stop: &AtomicBool) -> Result<Counters, crate::vocab::Error> {
    vm_text(workers, bytes, stop).map_err(crate::vocab::Error::System)
}

/// [`vm`], its failure as text.
fn vm_text(workers: u32, bytes: u64, stop: &AtomicBool) -> Result<Counters, String> {
    let last_error = std::sync::Mutex::new(None::<String>);
    let touched = on_threads(workers, |_, n| {
        while !stop.load(Relaxed) {
            match sys::mem::map_touch_unmap(bytes as usize) {
                Ok(pages) => drop(n.fetch_add(pages, Relaxed)),
                Err(e) if n.load(Relaxed) == 0 => {
                    let _ = last_error.lock().map(|mut l| *l = Some(e.to_string()));
                    return;
                }
                // Memory is short for a moment (other loads): try again.
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    if touched == 0 {
        if let Some(e) = last_error.into_inner().ok().flatten() {
            return Err(format!("vm: cannot map {bytes} bytes: {e}; give a smaller bytes="));
        }
    }
    Ok(Counters::from([("pages_touched".into(), touched)]))
}

/// Writes `size` bytes in `block`-sized writes, fsyncs, drops the file from the page cache and
/// reads it back, in `dir`.
pub fn io(workers: u32, size: u64, block: u64, dir: &Path, stop: &AtomicBool) -> Counters {
    let written = AtomicU64::new(0);
    let read = on_threads(workers, |w, n| {
        let path = dir.join(format!("io-{w}"));
        let chunk = vec![0xa5u8; block as usize];
        let mut back = vec![0u8; block as usize];
        while !stop.load(Relaxed) {
            let Ok(mut f) = File::options().create(true).truncate(true).read(true).write(true).open(&path) else {
                return;
            };
            let mut done = 0;
            while done < size && !stop.load(Relaxed) {
                let len = block.min(size - done) as usize;
                if f.write_all(&chunk[..len]).is_err() {
                    return;
                }
                done += len as u64;
            }
            let _ = f.sync_all();
            written.fetch_add(done, Relaxed);
            sys::mem::drop_file_cache(&f);
            let _ = f.seek(SeekFrom::Start(0));
            while let Ok(k) = f.read(&mut back) {
                if k == 0 || stop.load(Relaxed) {
                    break;
                }
                n.fetch_add(k as u64, Relaxed);
            }
        }
        let _ = fs::remove_file(&path);
    });
    Counters::from([("bytes_written".into(), written.load(Relaxed)), ("bytes_read".into(), read)])
}

/// Creates and reaps processes.
pub fn fork(workers: u32, stop: &AtomicBool) -> Counters {
    let forks = on_threads(workers, |_, n| {
        while !stop.load(Relaxed) {
            if sys::process::fork_exit_and_reap().is_ok() {
                n.fetch_add(1, Relaxed);
            }
        }
    });
    Counters::from([("forks".into(), forks)])
}

/// Reads /proc: system-wide files and every process's status.
pub fn proc_reads(workers: u32, stop: &AtomicBool) -> Counters {
    let reads = on_threads(workers, |_, n| {
        let mut buf = String::new();
        while !stop.load(Relaxed) {
            for f in ["/proc/stat", "/proc/interrupts", "/proc/meminfo", "/proc/loadavg", "/proc/softirqs"] {
                buf.clear();
                if File::open(f).and_then(|mut h| h.read_to_string(&mut buf)).is_ok() {
                    n.fetch_add(1, Relaxed);
                }
            }
            if let Ok(dir) = fs::read_dir("/proc") {
                for e in dir.flatten() {
                    if stop.load(Relaxed) {
                        break;
                    }
                    buf.clear();
                    if File::open(e.path().join("status")).and_then(|mut h| h.read_to_string(&mut buf)).is_ok() {
                        n.fetch_add(1, Relaxed);
                    }
                }
            }
        }
    });
    Counters::from([("files_read".into(), reads)])
}

/// UDP datagrams as fast as possible, to a local receiver or to `target`. Fails (with the
/// reason) when no datagram could be sent at all, e.g. with the loopback interface down.
pub fn net(workers: u32, size: usize, target: Option<&str>, stop: &AtomicBool) -> Result<Counters, crate::vocab::Error> {
    net_text(workers, size, target, stop).map_err(crate::vocab::Error::System)
}

/// [`net`], its failure as text.
fn net_text(workers: u32, size: usize, target: Option<&str>, stop: &AtomicBool) -> Result<Counters, String> {
    let receiver = match target {
        Some(_) => None,
        None => Some(UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("net: cannot bind a loopback receiver: {e}"))?),
    };
    let dest = match (&receiver, target) {
        (Some(r), _) => r.local_addr().map(|a| a.to_string()).unwrap_or_default(),
        (None, Some(t)) => t.to_string(),
        (None, None) => unreachable!(),
    };
    let received = AtomicU64::new(0);
    let last_error = std::sync::Mutex::new(None::<String>);
    let sent = std::thread::scope(|s| {
        if let Some(r) = &receiver {
            let _ = r.set_read_timeout(Some(Duration::from_millis(100)));
            let received = &received;
            s.spawn(move || {
                let mut buf = [0u8; 65_536];
                while !stop.load(Relaxed) {
                    if r.recv(&mut buf).is_ok() {
                        received.fetch_add(1, Relaxed);
                    }
                }
            });
        }
        on_threads(workers, |_, n| {
            let sock = match UdpSocket::bind("0.0.0.0:0") {
                Ok(s) => s,
                Err(e) => return drop(last_error.lock().map(|mut l| *l = Some(e.to_string()))),
            };
            let payload = vec![0x42u8; size];
            while !stop.load(Relaxed) {
                match sock.send_to(&payload, &dest) {
                    Ok(_) => drop(n.fetch_add(1, Relaxed)),
                    Err(e) if n.load(Relaxed) == 0 => {
                        // Nothing gets through: report it rather than spin on errors.
                        let _ = last_error.lock().map(|mut l| *l = Some(e.to_string()));
                        return;
                    }
                    Err(_) => {}
                }
            }
        })
    });
    if sent == 0 {
        if let Some(e) = last_error.into_inner().ok().flatten() {
            return Err(format!("net: cannot send to {dest}: {e}"));
        }
    }
    Ok(Counters::from([("datagrams_sent".into(), sent), ("datagrams_received".into(), received.load(Relaxed))]))
}

/// `count` threads sleeping `period_ns` again and again: a stream of timer interrupts.
pub fn timers(count: u32, period_ns: u64, stop: &AtomicBool) -> Counters {
    let wakeups = on_threads(count, |_, n| {
        while !stop.load(Relaxed) {
            std::thread::sleep(Duration::from_nanos(period_ns));
            n.fetch_add(1, Relaxed);
        }
    });
    Counters::from([("wakeups".into(), wakeups)])
}
