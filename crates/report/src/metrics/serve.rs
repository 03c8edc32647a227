//! Where the live metrics go while a run measures: served over HTTP (`--metrics ADDR`: GET
//! /metrics, the Prometheus text format or OpenMetrics as the client's `Accept` asks), and
//! written to a file once per window (`--metrics-file PATH`: a temporary file in the same
//! directory, mode 0644, renamed over PATH, for node_exporter's textfile collector).
//!
//! Both run on one thread of their own (a single-threaded runtime), confined to the CPUs
//! rtgauge does not measure at SCHED_OTHER before anything else runs on it. A scrape reads the
//! latest snapshot the collector published (`Slot::latest`: an `Arc` cloned under a lock the
//! collector never waits for) and renders it: work bounded by the number of series. The
//! server is `crate::http`'s (a task per connection, a client that sends nothing or reads
//! nothing let go in seconds); it has no write endpoint.

use super::{expo, Slot};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The metrics file, checked once and written again each window (and at the end of the run).
pub type MetricsFile = Arc<std::sync::Mutex<crate::report::json::Rewritten>>;

/// The metrics' outlets, checked and bound before measuring.
pub struct Outlets {
    listener: Option<(std::net::TcpListener, SocketAddr)>,
    file: Option<MetricsFile>,
}

impl Outlets {
    /// Binds `listen` and checks `file`'s directory, before anything runs: each failure one line
    /// naming the option and the fix.
    pub fn open(listen: Option<SocketAddr>, file: Option<&Path>) -> Result<Outlets, crate::vocab::Error> {
        Self::open_text(listen, file).map_err(crate::vocab::Error::System)
    }

    /// [`Self::open`], its failure as text.
    fn open_text(listen: Option<SocketAddr>, file: Option<&Path>) -> Result<Outlets, String> {
        let listener = match listen {
            None => None,
            Some(addr) => {
                let l = std::net::TcpListener::bind(addr).map_err(|e| {
                    let fix = if e.kind() == std::io::ErrorKind::AddrInUse {
                        format!(
                            "something listens there already; give another port, e.g. --metrics {}:{}",
                            addr.ip(),
                            addr.port().wrapping_add(1).max(1024)
                        )
                    } else {
                        format!("give an address of this machine, e.g. --metrics 127.0.0.1:{}", addr.port())
                    };
                    format!("--metrics {addr}: cannot listen there ({e}); {fix}")
                })?;
                let bound = l.local_addr().map_err(|e| format!("--metrics {addr}: {e}"))?;
                l.set_nonblocking(true).map_err(|e| format!("--metrics {addr}: {e}"))?;
                Some((l, bound))
            }
        };
        let file = match file {
            Some(path) => Some(Arc::new(std::sync::Mutex::new(check_file(path)?))),
            None => None,
        };
        Ok(Outlets { listener, file })
    }

    /// The metrics file, for the last figures written at the end of the run.
    pub fn file(&self) -> Option<MetricsFile> {
        self.file.clone()
    }

    /// Where the server listens (the port the system chose for port 0).
    pub fn address(&self) -> Option<SocketAddr> {
        self.listener.as_ref().map(|l| l.1)
    }

    /// Starts the metrics thread: confined by `confine` first, then serving and writing until
    /// the process ends. `window_ns`: how often the file is written. A failure to write the
    /// file is a warning (once), and the measurement goes on.
    pub fn start(
        self,
        slot: Arc<Slot>,
        window_ns: u64,
        confine: impl FnOnce() -> std::io::Result<()> + Send + 'static,
    ) -> std::io::Result<()> {
        std::thread::Builder::new().name("rtgauge-metrics".into()).spawn(move || {
            if let Err(e) = confine() {
                crate::report::out::err_line(&format!(
                    "rtgauge: warning: the metrics thread could not be kept off the measured CPUs ({e})"
                ));
            }
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                crate::report::out::err_line("rtgauge: warning: the metrics could not start (no runtime)");
                return;
            };
            rt.block_on(async move {
                let file = self.file.map(|f| tokio::spawn(write_every(f, Arc::clone(&slot), window_ns)));
                if let Some((listener, _)) = self.listener {
                    if let Ok(listener) = tokio::net::TcpListener::from_std(listener) {
                        crate::http::accept_with(listener, router(slot), Some(stall_warning())).await;
                    }
                }
                if let Some(f) = file {
                    let _ = f.await;
                }
            });
        })?;
        Ok(())
    }
}

/// Says, at most once a minute, that a scraping client took nothing of its answer and was let
/// go (the measurement is not concerned: it goes on).
fn stall_warning() -> crate::http::OnStall {
    let last = std::sync::Mutex::new(None::<std::time::Instant>);
    Arc::new(move |peer| {
        let Ok(mut last) = last.lock() else { return };
        if last.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
            *last = Some(std::time::Instant::now());
            crate::report::out::err_line(&format!(
                "rtgauge: warning: the metrics client at {peer} took nothing of its answer for {} s and was let go; \
                 the measurement goes on",
                crate::http::WRITE_STALL.as_secs()
            ));
        }
    })
}

/// The metrics file checked as every file rtgauge writes is (`report::json`'s checked writer:
/// no link another user planted followed on its way, its directory held open, a directory or a
/// device named as such).
fn check_file(path: &Path) -> Result<crate::report::json::Rewritten, String> {
    if path.file_name().is_none() {
        return Err(format!(
            "--metrics-file {}: not a file name; give e.g. --metrics-file /var/lib/prometheus/node-exporter/rtgauge.prom",
            path.display()
        ));
    }
    crate::report::json::Rewritten::open(path, crate::report::json::METRICS_FILE).map_err(|e| format!("{e:#}"))
}

/// Writes the latest snapshot to the metrics file every `window_ns`.
async fn write_every(file: MetricsFile, slot: Arc<Slot>, window_ns: u64) {
    let mut every = tokio::time::interval(Duration::from_nanos(window_ns.max(1_000_000)));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut warned = false;
    loop {
        every.tick().await;
        let Some(s) = slot.latest() else { continue };
        let text = expo::render(&s, false);
        if let Err(e) = write_file(&file, &text) {
            if !warned {
                crate::report::out::err_line(&format!("rtgauge: warning: --metrics-file {e}; the measurement goes on"));
                warned = true;
            }
        }
    }
}

/// Writes `text` as the metrics file's new version: a reader sees the old file or the new,
/// whole. `Err`: the file and why, for a message.
pub fn write_file(file: &MetricsFile, text: &str) -> Result<(), crate::vocab::Error> {
    write_file_text(file, text).map_err(crate::vocab::Error::System)
}

/// [`write_file`], its failure as text.
fn write_file_text(file: &MetricsFile, text: &str) -> Result<(), String> {
    let mut f = file.lock().unwrap_or_else(|p| p.into_inner());
    f.write(text.as_bytes()).map_err(|e| format!("{}: not written ({e})", f.shown()))
}

/// GET /metrics (and HEAD); anything else 404 or 405.
fn router(slot: Arc<Slot>) -> axum::Router {
    use axum::http::{header, HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    let metrics = move |headers: HeaderMap| {
        let slot = Arc::clone(&slot);
        async move {
            let om = expo::wants_openmetrics(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
            let Some(s) = slot.latest() else {
                return (StatusCode::SERVICE_UNAVAILABLE, "the measurement has not started yet\n").into_response();
            };
            let kind = if om { expo::OPENMETRICS_TYPE } else { expo::TEXT_TYPE };
            ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "no-store")], expo::render(&s, om)).into_response()
        }
    };
    axum::Router::new()
        .route("/metrics", axum::routing::get(metrics))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found: the metrics are at /metrics\n") })
        .layer(axum::middleware::map_request(crate::http::strict))
}
