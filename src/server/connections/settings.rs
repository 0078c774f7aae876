//! The limits and timeouts connections are served with, as configured, and what follows from
//! them; the accept loop and the deadlines read them.

use std::time::Duration;

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

impl ConnectionSettings {
    /// The open connections one client address may hold.
    pub(super) fn per_address_limit(&self) -> usize {
        self.max_connections_per_address
            .unwrap_or(self.max_connections / 2)
            .clamp(1, self.max_connections.max(1))
    }
}
