//! Plain data the core and backends exchange: messages, attributes and per-entry outcomes.

use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// A queue's settings as the backend reports them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueueAttributes {
    /// A FIFO queue (message groups, sequence numbers).
    pub fifo: bool,
    /// Default visibility timeout of a receive, in seconds.
    pub visibility_timeout_seconds: u32,
    /// Default long-poll wait of a receive, in seconds.
    pub receive_wait_seconds: u32,
    /// The queue's ARN, used to match dead-letter sources.
    pub arn: Option<String>,
    /// Where this queue sends messages received too often.
    pub redrive: Option<RedrivePolicy>,
    /// Default delay of new messages, in seconds.
    pub delay_seconds: u32,
    /// How long messages are kept, in seconds.
    pub retention_seconds: u32,
    /// Largest message (body plus attributes), in bytes.
    pub max_message_bytes: u32,
    /// FIFO: deduplicate by the body's SHA-256 when no id is given.
    pub content_based_deduplication: bool,
    /// When the queue was created, in seconds since the epoch (if the backend says).
    pub created_timestamp: Option<u64>,
    /// When its settings last changed, in seconds since the epoch (if the backend says).
    pub last_modified_timestamp: Option<u64>,
    /// FIFO: deduplication ids are kept per message group (`DeduplicationScope` `messageGroup`)
    /// rather than per queue.
    pub per_group_deduplication: bool,
    /// FIFO: throughput per message group (`FifoThroughputLimit` `perMessageGroupId`; with
    /// per-group deduplication, SQS's high-throughput mode) rather than per queue.
    pub per_group_throughput: bool,
    /// The backend encrypts the queue's messages at rest with keys it manages
    /// (`SqsManagedSseEnabled`).
    pub managed_encryption: bool,
    /// The attributes of [`KEPT_ATTRIBUTES`] the queue was given, answered as given.
    pub kept: BTreeMap<String, String>,
}

/// SQS queue attributes the gateway stores and answers as they were given without acting on
/// them: access is the gateway's grants (`Policy`, `RedriveAllowPolicy`), and the embedded
/// engine encrypts nothing (`SqsManagedSseEnabled` and the KMS settings).
pub const KEPT_ATTRIBUTES: [&str; 5] = [
    "Policy",
    "RedriveAllowPolicy",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "SqsManagedSseEnabled",
];

/// A queue's dead-letter settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedrivePolicy {
    /// ARN of the dead-letter queue.
    pub dead_letter_target_arn: String,
    /// Receives after which a message moves there.
    pub max_receive_count: u32,
}

/// A backend queue the registry has resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedQueue {
    /// The backend's address of the queue (an SQS queue URL).
    pub url: String,
    /// Its settings.
    pub attributes: QueueAttributes,
}

/// A typed message attribute, as SQS carries it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MessageAttribute {
    /// `String`, `Number` or `Binary`, optionally with a `.custom` suffix.
    pub data_type: String,
    /// The value; for binary attributes the raw bytes.
    pub value: AttributeValue,
}

/// The value of a [`MessageAttribute`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AttributeValue {
    /// String and Number values.
    Text(String),
    /// Binary values.
    Bytes(Vec<u8>),
}

/// The parameters of one backend receive.
#[derive(Debug, Clone)]
pub struct BackendReceive {
    /// 1 to 10.
    pub max_messages: u32,
    /// Seconds to long-poll, 0 to 20.
    pub wait_seconds: u32,
    /// Seconds the messages stay in flight.
    pub visibility_timeout_seconds: u32,
    /// FIFO receive request attempt id, if any.
    pub attempt_id: Option<String>,
    /// FIFO: at most one message of each message group (its first).
    pub one_per_group: bool,
    /// Cancelled when nobody waits for the answer any more (the client went away, or shutdown
    /// answered it): a backend that can end its wait without taking anything ends it, empty.
    pub abandoned: tokio_util::sync::CancellationToken,
}

/// One delivery of a message, as a backend returns it.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BackendMessage {
    /// The message's id, the same on every delivery.
    pub message_id: String,
    /// The backend's own receipt handle; never leaves the gateway.
    pub backend_handle: String,
    /// The body.
    pub body: String,
    /// The attributes, as the client sent them (unpacked).
    pub attributes: BTreeMap<String, MessageAttribute>,
    /// When it was sent (if the backend says).
    pub sent_at: Option<DateTime<Utc>>,
    /// When it was first received (if the backend says).
    pub first_received_at: Option<DateTime<Utc>>,
    /// Deliveries of this message, this one included.
    pub receive_count: u32,
    /// FIFO only.
    pub group_id: Option<String>,
    /// FIFO only: a string of digits.
    pub sequence_number: Option<String>,
    /// Set by the backend when the message was moved here from another queue's redrive.
    pub dead_letter_source_arn: Option<String>,
    /// FIFO only: the message's deduplication id.
    pub deduplication_id: Option<String>,
    /// The trace context it carries, as SQS's `AWSTraceHeader` system attribute (X-Ray form).
    #[serde(default)]
    pub trace_header: Option<String>,
}

impl std::fmt::Debug for BackendMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The backend handle is a credential for the message: never print it.
        f.debug_struct("BackendMessage")
            .field("message_id", &self.message_id)
            .field("backend_handle", &"<redacted>")
            .field("receive_count", &self.receive_count)
            .field("group_id", &self.group_id)
            .finish_non_exhaustive()
    }
}

/// The result of one entry of a batch call to a backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryOutcome {
    /// Done.
    Ok,
    /// The backend no longer knows this delivery (deleted, purged, expired).
    Gone,
    /// The message is not in flight any more (only for visibility changes).
    NotInFlight,
    /// A FIFO delivery whose visibility timeout ended, whose handle the delete refused (SQS
    /// always does; the embedded engine under [`ExpiredFifoHandles::Refuse`]); nothing changed.
    Expired,
    /// Any other per-entry failure; the text is internal.
    Failed(String),
}

/// The per-handle answer of acknowledge and visibility changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleOutcome {
    /// Applied.
    Ok,
    /// The handle's delivery is over; nothing changed.
    Stale,
    /// Not a receipt handle, or altered.
    Invalid,
    /// A FIFO handle whose visibility timeout ended, which SQS refuses to delete with (only
    /// under [`ExpiredFifoHandles::Refuse`]); nothing changed.
    Expired,
}

/// What a visibility change does with a delivery whose visibility timeout ended while no receive
/// took the message again: the REST dialects' documents refuse to extend an ended lease (stale),
/// SQS hides the message again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpiredVisibility {
    /// It is refused (`NotInFlight`), unless the change makes the message visible at once.
    Refuse,
    /// It applies, as SQS applies it; and, as on SQS, the handle of an earlier delivery of the
    /// message changes the current delivery's visibility.
    Change,
}

/// What a delete does with the handle of a FIFO delivery whose visibility timeout ended while no
/// receive took the message again: the REST dialects' documents let it delete, SQS refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpiredFifoHandles {
    /// It deletes the message.
    Delete,
    /// It is refused (`Expired`), as SQS refuses it.
    Refuse,
}

/// Why a message is in a dead-letter queue, shown to consumers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeadLetterInfo {
    /// The gateway name of the queue it came from (or the backend queue name when unregistered);
    /// `None` when several configured queues dead-letter here and the backend does not say which.
    pub source_queue: Option<String>,
    /// Why it moved; SQS only moves messages after too many receives.
    pub reason: DeadLetterReason,
}

/// Why a message was moved to a dead-letter queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DeadLetterReason {
    /// Received more often than its queue's redrive policy allows (the only reason SQS moves one).
    MaxReceiveCountExceeded,
}

impl DeadLetterReason {
    /// Its name as consumers see it.
    pub fn as_str(self) -> &'static str {
        match self {
            DeadLetterReason::MaxReceiveCountExceeded => "maxReceiveCountExceeded",
        }
    }
}

/// One message handed to a client, with its sealed receipt handle.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Delivery {
    /// The message as delivered.
    pub message: BackendMessage,
    /// The sealed handle the client acknowledges with.
    pub receipt_handle: crate::core::handle::SealedHandle,
    /// Set when the message was dead-lettered into this queue.
    pub dead_letter: Option<DeadLetterInfo>,
    /// When the message becomes visible again unless acknowledged or extended (the delivery's
    /// receive time plus its visibility timeout; a retried attempt counts from the retry).
    pub visible_at: DateTime<Utc>,
    /// What the handle says, for a consumer inside the gateway that settles the delivery itself
    /// (push): asked for with [`crate::core::gateway::ReceiveOptions::keep_claims`], so that it
    /// never opens the handle it was just given. Never kept or sent.
    #[serde(skip)]
    pub(crate) claims: Option<crate::core::handle::HandleClaims>,
}

/// A message to send.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutgoingMessage {
    /// The body.
    pub body: String,
    /// Typed attributes (up to 20 through the core).
    pub attributes: BTreeMap<String, MessageAttribute>,
    /// Standard queues only: overrides the queue's delay (0..900 s).
    pub delay_seconds: Option<u32>,
    /// FIFO only, required there.
    pub group_id: Option<String>,
    /// FIFO only: required unless the queue deduplicates by content.
    pub deduplication_id: Option<String>,
    /// The trace context it carries (SQS's `AWSTraceHeader` system attribute): outside the
    /// attribute count and the size limit, as on SQS.
    pub trace_header: Option<String>,
}

/// What a successful send answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentMessage {
    /// The backend's id of the message.
    pub message_id: String,
    /// FIFO only.
    pub sequence_number: Option<String>,
}

/// Why one entry of a batch was refused; each dialect renders the kind in its own terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryError {
    /// The kind of refusal.
    pub kind: EntryErrorKind,
    /// Safe to show the client (never a backend's own text).
    pub message: String,
}

/// The kinds of per-entry refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryErrorKind {
    /// A parameter is out of its range or malformed.
    InvalidParameter,
    /// The body (or a value) holds characters outside the allowed set.
    InvalidContents,
    /// A required parameter is missing.
    MissingParameter,
    /// The backend refused the entry for a reason of its own (logged).
    Refused,
}

impl EntryError {
    /// A refusal of this kind.
    pub fn new(kind: EntryErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// A parameter out of range or malformed.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(EntryErrorKind::InvalidParameter, message)
    }
}

/// What a backend's own disk store has done since it was opened (the embedded engine's group
/// commit): operators read how many writes share a disk sync from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreCounts {
    /// Transactions committed.
    pub commits: u64,
    /// Those of them that synced the disk.
    pub syncs: u64,
    /// Operations' writes the commits carried (a send, a delete, a receive's records...).
    pub writes: u64,
}

/// A message read without a lease, where it stands in its queue.
#[derive(Debug, Clone)]
pub struct PeekedMessage {
    /// Its place in the queue's order: a later read may start after it.
    pub position: u64,
    /// Where it is now.
    pub state: MessageState,
    /// When it is (or was) visible: after its delay, or when its current lease ends.
    pub visible_at: Option<DateTime<Utc>>,
    /// The message (its backend handle names no delivery: nothing may act on it).
    pub message: BackendMessage,
}

/// A message named for a move: where a read without a lease found it, and its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageAt {
    /// Its position in its queue.
    pub position: u64,
    /// Its id.
    pub message_id: String,
}

/// What became of one message of a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveOutcome {
    /// It is in the destination now, and no longer in the source.
    Moved,
    /// No such message is in the source (moved, deleted or expired meanwhile): nothing done.
    NotFound,
    /// A consumer holds it (its lease has not ended): left where it is.
    InFlight,
}

/// Where a message is, as a read without a lease sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageState {
    /// Ready to be received.
    Visible,
    /// Received, and its lease has not ended.
    InFlight,
    /// Not delivered yet: its delay has not passed.
    Delayed,
}

/// How many messages a queue holds, by state, and how old the oldest is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueStats {
    /// Ready to be received now.
    pub visible: u64,
    /// Received and not yet visible again.
    pub in_flight: u64,
    /// Sent with a delay that has not passed.
    pub delayed: u64,
    /// Age of the oldest message, in seconds; `None` when the queue is empty.
    pub oldest_age_seconds: Option<u64>,
}

/// Settings of a queue to create; `None` takes the SQS default.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueueSettings {
    /// Default visibility timeout, seconds.
    pub visibility_timeout_seconds: Option<u32>,
    /// Default delay, seconds.
    pub delay_seconds: Option<u32>,
    /// Default long-poll wait, seconds.
    pub receive_wait_seconds: Option<u32>,
    /// Retention, seconds.
    pub retention_seconds: Option<u32>,
    /// Largest message, bytes.
    pub max_message_bytes: Option<u32>,
    /// FIFO: deduplicate by content.
    pub content_based_deduplication: Option<bool>,
    /// Name of the dead-letter queue and the receives after which messages move there.
    pub dead_letter: Option<(String, u32)>,
    /// A change that takes the dead-letter queue away (SQS's `RedrivePolicy` set to `""`).
    pub remove_dead_letter: bool,
    /// FIFO: deduplication ids kept per message group (`DeduplicationScope`).
    pub per_group_deduplication: Option<bool>,
    /// FIFO: throughput per message group (`FifoThroughputLimit`).
    pub per_group_throughput: Option<bool>,
    /// Attributes of [`KEPT_ATTRIBUTES`] to keep; an empty value takes one away.
    pub kept: BTreeMap<String, String>,
}

/// A move of messages out of a dead-letter queue (back to their sources, or to a destination), as
/// its backend reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedriveTask {
    /// Names the task to cancel it; only while it runs.
    pub handle: Option<String>,
    /// Where the task is.
    pub status: RedriveStatus,
    /// The dead-letter queue's ARN.
    pub source_arn: String,
    /// Where the messages go; `None`: each back to the queue it was dead-lettered from.
    pub destination_arn: Option<String>,
    /// The rate limit, messages a second.
    pub max_per_second: Option<u32>,
    /// Messages moved so far.
    pub moved: u64,
    /// How many messages it set out to move.
    pub to_move: Option<u64>,
    /// Why it failed, when it did.
    pub failure: Option<String>,
    /// When it started, in milliseconds since the epoch.
    pub started_at: i64,
}

/// Where a redrive task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedriveStatus {
    /// Moving.
    Running,
    /// Moved every message it set out to.
    Completed,
    /// Asked to stop.
    Cancelling,
    /// Stopped before the end.
    Cancelled,
    /// Stopped by an error.
    Failed,
}

impl RedriveStatus {
    /// The name SQS gives the status.
    pub fn name(self) -> &'static str {
        match self {
            RedriveStatus::Running => "RUNNING",
            RedriveStatus::Completed => "COMPLETED",
            RedriveStatus::Cancelling => "CANCELLING",
            RedriveStatus::Cancelled => "CANCELLED",
            RedriveStatus::Failed => "FAILED",
        }
    }

    /// From the name SQS gives it.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "RUNNING" => RedriveStatus::Running,
            "COMPLETED" => RedriveStatus::Completed,
            "CANCELLING" => RedriveStatus::Cancelling,
            "CANCELLED" => RedriveStatus::Cancelled,
            "FAILED" => RedriveStatus::Failed,
            _ => return None,
        })
    }
}

/// SQS's words for its queue name rule, which queues created through the gateway follow.
pub const QUEUE_NAME_RULE: &str =
    "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length";

/// SQS's queue name rule: 1 to 80 of A-Z, a-z, 0-9, `-`, `_`, with an optional `.fifo` suffix.
pub fn valid_queue_name(name: &str) -> bool {
    let stem = name.strip_suffix(".fifo").unwrap_or(name);
    !stem.is_empty()
        && name.len() <= 80
        && stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}
