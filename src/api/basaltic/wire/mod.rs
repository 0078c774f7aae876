//! basaltic's JSON: queue resources and their settings, the send, receive and visibility bodies
//! with the documented ranges and limits, and the message shape (typed attributes, standard
//! base64 for `Binary`).

use crate::api::common::json::{optional_int, parse_object, reject_unknown};
use crate::core::GatewayError;
use crate::core::gateway::ReceiveOptions;
use crate::core::model::{
    AttributeValue, Delivery, MessageAttribute, OutgoingMessage, QueueSettings,
};
use crate::core::sqs_limits as limits;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::SecondsFormat;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use utoipa::ToSchema;

mod answers;
mod requests;

pub(super) use answers::*;
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
pub(super) const MAX_MESSAGE_BYTES: i64 = 262_144;
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
        }
    }
}

fn invalid(message: impl Into<String>) -> GatewayError {
    GatewayError::invalid_request(message)
}

/// Parses `{"name", "type": "standard" | "fifo", "settings": {…}}`.
pub(super) fn parse_new_queue(body: &[u8]) -> Result<NewQueue, GatewayError> {
    let object = parse_object(body, false)?;
    reject_unknown(&object, &["name", "type", "settings"], "")?;
    let name = object
        .get("name")
        .and_then(Value::as_str)
        .filter(|name| {
            !name.is_empty()
                && name.len() <= MAX_NAME
                && name
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
        })
        .ok_or_else(|| invalid("name must be 1 to 57 letters, digits or `-`"))?
        .to_owned();
    let fifo = match object.get("type").and_then(Value::as_str) {
        None if !object.contains_key("type") => false,
        Some("standard") => false,
        Some("fifo") => true,
        _ => return Err(invalid("type must be standard or fifo")),
    };
    let settings = match object.get("settings") {
        None | Some(Value::Null) => Settings::default(),
        Some(Value::Object(settings)) => parse_settings(settings)?,
        Some(_) => return Err(invalid("settings must be an object")),
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
    reject_unknown(
        object,
        &[
            "delay_seconds",
            "receive_wait_time_seconds",
            "visibility_timeout_seconds",
            "max_message_bytes",
            "retention_seconds",
            "content_based_deduplication",
            "dead_letter_queue",
        ],
        "settings",
    )?;
    let int = |field: &str, min: i64, max: i64| {
        optional_int(object, field, min, max).map_err(|error| prefixed(error, "settings"))
    };
    let dead_letter_queue = match object.get("dead_letter_queue") {
        None | Some(Value::Null) => None,
        Some(Value::Object(target)) => {
            reject_unknown(
                target,
                &["queue_id", "max_receive_count"],
                "settings.dead_letter_queue",
            )?;
            let queue_id = target
                .get("queue_id")
                .and_then(Value::as_str)
                .filter(|id| uuid::Uuid::parse_str(id).is_ok())
                .ok_or_else(|| {
                    invalid("settings.dead_letter_queue.queue_id must be a queue UUID")
                })?;
            let count = optional_int(target, "max_receive_count", 1, 1000)
                .map_err(|error| prefixed(error, "settings.dead_letter_queue"))?
                .unwrap_or(5);
            Some((queue_id.to_owned(), count))
        }
        Some(_) => return Err(invalid("settings.dead_letter_queue must be an object")),
    };
    Ok(Settings {
        delay_seconds: int("delay_seconds", 0, limits::MAX_DELAY_SECONDS.into())?,
        receive_wait_time_seconds: int(
            "receive_wait_time_seconds",
            0,
            limits::MAX_WAIT_SECONDS.into(),
        )?,
        visibility_timeout_seconds: int(
            "visibility_timeout_seconds",
            0,
            limits::MAX_VISIBILITY_SECONDS.into(),
        )?,
        max_message_bytes: int(
            "max_message_bytes",
            limits::MIN_MESSAGE_BYTES.into(),
            MAX_MESSAGE_BYTES,
        )?,
        retention_seconds: int(
            "retention_seconds",
            limits::MIN_RETENTION_SECONDS.into(),
            limits::MAX_RETENTION_SECONDS.into(),
        )?,
        content_based_deduplication: match object.get("content_based_deduplication") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(value)) => Some(*value),
            Some(_) => {
                return Err(invalid(
                    "settings.content_based_deduplication must be true or false",
                ));
            }
        },
        dead_letter_queue,
    })
}

fn prefixed(mut error: GatewayError, prefix: &str) -> GatewayError {
    error.message = format!("{prefix}.{}", error.message);
    error
}

/// Parses a send body: `{"body", "attributes"?, "delay_seconds"?, "group_id"?,
/// "deduplication_id"?}`; `fifo` says which of the last three apply.
pub(super) fn parse_send(body: &[u8], fifo: bool) -> Result<OutgoingMessage, GatewayError> {
    send_of(&parse_object(body, false)?, fifo, None)
}

/// One message to send, from its object (`also` names an extra field its caller reads, such as
/// a batch entry's `id`).
fn send_of(
    object: &Map<String, Value>,
    fifo: bool,
    also: Option<&str>,
) -> Result<OutgoingMessage, GatewayError> {
    let mut known = vec![
        "body",
        "attributes",
        "delay_seconds",
        "group_id",
        "deduplication_id",
    ];
    known.extend(also);
    reject_unknown(object, &known, "")?;
    let text = object
        .get("body")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("body is required, a string"))?;
    let attributes = match object.get("attributes") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(attributes)) => parse_attributes(attributes)?,
        Some(_) => return Err(invalid("attributes must be an object")),
    };
    let delay_seconds = optional_int(object, "delay_seconds", 0, limits::MAX_DELAY_SECONDS.into())?;
    if fifo && delay_seconds.is_some() {
        return Err(invalid(
            "delay_seconds is refused on fifo queues: they use the queue's delay",
        ));
    }
    let string = |field: &str| -> Result<Option<String>, GatewayError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(invalid(format!("{field} must be a string"))),
        }
    };
    let group_id = string("group_id")?;
    let deduplication_id = string("deduplication_id")?;
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
    let object = parse_object(body, true)?;
    reject_unknown(
        &object,
        &[
            "max_messages",
            "wait_time_seconds",
            "visibility_timeout_seconds",
        ],
        "",
    )?;
    Ok(ReceiveOptions {
        max_messages: optional_int(&object, "max_messages", 1, limits::MAX_BATCH.into())?
            .unwrap_or(1),
        wait_seconds: optional_int(
            &object,
            "wait_time_seconds",
            0,
            limits::MAX_WAIT_SECONDS.into(),
        )?,
        visibility_timeout_seconds: optional_int(
            &object,
            "visibility_timeout_seconds",
            0,
            limits::MAX_VISIBILITY_SECONDS.into(),
        )?,
        attempt_id: None,
        wait_out_over_limit: false,
        one_per_group: false,
    })
}

/// Parses `{"receipt_handle", "visibility_timeout_seconds"}`.
pub(super) fn parse_visibility(body: &[u8]) -> Result<(String, u32), GatewayError> {
    let object = parse_object(body, false)?;
    reject_unknown(
        &object,
        &["receipt_handle", "visibility_timeout_seconds"],
        "",
    )?;
    visibility_of(&object)
}

/// A batch entry: its caller-chosen id, and its fields.
pub(super) type BatchEntry = (String, Map<String, Value>);

/// A batch's entries: 1 to 10 objects, each with a caller-chosen `id` (1 to 80 letters, digits,
/// `-`, `_`), unique in the batch.
pub(super) fn batch_entries(body: &[u8]) -> Result<Vec<BatchEntry>, GatewayError> {
    let object = parse_object(body, false)?;
    reject_unknown(&object, &["entries"], "")?;
    let entries = crate::api::common::json::batch(&object, "entries")?;
    let mut seen = std::collections::BTreeSet::new();
    let mut parsed = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let Value::Object(entry) = entry else {
            return Err(invalid(format!("entries[{index}] must be an object")));
        };
        let id = entry
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| {
                !id.is_empty()
                    && id.len() <= 80
                    && id
                        .bytes()
                        .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
            })
            .ok_or_else(|| {
                invalid(format!(
                    "entries[{index}].id must be 1 to 80 letters, digits, `-` or `_`"
                ))
            })?;
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
    send_of(entry, fifo, Some("id"))
}

/// A delete batch entry's receipt.
pub(super) fn batch_receipt(entry: &Map<String, Value>) -> Result<String, GatewayError> {
    reject_unknown(entry, &["id", "receipt_handle"], "")?;
    receipt_of(entry)
}

/// A visibility batch entry's receipt and timeout.
pub(super) fn batch_visibility(entry: &Map<String, Value>) -> Result<(String, u32), GatewayError> {
    reject_unknown(
        entry,
        &["id", "receipt_handle", "visibility_timeout_seconds"],
        "",
    )?;
    visibility_of(entry)
}

fn receipt_of(object: &Map<String, Value>) -> Result<String, GatewayError> {
    object
        .get("receipt_handle")
        .and_then(Value::as_str)
        .filter(|handle| !handle.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| invalid("receipt_handle is required, a string"))
}

fn visibility_of(object: &Map<String, Value>) -> Result<(String, u32), GatewayError> {
    let handle = receipt_of(object)?;
    let seconds = optional_int(
        object,
        "visibility_timeout_seconds",
        0,
        limits::MAX_VISIBILITY_SECONDS.into(),
    )?
    .ok_or_else(|| invalid("visibility_timeout_seconds is required"))?;
    Ok((handle, seconds))
}

/// Parses `{"settings": {…}}` of a settings change.
pub(super) fn parse_settings_change(body: &[u8]) -> Result<Settings, GatewayError> {
    let object = parse_object(body, false)?;
    reject_unknown(&object, &["settings"], "")?;
    match object.get("settings") {
        Some(Value::Object(settings)) => parse_settings(settings),
        _ => Err(invalid("settings is required, an object")),
    }
}

/// A message read without a lease: no receipt.
pub(super) fn inspected(message: crate::core::model::BackendMessage) -> InspectedMessage {
    InspectedMessage {
        message_id: message.message_id,
        body: message.body,
        attributes: typed(message.attributes),
        receive_count: message.receive_count,
        sent_at: message
            .sent_at
            .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true)),
    }
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
    ReceivedMessage {
        message_id: message.message_id,
        body: message.body,
        attributes: typed(message.attributes),
        // URL-safe: the delete route takes it in its query string.
        receipt_handle: receipt_handle.url_safe().expose().to_owned(),
        receive_count: message.receive_count,
        visible_at: visible_at.to_rfc3339_opts(SecondsFormat::Millis, true),
    }
}
