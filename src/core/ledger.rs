//! The delivery ledger: which delivery of each message is the current one.
//!
//! SQS accepts a handle from an earlier delivery (and LocalStack even deletes with it), but the
//! documented contract is that such a handle is stale and changes nothing. The ledger remembers, per
//! `(queue, message id)`, the newest delivery the gateway handed out and whether it has ended
//! (acknowledged, or gone from the backend). What the ledger does not know at all (evicted, expired,
//! from before a restart or from another replica) is `Unknown`; the gateway's policy decides what
//! that means (see [`UnknownDeliveries`]).

use moka::ops::compute::{CompResult, Op};
use moka::policy::EvictionPolicy;
use moka::sync::Cache;
use serde::Deserialize;
use std::time::Duration;

/// What the gateway does with a handle whose delivery the ledger does not know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownDeliveries {
    /// Answer `stale` and change nothing: safe, the message is delivered again later.
    #[default]
    Stale,
    /// Pass the handle to the backend (SQS semantics): needed when several replicas or restarts
    /// share handles without a shared ledger; an older delivery's handle may then still act.
    PassThrough,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The newest delivery, not ended: its handle may act.
    Current,
    /// A newer delivery exists, or this one ended (or is being acknowledged).
    Stale,
    /// The ledger has no record of this message.
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Handed to a client; its handle may acknowledge or change visibility.
    Active,
    /// An acknowledgement is being applied; further ones are stale.
    Acking,
    /// Acknowledged, or gone from the backend; kept so a repeat is stale, not unknown.
    Ended,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    delivery_id: u64,
    state: State,
    /// The queue's purge generation when the delivery was handed out.
    generation: u64,
}

type Key = (String, String);

/// Bounded map of current deliveries.
#[derive(Clone)]
pub struct DeliveryLedger {
    entries: Cache<Key, Entry>,
    /// Purges per queue: a delivery handed out before its queue's latest purge is over.
    generations: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>>,
    /// Deliveries dropped to stay within `max_entries` (not those that expired), since start.
    evictions: std::sync::Arc<std::sync::atomic::AtomicU64>,
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
        let evictions = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let evicted = std::sync::Arc::clone(&evictions);
        Self {
            // LRU, not moka's default TinyLFU: every delivery is a key never seen before, and
            // TinyLFU may refuse such keys once the cache is full.
            entries: Cache::builder()
                .eviction_policy(EvictionPolicy::lru())
                .max_capacity(max_entries)
                .time_to_live(ttl)
                .eviction_listener(move |_, _, cause| {
                    if cause == moka::notification::RemovalCause::Size {
                        evicted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                })
                .build(),
            generations: Default::default(),
            evictions,
        }
    }

    fn generation(&self, queue: &str) -> u64 {
        self.generations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(queue)
            .copied()
            .unwrap_or(0)
    }

    /// The queue was purged: every delivery of it handed out so far is over.
    pub fn end_queue(&self, queue: &str) {
        *self
            .generations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(queue.to_owned())
            .or_default() += 1;
    }

    /// Records a new delivery of a message; every earlier delivery becomes stale.
    pub fn record(&self, queue: &str, message_id: &str, delivery_id: u64) {
        self.entries.insert(
            key(queue, message_id),
            Entry {
                delivery_id,
                state: State::Active,
                generation: self.generation(queue),
            },
        );
    }

    /// Where the delivery stands.
    pub fn standing(&self, queue: &str, message_id: &str, delivery_id: u64) -> Standing {
        let generation = self.generation(queue);
        standing_of(
            self.entries.get(&key(queue, message_id)),
            delivery_id,
            generation,
        )
    }

    /// Claims the right to acknowledge the delivery: `Current` means claimed, and only one caller
    /// gets it. `Unknown` claims nothing.
    pub fn begin_ack(&self, queue: &str, message_id: &str, delivery_id: u64) -> Standing {
        let generation = self.generation(queue);
        let mut standing = Standing::Unknown;
        let result = self
            .entries
            .entry(key(queue, message_id))
            .and_compute_with(|current| {
                let current = current.map(|entry| entry.into_value());
                standing = standing_of(current, delivery_id, generation);
                if standing == Standing::Current {
                    Op::Put(Entry {
                        delivery_id,
                        state: State::Acking,
                        generation,
                    })
                } else {
                    Op::Nop
                }
            });
        match result {
            CompResult::ReplacedWith(_) => Standing::Current,
            _ if standing == Standing::Current => Standing::Stale,
            _ => standing,
        }
    }

    /// The delivery is over (acknowledged, or the backend no longer has it): later uses of its
    /// handle are stale. A newer delivery is left alone.
    pub fn end(&self, queue: &str, message_id: &str, delivery_id: u64) {
        let generation = self.generation(queue);
        self.entries
            .entry(key(queue, message_id))
            .and_compute_with(|current| match current.map(|entry| entry.into_value()) {
                Some(entry) if entry.delivery_id != delivery_id => Op::Nop,
                _ => Op::Put(Entry {
                    delivery_id,
                    state: State::Ended,
                    generation,
                }),
            });
    }

    /// The acknowledgement failed in the backend: the handle is usable again.
    pub fn abort_ack(&self, queue: &str, message_id: &str, delivery_id: u64) {
        self.entries
            .entry(key(queue, message_id))
            .and_compute_with(|current| match current.map(|entry| entry.into_value()) {
                Some(entry) if entry.delivery_id == delivery_id && entry.state == State::Acking => {
                    Op::Put(Entry {
                        state: State::Active,
                        ..entry
                    })
                }
                _ => Op::Nop,
            });
    }

    /// Number of deliveries held (approximate, for metrics).
    pub fn len(&self) -> u64 {
        self.entries.entry_count()
    }

    /// Runs the cache's pending upkeep (evictions, with their count) now.
    pub fn run_pending_tasks(&self) {
        self.entries.run_pending_tasks();
    }

    /// Deliveries dropped to stay within its size, since start.
    pub fn evictions(&self) -> u64 {
        self.evictions.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the ledger holds no delivery (approximate).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn standing_of(entry: Option<Entry>, delivery_id: u64, generation: u64) -> Standing {
    match entry {
        None => Standing::Unknown,
        Some(entry)
            if entry.delivery_id == delivery_id
                && entry.state == State::Active
                && entry.generation == generation =>
        {
            Standing::Current
        }
        Some(_) => Standing::Stale,
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
        assert_eq!(ledger.standing("q", "m", 1), Standing::Current);
        ledger.record("q", "m", 2);
        assert_eq!(ledger.standing("q", "m", 1), Standing::Stale);
        assert_eq!(ledger.begin_ack("q", "m", 1), Standing::Stale);
        assert_eq!(ledger.begin_ack("q", "m", 2), Standing::Current);
    }

    #[test]
    fn only_one_acknowledgement_wins_and_a_second_is_stale() {
        let ledger = ledger();
        ledger.record("q", "m", 7);
        assert_eq!(ledger.begin_ack("q", "m", 7), Standing::Current);
        assert_eq!(
            ledger.begin_ack("q", "m", 7),
            Standing::Stale,
            "while applying"
        );
        assert_eq!(ledger.standing("q", "m", 7), Standing::Stale);
        ledger.end("q", "m", 7);
        assert_eq!(
            ledger.begin_ack("q", "m", 7),
            Standing::Stale,
            "acknowledged twice"
        );
    }

    #[test]
    fn a_failed_acknowledgement_can_be_retried() {
        let ledger = ledger();
        ledger.record("q", "m", 7);
        assert_eq!(ledger.begin_ack("q", "m", 7), Standing::Current);
        ledger.abort_ack("q", "m", 7);
        assert_eq!(ledger.standing("q", "m", 7), Standing::Current);
        assert_eq!(ledger.begin_ack("q", "m", 7), Standing::Current);
    }

    #[test]
    fn ending_an_old_delivery_keeps_a_newer_one() {
        let ledger = ledger();
        ledger.record("q", "m", 1);
        assert_eq!(ledger.begin_ack("q", "m", 1), Standing::Current);
        ledger.record("q", "m", 2);
        ledger.end("q", "m", 1);
        ledger.abort_ack("q", "m", 1);
        assert_eq!(ledger.standing("q", "m", 2), Standing::Current);
    }

    #[test]
    fn a_purge_ends_every_delivery_of_its_queue_handed_out_before() {
        let ledger = ledger();
        ledger.record("q", "m", 1);
        ledger.record("other", "m", 1);
        ledger.end_queue("q");
        assert_eq!(ledger.standing("q", "m", 1), Standing::Stale);
        assert_eq!(ledger.begin_ack("q", "m", 1), Standing::Stale);
        assert_eq!(ledger.standing("other", "m", 1), Standing::Current);
        ledger.record("q", "n", 2);
        assert_eq!(
            ledger.standing("q", "n", 2),
            Standing::Current,
            "after the purge"
        );
    }

    #[test]
    fn unknown_messages_are_unknown_and_ended_ones_stay_stale() {
        let ledger = ledger();
        assert_eq!(ledger.standing("q", "m", 1), Standing::Unknown);
        assert_eq!(ledger.begin_ack("q", "m", 1), Standing::Unknown);
        ledger.record("q", "m", 1);
        assert_eq!(ledger.standing("other", "m", 1), Standing::Unknown);
        // A pass-through acknowledgement of an unknown delivery leaves a record too.
        ledger.end("q", "x", 9);
        assert_eq!(ledger.standing("q", "x", 9), Standing::Stale);
    }
}
