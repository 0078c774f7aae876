//! The `[state]` and `[ledger]` sections: where the gateway keeps what it shares between
//! requests (in this process, a directory across restarts, or a Redis/Valkey server or cluster
//! replicas share), and the delivery ledger's bounds.

use crate::core::state::ledger::UnknownDeliveries;
use crate::state::redis::config::RedisStateConfig;
use serde::Deserialize;
use std::path::PathBuf;

/// The state store's failure policy (receives, acknowledgements and visibility changes always
/// answer unavailable when the ledger cannot answer; burst limits let requests through).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    /// Daily quotas when the store cannot count: `refuse` (default: 503 with `Retry-After`) or
    /// `admit` (uncounted).
    pub quotas_when_unavailable: crate::core::limits::QuotaPolicy,
    /// A Redis or Valkey server shared by every replica; without it the state is this process's.
    pub redis: Option<RedisStateConfig>,
    /// Where one node without `redis` keeps its state across a graceful restart (default
    /// `<data_dir>/state` on the durable engine, `sqs-gateway-data/state` over SQS).
    pub dir: Option<PathBuf>,
}

/// Bounds of the delivery ledger.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LedgerConfig {
    /// Deliveries remembered at most; beyond it the least used are evicted (their handles turn stale).
    pub max_entries: u64,
    /// Seconds a delivery is remembered; after that its handle counts as unknown.
    pub ttl_seconds: u64,
    /// What a handle the ledger does not know does: `stale` (default, safe) or `pass_through`
    /// (acts on the backend; for several replicas without a shared ledger).
    pub unknown_deliveries: UnknownDeliveries,
}

impl Default for LedgerConfig {
    fn default() -> Self {
        Self {
            max_entries: 1_000_000,
            ttl_seconds: 24 * 3600,
            unknown_deliveries: UnknownDeliveries::Stale,
        }
    }
}
