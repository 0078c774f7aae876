//! basaltic's request bodies as its OpenAPI document shows them.

use super::*;

// The request bodies as the OpenAPI document shows them. Bodies are parsed by hand above (errors
// that name a field but never echo a value); these types only describe them, and the document's
// tests hold each documented range and default to what the parser does.

/// A queue's type.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(in crate::api::basaltic) enum QueueType {
    /// At-least-once delivery, best-effort order.
    Standard,
    /// Ordered per message group, deduplicated.
    Fifo,
}

/// The body that creates a queue.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(in crate::api::basaltic) struct NewQueueRequest {
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
pub(in crate::api::basaltic) struct SettingsChangeRequest {
    /// The settings to change.
    settings: SettingsRequest,
}

/// Queue settings to set; each is optional.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(in crate::api::basaltic) struct SettingsRequest {
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
pub(in crate::api::basaltic) struct DeadLetterRequest {
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
pub(in crate::api::basaltic) struct AttributeJson {
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
pub(in crate::api::basaltic) struct AttributeRequest;

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
pub(in crate::api::basaltic) struct SendRequest {
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
pub(in crate::api::basaltic) struct ReceiveRequest {
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
pub(in crate::api::basaltic) struct VisibilityRequest {
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
pub(in crate::api::basaltic) struct SendBatchRequest {
    /// 1 to 10 entries with unique ids.
    #[schema(schema_with = send_entries)]
    entries: Vec<SendBatchEntry>,
}

/// One message of a send batch.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(in crate::api::basaltic) struct SendBatchEntry {
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
pub(in crate::api::basaltic) struct DeleteBatchRequest {
    /// 1 to 10 entries with unique ids.
    #[schema(schema_with = delete_entries)]
    entries: Vec<DeleteBatchEntry>,
}

/// One receipt of a delete batch.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(in crate::api::basaltic) struct DeleteBatchEntry {
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
pub(in crate::api::basaltic) struct VisibilityBatchRequest {
    /// 1 to 10 entries with unique ids.
    #[schema(schema_with = visibility_entries)]
    entries: Vec<VisibilityBatchEntry>,
}

/// One change of a visibility batch.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(in crate::api::basaltic) struct VisibilityBatchEntry {
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
pub(in crate::api::basaltic) struct QueueId;

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
