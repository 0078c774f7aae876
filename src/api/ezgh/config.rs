//! The ezgh API's sections of the config (`[ezgh]` and `[[api_keys]]`): tenancy and API keys.

use crate::core::alias::Alias;
use crate::core::error::SettingError;
use crate::core::limits::Allowance;
use crate::credentials::api_keys::{self, ApiKey, ApiKeys};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// The ezgh API's tenancy: organizations own projects, projects own queues.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EzghConfig {
    /// Organizations by id.
    #[serde(default)]
    pub organizations: BTreeMap<String, OrganizationConfig>,
}

/// One ezgh organization.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrganizationConfig {
    /// Projects by id.
    #[serde(default)]
    pub projects: BTreeMap<String, ProjectConfig>,
    /// Receive requests the organization may make; none means unlimited.
    pub rate_limit: Option<Allowance>,
}

/// One ezgh project.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// ezgh queue id (the `{queue}` of the URL) -> gateway queue name.
    #[serde(default)]
    pub queues: BTreeMap<String, String>,
    /// Every queue id beyond `queues` names the gateway queue of that name (one made with the
    /// SQS endpoint's CreateQueue or basaltic's create, say), except the gateway's reserved
    /// `sqsgw_` queues.
    #[serde(default)]
    pub all_queues: bool,
}

/// One API key, as printed by `sqs-gateway new-api-key`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// The key's public id (the part after `sqsgw_`).
    pub id: String,
    /// A label for logs; default: the id.
    pub name: Option<String>,
    /// The ezgh organization the key belongs to.
    pub organization: String,
    /// `sha256:` and the hex SHA-256 of the whole key.
    pub hash: String,
    /// Gateway queue name (or `*`) -> actions (`queues.messages.receive`, or `*`).
    #[serde(default)]
    pub grants: BTreeMap<String, Vec<String>>,
}

impl EzghConfig {
    /// Checks that every project queue is a configured gateway queue, and the API keys.
    pub fn validate(
        &self,
        api_keys: &[ApiKeyConfig],
        queues: &BTreeSet<String>,
    ) -> Result<(), SettingError> {
        for (alias, gateway_queue) in self.aliases()? {
            if !queues.contains(&gateway_queue) {
                return Err(SettingError::new(
                    queue_field(alias.path()),
                    format!("`{gateway_queue}` is not a queue listed under [queues]"),
                ));
            }
        }
        self.api_keys(api_keys, queues).map(|_| ())
    }

    /// The API keys (`[[api_keys]]`), checked against the organizations and `queues`.
    pub fn api_keys(
        &self,
        api_keys: &[ApiKeyConfig],
        queues: &BTreeSet<String>,
    ) -> Result<ApiKeys, SettingError> {
        let mut keys = Vec::with_capacity(api_keys.len());
        for (index, key) in api_keys.iter().enumerate() {
            let field = |name: &str| format!("api_keys[{index}].{name}");
            if !key.id.chars().all(|c| c.is_ascii_alphanumeric()) || key.id.is_empty() {
                return Err(SettingError::new(field("id"), "must be letters and digits"));
            }
            if !self.organizations.contains_key(&key.organization) {
                return Err(SettingError::new(
                    field("organization"),
                    format!("`{}` is not under [ezgh.organizations]", key.organization),
                ));
            }
            let mut grants = BTreeMap::new();
            for (queue, actions) in &key.grants {
                if queue != "*" && !queues.contains(queue) {
                    return Err(SettingError::new(
                        field(&format!("grants.{queue}")),
                        "not a queue listed under [queues] (or `*`)",
                    ));
                }
                for action in actions {
                    if action != "*" && !api_keys::ACTIONS.iter().any(|(name, _)| name == action) {
                        let known: Vec<&str> =
                            api_keys::ACTIONS.iter().map(|(name, _)| *name).collect();
                        return Err(SettingError::new(
                            field(&format!("grants.{queue}")),
                            format!("unknown action `{action}`; known: {}", known.join(", ")),
                        ));
                    }
                }
                grants.insert(
                    queue.clone(),
                    actions.iter().cloned().collect::<BTreeSet<_>>(),
                );
            }
            let record = ApiKey::new(
                key.id.clone(),
                key.name.clone().unwrap_or_else(|| key.id.clone()),
                key.organization.clone(),
                &key.hash,
                &grants,
            )
            .map_err(|message| SettingError::new(field("hash"), message))?;
            keys.push(record);
        }
        ApiKeys::new(keys).map_err(|message| SettingError::new("api_keys", message))
    }

    /// The ezgh names of the gateway queues: (organization, project, queue id) -> queue.
    pub fn aliases(&self) -> Result<Vec<(Alias, String)>, SettingError> {
        let mut aliases = Vec::new();
        for (org, organization) in &self.organizations {
            for (project, config) in &organization.projects {
                for (queue_id, gateway_queue) in &config.queues {
                    let alias = Alias::ezgh(org, project, queue_id).map_err(|error| {
                        SettingError::new(queue_field(&[org, project, queue_id]), error.message)
                    })?;
                    aliases.push((alias, gateway_queue.clone()));
                }
            }
        }
        Ok(aliases)
    }

    /// The projects (organization, project) that take all queues (`all_queues`).
    pub fn open_projects(&self) -> Vec<(String, String)> {
        self.organizations
            .iter()
            .flat_map(|(org, organization)| {
                organization
                    .projects
                    .iter()
                    .filter(|(_, project)| project.all_queues)
                    .map(move |(project, _)| (org.clone(), project.clone()))
            })
            .collect()
    }

    /// Request allowances per organization.
    pub fn allowances(&self) -> Vec<(String, Allowance)> {
        self.organizations
            .iter()
            .filter_map(|(name, org)| org.rate_limit.map(|limit| (name.clone(), limit)))
            .collect()
    }
}

/// The setting of one ezgh queue id: organization, project and queue id.
fn queue_field<S: AsRef<str>>(path: &[S]) -> String {
    let [org, project, queue_id] = path else {
        return "ezgh.organizations".to_owned();
    };
    format!(
        "ezgh.organizations.{}.projects.{}.queues.{}",
        org.as_ref(),
        project.as_ref(),
        queue_id.as_ref()
    )
}
