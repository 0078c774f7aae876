//! The configuration: one TOML file, one serde tree, checked whole at start-up.
//!
//! Unknown fields and bad values fail with the field's path. Secrets (receipt keys) may be written
//! inline for development, or come from an environment variable or a file; API keys are stored as
//! hashes only.

use crate::api::basaltic::config::BasalticConfig;
use crate::api::ezgh::config::{ApiKeyConfig, EzghConfig};
use crate::api::sombus::config::SombusConfig;
use crate::api::sqs::config::SqsApiConfig;
use crate::backend::embedded::EmbeddedConfig;
use crate::backend::sqs::SqsConfig;
use crate::core::error::SettingError;
use crate::core::handle::Keyring;
use crate::core::limits::Allowance;
use crate::core::model::QueueSettings;
use crate::core::state::ledger::UnknownDeliveries;
use crate::credentials::api_keys::ApiKeys;
use crate::credentials::secrets::read_secret;
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

impl From<SettingError> for ConfigError {
    fn from(error: SettingError) -> Self {
        Self::Invalid {
            field: error.field,
            message: error.message,
        }
    }
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
    /// What the gateway does when its state store cannot answer.
    #[serde(default)]
    pub state: StateConfig,
    /// The ezgh pull-consumer API: organizations, projects and their queues.
    #[serde(default)]
    pub ezgh: EzghConfig,
    /// API keys (hashed) and what each may do.
    #[serde(default)]
    pub api_keys: Vec<ApiKeyConfig>,
    /// The SQS wire endpoint (AWS JSON 1.0) for AWS SDKs and tools.
    #[serde(default)]
    pub sqs_api: SqsApiConfig,
    /// The sombus HTTPS pull API: token service, connections, tiers, admin keys.
    #[serde(default)]
    pub sombus: SombusConfig,
    /// The basaltic queue API: its keys.
    #[serde(default)]
    pub basaltic: BasalticConfig,
    /// The Prometheus scrape: where, and how often gauges are sampled.
    #[serde(default)]
    pub metrics: MetricsConfig,
}

/// The Prometheus scrape (`GET /metrics`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Serve `/metrics` at all.
    pub enabled: bool,
    /// Serve it on this address only (plain HTTP, meant for a private network), not on the API
    /// listener. Unset: on the API listener.
    pub listen: Option<SocketAddr>,
    /// Seconds between samples of the gauges (queue depths, the ledger), 1 to 3,600.
    pub sample_seconds: u64,
    /// Label the depth gauges of the gateway's reserved queues (sombus connections' queues,
    /// which carry workspace and client ids) by name; unset, they are summed under one label.
    /// For a `/metrics` only operators reach.
    pub name_reserved_queues: bool,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            listen: None,
            sample_seconds: 15,
            name_reserved_queues: false,
        }
    }
}

/// TLS termination in the gateway: a certificate chain and its key, PEM files, re-read on
/// SIGHUP and when they change.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// The certificate chain, leaf first (PEM).
    pub certificate_file: PathBuf,
    /// The private key of the leaf (PEM: PKCS#8, PKCS#1 or SEC1).
    pub private_key_file: PathBuf,
    /// Seconds between looks at the files for a change, 1 to 3,600 (SIGHUP re-reads at once).
    #[serde(default = "TlsConfig::default_check_seconds")]
    pub reload_check_seconds: u64,
}

impl TlsConfig {
    fn default_check_seconds() -> u64 {
        10
    }
}

/// The most `server.worker_threads` accepted.
pub const MAX_WORKER_THREADS: usize = 1024;

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
    /// Open connections one client address (an IPv6 /64) may hold at most; more are answered 503
    /// and closed. Unset: half of `max_connections`, so one address can never take every slot.
    pub max_connections_per_address: Option<usize>,
    /// Backend receives left running for clients that went away (SQS) at which new receives
    /// look once instead of long-polling, 1 to 100,000.
    pub max_abandoned_receives: usize,
    /// Seconds a connection gets to send a whole request head once its first byte arrived.
    pub header_timeout_seconds: u64,
    /// Seconds a connection may stay open without a request in flight.
    pub idle_timeout_seconds: u64,
    /// Seconds a request gets to send its whole body.
    pub body_timeout_seconds: u64,
    /// Speak HTTP/2 beside HTTP/1.1: chosen by ALPN with TLS, by the client's preface on plain
    /// HTTP (h2c with prior knowledge).
    pub http2: bool,
    /// Requests one HTTP/2 connection may have in flight at once (`SETTINGS_MAX_CONCURRENT_STREAMS`).
    pub http2_max_streams: u32,
    /// Threads serving requests; unset: one per core the process may use (cgroup quotas
    /// count). Fewer suit a gateway that shares its cores with other busy processes.
    pub worker_threads: Option<usize>,
    /// Terminate TLS here (HTTPS on `listen`); unset: plain HTTP.
    pub tls: Option<TlsConfig>,
    /// Seconds between looks at the config file for a change, 1 to 3,600: a changed file's keys
    /// are swapped in (SIGHUP re-reads at once).
    pub config_check_seconds: u64,
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
            max_connections_per_address: None,
            max_abandoned_receives: 1_000,
            header_timeout_seconds: 10,
            idle_timeout_seconds: 60,
            body_timeout_seconds: 30,
            http2: true,
            http2_max_streams: 100,
            worker_threads: None,
            tls: None,
            config_check_seconds: 2,
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
    pub rate_limit: Option<Allowance>,
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

/// The state store's failure policy (receives, acknowledgements and visibility changes always
/// answer unavailable when the ledger cannot answer; burst limits let requests through).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    /// Daily quotas when the store cannot count: `refuse` (default: 503 with `Retry-After`) or
    /// `admit` (uncounted).
    pub quotas_when_unavailable: crate::core::limits::QuotaPolicy,
    /// A Redis or Valkey server shared by every replica; without it the state is this process's.
    pub redis: Option<RedisStateConfig>,
    /// Where one node without `redis` keeps its state across a graceful restart (default
    /// `<data_dir>/state` on the durable engine, `sqs-gateway-data/state` over SQS).
    pub dir: Option<PathBuf>,
}

/// The shared state store: a Redis or Valkey server (`[state.redis]`).
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisStateConfig {
    /// `redis://host:port/db`, or `rediss://` for TLS; no credentials in it (they would travel
    /// into logs with the address): give `username` and the password's `secret*` field.
    pub url: String,
    /// The ACL user (Redis 6 and later); without it, the default user.
    pub username: Option<String>,
    /// The password inline (development only).
    pub secret: Option<String>,
    /// Name of an environment variable holding the password.
    pub secret_env: Option<String>,
    /// Path of a file holding the password.
    pub secret_file: Option<PathBuf>,
    /// Put before every key, so that several gateways can share one server.
    #[serde(default = "default_redis_prefix")]
    pub prefix: String,
    /// Milliseconds one command may take before the store counts as unavailable.
    #[serde(default = "default_redis_timeout_ms")]
    pub timeout_ms: u64,
    /// Whether the server is a Redis (or Valkey) Cluster: `url` and `nodes` are then seed nodes,
    /// and each command goes to the node that holds its slot.
    #[serde(default)]
    pub cluster: bool,
    /// More seed nodes of the cluster, besides `url` (with `cluster = true`).
    #[serde(default)]
    pub nodes: Vec<String>,
}

fn default_redis_prefix() -> String {
    "sqsgw:".to_owned()
}

fn default_redis_timeout_ms() -> u64 {
    1000
}

impl RedisStateConfig {
    /// The addresses to connect to: `url`, then the cluster's other seed nodes.
    pub fn node_urls(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.url.as_str()).chain(self.nodes.iter().map(String::as_str))
    }

    /// The password, if one is configured.
    pub fn password(&self) -> Result<Option<Zeroizing<String>>, SettingError> {
        if self.secret.is_none() && self.secret_env.is_none() && self.secret_file.is_none() {
            return Ok(None);
        }
        read_secret(
            "state.redis",
            &self.secret,
            &self.secret_env,
            &self.secret_file,
        )
        .map(Some)
    }
}

impl RedisStateConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if !self.nodes.is_empty() && !self.cluster {
            return Err(ConfigError::invalid(
                "state.redis.nodes",
                "names a cluster's seed nodes: set state.redis.cluster = true, or leave it out",
            ));
        }
        if self.nodes.len() > 32 {
            return Err(ConfigError::invalid(
                "state.redis.nodes",
                "lists at most 32 seed nodes",
            ));
        }
        let mut schemes = Vec::new();
        for (field, text) in std::iter::once(("state.redis.url", self.url.as_str())).chain(
            self.nodes
                .iter()
                .map(|node| ("state.redis.nodes", node.as_str())),
        ) {
            let url = Self::node_url(field, text)?;
            if self.cluster && !matches!(url.path(), "" | "/" | "/0") {
                return Err(ConfigError::invalid(
                    field,
                    "names a database other than 0, which a cluster does not have",
                ));
            }
            schemes.push(matches!(url.scheme(), "rediss" | "valkeys"));
        }
        if schemes.iter().any(|tls| *tls != schemes[0]) {
            return Err(ConfigError::invalid(
                "state.redis.nodes",
                "mixes TLS and plain seed nodes: use rediss:// for all of them or none",
            ));
        }
        if self.prefix.is_empty() || self.prefix.len() > 64 {
            return Err(ConfigError::invalid(
                "state.redis.prefix",
                "must be 1 to 64 characters",
            ));
        }
        if !(10..=60_000).contains(&self.timeout_ms) {
            return Err(ConfigError::invalid(
                "state.redis.timeout_ms",
                "must be 10 to 60000 milliseconds",
            ));
        }
        self.password()?;
        Ok(())
    }
}

impl RedisStateConfig {
    /// One address, checked: a Redis scheme, a host, no credentials.
    fn node_url(field: &str, text: &str) -> Result<url::Url, ConfigError> {
        let url = url::Url::parse(text)
            .map_err(|_| ConfigError::invalid(field, "is not a URL (redis://host:port/db)"))?;
        if !matches!(url.scheme(), "redis" | "rediss" | "valkey" | "valkeys") {
            return Err(ConfigError::invalid(
                field,
                "must start with redis://, rediss:// (TLS), valkey:// or valkeys://",
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(ConfigError::invalid(
                field,
                "must not hold credentials: give state.redis.username and secret_env or secret_file",
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(ConfigError::invalid(field, "names no host"));
        }
        Ok(url)
    }
}

impl std::fmt::Debug for RedisStateConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStateConfig")
            .field("url", &self.url)
            .field("username", &self.username)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("secret_env", &self.secret_env)
            .field("secret_file", &self.secret_file)
            .field("prefix", &self.prefix)
            .field("timeout_ms", &self.timeout_ms)
            .field("cluster", &self.cluster)
            .field("nodes", &self.nodes)
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
        if !(1..=3600).contains(&self.server.config_check_seconds) {
            return Err(ConfigError::invalid(
                "server.config_check_seconds",
                "must be 1 to 3600 seconds",
            ));
        }
        if !(1..=3600).contains(&self.metrics.sample_seconds) {
            return Err(ConfigError::invalid(
                "metrics.sample_seconds",
                "must be 1 to 3600 seconds",
            ));
        }
        if let Some(tls) = &self.server.tls
            && !(1..=3600).contains(&tls.reload_check_seconds)
        {
            return Err(ConfigError::invalid(
                "server.tls.reload_check_seconds",
                "must be 1 to 3600 seconds",
            ));
        }
        if self.server.max_connections == 0 {
            return Err(ConfigError::invalid(
                "server.max_connections",
                "must be at least 1",
            ));
        }
        if !(1..=100_000).contains(&self.server.max_abandoned_receives) {
            return Err(ConfigError::invalid(
                "server.max_abandoned_receives",
                "must be 1 to 100000",
            ));
        }
        if self.server.max_connections_per_address == Some(0) {
            return Err(ConfigError::invalid(
                "server.max_connections_per_address",
                "must be at least 1",
            ));
        }
        if !(1..=1000).contains(&self.server.http2_max_streams) {
            return Err(ConfigError::invalid(
                "server.http2_max_streams",
                "must be 1 to 1000",
            ));
        }
        if self
            .server
            .worker_threads
            .is_some_and(|threads| !(1..=MAX_WORKER_THREADS).contains(&threads))
        {
            return Err(ConfigError::invalid(
                "server.worker_threads",
                format!("must be 1 to {MAX_WORKER_THREADS}"),
            ));
        }
        if let Some(redis) = &self.state.redis {
            redis.validate()?;
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
        self.keyring()?;
        let queues = self.queue_names();
        self.ezgh.validate(&self.api_keys, &queues)?;
        self.sqs_api.validate(&queues)?;
        self.sombus.validate()?;
        self.basaltic.validate()?;
        Ok(())
    }

    /// Where the sombus connections are kept: `None` for memory.
    pub fn credentials_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.sombus.credentials_dir {
            return Some(dir.clone());
        }
        match &self.backend {
            BackendConfig::Embedded(embedded) if embedded.in_memory => None,
            BackendConfig::Embedded(embedded) => Some(embedded.data_dir.join("sombus")),
            BackendConfig::Sqs(_) => Some(PathBuf::from("sqs-gateway-data").join("sombus")),
        }
    }

    /// Where this process keeps its in-process state across a graceful restart: `None` with a
    /// shared state server (the state lives there) or the in-memory engine (nothing outlives it).
    pub fn state_dir(&self) -> Option<PathBuf> {
        if self.state.redis.is_some() {
            return None;
        }
        match &self.backend {
            BackendConfig::Embedded(embedded) if embedded.in_memory => None,
            _ if self.state.dir.is_some() => self.state.dir.clone(),
            BackendConfig::Embedded(embedded) => Some(embedded.data_dir.join("state")),
            BackendConfig::Sqs(_) => Some(PathBuf::from("sqs-gateway-data").join("state")),
        }
    }

    /// The configured gateway queues.
    pub fn queue_names(&self) -> BTreeSet<String> {
        self.queues.keys().cloned().collect()
    }

    /// The ezgh API keys.
    pub fn api_keys(&self) -> Result<ApiKeys, ConfigError> {
        Ok(self.ezgh.api_keys(&self.api_keys, &self.queue_names())?)
    }

    /// The SQS endpoint's access keys.
    pub fn sqs_credentials(&self) -> Result<Vec<SqsKey>, ConfigError> {
        Ok(self.sqs_api.keys(&self.queue_names())?)
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

    /// Receive allowances per gateway queue.
    pub fn queue_allowances(&self) -> Vec<(String, Allowance)> {
        self.queues
            .iter()
            .filter_map(|(name, queue)| queue.rate_limit.map(|limit| (name.clone(), limit)))
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
    fn a_cluster_takes_seed_nodes_of_database_zero_all_tls_or_none() {
        let with = |redis: &str| format!("{}\n[state.redis]\n{redis}\n", minimal());
        let parsed = Config::parse(&with(
            "url = \"redis://a:6379\"\ncluster = true\nnodes = [\"redis://b:6379\", \"redis://c:6379/0\"]",
        ))
        .unwrap();
        let redis = parsed.state.redis.unwrap();
        assert_eq!(
            redis.node_urls().collect::<Vec<_>>(),
            ["redis://a:6379", "redis://b:6379", "redis://c:6379/0"]
        );
        let refused = error_of(&with(
            "url = \"redis://a:6379\"\nnodes = [\"redis://b:6379\"]",
        ));
        assert!(
            refused.contains("state.redis.nodes") && refused.contains("cluster = true"),
            "{refused}"
        );
        let refused = error_of(&with("url = \"redis://a:6379/2\"\ncluster = true"));
        assert!(
            refused.contains("state.redis.url") && refused.contains("database"),
            "{refused}"
        );
        let refused = error_of(&with(
            "url = \"rediss://a:6379\"\ncluster = true\nnodes = [\"redis://b:6379\"]",
        ));
        assert!(refused.contains("mixes TLS"), "{refused}");
        let refused = error_of(&with(
            "url = \"redis://a:6379\"\ncluster = true\nnodes = [\"redis://u:pw@b:6379\"]",
        ));
        assert!(
            refused.contains("state.redis.nodes") && !refused.contains("pw@"),
            "{refused}"
        );
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
    fn sombus_connections_are_kept_beside_the_messages_and_its_ranges_are_checked() {
        let sqs = Config::parse(&minimal()).unwrap();
        assert_eq!(
            sqs.credentials_dir(),
            Some(PathBuf::from("sqs-gateway-data/sombus"))
        );
        assert_eq!(sqs.sombus.tiers()["standard"].requests_per_day, 100_000);
        let embedded = |backend: &str| {
            Config::parse(&minimal().replace(
                "kind = \"sqs\"\nendpoint_url = \"http://127.0.0.1:4566\"",
                backend,
            ))
            .unwrap()
            .credentials_dir()
        };
        assert_eq!(
            embedded("kind = \"embedded\"\ndata_dir = \"/var/lib/gw\""),
            Some(PathBuf::from("/var/lib/gw/sombus"))
        );
        assert_eq!(embedded("kind = \"embedded\"\nin_memory = true"), None);
        let chosen = format!(
            "{}\n[sombus]\ncredentials_dir = \"/shared/creds\"\n",
            minimal()
        );
        assert_eq!(
            Config::parse(&chosen).unwrap().credentials_dir(),
            Some(PathBuf::from("/shared/creds"))
        );
        for (setting, field) in [
            (
                "credential_recheck_seconds = 31",
                "sombus.credential_recheck_seconds",
            ),
            (
                "token_lifetime_seconds = 59",
                "sombus.token_lifetime_seconds",
            ),
            ("environment = \"a b\"", "sombus.environment"),
        ] {
            let text = format!("{}\n[sombus]\n{setting}\n", minimal());
            assert!(error_of(&text).starts_with(field), "{setting}");
        }
    }

    #[test]
    fn a_per_address_connection_limit_is_at_least_one() {
        let config = Config::parse(&minimal()).unwrap();
        assert_eq!(config.server.max_connections_per_address, None);
        let text = format!("{}\n[server]\nmax_connections_per_address = 0\n", minimal());
        assert!(error_of(&text).starts_with("server.max_connections_per_address"));
    }

    #[test]
    fn http2_is_on_by_default_and_its_stream_limit_is_bounded() {
        let config = Config::parse(&minimal()).unwrap();
        assert!(config.server.http2);
        assert_eq!(config.server.http2_max_streams, 100);
        for streams in [0, 1001] {
            let text = format!("{}\n[server]\nhttp2_max_streams = {streams}\n", minimal());
            assert!(
                error_of(&text).starts_with("server.http2_max_streams"),
                "{streams}"
            );
        }
        let off = format!("{}\n[server]\nhttp2 = false\n", minimal());
        assert!(!Config::parse(&off).unwrap().server.http2);
    }

    #[test]
    fn worker_threads_default_to_the_cores_and_are_bounded() {
        assert_eq!(
            Config::parse(&minimal()).unwrap().server.worker_threads,
            None
        );
        let one = format!("{}\n[server]\nworker_threads = 1\n", minimal());
        assert_eq!(Config::parse(&one).unwrap().server.worker_threads, Some(1));
        for threads in [0, 1025] {
            let text = format!("{}\n[server]\nworker_threads = {threads}\n", minimal());
            assert!(
                error_of(&text).starts_with("server.worker_threads"),
                "{threads}"
            );
        }
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
        let generated = crate::credentials::api_keys::generate_key();
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
