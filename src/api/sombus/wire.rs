//! sombus's wire: every request and answer body of the token service, the pull routes and the
//! admin API as types (their `utoipa` schemas are the OpenAPI document's, so the document is the
//! code's), the receive query with its documented defaults and ranges, and how an SQS message
//! maps onto the message shape (the body is the producer's envelope; `message_type`,
//! `correlation_id`, `topic` and `producer_id` come from message attributes of those names, else
//! from the envelope's fields).

use super::error::SombusError;
use crate::api::common::body_shape::{Field, Integer, Items, List, Shape, body_schema};
use crate::api::common::openapi::ResponseMap;
use crate::core::gateway::ReceiveOptions;
use crate::core::model::{AttributeValue, BackendMessage, Delivery, HandleOutcome};
use crate::core::sqs_limits as limits;
use crate::core::trace_context::TraceContext;
use crate::credentials::oauth::{AuditEntry, Connection, ConnectionStatus, Role};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use utoipa::IntoResponses;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::{IntoParams, ToSchema};

mod admin;
pub use admin::*;

/// The longest visibility timeout or release delay, seconds (12 hours).
pub const MAX_VISIBILITY: u32 = limits::MAX_VISIBILITY_SECONDS;
/// The longest attempt id.
const MAX_ATTEMPT_LEN: usize = 128;

/// Parses `max`, `wait`, `visibility` and `attempt` (defaults 10, 20, 60, none).
pub fn parse_receive_query(query: Option<&str>) -> Result<ReceiveOptions, SombusError> {
    let mut seen = BTreeSet::new();
    let mut options = ReceiveOptions {
        max_messages: 10,
        wait_seconds: Some(20),
        visibility_timeout_seconds: Some(60),
        attempt_id: None,
        // A connection with as many messages in flight as its queue allows waits out its long
        // poll (and answers as soon as room frees) instead of being refused.
        wait_out_over_limit: true,
        // "While one of them is received and not yet acknowledged, released or timed out, the
        // next ones of that story wait": within one receive too.
        one_per_group: true,
        keep_claims: false,
    };
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if !seen.insert(name.clone().into_owned()) {
            return Err(SombusError::bad_request(format!(
                "the query parameter `{}` is given twice",
                known_name(&name)?
            )));
        }
        match name.as_ref() {
            "max" => options.max_messages = integer("max", &value, 1, limits::MAX_BATCH)?,
            "wait" => {
                options.wait_seconds = Some(integer("wait", &value, 0, limits::MAX_WAIT_SECONDS)?)
            }
            "visibility" => {
                options.visibility_timeout_seconds =
                    Some(integer("visibility", &value, 0, MAX_VISIBILITY)?)
            }
            "attempt" => {
                if value.is_empty()
                    || value.len() > MAX_ATTEMPT_LEN
                    || !value.bytes().all(|byte| byte.is_ascii_graphic())
                {
                    return Err(SombusError::bad_request(
                        "attempt must be 1 to 128 printable ASCII characters, no spaces",
                    ));
                }
                options.attempt_id = Some(value.into_owned());
            }
            other => {
                known_name(other)?;
            }
        }
    }
    Ok(options)
}

/// A known parameter's name, or the refusal of an unknown one (which is not echoed).
fn known_name(name: &str) -> Result<&'static str, SombusError> {
    ["max", "wait", "visibility", "attempt"]
        .into_iter()
        .find(|known| *known == name)
        .ok_or_else(|| {
            SombusError::bad_request(
                "unknown query parameter; expected only: max, wait, visibility, attempt",
            )
        })
}

fn integer(name: &str, value: &str, min: u32, max: u32) -> Result<u32, SombusError> {
    value
        .parse::<u32>()
        .ok()
        .filter(|number| (min..=max).contains(number) && !value.starts_with('+'))
        .ok_or_else(|| {
            SombusError::bad_request(format!("{name} must be an integer from {min} to {max}"))
        })
}

const RECEIPT_HANDLES: Field<List> = Field::required(
    "receipt_handles",
    "1 to 10 distinct receipt handles.",
    List::of(Items::Text, 1, limits::MAX_BATCH as usize)
        .distinct()
        .non_empty_items(),
);
const DELAY_SECONDS: Field<Integer> = Field::optional(
    "delay_seconds",
    "Seconds before the messages are visible again (0: at once).",
    Integer::from_to(0, MAX_VISIBILITY).default(0),
);

/// The ack body.
const ACK: Shape = Shape {
    doc: "The messages to acknowledge (delete).",
    fields: &[&RECEIPT_HANDLES],
    example: Some(|| serde_json::json!({"receipt_handles": ["AQEB…", "AQEB…"]})),
};

/// The ack body in the document.
pub enum AckRequest {}
body_schema!(AckRequest, ACK);

/// The nack body.
const NACK: Shape = Shape {
    doc: "The messages to release, and when they are visible again.",
    fields: &[&RECEIPT_HANDLES, &DELAY_SECONDS],
    example: Some(|| serde_json::json!({"receipt_handles": ["AQEB…"], "delay_seconds": 30})),
};

/// The nack body in the document.
pub enum NackRequest {}
body_schema!(NackRequest, NACK);

/// Parses an ack body, or with `with_delay` a nack body: the handles, and the delay (0 for an
/// ack).
pub fn parse_handles(body: &[u8], with_delay: bool) -> Result<(Vec<String>, u32), SombusError> {
    let shape = if with_delay { &NACK } else { &ACK };
    let object = shape.parse(body, false)?;
    let handles = RECEIPT_HANDLES.strings(&object, "")?;
    let delay = if with_delay {
        DELAY_SECONDS.value(&object, "")?
    } else {
        0
    };
    Ok((handles.into_iter().map(str::to_owned).collect(), delay))
}

/// The path of the pull routes: `/v1/tenants/{tenant}/consumers/{client}/…`.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ConsumerPath {
    /// Your workspace id: your token's `tenant` claim.
    #[param(min_length = 1, example = "ws-3f9a")]
    pub tenant: String,
    /// Your client id: your consumer connection's id (the token's `sub` claim).
    #[param(min_length = 1, example = "story-consumer")]
    pub client: String,
}

/// The path of a workspace's admin routes: `/v1/admin/workspaces/{workspace}/…`.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct WorkspacePath {
    /// The workspace id: 1 to 36 letters, digits or `-`.
    #[param(pattern = "^[A-Za-z0-9-]{1,36}$", example = "ws-3f9a")]
    pub workspace: String,
}

/// The path of a connection's admin routes: `/v1/admin/workspaces/{workspace}/connections/{client}/…`.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ConnectionPath {
    /// The workspace id: 1 to 36 letters, digits or `-`.
    #[param(pattern = "^[A-Za-z0-9-]{1,36}$", example = "ws-3f9a")]
    pub workspace: String,
    /// The connection's client id (`{workspace}.{chosen}` for an id chosen at its create, or a
    /// generated one), or the chosen part alone.
    #[param(
        pattern = "^([A-Za-z0-9-]{1,36}[.])?[A-Za-z0-9-]{1,25}$",
        example = "story-consumer"
    )]
    pub client: String,
}

/// The receive query: `GET …/messages?max=&wait=&visibility=&attempt=` (parsed by
/// [`parse_receive_query`], which holds to these defaults and ranges).
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReceiveQuery {
    /// At most this many messages.
    #[param(default = 10, minimum = 1, maximum = 10)]
    pub max: Option<u32>,
    /// Long poll: seconds to wait for a message when none is ready. 0 answers at once.
    #[param(default = 20, minimum = 0, maximum = 20)]
    pub wait: Option<u32>,
    /// Seconds the received messages stay hidden from other receives while you handle them.
    #[param(default = 60, minimum = 0, maximum = 43200)]
    pub visibility: Option<u32>,
    /// A receive attempt id: 1 to 128 printable ASCII characters, no spaces. If the answer is
    /// lost, retry with the same id within five minutes to get the same messages back instead of
    /// waiting for them to become visible again.
    #[param(
        min_length = 1,
        max_length = 128,
        pattern = "^[!-~]{1,128}$",
        example = "poll-7f3a"
    )]
    pub attempt: Option<String>,
}

/// The receive answer.
#[derive(Serialize, ToSchema)]
#[schema(example = json!({"messages": [{
    "receipt_handle": "AQEB…",
    "message_type": "story.context",
    "correlation_id": "0192f5a0-…",
    "topic": "som.story.context",
    "producer_id": "c…",
    "receive_count": 1,
    "enqueued_at": "2026-09-25T10:15:02.114Z",
    "envelope": {"som_version": "1.0.0", "message_id": "…", "payload": {}}
}]}))]
pub struct Received {
    /// The messages, none when none arrived within `wait`.
    #[schema(max_items = 10)]
    pub messages: Vec<PulledMessage>,
}

/// One message as the pull API shows it.
// No `Debug`: it holds a receipt handle.
#[derive(Serialize, ToSchema)]
pub struct PulledMessage {
    /// What you acknowledge or release it with; only valid for this receive.
    #[schema(min_length = 1)]
    receipt_handle: String,
    /// The envelope's message type (or the message attribute of that name).
    #[schema(required = true)]
    message_type: Option<String>,
    /// The story: messages of one correlation id arrive in the order the bus accepted them.
    #[schema(required = true)]
    correlation_id: Option<String>,
    /// The topic it was published on.
    #[schema(required = true)]
    topic: Option<String>,
    /// The producer that published it.
    #[schema(required = true)]
    producer_id: Option<String>,
    /// Deliveries of this message, this one included; more than 1 means it was delivered before
    /// and not acknowledged in time.
    #[schema(minimum = 1)]
    receive_count: u32,
    /// When the bus accepted it (RFC 3339, milliseconds, UTC).
    #[schema(format = DateTime)]
    enqueued_at: String,
    /// The producer's message, as it was accepted (`null` when the body is not a JSON object).
    #[schema(value_type = Option<Object>, required = true)]
    envelope: Value,
    /// Only when the body is not a JSON object: the body as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    body: Option<String>,
    /// The producer's W3C trace context, when the message carries one (from its
    /// `AWSTraceHeader`, its `traceparent` attribute, or the sending request's header).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(
        nullable = false,
        example = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
    )]
    traceparent: Option<String>,
    /// The producer's W3C `tracestate`, when its context has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    tracestate: Option<String>,
}

impl PulledMessage {
    /// A delivery as the pull API shows it; `received_at` stands in for a send time the
    /// backend did not give.
    pub fn new(delivery: Delivery, received_at: DateTime<Utc>) -> Self {
        let Delivery {
            message,
            receipt_handle,
            ..
        } = delivery;
        let envelope = match serde_json::from_str::<Value>(&message.body) {
            Ok(Value::Object(envelope)) => Some(envelope),
            _ => None,
        };
        let field = |name: &str| mapped_field(&message, envelope.as_ref(), name);
        let correlation_id = field("correlation_id").or_else(|| message.group_id.clone());
        let (traceparent, tracestate) = TraceContext::w3c_of(&message);
        Self {
            // URL-safe, as the REST dialects give handles (only the SQS endpoint gives AWS's).
            receipt_handle: receipt_handle.url_safe().expose().to_owned(),
            message_type: field("message_type"),
            topic: field("topic"),
            producer_id: field("producer_id"),
            correlation_id,
            receive_count: message.receive_count,
            enqueued_at: message
                .sent_at
                .unwrap_or(received_at)
                .to_rfc3339_opts(SecondsFormat::Millis, true),
            body: envelope.is_none().then(|| message.body.clone()),
            envelope: envelope.map_or(Value::Null, Value::Object),
            traceparent,
            tracestate,
        }
    }
}

/// A routing field: the string message attribute of that name, else the envelope's string field.
fn mapped_field(
    message: &BackendMessage,
    envelope: Option<&Map<String, Value>>,
    name: &str,
) -> Option<String> {
    let from_attribute = message
        .attributes
        .get(name)
        .filter(|attribute| attribute.data_type.starts_with("String"))
        .and_then(|attribute| match &attribute.value {
            AttributeValue::Text(text) => Some(text.clone()),
            AttributeValue::Bytes(_) => None,
        });
    from_attribute.or_else(|| {
        envelope
            .and_then(|envelope| envelope.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
}

/// Why a handle failed.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub enum HandleFailure {
    /// Malformed, or not from your queue.
    ReceiptHandleIsInvalid,
}

/// A handle that did not succeed.
#[derive(Serialize, ToSchema)]
pub struct FailedHandle {
    /// The handle as it was sent.
    receipt_handle: String,
    /// Why.
    code: HandleFailure,
    /// Why, in words.
    message: &'static str,
}

/// The ack answer: each handle in one list (200 even when some fail).
#[derive(Serialize, ToSchema)]
#[schema(example = json!({"acked": ["AQEB…"], "failed": [{"receipt_handle": "AQEB…", "code": "ReceiptHandleIsInvalid", "message": "the receipt handle is malformed or not from your queue"}]}))]
pub struct Acked {
    /// Handles done with: their messages are removed.
    acked: Vec<String>,
    /// Handles that failed, each with why.
    failed: Vec<FailedHandle>,
}

/// The nack answer: each handle in one list (200 even when some fail).
#[derive(Serialize, ToSchema)]
#[schema(example = json!({"nacked": ["AQEB…"], "failed": []}))]
pub struct Nacked {
    /// Handles released: their messages are visible again at once or after `delay_seconds`.
    nacked: Vec<String>,
    /// Handles that failed, each with why.
    failed: Vec<FailedHandle>,
}

/// Sorts handles by their outcomes: done (a stale handle is from this queue and well formed:
/// its delivery is over, so there is nothing left to do with it) or failed.
fn sort_handles(
    handles: Vec<String>,
    outcomes: &[HandleOutcome],
) -> (Vec<String>, Vec<FailedHandle>) {
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for (handle, outcome) in handles.into_iter().zip(outcomes) {
        match outcome {
            HandleOutcome::Ok | HandleOutcome::Stale | HandleOutcome::Expired => done.push(handle),
            HandleOutcome::Invalid => failed.push(FailedHandle {
                receipt_handle: handle,
                code: HandleFailure::ReceiptHandleIsInvalid,
                message: "the receipt handle is malformed or not from your queue",
            }),
        }
    }
    (done, failed)
}

impl Acked {
    /// The answer to an ack of `handles` with these outcomes.
    pub fn new(handles: Vec<String>, outcomes: &[HandleOutcome]) -> Self {
        let (acked, failed) = sort_handles(handles, outcomes);
        Self { acked, failed }
    }
}

impl Nacked {
    /// The answer to a nack of `handles` with these outcomes.
    pub fn new(handles: Vec<String>, outcomes: &[HandleOutcome]) -> Self {
        let (nacked, failed) = sort_handles(handles, outcomes);
        Self { nacked, failed }
    }
}

/// A skill executor's registrations: the configured instances the house bound to its connection.
#[derive(Serialize, ToSchema)]
pub struct Skills {
    /// The registrations, as the house configured them.
    #[schema(value_type = Vec<Registration>)]
    pub registrations: Vec<Value>,
}

/// One registration (it may carry more fields than these).
#[derive(ToSchema)]
pub struct Registration {
    /// The configured instance.
    pub instance_id: String,
    /// The skill it is an instance of.
    pub skill: String,
    /// Its configured values.
    #[schema(value_type = Object)]
    pub values: Value,
    /// Its authority scale.
    #[schema(value_type = Value)]
    pub authority_scale: Value,
}

/// The token request: `grant_type=client_credentials`, form-encoded; the client authenticates
/// with HTTP Basic (client id and secret).
#[derive(ToSchema)]
pub struct TokenRequest {
    /// Only the client credentials grant.
    pub grant_type: GrantType,
}

/// The grant the token service supports.
#[derive(ToSchema)]
pub enum GrantType {
    /// RFC 6749 §4.4.
    #[serde(rename = "client_credentials")]
    ClientCredentials,
}

/// The token service's answer (RFC 6749 §5.1).
#[derive(Serialize, ToSchema)]
pub struct TokenAnswer {
    /// A JWT for `Authorization: Bearer`; reuse it for its whole life.
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: TokenType,
    /// Seconds the token lives (an hour unless configured otherwise).
    #[schema(minimum = 60, maximum = 86400, example = 3600)]
    pub expires_in: i64,
}

/// The token's type.
#[derive(Serialize, ToSchema)]
pub enum TokenType {
    /// RFC 6750.
    Bearer,
}

/// `false`, always.
fn refused() -> Schema {
    ObjectBuilder::new()
        .schema_type(SchemaType::new(Type::Boolean))
        .enum_values(Some([false]))
        .build()
        .into()
}

fn rules_of(rules: &[&'static str]) -> Schema {
    ObjectBuilder::new()
        .schema_type(SchemaType::new(Type::String))
        .enum_values(Some(rules.iter().copied()))
        .build()
        .into()
}

fn pull_rules() -> Schema {
    rules_of(super::error::PULL_RULES)
}

fn admin_rules() -> Schema {
    rules_of(super::error::ADMIN_RULES)
}

/// A refusal of the pull routes: `{"accepted": false, "violations": [{"rule", "message"}]}`.
#[derive(ToSchema)]
pub struct PullRefusal {
    /// Always `false`.
    #[schema(schema_with = refused)]
    pub accepted: bool,
    /// What was refused: one violation.
    #[schema(min_items = 1, max_items = 1)]
    pub violations: Vec<PullViolation>,
}

/// A rule a pull request broke.
#[derive(ToSchema)]
pub struct PullViolation {
    /// The rule (see the status's examples for which ones it answers).
    #[schema(schema_with = pull_rules)]
    pub rule: String,
    /// What went wrong and what to do, in words.
    pub message: String,
}

/// A refusal of the admin API, in the bus's usual body.
#[derive(ToSchema)]
pub struct AdminRefusal {
    /// Always `false`.
    #[schema(schema_with = refused)]
    pub accepted: bool,
    /// What was refused: one violation.
    #[schema(min_items = 1, max_items = 1)]
    pub violations: Vec<AdminViolation>,
}

/// A rule an admin request broke.
#[derive(ToSchema)]
pub struct AdminViolation {
    /// The rule.
    #[schema(schema_with = admin_rules)]
    pub rule: String,
    /// What went wrong, in words.
    pub message: String,
}

#[cfg(test)]
mod tests;
