//! A queue's messages: send (`201` with the message id), receive (a lease), delete by the
//! current receipt (`204`), and visibility (counted from the change; 0 releases). A receipt of
//! another queue, or from before another receive, changes nothing and says so.

use super::wire;
use super::{BODY_LIMIT, BasalticError, BasalticState};
use crate::api::read_body;
use crate::core::model::{EntryErrorKind, HandleOutcome};
use crate::core::{ErrorKind, GatewayError};
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::Arc;

pub(super) fn routes() -> axum::Router<Arc<BasalticState>> {
    axum::Router::new()
        .route(
            "/v1/queues/{queue_id}/messages",
            post(send).delete(delete).get(inspect),
        )
        .route("/v1/queues/{queue_id}/purge", post(purge))
        .route("/v1/queues/{queue_id}/messages/receive", post(receive))
        .route(
            "/v1/queues/{queue_id}/messages/visibility",
            post(visibility),
        )
}

type QueuePath = Result<Path<String>, PathRejection>;

async fn send(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Value>), BasalticError> {
    let target = state.target(&headers, path).await?;
    let queue = target.queue.as_str();
    let caller = &target.caller;
    let fifo = state
        .gateway
        .resolve_queue(caller, queue)
        .await?
        .attributes
        .fifo;
    let message = wire::parse_send(&read_body(body, BODY_LIMIT).await?, fifo)?;
    let mut results = state
        .gateway
        .send(caller, queue, std::slice::from_ref(&message))
        .await?;
    match results.pop() {
        Some(Ok(sent)) => Ok((
            StatusCode::CREATED,
            Json(json!({ "result": { "message_id": sent.message_id } })),
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

async fn receive(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let queue = target.queue.as_str();
    let options = wire::parse_receive(&read_body(body, BODY_LIMIT).await?)?;
    let deliveries = state
        .gateway
        .receive(&target.caller, queue, options)
        .await?;
    let messages: Vec<Value> = deliveries.into_iter().map(wire::message).collect();
    Ok(Json(json!({ "messages": messages })))
}

/// The one handle of a delete or visibility change, judged: `204`, or why nothing changed.
fn settled(outcomes: &[HandleOutcome]) -> Result<StatusCode, BasalticError> {
    match outcomes.first() {
        Some(HandleOutcome::Ok) => Ok(StatusCode::NO_CONTENT),
        Some(HandleOutcome::Stale) => Err(BasalticError::coded(
            StatusCode::CONFLICT,
            "receipt_handle_stale",
            "the receipt is not the current one (the message was received again, released, or \
             deleted): nothing changed",
        )),
        _ => Err(BasalticError::coded(
            StatusCode::BAD_REQUEST,
            "receipt_handle_invalid",
            "not a receipt handle of this queue: nothing changed",
        )),
    }
}

async fn delete(
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

async fn visibility(
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

/// `GET /v1/queues/{id}/messages?max_messages=N` (1–10, default 10): messages read without a
/// lease, visibility and receive counts unchanged. The sqs backend cannot: `501`.
async fn inspect(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let queue = target.queue.as_str();
    let mut max = 10;
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match (name.as_ref(), value.parse::<usize>()) {
            ("max_messages", Ok(number)) if (1..=10).contains(&number) => max = number,
            _ => {
                return Err(GatewayError::out_of_range(
                    "the only query parameter is max_messages, 1 to 10",
                )
                .into());
            }
        }
    }
    let messages = state
        .gateway
        .peek(&target.caller, queue, max)
        .await
        .map_err(|error| {
            if error.kind == ErrorKind::Unsupported {
                GatewayError::new(
                    ErrorKind::Unsupported,
                    "inspecting needs a backend that reads messages without a lease; Amazon SQS \
                     (the sqs backend) cannot, and a receive would change visibility and \
                     receive counts",
                )
            } else {
                error
            }
        })?;
    let messages: Vec<Value> = messages.into_iter().map(wire::inspected).collect();
    Ok(Json(json!({ "messages": messages })))
}

/// `POST /v1/queues/{id}/purge`: deletes every message, in flight included (their receipts
/// become stale).
async fn purge(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
) -> Result<StatusCode, BasalticError> {
    let target = state.target(&headers, path).await?;
    let queue = target.queue.as_str();
    state.gateway.purge(&target.caller, queue).await?;
    Ok(StatusCode::NO_CONTENT)
}
