//! OAuth client credentials of consumer connections (the sombus API): the connection records with
//! their hashed secrets and credential versions, the audit log of every change, the signed access
//! tokens, and the check that holds a token to its connection's current state.

pub mod audit_log;
pub mod check;
pub mod connection;
mod files;
mod local_store;
mod records;
mod refusals;
pub mod shared_server;
mod shared_store;
pub mod store;
pub mod tokens;

pub use audit_log::AuditPage;
pub use check::{CredentialCheck, Refusal};
pub use connection::{Connection, ConnectionStatus, Role};
pub use store::{AuditEntry, ConnectionStore, Imported, StoreError};
pub use tokens::{TokenClaims, TokenService};
