//! Setting up what a run holds while it measures: memory locked, the tuning (with the guardian
//! that restores it if rtgauge dies), the trace, the measurement threads (pinned, at their
//! priority, before any load starts) and the loads under their watchdog.

use super::signals::Interrupts;
use crate::load::manager::LoadSet;
use crate::load::spec::LoadSpec;
use crate::load::watchdog::Watchdog;
use crate::probe::{self, ProbePlan, SetupError};
use crate::result::system::SystemInfo;
use crate::scenario::RunPlan;
use crate::sys;
use anyhow::{anyhow, Result};

use super::resolved::thread_sched;
use super::warnings::announce_default_load;

/// What the run holds changed while it lasts: the tuning (restored when dropped or finished),
/// the guardian that restores it if rtgauge dies first, and the trace (recorded in the tuning's
/// journal) until measuring takes it.
pub struct Held {
    tuning: crate::tuning::Tuning,
    guardian: Option<crate::load::guardian::Guardian>,
    pub trace: Option<crate::trace::Session>,
    /// The kernel tracers the run's kernel-tracer probes run (see `probe::kernel`).
    kernel: Vec<crate::trace::kernel::KernelSession>,
}

impl Held {
    /// The records of what is tuned, as held now (a rotated run's part: nothing put back yet).
    pub(super) fn tuning_so_far(&self) -> Vec<crate::result::tuning::TuningRecord> {
        self.tuning.held_records()
    }
}

/// What the run held, given back: the tuning's records, the loads' records and containment,
/// and when it ended.
pub struct Released {
    pub tuning: Vec<crate::result::tuning::TuningRecord>,
    pub loads: Vec<crate::result::load::LoadRecord>,
    pub containment: Option<crate::result::load::Containment>,
    pub ended_at: std::time::SystemTime,
}

/// The probes' stage: every measurement thread set up (pinned, at its priority, its trace
/// trigger given), and whether each got the RT priority asked for.
pub(super) fn probes(run: &mut super::Context, held: &mut Held) -> Result<probe::PreparedProbes> {
    let super::Context { plan, resolved, interrupts, system, .. } = run;
    let triggers = held.trace.as_ref().map(crate::trace::Session::triggers).unwrap_or_default();
    let prepared = prepare_probes(plan, &resolved.probes, interrupts, system, &triggers)?;
    held.tuning.probes_ready();
    // (SCHED_DEADLINE threads read back priority 0, as wanted.)
    system.rt_priority_obtained = plan.policy.is_realtime()
        && !prepared.reports().is_empty()
        && prepared.reports().iter().all(|r| r.error.is_none() && r.policy == Some(plan.policy) && r.priority == r.wanted);
    Ok(prepared)
}

/// The loads' stage: said on a terminal when they are the default mix, then started (those
/// that run from the start) under their watchdog.
pub(super) fn loads(run: &super::Context, held: &Held, warnings: &mut Vec<String>) -> Result<(LoadSet, Option<Watchdog>)> {
    let super::Context { plan, resolved, interrupts, .. } = run;
    announce_default_load(plan, resolved);
    start_loads(&resolved.load_specs, plan.load_cpus.clone(), false, held.tuning.load_cgroup_parent(), interrupts, warnings)
}

/// Everything tuned put back (the PM QoS request released); what could not be is a warning.
/// The guardian is given back to be held to the end of the run.
pub(super) fn release(
    held: Held,
    loads: &mut LoadSet,
    warnings: &mut Vec<String>,
) -> (Released, Option<crate::load::guardian::Guardian>) {
    for k in held.kernel {
        warnings.extend(k.finish());
    }
    let (tuning, restored) = held.tuning.finish();
    warnings.extend(restored.failed.iter().map(|f| format!("could not restore a setting: {f}")));
    let loads_done = loads.records();
    let released =
        Released { tuning, loads: loads_done, containment: loads.containment(), ended_at: std::time::SystemTime::now() };
    (released, held.guardian)
}

/// The tuning stage: settings held for the run — memory locked, the CPU latency request, what
/// `--tune` changes (its journal watched by a guardian from before the first change) — and the
/// trace started. What could not be applied becomes a warning; another rtgauge tuning the system
/// now is an error.
pub(super) fn hold(run: &mut super::Context, warnings: &mut Vec<String>) -> Result<Held> {
    let super::Context { plan, system, resolved, command_line, .. } = run;
    let cpus = &resolved.cpus.clone();
    warnings.extend(lock_memory(plan, system));
    if !plan.policy.is_realtime() {
        warnings.push("measured at SCHED_OTHER on purpose (--policy other): not a real-time measurement".into());
    }
    if plan.policy == crate::vocab::policy::Policy::Deadline {
        warnings.push(
            "SCHED_DEADLINE threads cannot be pinned (admission control needs their affinity to span every CPU of \
             their root domain): each 'cpu N' is a thread the kernel placed on any CPU"
                .into(),
        );
    }
    let scope = crate::tuning::Scope { measured: cpus.to_vec(), online: system.online_cpus.clone() };
    let mut guardian = None;
    let watch = |path: &std::path::Path| {
        let exe = crate::load::manager::self_exe().ok()?;
        let mut g = crate::load::guardian::Guardian::start(&exe).ok()?;
        g.watch_journal(path);
        Some(g)
    };
    // A kernel-tracer probe's set-up is journaled as --trace's is.
    let kernel_probes = resolved.probes.iter().any(|p| p.probe.kernel().is_some());
    let journaled = plan.trace.is_some() || kernel_probes;
    let tuning = crate::tuning::Tuning::apply(&plan.tune, plan.cpu_dma_latency_us, &scope, command_line, journaled, |path| {
        guardian = watch(path)
    })
    .map_err(anyhow::Error::msg)?;
    if let Some(r) = tuning.dma_record().filter(|r| !r.applied) {
        warnings.push(format!(
            "could not hold /dev/cpu_dma_latency at {} ({}): deep CPU idle states may add exit latency; run as root",
            r.value,
            r.error.as_deref().unwrap_or("?")
        ));
    }
    warnings.extend(tuning.warnings());
    let mut held = Held { tuning, guardian, trace: None, kernel: Vec::new() };
    // The readers of a kernel tracer's output on a CPU the run does not measure, if any (one
    // rtgauge may run on: a cpuset or taskset may leave it fewer than are online).
    let reader_cpu = system.allowed_cpus.iter().copied().find(|c| !cpus.contains(c));
    start_kernel_tracers(&mut resolved.probes, &mut held, reader_cpu)?;
    held.trace = start_trace(plan, &mut held, cpus, warnings);
    Ok(held)
}

/// The run-wide set-up of each kernel-tracer probe (see `probe::kernel`): its tracer started in
/// an instance of its own, journaled; the instance given to the probe's threads. A kernel that
/// lacks the tracer, or a run without the privilege, is refused before measuring (everything
/// set so far is put back as the held tuning is dropped).
fn start_kernel_tracers(probes: &mut [probe::ProbePlan], held: &mut Held, reader_cpu: Option<usize>) -> Result<()> {
    for p in probes.iter_mut() {
        let Some(tracer) = p.probe.kernel() else { continue };
        let name = p.probe.name();
        let Some(journal) = held.tuning.journal_mut() else {
            let why = held.tuning.journal_error().unwrap_or("no journal of original values could be kept");
            anyhow::bail!("--measure {name} needs the kernel's {} tracer, set up as root: {why}", tracer.tracer);
        };
        let session = crate::trace::kernel::KernelSession::start(journal, &tracer, &p.cpus)
            .map_err(|e| anyhow::anyhow!("--measure {name}: {e}"))?;
        p.kernel = Some(probe::KernelInstance { reader_cpu, ..session.instance().clone() });
        held.kernel.push(session);
    }
    Ok(())
}

/// `--trace`: a trace instance per measured CPU, recorded in the journal; without the privilege
/// or the kernel support, a warning and no trace.
fn start_trace(plan: &RunPlan, held: &mut Held, cpus: &[usize], warnings: &mut Vec<String>) -> Option<crate::trace::Session> {
    let threshold = plan.trace?;
    let Some(journal) = held.tuning.journal_mut() else {
        let why = held.tuning.journal_error().unwrap_or("no journal of original values could be kept").to_string();
        warnings.push(format!("no trace: {why}"));
        return None;
    };
    let session = crate::trace::Session::start(journal, cpus, (threshold > 0).then_some(threshold));
    if let Some(why) = session.failed() {
        warnings.push(format!("no trace: {why}"));
    }
    Some(session)
}

/// Locks memory where that is safe; returns the warning when it is not locked.
fn lock_memory(plan: &RunPlan, system: &mut SystemInfo) -> Option<String> {
    if !plan.mlock {
        return Some("memory not locked (--no-mlock): page faults may add latency".into());
    }
    // The code the audit and the planning ran is not needed again while measuring: let it go
    // before everything touched from now on is locked in memory (a continuous run keeps it: all
    // its code is made resident below).
    let continuous = plan.continuous.rotate_ns.is_some();
    if !continuous {
        sys::mem::release_code_pages();
    }
    let locked = match system.memory_lock_hazard() {
        Some(why) => Err(why),
        None => {
            sys::mem::lock_all_memory().map_err(|e| format!("{e}; run as root or raise RLIMIT_MEMLOCK ('ulimit -l unlimited')"))
        }
    };
    match locked {
        Ok(()) => {
            system.mlockall_obtained = true;
            // A run that goes on for months has all its code resident from the start, so that
            // its memory is at its full size before the first part is kept (see
            // `sys::mem::make_code_resident`).
            match continuous.then(sys::mem::make_code_resident) {
                Some(Err(e)) => Some(format!(
                    "not all of rtgauge's code could be made resident ({e}): its memory may grow a little as the \
                     parts kept first run code not run before"
                )),
                _ => None,
            }
        }
        Err(e) => {
            system.mlockall_error = Some(e.clone());
            Some(format!("memory not locked (page faults may add latency): {e}"))
        }
    }
}

/// The error number of a refusal for want of privilege.
const EPERM: i32 = 1;

/// Sets up the measurement threads; a refusal becomes an error that says why and what to do.
fn prepare_probes(
    plan: &RunPlan,
    probes: &[ProbePlan],
    interrupts: &Interrupts,
    system: &SystemInfo,
    triggers: &[(usize, std::sync::Arc<probe::TraceTrigger>)],
) -> Result<probe::PreparedProbes> {
    probe::prepare(probes, thread_sched(plan), interrupts.stop.clone(), triggers).map_err(|reports| {
        let failed = reports.iter().find(|r| r.error.is_some()).expect("a failed report");
        match failed.error.as_ref().expect("an error") {
            SetupError::Scheduler(errno) if plan.policy == crate::vocab::policy::Policy::Deadline && *errno != EPERM => {
                let bandwidth = "the kernel's SCHED_DEADLINE admission control refused the runtime per period";
                anyhow!(
                    "cannot run the {} thread for CPU {} at SCHED_DEADLINE: {} ({bandwidth}, or the interval is below \
                     its least period, /proc/sys/kernel/sched_deadline_period_min_us); lower --dl-runtime or lengthen \
                     the interval",
                    failed.probe,
                    failed.cpu,
                    std::io::Error::from_raw_os_error(*errno)
                )
            }
            SetupError::Scheduler(errno) => anyhow!(system.explain_rt_refusal(
                plan.policy.kernel_name(),
                plan.priority,
                &std::io::Error::from_raw_os_error(*errno)
            )),
            SetupError::Affinity(msg) => {
                anyhow!("cannot pin a thread to CPU {}: {msg}; check --cpus and the cpuset of this process", failed.cpu)
            }
            SetupError::Probe(msg) => anyhow!("{} on CPU {}: {msg}", failed.probe, failed.cpu),
            SetupError::Other(msg) => {
                anyhow!("cannot prepare the {} thread for CPU {}: {msg}", failed.probe, failed.cpu)
            }
        }
    })
}

/// Starts the loads that run from the start, under their watchdog (see `load::watchdog`).
/// `until_stopped`: one-shot loads run once and are not restarted (`rtgauge load`).
pub(super) fn start_loads(
    specs: &[LoadSpec],
    cpus: Option<Vec<usize>>,
    until_stopped: bool,
    cgroup_parent: Option<std::path::PathBuf>,
    interrupts: &Interrupts,
    warnings: &mut Vec<String>,
) -> Result<(LoadSet, Option<Watchdog>)> {
    let mut loads = LoadSet::new(specs, cpus, until_stopped, cgroup_parent)?;
    let watchdog = interrupts.watchdog(&loads, warnings)?;
    loads.start_initial(&interrupts.stop);
    Ok((loads, watchdog))
}
