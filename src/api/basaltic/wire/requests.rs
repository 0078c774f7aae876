//! basaltic's request bodies: one table each, which the parsers (`wire`) read fields through and
//! the OpenAPI document prints, so the document's bounds are the parser's.

use super::*;
use crate::api::common::body_shape::{
    Choice, Custom, Field, Flag, Integer, Items, List, Nested, SchemaName, Shape, Text, body_schema,
};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

/// A queue's type.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(in crate::api::basaltic) enum QueueType {
    /// At-least-once delivery, best-effort order.
    Standard,
    /// Ordered per message group, deduplicated.
    Fifo,
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

/// The receives after which a message moves to the dead-letter queue, most and default.
const MAX_RECEIVE_COUNT: u32 = 1000;
const DEFAULT_RECEIVE_COUNT: u32 = 5;
/// The longest entry id of a batch.
const MAX_ENTRY_ID: usize = 80;
/// The entries a batch takes.
const MAX_ENTRIES: usize = limits::MAX_BATCH as usize;

// The queue bodies.

pub(super) const NAME: Field<Text> = Field::required(
    "name",
    "1 to 57 letters, digits or `-`, unique among your queues.",
    Text::word(1, MAX_NAME, "-").example("orders"),
);
pub(super) const TYPE: Field<Choice> = Field::optional(
    "type",
    "`standard` (the default) or `fifo`.",
    Choice {
        names: &["standard", "fifo"],
        default: "standard",
        schema: <QueueType as ToSchema>::name,
        null_is_default: false,
    },
);
pub(super) const NEW_SETTINGS: Field<Nested> = Field::optional(
    "settings",
    "Settings; absent ones take their defaults.",
    Nested(<SettingsRequest as ToSchema>::name),
);

/// The body that creates a queue.
pub(super) const NEW_QUEUE: Shape = Shape {
    doc: "The body that creates a queue.",
    fields: &[&NAME, &TYPE, &NEW_SETTINGS],
    example: None,
};

/// The body that creates a queue, in the document.
pub(in crate::api::basaltic) enum NewQueueRequest {}
body_schema!(NewQueueRequest, NEW_QUEUE);

pub(super) const CHANGED_SETTINGS: Field<Nested> = Field::required(
    "settings",
    "The settings to change.",
    Nested(<SettingsRequest as ToSchema>::name),
);

/// A settings change.
pub(super) const SETTINGS_CHANGE: Shape = Shape {
    doc: "A settings change: the settings given change, the others stay.",
    fields: &[&CHANGED_SETTINGS],
    example: None,
};

/// A settings change, in the document.
pub(in crate::api::basaltic) enum SettingsChangeRequest {}
body_schema!(SettingsChangeRequest, SETTINGS_CHANGE);

pub(super) const QUEUE_DELAY: Field<Integer> = Field::optional(
    "delay_seconds",
    "Delay before a new message's first delivery, in seconds (default 0).",
    Integer::from_to(0, limits::MAX_DELAY_SECONDS),
);
pub(super) const QUEUE_WAIT: Field<Integer> = Field::optional(
    "receive_wait_time_seconds",
    "Long-poll wait of a receive that gives none, in seconds (default 0).",
    Integer::from_to(0, limits::MAX_WAIT_SECONDS),
);
pub(super) const QUEUE_VISIBILITY: Field<Integer> = Field::optional(
    "visibility_timeout_seconds",
    "Lease of a receive that gives none, in seconds (default 30).",
    Integer::from_to(0, limits::MAX_VISIBILITY_SECONDS),
);
pub(super) const QUEUE_MESSAGE_BYTES: Field<Integer> = Field::optional(
    "max_message_bytes",
    "Largest message, body and attributes together, in bytes (default and most 262,144:\n\
     256 KiB).",
    Integer::from_to(limits::MIN_MESSAGE_BYTES, MAX_MESSAGE_BYTES),
);
pub(super) const QUEUE_RETENTION: Field<Integer> = Field::optional(
    "retention_seconds",
    "How long a message is kept, in seconds (default 345,600: 4 days).",
    Integer::from_to(limits::MIN_RETENTION_SECONDS, limits::MAX_RETENTION_SECONDS),
);
pub(super) const CONTENT_DEDUPLICATION: Field<Flag> = Field::optional(
    "content_based_deduplication",
    "FIFO queues only: deduplicate by the body's SHA-256 when no `deduplication_id` is given.",
    Flag::ANY,
);
pub(super) const DEAD_LETTER_QUEUE: Field<Nested> = Field::optional(
    "dead_letter_queue",
    "Where messages received too often move; its queue takes the key's `send` permission. In a change, `null` takes it away.",
    Nested(<DeadLetterRequest as ToSchema>::name),
);

/// Queue settings.
pub(super) const SETTINGS: Shape = Shape {
    doc: "Queue settings to set; each is optional.",
    fields: &[
        &QUEUE_DELAY,
        &QUEUE_WAIT,
        &QUEUE_VISIBILITY,
        &QUEUE_MESSAGE_BYTES,
        &QUEUE_RETENTION,
        &CONTENT_DEDUPLICATION,
        &DEAD_LETTER_QUEUE,
    ],
    example: None,
};

/// Queue settings, in the document.
pub(in crate::api::basaltic) enum SettingsRequest {}
body_schema!(SettingsRequest, SETTINGS);

pub(super) const DEAD_LETTER_ID: Field<Text> = Field::required(
    "queue_id",
    "The dead-letter queue's UUID.",
    Text::uuid()
        .named(<QueueId as ToSchema>::name)
        .refused_as("must be a queue UUID"),
);
pub(super) const MAX_RECEIVES: Field<Integer> = Field::optional(
    "max_receive_count",
    "Receives after which a message moves there.",
    Integer::from_to(1, MAX_RECEIVE_COUNT).default(DEFAULT_RECEIVE_COUNT),
);

/// A dead-letter queue to set.
pub(super) const DEAD_LETTER: Shape = Shape {
    doc: "A dead-letter queue to set.",
    fields: &[&DEAD_LETTER_ID, &MAX_RECEIVES],
    example: None,
};

/// A dead-letter queue to set, in the document.
pub(in crate::api::basaltic) enum DeadLetterRequest {}
body_schema!(DeadLetterRequest, DEAD_LETTER);

// The message bodies.

pub(super) const BODY: Field<Text> = Field::required(
    "body",
    "The body: at least one character, of those SQS allows.",
    Text::core(TEXT_PATTERN).refused_as("is required, a string"),
);
pub(super) const ATTRIBUTES: Field<Custom> = Field::optional(
    "attributes",
    "Up to 20 attributes by name.",
    Custom(attributes_to_send),
);
pub(super) const SEND_DELAY: Field<Integer> = Field::optional(
    "delay_seconds",
    "Standard queues only: the message's own delay, instead of the queue's.",
    Integer::from_to(0, limits::MAX_DELAY_SECONDS),
);
pub(super) const GROUP_ID: Field<Text> = Field::optional(
    "group_id",
    "FIFO queues only, required there: the message group.",
    Text::any(),
);
pub(super) const SEND_DEDUPLICATION_ID: Field<Text> = Field::optional(
    "deduplication_id",
    "FIFO queues only: the deduplication id (else the body's SHA-256 with content-based\n\
     deduplication).",
    Text::any(),
);

/// A message to send.
pub(super) const SEND: Shape = Shape {
    doc: "A message to send. Body and attributes together fit in the queue's `max_message_bytes`.",
    fields: &[
        &BODY,
        &ATTRIBUTES,
        &SEND_DELAY,
        &GROUP_ID,
        &SEND_DEDUPLICATION_ID,
    ],
    example: Some(|| {
        serde_json::json!({
            "body": "{\"order_id\":\"A-1001\"}",
            "attributes": {"event": {"type": "String", "value": "order.paid"}},
        })
    }),
};

/// A message to send, in the document.
pub(in crate::api::basaltic) enum SendRequest {}
body_schema!(SendRequest, SEND);

pub(super) const MAX_MESSAGES: Field<Integer> = Field::optional(
    "max_messages",
    "The most messages to answer.",
    Integer::from_to(1, limits::MAX_BATCH)
        .default(1)
        .example(10),
);
pub(super) const WAIT: Field<Integer> = Field::optional(
    "wait_time_seconds",
    "Long-poll wait, in seconds. Default: the queue's `receive_wait_time_seconds`.",
    Integer::from_to(0, limits::MAX_WAIT_SECONDS).example(20),
);
pub(super) const LEASE: Field<Integer> = Field::optional(
    "visibility_timeout_seconds",
    "The lease, in seconds. Default: the queue's `visibility_timeout_seconds`.",
    Integer::from_to(0, limits::MAX_VISIBILITY_SECONDS).example(60),
);

/// A receive.
pub(super) const RECEIVE: Shape = Shape {
    doc: "A receive. Every field is optional; an empty body takes every default.",
    fields: &[&MAX_MESSAGES, &WAIT, &LEASE],
    example: None,
};

/// A receive, in the document.
pub(in crate::api::basaltic) enum ReceiveRequest {}
body_schema!(ReceiveRequest, RECEIVE);

/// A receipt handle: the parser takes any string but an empty one.
const RECEIPT: Text = Text::any().least(1).refused_as("is required, a string");

pub(super) const RECEIPT_HANDLE: Field<Text> = Field::required(
    "receipt_handle",
    "The current receipt.",
    RECEIPT.example("the-current-receipt-handle"),
);
pub(super) const NEW_VISIBILITY: Field<Integer> = Field::required(
    "visibility_timeout_seconds",
    "Seconds from now.",
    Integer::from_to(0, limits::MAX_VISIBILITY_SECONDS).example(120),
);

/// A visibility change.
pub(super) const VISIBILITY: Shape = Shape {
    doc: "A visibility change of one message, counted from the change; 0 releases it.",
    fields: &[&RECEIPT_HANDLE, &NEW_VISIBILITY],
    example: None,
};

/// A visibility change, in the document.
pub(in crate::api::basaltic) enum VisibilityRequest {}
body_schema!(VisibilityRequest, VISIBILITY);

// The batches.

/// A batch request's table: its body (`{"entries": [...]}`), its entries and their `id`.
pub(in crate::api::basaltic) struct Batch {
    pub(super) request: Shape,
    pub(super) entries: &'static Field<List>,
    pub(super) id: &'static Field<Text>,
}

/// An entry's id: letters, digits, `-` and `_`.
const ENTRY_ID_TEXT: Text = Text::word(1, MAX_ENTRY_ID, "-_");

/// A batch's `entries`: 1 to 10 of `items` (an entry of its shape, or one that is not).
const fn entries(items: fn() -> RefOr<Schema>) -> Field<List> {
    Field::required(
        "entries",
        "1 to 10 entries with unique ids; an entry that is not well-formed fails alone",
        List::of(Items::Schema(items), 1, MAX_ENTRIES),
    )
}

/// What a batch's entries' schema lists: each one `entry` (a schema name) or an object with a
/// valid `id` that is not one, which fails alone (`invalid_argument` in `failed`) while the
/// others still act. An entry without a valid `id`, or an id used twice, fails the request.
fn entry_or_malformed(entry: SchemaName, id: &Field<Text>) -> RefOr<Schema> {
    use utoipa::openapi::schema::{AnyOfBuilder, ObjectBuilder, Type};
    let any_with_an_id = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            id.name,
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(id.pattern()),
        )
        .required(id.name)
        .description(Some(
            "An entry that is not well-formed: it fails alone, with `invalid_argument`",
        ));
    AnyOfBuilder::new()
        .item(utoipa::openapi::Ref::from_schema_name(entry()))
        .item(any_with_an_id)
        .into()
}

pub(super) const SEND_ENTRY_ID: Field<Text> = Field::required(
    "id",
    "The entry's id, unique in the batch: its result carries it.",
    ENTRY_ID_TEXT,
);
pub(super) const ENTRY_DELAY: Field<Integer> = Field::optional(
    "delay_seconds",
    "Standard queues only: the message's own delay.",
    Integer::from_to(0, limits::MAX_DELAY_SECONDS),
);
pub(super) const ENTRY_DEDUPLICATION_ID: Field<Text> = Field::optional(
    "deduplication_id",
    "FIFO queues only: the deduplication id.",
    Text::any(),
);

/// The entries of a batch: messages to send.
const SEND_ENTRIES: Field<List> =
    entries(|| entry_or_malformed(<SendBatchEntry as ToSchema>::name, &SEND_ENTRY_ID));

/// A batch of messages to send.
pub(in crate::api::basaltic) const SEND_BATCH: Batch = Batch {
    request: Shape {
        doc: "A batch of messages to send.",
        fields: &[&SEND_ENTRIES],
        example: None,
    },
    entries: &SEND_ENTRIES,
    id: &SEND_ENTRY_ID,
};

/// A batch of messages to send, in the document.
pub(in crate::api::basaltic) enum SendBatchRequest {}
body_schema!(SendBatchRequest, SEND_BATCH.request);

/// One message of a send batch.
pub(super) const SEND_ENTRY: Shape = Shape {
    doc: "One message of a send batch.",
    fields: &[
        &SEND_ENTRY_ID,
        &BODY,
        &ATTRIBUTES,
        &ENTRY_DELAY,
        &GROUP_ID,
        &ENTRY_DEDUPLICATION_ID,
    ],
    example: None,
};

/// One message of a send batch, in the document.
pub(in crate::api::basaltic) enum SendBatchEntry {}
body_schema!(SendBatchEntry, SEND_ENTRY);

pub(super) const ENTRY_ID: Field<Text> =
    Field::required("id", "The entry's id, unique in the batch.", ENTRY_ID_TEXT);
pub(super) const ENTRY_RECEIPT: Field<Text> =
    Field::required("receipt_handle", "The current receipt.", RECEIPT);

/// The entries of a batch: receipts to delete.
const DELETE_ENTRIES: Field<List> =
    entries(|| entry_or_malformed(<DeleteBatchEntry as ToSchema>::name, &ENTRY_ID));

/// A batch of receipts to delete.
pub(in crate::api::basaltic) const DELETE_BATCH: Batch = Batch {
    request: Shape {
        doc: "A batch of receipts to delete.",
        fields: &[&DELETE_ENTRIES],
        example: None,
    },
    entries: &DELETE_ENTRIES,
    id: &ENTRY_ID,
};

/// A batch of receipts to delete, in the document.
pub(in crate::api::basaltic) enum DeleteBatchRequest {}
body_schema!(DeleteBatchRequest, DELETE_BATCH.request);

/// One receipt of a delete batch.
pub(super) const DELETE_ENTRY: Shape = Shape {
    doc: "One receipt of a delete batch.",
    fields: &[&ENTRY_ID, &ENTRY_RECEIPT],
    example: None,
};

/// One receipt of a delete batch, in the document.
pub(in crate::api::basaltic) enum DeleteBatchEntry {}
body_schema!(DeleteBatchEntry, DELETE_ENTRY);

pub(super) const ENTRY_VISIBILITY: Field<Integer> = Field::required(
    "visibility_timeout_seconds",
    "Seconds from now; 0 releases the message.",
    Integer::from_to(0, limits::MAX_VISIBILITY_SECONDS),
);

/// The entries of a batch: visibility changes.
const VISIBILITY_ENTRIES: Field<List> =
    entries(|| entry_or_malformed(<VisibilityBatchEntry as ToSchema>::name, &ENTRY_ID));

/// A batch of visibility changes.
pub(in crate::api::basaltic) const VISIBILITY_BATCH: Batch = Batch {
    request: Shape {
        doc: "A batch of visibility changes.",
        fields: &[&VISIBILITY_ENTRIES],
        example: None,
    },
    entries: &VISIBILITY_ENTRIES,
    id: &ENTRY_ID,
};

/// A batch of visibility changes, in the document.
pub(in crate::api::basaltic) enum VisibilityBatchRequest {}
body_schema!(VisibilityBatchRequest, VISIBILITY_BATCH.request);

/// One change of a visibility batch.
pub(super) const VISIBILITY_ENTRY: Shape = Shape {
    doc: "One change of a visibility batch.",
    fields: &[&ENTRY_ID, &ENTRY_RECEIPT, &ENTRY_VISIBILITY],
    example: None,
};

/// One change of a visibility batch, in the document.
pub(in crate::api::basaltic) enum VisibilityBatchEntry {}
body_schema!(VisibilityBatchEntry, VISIBILITY_ENTRY);

/// The attributes of a message to send: up to 20, by name (1 to 256 bytes).
fn attributes_to_send() -> RefOr<Schema> {
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
            <AttributeRequest as ToSchema>::name(),
        )))
        .max_properties(Some(MAX_ATTRIBUTES))
        .into()
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

// The redrive body.

pub(super) const REDRIVE_DESTINATION: Field<Text> = Field::optional(
    "destination_queue_id",
    "The queue the messages go to (its UUID); left out, each goes back to the queue it was \
     dead-lettered from.",
    Text::uuid()
        .named(<QueueId as ToSchema>::name)
        .refused_as("must be a queue UUID"),
);
pub(super) const REDRIVE_RATE: Field<Integer> = Field::optional(
    "max_messages_per_second",
    "The most messages moved a second (left out: as fast as the backend moves them).",
    Integer::from_to(1, limits::MAX_MOVE_RATE),
);

/// A redrive: where to and how fast.
pub(super) const REDRIVE: Shape = Shape {
    doc: "Moves the messages of a dead-letter queue back to where they came from, or to a queue named.",
    fields: &[&REDRIVE_DESTINATION, &REDRIVE_RATE],
    example: None,
};

/// A redrive, in the document.
pub(in crate::api::basaltic) enum RedriveRequest {}
body_schema!(RedriveRequest, REDRIVE);

/// The most messages one move names.
pub(super) const MOST_MOVED: usize = 100;

pub(super) const MOVE_DESTINATION: Field<Text> = Field::required(
    "destination_queue_id",
    "The queue the messages go to (its UUID): another queue of the same type.",
    Text::uuid()
        .named(<QueueId as ToSchema>::name)
        .refused_as("must be a queue UUID"),
);
pub(super) const MOVE_MESSAGES: Field<List> = Field::required(
    "messages",
    "1 to 100 messages, each named by its id and position as inspection gives them",
    List::of(Items::Named(<MoveEntry as ToSchema>::name), 1, MOST_MOVED),
);

/// A move of messages chosen by inspection.
pub(super) const MOVE: Shape = Shape {
    doc: "Moves the messages named to another queue: each leaves this queue and enters the destination at once.",
    fields: &[&MOVE_DESTINATION, &MOVE_MESSAGES],
    example: None,
};

/// A move, in the document.
pub(in crate::api::basaltic) enum MoveRequest {}
body_schema!(MoveRequest, MOVE);

pub(super) const MOVE_MESSAGE_ID: Field<Text> =
    Field::required("message_id", "The message's id.", Text::word(1, 128, "-_"));
pub(super) const MOVE_POSITION: Field<Text> = Field::required(
    "position",
    "The message's position, as inspection gives it.",
    Text::core("^[0-9]{1,19}$"),
);

/// One message of a move.
pub(super) const MOVE_ENTRY: Shape = Shape {
    doc: "One message to move.",
    fields: &[&MOVE_MESSAGE_ID, &MOVE_POSITION],
    example: None,
};

/// One message of a move, in the document.
pub(in crate::api::basaltic) enum MoveEntry {}
body_schema!(MoveEntry, MOVE_ENTRY);
