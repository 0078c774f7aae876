//! basaltic's answers: queues, sent, received and inspected messages, batch results, metrics.

use super::*;

// The answers.

/// A queue resource.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Queue)]
pub(in crate::api::basaltic) struct QueueJson {
    /// The queue's UUID.
    #[schema(value_type = QueueId)]
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: QueueType,
    /// Its settings.
    pub settings: SettingsJson,
    /// When it was created, if the backend says.
    #[schema(required = true, format = DateTime)]
    pub created_at: Option<String>,
    /// What the key that asked may do on it: its permissions there (`*` spelt out).
    pub permissions: Vec<&'static str>,
    /// Whether its delivery is paused (`POST /v1/queues/{id}/pause`): receives answer no
    /// message and push posts nothing, while sends go on.
    pub delivery_paused: bool,
    /// Since when, while it is paused.
    #[schema(required = true, format = DateTime)]
    pub paused_since: Option<String>,
    /// With `include=counts` only: its messages by state now (`null`: the backend could not
    /// count them just now).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<QueueCounts>)]
    pub counts: Option<Option<QueueCounts>>,
}

/// What a queue read may add to each queue.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(in crate::api::basaltic) enum Include {
    /// Its messages by state, counted now.
    Counts,
}

/// A queue's messages by state, counted when asked.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct QueueCounts {
    /// Ready to be received.
    pub visible: u64,
    /// Received and not visible again yet.
    pub in_flight: u64,
    /// Not delivered yet: their delay has not passed.
    pub delayed: u64,
    /// Age of the oldest message, in seconds (`null` when empty, or where the backend does not
    /// tell: SQS).
    #[schema(required = true)]
    pub oldest_message_age_seconds: Option<u64>,
}

/// The key that asked, and what it may do.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct KeyResult {
    /// The key.
    pub result: KeyJson,
}

/// A key as it describes itself (never its secret).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Key)]
pub(in crate::api::basaltic) struct KeyJson {
    /// Its public id.
    pub id: String,
    /// Its label.
    pub name: String,
    /// Queue UUID (or `*`) -> the permissions granted there, as configured.
    pub grants: BTreeMap<String, Vec<String>>,
}

/// A task moving the messages of a dead-letter queue.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RedriveTask)]
pub(in crate::api::basaltic) struct RedriveTaskJson {
    /// Where it is.
    pub status: RedriveState,
    /// Messages moved so far.
    pub moved: u64,
    /// How many it set out to move, where known.
    #[schema(required = true)]
    pub to_move: Option<u64>,
    /// Its rate limit, messages a second.
    #[schema(required = true)]
    pub max_messages_per_second: Option<u32>,
    /// Where the messages go; `null`: each back to the queue it was dead-lettered from.
    #[schema(required = true, value_type = Option<QueueId>)]
    pub destination_queue_id: Option<String>,
    /// When it started.
    #[schema(format = DateTime)]
    pub started_at: String,
    /// Why it failed, when it did.
    #[schema(required = true)]
    pub failure: Option<String>,
}

/// Where a redrive task is.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(in crate::api::basaltic) enum RedriveState {
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

/// One redrive task.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct RedriveTaskResult {
    /// The task.
    pub result: RedriveTaskJson,
}

/// A dead-letter queue's latest redrive tasks, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct RedriveTasks {
    /// The tasks.
    pub tasks: Vec<RedriveTaskJson>,
}

/// A queue's settings.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Settings)]
pub(in crate::api::basaltic) struct SettingsJson {
    /// Delay before a new message's first delivery, in seconds.
    #[schema(maximum = 900)]
    pub delay_seconds: u32,
    /// Long-poll wait of a receive that gives none, in seconds.
    #[schema(maximum = 20)]
    pub receive_wait_time_seconds: u32,
    /// Lease of a receive that gives none, in seconds.
    #[schema(maximum = 43200)]
    pub visibility_timeout_seconds: u32,
    /// Largest message, body and attributes together, in bytes.
    #[schema(minimum = 1024, maximum = 262144)]
    pub max_message_bytes: u32,
    /// How long a message is kept, in seconds.
    #[schema(minimum = 60, maximum = 1209600)]
    pub retention_seconds: u32,
    /// Where messages received too often move, if anywhere.
    #[schema(required = true)]
    pub dead_letter_queue: Option<DeadLetterJson>,
    /// FIFO queues only: content-based deduplication.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub content_based_deduplication: Option<bool>,
}

/// A queue's dead-letter queue.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DeadLetterQueue)]
pub(in crate::api::basaltic) struct DeadLetterJson {
    /// The dead-letter queue's UUID (`null` if it is no basaltic queue the gateway knows).
    #[schema(required = true, value_type = Option<QueueId>)]
    pub queue_id: Option<String>,
    /// Receives after which a message moves there.
    #[schema(minimum = 1, maximum = 1000)]
    pub max_receive_count: u32,
}

/// One queue.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct QueueResult {
    /// The queue.
    pub result: QueueJson,
}

/// The queues the key sees, by name.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct QueueList {
    /// The queues.
    pub queues: Vec<QueueJson>,
}

/// A message sent.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct SendResult {
    /// The message.
    pub result: SentMessage,
}

/// The id of a message sent.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct SentMessage {
    /// The message's id.
    pub message_id: String,
}

/// A received message.
// No `Debug`: it holds a receipt.
#[derive(Serialize, ToSchema)]
pub(in crate::api::basaltic) struct ReceivedMessage {
    /// The message's id.
    pub message_id: String,
    /// The body.
    pub body: String,
    /// The attributes, by name.
    pub attributes: BTreeMap<String, AttributeJson>,
    /// The receipt of this receive: deletes the message or changes its visibility.
    pub receipt_handle: String,
    /// How many times it has been received, this time included.
    pub receive_count: u32,
    /// When the lease ends.
    #[schema(format = DateTime)]
    pub visible_at: String,
    /// The producer's W3C trace context, when the message carries one (from its
    /// `AWSTraceHeader`, its `traceparent` attribute, or the sending request's header).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(
        nullable = false,
        example = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
    )]
    pub traceparent: Option<String>,
    /// The producer's W3C `tracestate`, when its context has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub tracestate: Option<String>,
}

/// The answer of a receive: 0 to `max_messages` messages.
#[derive(Serialize, ToSchema)]
pub(in crate::api::basaltic) struct ReceivedMessages {
    /// The messages.
    pub messages: Vec<ReceivedMessage>,
}

/// A message read without a lease.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct InspectedMessage {
    /// The message's id.
    pub message_id: String,
    /// Its place in the queue's order: a move names the message by it and its id.
    #[schema(pattern = "^[0-9]{1,20}$")]
    pub position: String,
    /// The body.
    pub body: String,
    /// The attributes, by name.
    pub attributes: BTreeMap<String, AttributeJson>,
    /// How many times it has been received.
    pub receive_count: u32,
    /// When it was sent, if the backend says.
    #[schema(required = true, format = DateTime)]
    pub sent_at: Option<String>,
    /// Where it is now.
    pub state: InspectedState,
    /// When it is (or was) visible: after its delay, or when its current lease ends.
    #[schema(required = true, format = DateTime)]
    pub visible_at: Option<String>,
    /// FIFO: its message group.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub group_id: Option<String>,
    /// FIFO: its deduplication id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub deduplication_id: Option<String>,
}

/// Where an inspected message is.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(in crate::api::basaltic) enum InspectedState {
    /// Ready to be received.
    Visible,
    /// Received, and its lease has not ended.
    InFlight,
    /// Not delivered yet: its delay has not passed.
    Delayed,
}

/// Messages read without a lease, and where the next page starts.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct InspectedMessages {
    /// The messages, in queue order.
    pub messages: Vec<InspectedMessage>,
    /// Give it as `after` to read the messages that follow; `null` when the queue was read to
    /// its end.
    #[schema(required = true)]
    pub next: Option<String>,
    /// How many messages were examined for this page (with a filter, more than it holds).
    pub scanned: usize,
}

/// What a move did: every message named is in one of the lists.
#[derive(Debug, Default, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct MoveResults {
    /// The messages now in the destination, and no longer here.
    pub moved: Vec<MovedMessage>,
    /// The messages left where they are, and why.
    pub failed: Vec<MoveFailure>,
}

/// A message moved.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct MovedMessage {
    /// Its id (the same at the destination).
    pub message_id: String,
}

/// A message not moved.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct MoveFailure {
    /// Its id.
    pub message_id: String,
    /// `not_found` (no longer at that position: moved, deleted or expired) or `in_flight` (a
    /// consumer holds it).
    pub code: MoveFailureCode,
    /// Why, for people.
    pub message: String,
}

/// Why a message was not moved.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(in crate::api::basaltic) enum MoveFailureCode {
    /// Not in the queue at that position any more.
    NotFound,
    /// A consumer holds it: its lease has not ended.
    InFlight,
}

/// One line of an export: a message as inspection shows it, with what a FIFO send needs again.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct ExportedMessage {
    /// The message's id.
    pub message_id: String,
    /// Its place in the queue's order.
    pub position: String,
    /// When it was sent, if the backend says.
    #[schema(required = true, format = DateTime)]
    pub sent_at: Option<String>,
    /// How many times it has been received.
    pub receive_count: u32,
    /// The body.
    pub body: String,
    /// The attributes, by name, as a send takes them.
    pub attributes: BTreeMap<String, AttributeJson>,
    /// FIFO: its message group.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub group_id: Option<String>,
    /// FIFO: its deduplication id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub deduplication_id: Option<String>,
}

/// A batch's results: every entry is in one of the lists.
#[derive(Debug, Default, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct BatchResults {
    /// The entries that acted.
    pub successful: Vec<BatchSuccess>,
    /// The entries that did not, and why: retry only these.
    pub failed: Vec<BatchFailure>,
}

/// An entry that acted.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct BatchSuccess {
    /// The entry's id.
    pub id: String,
    /// Send batches only: the message's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub message_id: Option<String>,
}

/// An entry that did not act.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct BatchFailure {
    /// The entry's id.
    pub id: String,
    /// Why.
    pub code: BatchFailureCode,
    /// Why, for people.
    pub message: String,
}

/// Why a batch entry did not act.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(in crate::api::basaltic) enum BatchFailureCode {
    /// The entry is not valid.
    InvalidArgument,
    /// The queue service refused it for now: retry it.
    Unavailable,
    /// The receipt is not the current one: nothing changed.
    ReceiptHandleStale,
    /// Not a receipt of this queue: nothing changed.
    ReceiptHandleInvalid,
}

/// A queue's metrics samples, oldest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Metrics)]
pub(in crate::api::basaltic) struct MetricsJson {
    /// The queue's UUID.
    #[schema(value_type = QueueId)]
    pub queue_id: String,
    /// Seconds between two samples.
    pub interval_seconds: u64,
    /// The samples of the last day, oldest first.
    pub samples: Vec<SampleJson>,
}

/// One sample; a sample the gateway could not take is a gap: `null`s, never zeros.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Sample)]
pub(in crate::api::basaltic) struct SampleJson {
    /// When it was taken.
    #[schema(format = DateTime)]
    pub at: String,
    /// Messages visible.
    #[schema(required = true)]
    pub visible: Option<u64>,
    /// Messages received and not yet deleted or visible again.
    #[schema(required = true)]
    pub in_flight: Option<u64>,
    /// Messages not yet delivered because of a delay.
    #[schema(required = true)]
    pub delayed: Option<u64>,
    /// Age of the oldest message, in seconds (`null` also when the queue is empty).
    #[schema(required = true)]
    pub oldest_message_age_seconds: Option<u64>,
    /// Deliveries handed out again since the sample before.
    #[schema(required = true)]
    pub repeated_receives: Option<u64>,
    /// Messages sent since the sample before.
    #[schema(required = true)]
    pub sends: Option<u64>,
    /// Deliveries handed out since the sample before (repeated ones included).
    #[schema(required = true)]
    pub receives: Option<u64>,
}

/// A queue's push subscriptions.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct SubscriptionList {
    /// The subscriptions, by name.
    pub subscriptions: Vec<SubscriptionJson>,
}

/// A push subscription as operators see it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Subscription)]
pub(in crate::api::basaltic) struct SubscriptionJson {
    /// Its name.
    pub name: String,
    /// `config` (the config file defines it) or `api` (made through the API).
    pub source: &'static str,
    /// How one made through the API is set (`null` for the config file's).
    #[schema(required = true)]
    pub managed: Option<super::ManagedJson>,
    /// Where it posts (no query, no credentials).
    pub endpoint: String,
    /// `active`, `backing_off` (failures in a row: fewer deliveries at once) or `disabled`.
    pub state: &'static str,
    /// Why it is disabled, when it is.
    #[schema(required = true)]
    pub disabled_because: Option<String>,
    /// Deliveries being posted now.
    pub in_flight: u32,
    /// The most it allows in flight now (slow start after failures).
    pub window: u32,
    /// Its most in flight.
    pub max_concurrency: u32,
    /// Failed attempts since the last success.
    pub failures_in_a_row: u32,
    /// Attempts by outcome since the gateway started.
    pub outcomes: BTreeMap<&'static str, u64>,
    /// The latest attempts, newest first.
    pub log: Vec<AttemptJson>,
}

/// One delivery attempt.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DeliveryAttempt)]
pub(in crate::api::basaltic) struct AttemptJson {
    /// When it ended.
    #[schema(format = DateTime)]
    pub at: String,
    /// The message's id (the `webhook-id` it was posted with).
    pub message_id: String,
    /// Its receive count: 1 for the first attempt.
    pub attempt: u32,
    /// `accepted`, `refused`, `gone`, `timed_out`, `unreachable` or `forbidden`.
    pub outcome: &'static str,
    /// The status the endpoint answered, if it answered.
    #[schema(required = true)]
    pub status: Option<u16>,
    /// How long the post took, in milliseconds.
    pub latency_ms: u64,
}
