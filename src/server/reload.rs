//! Live key reload: keys are added and revoked in the config file, so the gateway
//! re-reads the file it started with, on SIGHUP and when the file changes, and swaps in its ezgh
//! API keys, basaltic keys (and `basaltic.all_queues`), sombus admin keys and SQS credentials
//! without a restart. A file that does not parse or validate as at start changes nothing (the
//! old keys stay; logged, and read again on its next change); the rest of the config is read at
//! start only, and a reload that finds it changed says which sections wait for a restart.

use crate::api::sqs::SqsKeys;
use crate::config::{Config, ConfigError};
use crate::core::Gateway;
use crate::core::metrics::meters::Meters;
use crate::credentials::admin_keys::AdminKeys;
use crate::credentials::api_keys::ApiKeys;
use crate::credentials::basaltic_keys::BasalticKeys;
use crate::credentials::live::Live;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// The config's parts a reload applies: `[[api_keys]]` whole, and fields of three sections.
const LIVE_FIELDS: [(&str, Option<&str>); 5] = [
    ("api_keys", None),
    ("basaltic", Some("keys")),
    ("basaltic", Some("all_queues")),
    ("sombus", Some("admin_keys")),
    ("sqs_api", Some("credentials")),
];

/// Every key set of a config, built and checked in one place: at start and on each reload.
pub struct KeySets {
    /// ezgh API keys (`[[api_keys]]`).
    pub api: ApiKeys,
    /// basaltic keys (`[[basaltic.keys]]`).
    pub basaltic: BasalticKeys,
    /// sombus admin keys (`[[sombus.admin_keys]]`).
    pub admin: AdminKeys,
    /// The SQS endpoint's SigV4 credentials (`[[sqs_api.credentials]]`), secrets read from their
    /// sources.
    pub sqs: SqsKeys,
}

impl KeySets {
    /// The key sets of a checked config; the error names the field at fault.
    pub fn from_config(config: &Config) -> Result<Self, ConfigError> {
        Ok(Self {
            api: config.api_keys()?,
            basaltic: config.basaltic.keys().map_err(ConfigError::from)?,
            admin: config.sombus.admin_keys().map_err(ConfigError::from)?,
            sqs: SqsKeys::new(config.sqs_credentials()?),
        })
    }
}

/// The handles the dialects read their keys through. A reload replaces each set whole; a
/// request reads one set, and keeps what it read to its end.
#[derive(Debug, Clone)]
pub struct LiveKeys {
    /// ezgh's.
    pub api: Live<ApiKeys>,
    /// basaltic's.
    pub basaltic: Live<BasalticKeys>,
    /// sombus's admin API's.
    pub admin: Live<AdminKeys>,
    /// The SQS endpoint's.
    pub sqs: Live<SqsKeys>,
}

impl LiveKeys {
    /// Handles on `sets`.
    pub fn new(sets: KeySets) -> Self {
        Self {
            api: Live::new(sets.api),
            basaltic: Live::new(sets.basaltic),
            admin: Live::new(sets.admin),
            sqs: Live::new(sets.sqs),
        }
    }

    /// Puts `sets` in place of the sets in use.
    pub fn replace(&self, sets: KeySets) {
        self.api.replace(sets.api);
        self.basaltic.replace(sets.basaltic);
        self.admin.replace(sets.admin);
        self.sqs.replace(sets.sqs);
    }
}

/// How a file looked: modified, size, inode (a rename over it is a new inode).
type Stamp = (SystemTime, u64, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some((meta.modified().ok()?, meta.len(), inode))
}

fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })
}

/// The config file a gateway runs with: where it is, the text it started with, and how the file
/// looked when that text was read.
#[derive(Debug)]
pub struct ConfigFile {
    path: PathBuf,
    stamp: Option<Stamp>,
    text: String,
}

impl ConfigFile {
    /// Reads and checks the config at `path` as a start does ([`Config::load`]).
    pub fn load(path: &Path) -> Result<(Config, Self), ConfigError> {
        // Looked at before it is read: a change in between is seen as a change, and read again.
        let stamp = stamp(path);
        let text = read(path)?;
        let config = Config::parse(&text)?;
        let file = Self {
            path: path.to_owned(),
            stamp,
            text,
        };
        Ok((config, file))
    }

    /// A config not written yet (a first start's): checked now, watched at `path` once written.
    pub fn unwritten(path: PathBuf, text: String) -> Result<(Config, Self), ConfigError> {
        let config = Config::parse(&text)?;
        let file = Self {
            path,
            stamp: None,
            text,
        };
        Ok((config, file))
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// SIGHUP, caught from the moment this is made: until a handler is in place the signal's default
/// action ends the process, so a start makes this before anything slow. Never ends the process.
pub struct Hangups {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl std::fmt::Debug for Hangups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hangups").finish_non_exhaustive()
    }
}

impl Hangups {
    /// Catches SIGHUP from now on (inside a Tokio runtime). Where signals can't be caught, a
    /// handle that never sees one.
    pub fn catch() -> Self {
        Self {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok(),
        }
    }

    /// The next SIGHUP (one that came since the last is answered at once).
    async fn next(&mut self) {
        #[cfg(unix)]
        if let Some(signal) = self.signal.as_mut()
            && signal.recv().await.is_some()
        {
            return;
        }
        std::future::pending::<()>().await;
    }
}

/// Re-reads a config file for its keys, on SIGHUP and when the file changes.
pub(super) struct KeyReload {
    file: ConfigFile,
    /// The sections the gateway started with (what every part but the keys runs with).
    started: toml::Table,
    keys: LiveKeys,
    /// Where `basaltic.all_queues` is applied.
    gateway: Arc<Gateway>,
    meters: Meters,
    check_every: Duration,
    hangups: Hangups,
}

impl KeyReload {
    /// Reloads `keys` from `file` (the config they were built from), looking at it every
    /// `check_every`, and at once on a SIGHUP `hangups` catches.
    pub(super) fn new(
        file: ConfigFile,
        hangups: Hangups,
        keys: LiveKeys,
        gateway: Arc<Gateway>,
        meters: Meters,
        check_every: Duration,
    ) -> Self {
        let started = toml::from_str(&file.text).unwrap_or_default();
        Self {
            file,
            started,
            keys,
            gateway,
            meters,
            check_every,
            hangups,
        }
    }

    /// Watches until `stop`.
    pub(super) async fn watch(mut self, stop: CancellationToken) {
        self.meters.config_reloads_watched();
        let mut every = tokio::time::interval(self.check_every);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let hung_up = tokio::select! {
                _ = every.tick() => {
                    if stamp(&self.file.path) == self.file.stamp {
                        continue;
                    }
                    false
                }
                () = self.hangups.next() => true,
                () = stop.cancelled() => return,
            };
            self.reload(hung_up);
        }
    }

    /// Reads the file again and swaps in its keys if it checks out; a SIGHUP reloads even an
    /// unchanged text (its secret files may have changed), a poll only a changed one.
    fn reload(&mut self, hung_up: bool) {
        let reason = if hung_up {
            "SIGHUP"
        } else {
            "the file changed"
        };
        let stamp = stamp(&self.file.path);
        let text = read(&self.file.path);
        self.file.stamp = stamp;
        let text = match text {
            Ok(text) => text,
            Err(error) => return self.refuse(reason, &error),
        };
        if !hung_up && text == self.file.text {
            tracing::debug!(path = %self.file.path.display(), "the config file was touched, not changed");
            return;
        }
        let checked = Config::parse(&text)
            .and_then(|config| Ok((KeySets::from_config(&config)?, config.basaltic.all_queues)));
        let restart_needed = changed_sections(&self.started, &text);
        self.file.text = text;
        let (sets, all_queues) = match checked {
            Ok(checked) => checked,
            Err(error) => return self.refuse(reason, &error),
        };
        let counts = (
            sets.api.len(),
            sets.basaltic.len(),
            sets.admin.len(),
            sets.sqs.len(),
        );
        self.keys.replace(sets);
        if self.gateway.set_basaltic_all_queues(all_queues) {
            tracing::info!(
                all_queues,
                "basaltic.all_queues changed: basaltic keys (and the console) see {}",
                if all_queues {
                    "every queue the other APIs reach too"
                } else {
                    "only the queues basaltic made under its reserved names (those it made under \
                     their own names while all_queues was on are out of its reach until it is on again)"
                }
            );
        }
        self.meters.config_reload(true);
        tracing::info!(
            reason,
            path = %self.file.path.display(),
            ezgh_api_keys = counts.0,
            basaltic_keys = counts.1,
            sombus_admin_keys = counts.2,
            sqs_credentials = counts.3,
            "config reloaded: its keys are in use"
        );
        if !restart_needed.is_empty() {
            tracing::warn!(
                sections = %restart_needed.join(", "),
                "config changes outside the keys are not applied while running: they need a restart"
            );
        }
    }

    fn refuse(&self, reason: &'static str, error: &ConfigError) {
        self.meters.config_reload(false);
        let (field, message) = loggable(error);
        tracing::error!(
            reason,
            path = %self.file.path.display(),
            field = %field,
            error = %message,
            "config not reloaded: the keys in use stay until the file checks out (read again on its next change or SIGHUP)"
        );
    }
}

/// A config error's field and message for the log, never a secret: a value of the wrong type is
/// quoted by the parser, which under a `secret` field could be the secret.
fn loggable(error: &ConfigError) -> (String, String) {
    match error {
        ConfigError::Read { path, source } => (
            "(file)".to_owned(),
            format!("cannot read {}: {source}", path.display()),
        ),
        ConfigError::Invalid { field, message } => {
            let under_secret = field.rsplit('.').next() == Some("secret");
            let message = if under_secret && message.contains('`') {
                "not a usable secret (its value is not logged)".to_owned()
            } else {
                message.clone()
            };
            (field.clone(), message)
        }
    }
}

/// The top-level sections of `text` that differ from `started`, the keys left out (they reload).
/// A text that does not parse changes nothing here (its error is reported as such).
fn changed_sections(started: &toml::Table, text: &str) -> Vec<String> {
    let Ok(now) = toml::from_str::<toml::Table>(text) else {
        return Vec::new();
    };
    let without_keys = |table: &toml::Table, name: &str| -> Option<toml::Value> {
        let mut value = table.get(name).cloned()?;
        for (section, field) in LIVE_FIELDS {
            if section != name {
                continue;
            }
            match (field, &mut value) {
                (None, _) => return None,
                (Some(field), toml::Value::Table(fields)) => {
                    fields.remove(field);
                }
                _ => {}
            }
        }
        // A section left empty is one that is not there.
        match &value {
            toml::Value::Table(fields) if fields.is_empty() => None,
            _ => Some(value),
        }
    };
    let names: std::collections::BTreeSet<&String> = started.keys().chain(now.keys()).collect();
    names
        .into_iter()
        .filter(|name| without_keys(started, name) != without_keys(&now, name))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
[server]
listen = "127.0.0.1:0"

[backend]
kind = "embedded"
in_memory = true

[queues.orders]

[[receipt_keys]]
id = 1
secret = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
"#;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn only_sections_outside_the_keys_need_a_restart() {
        let started = table(BASE);
        let keys = format!(
            "{BASE}\n[[api_keys]]\nid = \"a\"\norganization = \"o\"\nhash = \"h\"\n\n[[basaltic.keys]]\nid = \"b\"\nhash = \"h\"\n\n[[sombus.admin_keys]]\nid = \"c\"\nhash = \"h\"\nworkspaces = [\"*\"]\nrole = \"admin\"\n\n[[sqs_api.credentials]]\naccess_key_id = \"AK\"\nsecret = \"s\"\n"
        );
        assert!(changed_sections(&started, &keys).is_empty());
        let moved = BASE.replace("127.0.0.1:0", "127.0.0.1:9")
            + "\n[queues.jobs]\n[sqs_api]\nmanage_queues = true\n";
        assert_eq!(
            changed_sections(&started, &moved),
            ["queues", "server", "sqs_api"]
        );
        assert!(changed_sections(&started, "not [ toml").is_empty());
    }

    #[test]
    fn a_secret_quoted_by_the_parser_never_reaches_the_log() {
        let error = ConfigError::Invalid {
            field: "sqs_api.credentials[0].secret".into(),
            message: "invalid type: integer `1234567890123456`, expected a string".into(),
        };
        let (field, message) = loggable(&error);
        assert_eq!(field, "sqs_api.credentials[0].secret");
        assert!(!message.contains("1234567890123456"), "{message}");
        let short = ConfigError::Invalid {
            field: "sqs_api.credentials[0].secret".into(),
            message: "the secret has fewer than 16 characters (it has 3)".into(),
        };
        assert!(loggable(&short).1.contains("fewer than 16"));
    }
}
