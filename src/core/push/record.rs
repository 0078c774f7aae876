//! A subscription made through the API as it is kept: its settings, state, history and signing
//! secrets, sealed (AES-256-GCM-SIV under a key derived from the receipt keys, bound to the
//! subscription's queue and name): HMAC signing needs the secret itself, so it cannot be kept
//! hashed; a store's reader without the receipt keys learns nothing of it.

use crate::core::handle::Keyring;
use crate::core::push::admin::{Managed, Settings};
use aes_gcm_siv::Aes256GcmSiv;
use aes_gcm_siv::aead::{Aead, KeyInit, Payload};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

/// What the secrets' key is derived with from each receipt key.
const SEAL_LABEL: &str = "sqs-gateway push signing secret v1 (AES-256-GCM-SIV)";

/// A secret, sealed.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedSecret {
    /// The receipt key it was sealed under (by id).
    pub key: u16,
    /// The nonce, base64.
    pub nonce: String,
    /// The sealed secret, base64.
    pub sealed: String,
}

impl std::fmt::Debug for SealedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedSecret")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// The secret a rotation replaced, signing until `until`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviousSecret {
    /// The secret.
    pub secret: SealedSecret,
    /// When it stops signing.
    pub until: DateTime<Utc>,
}

/// Where the store keeps the subscription `name` of `queue`: names are scoped by queue, so no
/// tenant learns (or takes) another queue's names. Neither a queue's name nor a subscription's
/// holds a `/`.
pub fn record_key(queue: &str, name: &str) -> String {
    format!("{queue}/{name}")
}

/// A subscription made through the API.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Its identity: random, made once (a subscription deleted and made again under its name is
    /// another one).
    pub id: String,
    /// Its name.
    pub name: String,
    /// The gateway queue it consumes.
    pub queue: String,
    /// Where it posts.
    pub url: String,
    /// The most deliveries in flight.
    pub max_concurrency: u32,
    /// The most deliveries started a second.
    pub max_per_second: Option<u32>,
    /// Seconds the endpoint has to answer.
    pub timeout_seconds: u32,
    /// Seconds each delivery holds its message, if not the default.
    pub visibility_timeout_seconds: Option<u32>,
    /// The body posted as it is.
    pub raw_body: bool,
    /// A 202 holds the lease.
    pub hold_on_202: bool,
    /// Whether deliveries run.
    pub enabled: bool,
    /// Why not, when they don't.
    pub disabled_because: Option<String>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// Who made it.
    pub created_by: String,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// Starts at a random number and grows by one with every change (a change is written only
    /// over the revision it read, so one read of another record of the name never matches).
    pub revision: u64,
    /// The current signing secret.
    pub secret: SealedSecret,
    /// When it was made.
    pub secret_created_at: DateTime<Utc>,
    /// The replaced secret, during a rotation's overlap.
    pub previous: Option<PreviousSecret>,
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL's query may carry a token; the secrets are sealed but need not be shown.
        f.debug_struct("Record")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("queue", &self.queue)
            .field("revision", &self.revision)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl Record {
    /// Where the store keeps it ([`record_key`]).
    pub fn key(&self) -> String {
        record_key(&self.queue, &self.name)
    }

    /// Its settings.
    pub fn settings(&self) -> Settings {
        Settings {
            url: self.url.clone(),
            max_concurrency: self.max_concurrency,
            max_per_second: self.max_per_second,
            timeout_seconds: self.timeout_seconds,
            visibility_timeout_seconds: self.visibility_timeout_seconds,
            raw_body: self.raw_body,
            hold_on_202: self.hold_on_202,
        }
    }

    /// Takes `settings` as its own.
    pub fn set_settings(&mut self, settings: Settings) {
        self.url = settings.url;
        self.max_concurrency = settings.max_concurrency;
        self.max_per_second = settings.max_per_second;
        self.timeout_seconds = settings.timeout_seconds;
        self.visibility_timeout_seconds = settings.visibility_timeout_seconds;
        self.raw_body = settings.raw_body;
        self.hold_on_202 = settings.hold_on_202;
    }

    /// As its admins see it at `now` (an overlap that ended is not shown).
    pub fn view(&self, now: DateTime<Utc>) -> Managed {
        Managed {
            name: self.name.clone(),
            queue: self.queue.clone(),
            endpoint: url::Url::parse(&self.url)
                .map(|url| super::url_without_query(&url))
                .unwrap_or_default(),
            settings: self.settings(),
            enabled: self.enabled,
            disabled_because: self.disabled_because.clone(),
            created_at: self.created_at,
            created_by: self.created_by.clone(),
            updated_at: self.updated_at,
            secret_created_at: self.secret_created_at,
            previous_secret_until: self
                .previous
                .as_ref()
                .map(|previous| previous.until)
                .filter(|until| *until > now),
        }
    }
}

/// Seals secrets under a key derived from the first receipt key; opens them under any.
pub struct SecretSeal {
    keys: Vec<(u16, Aes256GcmSiv)>,
}

impl std::fmt::Debug for SecretSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretSeal(<redacted>)")
    }
}

/// What binds a sealed secret to its subscription.
fn bound_to(queue: &str, name: &str) -> Vec<u8> {
    format!("{queue}\0{name}").into_bytes()
}

impl SecretSeal {
    /// The seal of `keyring`'s keys.
    pub fn new(keyring: &Keyring) -> Self {
        let keys = keyring
            .derive(SEAL_LABEL)
            .into_iter()
            .map(|(id, key)| (id, Aes256GcmSiv::new(key.as_slice().into())))
            .collect();
        Self { keys }
    }

    /// `secret` sealed for the subscription `name` of `queue`.
    pub fn seal(&self, queue: &str, name: &str, secret: &str) -> SealedSecret {
        let (id, cipher) = &self.keys[0];
        let nonce: [u8; 12] = rand::random();
        let aad = bound_to(queue, name);
        let sealed = cipher
            .encrypt(
                (&nonce).into(),
                Payload {
                    msg: secret.as_bytes(),
                    aad: &aad,
                },
            )
            .expect("AES-GCM-SIV seals any secret of this size");
        SealedSecret {
            key: *id,
            nonce: STANDARD.encode(nonce),
            sealed: STANDARD.encode(sealed),
        }
    }

    /// The secret sealed for the subscription `name` of `queue`; `None` when no receipt key
    /// opens it (the key was retired) or it was altered or moved.
    pub fn open(
        &self,
        queue: &str,
        name: &str,
        sealed: &SealedSecret,
    ) -> Option<Zeroizing<String>> {
        let (_, cipher) = self.keys.iter().find(|(id, _)| *id == sealed.key)?;
        let nonce: [u8; 12] = STANDARD.decode(&sealed.nonce).ok()?.try_into().ok()?;
        let bytes = STANDARD.decode(&sealed.sealed).ok()?;
        let aad = bound_to(queue, name);
        let opened = Zeroizing::new(
            cipher
                .decrypt(
                    (&nonce).into(),
                    Payload {
                        msg: &bytes,
                        aad: &aad,
                    },
                )
                .ok()?,
        );
        String::from_utf8(opened.to_vec()).ok().map(Zeroizing::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyring(ids: &[u16]) -> Keyring {
        Keyring::new(
            ids.iter()
                .map(|id| (*id, Zeroizing::new(vec![*id as u8; 32])))
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn a_sealed_secret_opens_only_for_its_subscription_and_keys() {
        let seal = SecretSeal::new(&keyring(&[1, 2]));
        let sealed = seal.seal("orders", "hook", "whsec_abc");
        assert!(!format!("{sealed:?}").contains("sealed"));
        assert_eq!(
            seal.open("orders", "hook", &sealed)
                .as_deref()
                .map(String::as_str),
            Some("whsec_abc")
        );
        assert!(
            seal.open("orders", "other", &sealed).is_none(),
            "bound to its name"
        );
        assert!(
            seal.open("billing", "hook", &sealed).is_none(),
            "and its queue"
        );
        let rotated = SecretSeal::new(&keyring(&[3, 1]));
        assert!(
            rotated.open("orders", "hook", &sealed).is_some(),
            "a key still in the ring opens"
        );
        let retired = SecretSeal::new(&keyring(&[3]));
        assert!(retired.open("orders", "hook", &sealed).is_none());
        let mut altered = sealed.clone();
        altered.sealed.replace_range(
            0..1,
            if altered.sealed.starts_with('A') {
                "B"
            } else {
                "A"
            },
        );
        assert!(seal.open("orders", "hook", &altered).is_none());
    }
}
