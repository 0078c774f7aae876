//! Push subscriptions' endpoints: the adapter of the core's `PushEndpoint` port. It posts over
//! HTTP(S), signs as Standard Webhooks (`signing`), refuses addresses the gateway may not reach
//! (`guard`), and builds each configured subscription (`config`) for the core's runner.

pub mod config;
mod guard;
mod http;
mod signing;

pub use config::{BodyForm, PushConfig, SubscriptionConfig};
pub use signing::SECRET_PREFIX;

use crate::config::ConfigError;
use crate::core::Gateway;
use crate::core::clock::Clock;
use crate::core::push::{Subscription, runner};
use crate::credentials::secrets::read_secret;
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// An endpoint's URL, checked: `https://` (or `http://` where private networks are allowed), a
/// host, no credentials in it.
pub(crate) fn endpoint_url(text: &str, allow_private_networks: bool) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|_| "must be an absolute http(s) URL".to_owned())?;
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

/// Starts every configured subscription's runner on `gateway`; their signatures carry `clock`'s
/// time. The error names the field of a secret that cannot be read or used.
pub fn start(
    gateway: &Arc<Gateway>,
    config: &PushConfig,
    clock: Arc<dyn Clock>,
) -> Result<(), ConfigError> {
    if config.subscriptions.is_empty() {
        return Ok(());
    }
    let client = http::client(config.allow_private_networks)
        .map_err(|message| ConfigError::invalid("push", message))?;
    for (index, subscription) in config.subscriptions.iter().enumerate() {
        let field = format!("push.subscriptions[{index}]");
        let mut keys = Vec::new();
        let current = read_secret(
            &field,
            &subscription.secret,
            &subscription.secret_env,
            &subscription.secret_file,
        )?;
        keys.push(
            signing::SigningKey::parse(&current)
                .map_err(|message| ConfigError::invalid(format!("{field}.secret"), message))?,
        );
        let rotating = subscription.previous_secret.is_some()
            || subscription.previous_secret_env.is_some()
            || subscription.previous_secret_file.is_some();
        if rotating {
            let old = read_secret(
                &format!("{field}.previous"),
                &subscription.previous_secret,
                &subscription.previous_secret_env,
                &subscription.previous_secret_file,
            )?;
            keys.push(signing::SigningKey::parse(&old).map_err(|message| {
                ConfigError::invalid(format!("{field}.previous_secret"), message)
            })?);
        }
        let url = endpoint_url(&subscription.url, config.allow_private_networks)
            .map_err(|message| ConfigError::invalid(format!("{field}.url"), message))?;
        let endpoint = http::HttpEndpoint {
            client: client.clone(),
            url,
            keys,
            timeout: Duration::from_secs(subscription.timeout_seconds.into()),
            body: subscription.body,
            allow_private_networks: config.allow_private_networks,
            hold_on_202: subscription.hold_on_202,
            clock: Arc::clone(&clock),
        };
        runner::start(
            gateway,
            Subscription {
                name: subscription.name.clone(),
                queue: subscription.queue.clone(),
                max_concurrency: subscription.max_concurrency,
                max_per_second: subscription.max_per_second,
                visibility_timeout_seconds: subscription.visibility_timeout_seconds(),
                endpoint: Arc::new(endpoint),
            },
            config.delivery_log_entries,
        );
    }
    Ok(())
}
