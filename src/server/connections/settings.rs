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
    /// The settings `[server]` gives; the open-file limit is raised (and read) here, before the
    /// listener exists.
    pub fn of(server: &crate::config::ServerConfig) -> Self {
        Self {
            max_connections: super::fit_to_open_file_limit(server.max_connections),
            max_connections_per_address: server.max_connections_per_address,
            header_timeout: Duration::from_secs(server.header_timeout_seconds),
            idle_timeout: Duration::from_secs(server.idle_timeout_seconds),
            body_timeout: Duration::from_secs(server.body_timeout_seconds),
            http2_max_streams: server.http2.then_some(server.http2_max_streams),
        }
    }

    /// The open connections one client address may hold.
    pub(super) fn per_address_limit(&self) -> usize {
        self.max_connections_per_address
            .unwrap_or(self.max_connections / 2)
            .clamp(1, self.max_connections.max(1))
    }
}
