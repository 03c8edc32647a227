//! hackbench, as in rt-tests: `groups` groups of `fds` receivers and `fds` senders; every sender
//! passes `loops` messages of `size` bytes to every receiver of its group, over a socket pair
//! (default) or a pipe per receiver; tasks are processes (default) or threads. All tasks are
//! created first and released together; the time is from their release until all are done.

use super::Counters;
use crate::sys;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
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

/// Reads `messages` messages of `buf.len()` bytes, one message per read as hackbench does
/// (reading more at once would empty the channel every time and change how often writers wake
/// readers). The buffer is allocated before the clock starts, as hackbench's is on the stack.
fn receive(mut r: Reader, messages: u64, buf: &mut [u8]) -> io::Result<()> {
    for _ in 0..messages {
        r.read_exact(buf)?;
    }
    Ok(())
}

/// Passes `loops` messages (`msg`) to every receiver.
fn send_all(outs: &mut [Writer], msg: &[u8], loops: u64) -> io::Result<()> {
    for _ in 0..loops {
        for o in outs.iter_mut() {
            o.write_all(msg)?;
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
        if self.threads {
            self.round_threads()
        } else {
            self.round_processes()
        }
    }

    /// A receiver's channel: its read end and the write end the senders share.
    fn channel(&self) -> io::Result<(Reader, Either)> {
        Ok(if self.pipe {
            let (r, w) = io::pipe()?;
            (Box::new(r) as Reader, Either::Pipe(w))
        } else {
            let (r, w) = UnixStream::pair()?;
            (Box::new(r) as Reader, Either::Sock(w))
        })
    }

    fn round_threads(&self) -> io::Result<Duration> {
        let per_receiver = u64::from(self.fds) * self.loops;
        let mut receivers: Vec<Reader> = Vec::new();
        let mut senders: Vec<Vec<Writer>> = Vec::new();
        for _ in 0..self.groups {
            let mut group_writers = Vec::new();
            for _ in 0..self.fds {
                let (r, w) = self.channel()?;
                receivers.push(r);
                group_writers.push(w);
            }
            for _ in 0..self.fds {
                senders.push(group_writers.iter().map(|w| w.clone_writer()).collect::<io::Result<_>>()?);
            }
        }
        // The same ready/poll gate as the process mode (a barrier would wake the tasks one by
        // one through its lock).
        let (gate_r, mut gate_w) = io::pipe()?;
        let (mut ready_r, ready_w) = io::pipe()?;
        let gate = Arc::new((gate_r, ready_w));
        let wait_gate =
            |g: &(io::PipeReader, io::PipeWriter)| (&g.1).write_all(b"R").is_ok() && sys::fd::wait_readable(&g.0).is_ok();
        let (size, loops) = (self.size, self.loops);
        let tasks = receivers.len() + senders.len();
        let mut handles = Vec::new();
        for r in receivers {
            let g = gate.clone();
            handles.push(std::thread::spawn(move || {
                let mut buf = vec![0u8; size];
                if !wait_gate(&g) {
                    return Err(io::Error::other("start gate"));
                }
                receive(r, per_receiver, &mut buf)
            }));
        }
        for mut outs in senders {
            let g = gate.clone();
            handles.push(std::thread::spawn(move || {
                let msg = vec![0x48u8; size];
                if !wait_gate(&g) {
                    return Err(io::Error::other("start gate"));
                }
                send_all(&mut outs, &msg, loops)
            }));
        }
        let mut ready = vec![0u8; tasks];
        ready_r.read_exact(&mut ready)?;
        let start = Instant::now();
        gate_w.write_all(b"g")?;
        let mut result = Ok(());
        for h in handles {
            let r = h.join().unwrap_or_else(|_| Err(io::Error::other("a hackbench thread panicked")));
            result = result.and(r);
        }
        result.map(|_| start.elapsed())
    }

    /// Like hackbench: group by group, fork the receivers (closing the parent's read ends),
    /// then the senders (which inherit the group's write ends), then close the parent's write
    /// ends; so every task holds only the descriptors created before it.
    fn round_processes(&self) -> io::Result<Duration> {
        let per_receiver = u64::from(self.fds) * self.loops;
        let (size, loops) = (self.size, self.loops);
        // As in hackbench, every task reports ready, then waits (poll) for the gate to become
        // readable: the clock starts when all are ready, so task start-up is not timed, and one
        // byte written to the gate releases every task at once.
        let (mut gate_r, mut gate_w) = io::pipe()?;
        let (mut ready_r, mut ready_w) = io::pipe()?;
        let wait_gate = |g: &mut io::PipeReader, ready: &mut io::PipeWriter| {
            ready.write_all(b"R").is_ok() && sys::fd::wait_readable(g).is_ok()
        };
        let mut pids = Vec::new();
        for _ in 0..self.groups {
            let mut writers: Vec<Writer> = Vec::new();
            for _ in 0..self.fds {
                let (r, w) = self.channel()?;
                pids.push(sys::process::fork_run(|| {
                    let mut buf = vec![0u8; size];
                    i32::from(!(wait_gate(&mut gate_r, &mut ready_w) && receive(r, per_receiver, &mut buf).is_ok()))
                })?);
                writers.push(match w {
                    Either::Pipe(p) => Box::new(p),
                    Either::Sock(s) => Box::new(s),
                });
            }
            for _ in 0..self.fds {
                let outs = &mut writers;
                pids.push(sys::process::fork_run(|| {
                    let msg = vec![0x48u8; size];
                    i32::from(!(wait_gate(&mut gate_r, &mut ready_w) && send_all(outs, &msg, loops).is_ok()))
                })?);
            }
        }
        drop((gate_r, ready_w));
        let mut ready = vec![0u8; pids.len()];
        ready_r.read_exact(&mut ready)?;
        let start = Instant::now();
        gate_w.write_all(b"g")?;
        let mut failed = 0;
        for pid in pids {
            if sys::process::wait_pid(pid).map_or(true, |code| code != 0) {
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
