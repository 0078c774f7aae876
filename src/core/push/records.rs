//! The port behind which the subscriptions made through the API, the queues' delivery pauses and
//! their audit trail are kept
//! (adapters: `push::managed::store::DirectoryStore`, this process's memory or one gateway's
//! directory; `state::redis::push_records`, the server replicas share). Every write is made only
//! over the revision it read, with its audit line, so two admins' changes never silently undo each
//! other. Each queue keeps its own trail ([`AUDIT_KEPT_PER_QUEUE`] lines, each for
//! [`AUDIT_KEPT_AT_LEAST`] at least), so no queue's changes push out another's lines, and a change
//! that would push out a line younger than that is refused instead.

use super::admin::AuditEntry;
use super::record::Record;
use crate::core::delivery_pause::DeliveryPause;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// The lines a queue's trail keeps readable (older ones stay in a directory's file), beyond
/// which its oldest line is let go once it is [`AUDIT_KEPT_AT_LEAST`] old.
pub const AUDIT_KEPT_PER_QUEUE: usize = 1_000;

/// How long a line stays in its queue's trail at least: a change whose line would push out a
/// younger one is refused ([`Written::TrailFull`]) unless it may always be written ([`Room`]).
pub const AUDIT_KEPT_AT_LEAST: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// Whether a change waits for room in its queue's trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// Refused while the trail holds [`AUDIT_KEPT_PER_QUEUE`] lines younger than
    /// [`AUDIT_KEPT_AT_LEAST`]: makes and changes.
    Bounded,
    /// Always written, past the bound if need be: removals and the gateway's own records, so a
    /// full trail never keeps a subscription from being deleted (these are few: at most one
    /// removal per subscription made).
    Always,
}

/// What became of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Written, with its audit line.
    Done,
    /// Another change came first: nothing written.
    ChangedMeanwhile,
    /// The queue's trail holds its bound of lines younger than [`AUDIT_KEPT_AT_LEAST`]; the
    /// oldest was written at `oldest`. Nothing written.
    TrailFull {
        /// When the trail's oldest line was written.
        oldest: DateTime<Utc>,
    },
}

/// Whether a line written at `at` finds room in a trail whose oldest line is `oldest` and
/// which holds `held` lines: `Err(oldest)` when it does not.
pub fn room_in_trail(
    held: usize,
    oldest: Option<DateTime<Utc>>,
    at: DateTime<Utc>,
    room: Room,
) -> Result<(), DateTime<Utc>> {
    match oldest {
        Some(oldest)
            if room == Room::Bounded
                && held >= AUDIT_KEPT_PER_QUEUE
                && !kept_long_enough(oldest, at) =>
        {
            Err(oldest)
        }
        _ => Ok(()),
    }
}

/// Whether a line written at `written` has been kept [`AUDIT_KEPT_AT_LEAST`] by `now`.
pub fn kept_long_enough(written: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    (now - written)
        .to_std()
        .is_ok_and(|age| age >= AUDIT_KEPT_AT_LEAST)
}

/// The store did not answer (or could not write).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("push subscription store: {0}")]
pub struct StoreFailure(pub String);

/// A write, as the store takes it.
#[derive(Debug)]
pub enum Write<'a> {
    /// Keep this record (its revision is the new one).
    Put(&'a Record),
    /// Remove the record of this key ([`super::record::record_key`]).
    Remove(&'a str),
    /// Pause a queue's deliveries (over any pause it has: no revision is checked).
    Pause(&'a DeliveryPause),
    /// End the pause of this queue, if it has one (no revision is checked).
    Resume(&'a str),
}

impl Write<'_> {
    /// Whether it is written only over the revision its caller read: a record's change.
    pub fn checks_revision(&self) -> bool {
        matches!(self, Write::Put(_) | Write::Remove(_))
    }
}

/// The records and their audit trail.
#[async_trait]
pub trait RecordStore: Send + Sync + 'static {
    /// Every record.
    async fn load(&self) -> Result<Vec<Record>, StoreFailure>;

    /// Every queue's delivery pause.
    async fn pauses(&self) -> Result<Vec<DeliveryPause>, StoreFailure>;

    /// Writes `write` with its audit line if the record of that key is still at revision
    /// `expected` (0: none; a pause's write checks none) and the line finds room in its queue's
    /// trail (see [`Room`]).
    async fn write(
        &self,
        write: Write<'_>,
        expected: u64,
        audit: &AuditEntry,
        room: Room,
    ) -> Result<Written, StoreFailure>;

    /// The audit lines of `queue`'s subscriptions, newest first: at most `limit`, older than
    /// `before` (a seq) if given.
    async fn audit(
        &self,
        queue: &str,
        limit: usize,
        before: Option<u64>,
    ) -> Result<Vec<AuditEntry>, StoreFailure>;

    /// A number that changes with every write (cheap: replicas poll it to follow changes).
    async fn version(&self) -> Result<u64, StoreFailure>;
}
