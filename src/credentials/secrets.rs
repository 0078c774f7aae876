//! Secrets from the config: inline (development), from an environment variable, or from a file,
//! held in memory that is zeroed when dropped.
//!
//! Every source is read alike: the blanks around the value (a file's or a variable's trailing
//! newline) are dropped, and a blank result is refused, so that an unset `${VAR}` turned into `""`
//! by a deployment tool stops the start instead of opening an endpoint.

use crate::core::error::SettingError;
use std::path::PathBuf;
use zeroize::Zeroizing;

/// The fewest characters a signing secret may have. SigV4 signs each request with a key derived
/// from the secret alone, so one signed request (in a proxy's log, say) lets anyone test guesses
/// offline as fast as they can compute HMACs: a short secret is found in minutes.
pub const MIN_SIGNING_SECRET_CHARS: usize = 16;

/// A secret given inline, by environment variable or by file (exactly one of the three), without
/// the blanks around it; a blank one is an error naming the field that gave it.
pub fn read_secret(
    field: &str,
    secret: &Option<String>,
    secret_env: &Option<String>,
    secret_file: &Option<PathBuf>,
) -> Result<Zeroizing<String>, SettingError> {
    read_source(field, secret, secret_env, secret_file).map(|(_, secret)| secret)
}

/// A secret that signs requests (SigV4): [`read_secret`]'s, and at least
/// [`MIN_SIGNING_SECRET_CHARS`] characters long.
pub fn read_signing_secret(
    field: &str,
    secret: &Option<String>,
    secret_env: &Option<String>,
    secret_file: &Option<PathBuf>,
) -> Result<Zeroizing<String>, SettingError> {
    let (source, secret) = read_source(field, secret, secret_env, secret_file)?;
    let length = secret.chars().count();
    if length < MIN_SIGNING_SECRET_CHARS {
        return Err(SettingError::new(
            source,
            format!(
                "the secret has fewer than {MIN_SIGNING_SECRET_CHARS} characters (it has {length}): \
                 one signed request lets anyone test guesses of a short secret offline"
            ),
        ));
    }
    Ok(secret)
}

/// The trimmed, non-blank secret and the name of the field it came from.
fn read_source(
    field: &str,
    secret: &Option<String>,
    secret_env: &Option<String>,
    secret_file: &Option<PathBuf>,
) -> Result<(String, Zeroizing<String>), SettingError> {
    // The field the secret came from, its text, and what held it (for the error when blank).
    let (source, raw, holder) = match (secret, secret_env, secret_file) {
        (Some(inline), None, None) => (
            format!("{field}.secret"),
            Zeroizing::new(inline.clone()),
            "the secret".to_owned(),
        ),
        (None, Some(variable), None) => {
            let source = format!("{field}.secret_env");
            let value = std::env::var(variable).map_err(|_| {
                SettingError::new(
                    &source,
                    format!("environment variable {variable} is not set"),
                )
            })?;
            let holder = format!("environment variable {variable}");
            (source, Zeroizing::new(value), holder)
        }
        (None, None, Some(path)) => {
            let source = format!("{field}.secret_file");
            let text = std::fs::read_to_string(path).map_err(|error| {
                SettingError::new(&source, format!("cannot read {}: {error}", path.display()))
            })?;
            warn_if_readable_by_others(path, &source);
            let holder = path.display().to_string();
            (source, Zeroizing::new(text), holder)
        }
        _ => {
            return Err(SettingError::new(
                field,
                "give exactly one of `secret`, `secret_env` or `secret_file`",
            ));
        }
    };
    let trimmed = Zeroizing::new(raw.trim().to_owned());
    if trimmed.is_empty() {
        return Err(SettingError::new(
            source,
            format!("{holder} is empty or blank, and a blank secret is refused"),
        ));
    }
    Ok((source, trimmed))
}

/// Warns (naming the field, never the secret) when a secret file is open to its group or others.
fn warn_if_readable_by_others(path: &std::path::Path, source: &str) {
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            tracing::warn!(
                field = source,
                file = %path.display(),
                mode = format!("{mode:o}"),
                "a secret file is readable by others than its owner; chmod 600 it"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = (path, source);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inline(text: &str) -> Result<Zeroizing<String>, SettingError> {
        read_signing_secret("k", &Some(text.to_owned()), &None, &None)
    }

    #[test]
    fn blanks_are_dropped_and_blank_or_short_secrets_refused() {
        assert_eq!(
            inline("  sixteen-chars-ok\n").unwrap().as_str(),
            "sixteen-chars-ok"
        );
        for blank in ["", "   ", "\n\t"] {
            let error = inline(blank).unwrap_err().to_string();
            assert!(
                error.starts_with("k.secret: the secret is empty or blank"),
                "{error}"
            );
        }
        let error = inline("fifteen-chars-x").unwrap_err().to_string();
        assert!(
            error.contains("fewer than 16 characters (it has 15)"),
            "{error}"
        );
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), " \n").unwrap();
        let error = read_secret("k", &None, &None, &Some(file.path().to_owned()))
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("k.secret_file: "), "{error}");
    }
}
