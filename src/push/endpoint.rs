//! What every push subscription's endpoint is made of, whether the config file's or made through
//! the API: the checked URL, the shared HTTP client ([`EndpointMaker`]), the runner's share of the
//! settings ([`subscription`]) and the endpoint a change swaps in place ([`Swappable`]).

use super::config::{BodyForm, PushConfig, endpoint_url};
use super::{http, signing};
use crate::core::clock::Clock;
use crate::core::error::SettingError;
use crate::core::push::admin::Settings;
use crate::core::push::{PushEndpoint, Subscription};
use std::sync::Arc;
use std::time::Duration;
use url::Url;

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
    pub(crate) fn new(config: &PushConfig, clock: Arc<dyn Clock>) -> Result<Self, SettingError> {
        let roots = match &config.root_certificates_file {
            Some(path) => Some(std::fs::read(path).map_err(|error| {
                SettingError::new(
                    "push.root_certificates_file",
                    format!("cannot read {}: {error}", path.display()),
                )
            })?),
            None => None,
        };
        let client = http::client(config.allow_private_networks, roots.as_deref())
            .map_err(|message| SettingError::new("push", message))?;
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
