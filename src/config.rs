//! The configuration: one TOML file, one serde tree, checked whole at start-up.
//!
//! Unknown fields and bad values fail with the field's path. Secrets (receipt keys) may be written
//! inline for development, or come from an environment variable or a file; API keys are stored as
//! hashes only.

use crate::backend::embedded::EmbeddedConfig;
use crate::backend::sqs::SqsConfig;
use crate::core::handle::Keyring;
use crate::core::ledger::UnknownDeliveries;
use crate::core::limits::Allowance;
use crate::core::model::QueueSettings;
use crate::credentials::api_keys::{self, ApiKey, ApiKeys};
use crate::credentials::sqs_keys::SqsKey;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// A configuration that cannot be used; `field` is its dotted path.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    #[error("{field}: {message}")]
    /// A field is unusable: its dotted path, and what is wrong.
    Invalid {
        /// The field's dotted path.
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

impl ConfigError {
    fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// The whole configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The HTTP server.
    #[serde(default)]
    pub server: ServerConfig,
    /// Where messages live.
    pub backend: BackendConfig,
    /// Gateway queues by name, each mapped to a backend queue.
    #[serde(default)]
    pub queues: BTreeMap<String, QueueConfig>,
    /// Keys that seal receipt handles. The first seals; all open (list old keys after a rotation).
    #[serde(default)]
    pub receipt_keys: Vec<ReceiptKeyConfig>,
    /// The delivery ledger that tells current handles from stale ones.
    #[serde(default)]
    pub ledger: LedgerConfig,
    /// The ezgh pull-consumer API: organizations, projects and their queues.
    #[serde(default)]
    pub ezgh: EzghConfig,
    /// API keys (hashed) and what each may do.
    #[serde(default)]
    pub api_keys: Vec<ApiKeyConfig>,
    /// The SQS wire endpoint (AWS JSON 1.0) for AWS SDKs and tools.
    #[serde(default)]
    pub sqs_api: SqsApiConfig,
}

/// The SQS wire endpoint.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqsApiConfig {
    /// Accept requests without a SigV4 signature. Local development only: anyone who can reach
    /// the port can then use every queue.
    #[serde(default)]
    pub allow_unsigned: bool,
    /// Base of the queue URLs handed out (e.g. `https://queues.example.com`); default: `http://`
    /// and the Host the client used.
    pub public_url: Option<String>,
    /// The region clients sign for (the credential scope's region); default `us-east-1`.
    #[serde(default = "default_region")]
    pub region: String,
    /// Access keys, checked with AWS Signature Version 4.
    #[serde(default)]
    pub credentials: Vec<SqsCredentialConfig>,
    /// Serve CreateQueue, DeleteQueue, SetQueueAttributes and tags, and expose every backend queue
    /// by its own name (not only the configured ones). Keys still need the queue and the action.
    #[serde(default)]
    pub manage_queues: bool,
}

/// One access key of the SQS endpoint. SigV4 needs the secret itself (HMAC keys are derived from
/// it), so it cannot be stored hashed: give it through `secret_env` or `secret_file` so the config
/// file holds none; `secret` inline is for development.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqsCredentialConfig {
    /// The key's id (public).
    pub access_key_id: String,
    /// The secret inline (development only).
    pub secret: Option<String>,
    /// An environment variable holding the secret.
    pub secret_env: Option<String>,
    /// A file holding the secret.
    pub secret_file: Option<PathBuf>,
    /// Gateway queues the key may use (`*` for all). Default: all.
    #[serde(default = "everything")]
    pub queues: Vec<String>,
    /// SQS actions the key may call (`*` for all). Default: all.
    #[serde(default = "everything")]
    pub actions: Vec<String>,
}

impl Default for SqsApiConfig {
    fn default() -> Self {
        Self {
            allow_unsigned: false,
            public_url: None,
            region: default_region(),
            credentials: Vec::new(),
            manage_queues: false,
        }
    }
}

fn default_region() -> String {
    "us-east-1".to_owned()
}

fn everything() -> Vec<String> {
    vec!["*".to_owned()]
}

impl std::fmt::Debug for SqsCredentialConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqsCredentialConfig")
            .field("access_key_id", &self.access_key_id)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("secret_env", &self.secret_env)
            .field("secret_file", &self.secret_file)
            .field("queues", &self.queues)
            .field("actions", &self.actions)
            .finish()
    }
}

/// The HTTP server's settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address to listen on. Default `127.0.0.1:8787`; `--listen` or SQSGW_LISTEN override it.
    pub listen: SocketAddr,
    /// On shutdown, seconds to let in-flight requests finish before exiting anyway.
    pub shutdown_grace_seconds: u64,
    /// Take the client address from the last `X-Forwarded-For` entry (only behind a trusted proxy).
    pub trust_forwarded_for: bool,
    /// Seconds to cache queue URLs and attributes read from the backend.
    pub queue_cache_seconds: u64,
    /// Invalid receipt handles a client address may send a minute before it gets 429.
    pub invalid_handles_per_minute: NonZeroU32,
    /// Open client connections at most; more are answered 503 and closed. Bounded at start by
    /// the open-file limit (raised to its hard limit).
    pub max_connections: usize,
    /// Seconds a connection gets to send a whole request head once its first byte arrived.
    pub header_timeout_seconds: u64,
    /// Seconds a connection may stay open without a request in flight.
    pub idle_timeout_seconds: u64,
    /// Seconds a request gets to send its whole body.
    pub body_timeout_seconds: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8787)),
            shutdown_grace_seconds: 25,
            trust_forwarded_for: false,
            queue_cache_seconds: 60,
            invalid_handles_per_minute: NonZeroU32::new(100).expect("non-zero"),
            max_connections: 10_000,
            header_timeout_seconds: 10,
            idle_timeout_seconds: 60,
            body_timeout_seconds: 30,
        }
    }
}

/// Which backend keeps the messages.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum BackendConfig {
    /// Amazon SQS or LocalStack, through aws-sdk-sqs.
    Sqs(SqsConfig),
    /// The in-process engine, durable in a data directory (or in memory).
    Embedded(EmbeddedConfig),
}

/// One gateway queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// The SQS queue name or URL; default: the gateway queue's own name.
    pub sqs_queue: Option<String>,
    /// Receive requests on this queue, across all callers; none means unlimited.
    pub rate_limit: Option<RateLimitConfig>,
    /// Embedded backend only: settings the queue is created (or updated) with at start.
    /// The queue is FIFO when its name ends in `.fifo`. Unset fields take SQS's defaults.
    pub visibility_timeout_seconds: Option<u32>,
    /// Default delay of new messages, 0 to 900 seconds.
    pub delay_seconds: Option<u32>,
    /// Default long-poll wait of a receive, 0 to 20 seconds.
    pub receive_wait_seconds: Option<u32>,
    /// How long messages are kept, 60 to 1,209,600 seconds.
    pub retention_seconds: Option<u32>,
    /// Largest message, 1,024 to 1,048,576 bytes.
    pub max_message_bytes: Option<u32>,
    /// FIFO: deduplicate by the body's SHA-256.
    pub content_based_deduplication: Option<bool>,
    /// Embedded backend only: the gateway queue messages move to after `max_receive_count` receives.
    pub dead_letter_queue: Option<String>,
    /// Receives before a message moves to `dead_letter_queue`; default 5 when one is set.
    pub max_receive_count: Option<u32>,
}

impl QueueConfig {
    /// The settings an embedded queue is created with; `locators` maps gateway names to backend names.
    pub fn settings(&self, locators: &BTreeMap<String, String>) -> QueueSettings {
        QueueSettings {
            visibility_timeout_seconds: self.visibility_timeout_seconds,
            delay_seconds: self.delay_seconds,
            receive_wait_seconds: self.receive_wait_seconds,
            retention_seconds: self.retention_seconds,
            max_message_bytes: self.max_message_bytes,
            content_based_deduplication: self.content_based_deduplication,
            dead_letter: self.dead_letter_queue.as_ref().map(|queue| {
                (
                    locators
                        .get(queue)
                        .cloned()
                        .unwrap_or_else(|| queue.clone()),
                    self.max_receive_count.unwrap_or(5),
                )
            }),
        }
    }
}

/// One receipt-handle key: 32 random bytes, base64. Give exactly one of the three sources.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptKeyConfig {
    /// Key id written into each handle; distinct per key.
    pub id: u16,
    /// The key inline (development only: config files get copied around).
    pub secret: Option<String>,
    /// Name of an environment variable holding the key.
    pub secret_env: Option<String>,
    /// Path of a file holding the key.
    pub secret_file: Option<PathBuf>,
}

impl std::fmt::Debug for ReceiptKeyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiptKeyConfig")
            .field("id", &self.id)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("secret_env", &self.secret_env)
            .field("secret_file", &self.secret_file)
            .finish()
    }
}

/// Bounds of the delivery ledger.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LedgerConfig {
    /// Deliveries remembered at most; beyond it the least used are evicted (their handles turn stale).
    pub max_entries: u64,
    /// Seconds a delivery is remembered; after that its handle counts as unknown.
    pub ttl_seconds: u64,
    /// What a handle the ledger does not know does: `stale` (default, safe) or `pass_through`
    /// (acts on the backend; for several replicas without a shared ledger).
    pub unknown_deliveries: UnknownDeliveries,
}

impl Default for LedgerConfig {
    fn default() -> Self {
        Self {
            max_entries: 1_000_000,
            ttl_seconds: 24 * 3600,
            unknown_deliveries: UnknownDeliveries::Stale,
        }
    }
}

/// The ezgh API's tenancy: organizations own projects, projects own queues.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EzghConfig {
    /// Organizations by id.
    #[serde(default)]
    pub organizations: BTreeMap<String, OrganizationConfig>,
}

/// One ezgh organization.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrganizationConfig {
    /// Projects by id.
    #[serde(default)]
    pub projects: BTreeMap<String, ProjectConfig>,
    /// Receive requests the organization may make; none means unlimited.
    pub rate_limit: Option<RateLimitConfig>,
}

/// One ezgh project.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// ezgh queue id (the `{queue}` of the URL) -> gateway queue name.
    #[serde(default)]
    pub queues: BTreeMap<String, String>,
}

/// A request rate with a burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Steady requests per second.
    pub per_second: NonZeroU32,
    /// Requests allowed at once.
    pub burst: NonZeroU32,
}

impl From<RateLimitConfig> for Allowance {
    fn from(limit: RateLimitConfig) -> Self {
        Allowance {
            per_second: limit.per_second,
            burst: limit.burst,
        }
    }
}

/// One API key, as printed by `sqs-gateway new-api-key`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// The key's public id (the part after `sqsgw_`).
    pub id: String,
    /// A label for logs; default: the id.
    pub name: Option<String>,
    /// The ezgh organization the key belongs to.
    pub organization: String,
    /// `sha256:` and the hex SHA-256 of the whole key.
    pub hash: String,
    /// Gateway queue name (or `*`) -> actions (`queues.messages.receive`, or `*`).
    #[serde(default)]
    pub grants: BTreeMap<String, Vec<String>>,
}

impl Config {
    /// Reads, parses and checks a config file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text)
    }

    /// Parses and checks config text.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let deserializer = toml::Deserializer::parse(text)
            .map_err(|error| ConfigError::invalid("(file)", describe(text, &error)))?;
        let config: Config = serde_path_to_error::deserialize(deserializer).map_err(|error| {
            let field = error.path().to_string();
            ConfigError::invalid(
                if field == "." { "(file)".into() } else { field },
                describe(text, &error.into_inner()),
            )
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks what types alone cannot: references, secrets, bounds.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.server.shutdown_grace_seconds > 600 {
            return Err(ConfigError::invalid(
                "server.shutdown_grace_seconds",
                "must be at most 600",
            ));
        }
        let timeouts = [
            (
                "server.header_timeout_seconds",
                self.server.header_timeout_seconds,
                300,
            ),
            (
                "server.idle_timeout_seconds",
                self.server.idle_timeout_seconds,
                3600,
            ),
            (
                "server.body_timeout_seconds",
                self.server.body_timeout_seconds,
                600,
            ),
        ];
        for (field, seconds, max) in timeouts {
            if !(1..=max).contains(&seconds) {
                return Err(ConfigError::invalid(
                    field,
                    format!("must be 1 to {max} seconds"),
                ));
            }
        }
        if self.server.max_connections == 0 {
            return Err(ConfigError::invalid(
                "server.max_connections",
                "must be at least 1",
            ));
        }
        let region_ok = !self.sqs_api.region.is_empty()
            && self
                .sqs_api
                .region
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !region_ok {
            return Err(ConfigError::invalid(
                "sqs_api.region",
                "must be a region name such as `us-east-1`",
            ));
        }
        if self.ledger.max_entries == 0 {
            return Err(ConfigError::invalid(
                "ledger.max_entries",
                "must be at least 1",
            ));
        }
        if self.ledger.ttl_seconds < 60 {
            return Err(ConfigError::invalid(
                "ledger.ttl_seconds",
                "must be at least 60",
            ));
        }
        for name in self.queues.keys() {
            if !valid_name(name, 80) {
                return Err(ConfigError::invalid(
                    format!("queues.{name}"),
                    "queue names are 1 to 80 characters of A-Z, a-z, 0-9, '-', '_' and '.'",
                ));
            }
        }
        for (name, queue) in &self.queues {
            if let Some(target) = &queue.dead_letter_queue
                && !self.queues.contains_key(target)
            {
                return Err(ConfigError::invalid(
                    format!("queues.{name}.dead_letter_queue"),
                    format!("`{target}` is not a queue listed under [queues]"),
                ));
            }
            if let BackendConfig::Embedded(_) = self.backend {
                crate::backend::embedded::engine::Settings::new(
                    &self.queue_locators()[name],
                    &queue.settings(&self.queue_locators()),
                )
                .map_err(|message| ConfigError::invalid(format!("queues.{name}"), message))?;
            }
        }
        for (org, organization) in &self.ezgh.organizations {
            for (project, config) in &organization.projects {
                for (queue_id, gateway_queue) in &config.queues {
                    if !self.queues.contains_key(gateway_queue) {
                        return Err(ConfigError::invalid(
                            format!(
                                "ezgh.organizations.{org}.projects.{project}.queues.{queue_id}"
                            ),
                            format!("`{gateway_queue}` is not a queue listed under [queues]"),
                        ));
                    }
                }
            }
        }
        self.keyring()?;
        self.api_keys()?;
        self.sqs_credentials()?;
        Ok(())
    }

    /// The SQS endpoint's access keys, with secrets read from where the config says.
    pub fn sqs_credentials(&self) -> Result<Vec<SqsKey>, ConfigError> {
        let mut seen = BTreeSet::new();
        let mut credentials = Vec::new();
        for (index, credential) in self.sqs_api.credentials.iter().enumerate() {
            let field = format!("sqs_api.credentials[{index}]");
            if credential.access_key_id.is_empty() || !seen.insert(credential.access_key_id.clone())
            {
                return Err(ConfigError::invalid(
                    format!("{field}.access_key_id"),
                    "must be non-empty and distinct",
                ));
            }
            for queue in &credential.queues {
                if queue != "*" && !self.queues.contains_key(queue) {
                    return Err(ConfigError::invalid(
                        format!("{field}.queues"),
                        format!("`{queue}` is not a queue listed under [queues]"),
                    ));
                }
            }
            let secret = read_secret(
                &field,
                &credential.secret,
                &credential.secret_env,
                &credential.secret_file,
            )?;
            let key = SqsKey::new(
                credential.access_key_id.clone(),
                secret,
                &credential.queues,
                &credential.actions,
                self.sqs_api.manage_queues,
            )
            .map_err(|message| ConfigError::invalid(format!("{field}.actions"), message))?;
            credentials.push(key);
        }
        Ok(credentials)
    }

    /// The gateway queue -> backend locator map.
    pub fn queue_locators(&self) -> BTreeMap<String, String> {
        self.queues
            .iter()
            .map(|(name, queue)| {
                (
                    name.clone(),
                    queue.sqs_queue.clone().unwrap_or_else(|| name.clone()),
                )
            })
            .collect()
    }

    /// The receipt-handle keyring, with secrets read from where the config says.
    pub fn keyring(&self) -> Result<Keyring, ConfigError> {
        if self.receipt_keys.is_empty() {
            return Err(ConfigError::invalid(
                "receipt_keys",
                "at least one key is required (make one with `sqs-gateway new-receipt-key`)",
            ));
        }
        let mut keys = Vec::with_capacity(self.receipt_keys.len());
        for (index, key) in self.receipt_keys.iter().enumerate() {
            let field = format!("receipt_keys[{index}]");
            let secret = read_secret(&field, &key.secret, &key.secret_env, &key.secret_file)?;
            let bytes = Keyring::decode_key(key.id, &secret)
                .map_err(|error| ConfigError::invalid(&field, error.to_string()))?;
            keys.push((key.id, bytes));
        }
        Keyring::new(keys).map_err(|error| ConfigError::invalid("receipt_keys", error.to_string()))
    }

    /// The API keys, checked against the organizations and queues.
    pub fn api_keys(&self) -> Result<ApiKeys, ConfigError> {
        let mut keys = Vec::with_capacity(self.api_keys.len());
        for (index, key) in self.api_keys.iter().enumerate() {
            let field = |name: &str| format!("api_keys[{index}].{name}");
            if !key.id.chars().all(|c| c.is_ascii_alphanumeric()) || key.id.is_empty() {
                return Err(ConfigError::invalid(
                    field("id"),
                    "must be letters and digits",
                ));
            }
            if !self.ezgh.organizations.contains_key(&key.organization) {
                return Err(ConfigError::invalid(
                    field("organization"),
                    format!("`{}` is not under [ezgh.organizations]", key.organization),
                ));
            }
            let mut grants = BTreeMap::new();
            for (queue, actions) in &key.grants {
                if queue != "*" && !self.queues.contains_key(queue) {
                    return Err(ConfigError::invalid(
                        field(&format!("grants.{queue}")),
                        "not a queue listed under [queues] (or `*`)",
                    ));
                }
                for action in actions {
                    if action != "*" && !api_keys::ACTIONS.iter().any(|(name, _)| name == action) {
                        let known: Vec<&str> =
                            api_keys::ACTIONS.iter().map(|(name, _)| *name).collect();
                        return Err(ConfigError::invalid(
                            field(&format!("grants.{queue}")),
                            format!("unknown action `{action}`; known: {}", known.join(", ")),
                        ));
                    }
                }
                grants.insert(
                    queue.clone(),
                    actions.iter().cloned().collect::<BTreeSet<_>>(),
                );
            }
            let record = ApiKey::new(
                key.id.clone(),
                key.name.clone().unwrap_or_else(|| key.id.clone()),
                key.organization.clone(),
                &key.hash,
                &grants,
            )
            .map_err(|message| ConfigError::invalid(field("hash"), message))?;
            keys.push(record);
        }
        ApiKeys::new(keys).map_err(|message| ConfigError::invalid("api_keys", message))
    }

    /// Receive allowances per gateway queue.
    pub fn queue_allowances(&self) -> Vec<(String, Allowance)> {
        self.queues
            .iter()
            .filter_map(|(name, queue)| queue.rate_limit.map(|limit| (name.clone(), limit.into())))
            .collect()
    }

    /// Request allowances per ezgh organization.
    pub fn ezgh_allowances(&self) -> Vec<(String, Allowance)> {
        self.ezgh
            .organizations
            .iter()
            .filter_map(|(name, org)| org.rate_limit.map(|limit| (name.clone(), limit.into())))
            .collect()
    }
}

/// A TOML error as one line: its message and, where known, its line number.
fn describe(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim().replace('\n', " ");
    match error.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("{message} (line {line})")
        }
        None => message,
    }
}

fn valid_name(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn read_secret(
    field: &str,
    secret: &Option<String>,
    secret_env: &Option<String>,
    secret_file: &Option<PathBuf>,
) -> Result<Zeroizing<String>, ConfigError> {
    match (secret, secret_env, secret_file) {
        (Some(inline), None, None) => Ok(Zeroizing::new(inline.clone())),
        (None, Some(variable), None) => std::env::var(variable).map(Zeroizing::new).map_err(|_| {
            ConfigError::invalid(
                format!("{field}.secret_env"),
                format!("environment variable {variable} is not set"),
            )
        }),
        (None, None, Some(path)) => std::fs::read_to_string(path)
            .map(|text| Zeroizing::new(text.trim().to_owned()))
            .map_err(|error| {
                ConfigError::invalid(
                    format!("{field}.secret_file"),
                    format!("cannot read {}: {error}", path.display()),
                )
            }),
        _ => Err(ConfigError::invalid(
            field,
            "give exactly one of `secret`, `secret_env` or `secret_file`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    fn minimal() -> String {
        format!(
            r#"
[backend]
kind = "sqs"
endpoint_url = "http://127.0.0.1:4566"

[queues.orders]
sqs_queue = "orders-prod"

[[receipt_keys]]
id = 1
secret = "{KEY}"

[ezgh.organizations.acme.projects.shop]
queues = {{ orders = "orders" }}
"#
        )
    }

    fn error_of(text: &str) -> String {
        Config::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn a_minimal_config_parses_with_defaults() {
        let config = Config::parse(&minimal()).unwrap();
        assert_eq!(config.server.listen.to_string(), "127.0.0.1:8787");
        assert_eq!(config.queue_locators()["orders"], "orders-prod");
        assert_eq!(
            config.backend,
            BackendConfig::Sqs(SqsConfig {
                endpoint_url: Some("http://127.0.0.1:4566".into()),
                region: None,
                connect_timeout_seconds: 3,
            })
        );
    }

    #[test]
    fn unknown_fields_name_their_path() {
        let text = minimal().replace("sqs_queue", "sqs_qeue");
        assert!(
            error_of(&text).starts_with("queues.orders.sqs_qeue: unknown field"),
            "{}",
            error_of(&text)
        );
        let text = minimal().replace("endpoint_url", "endpoint");
        assert!(
            error_of(&text).starts_with("backend"),
            "{}",
            error_of(&text)
        );
        let text = format!("{}\n[server]\nlisten = \"nope\"\n", minimal());
        assert!(
            error_of(&text).starts_with("server.listen:"),
            "{}",
            error_of(&text)
        );
    }

    #[test]
    fn references_and_secrets_are_checked() {
        let text = minimal().replace("orders = \"orders\"", "orders = \"missing\"");
        assert!(
            error_of(&text).starts_with("ezgh.organizations.acme.projects.shop.queues.orders:")
        );
        let text = minimal().replace(KEY, "c2hvcnQ=");
        assert!(error_of(&text).starts_with("receipt_keys[0]:"));
        let text = minimal().replace(
            &format!("secret = \"{KEY}\""),
            "secret_env = \"SQSGW_TEST_SURELY_UNSET\"",
        );
        assert_eq!(
            error_of(&text),
            "receipt_keys[0].secret_env: environment variable SQSGW_TEST_SURELY_UNSET is not set"
        );
        let generated = api_keys::generate_key();
        let with_key = format!(
            "{}\n[[api_keys]]\nid = \"{}\"\norganization = \"acme\"\nhash = \"{}\"\ngrants = {{ nope = [\"queues.messages.receive\"] }}\n",
            minimal(),
            generated.id,
            generated.hash
        );
        assert!(error_of(&with_key).starts_with("api_keys[0].grants.nope:"));
        let bad_action = with_key
            .replace("nope", "orders")
            .replace("queues.messages.receive", "fly");
        assert!(error_of(&bad_action).contains("unknown action `fly`"));
    }

    #[test]
    fn secrets_never_show_in_debug_output() {
        let config = Config::parse(&minimal()).unwrap();
        assert!(!format!("{config:?}").contains(KEY));
    }
}
