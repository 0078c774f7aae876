//! Connecting to the Redis or Valkey server: the address from the config, the ACL user and
//! password beside it (never in the URL, never in a log line), TLS for `rediss://` with the
//! system's roots, and the reconnecting connection every command shares.

use crate::config::RedisStateConfig;
use redis::IntoConnectionInfo;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;
use zeroize::Zeroizing;

/// Why the store could not be set up (the address or the password, not the server's health:
/// a server that is down is waited for).
#[derive(Debug, thiserror::Error)]
#[error("state.redis: {0}")]
pub struct ConnectError(String);

/// Takes the password out of text that may be logged.
#[derive(Default)]
pub(super) struct Redaction {
    password: Option<Zeroizing<String>>,
}

impl Redaction {
    pub(super) fn text(&self, text: &str) -> String {
        match &self.password {
            Some(password) if !password.is_empty() => text.replace(password.as_str(), "<redacted>"),
            _ => text.to_owned(),
        }
    }
}

/// A connection that connects on first use and reconnects after a failure, each command
/// bounded by `timeout`.
pub(super) fn connect(
    config: &RedisStateConfig,
    timeout: Duration,
) -> Result<(ConnectionManager, Redaction), ConnectError> {
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
        // redis-rs builds its TLS config from the process's default provider; with two compiled
        // in (aws-lc-rs, and ring for reqwest) there is none until one is installed. The one
        // the gateway uses everywhere else; an earlier install stands.
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
    let connection = ConnectionManager::new_lazy_with_config(client, manager)
        .map_err(|error| ConnectError(format!("cannot connect: {:?}", error.kind())))?;
    Ok((connection, Redaction { password }))
}
