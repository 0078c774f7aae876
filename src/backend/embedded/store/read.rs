//! What the store reads: every queue at open (states, which place each message, not bodies), and
//! bodies on demand from a snapshot beside the writer.

use super::error::StoreError;
use super::tables::{BODIES, DEDUP, QUEUES, SEQUENCES, STATES};
use crate::backend::embedded::engine::{Body, Dedup, Settings, State};
use crate::backend::embedded::records;
use redb::{Database, ReadableTable};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Everything read back from disk at start.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Every queue, by name.
    pub queues: BTreeMap<String, RecoveredQueue>,
}

/// One message read back from disk, without its body.
#[derive(Debug)]
pub struct RecoveredMessage {
    /// Its sequence number.
    pub seq: u64,
    /// Its delivery state.
    pub state: State,
    /// When it was sent, in milliseconds since the epoch.
    pub sent_at: i64,
    /// FIFO: its message group.
    pub group_id: Option<String>,
}

/// One queue read back from disk.
#[derive(Debug)]
pub struct RecoveredQueue {
    /// Its settings.
    pub settings: Settings,
    /// The next sequence number.
    pub next_seq: u64,
    /// Its messages, in sequence order.
    pub messages: Vec<RecoveredMessage>,
    /// Its FIFO deduplication records, by id.
    pub dedup: Vec<(String, Dedup)>,
}

/// Reads stored bodies from a snapshot of what is committed.
#[derive(Clone)]
pub struct Reader(pub(super) Arc<Database>);

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").finish_non_exhaustive()
    }
}

impl Reader {
    /// The bodies of `seqs` in `queue`, in that order; `None` for one not committed (yet, or
    /// any more). Blocking: call it off the async workers.
    pub fn bodies(&self, queue: &str, seqs: &[u64]) -> Result<Vec<Option<Body>>, StoreError> {
        let txn = self.0.begin_read().map_err(StoreError::from)?;
        let bodies = txn.open_table(BODIES).map_err(StoreError::from)?;
        seqs.iter()
            .map(|seq| {
                bodies
                    .get((queue, *seq))
                    .map_err(StoreError::from)?
                    .map(|bytes| records::decode_body(bytes.value()).map_err(StoreError::from))
                    .transpose()
            })
            .collect()
    }
}

/// Everything the file holds but bodies.
pub(super) fn read_all(db: &Database) -> Result<Recovered, StoreError> {
    let txn = db.begin_read().map_err(StoreError::from)?;
    let queues = txn.open_table(QUEUES).map_err(StoreError::from)?;
    let sequences = txn.open_table(SEQUENCES).map_err(StoreError::from)?;
    let bodies = txn.open_table(BODIES).map_err(StoreError::from)?;
    let states = txn.open_table(STATES).map_err(StoreError::from)?;
    let dedup = txn.open_table(DEDUP).map_err(StoreError::from)?;
    let mut recovered = Recovered::default();
    for entry in queues.iter().map_err(StoreError::from)? {
        let (name, settings) = entry.map_err(StoreError::from)?;
        let name = name.value().to_owned();
        let settings: Settings =
            serde_json::from_slice(settings.value()).map_err(StoreError::from)?;
        let next_seq = sequences
            .get(name.as_str())
            .map_err(StoreError::from)?
            .map(|guard| guard.value())
            .unwrap_or(1);
        let mut messages = Vec::new();
        let range = (name.as_str(), 0u64)..=(name.as_str(), u64::MAX);
        for entry in states.range(range).map_err(StoreError::from)? {
            let (key, state) = entry.map_err(StoreError::from)?;
            let seq = key.value().1;
            let (state, placement) =
                records::decode_state(state.value()).map_err(StoreError::from)?;
            let placement = match placement {
                Some(placement) => placement,
                // A state of an earlier release: its body says where the message stands.
                None => {
                    let Some(body) = bodies.get((name.as_str(), seq)).map_err(StoreError::from)?
                    else {
                        continue;
                    };
                    let body = records::decode_body(body.value()).map_err(StoreError::from)?;
                    records::Placement {
                        sent_at: body.sent_at,
                        group_id: body.group_id,
                    }
                }
            };
            messages.push(RecoveredMessage {
                seq,
                state,
                sent_at: placement.sent_at,
                group_id: placement.group_id,
            });
        }
        let mut dedup_records = Vec::new();
        let range = (name.as_str(), "")..=(name.as_str(), "\u{10FFFF}");
        for entry in dedup.range(range).map_err(StoreError::from)? {
            let (key, record) = entry.map_err(StoreError::from)?;
            let record: Dedup = records::decode_dedup(record.value()).map_err(StoreError::from)?;
            dedup_records.push((key.value().1.to_owned(), record));
        }
        recovered.queues.insert(
            name,
            RecoveredQueue {
                settings,
                next_seq,
                messages,
                dedup: dedup_records,
            },
        );
    }
    Ok(recovered)
}
