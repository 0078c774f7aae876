//! `GET /v1/queues/{id}/subscriptions`: the queue's push subscriptions as operators see them:
//! state (active, backing off, disabled and why), deliveries in flight, attempts by outcome and
//! the latest attempts with status and latency (never bodies, receipts or secrets). Takes
//! `read_metrics`.

use super::error::ErrorBody;
use super::wire::{self, AttemptJson, SubscriptionJson, SubscriptionList};
use super::{BasalticError, BasalticState};
use crate::core::GatewayError;
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::get;
use chrono::SecondsFormat;
use std::sync::Arc;

pub(super) fn routes() -> axum::Router<Arc<BasalticState>> {
    axum::Router::new().route("/v1/queues/{queue_id}/subscriptions", get(subscriptions))
}

#[utoipa::path(
    get,
    path = "/v1/queues/{queue_id}/subscriptions",
    operation_id = "ListSubscriptions",
    tag = "Queues",
    description = "The queue's push subscriptions: state, deliveries in flight, attempts by outcome and the latest attempts (never bodies or secrets). Takes `read_metrics`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The subscriptions", body = SubscriptionList),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn subscriptions(
    State(state): State<Arc<BasalticState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<SubscriptionList>, BasalticError> {
    let target = state.target(&headers, path).await?;
    if !target.key.has_permission("read_metrics", &target.id) {
        return Err(GatewayError::permission_denied(
            "reading subscriptions takes the read_metrics permission",
        )
        .into());
    }
    let subscriptions = state
        .gateway
        .push_subscriptions(&target.caller, &target.queue)?
        .into_iter()
        .map(|snapshot| SubscriptionJson {
            name: snapshot.name,
            endpoint: snapshot.endpoint,
            state: snapshot.state,
            disabled_because: snapshot.disabled_because,
            in_flight: snapshot.in_flight,
            window: snapshot.window,
            max_concurrency: snapshot.max_concurrency,
            failures_in_a_row: snapshot.failures_in_a_row,
            outcomes: snapshot.outcomes,
            log: snapshot
                .log
                .into_iter()
                .map(|attempt| AttemptJson {
                    at: attempt.at.to_rfc3339_opts(SecondsFormat::Millis, true),
                    message_id: attempt.message_id,
                    attempt: attempt.attempt,
                    outcome: attempt.outcome,
                    status: attempt.status,
                    latency_ms: u64::try_from(attempt.latency.as_millis()).unwrap_or(u64::MAX),
                })
                .collect(),
        })
        .collect();
    Ok(Json(SubscriptionList { subscriptions }))
}
