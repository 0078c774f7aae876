//! Queue resources: create (name, type, settings), list, show, delete. Every gateway queue another
//! API may reach is a basaltic queue too, under an id derived from its name; a queue created here
//! is the gateway queue of its name (`.fifo` added for FIFO), the one the SQS endpoint and ezgh
//! reach by that name. Where the gateway makes no queues beyond its configured ones, a created
//! queue is a reserved `sqsgw_bq_<name>_<8 hex>` queue with a bound random UUID instead.

use super::error::ErrorBody;
use super::wire::{
    self, DeadLetterJson, NewQueue, QueueCounts, QueueJson, QueueList, QueueResult, QueueType,
    SettingsJson,
};
use super::{BODY_LIMIT, BasalticError, BasalticState, QUEUE_PREFIX, Target};
use crate::api::common::read_body;
use crate::core::access::Action;
use crate::core::alias::{Alias, Namespace, derived_basaltic_id};
use crate::core::model::ResolvedQueue;
use crate::core::{ErrorKind, GatewayError};
use crate::credentials::basaltic_keys::BasalticKey;
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use chrono::{SecondsFormat, TimeZone, Utc};
use futures_util::StreamExt as _;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// A queue list's counts are all read within this long: a queue not counted by then shows
/// `counts: null`, as one the backend cannot count.
const LIST_COUNTED_WITHIN: Duration = Duration::from_secs(10);

pub(super) fn routes() -> axum::Router<Arc<BasalticState>> {
    axum::Router::new()
        .route("/v1/queues", get(list).post(create))
        .route(
            "/v1/queues/{queue_id}",
            get(show).delete(remove).patch(change),
        )
}

/// A basaltic queue's name: its gateway queue's name without `.fifo`, and for a reserved one
/// (`sqsgw_bq_<name>_<8 hex>[.fifo]`) the name it was created with.
pub(super) fn name_of(queue: &str) -> &str {
    let base = queue.strip_suffix(".fifo").unwrap_or(queue);
    match base.strip_prefix(QUEUE_PREFIX) {
        Some(reserved) => reserved.rsplit_once('_').map_or(reserved, |(name, _)| name),
        None => base,
    }
}

/// The path's queue id (its shape is checked where it is looked up).
pub(super) fn queue_id(path: Result<Path<String>, PathRejection>) -> Result<String, GatewayError> {
    path.map(|Path(id)| id)
        .map_err(|_| GatewayError::new(ErrorKind::QueueNotFound, "no such queue"))
}

impl BasalticState {
    /// A queue as basaltic shows it to `key`: with what the key may do there, and with its
    /// counts when `counted` (`null` unless read by that time, and within the per-queue deadline).
    async fn render(
        &self,
        key: &BasalticKey,
        id: &str,
        queue: &str,
        resolved: &ResolvedQueue,
        counted: Option<Instant>,
    ) -> QueueJson {
        let attributes = &resolved.attributes;
        let name = name_of(queue);
        let mut dead_letter_queue = None;
        if let Some(policy) = &attributes.redrive {
            let target = self
                .gateway
                .queue_named_by_arn(&policy.dead_letter_target_arn)
                .await
                .ok()
                .and_then(|target| {
                    self.gateway
                        .aliases_of(&target, Namespace::Basaltic)
                        .into_iter()
                        .next()
                })
                .and_then(|alias| alias.path().first().cloned());
            dead_letter_queue = Some(DeadLetterJson {
                queue_id: target,
                max_receive_count: policy.max_receive_count,
            });
        }
        let settings = SettingsJson {
            delay_seconds: attributes.delay_seconds,
            receive_wait_time_seconds: attributes.receive_wait_seconds,
            visibility_timeout_seconds: attributes.visibility_timeout_seconds,
            // A queue made through the SQS endpoint may take up to 1 MiB; basaltic's range
            // ends at 256 KiB, and so does what it shows.
            max_message_bytes: attributes.max_message_bytes.min(wire::MAX_MESSAGE_BYTES),
            retention_seconds: attributes.retention_seconds,
            dead_letter_queue,
            content_based_deduplication: attributes
                .fifo
                .then_some(attributes.content_based_deduplication),
        };
        let paused_since = self.gateway.delivery_paused_since(queue);
        let created_at = attributes
            .created_timestamp
            .and_then(|seconds| Utc.timestamp_opt(i64::try_from(seconds).ok()?, 0).single())
            .map(|at| at.to_rfc3339_opts(SecondsFormat::Secs, true));
        QueueJson {
            id: id.to_owned(),
            name: name.to_owned(),
            kind: if attributes.fifo {
                QueueType::Fifo
            } else {
                QueueType::Standard
            },
            settings,
            created_at,
            permissions: key.permissions_on(id),
            delivery_paused: paused_since.is_some(),
            paused_since: paused_since.map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true)),
            counts: match counted {
                Some(until) => Some(self.counts_of(key, id, queue, until).await),
                None => None,
            },
        }
    }

    /// The queue's messages by state now; `None` when the backend cannot count them within the
    /// per-queue deadline and by `until`.
    async fn counts_of(
        &self,
        key: &BasalticKey,
        id: &str,
        queue: &str,
        until: Instant,
    ) -> Option<QueueCounts> {
        let deadline = self.gateway.count_limits().deadline(until);
        let caller = key.caller_on(id, queue);
        let Ok(counted) =
            tokio::time::timeout_at(deadline, self.gateway.queue_stats(&caller, queue)).await
        else {
            tracing::debug!(queue, "queue not counted in time");
            return None;
        };
        match counted {
            Ok((_, stats)) => Some(QueueCounts {
                visible: stats.visible,
                in_flight: stats.in_flight,
                delayed: stats.delayed,
                oldest_message_age_seconds: stats.oldest_age_seconds,
            }),
            Err(error) => {
                tracing::debug!(queue, error = %error.message, "queue not counted");
                None
            }
        }
    }

    async fn create_queue(
        &self,
        key: &BasalticKey,
        new: NewQueue,
    ) -> Result<QueueJson, GatewayError> {
        if !key.holds(Action::ManageQueues, "*") {
            return Err(GatewayError::permission_denied(
                "creating queues takes the manage_queues permission on every queue (`*`)",
            ));
        }
        let _creating = self.creating.lock().await;
        let in_use = self
            .gateway
            .listed_aliases(Namespace::Basaltic)
            .await?
            .iter()
            .any(|(_, queue)| name_of(queue) == new.name);
        if in_use {
            return Err(GatewayError::new(
                ErrorKind::AlreadyExists,
                "a queue of that name exists",
            ));
        }
        let suffix = if new.fifo { ".fifo" } else { "" };
        let shared = format!("{}{suffix}", new.name);
        if self.gateway.basaltic_reaches_by_name(&shared) {
            return self.create_shared_queue(key, &new, &shared).await;
        }
        // A fresh backend queue for every queue created: a queue deleted and created again under
        // its name is another backend queue, which no id of the old one (still known to another
        // replica for a while) can reach.
        let unique = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let queue = format!("{QUEUE_PREFIX}{}_{unique}{suffix}", new.name);
        let caller = key.creator_of(&queue);
        let settings = &new.settings;
        let dead_letter = match &settings.dead_letter_queue {
            Some((target, count)) => Some((self.dead_letter_target(key, target).await?, *count)),
            None => None,
        };
        let wanted = settings.to_core(dead_letter);
        self.gateway.create_queue(&caller, &queue, &wanted).await?;
        let id = uuid::Uuid::new_v4().hyphenated().to_string();
        let alias = Alias::new(Namespace::Basaltic, [id.clone()])?;
        if let Err(error) = self.gateway.bind_alias(&caller, &alias, &queue).await {
            if let Err(undo) = self.gateway.delete_queue(&caller, &queue).await {
                tracing::warn!(queue, error = %undo.message, "could not delete a queue left without its id");
            }
            return Err(error);
        }
        let resolved = self.gateway.resolve_queue(&caller, &queue).await?;
        Ok(self.render(key, &id, &queue, &resolved, None).await)
    }

    /// Creates the gateway queue `queue`, which every API reaches by its name; its id is the one
    /// derived from that name (nothing to bind, the same on every replica).
    async fn create_shared_queue(
        &self,
        key: &BasalticKey,
        new: &NewQueue,
        queue: &str,
    ) -> Result<QueueJson, GatewayError> {
        let caller = key.creator_of(queue);
        let settings = &new.settings;
        let dead_letter = match &settings.dead_letter_queue {
            Some((target, count)) => Some((self.dead_letter_target(key, target).await?, *count)),
            None => None,
        };
        let wanted = settings.to_core(dead_letter);
        self.gateway.create_queue(&caller, queue, &wanted).await?;
        let id = derived_basaltic_id(queue);
        let resolved = self.gateway.resolve_queue(&caller, queue).await?;
        Ok(self.render(key, &id, queue, &resolved, None).await)
    }
}

#[utoipa::path(
    post,
    path = "/v1/queues",
    operation_id = "CreateQueue",
    tag = "Queues",
    description = "Creates a queue: takes the `manage_queues` permission on every queue (`*`); a dead-letter queue takes `send` on it.",
    request_body(content = wire::NewQueueRequest, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The queue created", body = QueueResult),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        (status = 403, description = "The key lacks the permission (`permission_denied`)", body = ErrorBody),
        (status = 404, description = "The dead-letter queue named does not exist, or the key has no permission on it (`queue_not_found`)", body = ErrorBody),
        (status = 409, description = "A queue of that name exists (`conflict`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn create(
    State(state): State<Arc<BasalticState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<QueueResult>), BasalticError> {
    let key = state.authenticate(&headers)?;
    let new = wire::parse_new_queue(&read_body(body, BODY_LIMIT).await?)?;
    let queue = state.create_queue(&key, new).await?;
    Ok((StatusCode::CREATED, Json(QueueResult { result: queue })))
}

#[utoipa::path(
    get,
    path = "/v1/queues",
    operation_id = "ListQueues",
    tag = "Queues",
    description = "The queues the key has any permission on, by name, each with the key's permissions there; with `include=counts`, each with its messages by state now.",
    params(
        ("include" = Option<wire::Include>, Query, description = "`counts`: each queue's messages by state now"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The queues", body = QueueList),
        (status = 400, description = "An unknown query parameter (`invalid_argument`)", body = ErrorBody),
        super::error::KeyRefusals,
    ),
)]
pub(super) async fn list(
    State(state): State<Arc<BasalticState>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<QueueList>, BasalticError> {
    let key = state.authenticate(&headers)?;
    let counted = include_counts(query.as_deref())?.then(|| Instant::now() + LIST_COUNTED_WITHIN);
    let seen: Vec<(String, String)> = state
        .gateway
        .listed_aliases(Namespace::Basaltic)
        .await?
        .into_iter()
        .filter_map(|(alias, queue)| Some((alias.path().first()?.clone(), queue)))
        .filter(|(id, _)| key.sees(id))
        .collect();
    // Read a few at a time: over SQS each queue may cost a backend call or two.
    let (state, key) = (&state, &key);
    let renders: Vec<_> = seen
        .into_iter()
        .map(|(id, queue)| async move {
            // A queue deleted behind the gateway's back is left out, not an error.
            let resolved = state
                .gateway
                .resolve_queue(&key.caller_on(&id, &queue), &queue)
                .await
                .ok()?;
            Some(state.render(key, &id, &queue, &resolved, counted).await)
        })
        .collect();
    let mut queues: Vec<QueueJson> = futures_util::stream::iter(renders)
        .buffer_unordered(state.gateway.count_limits().concurrency)
        .filter_map(std::future::ready)
        .collect()
        .await;
    queues.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(QueueList { queues }))
}

#[utoipa::path(
    get,
    path = "/v1/queues/{queue_id}",
    operation_id = "GetQueue",
    tag = "Queues",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
        ("include" = Option<wire::Include>, Query, description = "`counts`: the queue's messages by state now"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The queue", body = QueueResult),
        (status = 400, description = "An unknown query parameter (`invalid_argument`)", body = ErrorBody),
        (status = 404, description = "No such queue, or the key has no permission on it (`queue_not_found`)", body = ErrorBody),
        super::error::KeyRefusals,
    ),
)]
pub(super) async fn show(
    State(state): State<Arc<BasalticState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<QueueResult>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let counted = include_counts(query.as_deref())?.then(|| Instant::now() + LIST_COUNTED_WITHIN);
    let queue = target.queue.as_str();
    let resolved = state.gateway.resolve_queue(&target.caller, queue).await?;
    Ok(Json(QueueResult {
        result: state
            .render(&target.key, &target.id, queue, &resolved, counted)
            .await,
    }))
}

impl BasalticState {
    /// The target's queue as it is now, without counts.
    pub(super) async fn queue_result(&self, target: &Target) -> Result<QueueResult, GatewayError> {
        let queue = target.queue.as_str();
        let resolved = self.gateway.resolve_queue(&target.caller, queue).await?;
        Ok(QueueResult {
            result: self
                .render(&target.key, &target.id, queue, &resolved, None)
                .await,
        })
    }
}

/// Whether a queue read's query asks for counts: `include=counts`, or nothing.
fn include_counts(query: Option<&str>) -> Result<bool, GatewayError> {
    let mut include = None;
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match (name.as_ref(), value.as_ref()) {
            ("include", "counts") if include.is_none() => include = Some(wire::Include::Counts),
            _ => {
                return Err(GatewayError::invalid_request(
                    "the only query parameter is include=counts",
                ));
            }
        }
    }
    Ok(matches!(include, Some(wire::Include::Counts)))
}

#[utoipa::path(
    delete,
    path = "/v1/queues/{queue_id}",
    operation_id = "DeleteQueue",
    tag = "Queues",
    description = "Deletes the queue and its messages: takes `manage_queues`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn remove(
    State(state): State<Arc<BasalticState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Result<StatusCode, BasalticError> {
    let target = state.target(&headers, path).await?;
    let queue = target.queue.as_str();
    state.gateway.delete_queue(&target.caller, queue).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `PATCH /v1/queues/{id}` `{"settings": {…}}`: changes the settings given, keeps the others.
#[utoipa::path(
    patch,
    path = "/v1/queues/{queue_id}",
    operation_id = "UpdateQueue",
    tag = "Queues",
    description = "Changes the settings given and keeps the others: takes `manage_queues`; a dead-letter queue takes `send` on it.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    request_body(content = wire::SettingsChangeRequest, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The queue with its new settings", body = QueueResult),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn change(
    State(state): State<Arc<BasalticState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<QueueResult>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let queue = target.queue.as_str();
    let mut settings = wire::parse_settings_change(&read_body(body, BODY_LIMIT).await?)?;
    let caller = &target.caller;
    let fifo = state
        .gateway
        .resolve_queue(caller, queue)
        .await?
        .attributes
        .fifo;
    match settings.content_based_deduplication {
        Some(true) if !fifo => {
            return Err(GatewayError::invalid_request(
                "content_based_deduplication applies to fifo queues only",
            )
            .into());
        }
        // "false" on a standard queue is what it is anyway (as when creating one).
        Some(false) if !fifo => settings.content_based_deduplication = None,
        _ => {}
    }
    let dead_letter = match &settings.dead_letter_queue {
        Some((dead_id, count)) => Some((
            state.dead_letter_target(&target.key, dead_id).await?,
            *count,
        )),
        None => None,
    };
    let changes = settings.to_core(dead_letter);
    state
        .gateway
        .set_queue_settings(caller, queue, &changes)
        .await?;
    Ok(Json(state.queue_result(&target).await?))
}
