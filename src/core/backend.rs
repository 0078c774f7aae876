//! The backend port: the trait every queue backend implements, and the errors it speaks in. The
//! core owns it; the adapters in `crate::backend` implement it and import nothing above the core.

use crate::core::error::{ErrorKind, GatewayError};
use crate::core::model::{
    BackendMessage, BackendReceive, EntryError, EntryOutcome, ExpiredFifoHandles,
    ExpiredVisibility, MessageAt, MoveOutcome, OutgoingMessage, PeekedMessage, QueueSettings,
    QueueStats, RedriveTask, ResolvedQueue, SentMessage, StoreCounts,
};
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
    /// A queue of that name exists with other settings; the text is SQS's, written for clients.
    #[error("{0}")]
    AlreadyExists(String),
    /// The request breaks a rule the backend checks itself; the text is the adapter's own,
    /// written for clients (no backend answer quoted).
    #[error("invalid: {0}")]
    Invalid(String),
    /// The remote queue service refused the request; the detail (its error code and request id)
    /// is for the log only.
    #[error("backend refused the request: {0}")]
    Rejected(String),
    /// A thing the request names (a redrive task, say) does not exist.
    #[error("not found: {0}")]
    ResourceNotFound(String),
    /// The backend cannot do this at all (an optional capability it lacks).
    #[error("unsupported by this backend: {0}")]
    Unsupported(&'static str),
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
            // The backend's words: SQS's, naming the attribute that differs.
            BackendError::AlreadyExists(message) => {
                GatewayError::new(ErrorKind::AlreadyExists, message)
            }
            BackendError::Invalid(message) => GatewayError::invalid_request(message),
            BackendError::Rejected(_) => GatewayError::invalid_request(
                "the queue service refused the request; check its parameters",
            )
            .with_source(error),
            BackendError::ResourceNotFound(what) => {
                GatewayError::new(ErrorKind::ResourceNotFound, what)
            }
            BackendError::Unsupported(what) => GatewayError::new(
                ErrorKind::Unsupported,
                format!("{what} is not supported by this gateway's backend"),
            ),
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

    /// Deletes the deliveries with these backend handles; `expired` says what an expired FIFO
    /// delivery's handle does (SQS itself always refuses it).
    async fn delete_batch(
        &self,
        queue_url: &str,
        backend_handles: &[&str],
        expired: ExpiredFifoHandles,
    ) -> Result<Vec<EntryOutcome>, BackendError>;

    /// Sets the visibility timeout, in seconds from now, of these deliveries; `expired` says what a
    /// delivery whose timeout ended does (SQS itself always applies the change).
    async fn change_visibility_batch(
        &self,
        queue_url: &str,
        entries: &[(&str, u32)],
        expired: ExpiredVisibility,
    ) -> Result<Vec<EntryOutcome>, BackendError>;

    /// Gives back deliveries that no client got (their receive was abandoned): visible again at
    /// once, each message's receive count and first receive time as before that receive. A
    /// backend that counts every take for good (SQS) answers `Unsupported`, and the core hands
    /// such deliveries to the next receive instead.
    async fn return_undelivered(
        &self,
        _queue_url: &str,
        _backend_handles: &[&str],
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        Err(BackendError::Unsupported(
            "giving back a delivery uncounted",
        ))
    }

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

    /// Whether the backend answers at all; for readiness.
    async fn ping(&self) -> Result<(), BackendError>;

    /// The gateway is shutting down: waiting long polls may end now (with what they have).
    fn shutting_down(&self) {}

    /// Whether the backend acts only on a message's current delivery and remembers which one that
    /// is across restarts (the durable embedded engine): a delivery the ledger does not know
    /// (from before a restart) may then be left to the backend to judge.
    fn knows_current_deliveries(&self) -> bool {
        false
    }

    /// The region of the queue ARNs the backend makes up (the embedded engine's); `None` when its
    /// ARNs are real ones (SQS's), which clients are shown as they are.
    fn made_up_arn_region(&self) -> Option<&'static str> {
        None
    }

    /// Whether the backend keeps SQS's 60-second rules itself (a purge in progress, a name
    /// deleted recently); the SQS endpoint keeps them in front of one that does not.
    fn keeps_sqs_time_rules(&self) -> bool {
        true
    }

    /// What the backend's own disk store has done, for the meters; `None` without one.
    fn store_counts(&self) -> Option<StoreCounts> {
        None
    }

    // Optional capabilities: a backend that lacks one answers `Unsupported`.

    /// Adds or replaces tags.
    async fn tag_queue(
        &self,
        _queue_url: &str,
        _tags: &BTreeMap<String, String>,
    ) -> Result<(), BackendError> {
        Err(BackendError::Unsupported("queue tags"))
    }

    /// Removes tags.
    async fn untag_queue(&self, _queue_url: &str, _keys: &[String]) -> Result<(), BackendError> {
        Err(BackendError::Unsupported("queue tags"))
    }

    /// The queue's tags.
    async fn list_queue_tags(
        &self,
        _queue_url: &str,
    ) -> Result<BTreeMap<String, String>, BackendError> {
        Err(BackendError::Unsupported("queue tags"))
    }

    /// Up to `max` messages in queue order, from the one after position `after` (from the
    /// first without), without a lease: visibility and receive counts stay as they are.
    async fn peek(
        &self,
        _queue_url: &str,
        _after: Option<u64>,
        _max: usize,
    ) -> Result<Vec<PeekedMessage>, BackendError> {
        Err(BackendError::Unsupported(
            "reading messages without a lease",
        ))
    }

    /// Moves the messages named (each by its position and id, as a read without a lease gave
    /// them) from `source_url` to `destination_url`, each out of one and into the other at once:
    /// an outcome per message, in the order given. A moved message keeps its id, body and
    /// attributes, and starts again at the destination (received 0 times, visible now).
    async fn move_messages(
        &self,
        _source_url: &str,
        _destination_url: &str,
        _messages: &[MessageAt],
    ) -> Result<Vec<MoveOutcome>, BackendError> {
        Err(BackendError::Unsupported(
            "moving messages chosen by a read without a lease",
        ))
    }

    /// Starts moving the messages of the dead-letter queue `source_arn` (those visible now) to
    /// `destination_arn`, or each back to the queue it was dead-lettered from; at most
    /// `max_per_second` a second. Answers the task's handle.
    async fn start_redrive(
        &self,
        _source_arn: &str,
        _destination_arn: Option<&str>,
        _max_per_second: Option<u32>,
    ) -> Result<String, BackendError> {
        Err(BackendError::Unsupported(
            "moving messages out of a dead-letter queue",
        ))
    }

    /// The latest redrive tasks of a dead-letter queue, newest first, at most `max`.
    async fn list_redrives(
        &self,
        _source_arn: &str,
        _max: usize,
    ) -> Result<Vec<RedriveTask>, BackendError> {
        Err(BackendError::Unsupported(
            "moving messages out of a dead-letter queue",
        ))
    }

    /// Stops a running redrive task; answers how many messages it had moved.
    async fn cancel_redrive(&self, _handle: &str) -> Result<u64, BackendError> {
        Err(BackendError::Unsupported(
            "moving messages out of a dead-letter queue",
        ))
    }
}
