//! Push subscriptions made, changed, rotated and removed at run time (beside the config file's):
//! the port the dialects' admin routes call through the gateway, implemented outside the core
//! (`crate::push::managed`), where the records and their audit trail are kept. Every change is
//! audited with who made it; a signing secret is answered once, when it is made, and never again.

use crate::core::GatewayError;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::time::Duration;
use zeroize::Zeroizing;

/// The longest overlap a rotation may keep the replaced secret signing (7 days).
pub const MOST_OVERLAP: Duration = Duration::from_secs(7 * 24 * 3600);
/// The overlap of a rotation that names none (24 hours).
pub const DEFAULT_OVERLAP: Duration = Duration::from_secs(24 * 3600);

/// How a subscription posts: what a create sets, and an update may change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Where messages are posted.
    pub url: String,
    /// The most deliveries in flight at once (1 to 100).
    pub max_concurrency: u32,
    /// The most deliveries started a second (1 to 10,000), if limited.
    pub max_per_second: Option<u32>,
    /// Seconds the endpoint has to answer (1 to 60).
    pub timeout_seconds: u32,
    /// Seconds each delivery holds its message, if not the default (twice the timeout, at least
    /// 30).
    pub visibility_timeout_seconds: Option<u32>,
    /// The body posted as it is, not wrapped with its metadata.
    pub raw_body: bool,
    /// A 202 keeps the lease (the wrapped body carries the receipt handle).
    pub hold_on_202: bool,
}

impl Settings {
    /// Seconds each delivery holds its message: as set, else twice the timeout, at least 30.
    pub fn lease_seconds(&self) -> u32 {
        self.visibility_timeout_seconds
            .unwrap_or_else(|| (self.timeout_seconds * 2).max(30))
    }
}

/// What an update changes; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    /// A new endpoint.
    pub url: Option<String>,
    /// A new concurrency.
    pub max_concurrency: Option<u32>,
    /// A new rate (`Some(None)`: no limit).
    pub max_per_second: Option<Option<u32>>,
    /// A new timeout.
    pub timeout_seconds: Option<u32>,
    /// A new lease (`Some(None)`: the default).
    pub visibility_timeout_seconds: Option<Option<u32>>,
    /// A new body form.
    pub raw_body: Option<bool>,
    /// Whether a 202 holds the lease.
    pub hold_on_202: Option<bool>,
    /// Enabled (deliveries run) or disabled (none start).
    pub enabled: Option<bool>,
}

impl Change {
    /// The names of the fields it sets (for the audit trail: never their values).
    pub fn fields(&self) -> Vec<&'static str> {
        let mut fields = Vec::new();
        let set = [
            ("url", self.url.is_some()),
            ("max_concurrency", self.max_concurrency.is_some()),
            ("max_per_second", self.max_per_second.is_some()),
            ("timeout_seconds", self.timeout_seconds.is_some()),
            (
                "visibility_timeout_seconds",
                self.visibility_timeout_seconds.is_some(),
            ),
            ("body", self.raw_body.is_some()),
            ("hold_on_202", self.hold_on_202.is_some()),
            ("enabled", self.enabled.is_some()),
        ];
        for (name, is_set) in set {
            if is_set {
                fields.push(name);
            }
        }
        fields
    }
}

/// A subscription made at run time, as its admins see it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Managed {
    /// Its name (unique on its queue, config subscriptions included).
    pub name: String,
    /// The gateway queue it consumes.
    pub queue: String,
    /// Where it posts, for people: scheme, host and path for its managers (never a query or
    /// credentials), scheme, host and port for readers.
    pub endpoint: String,
    /// How it posts.
    pub settings: Settings,
    /// Whether deliveries run.
    pub enabled: bool,
    /// Why it is disabled, when it is.
    pub disabled_because: Option<String>,
    /// When it was made, and by whom.
    pub created_at: DateTime<Utc>,
    /// Who made it.
    pub created_by: String,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// When its current secret was made.
    pub secret_created_at: DateTime<Utc>,
    /// Until when the replaced secret still signs, during a rotation's overlap.
    pub previous_secret_until: Option<DateTime<Utc>>,
}

/// A subscription with a new signing secret: answered once, when made or rotated.
pub struct WithSecret {
    /// The subscription.
    pub managed: Managed,
    /// The secret (`whsec_` and base64, as Standard Webhooks gives them).
    pub secret: Zeroizing<String>,
}

impl std::fmt::Debug for WithSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithSecret")
            .field("managed", &self.managed)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// One change in the audit trail, as the stores keep it (one JSON line each).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AuditEntry {
    /// Its place in the trail (1, 2, …; 0 until the store gives it one).
    #[serde(default)]
    pub seq: u64,
    /// When.
    pub at: DateTime<Utc>,
    /// Who: the admin's key name, or `endpoint` when a 410 Gone disabled it.
    pub actor: String,
    /// What: `created`, `updated`, `secret_rotated`, `deleted`, `deleted_with_queue`,
    /// `disabled_by_endpoint` (a subscription's); `delivery_paused`, `delivery_resumed` (the
    /// queue's).
    pub action: String,
    /// The queue.
    pub queue: String,
    /// The subscription, for a subscription's change.
    #[serde(default)]
    pub subscription: Option<String>,
    /// The fields changed, and the endpoint (scheme, host and path) where it changed: never a
    /// secret.
    pub detail: String,
}

impl AuditEntry {
    /// Whether it belongs on a page of `queue`'s trail older than `before` (a seq), if given.
    pub fn on_page(&self, queue: &str, before: Option<u64>) -> bool {
        self.queue == queue && before.is_none_or(|before| self.seq < before)
    }
}

/// Who asks for a change: recorded in the audit trail.
#[derive(Debug, Clone, Copy)]
pub struct Actor<'a>(pub &'a str);

/// The subscriptions made at run time, and their audit trail.
#[async_trait]
pub trait SubscriptionAdmin: Send + Sync + 'static {
    /// Makes a subscription of `queue` named `name`, with a new secret (answered once).
    async fn create(
        &self,
        actor: Actor<'_>,
        queue: &str,
        name: &str,
        settings: Settings,
    ) -> Result<WithSecret, GatewayError>;

    /// Changes a subscription of `queue`.
    async fn update(
        &self,
        actor: Actor<'_>,
        queue: &str,
        name: &str,
        change: Change,
    ) -> Result<Managed, GatewayError>;

    /// Gives a subscription of `queue` a new secret (answered once); the replaced one signs too
    /// for `overlap`.
    async fn rotate(
        &self,
        actor: Actor<'_>,
        queue: &str,
        name: &str,
        overlap: Duration,
    ) -> Result<WithSecret, GatewayError>;

    /// Removes a subscription of `queue`: its deliveries in flight end as they would, no new one
    /// starts.
    async fn delete(&self, actor: Actor<'_>, queue: &str, name: &str) -> Result<(), GatewayError>;

    /// Removes every subscription of `queue`, and its pause (the queue was deleted).
    async fn forget_queue(&self, actor: Actor<'_>, queue: &str) -> Result<(), GatewayError>;

    /// The subscriptions of `queue` made at run time.
    async fn list(&self, queue: &str) -> Result<Vec<Managed>, GatewayError>;

    /// Pauses `queue`'s deliveries (kept, audited) and answers since when; a queue paused
    /// already stays paused since it was, and no line is added.
    async fn pause_delivery(
        &self,
        actor: Actor<'_>,
        queue: &str,
    ) -> Result<DateTime<Utc>, GatewayError>;

    /// Ends `queue`'s pause (audited); a queue not paused is left as it is, and no line is
    /// added.
    async fn resume_delivery(&self, actor: Actor<'_>, queue: &str) -> Result<(), GatewayError>;

    /// The audit trail of `queue`'s subscriptions and pauses, newest first: at most `limit`
    /// entries older than `before` (a `seq`), if given.
    async fn audit(
        &self,
        queue: &str,
        limit: usize,
        before: Option<u64>,
    ) -> Result<Vec<AuditEntry>, GatewayError>;
}
