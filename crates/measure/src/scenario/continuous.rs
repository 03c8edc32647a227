//! A continuous measurement as planned: `-D forever`, `--rotate` (the figures closed every TIME
//! as a run of their own) and the live metrics (`--metrics`, `--metrics-file`,
//! `--metrics-buckets`). Pure: the address is parsed here, bound when the run starts; the file's
//! directory is checked then too (`run::checks`).

use super::{bad, duration_arg, PlanError, RunInput};
use crate::vocab::units::{self, Nanos};
use std::net::SocketAddr;

/// How a run goes on and what it shows while it does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Continuous {
    /// `-D forever`: measure until stopped (at most `MAX_RUN_NS`).
    pub forever: bool,
    /// `--rotate`: the figures closed every this many ns as a stored run of its own.
    pub rotate_ns: Option<u64>,
    /// The live metrics (`None`: none).
    pub metrics: Option<MetricsPlan>,
}

/// Where the live metrics go.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsPlan {
    /// `--metrics ADDR`: served there.
    pub listen: Option<SocketAddr>,
    /// `--metrics-file PATH`: written there once per window.
    pub file: Option<std::path::PathBuf>,
    /// The histogram's bucket bounds (ns, ascending).
    pub bounds_ns: Vec<u64>,
}

impl Continuous {
    /// Whether rtgauge works while it measures (a server, rotated runs written): that work needs
    /// a CPU it does not measure.
    pub fn works_while_measuring(&self) -> bool {
        self.rotate_ns.is_some() || self.metrics.is_some()
    }
}

/// The rotation when none is given with `-D forever`.
pub const DEFAULT_ROTATE_NS: u64 = 3_600_000_000_000;
/// The word `-D` takes for a run until stopped.
pub const FOREVER: &str = "forever";

/// Whether `--duration`'s text asks for a run until stopped.
pub fn is_forever(duration: Option<&str>) -> bool {
    duration.is_some_and(|d| d.trim().eq_ignore_ascii_case(FOREVER))
}

/// The continuous part of the plan. `measured_ns`: the run's measured length when it has one
/// (not `-D forever`); `window_ns`: `--window` as given.
pub(super) fn plan(input: &RunInput, measured_ns: Option<u64>, window_ns: Option<u64>) -> Result<Continuous, PlanError> {
    let forever = is_forever(input.duration.as_deref());
    let rotate_ns = match (&input.rotate, forever) {
        (Some(t), _) => match duration_arg("--rotate", t, "1h")? {
            0 => return Err(bad("--rotate must be greater than zero, e.g. --rotate 1h")),
            ns => Some(ns),
        },
        (None, true) => Some(DEFAULT_ROTATE_NS),
        (None, false) => None,
    };
    if let Some(r) = rotate_ns {
        let given = if input.rotate.is_some() { String::new() } else { " (the default with -D forever)".to_string() };
        if let Some(m) = measured_ns.filter(|&m| r > m) {
            return Err(bad(format!(
                "--rotate {}{given} is longer than the run ({}): rotate more often, measure longer, or use -D forever",
                Nanos(r),
                Nanos(m)
            )));
        }
        // (Without --window, the window a run of the rotation's length gets: 1 s, shorter under
        // 50 s, wider beyond a day.)
        let window = window_ns.unwrap_or_else(|| crate::aggregate::timeline::default_window_ns(r, 0, true));
        if r < window {
            return Err(bad(format!(
                "--rotate {}{given} is shorter than the window ({}): rotated runs hold whole windows; \
                 give --rotate {} or more",
                Nanos(r),
                Nanos(window),
                units::arg(window)
            )));
        }
        if r % window != 0 {
            return Err(bad(format!(
                "--rotate {}{given} is not a whole number of windows ({}): rotated runs hold whole windows, \
                 e.g. --rotate {}",
                Nanos(r),
                Nanos(window),
                units::arg(r / window * window)
            )));
        }
    }
    if rotate_ns.is_some() && input.trace.is_some() {
        return Err(bad("--trace follows the worst case of the whole measurement, not of each rotated run: trace a run \
             of its own, without --rotate or -D forever"));
    }
    let listen = match &input.metrics {
        None => None,
        Some(text) => {
            // `localhost:PORT` is the loopback address (no name is looked up).
            let text_addr = match text.trim().strip_prefix("localhost:") {
                Some(port) => format!("127.0.0.1:{port}"),
                None => text.trim().to_string(),
            };
            let addr: SocketAddr = text_addr.parse().map_err(|_| {
                bad(format!(
                    "--metrics '{}': not an address and port; give e.g. --metrics 127.0.0.1:9464",
                    crate::vocab::text::shown(text)
                ))
            })?;
            if !addr.ip().to_canonical().is_loopback() && !input.metrics_public {
                return Err(bad(format!(
                    "--metrics {addr} serves the metrics beyond this machine: add --metrics-public to mean it, \
                     or give a loopback address, e.g. --metrics 127.0.0.1:{}",
                    addr.port()
                )));
            }
            Some(addr)
        }
    };
    if input.metrics_public && listen.is_none() {
        return Err(bad("--metrics-public applies to --metrics ADDR: add --metrics or drop it"));
    }
    let file = match &input.metrics_file {
        None => None,
        Some(p) if p.is_empty() => {
            return Err(bad(
                "--metrics-file needs a file name, e.g. --metrics-file /var/lib/prometheus/node-exporter/rtgauge.prom",
            ))
        }
        Some(p) => Some(std::path::PathBuf::from(p)),
    };
    let metrics = if listen.is_none() && file.is_none() {
        if input.metrics_buckets.is_some() {
            return Err(bad("--metrics-buckets applies to --metrics or --metrics-file: add one or drop it"));
        }
        None
    } else {
        let spec = input.metrics_buckets.as_deref().unwrap_or(crate::vocab::buckets::DEFAULT);
        Some(MetricsPlan { listen, file, bounds_ns: crate::vocab::buckets::parse(spec)? })
    };
    Ok(Continuous { forever, rotate_ns, metrics })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(input: RunInput) -> Result<crate::scenario::RunPlan, PlanError> {
        crate::scenario::RunPlan::from_input(&input)
    }

    #[test]
    fn forever_rotates_hourly_and_localhost_is_loopback() {
        let p =
            plan_of(RunInput { duration: Some("Forever".into()), metrics: Some("localhost:9464".into()), ..Default::default() })
                .unwrap();
        assert!(p.continuous.forever);
        assert_eq!(p.continuous.rotate_ns, Some(DEFAULT_ROTATE_NS));
        let m = p.continuous.metrics.clone().unwrap();
        assert_eq!(m.listen, Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(m.bounds_ns.len(), 19, "1 µs to 1 s, 1-2-5 a decade");
        assert!(p.total_ns() <= crate::scenario::MAX_RUN_NS);
        // A run of given length rotated: no default rotation without -D forever.
        let p = plan_of(RunInput { duration: Some("24h".into()), ..Default::default() }).unwrap();
        assert_eq!(p.continuous, Continuous::default());
    }

    #[test]
    fn a_suggested_rotation_reads_back() {
        let e = plan_of(RunInput {
            duration: Some("forever".into()),
            rotate: Some("90s".into()),
            window: Some("1m".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.0.contains("e.g. --rotate 1m"), "{e}");
        assert!(plan_of(RunInput {
            duration: Some("forever".into()),
            rotate: Some("1m".into()),
            window: Some("1m".into()),
            ..Default::default()
        })
        .is_ok());
    }
}
