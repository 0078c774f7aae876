//! The core's [`Backend`] port, implemented by the embedded backend: each method is made of
//! [`EmbeddedBackend`]'s steps.

use super::backend::EmbeddedBackend;
use super::convert::{parse_handle, peeked_message, queue_name, resolved};
use super::durable::{store_down, unavailable};
use super::engine::{Held, Op, Queue, Settings};
use super::slot::{lock, read, slot};
use crate::core::backend::{Backend, BackendError};
use crate::core::model::{
    BackendMessage, BackendReceive, EntryError, EntryOutcome, ExpiredFifoHandles,
    ExpiredVisibility, MessageAt, MoveOutcome, OutgoingMessage, PeekedMessage, QueueSettings,
    QueueStats, RedriveTask, ResolvedQueue, SentMessage, StoreCounts,
};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

#[async_trait]
impl Backend for EmbeddedBackend {
    async fn resolve(&self, locator: &str) -> Result<ResolvedQueue, BackendError> {
        let slot = self.slot(locator)?;
        let queue = lock(&slot.queue);
        Ok(resolved(&queue.name, &queue))
    }

    async fn receive(
        &self,
        queue_url: &str,
        request: &BackendReceive,
    ) -> Result<Vec<BackendMessage>, BackendError> {
        let slot = self.slot(queue_url)?;
        let deadline =
            tokio::time::Instant::now() + Duration::from_secs(request.wait_seconds.into());
        loop {
            // Nobody waits for the answer: take nothing, and pass on a wake-up this wait may
            // have taken, so a waiting receive looks in its place.
            if request.abandoned.is_cancelled() {
                slot.notify.notify_one();
                return Ok(Vec::new());
            }
            // Registered before looking, so a send between the look and the wait is not missed.
            let notified = slot.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();

            // Scoped, so nothing the look holds is kept through the wait below (ten thousand
            // idle long polls are ten thousand waiting receives).
            let (next_visible_at, now) = {
                let target_name = lock(&slot.queue)
                    .settings
                    .dead_letter
                    .as_ref()
                    .map(|(target, _)| target.clone());
                let target = target_name.as_deref().and_then(|name| self.slot(name).ok());
                let (deliveries, moved, next_visible_at, now, mut commit) =
                    self.receive_once(&slot, target.as_deref(), request)?;
                // Not waited for: losing a receive in a crash only makes its messages visible
                // again (at least once holds), and a later write of one of its messages replaces
                // its record in the store's order. A store already down still answers 503.
                if commit.failed_already() {
                    return Err(store_down());
                }
                if moved > 0
                    && let Some(target) = &target
                {
                    tracing::debug!(count = moved, "messages dead-lettered");
                    target.notify.notify_one();
                }
                if !deliveries.is_empty() {
                    // More may be there: the next waiter looks (and wakes the one after, if it
                    // takes).
                    slot.notify.notify_one();
                    // Boxed, for the same reason: the wait's state stays small.
                    return Box::pin(self.answer(queue_name(queue_url), deliveries)).await;
                }
                (next_visible_at, now)
            };
            let rest = deadline.saturating_duration_since(tokio::time::Instant::now());
            if rest.is_zero() {
                return Ok(Vec::new());
            }
            let wake = match next_visible_at {
                Some(at) => rest.min(Duration::from_millis(u64::try_from(at - now).unwrap_or(0))),
                None => rest,
            };
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep(wake) => {}
                () = self.closing.cancelled() => return Ok(Vec::new()),
                () = request.abandoned.cancelled() => return Ok(Vec::new()),
            }
            // A deleted queue ends the wait with QueueNotFound.
            self.slot(queue_url)?;
        }
    }

    async fn delete_batch(
        &self,
        queue_url: &str,
        backend_handles: &[&str],
        expired: ExpiredFifoHandles,
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        // (Waking pollers matters here too: a deleted FIFO message may unblock its group.)
        self.apply(queue_url, |queue, now, journal| {
            backend_handles
                .iter()
                .map(|handle| match parse_handle(handle) {
                    Some((seq, receipt))
                        if expired == ExpiredFifoHandles::Refuse
                            && queue.fifo_delivery_expired(seq, receipt, now) =>
                    {
                        EntryOutcome::Expired
                    }
                    Some((seq, receipt)) => queue.delete(seq, receipt, journal),
                    None => EntryOutcome::Gone,
                })
                .collect()
        })
        .await
    }

    async fn change_visibility_batch(
        &self,
        queue_url: &str,
        entries: &[(&str, u32)],
        expired: ExpiredVisibility,
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        self.apply(queue_url, |queue, now, journal| {
            entries
                .iter()
                .map(|(handle, seconds)| match parse_handle(handle) {
                    Some((seq, receipt)) => {
                        queue.change_visibility(seq, receipt, *seconds, expired, now, journal)
                    }
                    None => EntryOutcome::Gone,
                })
                .collect()
        })
        .await
    }

    async fn return_undelivered(
        &self,
        queue_url: &str,
        backend_handles: &[&str],
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        // Waking pollers: the messages are visible again.
        self.apply(queue_url, |queue, now, journal| {
            backend_handles
                .iter()
                .map(|handle| match parse_handle(handle) {
                    Some((seq, receipt)) => queue.return_undelivered(seq, receipt, now, journal),
                    None => EntryOutcome::Gone,
                })
                .collect()
        })
        .await
    }

    async fn send_batch(
        &self,
        queue_url: &str,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<Result<SentMessage, EntryError>>, BackendError> {
        let slot = self.slot(queue_url)?;
        let ((results, wrote, (mark, unsettled)), commit) =
            self.mutate(&slot, |queue, now, journal| {
                let results = messages
                    .iter()
                    .map(|message| queue.send(message.clone(), now, journal))
                    .collect::<Vec<_>>();
                let unsettled = queue.unsettled() > 0;
                (
                    results,
                    !journal.is_empty(),
                    (queue.settle_mark(), unsettled),
                )
            })?;
        if !unsettled {
            commit.wait().await.map_err(unavailable)?;
        } else {
            // Bodies the cache had no room for leave memory once readers find them on disk.
            commit.wait_readable().await.map_err(unavailable)?;
            let mut queue = lock(&slot.queue);
            queue.settle_before(mark);
        }
        if !wrote && results.iter().any(Result::is_ok) {
            // Only deduplicated resends: answer once the original sends are on disk too.
            self.barrier().wait().await.map_err(unavailable)?;
        }
        slot.notify.notify_one();
        Ok(results)
    }

    async fn purge(&self, queue_url: &str) -> Result<(), BackendError> {
        self.apply(queue_url, |queue, _, journal| queue.purge(journal))
            .await
    }

    async fn stats(&self, queue_url: &str) -> Result<QueueStats, BackendError> {
        let slot = self.slot(queue_url)?;
        let (stats, commit) = self.mutate(&slot, |queue, now, journal| {
            queue.expire(now, journal);
            queue.stats(now)
        })?;
        commit.wait().await.map_err(unavailable)?;
        Ok(stats)
    }

    async fn create_queue(
        &self,
        name: &str,
        requested: &QueueSettings,
    ) -> Result<ResolvedQueue, BackendError> {
        self.heal()?;
        let settings = Settings::new(name, requested).map_err(BackendError::Invalid)?;
        self.check_dead_letter_target(&settings)?;
        let slot = {
            let mut queues = self
                .queues
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(existing) = queues.get(name) {
                let existing = Arc::clone(existing);
                drop(queues);
                let queue = lock(&existing.queue);
                if let Some(attribute) = queue.settings.differing_attribute(requested) {
                    return Err(BackendError::AlreadyExists(format!(
                        "A queue already exists with the same name and a different value for attribute {attribute}"
                    )));
                }
                return Ok(resolved(name, &queue));
            }
            let now = self.now_seconds();
            let settings = Settings {
                created_at: now,
                modified_at: now,
                ..settings
            };
            let slot = Arc::new(slot(Queue::with_cache(
                name,
                settings.clone(),
                Arc::clone(&self.bodies),
            )));
            queues.insert(name.to_owned(), Arc::clone(&slot));
            // Journaled while the map is locked, so a concurrent delete is journaled after it.
            (
                slot,
                self.submit(vec![Op::PutQueue {
                    name: name.to_owned(),
                    settings,
                }]),
            )
        };
        let (slot, commit) = slot;
        commit.wait().await.map_err(unavailable)?;
        Ok(resolved(name, &lock(&slot.queue)))
    }

    async fn delete_queue(&self, queue_url: &str) -> Result<(), BackendError> {
        self.heal()?;
        let name = queue_name(queue_url).to_owned();
        let removed = self
            .queues
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&name)
            .ok_or(BackendError::QueueNotFound)?;
        let commit = {
            // Under the queue's lock: operations that already hold the queue see it deleted and
            // journal nothing after the deletion.
            let mut queue = lock(&removed.queue);
            queue.deleted = true;
            self.submit(vec![Op::DeleteQueue { name }])
        };
        removed.notify.notify_waiters();
        // Answered once the tables no longer hold its messages: a queue made again under the
        // name numbers its messages from 1, and a body read for one of them must be its own.
        commit.wait_readable().await.map_err(unavailable)
    }

    async fn list_queues(&self, prefix: &str) -> Result<Vec<String>, BackendError> {
        self.heal()?;
        let queues = self
            .queues
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut names: Vec<String> = queues
            .keys()
            .filter(|name| name.starts_with(prefix))
            .cloned()
            .collect();
        names.sort();
        Ok(names)
    }

    async fn set_queue_settings(
        &self,
        queue_url: &str,
        changes: &QueueSettings,
    ) -> Result<(), BackendError> {
        let slot = self.slot(queue_url)?;
        let settings = {
            let queue = lock(&slot.queue);
            queue
                .settings
                .changed(&queue.name, changes)
                .map_err(BackendError::Invalid)?
        };
        self.check_dead_letter_target(&settings)?;
        self.replace_settings(&slot, settings).await
    }

    async fn tag_queue(
        &self,
        queue_url: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<(), BackendError> {
        let slot = self.slot(queue_url)?;
        let mut settings = lock(&slot.queue).settings.clone();
        settings
            .tags
            .extend(tags.iter().map(|(k, v)| (k.clone(), v.clone())));
        if settings.tags.len() > 50 {
            return Err(BackendError::Invalid("a queue has at most 50 tags".into()));
        }
        self.replace_settings(&slot, settings).await
    }

    async fn untag_queue(&self, queue_url: &str, keys: &[String]) -> Result<(), BackendError> {
        let slot = self.slot(queue_url)?;
        let mut settings = lock(&slot.queue).settings.clone();
        for key in keys {
            settings.tags.remove(key);
        }
        self.replace_settings(&slot, settings).await
    }

    async fn list_queue_tags(
        &self,
        queue_url: &str,
    ) -> Result<BTreeMap<String, String>, BackendError> {
        let slot = self.slot(queue_url)?;
        let tags = lock(&slot.queue).settings.tags.clone();
        Ok(tags)
    }

    fn shutting_down(&self) {
        self.closing.cancel();
    }

    fn made_up_arn_region(&self) -> Option<&'static str> {
        Some(super::engine::REGION)
    }

    fn keeps_sqs_time_rules(&self) -> bool {
        false
    }

    fn knows_current_deliveries(&self) -> bool {
        // Each receive gives a message a new receipt, kept with it on disk; only the newest acts.
        self.durable.is_some()
    }

    fn store_counts(&self) -> Option<StoreCounts> {
        let durable = self.durable.as_ref()?;
        let store = read(&durable.store);
        let store = store.as_ref()?;
        Some(StoreCounts {
            commits: store.commits(),
            syncs: store.syncs(),
            writes: store.writes(),
        })
    }

    async fn start_redrive(
        &self,
        source_arn: &str,
        destination_arn: Option<&str>,
        max_per_second: Option<u32>,
    ) -> Result<String, BackendError> {
        self.start_redrive_task(source_arn, destination_arn, max_per_second)
            .await
    }

    async fn list_redrives(
        &self,
        source_arn: &str,
        max: usize,
    ) -> Result<Vec<RedriveTask>, BackendError> {
        self.slot(source_arn.rsplit(':').next().unwrap_or(source_arn))?;
        Ok(self.list_redrive_tasks(source_arn, max))
    }

    async fn cancel_redrive(&self, handle: &str) -> Result<u64, BackendError> {
        self.cancel_redrive_task(handle)
    }

    async fn move_messages(
        &self,
        source_url: &str,
        destination_url: &str,
        messages: &[MessageAt],
    ) -> Result<Vec<MoveOutcome>, BackendError> {
        self.move_chosen(source_url, destination_url, messages)
            .await
    }

    async fn peek(
        &self,
        queue_url: &str,
        after: Option<u64>,
        max: usize,
    ) -> Result<Vec<PeekedMessage>, BackendError> {
        let slot = self.slot(queue_url)?;
        let now = self.now();
        let (peeked, fifo) = {
            let queue = lock(&slot.queue);
            (queue.peek(after, max), queue.settings.fifo)
        };
        let wanted: Vec<(u64, &Held)> = peeked
            .iter()
            .map(|(seq, message)| (*seq, &message.held))
            .collect();
        let bodies = self.bodies_of(queue_name(queue_url), &wanted).await?;
        Ok(peeked
            .iter()
            .zip(bodies)
            .filter_map(|((seq, message), body)| {
                let body = body?;
                Some(peeked_message(*seq, now, fifo, message, &body))
            })
            .collect())
    }

    async fn ping(&self) -> Result<(), BackendError> {
        // Readiness follows the store: a failed one is reopened here too (within its backoff).
        self.heal()
    }
}
