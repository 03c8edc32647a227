//! How one thread wakes another: the mechanisms the wake-up chain probe compares (the
//! Freescale/OCERA paper's list, and what rt-tests' ptsematest, pmqtest, svsematest and
//! sigwaittest measure). A [`WakeChannel`] is made before the threads start and shared by the
//! handler (which posts) and the task (which waits); posting and waiting allocate nothing.

use super::{check, check_syscall};
use rustix::io::Errno;
use std::cell::UnsafeCell;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

/// The mechanism a handler wakes its task with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeMethod {
    /// A futex word: the handler bumps it and `FUTEX_WAKE`s; the task `FUTEX_WAIT`s on it.
    Futex,
    /// An eventfd: the handler writes 1, the task's blocking `read` returns the count (as a UIO
    /// device's `read` returns the interrupt count).
    Eventfd,
    /// A pipe: the handler writes 8 bytes, the task reads them.
    Pipe,
    /// A POSIX message queue: `mq_send` / `mq_receive` (pmqtest).
    Mq,
    /// A real-time signal sent to the task thread (`tgkill`), taken with `sigwaitinfo`
    /// (sigwaittest).
    Signal,
    /// A POSIX semaphore: `sem_post` / `sem_wait` (svsematest's counterpart within a process).
    Sem,
    /// Priority-inheritance futex locks handed over like a baton: the handler holds one and,
    /// at each event, takes the other and releases the one the task is blocked on (ptsematest's
    /// mutex hand-over, with PI). Two locks, so the handler never takes back at once the lock it
    /// just released (it would steal it from a task not yet running).
    PiMutex,
}

/// The signal the `Signal` method sends (the timer probe's POSIX timer uses `SIGRTMIN + 1`).
fn wake_signal() -> libc::c_int {
    libc::SIGRTMIN() + 2
}

/// A `sem_t` that lives at one address for its whole life.
struct Semaphore(Box<UnsafeCell<libc::sem_t>>);

/// A one-way wake-up from a handler thread to a task thread (see [`WakeMethod`]).
pub struct WakeChannel {
    means: Means,
    /// The futex word.
    word: AtomicU32,
    /// The PI locks' words (their owner's thread id, 0 when free).
    pi: [AtomicU32; 2],
    /// The process's id, and the threads' ids (published by their set-up): the signal's
    /// target and the PI locks' owner ids, read without a system call in the loops.
    pid: i32,
    handler_tid: AtomicI32,
    task_tid: AtomicI32,
}

/// A [`WakeMethod`] with the kernel objects it needs, made in [`WakeChannel::new`]: posting and
/// waiting find them in the variant, with no check that could fail in the loops.
enum Means {
    Futex,
    /// The eventfd twice, or the pipe's ends.
    Fds {
        read: OwnedFd,
        write: OwnedFd,
    },
    /// The queue's descriptors: the handler's non-blocking one, the task's blocking one.
    Mq {
        handler: libc::mqd_t,
        task: libc::mqd_t,
    },
    Signal,
    Sem(Semaphore),
    PiMutex,
}

// SAFETY: every member is either atomic, a file descriptor, or a kernel object (message queue,
// semaphore) whose operations are thread-safe by POSIX; the semaphore never moves (boxed).
unsafe impl Sync for WakeChannel {}
unsafe impl Send for WakeChannel {}

/// Makes `fd` non-blocking (`fcntl(F_GETFL)`, then `F_SETFL` with `O_NONBLOCK` added).
fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    Ok(rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK)?)
}

/// Opens an unnamed POSIX message queue of 8-byte messages: (the handler's non-blocking
/// descriptor, the task's blocking one). Its name (`/rtgauge-PID-RANDOM`: message queue names are
/// one namespace for every user, so a predictable one could be taken first) is made with
/// `O_EXCL` — a queue of that name that exists is never used — and unlinked at once.
fn open_queue() -> io::Result<(libc::mqd_t, libc::mqd_t)> {
    // Another queue of the same random name is all but impossible; a few tries say it was not chance.
    for _ in 0..3 {
        let name = format!("/rtgauge-{}-{:016x}\0", std::process::id(), super::host::random_u64()?);
        // Raw: rustix has no POSIX message queues.
        // SAFETY: `name` is NUL-terminated and outlives the calls; `attr` is a valid mq_attr.
        unsafe {
            let mut attr: libc::mq_attr = std::mem::zeroed();
            attr.mq_maxmsg = 8;
            attr.mq_msgsize = 8;
            let path = name.as_ptr().cast();
            let flags = libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC;
            let task = libc::mq_open(path, flags, 0o600 as libc::mode_t, &attr as *const libc::mq_attr);
            if task < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EEXIST) {
                    continue;
                }
                return Err(e);
            }
            // The queue is ours (made with O_EXCL, mode 0600, in the sticky /dev/mqueue): the
            // second descriptor opens the same one.
            let handler = libc::mq_open(path, libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC);
            let err = io::Error::last_os_error();
            libc::mq_unlink(path);
            if handler < 0 {
                libc::mq_close(task);
                return Err(err);
            }
            return Ok((handler, task));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "three message queues named /rtgauge-PID-RANDOM existed already: another user is taking rtgauge's names \
         (look in /dev/mqueue)",
    ))
}

/// Raw `futex`: rustix's `futex::wait`, `lock_pi` and `unlock_pi` `debug_assert` their return
/// value, a panic path in the RT loops of a debug build (the system call is the same).
fn futex(word: &AtomicU32, op: libc::c_int, val: u32) -> libc::c_long {
    // SAFETY: `word` is a valid, aligned u32 for the call; no timeout (null) or second word.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), op, val, std::ptr::null::<libc::timespec>(), 0usize, 0u32) }
}

fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

impl WakeChannel {
    /// Makes the channel (before the threads start).
    pub fn new(method: WakeMethod) -> io::Result<WakeChannel> {
        let means = match method {
            WakeMethod::Futex => Means::Futex,
            WakeMethod::Eventfd => {
                let fd = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC)?;
                Means::Fds { read: fd.try_clone()?, write: fd }
            }
            WakeMethod::Pipe => {
                let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
                set_nonblocking(&write)?;
                Means::Fds { read, write }
            }
            WakeMethod::Mq => {
                let (handler, task) = open_queue()?;
                Means::Mq { handler, task }
            }
            WakeMethod::Signal => Means::Signal,
            WakeMethod::Sem => {
                // Raw: rustix has no POSIX semaphores.
                // SAFETY: sem_t is plain data; sem_init initialises it in place, where it stays.
                let sem = Semaphore(Box::new(UnsafeCell::new(unsafe { std::mem::zeroed() })));
                check(unsafe { libc::sem_init(sem.0.get(), 0, 0) })?;
                Means::Sem(sem)
            }
            WakeMethod::PiMutex => Means::PiMutex,
        };
        Ok(WakeChannel {
            means,
            word: AtomicU32::new(0),
            pi: [AtomicU32::new(0), AtomicU32::new(0)],
            pid: rustix::process::getpid().as_raw_nonzero().get(),
            handler_tid: AtomicI32::new(0),
            task_tid: AtomicI32::new(0),
        })
    }

    /// In the handler thread, before the run: the PI method takes its first lock (the task
    /// blocks on it). The handler's state for [`WakeChannel::post`] starts at 0.
    pub fn handler_setup(&self) -> io::Result<()> {
        self.handler_tid.store(gettid(), Ordering::Release);
        if matches!(self.means, Means::PiMutex) {
            pi_lock(&self.pi[0], gettid())?;
        }
        Ok(())
    }

    /// In the task thread, before the run: the signal method blocks its signal there (it is
    /// taken with `sigwaitinfo`) and publishes the thread's id.
    pub fn task_setup(&self) -> io::Result<()> {
        self.task_tid.store(gettid(), Ordering::Release);
        if matches!(self.means, Means::Signal) {
            // Raw: the C library's `pthread_sigmask` (rustix: only in its unstable `runtime`).
            // SAFETY: `set` is a valid sigset_t initialised by sigemptyset.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, wake_signal());
                let ret = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                if ret != 0 {
                    return Err(io::Error::from_raw_os_error(ret));
                }
            }
        }
        Ok(())
    }

    /// Wakes the task (the handler, at each event; `state`: the handler's, 0 at first). Never
    /// blocks, except the PI method when the task still holds the lock it takes (the task
    /// inherits the handler's priority meanwhile).
    #[inline(always)]
    pub fn post(&self, state: &mut u32) {
        if matches!(self.means, Means::PiMutex) {
            let (held, tid) = (*state as usize & 1, self.handler_tid.load(Ordering::Relaxed));
            let _ = pi_lock(&self.pi[held ^ 1], tid);
            pi_unlock(&self.pi[held], tid);
            *state ^= 1;
        } else {
            self.signal_task();
        }
    }

    /// Wakes the task for the last time (the handler, when it ends); no PI lock stays held.
    pub fn finish(&self, state: u32) {
        if matches!(self.means, Means::PiMutex) {
            self.release(state);
        } else {
            self.signal_task();
        }
    }

    /// Lets go of what the poster holds without waking anyone (a ping-pong's sender, when its
    /// receiver has ended): the PI method's lock; nothing for the others.
    pub fn release(&self, state: u32) {
        if matches!(self.means, Means::PiMutex) {
            pi_unlock(&self.pi[state as usize & 1], self.handler_tid.load(Ordering::Relaxed));
        }
    }

    #[inline(always)]
    fn signal_task(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY (each arm): valid descriptors, handles and pointers owned by this channel; the
        // buffers outlive the calls. Raw (each arm but `Fds`): futexes (see `futex`), message
        // queues and semaphores (not in rustix), `tgkill` (rustix: only in `runtime`).
        match &self.means {
            Means::Futex => {
                self.word.fetch_add(1, Ordering::Release);
                futex(&self.word, libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1);
            }
            Means::Fds { write, .. } => {
                // One `write` of 8 bytes (rustix makes the system call itself: no lock, no panic).
                let _ = rustix::io::write(write, &one);
            }
            Means::Mq { handler, .. } => {
                unsafe { libc::mq_send(*handler, one.as_ptr().cast(), 8, 0) };
            }
            Means::Signal => {
                let tid = self.task_tid.load(Ordering::Acquire);
                unsafe { libc::syscall(libc::SYS_tgkill, self.pid, tid, wake_signal()) };
            }
            Means::Sem(sem) => {
                unsafe { libc::sem_post(sem.0.get()) };
            }
            Means::PiMutex => {}
        }
    }

    /// Blocks until the handler posts (the task). `seen`: the task's state, 0 at first (the
    /// futex value it last saw; the PI lock it waits on). The PI method returns holding the
    /// lock: call [`WakeChannel::woken`] right after reading the clock.
    #[inline(always)]
    pub fn wait(&self, seen: &mut u32) {
        let mut buf = [0u8; 8];
        // SAFETY (each arm): as in `signal_task`; `buf` and `set` outlive the calls. Raw (each arm
        // but `Fds`): as in `signal_task`, and `sigwaitinfo` (rustix: only in `runtime`).
        match &self.means {
            Means::Futex => loop {
                let now = self.word.load(Ordering::Acquire);
                if now != *seen {
                    *seen = now;
                    return;
                }
                futex(&self.word, libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, now);
            },
            Means::Fds { read, .. } => {
                // One `read` of 8 bytes, again only when interrupted (as `write` above).
                while rustix::io::read(read, &mut buf) == Err(Errno::INTR) {}
            }
            Means::Mq { task, .. } => {
                let mut prio = 0;
                while unsafe { libc::mq_receive(*task, buf.as_mut_ptr().cast(), 8, &mut prio) } < 0 && interrupted() {}
            }
            Means::Signal => unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, wake_signal());
                while libc::sigwaitinfo(&set, std::ptr::null_mut()) < 0 && interrupted() {}
            },
            Means::Sem(sem) => {
                let sem = sem.0.get();
                while unsafe { libc::sem_wait(sem) } < 0 && interrupted() {}
            }
            Means::PiMutex => {
                let _ = pi_lock(&self.pi[*seen as usize & 1], self.task_tid.load(Ordering::Relaxed));
            }
        }
    }

    /// Right after the task's wake-up was timed: the PI method releases the lock it took and
    /// waits on the other next.
    #[inline(always)]
    pub fn woken(&self, seen: &mut u32) {
        if matches!(self.means, Means::PiMutex) {
            pi_unlock(&self.pi[*seen as usize & 1], self.task_tid.load(Ordering::Relaxed));
            *seen ^= 1;
        }
    }
}

/// Takes a PI lock: the word holds its owner's thread id; a contended lock is taken by the
/// kernel (`FUTEX_LOCK_PI`), which lends the waiter's priority to the owner.
fn pi_lock(word: &AtomicU32, tid: i32) -> io::Result<()> {
    let tid = tid as u32;
    if word.compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed).is_ok() {
        return Ok(());
    }
    loop {
        match check_syscall(futex(word, libc::FUTEX_LOCK_PI | libc::FUTEX_PRIVATE_FLAG, 0)) {
            Ok(_) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Releases a PI lock; with waiters, the kernel hands it to the highest-priority one.
fn pi_unlock(word: &AtomicU32, tid: i32) {
    let tid = tid as u32;
    if word.compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed).is_err() {
        futex(word, libc::FUTEX_UNLOCK_PI | libc::FUTEX_PRIVATE_FLAG, 0);
    }
}

fn interrupted() -> bool {
    io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}

impl Drop for WakeChannel {
    fn drop(&mut self) {
        // Raw: message queues and semaphores (not in rustix).
        // SAFETY: the queue descriptors and the semaphore were made in `new` and are released
        // once, after both threads have ended (the channel is shared by `Arc`).
        unsafe {
            match &self.means {
                Means::Mq { handler, task } => {
                    libc::mq_close(*handler);
                    libc::mq_close(*task);
                }
                Means::Sem(s) => {
                    libc::sem_destroy(s.0.get());
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each method made in one thread passes a post to a wait (the PI method needs two threads).
    #[test]
    fn a_post_reaches_the_wait_by_every_single_thread_method() {
        for method in
            [WakeMethod::Futex, WakeMethod::Eventfd, WakeMethod::Pipe, WakeMethod::Mq, WakeMethod::Signal, WakeMethod::Sem]
        {
            let c = match WakeChannel::new(method) {
                Ok(c) => c,
                Err(e) if method == WakeMethod::Mq => {
                    eprintln!("SKIPPED {method:?}: {e}");
                    continue;
                }
                Err(e) => panic!("{method:?}: {e}"),
            };
            c.handler_setup().unwrap();
            c.task_setup().unwrap();
            let (mut state, mut seen) = (0, 0);
            c.post(&mut state);
            c.wait(&mut seen);
            c.woken(&mut seen);
            c.finish(state);
        }
    }
}
