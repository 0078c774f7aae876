//! Conversion between the engine's types and the core's: queue URLs and names, backend handles,
//! messages as the core receives them, and queues as it resolves them.

use super::engine::{self, Body, Message, Queue};
use crate::core::model::{
    BackendMessage, MessageState, PeekedMessage, QueueAttributes, RedrivePolicy, ResolvedQueue,
};
use chrono::{DateTime, TimeZone, Utc};

/// Queue URLs of the embedded backend start with this.
pub const URL_PREFIX: &str = "embedded:";

/// The queue name in an embedded URL (or the name itself).
pub(super) fn queue_name(url_or_name: &str) -> &str {
    url_or_name.strip_prefix(URL_PREFIX).unwrap_or(url_or_name)
}

/// The backend handle of delivery `receipt` of message `seq`.
fn handle(seq: u64, receipt: u64) -> String {
    format!("{seq}:{receipt:016x}")
}

/// The message and receipt a backend handle names.
pub(super) fn parse_handle(handle: &str) -> Option<(u64, u64)> {
    let (seq, receipt) = handle.split_once(':')?;
    Some((seq.parse().ok()?, u64::from_str_radix(receipt, 16).ok()?))
}

/// A time in milliseconds since the epoch.
fn time(ms: i64) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(ms).single()
}

/// A message as the core receives it; only a FIFO queue's messages have a sequence number (a
/// standard queue's message may have a group id too).
pub(super) fn to_backend_message(
    seq: u64,
    receipt: u64,
    fifo: bool,
    message: &Message,
    body: &Body,
) -> BackendMessage {
    BackendMessage {
        message_id: body.id.clone(),
        backend_handle: handle(seq, receipt),
        body: body.body.clone(),
        attributes: body.attributes.clone(),
        sent_at: time(message.sent_at),
        first_received_at: message
            .state
            .first_received_at
            .and_then(|at| time(at.get())),
        receive_count: message.state.receive_count,
        sequence_number: fifo.then(|| engine::sequence_number(seq)),
        group_id: message.group_id.as_deref().map(str::to_owned),
        dead_letter_source_arn: body.dead_letter_source_arn.clone(),
        deduplication_id: body.deduplication_id.clone(),
        trace_header: body.trace_header.clone(),
    }
}

/// A message read without a lease at `now`: where it is, and a handle that names no delivery.
pub(super) fn peeked_message(
    seq: u64,
    now: i64,
    fifo: bool,
    message: &Message,
    body: &Body,
) -> PeekedMessage {
    let state = &message.state;
    PeekedMessage {
        position: seq,
        state: match (state.visible_at > now, state.receipt.is_some()) {
            (false, _) => MessageState::Visible,
            (true, true) => MessageState::InFlight,
            (true, false) => MessageState::Delayed,
        },
        visible_at: time(state.visible_at),
        message: to_backend_message(0, 0, fifo, message, body),
    }
}

/// The queue as the core resolves it.
pub(super) fn resolved(name: &str, queue: &Queue) -> ResolvedQueue {
    let settings = &queue.settings;
    ResolvedQueue {
        url: format!("{URL_PREFIX}{name}"),
        attributes: QueueAttributes {
            fifo: settings.fifo,
            visibility_timeout_seconds: settings.visibility_timeout_seconds,
            receive_wait_seconds: settings.receive_wait_seconds,
            arn: Some(queue.arn.clone()),
            redrive: settings
                .dead_letter
                .as_ref()
                .map(|(target, count)| RedrivePolicy {
                    dead_letter_target_arn: format!(
                        "arn:aws:sqs:{}:{}:{target}",
                        engine::REGION,
                        engine::ACCOUNT
                    ),
                    max_receive_count: *count,
                }),
            delay_seconds: settings.delay_seconds,
            retention_seconds: settings.retention_seconds,
            max_message_bytes: settings.max_message_bytes,
            content_based_deduplication: settings.content_based_deduplication,
            created_timestamp: Some(settings.created_at),
            last_modified_timestamp: Some(settings.modified_at),
            per_group_deduplication: settings.per_group_deduplication,
            per_group_throughput: settings.per_group_throughput,
            // The engine's store is plain files: encrypt the disk if that is needed.
            managed_encryption: false,
            kept: settings.kept.clone(),
        },
    }
}
