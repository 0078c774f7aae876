//! How the store writes records to its tables, in order, and which states of a batch of ops it
//! need not write at all (those a later op of the same batch replaces).

use super::error::StoreError;
use super::record::Record;
use super::tables::{BODIES, DEDUP, QUEUES, SEQUENCES, STATES};
use crate::backend::embedded::engine::Op;
use crate::backend::embedded::records;
use redb::{ReadableTable, WriteTransaction};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The message whose state record `op` writes anew or removes, if it is one op's message: its
/// own state, its delete, or its move away. (A purge or a queue's deletion removes many.)
pub(super) fn state_replaced_by(op: &Op) -> Option<(&Arc<str>, u64)> {
    match op {
        Op::PutState { queue, seq, .. }
        | Op::DeleteMessage { queue, seq }
        | Op::MoveBody {
            from_queue: queue,
            from_seq: seq,
            ..
        } => Some((queue, *seq)),
        _ => None,
    }
}

/// Which ops of `ops` need not be applied: a message's state record that a later op of the same
/// transaction replaces or removes (a receive's state followed by the delete of what it
/// received, most often). Nothing in a transaction reads a state record, so dropping one that
/// a later op overwrites changes nothing committed.
pub(super) fn superseded_states<'a>(ops: impl DoubleEndedIterator<Item = &'a Op>) -> Vec<bool> {
    let mut replaced_later: foldhash::HashSet<(&str, u64)> = foldhash::HashSet::default();
    let mut superseded: Vec<bool> = ops
        .rev()
        .map(|op| {
            let Some((queue, seq)) = state_replaced_by(op) else {
                return false;
            };
            let seen_later = !replaced_later.insert((&**queue, seq));
            seen_later && matches!(op, Op::PutState { .. })
        })
        .collect();
    superseded.reverse();
    superseded
}

/// Applies `records` in order within `txn`.
pub(super) fn apply(txn: &WriteTransaction, records: &[Record]) -> Result<(), StoreError> {
    let mut queues = txn.open_table(QUEUES).map_err(StoreError::from)?;
    let mut sequences = txn.open_table(SEQUENCES).map_err(StoreError::from)?;
    let mut bodies = txn.open_table(BODIES).map_err(StoreError::from)?;
    let mut states = txn.open_table(STATES).map_err(StoreError::from)?;
    let mut dedup = txn.open_table(DEDUP).map_err(StoreError::from)?;
    // Every appended message journals its queue's next sequence number; only the last of a
    // batch needs writing.
    let mut next_seqs: BTreeMap<&str, u64> = BTreeMap::new();
    for record in records {
        match record {
            Record::PutQueue { name, settings } => {
                queues
                    .insert(name.as_str(), settings.as_slice())
                    .map_err(StoreError::from)?;
            }
            Record::DeleteQueue { name } => {
                next_seqs.remove(name.as_str());
                queues.remove(name.as_str()).map_err(StoreError::from)?;
                sequences.remove(name.as_str()).map_err(StoreError::from)?;
                remove_messages(&mut bodies, &mut states, name)?;
                remove_deduplication(&mut dedup, name)?;
            }
            Record::PutSeq { queue, next } => {
                next_seqs.insert(queue, *next);
            }
            Record::PutBody { queue, seq, body } => {
                bodies
                    .insert((queue.as_str(), *seq), body.as_slice())
                    .map_err(StoreError::from)?;
            }
            Record::PutState { queue, seq, state } => {
                states
                    .insert((queue.as_str(), *seq), state.as_slice())
                    .map_err(StoreError::from)?;
            }
            Record::MoveBody {
                from_queue,
                from_seq,
                to_queue,
                to_seq,
                dead_letter_source_arn,
            } => {
                let moved = bodies
                    .remove((from_queue.as_str(), *from_seq))
                    .map_err(StoreError::from)?
                    .map(|bytes| records::decode_body(bytes.value()))
                    .transpose()
                    .map_err(StoreError::from)?;
                states
                    .remove((from_queue.as_str(), *from_seq))
                    .map_err(StoreError::from)?;
                let Some(mut body) = moved else {
                    // Journals are applied in the order they were made, so the body is
                    // there; should it not be, the move has nothing to carry.
                    tracing::error!(queue = %from_queue, "a moved message's body was not in the store");
                    continue;
                };
                body.dead_letter_source_arn = dead_letter_source_arn.clone();
                let bytes = records::encode_body(&body).map_err(StoreError::from)?;
                bodies
                    .insert((to_queue.as_str(), *to_seq), bytes.as_slice())
                    .map_err(StoreError::from)?;
            }
            Record::DeleteMessage { queue, seq } => {
                bodies
                    .remove((queue.as_str(), *seq))
                    .map_err(StoreError::from)?;
                states
                    .remove((queue.as_str(), *seq))
                    .map_err(StoreError::from)?;
            }
            Record::PutDedup {
                queue,
                key,
                dedup: record,
            } => {
                dedup
                    .insert((queue.as_str(), key.as_str()), record.as_slice())
                    .map_err(StoreError::from)?;
            }
            Record::DeleteDedup { queue, key } => {
                dedup
                    .remove((queue.as_str(), key.as_str()))
                    .map_err(StoreError::from)?;
            }
            // As SQS: a purge also forgets the queue's deduplication ids.
            Record::Purge { queue } => {
                remove_messages(&mut bodies, &mut states, queue)?;
                remove_deduplication(&mut dedup, queue)?;
            }
        }
    }
    for (queue, next) in next_seqs {
        sequences.insert(queue, next).map_err(StoreError::from)?;
    }
    Ok(())
}

/// Removes every deduplication record of `queue`.
fn remove_deduplication(
    dedup: &mut redb::Table<'_, (&str, &str), &[u8]>,
    queue: &str,
) -> Result<(), StoreError> {
    let keys: Vec<String> = dedup
        .range((queue, "")..=(queue, "\u{10FFFF}"))
        .map_err(StoreError::from)?
        .filter_map(Result::ok)
        .map(|(key, _)| key.value().1.to_owned())
        .collect();
    for key in keys {
        dedup
            .remove((queue, key.as_str()))
            .map_err(StoreError::from)?;
    }
    Ok(())
}

/// Removes every message of `queue`.
fn remove_messages(
    bodies: &mut redb::Table<'_, (&str, u64), &[u8]>,
    states: &mut redb::Table<'_, (&str, u64), &[u8]>,
    queue: &str,
) -> Result<(), StoreError> {
    let seqs: Vec<u64> = bodies
        .range((queue, 0u64)..=(queue, u64::MAX))
        .map_err(StoreError::from)?
        .filter_map(Result::ok)
        .map(|(key, _)| key.value().1)
        .collect();
    for seq in seqs {
        bodies.remove((queue, seq)).map_err(StoreError::from)?;
        states.remove((queue, seq)).map_err(StoreError::from)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::embedded::engine::State;

    #[test]
    fn only_states_a_later_op_replaces_or_removes_are_superseded() {
        let queue: Arc<str> = Arc::from("q");
        let state = |seq| Op::PutState {
            queue: Arc::clone(&queue),
            seq,
            state: State {
                receive_count: 1,
                first_received_at: None,
                visible_at: 0,
                receipt: None,
            },
            sent_at: 0,
            group_id: None,
        };
        let delete = |seq| Op::DeleteMessage {
            queue: Arc::clone(&queue),
            seq,
        };
        let moved = |seq| Op::MoveBody {
            from_queue: Arc::clone(&queue),
            from_seq: seq,
            to_queue: Arc::from("dlq"),
            to_seq: 1,
            dead_letter_source_arn: None,
        };
        let ops = [
            state(1),
            delete(1),
            state(1),
            state(2),
            state(3),
            state(2),
            state(4),
            moved(4),
            delete(5),
            state(5),
        ];
        assert_eq!(
            superseded_states(ops.iter()),
            [
                true, false, false, true, false, false, true, false, false, false
            ]
        );
    }
}
