//! The port a shared credential store stands on: the few operations a server every replica
//! reaches must answer (an atomic read of the whole store, a write made only at the version it
//! was read at, the audit log's lines by place, the changed client ids as they are published).
//! The store's rules (how a change is applied and retried, how the log is chained and paged)
//! are [`super::shared_store`]'s; the adapter on Redis or Valkey is
//! `crate::state::redis::credential_server`.

use super::records::StoreError;
use async_trait::async_trait;
use futures_util::stream::BoxStream;
use std::collections::BTreeMap;

/// The store as one read saw it.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Bumped by every change (0 for a store never written).
    pub version: i64,
    /// Each connection's stored record, by client id.
    pub records: BTreeMap<String, Vec<u8>>,
    /// The audit log's last line.
    pub last_line: Option<Vec<u8>>,
}

/// One change, to be written only if the store is still at `read_at`.
#[derive(Debug)]
pub struct Commit<'a> {
    /// The version the change was read at.
    pub read_at: i64,
    /// The change's audit line and its place in the log.
    pub line: Option<(u64, &'a [u8])>,
    /// Connections' records set, by client id.
    pub sets: &'a [(String, Vec<u8>)],
    /// Client ids removed.
    pub removed: &'a [String],
}

/// The server a shared credential store keeps its connections and audit log on.
#[async_trait]
pub trait CredentialServer: Send + Sync + std::fmt::Debug {
    /// Whether the server answers.
    async fn probe(&self) -> Result<(), StoreError>;
    /// One connection's record.
    async fn record(&self, client_id: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Every connection's record.
    async fn records(&self) -> Result<Vec<Vec<u8>>, StoreError>;
    /// The store as it is now, in one atomic read.
    async fn snapshot(&self) -> Result<Snapshot, StoreError>;
    /// Writes `commit` (its line, its sets and removals, a new version, and the changed client
    /// ids published) if the version is still the one it was read at, all or nothing: answers
    /// whether it was made.
    async fn commit(&self, commit: Commit<'_>) -> Result<bool, StoreError>;
    /// At most `count` audit lines with their places, newest first, of those at or below the
    /// place `through` (the newest when `None`).
    async fn lines(
        &self,
        through: Option<u64>,
        count: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError>;
    /// The client ids changes name as other replicas publish them, until the subscription
    /// breaks (the stream ends).
    async fn changes(&self) -> Result<BoxStream<'static, String>, StoreError>;
    /// Takes in a whole store (records by client id, the audit log's lines in order, each at its
    /// place) only while this one holds nothing at all; answers whether it was taken in.
    async fn import(
        &self,
        records: &[(String, Vec<u8>)],
        lines: &[Vec<u8>],
    ) -> Result<bool, StoreError>;
}
