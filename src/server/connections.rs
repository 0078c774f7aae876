//! Accepts TCP connections and serves HTTP/1.1 and HTTP/2 on them with the limits a public
//! endpoint needs: a cap on open connections (refused with a clear 503), a deadline for each
//! request head, an idle timeout between requests, a deadline for each request body, and request
//! targets too long to route answered in their dialect's shape. A waiting long poll is a request
//! in flight, not idle. With TLS, the handshake comes first, within the request-head deadline, and
//! ALPN picks the version; on plain HTTP the client's first bytes do (HTTP/2's preface).

use super::per_address::PerAddress;
use crate::api::edge::{self, RequestHints};
use crate::core::GatewayError;
use crate::core::log_throttle::LogThrottle;
use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;

/// What a connection's bytes travel over: TCP, or TLS over TCP.
trait Transport: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Transport for T {}

/// Connections over the limit that are still answered (with 503) rather than dropped at once.
const REFUSALS_ANSWERED: usize = 64;
/// How long a refused connection gets to send the request its 503 answers.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest request line (method, target, version) routed; longer ones get 414.
pub const MAX_REQUEST_LINE: usize = 16 * 1024;
/// How long a connection is drained after an answer that closes it, so the client reads it.
const LINGER: Duration = Duration::from_secs(2);
/// Open files kept back from connections: the backend's sockets, the store, logs.
const RESERVED_FILES: u64 = 256;
/// Accept failures (say, out of file descriptors) are logged at most this often.
const ACCEPT_ERROR_LOG_EVERY: Duration = Duration::from_secs(10);
/// Connections refused over a limit are logged at most this often (with how many were).
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);
/// What an HTTP/2 client sends first on plain HTTP, with prior knowledge (RFC 9113 §3.4).
const HTTP2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Body bytes an HTTP/2 client may send ahead on one request before the handler reads them (the
/// protocol's default window): unauthenticated bodies are refused unread, so this is what one
/// refused request can make the server buffer.
const HTTP2_STREAM_WINDOW: u32 = 65_535;
/// Body bytes in flight on a whole HTTP/2 connection before handlers read them.
const HTTP2_CONNECTION_WINDOW: u32 = 1024 * 1024;
/// The largest header block of an HTTP/2 request (HPACK-decoded: names, values, 32 bytes each):
/// room for a request target of `MAX_REQUEST_LINE` and signed headers.
const HTTP2_MAX_HEADER_LIST: u32 = 64 * 1024;

/// The connection limits and timeouts of the server.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionSettings {
    /// Open client connections at most; more are answered 503 and closed.
    pub max_connections: usize,
    /// Open connections of one client address at most; `None`: half of `max_connections`.
    pub max_connections_per_address: Option<usize>,
    /// Time a connection gets to send a whole request head once its first byte arrived.
    pub header_timeout: Duration,
    /// Time a connection may sit without a request (before the first, and between requests).
    pub idle_timeout: Duration,
    /// Time a request gets to send its whole body.
    pub body_timeout: Duration,
    /// HTTP/2 is spoken, with at most this many requests in flight on a connection; `None`:
    /// HTTP/1.1 only.
    pub http2_max_streams: Option<u32>,
}

/// Raises the soft open-file limit to the hard one and bounds `configured` connections by it.
pub fn fit_to_open_file_limit(configured: usize) -> usize {
    let limit = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(error) => {
            tracing::warn!(%error, "cannot read or raise the open-file limit");
            return configured;
        }
    };
    let room = usize::try_from(limit.saturating_sub(RESERVED_FILES).max(1)).unwrap_or(usize::MAX);
    let max_connections = configured.min(room);
    if max_connections < configured {
        tracing::warn!(
            open_file_limit = limit,
            configured,
            max_connections,
            "the open-file limit allows fewer connections than server.max_connections; raise `ulimit -n`"
        );
    } else {
        tracing::info!(open_file_limit = limit, max_connections, "connection limit");
    }
    max_connections
}

/// Accepts and serves connections until `shutdown`; then lets every open connection finish its
/// requests (closing when idle) and returns once all are closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    settings: ConnectionSettings,
    tls: Option<TlsAcceptor>,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let open = Arc::new(Semaphore::new(settings.max_connections));
    let per_address = PerAddress::new(settings.per_address_limit());
    let refusing = Arc::new(Semaphore::new(REFUSALS_ANSWERED));
    let connections = TaskTracker::new();
    let mut last_accept_error: Option<Instant> = None;
    let mut refusals = RefusalLog::new();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failed(&error, &mut last_accept_error).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        let admitted = match per_address.enter(peer.ip()) {
            None => Err(Refusal::AddressLimit),
            Some(slot) => match Arc::clone(&open).try_acquire_owned() {
                Ok(permit) => Ok((slot, permit)),
                Err(_) => Err(Refusal::ConnectionLimit),
            },
        };
        if let Ok(permit) = admitted {
            let connection = Connection {
                router: router.clone(),
                settings,
                peer,
                refuse: false,
                shutdown: shutdown.clone(),
            };
            let tls = tls.clone();
            connections.spawn(async move {
                connection.start(stream, tls).await;
                drop(permit);
            });
        } else if let Ok(permit) = Arc::clone(&refusing).try_acquire_owned() {
            if let Err(refusal) = admitted {
                refusals.refused(refusal, &settings);
            }
            let connection = Connection {
                router: router.clone(),
                settings: ConnectionSettings {
                    header_timeout: REFUSAL_TIMEOUT,
                    idle_timeout: REFUSAL_TIMEOUT,
                    ..settings
                },
                peer,
                refuse: true,
                shutdown: shutdown.clone(),
            };
            let tls = tls.clone();
            connections.spawn(async move {
                connection.start(stream, tls).await;
                drop(permit);
            });
        } else {
            if let Err(refusal) = admitted {
                refusals.refused(refusal, &settings);
            }
            // Far over the limit: closing at once is the only answer that costs nothing.
            drop(stream);
        }
    }
    drop(listener);
    connections.close();
    connections.wait().await;
    Ok(())
}

impl ConnectionSettings {
    /// The open connections one client address may hold.
    fn per_address_limit(&self) -> usize {
        self.max_connections_per_address
            .unwrap_or(self.max_connections / 2)
            .clamp(1, self.max_connections.max(1))
    }
}

/// Which limit refused a connection.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// Every connection slot is taken.
    ConnectionLimit,
    /// The client's address holds its share of the slots.
    AddressLimit,
}

/// Refused connections, logged at most once per [`REFUSAL_LOG_EVERY`] with their count: they
/// come at whatever rate a client opens them, before any credential.
#[derive(Debug)]
struct RefusalLog(LogThrottle);

impl RefusalLog {
    fn new() -> Self {
        Self(LogThrottle::new(REFUSAL_LOG_EVERY))
    }

    fn refused(&mut self, refusal: Refusal, settings: &ConnectionSettings) {
        let Some(refused) = self.0.due() else {
            return;
        };
        match refusal {
            Refusal::ConnectionLimit => tracing::warn!(
                max_connections = settings.max_connections,
                refused,
                "connection limit reached; answering 503"
            ),
            Refusal::AddressLimit => tracing::warn!(
                max_connections_per_address = settings.per_address_limit(),
                refused,
                "a client address holds its share of the connections; answering it 503"
            ),
        }
    }
}

/// Waits out an accept failure: a connection that went away is nothing; running out of file
/// descriptors (or memory) is logged once in a while, and accepting pauses briefly.
async fn accept_failed(error: &io::Error, last_logged: &mut Option<Instant>) {
    use io::ErrorKind::*;
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted
    ) {
        return;
    }
    let now = Instant::now();
    if last_logged.is_none_or(|at| now.duration_since(at) >= ACCEPT_ERROR_LOG_EVERY) {
        tracing::error!(%error, "cannot accept connections (open-file limit?); retrying");
        *last_logged = Some(now);
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// The HTTP version a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    Http1,
    Http2,
}

/// One accepted connection.
struct Connection {
    router: Router,
    settings: ConnectionSettings,
    peer: SocketAddr,
    /// Over the connection limit: every request is answered 503, then the connection closes.
    refuse: bool,
    shutdown: CancellationToken,
}

/// Why a connection's serving ended.
enum Ending {
    /// hyper finished with the connection (the client closed it, or an error).
    Served,
    /// No request head, or no complete one, in time.
    TimedOut,
}

impl Connection {
    /// Serves the connection, after a TLS handshake when the listener has TLS.
    async fn start(self, stream: TcpStream, tls: Option<TlsAcceptor>) {
        // Each transport's serving future is boxed on its own: a connection holds the one it
        // uses, not the size of the largest (TLS state, the rare answer-and-close path); idle
        // connections and long polls cost memory by the thousand.
        let Some(acceptor) = tls else {
            // Boxed too: freed once the version is known, not held for the connection's life.
            let version = Box::pin(self.sniff(&stream)).await;
            return match version {
                Some(Version::Http1) => Box::pin(self.run(stream)).await,
                Some(Version::Http2) => Box::pin(self.run_http2(stream)).await,
                None => {}
            };
        };
        // The TLS stream (rustls' state is kilobytes) is boxed, and so is the handshake: a plain
        // connection's future holds neither, a TLS one holds its stream once.
        let Some(stream) = Box::pin(self.handshake(acceptor, stream)).await else {
            return;
        };
        let negotiated_h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
        if negotiated_h2 && self.settings.http2_max_streams.is_some() {
            Box::pin(self.run_http2(stream)).await;
        } else {
            Box::pin(self.run(stream)).await;
        }
    }

    /// The TLS handshake, within the head deadline; `None` when it failed or came too late.
    async fn handshake(
        &self,
        acceptor: TlsAcceptor,
        stream: TcpStream,
    ) -> Option<Box<TlsStream<TcpStream>>> {
        match tokio::time::timeout(self.settings.header_timeout, acceptor.accept(stream)).await {
            Ok(Ok(stream)) => Some(Box::new(stream)),
            Ok(Err(error)) => {
                tracing::debug!(peer = %self.peer, %error, "TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::debug!(peer = %self.peer, "no TLS handshake in time");
                None
            }
        }
    }

    /// Which version a plain-HTTP client speaks, from its first bytes (peeked, left for hyper):
    /// HTTP/2's preface, or anything else (HTTP/1.1). `None` when the client sent nothing before
    /// the idle timeout, closed, or trickled a prefix of the preface past the head deadline.
    async fn sniff(&self, stream: &TcpStream) -> Option<Version> {
        if self.settings.http2_max_streams.is_none() {
            return Some(Version::Http1);
        }
        let mut first = [0u8; HTTP2_PREFACE.len()];
        let mut seen = tokio::select! {
            peeked = stream.peek(&mut first) => peeked.ok()?,
            () = tokio::time::sleep(self.settings.idle_timeout) => return None,
            () = self.shutdown.cancelled() => return None,
        };
        let deadline = Instant::now() + self.settings.header_timeout;
        let mut pause = Duration::from_millis(1);
        loop {
            if seen == 0 {
                return None;
            }
            if first[..seen] != HTTP2_PREFACE[..seen] {
                return Some(Version::Http1);
            }
            if seen == HTTP2_PREFACE.len() {
                return Some(Version::Http2);
            }
            // A prefix of the preface so far ("P" may yet be "POST"): look again shortly. A peek
            // would not wait for more bytes than it already sees.
            if Instant::now() + pause > deadline || self.shutdown.is_cancelled() {
                return None;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(100));
            seen = stream.peek(&mut first).await.ok()?;
        }
    }

    /// Serves HTTP/2: many requests at once on the connection, each its own task. The idle clock
    /// runs while none is in flight (pings and window updates do not reset it); a request target
    /// too long to route gets 414 from the service, as on HTTP/1.1.
    async fn run_http2<S: Transport>(self, stream: S) {
        let activity = Arc::new(Activity::new(Version::Http2));
        let service = self.service(Arc::clone(&activity), Version::Http2);
        let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        builder
            .max_concurrent_streams(self.settings.http2_max_streams)
            .initial_stream_window_size(HTTP2_STREAM_WINDOW)
            .initial_connection_window_size(HTTP2_CONNECTION_WINDOW)
            .max_header_list_size(HTTP2_MAX_HEADER_LIST);
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let mut connection = std::pin::pin!(connection);
        // Once closing (idle, or the server shutting down): GOAWAY went out, requests in flight
        // finish, then hyper closes; a client that keeps an idle connection open past `LINGER`
        // after that is dropped.
        let mut closing_since: Option<Instant> = None;
        loop {
            let deadline = match closing_since {
                None => activity.deadline(&self.settings),
                Some(since) => activity.idle().then_some(since + LINGER),
            };
            tokio::select! {
                served = connection.as_mut() => {
                    if let Err(error) = served {
                        tracing::debug!(%error, "HTTP/2 connection ended with an error");
                    }
                    return;
                }
                () = sleep_until(deadline) => {}
                () = activity.changed.notified() => {}
                () = self.shutdown.cancelled(), if closing_since.is_none() => {}
            }
            let now = Instant::now();
            match closing_since {
                None if self.shutdown.is_cancelled() || activity.expired(&self.settings, now) => {
                    closing_since = Some(now);
                    connection.as_mut().graceful_shutdown();
                }
                Some(since) if activity.idle() && now >= since + LINGER => return,
                _ => {}
            }
        }
    }

    async fn run<S: Transport>(self, stream: S) {
        let activity = Arc::new(Activity::new(Version::Http1));
        let io = TokioIo::new(Watched::new(stream, Arc::clone(&activity)));
        let service = self.service(Arc::clone(&activity), Version::Http1);
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.keep_alive(!self.refuse);
        let mut connection = serve_http1(&builder, io, service);
        let mut closing = false;
        let ending = loop {
            let deadline = activity.deadline(&self.settings);
            let served = tokio::select! {
                result = poll_fn(|cx| connection.poll_without_shutdown(cx)) => Some(result),
                () = sleep_until(deadline) => None,
                () = activity.changed.notified() => None,
                () = self.shutdown.cancelled(), if !closing => {
                    closing = true;
                    None
                }
            };
            match served {
                Some(Ok(())) => break Ending::Served,
                Some(Err(error)) => {
                    tracing::debug!(%error, "connection ended with an error");
                    break Ending::Served;
                }
                None if closing && !activity.shutdown_begun() => {
                    activity.begin_shutdown();
                    Pin::new(&mut connection).graceful_shutdown();
                }
                None if activity.expired(&self.settings, Instant::now()) => {
                    break Ending::TimedOut;
                }
                None => {}
            }
        };
        let parts = connection.into_parts();
        let mut watched = parts.io.into_inner();
        match (ending, watched.overlong_request_line.take()) {
            (_, Some(request_line)) => {
                let hints = RequestHints::from_request_line(&request_line);
                let error = GatewayError::new(
                    crate::core::ErrorKind::UriTooLong,
                    format!("the request line is longer than {MAX_REQUEST_LINE} bytes"),
                );
                let response = edge::error_response(&hints, error);
                Box::pin(answer_and_close(watched.stream, response)).await;
            }
            (Ending::TimedOut, None) => {
                tracing::debug!(peer = %self.peer, "closing a connection that sent no complete request in time");
            }
            (Ending::Served, None) => {
                let _ = watched.stream.shutdown().await;
            }
        }
    }

    /// The router as a hyper service for this connection.
    fn service(&self, activity: Arc<Activity>, version: Version) -> ConnectionService {
        ConnectionService {
            router: self.router.clone(),
            activity,
            peer: self.peer,
            refuse: self.refuse,
            body_timeout: self.settings.body_timeout,
            version,
        }
    }
}

/// The size of hyper's HTTP/1.1 buffers: the write buffer it allocates when it builds a
/// connection and the read buffer a request's bytes arrive in (`INIT_BUFFER_SIZE` in hyper, not
/// public).
const HYPER_HTTP1_BUFFER: usize = 8192;

/// hyper's HTTP/1.1 connection, built so that its write buffer does not take the memory the last
/// request's bytes were read into.
///
/// hyper allocates an 8 KiB write buffer as it builds a connection and keeps it for the
/// connection's life; the request is read into an 8 KiB read buffer, freed again once the
/// request's head is dropped (a long poll drops it before it waits). The allocator (jemalloc's
/// per-thread cache) hands out the block of a size freed last first: each new connection's write
/// buffer would take the block the previous request was read into, keeping the page those bytes
/// touched resident for as long as the connection stays open, while its own request is read into
/// fresh memory. Holding that block while hyper allocates its write buffer, then freeing it before
/// the read, makes the read reuse it: the few pages requests are read into circulate instead of
/// one staying with each open connection. It costs one allocation and free a connection; with
/// another allocator it only costs that. Why: docs/decisions/2026-12-02-http1-read-buffer.md.
fn serve_http1<I: hyper::rt::Read + hyper::rt::Write + Unpin>(
    builder: &hyper::server::conn::http1::Builder,
    io: I,
    service: ConnectionService,
) -> hyper::server::conn::http1::Connection<I, ConnectionService> {
    // `black_box`: an allocation nothing reads may otherwise be optimised away.
    let last_read_into = std::hint::black_box(Vec::<u8>::with_capacity(HYPER_HTTP1_BUFFER));
    let connection = builder.serve_connection(io, service);
    drop(last_read_into);
    connection
}

/// The router as hyper calls it on one connection: adds the caller's address and the body
/// deadline, and keeps the in-flight count the idle timeout reads.
struct ConnectionService {
    router: Router,
    activity: Arc<Activity>,
    peer: SocketAddr,
    /// Over the connection limit: answer 503 without routing.
    refuse: bool,
    body_timeout: Duration,
    version: Version,
}

type Answer = Result<axum::response::Response, std::convert::Infallible>;

impl hyper::service::Service<hyper::Request<Incoming>> for ConnectionService {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn call(&self, mut request: hyper::Request<Incoming>) -> Self::Future {
        let body_done = {
            use http_body::Body as _;
            request.body().is_end_stream()
        };
        let in_flight = self.activity.request_started(body_done);
        let refusal = if self.refuse {
            Some(GatewayError::new(
                crate::core::ErrorKind::Unavailable {
                    retry_after: Duration::from_secs(1),
                },
                "the gateway has as many connections open as it allows; retry later",
            ))
        } else if self.version == Version::Http2 {
            http2_refusal(&mut request)
        } else {
            None
        };
        if let Some(error) = refusal {
            let response = edge::error_response(&RequestHints::of(&request), error);
            return Box::pin(async move {
                drop(in_flight);
                Ok(response)
            });
        }
        let router = self.router.clone();
        let (mut parts, body) = request.into_parts();
        parts.extensions.insert(ConnectInfo(self.peer));
        let activity = Arc::clone(&self.activity);
        let body = super::deadline::DeadlineBody::new(body, self.body_timeout, move || {
            activity.body_read();
        });
        let request = axum::extract::Request::from_parts(parts, axum::body::Body::new(body));
        Box::pin(async move {
            let answer = router.oneshot(request).await;
            drop(in_flight);
            answer
        })
    }
}

/// What an HTTP/2 request needs before the dialects, which read it as HTTP/1.1: its target held
/// to the request-line limit (HTTP/1.1's is checked as it arrives, in `Watched`), and a `Host`
/// header from its `:authority` (queue URLs and SigV4's signed `host` read it). A `Host` that
/// names another authority than `:authority` makes the request malformed (RFC 9113 §8.3.1).
fn http2_refusal(request: &mut hyper::Request<Incoming>) -> Option<GatewayError> {
    use crate::core::ErrorKind;
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |target| target.as_str().len());
    if target > MAX_REQUEST_LINE {
        return Some(GatewayError::new(
            ErrorKind::UriTooLong,
            format!("the request target is longer than {MAX_REQUEST_LINE} bytes"),
        ));
    }
    let authority = request
        .uri()
        .authority()
        .map(|authority| authority.as_str());
    let hosts = request.headers().get_all(axum::http::header::HOST);
    match (authority, hosts.iter().count()) {
        (Some(authority), 0) => {
            if let Ok(host) = axum::http::HeaderValue::from_str(authority) {
                request.headers_mut().insert(axum::http::header::HOST, host);
            }
            None
        }
        (Some(authority), 1)
            if hosts
                .iter()
                .all(|host| host.as_bytes() == authority.as_bytes()) =>
        {
            None
        }
        (None, 0 | 1) => None,
        _ => Some(GatewayError::new(
            ErrorKind::InvalidRequest,
            "the Host header and :authority of the request disagree",
        )),
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Writes one answer on a connection hyper gave up, then closes it gently: the write side first,
/// then the rest of what the client sends is read and dropped for a moment, so the client gets the
/// answer instead of a reset.
async fn answer_and_close<S: Transport>(mut stream: S, response: axum::response::Response) {
    let bytes = serialize(response).await;
    let written = tokio::time::timeout(LINGER, stream.write_all(&bytes)).await;
    if !matches!(written, Ok(Ok(()))) {
        return;
    }
    let _ = stream.shutdown().await;
    let drain = async {
        let mut sink = vec![0u8; 8192];
        loop {
            match tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// An HTTP/1.1 answer as bytes, closing the connection.
async fn serialize(response: axum::response::Response) -> Vec<u8> {
    let (parts, body) = response.into_parts();
    let body = axum::body::to_bytes(body, 64 * 1024)
        .await
        .unwrap_or_default();
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        parts.status.as_u16(),
        parts.status.canonical_reason().unwrap_or("")
    )
    .into_bytes();
    for (name, value) in &parts.headers {
        if name == axum::http::header::CONTENT_LENGTH || name == axum::http::header::CONNECTION {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(
        format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(&body);
    out
}

/// What the connection's watchdog reads: when bytes last moved, whether a request head is on its
/// way, and how many requests are in flight. Times are milliseconds since the connection opened.
struct Activity {
    /// HTTP/1.1 connections follow request heads and unread bodies in the byte stream; HTTP/2
    /// frames its requests, so only requests in flight count.
    version: Version,
    opened: Instant,
    last_io_ms: AtomicU64,
    /// When the first byte of the current request head arrived; `NONE` between requests.
    head_started_ms: AtomicU64,
    in_flight: AtomicU32,
    /// The current (or last) request's body has not been read to its end.
    body_pending: std::sync::atomic::AtomicBool,
    /// Wakes the watchdog when its deadline may have moved: a head started, a request ended.
    changed: Notify,
    shutdown_begun: std::sync::atomic::AtomicBool,
}

const NONE: u64 = u64::MAX;

impl Activity {
    fn new(version: Version) -> Self {
        Self {
            version,
            opened: Instant::now(),
            last_io_ms: AtomicU64::new(0),
            head_started_ms: AtomicU64::new(NONE),
            in_flight: AtomicU32::new(0),
            body_pending: std::sync::atomic::AtomicBool::new(false),
            changed: Notify::new(),
            shutdown_begun: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(NONE - 1)
    }

    fn at(&self, ms: u64) -> Instant {
        self.opened + Duration::from_millis(ms)
    }

    fn moved(&self) {
        self.last_io_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// Bytes arrived: between requests, they start a request head.
    fn read(&self) {
        self.moved();
        if self.between_requests()
            && self
                .head_started_ms
                .compare_exchange(NONE, self.now_ms(), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.changed.notify_one();
        }
    }

    /// A request head arrived; `body_done` when it has no body to read.
    fn request_started(self: &Arc<Self>, body_done: bool) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        if self.version == Version::Http1 {
            self.body_pending.store(!body_done, Ordering::Relaxed);
        }
        self.head_started_ms.store(NONE, Ordering::Relaxed);
        InFlight(Arc::clone(self))
    }

    /// The current request's body was read to its end.
    fn body_read(&self) {
        self.body_pending.store(false, Ordering::Relaxed);
    }

    /// No request in flight, and the last one's body read whole: bytes now start a new request.
    /// (After an answer that left its body unread, hyper closes the connection instead.)
    fn between_requests(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) == 0 && !self.body_pending.load(Ordering::Relaxed)
    }

    /// No request in flight.
    fn idle(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) == 0
    }

    fn begin_shutdown(&self) {
        self.shutdown_begun.store(true, Ordering::Relaxed);
    }

    fn shutdown_begun(&self) -> bool {
        self.shutdown_begun.load(Ordering::Relaxed)
    }

    /// When the connection times out if nothing changes; `None` while a request is in flight
    /// (the request's own deadlines apply then).
    fn deadline(&self, settings: &ConnectionSettings) -> Option<Instant> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        match self.head_started_ms.load(Ordering::Relaxed) {
            NONE => Some(self.at(self.last_io_ms.load(Ordering::Relaxed)) + settings.idle_timeout),
            started => Some(self.at(started) + settings.header_timeout),
        }
    }

    fn expired(&self, settings: &ConnectionSettings, now: Instant) -> bool {
        self.deadline(settings)
            .is_some_and(|deadline| now >= deadline)
    }
}

/// A request in flight; its end counts as activity, so the idle time starts after the answer.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let activity = &self.0;
        activity.moved();
        activity.in_flight.fetch_sub(1, Ordering::Relaxed);
        // Answered without its body read whole: hyper drains what is at hand or closes. Whatever
        // comes next gets no more than a head's time (the request-line check stays off, since
        // the next bytes may still be that body).
        if activity.body_pending.load(Ordering::Relaxed) {
            activity
                .head_started_ms
                .store(activity.now_ms(), Ordering::Relaxed);
        }
        // The idle clock starts now: the watchdog has been waiting without a deadline.
        activity.changed.notify_one();
    }
}

/// The TCP stream as hyper sees it, reporting activity, and refusing a request line too long to
/// route (hyper would answer a bare 414 with an empty body).
struct Watched<S> {
    stream: S,
    activity: Arc<Activity>,
    /// Bytes of the current request line so far (its first bytes kept), while one is arriving.
    request_line: Option<(usize, Vec<u8>)>,
    /// Set when a request line exceeded [`MAX_REQUEST_LINE`]: its first bytes.
    overlong_request_line: Option<Vec<u8>>,
}

impl<S> Watched<S> {
    fn new(stream: S, activity: Arc<Activity>) -> Self {
        Self {
            stream,
            activity,
            request_line: None,
            overlong_request_line: None,
        }
    }

    /// Follows the request line through newly read bytes; `false` once it is too long.
    fn follow_request_line(&mut self, fresh: &[u8]) -> bool {
        if self.request_line.is_none() && self.activity.between_requests() {
            // Blank lines before a request are allowed (RFC 9112 §2.2): skip them.
            if fresh.iter().all(|b| matches!(b, b'\r' | b'\n')) {
                return true;
            }
            self.request_line = Some((0, Vec::new()));
        }
        let Some((length, start)) = self.request_line.as_mut() else {
            return true;
        };
        let fresh = if *length == 0 {
            let skipped = fresh
                .iter()
                .position(|b| !matches!(b, b'\r' | b'\n'))
                .unwrap_or(fresh.len());
            &fresh[skipped..]
        } else {
            fresh
        };
        if let Some(end) = fresh.iter().position(|&b| b == b'\n')
            && *length + end <= MAX_REQUEST_LINE
        {
            self.request_line = None;
            return true;
        }
        *length += fresh.len();
        let keep = 256usize.saturating_sub(start.len()).min(fresh.len());
        start.extend_from_slice(&fresh[..keep]);
        if *length > MAX_REQUEST_LINE {
            self.overlong_request_line = self.request_line.take().map(|(_, start)| start);
            return false;
        }
        true
    }
}

impl<S: Transport> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.overlong_request_line.is_some() {
            return Poll::Ready(Err(io::Error::other("request line too long")));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let fresh = &buf.filled()[before..];
            if !fresh.is_empty() {
                let within = this.follow_request_line(fresh);
                this.activity.read();
                if !within {
                    // hyper sees an error and lets go of the connection; `run` answers 414.
                    return Poll::Ready(Err(io::Error::other("request line too long")));
                }
            }
        }
        polled
    }
}

impl<S: Transport> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        if let Poll::Ready(Ok(written)) = polled
            && written > 0
        {
            this.activity.moved();
        }
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(written)) = polled
            && written > 0
        {
            this.activity.moved();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn deadlines_follow_the_connection_state() {
        let settings = ConnectionSettings {
            max_connections: 1,
            max_connections_per_address: None,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            http2_max_streams: None,
        };
        let activity = Arc::new(Activity::new(Version::Http1));
        let opened = activity.opened;
        assert_eq!(
            activity.deadline(&settings),
            Some(opened + Duration::from_secs(60)),
            "idle from the start"
        );
        tokio::time::advance(Duration::from_secs(5)).await;
        activity.read();
        assert_eq!(
            activity.deadline(&settings),
            Some(opened + Duration::from_secs(15)),
            "a head started: ten seconds to finish it"
        );
        let request = activity.request_started(false);
        assert_eq!(activity.deadline(&settings), None, "a request in flight");
        tokio::time::advance(Duration::from_secs(40)).await;
        activity.read();
        assert_eq!(
            activity.deadline(&settings),
            None,
            "body bytes of the request"
        );
        activity.body_read();
        drop(request);
        assert_eq!(
            activity.deadline(&settings),
            Some(opened + Duration::from_secs(45 + 60)),
            "idle again after the answer"
        );
        assert!(!activity.expired(&settings, opened + Duration::from_secs(104)));
        assert!(activity.expired(&settings, opened + Duration::from_secs(105)));

        // Answered with its body unread: what follows gets a head's time, not an idle one.
        let unread = activity.request_started(false);
        drop(unread);
        assert_eq!(
            activity.deadline(&settings),
            Some(opened + Duration::from_secs(45 + 10))
        );
        activity.read();
        assert_eq!(
            activity.deadline(&settings),
            Some(opened + Duration::from_secs(45 + 10)),
            "bytes after an unread body do not restart the clock"
        );
    }
}
