//! The fake backend of the in-process tier: the embedded engine in memory behind the port, with
//! failures to inject, a purge as lazy as SQS's, and optional capabilities that can be switched
//! off (an adapter for a queue service without tags, peeks or redrives).

use async_trait::async_trait;
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::core::backend::{Backend, BackendError};
use sqs_gateway::core::model::{
    BackendMessage, BackendReceive, EntryError, EntryOutcome, OutgoingMessage, PeekedMessage,
    QueueSettings, QueueStats, RedriveTask, ResolvedQueue, SentMessage,
};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

const NO_TAGS: BackendError = BackendError::Unsupported("queue tags");
const NO_REDRIVE: BackendError =
    BackendError::Unsupported("moving messages out of a dead-letter queue");

/// A backend for tests: `engine` does the work.
pub struct FakeBackend {
    engine: Arc<EmbeddedBackend>,
    /// Serve tags, peeks and redrives (or answer unsupported, as the port's defaults do).
    optional: bool,
    /// A purge answers before it removes anything (SQS takes up to a minute).
    lazy_purge: bool,
    /// Answered, in order, by the next calls of the message and queue methods.
    faults: Mutex<VecDeque<BackendError>>,
    /// Listing queues fails (the backend is out of reach) while set.
    listings_fail: std::sync::atomic::AtomicBool,
    /// The next receive never answers (a backend that hangs).
    hang_receive: std::sync::atomic::AtomicBool,
    /// Receives wait out their long poll whoever stops waiting, as SQS's do.
    waits_like_sqs: bool,
    /// How long each count takes (a backend far away, or under load).
    stats_delay: Mutex<std::time::Duration>,
    /// The queue (by URL) whose counts never answer.
    stats_hang: Mutex<Option<String>>,
}

impl FakeBackend {
    /// Every capability of the engine.
    pub fn new(engine: Arc<EmbeddedBackend>) -> Self {
        Self {
            engine,
            optional: true,
            lazy_purge: false,
            faults: Mutex::default(),
            listings_fail: Default::default(),
            hang_receive: Default::default(),
            waits_like_sqs: false,
            stats_delay: Mutex::default(),
            stats_hang: Mutex::default(),
        }
    }

    /// Receives that wait out their long poll even when nobody waits for them any more (as an
    /// SQS call does), then look once.
    pub fn waits_like_sqs(self) -> Self {
        Self {
            waits_like_sqs: true,
            ..self
        }
    }

    /// Only the port's required methods.
    pub fn required_only(engine: Arc<EmbeddedBackend>) -> Self {
        Self {
            optional: false,
            ..Self::new(engine)
        }
    }

    /// A purge that has removed nothing yet when it answers.
    pub fn lazy_purge(self) -> Self {
        Self {
            lazy_purge: true,
            ..self
        }
    }

    /// The next call (of receive, delete, change visibility, send, purge or stats) fails so.
    pub fn fail_next(&self, error: BackendError) {
        self.faults.lock().unwrap().push_back(error);
    }

    /// Listing queues fails while `failing`, as with a backend out of reach.
    pub fn fail_listings(&self, failing: bool) {
        self.listings_fail
            .store(failing, std::sync::atomic::Ordering::Relaxed);
    }

    /// The next receive never answers.
    pub fn hang_next_receive(&self) {
        self.hang_receive
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Each count answers after `delay`.
    pub fn delay_stats(&self, delay: std::time::Duration) {
        *self.stats_delay.lock().unwrap() = delay;
    }

    /// The counts of the queue at `url` never answer.
    pub fn hang_stats_of(&self, url: &str) {
        *self.stats_hang.lock().unwrap() = Some(url.to_owned());
    }

    fn fault(&self) -> Result<(), BackendError> {
        match self.faults.lock().unwrap().pop_front() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

#[async_trait]
impl Backend for FakeBackend {
    async fn resolve(&self, locator: &str) -> Result<ResolvedQueue, BackendError> {
        self.engine.resolve(locator).await
    }
    async fn receive(
        &self,
        url: &str,
        request: &BackendReceive,
    ) -> Result<Vec<BackendMessage>, BackendError> {
        self.fault()?;
        if self
            .hang_receive
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            std::future::pending::<()>().await;
        }
        if self.waits_like_sqs {
            tokio::time::sleep(std::time::Duration::from_secs(request.wait_seconds.into())).await;
            let once = BackendReceive {
                wait_seconds: 0,
                abandoned: Default::default(),
                ..request.clone()
            };
            return self.engine.receive(url, &once).await;
        }
        self.engine.receive(url, request).await
    }
    async fn delete_batch(
        &self,
        url: &str,
        handles: &[&str],
        expired: sqs_gateway::core::model::ExpiredFifoHandles,
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        self.fault()?;
        self.engine.delete_batch(url, handles, expired).await
    }
    async fn change_visibility_batch(
        &self,
        url: &str,
        entries: &[(&str, u32)],
        expired: sqs_gateway::core::model::ExpiredVisibility,
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        self.fault()?;
        self.engine
            .change_visibility_batch(url, entries, expired)
            .await
    }
    async fn send_batch(
        &self,
        url: &str,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<Result<SentMessage, EntryError>>, BackendError> {
        self.fault()?;
        self.engine.send_batch(url, messages).await
    }
    async fn purge(&self, url: &str) -> Result<(), BackendError> {
        self.fault()?;
        if self.lazy_purge {
            return Ok(());
        }
        self.engine.purge(url).await
    }
    async fn stats(&self, url: &str) -> Result<QueueStats, BackendError> {
        self.fault()?;
        if self.stats_hang.lock().unwrap().as_deref() == Some(url) {
            std::future::pending::<()>().await;
        }
        let delay = *self.stats_delay.lock().unwrap();
        tokio::time::sleep(delay).await;
        self.engine.stats(url).await
    }
    async fn create_queue(
        &self,
        name: &str,
        settings: &QueueSettings,
    ) -> Result<ResolvedQueue, BackendError> {
        self.engine.create_queue(name, settings).await
    }
    async fn delete_queue(&self, url: &str) -> Result<(), BackendError> {
        self.engine.delete_queue(url).await
    }
    async fn list_queues(&self, prefix: &str) -> Result<Vec<String>, BackendError> {
        if self
            .listings_fail
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return Err(BackendError::Unavailable(
                "the backend is out of reach".into(),
            ));
        }
        self.engine.list_queues(prefix).await
    }
    async fn set_queue_settings(
        &self,
        url: &str,
        settings: &QueueSettings,
    ) -> Result<(), BackendError> {
        self.engine.set_queue_settings(url, settings).await
    }
    async fn ping(&self) -> Result<(), BackendError> {
        self.engine.ping().await
    }
    fn shutting_down(&self) {
        self.engine.shutting_down();
    }
    async fn tag_queue(
        &self,
        url: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<(), BackendError> {
        match self.optional {
            true => self.engine.tag_queue(url, tags).await,
            false => Err(NO_TAGS),
        }
    }
    async fn untag_queue(&self, url: &str, keys: &[String]) -> Result<(), BackendError> {
        match self.optional {
            true => self.engine.untag_queue(url, keys).await,
            false => Err(NO_TAGS),
        }
    }
    async fn list_queue_tags(&self, url: &str) -> Result<BTreeMap<String, String>, BackendError> {
        match self.optional {
            true => self.engine.list_queue_tags(url).await,
            false => Err(NO_TAGS),
        }
    }
    async fn peek(
        &self,
        url: &str,
        after: Option<u64>,
        max: usize,
    ) -> Result<Vec<PeekedMessage>, BackendError> {
        match self.optional {
            true => self.engine.peek(url, after, max).await,
            false => Err(BackendError::Unsupported(
                "reading messages without a lease",
            )),
        }
    }
    async fn start_redrive(
        &self,
        source: &str,
        destination: Option<&str>,
        max_per_second: Option<u32>,
    ) -> Result<String, BackendError> {
        match self.optional {
            true => {
                self.engine
                    .start_redrive(source, destination, max_per_second)
                    .await
            }
            false => Err(NO_REDRIVE),
        }
    }
    async fn list_redrives(
        &self,
        source: &str,
        max: usize,
    ) -> Result<Vec<RedriveTask>, BackendError> {
        match self.optional {
            true => self.engine.list_redrives(source, max).await,
            false => Err(NO_REDRIVE),
        }
    }
    async fn cancel_redrive(&self, handle: &str) -> Result<u64, BackendError> {
        match self.optional {
            true => self.engine.cancel_redrive(handle).await,
            false => Err(NO_REDRIVE),
        }
    }
}
