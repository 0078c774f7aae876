//! The state the core keeps between requests, behind one port: the delivery ledger, the answers
//! kept for retried attempt ids, and the limiters' counts. [`InProcessState`] keeps it in this
//! process; a networked store (for several replicas) implements the same trait, and the core does
//! not change: every method is async, keyed by strings, and carries values as bytes.
//!
//! Every method may fail with [`StateUnavailable`] (a networked store down or too slow); what the
//! core then does is a policy per kind of state, stated where each is used and in docs/receipt-handles.md:
//! nothing is ever answered ok that the store would have refused, and no message is lost.

pub mod counters;
pub mod kept_seal;
pub mod ledger;

use crate::core::clock::Clock;
use crate::core::state::counters::{Allowance, Daily, Rates, Window};
use crate::core::state::ledger::{DeliveryLedger, LedgerExport, Standing, UnknownDeliveries};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use moka::sync::Cache;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long kept answers live (the attempt-id window).
pub const ANSWER_TTL: Duration = Duration::from_secs(300);
/// Keys of windows and daily counts tracked at most; the least recently used go first.
const TRACKED_KEYS: u64 = 100_000;
/// Bytes of kept answers at most (each weighs its key, its answer and a fixed overhead): one
/// answer may carry ten 256 KiB bodies, so a count of answers alone bounds no memory. Past it the
/// least recently used go first; a retry whose answer went receives anew (at-least-once holds:
/// what the first attempt received becomes visible again after its visibility timeout).
const KEPT_ANSWER_BYTES: u64 = 128 * 1024 * 1024;
/// What a kept answer costs besides its bytes (the entry, its key's allocation, the expiry).
const KEPT_ANSWER_OVERHEAD: usize = 128;

/// The state store did not answer. The operation may or may not have reached it: callers treat
/// a failed write as not done and a failed read as unknown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the state store is unavailable: {0}")]
pub struct StateUnavailable(pub String);

/// What the store answers an operation: its value, or that it could not answer.
pub type StateResult<T> = Result<T, StateUnavailable>;

/// A limiter's answer: admitted, or refused with the wait until it would be.
pub type Admission = Result<(), Duration>;

/// Where the core keeps what outlives a request.
#[async_trait]
pub trait StateStore: Send + Sync + 'static {
    /// Records new deliveries of messages; every earlier delivery of each becomes stale. A
    /// record that arrives after a later delivery of the same message (by receive count) was
    /// recorded, or after this delivery ended, changes nothing.
    async fn record_deliveries(&self, deliveries: &[NewDelivery<'_>]) -> StateResult<()>;

    /// Where each delivery stands, in order.
    async fn standings(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<Vec<Standing>>;

    /// Claims the right to acknowledge each delivery, in order; `Current` means claimed (once).
    async fn begin_acks(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<Vec<Standing>>;

    /// The deliveries are over: later uses of their handles are stale.
    async fn end_deliveries(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<()>;

    /// Acknowledgements failed: the handles may act again.
    async fn abort_acks(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<()>;

    /// The queue was purged: every delivery of it so far is over.
    async fn end_queue(&self, queue: &str) -> StateResult<()>;

    /// Keeps `answer` under `key` for [`ANSWER_TTL`], unless an answer is kept there already
    /// (the first answer of an attempt is the one its retries get, on every replica).
    async fn keep_answer(&self, key: &str, answer: Vec<u8>) -> StateResult<()>;

    /// The answer kept under `key`, if it is still there.
    async fn answer(&self, key: &str) -> StateResult<Option<Vec<u8>>>;

    /// Drops the answer kept under `key`.
    async fn forget_answer(&self, key: &str) -> StateResult<()>;

    /// Checks a request's limits in order, counting each one admitted, and stops at the first
    /// that refuses (the ones after it are not counted): one answer per limit checked, so the
    /// answer is shorter than `limits` when one refused.
    async fn admit(&self, limits: &[LimitCheck<'_>]) -> StateResult<Vec<Admission>>;

    /// Whether the store answers now (for readiness); the in-process store always does.
    async fn ping(&self) -> StateResult<()> {
        Ok(())
    }

    /// Drops what is no longer needed; the server calls it once a minute.
    fn housekeeping(&self) {}

    /// Calls made to a networked store since start (each one round trip), for metrics; `None`
    /// for a store in this process.
    fn calls(&self) -> Option<u64> {
        None
    }

    /// The ledger's size and evictions, for metrics (a shared store may not count them).
    fn ledger_stats(&self) -> LedgerStats {
        LedgerStats::default()
    }

    /// Whether the ledger may have dropped, to stay within its size, a delivery recorded at or
    /// after `at`: an unknown delivery of that age may then still be current, and only the
    /// backend can tell. A store that never evicts answers `false`.
    fn may_have_evicted_since(&self, _at: DateTime<Utc>) -> bool {
        false
    }
}

/// One delivery of a message, as the ledger keys it. The port takes them a request's worth at a
/// time: one call (one round trip, for a networked store) per request, not one per handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryKey<'a> {
    /// The gateway queue.
    pub queue: &'a str,
    /// The message's id in the backend.
    pub message_id: &'a str,
    /// The delivery's random id.
    pub delivery_id: u64,
}

/// One limit a request is held to, as the store counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitCheck<'a> {
    /// One request of `key` under `allowance` (GCRA: a rate and a burst).
    Rate {
        /// What is limited.
        key: &'a str,
        /// The rate and burst.
        allowance: Allowance,
    },
    /// `amount` more of `key` in its rolling minute, within `per_minute`.
    Window {
        /// What is limited.
        key: &'a str,
        /// How much this request counts.
        amount: u32,
        /// The most in any minute.
        per_minute: u32,
    },
    /// `amount` more of `key` today (UTC), within `per_day`.
    Daily {
        /// What is limited.
        key: &'a str,
        /// How much this request counts.
        amount: u32,
        /// The most in a day.
        per_day: u64,
    },
}

impl<'a> LimitCheck<'a> {
    /// What is limited.
    pub fn subject(&self) -> &'a str {
        match *self {
            Self::Rate { key, .. } | Self::Window { key, .. } | Self::Daily { key, .. } => key,
        }
    }
}

/// A delivery to record, with the backend's receive count of its message: the count grows with
/// every delivery, so it orders deliveries of one message whichever replica records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewDelivery<'a> {
    /// The delivery.
    pub key: DeliveryKey<'a>,
    /// Deliveries of the message so far, this one included.
    pub receive_count: u32,
}

/// What metrics show of the ledger.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerStats {
    /// Deliveries held now (approximate).
    pub deliveries: u64,
    /// Deliveries dropped to stay within its size, since start.
    pub evictions: u64,
}

/// The state kept in this process: bounded; a graceful restart carries it over as a
/// [`StateSnapshot`], any other loses it (the ledger's unknown deliveries policy covers that).
pub struct InProcessState {
    ledger: DeliveryLedger,
    /// Kept answers, with when (on the core's clock, in ms) each expires; the cache's own
    /// time-to-live only bounds memory.
    answers: Cache<String, Arc<(i64, Vec<u8>)>>,
    rates: Rates,
    windows: Cache<String, Arc<Mutex<Window>>>,
    days: Cache<String, Arc<Mutex<Daily>>>,
    clock: Arc<dyn Clock>,
    /// When (on the core's clock, in ms) recording deliveries last pushed one out; `i64::MIN`
    /// before any was.
    last_eviction_ms: std::sync::atomic::AtomicI64,
}

impl std::fmt::Debug for InProcessState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessState")
            .field("ledger", &self.ledger)
            .finish_non_exhaustive()
    }
}

impl InProcessState {
    /// A ledger of at most `max_deliveries`, each remembered for `delivery_ttl`, holding ended
    /// ones as the `unknown` policy needs ([`DeliveryLedger::new`]); time from `clock`.
    pub fn new(
        max_deliveries: u64,
        delivery_ttl: Duration,
        unknown: UnknownDeliveries,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let counts = || {
            Cache::builder()
                .max_capacity(TRACKED_KEYS)
                .time_to_idle(Duration::from_secs(2 * 24 * 3600))
                .build()
        };
        Self {
            ledger: DeliveryLedger::new(max_deliveries, delivery_ttl, unknown),
            answers: Cache::builder()
                .max_capacity(KEPT_ANSWER_BYTES)
                .weigher(|key: &String, kept: &Arc<(i64, Vec<u8>)>| {
                    let bytes = key.len() + kept.1.len() + KEPT_ANSWER_OVERHEAD;
                    u32::try_from(bytes).unwrap_or(u32::MAX)
                })
                // A retry comes soon after its attempt: the newest answers are the ones to keep.
                .eviction_policy(moka::policy::EvictionPolicy::lru())
                .time_to_live(ANSWER_TTL + Duration::from_secs(60))
                .build(),
            rates: Rates::new(Arc::clone(&clock)),
            windows: Cache::builder()
                .max_capacity(TRACKED_KEYS)
                .time_to_idle(Duration::from_secs(120))
                .build(),
            days: counts(),
            clock,
            last_eviction_ms: std::sync::atomic::AtomicI64::new(i64::MIN),
        }
    }

    /// `act` on the ledger for each delivery, in order; what each answered.
    fn each_delivery<T>(
        &self,
        deliveries: &[DeliveryKey<'_>],
        act: impl Fn(&DeliveryLedger, &str, &str, u64) -> T,
    ) -> Vec<T> {
        deliveries
            .iter()
            .map(|delivery| {
                act(
                    &self.ledger,
                    delivery.queue,
                    delivery.message_id,
                    delivery.delivery_id,
                )
            })
            .collect()
    }

    fn now_ms(&self) -> i64 {
        self.clock.now().timestamp_millis()
    }

    fn admit_one(&self, limit: &LimitCheck<'_>) -> Admission {
        match *limit {
            LimitCheck::Rate { key, allowance } => self.rates.admit(key, allowance),
            LimitCheck::Window {
                key,
                amount,
                per_minute,
            } => {
                let window = self
                    .windows
                    .get_with_by_ref(key, || Arc::new(Mutex::new(Window::default())));
                let mut window = window
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                window.admit(amount, per_minute, self.now_ms())
            }
            LimitCheck::Daily {
                key,
                amount,
                per_day,
            } => {
                let day = self
                    .days
                    .get_with_by_ref(key, || Arc::new(Mutex::new(Daily::default())));
                let mut day = day.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                day.admit(amount, per_day, self.now_ms())
            }
        }
    }
}

/// What the in-process state carries across a graceful restart of one node: the ledger (when
/// the backend does not know its own current deliveries), today's quota counts, and when the
/// ledger last pushed a delivery out. Burst and per-minute counts and kept answers are not
/// carried: they refill within minutes, and a retried attempt then receives anew.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateSnapshot {
    /// When it was taken, on the core's clock (ms since the epoch).
    taken_at_ms: i64,
    ledger: Option<LedgerExport>,
    days: Vec<(String, Daily)>,
    /// When recording deliveries last pushed one out (ms on the core's clock), or `i64::MIN`.
    last_eviction_ms: i64,
}

/// What a restore took in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Restored {
    /// Deliveries the ledger knows again.
    pub deliveries: usize,
    /// Daily quota counts carried on.
    pub quotas: usize,
}

impl InProcessState {
    /// The state as it is now, for the next process; with the ledger if `with_ledger`.
    pub fn snapshot(&self, with_ledger: bool) -> StateSnapshot {
        StateSnapshot {
            taken_at_ms: self.now_ms(),
            ledger: with_ledger.then(|| self.ledger.export()),
            days: self
                .days
                .iter()
                .map(|(key, day)| {
                    let day = *day.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    (key.as_ref().clone(), day)
                })
                .collect(),
            last_eviction_ms: self
                .last_eviction_ms
                .load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Takes in what an earlier process left (before serving anything): the time since it was
    /// taken counts against each delivery's time to live.
    pub fn restore(&self, snapshot: StateSnapshot) -> Restored {
        let now_ms = self.now_ms();
        let downtime = Duration::from_millis(
            u64::try_from(now_ms.saturating_sub(snapshot.taken_at_ms)).unwrap_or(0),
        );
        let last_eviction = &self.last_eviction_ms;
        last_eviction.fetch_max(
            snapshot.last_eviction_ms,
            std::sync::atomic::Ordering::Relaxed,
        );
        let mut restored = Restored {
            quotas: snapshot.days.len(),
            ..Restored::default()
        };
        if let Some(ledger) = snapshot.ledger {
            let evicted = self.ledger.import(ledger, downtime);
            if evicted > 0 {
                last_eviction.fetch_max(now_ms, std::sync::atomic::Ordering::Relaxed);
            }
            restored.deliveries = usize::try_from(self.ledger.len()).unwrap_or(usize::MAX);
        }
        for (key, day) in snapshot.days {
            self.days.insert(key, Arc::new(Mutex::new(day)));
        }
        restored
    }
}

#[async_trait]
impl StateStore for InProcessState {
    async fn record_deliveries(&self, deliveries: &[NewDelivery<'_>]) -> StateResult<()> {
        // One process records in the order it received: the receive count adds nothing here.
        let evictions = self.ledger.evictions();
        let keys: Vec<DeliveryKey<'_>> = deliveries.iter().map(|delivery| delivery.key).collect();
        self.each_delivery(&keys, DeliveryLedger::record);
        if self.ledger.evictions() != evictions {
            self.last_eviction_ms
                .fetch_max(self.now_ms(), std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    async fn standings(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<Vec<Standing>> {
        Ok(self.each_delivery(deliveries, DeliveryLedger::standing))
    }

    async fn begin_acks(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<Vec<Standing>> {
        Ok(self.each_delivery(deliveries, DeliveryLedger::begin_ack))
    }

    async fn end_deliveries(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<()> {
        self.each_delivery(deliveries, DeliveryLedger::end);
        Ok(())
    }

    async fn abort_acks(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<()> {
        self.each_delivery(deliveries, DeliveryLedger::abort_ack);
        Ok(())
    }

    async fn end_queue(&self, queue: &str) -> StateResult<()> {
        self.ledger.end_queue(queue);
        Ok(())
    }

    async fn keep_answer(&self, key: &str, answer: Vec<u8>) -> StateResult<()> {
        let ttl_ms = i64::try_from(ANSWER_TTL.as_millis()).unwrap_or(i64::MAX);
        let now = self.now_ms();
        if self.answers.get(key).is_some_and(|kept| now < kept.0) {
            return Ok(());
        }
        let expires = now.saturating_add(ttl_ms);
        self.answers
            .insert(key.to_owned(), Arc::new((expires, answer)));
        Ok(())
    }

    async fn answer(&self, key: &str) -> StateResult<Option<Vec<u8>>> {
        let Some(kept) = self.answers.get(key) else {
            return Ok(None);
        };
        Ok((self.now_ms() < kept.0).then(|| kept.1.clone()))
    }

    async fn forget_answer(&self, key: &str) -> StateResult<()> {
        self.answers.invalidate(key);
        Ok(())
    }

    async fn admit(&self, limits: &[LimitCheck<'_>]) -> StateResult<Vec<Admission>> {
        let mut answers = Vec::with_capacity(limits.len());
        for limit in limits {
            let answer = self.admit_one(limit);
            let refused = answer.is_err();
            answers.push(answer);
            if refused {
                break;
            }
        }
        Ok(answers)
    }

    fn housekeeping(&self) {
        self.rates.housekeeping();
        self.ledger.run_pending_tasks();
    }

    fn may_have_evicted_since(&self, at: DateTime<Utc>) -> bool {
        self.last_eviction_ms
            .load(std::sync::atomic::Ordering::Relaxed)
            >= at.timestamp_millis()
    }

    fn ledger_stats(&self) -> LedgerStats {
        LedgerStats {
            deliveries: self.ledger.len(),
            evictions: self.ledger.evictions(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::SystemClock;

    /// Kept answers are bounded by their bytes: a caller retrying with ever new attempt ids over
    /// receives of large bodies cannot make the gateway hold more than the bound.
    #[tokio::test]
    async fn kept_answers_are_bounded_by_their_bytes() {
        let state = InProcessState::new(
            1_000,
            Duration::from_secs(3600),
            UnknownDeliveries::Stale,
            Arc::new(SystemClock),
        );
        let answer_bytes: u64 = 2 * 1024 * 1024;
        let kept = 2 * KEPT_ANSWER_BYTES / answer_bytes;
        for attempt in 0..kept {
            let answer = vec![0u8; usize::try_from(answer_bytes).unwrap()];
            state
                .keep_answer(&format!("q/attempt-{attempt}"), answer)
                .await
                .unwrap();
        }
        state.answers.run_pending_tasks();
        let held = state.answers.entry_count() * answer_bytes;
        assert!(
            held <= KEPT_ANSWER_BYTES,
            "{held} bytes of answers kept, over {KEPT_ANSWER_BYTES}"
        );
        assert!(state.answers.entry_count() > 0, "the recent ones are kept");
        let newest = format!("q/attempt-{}", kept - 1);
        assert!(
            state.answer(&newest).await.unwrap().is_some(),
            "the newest is kept"
        );
    }

    /// A snapshot carries today's quota counts and, when asked, the ledger; a restore takes
    /// them in: the quota stays spent and a current delivery stays current.
    #[tokio::test]
    async fn a_snapshot_carries_quotas_and_the_ledger_to_the_next_process() {
        let state = || {
            InProcessState::new(
                1_000,
                Duration::from_secs(3600),
                UnknownDeliveries::Stale,
                Arc::new(SystemClock),
            )
        };
        let quota = [LimitCheck::Daily {
            key: "connection",
            amount: 1,
            per_day: 2,
        }];
        let delivery = DeliveryKey {
            queue: "q",
            message_id: "m",
            delivery_id: 7,
        };
        let before = state();
        for _ in 0..2 {
            assert_eq!(before.admit(&quota).await.unwrap(), vec![Ok(())]);
        }
        before
            .record_deliveries(&[NewDelivery {
                key: delivery,
                receive_count: 1,
            }])
            .await
            .unwrap();

        let after = state();
        let restored = after.restore(before.snapshot(true));
        assert_eq!(
            restored,
            Restored {
                deliveries: 1,
                quotas: 1
            }
        );
        assert!(after.admit(&quota).await.unwrap()[0].is_err(), "spent");
        assert_eq!(
            after.standings(&[delivery]).await.unwrap(),
            vec![Standing::Current]
        );

        let without_ledger = state();
        without_ledger.restore(before.snapshot(false));
        assert_eq!(
            without_ledger.standings(&[delivery]).await.unwrap(),
            vec![Standing::Unknown]
        );
        assert!(without_ledger.admit(&quota).await.unwrap()[0].is_err());
    }
}
