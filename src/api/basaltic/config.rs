//! The basaltic API's section of the config (`[basaltic]`): its keys.

use crate::core::error::SettingError;
use crate::credentials::basaltic_keys::{BasalticKeyConfig, BasalticKeys};
use serde::Deserialize;

/// `[basaltic]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BasalticConfig {
    /// Bearer keys with permissions per queue UUID (or `*`).
    pub keys: Vec<BasalticKeyConfig>,
}

impl BasalticConfig {
    /// The keys, checked.
    pub fn keys(&self) -> Result<BasalticKeys, SettingError> {
        BasalticKeys::from_config(&self.keys)
            .map_err(|(field, message)| SettingError::new(field, message))
    }
}
