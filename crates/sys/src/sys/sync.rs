//! Locks shared between threads of different priorities: the C library's priority-inheritance
//! mutex, which the audit tries. Raw: the mutex is the C library's (`pthread_mutex_*`), not a
//! system call rustix could make.

use std::io;

/// A mutex of the C library with the priority-inheritance protocol
/// (`PTHREAD_PRIO_INHERIT`): what an RT application shares between threads of different
/// priorities. The audit tries one (does the C library make it, does the kernel boost its holder).
pub struct PiMutex {
    // Boxed: a pthread mutex must not move once initialised.
    inner: Box<std::cell::UnsafeCell<libc::pthread_mutex_t>>,
}

// SAFETY: a pthread mutex is made to be shared between threads; every access goes through the
// C library's own synchronised functions.
unsafe impl Send for PiMutex {}
// SAFETY: as above.
unsafe impl Sync for PiMutex {}

impl PiMutex {
    /// Makes an unlocked PI mutex; fails where the C library or the kernel has no PI futexes.
    pub fn new() -> io::Result<PiMutex> {
        let inner = Box::new(std::cell::UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
        let err = |r: libc::c_int| if r == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(r)) };
        // SAFETY: `attr` is initialised by pthread_mutexattr_init before use and destroyed after;
        // the mutex lives in its box, which does not move while the PiMutex exists.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            err(libc::pthread_mutexattr_init(&mut attr))?;
            let made = err(libc::pthread_mutexattr_setprotocol(&mut attr, libc::PTHREAD_PRIO_INHERIT))
                .and_then(|_| err(libc::pthread_mutex_init(inner.get(), &attr)));
            libc::pthread_mutexattr_destroy(&mut attr);
            made?;
        }
        Ok(PiMutex { inner })
    }

    /// Locks it, blocking (the kernel boosts the holder to the waiter's priority meanwhile).
    pub fn lock(&self) -> io::Result<()> {
        // SAFETY: the mutex was initialised in `new` and is not destroyed before `drop`.
        let r = unsafe { libc::pthread_mutex_lock(self.inner.get()) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(r))
        }
    }

    /// Unlocks it (the calling thread must hold it).
    pub fn unlock(&self) -> io::Result<()> {
        // SAFETY: as for `lock`; unlocking a mutex the thread does not hold returns an error.
        let r = unsafe { libc::pthread_mutex_unlock(self.inner.get()) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(r))
        }
    }
}

impl Drop for PiMutex {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; nobody holds or waits on it once it is dropped.
        unsafe { libc::pthread_mutex_destroy(self.inner.get()) };
    }
}
