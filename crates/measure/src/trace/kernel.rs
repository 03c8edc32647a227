//! The run-wide set-up of a probe built on one of the kernel's tracers (see `probe::kernel`):
//! tracefs found or mounted, the tracer checked in `available_tracers`, an instance of the run's
//! own made (`rtgauge-PID-RANDOM-TRACER`, journaled before anything is set in it), its files set,
//! the files every instance shares set after their originals are journaled, the tracer started
//! on the measured CPUs. [`KernelSession::finish`] stops and removes the instance; the journal
//! writes the shared files back (at the run's end, by the guardian when rtgauge dies, by the next
//! rtgauge when both died), as for every setting rtgauge changes.

use super::tracefs;
use crate::probe::{KernelInstance, KernelTracer};
use crate::sys::tracefs::{available_tracers, cpu_mask, remove_instance, write};
use crate::tuning::journal::{Journal, Undo};
use crate::vocab::Error;

/// A kernel tracer running for the run in an instance of its own.
pub struct KernelSession {
    instance: KernelInstance,
    tracer: &'static str,
    cpus: Vec<usize>,
}

impl KernelSession {
    /// Starts `tracer` on `cpus` (see the module doc). Refused, with what to do, where the kernel
    /// lacks the tracer or tracefs; whatever was set before a refusal is in the journal.
    pub fn start(j: &mut Journal, tracer: &KernelTracer, cpus: &[usize]) -> Result<KernelSession, Error> {
        let fs = tracefs::find_or_mount(j)?;
        let offered = available_tracers(&fs.root).map_err(|e| {
            Error::System(format!("cannot read the tracers the kernel offers ({}/available_tracers): {e}", fs.root.display()))
        })?;
        if !offered.iter().any(|t| t == tracer.tracer) {
            return Err(Error::Unsupported(format!(
                "this kernel has no {} tracer ({}; its tracers: {}): Debian's PREEMPT_RT kernels have it, or build the \
                 kernel with that option",
                tracer.tracer,
                tracer.config,
                if offered.is_empty() { "none".to_string() } else { offered.join(", ") }
            )));
        }
        let cpus_setting = tracer.cpus_file.map(|f| (f, crate::vocab::cpus::format_cpu_list(cpus)));
        for (file, value) in tracer.shared.iter().chain(cpus_setting.iter()) {
            let path = fs.root.join(file);
            let original =
                crate::sys::tracefs::read(&path).map_err(|e| Error::io(format_args!("cannot read {}", path.display()), &e))?;
            let undo =
                Undo::Write { path: path.display().to_string(), original: original.trim().to_string(), set: value.clone() };
            // Nothing is changed that the journal would not put back.
            crate::tuning::journal::would_undo(&undo).map_err(|e| e.context(format_args!("{} is not set", path.display())))?;
            j.record(&[undo])?;
            write(&path, value)?;
        }
        let token = crate::sys::host::random_u64().map_err(|e| Error::io("no random name for a trace instance", &e))?;
        let dir = tracefs::make_instance(j, &fs, &format!("{token:016x}-{}", tracer.tracer))?;
        let set = || -> Result<(), Error> {
            write(&dir.join("tracing_on"), "0")?;
            // A reader waiting on the pipe is woken by any line, not at half a buffer (kernels
            // before 4.19 have no such file).
            if dir.join("buffer_percent").exists() {
                write(&dir.join("buffer_percent"), "0")?;
            }
            for (file, value) in &tracer.instance {
                write(&dir.join(file), value)?;
            }
            write(&dir.join("tracing_cpumask"), &cpu_mask(cpus))?;
            write(&dir.join("current_tracer"), tracer.tracer)?;
            write(&dir.join("tracing_on"), "1")
        };
        set().inspect_err(|_| {
            let _ = remove_instance(&dir);
        })?;
        Ok(KernelSession { instance: KernelInstance { dir, reader_cpu: None }, tracer: tracer.tracer, cpus: cpus.to_vec() })
    }

    /// The instance, for the probe's threads.
    pub fn instance(&self) -> &KernelInstance {
        &self.instance
    }

    /// Stops the tracer and removes the instance (the journal writes the shared files back).
    /// Returns a warning for each CPU whose buffer lost events (see [`Self::lost`]).
    pub fn finish(self) -> Vec<String> {
        let _ = write(&self.instance.dir.join("tracing_on"), "0");
        let lost = self.lost();
        let _ = write(&self.instance.dir.join("current_tracer"), "nop");
        let _ = remove_instance(&self.instance.dir);
        lost
    }

    /// What each measured CPU's buffer lost, as its `stats` count it (`overrun`: events the
    /// writer overwrote before they were read; `dropped events`): a warning per CPU that lost
    /// any. A lost event is a gap in the tracer's count of periods, so its periods are missed;
    /// the counts are the instance's whole life's, its set-up before the run's start included.
    fn lost(&self) -> Vec<String> {
        let count = |text: &str, key: &str| {
            text.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0)
        };
        self.cpus
            .iter()
            .filter_map(|cpu| {
                let stats = crate::sys::tracefs::read(&self.instance.dir.join(format!("per_cpu/cpu{cpu}/stats"))).ok()?;
                let (overrun, dropped) = (count(&stats, "overrun:"), count(&stats, "dropped events:"));
                (overrun + dropped > 0).then(|| {
                    format!(
                        "the kernel's {} buffer of CPU {cpu} lost {} event(s) before they were read (overrun {overrun}, \
                         dropped {dropped}), in the run or in its set-up: the periods lost in the run are counted missed",
                        self.tracer,
                        overrun + dropped
                    )
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
