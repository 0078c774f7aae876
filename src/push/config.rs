//! The `[push]` section: the push subscriptions and what their endpoints may be.

use crate::core::error::SettingError;
use crate::core::push::admin::Settings;
use crate::core::sqs_limits::MAX_VISIBILITY_SECONDS;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// `[push]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PushConfig {
    /// Let endpoints be on private, loopback, link-local and metadata addresses, and plain
    /// `http://` (a local receiver, tests). Off: such addresses are refused on every connection,
    /// after DNS, and endpoints must be `https://`.
    pub allow_private_networks: bool,
    /// Attempts each subscription's delivery log keeps (1 to 10,000).
    pub delivery_log_entries: usize,
    /// A PEM file of certificates endpoints' TLS may chain to, besides the system's roots (a
    /// private CA).
    pub root_certificates_file: Option<PathBuf>,
    /// Where the subscriptions made through the API (and their audit trail) are kept without
    /// `[state.redis]`: default `push` in the embedded engine's data directory (memory for the
    /// in-memory engine), `push` in `state.dir` (default `sqs-gateway-data`) over SQS. With
    /// `[state.redis]` they are on the shared server.
    pub store_dir: Option<PathBuf>,
    /// The subscriptions.
    pub subscriptions: Vec<SubscriptionConfig>,
    /// Subscriptions made through the API one queue may have (1 to 1,000).
    pub max_subscriptions_per_queue: usize,
    /// Subscriptions made through the API the gateway holds for all queues together (1 to
    /// 100,000).
    pub max_subscriptions: usize,
}

impl Default for PushConfig {
    fn default() -> Self {
        Self {
            allow_private_networks: false,
            delivery_log_entries: 100,
            root_certificates_file: None,
            store_dir: None,
            subscriptions: Vec::new(),
            max_subscriptions_per_queue: 10,
            max_subscriptions: 1_000,
        }
    }
}

/// How a message is posted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyForm {
    /// A JSON object: the message's id, queue, body, attributes, receive count and sent time.
    #[default]
    Wrapped,
    /// The message's body as it is.
    Raw,
}

/// `[[push.subscriptions]]`: one endpoint that receives a queue's messages.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionConfig {
    /// Its name: 1 to 64 letters, digits, `-` and `_` (metrics label, log field).
    pub name: String,
    /// The gateway queue it consumes.
    pub queue: String,
    /// Where messages are posted.
    pub url: String,
    /// The signing secret (`whsec_` and base64, as Standard Webhooks gives them), inline: for
    /// development only.
    pub secret: Option<String>,
    /// The environment variable holding the signing secret.
    pub secret_env: Option<String>,
    /// The file holding the signing secret.
    pub secret_file: Option<PathBuf>,
    /// During a rotation, the secret being replaced: both signatures are sent.
    pub previous_secret: Option<String>,
    /// The environment variable holding the secret being replaced.
    pub previous_secret_env: Option<String>,
    /// The file holding the secret being replaced.
    pub previous_secret_file: Option<PathBuf>,
    /// The most deliveries in flight at once (1 to 100).
    #[serde(default = "default_concurrency")]
    pub max_concurrency: u32,
    /// The most deliveries started a second (1 to 10,000); unset: no limit.
    pub max_per_second: Option<u32>,
    /// Seconds an endpoint has to answer (1 to 60).
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u32,
    /// Seconds each delivery holds its message: longer than the timeout, at most 43,200;
    /// default twice the timeout, at least 30.
    pub visibility_timeout_seconds: Option<u32>,
    /// `wrapped` (the default) or `raw`.
    #[serde(default)]
    pub body: BodyForm,
    /// A 202 keeps the message in flight instead of acknowledging it: the wrapped body carries
    /// its `receipt_handle`, which the receiver acknowledges or extends later (`/v1/receipts/ack`,
    /// `/v1/receipts/visibility`). Needs `body = "wrapped"` (the handle is in the signed body).
    #[serde(default)]
    pub hold_on_202: bool,
}

impl std::fmt::Debug for SubscriptionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriptionConfig")
            .field("name", &self.name)
            .field("queue", &self.queue)
            .field("secret_env", &self.secret_env)
            .field("secret_file", &self.secret_file)
            .finish_non_exhaustive()
    }
}

fn default_concurrency() -> u32 {
    10
}

fn default_timeout() -> u32 {
    15
}

impl SubscriptionConfig {
    /// How it posts.
    pub fn settings(&self) -> Settings {
        Settings {
            url: self.url.clone(),
            max_concurrency: self.max_concurrency,
            max_per_second: self.max_per_second,
            timeout_seconds: self.timeout_seconds,
            visibility_timeout_seconds: self.visibility_timeout_seconds,
            raw_body: self.body == BodyForm::Raw,
            hold_on_202: self.hold_on_202,
        }
    }
}

/// Whether `name` is a subscription's name: 1 to 64 letters, digits, `-` and `_`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Checks a subscription's settings; the error names the field and what it must be.
pub fn check_settings(
    settings: &Settings,
    allow_private_networks: bool,
) -> Result<(), (&'static str, String)> {
    endpoint_url(&settings.url, allow_private_networks).map_err(|message| ("url", message))?;
    if !(1..=100).contains(&settings.max_concurrency) {
        return Err(("max_concurrency", "must be 1 to 100".into()));
    }
    if settings
        .max_per_second
        .is_some_and(|rate| !(1..=10_000).contains(&rate))
    {
        return Err(("max_per_second", "must be 1 to 10000".into()));
    }
    if !(1..=60).contains(&settings.timeout_seconds) {
        return Err(("timeout_seconds", "must be 1 to 60".into()));
    }
    if settings.hold_on_202 && settings.raw_body {
        return Err((
            "hold_on_202",
            "needs body = \"wrapped\": the receipt handle travels in the signed body".into(),
        ));
    }
    let lease = settings.lease_seconds();
    if lease <= settings.timeout_seconds || lease > MAX_VISIBILITY_SECONDS {
        return Err((
            "visibility_timeout_seconds",
            format!("must be longer than timeout_seconds and at most {MAX_VISIBILITY_SECONDS}"),
        ));
    }
    Ok(())
}

impl PushConfig {
    /// Checks every field but the secrets (read when the subscriptions are built).
    pub fn validate(&self) -> Result<(), SettingError> {
        if !(1..=10_000).contains(&self.delivery_log_entries) {
            return Err(SettingError::new(
                "push.delivery_log_entries",
                "must be 1 to 10000",
            ));
        }
        if !(1..=1_000).contains(&self.max_subscriptions_per_queue) {
            return Err(SettingError::new(
                "push.max_subscriptions_per_queue",
                "must be 1 to 1000",
            ));
        }
        if !(1..=100_000).contains(&self.max_subscriptions) {
            return Err(SettingError::new(
                "push.max_subscriptions",
                "must be 1 to 100000",
            ));
        }
        let mut names = BTreeSet::new();
        for (index, subscription) in self.subscriptions.iter().enumerate() {
            let field = |name: &str| format!("push.subscriptions[{index}].{name}");
            let name = &subscription.name;
            if !valid_name(name) {
                return Err(SettingError::new(
                    field("name"),
                    "must be 1 to 64 letters, digits, - and _",
                ));
            }
            // Names are scoped by queue: one name may serve several queues.
            if !names.insert((subscription.queue.as_str(), name.as_str())) {
                return Err(SettingError::new(
                    field("name"),
                    format!(
                        "`{name}` is listed twice for queue `{}`",
                        subscription.queue
                    ),
                ));
            }
            if subscription.queue.is_empty() {
                return Err(SettingError::new(field("queue"), "must name a queue"));
            }
            check_settings(&subscription.settings(), self.allow_private_networks)
                .map_err(|(name, message)| SettingError::new(field(name), message))?;
        }
        Ok(())
    }
}

/// An endpoint's URL, checked: `https://` (or `http://` where private networks are allowed), a
/// host, no credentials in it.
pub(crate) fn endpoint_url(text: &str, allow_private_networks: bool) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|_| "must be an absolute http(s) URL".to_owned())?;
    match url.scheme() {
        "https" => {}
        "http" if allow_private_networks => {}
        "http" => {
            return Err(
                "must be https:// (plain http:// only with push.allow_private_networks)".into(),
            );
        }
        _ => return Err("must be an https:// URL".into()),
    }
    if url.host().is_none() {
        return Err("must name a host".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry credentials (they would show in logs)".into());
    }
    Ok(url)
}
