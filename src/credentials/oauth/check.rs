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
    pub fn authenticate_client(
        &self,
        client_id: &str,
        secret: &str,
    ) -> Result<(Connection, u64), Refusal> {
        const WRONG: Refusal = Refusal::Unauthenticated("unknown client or wrong secret");
        let now = self.clock.now();
        let connection = if is_client_id(client_id) {
            self.store.get(client_id).map_err(unavailable)?
        } else {
            None
        };
        let Some(connection) = connection else {
            // The same work as for a known client, so timing doesn't tell ids apart.
            let _ = super::connection::hash_secret(secret);
            return Err(WRONG);
        };
        // What was just read is the freshest view: the token about to be issued is checked
        // against it, not against an older one this replica kept. (Only known clients are kept:
        // callers that authenticate nothing fill nothing.)
        self.looked_up.insert(
            client_id.to_owned(),
            Looked {
                at: now,
                connection: Some(Arc::new(connection.clone())),
            },
        );
        let serial = connection.secret_serial(secret, now).ok_or(WRONG)?;
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
    pub fn check(
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
            .connection(&claims.sub, now, fresh_within)?
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

    /// Drops this replica's copy of a connection (after a change made here).
    pub fn forget(&self, client_id: &str) {
        self.looked_up.invalidate(client_id);
    }

    fn connection(
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
        let connection = self
            .store
            .get(client_id)
            .map_err(unavailable)?
            .map(Arc::new);
        self.looked_up.insert(
            client_id.to_owned(),
            Looked {
                at: now,
                connection: connection.clone(),
            },
        );
        Ok(connection)
    }
}

/// Whether a presented client id has the shape of one (1 to 25 letters, digits or `-`): others
/// are refused without a lookup.
pub fn is_client_id(client_id: &str) -> bool {
    !client_id.is_empty()
        && client_id.len() <= MAX_CLIENT_ID_LEN
        && client_id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
}

/// The longest client id.
pub const MAX_CLIENT_ID_LEN: usize = 25;

fn unavailable(error: StoreError) -> Refusal {
    tracing::error!(%error, "credential store");
    Refusal::Unavailable
}
