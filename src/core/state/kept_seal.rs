//! What the core keeps in the state store about a receive (an attempt's answer, a backend
//! delivery's handle) is sealed first: AES-256-GCM-SIV under a key derived from each receipt key,
//! with the store key it is kept under as associated data. A reader of a shared store then sees
//! no message body and no handle, and a writer can neither forge an answer nor move one to
//! another attempt: what does not open reads as nothing kept.

use crate::core::handle::Keyring;
use aes_gcm_siv::aead::{Aead, KeyInit, Payload};
use aes_gcm_siv::{Aes256GcmSiv, Nonce};

/// Derives the sealing keys from the receipt keys (they rotate with them).
const LABEL: &str = "sqs-gateway kept answers v1 (AES-256-GCM-SIV)";
const NONCE_LEN: usize = 12;

/// The keys that seal kept values: the newest seals, all open.
pub struct KeptSeal {
    keys: Vec<(u16, Aes256GcmSiv)>,
}

impl std::fmt::Debug for KeptSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptSeal").finish_non_exhaustive()
    }
}

impl KeptSeal {
    /// Keys derived from every key of `keyring`, in its order.
    pub fn new(keyring: &Keyring) -> Self {
        let keys = keyring
            .derive(LABEL)
            .into_iter()
            .map(|(id, key)| {
                let cipher = Aes256GcmSiv::new_from_slice(&*key)
                    .expect("a derived key is 32 bytes, as AES-256 takes");
                (id, cipher)
            })
            .collect();
        Self { keys }
    }

    /// `value` sealed for keeping under `store_key`.
    pub fn seal(&self, store_key: &str, value: &[u8]) -> Vec<u8> {
        let Some((id, cipher)) = self.keys.first() else {
            return Vec::new();
        };
        let mut nonce = [0u8; NONCE_LEN];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut nonce);
        let sealed = cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: value,
                    aad: store_key.as_bytes(),
                },
            )
            .expect("AES-256-GCM-SIV encryption of an in-memory buffer cannot fail");
        let mut out = Vec::with_capacity(2 + NONCE_LEN + sealed.len());
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// What was sealed under `store_key`, if `sealed` opens as such.
    pub fn open(&self, store_key: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        let (id, rest) = sealed.split_first_chunk::<2>()?;
        let (nonce, body) = rest.split_first_chunk::<NONCE_LEN>()?;
        let id = u16::from_be_bytes(*id);
        let (_, cipher) = self.keys.iter().find(|(key_id, _)| *key_id == id)?;
        cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: body,
                    aad: store_key.as_bytes(),
                },
            )
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_seal() -> KeptSeal {
        let key = Keyring::decode_key(1, &Keyring::generate_key()).unwrap();
        KeptSeal::new(&Keyring::new(vec![(1, key)]).unwrap())
    }

    #[test]
    fn a_sealed_value_opens_under_its_key_only_and_hides_its_bytes() {
        let seal = new_seal();
        let sealed = seal.seal("attempt:a", b"the body of a message");
        assert!(!sealed.windows(4).any(|window| window == b"body"));
        assert_eq!(
            seal.open("attempt:a", &sealed).as_deref(),
            Some(&b"the body of a message"[..])
        );
        assert_eq!(
            seal.open("attempt:b", &sealed),
            None,
            "moved to another key"
        );
        let mut altered = sealed.clone();
        *altered.last_mut().unwrap() ^= 1;
        assert_eq!(seal.open("attempt:a", &altered), None);
        assert_eq!(seal.open("attempt:a", b"plain"), None, "unsealed");
        assert_eq!(
            new_seal().open("attempt:a", &sealed),
            None,
            "another gateway's keys"
        );
    }
}
