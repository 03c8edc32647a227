//! The built-in load generators. Each runs inside a worker process (`rtgauge __worker`) until
//! its stop flag is set (SIGTERM/SIGINT from rtgauge), and returns counters of the work it did,
//! which the worker prints as one JSON line for rtgauge to record.

pub mod hackbench;
pub mod simple;

use std::collections::BTreeMap;

/// Counters of the work done, by name (`bytes_written`, `messages`, `forks`, ...).
pub type Counters = BTreeMap<String, u64>;
