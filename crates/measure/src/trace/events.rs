//! The kernel trace's text, one CPU's `per_cpu/cpuN/trace`, read back into events: who ran,
//! who was woken, which interrupt, softirq, system vector or hrtimer ran, and when
//! (CLOCK_MONOTONIC, as the trace instance's `mono` clock; the text gives microseconds).

/// A task as the scheduling events name it: its name, id and kernel priority (0-99 RT, 100-139
/// normal, -1 deadline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub comm: String,
    pub pid: i32,
    pub prio: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Switch {
        prev: Task,
        next: Task,
    },
    Wakeup(Task),
    IrqEntry {
        irq: u32,
        name: String,
    },
    IrqExit {
        irq: u32,
    },
    SoftirqEntry {
        action: String,
    },
    SoftirqExit {
        action: String,
    },
    VectorEntry(String),
    VectorExit(String),
    /// An hrtimer callback began (`function`, the clock it read, in ns).
    HrtimerEntry {
        function: String,
        now_ns: Option<u64>,
    },
    Other,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub ts_ns: u64,
    /// The task that was running (an interrupt's: the one it interrupted).
    pub pid: i32,
    pub comm: String,
    pub kind: Kind,
}

/// `3135.954531` (seconds, a fraction of any length) in nanoseconds.
fn timestamp(t: &str) -> Option<u64> {
    let (s, f) = t.split_once('.').unwrap_or((t, ""));
    let secs: u64 = s.parse().ok()?;
    let digits: String = f.chars().take(9).collect();
    let frac: u64 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
    Some(secs * 1_000_000_000 + frac * 10u64.pow(9 - digits.len() as u32))
}

/// The value of `key=` in `text`, up to the next ` key2=` (`None` for the end): a task name may
/// hold blanks.
fn field<'a>(text: &'a str, key: &str, until: Option<&str>) -> Option<&'a str> {
    let at = text.find(key)? + key.len();
    let rest = &text[at..];
    Some(match until {
        Some(u) => &rest[..rest.find(u)?],
        None => rest.split_whitespace().next().unwrap_or(""),
    })
}

fn task(text: &str, prefix: &str) -> Option<Task> {
    let pid_key = format!(" {prefix}pid=");
    Some(Task {
        comm: field(text, &format!("{prefix}comm="), Some(&pid_key))?.to_string(),
        pid: field(text, &pid_key, None)?.parse().ok()?,
        prio: field(text, &format!(" {prefix}prio="), None)?.parse().ok()?,
    })
}

fn kind(name: &str, payload: &str) -> Kind {
    fn num<T: std::str::FromStr>(payload: &str, k: &str) -> Option<T> {
        field(payload, k, None).and_then(|v| v.parse().ok())
    }
    match name {
        "sched_switch" => match payload.split_once(" ==> ") {
            Some((p, n)) => match (task(p, "prev_"), task(n, "next_")) {
                (Some(prev), Some(next)) => Kind::Switch { prev, next },
                _ => Kind::Other,
            },
            None => Kind::Other,
        },
        "sched_wakeup" => task(payload, "").map_or(Kind::Other, Kind::Wakeup),
        "irq_handler_entry" => match num(payload, "irq=") {
            Some(irq) => Kind::IrqEntry { irq, name: field(payload, "name=", None).unwrap_or("").to_string() },
            None => Kind::Other,
        },
        "irq_handler_exit" => num(payload, "irq=").map_or(Kind::Other, |irq| Kind::IrqExit { irq }),
        "softirq_entry" | "softirq_exit" => {
            let action = field(payload, "action=", Some("]")).unwrap_or("?").to_string();
            if name == "softirq_entry" {
                Kind::SoftirqEntry { action }
            } else {
                Kind::SoftirqExit { action }
            }
        }
        "hrtimer_expire_entry" => Kind::HrtimerEntry {
            function: field(payload, "function=", None).unwrap_or("").to_string(),
            now_ns: num(payload, "now="),
        },
        v if v.ends_with("_entry") && payload.starts_with("vector=") => {
            Kind::VectorEntry(v.trim_end_matches("_entry").to_string())
        }
        v if v.ends_with("_exit") && payload.starts_with("vector=") => Kind::VectorExit(v.trim_end_matches("_exit").to_string()),
        _ => Kind::Other,
    }
}

/// One line: `COMM-PID [CPU] FLAGS TIMESTAMP: EVENT: PAYLOAD` (the name may hold blanks).
fn line(l: &str) -> Option<Event> {
    // The CPU field: " [001] ".
    let mut search = 0;
    let cpu_at = loop {
        let i = l[search..].find(" [")? + search;
        let close = l[i + 2..].find(']')? + i + 2;
        if close > i + 2 && l[i + 2..close].bytes().all(|b| b.is_ascii_digit()) {
            break (i, close);
        }
        search = i + 2;
    };
    let (head, rest) = (&l[..cpu_at.0], &l[cpu_at.1 + 1..]);
    let (comm, pid) = match head.trim().rsplit_once('-') {
        Some((c, p)) => (c.to_string(), p.parse().unwrap_or(-1)),
        None => (head.trim().to_string(), -1),
    };
    let mut words = rest.split_whitespace();
    // Flags (d.h1.) come before the timestamp in the default format.
    let mut ts_word = words.next()?;
    if !ts_word.ends_with(':') {
        ts_word = words.next()?;
    }
    let ts_ns = timestamp(ts_word.trim_end_matches(':'))?;
    let after_ts = &rest[rest.find(ts_word)? + ts_word.len()..];
    let (name, payload) = after_ts.trim_start().split_once(": ").unwrap_or((after_ts.trim().trim_end_matches(':'), ""));
    Some(Event { ts_ns, pid, comm, kind: kind(name, payload) })
}

/// Every event of a trace's text, in order.
pub fn parse(text: &str) -> Vec<Event> {
    let mut v: Vec<Event> = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).filter_map(line).collect();
    v.sort_by_key(|e| e.ts_ns);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_kernels_lines_names_with_blanks_included() {
        let text = "\
# tracer: nop
       opt cgu.0-27733   [001] d.h1.  3135.954531: irq_handler_entry: irq=36 name=virtio1-req.0
       opt cgu.0-27733   [001] d.h1.  3135.954560: irq_handler_exit: irq=36 ret=handled
       opt cgu.0-27733   [001] ..s1.  3135.954562: softirq_entry: vec=4 [action=BLOCK]
          <idle>-0       [001] d.h..  3135.956015: local_timer_entry: vector=236
          <idle>-0       [001] d.h..  3135.956022: hrtimer_expire_entry: hrtimer=00000000fb893822 function=hrtimer_wakeup now=3135956016182
          <idle>-0       [001] d.h2.  3135.956030: sched_wakeup: comm=rtgauge-timer1 pid=1234 prio=19 target_cpu=001
          <idle>-0       [001] d..2.  3135.956040: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=my stall x next_pid=99 next_prio=0
";
        let e = parse(text);
        assert_eq!(e.len(), 7);
        assert_eq!(e[0].ts_ns, 3_135_954_531_000);
        assert_eq!(e[0].pid, 27733);
        assert_eq!(e[0].kind, Kind::IrqEntry { irq: 36, name: "virtio1-req.0".into() });
        assert_eq!(e[2].kind, Kind::SoftirqEntry { action: "BLOCK".into() });
        assert_eq!(e[3].kind, Kind::VectorEntry("local_timer".into()));
        assert_eq!(e[4].kind, Kind::HrtimerEntry { function: "hrtimer_wakeup".into(), now_ns: Some(3_135_956_016_182) });
        assert_eq!(e[5].kind, Kind::Wakeup(Task { comm: "rtgauge-timer1".into(), pid: 1234, prio: 19 }));
        match &e[6].kind {
            Kind::Switch { prev, next } => {
                assert_eq!((prev.comm.as_str(), prev.pid, prev.prio), ("swapper/1", 0, 120));
                assert_eq!((next.comm.as_str(), next.pid, next.prio), ("my stall x", 99, 0));
            }
            k => panic!("{k:?}"),
        }
    }
}
