//! The embedded backend's configuration: where it keeps its data, its in-flight limits, and the
//! sizes of its caches.

use super::engine;
use serde::Deserialize;
use std::path::PathBuf;

/// Where the embedded backend keeps its data.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddedConfig {
    /// Directory of the redb file; default `sqs-gateway-data` in the working directory.
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// Keep everything in memory only (tests, throwaway use): nothing survives a restart.
    #[serde(default)]
    pub in_memory: bool,
    /// Messages a standard queue may have in flight; SQS's 120,000 unless set lower.
    #[serde(default = "default_in_flight_standard")]
    pub max_in_flight_standard: usize,
    /// Messages a FIFO queue may have in flight; SQS's 20,000 unless set lower.
    #[serde(default = "default_in_flight_fifo")]
    pub max_in_flight_fifo: usize,
    /// Mebibytes of message bodies kept in memory once on disk (all queues together); the rest
    /// are read from the store when received. Default 32.
    #[serde(default = "default_body_cache_mib")]
    pub body_cache_mib: usize,
    /// Mebibytes of the store's page cache (redb's own; the system's file cache comes on top,
    /// outside the process). Default 16.
    #[serde(default = "default_store_cache_mib")]
    pub store_cache_mib: usize,
}

fn default_body_cache_mib() -> usize {
    32
}

fn default_store_cache_mib() -> usize {
    16
}

/// Bytes in a mebibyte.
pub(super) const MIB: usize = 1024 * 1024;

fn default_in_flight_standard() -> usize {
    engine::MAX_IN_FLIGHT_STANDARD
}

fn default_in_flight_fifo() -> usize {
    engine::MAX_IN_FLIGHT_FIFO
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        Self {
            data_dir: default_data_dir(),
            in_memory: false,
            max_in_flight_standard: engine::MAX_IN_FLIGHT_STANDARD,
            max_in_flight_fifo: engine::MAX_IN_FLIGHT_FIFO,
            body_cache_mib: default_body_cache_mib(),
            store_cache_mib: default_store_cache_mib(),
        }
    }
}

fn default_data_dir() -> PathBuf {
    PathBuf::from("sqs-gateway-data")
}

/// The sizes of the durable backend's caches, in bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Caches {
    /// Bodies kept in memory once on disk, all queues together.
    pub(super) bodies: usize,
    /// The store's page cache.
    pub(super) store: usize,
}
