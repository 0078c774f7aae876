//! Deliveries a receive took for a client that went away, on a backend that counts every take
//! for good (SQS): held for the next receive of the same queue, which gets them under the same
//! backend receipt, so an abandoned long poll spends no delivery attempt that nobody got.
//!
//! A held delivery keeps the lease its receive asked for and is handed on only while enough of
//! that lease is left to extend it; past that the backend makes it visible again on its own.

use crate::core::model::BackendMessage;
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The most deliveries held at once over every queue; a receive that would pass it releases the
/// rest instead (their take is spent).
pub(super) const MAX_HELD: usize = 10_000;

/// A held delivery is handed on only with at least this much of its lease left, so the next
/// receive's visibility change reaches the backend before the lease ends.
const LEASE_MARGIN: ChronoDuration = ChronoDuration::seconds(2);

/// A delivery nobody got, and when the lease its receive took ends.
#[derive(Debug, Clone)]
pub(super) struct Held {
    pub(super) message: BackendMessage,
    pub(super) lease_ends: DateTime<Utc>,
}

/// Held deliveries by backend queue URL, oldest first.
#[derive(Default)]
pub(super) struct Handoff {
    queues: Mutex<HashMap<String, VecDeque<Held>>>,
    /// How many are held: a receive of an empty hand-off takes no lock.
    held: AtomicUsize,
}

impl Handoff {
    /// Holds `deliveries` of the queue at `url` for the next receive; answers those over
    /// [`MAX_HELD`], which the caller releases.
    pub(super) fn hold(&self, url: &str, mut deliveries: Vec<Held>) -> Vec<Held> {
        let mut queues = lock(&self.queues);
        let room = MAX_HELD.saturating_sub(self.held.load(Ordering::Relaxed));
        let over = deliveries.split_off(deliveries.len().min(room));
        self.held.fetch_add(deliveries.len(), Ordering::Relaxed);
        queues.entry(url.to_owned()).or_default().extend(deliveries);
        over
    }

    /// Up to `max` held deliveries of the queue at `url` whose lease is still long enough to
    /// extend at `now`, oldest first; the ones whose lease is too short are dropped.
    pub(super) fn take(&self, url: &str, max: usize, now: DateTime<Utc>) -> Vec<Held> {
        if self.held.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        let mut queues = lock(&self.queues);
        let Some(held) = queues.get_mut(url) else {
            return Vec::new();
        };
        let before = held.len();
        held.retain(|held| held.lease_ends - now > LEASE_MARGIN);
        let taken: Vec<Held> = held.drain(..held.len().min(max)).collect();
        let gone = before - held.len();
        if held.is_empty() {
            queues.remove(url);
        }
        self.held.fetch_sub(gone, Ordering::Relaxed);
        taken
    }

    /// Every held delivery, by queue URL (at shutdown, to release them).
    pub(super) fn take_all(&self) -> Vec<(String, Vec<Held>)> {
        let mut queues = lock(&self.queues);
        self.held.store(0, Ordering::Relaxed);
        queues
            .drain()
            .map(|(url, held)| (url, held.into_iter().collect()))
            .collect()
    }

    /// How many are held now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(id: &str, lease_ends: DateTime<Utc>) -> Held {
        Held {
            message: BackendMessage {
                message_id: id.to_owned(),
                backend_handle: format!("receipt-{id}"),
                body: String::new(),
                attributes: Default::default(),
                sent_at: None,
                first_received_at: None,
                receive_count: 1,
                group_id: None,
                sequence_number: None,
                dead_letter_source_arn: None,
                deduplication_id: None,
                trace_header: None,
            },
            lease_ends,
        }
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn the_next_receive_of_the_same_queue_gets_them_oldest_first_up_to_its_max() {
        let handoff = Handoff::default();
        let over = handoff.hold("q1", vec![delivery("a", at(30)), delivery("b", at(30))]);
        assert!(over.is_empty());
        handoff.hold("q1", vec![delivery("c", at(30))]);
        assert!(
            handoff.take("q2", 10, at(0)).is_empty(),
            "other queues get none"
        );
        let ids = |taken: Vec<Held>| -> Vec<String> {
            taken.into_iter().map(|d| d.message.message_id).collect()
        };
        assert_eq!(ids(handoff.take("q1", 2, at(0))), ["a", "b"]);
        assert_eq!(ids(handoff.take("q1", 10, at(0))), ["c"]);
        assert_eq!(handoff.len(), 0);
    }

    #[test]
    fn a_lease_too_short_to_extend_is_dropped_not_handed_on() {
        let handoff = Handoff::default();
        handoff.hold(
            "q",
            vec![delivery("short", at(2)), delivery("long", at(30))],
        );
        let taken = handoff.take("q", 10, at(0));
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].message.message_id, "long");
        assert_eq!(handoff.len(), 0, "the short one is no longer counted");
    }

    #[test]
    fn holding_past_the_bound_answers_the_rest_to_release() {
        let handoff = Handoff::default();
        let many: Vec<Held> = (0..MAX_HELD + 3)
            .map(|n| delivery(&n.to_string(), at(30)))
            .collect();
        let over = handoff.hold("q", many);
        assert_eq!(over.len(), 3);
        assert_eq!(handoff.len(), MAX_HELD);
        assert_eq!(handoff.hold("q", vec![delivery("x", at(30))]).len(), 1);
        assert_eq!(
            handoff
                .take_all()
                .iter()
                .map(|(_, d)| d.len())
                .sum::<usize>(),
            MAX_HELD
        );
        assert_eq!(handoff.len(), 0);
    }
}
