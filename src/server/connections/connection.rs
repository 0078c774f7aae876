//! One accepted connection and what it is served with, whichever version it speaks; the files that
//! open and serve it add its methods, and the hyper service is made from it.

use super::settings::ConnectionSettings;
use crate::server::edge::Edge;
use crate::server::per_address::Tenure;
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a connection is drained after an answer that closes it, so the client reads it.
pub(super) const LINGER: Duration = Duration::from_secs(2);

/// One accepted connection.
pub(super) struct Connection {
    pub(super) router: Router,
    /// Answers what no handler reaches, in the shape of the path's dialect.
    pub(super) edge: Edge,
    pub(super) settings: ConnectionSettings,
    pub(super) peer: SocketAddr,
    /// Over the connection limit: every request is answered 503, then the connection closes.
    pub(super) refuse: bool,
    pub(super) shutdown: CancellationToken,
    /// Its place among its client address's connections (none for a refusal).
    pub(super) tenure: Option<Arc<Tenure>>,
}
