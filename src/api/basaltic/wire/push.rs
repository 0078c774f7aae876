//! The push subscription admin bodies and answers: a new subscription, a change, a rotation, and
//! what they answer (a secret only where one is made), and the audit trail's page.

use super::*;
use crate::api::common::body_shape::{Choice, Field, Flag, Integer, Shape, Text, body_schema};
use crate::core::push::admin::{AuditEntry, Change, Managed, Settings};
use crate::core::sqs_limits::MAX_VISIBILITY_SECONDS;

/// The longest endpoint URL.
const MOST_URL_BYTES: usize = 2048;

/// How a subscription posts a message.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(in crate::api::basaltic) enum PushBody {
    /// A JSON object with the message's id, queue, body, attributes, receive count and time.
    Wrapped,
    /// The body as it is.
    Raw,
}

const SUBSCRIPTION_NAME: Field<Text> = Field::required(
    "name",
    "1 to 64 letters, digits, `-` or `_`, unique on the queue.",
    Text::word(1, 64, "-_").example("orders-hook"),
);
const URL_DOC: &str = "Where messages are posted: `https://` (plain `http://` and private \
     addresses only where the gateway allows private networks), no credentials in it; at most \
     2,048 bytes.";
const URL_TEXT: Text = Text::any()
    .least(1)
    .example("https://hooks.example.com/orders");
const URL: Field<Text> = Field::required("url", URL_DOC, URL_TEXT);
const NEW_URL: Field<Text> = Field::optional("url", URL_DOC, URL_TEXT);
const CONCURRENCY: Field<Integer> = Field::optional(
    "max_concurrency",
    "The most deliveries in flight at once (default 10).",
    Integer::from_to(1, 100).default(10),
);
const NEW_CONCURRENCY: Field<Integer> = Field::optional(
    "max_concurrency",
    "The most deliveries in flight at once.",
    Integer::from_to(1, 100),
);
const RATE: Field<Integer> = Field::optional(
    "max_per_second",
    "The most deliveries started a second (left out: no limit).",
    Integer::from_to(1, 10_000),
);
const NEW_RATE: Field<Integer> = Field::optional(
    "max_per_second",
    "The most deliveries started a second; 0 removes the limit.",
    Integer::from_to(0, 10_000),
);
const TIMEOUT: Field<Integer> = Field::optional(
    "timeout_seconds",
    "Seconds the endpoint has to answer (default 15).",
    Integer::from_to(1, 60).default(15),
);
const NEW_TIMEOUT: Field<Integer> = Field::optional(
    "timeout_seconds",
    "Seconds the endpoint has to answer.",
    Integer::from_to(1, 60),
);
const LEASE_FIELD: Field<Integer> = Field::optional(
    "visibility_timeout_seconds",
    "Seconds each delivery holds its message: longer than the timeout (left out or 0: twice the \
     timeout, at least 30).",
    Integer::from_to(0, MAX_VISIBILITY_SECONDS),
);
const NEW_LEASE: Field<Integer> = Field::optional(
    "visibility_timeout_seconds",
    "Seconds each delivery holds its message, longer than the timeout; 0 goes back to the \
     default (twice the timeout, at least 30).",
    Integer::from_to(0, MAX_VISIBILITY_SECONDS),
);
const BODY: Field<Choice> = Field::optional(
    "body",
    "`wrapped` (the default: the message with its metadata) or `raw` (the body as it is).",
    Choice {
        names: &["wrapped", "raw"],
        default: "wrapped",
        schema: <PushBody as ToSchema>::name,
        null_is_default: false,
    },
);
const HOLD: Field<Flag> = Field::optional(
    "hold_on_202",
    "A 202 keeps the message leased; the wrapped body carries its `receipt_handle` for a later \
     delete or visibility change (default false).",
    Flag::ANY,
);
const ENABLED: Field<Flag> = Field::optional(
    "enabled",
    "`false` stops deliveries (none in flight is cut); `true` starts them again (also after a \
     410 Gone).",
    Flag::ANY,
);
const OVERLAP: Field<Integer> = Field::optional(
    "overlap_seconds",
    "Seconds the replaced secret keeps signing beside the new one (0 to 604,800; default \
     86,400).",
    Integer::from_to(0, 604_800).default(86_400),
);

/// The body that makes a subscription.
const NEW_SUBSCRIPTION: Shape = Shape {
    doc: "A push subscription to make: where and how the queue's messages are posted.",
    fields: &[
        &SUBSCRIPTION_NAME,
        &URL,
        &CONCURRENCY,
        &RATE,
        &TIMEOUT,
        &LEASE_FIELD,
        &BODY,
        &HOLD,
    ],
    example: None,
};
/// The body that makes a subscription, in the document.
pub(in crate::api::basaltic) enum NewSubscriptionRequest {}
body_schema!(NewSubscriptionRequest, NEW_SUBSCRIPTION);

/// The body that changes a subscription.
const SUBSCRIPTION_CHANGE: Shape = Shape {
    doc: "What to change of a push subscription (at least one field).",
    fields: &[
        &NEW_URL,
        &NEW_CONCURRENCY,
        &NEW_RATE,
        &NEW_TIMEOUT,
        &NEW_LEASE,
        &BODY,
        &HOLD,
        &ENABLED,
    ],
    example: None,
};
/// The body that changes a subscription, in the document.
pub(in crate::api::basaltic) enum SubscriptionChangeRequest {}
body_schema!(SubscriptionChangeRequest, SUBSCRIPTION_CHANGE);

/// The body of a rotation.
const ROTATION: Shape = Shape {
    doc: "A new signing secret; the replaced one signs beside it for the overlap.",
    fields: &[&OVERLAP],
    example: None,
};
/// The body of a rotation, in the document.
pub(in crate::api::basaltic) enum RotationRequest {}
body_schema!(RotationRequest, ROTATION);

fn url_of(given: Option<&str>) -> Result<Option<String>, GatewayError> {
    match given {
        Some(url) if url.len() > MOST_URL_BYTES => Err(GatewayError::out_of_range(format!(
            "url: at most {MOST_URL_BYTES} bytes"
        ))),
        other => Ok(other.map(str::to_owned)),
    }
}

/// Parses a new subscription: its name and settings.
pub(in crate::api::basaltic) fn parse_new_subscription(
    body: &[u8],
) -> Result<(String, Settings), GatewayError> {
    let object = NEW_SUBSCRIPTION.parse(body, false)?;
    let name = SUBSCRIPTION_NAME.value(&object, "")?.to_owned();
    let url = url_of(URL.read(&object, "")?)?.unwrap_or_default();
    Ok((
        name,
        Settings {
            url,
            max_concurrency: CONCURRENCY.value(&object, "")?,
            max_per_second: RATE.read(&object, "")?,
            timeout_seconds: TIMEOUT.value(&object, "")?,
            visibility_timeout_seconds: LEASE_FIELD.read(&object, "")?.filter(|lease| *lease > 0),
            raw_body: BODY.read(&object, "")? == "raw",
            hold_on_202: HOLD.read(&object, "")?.unwrap_or(false),
        },
    ))
}

/// Parses a change (at least one field).
pub(in crate::api::basaltic) fn parse_subscription_change(
    body: &[u8],
) -> Result<Change, GatewayError> {
    let object = SUBSCRIPTION_CHANGE.parse(body, false)?;
    // `null` is not a body form: refused as one, not taken as "unchanged".
    let body_given = object.contains_key("body");
    let change = Change {
        url: url_of(NEW_URL.read(&object, "")?)?,
        max_concurrency: NEW_CONCURRENCY.read(&object, "")?,
        max_per_second: NEW_RATE
            .read(&object, "")?
            .map(|rate| (rate > 0).then_some(rate)),
        timeout_seconds: NEW_TIMEOUT.read(&object, "")?,
        visibility_timeout_seconds: NEW_LEASE
            .read(&object, "")?
            .map(|lease| (lease > 0).then_some(lease)),
        raw_body: if body_given {
            Some(BODY.read(&object, "")? == "raw")
        } else {
            None
        },
        hold_on_202: HOLD.read(&object, "")?,
        enabled: ENABLED.read(&object, "")?,
    };
    if change.fields().is_empty() {
        return Err(GatewayError::invalid_request(
            "name at least one field to change",
        ));
    }
    Ok(change)
}

/// Parses a rotation: the overlap (an empty body takes the default).
pub(in crate::api::basaltic) fn parse_rotation(
    body: &[u8],
) -> Result<std::time::Duration, GatewayError> {
    let object = ROTATION.parse(body, true)?;
    Ok(std::time::Duration::from_secs(
        OVERLAP.value(&object, "")?.into(),
    ))
}

/// A push subscription made through the API, as its admins see it (never its secret).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ManagedSubscription)]
pub(in crate::api::basaltic) struct ManagedJson {
    /// Its name.
    pub name: String,
    /// Where it posts (no query, no credentials).
    pub endpoint: String,
    /// The most deliveries in flight at once.
    pub max_concurrency: u32,
    /// The most deliveries started a second (`null`: no limit).
    #[schema(required = true)]
    pub max_per_second: Option<u32>,
    /// Seconds the endpoint has to answer.
    pub timeout_seconds: u32,
    /// Seconds each delivery holds its message.
    pub visibility_timeout_seconds: u32,
    /// `wrapped` or `raw`.
    pub body: PushBody,
    /// Whether a 202 keeps the lease.
    pub hold_on_202: bool,
    /// Whether deliveries run.
    pub enabled: bool,
    /// Why not, when they don't.
    #[schema(required = true)]
    pub disabled_because: Option<String>,
    /// When it was made.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Who made it (the key's kind and id).
    pub created_by: String,
    /// When it last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// When its current secret was made.
    #[schema(format = DateTime)]
    pub secret_created_at: String,
    /// Until when the replaced secret signs too (`null`: no rotation overlapping).
    #[schema(required = true, format = DateTime)]
    pub previous_secret_until: Option<String>,
}

fn time(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl From<Managed> for ManagedJson {
    fn from(managed: Managed) -> Self {
        let lease = managed.settings.lease_seconds();
        ManagedJson {
            name: managed.name,
            endpoint: managed.endpoint,
            max_concurrency: managed.settings.max_concurrency,
            max_per_second: managed.settings.max_per_second,
            timeout_seconds: managed.settings.timeout_seconds,
            visibility_timeout_seconds: lease,
            body: if managed.settings.raw_body {
                PushBody::Raw
            } else {
                PushBody::Wrapped
            },
            hold_on_202: managed.settings.hold_on_202,
            enabled: managed.enabled,
            disabled_because: managed.disabled_because,
            created_at: time(managed.created_at),
            created_by: managed.created_by,
            updated_at: time(managed.updated_at),
            secret_created_at: time(managed.secret_created_at),
            previous_secret_until: managed.previous_secret_until.map(time),
        }
    }
}

/// A subscription with its new signing secret: shown this once, never again.
#[derive(Serialize, ToSchema)]
pub(in crate::api::basaltic) struct SubscriptionWithSecret {
    /// The subscription.
    pub subscription: ManagedJson,
    /// The signing secret (`whsec_` and base64): keep it now, it is not shown again.
    #[schema(example = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")]
    pub secret: String,
}

/// A subscription after a change.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct SubscriptionResult {
    /// The subscription.
    pub subscription: ManagedJson,
}

/// One change in the audit trail.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SubscriptionAuditEntry)]
pub(in crate::api::basaltic) struct AuditJson {
    /// Its place in the trail.
    pub seq: u64,
    /// When.
    #[schema(format = DateTime)]
    pub at: String,
    /// Who: the key (kind and id), or `endpoint` when a 410 Gone disabled the subscription.
    pub actor: String,
    /// A subscription's `created`, `updated`, `secret_rotated`, `deleted`,
    /// `deleted_with_queue` or `disabled_by_endpoint`; the queue's `delivery_paused` or
    /// `delivery_resumed`.
    pub action: String,
    /// The subscription changed; `null` for a change of the queue's own.
    pub subscription: Option<String>,
    /// The fields changed and the endpoint (never a secret).
    pub detail: String,
}

impl From<AuditEntry> for AuditJson {
    fn from(entry: AuditEntry) -> Self {
        AuditJson {
            seq: entry.seq,
            at: entry.at.to_rfc3339_opts(SecondsFormat::Millis, true),
            actor: entry.actor,
            action: entry.action,
            subscription: entry.subscription,
            detail: entry.detail,
        }
    }
}

/// A page of the audit trail, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(in crate::api::basaltic) struct AuditPage {
    /// The entries.
    pub entries: Vec<AuditJson>,
    /// The `before` of the next (older) page; `null` at the trail's start.
    #[schema(required = true)]
    pub next: Option<u64>,
}
