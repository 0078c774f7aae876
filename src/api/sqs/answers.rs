//! What each SQS action answers, typed: one value per answer, serialized as the AWS JSON 1.0 body
//! and written as the Query protocol's XML (`query::render_answer`), so the two protocols cannot
//! answer different things.

use super::wire::AttributeJson;
use serde::Serialize;
use std::collections::BTreeMap;

/// The answer of one action.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum SqsAnswer {
    /// `{}`: the actions that answer nothing.
    Nothing(Nothing),
    /// GetQueueUrl, CreateQueue.
    QueueUrl(QueueUrl),
    /// ListQueues.
    QueueUrls(QueueUrls),
    /// ListDeadLetterSourceQueues.
    DeadLetterSources(DeadLetterSources),
    /// GetQueueAttributes.
    Attributes(QueueAttributes),
    /// SendMessage.
    Sent(Sent),
    /// The three batch actions.
    Batch(BatchResult),
    /// ReceiveMessage.
    Received(Received),
    /// ListQueueTags.
    Tags(QueueTags),
    /// StartMessageMoveTask.
    MoveTaskStarted(MoveTaskStarted),
    /// CancelMessageMoveTask.
    MoveTaskCancelled(MoveTaskCancelled),
    /// ListMessageMoveTasks.
    MoveTasks(MoveTasks),
}

/// An empty answer: `{}` in JSON.
#[derive(Serialize)]
pub(super) struct Nothing {}

/// A queue's URL.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct QueueUrl {
    pub queue_url: String,
}

/// A page of queue URLs.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct QueueUrls {
    /// SQS leaves out an empty list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queue_urls: Vec<String>,
    /// Where the next page starts, when there is one and the caller asked for pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}

/// The queues whose dead-letter queue a queue is. The JSON protocol spells this member in lower
/// camel case; the Query protocol names each `QueueUrl`.
#[derive(Serialize)]
pub(super) struct DeadLetterSources {
    #[serde(rename = "queueUrls")]
    pub queue_urls: Vec<String>,
}

/// A queue's attributes, those asked for (left out when none is, as SQS leaves it out).
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct QueueAttributes {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
}

/// A sent message.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct Sent {
    pub message_id: String,
    #[serde(rename = "MD5OfMessageBody")]
    pub md5_of_message_body: String,
    #[serde(
        rename = "MD5OfMessageAttributes",
        skip_serializing_if = "Option::is_none"
    )]
    pub md5_of_message_attributes: Option<String>,
    #[serde(
        rename = "MD5OfMessageSystemAttributes",
        skip_serializing_if = "Option::is_none"
    )]
    pub md5_of_message_system_attributes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<String>,
}

/// A batch's successful entry.
#[derive(Debug, Serialize, Default)]
#[serde(rename_all = "PascalCase")]
pub(super) struct Successful {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(rename = "MD5OfMessageBody", skip_serializing_if = "Option::is_none")]
    pub md5_of_message_body: Option<String>,
    #[serde(
        rename = "MD5OfMessageAttributes",
        skip_serializing_if = "Option::is_none"
    )]
    pub md5_of_message_attributes: Option<String>,
    #[serde(
        rename = "MD5OfMessageSystemAttributes",
        skip_serializing_if = "Option::is_none"
    )]
    pub md5_of_message_system_attributes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<String>,
}

/// A batch's failed entry.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct Failed {
    pub id: String,
    pub sender_fault: bool,
    pub code: String,
    pub message: String,
}

/// The answer of every batch action.
#[derive(Debug, Serialize, Default)]
#[serde(rename_all = "PascalCase")]
pub(super) struct BatchResult {
    pub successful: Vec<Successful>,
    /// SQS leaves out an empty list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<Failed>,
}

/// The messages of a receive; none is `{}`, as SQS answers it.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct Received {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<MessageJson>,
}

/// A received message. No `Debug`: it holds a receipt handle.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct MessageJson {
    pub message_id: String,
    pub receipt_handle: String,
    #[serde(rename = "MD5OfBody")]
    pub md5_of_body: String,
    pub body: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
    #[serde(
        rename = "MD5OfMessageAttributes",
        skip_serializing_if = "Option::is_none"
    )]
    pub md5_of_message_attributes: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub message_attributes: BTreeMap<String, AttributeJson>,
}

/// A queue's tags; an untagged queue answers `{}`.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct QueueTags {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

/// A started message move task.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct MoveTaskStarted {
    pub task_handle: String,
}

/// A cancelled message move task.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct MoveTaskCancelled {
    pub approximate_number_of_messages_moved: u64,
}

/// A queue's message move tasks, the latest first.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct MoveTasks {
    pub results: Vec<MoveTask>,
}

/// One message move task, its fields in the order the Query protocol writes them.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct MoveTask {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_handle: Option<String>,
    pub status: &'static str,
    pub source_arn: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_arn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_number_of_messages_per_second: Option<u32>,
    pub approximate_number_of_messages_moved: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximate_number_of_messages_to_move: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    pub started_timestamp: i64,
}

impl SqsAnswer {
    /// The empty answer.
    pub(super) fn nothing() -> Self {
        Self::Nothing(Nothing {})
    }
}
