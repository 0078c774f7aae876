//! Serves HTTP/1.1 on a connection: hyper's connection built over the watched stream, a watchdog
//! that closes it at its deadlines and winds it down at shutdown, and the answer (414) to a
//! request line too long to route, written by hand once hyper has let go of the stream.

use super::activity::{Activity, Version, sleep_until};
use super::connection::{Connection, LINGER};
use super::service::ConnectionService;
use super::watched::{MAX_REQUEST_LINE, Transport, Watched};
use crate::api::common::RequestHints;
use crate::core::GatewayError;
use hyper_util::rt::TokioIo;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use tokio::io::AsyncWriteExt as _;
use tokio::time::Instant;

/// Why a connection's serving ended.
enum Ending {
    /// hyper finished with the connection (the client closed it, or an error).
    Served,
    /// No request head, or no complete one, in time.
    TimedOut,
}

impl Connection {
    pub(super) async fn run<S: Transport>(self, stream: S) {
        let activity = Arc::new(Activity::new(Version::Http1, self.tenure.clone()));
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
                // Another client needs the slot: closed like a shutdown (at once when idle).
                () = activity.evicted(), if !closing => {
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
                let response = self.edge.error_response(&hints, error);
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
