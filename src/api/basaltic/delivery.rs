//! Pausing and resuming a queue's delivery: an operator's control for an incident. While a queue
//! is paused every receive of it (this API's, and ezgh's, sombus's and the SQS endpoint's) answers
//! no message once its long poll is waited out, its push subscriptions post nothing, and sends go
//! on. Both take `manage_queues`, are audited (`/subscription-audit`), and are kept across
//! restarts and shared by replicas.

use super::wire::{self, QueueResult};
use super::{BasalticError, BasalticState};
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::post;
use std::sync::Arc;

pub(super) fn routes() -> axum::Router<Arc<BasalticState>> {
    axum::Router::new()
        .route("/v1/queues/{queue_id}/pause", post(pause))
        .route("/v1/queues/{queue_id}/resume", post(resume))
}

/// `POST /v1/queues/{id}/pause`.
#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/pause",
    operation_id = "PauseDelivery",
    tag = "Queues",
    description = "Pauses the queue's delivery: every receive of it, in every API, answers no message once its long poll is waited out, and its push subscriptions post nothing, while sends go on. A paused queue stays paused since it was. Takes `manage_queues`; audited.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The queue, `delivery_paused` true", body = QueueResult),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn pause(
    State(state): State<Arc<BasalticState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<QueueResult>, BasalticError> {
    set_paused(&state, path, &headers, true).await
}

/// `POST /v1/queues/{id}/resume`.
#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/resume",
    operation_id = "ResumeDelivery",
    tag = "Queues",
    description = "Ends the queue's pause: waiting receives go on at once. A queue not paused is left as it is. Takes `manage_queues`; audited.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The queue, `delivery_paused` false", body = QueueResult),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn resume(
    State(state): State<Arc<BasalticState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<QueueResult>, BasalticError> {
    set_paused(&state, path, &headers, false).await
}

/// Pauses (`pause`) or resumes the path's queue; answers it as it is then.
async fn set_paused(
    state: &BasalticState,
    path: Result<Path<String>, PathRejection>,
    headers: &HeaderMap,
    pause: bool,
) -> Result<Json<QueueResult>, BasalticError> {
    let target = state.target(headers, path).await?;
    if pause {
        state
            .gateway
            .pause_delivery(&target.caller, &target.queue)
            .await?;
    } else {
        state
            .gateway
            .resume_delivery(&target.caller, &target.queue)
            .await?;
    }
    Ok(Json(state.queue_result(&target).await?))
}
