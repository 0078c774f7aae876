//! One consumer connection's credential record and the rules of its lifecycle (get a secret,
//! rotate with an overlap, stop the old secret, revoke the secret, revoke and restore the
//! connection), kept free of storage so each rule is tested on its own.

use crate::core::access::{Action, Caller, Grants, Principal};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use rand::RngCore as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// What a client secret starts with, so scanners and people can tell one.
pub const SECRET_PREFIX: &str = "sbs_";

/// What the connection's tokens may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads its own queue through the pull routes.
    #[default]
    Consumer,
    /// A producer app's credentials: it gets tokens, and reads no queue.
    Producer,
}

impl Role {
    /// The claim's text.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Consumer => "consumer",
            Role::Producer => "producer",
        }
    }
}

/// Whether the connection may get tokens and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionStatus {
    /// Gets tokens; its tokens read.
    Active,
    /// Gets no token; its tokens are refused; its queue and secret are kept for a restore.
    Revoked,
}

/// A client secret as stored: its hash only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSecret {
    /// Which secret of the connection this is (tokens name it as `sid`).
    pub serial: u64,
    /// `sha256:` and the hex SHA-256 of the secret.
    pub hash: String,
    /// When it was issued.
    pub issued_at: DateTime<Utc>,
    /// For a previous secret: until when it still gets tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<DateTime<Utc>>,
}

/// A consumer (or producer) connection of a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    /// The workspace (tenant) id, `{t}` of the URLs.
    pub workspace: String,
    /// The client id, `{c}` of the URLs.
    pub client_id: String,
    /// Random, per creation: a connection removed and created again under the same client id
    /// is another instance, and the old one's tokens (`cin`) never read the new one.
    pub instance: String,
    /// A label.
    pub name: String,
    /// What its tokens may do.
    pub role: Role,
    /// The gateway queue it reads.
    pub queue: String,
    /// Where messages go after `attempt_limit` deliveries.
    pub dead_letter_queue: Option<String>,
    /// Whether the queue is FIFO (ordered per correlation id).
    pub fifo: bool,
    /// Deliveries before a message moves to the dead-letter queue.
    pub attempt_limit: u32,
    /// The quota tier its limits come from.
    pub tier: String,
    /// Active or revoked.
    pub status: ConnectionStatus,
    /// Set while its queues are being made: until they exist it gets no token and reads nothing
    /// (a create that never finishes is undone, see `api::sombus`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub creating: bool,
    /// Goes up with each rotation (and revocation) of the secret; tokens carry it.
    pub credential_version: u64,
    /// The secret that gets tokens, if any.
    pub secret: Option<StoredSecret>,
    /// The secret before the last rotation, during its overlap.
    pub previous_secret: Option<StoredSecret>,
    /// Secrets issued so far (the next one's serial is this plus one).
    pub secrets_issued: u64,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

/// A lifecycle step that does not apply to the connection as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotApplicable(pub &'static str);

/// A fresh secret: shown once, then only its hash is kept.
pub struct IssuedSecret {
    /// The secret itself.
    pub secret: String,
    /// Its serial.
    pub serial: u64,
}

impl std::fmt::Debug for IssuedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedSecret")
            .field("serial", &self.serial)
            .finish_non_exhaustive()
    }
}

/// What separates the workspace from the chosen part of a client id an admin chose
/// (`{workspace}.{chosen}`): no workspace id or chosen part contains it.
pub const WORKSPACE_SEPARATOR: char = '.';

/// The client id of the chosen part `chosen` in `workspace`.
pub fn qualified_client_id(workspace: &str, chosen: &str) -> String {
    format!("{workspace}{WORKSPACE_SEPARATOR}{chosen}")
}

impl Connection {
    /// The core caller the connection's token is: it receives from, acknowledges on and changes
    /// visibility on its own queue, nothing else.
    pub fn caller(&self) -> Caller {
        let grants = Grants::none().allow(
            &self.queue,
            [
                Action::Receive,
                Action::Acknowledge,
                Action::ChangeVisibility,
            ],
        );
        Caller::new(Principal::Token(self.client_id.clone()), Arc::new(grants))
    }

    /// The core caller `principal` (an admin key, or the gateway's own steps) is when it manages
    /// a connection's `queues`: it creates and removes them, redrives and inspects them.
    pub fn manager(principal: Principal, queues: &[&str]) -> Caller {
        let grants = queues.iter().fold(Grants::none(), |grants, queue| {
            grants.allow(
                queue,
                [Action::ManageQueues, Action::Redrive, Action::Inspect],
            )
        });
        Caller::new(principal, Arc::new(grants))
    }

    /// The client id without its workspace: the part an admin chose (or the whole id, for
    /// generated ids and ids made before ids were qualified). Its queue names are made of it.
    pub fn local_id(&self) -> &str {
        self.client_id
            .split_once(WORKSPACE_SEPARATOR)
            .map_or(self.client_id.as_str(), |(_, chosen)| chosen)
    }

    /// Gets the connection a secret when it has none (a new connection, or after a revocation).
    pub fn issue_secret(&mut self, now: DateTime<Utc>) -> Result<IssuedSecret, NotApplicable> {
        if self.secret.is_some() {
            return Err(NotApplicable(
                "the connection has a secret, which can't be shown again: rotate it for a new one",
            ));
        }
        Ok(self.install_secret(now))
    }

    /// A new secret; the previous one keeps getting tokens for `overlap` (none when zero), and
    /// every earlier token stops (`credential_version` goes up).
    pub fn rotate(
        &mut self,
        overlap: chrono::Duration,
        now: DateTime<Utc>,
    ) -> Result<IssuedSecret, NotApplicable> {
        let Some(mut current) = self.secret.take() else {
            return Err(NotApplicable(
                "the connection has no secret to rotate: get a client secret first",
            ));
        };
        current.valid_until = Some(now + overlap);
        self.previous_secret = (overlap > chrono::Duration::zero()).then_some(current);
        self.credential_version += 1;
        Ok(self.install_secret(now))
    }

    /// Ends the previous secret's overlap now; its tokens stop with it.
    pub fn stop_old_secret(&mut self) -> Result<(), NotApplicable> {
        self.previous_secret
            .take()
            .map(|_| ())
            .ok_or(NotApplicable("there is no old secret in its overlap"))
    }

    /// Stops the secret (and any old one) at once; tokens of either never work again.
    pub fn revoke_secret(&mut self) -> Result<(), NotApplicable> {
        if self.secret.is_none() && self.previous_secret.is_none() {
            return Err(NotApplicable("the connection has no secret to revoke"));
        }
        self.secret = None;
        self.previous_secret = None;
        self.credential_version += 1;
        Ok(())
    }

    /// Revokes or restores the connection.
    pub fn set_status(&mut self, status: ConnectionStatus) -> Result<(), NotApplicable> {
        if self.status == status {
            return Err(match status {
                ConnectionStatus::Active => NotApplicable("the connection is not revoked"),
                ConnectionStatus::Revoked => NotApplicable("the connection is revoked already"),
            });
        }
        self.status = status;
        Ok(())
    }

    /// The serial of the secret `presented` is, if it still gets tokens. Compares in constant
    /// time against both secrets, whichever matches.
    pub fn secret_serial(&self, presented: &str, now: DateTime<Utc>) -> Option<u64> {
        let digest = hash_secret(presented);
        let mut found = None;
        for secret in self.live_secrets(now) {
            if bool::from(digest.as_bytes().ct_eq(secret.hash.as_bytes())) {
                found = Some(secret.serial);
            }
        }
        found
    }

    /// Whether tokens of instance `instance` naming the secret `serial` and
    /// `credential_version` still read.
    pub fn honours(
        &self,
        instance: &str,
        serial: u64,
        credential_version: u64,
        now: DateTime<Utc>,
    ) -> bool {
        instance == self.instance
            && credential_version == self.credential_version
            && self.live_secrets(now).any(|secret| secret.serial == serial)
    }

    /// When the previous secret stops getting tokens, if it still does.
    pub fn overlap_until(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.previous_secret
            .as_ref()
            .and_then(|previous| previous.valid_until)
            .filter(|until| *until > now)
    }

    /// How many secrets get tokens now.
    #[cfg(test)]
    pub(crate) fn live_secret_count(&self, now: DateTime<Utc>) -> usize {
        self.live_secrets(now).count()
    }

    fn live_secrets(&self, now: DateTime<Utc>) -> impl Iterator<Item = &StoredSecret> {
        let previous = self
            .previous_secret
            .as_ref()
            .filter(|previous| previous.valid_until.is_some_and(|until| until > now));
        self.secret.iter().chain(previous)
    }

    fn install_secret(&mut self, now: DateTime<Utc>) -> IssuedSecret {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let secret = format!("{SECRET_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
        self.secrets_issued += 1;
        let serial = self.secrets_issued;
        self.secret = Some(StoredSecret {
            serial,
            hash: hash_secret(&secret),
            issued_at: now,
            valid_until: None,
        });
        IssuedSecret { secret, serial }
    }
}

/// The stored form of a secret: `sha256:` and its hex digest (secrets are 256 random bits, so a
/// fast hash is enough; nothing to stretch).
pub fn hash_secret(secret: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(secret.as_bytes())))
}

/// A connection of workspace `w` with no secret yet, for tests.
#[cfg(test)]
pub(crate) fn sample(workspace: &str, client_id: &str) -> Connection {
    use chrono::TimeZone as _;
    Connection {
        workspace: workspace.into(),
        client_id: client_id.into(),
        instance: "i1".into(),
        name: "test".into(),
        role: Role::Consumer,
        queue: "q".into(),
        dead_letter_queue: None,
        fifo: true,
        attempt_limit: 5,
        tier: "standard".into(),
        status: ConnectionStatus::Active,
        creating: false,
        credential_version: 1,
        secret: None,
        previous_secret: None,
        secrets_issued: 0,
        created_at: Utc
            .with_ymd_and_hms(2026, 11, 30, 12, 0, 0)
            .single()
            .expect("a valid time"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn connection() -> Connection {
        sample("w", "c1")
    }

    #[test]
    fn a_rotation_keeps_the_old_secret_for_its_overlap_and_ends_earlier_tokens() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
        let mut c = connection();
        let first = c.issue_secret(now).unwrap();
        assert!(
            c.issue_secret(now).is_err(),
            "a second secret is a rotation"
        );
        assert_eq!(c.secret_serial(&first.secret, now), Some(first.serial));
        assert!(c.honours("i1", first.serial, 1, now));
        let second = c.rotate(chrono::Duration::hours(1), now).unwrap();
        assert_eq!(c.credential_version, 2);
        // The old secret still gets tokens (of the new version) for an hour.
        assert_eq!(c.secret_serial(&first.secret, now), Some(first.serial));
        assert!(
            !c.honours("i1", first.serial, 1, now),
            "earlier tokens stop"
        );
        assert!(c.honours("i1", first.serial, 2, now));
        let later = now + chrono::Duration::minutes(61);
        assert_eq!(c.secret_serial(&first.secret, later), None);
        assert!(!c.honours("i1", first.serial, 2, later));
        assert_eq!(c.secret_serial(&second.secret, later), Some(second.serial));
        assert_eq!(c.secret_serial("sbs_guess", now), None);
    }

    #[test]
    fn stop_old_secret_and_revoke_end_secrets_for_good() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
        let mut c = connection();
        let first = c.issue_secret(now).unwrap();
        let second = c.rotate(chrono::Duration::hours(24), now).unwrap();
        c.stop_old_secret().unwrap();
        assert_eq!(c.secret_serial(&first.secret, now), None);
        assert!(c.stop_old_secret().is_err());
        c.revoke_secret().unwrap();
        assert_eq!(c.secret_serial(&second.secret, now), None);
        assert!(!c.honours("i1", second.serial, c.credential_version, now));
        let third = c.issue_secret(now).unwrap();
        assert!(third.serial > second.serial);
        assert!(!c.honours("i1", second.serial, c.credential_version, now));
        let none = c.rotate(chrono::Duration::zero(), now).unwrap();
        assert_eq!(c.secret_serial(&third.secret, now), None, "no overlap");
        assert!(c.honours("i1", none.serial, c.credential_version, now));
    }

    #[test]
    fn only_the_hash_is_stored_and_debug_shows_no_secret() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
        let mut c = connection();
        let issued = c.issue_secret(now).unwrap();
        let stored = serde_json::to_string(&c).unwrap();
        assert!(!stored.contains(&issued.secret));
        assert!(stored.contains(&hash_secret(&issued.secret)));
        assert!(!format!("{issued:?}").contains(&issued.secret));
    }
}
