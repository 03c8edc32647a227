//! Stage four of the flow: the probes. A probe ([`Probe`]) is one kind of measurement: its name,
//! its periods, the value series it reports, and per CPU an instance of one or more threads
//! ([`Role`]: the timer's one thread; the wake-up chain's handler and task), each with its own
//! set-up and real-time loop ([`RtLoop`]). Every probe runs through the same path here: each
//! thread pinned, at its policy and priority, set up completely (affinity, priority, signal mask,
//! pre-faulted stack and rings, the probe's own set-up) before the loads start. Facts leave a
//! thread through one [`Handoff`] per series it reports: a wait-free single-producer ring
//! ([`rtrb`]) to the non-RT collector, and atomics for what must never be lost (extremes,
//! hand-off overflows, periods done). [`registry`] knows every probe by name.
//!
//! A probe is a plug-in: its module holds all of it — its typed options, parsed once from
//! `--measure` and bound to the run's timing ([`options`]), its help, its threads and loops, how
//! its facts are accounted ([`Accounting`]), the published figures its results are placed among
//! ([`Class`]), its section of the summary — and one [`Plugin`] value the registry lists. The
//! files here are what every probe shares: the trait and its vocabulary (`plugin.rs`), the
//! hand-over (`handoff.rs`), the spawning (`spawn.rs`), the trace trigger (`trigger.rs`).
//!
//! Adding a probe: write its module (`NAME`, its `Options` and `parse`, the [`Probe`] and its
//! [`RtLoop`], its `PLUGIN`), declare it here, and add its `PLUGIN` to `registry::PROBES`. Nothing
//! else names it (a test in the registry checks).

pub mod event;
mod handoff;
pub mod kernel;
pub mod noise;
pub mod options;
pub mod period;
mod plugin;
mod published;
pub mod registry;
pub mod seqlock;
mod spawn;
pub mod timer;
pub mod timerlat;
mod trigger;
pub mod udp;
pub mod wakeup;

pub use handoff::{Handoff, Sample, ThreadCounters, MAX_COUNTS};
pub use kernel::{KernelInstance, KernelTracer};
pub use plugin::{
    missed_after, priority_setting, series_count, series_name, Accounting, Figure, Missed, Offer, Plugin, Probe, Role, RtLoop,
    Schedule, Step, ThreadSetup, MAX_INTERVAL_NS, MAX_RUN_NS, MIN_INTERVAL_NS,
};
pub use published::Class;
pub use spawn::{
    prepare, ring_capacity, PreparedProbes, ProbePlan, RunningProbes, SeriesKey, SetupError, SetupReport, ThreadSched,
    MIN_DL_RUNTIME_NS,
};
pub use trigger::{TraceTrigger, TRACE_INSTANCES};
