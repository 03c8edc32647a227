//! The HTTP/1 server under the routes: hyper, one task per connection (not a thread), at most
//! [`CONNECTIONS`] at once. A client has [`HEAD_WITHIN`] to send a request's head (a client that
//! sends half a request line and stops is closed then), and a connection lives at most
//! [`LIFETIME`] (a client that never reads its answer is let go then). Pages are made whole
//! before they are sent (see `routes.rs`): a slow reader holds neither a store connection nor a
//! thread, only its own answer's bytes.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;

/// The most connections served at once; more wait in the listening socket's queue.
pub const CONNECTIONS: usize = 512;
/// How long a client has to send a request's head.
pub const HEAD_WITHIN: Duration = Duration::from_secs(10);
/// The longest a connection is kept.
pub const LIFETIME: Duration = Duration::from_secs(600);

/// Accepts and serves connections until the process stops.
pub async fn accept(listener: tokio::net::TcpListener, app: Router) {
    let limit = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS));
    loop {
        let Ok(permit) = Arc::clone(&limit).acquire_owned().await else { return };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors, a connection reset before it was taken: wait a little.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_WITHIN)
                .max_buf_size(64 * 1024)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(LIFETIME, conn).await;
            drop(permit);
        });
    }
}
