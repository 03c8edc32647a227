//! Reference boards and the decision guide. The published figures of the field's sources ship
//! inside the binary as data, each with its source (test, load, and the source's short name,
//! whose full reference — title, authors, venue, year — [`SOURCES`] gives, as `docs/sources.md`
//! does), and a measured worst case is placed among those of its kind ("worst case 45 µs:
//! better than ARM11 i.MX31 at 72 µs, worse than Cortex-A9 Zynq-7020 at 54 µs"). The
//! decision guide is the ARM9/ARM11 paper's: a worst case may take at most a budget (25 %) of
//! the cycle time, so each probe's worst case supports cycle times from worst / budget.
//! Figures from other tools, loads and durations are indicative; every text here says so.
//! Pure: works on result documents.

use crate::probe::registry;
use crate::result::RunResult;
use crate::vocab::units::Nanos;

pub use crate::probe::Class;

/// One published figure.
#[derive(Debug, Clone, Copy)]
pub struct Published {
    pub platform: &'static str,
    pub kernel: &'static str,
    pub test: &'static str,
    pub load: &'static str,
    pub class: Class,
    /// The worst case in ns where the source gives one a measured worst case can be placed
    /// against (the upper end of a range); `None` for a percentile criterion or a loop's periods.
    pub worst_ns: Option<u64>,
    /// The source gives only a lower bound ("> 800 µs").
    pub at_least: bool,
    /// The figures as published.
    pub worst: &'static str,
    pub typical: &'static str,
    /// The source's short name: one of [`SOURCES`], which gives its full reference.
    pub source: &'static str,
}

impl Published {
    /// The full reference of the figure's source.
    pub fn reference(&self) -> &'static Source {
        source(self.source).unwrap_or(&SOURCES[0])
    }
}

/// A document the published figures come from: the short name rtgauge cites it by, what it
/// is in a line, and its full reference. A field the document does not state is `None` (never
/// guessed); `note` says what a reader needs besides (where it was digested, how to find it).
#[derive(Debug, Clone, Copy)]
pub struct Source {
    pub short: &'static str,
    /// What the source is, in one line (`--help`, the report's reference list).
    pub what: &'static str,
    pub title: &'static str,
    pub authors: Option<&'static str>,
    pub venue: &'static str,
    pub year: Option<u16>,
    pub url: Option<&'static str>,
    pub note: Option<&'static str>,
}

impl Source {
    /// The reference as one line: authors, "title", venue, year, address.
    pub fn citation(&self) -> String {
        match self.url {
            Some(u) => format!("{}, {u}", self.citation_without_url()),
            None => self.citation_without_url(),
        }
    }

    /// The reference without its address: authors, "title", venue, year.
    pub fn citation_without_url(&self) -> String {
        let mut s = String::new();
        if let Some(a) = self.authors {
            s += a;
            s += ", ";
        }
        s += &format!("\u{201c}{}\u{201d}, {}", self.title, self.venue);
        match self.year {
            Some(y) => s += &format!(", {y}"),
            None => s += ", year not stated",
        }
        s
    }

    /// An identifier for the source (an HTML anchor): its short name in lower case, other
    /// characters as `-`.
    pub fn anchor(&self) -> String {
        let a: String =
            self.short.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
        format!("source-{a}")
    }
}

const ARM: &str = "ARM9/ARM11 paper";
const A8: &str = "Cortex-A8 study";
const A53: &str = "Cortex-A53 slides";
const AM3356: &str = "AM3356 loop";
const OCERA_PAPER: &str = "Freescale/OCERA paper";
const RTLA: &str = "kernel rtla docs";
const RT_TESTS: &str = "rt-tests README";

/// Every source rtgauge names (its published figures', its scenarios' and its audit's), by the
/// short name it is cited by. `docs/sources.md` gives the same list.
pub const SOURCES: &[Source] = &[
    Source {
        short: ARM,
        what: "a paper measuring PREEMPT_RT on ARM9, ARM11 and Cortex boards (IRQ, UIO wake-up, cyclictest), with the 25 % decision guide",
        title: "PREEMPT_RT on ARM9, ARM11 and Cortex: measurement set-ups, results and a decision guide",
        authors: None,
        venue: "paper (Linux 2.6 PREEMPT_RT era)",
        year: None,
        url: None,
        note: Some("the copy this list was made from starts at its abstract: its title line is a description, and its authors, venue and year are not recorded"),
    },
    Source {
        short: A8,
        what: "a white paper timing a Cortex-A8 (i.MX515) with a PREEMPT_RT and a preemptible 2.6.31 kernel",
        title: "Real-Time Embedded Linux Study on ARM Cortex-A8",
        authors: Some("Hedera Innovations"),
        venue: "white paper",
        year: None,
        url: None,
        note: Some("the kernel it measured, 2.6.31.12, dates it to 2010 or later"),
    },
    Source {
        short: AM3356,
        what: "a blog post timing a 10 ms kernel-driver loop on an AM3356 (Cortex-A8) card, with and without PREEMPT_RT",
        title: "Real-time Linux Kernel drivers \u{2013} revisited for new CPU-card",
        authors: Some("Simon Falsig"),
        venue: "blog post",
        year: Some(2015),
        url: Some("https://www.falsig.org/simon/blog/2015/06/25/real-time-linux-kernel-drivers-revisited-for-new-cpu-card/"),
        note: None,
    },
    Source {
        short: A53,
        what: "conference slides benchmarking PREEMPT_RT 4.18 on a Cortex-A53 (Zynq MPSoC) and a Cortex-A9: cyclictest, UDP ping-pong, ADC IRQ",
        title: "Preempt-RT Latency Benchmarking of the Cortex-A53 Processor",
        authors: Some("Paul Thomas (AMSC)"),
        venue: "Embedded Linux Conference Europe and OpenIoT Summit Europe",
        year: None,
        url: None,
        note: Some("the slides measure Linux 4.18-rt; their year is not printed on them"),
    },
    Source {
        short: OCERA_PAPER,
        what: "a Freescale white paper on Linux as an RTOS, reproducing the OCERA project's latency measurements made with the FirmTimers suite",
        title: "Linux as a Real-Time Operating System",
        authors: Some("David Beal (Freescale Semiconductor)"),
        venue: "Freescale white paper SWVERIFICATIONWP, rev. 0",
        year: Some(2005),
        url: None,
        note: None,
    },
    Source {
        short: "OCERA",
        what: "the EU project Open Components for Embedded Real-Time Applications, whose latency-under-load timeline the Freescale/OCERA paper reproduces",
        title: "WP1 \u{2013} RTOS State of the Art Analysis",
        authors: Some("Ismael Ripoll, Pavel Pisa, Luca Abeni, Paolo Gai, Agnes Lanusse, Sergio Saez, Bruno Privat"),
        venue: "OCERA project deliverable",
        year: None,
        url: None,
        note: Some("cited as the Freescale/OCERA paper's source of its measurements"),
    },
    Source {
        short: "FirmTimers",
        what: "the Oregon Graduate Institute's kernel latency test suite (measure_latency, generate_load) the OCERA measurements used",
        title: "The Firm Timers Home Page",
        authors: Some("Systems Software Lab, Oregon Graduate Institute"),
        venue: "web page",
        year: None,
        url: Some("http://www.cse.ogi.edu/~luca/firm.html"),
        note: Some("its README is Appendix A of the Freescale/OCERA paper"),
    },
    Source {
        short: RTLA,
        what: "the Linux kernel's documentation of rtla timerlat, whose example output gives the x86 PREEMPT_RT figures",
        title: "rtla-timerlat-top: measures the operating system timer latency",
        authors: Some("Daniel Bristot de Oliveira"),
        venue: "Linux kernel documentation, Documentation/tools/rtla/rtla-timerlat-top.rst",
        year: None,
        url: Some("https://docs.kernel.org/tools/rtla/rtla-timerlat-top.html"),
        note: Some("in the kernel's documentation since rtla was merged (Linux 5.17, 2022)"),
    },
    Source {
        short: RT_TESTS,
        what: "the README of rt-tests, the suite cyclictest ships in, whose example gives the non-RT x86 figure",
        title: "rt-tests README",
        authors: None,
        venue: "rt-tests source repository",
        year: None,
        url: Some("https://git.kernel.org/pub/scm/utils/rt-tests/rt-tests.git"),
        note: None,
    },
];

/// The source of this short name.
pub fn source(short: &str) -> Option<&'static Source> {
    SOURCES.iter().find(|s| s.short == short)
}
const HACKBENCH_PING: &str = "hackbench + ping flood";
const A53_LOAD: &str = "stress --cpu 8 --vm 8 --vm-bytes 20MB, cpuset shield";

/// One row of the table, in the table's column order (a constructor of data, read as a row):
/// what was measured (platform, kernel, test, load), its kind, its figures (the worst case in
/// µs when one was stated, the worst and the typical as published), its source.
const fn row(
    what: [&'static str; 4],
    class: Class,
    figures: (Option<u64>, &'static str, &'static str),
    source: &'static str,
) -> Published {
    let [platform, kernel, test, load] = what;
    let (worst_us, worst, typical) = figures;
    let worst_ns = match worst_us {
        Some(us) => Some(us * 1_000),
        None => None,
    };
    Published { platform, kernel, test, load, class, worst_ns, at_least: false, worst, typical, source }
}

/// Every published figure of the field's sources (FIELD.md's table), best first within a kind.
pub const PUBLISHED: &[Published] = &[
    row(
        ["Cortex-A53 Zynq MPSoC @1.3 GHz", "4.18-rt", "cyclictest", A53_LOAD],
        Class::Timer,
        (Some(17), "17 µs", "mode 7 µs"),
        A53,
    ),
    Published {
        test: "timerlat, thread latency",
        ..row(["x86, 24 CPUs", "PREEMPT_RT", "", "kernel compile"], Class::Timer, (Some(41), "20–41 µs", "–"), RTLA)
    },
    row(
        ["Cortex-A9 Zynq-7020 @666 MHz", "4.18-rt", "cyclictest", A53_LOAD],
        Class::Timer,
        (Some(54), "54 µs", "mode 19 µs"),
        A53,
    ),
    row(
        ["Cortex-A8 i.MX515 @800 MHz", "2.6.31 RT", "timer IRQ → RT task, 1 day", "stress"],
        Class::Timer,
        (Some(58), "58 µs", "12–60 µs"),
        A8,
    ),
    row(
        ["ARM11 i.MX31 @532 MHz", "2.6 PREEMPT_RT", "cyclictest", HACKBENCH_PING],
        Class::Timer,
        (Some(72), "72 µs", "avg 35 µs"),
        ARM,
    ),
    row(
        ["x86 (2003–2005 era)", "2.4 low-latency / preemptible", "sleep latency, > 99.5 % of tasks", "OCERA load sequence"],
        Class::Timer,
        (None, "< 250 µs for > 99.5 %", "~100 µs real world"),
        OCERA_PAPER,
    ),
    row(
        ["ARM9 AT91SAM9263 @180 MHz", "2.6 PREEMPT_RT", "cyclictest 1 ms, FIFO 80", HACKBENCH_PING],
        Class::Timer,
        (Some(312), "312 µs", "avg 85 µs"),
        ARM,
    ),
    row(
        ["Cortex-A8 i.MX515 @800 MHz", "2.6.31 preemptible", "timer IRQ → RT task, 1 day", "stress"],
        Class::Timer,
        (Some(2465), "2465 µs", "–"),
        A8,
    ),
    row(["x86", "non-RT", "cyclictest, short run", "not stated"], Class::Timer, (Some(39_242), "39 242 µs", "–"), RT_TESTS),
    row(
        ["ARM11 i.MX31 @532 MHz", "2.6 PREEMPT_RT", "UIO wake-up + 2 context switches", HACKBENCH_PING],
        Class::WakeupChain,
        (Some(110), "110 µs", "–"),
        ARM,
    ),
    row(
        ["ARM9 AT91SAM9263 @180 MHz", "2.6 PREEMPT_RT", "UIO wake-up + 2 context switches", HACKBENCH_PING],
        Class::WakeupChain,
        (Some(374), "374 µs", "–"),
        ARM,
    ),
    Published {
        test: "timerlat, IRQ latency",
        ..row(["x86, 24 CPUs", "PREEMPT_RT", "", "kernel compile"], Class::Irq, (Some(28), "11–28 µs", "–"), RTLA)
    },
    row(
        ["Cortex-A53 Zynq MPSoC @1.3 GHz", "4.18-rt", "IIO ADC DMA IRQ (capture timer)", A53_LOAD],
        Class::Irq,
        (Some(30), "30 µs", "mode 9 µs"),
        A53,
    ),
    row(
        ["ARM11 i.MX31 @532 MHz", "2.6 PREEMPT_RT", "GPIO IRQ → UIO handler (scope)", HACKBENCH_PING],
        Class::Irq,
        (Some(68), "65–68 µs", "–"),
        ARM,
    ),
    row(
        ["ARM9 AT91SAM9263 @180 MHz", "2.6 PREEMPT_RT", "GPIO IRQ → UIO handler (scope)", HACKBENCH_PING],
        Class::Irq,
        (Some(248), "248 µs", "–"),
        ARM,
    ),
    row(
        ["Cortex-A53 Zynq MPSoC @1.3 GHz", "4.18-rt", "UDP ping-pong round trip", A53_LOAD],
        Class::UdpRoundTrip,
        (Some(168), "168 µs", "mode 101 µs"),
        A53,
    ),
    Published {
        at_least: true,
        ..row(
            ["Cortex-A9 Zynq-7020 @666 MHz", "4.18-rt", "UDP ping-pong round trip", A53_LOAD],
            Class::UdpRoundTrip,
            (Some(800), "> 800 µs", "mode 182 µs"),
            A53,
        )
    },
    row(
        ["Cortex-A8 AM3356 @800 MHz", "3.18-rt", "10 ms driver loop", "stress + ping flood"],
        Class::PeriodLoop,
        (None, "periods 9.99–10.01 ms", "0 cycles outside 8–12 ms"),
        AM3356,
    ),
    row(
        ["Cortex-A8 AM3356 @800 MHz", "3.18, non-RT policy", "10 ms driver loop", "stress"],
        Class::PeriodLoop,
        (None, "periods 0.02–33.45 ms", "4344 of 11011 outside 8–12 ms"),
        AM3356,
    ),
];

/// The caveat every placement carries.
pub const INDICATIVE: &str = "published figures come from other boards, tools, loads and durations: indicative only";

/// Where one measured worst case lies among the published figures of its kind.
#[derive(Debug, Clone)]
pub struct Placement {
    /// The series placed (`timer`, `wakeup.chain`) and its worst case over every CPU.
    pub label: String,
    pub class: Class,
    pub worst_ns: u64,
    /// The best published figure it beats, and the worst one that beats it.
    pub better_than: Option<&'static Published>,
    pub worse_than: Option<&'static Published>,
    /// The decision guide: the shortest cycle time whose budget the worst case fits.
    pub shortest_cycle_ns: u64,
}

impl Placement {
    /// One line: "timer: worst case 45 µs: better than … [its source], worse than … [its
    /// source]; cycle times from 180 µs".
    pub fn sentence(&self, budget_percent: f64) -> String {
        let name = |p: &Published| format!("{} ({}) at {} [{}]", p.platform, p.kernel, p.worst, p.source);
        let mut parts = Vec::new();
        if let Some(p) = self.better_than {
            parts.push(format!("better than {}", name(p)));
        }
        if let Some(p) = self.worse_than {
            parts.push(format!("worse than {}", name(p)));
        }
        format!(
            "{}: worst case {}{}{}; cycle times from {} ({}% rule)",
            super::shown(&self.label),
            Nanos(self.worst_ns),
            if parts.is_empty() { "" } else { ": " },
            parts.join(", "),
            Nanos(self.shortest_cycle_ns),
            budget_percent
        )
    }
}

/// The figures a placement compares with.
fn comparable(class: Class) -> impl Iterator<Item = (&'static Published, u64)> {
    PUBLISHED.iter().filter(move |p| p.class == class).filter_map(|p| p.worst_ns.map(|w| (p, w)))
}

/// Places a worst case of `class`: the best figure it beats (or equals) and the worst one that
/// beats it. A lower bound ("> 800 µs") is beaten by anything below it and never beats.
pub fn place(label: &str, class: Class, worst_ns: u64, budget_percent: f64) -> Placement {
    let better_than = comparable(class).filter(|&(_, w)| worst_ns <= w).min_by_key(|&(_, w)| w).map(|(p, _)| p);
    let worse_than = comparable(class).filter(|&(p, w)| worst_ns > w && !p.at_least).max_by_key(|&(_, w)| w).map(|(p, _)| p);
    let shortest_cycle_ns = (worst_ns as f64 * 100.0 / budget_percent).ceil() as u64;
    Placement { label: label.to_string(), class, worst_ns, better_than, worse_than, shortest_cycle_ns }
}

/// The placements of a run: one per series with published figures of its kind, from its worst
/// case over every CPU, in the order the run reports its series.
pub fn placements(r: &RunResult) -> Vec<Placement> {
    let mut out: Vec<Placement> = Vec::new();
    for p in r.probes.iter().chain(&r.combined) {
        let (Some(class), Some(max)) = (registry::published(&p.probe, p.series.as_deref()), p.max_ns) else { continue };
        let label = p.label();
        match out.iter_mut().find(|q| q.label == label) {
            Some(q) if q.worst_ns >= max => {}
            Some(q) => *q = place(&label, class, max, r.verdict.budget_percent),
            None => out.push(place(&label, class, max, r.verdict.budget_percent)),
        }
    }
    out
}

/// The sources a run's placements name: the decision guide's (the ARM9/ARM11 paper) first,
/// then each neighbour's, once each.
pub fn sources_named(lines: &[Placement]) -> Vec<&'static Source> {
    let mut out: Vec<&'static Source> = source(ARM).into_iter().collect();
    for p in lines.iter().flat_map(|l| [l.better_than, l.worse_than]).flatten() {
        let s = p.reference();
        if !out.iter().any(|o| o.short == s.short) {
            out.push(s);
        }
    }
    out
}

/// The summary's section: a line per placed series, the caveat, and the full reference of
/// every source it names.
pub fn render(r: &RunResult) -> String {
    let lines = placements(r);
    if lines.is_empty() {
        return String::new();
    }
    let mut s = String::from("\nAmong published figures (the ARM9/ARM11 paper's decision guide):\n");
    for p in &lines {
        s += &format!("  {}\n", p.sentence(r.verdict.budget_percent));
    }
    s += &format!("  ({INDICATIVE}; rtgauge report lists them with their sources)\n");
    s += "  Sources:\n";
    for src in sources_named(&lines) {
        s += &format!("    {}: {}\n", src.short, src.citation());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worst_case_lies_between_its_neighbours() {
        let p = place("timer", Class::Timer, 45_000, 25.0);
        assert_eq!(p.better_than.unwrap().worst_ns, Some(54_000));
        assert_eq!(p.worse_than.unwrap().worst_ns, Some(41_000));
        assert_eq!(p.shortest_cycle_ns, 180_000);
        let s = p.sentence(25.0);
        assert!(s.contains("better than Cortex-A9 Zynq-7020") && s.contains("worse than x86, 24 CPUs"), "{s}");
    }

    #[test]
    fn the_best_and_the_worst_have_one_neighbour() {
        let best = place("timer", Class::Timer, 5_000, 25.0);
        assert!(best.worse_than.is_none() && best.better_than.unwrap().worst_ns == Some(17_000));
        let worst = place("timer", Class::Timer, 100_000_000, 25.0);
        assert!(worst.better_than.is_none() && worst.worse_than.unwrap().worst_ns == Some(39_242_000));
    }

    #[test]
    fn a_lower_bound_is_beaten_below_it_and_never_beats() {
        let p = place("udp", Class::UdpRoundTrip, 900_000, 25.0);
        assert_eq!(p.worse_than.unwrap().worst_ns, Some(168_000), "not 'worse than > 800 µs'");
        assert!(p.better_than.is_none());
        assert_eq!(place("udp", Class::UdpRoundTrip, 500_000, 25.0).better_than.unwrap().worst, "> 800 µs");
    }

    #[test]
    fn every_row_keeps_its_source_and_its_figures() {
        assert_eq!(PUBLISHED.len(), 19, "FIELD.md's published figures, the rtla row split in two");
        for p in PUBLISHED {
            assert!(!p.source.is_empty() && !p.worst.is_empty() && !p.test.is_empty() && !p.load.is_empty(), "{p:?}");
            assert!(source(p.source).is_some(), "{} has a full reference", p.source);
        }
    }

    #[test]
    fn every_source_has_a_full_reference() {
        for s in SOURCES {
            let c = s.citation();
            assert!(c.contains(s.title) && c.contains(s.venue) && !s.what.is_empty(), "{c}");
            assert!(s.year.is_some() || c.contains("year not stated"), "{c}");
        }
        let docs = include_str!("../../../../docs/sources.md");
        for s in SOURCES {
            assert!(
                docs.contains(&format!("## {}\n\n{}", s.short, s.citation_without_url())),
                "docs/sources.md cites {}",
                s.short
            );
        }
        let anchors: std::collections::BTreeSet<String> = SOURCES.iter().map(Source::anchor).collect();
        assert_eq!(anchors.len(), SOURCES.len(), "one anchor per source");
    }

    #[test]
    fn a_placement_names_the_source_of_each_neighbour() {
        let p = place("timer", Class::Timer, 45_000, 25.0);
        let s = p.sentence(25.0);
        assert!(s.contains("[Cortex-A53 slides]") && s.contains("[kernel rtla docs]"), "{s}");
        let named: Vec<&str> = sources_named(&[p]).iter().map(|s| s.short).collect();
        assert_eq!(named, ["ARM9/ARM11 paper", "Cortex-A53 slides", "kernel rtla docs"]);
    }
}
