//! The credential store's vocabulary, which every place it is kept shares: an audit log entry,
//! and what can go wrong reading or writing the store.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When to retry a change refused as busy.
pub const BUSY_RETRY: Duration = Duration::from_secs(2);

/// One change (or refused attempt), as the workspace's audit log records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// The workspace.
    pub workspace: String,
    /// Who: the admin key's name (`unknown` for a key that didn't verify, `gateway:…` for the
    /// gateway's own steps).
    pub actor: String,
    /// The admin key's public id beside its free-text name (two keys may share a name); empty
    /// for the gateway's own steps and for keys that didn't verify. Never the key itself.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub actor_key: String,
    /// What: `connection.create`, `secret.rotate`, …
    pub action: String,
    /// `refused` for an attempt the admin API refused (401, 403); empty for a change made.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub outcome: String,
    /// Which connection.
    pub client_id: String,
    /// Anything else worth knowing (the overlap chosen, the new credential version).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// The line's place in the log (1, 2, …; 0 on lines written before the log was chained).
    /// Set when the line is written ([`audit_log`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seq: u64,
    /// `sha256:` and the hex SHA-256 of the log's previous line (empty on the first line): a
    /// line removed, altered or put in between shows as a broken link.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prev: String,
}

/// What [`AuditEntry::outcome`] says of a refused attempt.
pub const REFUSED: &str = "refused";

/// serde's `skip_serializing_if` passes a reference.
fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// The store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The files could not be read or written; detail for the log only.
    #[error("the credential store is unavailable: {0}")]
    Io(String),
    /// A connection with that id exists.
    #[error("a connection with that client id exists")]
    Exists,
    /// No such connection.
    #[error("no such connection")]
    NotFound,
    /// The change does not apply (its reason is safe to show).
    #[error("{0}")]
    NotApplicable(&'static str),
    /// Another change held the directory's lock for longer than the store waits: retry shortly.
    #[error("the credential store is busy: another change holds its lock")]
    Busy,
    /// The connections file is missing while the directory shows the store held connections;
    /// detail (naming the file) for the log only.
    #[error("the credential store is lost: {0}")]
    Lost(String),
    /// An audit cursor that is not one of this log's.
    #[error("the cursor is not one this audit log gave")]
    BadCursor,
}
