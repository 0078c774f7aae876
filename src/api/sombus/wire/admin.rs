//! The admin API's bodies and answers: connections as it shows them (never a secret or its
//! hash), issued secrets with their URLs, rotation, redrive, the audit log's pages, and its
//! refusals as the OpenAPI document lists them.

use super::*;
use crate::api::common::body_shape::{Choice, Custom, Flag, Text};
use crate::api::sombus::config::DEFAULT_TIER;
use crate::api::sombus::connections::{
    DEFAULT_ATTEMPT_LIMIT, MAX_ATTEMPT_LIMIT, MAX_NAME_CHARS, MIN_ATTEMPT_LIMIT, NewConnection,
};
use crate::core::GatewayError;
use crate::credentials::oauth::check::MAX_CHOSEN_ID_LEN;
use utoipa::openapi::RefOr;

const CLIENT_ID: Field<Text> = Field::optional(
    "client_id",
    "The client id to give it, qualified by the workspace: `story-consumer` in workspace\n\
     `ws-3f9a` makes `ws-3f9a.story-consumer` (so no workspace can take an id another will\n\
     want). Default: generated, `c` and 20 hex digits.",
    Text::word(1, MAX_CHOSEN_ID_LEN, "-").example("story-consumer"),
);
const NAME: Field<Text> = Field::optional(
    "name",
    "A label, 1 to 256 characters (default: the client id's chosen part, or the generated id).",
    Text::any()
        .least(1)
        .most(MAX_NAME_CHARS)
        .refused_as("must be 1 to 256 characters"),
);
const ROLE: Field<Choice> = Field::optional(
    "role",
    "What its tokens may do.",
    Choice {
        names: &["consumer", "producer"],
        default: "consumer",
        schema: <ConnectionRole as ToSchema>::name,
        null_is_default: true,
    },
);
const FIFO: Field<Flag> = Field::optional(
    "fifo",
    "Whether its queue is FIFO: ordered per correlation id.",
    Flag::defaulting_to(true),
);
const ATTEMPT_LIMIT: Field<Integer> = Field::optional(
    "attempt_limit",
    "Deliveries before a message moves to the dead-letter queue.",
    Integer::from_to(MIN_ATTEMPT_LIMIT, MAX_ATTEMPT_LIMIT).default(DEFAULT_ATTEMPT_LIMIT),
);
const TIER: Field<Custom> = Field::optional(
    "tier",
    "The quota tier its limits come from: `standard` (20 requests a second, bursts of 40,\n\
     100,000 a day) or another tier of the gateway's `[sombus.tiers]`.",
    Custom(tier_schema),
);

/// A tier's name: `standard` unless the gateway configures others.
fn tier_schema() -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .default(Some(Value::from(DEFAULT_TIER)))
        .pattern(Some("^standard$"))
        .into()
}

/// The body of `POST /connections`.
const NEW_CONNECTION: Shape = Shape {
    doc: "A connection to make. Every field may be left out (an empty body takes every default).",
    fields: &[&CLIENT_ID, &NAME, &ROLE, &FIFO, &ATTEMPT_LIMIT, &TIER],
    example: Some(|| serde_json::json!({"name": "story consumer", "attempt_limit": 5})),
};

/// The body of `POST /connections` in the document.
pub enum NewConnectionRequest {}
body_schema!(NewConnectionRequest, NEW_CONNECTION);

/// The connection a `POST /connections` body asks for (an empty body takes every default).
pub(in crate::api::sombus) fn parse_new_connection(
    body: &[u8],
) -> Result<NewConnection, GatewayError> {
    let object = NEW_CONNECTION.parse(body, true)?;
    let client_id = CLIENT_ID.read(&object, "")?.map(str::to_owned);
    let name = NAME.read(&object, "")?.map(str::to_owned);
    let role = match ROLE.read(&object, "")? {
        "producer" => Role::Producer,
        _ => Role::Consumer,
    };
    let fifo = FIFO.read(&object, "")?.unwrap_or(true);
    let attempt_limit = ATTEMPT_LIMIT.value(&object, "")?;
    let tier = match TIER.read(&object, "")? {
        None => DEFAULT_TIER.to_owned(),
        Some(Value::String(tier)) => tier.clone(),
        Some(_) => return Err(GatewayError::invalid_request("tier must be a string")),
    };
    Ok(NewConnection {
        client_id,
        name,
        role,
        fifo,
        attempt_limit,
        tier,
    })
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

const OVERLAP: Field<Choice> = Field::optional(
    "overlap",
    "How long the previous secret keeps getting tokens.",
    Choice {
        names: &["24h", "3d", "1h", "none"],
        default: "24h",
        schema: <Overlap as ToSchema>::name,
        null_is_default: true,
    },
);

/// The body of `POST …/secret/rotate`.
const ROTATE: Shape = Shape {
    doc: "A rotation; the body may be empty.",
    fields: &[&OVERLAP],
    example: None,
};

/// The body of `POST …/secret/rotate` in the document.
pub enum RotateRequest {}
body_schema!(RotateRequest, ROTATE);

/// How long the previous secret keeps getting tokens, as a rotation body asks (an empty body:
/// 24 hours).
pub(in crate::api::sombus) fn parse_rotation(
    body: &[u8],
) -> Result<chrono::Duration, GatewayError> {
    let object = ROTATE.parse(body, true)?;
    Ok(match OVERLAP.read(&object, "")? {
        "3d" => chrono::Duration::days(3),
        "1h" => chrono::Duration::hours(1),
        "none" => chrono::Duration::zero(),
        _ => chrono::Duration::hours(24),
    })
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
pub(in crate::api::sombus) struct PullRefusals;

impl IntoResponses for PullRefusals {
    fn responses() -> ResponseMap {
        let statuses = [400, 401, 403, 429, 503].map(|status| (status, ""));
        // Described from the rule tables by the document's `Refusals` modifier (openapi.rs).
        crate::api::common::openapi::error_responses::<PullRefusal>(&statuses)
    }
}

/// What every admin route may refuse: 400, 401, 403, 503 (`AdminRefusal`); routes that name a
/// connection add 404, and those that change one 409.
pub(in crate::api::sombus) struct AdminRefusals;

impl IntoResponses for AdminRefusals {
    fn responses() -> ResponseMap {
        let statuses = [400, 401, 403, 503].map(|status| (status, ""));
        // Described from the rule tables by the document's `Refusals` modifier (openapi.rs).
        crate::api::common::openapi::error_responses::<AdminRefusal>(&statuses)
    }
}
