//! Connection hygiene: how every front of shardgate (the gateway, its valet listener and the
//! standalone gatekeeper) accepts, serves and closes client connections, so that no client can
//! hold a connection, or the process's file descriptors, without bound.
//!
//! - **Header deadline** (`limits.header_read_timeout`): a request's head (request line and
//!   headers) must arrive in full within this time of its first byte (for a connection's first
//!   request, of the connection's opening); otherwise the connection is closed without an answer.
//! - **Idle deadline** (`limits.keep_alive_idle_timeout`): a keep-alive connection with no
//!   request in progress is closed after this long. A request is in progress from the end of its
//!   head until the last byte of its response is handed to the socket, so a blob transfer of an
//!   hour is never idle; its length is bounded by the route deadlines instead.
//! - **Cap** (`limits.max_connections`, shared by every listener of the process): when that many
//!   connections are open, the accept loop holds the connection it has just accepted (the next
//!   ones wait in the kernel's listen backlog), and asks every connection with no request in
//!   progress (idle, or still sending a head) that has waited for a request for
//!   `CROWDED_GRACE` or more to close, so that a crowd of idle or half-sent connections cannot
//!   keep new clients, or the probes, out. Connections with a request in progress are never
//!   closed to make room. The default cap is derived from the open-file limit, which
//!   [`Connections::new`] first raises to its hard limit, with a reserve left for databases,
//!   Redis and files.
//!
//! hyper's own `header_read_timeout` is not used: its clock starts when hyper begins waiting for
//! a head, which on a keep-alive connection is right after the previous response, so it would
//! bound the idle time between requests by the header deadline. The two deadlines are kept here
//! instead, by a watcher in each connection's task that reads what the socket and the service
//! record (`Activity`).
//!
//! **Request heads hyper refuses.** hyper reads a request head (request line and header fields)
//! of at most [`MAX_HEAD_BYTES`] with at most 100 header fields (its default), and answers a
//! larger one (431), an over-long URI (414) or a head that is not HTTP/1.1 (400) itself, before
//! any service runs, with an empty body, then closes the connection. Every error the gateway
//! sends being problem+json, the socket wrapper (`WatchedStream`) holds back such an automatic
//! answer (a write, while no request is in progress, of nothing but a 400, 414 or 431 head with
//! `content-length: 0`); when the connection then ends with hyper's parse error, a problem
//! (`invalid_request`, `uri_too_long`, `headers_too_large`) is sent in its place
//! (`refuse_head`), the write side is shut and what the client still sends is read away for up
//! to `LINGER` so that its answer is not lost to a reset. If hyper carries on instead (the write
//! was the tail of a response that merely looked like one), the held bytes go out unchanged
//! before anything else.
//!
//! **TLS** (a listener with `tls`, see [`crate::server::tls`]): the handshake runs in the
//! connection's task, before HTTP, and counts as part of the first request's head: it must end
//! within the header deadline of the connection's opening (else `header_timeout`), and a
//! connection still shaking hands may be closed to make room like one still sending its head. A
//! handshake that fails closes the connection.
//!
//! **PROXY protocol** (`proxy_protocol`, see [`crate::server::proxy_protocol`]): a connection's
//! first twelve bytes are looked at (without taking them) before TLS and HTTP. From a trusted
//! proxy, a PROXY v2 header is read in full (at most
//! [`MAX_HEADER_BYTES`](crate::server::proxy_protocol::MAX_HEADER_BYTES)) and its source becomes
//! the connection's client; from any other peer, one closes the connection (a client must not
//! name its own address). The header counts as part of the first request's head: it must arrive
//! within the header deadline of the connection's opening (else `header_timeout`), and a
//! connection still sending it may be closed to make room. A refused header is counted as
//! `proxy_header_refused`.
//!
//! Connections speak HTTP/1.1 with keep-alive (as `axum::serve` did here: HTTP/2 is not enabled).
//! Each request carries its peer address as [`ConnectInfo<SocketAddr>`](ConnectInfo) and its
//! client's as [`ClientAddress`] (see [`crate::server::client_address`]). On shutdown
//! the listeners stop accepting, connections with no request in progress are closed, and requests
//! in progress get up to [`DRAIN_TIMEOUT`] to finish (their connections close after them).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::http::header::{CONNECTION, CONTENT_LENGTH, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderValue, Request, Response};
use axum::response::IntoResponse;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Instant;
use tokio_rustls::server::TlsStream;
use tower::ServiceExt;

use crate::config::LimitsConfig;
use crate::observability::rate_limited_warning::RateLimitedWarning;
use crate::server::body_arrival::{Arrival, Arrived};
use crate::server::client_address::{ClientAddress, ClientNamedByGatekeeper, Proxied, ProxyTrust};
use crate::server::edge::{REQUEST_ID, random_request_id};
use crate::server::proxy_protocol::read_proxy_header;
use crate::server::tls::ServerTls;
use crate::wire::error::{ApiError, Code};

/// How long a shutdown waits for requests in progress.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest request head (request line and header fields) read, in bytes: a larger one is
/// answered 431 `headers_too_large`.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// After answering a head hyper refused, how long the client's remaining bytes are read away
/// before the connection closes (closing with unread bytes would reset it, and the client might
/// lose the answer), and how many bytes at most.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 1 << 20;

/// The longest automatic answer of hyper's that is held back (its head is about 120 bytes).
const MAX_AUTOMATIC_ANSWER: usize = 512;

/// The largest default cap on open connections, whatever the open-file limit allows: each
/// connection costs memory too (its task and buffers: about 20 KiB for one held open without a
/// request, measured by `bench/connections.sh`), so 32,768 of them take about 700 MiB.
pub const MAX_DEFAULT_CONNECTIONS: usize = 32_768;

/// The cap on open connections when the open-file limit cannot be read (not a Unix system).
const FALLBACK_MAX_CONNECTIONS: usize = 10_000;

/// While every connection slot is taken, how often the accept loop asks idle connections again
/// to close (a connection that was busy at the last call may have become idle since).
const CROWDED_RETRY: Duration = Duration::from_millis(100);

/// How long the accept loop pauses after an accept error that is not one connection's own (out
/// of file descriptors or memory), after asking idle connections to close.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// When every slot is taken, a connection with no request in progress is closed to make room
/// only once it has waited this long for a request head: a client that has just connected (or
/// just been answered) gets this long to send its request.
const CROWDED_GRACE: Duration = Duration::from_millis(100);

/// The least time between two warnings about a full connection table or failing accepts.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Why a connection was closed by the gateway rather than by its client (the `reason` label of
/// `shardgate_connections_closed_total`).
const CLOSE_REASONS: [&str; 4] = ["header_timeout", "idle_timeout", "crowded_out", "proxy_header_refused"];

/// Labels of the closed-connections counter (a closed set: [`CLOSE_REASONS`]).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CloseLabels {
    reason: &'static str,
}

/// The connection limits of one process, shared by all its listeners: clone it for each.
#[derive(Debug, Clone)]
pub struct Connections {
    shared: Arc<Shared>,
    /// Which peers are trusted proxies, and whether they send PROXY headers.
    trust: Arc<ProxyTrust>,
}

/// What the accept loops and the connection tasks share.
#[derive(Debug)]
struct Shared {
    /// One permit per connection that may be open.
    slots: Arc<Semaphore>,
    max_connections: usize,
    deadlines: Deadlines,
    /// Wakes every connection's watcher; those with no request in progress that have waited
    /// past [`CROWDED_GRACE`] close.
    crowded: Notify,
    open: Gauge,
    closed_header_timeout: Counter,
    closed_idle_timeout: Counter,
    closed_crowded_out: Counter,
    closed_proxy_refused: Counter,
    /// Warnings about a full connection table or failing accepts, at most one per [`WARN_EVERY`].
    warning: RateLimitedWarning,
}

/// The two deadlines of a connection with no request in progress.
#[derive(Debug, Clone, Copy)]
struct Deadlines {
    header_read: Duration,
    keep_alive_idle: Duration,
}

impl Connections {
    /// The limits of `limits` (see the module documentation), with
    /// `shardgate_connections_open`, `shardgate_connections_max` and
    /// `shardgate_connections_closed_total{reason}` registered in `registry`. Raises the
    /// process's soft open-file limit to its hard limit first. Fails on a zero timeout or cap.
    pub fn new(limits: &LimitsConfig, registry: &mut Registry) -> anyhow::Result<Self> {
        if limits.header_read_timeout.is_zero() {
            anyhow::bail!("limits.header_read_timeout must be more than 0");
        }
        if limits.keep_alive_idle_timeout.is_zero() {
            anyhow::bail!("limits.keep_alive_idle_timeout must be more than 0");
        }
        if limits.max_connections == Some(0) {
            anyhow::bail!("limits.max_connections must be more than 0");
        }
        let open_files = raise_open_file_limit();
        let max_connections = resolve_max_connections(limits.max_connections, open_files);
        tracing::info!(
            max_connections,
            open_file_limit = open_files,
            header_read_timeout_ms = limits.header_read_timeout.as_millis() as u64,
            keep_alive_idle_timeout_ms = limits.keep_alive_idle_timeout.as_millis() as u64,
            "connection limits"
        );
        let open = Gauge::default();
        registry.register("connections_open", "Client connections open now", open.clone());
        let max = Gauge::<i64>::default();
        max.set(i64::try_from(max_connections).unwrap_or(i64::MAX));
        registry.register("connections_max", "Most client connections open at once (limits.max_connections)", max);
        let closed = Family::<CloseLabels, Counter>::default();
        let [header_timeout, idle_timeout, crowded_out, proxy_refused] =
            CLOSE_REASONS.map(|reason| closed.get_or_create(&CloseLabels { reason }).clone());
        registry.register(
            "connections_closed",
            "Client connections closed by the gateway, by reason (header_timeout, idle_timeout, crowded_out, \
             proxy_header_refused)",
            closed,
        );
        Ok(Self {
            shared: Arc::new(Shared {
                slots: Arc::new(Semaphore::new(max_connections)),
                max_connections,
                deadlines: Deadlines {
                    header_read: limits.header_read_timeout,
                    keep_alive_idle: limits.keep_alive_idle_timeout,
                },
                crowded: Notify::new(),
                open,
                closed_header_timeout: header_timeout,
                closed_idle_timeout: idle_timeout,
                closed_crowded_out: crowded_out,
                closed_proxy_refused: proxy_refused,
                warning: RateLimitedWarning::new(WARN_EVERY),
            }),
            trust: Arc::new(ProxyTrust::default()),
        })
    }

    /// These limits, reading clients' addresses as `trust` says (by default, every client is
    /// its peer).
    pub fn trusting(self, trust: ProxyTrust) -> Self {
        Self { trust: Arc::new(trust), ..self }
    }

    /// Serves `router` on `listener` (over TLS with `tls`) until `shutdown` completes; then stops
    /// accepting, closes idle connections and lets requests in progress finish (up to
    /// [`DRAIN_TIMEOUT`]). Each listener may hold one accepted connection beyond the cap while
    /// it waits for a slot.
    pub async fn serve_until(
        &self,
        listener: TcpListener,
        router: Router,
        tls: Option<ServerTls>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) {
        let (drain, draining) = watch::channel(false);
        let mut shutdown = pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                biased;
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        self.accept_failed(&error).await;
                        continue;
                    }
                },
            };
            // Only a connection that is there asks for room: with every slot taken, it waits
            // here (the next ones in the listen backlog) while idle connections close.
            let slot = tokio::select! {
                biased;
                () = &mut shutdown => break,
                slot = self.slot() => slot,
            };
            let connection = Connection { shared: self.shared.clone(), trust: self.trust.clone(), peer, _slot: slot };
            tokio::spawn(connection.serve(stream, tls.clone(), router.clone(), draining.clone()));
        }
        drop(listener);
        let _ = drain.send(true);
        drop(draining);
        if tokio::time::timeout(DRAIN_TIMEOUT, drain.closed()).await.is_err() {
            tracing::warn!(timeout_s = DRAIN_TIMEOUT.as_secs(), "in-flight requests did not finish in time; exiting");
        }
    }

    /// A free connection slot. While there is none, asks the connections with no request in
    /// progress to close (again every [`CROWDED_RETRY`]) and waits for one to.
    async fn slot(&self) -> OwnedSemaphorePermit {
        let shared = &self.shared;
        loop {
            if let Ok(slot) = shared.slots.clone().try_acquire_owned() {
                return slot;
            }
            shared.crowded.notify_waiters();
            if shared.warning.due() {
                tracing::warn!(
                    max_connections = shared.max_connections,
                    "every connection slot is taken: closing connections with no request in progress"
                );
            }
            if let Ok(Ok(slot)) = tokio::time::timeout(CROWDED_RETRY, shared.slots.clone().acquire_owned()).await {
                return slot;
            }
        }
    }

    /// Handles an accept error: one connection's own failure is skipped; anything else (out of
    /// file descriptors or memory) is logged, idle connections are asked to close, and the loop
    /// pauses briefly before accepting again.
    async fn accept_failed(&self, error: &io::Error) {
        if matches!(
            error.kind(),
            io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
        ) {
            return;
        }
        self.shared.crowded.notify_waiters();
        if self.shared.warning.due() {
            tracing::error!(error = %error, "cannot accept connections: closing connections with no request in progress");
        }
        tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
    }
}

/// The cap in force: the configured one, or one derived from the open-file limit, never more
/// than that limit leaves after its reserve.
fn resolve_max_connections(configured: Option<usize>, open_files: Option<u64>) -> usize {
    let ceiling = open_files.map(connection_ceiling);
    match (configured, ceiling) {
        (Some(wanted), Some(ceiling)) if wanted > ceiling => {
            tracing::warn!(
                max_connections = wanted,
                open_file_limit = open_files,
                lowered_to = ceiling,
                "limits.max_connections is more than the open-file limit allows; lowered"
            );
            ceiling
        }
        (Some(wanted), _) => wanted,
        (None, Some(ceiling)) => ceiling.min(MAX_DEFAULT_CONNECTIONS),
        (None, None) => FALLBACK_MAX_CONNECTIONS,
    }
}

/// How many connections an open-file limit of `open_files` allows: the limit less a reserve of a
/// quarter of it (at least 64, at most 8192) for databases, Redis, the listeners and files; at
/// least 1.
fn connection_ceiling(open_files: u64) -> usize {
    let reserve = (open_files / 4).clamp(64, 8192);
    let ceiling = open_files.saturating_sub(reserve).max(1);
    usize::try_from(ceiling).unwrap_or(usize::MAX)
}

/// Raises the soft open-file limit (`RLIMIT_NOFILE`) to the hard limit and returns the soft limit
/// then in force (`None` if it cannot be read or is unlimited).
#[cfg(unix)]
fn raise_open_file_limit() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if let (Some(current), Some(maximum)) = (limit.current, limit.maximum)
        && current < maximum
    {
        match setrlimit(Resource::Nofile, Rlimit { current: Some(maximum), maximum: Some(maximum) }) {
            Ok(()) => tracing::debug!(from = current, to = maximum, "raised the open-file limit"),
            Err(e) => tracing::warn!(error = %e, current, maximum, "cannot raise the open-file limit"),
        }
    }
    getrlimit(Resource::Nofile).current
}

/// Not a Unix system: the open-file limit is not known.
#[cfg(not(unix))]
fn raise_open_file_limit() -> Option<u64> {
    None
}

/// One accepted connection: holds its slot until its task ends.
#[derive(Debug)]
struct Connection {
    shared: Arc<Shared>,
    trust: Arc<ProxyTrust>,
    peer: SocketAddr,
    _slot: OwnedSemaphorePermit,
}

impl Connection {
    /// Serves HTTP/1.1 on `stream` until the client closes it, a deadline passes, the connection
    /// is asked to make room while it has no request in progress, or `draining` turns (at once
    /// with no request in progress, else once the request in progress has been answered).
    async fn serve(
        self,
        stream: TcpStream,
        tls: Option<ServerTls>,
        router: Router,
        mut draining: watch::Receiver<bool>,
    ) {
        self.shared.open.inc();
        let activity = Arc::new(Activity::new());
        let mut stream = stream;
        let proxied = if self.trust.proxy_protocol() {
            match self.proxy_preamble(&mut stream, &activity, &mut draining).await {
                Some(proxied) => proxied,
                None => {
                    self.shared.open.dec();
                    return;
                }
            }
        } else {
            Proxied::NotAsked
        };
        let stream = match tls {
            None => ClientStream::Plain(stream),
            Some(acceptor) => match self.handshake(&acceptor, stream, &activity, &mut draining).await {
                Some(stream) => ClientStream::Tls(Box::new(stream)),
                None => {
                    self.shared.open.dec();
                    return;
                }
            },
        };
        let io = TokioIo::new(WatchedStream::new(stream, activity.clone()));
        let service = ConnectionService {
            router,
            peer: self.peer,
            proxied,
            trust: self.trust.clone(),
            activity: activity.clone(),
        };
        // hyper's own header timeout is off: the watcher below keeps both deadlines.
        let mut connection = hyper::server::conn::http1::Builder::new()
            .keep_alive(true)
            .header_read_timeout(None::<Duration>)
            .max_header_size(MAX_HEAD_BYTES)
            .serve_connection(io, service);
        let mut shutting_down = false;
        let mut ended = None;
        let deadlines = self.shared.deadlines;
        loop {
            let check = activity.instant(activity.next_check(deadlines, activity.now()));
            tokio::select! {
                served = Pin::new(&mut connection) => {
                    if let Err(e) = &served {
                        tracing::debug!(peer = %self.peer, error = %e, "connection ended with an error");
                    }
                    ended = Some(served.err().is_some_and(|e| e.is_parse()));
                    break;
                }
                () = tokio::time::sleep_until(check) => match activity.expired(deadlines, activity.now()) {
                    Some(Expired::Header) => {
                        self.shared.closed_header_timeout.inc();
                        tracing::debug!(peer = %self.peer, "closing a connection: request head not received in time");
                        break;
                    }
                    Some(Expired::Idle) => {
                        self.shared.closed_idle_timeout.inc();
                        tracing::debug!(peer = %self.peer, "closing an idle keep-alive connection");
                        break;
                    }
                    None => {}
                },
                () = self.shared.crowded.notified() => {
                    if activity.waiting_longer_than(CROWDED_GRACE, activity.now()) {
                        self.shared.closed_crowded_out.inc();
                        tracing::debug!(peer = %self.peer, "closing a connection with no request in progress to make room");
                        break;
                    }
                }
                _ = draining.changed(), if !shutting_down => {
                    if activity.is_idle() {
                        break;
                    }
                    // The request in progress is answered, then the connection closes.
                    shutting_down = true;
                    Pin::new(&mut connection).graceful_shutdown();
                }
            }
        }
        if let Some(parse_error) = ended {
            let stream = connection.into_parts().io.into_inner();
            if stream.held.is_some() {
                stream.finish(parse_error).await;
            }
        }
        self.shared.open.dec();
    }
}

impl Connection {
    /// With `proxy_protocol`, before TLS and HTTP: what the peer's PROXY header says, within the
    /// header deadline of the connection's opening. `None` (the connection closes) for a header
    /// from a peer that is not a trusted proxy, a malformed or over-long one, one not in time, a
    /// connection asked to make room, a listener that drains, or a client gone.
    async fn proxy_preamble(
        &self,
        stream: &mut TcpStream,
        activity: &Activity,
        draining: &mut watch::Receiver<bool>,
    ) -> Option<Proxied> {
        let deadline = activity.instant(millis(self.shared.deadlines.header_read));
        let trusted = self.trust.trusts(self.peer.ip());
        let mut read = pin!(read_proxy_header(stream, trusted));
        loop {
            tokio::select! {
                read = &mut read => {
                    return match read {
                        Ok(Ok(proxied)) => Some(proxied),
                        Ok(Err(refused)) => {
                            self.shared.closed_proxy_refused.inc();
                            tracing::debug!(peer = %self.peer, reason = %refused, "closing a connection: PROXY header refused");
                            None
                        }
                        Err(e) => {
                            tracing::debug!(peer = %self.peer, error = %e, "connection ended before its PROXY header");
                            None
                        }
                    };
                }
                () = tokio::time::sleep_until(deadline) => {
                    self.shared.closed_header_timeout.inc();
                    tracing::debug!(peer = %self.peer, "closing a connection: PROXY header not received in time");
                    return None;
                }
                () = self.shared.crowded.notified() => {
                    if activity.waiting_longer_than(CROWDED_GRACE, activity.now()) {
                        self.shared.closed_crowded_out.inc();
                        tracing::debug!(peer = %self.peer, "closing a connection still sending its PROXY header to make room");
                        return None;
                    }
                }
                _ = draining.changed() => return None,
            }
        }
    }

    /// The TLS handshake, within the header deadline of the connection's opening; `None` when
    /// it failed, timed out, the connection was asked to make room, or the listener drains.
    async fn handshake(
        &self,
        acceptor: &ServerTls,
        stream: TcpStream,
        activity: &Activity,
        draining: &mut watch::Receiver<bool>,
    ) -> Option<TlsStream<TcpStream>> {
        let deadline = activity.instant(millis(self.shared.deadlines.header_read));
        let mut accept = pin!(acceptor.accept(stream));
        loop {
            tokio::select! {
                accepted = &mut accept => {
                    return match accepted {
                        Ok(stream) => Some(stream),
                        Err(e) => {
                            tracing::debug!(peer = %self.peer, error = %e, "TLS handshake failed");
                            None
                        }
                    };
                }
                () = tokio::time::sleep_until(deadline) => {
                    self.shared.closed_header_timeout.inc();
                    tracing::debug!(peer = %self.peer, "closing a connection: TLS handshake not done in time");
                    return None;
                }
                () = self.shared.crowded.notified() => {
                    if activity.waiting_longer_than(CROWDED_GRACE, activity.now()) {
                        self.shared.closed_crowded_out.inc();
                        tracing::debug!(peer = %self.peer, "closing a connection still shaking hands to make room");
                        return None;
                    }
                }
                _ = draining.changed() => return None,
            }
        }
    }
}

/// A client's socket: plain TCP, or TLS over it.
#[derive(Debug)]
enum ClientStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for ClientStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(stream) => Pin::new(stream).poll_read(cx, buf),
            ClientStream::Tls(stream) => Pin::new(stream.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ClientStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientStream::Plain(stream) => Pin::new(stream).poll_write(cx, buf),
            ClientStream::Tls(stream) => Pin::new(stream.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientStream::Plain(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            ClientStream::Tls(stream) => Pin::new(stream.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            ClientStream::Plain(stream) => stream.is_write_vectored(),
            ClientStream::Tls(stream) => stream.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(stream) => Pin::new(stream).poll_flush(cx),
            ClientStream::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(stream) => Pin::new(stream).poll_shutdown(cx),
            ClientStream::Tls(stream) => Pin::new(stream.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The problem that replaces hyper's empty automatic answer of `status` to a request head it
/// refused, as bytes to write (with `Connection: close`).
async fn refuse_head(status: u16) -> Vec<u8> {
    let (code, detail) = match status {
        414 => (Code::UriTooLong, "the request target is too long"),
        431 => (Code::HeadersTooLarge, "the request head is larger than 64 KiB or has more than 100 header fields"),
        _ => (Code::InvalidRequest, "the request head is not valid HTTP/1.1"),
    };
    let (parts, body) = ApiError::new(code, detail).into_response().into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let mut answer = Vec::with_capacity(256 + body.len());
    answer.extend_from_slice(b"HTTP/1.1 ");
    answer.extend_from_slice(parts.status.as_str().as_bytes());
    answer.push(b' ');
    answer.extend_from_slice(parts.status.canonical_reason().unwrap_or("Error").as_bytes());
    answer.extend_from_slice(b"\r\n");
    let mut headers = parts.headers;
    headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REQUEST_ID, random_request_id());
    for (name, value) in &headers {
        answer.extend_from_slice(name.as_str().as_bytes());
        answer.extend_from_slice(b": ");
        answer.extend_from_slice(value.as_bytes());
        answer.extend_from_slice(b"\r\n");
    }
    answer.extend_from_slice(b"\r\n");
    answer.extend_from_slice(&body);
    answer
}

/// The status of `written` if it is nothing but hyper's automatic answer to a request head it
/// refused: a 400, 414 or 431 head with `content-length: 0` and no body.
fn automatic_answer(written: &[u8]) -> Option<u16> {
    if written.len() > MAX_AUTOMATIC_ANSWER || !written.ends_with(b"\r\n\r\n") {
        return None;
    }
    let rest = written.strip_prefix(b"HTTP/1.1 ").or_else(|| written.strip_prefix(b"HTTP/1.0 "))?;
    let status = match rest.get(..4)? {
        b"400 " => 400,
        b"414 " => 414,
        b"431 " => 431,
        _ => return None,
    };
    written.windows(21).any(|w| w.eq_ignore_ascii_case(b"\r\ncontent-length: 0\r\n")).then_some(status)
}

/// Which deadline a connection missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expired {
    /// A request head did not arrive in full in time.
    Header,
    /// No request came in time.
    Idle,
}

/// No time recorded.
const NEVER: u64 = u64::MAX;

/// What one connection is doing, as its watcher needs to know. The socket wrapper
/// ([`WatchedStream`]) records bytes received, the service ([`ConnectionService`]) requests
/// starting and (through [`InProgress`]) finishing. Times are milliseconds since `opened`; the
/// decisions take the time as an argument ([`Activity::now`] in service), so tests give theirs.
#[derive(Debug)]
struct Activity {
    opened: Instant,
    /// Requests whose head has been read and whose response has not been sent in full.
    in_progress: AtomicU32,
    /// When the connection last had no request in progress left.
    idle_since: AtomicU64,
    /// When the first byte of the next request's head arrived while no request was in progress,
    /// or [`NEVER`]. A new connection starts at 0: its first head is due within the header
    /// deadline of its opening.
    head_since: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            opened: Instant::now(),
            in_progress: AtomicU32::new(0),
            idle_since: AtomicU64::new(0),
            head_since: AtomicU64::new(0),
        }
    }

    /// Milliseconds since the connection opened.
    fn now(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(NEVER - 1)
    }

    /// The instant `at` milliseconds after the connection opened.
    fn instant(&self, at: u64) -> Instant {
        self.opened + Duration::from_millis(at)
    }

    /// Bytes arrived on the socket at `now`: with no request in progress they start a head.
    fn received(&self, now: u64) {
        if self.in_progress.load(Ordering::Relaxed) == 0 && self.head_since.load(Ordering::Relaxed) == NEVER {
            self.head_since.store(now, Ordering::Relaxed);
        }
    }

    /// A request's head has been read.
    fn request_started(&self) {
        self.in_progress.fetch_add(1, Ordering::Relaxed);
        self.head_since.store(NEVER, Ordering::Relaxed);
    }

    /// A request's response has been sent in full (or abandoned) at `now`.
    fn request_finished(&self, now: u64) {
        if self.in_progress.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.idle_since.store(now, Ordering::Relaxed);
        }
    }

    /// No request in progress.
    fn is_idle(&self) -> bool {
        self.in_progress.load(Ordering::Relaxed) == 0
    }

    /// When the connection started waiting for the next request's head: since it opened, since
    /// its last response, or since the head's first byte, whichever applies.
    fn waiting_since(&self) -> u64 {
        match self.head_since.load(Ordering::Relaxed) {
            NEVER => self.idle_since.load(Ordering::Relaxed),
            head_since => head_since,
        }
    }

    /// Whether, at `now`, no request is in progress and the connection has waited for the next
    /// request's head for `grace` or longer.
    fn waiting_longer_than(&self, grace: Duration, now: u64) -> bool {
        self.is_idle() && now >= self.waiting_since().saturating_add(millis(grace))
    }

    /// The deadline a connection with no request in progress has missed at `now`, if any.
    fn expired(&self, deadlines: Deadlines, now: u64) -> Option<Expired> {
        if !self.is_idle() {
            return None;
        }
        let head_since = self.head_since.load(Ordering::Relaxed);
        if head_since != NEVER {
            (now >= head_since.saturating_add(millis(deadlines.header_read))).then_some(Expired::Header)
        } else {
            let idle_since = self.idle_since.load(Ordering::Relaxed);
            (now >= idle_since.saturating_add(millis(deadlines.keep_alive_idle))).then_some(Expired::Idle)
        }
    }

    /// When (in milliseconds since opening) the watcher looks next, asked at `now`: at the
    /// deadline now running, and at least once per the shorter deadline, so that a head starting
    /// (or a request ending) in between is timed from when it happened.
    fn next_check(&self, deadlines: Deadlines, now: u64) -> u64 {
        let recheck = now.saturating_add(millis(deadlines.header_read.min(deadlines.keep_alive_idle)));
        let due = if self.is_idle() {
            let head_since = self.head_since.load(Ordering::Relaxed);
            if head_since != NEVER {
                head_since.saturating_add(millis(deadlines.header_read))
            } else {
                self.idle_since.load(Ordering::Relaxed).saturating_add(millis(deadlines.keep_alive_idle))
            }
        } else {
            recheck
        };
        due.min(recheck)
    }
}

/// A duration in whole milliseconds (at least 1).
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(NEVER - 1).max(1)
}

/// Marks one request in progress on its connection until dropped (with the response's body, or
/// with the response future if the connection ends first).
#[derive(Debug)]
struct InProgress(Arc<Activity>);

impl InProgress {
    fn start(activity: Arc<Activity>) -> Self {
        activity.request_started();
        Self(activity)
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.request_finished(self.0.now());
    }
}

/// The client socket, recording in [`Activity`] when bytes arrive, and holding back hyper's
/// automatic answer to a request head it refused (see the module documentation).
#[derive(Debug)]
struct WatchedStream {
    stream: ClientStream,
    activity: Arc<Activity>,
    held: Option<Held>,
}

/// A write held back: what looks like hyper's automatic answer of `status`.
#[derive(Debug)]
struct Held {
    status: u16,
    bytes: Vec<u8>,
    sent: usize,
}

impl WatchedStream {
    fn new(stream: ClientStream, activity: Arc<Activity>) -> Self {
        Self { stream, activity, held: None }
    }

    /// Holds `written` back if it is hyper's automatic answer to a refused head, written while no
    /// request is in progress (hyper answers a head only after its service has been called).
    fn hold(&mut self, written: &[u8]) -> bool {
        if self.held.is_some() || !self.activity.is_idle() {
            return false;
        }
        let Some(status) = automatic_answer(written) else { return false };
        self.held = Some(Held { status, bytes: written.to_vec(), sent: 0 });
        true
    }

    /// Sends the held bytes unchanged: hyper carried on, so they were not a refusal.
    fn poll_release(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some(held) = &mut self.held {
            if held.sent == held.bytes.len() {
                self.held = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.stream).poll_write(cx, &held.bytes[held.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            held.sent += n;
        }
        Poll::Ready(Ok(()))
    }

    /// The connection has ended with something held: a problem in place of hyper's answer if it
    /// ended on a head hyper refused (`parse_error`), else the held bytes; then the write side is
    /// shut and the client's remaining bytes are read away for up to [`LINGER`].
    async fn finish(mut self, parse_error: bool) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let Some(held) = self.held.take() else { return };
        let answer = if parse_error { refuse_head(held.status).await } else { held.bytes[held.sent..].to_vec() };
        let stream = &mut self.stream;
        let linger = async {
            stream.write_all(&answer).await?;
            stream.shutdown().await?;
            let mut discarded = 0;
            let mut scratch = [0u8; 4096];
            while discarded < LINGER_BYTES {
                match stream.read(&mut scratch).await? {
                    0 => break,
                    n => discarded += n,
                }
            }
            io::Result::Ok(())
        };
        let _ = tokio::time::timeout(LINGER, linger).await;
    }
}

impl AsyncRead for WatchedStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_release(cx))?;
        let before = buf.filled().len();
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.activity.received(this.activity.now());
        }
        read
    }
}

impl AsyncWrite for WatchedStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_release(cx))?;
        if this.hold(buf) {
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut this.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_release(cx))?;
        let mut written = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(only), None) = (written.next(), written.next())
            && this.hold(only)
        {
            return Poll::Ready(Ok(only.len()));
        }
        Pin::new(&mut this.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    /// Held bytes stay held: the connection's next step (or its end) decides what goes out.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    /// With bytes held, the write side stays open: [`WatchedStream::finish`] sends and shuts it.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.held.is_some() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.stream).poll_shutdown(cx)
    }
}

/// The router as one connection's hyper service: each request gets the peer address as
/// [`ConnectInfo`] and its client's as [`ClientAddress`], and is marked in progress until its
/// response has been sent.
#[derive(Debug, Clone)]
struct ConnectionService {
    router: Router,
    peer: SocketAddr,
    /// What the connection's PROXY header said.
    proxied: Proxied,
    trust: Arc<ProxyTrust>,
    activity: Arc<Activity>,
}

impl hyper::service::Service<Request<Incoming>> for ConnectionService {
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = TrackedResponse<tower::util::Oneshot<Router, Request<Arrival<Incoming>>>>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        let in_progress = InProgress::start(self.activity.clone());
        let client = self.trust.client_of(self.peer.ip(), self.proxied, request.headers());
        request.extensions_mut().insert(ConnectInfo(self.peer));
        request.extensions_mut().insert(ClientAddress(client));
        if self.trust.is_behind_gatekeeper() {
            request.extensions_mut().insert(ClientNamedByGatekeeper);
        }
        let read = Arrived::of(request.body());
        let request = request.map(|inner| read.watch(inner));
        TrackedResponse { inner: self.router.clone().oneshot(request), in_progress: Some(in_progress), read }
    }
}

pin_project_lite::pin_project! {
    /// The router's response future; hands the request's [`InProgress`] to the response body.
    /// An answer given before the request's body was read to its end says `Connection: close`:
    /// hyper cannot take the next request from that connection and closes it after the answer,
    /// and a client that did not know would send its next request into the closing socket.
    struct TrackedResponse<F> {
        #[pin]
        inner: F,
        in_progress: Option<InProgress>,
        read: Arrived,
    }
}

impl<F> Future for TrackedResponse<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<TrackedBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = match ready!(this.inner.poll(cx)) {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let mut response = response;
        if !this.read.get() {
            response.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
        }
        let in_progress = this.in_progress.take();
        Poll::Ready(Ok(response.map(|body| TrackedBody { body, _in_progress: in_progress })))
    }
}

pin_project_lite::pin_project! {
    /// A response body that keeps its request in progress until hyper has sent it and drops it.
    struct TrackedBody {
        #[pin]
        body: Body,
        _in_progress: Option<InProgress>,
    }
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEADLINES: Deadlines =
        Deadlines { header_read: Duration::from_secs(10), keep_alive_idle: Duration::from_secs(60) };

    #[test]
    fn the_default_cap_leaves_a_reserve_of_file_descriptors() {
        assert_eq!(connection_ceiling(1024), 768);
        assert_eq!(connection_ceiling(20_000), 15_000);
        assert_eq!(connection_ceiling(1 << 20), (1 << 20) - 8192);
        assert_eq!(connection_ceiling(100), 36);
        assert_eq!(connection_ceiling(10), 1);
        assert_eq!(resolve_max_connections(None, Some(1 << 20)), MAX_DEFAULT_CONNECTIONS);
        assert_eq!(resolve_max_connections(None, Some(20_000)), 15_000);
        assert_eq!(resolve_max_connections(Some(500), Some(20_000)), 500);
        assert_eq!(resolve_max_connections(Some(100_000), Some(20_000)), 15_000, "never past the file limit");
        assert_eq!(resolve_max_connections(None, None), FALLBACK_MAX_CONNECTIONS);
    }

    #[test]
    fn zero_deadlines_and_a_zero_cap_are_refused() {
        let zero = Duration::ZERO;
        for limits in [
            LimitsConfig { header_read_timeout: zero, ..LimitsConfig::default() },
            LimitsConfig { keep_alive_idle_timeout: zero, ..LimitsConfig::default() },
            LimitsConfig { max_connections: Some(0), ..LimitsConfig::default() },
        ] {
            let refused = Connections::new(&limits, &mut Registry::default()).unwrap_err().to_string();
            assert!(refused.contains("must be more than 0"), "{refused}");
        }
        let mut registry = Registry::with_prefix("shardgate");
        let limits = LimitsConfig { max_connections: Some(7), ..LimitsConfig::default() };
        assert_eq!(Connections::new(&limits, &mut registry).unwrap().shared.max_connections, 7);
        let mut exposition = String::new();
        prometheus_client::encoding::text::encode(&mut exposition, &registry).unwrap();
        assert!(exposition.contains("shardgate_connections_max 7"), "{exposition}");
        assert!(exposition.contains(r#"shardgate_connections_closed_total{reason="crowded_out"} 0"#), "{exposition}");
    }

    /// Milliseconds.
    const S: u64 = 1000;

    #[test]
    fn a_new_connection_must_send_its_head_within_the_header_deadline() {
        let activity = Activity::new();
        assert_eq!(activity.expired(DEADLINES, 9 * S), None);
        assert_eq!(activity.expired(DEADLINES, 10 * S), Some(Expired::Header));
    }

    #[test]
    fn between_requests_the_idle_deadline_runs_then_the_header_deadline_from_the_first_byte() {
        let activity = Activity::new();
        activity.received(10);
        activity.request_started();
        assert_eq!(activity.expired(DEADLINES, 3600 * S), None, "a request in progress is never idle");
        activity.request_finished(3600 * S);
        assert_eq!(activity.expired(DEADLINES, 3659 * S), None);
        assert_eq!(activity.next_check(DEADLINES, 3659 * S), 3660 * S, "the idle deadline");
        activity.received(3659 * S);
        assert_eq!(activity.expired(DEADLINES, 3664 * S), None, "a head under way has the header deadline");
        assert_eq!(activity.expired(DEADLINES, 3669 * S), Some(Expired::Header));

        let idle = Activity::new();
        idle.request_started();
        idle.request_finished(S);
        assert_eq!(idle.expired(DEADLINES, 60 * S), None);
        assert_eq!(idle.expired(DEADLINES, 61 * S), Some(Expired::Idle));
    }

    #[test]
    fn pipelined_requests_keep_the_connection_in_progress_until_the_last_is_answered() {
        let activity = Arc::new(Activity::new());
        let first = InProgress::start(activity.clone());
        let second = InProgress::start(activity.clone());
        drop(first);
        assert!(!activity.is_idle());
        assert_eq!(activity.expired(DEADLINES, 3600 * S), None);
        drop(second);
        assert!(activity.is_idle());
    }

    #[test]
    fn only_connections_waiting_past_the_grace_make_room() {
        let grace = millis(CROWDED_GRACE);
        let activity = Activity::new();
        assert!(!activity.waiting_longer_than(CROWDED_GRACE, 0), "a client that has just connected");
        assert!(activity.waiting_longer_than(CROWDED_GRACE, grace), "connected, sent nothing");
        activity.request_started();
        assert!(!activity.waiting_longer_than(CROWDED_GRACE, 60 * S), "a request in progress");
        activity.request_finished(60 * S);
        assert!(!activity.waiting_longer_than(CROWDED_GRACE, 60 * S), "just answered");
        activity.received(60 * S + grace);
        assert!(!activity.waiting_longer_than(CROWDED_GRACE, 60 * S + grace), "a head has just started");
        assert!(activity.waiting_longer_than(CROWDED_GRACE, 60 * S + 2 * grace), "a head started too long ago");
    }

    #[test]
    fn only_an_empty_400_414_or_431_head_is_taken_for_hypers_automatic_answer() {
        let head = |status: &str, length: &str| {
            format!("HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {length}\r\ndate: x\r\n\r\n")
        };
        assert_eq!(automatic_answer(head("431 Request Header Fields Too Large", "0").as_bytes()), Some(431));
        assert_eq!(automatic_answer(head("414 URI Too Long", "0").as_bytes()), Some(414));
        assert_eq!(automatic_answer(head("400 Bad Request", "0").as_bytes()), Some(400));
        assert_eq!(automatic_answer(head("431 Request Header Fields Too Large", "10").as_bytes()), None);
        assert_eq!(automatic_answer(head("404 Not Found", "0").as_bytes()), None);
        let with_body = format!("{}{{}}", head("400 Bad Request", "0"));
        assert_eq!(automatic_answer(with_body.as_bytes()), None, "bytes after the head");
        assert_eq!(automatic_answer(b"431 "), None);
    }

    #[tokio::test]
    async fn held_bytes_go_out_unchanged_when_hyper_carries_on() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let mut stream = WatchedStream::new(ClientStream::Plain(server), Arc::new(Activity::new()));
        let lookalike = b"HTTP/1.1 431 x\r\ncontent-length: 0\r\n\r\n";
        stream.write_all(lookalike).await.unwrap();
        assert!(stream.held.is_some());
        client.write_all(b"next").await.unwrap();
        let mut read = [0u8; 4];
        stream.read_exact(&mut read).await.unwrap();
        assert!(stream.held.is_none(), "a read releases what was held");
        let mut received = vec![0u8; lookalike.len()];
        client.read_exact(&mut received).await.unwrap();
        assert_eq!(&received[..], lookalike);
    }

    #[test]
    fn the_watcher_looks_again_no_later_than_the_next_deadline() {
        let activity = Activity::new();
        assert_eq!(activity.next_check(DEADLINES, 0), 10 * S, "the first head's deadline");
        activity.request_started();
        assert_eq!(activity.next_check(DEADLINES, 0), 10 * S, "in progress: a recheck");
        activity.request_finished(2 * S);
        assert_eq!(activity.next_check(DEADLINES, 2 * S), 12 * S, "rechecked within the header deadline");
        activity.received(5 * S);
        assert_eq!(activity.next_check(DEADLINES, 12 * S), 15 * S, "the head's deadline");
    }
}
