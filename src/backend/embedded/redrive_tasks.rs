//! The message move tasks of every dead-letter queue, as SQS lists them: each task's progress and
//! outcome, and the handle that names it.

use super::slot::lock;
use crate::core::backend::BackendError;
use crate::core::model::{RedriveStatus, RedriveTask};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Tasks listed per dead-letter queue (the newest; as SQS lists them).
pub(super) const KEPT: usize = 10;

/// The redrive tasks of every dead-letter queue, newest first.
#[derive(Default)]
pub(super) struct Redrives {
    /// Each dead-letter queue's tasks, by its name.
    pub(super) by_source: Mutex<HashMap<String, VecDeque<Arc<Task>>>>,
}

/// One message move task.
pub(super) struct Task {
    /// Its id, in its handle.
    pub(super) id: String,
    /// The dead-letter queue it moves messages out of.
    pub(super) source: String,
    /// That queue's ARN.
    pub(super) source_arn: String,
    /// Where it moves them (name and ARN); `None`: each back to its source queue.
    pub(super) destination: Option<(String, String)>,
    /// Messages moved per second at most.
    pub(super) max_per_second: Option<u32>,
    /// When it started, in milliseconds since the epoch.
    pub(super) started_at: i64,
    /// The messages visible in the source when it started.
    pub(super) to_move: u64,
    /// The messages moved so far.
    pub(super) moved: AtomicU64,
    /// Its status, and why it failed.
    pub(super) outcome: Mutex<(RedriveStatus, Option<String>)>,
    /// Cancelled when it is to stop.
    pub(super) cancel: CancellationToken,
}

impl Task {
    /// Where it stands.
    pub(super) fn status(&self) -> RedriveStatus {
        lock(&self.outcome).0
    }

    /// Ends it with `status` (and why, for a failure).
    pub(super) fn end(&self, status: RedriveStatus, failure: Option<String>) {
        *lock(&self.outcome) = (status, failure);
    }

    /// The task as SQS lists it.
    pub(super) fn report(&self) -> RedriveTask {
        let (status, failure) = lock(&self.outcome).clone();
        RedriveTask {
            handle: (status == RedriveStatus::Running)
                .then(|| handle_of(&self.id, &self.source_arn)),
            status,
            source_arn: self.source_arn.clone(),
            destination_arn: self.destination.as_ref().map(|(_, arn)| arn.clone()),
            max_per_second: self.max_per_second,
            moved: self.moved.load(Ordering::Relaxed),
            to_move: Some(self.to_move),
            failure,
            started_at: self.started_at,
        }
    }
}

/// A task handle, shaped as SQS shapes its own: base64 of a small JSON object.
#[derive(Serialize, Deserialize)]
pub(super) struct Handle {
    /// The task's id.
    #[serde(rename = "taskId")]
    pub(super) task_id: String,
    /// Its dead-letter queue's ARN.
    #[serde(rename = "sourceArn")]
    pub(super) source_arn: String,
}

/// The handle of task `id` of the dead-letter queue `source_arn`.
pub(super) fn handle_of(id: &str, source_arn: &str) -> String {
    let handle = Handle {
        task_id: id.to_owned(),
        source_arn: source_arn.to_owned(),
    };
    STANDARD.encode(serde_json::to_vec(&handle).unwrap_or_default())
}

/// The answer to a handle that names no running task.
pub(super) fn not_running() -> BackendError {
    BackendError::ResourceNotFound("no running message move task has this handle".into())
}
