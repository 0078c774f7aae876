//! sombus's wire: every request and answer body of the token service, the pull routes and the
//! admin API as types (their `utoipa` schemas are the OpenAPI document's, so the document is the
//! code's), the receive query with its documented defaults and ranges, and how an SQS message
//! maps onto the message shape (the body is the producer's envelope; `message_type`,
//! `correlation_id`, `topic` and `producer_id` come from message attributes of those names, else
//! from the envelope's fields).

use super::error::SombusError;
use crate::api::common::json::{batch, optional_int, parse_object, reject_unknown};
use crate::api::common::openapi::ResponseMap;
use crate::core::gateway::ReceiveOptions;
use crate::core::model::{AttributeValue, BackendMessage, Delivery, HandleOutcome};
use crate::core::sqs_limits as limits;
use crate::credentials::oauth::{AuditEntry, Connection, ConnectionStatus, Role};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use utoipa::IntoResponses;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::{IntoParams, ToSchema};

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

/// Parses `{"receipt_handles": [1 to 10 distinct strings]}`, with `delay_seconds` (0 to 43,200,
/// default 0) when `with_delay` (nack).
pub fn parse_handles(body: &[u8], with_delay: bool) -> Result<(Vec<String>, u32), SombusError> {
    let object = parse_object(body, false)?;
    let known: &[&str] = if with_delay {
        &["receipt_handles", "delay_seconds"]
    } else {
        &["receipt_handles"]
    };
    reject_unknown(&object, known, "")?;
    let handles = batch(&object, "receipt_handles")?
        .iter()
        .enumerate()
        .map(|(index, handle)| {
            handle
                .as_str()
                .filter(|handle| !handle.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| {
                    SombusError::bad_request(format!(
                        "receipt_handles[{index}] must be a non-empty string"
                    ))
                })
        })
        .collect::<Result<Vec<String>, SombusError>>()?;
    let distinct: BTreeSet<&String> = handles.iter().collect();
    if distinct.len() != handles.len() {
        return Err(SombusError::bad_request("receipt_handles must be distinct"));
    }
    let delay = if with_delay {
        optional_int(&object, "delay_seconds", 0, i64::from(MAX_VISIBILITY))?.unwrap_or(0)
    } else {
        0
    };
    Ok((handles, delay))
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

/// The ack body (`parse_handles` holds to it).
#[derive(ToSchema)]
#[schema(example = json!({"receipt_handles": ["AQEB…", "AQEB…"]}))]
#[serde(deny_unknown_fields)]
pub struct AckRequest {
    /// 1 to 10 distinct receipt handles.
    #[schema(min_items = 1, max_items = 10, min_length = 1, value_type = BTreeSet<String>)]
    pub receipt_handles: Vec<String>,
}

/// The nack body (`parse_handles` holds to it).
#[derive(ToSchema)]
#[schema(example = json!({"receipt_handles": ["AQEB…"], "delay_seconds": 30}))]
#[serde(deny_unknown_fields)]
pub struct NackRequest {
    /// 1 to 10 distinct receipt handles.
    #[schema(min_items = 1, max_items = 10, min_length = 1, value_type = BTreeSet<String>)]
    pub receipt_handles: Vec<String>,
    /// Seconds before the messages are visible again (0: at once).
    #[schema(default = 0, minimum = 0, maximum = 43200)]
    pub delay_seconds: Option<u32>,
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
            HandleOutcome::Ok | HandleOutcome::Stale => done.push(handle),
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

/// The body of `POST /connections`; every field may be left out (an empty body takes every
/// default).
#[derive(ToSchema)]
#[schema(example = json!({"name": "story consumer", "attempt_limit": 5}))]
#[serde(deny_unknown_fields)]
pub struct NewConnectionRequest {
    /// The client id to give it, qualified by the workspace: `story-consumer` in workspace
    /// `ws-3f9a` makes `ws-3f9a.story-consumer` (so no workspace can take an id another will
    /// want). Default: generated, `c` and 20 hex digits.
    #[schema(pattern = "^[A-Za-z0-9-]{1,25}$", example = "story-consumer")]
    pub client_id: Option<String>,
    /// A label, 1 to 256 characters (default: the client id's chosen part, or the generated id).
    #[schema(min_length = 1, max_length = 256)]
    pub name: Option<String>,
    /// What its tokens may do.
    #[schema(default = "consumer")]
    pub role: Option<ConnectionRole>,
    /// Whether its queue is FIFO: ordered per correlation id.
    #[schema(default = true)]
    pub fifo: Option<bool>,
    /// Deliveries before a message moves to the dead-letter queue.
    #[schema(default = 5, minimum = 1, maximum = 1000)]
    pub attempt_limit: Option<u32>,
    /// The quota tier its limits come from: `standard` (20 requests a second, bursts of 40,
    /// 100,000 a day) or another tier of the gateway's `[sombus.tiers]`.
    #[schema(default = "standard", pattern = "^standard$")]
    pub tier: Option<String>,
}

/// What a connection's tokens may do.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionRole {
    /// Reads its own queue through the pull routes.
    Consumer,
    /// A producer app's credentials: gets tokens, reads no queue.
    Producer,
}

impl From<Role> for ConnectionRole {
    fn from(role: Role) -> Self {
        match role {
            Role::Consumer => Self::Consumer,
            Role::Producer => Self::Producer,
        }
    }
}

/// Whether a connection gets tokens and reads.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionState {
    /// Gets tokens; its tokens read.
    Active,
    /// Gets no token; its queue and secret are kept for a restore.
    Revoked,
}

/// A connection as the admin API shows it: never a secret or its hash.
#[derive(Serialize, ToSchema)]
pub struct ConnectionView {
    /// Its client id, `{c}` of the pull URLs: `{workspace}.{chosen}` for an id chosen at its
    /// create, else generated.
    #[schema(pattern = "^([A-Za-z0-9-]{1,36}[.])?[A-Za-z0-9-]{1,25}$")]
    client_id: String,
    /// Its workspace, `{t}` of the pull URLs.
    workspace: String,
    /// Its label.
    name: String,
    /// What its tokens may do.
    role: ConnectionRole,
    /// Whether it gets tokens.
    status: ConnectionState,
    /// The gateway queue it reads.
    queue: String,
    /// Where its messages go after `attempt_limit` deliveries.
    #[schema(required = true)]
    dead_letter_queue: Option<String>,
    /// Whether its queue is FIFO.
    fifo: bool,
    /// Deliveries before a message moves to the dead-letter queue.
    #[schema(minimum = 1, maximum = 1000)]
    attempt_limit: u32,
    /// Its quota tier.
    tier: String,
    /// Goes up with each rotation (and revocation) of its secret; tokens carry it.
    #[schema(minimum = 1)]
    credential_version: u64,
    /// Whether it has a secret that gets tokens.
    has_secret: bool,
    /// Until when the secret before the last rotation still gets tokens (`null`: it doesn't).
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    old_secret_valid_until: Option<DateTime<Utc>>,
    /// When it was created.
    #[schema(value_type = String, format = DateTime)]
    created_at: DateTime<Utc>,
}

impl ConnectionView {
    /// The view of `connection` at `now`.
    pub fn new(connection: &Connection, now: DateTime<Utc>) -> Self {
        Self {
            client_id: connection.client_id.clone(),
            workspace: connection.workspace.clone(),
            name: connection.name.clone(),
            role: connection.role.into(),
            status: match connection.status {
                ConnectionStatus::Active => ConnectionState::Active,
                ConnectionStatus::Revoked => ConnectionState::Revoked,
            },
            queue: connection.queue.clone(),
            dead_letter_queue: connection.dead_letter_queue.clone(),
            fifo: connection.fifo,
            attempt_limit: connection.attempt_limit,
            tier: connection.tier.clone(),
            credential_version: connection.credential_version,
            has_secret: connection.secret.is_some(),
            old_secret_valid_until: connection.overlap_until(now),
            created_at: connection.created_at,
        }
    }
}

/// A workspace's connections.
#[derive(Serialize, ToSchema)]
pub struct ConnectionList {
    /// Every connection of the workspace.
    pub connections: Vec<ConnectionView>,
}

/// A new client secret, shown once, with the connection's URLs filled in.
// No `Debug`: it holds the secret.
#[derive(Serialize, ToSchema)]
pub struct IssuedSecretAnswer {
    /// The client id (HTTP Basic user name at the token service).
    pub client_id: String,
    /// The secret (HTTP Basic password); only a hash is kept.
    #[schema(pattern = "^sbs_[A-Za-z0-9_-]+$")]
    pub client_secret: String,
    /// The connection's credential version after this change.
    #[schema(minimum = 1)]
    pub credential_version: u64,
    /// A reminder that a lost secret can't be shown again, only rotated.
    pub shown_once: &'static str,
    /// The connection's URLs.
    pub urls: SecretUrls,
}

/// The URLs a connection uses.
#[derive(Serialize, ToSchema)]
pub struct SecretUrls {
    /// The token service.
    #[schema(format = "uri")]
    pub token: String,
    /// Receive.
    #[schema(format = "uri")]
    pub messages: String,
    /// Acknowledge.
    #[schema(format = "uri")]
    pub ack: String,
    /// Release.
    #[schema(format = "uri")]
    pub nack: String,
    /// Skill registrations.
    #[schema(format = "uri")]
    pub skills: String,
}

/// The body of `POST …/secret/rotate`; may be empty.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateRequest {
    /// How long the previous secret keeps getting tokens.
    #[schema(default = "24h")]
    pub overlap: Option<Overlap>,
}

/// How long a rotated secret keeps getting tokens.
#[derive(ToSchema)]
pub enum Overlap {
    /// 24 hours (the default).
    #[serde(rename = "24h")]
    Day,
    /// 3 days.
    #[serde(rename = "3d")]
    ThreeDays,
    /// 1 hour.
    #[serde(rename = "1h")]
    Hour,
    /// None: the previous secret stops at once.
    #[serde(rename = "none")]
    Nothing,
}

/// A redrive under way.
#[derive(Serialize, ToSchema)]
pub struct RedriveStarted {
    /// The backend's task handle.
    pub task_handle: String,
}

/// The audit route's query (the handler parses it, holding to these ranges).
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// At most this many entries, newest first.
    #[param(default = 100, minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// Where to go on: the `next_cursor` of the page before (opaque). Without it, the newest
    /// entries.
    #[param(min_length = 1, max_length = 19, pattern = "^[0-9]+$")]
    pub cursor: Option<String>,
}

/// A page of a workspace's audit log.
#[derive(Serialize, ToSchema)]
pub struct AuditPage {
    /// The entries, newest first.
    entries: Vec<AuditRecord>,
    /// Present while older entries may follow: pass it as `cursor` for the next page. A page
    /// reads at most 1 MiB of the log, so one may hold fewer than `limit` entries (even none)
    /// and still have a `next_cursor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    next_cursor: Option<String>,
    /// Present when the part of the log this page read is not whole: lines damaged, missing or
    /// altered (any workspace's: a lost line can't tell whose it was). Every line carries its
    /// place in the log and the hash of the line before, so nothing is removed or changed
    /// unseen (but the newest line, until another follows it).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    damage: Option<AuditDamage>,
}

impl AuditPage {
    /// The store's page as the API shows it.
    pub fn new(page: crate::credentials::oauth::AuditPage) -> Self {
        let damage = page.damage;
        Self {
            entries: page.entries.into_iter().map(AuditRecord::from).collect(),
            next_cursor: page.next.map(|next| next.to_string()),
            damage: (!damage.is_none()).then_some(AuditDamage {
                damaged_lines: damage.damaged_lines,
                missing_lines: damage.missing_lines,
                broken_links: damage.broken_links,
            }),
        }
    }
}

/// What is wrong with the part of the audit log a page read.
#[derive(Serialize, ToSchema)]
pub struct AuditDamage {
    /// Lines that don't parse as entries (damaged, or cut short by a crash).
    #[schema(minimum = 0)]
    damaged_lines: u64,
    /// Lines missing from the log's sequence (removed).
    #[schema(minimum = 0)]
    missing_lines: u64,
    /// Lines whose link to the line before doesn't hold (one altered, or put in between).
    #[schema(minimum = 0)]
    broken_links: u64,
}

/// One change or refused attempt, as the audit log records it.
#[derive(Serialize, ToSchema)]
pub struct AuditRecord {
    /// When.
    #[schema(value_type = String, format = DateTime)]
    at: DateTime<Utc>,
    /// The workspace.
    workspace: String,
    /// Who: the admin key's name (`unknown` for a key that didn't verify; `gateway:…` for the
    /// gateway's own steps).
    actor: String,
    /// The admin key's public id (two keys may share a name); absent for the gateway's own steps
    /// and keys that didn't verify.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    actor_key: Option<String>,
    /// What: `connection.create`, `secret.rotate`, … (for a refusal, what was attempted).
    action: String,
    /// `refused` when the admin API refused the attempt (401, 403; `detail` has the status and
    /// rule); absent for a change made.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    outcome: Option<Outcome>,
    /// Which connection (empty for a workspace's routes).
    client_id: String,
    /// Anything else worth knowing.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    detail: Option<String>,
}

/// How an attempt ended, when it is not a change made.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The admin API refused it.
    Refused,
}

impl From<AuditEntry> for AuditRecord {
    fn from(entry: AuditEntry) -> Self {
        Self {
            at: entry.at,
            workspace: entry.workspace,
            actor: entry.actor,
            actor_key: (!entry.actor_key.is_empty()).then_some(entry.actor_key),
            action: entry.action,
            outcome: (entry.outcome == crate::credentials::oauth::store::REFUSED)
                .then_some(Outcome::Refused),
            client_id: entry.client_id,
            detail: (!entry.detail.is_empty()).then_some(entry.detail),
        }
    }
}

/// What every pull route may refuse: 400, 401, 403, 429, 503 (`PullRefusal`).
pub(super) struct PullRefusals;

impl IntoResponses for PullRefusals {
    fn responses() -> ResponseMap {
        let statuses = [400, 401, 403, 429, 503].map(|status| (status, ""));
        // Described from the rule tables by the document's `Refusals` modifier (openapi.rs).
        crate::api::common::openapi::error_responses::<PullRefusal>(&statuses)
    }
}

/// What every admin route may refuse: 400, 401, 403, 503 (`AdminRefusal`); routes that name a
/// connection add 404, and those that change one 409.
pub(super) struct AdminRefusals;

impl IntoResponses for AdminRefusals {
    fn responses() -> ResponseMap {
        let statuses = [400, 401, 403, 503].map(|status| (status, ""));
        // Described from the rule tables by the document's `Refusals` modifier (openapi.rs).
        crate::api::common::openapi::error_responses::<AdminRefusal>(&statuses)
    }
}

#[cfg(test)]
mod tests;
