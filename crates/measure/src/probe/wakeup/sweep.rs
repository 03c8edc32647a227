//! The wake-up chain's rate sweep (`wakeup:rate=sweep`): the ARM9/ARM11 paper's test of how
//! fast interrupts may come before the chain misses one. The measured time is split into equal
//! steps, one per rate (1000 … 150 000 events a second by default; the first step also holds
//! the warm-up); at each step's start the handler re-arms its periodic timer at the step's rate.
//! A step is sustained when no event of it was missed and the chain's worst case stayed within
//! the bound (`bound=`; by default the step's own interval: the chain must be done before the
//! next event is due). The sweep stops raising the rate once a step has failed (`all`: it runs
//! every rate), and the result names the highest rate sustained.
//!
//! Events are numbered from 1 across the whole sweep; an event's deadline is its step's start
//! plus its number within the step times the step's interval. Its facts are events placed in
//! windows of [`WINDOW_NS`] by their deadline (a step boundary is a window boundary, and a
//! phase boundary of the run), so each step's events and missed events sum exactly to what the
//! step planned; missed events are handed over per step, so they never count in another.

use super::super::{Handoff, Schedule};

/// The rates of the default sweep, events a second (the paper pushed its interrupt to 150 kHz).
pub const DEFAULT_RATES: &[u32] = &[1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 150_000];
/// The most rates a sweep may have.
pub const MAX_STEPS: usize = 16;
/// The highest rate accepted: one event a microsecond.
pub const MAX_RATE: u32 = 1_000_000;
/// The windows events are placed in (a step lasts a whole number of them).
pub const WINDOW_NS: u64 = 1_000_000;
/// The shortest step accepted: shorter steps measure too few events at the low rates.
pub const MIN_STEP_NS: u64 = 100_000_000;

/// A sweep's plan: its rates, how long each lasts, and the bound of the chain's worst case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    rates: [u32; MAX_STEPS],
    steps: usize,
    /// Each step's length (the first step's warm-up excepted).
    pub step_ns: u64,
    /// The warm-up before the first step's measured part, at the first rate.
    pub warmup_ns: u64,
    /// The bound of the chain's worst case; `None`: each step's own interval.
    pub bound_ns: Option<u64>,
    /// Run every rate, even after a step failed.
    pub all: bool,
    /// The first event of each step (from 1); `first[steps]` is one past the last event.
    first: [u64; MAX_STEPS + 1],
}

impl Sweep {
    /// A sweep of `rates` (rising) in a run of `total_ns` that warms up for `warmup_ns` (both
    /// rounded to whole windows: the warm-up up, the steps down).
    pub fn new(
        rates: &[u32],
        warmup_ns: u64,
        total_ns: u64,
        bound_ns: Option<u64>,
        all: bool,
    ) -> Result<Sweep, crate::vocab::Error> {
        Self::new_text(rates, warmup_ns, total_ns, bound_ns, all).map_err(crate::vocab::Error::Invalid)
    }

    /// [`Self::new`], its failure as text.
    fn new_text(rates: &[u32], warmup_ns: u64, total_ns: u64, bound_ns: Option<u64>, all: bool) -> Result<Sweep, String> {
        if rates.is_empty() || rates.len() > MAX_STEPS {
            return Err(format!("a sweep has 1 to {MAX_STEPS} rates, not {}", rates.len()));
        }
        if let Some(r) = rates.iter().find(|&&r| r == 0 || r > MAX_RATE) {
            return Err(format!("rate {r} is not within 1..{MAX_RATE} events a second"));
        }
        if rates.windows(2).any(|w| w[0] >= w[1]) {
            return Err("a sweep's rates must rise from one step to the next".into());
        }
        let warmup_ns = warmup_ns.div_ceil(WINDOW_NS) * WINDOW_NS;
        let measured_ns = total_ns.saturating_sub(warmup_ns);
        let step_ns = measured_ns / rates.len() as u64 / WINDOW_NS * WINDOW_NS;
        if step_ns < MIN_STEP_NS {
            return Err(format!(
                "its {} rates share {} of measuring, less than {} each; lengthen the run (-D {}s) or give fewer rates",
                rates.len(),
                crate::vocab::units::Nanos(measured_ns),
                crate::vocab::units::Nanos(MIN_STEP_NS),
                (rates.len() as u64 * MIN_STEP_NS).div_ceil(1_000_000_000)
            ));
        }
        let mut s =
            Sweep { rates: [0; MAX_STEPS], steps: rates.len(), step_ns, warmup_ns, bound_ns, all, first: [0; MAX_STEPS + 1] };
        s.rates[..rates.len()].copy_from_slice(rates);
        s.first[0] = 1;
        for i in 0..s.steps {
            s.first[i + 1] = s.first[i] + s.events(i);
        }
        Ok(s)
    }

    /// How many steps (rates).
    pub fn steps(&self) -> usize {
        self.steps
    }
    /// Step `s`'s rate, events a second.
    pub fn rate(&self, s: usize) -> u32 {
        self.rates[s]
    }
    /// Step `s`'s interval between events.
    pub fn interval_ns(&self, s: usize) -> u64 {
        1_000_000_000 / u64::from(self.rates[s])
    }
    /// Where step `s` starts, from the start of the run (the first at 0, with the warm-up).
    pub fn start_ns(&self, s: usize) -> u64 {
        if s == 0 {
            0
        } else {
            self.warmup_ns + s as u64 * self.step_ns
        }
    }
    /// Where step `s` ends.
    pub fn end_ns(&self, s: usize) -> u64 {
        self.warmup_ns + (s as u64 + 1) * self.step_ns
    }
    /// The events step `s` plans, warm-up included (deadlines within the step).
    pub fn events(&self, s: usize) -> u64 {
        (self.end_ns(s) - self.start_ns(s)) / self.interval_ns(s)
    }
    /// The events of the warm-up (the first step's first ones).
    pub fn warmup_events(&self) -> u64 {
        self.warmup_ns / self.interval_ns(0)
    }
    /// The measured events step `s` plans: each ends as an event taken or a missed one.
    pub fn planned(&self, s: usize) -> u64 {
        self.events(s) - if s == 0 { self.warmup_events() } else { 0 }
    }
    /// The bound step `s` judges the chain's worst case by.
    pub fn bound(&self, s: usize) -> u64 {
        self.bound_ns.unwrap_or(self.interval_ns(s))
    }
    /// The first event of step `s` (from 1).
    pub fn first_event(&self, s: usize) -> u64 {
        self.first[s]
    }
    /// The last event of the sweep.
    pub fn last_event(&self) -> u64 {
        self.first[self.steps] - 1
    }
    /// The windows of the run: warm-up and steps (the run may last longer; later windows are quiet).
    pub fn schedule(&self, total_ns: u64) -> Schedule {
        let warmup_periods = self.warmup_ns / WINDOW_NS;
        Schedule {
            interval_ns: WINDOW_NS,
            warmup_periods,
            periods: (total_ns / WINDOW_NS).max(self.end_ns(self.steps - 1) / WINDOW_NS),
        }
    }

    /// The step event `event` belongs to.
    #[inline(always)]
    pub fn step_of(&self, event: u64) -> usize {
        self.first[..=self.steps].partition_point(|&f| f <= event).saturating_sub(1).min(self.steps - 1)
    }
    /// The deadline of event `event`, from the start of the run.
    #[inline(always)]
    pub fn deadline_ns(&self, event: u64) -> u64 {
        self.deadline_in(self.step_of(event), event)
    }
    /// The deadline of event `event` of step `s`.
    #[inline(always)]
    fn deadline_in(&self, s: usize, event: u64) -> u64 {
        self.start_ns(s) + (event - self.first[s] + 1) * self.interval_ns(s)
    }
    /// The window event `event` counts in: the one its deadline closes or lies in.
    #[inline(always)]
    pub fn window(&self, event: u64) -> u64 {
        self.window_in(self.step_of(event), event)
    }
    /// The window of event `event` of step `s` (its step already known: no search).
    #[inline(always)]
    pub fn window_in(&self, s: usize, event: u64) -> u64 {
        self.deadline_in(s, event).div_ceil(WINDOW_NS).max(1)
    }
    /// Whether event `event` is measured (after the warm-up).
    #[inline(always)]
    pub fn measured(&self, event: u64) -> bool {
        event > self.warmup_events()
    }

    /// Hands over events `a..=b` as missed, one fact per step (and warm-up) they span, each in
    /// the window of its last event: at most a few facts, however many events.
    #[inline(always)]
    pub fn hand_missed(&self, out: &mut Handoff, mut a: u64, b: u64) {
        let warm = self.warmup_events();
        while a <= b && a <= self.last_event() {
            let s = self.step_of(a);
            let mut end = b.min(self.first[s + 1] - 1);
            if a <= warm {
                end = end.min(warm);
            }
            out.event_after(self.window_in(s, end), None, end - a + 1);
            a = end + 1;
        }
    }
}

/// Parses `rates=1000/5000/20k/150k`: rates a second, `k` for thousands, rising.
pub fn parse_rates(v: &str) -> Option<Vec<u32>> {
    v.split('/')
        .map(|r| {
            let r = r.trim();
            match r.strip_suffix(['k', 'K']) {
                Some(k) => k.parse::<u32>().ok()?.checked_mul(1000),
                None => r.parse().ok(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_partition_the_events_and_place_them_by_deadline() {
        // 100 ms warm-up, 800 ms of measuring: 4 steps of 200 ms.
        let s = Sweep::new(&[1000, 2000, 5000, 150_000], 100_000_000, 900_000_000, None, false).unwrap();
        assert_eq!(s.step_ns, 200_000_000);
        assert_eq!((s.events(0), s.warmup_events(), s.planned(0)), (300, 100, 200));
        assert_eq!((s.events(1), s.events(2)), (400, 1000));
        // 150 000/s: 6666 ns apart, whole events within the 200 ms step.
        assert_eq!((s.interval_ns(3), s.events(3)), (6666, 30_003));
        assert_eq!(s.first_event(1), 301);
        assert_eq!(s.last_event(), 300 + 400 + 1000 + 30_003);
        // The last event of a step closes the step's last window; the next opens the next step's.
        assert_eq!((s.deadline_ns(300), s.window(300)), (300_000_000, 300));
        assert_eq!((s.step_of(301), s.deadline_ns(301), s.window(301)), (1, 300_500_000, 301));
        assert_eq!(s.bound(2), 200_000);
        assert!(!s.measured(100) && s.measured(101));
        let sched = s.schedule(900_000_000);
        assert_eq!((sched.warmup_periods, sched.periods), (100, 900));
    }

    #[test]
    fn bad_sweeps_say_what_is_wrong() {
        assert!(Sweep::new(&[2000, 1000], 0, 1_000_000_000, None, false).unwrap_err().contains("rise"));
        assert!(Sweep::new(&[0], 0, 1_000_000_000, None, false).unwrap_err().contains("not within"));
        assert!(Sweep::new(DEFAULT_RATES, 0, 500_000_000, None, false).unwrap_err().contains("-D 1s"));
        assert_eq!(parse_rates("1000/20k/150K"), Some(vec![1000, 20_000, 150_000]));
        assert_eq!(parse_rates("1000/x"), None);
    }
}
