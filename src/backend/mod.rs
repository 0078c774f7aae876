//! The one trait every queue backend implements, and the errors it speaks in.

pub mod embedded;
pub mod sqs;

use crate::core::model::{
    BackendMessage, BackendReceive, EntryError, EntryOutcome, OutgoingMessage, QueueSettings,
    QueueStats, ResolvedQueue, SentMessage,
};
use crate::core::{ErrorKind, GatewayError};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long clients are told to wait when the backend is down or throttling.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// A backend call failed as a whole.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BackendError {
    /// The queue does not exist (any more).
    #[error("queue does not exist")]
    QueueNotFound,
    /// A standard queue has as many messages in flight as SQS allows (120,000).
    #[error("too many messages in flight")]
    OverLimit,
    /// The backend cannot be reached, timed out, or is throttling.
    #[error("backend unavailable: {0}")]
    Unavailable(String),
    /// A queue of that name exists with other settings.
    #[error("queue exists with other attributes: {0}")]
    AlreadyExists(String),
    /// The backend refused the request's parameters (a gateway bug or a queue setting).
    #[error("backend refused the request: {0}")]
    Rejected(String),
    /// Anything else.
    #[error("backend error: {0}")]
    Other(String),
}

impl From<BackendError> for GatewayError {
    fn from(error: BackendError) -> Self {
        match error {
            BackendError::QueueNotFound => GatewayError::queue_not_found(),
            BackendError::OverLimit => GatewayError::new(
                ErrorKind::OverLimit,
                "too many messages are in flight; acknowledge or release some",
            ),
            BackendError::Unavailable(_) => {
                GatewayError::unavailable(DEFAULT_RETRY_AFTER).with_source(error)
            }
            BackendError::AlreadyExists(_) => GatewayError::new(
                ErrorKind::AlreadyExists,
                "A queue already exists with the same name and different attributes",
            )
            .with_source(error),
            // Rejections carry our own validation text or an SQS error code, never a handle.
            BackendError::Rejected(detail) => GatewayError::invalid_request(detail),
            BackendError::Other(_) => GatewayError::internal(error),
        }
    }
}

/// A queue service the gateway keeps messages in.
///
/// Queues are addressed by their backend locator (an SQS queue name or URL) when resolving, then by
/// the resolved URL. Batch calls take at most 10 entries and answer one outcome per entry, in order.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Finds a queue and reads its attributes.
    async fn resolve(&self, locator: &str) -> Result<ResolvedQueue, BackendError>;

    /// Receives up to `max_messages`, long-polling up to `wait_seconds`.
    async fn receive(
        &self,
        queue_url: &str,
        request: &BackendReceive,
    ) -> Result<Vec<BackendMessage>, BackendError>;

    /// Deletes the deliveries with these backend handles.
    async fn delete_batch(
        &self,
        queue_url: &str,
        backend_handles: &[&str],
    ) -> Result<Vec<EntryOutcome>, BackendError>;

    /// Sets the visibility timeout, in seconds from now, of these deliveries.
    async fn change_visibility_batch(
        &self,
        queue_url: &str,
        entries: &[(&str, u32)],
    ) -> Result<Vec<EntryOutcome>, BackendError>;

    /// Sends up to 10 messages; one result per message, in order.
    async fn send_batch(
        &self,
        queue_url: &str,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<Result<SentMessage, EntryError>>, BackendError>;

    /// Deletes every message of the queue, in flight ones too.
    async fn purge(&self, queue_url: &str) -> Result<(), BackendError>;

    /// Counts the queue's messages by state.
    async fn stats(&self, queue_url: &str) -> Result<QueueStats, BackendError>;

    /// Creates a queue (or finds the existing one with that name) and resolves it.
    async fn create_queue(
        &self,
        name: &str,
        settings: &QueueSettings,
    ) -> Result<ResolvedQueue, BackendError>;

    /// Deletes a queue and its messages.
    async fn delete_queue(&self, queue_url: &str) -> Result<(), BackendError>;

    /// Names of the backend's queues starting with `prefix`.
    async fn list_queues(&self, prefix: &str) -> Result<Vec<String>, BackendError>;

    /// Changes a queue's settings; only the fields given change.
    async fn set_queue_settings(
        &self,
        queue_url: &str,
        settings: &QueueSettings,
    ) -> Result<(), BackendError>;

    /// Adds or replaces tags.
    async fn tag_queue(
        &self,
        queue_url: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<(), BackendError>;

    /// Removes tags.
    async fn untag_queue(&self, queue_url: &str, keys: &[String]) -> Result<(), BackendError>;

    /// The queue's tags.
    async fn list_queue_tags(
        &self,
        queue_url: &str,
    ) -> Result<BTreeMap<String, String>, BackendError>;

    /// Whether the backend answers at all; for readiness.
    async fn ping(&self) -> Result<(), BackendError>;

    /// The gateway is shutting down: waiting long polls may end now (with what they have).
    fn shutting_down(&self) {}
}
