//! The one shape every bearer key has (ezgh's API keys, basaltic's keys, sombus's admin keys):
//! `sqsgw_<id>_<secret>`, made here, kept in the config as the SHA-256 of the whole key; and the
//! book of a key set: records by public id, a presented key found by its id and holding only if
//! it hashes to the record's hash, compared in constant time.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore as _;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// Prefix of every API key, so leaked keys are easy to scan for.
pub const KEY_PREFIX: &str = "sqsgw_";

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

/// A configured key's id and hash, checked: the id letters and digits, the hash a SHA-256 in
/// hex. `field` names an entry's field for the error, which names it and says what is wrong.
pub fn checked_id_and_hash(
    id: &str,
    hash: &str,
    field: impl Fn(&str) -> String,
) -> Result<[u8; 32], (String, String)> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err((field("id"), "must be letters and digits".into()));
    }
    parse_hash(hash).map_err(|message| (field("hash"), message))
}

/// The digest of a config's `sha256:<64 hex digits>`.
pub fn parse_hash(hash: &str) -> Result<[u8; 32], String> {
    let digest = hash
        .strip_prefix("sha256:")
        .ok_or_else(|| "must start with `sha256:`".to_owned())?;
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(digest, &mut bytes)
        .map_err(|_| "must be `sha256:` and 64 hex digits".to_owned())?;
    Ok(bytes)
}

/// Whether a presented key hashes to `hash`, compared in constant time.
pub fn hash_matches(presented: &str, hash: &[u8; 32]) -> bool {
    let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
    bool::from(digest.ct_eq(hash))
}

/// The public id of a presented key, if it has the key's shape.
pub fn key_id(presented: &str) -> Option<&str> {
    let rest = presented.strip_prefix(KEY_PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    (!id.is_empty() && !secret.is_empty()).then_some(id)
}

/// A new random key and the `sha256:` hash to put in the config.
pub struct GeneratedKey {
    /// The public id.
    pub id: String,
    /// The key itself: show it once, store it nowhere.
    pub key: String,
    /// What the config keeps: `sha256:` and the hex digest.
    pub hash: String,
}

/// Makes a new API key: 64 random bits of id, 256 random bits of secret.
pub fn generate_key() -> GeneratedKey {
    let mut rng = rand::rng();
    let mut id = [0u8; 8];
    rng.fill_bytes(&mut id);
    let mut secret = [0u8; 32];
    rng.fill_bytes(&mut secret);
    let id = hex::encode(id);
    let key = format!("{KEY_PREFIX}{id}_{}", URL_SAFE_NO_PAD.encode(secret));
    let hash = hash_key(&key);
    GeneratedKey { id, key, hash }
}

/// The config form of a key's hash.
pub fn hash_key(key: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(key.as_bytes())))
}
