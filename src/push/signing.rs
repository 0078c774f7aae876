//! Standard Webhooks signatures (v1): `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "{id}.{timestamp}.{body}">`, keyed by the secret's bytes (`whsec_` and standard base64), one
//! signature per secret in use, separated by spaces (both during a rotation).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

/// What a Standard Webhooks secret starts with.
pub const SECRET_PREFIX: &str = "whsec_";

/// A new secret: 32 random bytes, written as Standard Webhooks gives them.
pub(super) fn new_secret() -> Zeroizing<String> {
    let bytes = Zeroizing::new(rand::random::<[u8; 32]>());
    Zeroizing::new(format!("{SECRET_PREFIX}{}", STANDARD.encode(*bytes)))
}

/// A signing key: the secret's bytes.
pub(crate) struct SigningKey(Zeroizing<Vec<u8>>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

impl SigningKey {
    /// The key of a secret written `whsec_<base64>` (24 to 64 bytes, as the Standard Webhooks
    /// libraries make them); the error never repeats the secret.
    pub(crate) fn parse(secret: &str) -> Result<Self, String> {
        let encoded = secret
            .strip_prefix(SECRET_PREFIX)
            .ok_or_else(|| format!("must start with `{SECRET_PREFIX}` followed by base64"))?;
        let bytes = Zeroizing::new(
            STANDARD
                .decode(encoded)
                .map_err(|_| format!("must be `{SECRET_PREFIX}` followed by standard base64"))?,
        );
        if !(24..=64).contains(&bytes.len()) {
            return Err("must hold 24 to 64 bytes (base64 of 32 random bytes is usual)".into());
        }
        Ok(Self(bytes))
    }

    /// The `v1,<signature>` of a message with `id` sent at `timestamp` (Unix seconds).
    pub(super) fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

/// The `webhook-signature` value: one signature per key, separated by spaces.
pub(super) fn signatures(keys: &[&SigningKey], id: &str, timestamp: i64, body: &[u8]) -> String {
    keys.iter()
        .map(|key| key.sign(id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_as_the_standard_webhooks_example_does() {
        // The example of the Standard Webhooks specification (and of its libraries' tests).
        let key = SigningKey::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            key.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn secrets_must_be_standard_webhooks_secrets() {
        for bad in [
            "",
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_!!!",
            "whsec_c2hvcnQ=",
        ] {
            let refused = SigningKey::parse(bad).unwrap_err();
            assert!(!refused.contains("MfKQ"), "{refused}");
        }
        let rotating = [
            SigningKey::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap(),
            SigningKey::parse(&format!("whsec_{}", STANDARD.encode([7u8; 32]))).unwrap(),
        ];
        let both = signatures(&[&rotating[0], &rotating[1]], "id", 1, b"{}");
        assert_eq!(both.split(' ').count(), 2);
        assert!(both.split(' ').all(|one| one.starts_with("v1,")));
    }
}
