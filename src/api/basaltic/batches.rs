//! Batches of send, delete and visibility: up to ten entries with caller-chosen unique ids, one
//! result per entry (`successful` or `failed` with a code), so a caller retries only the
//! failures; the HTTP success of the whole says nothing of each entry.

use super::queues::queue_id;
use super::wire;
use super::{BODY_LIMIT, BasalticError, BasalticState};
use crate::api::read_body;
use crate::core::model::HandleOutcome;
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

    fn answer(self) -> Json<Value> {
        Json(json!({ "successful": self.successful, "failed": self.failed }))
    }
}

async fn send_batch(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, BasalticError> {
    let key = state.authenticate(&headers)?;
    let id = queue_id(path)?;
    let queue = state.queue_of(key, &id).await?;
    let caller = key.caller_on(&id, &queue);
    let fifo = state
        .gateway
        .resolve_queue(&caller, &queue)
        .await?
        .attributes
        .fifo;
    let entries = wire::batch_entries(&read_body(body, BODY_LIMIT).await?)?;
    let mut results = Results::default();
    let mut sending = Vec::new();
    let mut messages = Vec::new();
    for (entry_id, entry) in &entries {
        match wire::batch_send(entry, fifo) {
            Ok(message) => {
                sending.push(entry_id.as_str());
                messages.push(message);
            }
            Err(error) => results.fail(entry_id, "invalid_argument", &error.message),
        }
    }
    if !messages.is_empty() {
        let sent = state.gateway.send(&caller, &queue, &messages).await?;
        for (entry_id, outcome) in sending.into_iter().zip(sent) {
            match outcome {
                Ok(sent) => results
                    .successful
                    .push(json!({ "id": entry_id, "message_id": sent.message_id })),
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
    let key = state.authenticate(&headers)?;
    let id = queue_id(path)?;
    let queue = state.queue_of(key, &id).await?;
    let entries = wire::batch_entries(&read_body(body, BODY_LIMIT).await?)?;
    let mut results = Results::default();
    let mut ids = Vec::new();
    let mut handles = Vec::new();
    for (entry_id, entry) in &entries {
        match wire::batch_receipt(entry) {
            Ok(handle) => {
                ids.push(entry_id.as_str());
                handles.push(handle);
            }
            Err(error) => results.fail(entry_id, "invalid_argument", &error.message),
        }
    }
    if !handles.is_empty() {
        let outcomes = state
            .gateway
            .acknowledge(&key.caller_on(&id, &queue), &handles, Some(&queue))
            .await?;
        for (entry_id, outcome) in ids.into_iter().zip(&outcomes) {
            results.settle(entry_id, outcome);
        }
    }
    Ok(results.answer())
}

async fn visibility_batch(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, BasalticError> {
    let key = state.authenticate(&headers)?;
    let id = queue_id(path)?;
    let queue = state.queue_of(key, &id).await?;
    let entries = wire::batch_entries(&read_body(body, BODY_LIMIT).await?)?;
    let mut results = Results::default();
    let mut ids = Vec::new();
    let mut changes = Vec::new();
    for (entry_id, entry) in &entries {
        match wire::batch_visibility(entry) {
            Ok(change) => {
                ids.push(entry_id.as_str());
                changes.push(change);
            }
            Err(error) => results.fail(entry_id, "invalid_argument", &error.message),
        }
    }
    if !changes.is_empty() {
        let outcomes = state
            .gateway
            .change_visibility(&key.caller_on(&id, &queue), &changes, Some(&queue))
            .await?;
        for (entry_id, outcome) in ids.into_iter().zip(&outcomes) {
            results.settle(entry_id, outcome);
        }
    }
    Ok(results.answer())
}
