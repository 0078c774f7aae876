//! Serves HTTP/2 on a connection: hyper's connection built with the windows and header limit a
//! public endpoint needs, and a watchdog that sends GOAWAY when it is idle past its deadline or
//! the server shuts down, then drops a client that lingers.

use super::activity::{Activity, Version, sleep_until};
use super::connection::{Connection, LINGER};
use super::watched::Transport;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::sync::Arc;
use tokio::time::Instant;

/// Body bytes an HTTP/2 client may send ahead on one request before the handler reads them (the
/// protocol's default window): unauthenticated bodies are refused unread, so this is what one
/// refused request can make the server buffer.
const HTTP2_STREAM_WINDOW: u32 = 65_535;
/// Body bytes in flight on a whole HTTP/2 connection before handlers read them.
const HTTP2_CONNECTION_WINDOW: u32 = 1024 * 1024;
/// The largest header block of an HTTP/2 request (HPACK-decoded: names, values, 32 bytes each):
/// room for a request target of `MAX_REQUEST_LINE` and signed headers.
const HTTP2_MAX_HEADER_LIST: u32 = 64 * 1024;

impl Connection {
    /// Serves HTTP/2: many requests at once on the connection, each its own task. The idle clock
    /// runs while none is in flight (pings and window updates do not reset it); a request target
    /// too long to route gets 414 from the service, as on HTTP/1.1.
    pub(super) async fn run_http2<S: Transport>(self, stream: S) {
        let activity = Arc::new(Activity::new(Version::Http2, self.tenure.clone()));
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
                () = activity.evicted(), if closing_since.is_none() => {}
            }
            let now = Instant::now();
            match closing_since {
                None if self.shutdown.is_cancelled()
                    || activity.is_evicted()
                    || activity.expired(&self.settings, now) =>
                {
                    closing_since = Some(now);
                    connection.as_mut().graceful_shutdown();
                }
                Some(since) if activity.idle() && now >= since + LINGER => return,
                _ => {}
            }
        }
    }
}
