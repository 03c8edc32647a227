//! The HTTP/1 server under the routes: hyper, one task per connection (not a thread), at most
//! [`CONNECTIONS`] at once. A client has [`HEAD_WITHIN`] to send a request's head (a client that
//! sends half a request line and stops is closed then, as is an idle kept-alive connection); a
//! client that takes nothing of its answer for [`WRITE_STALL`] is closed ([`Stalls`]); a
//! connection lives at most [`LIFETIME`]. Pages are made whole before they are sent (see
//! `routes.rs`): a slow reader holds neither a store connection nor a thread, only its own
//! answer's bytes.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The most connections served at once; more wait in the listening socket's queue.
pub const CONNECTIONS: usize = 512;
/// How long a client has to send a request's head.
pub const HEAD_WITHIN: Duration = Duration::from_secs(10);
/// How long a client may take nothing of its answer before it is let go.
pub const WRITE_STALL: Duration = Duration::from_secs(20);
/// The longest a connection is kept.
pub const LIFETIME: Duration = Duration::from_secs(600);

/// What is told of a client let go because it took nothing of its answer (its address).
pub type OnStall = Arc<dyn Fn(std::net::SocketAddr) + Send + Sync>;

/// Accepts and serves connections until the process stops.
pub async fn accept(listener: tokio::net::TcpListener, app: Router) {
    accept_with(listener, app, None).await
}

/// [`accept`], telling `on_stall` of each client let go for taking nothing of its answer.
pub async fn accept_with(listener: tokio::net::TcpListener, app: Router, on_stall: Option<OnStall>) {
    let limit = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS));
    loop {
        let Ok(permit) = Arc::clone(&limit).acquire_owned().await else { return };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of file descriptors, a connection reset before it was taken: wait a little.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let told = on_stall.clone().map(|f| (f, peer));
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_WITHIN)
                .max_buf_size(64 * 1024)
                .serve_connection(TokioIo::new(Stalls { inner: stream, since: None, told }), service);
            let _ = tokio::time::timeout(LIFETIME, conn).await;
            drop(permit);
        });
    }
}

/// A client's connection whose writes fail once the client has taken nothing for
/// [`WRITE_STALL`] (its receive window full: it stopped reading).
struct Stalls {
    inner: TcpStream,
    /// Armed when a write could not go on, cleared when one does.
    since: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Who to tell when the client is let go (once), and the client's address.
    told: Option<(OnStall, std::net::SocketAddr)>,
}

impl Stalls {
    fn judge<T>(&mut self, cx: &mut Context<'_>, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match polled {
            Poll::Pending => {
                let deadline = self.since.get_or_insert_with(|| Box::pin(tokio::time::sleep(WRITE_STALL)));
                if deadline.as_mut().poll(cx).is_ready() {
                    if let Some((tell, peer)) = self.told.take() {
                        tell(peer);
                    }
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client takes nothing")));
                }
                Poll::Pending
            }
            done => {
                self.since = None;
                done
            }
        }
    }
}

impl AsyncRead for Stalls {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stalls {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let polled = Pin::new(&mut me.inner).poll_write(cx, buf);
        me.judge(cx, polled)
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let polled = Pin::new(&mut me.inner).poll_write_vectored(cx, bufs);
        me.judge(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let polled = Pin::new(&mut me.inner).poll_flush(cx);
        me.judge(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
