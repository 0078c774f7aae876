//! Message bodies: what never changes about a message once sent, and where its queue holds it
//! (in memory within the shared [`BodyCache`], or only in the store).

use crate::core::model::MessageAttribute;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What never changes about a message once sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Body {
    /// The message id, the same on every delivery.
    pub id: String,
    /// The body as sent.
    pub body: String,
    /// The attributes as the backend holds them (possibly packed).
    pub attributes: BTreeMap<String, MessageAttribute>,
    /// When it was sent, in milliseconds since the epoch.
    pub sent_at: i64,
    /// FIFO: its message group.
    pub group_id: Option<String>,
    /// Set when the message was moved here by a redrive: the source queue's ARN.
    pub dead_letter_source_arn: Option<String>,
    /// FIFO: the deduplication id (given, or the body's SHA-256).
    pub deduplication_id: Option<String>,
    /// The trace header it carries (SQS's `AWSTraceHeader`).
    pub trace_header: Option<String>,
}

/// A message's body as its queue holds it: in memory while it is cached or not yet on disk,
/// otherwise only in the store (read back when a receive or a peek needs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// In memory, and counted in the [`BodyCache`].
    Cached(Arc<Body>),
    /// In memory until the store has committed it (the cache was full): then [`Held::Stored`].
    Unsettled(Arc<Body>),
    /// Only in the store.
    Stored,
}

impl Held {
    /// The body, when it is in memory.
    pub fn resident(&self) -> Option<&Arc<Body>> {
        match self {
            Held::Cached(body) | Held::Unsettled(body) => Some(body),
            Held::Stored => None,
        }
    }
}

/// A bound on the bytes of bodies the queues of one backend keep in memory once they are on
/// disk; shared by its queues. The bodies kept are those that arrived while there was room,
/// which in a backlog are the oldest: the next ones receives take.
#[derive(Debug)]
pub struct BodyCache {
    limit: usize,
    used: AtomicUsize,
}

impl BodyCache {
    /// A cache of at most `limit` bytes of bodies.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    /// No bound: every body stays in memory (a backend without a disk).
    pub fn unbounded() -> Self {
        Self::new(usize::MAX)
    }

    /// Bytes of bodies held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Holds `body` in memory: counted in the cache while it has room, else only until the
    /// store has committed it.
    pub(super) fn hold(&self, body: Arc<Body>) -> Held {
        if self.admit(footprint(&body)) {
            Held::Cached(body)
        } else {
            Held::Unsettled(body)
        }
    }

    /// Lets go of a body leaving its queue: a cached one leaves the count.
    pub(super) fn let_go(&self, held: &Held) {
        if let Held::Cached(body) = held {
            self.release(footprint(body));
        }
    }

    fn admit(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|total| *total <= self.limit)
            })
            .is_ok()
    }

    fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// The bytes a body occupies in memory, roughly: what the cache counts.
fn footprint(body: &Body) -> usize {
    const FIXED: usize = 160;
    FIXED
        + body.id.len()
        + body.body.len()
        + body
            .attributes
            .iter()
            .map(|(name, attribute)| {
                let value = match &attribute.value {
                    crate::core::model::AttributeValue::Text(text) => text.len(),
                    crate::core::model::AttributeValue::Bytes(bytes) => bytes.len(),
                };
                name.len() + attribute.data_type.len() + value
            })
            .sum::<usize>()
        + body.group_id.as_ref().map_or(0, String::len)
        + body.deduplication_id.as_ref().map_or(0, String::len)
        + body.dead_letter_source_arn.as_ref().map_or(0, String::len)
        + body.trace_header.as_ref().map_or(0, String::len)
}
