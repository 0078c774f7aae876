//! Connecting to the Redis or Valkey server: the address from the config, the ACL user and
//! password beside it (never in the URL, never in a log line), TLS for `rediss://` with the
//! system's roots, and the one reconnecting connection every user of the server shares (the
//! state store, the sombus credential store, the basaltic metrics history), each command bounded
//! by the configured timeout and its failures told without the password. A Redis Cluster
//! (`cluster = true`) is reached through its seed nodes, each command routed to the node that
//! holds its keys' slot.

use super::config::RedisStateConfig;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{
    Cmd, ConnectionInfo, FromRedisValue, IntoConnectionInfo, Pipeline, RedisFuture, Value,
};
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

/// The way to the server: one node, or a cluster's nodes by slot. Both connect on first use and
/// reconnect after a failure.
#[derive(Clone)]
enum Link {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, command: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(connection) => connection.req_packed_command(command),
            Self::Cluster(connection) => connection.req_packed_command(command),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(connection) => connection.req_packed_commands(pipeline, offset, count),
            Self::Cluster(connection) => connection.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(connection) => connection.get_db(),
            Self::Cluster(connection) => connection.get_db(),
        }
    }
}

/// The server: one multiplexed connection (to the node, or to each node of the cluster) that
/// connects on first use and reconnects after a failure, the key prefix, and the bound on each
/// command. Cheap to clone; clones share the connection and the count of calls.
#[derive(Clone)]
pub struct RedisServer {
    connection: Link,
    /// For subscriptions, which need a connection of their own: the node, or each seed node of
    /// the cluster (a message published on one node of a cluster reaches every node's
    /// subscribers), tried in turn.
    subscribers: Arc<[redis::Client]>,
    next_subscriber: Arc<AtomicU64>,
    clustered: bool,
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
        let nodes = config
            .node_urls()
            .map(|url| {
                url.into_connection_info()
                    .map_err(|_| ConnectError("url is not a Redis address".to_owned()))
            })
            .collect::<Result<Vec<ConnectionInfo>, _>>()?;
        if nodes
            .iter()
            .any(|node| matches!(node.addr(), redis::ConnectionAddr::TcpTls { .. }))
        {
            // redis-rs builds its TLS config from the process's default provider; with two
            // compiled in (aws-lc-rs, and ring for reqwest) there is none until one is
            // installed. The one the gateway uses everywhere else; an earlier install stands.
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        }
        let with_credentials = |info: ConnectionInfo| {
            let mut settings = info.redis_settings().clone();
            if let Some(username) = &config.username {
                settings = settings.set_username(username);
            }
            if let Some(password) = &password {
                settings = settings.set_password(password.as_str());
            }
            info.set_redis_settings(settings)
        };
        let subscribers = nodes
            .iter()
            .cloned()
            .map(|node| {
                redis::Client::open(with_credentials(node)).map_err(|error| {
                    ConnectError(format!("cannot use the address: {:?}", error.kind()))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let connection = if config.cluster {
            let mut builder = ClusterClientBuilder::new(nodes)
                .connection_timeout(timeout)
                .response_timeout(timeout)
                .retries(2)
                .min_retry_wait(50)
                .max_retry_wait(500);
            if let Some(username) = &config.username {
                builder = builder.username(username);
            }
            if let Some(password) = &password {
                builder = builder.password(password.as_str());
            }
            let client = builder.build().map_err(|error| {
                ConnectError(format!("cannot use the cluster: {:?}", error.kind()))
            })?;
            let settings = ClusterConfig::new()
                .set_connection_timeout(timeout)
                .set_response_timeout(timeout);
            Link::Cluster(client.get_pending_async_connection_with_config(settings))
        } else {
            let manager = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(timeout))
                .set_response_timeout(Some(timeout))
                .set_number_of_retries(2)
                .set_min_delay(Duration::from_millis(50))
                .set_max_delay(Duration::from_millis(500));
            let node = subscribers[0].clone();
            Link::Single(
                ConnectionManager::new_lazy_with_config(node, manager)
                    .map_err(|error| ConnectError(format!("cannot connect: {:?}", error.kind())))?,
            )
        };
        Ok(Self {
            connection,
            subscribers: subscribers.into(),
            next_subscriber: Arc::new(AtomicU64::new(0)),
            clustered: config.cluster,
            prefix: config.prefix.clone(),
            timeout,
            redact: Arc::new(Redaction { password }),
            calls: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Whether the server is a Redis Cluster: a script or pipeline may then only touch keys of
    /// one slot (one hash tag).
    pub fn clustered(&self) -> bool {
        self.clustered
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
    /// timeout; each call after a failure tries the next seed node of a cluster.
    pub async fn subscribe(&self, channel: &str) -> Result<redis::aio::PubSub, RedisFailure> {
        let turn = self.next_subscriber.fetch_add(1, Ordering::Relaxed);
        let node = &self.subscribers[(turn % self.subscribers.len() as u64) as usize];
        let connect = async {
            let mut pubsub = node.get_async_pubsub().await?;
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
