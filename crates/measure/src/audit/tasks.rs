//! The tasks of the system as `/proc` shows them: name, state, scheduling class and priority,
//! CPU, start time. The audit lists threaded IRQ handlers by them, the CPU shield moves tasks
//! by them, the trace names the thread that held a CPU by them. Read-only.

use std::fs;

/// `PF_KTHREAD` in a task's flags: a kernel thread.
pub const PF_KTHREAD: u64 = 0x0020_0000;
/// `PF_NO_SETAFFINITY`: a kernel thread bound to its CPU (per-CPU work); it cannot be moved.
pub const PF_NO_SETAFFINITY: u64 = 0x0400_0000;

/// One task's `/proc/PID/stat` (or `/proc/PID/task/TID/stat`).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskStat {
    pub pid: i32,
    pub comm: String,
    pub state: char,
    pub flags: u64,
    /// The kernel's priority as `/proc` shows it: `-1 − rt_priority` for RT tasks, `20 + nice`
    /// for the others (what PI boosting changes).
    pub prio: i64,
    pub nice: i64,
    /// Jiffies after boot when it started: with the pid, it names one task (pids are reused).
    pub starttime: u64,
    /// The CPU it last ran on.
    pub processor: i64,
    pub rt_priority: u32,
    pub policy: u32,
}

impl TaskStat {
    /// Parses a stat line: `pid (comm) state ppid ...` (comm may hold spaces and parentheses).
    pub fn parse(line: &str) -> Option<TaskStat> {
        let open = line.find('(')?;
        let close = line.rfind(')')?;
        let pid = line[..open].trim().parse().ok()?;
        let comm = line[open + 1..close].to_string();
        // Fields from the third (state) on; field n is rest[n - 3].
        let rest: Vec<&str> = line[close + 1..].split_whitespace().collect();
        let field = |n: usize| rest.get(n - 3).copied();
        let num = |n: usize| field(n).and_then(|s| s.parse::<i64>().ok());
        Some(TaskStat {
            pid,
            comm,
            state: field(3)?.chars().next()?,
            flags: field(9)?.parse().ok()?,
            prio: num(18)?,
            nice: num(19)?,
            starttime: field(22)?.parse().ok()?,
            processor: num(39).unwrap_or(-1),
            rt_priority: field(40).and_then(|s| s.parse().ok()).unwrap_or(0),
            policy: field(41).and_then(|s| s.parse().ok()).unwrap_or(0),
        })
    }

    /// Reads `/proc/PID/stat`.
    pub fn of(pid: i32) -> Option<TaskStat> {
        TaskStat::parse(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Reads `/proc/PID/task/TID/stat`.
    pub fn of_thread(pid: i32, tid: i32) -> Option<TaskStat> {
        TaskStat::parse(&fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?)
    }

    pub fn is_kernel_thread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }

    /// `SCHED_FIFO 50`, `SCHED_OTHER nice 0`, ...
    pub fn sched(&self) -> String {
        match self.policy {
            1 | 2 => format!("{} {}", policy_name(self.policy), self.rt_priority),
            6 => policy_name(6).to_string(),
            p => format!("{} nice {}", policy_name(p), self.nice),
        }
    }
}

/// The name of a scheduling policy number.
pub fn policy_name(policy: u32) -> &'static str {
    match policy {
        0 => "SCHED_OTHER",
        1 => "SCHED_FIFO",
        2 => "SCHED_RR",
        3 => "SCHED_BATCH",
        5 => "SCHED_IDLE",
        6 => "SCHED_DEADLINE",
        7 => "SCHED_EXT",
        _ => "unknown",
    }
}

/// Every process id in `/proc`.
pub fn processes() -> Vec<i32> {
    numbered("/proc")
}

/// Every thread id of process `pid`.
pub fn threads(pid: i32) -> Vec<i32> {
    numbered(&format!("/proc/{pid}/task"))
}

fn numbered(dir: &str) -> Vec<i32> {
    let mut ids: Vec<i32> =
        fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()).unwrap_or_default();
    ids.sort_unstable();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line_whose_name_holds_spaces_and_parentheses() {
        let line = "42 (irq/26-a (b) c) S 2 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 -51 0 1 0 123 0 0 18446744073709551615 \
                    0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 50 1 0 0 0";
        let t = TaskStat::parse(line).unwrap();
        assert_eq!((t.pid, t.comm.as_str(), t.state), (42, "irq/26-a (b) c", 'S'));
        assert_eq!((t.prio, t.nice, t.starttime, t.processor, t.rt_priority, t.policy), (-51, 0, 123, 1, 50, 1));
        assert!(t.is_kernel_thread());
        assert_eq!(t.sched(), "SCHED_FIFO 50");
    }

    #[test]
    fn reads_this_process() {
        let me = TaskStat::of(std::process::id() as i32).unwrap();
        assert_eq!(me.pid, std::process::id() as i32);
        assert!(!me.is_kernel_thread());
        assert!(processes().contains(&me.pid));
    }
}
