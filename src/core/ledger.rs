//! The delivery ledger: which delivery of each message is the current one.
//!
//! SQS accepts a handle from an earlier delivery (and LocalStack even deletes with it), but the
//! documented contract is that such a handle is stale and changes nothing. The ledger remembers, per
//! `(queue, message id)`, the id of the newest delivery the gateway handed out. A handle whose delivery
//! is not the current one, or that the ledger does not know (acknowledged, evicted, or from before a
//! restart), is stale: failing safe keeps the message in the queue, to be delivered again.

use moka::ops::compute::{CompResult, Op};
use moka::sync::Cache;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Handed to a client; its handle may acknowledge or change visibility.
    Active,
    /// An acknowledgement is being applied; further ones are stale.
    Acking,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    delivery_id: u64,
    state: State,
}

type Key = (String, String);

/// Bounded map of current deliveries.
#[derive(Clone)]
pub struct DeliveryLedger {
    entries: Cache<Key, Entry>,
}

impl std::fmt::Debug for DeliveryLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryLedger")
            .field("entries", &self.entries.entry_count())
            .finish()
    }
}

impl DeliveryLedger {
    /// A ledger holding at most `max_entries` deliveries, each for at most `ttl`.
    pub fn new(max_entries: u64, ttl: Duration) -> Self {
        Self {
            entries: Cache::builder()
                .max_capacity(max_entries)
                .time_to_live(ttl)
                .build(),
        }
    }

    /// Records a new delivery of a message; every earlier delivery becomes stale.
    pub fn record(&self, queue: &str, message_id: &str, delivery_id: u64) {
        self.entries.insert(
            key(queue, message_id),
            Entry {
                delivery_id,
                state: State::Active,
            },
        );
    }

    /// Whether `delivery_id` is the current, unacknowledged delivery of the message.
    pub fn is_current(&self, queue: &str, message_id: &str, delivery_id: u64) -> bool {
        self.entries.get(&key(queue, message_id))
            == Some(Entry {
                delivery_id,
                state: State::Active,
            })
    }

    /// Claims the right to acknowledge the delivery. Only one caller wins; the others see stale.
    pub fn begin_ack(&self, queue: &str, message_id: &str, delivery_id: u64) -> bool {
        let result = self
            .entries
            .entry(key(queue, message_id))
            .and_compute_with(|current| match current.map(|entry| entry.into_value()) {
                Some(entry) if entry.delivery_id == delivery_id && entry.state == State::Active => {
                    Op::Put(Entry {
                        delivery_id,
                        state: State::Acking,
                    })
                }
                _ => Op::Nop,
            });
        matches!(result, CompResult::ReplacedWith(_))
    }

    /// The acknowledgement was applied (or the backend no longer has the delivery): forget it.
    pub fn finish_ack(&self, queue: &str, message_id: &str, delivery_id: u64) {
        self.forget_if(queue, message_id, |entry| entry.delivery_id == delivery_id);
    }

    /// The acknowledgement failed in the backend: the handle is usable again.
    pub fn abort_ack(&self, queue: &str, message_id: &str, delivery_id: u64) {
        self.entries
            .entry(key(queue, message_id))
            .and_compute_with(|current| match current.map(|entry| entry.into_value()) {
                Some(entry) if entry.delivery_id == delivery_id && entry.state == State::Acking => {
                    Op::Put(Entry {
                        delivery_id,
                        state: State::Active,
                    })
                }
                _ => Op::Nop,
            });
    }

    /// The backend says this delivery is over: forget it if it is still the current one.
    pub fn forget(&self, queue: &str, message_id: &str, delivery_id: u64) {
        self.forget_if(queue, message_id, |entry| entry.delivery_id == delivery_id);
    }

    fn forget_if(&self, queue: &str, message_id: &str, matches: impl FnOnce(&Entry) -> bool) {
        self.entries
            .entry(key(queue, message_id))
            .and_compute_with(|current| match current.map(|entry| entry.into_value()) {
                Some(entry) if matches(&entry) => Op::Remove,
                _ => Op::Nop,
            });
    }

    /// Number of deliveries held (approximate, for metrics).
    pub fn len(&self) -> u64 {
        self.entries.entry_count()
    }

    /// Whether the ledger holds no delivery (approximate).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn key(queue: &str, message_id: &str) -> Key {
    (queue.to_owned(), message_id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger() -> DeliveryLedger {
        DeliveryLedger::new(1_000, Duration::from_secs(3600))
    }

    #[test]
    fn a_new_delivery_makes_the_old_one_stale() {
        let ledger = ledger();
        ledger.record("q", "m", 1);
        assert!(ledger.is_current("q", "m", 1));
        ledger.record("q", "m", 2);
        assert!(!ledger.is_current("q", "m", 1));
        assert!(!ledger.begin_ack("q", "m", 1));
        assert!(ledger.begin_ack("q", "m", 2));
    }

    #[test]
    fn only_one_acknowledgement_wins_and_a_second_is_stale() {
        let ledger = ledger();
        ledger.record("q", "m", 7);
        assert!(ledger.begin_ack("q", "m", 7));
        assert!(
            !ledger.begin_ack("q", "m", 7),
            "concurrent ack while applying"
        );
        assert!(!ledger.is_current("q", "m", 7));
        ledger.finish_ack("q", "m", 7);
        assert!(!ledger.begin_ack("q", "m", 7), "acknowledged twice");
    }

    #[test]
    fn a_failed_acknowledgement_can_be_retried() {
        let ledger = ledger();
        ledger.record("q", "m", 7);
        assert!(ledger.begin_ack("q", "m", 7));
        ledger.abort_ack("q", "m", 7);
        assert!(ledger.is_current("q", "m", 7));
        assert!(ledger.begin_ack("q", "m", 7));
    }

    #[test]
    fn finishing_an_old_ack_keeps_a_newer_delivery() {
        let ledger = ledger();
        ledger.record("q", "m", 1);
        assert!(ledger.begin_ack("q", "m", 1));
        ledger.record("q", "m", 2);
        ledger.finish_ack("q", "m", 1);
        ledger.abort_ack("q", "m", 1);
        assert!(ledger.is_current("q", "m", 2));
    }

    #[test]
    fn unknown_deliveries_are_not_current_and_queues_are_apart() {
        let ledger = ledger();
        assert!(!ledger.is_current("q", "m", 1));
        ledger.record("q", "m", 1);
        assert!(!ledger.is_current("other", "m", 1));
        ledger.forget("q", "m", 1);
        assert!(!ledger.is_current("q", "m", 1));
    }
}
