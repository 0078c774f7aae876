//! What a receive asks a queue for and what it hands back: how many messages it takes, the
//! in-flight limits it stops at, its deliveries and the messages it dead-letters instead.

use super::message::{Message, Moving};

/// SQS's limit of in-flight messages on a standard queue.
pub const MAX_IN_FLIGHT_STANDARD: usize = 120_000;
/// SQS's limit of in-flight messages on a FIFO queue.
pub const MAX_IN_FLIGHT_FIFO: usize = 20_000;

/// How many messages a queue may have in flight: SQS's limits unless configured lower (tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlightLimits {
    /// On a standard queue (SQS: 120,000).
    pub standard: usize,
    /// On a FIFO queue (SQS: 20,000).
    pub fifo: usize,
}

impl Default for InFlightLimits {
    fn default() -> Self {
        Self {
            standard: MAX_IN_FLIGHT_STANDARD,
            fifo: MAX_IN_FLIGHT_FIFO,
        }
    }
}

/// How many messages a receive takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Take {
    /// At most this many.
    pub max: usize,
    /// FIFO: at most one of each message group (its first).
    pub one_per_group: bool,
}

impl Take {
    /// Up to `max`, several of a group where they are next in line.
    pub fn upto(max: usize) -> Self {
        Self {
            max,
            one_per_group: false,
        }
    }
}

/// One delivery handed out by a receive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// Its sequence number in the queue.
    pub seq: u64,
    /// The receipt of this delivery.
    pub receipt: u64,
    /// The message as delivered.
    pub message: Message,
}

/// What a receive produced: deliveries, and messages to move to the dead-letter queue.
#[derive(Debug, Default)]
pub struct Received {
    /// Deliveries handed out.
    pub delivered: Vec<Delivered>,
    /// Messages moved to the dead-letter queue instead.
    pub dead_lettered: Vec<Moving>,
    /// A standard queue at its in-flight limit: SQS answers OverLimit (FIFO answers nothing).
    pub over_limit: bool,
}
