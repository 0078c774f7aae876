//! Secrets from the config: inline (development), from an environment variable, or from a file,
//! held in memory that is zeroed when dropped.

use crate::core::error::SettingError;
use std::path::PathBuf;
use zeroize::Zeroizing;

/// A secret given inline, by environment variable or by file (exactly one of the three).
pub fn read_secret(
    field: &str,
    secret: &Option<String>,
    secret_env: &Option<String>,
    secret_file: &Option<PathBuf>,
) -> Result<Zeroizing<String>, SettingError> {
    match (secret, secret_env, secret_file) {
        (Some(inline), None, None) => Ok(Zeroizing::new(inline.clone())),
        (None, Some(variable), None) => std::env::var(variable).map(Zeroizing::new).map_err(|_| {
            SettingError::new(
                format!("{field}.secret_env"),
                format!("environment variable {variable} is not set"),
            )
        }),
        (None, None, Some(path)) => std::fs::read_to_string(path)
            .map(|text| Zeroizing::new(text.trim().to_owned()))
            .map_err(|error| {
                SettingError::new(
                    format!("{field}.secret_file"),
                    format!("cannot read {}: {error}", path.display()),
                )
            }),
        _ => Err(SettingError::new(
            field,
            "give exactly one of `secret`, `secret_env` or `secret_file`",
        )),
    }
}
