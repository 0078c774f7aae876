//! The bound on connections to SQS with fan-in on: every SQS call holds one of
//! `backend.connections` permits from its request until its answer is read, so the SDK's
//! connection pool never opens more sockets than that, however many clients wait. Long polls take
//! at most half of them; a poll that takes the last free slot, or starts while others queue for
//! one, waits at most one second, so queues take turns instead of waiting 20 s each.

use aws_sdk_sqs::config::http::{HttpRequest, HttpResponse};
use aws_sdk_sqs::config::{HttpClient, RuntimeComponents, SharedHttpClient};
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_types::body::SdkBody;
use http_body_util::BodyExt as _;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The SDK's default HTTPS client (as it would pick it), `None` when built without one.
pub(super) fn sdk_default_http_client() -> Option<SharedHttpClient> {
    use aws_smithy_runtime_api::client::runtime_components::RuntimeComponentsBuilder;
    use aws_smithy_runtime_api::client::runtime_plugin::RuntimePlugin as _;
    let plugin = aws_smithy_runtime::client::defaults::default_http_client_plugin_v2(
        aws_sdk_sqs::config::BehaviorVersion::latest(),
    )?;
    plugin
        .runtime_components(&RuntimeComponentsBuilder::new("sqs-gateway"))
        .http_client()
}

/// The SDK's own HTTPS client, its calls bounded by permits.
#[derive(Debug, Clone)]
pub(super) struct BoundedHttpClient {
    inner: SharedHttpClient,
    permits: Arc<Semaphore>,
}

impl BoundedHttpClient {
    /// The SDK's default HTTPS client with at most `connections` calls in flight.
    pub(super) fn new(inner: SharedHttpClient, connections: usize) -> Self {
        Self {
            inner,
            permits: Arc::new(Semaphore::new(connections.max(1))),
        }
    }
}

impl HttpClient for BoundedHttpClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(BoundedConnector {
            inner: self.inner.http_connector(settings, components),
            permits: Arc::clone(&self.permits),
        })
    }
}

#[derive(Debug)]
struct BoundedConnector {
    inner: SharedHttpConnector,
    permits: Arc<Semaphore>,
}

impl HttpConnector for BoundedConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let inner = self.inner.clone();
        let permits = Arc::clone(&self.permits);
        HttpConnectorFuture::new(async move {
            let _permit = permits
                .acquire_owned()
                .await
                .map_err(|error| ConnectorError::other(error.into(), None))?;
            let mut response = inner.call(request).await?;
            // Read whole while the permit is held: the connection is back in the pool before
            // another call may start (SQS's answers are read whole anyway).
            let body = response
                .take_body()
                .collect()
                .await
                .map_err(ConnectorError::io)?
                .to_bytes();
            *response.body_mut() = SdkBody::from(body);
            Ok::<HttpResponse, ConnectorError>(response)
        })
    }
}

/// Slots for long polls: at most half the connections carry one at once. Polls wait for a free
/// slot one queue (URL) at a time, in turn: a queue's other polls wait behind its first, so a
/// tenant with many polls on one queue (many visibility timeouts, say) takes one turn, not many.
#[derive(Debug)]
pub(super) struct PollSlots {
    slots: Arc<Semaphore>,
    /// Polls waiting for a slot now.
    queued: AtomicUsize,
    /// Each queue's turn to wait for a slot: one poll per queue waits there at a time.
    turns: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// While polls queue for a slot, a poll holding one waits at most this long.
pub(super) const TAKING_TURNS_WAIT_SECONDS: u32 = 1;

impl PollSlots {
    /// Slots for `connections / 2` long polls (at least one).
    pub(super) fn new(connections: usize) -> Self {
        Self {
            slots: Arc::new(Semaphore::new((connections / 2).max(1))),
            queued: AtomicUsize::new(0),
            turns: Mutex::new(HashMap::new()),
        }
    }

    /// A slot for a poll of the queue at `url`, once one is free and it is that queue's turn.
    pub(super) async fn enter(&self, url: &str) -> OwnedSemaphorePermit {
        if let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() {
            return slot;
        }
        let turn = Arc::clone(
            lock(&self.turns)
                .entry(url.to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(1))),
        );
        let slot = {
            let _turn = Arc::clone(&turn)
                .acquire_owned()
                .await
                .expect("the turns are never closed");
            self.queued.fetch_add(1, Ordering::Relaxed);
            let _queued = Queued(&self.queued);
            Arc::clone(&self.slots)
                .acquire_owned()
                .await
                .expect("the slots are never closed")
        };
        let mut turns = lock(&self.turns);
        // Forgotten once no other poll of the queue holds or awaits it.
        if Arc::strong_count(&turn) == 2 {
            turns.remove(url);
        }
        slot
    }

    /// How long a poll holding a slot waits: `wait_seconds`, or one second while no slot is
    /// free or others queue for one.
    pub(super) fn wait_seconds(&self, wait_seconds: u32) -> u32 {
        if self.queued.load(Ordering::Relaxed) > 0 || self.slots.available_permits() == 0 {
            wait_seconds.min(TAKING_TURNS_WAIT_SECONDS)
        } else {
            wait_seconds
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Counts a poll out of the queue when it gets its slot, or gives up.
struct Queued<'a>(&'a AtomicUsize);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
