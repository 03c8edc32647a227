//! The noise probe: the OS and hardware noise floor beneath every other figure, measured as
//! oslat does. A busy loop per CPU reads the clock as fast as it can; whenever two reads lie
//! further apart than the threshold, something else ran (an interrupt, a kernel thread, the
//! hypervisor, RT throttling) and the gap is handed over as an event: its length, in the window
//! of `interval` where it ended. Nothing is ever missed: a quiet window has no event.
//!
//! The loop allocates nothing, takes no lock and prints nothing; between its start and its end
//! it makes no system call at all (the clock is read in the vDSO).

use super::{Handoff, Probe, Role, RtLoop, Schedule};
use crate::sys;
use crate::vocab::units::Nanos;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The probe's name in `--measure`, results and requirements.
pub const NAME: &str = "noise";
/// Gaps longer than this are noise unless `threshold=` says otherwise (oslat's histogram
/// starts at 1 µs).
pub const DEFAULT_THRESHOLD_NS: u64 = 1_000;

/// The noise probe: its windows (the run's periods) and the threshold of a gap.
#[derive(Debug, Clone, Copy)]
pub struct NoiseProbe {
    pub schedule: Schedule,
    pub threshold_ns: u64,
}

impl Probe for NoiseProbe {
    fn name(&self) -> &'static str {
        NAME
    }
    fn schedule(&self) -> Schedule {
        self.schedule
    }
    fn settings(&self) -> Vec<String> {
        vec![format!("interval={}", Nanos(self.schedule.interval_ns)), format!("threshold={}", Nanos(self.threshold_ns))]
    }
    fn events(&self) -> bool {
        true
    }
    fn noise_threshold(&self) -> Option<u64> {
        Some(self.threshold_ns)
    }
    fn busy_loop(&self) -> bool {
        true
    }
    fn instance(&self, cpu: usize, _cpus: &[usize]) -> Result<Vec<Role>, String> {
        let (schedule, threshold_ns) = (self.schedule, self.threshold_ns);
        Ok(vec![Role::single(cpu, Box::new(move || Ok(Box::new(NoiseLoop { schedule, threshold_ns }) as Box<dyn RtLoop>)))])
    }
}

/// The busy loop of one CPU.
struct NoiseLoop {
    schedule: Schedule,
    threshold_ns: u64,
}

impl RtLoop for NoiseLoop {
    /// From `start_ns` to the end of the last window, reads the clock in a tight loop; a gap
    /// over the threshold is an event of the window it ended in. The stop flag is read every
    /// 1024 reads (a relaxed load, but the loop is the measurement).
    fn run(&mut self, start_ns: u64, stop: &AtomicBool, out: &mut [Handoff]) {
        let (out, interval) = (&mut out[0], self.schedule.interval_ns);
        let end = start_ns + self.schedule.periods * interval;
        sys::sleep_until_monotonic(start_ns);
        // From the start, not from the first read: a thread held off its CPU at the start sees
        // that time as its first gap.
        let mut previous = start_ns;
        let mut reads: u32 = 0;
        while previous < end {
            let now = sys::monotonic_ns();
            let gap = now - previous;
            if gap > self.threshold_ns {
                out.event(self.schedule.window_of(start_ns, now), gap);
            }
            previous = now;
            reads = reads.wrapping_add(1);
            if reads.is_multiple_of(1024) && stop.load(Relaxed) {
                break;
            }
        }
        out.accounted_through(self.schedule.windows_passed(start_ns, previous));
    }
}
