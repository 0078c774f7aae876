//! The sombus HTTPS pull API (`../shared/seeds/002_…`): a consumer connection swaps its client id
//! and secret for an access token at `/v1/oauth/token`, then receives, acknowledges and releases
//! the messages of its own queue, and reads its skill registrations. Connections, their queues
//! and credentials are managed through the admin API (`/v1/admin/…`, its own keys).

mod admin;
pub mod config;
mod connections;
pub mod error;
mod pull;
mod registrations;
mod router;
mod token;
pub mod wire;

use crate::core::Gateway;
use crate::core::clock::Clock;
use crate::credentials::admin_keys::AdminKeys;
use crate::credentials::oauth::CredentialCheck;
use config::TierConfig;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The largest request body of the pull, token and admin routes.
const BODY_LIMIT: usize = 64 * 1024;

/// What the sombus routes share.
pub struct SombusState {
    gateway: Arc<Gateway>,
    check: CredentialCheck,
    admin_keys: AdminKeys,
    tiers: BTreeMap<String, TierConfig>,
    registrations: Option<PathBuf>,
    public_url: Option<String>,
    client_addresses: crate::api::ClientAddressPolicy,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for SombusState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SombusState")
            .field("check", &self.check)
            .finish_non_exhaustive()
    }
}

impl SombusState {
    /// The dialect's state from its config section.
    pub fn new(
        gateway: Arc<Gateway>,
        section: &config::SombusConfig,
        admin_keys: AdminKeys,
        check: CredentialCheck,
        client_addresses: crate::api::ClientAddressPolicy,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            gateway,
            check,
            admin_keys,
            tiers: section.tiers(),
            registrations: section.registrations_file.clone(),
            public_url: section.public_url.clone(),
            client_addresses,
            clock,
        }
    }
}

/// Whether a path belongs to this API (its edge answers come in its shape).
pub fn serves_path(path: &str) -> bool {
    path.starts_with("/v1/tenants/") || path.starts_with("/v1/admin/") || is_token_path(path)
}

/// Whether a path is the token service's (its answers come in OAuth 2.0's shape).
pub fn is_token_path(path: &str) -> bool {
    path == "/v1/oauth/token" || path.starts_with("/v1/oauth/")
}
