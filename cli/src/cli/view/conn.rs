//! The view's connections (#47): accepted by a loop of its own rather than `axum::serve`,
//! which holds a connection for as long as its client likes and takes every connection
//! offered. A client that sends half a request head, or none, or reads none of its answer,
//! would hold a descriptor and the connection's buffers for ever; thousands of them fill the
//! descriptor limit, and then no one is answered.
//!
//! Here every wait on a client has a deadline, and the connections held at once a bound:
//!
//! - the head of a request must be whole within `Limits::head` of the connection's opening,
//!   or of the end of the answer before it on a connection kept alive (hyper's header timer,
//!   which it starts again once an answer is written: so it is the idle deadline too);
//! - an answer being written must make progress within `Limits::stall` (`Stalling`): a client
//!   that reads none of it for that long loses the connection;
//! - a head may be at most `Limits::head_bytes` (hyper's read buffer grows no further);
//! - at most `Limits::connections` are held at once. One more is answered a canned 503 at
//!   once, without waiting on it, and closed; the accept loop never waits on a client.

use std::convert::Infallible;
use std::future::Future as _;
use std::io::{self, Read as _};
use std::net::Shutdown;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

use super::{CONNECTIONS_MAX, HEAD_BYTES_MAX, HEAD_DEADLINE_MS, REQUESTS_MAX, STALL_DEADLINE_MS};

// hyper panics on a read buffer bound below 8 KiB; and with no more connections than requests
// answered at once, the requests' own bound (and its 503) would never be reached.
const _: () = assert!(HEAD_BYTES_MAX >= 8 * 1024 && CONNECTIONS_MAX > REQUESTS_MAX);

/// The most refused connections lingering at once (below). Past it a refused connection is
/// closed as soon as its 503 is written: a client that sends its head after that may see a
/// reset rather than the 503, but the descriptors held stay bounded.
const LINGERING_MAX: usize = 64;
/// How long a refused connection is kept, its 503 sent and its sending side shut, reading
/// what the client still sends. Closing a socket with bytes of the client's unread makes the
/// kernel send a reset, which may destroy the 503 before the client reads it (RFC 9112,
/// section 9.6, "tear-down").
const LINGER_MS: u64 = 1_000;
/// How long the accept loop waits after a failure of `accept` itself (out of descriptors or
/// memory) before it tries again: the connection waiting stays in the kernel's queue.
const ACCEPT_RETRY_MS: u64 = 100;
/// How often a failure of `accept` is said at most.
const ACCEPT_SAY_EVERY: Duration = Duration::from_secs(10);
/// The most bytes read off a refused connection before its 503 is written.
const REFUSED_READ_BYTES_MAX: usize = 64 * 1024;

/// What a connection may hold and how long it may wait on its client.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// The most connections held at once.
    pub connections: usize,
    /// How long a request's head may take, from the connection's opening or the answer before.
    pub head: Duration,
    /// How long an answer may wait on a client that takes none of it.
    pub stall: Duration,
    /// The most bytes of a request's head.
    pub head_bytes: usize,
}

impl Limits {
    /// The view's own, from its constants.
    pub const VIEW: Limits = Limits {
        connections: CONNECTIONS_MAX,
        head: Duration::from_millis(HEAD_DEADLINE_MS),
        stall: Duration::from_millis(STALL_DEADLINE_MS),
        head_bytes: HEAD_BYTES_MAX,
    };
}

/// Accepts connections for ever and serves `app` on each, within `limits`.
pub(super) async fn accept(listener: TcpListener, app: Router, limits: Limits) -> Infallible {
    assert!(
        limits.connections > 0 && limits.head_bytes >= 8 * 1024,
        "limits hyper and a semaphore take: {limits:?}"
    );
    let held = Arc::new(Semaphore::new(limits.connections));
    let lingering = Arc::new(Semaphore::new(LINGERING_MAX));
    let refusal = refusal(limits.connections);
    let mut said: Option<Instant> = None;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                failed_to_accept(&e, &mut said).await;
                continue;
            }
        };
        match Arc::clone(&held).try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(serve(stream, app.clone(), limits, permit));
            }
            Err(_) => refuse(stream, refusal.as_bytes(), &lingering),
        }
    }
}

/// Waits out a failure of `accept`, saying it at most once every `ACCEPT_SAY_EVERY`. A
/// connection the client gave up before it was taken is no failure of the server's.
async fn failed_to_accept(error: &io::Error, said: &mut Option<Instant>) {
    if matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    if said.is_none_or(|at| at.elapsed() >= ACCEPT_SAY_EVERY) {
        eprintln!("strata: cannot accept a connection ({error}); trying again");
        *said = Some(Instant::now());
    }
    tokio::time::sleep(Duration::from_millis(ACCEPT_RETRY_MS)).await;
}

/// Serves one connection until it ends, a deadline passes or its client goes; the permit
/// goes with it.
async fn serve(stream: TcpStream, app: Router, limits: Limits, permit: OwnedSemaphorePermit) {
    let _permit = permit;
    // An answer goes out as soon as it is written: with Nagle's algorithm its last segment
    // waited for the client's delayed ACK of the ones before, ~40 ms a survey on loopback.
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(Stalling::new(stream, limits.stall));
    // `max_buf_size` bounds the read buffer, so a head; of an answer it bounds only what hyper
    // copies before it writes (a body is queued whole, not copied), so no answer is refused.
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.head)
        .max_buf_size(limits.head_bytes)
        .serve_connection(io, TowerToHyperService::new(app));
    // An error here is the connection's end (a deadline passed, the client reset it, a head
    // hyper refused and answered itself): there is no one to tell but the client, who knows.
    let _ = connection.await;
}

/// The whole answer to a connection past the bound.
fn refusal(connections: usize) -> String {
    let line = format!("{connections} connections are open; try again\n");
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{line}",
        line.len()
    )
}

/// Answers a connection past the bound its 503 without waiting on it, and closes it (after a
/// linger, if one is free).
fn refuse(stream: TcpStream, refusal: &[u8], lingering: &Arc<Semaphore>) {
    let socket = socket2::SockRef::from(&stream);
    // Whatever has come of the request, so that closing sends a FIN, not a reset.
    let mut sink = [0; 4096];
    let mut read = 0;
    while read < REFUSED_READ_BYTES_MAX {
        match (&*socket).read(&mut sink) {
            Ok(n) if n > 0 => read += n,
            _ => break,
        }
    }
    // A new connection's send buffer is empty: the answer goes whole and at once (the socket
    // does not block), or the client is gone.
    let _ = socket.send(refusal);
    let _ = socket.shutdown(Shutdown::Write);
    if let Ok(permit) = Arc::clone(lingering).try_acquire_owned() {
        tokio::spawn(linger(stream, permit));
    }
}

/// Reads and drops what a refused client still sends, until it closes or `LINGER_MS`.
async fn linger(mut stream: TcpStream, permit: OwnedSemaphorePermit) {
    let _permit = permit;
    let mut sink = [0; 1024];
    let _ = tokio::time::timeout(Duration::from_millis(LINGER_MS), async {
        while stream.read(&mut sink).await.is_ok_and(|n| n > 0) {}
    })
    .await;
}

/// A connection whose writes fail once its client has taken nothing of them for `stall`:
/// hyper waits on a write for as long as the client does not read, with the answer in
/// memory, and its header timer does not run meanwhile.
struct Stalling {
    stream: TcpStream,
    stall: Duration,
    /// The stall's timer, made at the first write that waits and reused after.
    timer: Option<Pin<Box<Sleep>>>,
    /// Whether a write is waiting on the client now (the timer is running).
    waiting: bool,
}

impl Stalling {
    fn new(stream: TcpStream, stall: Duration) -> Stalling {
        Stalling {
            stream,
            stall,
            timer: None,
            waiting: false,
        }
    }

    /// A write's `polled` outcome, or a time-out once writes have waited `stall` in a row.
    fn progress<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.waiting = false;
            return polled;
        }
        let stall = self.stall;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
        if !self.waiting {
            timer.as_mut().reset(tokio::time::Instant::now() + stall);
            self.waiting = true;
        }
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing of its answer for {:?}", self.stall),
            )));
        }
        Poll::Pending
    }
}

impl AsyncRead for Stalling {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stalling {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.progress(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.progress(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_flush(cx);
        self.progress(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_shutdown(cx);
        self.progress(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_one_whole_answer_of_one_line() {
        let refusal = refusal(256);
        let (head, body) = refusal.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "), "{head}");
        assert!(head.contains("\r\nconnection: close"), "{head}");
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(length, body.len(), "the length it says is the body's");
        assert_eq!(body, "256 connections are open; try again\n");
    }
}
