//! ezgh API keys: how a consumer proves who it is, and what each key may do.
//!
//! A key reads `sqsgw_<id>_<secret>`. The id is public and finds the key's record; the config keeps
//! only the SHA-256 of the whole key, compared in constant time. Keys are 256-bit random values, so
//! a fast hash is enough: there is nothing to brute-force that a slow hash would protect.

use super::key_book::{BookKey, KeyBook};
pub use super::key_book::{
    GeneratedKey, KEY_PREFIX, generate_key, hash_key, hash_matches, key_id, parse_hash,
};
use crate::core::access::{Action, Caller, Grants, Principal};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The action of receiving messages, as the ezgh docs name it.
pub const RECEIVE: &str = "queues.messages.receive";

/// The actions a grant may name (`*` for all of them), and what each allows in the core.
pub const ACTIONS: &[(&str, Action)] = &[(RECEIVE, Action::Receive)];

/// A key's record: its hash and its grants.
#[derive(Clone)]
pub struct ApiKey {
    /// Public id, the part after the prefix.
    pub id: String,
    /// A label for logs.
    pub name: String,
    /// The organization the key belongs to.
    pub organization: String,
    hash: [u8; 32],
    /// What the key may do, in the core's terms.
    grants: Arc<Grants>,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("organization", &self.organization)
            .finish_non_exhaustive()
    }
}

impl ApiKey {
    /// A record from its config: `hash` is `sha256:<64 hex digits>`; `grants` maps a gateway
    /// queue (or `*`) to ezgh action names (or `*`).
    pub fn new(
        id: String,
        name: String,
        organization: String,
        hash: &str,
        grants: &BTreeMap<String, BTreeSet<String>>,
    ) -> Result<Self, String> {
        Ok(Self {
            id,
            name,
            organization,
            hash: parse_hash(hash)?,
            grants: Arc::new(core_grants(grants)?),
        })
    }

    /// The key as a caller of the core.
    pub fn caller(&self) -> Caller {
        Caller::new(Principal::ApiKey(self.id.clone()), Arc::clone(&self.grants))
    }
}

/// ezgh grants in the core's terms.
fn core_grants(grants: &BTreeMap<String, BTreeSet<String>>) -> Result<Grants, String> {
    let mut core = Grants::none();
    for (queue, names) in grants {
        let mut actions = Vec::new();
        for name in names {
            match ACTIONS.iter().find(|(known, _)| known == name) {
                Some((_, action)) => actions.push(*action),
                None if name == "*" => actions.extend(ACTIONS.iter().map(|(_, action)| *action)),
                None => {
                    let known: Vec<&str> = ACTIONS.iter().map(|(name, _)| *name).collect();
                    return Err(format!(
                        "unknown action `{name}`; known: {}",
                        known.join(", ")
                    ));
                }
            }
        }
        core = core.allow(queue, actions);
    }
    Ok(core)
}

impl BookKey for ApiKey {
    fn id(&self) -> &str {
        &self.id
    }

    fn hash(&self) -> &[u8; 32] {
        &self.hash
    }
}

/// All configured API keys, by id.
pub type ApiKeys = KeyBook<ApiKey>;

impl KeyBook<ApiKey> {
    /// The keys, which must have distinct ids.
    pub fn new(keys: Vec<ApiKey>) -> Result<Self, String> {
        let mut book = Self::default();
        for key in keys {
            book.add(key)
                .map_err(|id| format!("api key id `{id}` is listed twice"))?;
        }
        Ok(book)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants(grants: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        grants
            .iter()
            .map(|(queue, actions)| {
                (
                    queue.to_string(),
                    actions.iter().map(|a| a.to_string()).collect(),
                )
            })
            .collect()
    }

    fn record(generated: &GeneratedKey, given: &[(&str, &[&str])]) -> ApiKey {
        ApiKey::new(
            generated.id.clone(),
            "test".into(),
            "acme".into(),
            &generated.hash,
            &grants(given),
        )
        .unwrap()
    }

    #[test]
    fn a_generated_key_verifies_and_an_altered_one_does_not() {
        let generated = generate_key();
        let keys = ApiKeys::new(vec![record(&generated, &[])]).unwrap();
        assert_eq!(keys.verify(&generated.key).unwrap().id, generated.id);
        let mut altered = generated.key.clone();
        altered.push('x');
        assert!(keys.verify(&altered).is_none());
        assert!(keys.verify("").is_none());
        assert!(keys.verify("sqsgw_").is_none());
        assert!(keys.verify(&format!("sqsgw_{}_", generated.id)).is_none());
        assert!(keys.verify(&generate_key().key).is_none());
    }

    #[test]
    fn grants_name_queues_and_actions() {
        let generated = generate_key();
        let key = record(&generated, &[("orders", &[RECEIVE])]).caller();
        assert!(key.may(Action::Receive, "orders"));
        assert!(!key.may(Action::Receive, "jobs"));
        assert!(!key.may(Action::Send, "orders"));
        let wildcard = record(&generated, &[("*", &["*"])]).caller();
        assert!(wildcard.may(Action::Receive, "jobs"));
        assert!(
            !wildcard.may(Action::Purge, "jobs"),
            "ezgh keys only receive"
        );
        let unknown = ApiKey::new(
            generated.id.clone(),
            "t".into(),
            "acme".into(),
            &generated.hash,
            &grants(&[("orders", &["fly"])]),
        );
        assert!(unknown.unwrap_err().contains("unknown action `fly`"));
    }

    #[test]
    fn hashes_must_have_the_documented_form() {
        for bad in ["", "abc", "sha256:zz", "md5:00"] {
            assert!(
                ApiKey::new("i".into(), "n".into(), "o".into(), bad, &BTreeMap::new()).is_err()
            );
        }
        let generated = generate_key();
        assert!(!format!("{:?}", record(&generated, &[])).contains(&generated.hash[7..]));
    }
}
