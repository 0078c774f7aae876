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
use crate::core::gateway::CountLimits;
use crate::core::handle::Keyring;
use crate::core::limits::Allowance;
use crate::core::model::QueueSettings;
use crate::credentials::api_keys::ApiKeys;
use crate::credentials::secrets::read_secret;
use crate::credentials::sqs_keys::SqsKey;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::num::NonZeroU32;

mod state;
pub use state::{LedgerConfig, StateConfig};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
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
    /// Push subscriptions: endpoints the gateway posts a queue's messages to.
    #[serde(default)]
    pub push: crate::push::PushConfig,
    /// The gateway's own spans, exported over OTLP (off by default).
    #[serde(default)]
    pub tracing: crate::telemetry::TracingConfig,
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
    /// Queues whose counts are read from the backend at once, when many are counted together (a
    /// basaltic metrics round, the depth gauges, a queue list with counts), 1 to 256.
    pub count_concurrency: usize,
    /// Milliseconds one queue's count may take within such a reading before it is a gap for that
    /// queue alone, 100 to 60,000.
    pub count_timeout_ms: u64,
}

impl MetricsConfig {
    /// How many queues' counts are read together, and each one's deadline.
    pub fn count_limits(&self) -> CountLimits {
        CountLimits {
            concurrency: self.count_concurrency,
            per_queue: Duration::from_millis(self.count_timeout_ms),
        }
    }
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            listen: None,
            sample_seconds: 15,
            name_reserved_queues: false,
            count_concurrency: CountLimits::default().concurrency,
            count_timeout_ms: CountLimits::default().per_queue.as_millis() as u64,
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
    /// The proxies (addresses or CIDR blocks) whose `Forwarded` or `X-Forwarded-For` headers
    /// name the client: the nearest address of the chain that is not one of them.
    #[serde(deserialize_with = "networks")]
    pub trusted_proxies: Vec<ipnet::IpNet>,
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

/// Addresses (`10.0.0.7`, `2001:db8::7`) or CIDR blocks (`10.0.0.0/8`, `2001:db8::/32`).
fn networks<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ipnet::IpNet>, D::Error> {
    Vec::<String>::deserialize(deserializer)?
        .iter()
        .map(|entry| {
            entry
                .parse::<ipnet::IpNet>()
                .or_else(|_| entry.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map(|network| network.trunc())
                .map_err(|_| {
                    serde::de::Error::custom(format!(
                        "{entry:?} is neither an IP address nor a CIDR block like 10.0.0.0/8"
                    ))
                })
        })
        .collect()
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8787)),
            shutdown_grace_seconds: 25,
            trust_forwarded_for: false,
            trusted_proxies: Vec::new(),
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

/// One gateway queue. Its own type, turned into the core's `QueueSettings` by
/// [`QueueConfig::settings`] rather than flattening them in: serde's `flatten` does not work with
/// `deny_unknown_fields`, and a misspelt queue setting must be refused.
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
            remove_dead_letter: false,
            per_group_deduplication: None,
            per_group_throughput: None,
            kept: Default::default(),
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
        self.push.validate()?;
        self.tracing.validate()?;
        if let BackendConfig::Sqs(sqs) = &self.backend
            && !(1..=64).contains(&sqs.fan_in_calls_in_flight)
        {
            return Err(ConfigError::invalid(
                "backend.fan_in_calls_in_flight",
                "must be 1 to 64",
            ));
        }
        if let BackendConfig::Sqs(sqs) = &self.backend
            && sqs.fan_in_gather_ms > 100
        {
            return Err(ConfigError::invalid(
                "backend.fan_in_gather_ms",
                "must be 0 to 100",
            ));
        }
        if let BackendConfig::Sqs(sqs) = &self.backend
            && !(2..=1024).contains(&sqs.connections)
        {
            return Err(ConfigError::invalid(
                "backend.connections",
                "must be 2 to 1024",
            ));
        }
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
        if !(1..=256).contains(&self.metrics.count_concurrency) {
            return Err(ConfigError::invalid(
                "metrics.count_concurrency",
                "must be 1 to 256",
            ));
        }
        if !(100..=60_000).contains(&self.metrics.count_timeout_ms) {
            return Err(ConfigError::invalid(
                "metrics.count_timeout_ms",
                "must be 100 to 60000 milliseconds",
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
        if self.server.trust_forwarded_for && !self.server.trusted_proxies.is_empty() {
            return Err(ConfigError::invalid(
                "server.trust_forwarded_for",
                "set either it or server.trusted_proxies, not both: with trusted proxies only \
                 their forwarding headers count",
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

    /// Where the push subscriptions made through the API are kept without a shared state server
    /// (`None`: in memory, with the in-memory engine): `push.store_dir`, else `push` in the
    /// embedded engine's data directory, or over SQS beside the state (`state.dir`, default
    /// `sqs-gateway-data`).
    pub fn push_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.push.store_dir {
            return Some(dir.clone());
        }
        match &self.backend {
            BackendConfig::Embedded(embedded) if embedded.in_memory => None,
            BackendConfig::Embedded(embedded) => Some(embedded.data_dir.join("push")),
            BackendConfig::Sqs(_) => Some(
                self.state
                    .dir
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("sqs-gateway-data"))
                    .join("push"),
            ),
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
mod tests;
