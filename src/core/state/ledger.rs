//! The delivery ledger: which delivery of each message is the current one.
//!
//! SQS accepts a handle from an earlier delivery (and LocalStack even deletes with it), but the
//! documented contract is that such a handle is stale and changes nothing. The ledger remembers, per
//! `(queue, message id)`, the newest delivery the gateway handed out and whether it is being
//! acknowledged. What the ledger does not know at all (evicted, expired, from before a restart or
//! from another replica) is `Unknown`; the gateway's policy decides what that means (see
//! [`UnknownDeliveries`]). A delivery that ended (acknowledged, or gone from the backend) is
//! forgotten where the policy reads unknown as stale, and kept as ended where it does not.

use lru::LruCache;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum State {
    /// Handed to a client; its handle may acknowledge or change visibility.
    Active,
    /// An acknowledgement is being applied; further ones are stale.
    Acking,
    /// Acknowledged, or gone from the backend; kept (under `pass_through`) so a repeat is stale,
    /// not unknown.
    Ended,
}

/// What a change does to a delivery's entry.
enum Change {
    /// Leaves it as it is.
    Keep,
    /// Stores this entry (a fresh change).
    Put(Entry),
    /// Forgets the delivery.
    Forget,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    delivery_id: u64,
    state: State,
    /// The queue's purge generation when the delivery was handed out.
    generation: u64,
}

/// A delivery as a shard holds it, under the keyed hash of its `(queue, message id)`: the key
/// itself is kept to tell a hash collision from a hit (a collision reads as absent).
struct Slot {
    /// The queue's name followed by the message id.
    key: Box<str>,
    queue_len: usize,
    entry: Entry,
    /// When the entry last changed: the time to live counts from there.
    written: Instant,
}

impl Slot {
    fn is(&self, queue: &str, message_id: &str) -> bool {
        self.key.split_at(self.queue_len) == (queue, message_id)
    }

    fn expired(&self, now: Instant, ttl: Duration) -> bool {
        now.saturating_duration_since(self.written) >= ttl
    }
}

type Shard = LruCache<u64, Slot>;

/// Below this bound the ledger is one shard: an exact LRU.
const SHARDED_FROM: u64 = 64 * 1024;
/// Shards of a larger ledger, each an LRU over its part of the bound.
const SHARDS: u64 = 16;

/// Bounded map of current deliveries: at most `max_entries`, each for at most `ttl` after its last
/// change; when full, the least recently used delivery makes room (and is counted as evicted).
///
/// `lru` caches in a few locked shards, keyed by a keyed hash so a lookup allocates nothing.
/// The hash is foldhash, seeded per process: the keys are message ids the backend made and
/// queue names from the config (no client picks them), so they need no SipHash, which would be
/// a large part of each ledger call. Why: docs/decisions/2026-11-30-ledger-cache.md.
/// Expiry is lazy: an expired delivery reads as absent and is dropped when met.
#[derive(Clone)]
pub struct DeliveryLedger {
    shards: Arc<[Mutex<Shard>]>,
    hasher: foldhash::fast::RandomState,
    ttl: Duration,
    /// Purges per queue: a delivery handed out before its queue's latest purge is over.
    generations: Arc<Mutex<std::collections::HashMap<String, u64>>>,
    /// Whether any queue was purged yet: until then every generation is 0, read without the
    /// lock every ledger operation would otherwise take.
    purged: Arc<AtomicBool>,
    /// Deliveries dropped to stay within `max_entries` (not those that expired), since start.
    evictions: Arc<AtomicU64>,
    /// Whether an ended delivery is kept (read as stale) or forgotten (read as unknown).
    keep_ended: bool,
}

impl std::fmt::Debug for DeliveryLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryLedger")
            .field("entries", &self.len())
            .finish()
    }
}

impl DeliveryLedger {
    /// A ledger holding at most `max_entries` deliveries, each for at most `ttl`. Under the
    /// `stale` policy an unknown delivery reads as an ended one does, so an ended delivery is
    /// forgotten: the ledger then holds the deliveries in flight, not every one of the last `ttl`
    /// (fewer entries, kept in the processor's caches). Under `pass_through` it is kept, so a
    /// repeated acknowledgement stays stale instead of reaching the backend.
    pub fn new(max_entries: u64, ttl: Duration, unknown: UnknownDeliveries) -> Self {
        let count = if max_entries >= SHARDED_FROM {
            SHARDS
        } else {
            1
        };
        let shards = (0..count)
            .map(|index| {
                // The shards' bounds add up to `max_entries`; the maps grow as they fill.
                let bound = max_entries / count + u64::from(index < max_entries % count);
                let bound = usize::try_from(bound).unwrap_or(usize::MAX);
                let mut shard = LruCache::unbounded();
                shard.resize(NonZeroUsize::new(bound).unwrap_or(NonZeroUsize::MIN));
                Mutex::new(shard)
            })
            .collect();
        Self {
            shards,
            hasher: foldhash::fast::RandomState::default(),
            ttl,
            generations: Default::default(),
            purged: Default::default(),
            evictions: Default::default(),
            keep_ended: unknown == UnknownDeliveries::PassThrough,
        }
    }

    fn generation(&self, queue: &str) -> u64 {
        if !self.purged.load(Ordering::Acquire) {
            return 0;
        }
        self.generations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(queue)
            .copied()
            .unwrap_or(0)
    }

    /// The queue was purged: every delivery of it handed out so far is over.
    pub fn end_queue(&self, queue: &str) {
        let mut generations = self
            .generations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *generations.entry(queue.to_owned()).or_default() += 1;
        // Set under the lock, after the count: a reader that sees it reads the new generation.
        self.purged.store(true, Ordering::Release);
    }

    fn lock(shard: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
        shard
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `change` on the delivery's entry (`None` if unknown or expired) under its shard's
    /// lock, and applies the change it answers.
    fn with_entry<R>(
        &self,
        queue: &str,
        message_id: &str,
        change: impl FnOnce(Option<Entry>) -> (Change, R),
    ) -> R {
        let now = Instant::now();
        self.with_entry_written(queue, message_id, now, now, change)
    }

    /// [`Self::with_entry`] at `now`, where an entry it puts counts as changed at `written`.
    fn with_entry_written<R>(
        &self,
        queue: &str,
        message_id: &str,
        now: Instant,
        written: Instant,
        change: impl FnOnce(Option<Entry>) -> (Change, R),
    ) -> R {
        let hash = self.hasher.hash_one((queue, message_id));
        let mut shard = Self::lock(&self.shards[(hash % self.shards.len() as u64) as usize]);
        match shard.get_mut(&hash) {
            Some(slot) if slot.is(queue, message_id) && !slot.expired(now, self.ttl) => {
                let (change, answer) = change(Some(slot.entry));
                match change {
                    Change::Keep => {}
                    Change::Put(entry) => {
                        slot.entry = entry;
                        slot.written = written;
                    }
                    Change::Forget => {
                        shard.pop(&hash);
                    }
                }
                return answer;
            }
            Some(slot) if slot.expired(now, self.ttl) => {
                shard.pop(&hash);
            }
            _ => {}
        }
        let (change, answer) = change(None);
        if let Change::Put(entry) = change {
            let slot = Slot {
                key: [queue, message_id].concat().into_boxed_str(),
                queue_len: queue.len(),
                entry,
                written,
            };
            // `push` answers what it displaced: the least recently used delivery, or a colliding
            // one under the same hash (replaced, not evicted).
            if let Some((displaced, old)) = shard.push(hash, slot)
                && displaced != hash
                && !old.expired(now, self.ttl)
            {
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
        answer
    }

    /// Records a new delivery of a message; every earlier delivery becomes stale.
    pub fn record(&self, queue: &str, message_id: &str, delivery_id: u64) {
        let generation = self.generation(queue);
        let entry = Entry {
            delivery_id,
            state: State::Active,
            generation,
        };
        self.with_entry(queue, message_id, |_| (Change::Put(entry), ()));
    }

    /// Where the delivery stands.
    pub fn standing(&self, queue: &str, message_id: &str, delivery_id: u64) -> Standing {
        let generation = self.generation(queue);
        self.with_entry(queue, message_id, |current| {
            (Change::Keep, standing_of(current, delivery_id, generation))
        })
    }

    /// Claims the right to acknowledge the delivery: `Current` means claimed, and only one caller
    /// gets it. `Unknown` claims nothing.
    pub fn begin_ack(&self, queue: &str, message_id: &str, delivery_id: u64) -> Standing {
        let generation = self.generation(queue);
        self.with_entry(queue, message_id, |current| {
            let standing = standing_of(current, delivery_id, generation);
            let claim = match standing {
                Standing::Current => Change::Put(Entry {
                    delivery_id,
                    state: State::Acking,
                    generation,
                }),
                _ => Change::Keep,
            };
            (claim, standing)
        })
    }

    /// The delivery is over (acknowledged, or the backend no longer has it): later uses of its
    /// handle are stale (kept as ended) or unknown (forgotten, under the `stale` policy). A newer
    /// delivery is left alone.
    pub fn end(&self, queue: &str, message_id: &str, delivery_id: u64) {
        let generation = self.generation(queue);
        self.with_entry(queue, message_id, |current| match current {
            Some(entry) if entry.delivery_id != delivery_id => (Change::Keep, ()),
            _ if self.keep_ended => {
                let ended = Entry {
                    delivery_id,
                    state: State::Ended,
                    generation,
                };
                (Change::Put(ended), ())
            }
            Some(_) => (Change::Forget, ()),
            None => (Change::Keep, ()),
        });
    }

    /// The acknowledgement failed in the backend: the handle is usable again.
    pub fn abort_ack(&self, queue: &str, message_id: &str, delivery_id: u64) {
        self.with_entry(queue, message_id, |current| match current {
            Some(entry) if entry.delivery_id == delivery_id && entry.state == State::Acking => {
                let active = Entry {
                    state: State::Active,
                    ..entry
                };
                (Change::Put(active), ())
            }
            _ => (Change::Keep, ()),
        });
    }

    /// Number of deliveries held (approximate, for metrics: an expired delivery counts until it
    /// is met or swept).
    pub fn len(&self) -> u64 {
        self.shards
            .iter()
            .map(|shard| Self::lock(shard).len() as u64)
            .sum()
    }

    /// Sweeps expired deliveries from the least recently used end of each shard (the expired
    /// ones, nearly all: a delivery is mostly used when it changes). Not counted as evictions.
    pub fn run_pending_tasks(&self) {
        let now = Instant::now();
        for shard in self.shards.iter() {
            let mut shard = Self::lock(shard);
            while shard
                .peek_lru()
                .is_some_and(|(_, slot)| slot.expired(now, self.ttl))
            {
                shard.pop_lru();
            }
        }
    }

    /// Deliveries dropped to stay within its size, since start.
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// Whether the ledger holds no delivery (approximate).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A delivery as the ledger carries it across a restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptDelivery {
    queue: String,
    message_id: String,
    delivery_id: u64,
    state: State,
    generation: u64,
    /// How long before the export the entry last changed, in ms.
    age_ms: u64,
}

/// What the ledger knows, as a restart carries it: the deliveries and the queues' purge
/// generations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerExport {
    deliveries: Vec<KeptDelivery>,
    generations: BTreeMap<String, u64>,
}

impl LedgerExport {
    /// Deliveries carried.
    pub fn len(&self) -> usize {
        self.deliveries.len()
    }

    /// Whether it carries no delivery.
    pub fn is_empty(&self) -> bool {
        self.deliveries.is_empty()
    }
}

impl DeliveryLedger {
    /// What the ledger knows now, unexpired, to be imported by the next process.
    pub fn export(&self) -> LedgerExport {
        let now = Instant::now();
        let mut deliveries = Vec::with_capacity(usize::try_from(self.len()).unwrap_or(0));
        for shard in self.shards.iter() {
            let shard = Self::lock(shard);
            deliveries.extend(
                shard
                    .iter()
                    .filter(|(_, slot)| !slot.expired(now, self.ttl))
                    .map(|(_, slot)| {
                        let (queue, message_id) = slot.key.split_at(slot.queue_len);
                        KeptDelivery {
                            queue: queue.to_owned(),
                            message_id: message_id.to_owned(),
                            delivery_id: slot.entry.delivery_id,
                            state: slot.entry.state,
                            generation: slot.entry.generation,
                            age_ms: millis(now.saturating_duration_since(slot.written)),
                        }
                    }),
            );
        }
        let generations = self
            .generations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .map(|(queue, generation)| (queue.clone(), *generation))
            .collect();
        LedgerExport {
            deliveries,
            generations,
        }
    }

    /// Takes in what an earlier process exported `downtime` before now: each delivery ages by
    /// the downtime (those past the time to live are left out), the least recently changed
    /// first, so that the bound pushes out the oldest. Answers how many the bound pushed out.
    pub fn import(&self, export: LedgerExport, downtime: Duration) -> u64 {
        {
            let mut generations = self
                .generations
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            for (queue, generation) in export.generations {
                let known = generations.entry(queue).or_default();
                *known = (*known).max(generation);
            }
            if generations.values().any(|generation| *generation > 0) {
                self.purged.store(true, Ordering::Release);
            }
        }
        let evictions = self.evictions();
        let now = Instant::now();
        let mut deliveries = export.deliveries;
        deliveries.sort_by_key(|delivery| std::cmp::Reverse(delivery.age_ms));
        for kept in deliveries {
            let age = Duration::from_millis(kept.age_ms).saturating_add(downtime);
            if age >= self.ttl {
                continue;
            }
            let entry = Entry {
                delivery_id: kept.delivery_id,
                state: kept.state,
                generation: kept.generation,
            };
            // Its age goes with it (a monotonic clock younger than the age, after a reboot,
            // keeps it as just written: a longer life, never a wrong answer).
            let written = now.checked_sub(age).unwrap_or(now);
            self.with_entry_written(&kept.queue, &kept.message_id, now, written, |_| {
                (Change::Put(entry), ())
            });
        }
        self.evictions() - evictions
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A ledger that keeps ended deliveries (the `pass_through` policy's).
    fn ledger() -> DeliveryLedger {
        DeliveryLedger::new(
            1_000,
            Duration::from_secs(3600),
            UnknownDeliveries::PassThrough,
        )
    }

    /// A ledger that forgets ended deliveries (the `stale` policy's, the default).
    fn forgetting_ledger() -> DeliveryLedger {
        DeliveryLedger::new(1_000, Duration::from_secs(3600), UnknownDeliveries::Stale)
    }

    /// One delivery acknowledged (only one claim wins while it applies), then claimed again: how
    /// the second claim stands.
    fn acknowledged_twice(ledger: &DeliveryLedger) -> Standing {
        ledger.record("q", "m", 7);
        assert_eq!(ledger.begin_ack("q", "m", 7), Standing::Current);
        assert_eq!(
            ledger.begin_ack("q", "m", 7),
            Standing::Stale,
            "while applying"
        );
        assert_eq!(ledger.standing("q", "m", 7), Standing::Stale);
        ledger.end("q", "m", 7);
        ledger.begin_ack("q", "m", 7)
    }

    #[test]
    fn under_the_stale_policy_an_ended_delivery_is_forgotten_and_a_newer_one_kept() {
        let ledger = forgetting_ledger();
        assert_eq!(
            acknowledged_twice(&ledger),
            Standing::Unknown,
            "read as stale by the policy"
        );
        assert_eq!(ledger.len(), 0, "in flight only");
        ledger.record("q", "n", 1);
        assert_eq!(ledger.begin_ack("q", "n", 1), Standing::Current);
        ledger.record("q", "n", 2);
        ledger.end("q", "n", 1);
        assert_eq!(ledger.standing("q", "n", 2), Standing::Current);
        // Ending a delivery it does not know (evicted, say) records nothing.
        ledger.end("q", "x", 9);
        assert_eq!(ledger.len(), 1);
        assert_eq!(ledger.evictions(), 0);
    }

    /// What one process exports another imports: each delivery stands as it stood, purges
    /// included, and the downtime counts against the time to live.
    #[test]
    fn an_export_imported_by_the_next_process_keeps_every_standing() {
        let before = ledger();
        before.record("q", "current", 1);
        before.record("q", "replaced", 2);
        before.record("q", "replaced", 3);
        before.record("q", "claimed", 4);
        assert_eq!(before.begin_ack("q", "claimed", 4), Standing::Current);
        before.record("q", "acknowledged", 5);
        before.end("q", "acknowledged", 5);
        before.record("purged", "m", 6);
        before.end_queue("purged");
        let export = before.export();
        assert_eq!(export.len(), 5);

        let after = ledger();
        assert_eq!(after.import(export.clone(), Duration::from_secs(60)), 0);
        assert_eq!(after.standing("q", "current", 1), Standing::Current);
        assert_eq!(after.standing("q", "replaced", 2), Standing::Stale);
        assert_eq!(after.standing("q", "replaced", 3), Standing::Current);
        assert_eq!(after.begin_ack("q", "claimed", 4), Standing::Stale);
        assert_eq!(after.begin_ack("q", "acknowledged", 5), Standing::Stale);
        assert_eq!(after.standing("purged", "m", 6), Standing::Stale);
        assert_eq!(after.standing("q", "never", 7), Standing::Unknown);
        // A later purge still counts past the imported one.
        after.record("purged", "n", 8);
        assert_eq!(after.standing("purged", "n", 8), Standing::Current);

        // Down for longer than the time to live: nothing is carried.
        let late = ledger();
        assert_eq!(late.import(export, Duration::from_secs(3600)), 0);
        assert_eq!(late.standing("q", "current", 1), Standing::Unknown);
        assert!(late.is_empty());
    }

    /// A smaller ledger than the one that exported keeps the most recently changed deliveries,
    /// and counts the ones it pushed out (so their handles go to the backend, not answer stale).
    #[test]
    fn an_import_into_a_smaller_ledger_keeps_the_newest() {
        let before = ledger();
        for id in 0..10u64 {
            before.record("q", &format!("m{id}"), id);
        }
        let small = DeliveryLedger::new(4, Duration::from_secs(3600), UnknownDeliveries::Stale);
        let mut export = before.export();
        // Changed one millisecond apart, m9 the newest.
        for kept in &mut export.deliveries {
            kept.age_ms = 9 - kept.message_id[1..].parse::<u64>().unwrap();
        }
        assert_eq!(small.import(export, Duration::ZERO), 6);
        assert_eq!(small.standing("q", "m9", 9), Standing::Current);
        assert_eq!(small.standing("q", "m6", 6), Standing::Current);
        assert_eq!(small.standing("q", "m5", 5), Standing::Unknown);
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
        assert_eq!(
            acknowledged_twice(&ledger),
            Standing::Stale,
            "kept as ended"
        );
        assert_eq!(ledger.len(), 1);
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

    #[test]
    fn a_full_ledger_evicts_the_least_recently_used_and_counts_it() {
        let ledger = DeliveryLedger::new(3, Duration::from_secs(3600), UnknownDeliveries::Stale);
        for message in ["a", "b", "c"] {
            ledger.record("q", message, 1);
        }
        // "a" is used, so "b" is the least recently used.
        assert_eq!(ledger.standing("q", "a", 1), Standing::Current);
        ledger.record("q", "d", 1);
        assert_eq!(ledger.len(), 3);
        assert_eq!(ledger.evictions(), 1);
        assert_eq!(ledger.standing("q", "b", 1), Standing::Unknown);
        for message in ["a", "c", "d"] {
            assert_eq!(
                ledger.standing("q", message, 1),
                Standing::Current,
                "{message}"
            );
        }
        // A new delivery of a known message replaces it: no eviction.
        ledger.record("q", "a", 2);
        assert_eq!(ledger.evictions(), 1);
        assert_eq!(ledger.len(), 3);
    }

    #[test]
    fn a_large_ledger_stays_within_its_bound() {
        let max = SHARDED_FROM + 5;
        let ledger = DeliveryLedger::new(max, Duration::from_secs(3600), UnknownDeliveries::Stale);
        for message in 0..max + 1_000 {
            ledger.record("q", &message.to_string(), message);
        }
        assert!(ledger.len() <= max);
        assert_eq!(ledger.len() + ledger.evictions(), max + 1_000);
        assert_eq!(
            ledger.standing("q", &(max + 999).to_string(), max + 999),
            Standing::Current
        );
    }

    fn ledger_of(max: u64) -> DeliveryLedger {
        DeliveryLedger::new(max, Duration::from_secs(60), UnknownDeliveries::Stale)
    }

    #[tokio::test(start_paused = true)]
    async fn deliveries_are_forgotten_a_ttl_after_their_last_change_without_counting_evictions() {
        let ledger = ledger_of(100);
        ledger.record("q", "old", 1);
        tokio::time::advance(Duration::from_secs(30)).await;
        ledger.record("q", "new", 1);
        // A use is not a change.
        assert_eq!(ledger.standing("q", "old", 1), Standing::Current);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(ledger.standing("q", "old", 1), Standing::Unknown);
        assert_eq!(ledger.standing("q", "new", 1), Standing::Current);
        assert_eq!(ledger.begin_ack("q", "new", 1), Standing::Current);
        tokio::time::advance(Duration::from_secs(59)).await;
        assert_eq!(ledger.standing("q", "new", 1), Standing::Stale, "acking");
        tokio::time::advance(Duration::from_secs(1)).await;
        ledger.run_pending_tasks();
        assert_eq!(ledger.len(), 0);
        assert_eq!(ledger.evictions(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_delivery_pushed_out_by_size_is_not_an_eviction() {
        let ledger = ledger_of(1);
        ledger.record("q", "old", 1);
        tokio::time::advance(Duration::from_secs(60)).await;
        ledger.record("q", "new", 1);
        assert_eq!(ledger.evictions(), 0);
        ledger.record("q", "newer", 1);
        assert_eq!(ledger.evictions(), 1);
        assert_eq!(ledger.standing("q", "newer", 1), Standing::Current);
    }

    #[test]
    fn the_same_message_id_in_another_queue_is_another_delivery() {
        let ledger = ledger();
        ledger.record("ab", "c", 1);
        assert_eq!(ledger.standing("a", "bc", 1), Standing::Unknown);
        assert_eq!(ledger.standing("abc", "", 1), Standing::Unknown);
    }

    #[test]
    fn concurrent_acknowledgements_claim_once() {
        let ledger = std::sync::Arc::new(ledger());
        ledger.record("q", "m", 1);
        let claims: usize = (0..8)
            .map(|_| {
                let ledger = std::sync::Arc::clone(&ledger);
                std::thread::spawn(move || ledger.begin_ack("q", "m", 1) == Standing::Current)
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|thread| usize::from(thread.join().unwrap()))
            .sum();
        assert_eq!(claims, 1);
    }
}
