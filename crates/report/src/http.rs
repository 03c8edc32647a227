//! The HTTP/1 server under the lab's two servers' routes (the dashboard, `serve`, and the live
//! metrics, `metrics`; below both, so that the measuring path does not reach the dashboard):
//! hyper, one task per connection (not a thread), at most
//! [`CONNECTIONS`] at once and [`PER_CLIENT`] of one client. A client has [`HEAD_WITHIN`] to
//! send a request's head ([`HEAD_WITHIN_BUSY`] near the cap; a client that
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
/// The most connections one client (an IPv4 address, an IPv6 /64) holds at once: more from it
/// are closed as soon as they are taken, so that one client cannot take every slot.
pub const PER_CLIENT: usize = 64;
/// How long a client has to send a request's head when the server is near its cap (fewer than
/// a quarter of its slots free): slots held by clients that send nothing come free sooner.
pub const HEAD_WITHIN_BUSY: Duration = Duration::from_secs(1);

/// What is told of a client let go because it took nothing of its answer (its address).
pub type OnStall = Arc<dyn Fn(std::net::SocketAddr) + Send + Sync>;

/// Accepts and serves connections until the process stops.
pub async fn accept(listener: tokio::net::TcpListener, app: Router) {
    accept_with(listener, app, None).await
}

/// [`accept`], telling `on_stall` of each client let go for taking nothing of its answer.
pub async fn accept_with(listener: tokio::net::TcpListener, app: Router, on_stall: Option<OnStall>) {
    let limit = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS));
    let clients = Clients::default();
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
        // One client over its share: closed at once, its slot free again.
        let Some(share) = clients.take(peer.ip()) else { continue };
        let head_within = if limit.available_permits() < CONNECTIONS / 4 { HEAD_WITHIN_BUSY } else { HEAD_WITHIN };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let told = on_stall.clone().map(|f| (f, peer));
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(head_within)
                .max_buf_size(64 * 1024)
                .serve_connection(TokioIo::new(Stalls { inner: stream, since: None, told }), service);
            let _ = tokio::time::timeout(LIFETIME, conn).await;
            drop(share);
            drop(permit);
        });
    }
}

/// How many connections each client holds ([`PER_CLIENT`] at most).
#[derive(Default, Clone)]
struct Clients(Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>);

/// A connection counted to its client until dropped.
struct Share {
    clients: Clients,
    client: std::net::IpAddr,
}

impl Clients {
    /// A client's address as counted: an IPv4 address (an IPv4-mapped IPv6 one as IPv4), an
    /// IPv6 address's /64 (one host is given a /64's many addresses; `::1` as itself).
    fn key(ip: std::net::IpAddr) -> std::net::IpAddr {
        match ip {
            std::net::IpAddr::V6(v6) if v6.is_loopback() => ip,
            std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => v4.into(),
                None => std::net::Ipv6Addr::from(v6.to_bits() & !((1u128 << 64) - 1)).into(),
            },
            v4 => v4,
        }
    }

    /// One more connection of `ip`'s client, unless it holds [`PER_CLIENT`] already.
    fn take(&self, ip: std::net::IpAddr) -> Option<Share> {
        let client = Clients::key(ip);
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = held.entry(client).or_insert(0);
        if *n >= PER_CLIENT {
            return None;
        }
        *n += 1;
        Some(Share { clients: self.clone(), client })
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut held = self.clients.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.client);
            }
        }
    }
}

/// Refuses, before any route sees it, what no route takes: a method other than GET and HEAD
/// (405, with the methods that are: `OPTIONS`, `CONNECT`, `POST`, ... on any path), and a
/// path or query whose percent-escapes are malformed (`%ZZ`, a `%` at the end) or do not
/// decode to UTF-8 (400).
pub async fn strict(req: axum::extract::Request) -> Result<axum::extract::Request, axum::response::Response> {
    use axum::http::{header, HeaderValue, Method, StatusCode};
    use axum::response::IntoResponse;
    let refuse = |status: StatusCode, line: String| {
        let mut r = (status, format!("{line}\n")).into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
        r
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} is not taken here: the server is read-only and answers GET and HEAD", req.method()),
        );
        r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Err(r);
    }
    let uri = req.uri();
    for (part, text) in [("path", uri.path()), ("query", uri.query().unwrap_or(""))] {
        if let Err(why) = check_escapes(text) {
            return Err(refuse(StatusCode::BAD_REQUEST, format!("the request's {part} {why}")));
        }
    }
    Ok(req)
}

/// Whether every `%` in `text` starts an escape of two hex digits, and what they decode to is
/// UTF-8.
fn check_escapes(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let Some(byte) =
                hex.filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit())).and_then(|h| u8::from_str_radix(h, 16).ok())
            else {
                let shown: String = text[i..].chars().take(3).collect();
                return Err(format!(
                    "has a malformed percent-escape '{}'; write a '%' as %25 and every escape as % and two hex digits",
                    crate::vocab::text::shown(&shown)
                ));
            };
            decoded.push(byte);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    std::str::from_utf8(&decoded).map(|_| ()).map_err(|_| "has percent-escapes that are not UTF-8 text".to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_two_hex_digits_of_utf_8() {
        for ok in ["", "/board/a%20b", "label=%E2%9C%93&x=1", "a+b", "%41%42", "/run/%2F"] {
            assert!(check_escapes(ok).is_ok(), "{ok}");
        }
        for (bad, word) in [("label=%ZZ", "'%ZZ'"), ("a%", "'%'"), ("a%4", "'%4'"), ("x=%FF", "UTF-8"), ("%C3%28", "UTF-8")] {
            let e = check_escapes(bad).unwrap_err();
            assert!(e.contains(word), "{bad}: {e}");
        }
    }

    #[test]
    fn a_client_holds_its_share_and_no_more() {
        let clients = Clients::default();
        let a: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let held: Vec<Share> = (0..PER_CLIENT).map(|_| clients.take(a).unwrap()).collect();
        assert!(clients.take(a).is_none());
        // The same client through an IPv4-mapped address; another client; another /64.
        assert!(clients.take("::ffff:127.0.0.1".parse().unwrap()).is_none());
        assert!(clients.take("127.0.0.2".parse().unwrap()).is_some());
        assert!(clients.take("::1".parse().unwrap()).is_some());
        let v6: Vec<Share> =
            (0..PER_CLIENT).map(|i| clients.take(format!("2001:db8::{i:x}").parse().unwrap()).unwrap()).collect();
        assert!(clients.take("2001:db8::ffff:1".parse().unwrap()).is_none());
        assert!(clients.take("2001:db8:0:1::1".parse().unwrap()).is_some());
        drop(held);
        assert!(clients.take(a).is_some());
        drop(v6);
        // Every connection let go: no client is counted any more.
        assert!(clients.0.lock().unwrap().is_empty());
    }
}
