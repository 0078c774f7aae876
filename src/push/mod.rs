//! Push subscriptions' endpoints: the adapter of the core's `PushEndpoint` port. It posts over
//! HTTP(S), signs as Standard Webhooks (`signing`), refuses addresses the gateway may not reach
//! (`guard`), and builds each subscription for the core's runner: the config file's (`config`)
//! and the ones made through the API (`managed`, with their store and audit trail).

pub mod config;
mod guard;
mod http;
pub mod managed;
mod signing;

pub use config::{BodyForm, PushConfig, SubscriptionConfig};
pub use signing::SECRET_PREFIX;

use crate::config::ConfigError;
use crate::core::Gateway;
use crate::core::clock::Clock;
use crate::core::handle::Keyring;
use crate::core::push::admin::Settings;
use crate::core::push::{PushEndpoint, Subscription, runner};
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

/// Whether `url` names its host by an address push may not reach without
/// `allow_private_networks` (or by `localhost`, which is always loopback): a subscription to it
/// could never deliver.
pub(crate) fn names_a_refused_host(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(address)) => !guard::is_public(address.into()),
        Some(url::Host::Ipv6(address)) => !guard::is_public(address.into()),
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        None => false,
    }
}

/// An endpoint as its managers see it: scheme, host and path, never a query or credentials.
pub(crate) fn url_without_query(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

/// An endpoint as readers, logs and the audit trail see it: scheme, host and port.
pub(crate) fn describe_url(url: &Url) -> String {
    crate::core::push::endpoint_for_readers(url.as_str())
}

/// What every subscription's endpoint shares: the HTTP client, the address rule, the clock.
#[derive(Clone)]
pub struct EndpointMaker {
    client: reqwest::Client,
    allow_private_networks: bool,
    clock: Arc<dyn Clock>,
}

impl EndpointMaker {
    /// The shared client of `config` (its extra roots read now).
    pub(crate) fn new(config: &PushConfig, clock: Arc<dyn Clock>) -> Result<Self, ConfigError> {
        let roots = match &config.root_certificates_file {
            Some(path) => Some(std::fs::read(path).map_err(|error| {
                ConfigError::invalid(
                    "push.root_certificates_file",
                    format!("cannot read {}: {error}", path.display()),
                )
            })?),
            None => None,
        };
        let client = http::client(config.allow_private_networks, roots.as_deref())
            .map_err(|message| ConfigError::invalid("push", message))?;
        Ok(Self {
            client,
            allow_private_networks: config.allow_private_networks,
            clock,
        })
    }

    /// The time the signatures carry.
    pub(crate) fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// An endpoint posting as `settings` says, signed with `key` (and `previous`, until its
    /// time if one is given).
    pub(crate) fn endpoint(
        &self,
        settings: &Settings,
        key: signing::SigningKey,
        previous: Option<(signing::SigningKey, Option<chrono::DateTime<chrono::Utc>>)>,
    ) -> Result<Arc<dyn PushEndpoint>, String> {
        let url = endpoint_url(&settings.url, self.allow_private_networks)?;
        Ok(Arc::new(http::HttpEndpoint {
            client: self.client.clone(),
            url,
            key,
            previous,
            timeout: Duration::from_secs(settings.timeout_seconds.into()),
            body: if settings.raw_body {
                BodyForm::Raw
            } else {
                BodyForm::Wrapped
            },
            allow_private_networks: self.allow_private_networks,
            hold_on_202: settings.hold_on_202,
            clock: Arc::clone(&self.clock),
        }))
    }
}

/// The subscription `name` of `queue` with the runner's share of `settings`, posting through
/// `endpoint`.
pub(crate) fn subscription(
    name: &str,
    queue: &str,
    settings: &Settings,
    endpoint: Arc<dyn PushEndpoint>,
) -> Subscription {
    Subscription {
        name: name.to_owned(),
        queue: queue.to_owned(),
        max_concurrency: settings.max_concurrency,
        max_per_second: settings.max_per_second,
        visibility_timeout_seconds: settings.lease_seconds(),
        endpoint,
    }
}

/// An endpoint a change replaces in place: the runner keeps running (and its receive in flight
/// with it), the next post goes where, and signed as, the change says.
pub(crate) struct Swappable(std::sync::RwLock<Arc<dyn PushEndpoint>>);

impl Swappable {
    /// Posting through `endpoint` for now.
    pub(crate) fn new(endpoint: Arc<dyn PushEndpoint>) -> Arc<Self> {
        Arc::new(Self(std::sync::RwLock::new(endpoint)))
    }

    /// Posts through `endpoint` from now on.
    pub(crate) fn swap(&self, endpoint: Arc<dyn PushEndpoint>) {
        *self
            .0
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = endpoint;
    }

    fn current(&self) -> Arc<dyn PushEndpoint> {
        Arc::clone(
            &self
                .0
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }
}

#[async_trait::async_trait]
impl PushEndpoint for Swappable {
    async fn push(
        &self,
        message: &crate::core::push::PushedMessage<'_>,
    ) -> crate::core::push::Pushed {
        let current = self.current();
        current.push(message).await
    }

    fn describe(&self) -> String {
        self.current().describe()
    }
}

/// Starts every configured subscription's runner on `gateway`, and the subscriptions made
/// through the API (kept in `store`); their signatures carry `clock`'s time. The error names the
/// field of a secret that cannot be read or used.
pub async fn start(
    gateway: &Arc<Gateway>,
    config: &PushConfig,
    store: Arc<dyn managed::RecordStore>,
    keyring: &Keyring,
    clock: Arc<dyn Clock>,
) -> Result<(), ConfigError> {
    let maker = EndpointMaker::new(config, clock)?;
    for (index, subscription) in config.subscriptions.iter().enumerate() {
        let field = format!("push.subscriptions[{index}]");
        let current = read_secret(
            &field,
            &subscription.secret,
            &subscription.secret_env,
            &subscription.secret_file,
        )?;
        let key = signing::SigningKey::parse(&current)
            .map_err(|message| ConfigError::invalid(format!("{field}.secret"), message))?;
        let rotating = subscription.previous_secret.is_some()
            || subscription.previous_secret_env.is_some()
            || subscription.previous_secret_file.is_some();
        let previous = if rotating {
            let old = read_secret(
                &format!("{field}.previous"),
                &subscription.previous_secret,
                &subscription.previous_secret_env,
                &subscription.previous_secret_file,
            )?;
            Some((
                signing::SigningKey::parse(&old).map_err(|message| {
                    ConfigError::invalid(format!("{field}.previous_secret"), message)
                })?,
                None,
            ))
        } else {
            None
        };
        let settings = subscription.settings();
        let endpoint = maker
            .endpoint(&settings, key, previous)
            .map_err(|message| ConfigError::invalid(format!("{field}.url"), message))?;
        let built =
            self::subscription(&subscription.name, &subscription.queue, &settings, endpoint);
        runner::start(gateway, built, config.delivery_log_entries);
    }
    let configured = config
        .subscriptions
        .iter()
        .map(|subscription| managed::record::record_key(&subscription.queue, &subscription.name))
        .collect();
    let manager = managed::Manager::new(managed::ManagerParts {
        gateway: Arc::downgrade(gateway),
        store,
        seal: managed::SecretSeal::new(keyring),
        maker,
        allow_private_networks: config.allow_private_networks,
        log_entries: config.delivery_log_entries,
        configured,
        most_per_queue: config.max_subscriptions_per_queue,
        most_in_all: config.max_subscriptions,
    });
    manager.start(gateway).await;
    Ok(())
}
