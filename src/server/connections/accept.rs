//! Takes connections off the listener within the caps: open connections in all (no more than the
//! open-file limit leaves room for), and per client address. When every slot is taken, a newcomer
//! evicts the oldest idle connection of the address holding the most, if that address holds more
//! than the newcomer's, and takes its slot as it closes. Over a cap a connection is answered
//! 503 while a few such answers are under way, and closed at once beyond them; refusals and
//! accept failures are logged at a bounded rate.

use super::connection::Connection;
use super::settings::ConnectionSettings;
use crate::core::log_throttle::LogThrottle;
use crate::server::edge::Edge;
use crate::server::per_address::PerAddress;
use axum::Router;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Connections over the limit that are still answered (with 503) rather than dropped at once.
const REFUSALS_ANSWERED: usize = 64;
/// How long a refused connection gets to send the request its 503 answers.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a newcomer waits for the slot of the idle connection evicted for it.
const EVICTION_WAIT: Duration = Duration::from_secs(3);
/// Open files kept back from connections: the backend's sockets, the store, logs.
const RESERVED_FILES: u64 = 256;
/// Accept failures (say, out of file descriptors) are logged at most this often.
const ACCEPT_ERROR_LOG_EVERY: Duration = Duration::from_secs(10);
/// Connections refused over a limit are logged at most this often (with how many were).
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

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
    edge: Edge,
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
                Ok(permit) => Ok(Admitted::Now(slot, permit)),
                Err(_) if per_address.evict_for(&slot) => Ok(Admitted::AfterEviction(slot)),
                Err(_) => Err(Refusal::ConnectionLimit),
            },
        };
        if let Ok(admitted) = admitted {
            let connection = Connection {
                router: router.clone(),
                edge: edge.clone(),
                settings,
                peer,
                refuse: false,
                shutdown: shutdown.clone(),
                tenure: None,
            };
            let (tls, open, refusing) = (tls.clone(), Arc::clone(&open), Arc::clone(&refusing));
            connections.spawn(async move {
                let (slot, permit) = match admitted {
                    Admitted::Now(slot, permit) => (slot, permit),
                    // The evicted connection gives its slot back as it closes; a newcomer that
                    // does not get one in time is refused as when none could be evicted.
                    Admitted::AfterEviction(slot) => {
                        // Waiting, it is no idle connection another newcomer could evict.
                        let tenure = slot.tenure();
                        tenure.request_started();
                        let freed = tokio::time::timeout(EVICTION_WAIT, open.acquire_owned()).await;
                        tenure.request_ended();
                        match freed {
                            Ok(Ok(permit)) => (slot, permit),
                            _ => {
                                drop(slot);
                                if let Ok(permit) = refusing.try_acquire_owned() {
                                    connection.refusing().start(stream, tls).await;
                                    drop(permit);
                                }
                                return;
                            }
                        }
                    }
                };
                let connection = Connection {
                    tenure: Some(slot.tenure()),
                    ..connection
                };
                connection.start(stream, tls).await;
                drop((slot, permit));
            });
        } else if let Ok(permit) = Arc::clone(&refusing).try_acquire_owned() {
            if let Err(refusal) = admitted {
                refusals.refused(refusal, &settings);
            }
            let connection = Connection {
                router: router.clone(),
                edge: edge.clone(),
                settings,
                peer,
                refuse: false,
                shutdown: shutdown.clone(),
                tenure: None,
            }
            .refusing();
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

impl Connection {
    /// This connection as one refused for a limit: answered 503 in its dialect's shape, with
    /// short timeouts, then closed.
    fn refusing(self) -> Self {
        Self {
            settings: ConnectionSettings {
                header_timeout: REFUSAL_TIMEOUT,
                idle_timeout: REFUSAL_TIMEOUT,
                ..self.settings
            },
            refuse: true,
            tenure: None,
            ..self
        }
    }
}

/// A connection let in: with its slots now, or once the idle connection evicted for it closed.
enum Admitted {
    Now(
        crate::server::per_address::AddressSlot,
        tokio::sync::OwnedSemaphorePermit,
    ),
    AfterEviction(crate::server::per_address::AddressSlot),
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
