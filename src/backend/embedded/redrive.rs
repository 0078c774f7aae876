//! Redrive on the embedded engine: how SQS's message move tasks run. A task moves the messages
//! visible in a dead-letter queue when it starts, one at a time, each in one journal submission
//! that takes it out of the dead-letter queue and puts it into its destination (the queue it was
//! dead-lettered from, or the one given), so a crash never loses or doubles one.

use super::backend::EmbeddedBackend;
use super::convert::queue_name;
use super::engine::Queue;
use super::redrive_tasks::{Handle, KEPT, Task, handle_of, not_running};
use super::slot::{Slot, lock};
use crate::core::backend::BackendError;
use crate::core::model::{RedriveStatus, RedriveTask};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

impl EmbeddedBackend {
    pub(super) async fn start_redrive_task(
        &self,
        source_arn: &str,
        destination_arn: Option<&str>,
        max_per_second: Option<u32>,
    ) -> Result<String, BackendError> {
        let source = queue_name(arn_name(source_arn)).to_owned();
        let source_slot = self.slot(&source)?;
        let is_dead_letter_queue = self
            .queues
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .values()
            .any(|slot| {
                lock(&slot.queue)
                    .settings
                    .dead_letter
                    .as_ref()
                    .is_some_and(|(target, _)| queue_name(target) == source)
            });
        if !is_dead_letter_queue {
            return Err(BackendError::Invalid(
                "Source queue must be configured as a Dead Letter Queue.".into(),
            ));
        }
        let destination = match destination_arn {
            Some(arn) => {
                let name = queue_name(arn_name(arn)).to_owned();
                self.slot(&name)?;
                if name == source {
                    return Err(BackendError::Invalid(
                        "The destination must be another queue than the source.".into(),
                    ));
                }
                Some((name, arn.to_owned()))
            }
            None => None,
        };
        let to_move = {
            let now = self.now();
            let queue = lock(&source_slot.queue);
            queue.stats(now).visible
        };
        let task = Arc::new(Task {
            id: uuid::Uuid::new_v4().to_string(),
            source: source.clone(),
            source_arn: source_arn.to_owned(),
            destination,
            max_per_second,
            started_at: self.now(),
            to_move,
            moved: AtomicU64::new(0),
            outcome: Mutex::new((RedriveStatus::Running, None)),
            cancel: CancellationToken::new(),
        });
        {
            let mut tasks = lock(&self.redrives.by_source);
            let list = tasks.entry(source).or_default();
            if list
                .iter()
                .any(|task| task.status() == RedriveStatus::Running)
            {
                return Err(BackendError::Invalid(
                    "There is already a task running. Only one active task is allowed for a source queue arn at a given time.".into(),
                ));
            }
            list.push_front(Arc::clone(&task));
            list.truncate(KEPT);
        }
        let backend = self.me.upgrade().ok_or_else(|| {
            BackendError::Unavailable("the embedded backend is shutting down".into())
        })?;
        let handle = handle_of(&task.id, &task.source_arn);
        tokio::spawn(async move { backend.run_redrive(task).await });
        Ok(handle)
    }

    pub(super) fn list_redrive_tasks(&self, source_arn: &str, max: usize) -> Vec<RedriveTask> {
        let source = queue_name(arn_name(source_arn));
        lock(&self.redrives.by_source)
            .get(source)
            .map(|tasks| tasks.iter().take(max).map(|task| task.report()).collect())
            .unwrap_or_default()
    }

    pub(super) fn cancel_redrive_task(&self, handle: &str) -> Result<u64, BackendError> {
        let handle: Handle = STANDARD
            .decode(handle)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(not_running)?;
        let source = queue_name(arn_name(&handle.source_arn));
        let tasks = lock(&self.redrives.by_source);
        let task = tasks
            .get(source)
            .and_then(|tasks| tasks.iter().find(|task| task.id == handle.task_id))
            .filter(|task| task.status() == RedriveStatus::Running)
            .ok_or_else(not_running)?;
        task.end(RedriveStatus::Cancelling, None);
        task.cancel.cancel();
        Ok(task.moved.load(Ordering::Relaxed))
    }

    /// Moves the task's messages until done, cancelled, or failed.
    async fn run_redrive(self: Arc<Self>, task: Arc<Task>) {
        let pause = task
            .max_per_second
            .map(|rate| Duration::from_secs_f64(1.0 / f64::from(rate.max(1))));
        loop {
            if task.cancel.is_cancelled() || self.closing.is_cancelled() {
                task.end(RedriveStatus::Cancelled, None);
                break;
            }
            if task.moved.load(Ordering::Relaxed) >= task.to_move {
                task.end(RedriveStatus::Completed, None);
                break;
            }
            match self.move_one(&task).await {
                Ok(Step::Moved) => {
                    task.moved.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Step::Again) => {}
                Ok(Step::Done) => {
                    task.end(RedriveStatus::Completed, None);
                    break;
                }
                Err(reason) => {
                    tracing::warn!(queue = %task.source, %reason, "message move task failed");
                    task.end(RedriveStatus::Failed, Some(reason));
                    break;
                }
            }
            match pause {
                Some(pause) => tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = task.cancel.cancelled() => {}
                },
                None => tokio::task::yield_now().await,
            }
        }
        tracing::info!(
            queue = %task.source,
            moved = task.moved.load(Ordering::Relaxed),
            status = task.status().name(),
            "message move task ended"
        );
    }

    /// Moves the first visible message of the source to its destination. Its removal and its
    /// arrival are one journal submission.
    async fn move_one(&self, task: &Task) -> Result<Step, String> {
        let source = self.slot(&task.source).map_err(|error| error.to_string())?;
        let now = self.now();
        let (seq, held) = {
            let queue = lock(&source.queue);
            let Some((seq, message)) = queue.first_visible(now) else {
                return Ok(Step::Done);
            };
            (seq, message.held.clone())
        };
        let destination = match &task.destination {
            Some((name, _)) => Some(name.clone()),
            None => {
                // Its source queue is in its body, which may be on disk only.
                let bodies = self
                    .bodies_of(&task.source, &[(seq, &held)])
                    .await
                    .map_err(|error| error.to_string())?;
                let Some(Some(body)) = bodies.into_iter().next() else {
                    return Ok(Step::Again);
                };
                body.dead_letter_source_arn
                    .as_deref()
                    .map(|arn| arn_name(arn).to_owned())
            }
        };
        let destination = destination.ok_or_else(|| {
            "A message in the dead-letter queue has no source queue; give a destination.".to_owned()
        })?;
        if destination == task.source {
            return Err("A message's source queue is the dead-letter queue itself.".to_owned());
        }
        let target = self
            .slot(&destination)
            .map_err(|_| format!("The destination queue {destination} does not exist."))?;
        let mut journal = Vec::new();
        let commit = {
            let (mut from, mut to) = lock_pair(&source, &target);
            if from.deleted || to.deleted {
                return Err("A queue of the task was deleted.".to_owned());
            }
            // The same message, still visible (nothing took it since the look above).
            if from.first_visible(now).map(|(first, _)| first) != Some(seq) {
                return Ok(Step::Again);
            }
            let Some(moving) = from.take(seq) else {
                return Ok(Step::Again);
            };
            to.accept_redriven(moving, now, &mut journal);
            self.submit(journal)
        };
        commit.wait().await.map_err(|error| error.to_string())?;
        target.notify.notify_one();
        Ok(Step::Moved)
    }
}

/// What one step of a task did.
enum Step {
    Moved,
    /// Someone else took the message meanwhile: look again.
    Again,
    /// Nothing visible is left.
    Done,
}

/// Locks two queues in name order (the order every path locks two queues in).
pub(super) fn lock_pair<'a>(
    first: &'a Slot,
    second: &'a Slot,
) -> (
    std::sync::MutexGuard<'a, Queue>,
    std::sync::MutexGuard<'a, Queue>,
) {
    let first_name = lock(&first.queue).name.clone();
    let second_name = lock(&second.queue).name.clone();
    if first_name < second_name {
        let a = lock(&first.queue);
        (a, lock(&second.queue))
    } else {
        let b = lock(&second.queue);
        (lock(&first.queue), b)
    }
}

/// The queue name at the end of an ARN (or the text itself).
fn arn_name(arn: &str) -> &str {
    arn.rsplit(':').next().unwrap_or(arn)
}
