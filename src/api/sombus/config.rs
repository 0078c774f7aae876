//! The sombus API's section of the config (`[sombus]`): the token service's environment and
//! lifetimes, where connections are kept, quota tiers, skill registrations and admin keys.

use crate::core::error::SettingError;
use crate::credentials::admin_keys::{AdminKeyConfig, AdminKeys};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::PathBuf;

/// The tier every connection gets unless it names another.
pub const DEFAULT_TIER: &str = "standard";

/// `[sombus]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SombusConfig {
    /// The environment tokens are issued for; a token of another environment is refused (401).
    pub environment: String,
    /// How long an access token lives (`expires_in`), 60 to 86,400 seconds.
    pub token_lifetime_seconds: u32,
    /// How long a replica may use what it read of a connection before reading it again, 1 to 30
    /// seconds: the bound on how long a rotated or revoked credential keeps working anywhere.
    pub credential_recheck_seconds: u32,
    /// Where connections and the audit log are kept. Default: `<data_dir>/sombus` with the durable
    /// embedded engine, memory with the in-memory one, `sqs-gateway-data/sombus` with the sqs
    /// backend (point it at a directory the replicas share).
    pub credentials_dir: Option<PathBuf>,
    /// A JSON file of the skill registrations bound to connections (`GET …/skills`).
    pub registrations_file: Option<PathBuf>,
    /// The base URL shown with a new secret; default: `http://` and the request's `Host`.
    pub public_url: Option<String>,
    /// Quota tiers by name; `standard` is always there (20/s, bursts of 40, 100,000 a day)
    /// unless redefined.
    pub tiers: BTreeMap<String, TierConfig>,
    /// Keys of the admin API.
    pub admin_keys: Vec<AdminKeyConfig>,
}

impl Default for SombusConfig {
    fn default() -> Self {
        Self {
            environment: "local".into(),
            token_lifetime_seconds: 3600,
            credential_recheck_seconds: 25,
            credentials_dir: None,
            registrations_file: None,
            public_url: None,
            tiers: BTreeMap::new(),
            admin_keys: Vec::new(),
        }
    }
}

/// A quota tier: what each connection on it may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// Steady requests a second.
    pub requests_per_second: NonZeroU32,
    /// Requests at once.
    pub burst: NonZeroU32,
    /// Requests a day (UTC).
    pub requests_per_day: u64,
}

impl TierConfig {
    /// The documented standard tier.
    pub const STANDARD: TierConfig = TierConfig {
        requests_per_second: NonZeroU32::new(20).expect("20 is not zero"),
        burst: NonZeroU32::new(40).expect("40 is not zero"),
        requests_per_day: 100_000,
    };
}

impl SombusConfig {
    /// Checks the section.
    pub fn validate(&self) -> Result<(), SettingError> {
        if self.environment.is_empty()
            || self.environment.len() > 64
            || !self
                .environment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(SettingError::new(
                "sombus.environment",
                "1 to 64 letters, digits, `-` or `_`",
            ));
        }
        if !(60..=86_400).contains(&self.token_lifetime_seconds) {
            return Err(SettingError::new(
                "sombus.token_lifetime_seconds",
                "must be 60 to 86400",
            ));
        }
        if !(1..=30).contains(&self.credential_recheck_seconds) {
            return Err(SettingError::new(
                "sombus.credential_recheck_seconds",
                "must be 1 to 30 (tokens must stop within about 30 seconds of a change)",
            ));
        }
        if let Some(url) = &self.public_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(SettingError::new(
                "sombus.public_url",
                "must start with http:// or https://",
            ));
        }
        for (name, tier) in &self.tiers {
            if tier.requests_per_day == 0 {
                return Err(SettingError::new(
                    format!("sombus.tiers.{name}.requests_per_day"),
                    "must be at least 1",
                ));
            }
        }
        self.admin_keys().map(|_| ())
    }

    /// The tiers, `standard` included.
    pub fn tiers(&self) -> BTreeMap<String, TierConfig> {
        let mut tiers = self.tiers.clone();
        tiers
            .entry(DEFAULT_TIER.to_owned())
            .or_insert(TierConfig::STANDARD);
        tiers
    }

    /// The admin keys.
    pub fn admin_keys(&self) -> Result<AdminKeys, SettingError> {
        AdminKeys::from_config(&self.admin_keys)
            .map_err(|(field, message)| SettingError::new(field, message))
    }
}
