//! A queue's messages: send (`201` with the message id), receive (a lease), delete by the
//! current receipt (`204`), and visibility (counted from the change; 0 releases). A receipt of
//! another queue, or from before another receive, changes nothing and says so.

use super::error::ErrorBody;
use super::wire::{self, ReceivedMessages, SendResult, SentMessage};
use super::{BODY_LIMIT, BasalticError, BasalticState};
use crate::api::common::{read_body, traceparent};
use crate::core::model::{EntryErrorKind, HandleOutcome};
use crate::core::trace_context::TraceContext;
use crate::core::{ErrorKind, GatewayError};
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use std::sync::Arc;

pub(super) fn routes() -> axum::Router<Arc<BasalticState>> {
    axum::Router::new()
        .route(
            "/v1/queues/{queue_id}/messages",
            post(send).delete(delete).get(super::inspecting::inspect),
        )
        .route("/v1/queues/{queue_id}/purge", post(purge))
        .route("/v1/queues/{queue_id}/messages/receive", post(receive))
        .route(
            "/v1/queues/{queue_id}/messages/visibility",
            post(visibility),
        )
}

type QueuePath = Result<Path<String>, PathRejection>;

#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/messages",
    operation_id = "SendMessage",
    tag = "Queues",
    description = "Sends a message: takes `send`. Standard queues may set `delay_seconds`; FIFO queues take `group_id` (and use the queue's delay).",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    request_body(content = wire::SendRequest, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The message's id", body = SendResult),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn send(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<SendResult>), BasalticError> {
    let target = state.target(&headers, path).await?;
    let queue = target.queue.as_str();
    let caller = &target.caller;
    let fifo = state
        .gateway
        .resolve_queue(caller, queue)
        .await?
        .attributes
        .fifo;
    let mut message = wire::parse_send(&read_body(body, BODY_LIMIT).await?, fifo)?;
    TraceContext::carry_request_context(&mut message, traceparent(&headers));
    let mut results = state
        .gateway
        .send(caller, queue, std::slice::from_ref(&message))
        .await?;
    match results.pop() {
        Some(Ok(sent)) => Ok((
            StatusCode::CREATED,
            Json(SendResult {
                result: SentMessage {
                    message_id: sent.message_id,
                },
            }),
        )),
        // The backend's own refusal (its reason logged) is not the caller's fault: retry.
        Some(Err(refused)) if refused.kind == EntryErrorKind::Refused => Err(GatewayError::new(
            ErrorKind::Unavailable {
                retry_after: crate::core::backend::DEFAULT_RETRY_AFTER,
            },
            refused.message,
        )
        .into()),
        Some(Err(refused)) => Err(GatewayError::invalid_request(refused.message).into()),
        None => Err(GatewayError::internal("the backend answered no result").into()),
    }
}

#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/messages/receive",
    operation_id = "ReceiveMessages",
    tag = "Queues",
    description = "Receives messages with a lease: takes `receive`. Fewer than ten messages, even none, is a valid result; give your HTTP client a timeout longer than the wait.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    request_body(content = Option<wire::ReceiveRequest>, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "0 to `max_messages` messages", body = ReceivedMessages),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        (status = 429, description = "Too many messages are in flight (`over_limit`): delete or release some", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn receive(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<ReceivedMessages>, BasalticError> {
    let target = state.target(&headers, path).await?;
    // The head's bytes are the connection's read buffer: a long poll waits without them.
    drop(headers);
    let queue = target.queue.as_str();
    let options = wire::parse_receive(&read_body(body, BODY_LIMIT).await?)?;
    let deliveries = state
        .gateway
        .receive(&target.caller, queue, options)
        .await?;
    let messages = deliveries.into_iter().map(wire::message).collect();
    Ok(Json(ReceivedMessages { messages }))
}

/// The one handle of a delete or visibility change, judged: `204`, or why nothing changed.
fn settled(outcomes: &[HandleOutcome]) -> Result<StatusCode, BasalticError> {
    match outcomes.first() {
        Some(HandleOutcome::Ok) => Ok(StatusCode::NO_CONTENT),
        Some(HandleOutcome::Stale | HandleOutcome::Expired) => Err(BasalticError::coded(
            StatusCode::CONFLICT,
            super::error::RECEIPT_HANDLE_STALE,
            "the receipt is not the current one (the message was received again, released, or \
             deleted): nothing changed",
        )),
        _ => Err(BasalticError::coded(
            StatusCode::BAD_REQUEST,
            super::error::RECEIPT_HANDLE_INVALID,
            "not a receipt handle of this queue: nothing changed",
        )),
    }
}

#[utoipa::path(
    delete,
    path = "/v1/queues/{queue_id}/messages",
    operation_id = "DeleteMessage",
    tag = "Queues",
    description = "Deletes a message with its current receipt (URL-encoded): takes `delete`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
        ("receipt_handle" = String, Query, min_length = 1, description = "The current receipt, URL-encoded"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "The request is not valid (`invalid_argument`), or the receipt is none of this queue's (`receipt_handle_invalid`)", body = ErrorBody),
        (status = 409, description = "The receipt is not the current one: the message was received again, released or deleted; nothing changed (`receipt_handle_stale`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn delete(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<StatusCode, BasalticError> {
    let target = state.target(&headers, path).await?;
    let queue = target.queue.as_str();
    let mut handle = None;
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if name != "receipt_handle" || handle.is_some() {
            return Err(GatewayError::new(
                ErrorKind::InvalidRequest,
                "the only query parameter is receipt_handle, once",
            )
            .into());
        }
        handle = Some(value.into_owned());
    }
    let handle = handle
        .filter(|handle| !handle.is_empty())
        .ok_or_else(|| GatewayError::invalid_request("receipt_handle is required"))?;
    let outcomes = state
        .gateway
        .acknowledge(&target.caller, &[handle], Some(queue))
        .await?;
    settled(&outcomes)
}

#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/messages/visibility",
    operation_id = "ChangeMessageVisibility",
    tag = "Queues",
    description = "Changes a message's lease, counted from the change; 0 makes it available again: takes `change_visibility`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    request_body(content = wire::VisibilityRequest, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Changed"),
        (status = 400, description = "The request is not valid (`invalid_argument`), or the receipt is none of this queue's (`receipt_handle_invalid`)", body = ErrorBody),
        (status = 409, description = "The receipt is not the current one: the message was received again, released or deleted; nothing changed (`receipt_handle_stale`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn visibility(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<StatusCode, BasalticError> {
    let target = state.target(&headers, path).await?;
    let queue = target.queue.as_str();
    let entry = wire::parse_visibility(&read_body(body, BODY_LIMIT).await?)?;
    let outcomes = state
        .gateway
        .change_visibility(&target.caller, &[entry], Some(queue))
        .await?;
    settled(&outcomes)
}

/// `POST /v1/queues/{id}/purge`: deletes every message, in flight included (their receipts
/// become stale).
#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/purge",
    operation_id = "PurgeQueue",
    tag = "Queues",
    description = "Deletes every message, leased ones included (their receipts become stale): takes `purge`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Purged"),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn purge(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
) -> Result<StatusCode, BasalticError> {
    let target = state.target(&headers, path).await?;
    let queue = target.queue.as_str();
    state.gateway.purge(&target.caller, queue).await?;
    Ok(StatusCode::NO_CONTENT)
}
