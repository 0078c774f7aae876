//! The `[state.redis]` section: which Redis or Valkey server (or cluster) the replicas share, and
//! how to reach it.

use crate::core::error::SettingError;
use crate::credentials::secrets::read_secret;
use serde::Deserialize;
use std::path::PathBuf;
use zeroize::Zeroizing;

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
    /// What the types cannot check: the nodes' addresses, the prefix, the timeout, the password.
    pub fn validate(&self) -> Result<(), SettingError> {
        if !self.nodes.is_empty() && !self.cluster {
            return Err(SettingError::new(
                "state.redis.nodes",
                "names a cluster's seed nodes: set state.redis.cluster = true, or leave it out",
            ));
        }
        if self.nodes.len() > 32 {
            return Err(SettingError::new(
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
                return Err(SettingError::new(
                    field,
                    "names a database other than 0, which a cluster does not have",
                ));
            }
            schemes.push(matches!(url.scheme(), "rediss" | "valkeys"));
        }
        if schemes.iter().any(|tls| *tls != schemes[0]) {
            return Err(SettingError::new(
                "state.redis.nodes",
                "mixes TLS and plain seed nodes: use rediss:// for all of them or none",
            ));
        }
        if self.prefix.is_empty() || self.prefix.len() > 64 {
            return Err(SettingError::new(
                "state.redis.prefix",
                "must be 1 to 64 characters",
            ));
        }
        if !(10..=60_000).contains(&self.timeout_ms) {
            return Err(SettingError::new(
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
    fn node_url(field: &str, text: &str) -> Result<url::Url, SettingError> {
        let url = url::Url::parse(text)
            .map_err(|_| SettingError::new(field, "is not a URL (redis://host:port/db)"))?;
        if !matches!(url.scheme(), "redis" | "rediss" | "valkey" | "valkeys") {
            return Err(SettingError::new(
                field,
                "must start with redis://, rediss:// (TLS), valkey:// or valkeys://",
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(SettingError::new(
                field,
                "must not hold credentials: give state.redis.username and secret_env or secret_file",
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(SettingError::new(field, "names no host"));
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
