//! `rtgauge serve`: a read-only dashboard over a store — the fleet of boards (`/`), each board's
//! long-term view (`/board/NAME`), every run's report (`/run/ID`), comparisons (`/compare`) —
//! and the same as JSON (`/api/...`, docs/dashboard.md) for scripts and Grafana.
//!
//! The flow of a request: `http.rs` accepts the connection (bounded in number, a deadline for
//! the request's head) and hands it to the routes (`routes.rs`); a route reads its parameters
//! (`query.rs`), takes a store connection from the pool here ([`Shared::answer`]), reads what its
//! page shows (`data.rs`, into `model.rs`'s values) and draws it (`pages/`) on a blocking thread;
//! the connection goes back to the pool before the first byte is sent. Nothing is written to
//! the store; the process stops at once on Ctrl-C or SIGTERM.

mod data;
pub mod model;
pub mod pages;
mod query;
mod routes;

use crate::store::{Location, Store};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How many store connections (and blocking threads drawing pages) serve at once.
const POOL: usize = 4;

/// Why a request is not answered with its page.
#[derive(Debug)]
pub enum Failure {
    /// A parameter is wrong (400): what and how to write it.
    BadRequest(String),
    /// The board or run is not in the store (404).
    NotFound(String),
    /// The store failed (503): a database gone away, a damaged file.
    Store(String),
}

/// The store's failure as the dashboard answers it: a run not there is not found (404), a
/// request the store cannot answer as asked is a bad request (400); the store away, refusing
/// or failing is a store that could not be read (503).
impl From<crate::store::StoreError> for Failure {
    fn from(e: crate::store::StoreError) -> Failure {
        match e {
            crate::store::StoreError::NotFound(m) => Failure::NotFound(m),
            crate::store::StoreError::Asked(m) => Failure::BadRequest(m),
            e => Failure::Store(e.to_string()),
        }
    }
}

impl Failure {
    fn response(self) -> Response {
        let (status, text) = match self {
            Failure::BadRequest(m) => (StatusCode::BAD_REQUEST, m),
            Failure::NotFound(m) => (StatusCode::NOT_FOUND, m),
            Failure::Store(m) => (StatusCode::SERVICE_UNAVAILABLE, format!("the store could not be read: {m}")),
        };
        // One line: whatever a message holds, it is plain text.
        let line = crate::report::shown(&text.replace(['\n', '\r'], " ")).into_owned();
        let mut r = (status, format!("{line}\n")).into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
        secure(&mut r);
        r
    }
}

/// What a route answers with.
pub enum Answer {
    Html(String),
    Json(Vec<u8>),
    Script(&'static str),
}

impl Answer {
    fn json<T: serde::Serialize>(v: &T) -> Result<Answer, Failure> {
        serde_json::to_vec(v).map(Answer::Json).map_err(|e| Failure::Store(e.to_string()))
    }

    /// The response, with how long the server took (`Server-Timing: app;dur=MS`).
    fn response(self, took_ms: Option<f64>) -> Response {
        let (kind, body): (&'static str, axum::body::Body) = match self {
            Answer::Html(s) => ("text/html; charset=utf-8", s.into()),
            Answer::Json(v) => ("application/json", v.into()),
            Answer::Script(s) => ("text/javascript; charset=utf-8", s.into()),
        };
        let mut r = body.into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
        if let Some(ms) = took_ms {
            if let Ok(v) = HeaderValue::from_str(&format!("app;dur={ms:.2}")) {
                r.headers_mut().insert("server-timing", v);
            }
        }
        secure(&mut r);
        r
    }
}

/// Headers every answer carries: nothing but this server's own scripts and styles may run or
/// load (the pages load nothing from elsewhere), no framing, no sniffing, no referrer.
fn secure(r: &mut Response) {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// What every request shares: the store's connections and where to open more.
pub struct Shared {
    location: Location,
    shown: String,
    idle: Mutex<Vec<Store>>,
    slots: tokio::sync::Semaphore,
}

impl Shared {
    /// Answers with what `work` makes of a store connection, on a blocking thread: at most
    /// [`POOL`] at once (others wait for a slot, holding no thread). A connection that failed is
    /// dropped (the next request opens a new one: a database restarted is found again).
    async fn answer<F>(self: &Arc<Self>, work: F) -> Response
    where
        F: FnOnce(&Store, &str) -> Result<Answer, Failure> + Send + 'static,
    {
        let Ok(_slot) = self.slots.acquire().await else {
            return Failure::Store("the server is stopping".into()).response();
        };
        let me = Arc::clone(self);
        let done = tokio::task::spawn_blocking(move || {
            let t = Instant::now();
            let store = match me.idle.lock().map(|mut v| v.pop()).unwrap_or(None) {
                Some(s) => s,
                None => match Store::open_following(&me.location) {
                    Ok(Some(s)) => s,
                    Ok(None) => return Err(Failure::Store(format!("{} holds no store", me.shown))),
                    Err(e) => return Err(Failure::from(e)),
                },
            };
            let answer = work(&store, &me.shown);
            if !matches!(answer, Err(Failure::Store(_))) {
                if let Ok(mut v) = me.idle.lock() {
                    v.push(store);
                }
            }
            answer.map(|a| (a, t.elapsed().as_secs_f64() * 1e3))
        })
        .await;
        match done {
            Ok(Ok((answer, ms))) => answer.response(Some(ms)),
            Ok(Err(f)) => f.response(),
            Err(_) => Failure::Store("drawing the page failed".into()).response(),
        }
    }
}

/// `rtgauge serve --db STORE --listen ADDR`: the store opened and checked, the address bound,
/// then served until Ctrl-C or SIGTERM, when the process exits with status 0 at once. Bad input
/// is an error before anything is served.
pub fn serve(db: Option<&std::path::Path>, listen: &str) -> anyhow::Result<u8> {
    serve_text(db, listen).map_err(anyhow::Error::msg)
}

/// [`serve`], its failure as text.
fn serve_text(db: Option<&std::path::Path>, listen: &str) -> Result<u8, String> {
    let addr: SocketAddr = listen.parse().map_err(|_| {
        format!(
            "--listen {}: not an address and port; give e.g. 127.0.0.1:8080 or [::1]:8080 (0.0.0.0:8080 for every address)",
            crate::report::shown(listen)
        )
    })?;
    let location = db
        .map(Location::of)
        .or_else(crate::store::default_location)
        .ok_or_else(|| "no store: neither RTGAUGE_DB, XDG_DATA_HOME nor HOME is set; give --db PATH|URL".to_string())?;
    let none = || format!("no store at {}: rtgauge run keeps its runs there; give another with --db PATH|URL", location.shown());
    // (a file that is not there is none: nothing is made for a mistyped path)
    crate::store::open_existing(db)?.ok_or_else(none)?;
    // The dashboard's connections follow the store as runs are stored, and refuse any write.
    let store = Store::open_following(&location)?.ok_or_else(none)?;
    let shown = store.shown();
    let listener = std::net::TcpListener::bind(addr).map_err(|e| {
        format!("--listen {addr}: cannot listen there ({e}); give another address or port, e.g. --listen 127.0.0.1:8081")
    })?;
    let bound = listener.local_addr().map_err(|e| format!("--listen {addr}: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| format!("--listen {addr}: {e}"))?;
    let shared = Arc::new(Shared {
        location,
        shown: shown.clone(),
        idle: Mutex::new(vec![store]),
        slots: tokio::sync::Semaphore::new(POOL),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(POOL + 2)
        .thread_name("rtgauge-serve")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server's threads: {e}"))?;
    let kept = Arc::clone(&shared);
    let outcome = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| format!("--listen {addr}: {e}"))?;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| format!("cannot catch SIGTERM: {e}"))?;
        let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .map_err(|e| format!("cannot catch SIGINT: {e}"))?;
        crate::report::out::err_line(&format!(
            "rtgauge serve: the dashboard of {} at http://{bound}/ (read-only; Ctrl-C stops it)",
            crate::report::shown(&shown)
        ));
        if !bound.ip().to_canonical().is_loopback() {
            crate::report::out::err_line(&format!(
                "rtgauge serve: warning: listening on {bound}, not only on this machine: the dashboard has no \
                 authentication and is read-only; anyone who reaches this address reads every run in the store"
            ));
        }
        // What the allocator holds free goes back to the system now and then: the resident set
        // follows what the server holds (a page's strings), not what it once held.
        tokio::spawn(async {
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                let _ = tokio::task::spawn_blocking(crate::sys::mem::trim_heap).await;
            }
        });
        // The server keeps its own reference to what it shares, outside this future: when a
        // signal ends the wait below, dropping the accepting future never drops the last one
        // (and with it the store's connections) inside the runtime.
        let app = routes::router(Arc::clone(&kept));
        tokio::select! {
            _ = crate::http::accept(listener, app) => Ok(()),
            _ = term.recv() => Ok(()),
            _ = int.recv() => Ok(()),
        }
    });
    // At once, and without taking anything apart: open connections, pages being drawn and the
    // store's connections end with the process. (Dropping the store's PostgreSQL clients, each
    // with a runtime of its own, while the server's runtime stops could abort the process.)
    match outcome {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            // The runtime stopped first, then what it shared is let go, outside it.
            drop(runtime);
            drop(shared);
            Err(e)
        }
    }
}
