//! Access tokens: JWTs (HS256, the `jsonwebtoken` crate) signed with keys derived from the receipt
//! keys, so they rotate the same way (the first key signs, every key verifies, the key id is the
//! token's `kid`). Expiry and issue time are judged on the core clock, not the crate's.

use super::connection::{Connection, Role};
use crate::core::handle::Keyring;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// The label the signing keys are derived under.
const KEY_LABEL: &str = "sqs-gateway/oauth-token-signing/v1";
/// Who issues the tokens.
pub const ISSUER: &str = "sqs-gateway";
/// Longer strings are not our tokens; refused before decoding.
const MAX_TOKEN_LEN: usize = 4096;
/// Tokens issued this far in the future (clock skew between replicas) are still taken.
const ISSUED_AT_LEEWAY_SECONDS: i64 = 60;

/// What a token says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenClaims {
    /// The issuer.
    pub iss: String,
    /// The client id.
    pub sub: String,
    /// The workspace.
    pub tenant: String,
    /// `consumer` or `producer`.
    pub role: Role,
    /// The connection's credential version when the token was issued.
    pub credential_version: u64,
    /// The serial of the secret the token was issued for.
    pub sid: u64,
    /// The connection's instance (a re-created connection is another).
    pub cin: String,
    /// The environment it is valid in.
    pub env: String,
    /// Issued at, seconds since the epoch.
    pub iat: i64,
    /// Expires at, seconds since the epoch.
    pub exp: i64,
    /// A unique id.
    pub jti: String,
}

/// Why a token was refused; the text is safe to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TokenRejected(pub &'static str);

/// Issues and verifies tokens.
pub struct TokenService {
    /// `(key id, signing key, verifying key)`; the first signs.
    keys: Vec<(u16, EncodingKey, DecodingKey)>,
    environment: String,
    lifetime: chrono::Duration,
    validation: Validation,
}

impl std::fmt::Debug for TokenService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<u16> = self.keys.iter().map(|(id, _, _)| *id).collect();
        f.debug_struct("TokenService")
            .field("key_ids", &ids)
            .field("environment", &self.environment)
            .finish_non_exhaustive()
    }
}

impl TokenService {
    /// Tokens for `environment`, living `lifetime`, signed with keys derived from `keyring`.
    pub fn new(keyring: &Keyring, environment: &str, lifetime: chrono::Duration) -> Self {
        let keys = keyring
            .derive(KEY_LABEL)
            .into_iter()
            .map(|(id, secret)| {
                (
                    id,
                    EncodingKey::from_secret(secret.as_ref()),
                    DecodingKey::from_secret(secret.as_ref()),
                )
            })
            .collect();
        let mut validation = Validation::new(Algorithm::HS256);
        // Time is judged on the core clock below; the crate would read the wall clock.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        validation.set_issuer(&[ISSUER]);
        Self {
            keys,
            environment: environment.to_owned(),
            lifetime,
            validation,
        }
    }

    /// The environment tokens are valid in.
    pub fn environment(&self) -> &str {
        &self.environment
    }

    /// How long a token lives.
    pub fn lifetime(&self) -> chrono::Duration {
        self.lifetime
    }

    /// A token for `connection`'s secret `serial`, issued `now`.
    pub fn issue(&self, connection: &Connection, serial: u64, now: DateTime<Utc>) -> String {
        let (id, signing, _) = &self.keys[0];
        let claims = TokenClaims {
            iss: ISSUER.to_owned(),
            sub: connection.client_id.clone(),
            tenant: connection.workspace.clone(),
            role: connection.role,
            credential_version: connection.credential_version,
            sid: serial,
            cin: connection.instance.clone(),
            env: self.environment.clone(),
            iat: now.timestamp(),
            exp: (now + self.lifetime).timestamp(),
            jti: uuid::Uuid::new_v4().simple().to_string(),
        };
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(id.to_string());
        jsonwebtoken::encode(&header, &claims, signing)
            .expect("HS256 signing of serializable claims cannot fail")
    }

    /// The claims of a token this gateway signed, valid now in this environment.
    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<TokenClaims, TokenRejected> {
        const INVALID: TokenRejected = TokenRejected("the token is not valid");
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Err(INVALID);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| INVALID)?;
        if header.alg != Algorithm::HS256 {
            return Err(INVALID);
        }
        let kid: u16 = header
            .kid
            .as_deref()
            .and_then(|kid| kid.parse().ok())
            .ok_or(INVALID)?;
        let (_, _, verifying) = self
            .keys
            .iter()
            .find(|(id, _, _)| *id == kid)
            .ok_or(INVALID)?;
        let claims = jsonwebtoken::decode::<TokenClaims>(token, verifying, &self.validation)
            .map_err(|_| INVALID)?
            .claims;
        if claims.env != self.environment {
            return Err(TokenRejected("the token is for another environment"));
        }
        let now = now.timestamp();
        if claims.exp <= now {
            return Err(TokenRejected("the token has expired"));
        }
        if claims.iat > now + ISSUED_AT_LEEWAY_SECONDS {
            return Err(INVALID);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use zeroize::Zeroizing;

    fn keyring(keys: &[(u16, u8)]) -> Keyring {
        Keyring::new(
            keys.iter()
                .map(|(id, byte)| (*id, Zeroizing::new(vec![*byte; 32])))
                .collect(),
        )
        .unwrap()
    }

    fn connection() -> Connection {
        Connection {
            credential_version: 3,
            ..crate::credentials::oauth::connection::sample("w", "c1")
        }
    }

    #[test]
    fn tokens_verify_until_they_expire_and_across_a_key_rotation() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
        let old = TokenService::new(&keyring(&[(1, 1)]), "sandbox", chrono::Duration::hours(1));
        let token = old.issue(&connection(), 2, now);
        let claims = old.verify(&token, now).unwrap();
        assert_eq!((claims.sub.as_str(), claims.tenant.as_str()), ("c1", "w"));
        assert_eq!((claims.credential_version, claims.sid), (3, 2));
        assert_eq!(claims.exp - claims.iat, 3600);
        // After a rotation (a new first key, the old one still listed) old tokens verify.
        let rotated = TokenService::new(
            &keyring(&[(2, 2), (1, 1)]),
            "sandbox",
            chrono::Duration::hours(1),
        );
        assert!(rotated.verify(&token, now).is_ok());
        // Once the old key is gone they don't.
        let dropped = TokenService::new(&keyring(&[(2, 2)]), "sandbox", chrono::Duration::hours(1));
        assert!(dropped.verify(&token, now).is_err());
        let later = now + chrono::Duration::seconds(3600);
        assert_eq!(
            old.verify(&token, later),
            Err(TokenRejected("the token has expired"))
        );
    }

    #[test]
    fn forged_altered_and_foreign_tokens_are_refused() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
        let service = TokenService::new(&keyring(&[(1, 1)]), "sandbox", chrono::Duration::hours(1));
        let token = service.issue(&connection(), 1, now);
        let preview = TokenService::new(&keyring(&[(1, 1)]), "preview", chrono::Duration::hours(1));
        assert_eq!(
            preview.verify(&token, now),
            Err(TokenRejected("the token is for another environment"))
        );
        let other_key =
            TokenService::new(&keyring(&[(1, 9)]), "sandbox", chrono::Duration::hours(1));
        assert!(other_key.verify(&token, now).is_err());
        // A changed claim breaks the signature.
        let parts: Vec<&str> = token.split('.').collect();
        let mut claims: serde_json::Value = serde_json::from_slice(
            &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, parts[1])
                .unwrap(),
        )
        .unwrap();
        claims["tenant"] = "other".into();
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            base64::Engine::encode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                claims.to_string()
            ),
            parts[2]
        );
        assert!(service.verify(&forged, now).is_err());
        // `alg: none` is not accepted.
        let none = format!(
            "{}.{}.",
            base64::Engine::encode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                r#"{"alg":"none","kid":"1"}"#
            ),
            parts[1]
        );
        assert!(service.verify(&none, now).is_err());
        assert!(service.verify("", now).is_err());
        assert!(service.verify(&"a".repeat(5000), now).is_err());
    }
}
