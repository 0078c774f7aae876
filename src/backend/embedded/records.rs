//! The embedded store's own record formats, versioned: what is on disk does not change when an
//! engine or core type does. Each record is a marker byte, a format version, and the postcard
//! encoding of that version's struct; the engine's types convert to and from them here.
//!
//! Records written before versions existed (the first release) have no marker; they are read as
//! version 0, which has the same fields as version 1.

use super::engine::{Body, Dedup, State};
use crate::core::model::{AttributeValue, MessageAttribute};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// First byte of every versioned record. A record of the first release starts with a postcard
/// varint instead: the length of its first string, a message id of 36 characters (0x24), or a
/// small count; never 0xFF.
const MARKER: u8 = 0xFF;
/// The version written today.
const CURRENT: u8 = 1;

/// A record could not be read.
#[derive(Debug, thiserror::Error)]
#[error("unreadable {what} record: {reason}")]
pub(super) struct RecordError {
    what: &'static str,
    reason: String,
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, RecordError> {
    let mut bytes = vec![MARKER, CURRENT];
    let encoded = postcard::to_allocvec(value).map_err(|error| RecordError {
        what: "new",
        reason: error.to_string(),
    })?;
    bytes.extend_from_slice(&encoded);
    Ok(bytes)
}

/// The version of a stored record and its payload.
fn split(bytes: &[u8]) -> (u8, &[u8]) {
    match bytes {
        [MARKER, version, payload @ ..] => (*version, payload),
        legacy => (0, legacy),
    }
}

fn decode<'a, T: Deserialize<'a>>(what: &'static str, bytes: &'a [u8]) -> Result<T, RecordError> {
    let (version, payload) = split(bytes);
    if version > CURRENT {
        return Err(RecordError {
            what,
            reason: format!("format version {version} is newer than this release reads"),
        });
    }
    // Versions 0 and 1 share their fields.
    postcard::from_bytes(payload).map_err(|error| RecordError {
        what,
        reason: error.to_string(),
    })
}

/// A message's unchanging part, version 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct BodyV1 {
    id: String,
    body: String,
    attributes: BTreeMap<String, AttributeV1>,
    sent_at: i64,
    group_id: Option<String>,
    dead_letter_source_arn: Option<String>,
    deduplication_id: Option<String>,
}

/// A message attribute, version 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct AttributeV1 {
    data_type: String,
    value: ValueV1,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum ValueV1 {
    Text(String),
    Bytes(Vec<u8>),
}

/// A message's delivery state, version 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct StateV1 {
    receive_count: u32,
    first_received_at: Option<i64>,
    visible_at: i64,
    receipt: Option<u64>,
}

/// A FIFO deduplication record, version 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct DedupV1 {
    expires_at: i64,
    message_id: String,
    seq: u64,
}

/// A body as stored.
pub(super) fn encode_body(body: &Body) -> Result<Vec<u8>, RecordError> {
    encode(&BodyV1 {
        id: body.id.clone(),
        body: body.body.clone(),
        attributes: body
            .attributes
            .iter()
            .map(|(name, attribute)| {
                let value = match &attribute.value {
                    AttributeValue::Text(text) => ValueV1::Text(text.clone()),
                    AttributeValue::Bytes(bytes) => ValueV1::Bytes(bytes.clone()),
                };
                let data_type = attribute.data_type.clone();
                (name.clone(), AttributeV1 { data_type, value })
            })
            .collect(),
        sent_at: body.sent_at,
        group_id: body.group_id.clone(),
        dead_letter_source_arn: body.dead_letter_source_arn.clone(),
        deduplication_id: body.deduplication_id.clone(),
    })
}

/// A body read back.
pub(super) fn decode_body(bytes: &[u8]) -> Result<Body, RecordError> {
    let stored: BodyV1 = decode("message", bytes)?;
    Ok(Body {
        id: stored.id,
        body: stored.body,
        attributes: stored
            .attributes
            .into_iter()
            .map(|(name, attribute)| {
                let value = match attribute.value {
                    ValueV1::Text(text) => AttributeValue::Text(text),
                    ValueV1::Bytes(bytes) => AttributeValue::Bytes(bytes),
                };
                let data_type = attribute.data_type;
                (name, MessageAttribute { data_type, value })
            })
            .collect(),
        sent_at: stored.sent_at,
        group_id: stored.group_id,
        dead_letter_source_arn: stored.dead_letter_source_arn,
        deduplication_id: stored.deduplication_id,
    })
}

/// A delivery state as stored.
pub(super) fn encode_state(state: &State) -> Result<Vec<u8>, RecordError> {
    encode(&StateV1 {
        receive_count: state.receive_count,
        first_received_at: state.first_received_at,
        visible_at: state.visible_at,
        receipt: state.receipt,
    })
}

/// A delivery state read back.
pub(super) fn decode_state(bytes: &[u8]) -> Result<State, RecordError> {
    let stored: StateV1 = decode("state", bytes)?;
    Ok(State {
        receive_count: stored.receive_count,
        first_received_at: stored.first_received_at,
        visible_at: stored.visible_at,
        receipt: stored.receipt,
    })
}

/// A deduplication record as stored.
pub(super) fn encode_dedup(dedup: &Dedup) -> Result<Vec<u8>, RecordError> {
    encode(&DedupV1 {
        expires_at: dedup.expires_at,
        message_id: dedup.message_id.clone(),
        seq: dedup.seq,
    })
}

/// A deduplication record read back.
pub(super) fn decode_dedup(bytes: &[u8]) -> Result<Dedup, RecordError> {
    let stored: DedupV1 = decode("deduplication", bytes)?;
    Ok(Dedup {
        expires_at: stored.expires_at,
        message_id: stored.message_id,
        seq: stored.seq,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> Body {
        Body {
            id: "2f1e6c1a-0000-4000-8000-000000000001".into(),
            body: "hello".into(),
            attributes: BTreeMap::from([
                (
                    "kind".to_owned(),
                    MessageAttribute {
                        data_type: "String".into(),
                        value: AttributeValue::Text("order".into()),
                    },
                ),
                (
                    "blob".to_owned(),
                    MessageAttribute {
                        data_type: "Binary".into(),
                        value: AttributeValue::Bytes(vec![0, 1]),
                    },
                ),
            ]),
            sent_at: 1_800_000_000_000,
            group_id: Some("g".into()),
            dead_letter_source_arn: None,
            deduplication_id: Some("d".into()),
        }
    }

    /// Records as this release writes them, byte for byte: a later release must read these.
    const BODY_V1: &str = "ff01 2432663165366331612d303030302d343030302d383030302d303030303030303030303031 \
                           0568656c6c6f 02 04626c6f62 0642696e617279 01 020001 046b696e64 06537472696e67 00 \
                           056f72646572 80c0e285e368 01 0167 00 01 0164";
    const STATE_V1: &str = "ff01 03 01c0daee85e368 8084f685e368 01ef01";
    const DEDUP_V1: &str = "ff01 c08f8786e368 \
                            2432663165366331612d303030302d343030302d383030302d303030303030303030303031 07";

    fn hex(text: &str) -> Vec<u8> {
        hex::decode(text.split_whitespace().collect::<String>()).unwrap()
    }

    #[test]
    fn bodies_written_by_this_release_read_back() {
        assert_eq!(encode_body(&body()).unwrap(), hex(BODY_V1));
        assert_eq!(decode_body(&hex(BODY_V1)).unwrap(), body());
    }

    #[test]
    fn states_and_dedup_records_written_by_this_release_read_back() {
        let state = State {
            receive_count: 3,
            first_received_at: Some(1_800_000_100_000),
            visible_at: 1_800_000_160_000,
            receipt: Some(0xef),
        };
        assert_eq!(encode_state(&state).unwrap(), hex(STATE_V1));
        assert_eq!(decode_state(&hex(STATE_V1)).unwrap(), state);
        let dedup = Dedup {
            expires_at: 1_800_000_300_000,
            message_id: "2f1e6c1a-0000-4000-8000-000000000001".into(),
            seq: 7,
        };
        assert_eq!(encode_dedup(&dedup).unwrap(), hex(DEDUP_V1));
        assert_eq!(decode_dedup(&hex(DEDUP_V1)).unwrap(), dedup);
    }

    #[test]
    fn records_of_the_first_release_read_as_version_zero() {
        // The first release wrote the engine's types with postcard and nothing before them.
        let legacy = postcard::to_allocvec(&body()).unwrap();
        assert_eq!(decode_body(&legacy).unwrap(), body());
        let newer = [MARKER, 9, 0];
        let error = decode_state(&newer).unwrap_err().to_string();
        assert!(error.contains("version 9"), "{error}");
    }
}
