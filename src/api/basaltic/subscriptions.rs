//! A queue's push subscriptions. `GET /v1/queues/{id}/subscriptions` shows them as operators
//! see them: state (active, backing off, disabled and why), deliveries in flight, attempts by
//! outcome and the latest attempts with status and latency (never bodies, receipts or secrets);
//! takes `read_metrics`. Subscriptions are made, changed, given a new secret and removed through
//! the routes below it, and every change is audited (`/subscription-audit`); those take
//! `manage_queues`, and changes also `receive` and `delete` (a subscription consumes the queue).
//! A secret is answered once, when it is made. Deleting the queue deletes its subscriptions.

use super::error::ErrorBody;
use super::wire::{
    self, AttemptJson, AuditPage, ManagedJson, SubscriptionJson, SubscriptionList,
    SubscriptionResult, SubscriptionWithSecret,
};
use super::{BODY_LIMIT, BasalticError, BasalticState, Target};
use crate::api::common::read_body;
use crate::core::GatewayError;
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, patch, post};
use chrono::SecondsFormat;
use std::sync::Arc;

/// Audit entries a page answers unless asked for fewer.
const AUDIT_PAGE: usize = 100;

type NamedPath = Result<Path<(String, String)>, PathRejection>;

pub(super) fn routes() -> axum::Router<Arc<BasalticState>> {
    axum::Router::new()
        .route(
            "/v1/queues/{queue_id}/subscriptions",
            get(subscriptions).post(create),
        )
        .route(
            "/v1/queues/{queue_id}/subscriptions/{name}",
            patch(change).delete(remove),
        )
        .route(
            "/v1/queues/{queue_id}/subscriptions/{name}/rotate-secret",
            post(rotate),
        )
        .route("/v1/queues/{queue_id}/subscription-audit", get(audit))
}

impl BasalticState {
    /// The request's queue, for a key that may manage its subscriptions (`changing`: and may
    /// consume the queue, as a subscription does); checked before any body is read.
    async fn subscription_admin(
        &self,
        headers: &HeaderMap,
        path: Result<Path<String>, PathRejection>,
        changing: bool,
    ) -> Result<Target, GatewayError> {
        let target = self.target(headers, path).await?;
        if !target.key.has_permission("manage_queues", &target.id) {
            return Err(GatewayError::permission_denied(
                "managing push subscriptions takes the manage_queues permission",
            ));
        }
        let consumes = ["receive", "delete"]
            .iter()
            .all(|permission| target.key.has_permission(permission, &target.id));
        if changing && !consumes {
            return Err(GatewayError::permission_denied(
                "a push subscription consumes the queue: managing one also takes the receive and delete permissions (receiving and deleting its messages)",
            ));
        }
        Ok(target)
    }

    /// The request's queue and subscription name, for a key that may manage them.
    async fn named_subscription(
        &self,
        headers: &HeaderMap,
        path: NamedPath,
    ) -> Result<(Target, String), GatewayError> {
        match path {
            Ok(Path((queue_id, name))) => Ok((
                self.subscription_admin(headers, Ok(Path(queue_id)), true)
                    .await?,
                name,
            )),
            Err(_) => {
                self.authenticate(headers)?;
                Err(GatewayError::invalid_request("the path is not valid"))
            }
        }
    }
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
    let mut managed: std::collections::BTreeMap<String, ManagedJson> = state
        .gateway
        .managed_push_subscriptions(&target.caller, &target.queue)
        .await?
        .into_iter()
        .map(|one| (one.name.clone(), ManagedJson::from(one)))
        .collect();
    let subscriptions = state
        .gateway
        .push_subscriptions(&target.caller, &target.queue)?
        .into_iter()
        .map(|snapshot| {
            let managed = managed.remove(&snapshot.name);
            SubscriptionJson {
                source: if managed.is_some() { "api" } else { "config" },
                endpoint: managed
                    .as_ref()
                    .map_or(snapshot.endpoint, |managed| managed.endpoint.clone()),
                managed,
                name: snapshot.name,
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
            }
        })
        .collect();
    Ok(Json(SubscriptionList { subscriptions }))
}

#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/subscriptions",
    operation_id = "CreateSubscription",
    tag = "Queues",
    description = "Makes a push subscription of the queue: the gateway posts its messages to `url`, signed as Standard Webhooks with the secret answered here, once (it is not shown again). Audited. Takes `manage_queues`, `receive` and `delete` (a subscription consumes the queue).",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    request_body(content = wire::NewSubscriptionRequest, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The subscription, with its secret", body = SubscriptionWithSecret),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        (status = 409, description = "A subscription of that name exists (`conflict`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn create(
    State(state): State<Arc<BasalticState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<SubscriptionWithSecret>), BasalticError> {
    let target = state.subscription_admin(&headers, path, true).await?;
    let (name, settings) = wire::parse_new_subscription(&read_body(body, BODY_LIMIT).await?)?;
    let made = state
        .gateway
        .create_push_subscription(&target.caller, &target.queue, &name, settings)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(SubscriptionWithSecret {
            subscription: made.managed.into(),
            secret: made.secret.to_string(),
        }),
    ))
}

#[utoipa::path(
    patch,
    path = "/v1/queues/{queue_id}/subscriptions/{name}",
    operation_id = "UpdateSubscription",
    tag = "Queues",
    description = "Changes a push subscription made through the API (one the config file defines is changed there: `409 conflict`); `enabled` stops or restarts its deliveries. Audited. Takes `manage_queues`, `receive` and `delete`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
        ("name" = String, Path, description = "The subscription's name"),
    ),
    request_body(content = wire::SubscriptionChangeRequest, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The subscription as changed", body = SubscriptionResult),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        (status = 404, description = "The queue has no such subscription (`not_found`)", body = ErrorBody),
        (status = 409, description = "The config file defines it, or it changed meanwhile (`conflict`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn change(
    State(state): State<Arc<BasalticState>>,
    path: NamedPath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<SubscriptionResult>, BasalticError> {
    let (target, name) = state.named_subscription(&headers, path).await?;
    let change = wire::parse_subscription_change(&read_body(body, BODY_LIMIT).await?)?;
    let changed = state
        .gateway
        .update_push_subscription(&target.caller, &target.queue, &name, change)
        .await?;
    Ok(Json(SubscriptionResult {
        subscription: changed.into(),
    }))
}

#[utoipa::path(
    delete,
    path = "/v1/queues/{queue_id}/subscriptions/{name}",
    operation_id = "DeleteSubscription",
    tag = "Queues",
    description = "Removes a push subscription made through the API: no new delivery starts; those in flight end as they would. Audited. Takes `manage_queues`, `receive` and `delete`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
        ("name" = String, Path, description = "The subscription's name"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        (status = 404, description = "The queue has no such subscription (`not_found`)", body = ErrorBody),
        (status = 409, description = "The config file defines it, or it changed meanwhile (`conflict`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn remove(
    State(state): State<Arc<BasalticState>>,
    path: NamedPath,
    headers: HeaderMap,
) -> Result<StatusCode, BasalticError> {
    let (target, name) = state.named_subscription(&headers, path).await?;
    state
        .gateway
        .delete_push_subscription(&target.caller, &target.queue, &name)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/subscriptions/{name}/rotate-secret",
    operation_id = "RotateSubscriptionSecret",
    tag = "Queues",
    description = "Gives a push subscription made through the API a new signing secret, answered once; the replaced one signs beside it for `overlap_seconds` (both signatures in `webhook-signature`), so receivers move to the new one without a gap. Audited. Takes `manage_queues`, `receive` and `delete`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
        ("name" = String, Path, description = "The subscription's name"),
    ),
    request_body(content = Option<wire::RotationRequest>, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The subscription, with its new secret", body = SubscriptionWithSecret),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        (status = 404, description = "The queue has no such subscription (`not_found`)", body = ErrorBody),
        (status = 409, description = "The config file defines it, or it changed meanwhile (`conflict`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn rotate(
    State(state): State<Arc<BasalticState>>,
    path: NamedPath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<SubscriptionWithSecret>, BasalticError> {
    let (target, name) = state.named_subscription(&headers, path).await?;
    let overlap = wire::parse_rotation(&read_body(body, BODY_LIMIT).await?)?;
    let rotated = state
        .gateway
        .rotate_push_secret(&target.caller, &target.queue, &name, overlap)
        .await?;
    Ok(Json(SubscriptionWithSecret {
        subscription: rotated.managed.into(),
        secret: rotated.secret.to_string(),
    }))
}

#[utoipa::path(
    get,
    path = "/v1/queues/{queue_id}/subscription-audit",
    operation_id = "ListSubscriptionAudit",
    tag = "Queues",
    description = "Every change to the queue's push subscriptions made through the API, newest first: who, what, which fields (never a secret). Takes `manage_queues`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "The most entries (default 100)"),
        ("before" = Option<u64>, Query, minimum = 1, maximum = 9_223_372_036_854_775_807_i64, description = "Entries older than this one: the `next` of the page before"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of the trail", body = AuditPage),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn audit(
    State(state): State<Arc<BasalticState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<AuditPage>, BasalticError> {
    let target = state.subscription_admin(&headers, path, false).await?;
    let (limit, before) = audit_query(query.as_deref())?;
    let entries = state
        .gateway
        .push_subscription_audit(&target.caller, &target.queue, limit + 1, before)
        .await?;
    let more = entries.len() > limit;
    let entries: Vec<wire::AuditJson> = entries.into_iter().take(limit).map(Into::into).collect();
    let next = if more {
        entries.last().map(|last| last.seq)
    } else {
        None
    };
    Ok(Json(AuditPage { entries, next }))
}

/// An audit page's query: `limit` (1–1000, default 100) and `before` (a page's `next`).
fn audit_query(query: Option<&str>) -> Result<(usize, Option<u64>), GatewayError> {
    let refused = || {
        GatewayError::out_of_range(
            "the query parameters are limit, 1 to 1000, and before, a page's next",
        )
    };
    let (mut limit, mut before) = (AUDIT_PAGE, None);
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match name.as_ref() {
            "limit" => {
                limit = value
                    .parse::<usize>()
                    .ok()
                    .filter(|limit| (1..=1000).contains(limit))
                    .ok_or_else(refused)?;
            }
            "before" => {
                before = Some(
                    value
                        .parse::<u64>()
                        .ok()
                        .filter(|seq| (1..=i64::MAX as u64).contains(seq))
                        .ok_or_else(refused)?,
                );
            }
            _ => return Err(refused()),
        }
    }
    Ok((limit, before))
}
