//! An engine op as the store writes it: encoded once by the writer, then appended to the journal
//! and applied to the tables as the same bytes. Bodies, states and deduplication records carry the
//! versioned formats of the records module; the enum itself is the journal's record format (its
//! variants are numbered by position: new ones go at the end).

use super::error::StoreError;
use crate::backend::embedded::engine::Op;
use crate::backend::embedded::records;
use serde::{Deserialize, Serialize};

/// One change to the tables, encoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Record {
    /// A queue's settings (JSON), by name.
    PutQueue { name: String, settings: Vec<u8> },
    /// A queue and everything it holds left.
    DeleteQueue { name: String },
    /// A queue's next sequence number.
    PutSeq { queue: String, next: u64 },
    /// A message's body record.
    PutBody {
        queue: String,
        seq: u64,
        body: Vec<u8>,
    },
    /// A message's state record.
    PutState {
        queue: String,
        seq: u64,
        state: Vec<u8>,
    },
    /// A message moved to another queue, with its new dead-letter source.
    MoveBody {
        from_queue: String,
        from_seq: u64,
        to_queue: String,
        to_seq: u64,
        dead_letter_source_arn: Option<String>,
    },
    /// A message left its queue.
    DeleteMessage { queue: String, seq: u64 },
    /// A FIFO deduplication record.
    PutDedup {
        queue: String,
        key: String,
        dedup: Vec<u8>,
    },
    /// A FIFO deduplication record expired.
    DeleteDedup { queue: String, key: String },
    /// Every message of a queue left it.
    Purge { queue: String },
}

impl Record {
    /// `op`, encoded.
    pub(super) fn of(op: &Op) -> Result<Self, StoreError> {
        Ok(match op {
            // JSON, not postcard: settings are small and rare, and gain fields over time.
            Op::PutQueue { name, settings } => Record::PutQueue {
                name: name.clone(),
                settings: serde_json::to_vec(settings).map_err(StoreError::from)?,
            },
            Op::DeleteQueue { name } => Record::DeleteQueue { name: name.clone() },
            Op::PutSeq { queue, next } => Record::PutSeq {
                queue: queue.to_string(),
                next: *next,
            },
            Op::PutBody { queue, seq, body } => Record::PutBody {
                queue: queue.to_string(),
                seq: *seq,
                body: records::encode_body(body).map_err(StoreError::from)?,
            },
            Op::PutState {
                queue,
                seq,
                state,
                sent_at,
                group_id,
            } => Record::PutState {
                queue: queue.to_string(),
                seq: *seq,
                state: records::encode_state(state, *sent_at, group_id.as_deref())
                    .map_err(StoreError::from)?,
            },
            Op::MoveBody {
                from_queue,
                from_seq,
                to_queue,
                to_seq,
                dead_letter_source_arn,
            } => Record::MoveBody {
                from_queue: from_queue.to_string(),
                from_seq: *from_seq,
                to_queue: to_queue.to_string(),
                to_seq: *to_seq,
                dead_letter_source_arn: dead_letter_source_arn.clone(),
            },
            Op::DeleteMessage { queue, seq } => Record::DeleteMessage {
                queue: queue.to_string(),
                seq: *seq,
            },
            Op::PutDedup { queue, key, dedup } => Record::PutDedup {
                queue: queue.to_string(),
                key: key.clone(),
                dedup: records::encode_dedup(dedup).map_err(StoreError::from)?,
            },
            Op::DeleteDedup { queue, key } => Record::DeleteDedup {
                queue: queue.to_string(),
                key: key.clone(),
            },
            Op::Purge { queue } => Record::Purge {
                queue: queue.to_string(),
            },
        })
    }

    /// The bytes the journal holds for `records`.
    pub(super) fn encode_all(records: &[Record]) -> Result<Vec<u8>, StoreError> {
        let size: usize = records.iter().map(Record::size_hint).sum();
        postcard::to_extend(records, Vec::with_capacity(size + 8)).map_err(StoreError::from)
    }

    /// The records of `bytes`, as [`Record::encode_all`] wrote them.
    pub(super) fn decode_all(bytes: &[u8]) -> Result<Vec<Record>, StoreError> {
        postcard::from_bytes(bytes).map_err(StoreError::from)
    }

    /// About the bytes the record takes encoded.
    pub(super) fn size_hint(&self) -> usize {
        let payload = match self {
            Record::PutQueue { settings, .. } => settings.len(),
            Record::PutBody { body, .. } => body.len(),
            Record::PutState { state, .. } => state.len(),
            Record::PutDedup { dedup, key, .. } => dedup.len() + key.len(),
            _ => 32,
        };
        payload + 48
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::embedded::engine::{Body, Dedup, Settings, State};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// Every kind of op survives the journal's encoding, and its payload is the records module's.
    #[test]
    fn every_op_is_read_back_as_written() {
        let queue: Arc<str> = Arc::from("q.fifo");
        let body = Body {
            id: "m".into(),
            body: "hello".into(),
            attributes: BTreeMap::new(),
            sent_at: 1_800_000_000_000,
            group_id: Some("g".into()),
            dead_letter_source_arn: None,
            deduplication_id: Some("d".into()),
            trace_header: None,
        };
        let state = State {
            receive_count: 2,
            first_received_at: None,
            visible_at: 1_800_000_000_500,
            receipt: None,
        };
        let ops = [
            Op::PutQueue {
                name: "q.fifo".into(),
                settings: Settings::new("q.fifo", &Default::default()).unwrap(),
            },
            Op::PutSeq {
                queue: Arc::clone(&queue),
                next: 8,
            },
            Op::PutBody {
                queue: Arc::clone(&queue),
                seq: 7,
                body: Arc::new(body.clone()),
            },
            Op::PutState {
                queue: Arc::clone(&queue),
                seq: 7,
                state,
                sent_at: 1_800_000_000_000,
                group_id: Some(Arc::from("g")),
            },
            Op::MoveBody {
                from_queue: Arc::clone(&queue),
                from_seq: 7,
                to_queue: Arc::from("dlq.fifo"),
                to_seq: 1,
                dead_letter_source_arn: Some("arn:aws:sqs:us-east-1:0:q.fifo".into()),
            },
            Op::DeleteMessage {
                queue: Arc::clone(&queue),
                seq: 7,
            },
            Op::PutDedup {
                queue: Arc::clone(&queue),
                key: "d".into(),
                dedup: Dedup {
                    expires_at: 1_800_000_300_000,
                    message_id: "m".into(),
                    seq: 7,
                },
            },
            Op::DeleteDedup {
                queue: Arc::clone(&queue),
                key: "d".into(),
            },
            Op::Purge {
                queue: Arc::clone(&queue),
            },
            Op::DeleteQueue {
                name: "q.fifo".into(),
            },
        ];
        let records: Vec<Record> = ops.iter().map(|op| Record::of(op).unwrap()).collect();
        let read = Record::decode_all(&Record::encode_all(&records).unwrap()).unwrap();
        assert_eq!(read, records);
        let Record::PutBody { body: bytes, .. } = &read[2] else {
            panic!("{:?}", read[2]);
        };
        assert_eq!(records::decode_body(bytes).unwrap(), body);
        let Record::PutState { state: bytes, .. } = &read[3] else {
            panic!("{:?}", read[3]);
        };
        assert_eq!(records::decode_state(bytes).unwrap().0, state);
    }
}
