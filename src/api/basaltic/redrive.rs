//! Redrive of a dead-letter queue: start moving its messages (back to the queues they came from,
//! or to a queue named) at a rate, follow the task's progress, cancel it. The backend runs the
//! task (SQS's message move tasks, or the embedded engine's); one runs at a time per queue.
//! Every route takes `manage_queues` on the dead-letter queue, and a destination named takes it
//! there too.

use super::error::ErrorBody;
use super::wire::{self, RedriveState, RedriveTaskJson, RedriveTaskResult, RedriveTasks};
use super::{BODY_LIMIT, BasalticError, BasalticState, Target};
use crate::api::common::read_body;
use crate::core::access::{Action, Caller, Grants, Principal};
use crate::core::alias::Namespace;
use crate::core::model::{RedriveStatus, RedriveTask};
use crate::core::{ErrorKind, GatewayError};
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use chrono::{SecondsFormat, TimeZone, Utc};
use std::sync::Arc;

/// The most tasks a listing shows.
const LISTED_TASKS: usize = 10;

type QueuePath = Result<Path<String>, PathRejection>;

pub(super) fn routes() -> axum::Router<Arc<BasalticState>> {
    axum::Router::new()
        .route("/v1/queues/{queue_id}/redrive", get(list_tasks).post(start))
        .route("/v1/queues/{queue_id}/redrive/cancel", post(cancel))
}

impl BasalticState {
    /// The request's queue, for a key that may redrive it.
    async fn redrive_target(
        &self,
        headers: &HeaderMap,
        path: QueuePath,
    ) -> Result<Target, GatewayError> {
        let target = self.target(headers, path).await?;
        if !target.key.has_permission("manage_queues", &target.id) {
            return Err(GatewayError::permission_denied(
                "redriving takes the manage_queues permission on the dead-letter queue",
            ));
        }
        Ok(target)
    }

    /// A task as basaltic shows it: the destination by its queue id.
    async fn render_task(&self, task: RedriveTask) -> RedriveTaskJson {
        let mut destination_queue_id = None;
        if let Some(arn) = &task.destination_arn
            && let Ok(queue) = self.gateway.queue_named_by_arn(arn).await
        {
            destination_queue_id = self
                .gateway
                .aliases_of(&queue, Namespace::Basaltic)
                .into_iter()
                .next()
                .and_then(|alias| alias.path().first().cloned());
        }
        RedriveTaskJson {
            status: match task.status {
                RedriveStatus::Running => RedriveState::Running,
                RedriveStatus::Completed => RedriveState::Completed,
                RedriveStatus::Cancelling => RedriveState::Cancelling,
                RedriveStatus::Cancelled => RedriveState::Cancelled,
                RedriveStatus::Failed => RedriveState::Failed,
            },
            moved: task.moved,
            to_move: task.to_move,
            max_messages_per_second: task.max_per_second,
            destination_queue_id,
            started_at: Utc
                .timestamp_millis_opt(task.started_at)
                .single()
                .unwrap_or_default()
                .to_rfc3339_opts(SecondsFormat::Secs, true),
            failure: task.failure,
        }
    }

    /// Whether another queue dead-letters to `queue` (read now): only such a queue is redriven.
    async fn is_dead_letter_queue(&self, queue: &str) -> Result<bool, GatewayError> {
        // The gateway asks for itself: the key's grants need not reach the sources.
        let gateway = Caller::new(
            Principal::System,
            Arc::new(Grants::none().allow("*", [Action::Inspect])),
        );
        let sources = self
            .gateway
            .dead_letter_source_queues(&gateway, queue)
            .await?;
        Ok(!sources.is_empty())
    }

    /// The queue's latest tasks, newest first.
    async fn tasks_of(&self, target: &Target) -> Result<Vec<RedriveTask>, GatewayError> {
        self.gateway
            .list_redrives(&target.caller, &target.queue, LISTED_TASKS)
            .await
    }

    /// The newest task, once the backend lists it.
    async fn newest_task(&self, target: &Target) -> Result<RedriveTaskJson, GatewayError> {
        let newest = self.tasks_of(target).await?.into_iter().next();
        let task =
            newest.ok_or_else(|| GatewayError::internal("a redrive started but is not listed"))?;
        Ok(self.render_task(task).await)
    }
}

#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/redrive",
    operation_id = "StartRedrive",
    tag = "Queues",
    description = "Starts moving the messages of this dead-letter queue (those in it now) back to the queues they were dead-lettered from, or to `destination_queue_id`, at most `max_messages_per_second` a second. Takes `manage_queues` here, and on the destination when one is named. Only a queue another queue dead-letters to, and one task at a time (else `409 conflict`).",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The dead-letter queue's UUID"),
    ),
    request_body(content = wire::RedriveRequest, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The task started", body = RedriveTaskResult),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        (status = 409, description = "No queue dead-letters to this one, or a redrive of it is running (`conflict`)", body = ErrorBody),
        (status = 501, description = "The backend cannot move messages (`unsupported`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn start(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<RedriveTaskResult>), BasalticError> {
    let target = state.redrive_target(&headers, path).await?;
    let (destination_id, rate) = wire::parse_redrive(&read_body(body, BODY_LIMIT).await?)?;
    if !state.is_dead_letter_queue(&target.queue).await? {
        return Err(GatewayError::new(
            ErrorKind::Conflict,
            "this queue is no dead-letter queue: no queue dead-letters to it",
        )
        .into());
    }
    let running = state
        .tasks_of(&target)
        .await?
        .iter()
        .any(|task| task.status == RedriveStatus::Running);
    if running {
        return Err(GatewayError::new(
            ErrorKind::Conflict,
            "a redrive of this queue is running: cancel it or wait for it to end",
        )
        .into());
    }
    let mut caller_queues = vec![(target.id.clone(), target.queue.clone())];
    if let Some(destination_id) = &destination_id {
        let queue = state.queue_of(&target.key, destination_id).await?;
        let id = super::canonical_id(destination_id).unwrap_or_default();
        if !target.key.has_permission("manage_queues", &id) {
            return Err(GatewayError::permission_denied(
                "a redrive's destination takes the manage_queues permission on it",
            )
            .into());
        }
        caller_queues.push((id, queue));
    }
    let caller = target.key.caller_on_each(&caller_queues);
    let destination = caller_queues.get(1).map(|(_, queue)| queue.as_str());
    state
        .gateway
        .start_redrive(&caller, &target.queue, destination, rate)
        .await?;
    let result = state.newest_task(&target).await?;
    Ok((StatusCode::CREATED, Json(RedriveTaskResult { result })))
}

#[utoipa::path(
    get,
    path = "/v1/queues/{queue_id}/redrive",
    operation_id = "ListRedrives",
    tag = "Queues",
    description = "The latest redrive tasks of this dead-letter queue (at most 10), newest first, with their progress. Takes `manage_queues`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The dead-letter queue's UUID"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The tasks", body = RedriveTasks),
        (status = 501, description = "The backend cannot move messages (`unsupported`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn list_tasks(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
) -> Result<Json<RedriveTasks>, BasalticError> {
    let target = state.redrive_target(&headers, path).await?;
    let mut tasks = Vec::new();
    for task in state.tasks_of(&target).await? {
        tasks.push(state.render_task(task).await);
    }
    Ok(Json(RedriveTasks { tasks }))
}

#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/redrive/cancel",
    operation_id = "CancelRedrive",
    tag = "Queues",
    description = "Stops the running redrive of this dead-letter queue; what it moved stays moved. Takes `manage_queues`.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The dead-letter queue's UUID"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The task, stopping or stopped", body = RedriveTaskResult),
        (status = 409, description = "No redrive of this queue is running (`conflict`)", body = ErrorBody),
        (status = 501, description = "The backend cannot move messages (`unsupported`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn cancel(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
) -> Result<Json<RedriveTaskResult>, BasalticError> {
    let target = state.redrive_target(&headers, path).await?;
    let running = state
        .tasks_of(&target)
        .await?
        .into_iter()
        .find(|task| task.status == RedriveStatus::Running)
        .and_then(|task| task.handle);
    let Some(handle) = running else {
        return Err(
            GatewayError::new(ErrorKind::Conflict, "no redrive of this queue is running").into(),
        );
    };
    state
        .gateway
        .cancel_redrive(&target.caller, &handle)
        .await?;
    let result = state.newest_task(&target).await?;
    Ok(Json(RedriveTaskResult { result }))
}
