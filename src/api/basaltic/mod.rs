//! The basaltic queue API (its document "Enviar y consumir mensajes"): queues as resources addressed by UUID (the
//! core's basaltic aliases) with their settings, and their messages: send, receive, delete by
//! receipt, visibility, batches of each, inspect without a lease, purge; and metrics the gateway
//! samples; redrive of dead-letter queues; and the key's own description (`/v1/key`).
//! Authentication is a Bearer key with permissions per queue.

mod batches;
pub mod config;
mod delivery;
mod error;
mod inspecting;
mod key;
mod messages;
mod metrics;
pub mod openapi;
mod queues;
mod redrive;
mod router;
mod subscriptions;
mod wire;

pub use error::BasalticError;
pub use router::plug;

use crate::core::Gateway;
use crate::core::access::Principal;
use crate::core::alias::{Alias, Namespace};
use crate::core::request_scope;
use crate::core::{ErrorKind, GatewayError};
use crate::credentials::basaltic_keys::{BasalticKey, BasalticKeys};
use crate::credentials::key_book::{self, BookKey as _};
use crate::credentials::live::Live;
use axum::http::HeaderMap;
use std::sync::Arc;

/// The largest request body: a batch of ten 256 KiB messages with their attributes, JSON
/// escaping and envelope (as SQS's endpoint takes).
const BODY_LIMIT: usize = 3 * 1024 * 1024 + 64 * 1024;
/// What the backend names of basaltic queues start with (the core's reserved prefix: only
/// basaltic keys' grants, which name the queue, reach their messages).
const QUEUE_PREFIX: &str = "sqsgw_bq_";

/// What the basaltic routes share.
pub struct BasalticState {
    gateway: Arc<Gateway>,
    /// The keys, replaced whole when the config is reloaded.
    keys: Live<BasalticKeys>,
    metrics: metrics::Metrics,
    /// Held from a create's check that its name is free until its id is bound, so two creates
    /// of one name never both succeed.
    creating: tokio::sync::Mutex<()>,
    /// The queues (by basaltic name, or `*`) whose messages may not be exported.
    export_disabled: Vec<String>,
}

impl std::fmt::Debug for BasalticState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasalticState").finish_non_exhaustive()
    }
}

/// The queue a request names, found for its key: the queue's id, the gateway queue, and the key
/// as a caller there.
struct Target {
    key: Arc<BasalticKey>,
    id: String,
    queue: String,
    caller: crate::core::access::Caller,
}

impl BasalticState {
    /// Whether exporting gateway queue `queue`'s messages is turned off.
    fn export_disabled(&self, queue: &str) -> bool {
        let name = queues::name_of(queue);
        self.export_disabled
            .iter()
            .any(|listed| listed == "*" || listed == name)
    }

    /// Authenticates the request (before any body is read) and finds the queue its path names.
    async fn target(
        &self,
        headers: &HeaderMap,
        path: Result<axum::extract::Path<String>, axum::extract::rejection::PathRejection>,
    ) -> Result<Target, GatewayError> {
        let key = self.authenticate(headers)?;
        let id = queues::queue_id(path)?;
        let queue = self.queue_of(&key, &id).await?;
        let id = canonical_id(&id).unwrap_or(id);
        let caller = key.caller_on(&id, &queue);
        Ok(Target {
            key,
            id,
            queue,
            caller,
        })
    }

    /// The key of the `Authorization: Bearer` header, or 401 (before any body is read).
    fn authenticate(&self, headers: &HeaderMap) -> Result<Arc<BasalticKey>, GatewayError> {
        let keys = self.keys.current();
        let presented = crate::api::common::bearer_token(headers);
        presented
            .and_then(|presented| keys.verify(presented))
            .cloned()
            .inspect(|key| request_scope::note_caller(&Principal::ApiKey(key.id().to_owned())))
            .ok_or_else(|| {
                request_scope::note_refused("api_key", presented.and_then(key_book::key_id));
                GatewayError::unauthenticated()
            })
    }

    /// The gateway queue of the queue id `queue_id`; 404 for an id that names none (or is not
    /// a UUID), and for a key with no permission on it (so ids can't be probed).
    async fn queue_of(&self, key: &BasalticKey, queue_id: &str) -> Result<String, GatewayError> {
        let not_found = || GatewayError::new(ErrorKind::QueueNotFound, "no such queue");
        let id = canonical_id(queue_id).ok_or_else(not_found)?;
        if !key.sees(&id) {
            return Err(not_found());
        }
        let alias = Alias::new(Namespace::Basaltic, [id]).map_err(|_| not_found())?;
        self.gateway
            .queue_by_alias(&alias)
            .await
            .map_err(|_| not_found())
    }

    /// The gateway queue of a dead-letter target: one the key may send to.
    async fn dead_letter_target(
        &self,
        key: &BasalticKey,
        queue_id: &str,
    ) -> Result<String, GatewayError> {
        let queue = self.queue_of(key, queue_id).await?;
        let id = canonical_id(queue_id).unwrap_or_default();
        if !key.holds(crate::core::access::Action::Send, &id) {
            return Err(GatewayError::permission_denied(
                "a dead-letter queue takes the send permission on it",
            ));
        }
        Ok(queue)
    }
}

/// A queue id in its one written form (lowercase, hyphenated), if it is a UUID.
pub(crate) fn canonical_id(queue_id: &str) -> Option<String> {
    uuid::Uuid::try_parse(queue_id)
        .ok()
        .map(|id| id.hyphenated().to_string())
}

/// The basaltic API as the server's edge sees it: `/v1/queues` and below, and `/v1/key`, answered
/// in its error shape.
#[derive(Debug, Clone, Copy)]
pub struct BasalticEdge;

impl crate::api::common::EdgeShape for BasalticEdge {
    fn name(&self) -> &'static str {
        "basaltic"
    }

    fn serves(&self, path: &str) -> bool {
        path == "/v1/queues" || path.starts_with("/v1/queues/") || path == "/v1/key"
    }

    fn render(
        &self,
        _hints: &crate::api::common::RequestHints,
        error: GatewayError,
    ) -> axum::response::Response {
        use axum::response::IntoResponse as _;
        BasalticError::from(error).into_response()
    }
}
