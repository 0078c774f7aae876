//! The pull routes: receive, acknowledge, release (nack) and skills, each for the connection the
//! token belongs to, checked in the documented order (token, connection, workspace, client id),
//! then counted against the connection's tier before anything else happens.

use super::error::{SombusError, UNAVAILABLE_RETRY, rule};
use super::wire::{self, Acked, Nacked, PulledMessage, Received, Skills};
use super::{BODY_LIMIT, SombusState, registrations};
use crate::api::common::read_body;
use crate::core::access::{Caller, Principal};
use crate::core::limits::{Allowance, Limit, LimitKey};
use crate::core::model::HandleOutcome;
use crate::core::request_scope;
use crate::credentials::oauth::check::MAX_RECHECK;
use crate::credentials::oauth::{Connection, Refusal};
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use std::sync::Arc;
use std::time::Duration;

/// How fresh what a replica read of the connection must be before a long poll: a receive may
/// wait 20 s before it answers, so the connection must have been read at most 10 s earlier for
/// a change to stop deliveries within 30 s.
const BEFORE_LONG_POLL: Duration = Duration::from_secs(10);

/// How long to wait before reading registrations again after they could not be read.
const SKILLS_RETRY: Duration = Duration::from_secs(30);

/// The pull routes, each documented by its handler's `utoipa::path`.
pub(super) fn routes() -> axum::Router<Arc<SombusState>> {
    axum::Router::new()
        .route(
            "/v1/tenants/{tenant}/consumers/{client}/messages",
            get(receive),
        )
        .route(
            "/v1/tenants/{tenant}/consumers/{client}/ack",
            post(acknowledge),
        )
        .route(
            "/v1/tenants/{tenant}/consumers/{client}/nack",
            post(release),
        )
        .route(
            "/v1/tenants/{tenant}/consumers/{client}/skills",
            get(skills),
        )
}

type ConsumerPath = Result<Path<(String, String)>, PathRejection>;

/// An admitted caller of the pull routes: its connection, and the core caller it is.
struct Consumer {
    connection: Arc<Connection>,
    caller: Caller,
}

impl SombusState {
    /// Authenticates the token, holds it to the path, and counts the request.
    async fn consumer(
        &self,
        headers: &HeaderMap,
        path: ConsumerPath,
        fresh_within: Duration,
    ) -> Result<Consumer, SombusError> {
        // The client id the path names is the one a failed authentication is logged as claiming.
        let refused = || {
            let claimed = path.as_ref().ok().map(|Path((_, client))| client.as_str());
            request_scope::note_refused("client", claimed);
        };
        let token = crate::api::common::bearer_token(headers).ok_or_else(|| {
            refused();
            SombusError::new(
                StatusCode::UNAUTHORIZED,
                rule::UNAUTHENTICATED,
                "send the access token as `Authorization: Bearer <token>`",
            )
        })?;
        let (claims, connection) =
            self.check
                .check(token, fresh_within)
                .await
                .map_err(|refusal| match refusal {
                    Refusal::Unauthenticated(why) => {
                        refused();
                        SombusError::new(StatusCode::UNAUTHORIZED, rule::UNAUTHENTICATED, why)
                    }
                    Refusal::NotRegistered(why) => {
                        refused();
                        SombusError::new(StatusCode::FORBIDDEN, rule::NOT_REGISTERED, why)
                    }
                    Refusal::Unavailable => SombusError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        rule::QUEUE_UNAVAILABLE,
                        "your connection couldn't be read; retry after Retry-After",
                    )
                    .retry_after(UNAVAILABLE_RETRY),
                })?;
        request_scope::note_caller(&Principal::Token(connection.client_id.clone()));
        let Path((tenant, client)) = path.map_err(|_| {
            SombusError::bad_request("the path is not valid: its segments must be UTF-8")
        })?;
        if claims.tenant != tenant {
            return Err(SombusError::new(
                StatusCode::FORBIDDEN,
                rule::TENANT_MISMATCH,
                "the workspace in the path is not your token's: use its tenant claim",
            ));
        }
        if claims.sub != client {
            return Err(SombusError::new(
                StatusCode::FORBIDDEN,
                rule::NOT_OWNER,
                "the client id in the path is not your connection's: use your client id",
            ));
        }
        let tier = self
            .tiers
            .get(&connection.tier)
            .or_else(|| self.tiers.get(super::config::DEFAULT_TIER))
            .copied()
            .unwrap_or(super::config::TierConfig::STANDARD);
        let limits = self.gateway.limits();
        let key = LimitKey::SombusConnection(&connection.client_id).to_string();
        let allowance = Allowance {
            per_second: tier.requests_per_second,
            burst: tier.burst,
        };
        // The rate first: a request it refuses does not count against the day.
        limits
            .all(&[
                Limit::rate(
                    &key,
                    allowance,
                    "over the connection's request rate; back off and retry",
                ),
                Limit::per_day(
                    &key,
                    1,
                    tier.requests_per_day,
                    "over the connection's daily quota; it resets at midnight UTC",
                ),
            ])
            .await?;
        Ok(Consumer {
            caller: connection.caller(),
            connection,
        })
    }
}

#[utoipa::path(
    get,
    path = "/v1/tenants/{tenant}/consumers/{client}/messages",
    operation_id = "receive",
    tag = "pull",
    summary = "Receive a batch of messages",
    description = "Receives up to `max` messages of your connection's queue, waiting up to `wait` \
        seconds for one when none is ready. The answer is 200, with no messages when none arrived \
        within `wait`. Messages of one `correlation_id` arrive in the order the bus accepted them.",
    params(wire::ConsumerPath, wire::ReceiveQuery),
    security(("consumer_token" = [])),
    responses(
        (status = 200, description = "The messages received (none when none arrived within `wait`).", body = Received),
        super::wire::PullRefusals,
    )
)]
async fn receive(
    State(state): State<Arc<SombusState>>,
    path: ConsumerPath,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<Received>, SombusError> {
    let consumer = state.consumer(&headers, path, BEFORE_LONG_POLL).await?;
    // The head's bytes are the connection's read buffer: a long poll waits without them.
    drop(headers);
    let options = wire::parse_receive_query(query.as_deref())?;
    let deliveries = state
        .gateway
        .receive(&consumer.caller, &consumer.connection.queue, options)
        .await?;
    let now = state.clock.now();
    Ok(Json(Received {
        messages: deliveries
            .into_iter()
            .map(|delivery| PulledMessage::new(delivery, now))
            .collect(),
    }))
}

#[utoipa::path(
    post,
    path = "/v1/tenants/{tenant}/consumers/{client}/ack",
    operation_id = "acknowledge",
    tag = "pull",
    summary = "Acknowledge messages",
    description = "You're done with these messages; they are removed. Each handle succeeds or \
        fails on its own, so the answer is 200 even when some fail. A handle fails when it is \
        malformed or not from your queue.",
    params(wire::ConsumerPath),
    request_body(content = wire::AckRequest, content_type = "application/json"),
    security(("consumer_token" = [])),
    responses(
        (status = 200, description = "Each handle, acknowledged or failed.", body = Acked),
        super::wire::PullRefusals,
    )
)]
async fn acknowledge(
    State(state): State<Arc<SombusState>>,
    path: ConsumerPath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Acked>, SombusError> {
    let (handles, outcomes) = settle(&state, path, &headers, body, false).await?;
    Ok(Json(Acked::new(handles, &outcomes)))
}

#[utoipa::path(
    post,
    path = "/v1/tenants/{tenant}/consumers/{client}/nack",
    operation_id = "release",
    tag = "pull",
    summary = "Release (nack) messages",
    description = "You can't handle these messages now: they are visible again at once, or after \
        `delay_seconds`. Each handle succeeds or fails on its own, so the answer is 200 even when \
        some fail. A message delivered too many times without an acknowledgement moves to your \
        dead-letter queue after the connection's attempt limit (5 unless chosen otherwise).",
    params(wire::ConsumerPath),
    request_body(content = wire::NackRequest, content_type = "application/json"),
    security(("consumer_token" = [])),
    responses(
        (status = 200, description = "Each handle, released or failed.", body = Nacked),
        super::wire::PullRefusals,
    )
)]
async fn release(
    State(state): State<Arc<SombusState>>,
    path: ConsumerPath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Nacked>, SombusError> {
    let (handles, outcomes) = settle(&state, path, &headers, body, true).await?;
    Ok(Json(Nacked::new(handles, &outcomes)))
}

/// Acknowledges the body's handles, or releases them after its `delay_seconds`: the handles
/// and the outcome of each.
async fn settle(
    state: &SombusState,
    path: ConsumerPath,
    headers: &HeaderMap,
    body: Body,
    release: bool,
) -> Result<(Vec<String>, Vec<HandleOutcome>), SombusError> {
    let consumer = state.consumer(headers, path, MAX_RECHECK).await?;
    let (handles, delay) = wire::parse_handles(&read_body(body, BODY_LIMIT).await?, release)?;
    let queue = Some(consumer.connection.queue.as_str());
    let gateway = &state.gateway;
    let outcomes = if release {
        // A delay past 12 hours from the delivery's receive ends at that mark (SQS's in-flight
        // cap): the core clamps it.
        let entries: Vec<(String, u32)> = handles
            .iter()
            .map(|handle| (handle.clone(), delay))
            .collect();
        gateway
            .change_visibility(&consumer.caller, &entries, queue)
            .await?
    } else {
        gateway
            .acknowledge(&consumer.caller, &handles, queue)
            .await?
    };
    Ok((handles, outcomes))
}

#[utoipa::path(
    get,
    path = "/v1/tenants/{tenant}/consumers/{client}/skills",
    operation_id = "skills",
    tag = "pull",
    summary = "A skill executor's registrations",
    description = "In a house, a skill executor reads the configured instances the house bound to \
        its connection, with their values and authority scale. Same token, no parameters.",
    params(wire::ConsumerPath),
    security(("consumer_token" = [])),
    responses(
        (status = 200, description = "The registrations bound to the connection (none when none are).", body = Skills),
        super::wire::PullRefusals,
    )
)]
async fn skills(
    State(state): State<Arc<SombusState>>,
    path: ConsumerPath,
    headers: HeaderMap,
) -> Result<Json<Skills>, SombusError> {
    let consumer = state.consumer(&headers, path, MAX_RECHECK).await?;
    let connection = &consumer.connection;
    let registrations = registrations::bound_to(
        state.registrations.as_deref(),
        &connection.workspace,
        &connection.client_id,
    )
    .await
    .map_err(|error| {
        tracing::error!(%error, "skill registrations");
        SombusError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            rule::SKILLS_UNAVAILABLE,
            "your skill registrations couldn't be read; keep what you read last",
        )
        .retry_after(SKILLS_RETRY)
    })?;
    Ok(Json(Skills { registrations }))
}
