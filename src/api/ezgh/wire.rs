//! ezgh's JSON: request parsing with the documented defaults and ranges, and response shapes.
//!
//! Bodies are parsed by hand from `serde_json::Value` so error messages name the field and its
//! range but never echo a value: a misplaced receipt handle must not come back in an error body.
//! Each body is one table (`common::body_shape`) that the parser reads its fields through and
//! the OpenAPI document prints, so the document's ranges and defaults are the parser's.

use crate::api::common::body_shape::{Field, Integer, Items, List, Shape, Text, body_schema};
use crate::core::GatewayError;
use crate::core::gateway::ReceiveOptions;
use crate::core::handle::SealedHandle;
use crate::core::model::{AttributeValue, Delivery, HandleOutcome};
use crate::core::sqs_limits as limits;
use crate::core::trace_context::TraceContext;
use base64::Engine as _;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use utoipa::ToSchema;

// The request bodies: one table each, which the parsers below read fields through and the
// OpenAPI document prints (`ReceiveRequest` and the others name them there).

const MAX_MESSAGES: Field<Integer> = Field::optional(
    "maxMessages",
    "The most messages to answer.",
    Integer::from_to(1, limits::MAX_BATCH)
        .default(1)
        .example(10),
);
const WAIT_SECONDS: Field<Integer> = Field::optional(
    "waitSeconds",
    "How long to wait for a message, in seconds. Default: the queue's `receiveWaitSeconds`.",
    Integer::from_to(0, limits::MAX_WAIT_SECONDS).example(20),
);
const RECEIVE_VISIBILITY: Field<Integer> = Field::optional(
    "visibilityTimeoutSeconds",
    "How long the messages stay in flight, in seconds. Default: the queue's\n\
     `visibilityTimeoutSeconds`.",
    Integer::from_to(0, limits::MAX_VISIBILITY_SECONDS).example(60),
);

/// The body of a receive.
const RECEIVE: Shape = Shape {
    doc: "The body of a receive. Every field is optional; an empty body takes every default.",
    fields: &[&MAX_MESSAGES, &WAIT_SECONDS, &RECEIVE_VISIBILITY],
    example: None,
};

/// The receive body in the document.
pub(super) enum ReceiveRequest {}
body_schema!(ReceiveRequest, RECEIVE);

const RECEIPT_HANDLES: Field<List> = Field::required(
    "receiptHandles",
    "1 to 10 receipt handles, from any of your queues.",
    List::of(Items::Text, 1, limits::MAX_BATCH as usize).example(&["AQAAAH8…", "AQAAAJ2…"]),
);

/// The body of an acknowledgement.
const ACK: Shape = Shape {
    doc: "The body of an acknowledgement.",
    fields: &[&RECEIPT_HANDLES],
    example: None,
};

/// The acknowledgement body in the document.
pub(super) enum AckRequest {}
body_schema!(AckRequest, ACK);

const ENTRIES: Field<List> = Field::required(
    "entries",
    "1 to 10 handles with their new timeouts.",
    List::of(
        Items::Named(<VisibilityEntry as ToSchema>::name),
        1,
        limits::MAX_BATCH as usize,
    ),
);

/// The body of a visibility change.
const VISIBILITY: Shape = Shape {
    doc: "The body of a visibility change.",
    fields: &[&ENTRIES],
    example: None,
};

/// The visibility change body in the document.
pub(super) enum VisibilityRequest {}
body_schema!(VisibilityRequest, VISIBILITY);

const RECEIPT_HANDLE: Field<Text> = Field::required(
    "receiptHandle",
    "The handle, exactly as received.",
    Text::any().example("AQAAAH8…"),
);
const ENTRY_VISIBILITY: Field<Integer> = Field::required(
    "visibilityTimeoutSeconds",
    "How long the message stays in flight from now, in seconds: 0 releases it at once. A\n\
     message stays in flight at most 12 hours from its receive: a longer extension ends there.",
    Integer::from_to(0, limits::MAX_VISIBILITY_SECONDS).example(120),
);

/// One entry of a visibility change.
const VISIBILITY_ENTRY: Shape = Shape {
    doc: "One handle of a visibility change and its new timeout.",
    fields: &[&RECEIPT_HANDLE, &ENTRY_VISIBILITY],
    example: None,
};

/// A visibility change entry in the document.
pub(super) enum VisibilityEntry {}
body_schema!(VisibilityEntry, VISIBILITY_ENTRY);

/// Parses a receive body; an empty body takes every default.
pub(super) fn parse_receive(body: &[u8]) -> Result<ReceiveOptions, GatewayError> {
    let object = RECEIVE.parse(body, true)?;
    Ok(ReceiveOptions {
        max_messages: MAX_MESSAGES.value(&object, "")?,
        wait_seconds: WAIT_SECONDS.read(&object, "")?,
        visibility_timeout_seconds: RECEIVE_VISIBILITY.read(&object, "")?,
        attempt_id: None,
        wait_out_over_limit: false,
        one_per_group: false,
        keep_claims: false,
    })
}

/// Parses `{"receiptHandles": [...]}`.
pub(super) fn parse_ack(body: &[u8]) -> Result<Vec<String>, GatewayError> {
    let object = ACK.parse(body, false)?;
    let handles = RECEIPT_HANDLES.strings(&object, "")?;
    Ok(handles.into_iter().map(str::to_owned).collect())
}

/// Parses `{"entries": [{"receiptHandle": ..., "visibilityTimeoutSeconds": ...}]}`.
pub(super) fn parse_visibility(body: &[u8]) -> Result<Vec<(String, u32)>, GatewayError> {
    let object = VISIBILITY.parse(body, false)?;
    ENTRIES
        .read(&object, "")?
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let at = format!("entries[{index}]");
            let Value::Object(entry) = entry else {
                return Err(GatewayError::invalid_request(format!(
                    "{at} must be an object"
                )));
            };
            VISIBILITY_ENTRY.check(entry, &at)?;
            let handle = RECEIPT_HANDLE.value(entry, &at)?;
            let timeout = ENTRY_VISIBILITY.value(entry, &at)?;
            Ok((handle.to_owned(), timeout))
        })
        .collect()
}

/// The receive answer: up to `maxMessages` messages, or none when the wait ends.
#[derive(Serialize, ToSchema)]
pub(super) struct ReceiveResponse {
    /// The messages received.
    pub messages: Vec<MessageJson>,
}

impl axum::response::IntoResponse for ReceiveResponse {
    /// Written into a buffer sized for its messages up front: axum's `Json` starts at 128 bytes
    /// and grows, copying, half a dozen times for ten 256-byte messages.
    fn into_response(self) -> axum::response::Response {
        let mut body = Vec::with_capacity(self.encoded_len_hint());
        match serde_json::to_writer(&mut body, &self) {
            Ok(()) => {
                let json = axum::http::HeaderValue::from_static("application/json");
                ([(axum::http::header::CONTENT_TYPE, json)], body).into_response()
            }
            Err(error) => super::error::EzghError(GatewayError::internal(error)).into_response(),
        }
    }
}

impl ReceiveResponse {
    /// About the length of its JSON (exact for messages with nothing to escape, short of it
    /// for the rest).
    fn encoded_len_hint(&self) -> usize {
        /// The field names, punctuation, timestamps and count of one message.
        const PER_MESSAGE: usize = 168;
        let message_len = |message: &MessageJson| {
            let attributes: usize = (message.attributes.iter())
                .map(|(name, value)| name.len() + value.len() + 6)
                .sum();
            PER_MESSAGE
                + message.message_id.len()
                + message.receipt_handle.expose().len()
                + message.body.len()
                + attributes
                + message
                    .group_id
                    .as_ref()
                    .map_or(0, |group| group.len() + 13)
                + message.seq.as_ref().map_or(0, |seq| seq.len() + 9)
                + message
                    .traceparent
                    .as_ref()
                    .map_or(0, |trace| trace.len() + 17)
                + message
                    .tracestate
                    .as_ref()
                    .map_or(0, |state| state.len() + 16)
        };
        16 + self.messages.iter().map(message_len).sum::<usize>()
    }
}

/// One received message, as the ezgh docs list its fields.
// No `Debug`: it holds a receipt handle.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Message)]
pub(super) struct MessageJson {
    /// The message's ID, the same on every delivery.
    pub message_id: String,
    /// Acknowledges or changes the visibility of this delivery.
    #[schema(value_type = String)]
    pub receipt_handle: SealedHandle,
    /// As sent.
    pub body: String,
    /// As sent (Binary values in standard base64). A dead-lettered message adds `ezgh.`
    /// attributes.
    pub attributes: BTreeMap<String, String>,
    /// When it was sent.
    #[schema(value_type = Option<String>, required = true, format = DateTime)]
    pub sent_at: Option<Timestamp>,
    /// When it was first received.
    #[schema(value_type = Option<String>, required = true, format = DateTime)]
    pub first_received_at: Option<Timestamp>,
    /// How many times it has been received, this time included.
    #[schema(minimum = 1)]
    pub receive_count: u32,
    /// FIFO queues only: its message group.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub group_id: Option<String>,
    /// FIFO queues only: its sequence number in the group (a string of digits).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, pattern = "^[0-9]+$")]
    pub seq: Option<String>,
    /// The producer's W3C trace context, when the message carries one (from its
    /// `AWSTraceHeader`, its `traceparent` attribute, or the sending request's header).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(
        nullable = false,
        example = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
    )]
    pub traceparent: Option<String>,
    /// The producer's W3C `tracestate`, when its context has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub tracestate: Option<String>,
}

/// Attribute names the gateway reserves for itself.
pub(super) const RESERVED_PREFIX: &str = "ezgh.";
/// Attribute added to dead-lettered messages: the queue the message came from.
pub(super) const DEAD_LETTER_SOURCE: &str = "ezgh.deadLetterSourceQueue";
/// Attribute added to dead-lettered messages: why it moved.
pub(super) const DEAD_LETTER_REASON: &str = "ezgh.deadLetterReason";

fn timestamp(at: Option<DateTime<Utc>>) -> Option<Timestamp> {
    at.map(Timestamp)
}

/// An instant as ezgh writes it, RFC 3339 in UTC with milliseconds (`2026-12-01T02:33:40.123Z`),
/// written straight into the answer with no `String` of its own: a receive of ten messages
/// writes twenty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Timestamp(DateTime<Utc>);

impl Timestamp {
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` for four-digit years, written digit by digit: `core::fmt`'s
    /// padded integers cost more on the receive path than the whole rest of the timestamp.
    fn rfc3339_millis(&self) -> Option<[u8; 24]> {
        use chrono::{Datelike as _, Timelike as _};
        let at = self.0;
        let year = u32::try_from(at.year()).ok().filter(|year| *year <= 9999)?;
        let mut text = *b"0000-00-00T00:00:00.000Z";
        let mut put = |end: usize, mut value: u32, digits: usize| {
            for place in text[end - digits..end].iter_mut().rev() {
                // A digit: `value % 10` is below 10.
                *place = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        put(4, year, 4);
        put(7, at.month(), 2);
        put(10, at.day(), 2);
        put(13, at.hour(), 2);
        put(16, at.minute(), 2);
        put(19, at.second(), 2);
        // A leap second's milliseconds count past 999; RFC 3339 has no place for them.
        put(23, at.timestamp_subsec_millis().min(999), 3);
        Some(text)
    }
}

impl Timestamp {
    /// Hands `write` the text: the digits above, or chrono's for other years (never met: send
    /// times).
    fn with_text<R>(&self, write: impl FnOnce(&str) -> R) -> R {
        match self
            .rfc3339_millis()
            .as_ref()
            .and_then(|text| std::str::from_utf8(text).ok())
        {
            Some(text) => write(text),
            None => write(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true)),
        }
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with_text(|text| f.write_str(text))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.with_text(|text| serializer.serialize_str(text))
    }
}

impl MessageJson {
    /// A delivery as ezgh shows it; `queue_id` names a gateway queue as the consumer's project
    /// knows it (the dead-letter source is shown by that id, and left out if the project has none).
    pub(super) fn new(delivery: Delivery, queue_id: impl Fn(&str) -> Option<String>) -> Self {
        let Delivery {
            message,
            receipt_handle,
            dead_letter,
            ..
        } = delivery;
        let (traceparent, tracestate) = TraceContext::w3c_of(&message);
        let mut attributes: BTreeMap<String, String> = message
            .attributes
            .into_iter()
            // `ezgh.` names are the gateway's own: a producer cannot forge them.
            .filter(|(name, _)| !name.starts_with(RESERVED_PREFIX))
            .map(|(name, attribute)| {
                let value = match attribute.value {
                    AttributeValue::Text(text) => text,
                    AttributeValue::Bytes(bytes) => {
                        base64::engine::general_purpose::STANDARD.encode(bytes)
                    }
                };
                (name, value)
            })
            .collect();
        if let Some(dead_letter) = dead_letter {
            attributes.insert(
                DEAD_LETTER_REASON.into(),
                dead_letter.reason.as_str().into(),
            );
            if let Some(source) = dead_letter.source_queue.as_deref().and_then(queue_id) {
                attributes.insert(DEAD_LETTER_SOURCE.into(), source);
            }
        }
        let fifo = message.group_id.is_some();
        Self {
            message_id: message.message_id,
            // URL-safe, as the REST dialects give handles (only the SQS endpoint gives AWS's).
            receipt_handle: receipt_handle.url_safe(),
            body: message.body,
            attributes,
            sent_at: timestamp(message.sent_at),
            first_received_at: timestamp(message.first_received_at),
            receive_count: message.receive_count,
            group_id: message.group_id,
            seq: if fifo { message.sequence_number } else { None },
            traceparent,
            tracestate,
        }
    }
}

/// The answer of acknowledge and visibility changes: one result per handle, in order.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ResultsResponse {
    /// One result per handle, in the order of the request.
    pub results: Vec<HandleResult>,
}

/// What became of one handle: `{"ok": true}`, or `{"error": …}` when nothing changed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub(super) enum HandleResult {
    /// The handle acted.
    Done {
        /// Always `true`.
        #[schema(schema_with = always_true)]
        ok: bool,
    },
    /// Nothing changed.
    Failed {
        /// Why.
        error: HandleError,
    },
}

/// Why a handle changed nothing.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum HandleError {
    /// The handle's delivery is over: the message was received again, already acknowledged,
    /// moved to a dead-letter queue, purged, expired, or its queue was deleted. Don't retry.
    ReceiptHandleStale,
    /// Not a receipt handle, or altered.
    ReceiptHandleInvalid,
}

/// The schema of a field that is always `true`.
fn always_true() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Boolean)
        .enum_values(Some([true]))
        .build()
}

impl ResultsResponse {
    pub(super) fn new(outcomes: &[HandleOutcome]) -> Self {
        let results = outcomes
            .iter()
            .map(|outcome| match outcome {
                HandleOutcome::Ok => HandleResult::Done { ok: true },
                HandleOutcome::Stale | HandleOutcome::Expired => HandleResult::Failed {
                    error: HandleError::ReceiptHandleStale,
                },
                HandleOutcome::Invalid => HandleResult::Failed {
                    error: HandleError::ReceiptHandleInvalid,
                },
            })
            .collect();
        Self { results }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ErrorKind;

    /// The buffer a receive answer is written into is sized for it: long enough for messages
    /// with nothing to escape (no copy as it grows), and not far longer.
    #[test]
    fn a_receive_answer_s_buffer_fits_its_json() {
        use chrono::TimeZone as _;
        let handle: SealedHandle =
            serde_json::from_str(&format!("\"{}\"", "A".repeat(210))).unwrap();
        let at = Utc.timestamp_millis_opt(1_780_000_000_123).unwrap();
        let message = |attributes: usize, fifo: bool| MessageJson {
            message_id: "5fd1b9b4-4b8e-4a0e-9d0c-6c1f2f1e0a11".to_owned(),
            receipt_handle: handle.clone(),
            body: "x".repeat(256),
            attributes: (0..attributes)
                .map(|index| (format!("attribute-{index}"), "value".repeat(index)))
                .collect(),
            sent_at: Some(Timestamp(at)),
            first_received_at: Some(Timestamp(at)),
            receive_count: 1_000_000,
            group_id: fifo.then(|| "group-1".to_owned()),
            seq: fifo.then(|| "18889999999999999999".to_owned()),
            traceparent: fifo
                .then(|| "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_owned()),
            tracestate: fifo.then(|| "congo=t61rcWkgMzE".to_owned()),
        };
        for messages in [
            vec![],
            vec![message(0, false)],
            (0..10)
                .map(|index| message(index, index % 2 == 0))
                .collect(),
        ] {
            let answer = ReceiveResponse { messages };
            let written = serde_json::to_vec(&answer).unwrap().len();
            let hint = answer.encoded_len_hint();
            assert!(
                hint >= written && hint <= written + 64 * (answer.messages.len() + 1),
                "{hint} for {written}"
            );
        }
    }

    #[test]
    fn timestamps_are_written_as_rfc_3339_with_milliseconds_in_utc() {
        use chrono::TimeZone as _;
        for millis in [
            0,
            1_780_000_000_123,
            1_764_556_420_007,
            951_782_400_010,
            -62_135_596_800_000,
            253_402_300_799_999,
        ] {
            let at = Utc.timestamp_millis_opt(millis).unwrap();
            assert_eq!(
                Timestamp(at).to_string(),
                at.to_rfc3339_opts(SecondsFormat::Millis, true)
            );
            assert_eq!(
                serde_json::to_string(&Timestamp(at)).unwrap(),
                format!("\"{}\"", at.to_rfc3339_opts(SecondsFormat::Millis, true))
            );
        }
        let far = Utc.timestamp_millis_opt(253_402_300_800_000).unwrap();
        assert_eq!(
            Timestamp(far).to_string(),
            far.to_rfc3339_opts(SecondsFormat::Millis, true)
        );
    }

    #[test]
    fn the_documented_receive_example_parses() {
        let options = parse_receive(
            br#"{ "maxMessages": 10, "waitSeconds": 20, "visibilityTimeoutSeconds": 60 }"#,
        )
        .unwrap();
        assert_eq!(options.max_messages, 10);
        assert_eq!(options.wait_seconds, Some(20));
        assert_eq!(options.visibility_timeout_seconds, Some(60));
    }

    #[test]
    fn receive_defaults_and_ranges() {
        for empty in [&b""[..], b"  ", b"{}", br#"{"maxMessages": null}"#] {
            let options = parse_receive(empty).unwrap();
            assert_eq!(options.max_messages, 1);
            assert_eq!(options.wait_seconds, None);
            assert_eq!(options.visibility_timeout_seconds, None);
        }
        for (body, field) in [
            (r#"{"maxMessages": 0}"#, "maxMessages"),
            (r#"{"maxMessages": 11}"#, "maxMessages"),
            (r#"{"waitSeconds": 21}"#, "waitSeconds"),
            (r#"{"waitSeconds": -1}"#, "waitSeconds"),
            (
                r#"{"visibilityTimeoutSeconds": 43201}"#,
                "visibilityTimeoutSeconds",
            ),
            (r#"{"maxMessages": 1e300}"#, "maxMessages"),
        ] {
            let error = parse_receive(body.as_bytes()).unwrap_err();
            assert_eq!(error.kind, ErrorKind::OutOfRange, "{body}");
            assert!(error.message.starts_with(field), "{}", error.message);
        }
        assert_eq!(
            parse_receive(br#"{"maxMessages": 10.0}"#)
                .unwrap()
                .max_messages,
            10
        );
        assert_eq!(
            parse_receive(br#"{"waitSeconds": 0}"#)
                .unwrap()
                .wait_seconds,
            Some(0)
        );
        assert_eq!(
            parse_receive(br#"{"visibilityTimeoutSeconds": 43200}"#)
                .unwrap()
                .visibility_timeout_seconds,
            Some(43_200)
        );
    }

    #[test]
    fn malformed_bodies_are_invalid_requests_that_echo_nothing() {
        for body in [
            r#"{"maxMessages": "10"}"#,
            r#"{"maxMessages": 1.5}"#,
            r#"[1]"#,
            r#"{"maxMessage": 1}"#,
            "{not json",
        ] {
            let error = parse_receive(body.as_bytes()).unwrap_err();
            assert_eq!(error.kind, ErrorKind::InvalidRequest, "{body}");
        }
        let secret = "AQAAAH8-very-secret-handle";
        for body in [
            format!(r#"{{"receiptHandles": "{secret}"}}"#),
            format!(r#"{{"receiptHandles": ["{secret}", 5]}}"#),
            format!(r#"{{"receiptHandles": ["{secret}""#),
        ] {
            let error = parse_ack(body.as_bytes()).unwrap_err();
            assert!(!error.message.contains(secret), "{}", error.message);
        }
    }

    #[test]
    fn acknowledge_takes_one_to_ten_handles() {
        assert_eq!(
            parse_ack(br#"{ "receiptHandles": ["AQAAAH8...", "AQAAAJ2..."] }"#).unwrap(),
            vec!["AQAAAH8...".to_owned(), "AQAAAJ2...".to_owned()]
        );
        let eleven = serde_json::json!({ "receiptHandles": vec!["h"; 11] }).to_string();
        for body in [r#"{"receiptHandles": []}"#, eleven.as_str()] {
            assert_eq!(
                parse_ack(body.as_bytes()).unwrap_err().kind,
                ErrorKind::OutOfRange
            );
        }
        assert_eq!(
            parse_ack(b"{}").unwrap_err().kind,
            ErrorKind::InvalidRequest
        );
        assert_eq!(parse_ack(b"").unwrap_err().kind, ErrorKind::InvalidRequest);
    }

    #[test]
    fn visibility_entries_need_a_handle_and_a_timeout_in_range() {
        assert_eq!(
            parse_visibility(
                br#"{ "entries": [ { "receiptHandle": "AQAAAH8...", "visibilityTimeoutSeconds": 120 } ] }"#
            )
            .unwrap(),
            vec![("AQAAAH8...".to_owned(), 120)]
        );
        let error = parse_visibility(
            br#"{ "entries": [ { "receiptHandle": "h", "visibilityTimeoutSeconds": 43201 } ] }"#,
        )
        .unwrap_err();
        assert_eq!(error.kind, ErrorKind::OutOfRange);
        assert!(
            error
                .message
                .starts_with("entries[0].visibilityTimeoutSeconds"),
            "{}",
            error.message
        );
        for body in [
            r#"{ "entries": [ { "receiptHandle": "h" } ] }"#,
            r#"{ "entries": [ { "visibilityTimeoutSeconds": 5 } ] }"#,
            r#"{ "entries": [ "h" ] }"#,
            r#"{ "entries": [ { "receiptHandle": "h", "visibilityTimeoutSeconds": 5, "x": 1 } ] }"#,
        ] {
            assert_eq!(
                parse_visibility(body.as_bytes()).unwrap_err().kind,
                ErrorKind::InvalidRequest,
                "{body}"
            );
        }
        assert_eq!(
            parse_visibility(br#"{ "entries": [] }"#).unwrap_err().kind,
            ErrorKind::OutOfRange
        );
    }

    #[test]
    fn results_have_the_documented_shape() {
        let json = serde_json::to_string(&ResultsResponse::new(&[
            HandleOutcome::Ok,
            HandleOutcome::Stale,
            HandleOutcome::Invalid,
        ]))
        .unwrap();
        assert_eq!(
            json,
            r#"{"results":[{"ok":true},{"error":"receipt_handle_stale"},{"error":"receipt_handle_invalid"}]}"#
        );
    }
}
