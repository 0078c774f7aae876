//! Admin keys of the sombus admin API: each belongs to workspaces and has a role, so only the
//! organisation that owns a connection manages it, and only developers or above see secrets.
//! They have the API keys' shape (`sqsgw_<id>_<secret>`, stored as a SHA-256 hash).

use super::key_book::{BookKey, KeyBook, checked_id_and_hash};
use serde::Deserialize;

/// What an admin key may do, each role including the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdminRole {
    /// Lists and shows connections, reads the audit log.
    Viewer,
    /// Also gets, rotates and revokes client secrets, and redrives dead letters.
    Developer,
    /// Also creates, revokes, restores and removes connections.
    Admin,
}

impl AdminRole {
    /// Its config name.
    pub fn as_str(self) -> &'static str {
        match self {
            AdminRole::Viewer => "viewer",
            AdminRole::Developer => "developer",
            AdminRole::Admin => "admin",
        }
    }
}

/// One admin key, as configured (`[[sombus.admin_keys]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminKeyConfig {
    /// The key's public id.
    pub id: String,
    /// A label for the audit log; default: the id.
    pub name: Option<String>,
    /// `sha256:` and the hex SHA-256 of the whole key.
    pub hash: String,
    /// The workspaces it manages (`*` for all).
    pub workspaces: Vec<String>,
    /// Its role.
    pub role: AdminRole,
}

/// A verified admin key.
#[derive(Debug, Clone)]
pub struct AdminKey {
    /// Its public id (the `<id>` of `sqsgw_<id>_<secret>`, not a secret), written to the audit
    /// log beside its name: two keys may share a name.
    pub id: String,
    /// Its label, written to the audit log.
    pub name: String,
    /// Its role.
    pub role: AdminRole,
    workspaces: Vec<String>,
    hash: [u8; 32],
}

impl AdminKey {
    /// Whether the key manages `workspace`.
    pub fn manages(&self, workspace: &str) -> bool {
        self.workspaces
            .iter()
            .any(|managed| managed == "*" || managed == workspace)
    }
}

impl BookKey for AdminKey {
    fn id(&self) -> &str {
        &self.id
    }

    fn hash(&self) -> &[u8; 32] {
        &self.hash
    }
}

/// The configured admin keys, by id.
pub type AdminKeys = KeyBook<AdminKey>;

impl KeyBook<AdminKey> {
    /// The keys from their config entries; the error names the entry's field.
    pub fn from_config(entries: &[AdminKeyConfig]) -> Result<Self, (String, String)> {
        let mut book = Self::default();
        for (index, entry) in entries.iter().enumerate() {
            let field = |name: &str| format!("sombus.admin_keys[{index}].{name}");
            let hash = checked_id_and_hash(&entry.id, &entry.hash, field)?;
            if entry.workspaces.is_empty() {
                return Err((
                    field("workspaces"),
                    "name at least one workspace (or `*`)".into(),
                ));
            }
            let key = AdminKey {
                id: entry.id.clone(),
                name: entry.name.clone().unwrap_or_else(|| entry.id.clone()),
                role: entry.role,
                workspaces: entry.workspaces.clone(),
                hash,
            };
            book.add(key)
                .map_err(|id| (field("id"), format!("`{id}` is listed twice")))?;
        }
        Ok(book)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::api_keys::generate_key;

    #[test]
    fn a_key_verifies_only_whole_and_manages_only_its_workspaces() {
        let generated = generate_key();
        let keys = AdminKeys::from_config(&[AdminKeyConfig {
            id: generated.id.clone(),
            name: Some("ops".into()),
            hash: generated.hash.clone(),
            workspaces: vec!["w1".into()],
            role: AdminRole::Developer,
        }])
        .unwrap();
        let key = keys.verify(&generated.key).unwrap();
        assert!(key.manages("w1") && !key.manages("w2"));
        assert!(key.role >= AdminRole::Developer && key.role < AdminRole::Admin);
        assert!(keys.verify(&format!("{}x", generated.key)).is_none());
        assert!(keys.verify("sqsgw_nope_x").is_none());
    }
}
