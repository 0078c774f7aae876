//! basaltic API keys: Bearer keys (`sqsgw_<id>_<secret>`, stored as a SHA-256 hash) with
//! permissions per queue (by its UUID, or `*`), translated into the core's actions on the gateway
//! queue a request names.

use super::key_book::{BookKey, KeyBook, checked_id_and_hash};
use crate::core::access::{Action, Caller, Grants, Principal};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The permissions a key may hold, and the core actions each allows.
pub const PERMISSIONS: &[(&str, &[Action])] = &[
    ("send", &[Action::Send, Action::Inspect]),
    ("receive", &[Action::Receive, Action::Inspect]),
    ("delete", &[Action::Acknowledge, Action::Inspect]),
    (
        "change_visibility",
        &[Action::ChangeVisibility, Action::Inspect],
    ),
    ("inspect", &[Action::Peek, Action::Inspect]),
    ("purge", &[Action::Purge, Action::Inspect]),
    ("read_metrics", &[Action::Inspect]),
    (
        "manage_queues",
        &[Action::ManageQueues, Action::Inspect, Action::Redrive],
    ),
];

/// One key, as configured (`[[basaltic.keys]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasalticKeyConfig {
    /// The key's public id.
    pub id: String,
    /// A label for logs; default: the id.
    pub name: Option<String>,
    /// `sha256:` and the hex SHA-256 of the whole key.
    pub hash: String,
    /// Queue UUID (or `*`) -> permissions (or `*`).
    #[serde(default)]
    pub grants: BTreeMap<String, Vec<String>>,
}

/// A verified key.
#[derive(Debug, Clone)]
pub struct BasalticKey {
    /// Its label.
    pub name: String,
    id: String,
    hash: [u8; 32],
    /// Queue UUID (or `*`) -> core actions.
    grants: BTreeMap<String, BTreeSet<Action>>,
    /// Queue UUID (or `*`) -> permission names (for the ones that are not a core action:
    /// `read_metrics`).
    permissions: BTreeMap<String, BTreeSet<String>>,
}

impl BasalticKey {
    /// Whether the key holds `action` on the queue `queue_id` (its own grant or `*`).
    pub fn holds(&self, action: Action, queue_id: &str) -> bool {
        [queue_id, "*"]
            .iter()
            .filter_map(|key| self.grants.get(*key))
            .any(|actions| actions.contains(&action))
    }

    /// Whether the key holds the permission `name` on `queue_id` (or on `*`).
    pub fn has_permission(&self, name: &str, queue_id: &str) -> bool {
        [queue_id, "*"]
            .iter()
            .filter_map(|key| self.permissions.get(*key))
            .any(|names| names.contains(name) || names.contains("*"))
    }

    /// Whether the key holds anything on `queue_id`.
    pub fn sees(&self, queue_id: &str) -> bool {
        self.holds(Action::Inspect, queue_id)
    }

    /// The key as a caller of the core on the gateway queue `queue` (named `queue_id` here).
    pub fn caller_on(&self, queue_id: &str, queue: &str) -> Caller {
        self.caller_on_each(&[(queue_id.to_owned(), queue.to_owned())])
    }

    /// The key as a caller of the core on each `(queue id, gateway queue)` of `queues`.
    pub fn caller_on_each(&self, queues: &[(String, String)]) -> Caller {
        let mut grants = Grants::none();
        for (queue_id, queue) in queues {
            let actions: BTreeSet<Action> = [queue_id.as_str(), "*"]
                .iter()
                .filter_map(|key| self.grants.get(*key))
                .flatten()
                .copied()
                .collect();
            grants = grants.allow(queue, actions);
        }
        Caller::new(Principal::ApiKey(self.id.clone()), Arc::new(grants))
    }

    /// The permissions the key holds on `queue_id` (its own grant and `*`, `*` spelt out), in
    /// the order of [`PERMISSIONS`].
    pub fn permissions_on(&self, queue_id: &str) -> Vec<&'static str> {
        PERMISSIONS
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| self.has_permission(name, queue_id))
            .collect()
    }

    /// The key's grants as configured: queue id (or `*`) -> permission names.
    pub fn granted(&self) -> &BTreeMap<String, BTreeSet<String>> {
        &self.permissions
    }

    /// The key as a caller creating the queue `queue` (`manage_queues` on `*` needed).
    pub fn creator_of(&self, queue: &str) -> Caller {
        let actions: Vec<Action> = if self.holds(Action::ManageQueues, "*") {
            vec![Action::ManageQueues, Action::Inspect]
        } else {
            Vec::new()
        };
        Caller::new(
            Principal::ApiKey(self.id.clone()),
            Arc::new(Grants::none().allow(queue, actions)),
        )
    }
}

impl BookKey for BasalticKey {
    fn id(&self) -> &str {
        &self.id
    }

    fn hash(&self) -> &[u8; 32] {
        &self.hash
    }
}

/// The configured keys, by id.
pub type BasalticKeys = KeyBook<BasalticKey>;

impl KeyBook<BasalticKey> {
    /// The keys from their config entries; the error names the entry's field.
    pub fn from_config(entries: &[BasalticKeyConfig]) -> Result<Self, (String, String)> {
        let mut book = Self::default();
        for (index, entry) in entries.iter().enumerate() {
            let field = |name: &str| format!("basaltic.keys[{index}].{name}");
            let hash = checked_id_and_hash(&entry.id, &entry.hash, field)?;
            let mut grants = BTreeMap::new();
            let mut permissions = BTreeMap::new();
            for (written, names) in &entry.grants {
                // Queue ids in their one written form (lowercase, hyphenated), as requests are.
                let queue = if written == "*" {
                    written.clone()
                } else {
                    uuid::Uuid::try_parse(written)
                        .map(|id| id.hyphenated().to_string())
                        .map_err(|_| {
                            (
                                field("grants"),
                                format!("`{written}` is not a queue UUID or `*`"),
                            )
                        })?
                };
                let queue = &queue;
                permissions.insert(queue.clone(), names.iter().cloned().collect());
                let mut actions = BTreeSet::new();
                for name in names {
                    match PERMISSIONS.iter().find(|(known, _)| known == name) {
                        Some((_, granted)) => actions.extend(granted.iter().copied()),
                        None if name == "*" => {
                            actions.extend(PERMISSIONS.iter().flat_map(|(_, g)| g.iter().copied()))
                        }
                        None => {
                            let known: Vec<&str> = PERMISSIONS.iter().map(|(n, _)| *n).collect();
                            return Err((
                                field("grants"),
                                format!("unknown permission `{name}`; known: {}", known.join(", ")),
                            ));
                        }
                    }
                }
                grants.insert(queue.clone(), actions);
            }
            let key = BasalticKey {
                name: entry.name.clone().unwrap_or_else(|| entry.id.clone()),
                id: entry.id.clone(),
                hash,
                grants,
                permissions,
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
    fn permissions_become_core_actions_on_the_named_queue_only() {
        let key = generate_key();
        let queue_id = "6f1c8a9e-3b2d-4c5e-8f7a-9b0c1d2e3f40";
        let keys = BasalticKeys::from_config(&[BasalticKeyConfig {
            id: key.id.clone(),
            name: None,
            hash: key.hash.clone(),
            grants: [(
                queue_id.to_owned(),
                vec!["send".to_owned(), "receive".to_owned()],
            )]
            .into(),
        }])
        .unwrap();
        let found = keys.verify(&key.key).unwrap();
        assert!(found.holds(Action::Send, queue_id));
        assert!(!found.holds(Action::Purge, queue_id));
        assert!(!found.holds(Action::Send, "another"));
        assert!(found.has_permission("receive", queue_id));
        assert!(!found.has_permission("read_metrics", queue_id));
        let caller = found.caller_on(queue_id, "orders");
        assert!(caller.may(Action::Receive, "orders"));
        assert!(!caller.may(Action::Receive, "billing"));
        assert!(!found.creator_of("x").may(Action::ManageQueues, "x"));
        assert!(keys.verify("sqsgw_nobody_x").is_none());
        let bad = BasalticKeys::from_config(&[BasalticKeyConfig {
            id: "k".into(),
            name: None,
            hash: key.hash,
            grants: [("*".to_owned(), vec!["fly".to_owned()])].into(),
        }]);
        assert!(bad.is_err());
    }
}
