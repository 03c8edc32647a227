//! The kinds of published figures (`report::reference` holds the figures themselves) a probe's
//! results can be placed among. Each probe's plug-in says which of its series measure the same
//! as which kind ([`super::Plugin::published`]); the report asks the registry, by the probe's
//! name, so a stored or imported result is placed the same.

/// What a published figure measured, and which of rtgauge's series measures the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A timer wake-up of an RT thread (cyclictest, timerlat's thread, `timer`).
    Timer,
    /// An event handler waking a task: two context switches (`wakeup.chain`).
    WakeupChain,
    /// An interrupt's response in user space (a GPIO line's edge, an ADC's IRQ: `event`).
    Irq,
    /// A UDP round trip between two boards (`udp`).
    UdpRoundTrip,
    /// A driver's 10 ms loop judged by its cycle lengths (`period`; not placed by a worst case).
    PeriodLoop,
}

impl Class {
    /// The kind of figure, for headings.
    pub fn what(self) -> &'static str {
        match self {
            Class::Timer => "timer wake-up latency",
            Class::WakeupChain => "event → handler → task (two context switches)",
            Class::Irq => "interrupt response",
            Class::UdpRoundTrip => "UDP round trip",
            Class::PeriodLoop => "10 ms loop, cycle lengths",
        }
    }
}
