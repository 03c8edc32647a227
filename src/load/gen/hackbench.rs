//! hackbench, as in rt-tests: `groups` groups of `fds` receivers and `fds` senders; every sender
//! passes `loops` messages of `size` bytes to every receiver of its group, over a socket pair
//! (default) or a pipe per receiver; tasks are processes (default) or threads. All tasks are
//! created first and released together; the time is from their release until all are done.

use super::Counters;
use crate::sys;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// One hackbench configuration.
#[derive(Debug, Clone, Copy)]
pub struct Hackbench {
    pub groups: u32,
    pub fds: u32,
    pub size: usize,
    pub loops: u64,
    pub pipe: bool,
    pub threads: bool,
}

/// The two ends of a receiver's channel, as byte streams.
type Reader = Box<dyn Read + Send>;
type Writer = Box<dyn Write + Send>;

/// The cloneable write side of a channel (to give every sender its own handle).
enum Either {
    Pipe(io::PipeWriter),
    Sock(UnixStream),
}

impl Either {
    fn clone_writer(&self) -> io::Result<Writer> {
        Ok(match self {
            Either::Pipe(p) => Box::new(p.try_clone()?),
            Either::Sock(s) => Box::new(s.try_clone()?),
        })
    }
}

fn receive(mut r: Reader, bytes: u64) -> io::Result<()> {
    let mut buf = vec![0u8; 65_536];
    let mut left = bytes;
    while left > 0 {
        let want = (buf.len() as u64).min(left) as usize;
        let n = r.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "sender went away"));
        }
        left -= n as u64;
    }
    Ok(())
}

fn send(mut outs: Vec<Writer>, size: usize, loops: u64) -> io::Result<()> {
    let msg = vec![0x48u8; size];
    for _ in 0..loops {
        for o in outs.iter_mut() {
            o.write_all(&msg)?;
        }
    }
    Ok(())
}

impl Hackbench {
    /// Number of tasks of one round.
    pub fn tasks(&self) -> u64 {
        u64::from(self.groups) * u64::from(self.fds) * 2
    }

    /// The banner rt-tests hackbench prints.
    pub fn banner(&self) -> String {
        format!(
            "Running in {} mode with {} groups using {} file descriptors each (== {} tasks)\nEach sender will pass {} messages of {} bytes",
            if self.threads { "threaded" } else { "process" },
            self.groups,
            self.fds * 2,
            self.tasks(),
            self.loops,
            self.size
        )
    }

    /// One hackbench run; returns its time.
    pub fn round(&self) -> io::Result<Duration> {
        let per_receiver = u64::from(self.fds) * self.loops * self.size as u64;
        let mut receivers: Vec<Reader> = Vec::new();
        let mut senders: Vec<Vec<Writer>> = Vec::new();
        for _ in 0..self.groups {
            let mut group_writers = Vec::new();
            for _ in 0..self.fds {
                let (r, w) = if self.pipe {
                    let (r, w) = io::pipe()?;
                    (Box::new(r) as Reader, Either::Pipe(w))
                } else {
                    let (r, w) = UnixStream::pair()?;
                    (Box::new(r) as Reader, Either::Sock(w))
                };
                receivers.push(r);
                group_writers.push(w);
            }
            for _ in 0..self.fds {
                senders.push(group_writers.iter().map(|w| w.clone_writer()).collect::<io::Result<_>>()?);
            }
        }
        if self.threads {
            self.round_threads(receivers, senders, per_receiver)
        } else {
            self.round_processes(receivers, senders, per_receiver)
        }
    }

    fn round_threads(&self, receivers: Vec<Reader>, senders: Vec<Vec<Writer>>, per_receiver: u64) -> io::Result<Duration> {
        let gate = Arc::new(Barrier::new(receivers.len() + senders.len() + 1));
        let (size, loops) = (self.size, self.loops);
        let mut handles = Vec::new();
        for r in receivers {
            let g = gate.clone();
            handles.push(std::thread::spawn(move || {
                g.wait();
                receive(r, per_receiver)
            }));
        }
        for outs in senders {
            let g = gate.clone();
            handles.push(std::thread::spawn(move || {
                g.wait();
                send(outs, size, loops)
            }));
        }
        gate.wait();
        let start = Instant::now();
        let mut result = Ok(());
        for h in handles {
            let r = h.join().unwrap_or_else(|_| Err(io::Error::other("a hackbench thread panicked")));
            result = result.and(r);
        }
        result.map(|_| start.elapsed())
    }

    fn round_processes(&self, receivers: Vec<Reader>, senders: Vec<Vec<Writer>>, per_receiver: u64) -> io::Result<Duration> {
        // Children block on reading one byte each from the gate; writing them releases all.
        let (mut gate_r, mut gate_w) = io::pipe()?;
        let mut pids = Vec::new();
        let (size, loops) = (self.size, self.loops);
        let wait_gate = |g: &mut io::PipeReader| {
            let mut b = [0u8; 1];
            g.read_exact(&mut b).is_ok()
        };
        for r in receivers {
            pids.push(sys::fork_run(|| i32::from(!(wait_gate(&mut gate_r) && receive(r, per_receiver).is_ok())))?);
        }
        for outs in senders {
            pids.push(sys::fork_run(|| i32::from(!(wait_gate(&mut gate_r) && send(outs, size, loops).is_ok())))?);
        }
        drop(gate_r);
        let start = Instant::now();
        gate_w.write_all(&vec![b'g'; pids.len()])?;
        let mut failed = 0;
        for pid in pids {
            if sys::wait_pid(pid).map_or(true, |code| code != 0) {
                failed += 1;
            }
        }
        if failed > 0 {
            return Err(io::Error::other(format!("{failed} hackbench tasks failed")));
        }
        Ok(start.elapsed())
    }

    /// Runs rounds until `stop` is set (or once); counts rounds and messages.
    pub fn run(&self, stop: &AtomicBool, once: bool) -> io::Result<(Counters, Vec<Duration>)> {
        let mut times = Vec::new();
        loop {
            times.push(self.round()?);
            if once || stop.load(Relaxed) {
                break;
            }
        }
        let rounds = times.len() as u64;
        let messages = rounds * u64::from(self.groups) * u64::from(self.fds) * u64::from(self.fds) * self.loops;
        Ok((Counters::from([("rounds".into(), rounds), ("messages".into(), messages)]), times))
    }
}
