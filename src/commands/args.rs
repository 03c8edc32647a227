//! The command line as the user types it (clap definitions only). Values stay text here;
//! `scenario` validates them into a plan without touching the system.

use crate::vocab::policy::Policy;
use clap::{Args, Parser, Subcommand, ValueEnum};

const ABOUT: &str = "Is this board, kernel and configuration real-time enough for my cycle time?";

/// The sources rtgauge names, a line each (`report::reference::SOURCES` holds their full
/// references; a test keeps the two lists the same). A macro, so that help texts can include it.
macro_rules! sources_help {
    () => {
        "\
Sources named in summaries, reports and scenarios (full references: docs/sources.md, and the end
of rtgauge report --html):
  ARM9/ARM11 paper: a paper measuring PREEMPT_RT 2.6 on ARM9, ARM11 and Cortex boards
  Cortex-A8 study: Hedera Innovations, PREEMPT_RT vs preemptible on an i.MX515, white paper
  AM3356 loop: Falsig, a 10 ms driver loop on an AM3356 card with PREEMPT_RT, blog post 2015
  Cortex-A53 slides: Thomas (AMSC), PREEMPT_RT 4.18 on Zynq Cortex-A53 and A9, ELC Europe
  Freescale/OCERA paper: Beal, 'Linux as a Real-Time Operating System', Freescale 2005
  OCERA: an EU project; its latency-under-load timeline is in the Freescale/OCERA paper
  FirmTimers: OGI's kernel latency test suite, which the OCERA measurements used
  kernel rtla docs: the Linux kernel's rtla-timerlat documentation (an x86 PREEMPT_RT example)
  rt-tests README: the README of rt-tests, cyclictest's suite (a non-RT x86 example)"
    };
}

/// The sources' lines of `--help`.
pub const SOURCES_HELP: &str = sources_help!();

/// `--version`: the package's version and which build this is (docs/builds.md).
const VERSION: &str = if cfg!(feature = "lab") {
    concat!(env!("CARGO_PKG_VERSION"), " (lab build)")
} else {
    concat!(env!("CARGO_PKG_VERSION"), " (board build: no dashboard, no PNG images)")
};

const EXAMPLES: &str = concat!(
    "\
Examples:
  rtgauge run                                  timer latency on every CPU, SCHED_FIFO 80, 1 ms, 60 s
  rtgauge run --cycle-time 1ms                 pass if every CPU's worst case is within 25 % of 1 ms
  rtgauge run -p 80 -i 1ms -D 24h --json day.json
                                               the ARM9/ARM11 paper's cyclictest set-up, for a day, as JSON
  rtgauge run --cpus 2-3 --require 'p99.9<=50us' --require missed==0

",
    sources_help!(),
    "

Exit status: 0 passed (or no criteria), 1 a criterion failed, 2 usage or runtime error."
);

const RUN_EXAMPLES: &str = concat!(
    "\
Examples:
  rtgauge run
      Timer latency on every online CPU: one thread per CPU at SCHED_FIFO 80, mlockall,
      absolute clock_nanosleep every 1 ms for 60 s after a 1 s warm-up.
  rtgauge run --priority 80 --interval 1ms --duration 10m --cpus 0-3
      The cyclictest set-up of the ARM9/ARM11 paper and the Cortex-A53 slides
      (cyclictest -m -p 80 -i 1000 -t -a -D 10m).
  rtgauge run --cycle-time 500us --budget 25%
      Pass when every CPU's worst case stays within 125 µs and no period is missed.
  rtgauge run --require 'max<100us' --require 'p99.9<=50us' --require missed==0 --json -
      CI gate: JSON on stdout, exit 1 if any requirement fails.
  rtgauge run --loops 100000 --warmup 1000 --interval 100us
      Exactly 100 000 periods after 1000 warm-up samples.
  rtgauge run --policy other
      Deliberately measure without RT priority (marked in the result).
  rtgauge run --measure timer@0 --measure wakeup:via=mq,cross@1-2 --require 'wakeup.task.p99<50us'
      Timer latency on CPU 0 and, in the same run, a handler→task wake-up chain over a POSIX
      message queue on CPUs 1-2, each task on the other CPU; judge the task's own latency.

",
    sources_help!(),
    "

Exit status: 0 passed (or no criteria), 1 a criterion failed, 2 usage or runtime error.
Ctrl-C or SIGTERM stops early and keeps everything measured (status \"partial\");
a second Ctrl-C exits at once."
);

#[derive(Debug, Parser)]
#[command(name = "rtgauge", version = VERSION, about = ABOUT, after_help = EXAMPLES, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure latency per CPU (timer wake-up by default; see --measure) and judge it against a cycle time
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// Occupy one CPU with a busy SCHED_FIFO thread for an exact time (a known stall, to prove
    /// a measurement catches it)
    #[command(after_help = "Example:\n  rtgauge run --cpus 1 -D 5s &  sleep 2; rtgauge stall --cpu 1 --duration 200ms\n      \
        cpu1's worst case must be at least ~200 ms, with ~200 missed 1 ms periods.")]
    Stall(StallArgs),
    /// Send every UDP datagram back to its sender: the other end of '--measure udp', run on the
    /// other host (at an RT priority, until Ctrl-C or --duration)
    #[command(
        name = "udp-echo",
        after_help = "Example:\n  board-b$ rtgauge udp-echo --listen 0.0.0.0:9000 --cpu 1\n  \
        board-a$ rtgauge run --measure udp:target=BOARD_B:9000,rate=1000,size=64@1\n      \
        The Cortex-A53 slides' UDP ping-pong between two boards: round trips per period, lost and late replies."
    )]
    UdpEcho(UdpEchoArgs),
    /// Audit the settings that spoil latency: each with its severity, what this system has,
    /// why it matters and the fix (exit 1 when one is bad)
    #[command(after_help = CHECK_EXAMPLES)]
    Check(CheckArgs),
    /// Put back every setting a killed run left changed ('run --tune' keeps a journal of the
    /// original values; any rtgauge command also does this when it starts)
    #[command(after_help = "Example:\n  rtgauge restore     after kill -9 of rtgauge run --tune (and its guardian), or a crash")]
    Restore,
    /// List the built-in scenarios, or print one as TOML
    Scenarios(ScenariosArgs),
    /// List the stored runs (rtgauge run keeps every run in the store)
    #[command(after_help = "Examples:\n  rtgauge list\n  rtgauge list --host board-a --since 2026-11-01 --json\n  \
        rtgauge list --label rt-kernel")]
    List(ListArgs),
    /// Show a stored run: its summary, or its whole result document (--json)
    Show(ShowArgs),
    /// Delete a stored run
    Delete(DeleteArgs),
    /// Write a stored run as JSON, CSV, JUnit XML, or in cyclictest's or rteval's formats
    #[command(
        after_help = "Examples:\n  rtgauge export last --format junit -o results.xml       one test case per requirement and CPU\n  \
        rtgauge export rt-kernel --format cyclictest-hist -o hist.txt   for OSADL's gnuplot scripts\n  \
        rtgauge export 7 --format csv"
    )]
    Export(ExportArgs),
    /// Show stored runs: the summary with text histograms, or one self-contained HTML file
    /// with plots (--html)
    #[command(after_help = concat!(
        "Examples:\n  rtgauge report last\n  rtgauge report last --html report.html      histograms, percentiles, latency against time, verdict\n  \
        rtgauge report rt-kernel stock-kernel --html both.html\n\n",
        sources_help!()
    ))]
    Report(ReportArgs),
    /// Compare stored runs side by side: percentiles with ratios, overlaid histograms, verdicts
    #[command(after_help = "Examples:\n  rtgauge compare stock-kernel rt-kernel --cycle-time 1ms\n  \
        rtgauge compare board-a board-b --html ab.html\n  \
        rtgauge compare --baseline nightly-ref last --fail-if-worse 10%    exit 1 on a regression (for CI)")]
    Compare(CompareArgs),
    /// Keep other tools' results in the store: cyclictest --json, histogram or -v output,
    /// jitterdebugger results.json, oslat --json or text output (or an rtgauge result document)
    #[command(
        after_help = "Examples:\n  cyclictest -m -p 80 -t -a -h 400 -q --json=ct.json\n  rtgauge import ct.json --label stock-kernel\n  \
        rtgauge import hist.txt jitterdebugger/results.json oslat.json\n  \
        rtgauge import h*.txt --require 'once-in-1e9<1ms' --assume-independent\n  rtgauge list; rtgauge show last"
    )]
    Import(ImportArgs),
    /// Copy stored runs into another store (a board's runs into the lab's PostgreSQL, or back),
    /// and deliver the runs waiting in the spool for it; a run already there is not copied again
    #[command(after_help = "Examples:\n  rtgauge push --to postgres://lab@db.lab/rt\n      \
        every run of this board's store, and what waits in its spool\n  \
        rtgauge push last rt-kernel --to postgres://lab@db.lab/rt\n  \
        rtgauge push --db board-7.db --to postgres://lab@db.lab/rt\n      \
        a store copied off a board that has no route to the database\n  \
        rtgauge push --db postgres://lab@db.lab/rt --board board-7 --to b7.db\n      \
        and back")]
    Push(PushArgs),
    /// Serve a read-only dashboard of the store: every board, its runs against time, each run's
    /// report, comparisons, and the same as JSON (until Ctrl-C)
    #[command(after_help = "Examples:\n  rtgauge run; rtgauge serve\n      \
        this board's runs at http://127.0.0.1:8080/\n  \
        rtgauge serve --db postgres://dash@db.lab/rt --listen 0.0.0.0:8080\n      \
        the lab's store for everyone who reaches the host (no authentication: read-only)\n\n\
        Pages: / (boards), /board/NAME, /run/ID, /compare?runs=A,B. JSON: /api/boards,\n\
        /api/runs, /api/runs/ID, /api/boards/NAME/series?probe=timer (docs/dashboard.md).")]
    #[cfg(feature = "lab")]
    Serve(ServeArgs),
    /// (the board build has no dashboard: asking for it says which build has it)
    #[cfg(not(feature = "lab"))]
    #[command(hide = true, disable_help_flag = true)]
    Serve {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        rest: Vec<std::ffi::OsString>,
    },
    /// Run load generators on their own, like stress or hackbench
    #[command(after_help = LOAD_EXAMPLES)]
    Load(LoadArgs),
    /// (internal) a built-in load's worker process
    #[command(name = "__worker", hide = true)]
    Worker,
    /// (internal) the process that cleans up loads if rtgauge is killed
    #[command(name = "__guardian", hide = true)]
    Guardian,
}

const CHECK_EXAMPLES: &str = "\
Examples:
  rtgauge check                      every setting, for a measurement of every CPU
  rtgauge check --cpus 2-3 -p 90     for an RT task on CPUs 2-3 at SCHED_FIFO 90 (isolation, IRQs,
                                     SMT siblings and governors of those CPUs; IRQ threads above 90)
  rtgauge check --json | jq '.findings[] | select(.severity == \"bad\")'

Severities: ok, info (worth knowing), warn (likely to add latency), bad (spoils real-time behaviour).
Exit status: 0 nothing bad, 1 something bad, 2 error. Every run keeps the same audit in its result.";

const LOAD_EXAMPLES: &str = "\
Generators and their options (a count of 0 or none given means one worker per CPU where noted):
  hackbench  groups=10 fds=20 size=100 loops=100 pipe|sockets threads|processes
  cpu        workers=<CPUs>                       integer + floating point, no system calls
  vm         workers=<CPUs> bytes=32M             map, touch every page, unmap (page faults)
  io         workers=1 size=16M block=64K         write, fsync, drop cache, read back (temp dir)
  fork       workers=1                            process creation storm
  proc       workers=1                            reads of /proc files
  net        workers=1 size=64 target=ADDR:PORT   UDP flood (default: to a loopback receiver)
  timers     count=64 period=100us                many short timers (interrupt load)
  cmd:ARGV   an external command, restarted if it exits early (cmd-once: not restarted)
  Every load also takes nice=N, policy=other|batch|idle|fifo:N|rr:N (default other), and a phase
  on the run's timeline: @30s..90s, @10s.., @..20s.

Examples:
  rtgauge load hackbench                       one hackbench round; prints its time like hackbench
  rtgauge load hackbench:groups=10,pipe,threads
  rtgauge load cpu,vm:workers=8,bytes=20M --duration 60s      like stress --cpu N --vm 8 --vm-bytes 20M
  rtgauge load 'cmd:stress-ng --cpu 2' --duration 30s
  rtgauge run --load hackbench,net            measure under hackbench and a UDP flood
  rtgauge run --load vm@10s..20s --load io@30s..40s -D 50s     a timeline of loads";

#[derive(Debug, Args)]
pub struct ScenariosArgs {
    /// A built-in scenario to print as TOML
    pub name: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The CPUs the RT task runs on (SMT siblings, interrupts, governors, idle states, isolation
    /// are checked for them) [default: every online CPU]
    #[arg(short, long, value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,
    /// The RT task's priority: threaded IRQ handlers at or above it are reported [default: 80]
    #[arg(short, long, allow_negative_numbers = true, value_name = "N")]
    pub priority: Option<i32>,
    /// Print the audit as JSON (the findings under "findings")
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Loads, as for rtgauge run --load
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<String>,
    /// How long to run [default: hackbench runs one round; other loads need a duration]
    #[arg(short = 'D', long, allow_hyphen_values = true, value_name = "TIME")]
    pub duration: Option<String>,
    /// CPUs the loads run on
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,
    /// Write what each load did as JSON to FILE ('-' for standard output)
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub json: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PolicyArg {
    /// SCHED_FIFO (default): what RT applications use
    Fifo,
    /// SCHED_RR
    Rr,
    /// SCHED_DEADLINE: a runtime (--dl-runtime) every period (the probe's interval)
    Deadline,
    /// SCHED_OTHER: no RT priority, on purpose (marked in the result)
    Other,
}

impl From<PolicyArg> for Policy {
    fn from(p: PolicyArg) -> Policy {
        match p {
            PolicyArg::Fifo => Policy::Fifo,
            PolicyArg::Rr => Policy::Rr,
            PolicyArg::Deadline => Policy::Deadline,
            PolicyArg::Other => Policy::Other,
        }
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Run a scenario: a built-in one by name (see rtgauge scenarios), or a TOML file written
    /// as a path (./x, /abs/x, x.toml; a bare name is never a file); flags given here override
    /// its values, --require adds to its requirements
    #[arg(short, long, value_name = "FILE|NAME", allow_hyphen_values = true)]
    pub scenario: Option<String>,
    // What to measure, repeatable: a probe with options and CPUs. The help is the registry's, each
    // probe's own line from its module.
    #[arg(long = "measure", value_name = "PROBE", allow_hyphen_values = true, help = crate::probe::registry::measure_help())]
    pub measure: Vec<String>,
    /// Period of the timer (and of --loops and a warm-up in samples): 100us, 0.5ms, 1ms, ...
    /// [default: 1ms, or the first --measure probe's own interval]
    #[arg(short, long, allow_hyphen_values = true, value_name = "TIME")]
    pub interval: Option<String>,
    /// How long to measure after the warm-up: 10s, 5m, 24h, or 'forever' (until Ctrl-C or
    /// SIGTERM, at most 366 days; rotated every hour unless --rotate says otherwise) [default: 60s]
    #[arg(short = 'D', long, allow_hyphen_values = true, value_name = "TIME", conflicts_with = "loops")]
    pub duration: Option<String>,
    /// Measure exactly N periods instead of a duration (each a sample or a missed deadline)
    #[arg(short, long, value_name = "N", allow_hyphen_values = true)]
    pub loops: Option<String>,
    /// Excluded start: a time (1s) or a number of samples (1000); recorded in the result [default: 1s]
    #[arg(long, allow_hyphen_values = true, value_name = "TIME|N")]
    pub warmup: Option<String>,
    /// RT priority of the measurement threads, 1-99 [default: 80]
    #[arg(short, long, allow_negative_numbers = true, value_name = "N")]
    pub priority: Option<i32>,
    /// Scheduling policy of the measurement threads [default: fifo]
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    /// With --policy deadline: each measurement thread's runtime per period (its probe's interval,
    /// also its deadline), e.g. 100us [default: a tenth of the interval]
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub dl_runtime: Option<String>,
    /// With --policy deadline: each measurement thread's relative deadline, at least its runtime
    /// and at most its period [default: the period, the probe's interval]
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub dl_deadline: Option<String>,
    /// CPUs to measure, e.g. 0,2-3 [default: every online CPU this process may use; with
    /// --rotate, -D forever or --metrics all but the first, left to rtgauge's own work]
    #[arg(short, long, allow_hyphen_values = true, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Do not lock memory with mlockall (page faults then add latency)
    #[arg(long)]
    pub no_mlock: bool,
    /// Cycle time of your control loop: passes when every CPU's worst case fits the budget. A
    /// period missed at a probe's interval shorter than TIME is a latency (at least that
    /// interval) judged against the budget; only at an interval of TIME or longer is it a missed
    /// cycle, and then none may be missed
    #[arg(long, allow_hyphen_values = true, value_name = "TIME")]
    pub cycle_time: Option<String>,
    /// Share of the cycle time the worst case may use [default: 25%]
    #[arg(long, allow_hyphen_values = true, value_name = "PERCENT")]
    pub budget: Option<String>,
    /// Requirement every CPU must meet, repeatable: 'max<100us', 'p99.9<=50us', 'missed==0', 'mean<10us'
    #[arg(long = "require", value_name = "EXPR", allow_hyphen_values = true)]
    pub require: Vec<String>,
    /// Write the result document as JSON to FILE ('-' for standard output)
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub json: Option<String>,
    /// No live view; print only the summary and the line naming the stored run (its id)
    #[arg(short, long)]
    pub quiet: bool,
    /// The timeline's window: per window, each probe and CPU keeps its count, missed, maximum
    /// and p99 (latency against time without keeping samples) [default: 1s; for runs under
    /// 50 s the longest of 1, 2, 5, 10, ... 500 ms giving 50 windows (enough for a forecast's
    /// tests), not under the interval, 1s with --metrics, --rotate or -D forever; wider for runs
    /// over a day, at most 100000 windows]
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub window: Option<String>,
    /// Close the figures every TIME as a stored run of its own (its verdict, forecast and
    /// timeline), the measurement going on without a gap; the runs are linked as one series
    /// [default with -D forever: 1h]
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub rotate: Option<String>,
    /// Serve live metrics for Prometheus at ADDR while measuring (http://ADDR/metrics; text
    /// format, or OpenMetrics when asked for), e.g. 127.0.0.1:9464
    #[arg(long, value_name = "ADDR", allow_hyphen_values = true)]
    pub metrics: Option<String>,
    /// Let --metrics serve an address other than loopback (every machine that reaches it)
    #[arg(long)]
    pub metrics_public: bool,
    /// Write the same metrics to FILE once per window (a temporary file renamed over it), for
    /// node_exporter's textfile collector
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub metrics_file: Option<String>,
    /// The latency histogram's bucket bounds in the metrics: FROM..TO (1, 2, 5 per decade) or
    /// a list, e.g. 10us,50us,100us,1ms [default: 1us..1s]
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    pub metrics_buckets: Option<String>,
    /// Load to measure under, repeatable or comma-separated: hackbench, cpu, vm, io, fork, proc,
    /// net, timers, 'cmd:ARGV' (restarted when it ends) or 'cmd-once:ARGV', with options
    /// (vm:workers=8,bytes=20M) and a phase (@30s..90s);
    /// 'none' for an idle system [default: the worst-case mix]
    #[arg(long = "load", value_name = "SPEC", allow_hyphen_values = true)]
    pub load: Vec<String>,
    /// CPUs the loads run on, e.g. 1-3 [default: all]
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub load_cpus: Option<String>,
    /// Hold this PM QoS CPU latency request (/dev/cpu_dma_latency, µs) during the run, as
    /// cyclictest does; 'off' measures with the idle states as configured [default: 0]
    #[arg(long, value_name = "US|off", allow_hyphen_values = true)]
    pub cpu_dma_latency: Option<String>,
    /// Tune the system for the run only, and put everything back after it (also after Ctrl-C,
    /// an error or a SIGKILL): 'all' (the default when given without a list) or some of
    /// dma-latency, rt-throttling (sched_rt_runtime_us -1), shield (a cpuset for the measured
    /// CPUs alone), irq-affinity (interrupts off the measured CPUs), governor (performance)
    #[arg(long, value_name = "LIST", num_args = 0..=1, require_equals = true, default_missing_value = "all")]
    pub tune: Option<String>,
    /// Explain the worst case: trace each measured CPU's scheduling and interrupt events and,
    /// when a value exceeds THRESHOLD and is a new worst case (no THRESHOLD: every new worst
    /// case after the warm-up), keep and explain the trace around it — which IRQ, softirq or
    /// thread held the CPU, for how long, its share of the latency (needs root and tracefs)
    #[arg(long, value_name = "THRESHOLD", num_args = 0..=1, default_missing_value = "worst")]
    pub trace: Option<String>,
    /// Name the run in the store (rtgauge show LABEL)
    #[arg(long, value_name = "TEXT", conflicts_with = "no_store")]
    pub label: Option<String>,
    /// The board's name, recorded in the result and the store (rtgauge list --board NAME)
    /// [default: the host name]
    #[arg(long, value_name = "NAME")]
    pub board: Option<String>,
    #[command(flatten)]
    pub store: StoreArg,
    /// Do not keep the run in the store
    #[arg(long)]
    pub no_store: bool,
}

/// Plots as images, for slides (the lab build; the board build takes the options only to say
/// which build has them).
#[derive(Debug, Args)]
pub struct PngArgs {
    /// Write every plot as a PNG image into this directory (made if missing)
    #[arg(long, value_name = "DIR", hide = cfg!(not(feature = "lab")))]
    pub png: Option<std::path::PathBuf>,
    /// The font of the images' text (a .ttf or .otf file) [default: a sans-serif font of the
    /// system's]
    #[arg(long, value_name = "FILE", requires = "png", hide = cfg!(not(feature = "lab")))]
    pub font: Option<std::path::PathBuf>,
}

/// Where the store is.
#[derive(Debug, Args)]
pub struct StoreArg {
    /// The store: a SQLite file, or a PostgreSQL database (postgres://USER@HOST[:PORT]/DB, or
    /// postgres://?service=NAME). Keep its password off the command line (ps shows it to every
    /// user): PGPASSWORD, ~/.pgpass (PGPASSFILE), a service file (PGSERVICE) or a client
    /// certificate (sslcert=, sslkey=) [default: $RTGAUGE_DB, else
    /// $XDG_DATA_HOME/rtgauge/runs.db, else ~/.local/share/rtgauge/runs.db]
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Only runs on this host
    #[arg(long)]
    pub host: Option<String>,
    /// Only runs with this label
    #[arg(long)]
    pub label: Option<String>,
    /// Only runs on this board (rtgauge run --board NAME; the host name by default)
    #[arg(long)]
    pub board: Option<String>,
    /// Only runs on this kernel release (uname -r, as 'list' shows it)
    #[arg(long, value_name = "RELEASE")]
    pub kernel: Option<String>,
    /// Only runs of this scenario
    #[arg(long, value_name = "NAME")]
    pub scenario: Option<String>,
    /// Only runs with this verdict: pass, fail, or none (passed without criteria)
    #[arg(long, value_name = "VERDICT", value_parser = ["pass", "fail", "none"])]
    pub verdict: Option<String>,
    /// Only runs started since then: a date (2026-11-01), a time (2026-11-01T08:00:00Z) or an age (7d, 12h)
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only the newest N runs that match [default: 100 in the table, every one with --json]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Every run that matches (the table shows the newest 100 unless told)
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,
    /// As JSON (a list of runs)
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The run: its id, its label (the latest run so named), its UUID (or its first 8 or more
    /// hex digits) or 'last'
    pub run: String,
    #[command(flatten)]
    pub store: StoreArg,
    /// The whole result document as JSON instead of the summary
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The run: its id, its label (the latest run so named), its UUID (or its first 8 or more
    /// hex digits) or 'last'
    pub run: String,
    #[command(flatten)]
    pub store: StoreArg,
    /// json (the whole result document), csv (a row per probe and CPU), junit (a test case per
    /// check), cyclictest-json, cyclictest-hist, rteval-xml (rteval's summary.xml layout)
    #[arg(long, short = 'f', value_name = "FORMAT")]
    pub format: String,
    /// Write to FILE instead of standard output
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// The probe the cyclictest formats hold [default: the run's first]
    #[arg(long, value_name = "NAME")]
    pub probe: Option<String>,
    /// cyclictest-hist: rows of 1 µs, as cyclictest's -h (larger values are overflows), at most
    /// 1000000 [default: enough for every value, at most 1000000]
    #[arg(long, value_name = "N")]
    pub rows: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The runs: ids, labels (the latest run so named), UUIDs (or their first 8 or more hex
    /// digits) or 'last'
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub store: StoreArg,
    /// Write one self-contained HTML file (inline SVG plots, no network access needed; '-' for
    /// standard output)
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub png: PngArgs,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The runs: ids, labels (the latest run so named), UUIDs (or their first 8 or more hex
    /// digits) or 'last'; the first is the baseline
    /// unless --baseline names one
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub store: StoreArg,
    /// The run the others are compared with (ratios, --fail-if-worse)
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// Exit 1 when a run's figure (see --metrics) over all CPUs of a series is worse than the
    /// baseline's by more than this, e.g. 10%
    #[arg(long, value_name = "PERCENT")]
    pub fail_if_worse: Option<String>,
    /// The figures --fail-if-worse judges: max, p99, p99.9, mean, missed, ... [default: p99,max]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// The verdict of each run for this cycle time (worst case within --budget of it; a period
    /// missed at an interval shorter than it counts as a latency, at it or longer as a missed cycle)
    #[arg(long, value_name = "TIME")]
    pub cycle_time: Option<String>,
    /// Share of the cycle time the worst case may take [default: 25%]
    #[arg(long, value_name = "PERCENT")]
    pub budget: Option<String>,
    /// Write the comparison as one self-contained HTML file ('-' for standard output)
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub png: PngArgs,
    /// Print the comparison as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Result files of cyclictest (--json, histogram or -v output), jitterdebugger (results.json),
    /// oslat (--json or text output) or rtgauge (the format is read from the content)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
    /// Name the imported runs
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// The board the imported runs were measured on [default: the one an rtgauge document
    /// names, else the host the file records, else this host's name]
    #[arg(long, value_name = "NAME")]
    pub board: Option<String>,
    /// Requirement every CPU of every imported run must meet, repeatable, as for run:
    /// 'max<100us', 'p99.99<=50us', 'once-per-1d<200us'; exit 1 if one fails (the runs are
    /// stored either way)
    #[arg(long = "require", value_name = "EXPR", allow_hyphen_values = true)]
    pub require: Vec<String>,
    /// Let a requirement rely on a forecast whose data cannot test the values' independence
    /// and stationarity (a histogram without a timeline: every file of another tool); without
    /// it such a requirement is not judged and fails
    #[arg(long)]
    pub assume_independent: bool,
}

#[cfg(feature = "lab")]
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Where to listen: an address and port (another address than loopback serves everyone who
    /// reaches it, without authentication)
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    pub listen: String,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// The runs to copy: ids, labels (the latest run so named), UUIDs (or their first 8 or more
    /// hex digits) or 'last' [default: every run of the store that passes the filters]
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    /// Where to copy them: a PostgreSQL database (postgres://USER@HOST[:PORT]/DB) or a SQLite
    /// file (made if there is none)
    #[arg(long, value_name = "URL|PATH", required = true)]
    pub to: std::path::PathBuf,
    /// The store the runs are copied from
    #[command(flatten)]
    pub store: StoreArg,
    /// Only runs on this board
    #[arg(long, value_name = "NAME")]
    pub board: Option<String>,
    /// Only runs started since then: a date (2026-11-01), a time (2026-11-01T08:00:00Z) or an age (7d, 12h)
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The run: its id, its label (the latest run so named), its UUID (or its first 8 or more
    /// hex digits) or 'last'
    pub run: String,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Debug, Args)]
pub struct UdpEchoArgs {
    /// Address and port to listen on (0.0.0.0:9000, [::]:9000, 10.0.0.2:9000)
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: String,
    /// SCHED_FIFO priority of the echo, 1-99; 0 for SCHED_OTHER
    #[arg(short, long, default_value_t = 80, allow_negative_numbers = true)]
    pub priority: i32,
    /// Pin the echo to this CPU
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Stop after this long [default: until Ctrl-C or SIGTERM]
    #[arg(short = 'D', long, allow_hyphen_values = true)]
    pub duration: Option<String>,
}

#[derive(Debug, Args)]
pub struct StallArgs {
    /// CPU to occupy
    #[arg(long)]
    pub cpu: usize,
    /// How long to occupy it (at most 10s)
    #[arg(short = 'D', long, default_value = "100ms", allow_hyphen_values = true)]
    pub duration: String,
    /// Wait this long before starting
    #[arg(long, default_value = "0s", allow_hyphen_values = true)]
    pub delay: String,
    /// SCHED_FIFO priority of the busy thread (above the measurement's, to stall it)
    #[arg(short, long, default_value_t = 99, allow_negative_numbers = true)]
    pub priority: i32,
    /// The busy thread's name (what a trace shows; at most 15 bytes are kept)
    #[arg(long, default_value = "rtgauge-stall")]
    pub name: String,
}

impl RunArgs {
    /// The values as typed, for validation by `scenario`.
    pub fn input(&self) -> crate::scenario::RunInput {
        crate::scenario::RunInput {
            interval: self.interval.clone(),
            duration: self.duration.clone(),
            loops: self.loops.clone(),
            warmup: self.warmup.clone(),
            priority: self.priority,
            policy: self.policy.map(Into::into),
            dl_runtime: self.dl_runtime.clone(),
            dl_deadline: self.dl_deadline.clone(),
            cpus: self.cpus.clone(),
            no_mlock: self.no_mlock,
            cycle_time: self.cycle_time.clone(),
            budget: self.budget.clone(),
            require: self.require.clone(),
            json: self.json.clone(),
            quiet: self.quiet,
            cpu_dma_latency: self.cpu_dma_latency.clone(),
            load: self.load.clone(),
            load_cpus: self.load_cpus.clone(),
            measure: self.measure.clone(),
            window: self.window.clone(),
            tune: self.tune.clone(),
            trace: self.trace.clone(),
            rotate: self.rotate.clone(),
            metrics: self.metrics.clone(),
            metrics_public: self.metrics_public,
            metrics_file: self.metrics_file.clone(),
            metrics_buckets: self.metrics_buckets.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    /// `--help` names every source the summaries and reports cite (their full references are
    /// `report::reference::SOURCES`).
    #[test]
    fn every_source_has_a_line_in_the_help() {
        for s in crate::report::reference::SOURCES {
            assert!(super::SOURCES_HELP.contains(&format!("{}: ", s.short)), "--help says what {} is", s.short);
        }
    }
}
