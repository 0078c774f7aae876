//! Push subscriptions' endpoints: the adapter of the core's `PushEndpoint` port. It posts over
//! HTTP(S), signs as Standard Webhooks (`signing`), refuses addresses the gateway may not reach
//! (`guard`), and builds each subscription for the core's runner: the config file's (`config`)
//! and the ones made through the API (`managed`, with their store and audit trail).

pub mod config;
mod endpoint;
mod guard;
mod http;
pub mod managed;
mod signing;

pub use config::{BodyForm, PushConfig, SubscriptionConfig};
pub use signing::SECRET_PREFIX;

use crate::core::Gateway;
use crate::core::clock::Clock;
use crate::core::error::SettingError;
use crate::core::handle::Keyring;
use crate::core::push::record::{self, SecretSeal};
use crate::core::push::records::RecordStore;
use crate::core::push::runner;
use crate::credentials::secrets::read_secret;
use endpoint::EndpointMaker;
use std::sync::Arc;

/// Starts every configured subscription's runner on `gateway`, and the subscriptions made
/// through the API (kept in `store`); their signatures carry `clock`'s time. The error names the
/// field of a secret that cannot be read or used.
pub async fn start(
    gateway: &Arc<Gateway>,
    config: &PushConfig,
    store: Arc<dyn RecordStore>,
    keyring: &Keyring,
    clock: Arc<dyn Clock>,
) -> Result<(), SettingError> {
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
            .map_err(|message| SettingError::new(format!("{field}.secret"), message))?;
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
                    SettingError::new(format!("{field}.previous_secret"), message)
                })?,
                None,
            ))
        } else {
            None
        };
        let settings = subscription.settings();
        let endpoint = maker
            .endpoint(&settings, key, previous)
            .map_err(|message| SettingError::new(format!("{field}.url"), message))?;
        let built =
            endpoint::subscription(&subscription.name, &subscription.queue, &settings, endpoint);
        runner::start(gateway, built, config.delivery_log_entries);
    }
    let configured = config
        .subscriptions
        .iter()
        .map(|subscription| record::record_key(&subscription.queue, &subscription.name))
        .collect();
    let manager = managed::Manager::new(managed::ManagerParts {
        gateway: Arc::downgrade(gateway),
        store,
        seal: SecretSeal::new(keyring),
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
