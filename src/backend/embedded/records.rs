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
use std::num::{NonZeroI64, NonZeroU64};

/// First byte of every versioned record. A record of the first release starts with a postcard
/// varint instead: the length of its first string, a message id of 36 characters (0x24), or a
/// small count; never 0xFF.
const MARKER: u8 = 0xFF;
/// The versions written today, per record.
const BODY_VERSION: u8 = 2;
const STATE_VERSION: u8 = 2;
const DEDUP_VERSION: u8 = 1;

/// A record could not be read.
#[derive(Debug, thiserror::Error)]
#[error("unreadable {what} record: {reason}")]
pub(super) struct RecordError {
    what: &'static str,
    reason: String,
}

fn encode<T: Serialize>(version: u8, value: &T, size_hint: usize) -> Result<Vec<u8>, RecordError> {
    // Sized up front: postcard grows the vector as it writes, one reallocation per doubling.
    let mut bytes = Vec::with_capacity(2 + size_hint);
    bytes.extend_from_slice(&[MARKER, version]);
    postcard::to_extend(value, bytes).map_err(|error| RecordError {
        what: "new",
        reason: error.to_string(),
    })
}

/// The version of a stored record and its payload.
fn split(bytes: &[u8]) -> (u8, &[u8]) {
    match bytes {
        [MARKER, version, payload @ ..] => (*version, payload),
        legacy => (0, legacy),
    }
}

/// The version of a record (refused when newer than `newest`) and its payload.
fn versioned<'a>(
    what: &'static str,
    bytes: &'a [u8],
    newest: u8,
) -> Result<(u8, &'a [u8]), RecordError> {
    let (version, payload) = split(bytes);
    if version > newest {
        return Err(RecordError {
            what,
            reason: format!("format version {version} is newer than this release reads"),
        });
    }
    Ok((version, payload))
}

fn parse<'a, T: Deserialize<'a>>(what: &'static str, payload: &'a [u8]) -> Result<T, RecordError> {
    postcard::from_bytes(payload).map_err(|error| RecordError {
        what,
        reason: error.to_string(),
    })
}

fn decode<'a, T: Deserialize<'a>>(
    what: &'static str,
    bytes: &'a [u8],
    newest: u8,
) -> Result<T, RecordError> {
    // Versions 0 and 1 share their fields.
    let (_, payload) = versioned(what, bytes, newest)?;
    parse(what, payload)
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

/// A message's unchanging part, version 2: version 1's fields, then the trace header (written
/// only for a message that has one, so a store without trace headers stays readable by a release
/// that reads version 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct BodyV2 {
    v1: BodyV1,
    trace_header: Option<String>,
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

/// A message's delivery state, version 1 (and 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct StateV1 {
    receive_count: u32,
    first_received_at: Option<i64>,
    visible_at: i64,
    receipt: Option<u64>,
}

/// A message's delivery state, version 2: version 1's fields, then what places the message in its
/// queue, so that a reopen reads states only, not bodies (postcard writes a nested struct's fields
/// in line, so the bytes are those of the flat list).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct StateV2 {
    delivery: StateV1,
    sent_at: i64,
    group_id: Option<String>,
}

/// What [`StateV2`] writes, with the group borrowed.
#[derive(Serialize)]
#[serde(rename = "StateV2")]
struct StateV2Out<'a> {
    delivery: StateV1,
    sent_at: i64,
    group_id: Option<&'a str>,
}

impl From<StateV1> for State {
    fn from(stored: StateV1) -> Self {
        State {
            receive_count: stored.receive_count,
            first_received_at: stored.first_received_at.and_then(NonZeroI64::new),
            visible_at: stored.visible_at,
            // A receipt of zero (odds 2^-64, from before receipts were never zero) is dropped:
            // the message then counts as visible, which at-least-once allows.
            receipt: stored.receipt.and_then(NonZeroU64::new),
        }
    }
}

/// Where a message stands in its queue without its body: in state records from version 2 on
/// (older ones leave it to the body record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Placement {
    /// When it was sent, in milliseconds since the epoch.
    pub sent_at: i64,
    /// FIFO: its message group.
    pub group_id: Option<String>,
}

/// A FIFO deduplication record, version 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct DedupV1 {
    expires_at: i64,
    message_id: String,
    seq: u64,
}

/// What [`BodyV1`] writes, borrowed from the engine's body (the same bytes, no copies).
#[derive(Serialize)]
#[serde(rename = "BodyV1")]
struct BodyV1Out<'a> {
    id: &'a str,
    body: &'a str,
    attributes: AttributesV1Out<'a>,
    sent_at: i64,
    group_id: Option<&'a str>,
    dead_letter_source_arn: Option<&'a str>,
    deduplication_id: Option<&'a str>,
}

/// What [`BodyV2`] writes, borrowed.
#[derive(Serialize)]
#[serde(rename = "BodyV2")]
struct BodyV2Out<'a> {
    v1: BodyV1Out<'a>,
    trace_header: Option<&'a str>,
}

/// A body's attributes, written as [`BodyV1`]'s map of [`AttributeV1`].
struct AttributesV1Out<'a>(&'a BTreeMap<String, MessageAttribute>);

impl Serialize for AttributesV1Out<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(name, attribute)| {
            let value = match &attribute.value {
                AttributeValue::Text(text) => ValueV1Out::Text(text),
                AttributeValue::Bytes(bytes) => ValueV1Out::Bytes(bytes),
            };
            let data_type = attribute.data_type.as_str();
            (name, AttributeV1Out { data_type, value })
        }))
    }
}

#[derive(Serialize)]
#[serde(rename = "AttributeV1")]
struct AttributeV1Out<'a> {
    data_type: &'a str,
    value: ValueV1Out<'a>,
}

#[derive(Serialize)]
#[serde(rename = "ValueV1")]
enum ValueV1Out<'a> {
    Text(&'a str),
    Bytes(&'a [u8]),
}

/// A body as stored.
pub(super) fn encode_body(body: &Body) -> Result<Vec<u8>, RecordError> {
    let attributes: usize = body
        .attributes
        .iter()
        .map(|(name, attribute)| {
            let value = match &attribute.value {
                AttributeValue::Text(text) => text.len(),
                AttributeValue::Bytes(bytes) => bytes.len(),
            };
            name.len() + attribute.data_type.len() + value + 8
        })
        .sum();
    let optional = |text: &Option<String>| text.as_deref().map_or(1, |text| text.len() + 3);
    let size_hint = body.id.len()
        + body.body.len()
        + attributes
        + optional(&body.group_id)
        + optional(&body.dead_letter_source_arn)
        + optional(&body.deduplication_id)
        + optional(&body.trace_header)
        + 24;
    let v1 = BodyV1Out {
        id: &body.id,
        body: &body.body,
        attributes: AttributesV1Out(&body.attributes),
        sent_at: body.sent_at,
        group_id: body.group_id.as_deref(),
        dead_letter_source_arn: body.dead_letter_source_arn.as_deref(),
        deduplication_id: body.deduplication_id.as_deref(),
    };
    match &body.trace_header {
        None => encode(1, &v1, size_hint),
        Some(trace_header) => encode(
            BODY_VERSION,
            &BodyV2Out {
                v1,
                trace_header: Some(trace_header),
            },
            size_hint,
        ),
    }
}

/// A body read back.
pub(super) fn decode_body(bytes: &[u8]) -> Result<Body, RecordError> {
    let (version, payload) = versioned("message", bytes, BODY_VERSION)?;
    let (stored, trace_header) = if version < 2 {
        (parse::<BodyV1>("message", payload)?, None)
    } else {
        let stored: BodyV2 = parse("message", payload)?;
        (stored.v1, stored.trace_header)
    };
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
        trace_header,
    })
}

/// A delivery state as stored, with the message's placement.
pub(super) fn encode_state(
    state: &State,
    sent_at: i64,
    group_id: Option<&str>,
) -> Result<Vec<u8>, RecordError> {
    encode(
        STATE_VERSION,
        &StateV2Out {
            delivery: StateV1 {
                receive_count: state.receive_count,
                first_received_at: state.first_received_at.map(NonZeroI64::get),
                visible_at: state.visible_at,
                receipt: state.receipt.map(NonZeroU64::get),
            },
            sent_at,
            group_id,
        },
        48 + group_id.map_or(0, str::len),
    )
}

/// A delivery state read back, with the message's placement when the record has it.
pub(super) fn decode_state(bytes: &[u8]) -> Result<(State, Option<Placement>), RecordError> {
    let (version, payload) = versioned("state", bytes, STATE_VERSION)?;
    if version < 2 {
        let stored: StateV1 = parse("state", payload)?;
        return Ok((stored.into(), None));
    }
    let stored: StateV2 = parse("state", payload)?;
    let placement = Placement {
        sent_at: stored.sent_at,
        group_id: stored.group_id,
    };
    Ok((stored.delivery.into(), Some(placement)))
}

/// A deduplication record as stored.
pub(super) fn encode_dedup(dedup: &Dedup) -> Result<Vec<u8>, RecordError> {
    encode(
        DEDUP_VERSION,
        &DedupV1 {
            expires_at: dedup.expires_at,
            message_id: dedup.message_id.clone(),
            seq: dedup.seq,
        },
        64,
    )
}

/// A deduplication record read back.
pub(super) fn decode_dedup(bytes: &[u8]) -> Result<Dedup, RecordError> {
    let stored: DedupV1 = decode("deduplication", bytes, DEDUP_VERSION)?;
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
            trace_header: None,
        }
    }

    /// Records as this release writes them, byte for byte: a later release must read these.
    const BODY_V1: &str = "ff01 2432663165366331612d303030302d343030302d383030302d303030303030303030303031 \
                           0568656c6c6f 02 04626c6f62 0642696e617279 01 020001 046b696e64 06537472696e67 00 \
                           056f72646572 80c0e285e368 01 0167 00 01 0164";
    const STATE_V1: &str = "ff01 03 01c0daee85e368 8084f685e368 01ef01";
    const STATE_V2: &str = "ff02 03 01c0daee85e368 8084f685e368 01ef01 80c0e285e368 010167";
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
    fn a_body_with_a_trace_header_is_version_2_and_reads_back() {
        let traced = Body {
            trace_header: Some("Root=1-5759e988-bd862e3fe1be46a994272793".into()),
            ..body()
        };
        let v1_fields = &hex(BODY_V1)[2..];
        let mut expected = vec![0xff, 0x02];
        expected.extend_from_slice(v1_fields);
        expected.extend_from_slice(&hex("01 28"));
        expected.extend_from_slice(b"Root=1-5759e988-bd862e3fe1be46a994272793");
        assert_eq!(encode_body(&traced).unwrap(), expected);
        assert_eq!(decode_body(&expected).unwrap(), traced);
    }

    #[test]
    fn states_and_dedup_records_written_by_this_release_read_back() {
        let state = State {
            receive_count: 3,
            first_received_at: NonZeroI64::new(1_800_000_100_000),
            visible_at: 1_800_000_160_000,
            receipt: NonZeroU64::new(0xef),
        };
        // The previous release's states read back without a placement (the body has it).
        assert_eq!(decode_state(&hex(STATE_V1)).unwrap(), (state, None));
        let placement = Placement {
            sent_at: 1_800_000_000_000,
            group_id: Some("g".into()),
        };
        let written = encode_state(&state, placement.sent_at, Some("g")).unwrap();
        assert_eq!(written, hex(STATE_V2));
        assert_eq!(decode_state(&written).unwrap(), (state, Some(placement)));
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
