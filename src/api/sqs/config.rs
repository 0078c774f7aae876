//! The SQS endpoint's section of the config (`[sqs_api]`): its options and access keys.

use super::regions::{Regions, looks_like_a_region};
use crate::core::access::Grants;
use crate::core::error::SettingError;
use crate::credentials::secrets::read_signing_secret;
use crate::credentials::sqs_keys::{self, SqsKey};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The SQS wire endpoint.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqsApiConfig {
    /// Accept requests without a SigV4 signature. Local development only: anyone who can reach
    /// the port can then use every queue.
    #[serde(default)]
    pub allow_unsigned: bool,
    /// Base of the queue URLs handed out (e.g. `https://queues.example.com`); default: `http://`
    /// and the Host the client used.
    pub public_url: Option<String>,
    /// The home region: its queue URLs carry no region; default `us-east-1`.
    #[serde(default = "default_region")]
    pub region: String,
    /// The other regions clients may sign for (`*`: any region name, the default; `[]`: the home
    /// one only). Every region reaches the same queues.
    #[serde(default = "everything")]
    pub regions: Vec<String>,
    /// SQS's 60-second rules on the embedded engine (one purge of a queue a minute, no queue made
    /// again under a name deleted within the minute); SQS keeps its own. Default on, as AWS.
    #[serde(default = "on")]
    pub sixty_second_rules: bool,
    /// Access keys, checked with AWS Signature Version 4.
    #[serde(default)]
    pub credentials: Vec<SqsCredentialConfig>,
    /// Serve CreateQueue, DeleteQueue, SetQueueAttributes and tags, and expose every backend queue
    /// by its own name (not only the configured ones). Keys still need the queue and the action.
    #[serde(default)]
    pub manage_queues: bool,
}

/// One access key of the SQS endpoint. SigV4 needs the secret itself (HMAC keys are derived from
/// it), so it cannot be stored hashed: give it through `secret_env` or `secret_file` so the config
/// file holds none; `secret` inline is for development. Whatever the source, the secret is taken
/// without the blanks around it and must have at least 16 characters.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqsCredentialConfig {
    /// The key's id (public).
    pub access_key_id: String,
    /// The secret inline (development only).
    pub secret: Option<String>,
    /// An environment variable holding the secret.
    pub secret_env: Option<String>,
    /// A file holding the secret.
    pub secret_file: Option<PathBuf>,
    /// Gateway queues the key may use (`*` for all). Default: all.
    #[serde(default = "everything")]
    pub queues: Vec<String>,
    /// SQS actions the key may call (`*` for all). Default: all.
    #[serde(default = "everything")]
    pub actions: Vec<String>,
}

impl Default for SqsApiConfig {
    fn default() -> Self {
        Self {
            allow_unsigned: false,
            public_url: None,
            region: default_region(),
            regions: everything(),
            sixty_second_rules: true,
            credentials: Vec::new(),
            manage_queues: false,
        }
    }
}

fn default_region() -> String {
    "us-east-1".to_owned()
}

fn on() -> bool {
    true
}

fn everything() -> Vec<String> {
    vec!["*".to_owned()]
}

impl std::fmt::Debug for SqsCredentialConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqsCredentialConfig")
            .field("access_key_id", &self.access_key_id)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("secret_env", &self.secret_env)
            .field("secret_file", &self.secret_file)
            .field("queues", &self.queues)
            .field("actions", &self.actions)
            .finish()
    }
}

impl SqsApiConfig {
    /// Checks what types alone cannot.
    pub fn validate(&self, queues: &BTreeSet<String>) -> Result<(), SettingError> {
        if !looks_like_a_region(&self.region) {
            return Err(SettingError::new(
                "sqs_api.region",
                "must be a region name such as `us-east-1`",
            ));
        }
        if let Some(bad) = self
            .regions
            .iter()
            .find(|region| *region != "*" && !looks_like_a_region(region))
        {
            return Err(SettingError::new(
                "sqs_api.regions",
                format!("`{bad}` is not a region name such as `eu-central-1` (nor `*`)"),
            ));
        }
        self.keys(queues).map(|_| ())
    }

    /// The regions clients may sign for.
    pub fn regions(&self) -> Regions {
        Regions::new(&self.region, &self.regions)
    }

    /// What unsigned requests may do where they are allowed: `*` on `*`.
    pub fn anonymous_grants(&self) -> Grants {
        let everything = ["*".to_owned()];
        sqs_keys::grants(&everything, &everything, self.manage_queues).unwrap_or_default()
    }

    /// The access keys, with secrets read from where the config says; `queues` are the gateway's
    /// configured queues (a key's queues must be among them).
    pub fn keys(&self, queues: &BTreeSet<String>) -> Result<Vec<SqsKey>, SettingError> {
        let mut seen = BTreeSet::new();
        let mut credentials = Vec::new();
        for (index, credential) in self.credentials.iter().enumerate() {
            let field = format!("sqs_api.credentials[{index}]");
            if credential.access_key_id.is_empty() || !seen.insert(credential.access_key_id.clone())
            {
                return Err(SettingError::new(
                    format!("{field}.access_key_id"),
                    "must be non-empty and distinct",
                ));
            }
            for queue in &credential.queues {
                let prefix = queue.strip_suffix('*').filter(|prefix| !prefix.is_empty());
                if queue != "*" && prefix.is_none() && !queues.contains(queue) {
                    return Err(SettingError::new(
                        format!("{field}.queues"),
                        format!(
                            "`{queue}` is not a queue listed under [queues] (nor `*`, nor a prefix ending in `*`)"
                        ),
                    ));
                }
            }
            let secret = read_signing_secret(
                &field,
                &credential.secret,
                &credential.secret_env,
                &credential.secret_file,
            )?;
            let key = SqsKey::new(
                credential.access_key_id.clone(),
                secret,
                &credential.queues,
                &credential.actions,
                self.manage_queues,
            )
            .map_err(|message| SettingError::new(format!("{field}.actions"), message))?;
            credentials.push(key);
        }
        Ok(credentials)
    }
}
