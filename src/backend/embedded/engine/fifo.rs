//! What only FIFO queues have: message groups (a group with a delivery in flight blocks, and a
//! receive takes each group's messages in order), deduplication records, remembered receive
//! attempts, and sequence numbers.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

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

/// A FIFO queue's deduplication records by id, held compactly: one copy of each id (shared by
/// the map and the expiry queue), and the message id as its 16 bytes when it is a UUID (the
/// engine's own are). A FIFO backlog sent within the window keeps one record per message.
#[derive(Debug, Default)]
pub(super) struct Deduplication {
    records: HashMap<Arc<str>, Remembered>,
    /// Records in expiry order, so expiring them costs nothing per operation. Records come in
    /// expiry order (each expires a window after it is made); one made while the clock stood
    /// behind is put in its place.
    expiry: VecDeque<(i64, Arc<str>)>,
}

/// One deduplication record as the queue holds it in memory.
#[derive(Debug)]
struct Remembered {
    expires_at: i64,
    seq: u64,
    message_id: CompactId,
}

/// A message id: a UUID as its 16 bytes, anything else as text.
#[derive(Debug)]
enum CompactId {
    Uuid(uuid::Uuid),
    Text(Box<str>),
}

impl CompactId {
    fn new(id: String) -> Self {
        let mut text = uuid::Uuid::encode_buffer();
        match uuid::Uuid::try_parse(&id) {
            // Only when it reads back the same: a UUID written otherwise (upper case, braces)
            // keeps its text.
            Ok(uuid) if *uuid.hyphenated().encode_lower(&mut text) == *id => Self::Uuid(uuid),
            _ => Self::Text(id.into_boxed_str()),
        }
    }

    fn text(&self) -> String {
        match self {
            Self::Uuid(uuid) => uuid.hyphenated().to_string(),
            Self::Text(text) => text.to_string(),
        }
    }
}

impl Deduplication {
    /// The record of `key`, while it is remembered.
    pub(super) fn get(&self, key: &str) -> Option<Dedup> {
        self.records.get(key).map(|record| Dedup {
            expires_at: record.expires_at,
            message_id: record.message_id.text(),
            seq: record.seq,
        })
    }

    /// Remembers `key` until its record expires.
    pub(super) fn insert(&mut self, key: String, dedup: Dedup) {
        let key: Arc<str> = Arc::from(key);
        let expires_at = dedup.expires_at;
        if self
            .expiry
            .back()
            .is_none_or(|(last, _)| *last <= expires_at)
        {
            self.expiry.push_back((expires_at, Arc::clone(&key)));
        } else {
            let at = self
                .expiry
                .partition_point(|(other, _)| *other <= expires_at);
            self.expiry.insert(at, (expires_at, Arc::clone(&key)));
        }
        let record = Remembered {
            expires_at,
            seq: dedup.seq,
            message_id: CompactId::new(dedup.message_id),
        };
        self.records.insert(key, record);
    }

    /// Forgets every record (the queue was purged).
    pub(super) fn clear(&mut self) {
        self.records.clear();
        self.expiry.clear();
    }

    /// Remembers the records read back from the store, in any order.
    pub(super) fn restore(&mut self, mut records: Vec<(String, Dedup)>) {
        records.sort_by_key(|(_, dedup)| dedup.expires_at);
        self.records.reserve(records.len());
        self.expiry.reserve(records.len());
        for (key, dedup) in records {
            self.insert(key, dedup);
        }
    }

    /// Forgets the records expired at `now`; answers their ids, in expiry order.
    pub(super) fn expire(&mut self, now: i64) -> Vec<String> {
        let mut expired = Vec::new();
        while let Some((expires_at, _)) = self.expiry.front() {
            if *expires_at > now {
                break;
            }
            let Some((expires_at, key)) = self.expiry.pop_front() else {
                break;
            };
            // A key re-used after expiry has a newer record; only the matching one goes.
            if self
                .records
                .get(&key)
                .is_some_and(|record| record.expires_at == expires_at)
            {
                self.records.remove(&key);
                expired.push(key.to_string());
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

/// A FIFO queue's message groups: each group's messages in queue order, and the groups in the
/// order a receive serves them: by when each came into the queue or was last taken from, so a
/// group a receive just took from waits behind the groups it passed (as SQS serves them). Each
/// group's id is held once, shared with its messages ([`Groups::join`]).
#[derive(Debug, Default)]
pub(super) struct Groups {
    /// Each group's messages in queue order, so a receive steps from group to group instead of
    /// scanning every message (a held group's backlog costs nothing).
    members: HashMap<Arc<str>, BTreeSet<u64>>,
    /// Every group by its turn.
    order: BTreeSet<(u64, Arc<str>)>,
    /// Each group's turn in `order`.
    turns: HashMap<Arc<str>, u64>,
    /// The next turn to hand out.
    next_turn: u64,
}

impl Groups {
    /// Files `seq` under `group`; answers the group's id as the queue holds it, for the message
    /// to keep instead of its own copy. A new group takes the last turn.
    pub(super) fn join(&mut self, seq: u64, group: &Arc<str>) -> Arc<str> {
        let entry = self.members.entry(Arc::clone(group));
        let shared = Arc::clone(entry.key());
        let members = entry.or_default();
        let new = members.is_empty();
        members.insert(seq);
        if new {
            self.take_last_turn(&shared);
        }
        shared
    }

    /// Takes `seq` out of `group`; a group left without messages is forgotten.
    pub(super) fn quit(&mut self, seq: u64, group: &Arc<str>) {
        let Some(members) = self.members.get_mut(group) else {
            return;
        };
        members.remove(&seq);
        if members.is_empty() {
            self.members.remove(group);
            if let Some(turn) = self.turns.remove(group) {
                self.order.remove(&(turn, Arc::clone(group)));
            }
        }
    }

    /// A receive took messages of `group`: it waits behind every other group now.
    pub(super) fn taken(&mut self, group: &Arc<str>) {
        if self.members.contains_key(group) {
            self.take_last_turn(group);
        }
    }

    fn take_last_turn(&mut self, group: &Arc<str>) {
        if let Some(turn) = self.turns.get(group) {
            self.order.remove(&(*turn, Arc::clone(group)));
        }
        let turn = self.next_turn;
        self.next_turn += 1;
        self.order.insert((turn, Arc::clone(group)));
        self.turns.insert(Arc::clone(group), turn);
    }

    /// Forgets every group (the queue was purged).
    pub(super) fn clear(&mut self) {
        self.members.clear();
        self.order.clear();
        self.turns.clear();
    }

    /// The messages a receive may take, up to `max`, as SQS takes them: group by group in their
    /// turns (see [`Groups`]), each group's messages in order up to its first one that is
    /// not visible (in flight or delayed), so a group is never passed and a receive gathers as
    /// many of one group's messages as it can before the next group's. A message of a group whose
    /// later messages are in flight is taken again once its own visibility ends. `visible` says
    /// whether a message may be taken now; with `one_per_group`, one message a group.
    pub(super) fn candidates(
        &self,
        max: usize,
        one_per_group: bool,
        visible: impl Fn(u64) -> bool,
    ) -> Vec<u64> {
        let mut taken = Vec::new();
        if max == 0 {
            return taken;
        }
        for (_, group) in &self.order {
            let Some(members) = self.members.get(group) else {
                continue;
            };
            for &seq in members {
                if !visible(seq) {
                    break;
                }
                taken.push(seq);
                if taken.len() >= max {
                    return taken;
                }
                if one_per_group {
                    break;
                }
            }
        }
        taken
    }

    /// How many groups have messages.
    #[cfg(test)]
    pub(super) fn count(&self) -> usize {
        self.order.len()
    }
}

/// Where FIFO sequence numbers start: SQS's are large 20-digit numbers, never zero-padded (nor
/// holding the account's twelve zeros, which tools that mask account ids would rewrite); from
/// here they stay 20 digits for 7.3 × 10^18 messages.
const SEQUENCE_BASE: u64 = 11_111_111_111_111_111_111;

/// FIFO sequence numbers: 20 digits, increasing, as SQS writes them.
pub fn sequence_number(seq: u64) -> String {
    SEQUENCE_BASE.saturating_add(seq).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_800_000_000_000;

    fn record(expires_at: i64, message_id: &str, seq: u64) -> Dedup {
        Dedup {
            expires_at,
            message_id: message_id.into(),
            seq,
        }
    }

    #[test]
    fn message_ids_read_back_as_they_were_given() {
        let mut dedup = Deduplication::default();
        let ids = [
            "6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f",
            "6F1C2A4E-8D3B-4C5A-9E7F-0A1B2C3D4E5F",
            "{6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f}",
            "not-a-uuid",
        ];
        for (seq, id) in ids.iter().enumerate() {
            dedup.insert(format!("k{seq}"), record(T0, id, seq as u64));
        }
        for (seq, id) in ids.iter().enumerate() {
            let read = dedup.get(&format!("k{seq}")).unwrap();
            assert_eq!((read.message_id.as_str(), read.seq), (*id, seq as u64));
        }
        assert!(matches!(dedup.records["k0"].message_id, CompactId::Uuid(_)));
        assert!(matches!(dedup.records["k1"].message_id, CompactId::Text(_)));
    }

    /// Records restored in key order, and one made while the clock stood behind, still expire
    /// each at its own time.
    #[test]
    fn records_expire_in_expiry_order_whatever_order_they_came_in() {
        let mut dedup = Deduplication::default();
        dedup.restore(vec![
            ("a".into(), record(T0 + 30, "m", 1)),
            ("b".into(), record(T0 + 10, "m", 2)),
            ("c".into(), record(T0 + 20, "m", 3)),
        ]);
        dedup.insert("d".into(), record(T0 + 40, "m", 4));
        // Made while the clock stood behind.
        dedup.insert("e".into(), record(T0 + 15, "m", 5));
        assert_eq!(dedup.expire(T0 + 9), Vec::<String>::new());
        assert_eq!(dedup.expire(T0 + 20), ["b", "e", "c"]);
        assert!(dedup.get("b").is_none() && dedup.get("a").is_some());
        assert_eq!(dedup.expire(T0 + 40), ["a", "d"]);
        assert!(dedup.records.is_empty() && dedup.expiry.is_empty());
    }

    /// A key used again after its record expired keeps its new record until that one expires.
    #[test]
    fn a_key_used_again_keeps_its_new_record() {
        let mut dedup = Deduplication::default();
        dedup.insert("k".into(), record(T0 + 10, "m", 1));
        dedup.insert("k".into(), record(T0 + 20, "m", 2));
        assert_eq!(dedup.expire(T0 + 10), Vec::<String>::new());
        assert_eq!(dedup.get("k").unwrap().seq, 2);
        assert_eq!(dedup.expire(T0 + 20), ["k"]);
    }

    #[test]
    fn a_group_s_id_is_held_once() {
        let mut groups = Groups::default();
        let first = groups.join(1, &Arc::from("g"));
        let second = groups.join(2, &Arc::from("g"));
        assert!(Arc::ptr_eq(&first, &second));
        groups.quit(1, &first);
        groups.quit(2, &second);
        assert_eq!(groups.count(), 0);
        // Only the messages hold it now.
        assert_eq!(Arc::strong_count(&first), 2);
    }
}
