//! The tables of the store's file, one per kind of record (the records module has their formats).

use redb::TableDefinition;

/// Each queue's settings (JSON), by name.
pub(super) const QUEUES: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("queues");
/// Each queue's next sequence number.
pub(super) const SEQUENCES: TableDefinition<'static, &str, u64> = TableDefinition::new("sequences");
/// Each message's unchanging part, by queue and sequence number.
pub(super) const BODIES: TableDefinition<'static, (&str, u64), &[u8]> =
    TableDefinition::new("bodies");
/// Each message's delivery state and placement, by queue and sequence number.
pub(super) const STATES: TableDefinition<'static, (&str, u64), &[u8]> =
    TableDefinition::new("states");
/// FIFO deduplication records, by queue and deduplication id.
pub(super) const DEDUP: TableDefinition<'static, (&str, &str), &[u8]> =
    TableDefinition::new("dedup");
/// The store's own bookkeeping: the last journal frame the tables hold (`journal_applied`).
pub(super) const META: TableDefinition<'static, &str, u64> = TableDefinition::new("meta");
