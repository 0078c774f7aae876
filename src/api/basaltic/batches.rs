//! Batches of send, delete and visibility: up to ten entries with caller-chosen unique ids, one
//! result per entry (`successful` or `failed` with a code), so a caller retries only the
//! failures; the HTTP success of the whole says nothing of each entry.

use super::error::ErrorBody;
use super::wire::{self, BatchFailure, BatchFailureCode, BatchResults, BatchSuccess};
use super::{BODY_LIMIT, BasalticError, BasalticState};
use crate::api::common::{read_body, traceparent};
use crate::core::model::{EntryErrorKind, HandleOutcome};
use crate::core::trace_context::TraceContext;
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::Value;
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
struct Results(BatchResults);

impl Results {
    fn fail(&mut self, id: &str, code: BatchFailureCode, message: &str) {
        self.0.failed.push(BatchFailure {
            id: id.to_owned(),
            code,
            message: message.to_owned(),
        });
    }

    fn succeed(&mut self, id: &str, message_id: Option<String>) {
        self.0.successful.push(BatchSuccess {
            id: id.to_owned(),
            message_id,
        });
    }

    /// A handle's outcome.
    fn settle(&mut self, id: &str, outcome: &HandleOutcome) {
        match outcome {
            HandleOutcome::Ok => self.succeed(id, None),
            HandleOutcome::Stale | HandleOutcome::Expired => self.fail(
                id,
                BatchFailureCode::ReceiptHandleStale,
                "the receipt is not the current one: nothing changed",
            ),
            HandleOutcome::Invalid => self.fail(
                id,
                BatchFailureCode::ReceiptHandleInvalid,
                "not a receipt handle of this queue: nothing changed",
            ),
        }
    }

    fn settle_all(&mut self, ids: &[&str], outcomes: &[HandleOutcome]) {
        for (entry_id, outcome) in ids.iter().zip(outcomes) {
            self.settle(entry_id, outcome);
        }
    }

    fn answer(self) -> Json<BatchResults> {
        Json(self.0)
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
            Err(error) => results.fail(entry_id, BatchFailureCode::InvalidArgument, &error.message),
        }
    }
    (ids, parsed)
}

#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/messages/batch",
    operation_id = "SendMessageBatch",
    tag = "Queues",
    description = "Sends up to ten messages: takes `send`. Check each entry's result and retry only the failures: the HTTP success says nothing of each entry.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    request_body(content = wire::SendBatchRequest, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "One result per entry", body = BatchResults),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn send_batch(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<BatchResults>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let gateway = &state.gateway;
    let resolved = gateway.resolve_queue(&target.caller, &target.queue).await?;
    let entries = wire::batch_entries(&read_body(body, BODY_LIMIT).await?, &wire::SEND_BATCH)?;
    let mut results = Results::default();
    let (ids, mut messages) = parse_each(&entries, &mut results, |entry| {
        wire::batch_send(entry, resolved.attributes.fifo)
    });
    for message in &mut messages {
        TraceContext::carry_request_context(message, traceparent(&headers));
    }
    if !messages.is_empty() {
        let sent = gateway
            .send(&target.caller, &target.queue, &messages)
            .await?;
        for (entry_id, outcome) in ids.into_iter().zip(sent) {
            match outcome {
                Ok(sent) => results.succeed(entry_id, Some(sent.message_id)),
                Err(refused) if refused.kind == EntryErrorKind::Refused => {
                    results.fail(entry_id, BatchFailureCode::Unavailable, &refused.message)
                }
                Err(refused) => results.fail(
                    entry_id,
                    BatchFailureCode::InvalidArgument,
                    &refused.message,
                ),
            }
        }
    }
    Ok(results.answer())
}

#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/messages/delete-batch",
    operation_id = "DeleteMessageBatch",
    tag = "Queues",
    description = "Deletes up to ten messages by their current receipts: takes `delete`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    request_body(content = wire::DeleteBatchRequest, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "One result per entry", body = BatchResults),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn delete_batch(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<BatchResults>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let entries = wire::batch_entries(&read_body(body, BODY_LIMIT).await?, &wire::DELETE_BATCH)?;
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

#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/messages/visibility-batch",
    operation_id = "ChangeMessageVisibilityBatch",
    tag = "Queues",
    description = "Changes the leases of up to ten messages: takes `change_visibility`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    request_body(content = wire::VisibilityBatchRequest, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "One result per entry", body = BatchResults),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn visibility_batch(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<BatchResults>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let entries =
        wire::batch_entries(&read_body(body, BODY_LIMIT).await?, &wire::VISIBILITY_BATCH)?;
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
