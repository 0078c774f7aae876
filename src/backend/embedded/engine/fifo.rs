//! What only FIFO queues have: message groups (a group with a delivery in flight blocks, and a
//! receive takes each group's messages in order), deduplication records, remembered receive
//! attempts, and sequence numbers.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};

/// How long FIFO deduplication ids and receive attempt ids are remembered.
pub const FIFO_WINDOW_MS: i64 = 5 * 60 * 1000;

/// A record of a FIFO deduplication id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dedup {
    /// When the id may be used again, in milliseconds since the epoch.
    pub expires_at: i64,
    /// The message the id was first used for.
    pub message_id: String,
    /// That message's sequence number.
    pub seq: u64,
}

/// A FIFO queue's deduplication records by id.
#[derive(Debug, Default)]
pub(super) struct Deduplication {
    records: HashMap<String, Dedup>,
    /// Deduplication records by expiry, so expiring them costs nothing per operation.
    expiry: BTreeSet<(i64, String)>,
}

impl Deduplication {
    /// The record of `key`, while it is remembered.
    pub(super) fn get(&self, key: &str) -> Option<&Dedup> {
        self.records.get(key)
    }

    /// Remembers `key` until its record expires.
    pub(super) fn insert(&mut self, key: String, dedup: Dedup) {
        self.expiry.insert((dedup.expires_at, key.clone()));
        self.records.insert(key, dedup);
    }

    /// Forgets the records expired at `now`; answers their ids, in expiry order.
    pub(super) fn expire(&mut self, now: i64) -> Vec<String> {
        let mut expired = Vec::new();
        while let Some((expires_at, _)) = self.expiry.first() {
            if *expires_at > now {
                break;
            }
            let Some((expires_at, key)) = self.expiry.pop_first() else {
                break;
            };
            // A key re-used after expiry has a newer record; only the matching one goes.
            if self
                .records
                .get(&key)
                .is_some_and(|d| d.expires_at == expires_at)
            {
                self.records.remove(&key);
                expired.push(key);
            }
        }
        expired
    }
}

/// A receive attempt remembered for replay (FIFO).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Attempt {
    expires_at: i64,
    deliveries: Vec<(u64, u64)>,
}

/// A FIFO queue's receive attempts that got messages, by attempt id: a retry within
/// [`FIFO_WINDOW_MS`] gets the same deliveries back.
#[derive(Debug, Default)]
pub(super) struct Attempts(HashMap<String, Attempt>);

impl Attempts {
    /// The deliveries (sequence numbers and receipts) of attempt `id`, while it is remembered.
    pub(super) fn replay(&self, id: &str) -> Option<Vec<(u64, u64)>> {
        self.0.get(id).map(|attempt| attempt.deliveries.clone())
    }

    /// Remembers attempt `id` and its deliveries from `now` on.
    pub(super) fn remember(&mut self, id: &str, deliveries: Vec<(u64, u64)>, now: i64) {
        let attempt = Attempt {
            expires_at: now + FIFO_WINDOW_MS,
            deliveries,
        };
        self.0.insert(id.to_owned(), attempt);
    }

    /// Forgets the attempts expired at `now`.
    pub(super) fn expire(&mut self, now: i64) {
        self.0.retain(|_, attempt| attempt.expires_at > now);
    }

    /// Forgets every attempt (the queue was purged).
    pub(super) fn clear(&mut self) {
        self.0.clear();
    }
}

/// A FIFO queue's message groups: each group's messages in queue order, every group by its first
/// message, and each group's deliveries in flight (a group with one in flight is blocked).
#[derive(Debug, Default)]
pub(super) struct Groups {
    /// In-flight deliveries per group.
    in_flight: HashMap<String, usize>,
    /// Each group's messages in queue order, so a receive steps from group to group instead of
    /// scanning every message (a blocked group's backlog costs nothing).
    members: HashMap<String, BTreeSet<u64>>,
    /// Every group by its first message, in queue order.
    heads: BTreeSet<(u64, String)>,
}

impl Groups {
    /// Files `seq` under `group`.
    pub(super) fn join(&mut self, seq: u64, group: &str) {
        let members = self.members.entry(group.to_string()).or_default();
        let old_head = members.first().copied();
        members.insert(seq);
        if old_head.is_none_or(|head| seq < head) {
            if let Some(head) = old_head {
                self.heads.remove(&(head, group.to_string()));
            }
            self.heads.insert((seq, group.to_string()));
        }
    }

    /// Takes `seq` out of `group`.
    pub(super) fn quit(&mut self, seq: u64, group: &str) {
        let Some(members) = self.members.get_mut(group) else {
            return;
        };
        let was_head = members.first() == Some(&seq);
        members.remove(&seq);
        if was_head {
            self.heads.remove(&(seq, group.to_string()));
            match members.first() {
                Some(&next) => {
                    self.heads.insert((next, group.to_string()));
                }
                None => {
                    self.members.remove(group);
                }
            }
        }
    }

    /// A delivery of `group` went in flight: the group is blocked until none is.
    pub(super) fn start_delivery(&mut self, group: &str) {
        *self.in_flight.entry(group.to_string()).or_default() += 1;
    }

    /// A delivery of `group` is in flight no more.
    pub(super) fn end_delivery(&mut self, group: &str) {
        if let Some(count) = self.in_flight.get_mut(group) {
            *count -= 1;
            if *count == 0 {
                self.in_flight.remove(group);
            }
        }
    }

    /// Forgets every group (the queue was purged).
    pub(super) fn clear(&mut self) {
        self.in_flight.clear();
        self.members.clear();
        self.heads.clear();
    }

    /// The messages a receive may take, in order, up to `max`: never passing a group's earlier
    /// message and never from a blocked group; `visible` says whether a message may be taken now.
    ///
    /// A merge over the groups' own orders: the next candidate is the lowest of the next group
    /// head and the next message of the groups already being taken from; a group stops at its
    /// first message that is not visible. Groups with a message in flight are skipped whole.
    pub(super) fn candidates(
        &self,
        max: usize,
        one_per_group: bool,
        visible: impl Fn(u64) -> bool,
    ) -> Vec<u64> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut taken = Vec::new();
        let mut heads = self
            .heads
            .iter()
            .filter(|(_, group)| !self.in_flight.contains_key(group))
            .peekable();
        // Groups being taken from, by their next message.
        let mut next: BinaryHeap<Reverse<(u64, &str)>> = BinaryHeap::new();
        while taken.len() < max {
            let from_heads = match (heads.peek(), next.peek()) {
                (Some((head, _)), Some(Reverse((seq, _)))) => head < seq,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let (seq, group) = if from_heads {
                let Some((head, group)) = heads.next() else {
                    break;
                };
                (*head, group.as_str())
            } else {
                let Some(Reverse(entry)) = next.pop() else {
                    break;
                };
                entry
            };
            if !visible(seq) {
                continue;
            }
            taken.push(seq);
            if one_per_group {
                continue;
            }
            if let Some(&after) = self
                .members
                .get(group)
                .and_then(|members| members.range(seq + 1..).next())
            {
                next.push(Reverse((after, group)));
            }
        }
        taken
    }

    /// The groups with a delivery in flight.
    #[cfg(test)]
    pub(super) fn blocked(&self) -> impl Iterator<Item = &str> {
        self.in_flight.keys().map(String::as_str)
    }

    /// How many groups have messages.
    #[cfg(test)]
    pub(super) fn count(&self) -> usize {
        self.heads.len()
    }
}

/// FIFO sequence numbers: 20 digits, increasing.
pub fn sequence_number(seq: u64) -> String {
    format!("{seq:020}")
}
