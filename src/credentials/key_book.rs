//! The one shape every set of bearer keys has (ezgh's API keys, basaltic's keys, sombus's admin
//! keys): records by public id, each holding the SHA-256 of its whole key (`sqsgw_<id>_<secret>`);
//! a presented key is found by its id and holds only if it hashes to the record's hash, compared
//! in constant time.

use super::api_keys::{hash_matches, key_id};
use std::collections::HashMap;
use std::sync::Arc;

/// A record a [`KeyBook`] keeps.
pub trait BookKey {
    /// The key's public id (the `<id>` of `sqsgw_<id>_<secret>`).
    fn id(&self) -> &str;
    /// The SHA-256 of the whole key.
    fn hash(&self) -> &[u8; 32];
}

/// Keys by public id.
#[derive(Debug)]
pub struct KeyBook<K> {
    by_id: HashMap<String, Arc<K>>,
}

impl<K> Default for KeyBook<K> {
    fn default() -> Self {
        Self {
            by_id: HashMap::new(),
        }
    }
}

impl<K: BookKey> KeyBook<K> {
    /// Adds `key`, unless a key with its id is there already (then it answers the id back and
    /// the book is unchanged).
    pub fn add(&mut self, key: K) -> Result<(), String> {
        match self.by_id.entry(key.id().to_owned()) {
            std::collections::hash_map::Entry::Occupied(taken) => Err(taken.key().clone()),
            std::collections::hash_map::Entry::Vacant(free) => {
                free.insert(Arc::new(key));
                Ok(())
            }
        }
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The key a presented secret is, or `None` (shared: a request keeps it to its end).
    pub fn verify(&self, presented: &str) -> Option<&Arc<K>> {
        let key = self.by_id.get(key_id(presented)?)?;
        hash_matches(presented, key.hash()).then_some(key)
    }
}
