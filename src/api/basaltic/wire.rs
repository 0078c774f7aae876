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

// The request bodies as the OpenAPI document shows them. Bodies are parsed by hand above (errors
// that name a field but never echo a value); these types only describe them, and the document's
// tests hold each documented range and default to what the parser does.

/// A queue's type.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum QueueType {
    /// At-least-once delivery, best-effort order.
    Standard,
    /// Ordered per message group, deduplicated.
    Fifo,
}

/// The body that creates a queue.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct NewQueueRequest {
    /// 1 to 57 letters, digits or `-`, unique among your queues.
    #[schema(
        pattern = "^[A-Za-z0-9-]{1,57}$",
        min_length = 1,
        max_length = 57,
        example = "orders"
    )]
    name: String,
    /// `standard` (the default) or `fifo`.
    #[serde(rename = "type")]
    #[schema(nullable = false, default = "standard")]
    kind: Option<QueueType>,
    /// Settings; absent ones take their defaults.
    settings: Option<SettingsRequest>,
}

/// A settings change: the settings given change, the others stay.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct SettingsChangeRequest {
    /// The settings to change.
    settings: SettingsRequest,
}

/// Queue settings to set; each is optional.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct SettingsRequest {
    /// Delay before a new message's first delivery, in seconds (default 0).
    #[schema(minimum = 0, maximum = 900)]
    delay_seconds: Option<u32>,
    /// Long-poll wait of a receive that gives none, in seconds (default 0).
    #[schema(minimum = 0, maximum = 20)]
    receive_wait_time_seconds: Option<u32>,
    /// Lease of a receive that gives none, in seconds (default 30).
    #[schema(minimum = 0, maximum = 43200)]
    visibility_timeout_seconds: Option<u32>,
    /// Largest message, body and attributes together, in bytes (default and most 262,144:
    /// 256 KiB).
    #[schema(minimum = 1024, maximum = 262144)]
    max_message_bytes: Option<u32>,
    /// How long a message is kept, in seconds (default 345,600: 4 days).
    #[schema(minimum = 60, maximum = 1209600)]
    retention_seconds: Option<u32>,
    /// FIFO queues only: deduplicate by the body's SHA-256 when no `deduplication_id` is given.
    content_based_deduplication: Option<bool>,
    /// Where messages received too often move; its queue takes the key's `send` permission.
    dead_letter_queue: Option<DeadLetterRequest>,
}

/// A dead-letter queue to set.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct DeadLetterRequest {
    /// The dead-letter queue's UUID.
    #[schema(value_type = QueueId)]
    queue_id: String,
    /// Receives after which a message moves there.
    #[schema(minimum = 1, maximum = 1000, default = 5)]
    max_receive_count: Option<u32>,
}

/// A message attribute: its type and its value, a string on the wire.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AttributeJson {
    /// `String`, `Number` or `Binary` (a message sent through the SQS endpoint may add a custom
    /// `.label`).
    #[serde(rename = "type")]
    #[schema(pattern = "^(String|Number|Binary)(\\..*)?$", example = "String")]
    pub kind: String,
    /// The value; standard base64 for `Binary`.
    #[schema(example = "order.paid")]
    pub value: String,
}

/// An attribute to send: `{"type", "value"}` with `String`, `Number` or `Binary` and a value of
/// at most 1,024 bytes (a `Binary` one decoded): text of the characters a body may hold, a
/// decimal number (at most 38 significant digits, a magnitude from 10^-128 to 10^126), or
/// standard base64.
pub(super) struct AttributeRequest;

/// What a body and a `String` value may hold: SQS's characters
/// (`#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF`), at least one.
const TEXT_PATTERN: &str = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\uFFFE\\uFFFF]+$";
/// A decimal number, optionally signed, with an optional exponent.
const NUMBER_PATTERN: &str = "^[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?$";
/// Standard base64, padded.
const BASE64_PATTERN: &str = "^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";
/// Attribute names: 1 to 256 bytes of UTF-8 (the document's rule: `évent`, `event:type`, `event
/// type` are names; the schema's `maxLength` counts characters, so it can only say 256 of them),
/// in the characters of bodies, not starting with `AWS.`, `Amazon.` (AWS's) or `sqsgw.` (the
/// gateway's) in any case.
const NAME_PATTERN: &str = "^(?![Aa][Ww][Ss]\\.|[Aa][Mm][Aa][Zz][Oo][Nn]\\.|[Ss][Qq][Ss][Gg][Ww]\\.)[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\uFFFE\\uFFFF]+$";

impl utoipa::PartialSchema for AttributeRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        let typed = |kind: &str, value: ObjectBuilder| {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .property(
                    "type",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some([kind])),
                )
                .property("value", value.schema_type(Type::String).min_length(Some(1)))
                .required("type")
                .required("value")
                .additional_properties(Some(
                    utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
                ))
        };
        let text = ObjectBuilder::new()
            .max_length(Some(MAX_ATTRIBUTE_VALUE))
            .pattern(Some(TEXT_PATTERN))
            .examples([serde_json::json!("order.paid")]);
        let number = ObjectBuilder::new()
            .max_length(Some(MAX_ATTRIBUTE_VALUE))
            .pattern(Some(NUMBER_PATTERN))
            .examples([serde_json::json!("42.5")]);
        let binary = ObjectBuilder::new()
            .max_length(Some(MAX_ATTRIBUTE_VALUE.div_ceil(3) * 4))
            .pattern(Some(BASE64_PATTERN))
            .examples([serde_json::json!("AQID")]);
        OneOfBuilder::new()
            .item(typed("String", text))
            .item(typed("Number", number))
            .item(typed("Binary", binary))
            .description(Some(
                "An attribute: its type and its value, a string on the wire (at most 1,024 \
                 bytes; a Number has at most 38 significant digits and a magnitude from \
                 10^-128 to 10^126; a Binary value is standard base64, at most 1,024 bytes \
                 decoded)",
            ))
            .into()
    }
}

impl ToSchema for AttributeRequest {}

/// A message to send. Body and attributes together fit in the queue's `max_message_bytes`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
#[schema(example = json!({"body": "{\"order_id\":\"A-1001\"}", "attributes": {"event": {"type": "String", "value": "order.paid"}}}))]
pub(super) struct SendRequest {
    /// The body: at least one character, of those SQS allows.
    #[schema(
        min_length = 1,
        pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\uFFFE\\uFFFF]+$"
    )]
    body: String,
    /// Up to 20 attributes by name.
    #[schema(schema_with = attributes_to_send)]
    attributes: Option<Map<String, Value>>,
    /// Standard queues only: the message's own delay, instead of the queue's.
    #[schema(minimum = 0, maximum = 900)]
    delay_seconds: Option<u32>,
    /// FIFO queues only, required there: the message group.
    group_id: Option<String>,
    /// FIFO queues only: the deduplication id (else the body's SHA-256 with content-based
    /// deduplication).
    deduplication_id: Option<String>,
}

/// A receive. Every field is optional; an empty body takes every default.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct ReceiveRequest {
    /// The most messages to answer.
    #[schema(minimum = 1, maximum = 10, default = 1, example = 10)]
    max_messages: Option<u32>,
    /// Long-poll wait, in seconds. Default: the queue's `receive_wait_time_seconds`.
    #[schema(minimum = 0, maximum = 20, example = 20)]
    wait_time_seconds: Option<u32>,
    /// The lease, in seconds. Default: the queue's `visibility_timeout_seconds`.
    #[schema(minimum = 0, maximum = 43200, example = 60)]
    visibility_timeout_seconds: Option<u32>,
}

/// A visibility change of one message, counted from the change; 0 releases it.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct VisibilityRequest {
    /// The current receipt.
    #[schema(min_length = 1, example = "the-current-receipt-handle")]
    receipt_handle: String,
    /// Seconds from now.
    #[schema(minimum = 0, maximum = 43200, example = 120)]
    visibility_timeout_seconds: u32,
}

/// A batch of messages to send.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct SendBatchRequest {
    /// 1 to 10 entries with unique ids.
    #[schema(schema_with = send_entries)]
    entries: Vec<SendBatchEntry>,
}

/// One message of a send batch.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct SendBatchEntry {
    /// The entry's id, unique in the batch: its result carries it.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,80}$", min_length = 1, max_length = 80)]
    id: String,
    /// The body: at least one character, of those SQS allows.
    #[schema(
        min_length = 1,
        pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\uFFFE\\uFFFF]+$"
    )]
    body: String,
    /// Up to 20 attributes by name.
    #[schema(schema_with = attributes_to_send)]
    attributes: Option<Map<String, Value>>,
    /// Standard queues only: the message's own delay.
    #[schema(minimum = 0, maximum = 900)]
    delay_seconds: Option<u32>,
    /// FIFO queues only, required there: the message group.
    group_id: Option<String>,
    /// FIFO queues only: the deduplication id.
    deduplication_id: Option<String>,
}

/// A batch's entries: 1 to 10 objects with unique ids. Each is one `entry` (a schema name); an
/// object with a valid `id` that is not one fails alone (`invalid_argument` in `failed`), the
/// others still act. An entry without a valid `id`, or an id used twice, fails the request.
fn batch_entries_schema(entry: &str) -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{AnyOfBuilder, ArrayBuilder, ObjectBuilder, Type};
    let any_with_an_id = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "id",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some("^[A-Za-z0-9_-]{1,80}$")),
        )
        .required("id")
        .description(Some(
            "An entry that is not well-formed: it fails alone, with `invalid_argument`",
        ));
    ArrayBuilder::new()
        .items(
            AnyOfBuilder::new()
                .item(utoipa::openapi::Ref::from_schema_name(entry))
                .item(any_with_an_id),
        )
        .min_items(Some(1))
        .max_items(Some(10))
        .description(Some(
            "1 to 10 entries with unique ids; an entry that is not well-formed fails alone",
        ))
        .build()
}

fn send_entries() -> utoipa::openapi::schema::Array {
    batch_entries_schema("SendBatchEntry")
}

fn delete_entries() -> utoipa::openapi::schema::Array {
    batch_entries_schema("DeleteBatchEntry")
}

fn visibility_entries() -> utoipa::openapi::schema::Array {
    batch_entries_schema("VisibilityBatchEntry")
}

/// A batch of receipts to delete.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct DeleteBatchRequest {
    /// 1 to 10 entries with unique ids.
    #[schema(schema_with = delete_entries)]
    entries: Vec<DeleteBatchEntry>,
}

/// One receipt of a delete batch.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct DeleteBatchEntry {
    /// The entry's id, unique in the batch.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,80}$", min_length = 1, max_length = 80)]
    id: String,
    /// The current receipt.
    #[schema(min_length = 1)]
    receipt_handle: String,
}

/// A batch of visibility changes.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct VisibilityBatchRequest {
    /// 1 to 10 entries with unique ids.
    #[schema(schema_with = visibility_entries)]
    entries: Vec<VisibilityBatchEntry>,
}

/// One change of a visibility batch.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct VisibilityBatchEntry {
    /// The entry's id, unique in the batch.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,80}$", min_length = 1, max_length = 80)]
    id: String,
    /// The current receipt.
    #[schema(min_length = 1)]
    receipt_handle: String,
    /// Seconds from now; 0 releases the message.
    #[schema(minimum = 0, maximum = 43200)]
    visibility_timeout_seconds: u32,
}

/// The attributes of a message to send: up to 20, by name (1 to 256 bytes).
fn attributes_to_send() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{SchemaType, Type};
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .property_names(Some(
            utoipa::openapi::ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(MAX_ATTRIBUTE_NAME))
                .pattern(Some(NAME_PATTERN)),
        ))
        .additional_properties(Some(utoipa::openapi::Ref::from_schema_name(
            "AttributeRequest",
        )))
        .max_properties(Some(MAX_ATTRIBUTES))
        .build()
}

/// A queue's UUID: a string in format `uuid`.
pub(super) struct QueueId;

impl utoipa::PartialSchema for QueueId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .format(Some(utoipa::openapi::SchemaFormat::Custom(
                "uuid".to_owned(),
            )))
            .examples([serde_json::json!("0b5e2c1a-7f3d-4e61-9a0c-2d8f6b7e4a13")])
            .into()
    }
}

impl ToSchema for QueueId {}

// The answers.

/// A queue resource.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Queue)]
pub(super) struct QueueJson {
    /// The queue's UUID.
    #[schema(value_type = QueueId)]
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: QueueType,
    /// Its settings.
    pub settings: SettingsJson,
    /// When it was created, if the backend says.
    #[schema(required = true, format = DateTime)]
    pub created_at: Option<String>,
}

/// A queue's settings.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Settings)]
pub(super) struct SettingsJson {
    /// Delay before a new message's first delivery, in seconds.
    #[schema(maximum = 900)]
    pub delay_seconds: u32,
    /// Long-poll wait of a receive that gives none, in seconds.
    #[schema(maximum = 20)]
    pub receive_wait_time_seconds: u32,
    /// Lease of a receive that gives none, in seconds.
    #[schema(maximum = 43200)]
    pub visibility_timeout_seconds: u32,
    /// Largest message, body and attributes together, in bytes.
    #[schema(minimum = 1024, maximum = 262144)]
    pub max_message_bytes: u32,
    /// How long a message is kept, in seconds.
    #[schema(minimum = 60, maximum = 1209600)]
    pub retention_seconds: u32,
    /// Where messages received too often move, if anywhere.
    #[schema(required = true)]
    pub dead_letter_queue: Option<DeadLetterJson>,
    /// FIFO queues only: content-based deduplication.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub content_based_deduplication: Option<bool>,
}

/// A queue's dead-letter queue.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DeadLetterQueue)]
pub(super) struct DeadLetterJson {
    /// The dead-letter queue's UUID (`null` if it is no basaltic queue the gateway knows).
    #[schema(required = true, value_type = Option<QueueId>)]
    pub queue_id: Option<String>,
    /// Receives after which a message moves there.
    #[schema(minimum = 1, maximum = 1000)]
    pub max_receive_count: u32,
}

/// One queue.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct QueueResult {
    /// The queue.
    pub result: QueueJson,
}

/// The queues the key sees, by name.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct QueueList {
    /// The queues.
    pub queues: Vec<QueueJson>,
}

/// A message sent.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct SendResult {
    /// The message.
    pub result: SentMessage,
}

/// The id of a message sent.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct SentMessage {
    /// The message's id.
    pub message_id: String,
}

/// A received message.
// No `Debug`: it holds a receipt.
#[derive(Serialize, ToSchema)]
pub(super) struct ReceivedMessage {
    /// The message's id.
    pub message_id: String,
    /// The body.
    pub body: String,
    /// The attributes, by name.
    pub attributes: BTreeMap<String, AttributeJson>,
    /// The receipt of this receive: deletes the message or changes its visibility.
    pub receipt_handle: String,
    /// How many times it has been received, this time included.
    pub receive_count: u32,
    /// When the lease ends.
    #[schema(format = DateTime)]
    pub visible_at: String,
}

/// The answer of a receive: 0 to `max_messages` messages.
#[derive(Serialize, ToSchema)]
pub(super) struct ReceivedMessages {
    /// The messages.
    pub messages: Vec<ReceivedMessage>,
}

/// A message read without a lease.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct InspectedMessage {
    /// The message's id.
    pub message_id: String,
    /// The body.
    pub body: String,
    /// The attributes, by name.
    pub attributes: BTreeMap<String, AttributeJson>,
    /// How many times it has been received.
    pub receive_count: u32,
    /// When it was sent, if the backend says.
    #[schema(required = true, format = DateTime)]
    pub sent_at: Option<String>,
}

/// Messages read without a lease.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct InspectedMessages {
    /// The messages.
    pub messages: Vec<InspectedMessage>,
}

/// A batch's results: every entry is in one of the lists.
#[derive(Debug, Default, Serialize, ToSchema)]
pub(super) struct BatchResults {
    /// The entries that acted.
    pub successful: Vec<BatchSuccess>,
    /// The entries that did not, and why: retry only these.
    pub failed: Vec<BatchFailure>,
}

/// An entry that acted.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct BatchSuccess {
    /// The entry's id.
    pub id: String,
    /// Send batches only: the message's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub message_id: Option<String>,
}

/// An entry that did not act.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct BatchFailure {
    /// The entry's id.
    pub id: String,
    /// Why.
    pub code: BatchFailureCode,
    /// Why, for people.
    pub message: String,
}

/// Why a batch entry did not act.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum BatchFailureCode {
    /// The entry is not valid.
    InvalidArgument,
    /// The queue service refused it for now: retry it.
    Unavailable,
    /// The receipt is not the current one: nothing changed.
    ReceiptHandleStale,
    /// Not a receipt of this queue: nothing changed.
    ReceiptHandleInvalid,
}

/// A queue's metrics samples, oldest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Metrics)]
pub(super) struct MetricsJson {
    /// The queue's UUID.
    #[schema(value_type = QueueId)]
    pub queue_id: String,
    /// Seconds between two samples.
    pub interval_seconds: u64,
    /// The samples of the last day, oldest first.
    pub samples: Vec<SampleJson>,
}

/// One sample; a sample the gateway could not take is a gap: `null`s, never zeros.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Sample)]
pub(super) struct SampleJson {
    /// When it was taken.
    #[schema(format = DateTime)]
    pub at: String,
    /// Messages visible.
    #[schema(required = true)]
    pub visible: Option<u64>,
    /// Messages received and not yet deleted or visible again.
    #[schema(required = true)]
    pub in_flight: Option<u64>,
    /// Messages not yet delivered because of a delay.
    #[schema(required = true)]
    pub delayed: Option<u64>,
    /// Age of the oldest message, in seconds (`null` also when the queue is empty).
    #[schema(required = true)]
    pub oldest_message_age_seconds: Option<u64>,
    /// Deliveries handed out again since the sample before.
    #[schema(required = true)]
    pub repeated_receives: Option<u64>,
}
