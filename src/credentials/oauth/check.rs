//! Holds a token to its connection's current state, not only its signature: every replica looks
//! the connection up (a moka cache whose entries are judged stale on the core clock after at most
//! `recheck`, 30 s at most), so a rotation, a revocation or a removal made anywhere stops earlier
//! tokens everywhere within that time. Issuing a token always reads the store itself.

use super::connection::{Connection, ConnectionStatus, Role};
use super::store::{ConnectionStore, StoreError};
use super::tokens::{TokenClaims, TokenService};
use crate::core::clock::Clock;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// The longest a replica may go without re-reading a connection.
pub const MAX_RECHECK: std::time::Duration = std::time::Duration::from_secs(30);
/// How many connections a replica keeps looked up.
const CACHED_CONNECTIONS: u64 = 100_000;

/// Why credentials were refused; the texts are safe to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Missing, wrong, expired, superseded or foreign credentials: get new ones.
    Unauthenticated(&'static str),
    /// Valid credentials, but not of an active consumer connection.
    NotRegistered(&'static str),
    /// The credential store could not be read (detail logged), or the connection's queues are
    /// still being made: retry shortly.
    Unavailable,
}

#[derive(Debug, Clone)]
struct Looked {
    at: DateTime<Utc>,
    connection: Option<Arc<Connection>>,
}

/// Token issuance and verification against the connections.
pub struct CredentialCheck {
    tokens: TokenService,
    store: Arc<ConnectionStore>,
    looked_up: moka::sync::Cache<String, Looked>,
    recheck: chrono::Duration,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for CredentialCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialCheck")
            .field("tokens", &self.tokens)
            .field("recheck", &self.recheck)
            .finish_non_exhaustive()
    }
}

impl CredentialCheck {
    /// Checks with `tokens` against `store`, looking connections up again after `recheck`
    /// (capped at [`MAX_RECHECK`]).
    pub fn new(
        tokens: TokenService,
        store: Arc<ConnectionStore>,
        recheck: std::time::Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let recheck = recheck.min(MAX_RECHECK);
        Self {
            tokens,
            store,
            looked_up: moka::sync::Cache::builder()
                .max_capacity(CACHED_CONNECTIONS)
                // Freshness is judged on the core clock; this only bounds memory.
                .time_to_live(MAX_RECHECK)
                .build(),
            recheck: chrono::Duration::from_std(recheck).unwrap_or(chrono::Duration::zero()),
            clock,
        }
    }

    /// The token service.
    pub fn tokens(&self) -> &TokenService {
        &self.tokens
    }

    /// The store.
    pub fn store(&self) -> &Arc<ConnectionStore> {
        &self.store
    }

    /// The connection `client_id` and the serial of its secret `secret`, if that secret still
    /// gets tokens and the connection is active. Reads the store itself, so a revoked secret or
    /// connection gets no token at once.
    pub async fn authenticate_client(
        &self,
        client_id: &str,
        secret: &str,
    ) -> Result<(Connection, u64), Refusal> {
        const WRONG: Refusal = Refusal::Unauthenticated("unknown client or wrong secret");
        let now = self.clock.now();
        // The store's content read now (not a copy a stamp vouches for): a revocation made on
        // any replica gets no token at once.
        let (found, as_of) = if is_client_id(client_id) {
            self.store
                .lookup(client_id, chrono::TimeDelta::zero())
                .await
                .map_err(unavailable)?
        } else {
            (None, now)
        };
        // An unknown id does the work of a known one with a wrong secret, so timing doesn't tell
        // ids apart: the same lookup, a copy of a connection (the decoy's), the same secret
        // check against it, and nothing kept in the cache either way.
        let known = found.is_some();
        let connection = found.unwrap_or_else(|| decoy().clone());
        let serial = verify_secret(&connection, secret, now)
            .filter(|_| known)
            .ok_or(WRONG)?;
        // What was just read is the freshest view: the token about to be issued is checked
        // against it, not against an older one this replica kept. (Only clients that proved
        // their secret are kept: guesses fill nothing.)
        self.looked_up.insert(
            client_id.to_owned(),
            Looked {
                at: as_of,
                connection: Some(Arc::new(connection.clone())),
            },
        );
        if connection.creating {
            // Its queues are being made: a moment later it gets tokens.
            return Err(Refusal::Unavailable);
        }
        if connection.status != ConnectionStatus::Active {
            return Err(Refusal::Unauthenticated("the connection is revoked"));
        }
        Ok((connection, serial))
    }

    /// A token for the connection's secret `serial`, issued now.
    pub fn mint(&self, connection: &Connection, serial: u64) -> String {
        self.tokens.issue(connection, serial, self.clock.now())
    }

    /// The claims of a token that may read now, with its connection, read at most
    /// `fresh_within` ago (and never longer ago than the recheck time).
    pub async fn check(
        &self,
        token: &str,
        fresh_within: std::time::Duration,
    ) -> Result<(TokenClaims, Arc<Connection>), Refusal> {
        let now = self.clock.now();
        let fresh_within = chrono::Duration::from_std(fresh_within)
            .unwrap_or(self.recheck)
            .min(self.recheck);
        let claims = self
            .tokens
            .verify(token, now)
            .map_err(|rejected| Refusal::Unauthenticated(rejected.0))?;
        let connection = self
            .connection(&claims.sub, now, fresh_within)
            .await?
            .filter(|connection| connection.workspace == claims.tenant)
            .ok_or(Refusal::NotRegistered("the connection was removed"))?;
        if connection.creating {
            // "Your queue is still being set up".
            return Err(Refusal::Unavailable);
        }
        if claims.role != Role::Consumer || connection.role != Role::Consumer {
            return Err(Refusal::NotRegistered(
                "a producer's token can't read a queue: use the consumer connection's credentials",
            ));
        }
        if connection.status != ConnectionStatus::Active {
            return Err(Refusal::NotRegistered(
                "the connection is revoked: restore it to read again",
            ));
        }
        if !connection.honours(&claims.cin, claims.sid, claims.credential_version, now) {
            return Err(Refusal::Unauthenticated(
                "the token was issued before the connection's credentials changed: get a new token",
            ));
        }
        Ok((claims, connection))
    }

    /// Drops this replica's copy of a connection (after a change made here, or heard of).
    pub fn forget(&self, client_id: &str) {
        self.looked_up.invalidate(client_id);
    }

    /// Drops every copy (changes may have been missed).
    pub fn forget_all(&self) {
        self.looked_up.invalidate_all();
    }

    async fn connection(
        &self,
        client_id: &str,
        now: DateTime<Utc>,
        fresh_within: chrono::Duration,
    ) -> Result<Option<Arc<Connection>>, Refusal> {
        if let Some(looked) = self.looked_up.get(client_id)
            && now - looked.at < fresh_within
            && looked.at <= now
        {
            return Ok(looked.connection);
        }
        // Kept as of when the store's content was read, not when it was looked up: the store
        // may answer a copy up to `fresh_within` old (never older), and that age counts.
        let (connection, as_of) = self
            .store
            .lookup(client_id, fresh_within)
            .await
            .map_err(unavailable)?;
        let connection = connection.map(Arc::new);
        self.looked_up.insert(
            client_id.to_owned(),
            Looked {
                at: as_of.min(now),
                connection: connection.clone(),
            },
        );
        Ok(connection)
    }
}

/// Checks a presented secret against a connection's live secrets: the one check of the token
/// service, for known and unknown client ids alike.
fn verify_secret(connection: &Connection, secret: &str, now: DateTime<Utc>) -> Option<u64> {
    #[cfg(test)]
    tests::VERIFIED.with(|verified| verified.set(verified.get() + 1));
    connection.secret_serial(secret, now)
}

/// A connection no client id names, with one live secret nobody knows (random per process):
/// what an unknown client id's secret is checked against.
fn decoy() -> &'static Connection {
    static DECOY: std::sync::LazyLock<Connection> = std::sync::LazyLock::new(|| {
        let mut decoy = Connection {
            workspace: "decoy".to_owned(),
            client_id: "decoy".to_owned(),
            instance: String::new(),
            name: "decoy".to_owned(),
            role: Role::Consumer,
            queue: String::new(),
            dead_letter_queue: None,
            fifo: true,
            attempt_limit: 5,
            tier: String::new(),
            status: ConnectionStatus::Active,
            creating: false,
            credential_version: 1,
            secret: None,
            previous_secret: None,
            secrets_issued: 0,
            created_at: DateTime::<Utc>::default(),
        };
        // Its secret is shown to no one and its id matches no lookup: it never authenticates.
        let _unseen = decoy.issue_secret(DateTime::<Utc>::default());
        decoy
    });
    &DECOY
}

/// Whether a presented client id has the shape of one: 1 to 25 letters, digits or `-` (a
/// generated id, or one made before ids were qualified), or a workspace id (1 to 36 of those),
/// `.` and 1 to 25 of those (an id an admin chose). Others are refused without a lookup.
pub fn is_client_id(client_id: &str) -> bool {
    let part = |part: &str, longest: usize| {
        !part.is_empty()
            && part.len() <= longest
            && part
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
    };
    match client_id.split_once(super::connection::WORKSPACE_SEPARATOR) {
        Some((workspace, chosen)) => {
            part(workspace, MAX_WORKSPACE_LEN) && part(chosen, MAX_CHOSEN_ID_LEN)
        }
        None => part(client_id, MAX_CHOSEN_ID_LEN),
    }
}

/// The longest client id an admin chooses (and the longest generated or unqualified one).
pub const MAX_CHOSEN_ID_LEN: usize = 25;
/// The longest workspace id (a UUID fits).
pub const MAX_WORKSPACE_LEN: usize = 36;
/// The longest client id: a workspace's, `.`, and a chosen one.
pub const MAX_CLIENT_ID_LEN: usize = MAX_WORKSPACE_LEN + 1 + MAX_CHOSEN_ID_LEN;

fn unavailable(error: StoreError) -> Refusal {
    tracing::error!(%error, "credential store");
    Refusal::Unavailable
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::SystemClock;
    use crate::core::handle::Keyring;
    use crate::credentials::oauth::AuditEntry;
    use std::cell::Cell;

    thread_local! {
        /// Secret checks made on this thread.
        pub(super) static VERIFIED: Cell<u32> = const { Cell::new(0) };
    }

    fn verified() -> u32 {
        VERIFIED.with(Cell::get)
    }

    async fn check_with(connection: Connection) -> CredentialCheck {
        let keyring = Keyring::new(vec![(1, zeroize::Zeroizing::new(vec![7; 32]))]).unwrap();
        let tokens = TokenService::new(&keyring, "test", chrono::Duration::hours(1));
        let store = Arc::new(ConnectionStore::in_memory(Arc::new(SystemClock)));
        store
            .create(connection, AuditEntry::default())
            .await
            .unwrap();
        CredentialCheck::new(
            tokens,
            store,
            std::time::Duration::from_secs(25),
            Arc::new(SystemClock),
        )
    }

    /// Without timing anything: an unknown client id and a known one with a wrong secret take
    /// the same path (one secret check, against a connection with one live secret, nothing
    /// cached) and get the same refusal.
    #[tokio::test]
    async fn unknown_ids_and_wrong_secrets_do_the_same_work() {
        let mut known = super::super::connection::sample("w", "w.known");
        let issued = known.issue_secret(SystemClock.now()).unwrap();
        let check = check_with(known).await;
        let mut refusals = Vec::new();
        for (client_id, secret) in [
            ("w.known", "sbs_wrong"),
            ("w.unknown", "sbs_wrong"),
            ("unknown", "sbs_wrong"),
        ] {
            let before = verified();
            refusals.push(
                check
                    .authenticate_client(client_id, secret)
                    .await
                    .unwrap_err(),
            );
            assert_eq!(verified() - before, 1, "{client_id}: one secret check");
            assert!(
                !check.looked_up.contains_key(client_id),
                "{client_id}: nothing cached"
            );
        }
        assert!(refusals.iter().all(|refusal| *refusal == refusals[0]));
        assert_eq!(
            decoy().live_secret_count(SystemClock.now()),
            1,
            "the decoy has one live secret, as a connection outside a rotation"
        );
        // The decoy's own secret never authenticates an unknown id.
        let before = verified();
        assert!(
            check
                .authenticate_client("w.known", &issued.secret)
                .await
                .is_ok()
        );
        assert_eq!(verified() - before, 1);
        assert!(
            check.looked_up.contains_key("w.known"),
            "a proven client is kept"
        );
    }

    #[test]
    fn client_ids_have_the_shape_of_generated_or_qualified_ids() {
        for good in ["c0123456789abcdef0123", "house-1", "ws-3f9a.house-1"] {
            assert!(is_client_id(good), "{good}");
        }
        let long_workspace = format!("{}.x", "w".repeat(37));
        let long_chosen = format!("w.{}", "x".repeat(26));
        for bad in [
            "",
            ".x",
            "w.",
            "w.x.y",
            "has space",
            "w_x",
            long_workspace.as_str(),
            long_chosen.as_str(),
        ] {
            assert!(!is_client_id(bad), "{bad}");
        }
    }
}
