//! The backend port, metered: a decorator that times, counts and traces every call the core
//! makes to whichever adapter sits behind the port, so backend metrics and spans need nothing of
//! the adapters.

use crate::core::backend::{Backend, BackendError};
use crate::core::metrics::meters::Meters;
use crate::core::model::{
    BackendMessage, BackendReceive, EntryError, EntryOutcome, ExpiredFifoHandles,
    ExpiredVisibility, MessageAt, MoveOutcome, OutgoingMessage, PeekedMessage, QueueSettings,
    QueueStats, RedriveTask, ResolvedQueue, SentMessage, StoreCounts,
};
use crate::core::spans;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::time::Instant;

/// A backend whose calls are counted and timed under `name` (`embedded`, `sqs`).
pub struct MeteredBackend {
    inner: Arc<dyn Backend>,
    name: &'static str,
    meters: Meters,
}

impl MeteredBackend {
    /// Meters `inner`'s calls as `name`.
    pub fn new(inner: Arc<dyn Backend>, name: &'static str, meters: Meters) -> Self {
        Self {
            inner,
            name,
            meters,
        }
    }

    async fn timed<T>(
        &self,
        call: &'static str,
        work: impl Future<Output = Result<T, BackendError>>,
    ) -> Result<T, BackendError> {
        let started = Instant::now();
        let result = spans::traced(spans::backend_call(self.name, call), work).await;
        self.meters
            .backend_call(self.name, call, result.as_ref().err(), started.elapsed());
        result
    }
}

#[async_trait]
impl Backend for MeteredBackend {
    async fn resolve(&self, locator: &str) -> Result<ResolvedQueue, BackendError> {
        self.timed("resolve", self.inner.resolve(locator)).await
    }

    async fn receive(
        &self,
        queue_url: &str,
        request: &BackendReceive,
    ) -> Result<Vec<BackendMessage>, BackendError> {
        self.timed("receive", self.inner.receive(queue_url, request))
            .await
    }

    async fn delete_batch(
        &self,
        queue_url: &str,
        backend_handles: &[&str],
        expired: ExpiredFifoHandles,
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        self.timed(
            "delete_batch",
            self.inner.delete_batch(queue_url, backend_handles, expired),
        )
        .await
    }

    async fn change_visibility_batch(
        &self,
        queue_url: &str,
        entries: &[(&str, u32)],
        expired: ExpiredVisibility,
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        self.timed(
            "change_visibility_batch",
            self.inner
                .change_visibility_batch(queue_url, entries, expired),
        )
        .await
    }

    async fn return_undelivered(
        &self,
        queue_url: &str,
        backend_handles: &[&str],
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        self.timed(
            "return_undelivered",
            self.inner.return_undelivered(queue_url, backend_handles),
        )
        .await
    }

    async fn send_batch(
        &self,
        queue_url: &str,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<Result<SentMessage, EntryError>>, BackendError> {
        self.timed("send_batch", self.inner.send_batch(queue_url, messages))
            .await
    }

    async fn purge(&self, queue_url: &str) -> Result<(), BackendError> {
        self.timed("purge", self.inner.purge(queue_url)).await
    }

    async fn stats(&self, queue_url: &str) -> Result<QueueStats, BackendError> {
        self.timed("stats", self.inner.stats(queue_url)).await
    }

    async fn create_queue(
        &self,
        name: &str,
        settings: &QueueSettings,
    ) -> Result<ResolvedQueue, BackendError> {
        self.timed("create_queue", self.inner.create_queue(name, settings))
            .await
    }

    async fn delete_queue(&self, queue_url: &str) -> Result<(), BackendError> {
        self.timed("delete_queue", self.inner.delete_queue(queue_url))
            .await
    }

    async fn list_queues(&self, prefix: &str) -> Result<Vec<String>, BackendError> {
        self.timed("list_queues", self.inner.list_queues(prefix))
            .await
    }

    async fn set_queue_settings(
        &self,
        queue_url: &str,
        settings: &QueueSettings,
    ) -> Result<(), BackendError> {
        self.timed(
            "set_queue_settings",
            self.inner.set_queue_settings(queue_url, settings),
        )
        .await
    }

    async fn ping(&self) -> Result<(), BackendError> {
        self.timed("ping", self.inner.ping()).await
    }

    fn shutting_down(&self) {
        self.inner.shutting_down();
    }

    fn store_counts(&self) -> Option<StoreCounts> {
        self.inner.store_counts()
    }

    fn knows_current_deliveries(&self) -> bool {
        self.inner.knows_current_deliveries()
    }

    fn made_up_arn_region(&self) -> Option<&'static str> {
        self.inner.made_up_arn_region()
    }

    fn keeps_sqs_time_rules(&self) -> bool {
        self.inner.keeps_sqs_time_rules()
    }

    async fn tag_queue(
        &self,
        queue_url: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<(), BackendError> {
        self.timed("tag_queue", self.inner.tag_queue(queue_url, tags))
            .await
    }

    async fn untag_queue(&self, queue_url: &str, keys: &[String]) -> Result<(), BackendError> {
        self.timed("untag_queue", self.inner.untag_queue(queue_url, keys))
            .await
    }

    async fn list_queue_tags(
        &self,
        queue_url: &str,
    ) -> Result<BTreeMap<String, String>, BackendError> {
        self.timed("list_queue_tags", self.inner.list_queue_tags(queue_url))
            .await
    }

    async fn peek(
        &self,
        queue_url: &str,
        after: Option<u64>,
        max: usize,
    ) -> Result<Vec<PeekedMessage>, BackendError> {
        self.timed("peek", self.inner.peek(queue_url, after, max))
            .await
    }

    async fn move_messages(
        &self,
        source_url: &str,
        destination_url: &str,
        messages: &[MessageAt],
    ) -> Result<Vec<MoveOutcome>, BackendError> {
        self.timed(
            "move_messages",
            self.inner
                .move_messages(source_url, destination_url, messages),
        )
        .await
    }

    async fn start_redrive(
        &self,
        source_arn: &str,
        destination_arn: Option<&str>,
        max_per_second: Option<u32>,
    ) -> Result<String, BackendError> {
        self.timed(
            "start_redrive",
            self.inner
                .start_redrive(source_arn, destination_arn, max_per_second),
        )
        .await
    }

    async fn list_redrives(
        &self,
        source_arn: &str,
        max: usize,
    ) -> Result<Vec<RedriveTask>, BackendError> {
        self.timed("list_redrives", self.inner.list_redrives(source_arn, max))
            .await
    }

    async fn cancel_redrive(&self, handle: &str) -> Result<u64, BackendError> {
        self.timed("cancel_redrive", self.inner.cancel_redrive(handle))
            .await
    }
}
