//! A sequence lock over a few `u64` facts: a writer publishes them together, wait-free, and a
//! reader never sees them torn. Shared by the wake-up chain (the handler's latest event, read
//! by its task) and the trace trigger (a deferred worst case, read by the collector).

use std::sync::atomic::{fence, AtomicU64, Ordering::*};

#[derive(Debug)]
pub struct SeqFacts<const N: usize> {
    /// Odd while a writer writes; twice the number of publications otherwise.
    seq: AtomicU64,
    facts: [AtomicU64; N],
}

impl<const N: usize> Default for SeqFacts<N> {
    fn default() -> SeqFacts<N> {
        SeqFacts { seq: AtomicU64::new(0), facts: std::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

impl<const N: usize> SeqFacts<N> {
    /// Publishes `facts`; only one thread may ever call it (no atomic read-modify-write).
    #[inline(always)]
    pub fn publish(&self, facts: [u64; N]) {
        let s = self.seq.load(Relaxed);
        self.seq.store(s + 1, Relaxed);
        self.write(s, facts);
    }

    /// Publishes `facts` where several threads may write; false (nothing written) while
    /// another one is writing.
    #[inline(always)]
    pub fn try_publish(&self, facts: [u64; N]) -> bool {
        let s = self.seq.load(Relaxed);
        if !s.is_multiple_of(2) || self.seq.compare_exchange(s, s + 1, Relaxed, Relaxed).is_err() {
            return false;
        }
        self.write(s, facts);
        true
    }

    #[inline(always)]
    fn write(&self, s: u64, facts: [u64; N]) {
        fence(Release);
        for (slot, v) in self.facts.iter().zip(facts) {
            slot.store(v, Relaxed);
        }
        self.seq.store(s + 2, Release);
    }

    /// The facts and how many times they were published, or None while they are being written.
    #[inline(always)]
    pub fn try_read(&self) -> Option<([u64; N], u64)> {
        let s = self.seq.load(Acquire);
        let read = std::array::from_fn(|k| self.facts[k].load(Relaxed));
        fence(Acquire);
        (s.is_multiple_of(2) && self.seq.load(Relaxed) == s).then_some((read, s / 2))
    }

    /// The facts and how many times they were published, waiting out a write.
    #[inline(always)]
    pub fn read(&self) -> ([u64; N], u64) {
        loop {
            if let Some(r) = self.try_read() {
                return r;
            }
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SeqFacts;

    #[test]
    fn facts_come_back_whole_with_their_count_and_a_write_in_progress_is_refused() {
        let f = SeqFacts::<3>::default();
        assert_eq!(f.read(), ([0, 0, 0], 0));
        f.publish([1, 2, 3]);
        assert!(f.try_publish([4, 5, 6]));
        assert_eq!(f.read(), ([4, 5, 6], 2));
        // A writer in the middle of its write (seq odd): readers and other writers wait.
        f.seq.store(5, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(f.try_read(), None);
        assert!(!f.try_publish([7, 8, 9]));
    }
}
