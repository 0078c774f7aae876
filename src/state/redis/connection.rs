//! Connecting to the Redis or Valkey server: the address from the config, the ACL user and
//! password beside it (never in the URL, never in a log line), TLS for `rediss://` with the
//! system's roots, and the one reconnecting connection every user of the server shares (the
//! state store, the sombus credential store, the basaltic metrics history), each command bounded
//! by the configured timeout and its failures told without the password.

use crate::config::RedisStateConfig;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, IntoConnectionInfo};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use zeroize::Zeroizing;

/// Why the store could not be set up (the address or the password, not the server's health:
/// a server that is down is waited for).
#[derive(Debug, thiserror::Error)]
#[error("state.redis: {0}")]
pub struct ConnectError(String);

/// A command that failed or got no answer in time: the server's text with the password taken
/// out (for the log; callers answer their own "unavailable").
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct RedisFailure(pub String);

/// Takes the password out of text that may be logged.
#[derive(Default)]
struct Redaction {
    password: Option<Zeroizing<String>>,
}

impl Redaction {
    fn text(&self, text: &str) -> String {
        match &self.password {
            Some(password) if !password.is_empty() => text.replace(password.as_str(), "<redacted>"),
            _ => text.to_owned(),
        }
    }
}

/// The server: one multiplexed connection that connects on first use and reconnects after a
/// failure, the key prefix, and the bound on each command. Cheap to clone; clones share the
/// connection and the count of calls.
#[derive(Clone)]
pub struct RedisServer {
    connection: ConnectionManager,
    /// For subscriptions, which need a connection of their own.
    client: redis::Client,
    prefix: String,
    timeout: Duration,
    redact: Arc<Redaction>,
    calls: Arc<AtomicU64>,
}

impl std::fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisServer")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisServer {
    /// The server `config` names; nothing is sent until the first command, so the gateway
    /// starts (not ready) while the server is down.
    pub fn connect(config: &RedisStateConfig) -> Result<Self, ConnectError> {
        let timeout = Duration::from_millis(config.timeout_ms);
        let password = config
            .password()
            .map_err(|error| ConnectError(error.to_string()))?;
        let info = config
            .url
            .as_str()
            .into_connection_info()
            .map_err(|_| ConnectError("url is not a Redis address".to_owned()))?;
        let mut settings = info.redis_settings().clone();
        if let Some(username) = &config.username {
            settings = settings.set_username(username);
        }
        if let Some(password) = &password {
            settings = settings.set_password(password.as_str());
        }
        let info = info.set_redis_settings(settings);
        if matches!(info.addr(), redis::ConnectionAddr::TcpTls { .. }) {
            // redis-rs builds its TLS config from the process's default provider; with two
            // compiled in (aws-lc-rs, and ring for reqwest) there is none until one is
            // installed. The one the gateway uses everywhere else; an earlier install stands.
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        }
        let client = redis::Client::open(info)
            .map_err(|error| ConnectError(format!("cannot use the address: {:?}", error.kind())))?;
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(500));
        let connection = ConnectionManager::new_lazy_with_config(client.clone(), manager)
            .map_err(|error| ConnectError(format!("cannot connect: {:?}", error.kind())))?;
        Ok(Self {
            connection,
            client,
            prefix: config.prefix.clone(),
            timeout,
            redact: Arc::new(Redaction { password }),
            calls: Arc::new(AtomicU64::new(0)),
        })
    }

    /// `rest` under the configured prefix.
    pub fn key(&self, rest: &str) -> String {
        format!("{}{rest}", self.prefix)
    }

    /// The bound on one command.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Calls made so far by every clone (each one round trip).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Runs a script within the timeout.
    pub async fn invoke<T: FromRedisValue>(
        &self,
        invocation: redis::ScriptInvocation<'_>,
    ) -> Result<T, RedisFailure> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut connection = self.connection.clone();
        self.bounded(invocation.invoke_async(&mut connection)).await
    }

    /// Runs a command within the timeout.
    pub async fn query<T: FromRedisValue>(&self, command: &redis::Cmd) -> Result<T, RedisFailure> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut connection = self.connection.clone();
        self.bounded(command.query_async(&mut connection)).await
    }

    /// Runs a pipeline (one round trip) within the timeout.
    pub async fn pipeline<T: FromRedisValue>(
        &self,
        pipeline: &redis::Pipeline,
    ) -> Result<T, RedisFailure> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut connection = self.connection.clone();
        self.bounded(pipeline.query_async(&mut connection)).await
    }

    /// A connection subscribed to `channel` (its own, as subscriptions need), within the
    /// timeout.
    pub async fn subscribe(&self, channel: &str) -> Result<redis::aio::PubSub, RedisFailure> {
        let connect = async {
            let mut pubsub = self.client.get_async_pubsub().await?;
            pubsub.subscribe(channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        self.bounded(connect).await
    }

    async fn bounded<T>(
        &self,
        work: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, RedisFailure> {
        match tokio::time::timeout(self.timeout, work).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(RedisFailure(self.redact.text(&format!("redis: {error}")))),
            Err(_) => Err(RedisFailure(format!(
                "redis: no answer within {} ms",
                self.timeout.as_millis()
            ))),
        }
    }
}
