//! basaltic's JSON: queue resources and their settings, the send, receive and visibility bodies
//! with the documented ranges and limits, and the message shape (typed attributes, standard
//! base64 for `Binary`). The bodies' tables (`requests`) are what the parsers here read fields
//! through and what the OpenAPI document prints.

use crate::api::common::body_shape::{Field, Integer, Text};
use crate::api::common::json::reject_unknown;
use crate::core::GatewayError;
use crate::core::gateway::ReceiveOptions;
use crate::core::model::{
    AttributeValue, Delivery, MessageAt, MessageAttribute, OutgoingMessage, QueueSettings,
};
use crate::core::sqs_limits as limits;
use crate::core::trace_context::TraceContext;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::SecondsFormat;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use utoipa::ToSchema;

mod answers;
mod push;
mod requests;

pub(super) use answers::*;
pub(super) use push::*;
pub(super) use requests::*;

/// Attributes a message may carry.
const MAX_ATTRIBUTES: usize = 20;
/// Longest attribute name and value, in bytes.
const MAX_ATTRIBUTE_NAME: usize = 256;
const MAX_ATTRIBUTE_VALUE: usize = 1024;
/// The longest queue name: the backend name adds `sqsgw_bq_`, `_` and 8 hex digits (and `.fifo`)
/// within SQS's 80 characters.
pub(super) const MAX_NAME: usize = 57;
/// The largest `max_message_bytes` (256 KiB).
pub(super) const MAX_MESSAGE_BYTES: u32 = 262_144;
/// The `max_message_bytes` of a queue created without one: the most, 256 KiB (the backend's own
/// default may be larger: SQS's is 1 MiB).
const DEFAULT_MESSAGE_BYTES: u32 = 262_144;

/// A queue to create.
#[derive(Debug)]
pub(super) struct NewQueue {
    pub name: String,
    pub fifo: bool,
    pub settings: Settings,
}

/// Queue settings as basaltic names them; `None` keeps the default (or the current value).
#[derive(Debug, Default)]
pub(super) struct Settings {
    pub delay_seconds: Option<u32>,
    pub receive_wait_time_seconds: Option<u32>,
    pub visibility_timeout_seconds: Option<u32>,
    pub max_message_bytes: Option<u32>,
    pub retention_seconds: Option<u32>,
    pub content_based_deduplication: Option<bool>,
    /// The dead-letter queue's id and the receives after which messages move there.
    pub dead_letter_queue: Option<(String, u32)>,
    /// A change's `"dead_letter_queue": null`: the queue has none any more.
    pub remove_dead_letter: bool,
}

impl Settings {
    /// The core's settings, with the dead-letter queue already found (`dead_letter`).
    pub(super) fn to_core(&self, dead_letter: Option<(String, u32)>) -> QueueSettings {
        QueueSettings {
            visibility_timeout_seconds: self.visibility_timeout_seconds,
            delay_seconds: self.delay_seconds,
            receive_wait_seconds: self.receive_wait_time_seconds,
            retention_seconds: self.retention_seconds,
            max_message_bytes: self.max_message_bytes,
            content_based_deduplication: self.content_based_deduplication,
            dead_letter,
            remove_dead_letter: self.remove_dead_letter,
            per_group_deduplication: None,
            per_group_throughput: None,
            kept: Default::default(),
        }
    }
}

fn invalid(message: impl Into<String>) -> GatewayError {
    GatewayError::invalid_request(message)
}

/// Parses `{"name", "type": "standard" | "fifo", "settings": {…}}`.
pub(super) fn parse_new_queue(body: &[u8]) -> Result<NewQueue, GatewayError> {
    let object = NEW_QUEUE.parse(body, false)?;
    let name = NAME.value(&object, "")?.to_owned();
    let fifo = TYPE.read(&object, "")? == "fifo";
    let settings = match NEW_SETTINGS.read(&object, "")? {
        None => Settings::default(),
        Some(settings) => parse_settings(settings)?,
    };
    let mut settings = settings;
    settings
        .max_message_bytes
        .get_or_insert(DEFAULT_MESSAGE_BYTES);
    match settings.content_based_deduplication {
        Some(true) if !fifo => {
            return Err(invalid(
                "content_based_deduplication applies to fifo queues only",
            ));
        }
        // "false" on a standard queue is what it is anyway; SQS refuses the attribute there.
        Some(false) if !fifo => settings.content_based_deduplication = None,
        _ => {}
    }
    Ok(NewQueue {
        name,
        fifo,
        settings,
    })
}

fn parse_settings(object: &Map<String, Value>) -> Result<Settings, GatewayError> {
    const AT: &str = "settings";
    SETTINGS.check(object, AT)?;
    let dead_letter_queue = match DEAD_LETTER_QUEUE.read(object, AT)? {
        None => None,
        Some(target) => {
            let at = format!("{AT}.{}", DEAD_LETTER_QUEUE.name);
            DEAD_LETTER.check(target, &at)?;
            let queue_id = DEAD_LETTER_ID.value(target, &at)?;
            let count = MAX_RECEIVES.value(target, &at)?;
            Some((queue_id.to_owned(), count))
        }
    };
    Ok(Settings {
        delay_seconds: QUEUE_DELAY.read(object, AT)?,
        receive_wait_time_seconds: QUEUE_WAIT.read(object, AT)?,
        visibility_timeout_seconds: QUEUE_VISIBILITY.read(object, AT)?,
        max_message_bytes: QUEUE_MESSAGE_BYTES.read(object, AT)?,
        retention_seconds: QUEUE_RETENTION.read(object, AT)?,
        content_based_deduplication: CONTENT_DEDUPLICATION.read(object, AT)?,
        dead_letter_queue,
        remove_dead_letter: false,
    })
}

/// Parses a send body: `{"body", "attributes"?, "delay_seconds"?, "group_id"?,
/// "deduplication_id"?}`; `fifo` says which of the last three apply.
pub(super) fn parse_send(body: &[u8], fifo: bool) -> Result<OutgoingMessage, GatewayError> {
    let object = SEND.parse(body, false)?;
    send_of(&object, fifo, &SEND_DELAY, &SEND_DEDUPLICATION_ID)
}

/// One message to send, from its object (its keys already checked against its shape), whose
/// delay and deduplication id are `delay` and `deduplication`.
fn send_of(
    object: &Map<String, Value>,
    fifo: bool,
    delay: &Field<Integer>,
    deduplication: &Field<Text>,
) -> Result<OutgoingMessage, GatewayError> {
    let text = BODY.value(object, "")?;
    let attributes = match ATTRIBUTES.read(object, "")? {
        None => BTreeMap::new(),
        Some(Value::Object(attributes)) => parse_attributes(attributes)?,
        Some(_) => return Err(invalid("attributes must be an object")),
    };
    let delay_seconds = delay.read(object, "")?;
    if fifo && delay_seconds.is_some() {
        return Err(invalid(
            "delay_seconds is refused on fifo queues: they use the queue's delay",
        ));
    }
    let group_id = GROUP_ID.read(object, "")?.map(str::to_owned);
    let deduplication_id = deduplication.read(object, "")?.map(str::to_owned);
    if !fifo && (group_id.is_some() || deduplication_id.is_some()) {
        return Err(invalid(
            "group_id and deduplication_id apply to fifo queues only",
        ));
    }
    if fifo && group_id.is_none() {
        return Err(invalid("group_id is required on fifo queues"));
    }
    Ok(OutgoingMessage {
        body: text.to_owned(),
        attributes,
        delay_seconds,
        group_id,
        deduplication_id,
        trace_header: None,
    })
}

fn parse_attributes(
    object: &Map<String, Value>,
) -> Result<BTreeMap<String, MessageAttribute>, GatewayError> {
    if object.len() > MAX_ATTRIBUTES {
        return Err(invalid(format!(
            "a message carries at most {MAX_ATTRIBUTES} attributes"
        )));
    }
    let mut attributes = BTreeMap::new();
    for (index, (name, attribute)) in object.iter().enumerate() {
        // Names are not echoed (a client's data never comes back); the position says which.
        let at = format!("attributes (entry {})", index + 1);
        if name.is_empty() || name.len() > MAX_ATTRIBUTE_NAME {
            return Err(invalid(format!(
                "{at}: names are 1 to {MAX_ATTRIBUTE_NAME} bytes"
            )));
        }
        let Value::Object(attribute) = attribute else {
            return Err(invalid(format!("{at} must be {{\"type\", \"value\"}}")));
        };
        reject_unknown(attribute, &["type", "value"], &at)?;
        let kind = attribute.get("type").and_then(Value::as_str).unwrap_or("");
        let value = attribute
            .get("value")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("{at}: value must be a string")))?;
        // The base64 of 1,024 bytes is at most 1,368 characters: nothing longer is decoded.
        if value.len() > MAX_ATTRIBUTE_VALUE.div_ceil(3) * 4 {
            return Err(too_long(&at));
        }
        let value = match kind {
            "String" | "Number" => AttributeValue::Text(value.to_owned()),
            "Binary" => AttributeValue::Bytes(
                STANDARD
                    .decode(value)
                    .map_err(|_| invalid(format!("{at}: a Binary value is standard base64")))?,
            ),
            _ => return Err(invalid(format!("{at}: type is String, Number or Binary"))),
        };
        // The limit is on the value itself: a Binary one once decoded, not its base64.
        let length = match &value {
            AttributeValue::Text(text) => text.len(),
            AttributeValue::Bytes(bytes) => bytes.len(),
        };
        if length > MAX_ATTRIBUTE_VALUE {
            return Err(too_long(&at));
        }
        attributes.insert(
            name.clone(),
            MessageAttribute {
                data_type: kind.to_owned(),
                value,
            },
        );
    }
    Ok(attributes)
}

fn too_long(at: &str) -> GatewayError {
    invalid(format!(
        "{at}: values are at most {MAX_ATTRIBUTE_VALUE} bytes"
    ))
}

/// Parses `{"max_messages"?, "wait_time_seconds"?, "visibility_timeout_seconds"?}` (an empty body
/// takes the defaults: one message, the queue's wait and visibility).
pub(super) fn parse_receive(body: &[u8]) -> Result<ReceiveOptions, GatewayError> {
    let object = RECEIVE.parse(body, true)?;
    Ok(ReceiveOptions {
        max_messages: MAX_MESSAGES.value(&object, "")?,
        wait_seconds: WAIT.read(&object, "")?,
        visibility_timeout_seconds: LEASE.read(&object, "")?,
        attempt_id: None,
        wait_out_over_limit: false,
        one_per_group: false,
        keep_claims: false,
    })
}

/// Parses `{"receipt_handle", "visibility_timeout_seconds"}`.
pub(super) fn parse_visibility(body: &[u8]) -> Result<(String, u32), GatewayError> {
    let object = VISIBILITY.parse(body, false)?;
    let handle = RECEIPT_HANDLE.value(&object, "")?;
    let seconds = NEW_VISIBILITY.value(&object, "")?;
    Ok((handle.to_owned(), seconds))
}

/// Parses a redrive `{"destination_queue_id"?, "max_messages_per_second"?}` (an empty body
/// moves each message back where it came from, as fast as the backend goes).
pub(super) fn parse_redrive(body: &[u8]) -> Result<(Option<String>, Option<u32>), GatewayError> {
    let object = REDRIVE.parse(body, true)?;
    let destination = REDRIVE_DESTINATION.read(&object, "")?.map(str::to_owned);
    let rate = REDRIVE_RATE.read(&object, "")?;
    Ok((destination, rate))
}

/// A batch entry: its caller-chosen id, and its fields.
pub(super) type BatchEntry = (String, Map<String, Value>);

/// A batch's entries: 1 to 10 objects, each with a caller-chosen `id` (1 to 80 letters, digits,
/// `-`, `_`), unique in the batch.
pub(super) fn batch_entries(body: &[u8], batch: &Batch) -> Result<Vec<BatchEntry>, GatewayError> {
    let object = batch.request.parse(body, false)?;
    let entries = batch.entries.read(&object, "")?;
    let mut seen = std::collections::BTreeSet::new();
    let mut parsed = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let Value::Object(entry) = entry else {
            return Err(invalid(format!("entries[{index}] must be an object")));
        };
        let id = batch.id.value(entry, &format!("entries[{index}]"))?;
        if !seen.insert(id.to_owned()) {
            return Err(invalid(format!("entries[{index}].id is used twice")));
        }
        parsed.push((id.to_owned(), entry.clone()));
    }
    Ok(parsed)
}

/// A send batch entry's message.
pub(super) fn batch_send(
    entry: &Map<String, Value>,
    fifo: bool,
) -> Result<OutgoingMessage, GatewayError> {
    SEND_ENTRY.check(entry, "")?;
    send_of(entry, fifo, &ENTRY_DELAY, &ENTRY_DEDUPLICATION_ID)
}

/// A delete batch entry's receipt.
pub(super) fn batch_receipt(entry: &Map<String, Value>) -> Result<String, GatewayError> {
    DELETE_ENTRY.check(entry, "")?;
    Ok(ENTRY_RECEIPT.value(entry, "")?.to_owned())
}

/// A visibility batch entry's receipt and timeout.
pub(super) fn batch_visibility(entry: &Map<String, Value>) -> Result<(String, u32), GatewayError> {
    VISIBILITY_ENTRY.check(entry, "")?;
    let handle = ENTRY_RECEIPT.value(entry, "")?;
    let seconds = ENTRY_VISIBILITY.value(entry, "")?;
    Ok((handle.to_owned(), seconds))
}

/// Parses `{"settings": {…}}` of a settings change.
pub(super) fn parse_settings_change(body: &[u8]) -> Result<Settings, GatewayError> {
    let object = SETTINGS_CHANGE.parse(body, false)?;
    let changed = CHANGED_SETTINGS.value(&object, "")?;
    let mut settings = parse_settings(changed)?;
    // A change names a setting to set; `null` for the dead-letter queue takes it away.
    settings.remove_dead_letter = changed
        .get(DEAD_LETTER_QUEUE.name)
        .is_some_and(Value::is_null);
    Ok(settings)
}

/// A message read without a lease: no receipt.
pub(super) fn inspected(peeked: crate::core::model::PeekedMessage) -> InspectedMessage {
    use crate::core::model::MessageState;
    let message = peeked.message;
    InspectedMessage {
        message_id: message.message_id,
        position: peeked.position.to_string(),
        body: message.body,
        attributes: typed(message.attributes),
        receive_count: message.receive_count,
        sent_at: message
            .sent_at
            .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true)),
        state: match peeked.state {
            MessageState::Visible => InspectedState::Visible,
            MessageState::InFlight => InspectedState::InFlight,
            MessageState::Delayed => InspectedState::Delayed,
        },
        visible_at: peeked
            .visible_at
            .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true)),
        group_id: message.group_id,
        deduplication_id: message.deduplication_id,
    }
}

/// A message as an export writes it: one JSON line.
pub(super) fn exported(peeked: crate::core::model::PeekedMessage) -> ExportedMessage {
    let message = peeked.message;
    ExportedMessage {
        message_id: message.message_id,
        position: peeked.position.to_string(),
        sent_at: message
            .sent_at
            .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true)),
        receive_count: message.receive_count,
        body: message.body,
        attributes: typed(message.attributes),
        group_id: message.group_id,
        deduplication_id: message.deduplication_id,
    }
}

/// Parses a move: `{"destination_queue_id", "messages": [{"message_id", "position"}]}`.
pub(super) fn parse_move(body: &[u8]) -> Result<(String, Vec<MessageAt>), GatewayError> {
    let object = MOVE.parse(body, false)?;
    let destination = MOVE_DESTINATION.value(&object, "")?.to_owned();
    let mut messages = Vec::new();
    for (index, entry) in MOVE_MESSAGES.read(&object, "")?.iter().enumerate() {
        let at = format!("messages[{index}]");
        let Value::Object(entry) = entry else {
            return Err(invalid(format!("{at} must be an object")));
        };
        MOVE_ENTRY.check(entry, &at)?;
        let message_id = MOVE_MESSAGE_ID.value(entry, &at)?.to_owned();
        let position = MOVE_POSITION
            .value(entry, &at)?
            .parse::<u64>()
            .map_err(|_| {
                invalid(format!(
                    "{at}.position must be a position: digits, as inspection gives it"
                ))
            })?;
        messages.push(MessageAt {
            position,
            message_id,
        });
    }
    Ok((destination, messages))
}

fn typed(attributes: BTreeMap<String, MessageAttribute>) -> BTreeMap<String, AttributeJson> {
    attributes
        .into_iter()
        .map(|(name, attribute)| {
            let value = match attribute.value {
                AttributeValue::Text(text) => text,
                AttributeValue::Bytes(bytes) => STANDARD.encode(bytes),
            };
            (
                name,
                AttributeJson {
                    kind: attribute.data_type,
                    value,
                },
            )
        })
        .collect()
}

/// A received message as basaltic shows it.
pub(super) fn message(delivery: Delivery) -> ReceivedMessage {
    let Delivery {
        message,
        receipt_handle,
        visible_at,
        ..
    } = delivery;
    let (traceparent, tracestate) = TraceContext::w3c_of(&message);
    ReceivedMessage {
        message_id: message.message_id,
        body: message.body,
        attributes: typed(message.attributes),
        // URL-safe: the delete route takes it in its query string.
        receipt_handle: receipt_handle.url_safe().expose().to_owned(),
        receive_count: message.receive_count,
        visible_at: visible_at.to_rfc3339_opts(SecondsFormat::Millis, true),
        traceparent,
        tracestate,
    }
}
