//! A message as its queue holds it in memory: its delivery state, what places it in the queue,
//! and its body only while [`Held`] says so; and a message on its way to another queue.

#[cfg(test)]
use super::bodies::Body;
use super::bodies::Held;
use serde::{Deserialize, Serialize};
use std::num::{NonZeroI64, NonZeroU64};
use std::sync::Arc;

/// What each receive changes about a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Deliveries so far.
    pub receive_count: u32,
    /// When it was first received, in milliseconds since the epoch (never zero: see
    /// [`first_receive_time`]).
    pub first_received_at: Option<NonZeroI64>,
    /// When it is (or was) visible: after its delay, or when its visibility timeout ends.
    pub visible_at: i64,
    /// The current delivery's receipt; `None` until first received. Never zero, like the first
    /// receive time, which keeps [`Message`] at 72 bytes: a B-tree leaf of eleven messages then
    /// fits an 896-byte allocation, where 88-byte messages took 1,088 (glibc) or 1,280 (jemalloc).
    pub receipt: Option<NonZeroU64>,
}

/// `now` as a first receive time: a receive in the epoch's very first millisecond counts as the
/// second one, so that zero can mean "never" in the space of an `i64`.
pub(super) fn first_receive_time(now: i64) -> NonZeroI64 {
    const SECOND_MILLISECOND: NonZeroI64 = NonZeroI64::new(1).expect("one is not zero");
    NonZeroI64::new(now).unwrap_or(SECOND_MILLISECOND)
}

impl State {
    /// Whether `receipt` is the current delivery's.
    pub fn is_delivery(&self, receipt: u64) -> bool {
        self.receipt.is_some_and(|current| current.get() == receipt)
    }
}

/// A message as held in memory: its delivery state and what placing it needs; its body only
/// while [`Held`] says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Its delivery state.
    pub state: State,
    /// When it was sent, in milliseconds since the epoch (moved messages keep theirs).
    pub sent_at: i64,
    /// FIFO: its message group.
    pub group_id: Option<Arc<str>>,
    /// Its body.
    pub held: Held,
}

impl Message {
    /// The body, in tests of the engine alone (where bodies never leave memory).
    #[cfg(test)]
    pub fn body(&self) -> &Body {
        self.held
            .resident()
            .expect("an engine without a store keeps bodies")
    }
}

/// A message taken out of a queue to be moved into another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moving {
    /// The queue it leaves.
    pub from_queue: Arc<str>,
    /// Its sequence number there.
    pub from_seq: u64,
    /// The message.
    pub message: Message,
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_800_000_000_000;

    #[test]
    fn a_stored_message_takes_72_bytes() {
        // Eleven to a B-tree leaf: 8-byte keys, 72-byte messages and the leaf's header fit an
        // 896-byte allocation (see `State::receipt`); a million messages hold ~91,000 leaves.
        assert_eq!(std::mem::size_of::<Message>(), 72);
    }

    #[test]
    fn a_receive_at_the_epoch_still_counts_as_received() {
        assert_eq!(first_receive_time(0).get(), 1);
        assert_eq!(first_receive_time(T0).get(), T0);
    }
}
