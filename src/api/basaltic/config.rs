//! The basaltic API's section of the config (`[basaltic]`): its keys.

use crate::core::error::SettingError;
use crate::credentials::basaltic_keys::{BasalticKeyConfig, BasalticKeys};
use serde::Deserialize;

/// `[basaltic]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BasalticConfig {
    /// Bearer keys with permissions per queue UUID (or `*`).
    pub keys: Vec<BasalticKeyConfig>,
    /// Seconds between two metrics samples of every queue (1 to 3600).
    pub metrics_interval_seconds: u64,
    /// Every gateway queue other APIs reach is a basaltic queue too (under an id derived from its
    /// name), and a queue created here is the gateway queue of its name. Off, basaltic has only
    /// the queues it made, under reserved names: a key's `*` grant then reaches nothing else.
    pub all_queues: bool,
    /// Queues (by basaltic name, or `*` for all) whose messages `GET …/messages/export` refuses
    /// to export (403), for queues whose bodies are sensitive; inspecting them page by page
    /// still takes `inspect` only.
    pub export_disabled: Vec<String>,
}

impl Default for BasalticConfig {
    fn default() -> Self {
        Self {
            keys: Vec::new(),
            metrics_interval_seconds: 10,
            all_queues: false,
            export_disabled: Vec::new(),
        }
    }
}

impl BasalticConfig {
    /// Checks the section.
    pub fn validate(&self) -> Result<(), SettingError> {
        if !(1..=3600).contains(&self.metrics_interval_seconds) {
            return Err(SettingError::new(
                "basaltic.metrics_interval_seconds",
                "must be 1 to 3600",
            ));
        }
        self.keys().map(|_| ())
    }

    /// The keys, checked.
    pub fn keys(&self) -> Result<BasalticKeys, SettingError> {
        BasalticKeys::from_config(&self.keys)
            .map_err(|(field, message)| SettingError::new(field, message))
    }
}
