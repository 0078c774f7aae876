//! The journal: each change a queue makes, as the record the store must make durable, in order.

use super::bodies::Body;
use super::fifo::Dedup;
use super::message::State;
use super::settings::Settings;
use std::sync::Arc;

/// A change the store must make durable, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A queue was created, or its settings changed.
    PutQueue {
        /// The queue.
        name: String,
        /// Its settings.
        settings: Settings,
    },
    /// A queue was deleted, with its messages.
    DeleteQueue {
        /// The queue.
        name: String,
    },
    /// The next sequence number of a queue.
    PutSeq {
        /// The queue.
        queue: Arc<str>,
        /// The next sequence number.
        next: u64,
    },
    /// A message's unchanging part.
    PutBody {
        /// The queue.
        queue: Arc<str>,
        /// The message's sequence number.
        seq: u64,
        /// The message.
        body: Arc<Body>,
    },
    /// A message's delivery state, with what the queue needs to place it without its body.
    PutState {
        /// The queue.
        queue: Arc<str>,
        /// The message's sequence number.
        seq: u64,
        /// The state.
        state: State,
        /// When it was sent, in milliseconds since the epoch.
        sent_at: i64,
        /// FIFO: its message group.
        group_id: Option<Arc<str>>,
    },
    /// A message moved to another queue (a dead-letter move or a redrive): its stored body is
    /// copied under its new place, with its new dead-letter source, and its old records go.
    MoveBody {
        /// The queue it leaves.
        from_queue: Arc<str>,
        /// Its sequence number there.
        from_seq: u64,
        /// The queue it joins.
        to_queue: Arc<str>,
        /// Its sequence number there.
        to_seq: u64,
        /// The source queue's ARN when it arrives in a dead-letter queue; `None` otherwise.
        dead_letter_source_arn: Option<String>,
    },
    /// A message left the queue.
    DeleteMessage {
        /// The queue.
        queue: Arc<str>,
        /// The message's sequence number.
        seq: u64,
    },
    /// A FIFO deduplication record.
    PutDedup {
        /// The queue.
        queue: Arc<str>,
        /// The deduplication id.
        key: String,
        /// The record.
        dedup: Dedup,
    },
    /// A FIFO deduplication record expired.
    DeleteDedup {
        /// The queue.
        queue: Arc<str>,
        /// The deduplication id.
        key: String,
    },
    /// Every message of a queue left it.
    Purge {
        /// The queue.
        queue: Arc<str>,
    },
}
