//! One queue's state machine with SQS semantics, in memory, with time passed in explicitly.
//!
//! Every mutation appends the records it changed to a journal ([`Op`]s), which the store makes
//! durable; the engine itself never touches the disk or the clock, so every time-dependent rule
//! (visibility, delays, retention, deduplication and attempt windows) is tested with plain numbers.

use crate::core::model::{
    EntryError, EntryErrorKind, EntryOutcome, MessageAttribute, OutgoingMessage, QueueSettings,
    QueueStats, SentMessage,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::num::{NonZeroI64, NonZeroU64};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The account id in embedded queue ARNs.
pub const ACCOUNT: &str = "000000000000";
/// The region in embedded queue ARNs.
pub const REGION: &str = "us-east-1";
/// SQS's limit of in-flight messages on a standard queue.
pub const MAX_IN_FLIGHT_STANDARD: usize = 120_000;
/// SQS's limit of in-flight messages on a FIFO queue.
pub const MAX_IN_FLIGHT_FIFO: usize = 20_000;
/// How long FIFO deduplication ids and receive attempt ids are remembered.
pub const FIFO_WINDOW_MS: i64 = 5 * 60 * 1000;

/// How many messages a queue may have in flight: SQS's limits unless configured lower (tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlightLimits {
    /// On a standard queue (SQS: 120,000).
    pub standard: usize,
    /// On a FIFO queue (SQS: 20,000).
    pub fifo: usize,
}

impl Default for InFlightLimits {
    fn default() -> Self {
        Self {
            standard: MAX_IN_FLIGHT_STANDARD,
            fifo: MAX_IN_FLIGHT_FIFO,
        }
    }
}

/// A queue's settings, checked and with SQS's defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// A FIFO queue (its name ends in `.fifo`).
    pub fifo: bool,
    /// Default visibility timeout of a receive, in seconds.
    pub visibility_timeout_seconds: u32,
    /// Default delay of new messages, in seconds.
    pub delay_seconds: u32,
    /// Default long-poll wait of a receive, in seconds.
    pub receive_wait_seconds: u32,
    /// How long messages are kept, in seconds.
    pub retention_seconds: u32,
    /// Largest message (body plus attributes), in bytes.
    pub max_message_bytes: u32,
    /// FIFO: deduplicate by the body's SHA-256 when no id is given.
    pub content_based_deduplication: bool,
    /// Dead-letter queue name and max receive count.
    pub dead_letter: Option<(String, u32)>,
    /// Cost-allocation tags.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// Creation time, seconds since the epoch.
    #[serde(default)]
    pub created_at: u64,
    /// Last settings change, seconds since the epoch.
    #[serde(default)]
    pub modified_at: u64,
}

impl Settings {
    /// Checks `requested` against SQS's ranges and fills in the defaults.
    pub fn new(name: &str, requested: &QueueSettings) -> Result<Self, String> {
        let fifo = name.ends_with(".fifo");
        if !crate::core::model::valid_queue_name(name) {
            return Err("queue names are 1 to 80 of A-Z, a-z, 0-9, '-' and '_' (and a .fifo suffix for FIFO queues)".into());
        }
        let ranged = |value: Option<u32>, default: u32, min: u32, max: u32, what: &str| {
            let value = value.unwrap_or(default);
            if (min..=max).contains(&value) {
                Ok(value)
            } else {
                Err(format!("{what} must be from {min} to {max}"))
            }
        };
        let content_based_deduplication = requested.content_based_deduplication.unwrap_or(false);
        if content_based_deduplication && !fifo {
            return Err("ContentBasedDeduplication is for FIFO queues only".into());
        }
        if let Some((target, count)) = &requested.dead_letter {
            if target.ends_with(".fifo") != fifo {
                return Err(
                    "a dead-letter queue must be of the same type (standard or FIFO)".into(),
                );
            }
            if target == name {
                return Err("a queue cannot be its own dead-letter queue".into());
            }
            if !(1..=1000).contains(count) {
                return Err("maxReceiveCount must be from 1 to 1000".into());
            }
        }
        Ok(Self {
            fifo,
            visibility_timeout_seconds: ranged(
                requested.visibility_timeout_seconds,
                30,
                0,
                43_200,
                "VisibilityTimeout",
            )?,
            delay_seconds: ranged(requested.delay_seconds, 0, 0, 900, "DelaySeconds")?,
            receive_wait_seconds: ranged(
                requested.receive_wait_seconds,
                0,
                0,
                20,
                "ReceiveMessageWaitTimeSeconds",
            )?,
            retention_seconds: ranged(
                requested.retention_seconds,
                345_600,
                60,
                1_209_600,
                "MessageRetentionPeriod",
            )?,
            max_message_bytes: ranged(
                requested.max_message_bytes,
                1_048_576,
                1_024,
                1_048_576,
                "MaximumMessageSize",
            )?,
            content_based_deduplication,
            dead_letter: requested.dead_letter.clone(),
            tags: BTreeMap::new(),
            created_at: 0,
            modified_at: 0,
        })
    }

    /// Whether two settings behave the same (tags and timestamps aside).
    pub fn same_behaviour(&self, other: &Self) -> bool {
        let strip = |settings: &Self| Self {
            tags: BTreeMap::new(),
            created_at: 0,
            modified_at: 0,
            ..settings.clone()
        };
        strip(self) == strip(other)
    }

    /// These settings with the fields `changes` gives replaced, checked again.
    pub fn changed(&self, name: &str, changes: &QueueSettings) -> Result<Self, String> {
        let merged = QueueSettings {
            visibility_timeout_seconds: changes
                .visibility_timeout_seconds
                .or(Some(self.visibility_timeout_seconds)),
            delay_seconds: changes.delay_seconds.or(Some(self.delay_seconds)),
            receive_wait_seconds: changes
                .receive_wait_seconds
                .or(Some(self.receive_wait_seconds)),
            retention_seconds: changes.retention_seconds.or(Some(self.retention_seconds)),
            max_message_bytes: changes.max_message_bytes.or(Some(self.max_message_bytes)),
            content_based_deduplication: changes
                .content_based_deduplication
                .or(Some(self.content_based_deduplication)),
            dead_letter: changes
                .dead_letter
                .clone()
                .or_else(|| self.dead_letter.clone()),
        };
        let mut settings = Self::new(name, &merged)?;
        settings.tags = self.tags.clone();
        settings.created_at = self.created_at;
        settings.modified_at = self.modified_at;
        Ok(settings)
    }
}

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
}

/// What each receive changes about a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Deliveries so far.
    pub receive_count: u32,
    /// When it was first received, in milliseconds since the epoch (never zero: see
    /// [`first_receive_time`]).
    pub first_received_at: Option<NonZeroI64>,
    /// When it is (or was) visible: after its delay, or when its visibility timeout ends.
    pub visible_at: i64,
    /// The current delivery's receipt; `None` until first received. Never zero, like the first
    /// receive time, which keeps [`Message`] at 72 bytes: a B-tree leaf of eleven messages then
    /// fits an 896-byte allocation, where 88-byte messages took 1,088 (glibc) or 1,280 (jemalloc).
    pub receipt: Option<NonZeroU64>,
}

/// `now` as a first receive time: a receive in the epoch's very first millisecond counts as the
/// second one, so that zero can mean "never" in the space of an `i64`.
fn first_receive_time(now: i64) -> NonZeroI64 {
    const SECOND_MILLISECOND: NonZeroI64 = NonZeroI64::new(1).expect("one is not zero");
    NonZeroI64::new(now).unwrap_or(SECOND_MILLISECOND)
}

impl State {
    /// Whether `receipt` is the current delivery's.
    pub fn is_delivery(&self, receipt: u64) -> bool {
        self.receipt.is_some_and(|current| current.get() == receipt)
    }
}

/// How many messages a receive takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Take {
    /// At most this many.
    pub max: usize,
    /// FIFO: at most one of each message group (its first).
    pub one_per_group: bool,
}

impl Take {
    /// Up to `max`, several of a group where they are next in line.
    pub fn upto(max: usize) -> Self {
        Self {
            max,
            one_per_group: false,
        }
    }
}

/// A record of a FIFO deduplication id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dedup {
    /// When the id may be used again, in milliseconds since the epoch.
    pub expires_at: i64,
    /// The message the id was first used for.
    pub message_id: String,
    /// That message's sequence number.
    pub seq: u64,
}

/// A change the store must make durable, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A queue was created, or its settings changed.
    PutQueue {
        /// The queue.
        name: String,
        /// Its settings.
        settings: Settings,
    },
    /// A queue was deleted, with its messages.
    DeleteQueue {
        /// The queue.
        name: String,
    },
    /// The next sequence number of a queue.
    PutSeq {
        /// The queue.
        queue: Arc<str>,
        /// The next sequence number.
        next: u64,
    },
    /// A message's unchanging part.
    PutBody {
        /// The queue.
        queue: Arc<str>,
        /// The message's sequence number.
        seq: u64,
        /// The message.
        body: Arc<Body>,
    },
    /// A message's delivery state, with what the queue needs to place it without its body.
    PutState {
        /// The queue.
        queue: Arc<str>,
        /// The message's sequence number.
        seq: u64,
        /// The state.
        state: State,
        /// When it was sent, in milliseconds since the epoch.
        sent_at: i64,
        /// FIFO: its message group.
        group_id: Option<Arc<str>>,
    },
    /// A message moved to another queue (a dead-letter move or a redrive): its stored body is
    /// copied under its new place, with its new dead-letter source, and its old records go.
    MoveBody {
        /// The queue it leaves.
        from_queue: Arc<str>,
        /// Its sequence number there.
        from_seq: u64,
        /// The queue it joins.
        to_queue: Arc<str>,
        /// Its sequence number there.
        to_seq: u64,
        /// The source queue's ARN when it arrives in a dead-letter queue; `None` otherwise.
        dead_letter_source_arn: Option<String>,
    },
    /// A message left the queue.
    DeleteMessage {
        /// The queue.
        queue: Arc<str>,
        /// The message's sequence number.
        seq: u64,
    },
    /// A FIFO deduplication record.
    PutDedup {
        /// The queue.
        queue: Arc<str>,
        /// The deduplication id.
        key: String,
        /// The record.
        dedup: Dedup,
    },
    /// A FIFO deduplication record expired.
    DeleteDedup {
        /// The queue.
        queue: Arc<str>,
        /// The deduplication id.
        key: String,
    },
    /// Every message of a queue left it.
    Purge {
        /// The queue.
        queue: Arc<str>,
    },
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
}

/// A message as held in memory: its delivery state and what placing it needs; its body only
/// while [`Held`] says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Its delivery state.
    pub state: State,
    /// When it was sent, in milliseconds since the epoch (moved messages keep theirs).
    pub sent_at: i64,
    /// FIFO: its message group.
    pub group_id: Option<Arc<str>>,
    /// Its body.
    pub held: Held,
}

impl Message {
    /// The body, in tests of the engine alone (where bodies never leave memory).
    #[cfg(test)]
    pub fn body(&self) -> &Body {
        self.held
            .resident()
            .expect("an engine without a store keeps bodies")
    }
}

/// A message taken out of a queue to be moved into another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moving {
    /// The queue it leaves.
    pub from_queue: Arc<str>,
    /// Its sequence number there.
    pub from_seq: u64,
    /// The message.
    pub message: Message,
}

/// One delivery handed out by a receive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// Its sequence number in the queue.
    pub seq: u64,
    /// The receipt of this delivery.
    pub receipt: u64,
    /// The message as delivered.
    pub message: Message,
}

/// What a receive produced: deliveries, and messages to move to the dead-letter queue.
#[derive(Debug, Default)]
pub struct Received {
    /// Deliveries handed out.
    pub delivered: Vec<Delivered>,
    /// Messages moved to the dead-letter queue instead.
    pub dead_lettered: Vec<Moving>,
    /// A standard queue at its in-flight limit: SQS answers OverLimit (FIFO answers nothing).
    pub over_limit: bool,
}

/// A receive attempt remembered for replay (FIFO).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Attempt {
    expires_at: i64,
    deliveries: Vec<(u64, u64)>,
}

/// One queue.
#[derive(Debug)]
pub struct Queue {
    /// The queue's name.
    pub name: String,
    /// The same, shared by its journal records (one per message changed: no copy each).
    journal_name: Arc<str>,
    /// Set when the queue is deleted, so operations that already hold it change nothing.
    pub deleted: bool,
    /// Its ARN.
    pub arn: String,
    /// Its settings.
    pub settings: Settings,
    messages: BTreeMap<u64, Message>,
    /// Every message by (visible_at, seq).
    schedule: BTreeSet<(i64, u64)>,
    /// In-flight deliveries by (deadline, seq).
    in_flight: BTreeSet<(i64, u64)>,
    /// Every message by (sent_at, seq): retention and the oldest age without a scan (messages
    /// moved in from another queue keep their send time, so sequence order is not age order).
    by_age: BTreeSet<(i64, u64)>,
    /// FIFO: in-flight deliveries per group.
    group_in_flight: HashMap<String, usize>,
    /// FIFO: each group's messages in queue order, so a receive steps from group to group
    /// instead of scanning every message (a blocked group's backlog costs nothing).
    groups: HashMap<String, BTreeSet<u64>>,
    /// FIFO: every group by its first message, in queue order.
    group_heads: BTreeSet<(u64, String)>,
    dedup: HashMap<String, Dedup>,
    /// Deduplication records by expiry, so expiring them costs nothing per operation.
    dedup_expiry: BTreeSet<(i64, String)>,
    attempts: HashMap<String, Attempt>,
    next_seq: u64,
    /// Bodies held in memory only until the store has them, in sequence order.
    unsettled: VecDeque<u64>,
    /// The bound on bodies kept in memory, shared with the backend's other queues.
    cache: Arc<BodyCache>,
}

impl Queue {
    /// An empty queue that keeps every body in memory.
    pub fn new(name: &str, settings: Settings) -> Self {
        Self::with_cache(name, settings, Arc::new(BodyCache::unbounded()))
    }

    /// An empty queue whose bodies stay in memory within `cache` (the rest only on disk).
    pub fn with_cache(name: &str, settings: Settings, cache: Arc<BodyCache>) -> Self {
        Self {
            name: name.to_owned(),
            journal_name: Arc::from(name),
            deleted: false,
            arn: format!("arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"),
            settings,
            messages: BTreeMap::new(),
            schedule: BTreeSet::new(),
            in_flight: BTreeSet::new(),
            by_age: BTreeSet::new(),
            group_in_flight: HashMap::new(),
            groups: HashMap::new(),
            group_heads: BTreeSet::new(),
            dedup: HashMap::new(),
            dedup_expiry: BTreeSet::new(),
            attempts: HashMap::new(),
            next_seq: 1,
            unsettled: VecDeque::new(),
            cache,
        }
    }

    /// Restores the messages read back from the store, in sequence order, into an empty queue
    /// (their bodies stay on disk). The indexes are built in bulk, so their nodes are full: a
    /// reopened backlog takes less memory than one grown message by message.
    pub fn restore_messages(
        &mut self,
        messages: Vec<(u64, State, i64, Option<Arc<str>>)>,
        now: i64,
    ) {
        debug_assert!(self.messages.is_empty(), "restore into an empty queue");
        let mut schedule = Vec::with_capacity(messages.len());
        let mut by_age = Vec::with_capacity(messages.len());
        let mut restored = Vec::with_capacity(messages.len());
        for (seq, state, sent_at, group_id) in messages {
            let message = Message {
                state,
                sent_at,
                group_id,
                held: Held::Stored,
            };
            self.next_seq = self.next_seq.max(seq + 1);
            schedule.push((state.visible_at, seq));
            by_age.push((sent_at, seq));
            if state.receipt.is_some() && state.visible_at > now {
                self.in_flight.insert((state.visible_at, seq));
                if let Some(group) = &message.group_id {
                    *self.group_in_flight.entry(group.to_string()).or_default() += 1;
                }
            }
            self.join_group(seq, &message);
            restored.push((seq, message));
        }
        restored.sort_unstable_by_key(|(seq, _)| *seq);
        schedule.sort_unstable();
        by_age.sort_unstable();
        self.messages = restored.into_iter().collect();
        self.schedule = schedule.into_iter().collect();
        self.by_age = by_age.into_iter().collect();
    }

    /// Where the queue stands for [`Queue::settle_before`]: take it when submitting a journal.
    pub fn settle_mark(&self) -> u64 {
        self.next_seq
    }

    /// The store committed everything journaled before `mark`: bodies held only until then
    /// leave memory.
    pub fn settle_before(&mut self, mark: u64) {
        while let Some(&seq) = self.unsettled.front() {
            if seq >= mark {
                break;
            }
            self.unsettled.pop_front();
            if let Some(message) = self.messages.get_mut(&seq)
                && matches!(message.held, Held::Unsettled(_))
            {
                message.held = Held::Stored;
            }
        }
    }

    /// Bodies held in memory by this queue until the store has them.
    pub fn unsettled(&self) -> usize {
        self.unsettled.len()
    }

    /// Holds `body` for the message about to get `seq`: cached while the cache has room.
    fn hold(&mut self, seq: u64, body: Arc<Body>) -> Held {
        if self.cache.admit(footprint(&body)) {
            Held::Cached(body)
        } else {
            self.unsettled.push_back(seq);
            Held::Unsettled(body)
        }
    }

    /// Lets go of a message's body (it is leaving the queue).
    fn drop_held(&self, held: &Held) {
        if let Held::Cached(body) = held {
            self.cache.release(footprint(body));
        }
    }

    /// FIFO: files `seq` under its group.
    fn join_group(&mut self, seq: u64, message: &Message) {
        let Some(group) = &message.group_id else {
            return;
        };
        let members = self.groups.entry(group.to_string()).or_default();
        let old_head = members.first().copied();
        members.insert(seq);
        if old_head.is_none_or(|head| seq < head) {
            if let Some(head) = old_head {
                self.group_heads.remove(&(head, group.to_string()));
            }
            self.group_heads.insert((seq, group.to_string()));
        }
    }

    /// FIFO: takes `seq` out of its group.
    fn quit_group(&mut self, seq: u64, message: &Message) {
        let Some(group) = &message.group_id else {
            return;
        };
        let Some(members) = self.groups.get_mut(&**group) else {
            return;
        };
        let was_head = members.first() == Some(&seq);
        members.remove(&seq);
        if was_head {
            self.group_heads.remove(&(seq, group.to_string()));
            match members.first() {
                Some(&next) => {
                    self.group_heads.insert((next, group.to_string()));
                }
                None => {
                    self.groups.remove(&**group);
                }
            }
        }
    }

    /// Restores a deduplication record read back from the store.
    pub fn restore_dedup(&mut self, key: String, dedup: Dedup) {
        self.dedup_expiry.insert((dedup.expires_at, key.clone()));
        self.dedup.insert(key, dedup);
    }

    /// Restores the sequence counter read back from the store.
    pub fn restore_next_seq(&mut self, next: u64) {
        self.next_seq = self.next_seq.max(next);
    }

    /// Number of messages held.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether the queue holds no message.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    fn index(&mut self, seq: u64, message: &Message, now: i64) {
        self.schedule.insert((message.state.visible_at, seq));
        if message.state.receipt.is_some() && message.state.visible_at > now {
            self.in_flight.insert((message.state.visible_at, seq));
            if let Some(group) = &message.group_id {
                *self.group_in_flight.entry(group.to_string()).or_default() += 1;
            }
        }
    }

    fn unindex(&mut self, seq: u64, message: &Message) {
        self.schedule.remove(&(message.state.visible_at, seq));
        if self.in_flight.remove(&(message.state.visible_at, seq)) {
            self.leave_group(message);
        }
    }

    fn leave_group(&mut self, message: &Message) {
        if let Some(group) = &message.group_id
            && let Some(count) = self.group_in_flight.get_mut(&**group)
        {
            *count -= 1;
            if *count == 0 {
                self.group_in_flight.remove(&**group);
            }
        }
    }

    /// Applies the passage of time: in-flight deliveries whose timeout ended become visible,
    /// messages past retention are deleted, and old dedup and attempt records are dropped.
    pub fn expire(&mut self, now: i64, journal: &mut Vec<Op>) {
        while let Some(&(deadline, seq)) = self.in_flight.first() {
            if deadline > now {
                break;
            }
            self.in_flight.pop_first();
            if let Some(message) = self.messages.get(&seq).cloned() {
                self.leave_group(&message);
            }
        }
        let retention_ms = i64::from(self.settings.retention_seconds) * 1000;
        while let Some(&(sent_at, seq)) = self.by_age.first() {
            if sent_at + retention_ms > now {
                break;
            }
            self.remove(seq, journal);
        }
        while let Some((expires_at, _)) = self.dedup_expiry.first() {
            if *expires_at > now {
                break;
            }
            let Some((expires_at, key)) = self.dedup_expiry.pop_first() else {
                break;
            };
            // A key re-used after expiry has a newer record; only the matching one goes.
            if self
                .dedup
                .get(&key)
                .is_some_and(|d| d.expires_at == expires_at)
            {
                self.dedup.remove(&key);
                journal.push(Op::DeleteDedup {
                    queue: Arc::clone(&self.journal_name),
                    key,
                });
            }
        }
        self.attempts.retain(|_, attempt| attempt.expires_at > now);
    }

    fn remove(&mut self, seq: u64, journal: &mut Vec<Op>) -> Option<Message> {
        let message = self.detach(seq)?;
        self.drop_held(&message.held);
        journal.push(Op::DeleteMessage {
            queue: Arc::clone(&self.journal_name),
            seq,
        });
        Some(message)
    }

    /// Takes `seq` out of memory and its indexes; the store is the caller's business.
    fn detach(&mut self, seq: u64) -> Option<Message> {
        let message = self.messages.remove(&seq)?;
        self.unindex(seq, &message);
        self.by_age.remove(&(message.sent_at, seq));
        self.quit_group(seq, &message);
        Some(message)
    }

    /// Takes `seq` out to move it into another queue: its records stay in the store until the
    /// other queue's [`Op::MoveBody`] copies them, in the same journal.
    fn detach_for_move(&mut self, seq: u64) -> Option<Moving> {
        let message = self.detach(seq)?;
        self.drop_held(&message.held);
        Some(Moving {
            from_queue: Arc::clone(&self.journal_name),
            from_seq: seq,
            message,
        })
    }

    /// Sends one message.
    pub fn send(
        &mut self,
        message: OutgoingMessage,
        now: i64,
        journal: &mut Vec<Op>,
    ) -> Result<SentMessage, EntryError> {
        self.expire(now, journal);
        let size = crate::core::message_rules::check_stored(&message)?;
        if size > self.settings.max_message_bytes as usize {
            return Err(EntryError::invalid(format!(
                "the message is {size} bytes, over the queue's maximum of {}",
                self.settings.max_message_bytes
            )));
        }
        let delay = if self.settings.fifo {
            if message.delay_seconds.is_some() {
                return Err(EntryError::invalid(
                    "FIFO queues take no per-message DelaySeconds; set it on the queue",
                ));
            }
            self.settings.delay_seconds
        } else {
            if message.group_id.is_some() || message.deduplication_id.is_some() {
                return Err(EntryError::invalid(
                    "MessageGroupId and MessageDeduplicationId are for FIFO queues only",
                ));
            }
            match message.delay_seconds {
                Some(delay) if delay > 900 => {
                    return Err(EntryError::invalid("DelaySeconds must be from 0 to 900"));
                }
                Some(delay) => delay,
                None => self.settings.delay_seconds,
            }
        };

        let dedup_key = if self.settings.fifo {
            let group = message.group_id.as_deref().unwrap_or_default();
            if !crate::core::message_rules::valid_fifo_id(group) {
                return Err(EntryError::new(
                    EntryErrorKind::MissingParameter,
                    "FIFO messages need a MessageGroupId of 1 to 128 printable characters",
                ));
            }
            let key = match (
                &message.deduplication_id,
                self.settings.content_based_deduplication,
            ) {
                (Some(id), _) => id.clone(),
                (None, true) => hex::encode(Sha256::digest(message.body.as_bytes())),
                (None, false) => {
                    return Err(EntryError::invalid(
                        "the queue has no ContentBasedDeduplication: give a MessageDeduplicationId",
                    ));
                }
            };
            if let Some(previous) = self.dedup.get(&key) {
                return Ok(SentMessage {
                    message_id: previous.message_id.clone(),
                    sequence_number: Some(sequence_number(previous.seq)),
                });
            }
            Some(key)
        } else {
            None
        };

        let body = Arc::new(Body {
            id: uuid::Uuid::new_v4().to_string(),
            body: message.body,
            attributes: message.attributes,
            sent_at: now,
            group_id: message.group_id,
            dead_letter_source_arn: None,
            deduplication_id: dedup_key.clone(),
        });
        let state = State {
            receive_count: 0,
            first_received_at: None,
            visible_at: now + i64::from(delay) * 1000,
            receipt: None,
        };
        let message_id = body.id.clone();
        let seq = self.append(body, state, now, journal);
        let sent = SentMessage {
            message_id,
            sequence_number: self.settings.fifo.then(|| sequence_number(seq)),
        };
        if let Some(key) = dedup_key {
            let dedup = Dedup {
                expires_at: now + FIFO_WINDOW_MS,
                message_id: sent.message_id.clone(),
                seq,
            };
            journal.push(Op::PutDedup {
                queue: Arc::clone(&self.journal_name),
                key: key.clone(),
                dedup: dedup.clone(),
            });
            self.dedup_expiry.insert((dedup.expires_at, key.clone()));
            self.dedup.insert(key, dedup);
        }
        Ok(sent)
    }

    /// Takes a message moved here by another queue's dead-letter rule.
    pub fn accept_dead_letter(
        &mut self,
        moving: Moving,
        source_arn: &str,
        now: i64,
        journal: &mut Vec<Op>,
    ) {
        let mut state = moving.message.state;
        state.visible_at = now;
        state.receipt = None;
        self.append_moved(moving, Some(source_arn.to_owned()), state, now, journal);
    }

    /// The first message visible now (not delayed, not in flight), in queue order.
    pub fn first_visible(&self, now: i64) -> Option<(u64, &Message)> {
        self.schedule
            .iter()
            .take_while(|(visible_at, _)| *visible_at <= now)
            .find_map(|(_, seq)| self.messages.get(seq).map(|message| (*seq, message)))
    }

    /// Takes a message out for a move elsewhere (a redrive); the destination's
    /// [`Queue::accept_redriven`] journals the move.
    pub fn take(&mut self, seq: u64) -> Option<Moving> {
        self.detach_for_move(seq)
    }

    /// Takes a message moved back from a dead-letter queue: its id, body and attributes stay; its
    /// delivery history starts again (so it is not dead-lettered straight back), visible now.
    pub fn accept_redriven(&mut self, moving: Moving, now: i64, journal: &mut Vec<Op>) {
        let state = State {
            receive_count: 0,
            first_received_at: None,
            visible_at: now,
            receipt: None,
        };
        self.append_moved(moving, None, state, now, journal);
    }

    /// Adds a new message at the end of the queue under the next sequence number (answered),
    /// journaling the number, its body and its state.
    fn append(&mut self, body: Arc<Body>, state: State, now: i64, journal: &mut Vec<Op>) -> u64 {
        let seq = self.next_seq();
        journal.push(Op::PutBody {
            queue: Arc::clone(&self.journal_name),
            seq,
            body: Arc::clone(&body),
        });
        let message = Message {
            state,
            sent_at: body.sent_at,
            group_id: body.group_id.as_deref().map(Arc::from),
            held: self.hold(seq, body),
        };
        self.insert(seq, message, now, journal);
        seq
    }

    /// Adds a message moved from another queue at the end of this one: the store copies its body
    /// over ([`Op::MoveBody`]) with its new dead-letter source.
    fn append_moved(
        &mut self,
        moving: Moving,
        dead_letter_source_arn: Option<String>,
        state: State,
        now: i64,
        journal: &mut Vec<Op>,
    ) {
        let seq = self.next_seq();
        journal.push(Op::MoveBody {
            from_queue: moving.from_queue,
            from_seq: moving.from_seq,
            to_queue: Arc::clone(&self.journal_name),
            to_seq: seq,
            dead_letter_source_arn: dead_letter_source_arn.clone(),
        });
        let held = match moving.message.held.resident() {
            Some(body) => {
                let body = Arc::new(Body {
                    dead_letter_source_arn,
                    ..Body::clone(body)
                });
                self.hold(seq, body)
            }
            None => Held::Stored,
        };
        let message = Message {
            state,
            held,
            ..moving.message
        };
        self.insert(seq, message, now, journal);
    }

    fn next_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    fn insert(&mut self, seq: u64, message: Message, now: i64, journal: &mut Vec<Op>) {
        journal.push(Op::PutSeq {
            queue: Arc::clone(&self.journal_name),
            next: self.next_seq,
        });
        journal.push(self.state_record(seq, &message));
        self.index(seq, &message, now);
        self.by_age.insert((message.sent_at, seq));
        self.join_group(seq, &message);
        self.messages.insert(seq, message);
    }

    /// The journal record of a message's (new) state.
    fn state_record(&self, seq: u64, message: &Message) -> Op {
        Op::PutState {
            queue: Arc::clone(&self.journal_name),
            seq,
            state: message.state,
            sent_at: message.sent_at,
            group_id: message.group_id.clone(),
        }
    }

    /// Receives up to `max` messages, hiding them for `visibility_seconds`.
    ///
    /// `dead_letter_ready` says whether this queue's dead-letter queue exists; only then are
    /// messages past their max receive count moved (on this receive, as SQS does) instead of
    /// delivered.
    pub fn receive(
        &mut self,
        max: usize,
        visibility_seconds: u32,
        attempt_id: Option<&str>,
        dead_letter_ready: bool,
        now: i64,
        journal: &mut Vec<Op>,
    ) -> Received {
        let limits = InFlightLimits::default();
        self.receive_within(
            Take::upto(max),
            visibility_seconds,
            attempt_id,
            dead_letter_ready,
            limits,
            now,
            journal,
        )
    }

    /// [`Queue::receive`] with in-flight limits other than SQS's.
    #[allow(clippy::too_many_arguments)]
    pub fn receive_within(
        &mut self,
        take: Take,
        visibility_seconds: u32,
        attempt_id: Option<&str>,
        dead_letter_ready: bool,
        limits: InFlightLimits,
        now: i64,
        journal: &mut Vec<Op>,
    ) -> Received {
        self.expire(now, journal);
        let mut received = Received::default();
        if self.settings.fifo
            && let Some(attempt) = attempt_id.and_then(|id| self.attempts.get(id)).cloned()
        {
            // A retried attempt gets the same deliveries back (those not deleted or received
            // again since), hidden anew for this receive's visibility timeout.
            for (seq, receipt) in attempt.deliveries {
                let Some(message) = self.messages.get(&seq).cloned() else {
                    continue;
                };
                if !message.state.is_delivery(receipt) {
                    continue;
                }
                self.unindex(seq, &message);
                let mut updated = message;
                updated.state.visible_at = now + i64::from(visibility_seconds) * 1000;
                self.index(seq, &updated, now);
                journal.push(self.state_record(seq, &updated));
                self.messages.insert(seq, updated.clone());
                received.delivered.push(Delivered {
                    seq,
                    receipt,
                    message: updated,
                });
            }
            if !received.delivered.is_empty() {
                return received;
            }
        }
        let limit = if self.settings.fifo {
            limits.fifo
        } else {
            limits.standard
        };
        let room = limit.saturating_sub(self.in_flight.len());
        if room == 0 && !self.settings.fifo {
            received.over_limit = true;
            return received;
        }
        let max = take.max;
        let candidates = if self.settings.fifo {
            self.fifo_candidates(max.min(room), take.one_per_group, now)
        } else {
            self.schedule
                .iter()
                .take_while(|(visible_at, _)| *visible_at <= now)
                .take(max.min(room))
                .map(|(_, seq)| *seq)
                .collect()
        };
        let max_receives = self
            .settings
            .dead_letter
            .as_ref()
            .filter(|_| dead_letter_ready)
            .map(|(_, count)| *count);
        for seq in candidates {
            let Some(message) = self.messages.get(&seq).cloned() else {
                continue;
            };
            if max_receives.is_some_and(|count| message.state.receive_count >= count) {
                if let Some(moving) = self.detach_for_move(seq) {
                    received.dead_lettered.push(moving);
                }
                continue;
            }
            self.unindex(seq, &message);
            let receipt = rand::random::<NonZeroU64>();
            let mut updated = message;
            updated.state.receive_count += 1;
            updated
                .state
                .first_received_at
                .get_or_insert(first_receive_time(now));
            updated.state.visible_at = now + i64::from(visibility_seconds) * 1000;
            updated.state.receipt = Some(receipt);
            self.index(seq, &updated, now);
            journal.push(self.state_record(seq, &updated));
            self.messages.insert(seq, updated.clone());
            received.delivered.push(Delivered {
                seq,
                receipt: receipt.get(),
                message: updated,
            });
        }
        // Only an attempt that got messages is worth replaying; an empty one stays retryable.
        if self.settings.fifo
            && !received.delivered.is_empty()
            && let Some(id) = attempt_id
        {
            self.attempts.insert(
                id.to_owned(),
                Attempt {
                    expires_at: now + FIFO_WINDOW_MS,
                    deliveries: received
                        .delivered
                        .iter()
                        .map(|d| (d.seq, d.receipt))
                        .collect(),
                },
            );
        }
        received
    }

    /// FIFO: the messages a receive may take, in order, never passing a group's earlier message
    /// and never from a group with a message in flight.
    ///
    /// A merge over the groups' own orders: the next candidate is the lowest of the next group
    /// head and the next message of the groups already being taken from; a group stops at its
    /// first message that is not visible. Groups with a message in flight are skipped whole.
    fn fifo_candidates(&self, max: usize, one_per_group: bool, now: i64) -> Vec<u64> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let visible = |seq: u64| {
            self.messages
                .get(&seq)
                .is_some_and(|message| message.state.visible_at <= now)
        };
        let mut taken = Vec::new();
        let mut heads = self
            .group_heads
            .iter()
            .filter(|(_, group)| !self.group_in_flight.contains_key(group))
            .peekable();
        // Groups being taken from, by their next message.
        let mut next: BinaryHeap<Reverse<(u64, &str)>> = BinaryHeap::new();
        while taken.len() < max {
            let from_heads = match (heads.peek(), next.peek()) {
                (Some((head, _)), Some(Reverse((seq, _)))) => head < seq,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let (seq, group) = if from_heads {
                let Some((head, group)) = heads.next() else {
                    break;
                };
                (*head, group.as_str())
            } else {
                let Some(Reverse(entry)) = next.pop() else {
                    break;
                };
                entry
            };
            if !visible(seq) {
                continue;
            }
            taken.push(seq);
            if one_per_group {
                continue;
            }
            if let Some(&after) = self
                .groups
                .get(group)
                .and_then(|members| members.range(seq + 1..).next())
            {
                next.push(Reverse((after, group)));
            }
        }
        taken
    }

    /// The time the next hidden message becomes visible, if any.
    pub fn next_visible_at(&self, now: i64) -> Option<i64> {
        self.schedule
            .range((now + 1, 0)..)
            .next()
            .map(|(visible_at, _)| *visible_at)
    }

    /// Deletes the delivery `(seq, receipt)`: only the current delivery of a message can.
    pub fn delete(&mut self, seq: u64, receipt: u64, journal: &mut Vec<Op>) -> EntryOutcome {
        match self.messages.get(&seq) {
            Some(message) if message.state.is_delivery(receipt) => {
                self.remove(seq, journal);
                EntryOutcome::Ok
            }
            _ => EntryOutcome::Gone,
        }
    }

    /// Sets the delivery's visibility timeout to `seconds` from now.
    pub fn change_visibility(
        &mut self,
        seq: u64,
        receipt: u64,
        seconds: u32,
        now: i64,
        journal: &mut Vec<Op>,
    ) -> EntryOutcome {
        self.change_delivery(seq, receipt, now, journal, |state| {
            if state.visible_at <= now {
                return Err(EntryOutcome::NotInFlight);
            }
            state.visible_at = now + i64::from(seconds) * 1000;
            Ok(())
        })
    }

    /// Gives back the delivery `(seq, receipt)`, which no client got: visible now, its receive
    /// count and first receive time as before it was taken. Only the current delivery can.
    pub fn return_undelivered(
        &mut self,
        seq: u64,
        receipt: u64,
        now: i64,
        journal: &mut Vec<Op>,
    ) -> EntryOutcome {
        self.change_delivery(seq, receipt, now, journal, |state| {
            state.receive_count = state.receive_count.saturating_sub(1);
            if state.receive_count == 0 {
                state.first_received_at = None;
                state.receipt = None;
            }
            state.visible_at = state.visible_at.min(now);
            Ok(())
        })
    }

    /// Applies `change` to the state of the delivery `(seq, receipt)` if it is the message's
    /// current one (else `Gone`), re-indexing and journaling it; `change` may refuse with the
    /// outcome to answer, changing nothing.
    fn change_delivery(
        &mut self,
        seq: u64,
        receipt: u64,
        now: i64,
        journal: &mut Vec<Op>,
        change: impl FnOnce(&mut State) -> Result<(), EntryOutcome>,
    ) -> EntryOutcome {
        self.expire(now, journal);
        let Some(message) = self.messages.get(&seq).cloned() else {
            return EntryOutcome::Gone;
        };
        if !message.state.is_delivery(receipt) {
            return EntryOutcome::Gone;
        }
        let mut state = message.state;
        if let Err(refused) = change(&mut state) {
            return refused;
        }
        self.unindex(seq, &message);
        let mut updated = message;
        updated.state = state;
        self.index(seq, &updated, now);
        journal.push(self.state_record(seq, &updated));
        self.messages.insert(seq, updated);
        EntryOutcome::Ok
    }

    /// Deletes every message, in flight too; deduplication history stays.
    pub fn purge(&mut self, journal: &mut Vec<Op>) {
        for message in std::mem::take(&mut self.messages).into_values() {
            self.drop_held(&message.held);
        }
        self.unsettled.clear();
        self.schedule.clear();
        self.in_flight.clear();
        self.by_age.clear();
        self.group_in_flight.clear();
        self.groups.clear();
        self.group_heads.clear();
        self.attempts.clear();
        journal.push(Op::Purge {
            queue: Arc::clone(&self.journal_name),
        });
    }

    /// Up to `max` messages in order, with their sequence numbers, without changing anything.
    pub fn peek(&self, max: usize) -> Vec<(u64, Message)> {
        self.messages
            .iter()
            .take(max)
            .map(|(seq, message)| (*seq, message.clone()))
            .collect()
    }

    /// Counts by state.
    pub fn stats(&self, now: i64) -> QueueStats {
        let visible = self.schedule.range(..(now + 1, 0)).count() as u64;
        let in_flight = self.in_flight.range((now + 1, 0)..).count() as u64;
        let total = self.messages.len() as u64;
        QueueStats {
            visible,
            in_flight,
            delayed: total.saturating_sub(visible + in_flight),
            oldest_age_seconds: self
                .by_age
                .first()
                .map(|(sent_at, _)| u64::try_from((now - sent_at).max(0) / 1000).unwrap_or(0)),
        }
    }
}

impl Drop for Queue {
    /// The bodies it kept leave the shared cache's count.
    fn drop(&mut self) {
        for message in self.messages.values() {
            self.drop_held(&message.held);
        }
    }
}

/// FIFO sequence numbers: 20 digits, increasing.
pub fn sequence_number(seq: u64) -> String {
    format!("{seq:020}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::AttributeValue;

    const T0: i64 = 1_800_000_000_000;

    #[test]
    fn a_stored_message_takes_72_bytes() {
        // Eleven to a B-tree leaf: 8-byte keys, 72-byte messages and the leaf's header fit an
        // 896-byte allocation (see `State::receipt`); a million messages hold ~91,000 leaves.
        assert_eq!(std::mem::size_of::<Message>(), 72);
    }

    #[test]
    fn a_receive_at_the_epoch_still_counts_as_received() {
        assert_eq!(first_receive_time(0).get(), 1);
        assert_eq!(first_receive_time(T0).get(), T0);
    }

    fn queue(name: &str, settings: QueueSettings) -> Queue {
        Queue::new(name, Settings::new(name, &settings).unwrap())
    }

    fn text(body: &str) -> OutgoingMessage {
        OutgoingMessage {
            body: body.into(),
            ..Default::default()
        }
    }

    fn grouped(body: &str, group: &str, dedup: &str) -> OutgoingMessage {
        OutgoingMessage {
            body: body.into(),
            group_id: Some(group.into()),
            deduplication_id: Some(dedup.into()),
            ..Default::default()
        }
    }

    fn bodies(received: &Received) -> Vec<&str> {
        received
            .delivered
            .iter()
            .map(|d| d.message.body().body.as_str())
            .collect()
    }

    fn receive(queue: &mut Queue, max: usize, visibility: u32, now: i64) -> Received {
        queue.receive(max, visibility, None, true, now, &mut Vec::new())
    }

    #[test]
    fn a_delivery_given_back_undelivered_is_visible_at_once_and_uncounted() {
        let mut q = queue("q", QueueSettings::default());
        q.send(text("a"), T0, &mut Vec::new()).unwrap();
        let first = receive(&mut q, 10, 30, T0);
        let (seq, receipt) = (first.delivered[0].seq, first.delivered[0].receipt);
        assert_eq!(
            q.return_undelivered(seq, receipt, T0 + 5, &mut Vec::new()),
            EntryOutcome::Ok
        );
        assert_eq!(
            q.return_undelivered(seq, receipt, T0 + 6, &mut Vec::new()),
            EntryOutcome::Gone,
            "only the current delivery can be given back"
        );
        let again = receive(&mut q, 10, 30, T0 + 10);
        assert_eq!(bodies(&again), ["a"], "visible at once, not after 30 s");
        let state = again.delivered[0].message.state;
        assert_eq!(state.receive_count, 1, "the first take did not count");
        assert_eq!(state.first_received_at.map(NonZeroI64::get), Some(T0 + 10));
        // A later delivery given back keeps the earlier ones' count and first receive time.
        let (seq, receipt) = (again.delivered[0].seq, again.delivered[0].receipt);
        let third = receive(&mut q, 10, 30, T0 + 40_010);
        assert_eq!(third.delivered[0].message.state.receive_count, 2);
        assert_eq!(
            q.return_undelivered(seq, receipt, T0 + 40_020, &mut Vec::new()),
            EntryOutcome::Gone
        );
        let (seq, receipt) = (third.delivered[0].seq, third.delivered[0].receipt);
        q.return_undelivered(seq, receipt, T0 + 40_020, &mut Vec::new());
        let fourth = receive(&mut q, 10, 30, T0 + 40_030);
        assert_eq!(fourth.delivered[0].message.state.receive_count, 2);
        assert_eq!(
            fourth.delivered[0]
                .message
                .state
                .first_received_at
                .map(NonZeroI64::get),
            Some(T0 + 10)
        );
    }

    #[test]
    fn visibility_hides_a_delivery_until_it_ends_and_counts_receives() {
        let mut q = queue("q", QueueSettings::default());
        q.send(text("a"), T0, &mut Vec::new()).unwrap();
        let first = receive(&mut q, 10, 30, T0);
        assert_eq!(bodies(&first), ["a"]);
        assert_eq!(first.delivered[0].message.state.receive_count, 1);
        assert!(receive(&mut q, 10, 30, T0 + 29_999).delivered.is_empty());
        let second = receive(&mut q, 10, 30, T0 + 30_000);
        assert_eq!(second.delivered[0].message.state.receive_count, 2);
        assert_eq!(
            second.delivered[0].message.state.first_received_at,
            NonZeroI64::new(T0)
        );
        assert_ne!(first.delivered[0].receipt, second.delivered[0].receipt);
    }

    #[test]
    fn only_the_current_delivery_deletes_and_a_handle_outlives_its_timeout() {
        let mut q = queue("q", QueueSettings::default());
        q.send(text("a"), T0, &mut Vec::new()).unwrap();
        let first = receive(&mut q, 1, 10, T0).delivered.remove(0);
        // The timeout ended but nobody received it again: the handle still works.
        let mut journal = Vec::new();
        assert_eq!(
            q.change_visibility(first.seq, first.receipt, 5, T0 + 20_000, &mut journal),
            EntryOutcome::NotInFlight
        );
        let second = receive(&mut q, 1, 10, T0 + 20_000).delivered.remove(0);
        assert_eq!(
            q.delete(first.seq, first.receipt, &mut journal),
            EntryOutcome::Gone
        );
        assert_eq!(q.len(), 1);
        assert_eq!(
            q.delete(second.seq, second.receipt, &mut journal),
            EntryOutcome::Ok
        );
        assert_eq!(
            q.delete(second.seq, second.receipt, &mut journal),
            EntryOutcome::Gone
        );
        assert!(q.is_empty());
        assert!(journal.contains(&Op::DeleteMessage {
            queue: "q".into(),
            seq: second.seq
        }));
    }

    #[test]
    fn release_and_extend_change_the_deadline_from_now() {
        let mut q = queue("q", QueueSettings::default());
        q.send(text("a"), T0, &mut Vec::new()).unwrap();
        let d = receive(&mut q, 1, 30, T0).delivered.remove(0);
        let mut journal = Vec::new();
        assert_eq!(
            q.change_visibility(d.seq, d.receipt, 100, T0 + 10_000, &mut journal),
            EntryOutcome::Ok
        );
        assert!(receive(&mut q, 1, 30, T0 + 109_999).delivered.is_empty());
        assert_eq!(
            q.change_visibility(d.seq, d.receipt, 0, T0 + 50_000, &mut journal),
            EntryOutcome::Ok
        );
        assert_eq!(bodies(&receive(&mut q, 1, 30, T0 + 50_000)), ["a"]);
    }

    #[test]
    fn delays_come_from_the_message_or_the_queue() {
        let mut q = queue(
            "q",
            QueueSettings {
                delay_seconds: Some(5),
                ..Default::default()
            },
        );
        q.send(text("queue delay"), T0, &mut Vec::new()).unwrap();
        q.send(
            OutgoingMessage {
                delay_seconds: Some(0),
                ..text("no delay")
            },
            T0,
            &mut Vec::new(),
        )
        .unwrap();
        q.send(
            OutgoingMessage {
                delay_seconds: Some(60),
                ..text("long delay")
            },
            T0,
            &mut Vec::new(),
        )
        .unwrap();
        assert_eq!(bodies(&receive(&mut q, 10, 600, T0)), ["no delay"]);
        let stats = q.stats(T0);
        assert_eq!((stats.visible, stats.in_flight, stats.delayed), (0, 1, 2));
        assert_eq!(q.next_visible_at(T0), Some(T0 + 5_000));
        assert_eq!(
            bodies(&receive(&mut q, 10, 600, T0 + 5_000)),
            ["queue delay"]
        );
        assert_eq!(
            bodies(&receive(&mut q, 10, 600, T0 + 60_000)),
            ["long delay"]
        );
        let error = q.send(
            OutgoingMessage {
                delay_seconds: Some(901),
                ..text("x")
            },
            T0,
            &mut Vec::new(),
        );
        assert_eq!(error.unwrap_err().kind, EntryErrorKind::InvalidParameter);
    }

    #[test]
    fn retention_deletes_old_messages() {
        let mut q = queue(
            "q",
            QueueSettings {
                retention_seconds: Some(60),
                ..Default::default()
            },
        );
        q.send(text("old"), T0, &mut Vec::new()).unwrap();
        q.send(text("new"), T0 + 30_000, &mut Vec::new()).unwrap();
        let mut journal = Vec::new();
        q.expire(T0 + 60_000, &mut journal);
        assert_eq!(q.len(), 1);
        assert_eq!(bodies(&receive(&mut q, 10, 30, T0 + 60_000)), ["new"]);
        assert!(matches!(journal[0], Op::DeleteMessage { .. }));
        assert_eq!(q.stats(T0 + 60_000).oldest_age_seconds, Some(30));
    }

    #[test]
    fn a_moved_message_expires_by_its_own_send_time_not_its_place() {
        let mut dlq = queue(
            "dlq",
            QueueSettings {
                retention_seconds: Some(60),
                ..Default::default()
            },
        );
        dlq.send(text("newer"), T0 + 50_000, &mut Vec::new())
            .unwrap();
        let moved = Moving {
            from_queue: "src".into(),
            from_seq: 9,
            message: Message {
                state: State {
                    receive_count: 3,
                    first_received_at: NonZeroI64::new(T0),
                    visible_at: T0,
                    receipt: None,
                },
                sent_at: T0,
                group_id: None,
                held: Held::Cached(Arc::new(Body {
                    id: "old".into(),
                    body: "moved".into(),
                    attributes: BTreeMap::new(),
                    sent_at: T0,
                    group_id: None,
                    dead_letter_source_arn: None,
                    deduplication_id: None,
                })),
            },
        };
        dlq.accept_dead_letter(moved, "arn:src", T0 + 55_000, &mut Vec::new());
        assert_eq!(dlq.stats(T0 + 55_000).oldest_age_seconds, Some(55));
        dlq.expire(T0 + 60_000, &mut Vec::new());
        assert_eq!(dlq.len(), 1, "the moved message expired behind a newer one");
        assert_eq!(bodies(&receive(&mut dlq, 10, 30, T0 + 60_000)), ["newer"]);
    }

    #[test]
    fn size_body_and_attributes_are_checked() {
        let mut q = queue(
            "q",
            QueueSettings {
                max_message_bytes: Some(1024),
                ..Default::default()
            },
        );
        let fits = "x".repeat(1024);
        assert!(q.send(text(&fits), T0, &mut Vec::new()).is_ok());
        let mut over = text(&fits[..1000]);
        over.attributes.insert(
            "name".into(),
            MessageAttribute {
                data_type: "String".into(),
                value: AttributeValue::Text("y".repeat(20)),
            },
        );
        assert_eq!(
            q.send(over, T0, &mut Vec::new()).unwrap_err().kind,
            EntryErrorKind::InvalidParameter
        );
        assert_eq!(
            q.send(text(""), T0, &mut Vec::new()).unwrap_err().kind,
            EntryErrorKind::MissingParameter
        );
        assert_eq!(
            q.send(text("bad \u{1}"), T0, &mut Vec::new())
                .unwrap_err()
                .kind,
            EntryErrorKind::InvalidContents
        );
        let mut not_a_number = text("n");
        not_a_number.attributes.insert(
            "n".into(),
            MessageAttribute {
                data_type: "Number".into(),
                value: AttributeValue::Text("ten".into()),
            },
        );
        assert!(q.send(not_a_number, T0, &mut Vec::new()).is_err());
        assert!(
            Settings::new(
                "q",
                &QueueSettings {
                    max_message_bytes: Some(1023),
                    ..Default::default()
                }
            )
            .is_err()
        );
        assert!(
            Settings::new(
                "q",
                &QueueSettings {
                    max_message_bytes: Some(1_048_577),
                    ..Default::default()
                }
            )
            .is_err()
        );
    }

    #[test]
    fn the_in_flight_limit_stops_receives_with_over_limit() {
        let mut q = queue("q", QueueSettings::default());
        for n in 0..(MAX_IN_FLIGHT_STANDARD + 5) {
            q.send(text(&n.to_string()), T0, &mut Vec::new()).unwrap();
        }
        let mut taken = 0;
        while taken < MAX_IN_FLIGHT_STANDARD + 5 {
            let got = receive(&mut q, 10, 600, T0).delivered.len();
            if got == 0 {
                break;
            }
            taken += got;
        }
        assert_eq!(taken, MAX_IN_FLIGHT_STANDARD);
        assert!(
            receive(&mut q, 10, 600, T0).over_limit,
            "SQS answers OverLimit"
        );
        // Once some end, receives take again.
        assert_eq!(receive(&mut q, 10, 600, T0 + 600_000).delivered.len(), 10);
    }

    #[test]
    fn fifo_holds_a_group_while_any_message_is_in_flight_and_keeps_order() {
        let mut q = queue("q.fifo", QueueSettings::default());
        for (body, group) in [
            ("a1", "a"),
            ("b1", "b"),
            ("a2", "a"),
            ("b2", "b"),
            ("c1", "c"),
        ] {
            q.send(grouped(body, group, body), T0, &mut Vec::new())
                .unwrap();
        }
        let first = receive(&mut q, 2, 30, T0);
        assert_eq!(bodies(&first), ["a1", "b1"]);
        // a and b are held; c is not.
        assert_eq!(bodies(&receive(&mut q, 10, 600, T0)), ["c1"]);
        let a1 = &first.delivered[0];
        q.delete(a1.seq, a1.receipt, &mut Vec::new());
        assert_eq!(bodies(&receive(&mut q, 10, 600, T0)), ["a2"]);
        // b1 times out: b is free again, in order.
        assert_eq!(bodies(&receive(&mut q, 10, 30, T0 + 30_000)), ["b1", "b2"]);
        let seqs: Vec<u64> = first.delivered.iter().map(|d| d.seq).collect();
        assert!(seqs[0] < seqs[1]);
        assert_eq!(sequence_number(7), "00000000000000000007");
    }

    #[test]
    fn fifo_deduplicates_for_five_minutes_by_id_or_content() {
        let mut q = queue(
            "q.fifo",
            QueueSettings {
                content_based_deduplication: Some(true),
                ..Default::default()
            },
        );
        let first = q
            .send(grouped("x", "g", "id-1"), T0, &mut Vec::new())
            .unwrap();
        let again = q
            .send(
                grouped("other body", "g", "id-1"),
                T0 + 299_999,
                &mut Vec::new(),
            )
            .unwrap();
        assert_eq!(first, again);
        assert_eq!(q.len(), 1);
        // Deleting the message does not forget its deduplication id.
        let d = receive(&mut q, 1, 30, T0).delivered.remove(0);
        q.delete(d.seq, d.receipt, &mut Vec::new());
        assert_eq!(
            q.send(grouped("x", "g", "id-1"), T0 + 1_000, &mut Vec::new())
                .unwrap(),
            first
        );
        assert!(q.is_empty());
        let later = q
            .send(grouped("x", "g", "id-1"), T0 + 300_000, &mut Vec::new())
            .unwrap();
        assert_ne!(later.message_id, first.message_id);
        assert!(later.sequence_number > first.sequence_number);
        // Content-based: same body, no id.
        let by_content = OutgoingMessage {
            deduplication_id: None,
            ..grouped("same", "g", "")
        };
        let one = q
            .send(by_content.clone(), T0 + 300_000, &mut Vec::new())
            .unwrap();
        assert_eq!(
            q.send(by_content, T0 + 300_001, &mut Vec::new()).unwrap(),
            one
        );
    }

    #[test]
    fn fifo_refuses_per_message_delays_and_missing_ids() {
        let mut q = queue("q.fifo", QueueSettings::default());
        let delayed = OutgoingMessage {
            delay_seconds: Some(5),
            ..grouped("x", "g", "d")
        };
        assert_eq!(
            q.send(delayed, T0, &mut Vec::new()).unwrap_err().kind,
            EntryErrorKind::InvalidParameter
        );
        let no_group = OutgoingMessage {
            group_id: None,
            ..grouped("x", "g", "d")
        };
        assert_eq!(
            q.send(no_group, T0, &mut Vec::new()).unwrap_err().kind,
            EntryErrorKind::MissingParameter
        );
        let no_dedup = OutgoingMessage {
            deduplication_id: None,
            ..grouped("x", "g", "d")
        };
        assert!(q.send(no_dedup, T0, &mut Vec::new()).is_err());
        let mut standard = queue("s", QueueSettings::default());
        assert!(
            standard
                .send(grouped("x", "g", "d"), T0, &mut Vec::new())
                .is_err()
        );
    }

    #[test]
    fn fifo_receive_attempts_replay_the_same_deliveries_for_five_minutes() {
        let mut q = queue("q.fifo", QueueSettings::default());
        q.send(grouped("a", "g", "1"), T0, &mut Vec::new()).unwrap();
        q.send(grouped("b", "h", "2"), T0, &mut Vec::new()).unwrap();
        let first = q.receive(1, 600, Some("attempt-1"), true, T0, &mut Vec::new());
        let replay = q.receive(1, 600, Some("attempt-1"), true, T0 + 1_000, &mut Vec::new());
        let key = |r: &Received| {
            r.delivered
                .iter()
                .map(|d| (d.seq, d.receipt))
                .collect::<Vec<_>>()
        };
        assert_eq!(key(&first), key(&replay), "the same messages and receipts");
        assert_eq!(
            replay.delivered[0].message.state.visible_at,
            T0 + 601_000,
            "hidden anew from the retry"
        );
        let other = q.receive(1, 600, Some("attempt-2"), true, T0 + 1_000, &mut Vec::new());
        assert_eq!(bodies(&other), ["b"]);
        let expired = q.receive(
            10,
            600,
            Some("attempt-1"),
            true,
            T0 + 300_000,
            &mut Vec::new(),
        );
        assert!(
            expired.delivered.is_empty(),
            "a new attempt: both groups are in flight"
        );
        // An attempt that got nothing is not remembered: its retry can get messages.
        let mut r = queue("r.fifo", QueueSettings::default());
        let early = r.receive(1, 30, Some("early"), true, T0, &mut Vec::new());
        assert!(early.delivered.is_empty());
        r.send(grouped("late", "g", "l"), T0, &mut Vec::new())
            .unwrap();
        let retried = r.receive(1, 30, Some("early"), true, T0 + 10, &mut Vec::new());
        assert_eq!(bodies(&retried), ["late"]);
    }

    #[test]
    fn redrive_moves_a_message_on_the_receive_after_max_receive_count() {
        let mut q = queue(
            "q",
            QueueSettings {
                dead_letter: Some(("dlq".into(), 2)),
                ..Default::default()
            },
        );
        let sent = q.send(text("poison"), T0, &mut Vec::new()).unwrap();
        assert_eq!(receive(&mut q, 1, 0, T0).delivered.len(), 1);
        assert_eq!(receive(&mut q, 1, 0, T0).delivered.len(), 1);
        let third = receive(&mut q, 1, 0, T0);
        assert!(third.delivered.is_empty());
        assert_eq!(third.dead_lettered.len(), 1);
        assert!(q.is_empty());
        let mut dlq = queue("dlq", QueueSettings::default());
        dlq.accept_dead_letter(third.dead_lettered[0].clone(), &q.arn, T0, &mut Vec::new());
        let moved = receive(&mut dlq, 1, 30, T0).delivered.remove(0);
        assert_eq!(moved.message.body().id, sent.message_id);
        assert_eq!(moved.message.body().body, "poison");
        assert_eq!(
            moved.message.body().dead_letter_source_arn.as_deref(),
            Some(q.arn.as_str())
        );
        // Without its dead-letter queue, the message stays and is delivered.
        let mut orphan = queue(
            "o",
            QueueSettings {
                dead_letter: Some(("gone".into(), 1)),
                ..Default::default()
            },
        );
        orphan.send(text("m"), T0, &mut Vec::new()).unwrap();
        receive(&mut orphan, 1, 0, T0);
        let kept = orphan.receive(1, 0, None, false, T0, &mut Vec::new());
        assert_eq!(kept.delivered.len(), 1);
    }

    #[test]
    fn bodies_beyond_the_cache_leave_memory_once_settled_and_the_cache_counts_what_it_keeps() {
        let cache = Arc::new(BodyCache::new(1_000));
        let settings = Settings::new("q", &QueueSettings::default()).unwrap();
        let mut q = Queue::with_cache("q", settings, Arc::clone(&cache));
        for body in ["a", "b", "c", "d", "e", "f", "g", "h"] {
            q.send(text(&body.repeat(200)), T0, &mut Vec::new())
                .unwrap();
        }
        let held = |q: &Queue| -> Vec<&'static str> {
            q.messages
                .values()
                .map(|message| match message.held {
                    Held::Cached(_) => "cached",
                    Held::Unsettled(_) => "unsettled",
                    Held::Stored => "stored",
                })
                .collect()
        };
        // Each body counts 200 bytes and the fixed part: two fit in 1,000 bytes.
        assert_eq!(held(&q)[..3], ["cached", "cached", "unsettled"]);
        let used = cache.used();
        assert!(used > 400 && used <= 1_000, "{used}");
        // Committed up to the 5th message: the 3rd to 5th leave memory, the rest wait.
        q.settle_before(6);
        assert_eq!(
            held(&q),
            [
                "cached",
                "cached",
                "stored",
                "stored",
                "stored",
                "unsettled",
                "unsettled",
                "unsettled"
            ]
        );
        assert_eq!(q.unsettled(), 3);
        // Received bodies: those in memory come along; the others are the store's to read.
        let received = receive(&mut q, 3, 30, T0);
        assert!(received.delivered[0].message.held.resident().is_some());
        assert_eq!(received.delivered[2].message.held, Held::Stored);
        let first = &received.delivered[0];
        q.delete(first.seq, first.receipt, &mut Vec::new());
        assert!(
            cache.used() < used,
            "a deleted cached body leaves the count"
        );
        drop(q);
        assert_eq!(cache.used(), 0, "a dropped queue's bodies leave the count");
    }

    #[test]
    fn purge_removes_in_flight_messages_too_and_peek_changes_nothing() {
        let mut q = queue("q", QueueSettings::default());
        q.send(text("a"), T0, &mut Vec::new()).unwrap();
        q.send(text("b"), T0, &mut Vec::new()).unwrap();
        receive(&mut q, 1, 600, T0);
        let peeked = q.peek(10);
        assert_eq!(peeked.len(), 2);
        assert_eq!(q.peek(10), peeked, "peek changed nothing");
        let mut journal = Vec::new();
        q.purge(&mut journal);
        assert!(q.is_empty());
        assert_eq!(journal, vec![Op::Purge { queue: "q".into() }]);
        assert_eq!(q.stats(T0), QueueStats::default());
    }

    #[test]
    fn settings_are_checked() {
        for bad in [
            QueueSettings {
                visibility_timeout_seconds: Some(43_201),
                ..Default::default()
            },
            QueueSettings {
                delay_seconds: Some(901),
                ..Default::default()
            },
            QueueSettings {
                receive_wait_seconds: Some(21),
                ..Default::default()
            },
            QueueSettings {
                retention_seconds: Some(59),
                ..Default::default()
            },
            QueueSettings {
                retention_seconds: Some(1_209_601),
                ..Default::default()
            },
            QueueSettings {
                content_based_deduplication: Some(true),
                ..Default::default()
            },
            QueueSettings {
                dead_letter: Some(("d.fifo".into(), 3)),
                ..Default::default()
            },
            QueueSettings {
                dead_letter: Some(("d".into(), 0)),
                ..Default::default()
            },
        ] {
            assert!(Settings::new("q", &bad).is_err(), "{bad:?}");
        }
        assert!(Settings::new("bad name", &QueueSettings::default()).is_err());
        assert!(Settings::new(".fifo", &QueueSettings::default()).is_err());
        let defaults = Settings::new("q", &QueueSettings::default()).unwrap();
        assert_eq!(
            (
                defaults.visibility_timeout_seconds,
                defaults.retention_seconds,
                defaults.max_message_bytes
            ),
            (30, 345_600, 1_048_576)
        );
    }

    /// The scan the group index replaced: every message in order, skipping blocked groups.
    fn scanned_fifo_candidates(queue: &Queue, max: usize, now: i64) -> Vec<u64> {
        let mut blocked: BTreeSet<&str> =
            queue.group_in_flight.keys().map(String::as_str).collect();
        let mut taken = Vec::new();
        for (seq, message) in &queue.messages {
            if taken.len() >= max {
                break;
            }
            let group = message.group_id.as_deref().unwrap_or_default();
            if blocked.contains(group) {
                continue;
            }
            if message.state.visible_at <= now {
                taken.push(*seq);
            } else {
                blocked.insert(group);
            }
        }
        taken
    }

    #[test]
    fn fifo_candidates_follow_the_queue_order_through_random_histories() {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for round in 0..40 {
            let mut q = queue("rand.fifo", QueueSettings::default());
            let mut now = T0;
            let mut handles: Vec<(u64, u64)> = Vec::new();
            let mut journal = Vec::new();
            for step in 0..400 {
                match rng.random_range(0..10) {
                    0..=3 => {
                        let group = format!("g{}", rng.random_range(0..6));
                        let _ = q.send(
                            grouped("b", &group, &format!("{round}-{step}")),
                            now,
                            &mut journal,
                        );
                    }
                    4..=5 => {
                        let max = rng.random_range(1..=10);
                        let received =
                            q.receive(max, rng.random_range(0..5), None, false, now, &mut journal);
                        handles.extend(received.delivered.iter().map(|d| (d.seq, d.receipt)));
                    }
                    6 if !handles.is_empty() => {
                        let (seq, receipt) =
                            handles.swap_remove(rng.random_range(0..handles.len()));
                        q.delete(seq, receipt, &mut journal);
                    }
                    7 if !handles.is_empty() => {
                        let (seq, receipt) = handles[rng.random_range(0..handles.len())];
                        q.change_visibility(
                            seq,
                            receipt,
                            rng.random_range(0..3),
                            now,
                            &mut journal,
                        );
                    }
                    8 if rng.random_range(0..20) == 0 => q.purge(&mut journal),
                    _ => now += rng.random_range(0..1500),
                }
                q.expire(now, &mut journal);
                for max in [1, 3, 10] {
                    assert_eq!(
                        q.fifo_candidates(max, false, now),
                        scanned_fifo_candidates(&q, max, now),
                        "round {round}, step {step}, max {max}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_blocked_groups_backlog_is_not_scanned() {
        let mut q = queue("deep.fifo", QueueSettings::default());
        let mut journal = Vec::new();
        for n in 0..50_000 {
            q.send(grouped("b", "hot", &format!("h{n}")), T0, &mut journal)
                .unwrap();
        }
        q.send(grouped("b", "cold", "c0"), T0, &mut journal)
            .unwrap();
        // The hot group's first message goes in flight: the group is blocked.
        let first = q.receive(1, 30, None, false, T0, &mut journal);
        assert_eq!(first.delivered.len(), 1);
        let next = q.receive(10, 30, None, false, T0, &mut journal);
        assert_eq!(bodies(&next).len(), 1, "only the cold group's message");
        assert_eq!(
            next.delivered[0].message.body().group_id.as_deref(),
            Some("cold")
        );
        // (The group index visits two heads here, where the scan read 50,001 messages.)
        assert_eq!(q.group_heads.len(), 2);
    }
}
