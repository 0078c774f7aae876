//! ezgh routes: who may call what, and the translation to core calls.

use super::error::{ErrorBody, EzghError};
use super::wire::{self, MessageJson, ReceiveResponse, ResultsResponse};
use crate::api::common::{ClientAddress, read_body};
use crate::core::access::{Action, Caller, Grants, Principal};
use crate::core::alias::{Alias, Namespace};
use crate::core::limits::{Allowance, Limit, LimitKey};
use crate::core::request_scope;
use crate::core::{Gateway, GatewayError};
use crate::credentials::api_keys::{ApiKey, ApiKeys};
use crate::credentials::key_book;
use crate::credentials::live::Live;
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;

/// The largest ezgh request body: ten handles with room to spare.
const BODY_LIMIT: usize = 64 * 1024;

/// What the ezgh routes share.
pub struct EzghState {
    /// The core.
    pub gateway: Arc<Gateway>,
    /// The API keys, by id; replaced whole when the config is reloaded.
    pub keys: Live<ApiKeys>,
    /// The invalid-handle budget per client address.
    pub invalid_handles_per_minute: NonZeroU32,
    /// Receive allowances per organization.
    pub requests: BTreeMap<String, Allowance>,
    /// Receive allowances per gateway queue.
    pub queue_requests: BTreeMap<String, Allowance>,
}

impl std::fmt::Debug for EzghState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EzghState").finish_non_exhaustive()
    }
}

impl EzghState {
    /// The key in the `Authorization: Bearer` header, or 401.
    fn authenticate(&self, headers: &HeaderMap) -> Result<Arc<ApiKey>, GatewayError> {
        let presented = crate::api::common::bearer_token(headers);
        let verified =
            presented.and_then(|presented| self.keys.current().verify(presented).cloned());
        match verified {
            Some(key) => {
                request_scope::note_caller(&Principal::ApiKey(key.id.clone()));
                Ok(key)
            }
            None => {
                request_scope::note_refused("api_key", presented.and_then(key_book::key_id));
                Err(GatewayError::unauthenticated())
            }
        }
    }

    /// The gateway queue behind an ezgh queue path, for a key of the path's organization.
    async fn gateway_queue(
        &self,
        key: &ApiKey,
        organization: &str,
        project: &str,
        queue: &str,
    ) -> Result<String, GatewayError> {
        if key.organization != organization {
            return Err(GatewayError::permission_denied(
                "the API key does not belong to this organization",
            ));
        }
        // The project's queue ids are the core's ezgh aliases; a path that cannot be one names
        // no queue.
        let alias = Alias::ezgh(organization, project, queue)
            .map_err(|_| GatewayError::queue_not_found())?;
        let gateway_queue = self.gateway.queue_by_alias(&alias).await?;
        // The core authorizes the receive itself; the rate limits count only permitted ones.
        key.caller().authorize(Action::Receive, &gateway_queue)?;
        let organization_key = LimitKey::EzghOrganization(organization).to_string();
        let queue_key = LimitKey::QueueReceives(&gateway_queue).to_string();
        let limits: Vec<Limit<'_>> = [
            self.requests.get(organization).map(|allowance| {
                Limit::rate(
                    &organization_key,
                    *allowance,
                    "over the organization's rate limit",
                )
            }),
            self.queue_requests.get(&gateway_queue).map(|allowance| {
                Limit::rate(&queue_key, *allowance, "over the queue's rate limit")
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        self.gateway.limits().all(&limits).await?;
        Ok(gateway_queue)
    }

    /// Counts the request's `invalid` handles against its client address's budget; a request
    /// that would go over it is refused whole (429), before any handle acts.
    async fn admit_handles(
        &self,
        ClientAddress(client): ClientAddress,
        invalid: usize,
    ) -> Result<(), GatewayError> {
        let invalid = u32::try_from(invalid).unwrap_or(u32::MAX);
        self.gateway
            .limits()
            .per_minute(
                LimitKey::InvalidHandles(client),
                invalid,
                self.invalid_handles_per_minute.get(),
                "too many invalid receipt handles from this address",
            )
            .await
    }
}

/// Receives messages with a long poll (ReceiveMessages).
#[utoipa::path(
    post,
    path = "/v1/organizations/{organization}/projects/{project}/queues/{queue}/messages/receive",
    operation_id = "ReceiveMessages",
    tag = "Pull consumers",
    description = "Answers `200` with up to `maxMessages` messages as soon as there are any, or \
        with `{\"messages\": []}` when the wait ends: give your HTTP client a timeout longer than \
        `waitSeconds`. A receive can answer fewer messages than are visible. With many messages in \
        flight (120,000 on a standard queue, 20,000 on a FIFO queue) it answers no more until some \
        are acknowledged or become visible again. Needs `queues.messages.receive` on the queue.",
    params(
        ("organization" = String, Path, description = "The organization's ID", example = "acme"),
        ("project" = String, Path, description = "The project's ID", example = "shop"),
        ("queue" = String, Path, description = "The queue's ID in the project", example = "orders"),
    ),
    request_body(
        content = Option<wire::ReceiveRequest>,
        content_type = "application/json",
        description = "All optional; an empty body takes every default.",
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Up to `maxMessages` messages, or none when the wait ended", body = ReceiveResponse),
        (status = 400, description = "A field is out of range (`out_of_range`), or the body is not a receive's (`invalid_request`)", body = ErrorBody),
        (status = 401, description = "The API key is missing or invalid", body = ErrorBody),
        (status = 403, description = "The API key is of another organization, or lacks `queues.messages.receive` on the queue", body = ErrorBody),
        (status = 404, description = "No such queue in the project, or it was deleted while the receive waited", body = ErrorBody),
        (status = 408, description = "The request body did not arrive in time", body = ErrorBody),
        (status = 413, description = "The request body is too large", body = ErrorBody),
        (status = 429, description = "Over the queue's or organization's rate limit: wait for `Retry-After`", body = ErrorBody),
        (status = 503, description = "Try again after `Retry-After`", body = ErrorBody),
    ),
)]
// A function answering a future rather than an `async fn`: the key is taken from the head
// before anything waits, and the future keeps only what the receive needs (an `async fn` keeps
// its arguments beside the locals made of them through the whole long poll).
pub(super) fn receive(
    State(state): State<Arc<EzghState>>,
    path: Result<Path<(String, String, String)>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> impl Future<Output = Result<ReceiveResponse, EzghError>> + Send {
    // Authenticated before the body is read; the head (its bytes are the connection's read
    // buffer) is dropped as this returns, before the wait. Every refusal is the same 401, so the
    // future carries the key or nothing (8 bytes, not an error's 64).
    let key = state.authenticate(&headers).ok();
    async move {
        let key = key.ok_or_else(GatewayError::unauthenticated)?;
        // A segment that is not UTF-8 once decoded names no queue: ezgh's error, not axum's text.
        let Path((organization, project, queue)) = path.map_err(|_| {
            GatewayError::invalid_request("the path is not valid: its segments must be UTF-8")
        })?;
        let gateway_queue = state
            .gateway_queue(&key, &organization, &project, &queue)
            .await?;
        let mut options = wire::parse_receive(&read_body(body, BODY_LIMIT).await?)?;
        // "With many messages in flight it answers no more until some are acknowledged": the
        // core waits out the long poll instead of answering an error, and answers once room
        // frees.
        options.wait_out_over_limit = true;
        let deliveries = state
            .gateway
            .receive(&key.caller(), &gateway_queue, options)
            .await?;
        // The consumer knows queues by its project's ids.
        let project_queue_id = |gateway_queue: &str| {
            state
                .gateway
                .aliases_of(gateway_queue, Namespace::Ezgh)
                .into_iter()
                .find(|alias| alias.is_under(Namespace::Ezgh, &[&organization, &project]))
                .and_then(|alias| alias.path().last().cloned())
        };
        tracing::debug!(queue = %gateway_queue, key = %key.name, count = deliveries.len(), "ezgh receive");
        Ok(ReceiveResponse {
            messages: deliveries
                .into_iter()
                .map(|delivery| MessageJson::new(delivery, project_queue_id))
                .collect(),
        })
    }
}

/// Acknowledges messages, which deletes them.
#[utoipa::path(
    post,
    path = "/v1/receipts/ack",
    operation_id = "AcknowledgeMessages",
    tag = "Pull consumers",
    description = "Reads no API key or session: the receipt handle is what allows it. Browser \
        code on any origin can call it, without credentials. 1 to 10 handles a request, from any \
        of your queues; one result per handle, in order. A handle still works after the \
        visibility timeout ends, until another receive takes the message; acknowledging the same \
        delivery twice answers `receipt_handle_stale` the second time.",
    request_body(content = wire::AckRequest, content_type = "application/json"),
    security(()),
    responses(
        (status = 200, description = "One result per handle, in order", body = ResultsResponse),
        (status = 400, description = "0 or more than 10 handles (`out_of_range`), or the body is not an acknowledgement's (`invalid_request`)", body = ErrorBody),
        (status = 408, description = "The request body did not arrive in time", body = ErrorBody),
        (status = 413, description = "The request body is too large", body = ErrorBody),
        (status = 429, description = "This client address sent more than 100 invalid handles in a minute: wait for `Retry-After`", body = ErrorBody),
        (status = 503, description = "Try again after `Retry-After`", body = ErrorBody),
    ),
)]
pub(super) async fn acknowledge(
    State(state): State<Arc<EzghState>>,
    client: ClientAddress,
    body: Body,
) -> Result<Json<ResultsResponse>, EzghError> {
    let handles = wire::parse_ack(&read_body(body, BODY_LIMIT).await?)?;
    // Opened once: counted, then acted with.
    let opened = state
        .gateway
        .open_handles(handles.iter().map(String::as_str));
    state.admit_handles(client, opened.invalid()).await?;
    let outcomes = state
        .gateway
        .acknowledge_opened(&handle_holder(), opened, None)
        .await?;
    Ok(Json(ResultsResponse::new(&outcomes)))
}

/// Extends or releases messages: how long they stay in flight, counted from now.
#[utoipa::path(
    post,
    path = "/v1/receipts/visibility",
    operation_id = "ChangeMessageVisibility",
    tag = "Pull consumers",
    description = "Extend a message your consumer needs longer for, before its visibility \
        timeout ends (a message stays in flight for at most 12 hours from its receive: a longer \
        extension ends there), or release one your consumer won't handle with \
        `\"visibilityTimeoutSeconds\": 0`. Reads no credential, like acknowledging, and answers \
        the same `results`, with the same errors and limits.",
    request_body(content = wire::VisibilityRequest, content_type = "application/json"),
    security(()),
    responses(
        (status = 200, description = "One result per handle, in order", body = ResultsResponse),
        (status = 400, description = "0 or more than 10 entries, or a timeout out of range (`out_of_range`), or the body is not a visibility change's (`invalid_request`)", body = ErrorBody),
        (status = 408, description = "The request body did not arrive in time", body = ErrorBody),
        (status = 413, description = "The request body is too large", body = ErrorBody),
        (status = 429, description = "This client address sent more than 100 invalid handles in a minute: wait for `Retry-After`", body = ErrorBody),
        (status = 503, description = "Try again after `Retry-After`", body = ErrorBody),
    ),
)]
pub(super) async fn change_visibility(
    State(state): State<Arc<EzghState>>,
    client: ClientAddress,
    body: Body,
) -> Result<Json<ResultsResponse>, EzghError> {
    let entries = wire::parse_visibility(&read_body(body, BODY_LIMIT).await?)?;
    // Opened once, as for an ack: counted, then acted with.
    let opened = state
        .gateway
        .open_handles(entries.iter().map(|(handle, _)| handle.as_str()));
    state.admit_handles(client, opened.invalid()).await?;
    let seconds: Vec<u32> = entries.iter().map(|(_, seconds)| *seconds).collect();
    let outcomes = state
        .gateway
        .change_visibility_opened(&handle_holder(), opened, &seconds, None)
        .await?;
    Ok(Json(ResultsResponse::new(&outcomes)))
}

/// The caller of ack and visibility: "the receipt handle is what allows it", on any queue (the
/// request's log lines name it `anonymous`: a handle proves no identity).
fn handle_holder() -> Caller {
    request_scope::note_caller(&Principal::HandleHolder);
    static GRANTS: std::sync::OnceLock<std::sync::Arc<Grants>> = std::sync::OnceLock::new();
    let grants = GRANTS.get_or_init(|| {
        std::sync::Arc::new(
            Grants::none().allow("*", [Action::Acknowledge, Action::ChangeVisibility]),
        )
    });
    Caller::new(Principal::HandleHolder, std::sync::Arc::clone(grants))
}
