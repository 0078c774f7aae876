//! Batches of send, delete and visibility: up to ten entries with caller-chosen unique ids, one
//! result per entry (`successful` or `failed` with a code), so a caller retries only the
//! failures; the HTTP success of the whole says nothing of each entry.

use super::wire;
use super::{BODY_LIMIT, BasalticError, BasalticState};
use crate::api::read_body;
use crate::core::model::{EntryErrorKind, HandleOutcome};
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::Arc;

pub(super) fn routes() -> axum::Router<Arc<BasalticState>> {
    axum::Router::new()
        .route("/v1/queues/{queue_id}/messages/batch", post(send_batch))
        .route(
            "/v1/queues/{queue_id}/messages/delete-batch",
            post(delete_batch),
        )
        .route(
            "/v1/queues/{queue_id}/messages/visibility-batch",
            post(visibility_batch),
        )
}

type QueuePath = Result<Path<String>, PathRejection>;

/// The answer: `{"successful": [...], "failed": [{"id", "code", "message"}]}`.
#[derive(Default)]
struct Results {
    successful: Vec<Value>,
    failed: Vec<Value>,
}

impl Results {
    fn fail(&mut self, id: &str, code: &str, message: &str) {
        self.failed
            .push(json!({ "id": id, "code": code, "message": message }));
    }

    /// A handle's outcome.
    fn settle(&mut self, id: &str, outcome: &HandleOutcome) {
        match outcome {
            HandleOutcome::Ok => self.successful.push(json!({ "id": id })),
            HandleOutcome::Stale => self.fail(
                id,
                "receipt_handle_stale",
                "the receipt is not the current one: nothing changed",
            ),
            HandleOutcome::Invalid => self.fail(
                id,
                "receipt_handle_invalid",
                "not a receipt handle of this queue: nothing changed",
            ),
        }
    }

    fn settle_all(&mut self, ids: &[&str], outcomes: &[HandleOutcome]) {
        for (entry_id, outcome) in ids.iter().zip(outcomes) {
            self.settle(entry_id, outcome);
        }
    }

    fn answer(self) -> Json<Value> {
        Json(json!({ "successful": self.successful, "failed": self.failed }))
    }
}

/// Each entry parsed with `parse`: the ones that fail are answered at once; the others come back
/// with their ids, in order.
fn parse_each<'e, T>(
    entries: &'e [wire::BatchEntry],
    results: &mut Results,
    parse: impl Fn(&serde_json::Map<String, Value>) -> Result<T, crate::core::GatewayError>,
) -> (Vec<&'e str>, Vec<T>) {
    let mut ids = Vec::new();
    let mut parsed = Vec::new();
    for (entry_id, entry) in entries {
        match parse(entry) {
            Ok(item) => {
                ids.push(entry_id.as_str());
                parsed.push(item);
            }
            Err(error) => results.fail(entry_id, "invalid_argument", &error.message),
        }
    }
    (ids, parsed)
}

async fn send_batch(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let gateway = &state.gateway;
    let resolved = gateway.resolve_queue(&target.caller, &target.queue).await?;
    let entries = wire::batch_entries(&read_body(body, BODY_LIMIT).await?)?;
    let mut results = Results::default();
    let (ids, messages) = parse_each(&entries, &mut results, |entry| {
        wire::batch_send(entry, resolved.attributes.fifo)
    });
    if !messages.is_empty() {
        let sent = gateway
            .send(&target.caller, &target.queue, &messages)
            .await?;
        for (entry_id, outcome) in ids.into_iter().zip(sent) {
            match outcome {
                Ok(sent) => results
                    .successful
                    .push(json!({ "id": entry_id, "message_id": sent.message_id })),
                Err(refused) if refused.kind == EntryErrorKind::Refused => {
                    results.fail(entry_id, "unavailable", &refused.message)
                }
                Err(refused) => results.fail(entry_id, "invalid_argument", &refused.message),
            }
        }
    }
    Ok(results.answer())
}

async fn delete_batch(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let entries = wire::batch_entries(&read_body(body, BODY_LIMIT).await?)?;
    let mut results = Results::default();
    let (ids, handles) = parse_each(&entries, &mut results, wire::batch_receipt);
    if !handles.is_empty() {
        let outcomes = state
            .gateway
            .acknowledge(&target.caller, &handles, Some(&target.queue))
            .await?;
        results.settle_all(&ids, &outcomes);
    }
    Ok(results.answer())
}

async fn visibility_batch(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let entries = wire::batch_entries(&read_body(body, BODY_LIMIT).await?)?;
    let mut results = Results::default();
    let (ids, changes) = parse_each(&entries, &mut results, wire::batch_visibility);
    if !changes.is_empty() {
        let outcomes = state
            .gateway
            .change_visibility(&target.caller, &changes, Some(&target.queue))
            .await?;
        results.settle_all(&ids, &outcomes);
    }
    Ok(results.answer())
}
