//! The embedded backend: SQS semantics in-process, durable in a redb file; needs nothing installed.
//!
//! Each queue is an [`engine::Queue`] behind its own mutex, with a [`Notify`] that wakes long polls
//! the moment a message may have become available (a send, a release, a deleted FIFO message that
//! unblocks its group); a waiting receive otherwise sleeps exactly until the next hidden message's
//! visibility time, so nothing polls on a timer. A change wakes one waiter, and every receive that
//! takes messages wakes the next: ten thousand idle polls cost one wake per send, not ten thousand.
//!
//! Memory holds each message's state and place; its body only while it fits the shared
//! [`engine::BodyCache`] or is not on disk yet. Other bodies are read from the store (off the
//! async workers) when a receive, a peek or a redrive needs them.
//!
//! Mutations are journaled to the [`store::Store`] while the queue's lock is held (so the disk sees
//! them in order). Sends, deletes, visibility changes and queue changes are answered after their
//! commit; a receive is answered at once (its loss in a crash only makes its messages visible
//! again, and the queue's next answered write commits after it).

pub mod engine;
mod records;
mod redrive;
pub mod store;

use crate::core::backend::{Backend, BackendError};
use crate::core::clock::Clock;
use crate::core::model::{
    BackendMessage, BackendReceive, EntryError, EntryOutcome, OutgoingMessage, QueueAttributes,
    QueueSettings, QueueStats, RedrivePolicy, RedriveTask, ResolvedQueue, SentMessage, StoreCounts,
};
use async_trait::async_trait;
use chrono::{DateTime, TimeZone, Utc};
use engine::{Body, BodyCache, Delivered, Held, Message, Op, Queue, Settings, Take};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use store::{Commit, Store, StoreError};
use tokio::sync::Notify;

/// Queue URLs of the embedded backend start with this.
pub const URL_PREFIX: &str = "embedded:";

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
const MIB: usize = 1024 * 1024;

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

struct Slot {
    queue: Mutex<Queue>,
    notify: Notify,
}

/// The durable part: the store, and how to reopen it after a failed write.
struct Durable {
    dir: PathBuf,
    /// The store's page cache, in bytes.
    store_cache_bytes: usize,
    /// `None` while a reopen after a failure has not succeeded yet.
    store: RwLock<Option<Store>>,
    /// When a reopen may be tried next, and how long the wait after a failure is.
    reopen: Mutex<Reopen>,
    /// A reopen succeeded but no write has committed since: the backoff is not over yet.
    on_probation: std::sync::atomic::AtomicBool,
}

/// The reopen schedule of a failed store.
struct Reopen {
    /// `None` until a failure is noticed; then when the next reopen may be tried.
    next_attempt: Option<tokio::time::Instant>,
    /// The wait to schedule after the next failure.
    wait: Duration,
}

/// The first wait before a failed store is reopened; it doubles up to [`MAX_REOPEN_WAIT`].
const FIRST_REOPEN_WAIT: Duration = Duration::from_secs(1);
const MAX_REOPEN_WAIT: Duration = Duration::from_secs(10);

/// The in-process queue service.
pub struct EmbeddedBackend {
    queues: RwLock<HashMap<String, Arc<Slot>>>,
    durable: Option<Durable>,
    clock: Arc<dyn Clock>,
    /// Ends waiting long polls (and redrive tasks) at shutdown.
    closing: tokio_util::sync::CancellationToken,
    /// Message move tasks out of dead-letter queues.
    redrives: redrive::Redrives,
    /// The backend itself, for the tasks it runs in the background.
    me: std::sync::Weak<EmbeddedBackend>,
    /// In-flight limits of receives.
    in_flight: engine::InFlightLimits,
    /// Bodies kept in memory (once on disk, within a bound), shared by every queue.
    bodies: Arc<BodyCache>,
}

/// The sizes of the durable backend's caches, in bytes.
#[derive(Debug, Clone, Copy)]
struct Caches {
    bodies: usize,
    store: usize,
}

impl std::fmt::Debug for EmbeddedBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedBackend")
            .field("durable", &self.durable.is_some())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn unavailable(error: StoreError) -> BackendError {
    BackendError::Unavailable(error.to_string())
}

fn store_down() -> BackendError {
    BackendError::Unavailable("the embedded store refused a write and is not back yet".into())
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A queue as the store read it back (bodies stay on disk); also answers how many messages it
/// holds.
fn rebuild(
    name: &str,
    recovered: store::RecoveredQueue,
    bodies: &Arc<BodyCache>,
    now: i64,
) -> (Queue, usize) {
    let mut queue = Queue::with_cache(name, recovered.settings, Arc::clone(bodies));
    queue.restore_next_seq(recovered.next_seq);
    let count = recovered.messages.len();
    // One shared name per group, not one per message.
    let mut groups: HashMap<String, Arc<str>> = HashMap::new();
    let messages = recovered
        .messages
        .into_iter()
        .map(|message| {
            let group_id = message.group_id.map(|group| {
                Arc::clone(
                    groups
                        .entry(group)
                        .or_insert_with_key(|group| Arc::from(group.as_str())),
                )
            });
            (message.seq, message.state, message.sent_at, group_id)
        })
        .collect();
    queue.restore_messages(messages, now);
    for (key, dedup) in recovered.dedup {
        queue.restore_dedup(key, dedup);
    }
    (queue, count)
}

impl EmbeddedBackend {
    /// A backend from its config: durable in `data_dir`, or in memory.
    pub fn from_config(
        config: &EmbeddedConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, StoreError> {
        let limits = engine::InFlightLimits {
            standard: config.max_in_flight_standard,
            fifo: config.max_in_flight_fifo,
        };
        if config.in_memory {
            let bodies = Arc::new(BodyCache::unbounded());
            Ok(Self::assemble(HashMap::new(), None, bodies, clock, limits))
        } else {
            let caches = Caches {
                bodies: config.body_cache_mib.saturating_mul(MIB),
                store: config.store_cache_mib.saturating_mul(MIB),
            };
            Self::open_with(&config.data_dir, clock, limits, caches)
        }
    }

    /// A backend that keeps nothing on disk.
    pub fn in_memory(clock: Arc<dyn Clock>) -> Arc<Self> {
        Self::assemble(
            HashMap::new(),
            None,
            Arc::new(BodyCache::unbounded()),
            clock,
            engine::InFlightLimits::default(),
        )
    }

    fn assemble(
        queues: HashMap<String, Arc<Slot>>,
        durable: Option<Durable>,
        bodies: Arc<BodyCache>,
        clock: Arc<dyn Clock>,
        in_flight: engine::InFlightLimits,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            queues: RwLock::new(queues),
            durable,
            bodies,
            clock,
            closing: tokio_util::sync::CancellationToken::new(),
            redrives: redrive::Redrives::default(),
            me: me.clone(),
            in_flight,
        })
    }

    /// A durable backend in `dir`, with everything stored there read back.
    pub fn open(dir: &Path, clock: Arc<dyn Clock>) -> Result<Arc<Self>, StoreError> {
        let defaults = EmbeddedConfig::default();
        let caches = Caches {
            bodies: defaults.body_cache_mib * MIB,
            store: defaults.store_cache_mib * MIB,
        };
        Self::open_with(dir, clock, engine::InFlightLimits::default(), caches)
    }

    fn open_with(
        dir: &Path,
        clock: Arc<dyn Clock>,
        in_flight: engine::InFlightLimits,
        caches: Caches,
    ) -> Result<Arc<Self>, StoreError> {
        let (store, recovered) = Store::open(dir, caches.store)?;
        let now = clock.now().timestamp_millis();
        let bodies = Arc::new(BodyCache::new(caches.bodies));
        let mut queues = HashMap::new();
        let mut count = 0usize;
        for (name, recovered) in recovered.queues {
            let (queue, messages) = rebuild(&name, recovered, &bodies, now);
            count += messages;
            queues.insert(name, Arc::new(slot(queue)));
        }
        tracing::info!(dir = %dir.display(), queues = queues.len(), messages = count, "embedded store opened");
        let durable = Durable {
            dir: dir.to_owned(),
            store_cache_bytes: caches.store,
            store: RwLock::new(Some(store)),
            reopen: Mutex::new(Reopen {
                next_attempt: None,
                wait: FIRST_REOPEN_WAIT,
            }),
            on_probation: std::sync::atomic::AtomicBool::new(false),
        };
        Ok(Self::assemble(
            queues,
            Some(durable),
            bodies,
            clock,
            in_flight,
        ))
    }

    /// After a failed write (a full disk, say), memory may hold changes the disk refused: the
    /// store is reopened and every queue read back from what was committed, so nothing that was
    /// refused survives, and service resumes without a restart. Tried at most once per wait
    /// (1 s after the failure, doubling up to 10 s while failures repeat). Called before any lock
    /// is taken.
    fn heal(&self) -> Result<(), BackendError> {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(durable) = &self.durable else {
            return Ok(());
        };
        if let Some(store) = &*read(&durable.store)
            && !store.is_poisoned()
        {
            // A write committed since the reopen: the disk is fine again, so is the backoff.
            if durable.on_probation.load(Relaxed) && store.commits() > 0 {
                durable.on_probation.store(false, Relaxed);
                lock(&durable.reopen).wait = FIRST_REOPEN_WAIT;
            }
            return Ok(());
        }
        let mut reopen = lock(&durable.reopen);
        if read(&durable.store)
            .as_ref()
            .is_some_and(|s| !s.is_poisoned())
        {
            return Ok(()); // reopened by another caller meanwhile
        }
        let now = tokio::time::Instant::now();
        match reopen.next_attempt {
            None => {
                // The failure is new: try again after the wait.
                reopen.next_attempt = Some(now + reopen.wait);
                return Err(store_down());
            }
            Some(at) if now < at => return Err(store_down()),
            Some(_) => {}
        }
        // Everything stops while memory is replaced: the map, then each queue in name order
        // (the order every other path locks them in).
        let mut queues = self
            .queues
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut names: Vec<String> = queues.keys().cloned().collect();
        names.sort();
        let slots: Vec<Arc<Slot>> = names.iter().map(|name| Arc::clone(&queues[name])).collect();
        let mut guards: Vec<_> = slots.iter().map(|slot| lock(&slot.queue)).collect();
        let mut store = durable
            .store
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // The failed store's writer thread must let go of the file before it is opened again.
        drop(store.take());
        let recovered = match Store::open(&durable.dir, durable.store_cache_bytes) {
            Ok((reopened, recovered)) => {
                *store = Some(reopened);
                recovered
            }
            Err(error) => {
                reopen.wait = (reopen.wait * 2).min(MAX_REOPEN_WAIT);
                reopen.next_attempt = Some(now + reopen.wait);
                tracing::warn!(%error, retry_in_seconds = reopen.wait.as_secs(), "embedded store still unavailable");
                return Err(store_down());
            }
        };
        let now_ms = self.now();
        let mut recovered = recovered.queues;
        for (name, guard) in names.iter().zip(guards.iter_mut()) {
            match recovered.remove(name) {
                Some(queue) => **guard = rebuild(name, queue, &self.bodies, now_ms).0,
                None => {
                    guard.deleted = true;
                    queues.remove(name);
                }
            }
        }
        for (name, queue) in recovered {
            queues.insert(
                name.clone(),
                Arc::new(slot(rebuild(&name, queue, &self.bodies, now_ms).0)),
            );
        }
        drop(guards);
        for slot in &slots {
            slot.notify.notify_waiters();
        }
        // Should the next write fail too (a disk still full), the wait before the next reopen
        // is longer; a write that commits ends that.
        reopen.next_attempt = None;
        reopen.wait = (reopen.wait * 2).min(MAX_REOPEN_WAIT);
        durable.on_probation.store(true, Relaxed);
        tracing::info!(
            queues = queues.len(),
            "embedded store reopened after a failed write; memory read back from disk"
        );
        Ok(())
    }

    fn now(&self) -> i64 {
        self.clock.now().timestamp_millis()
    }

    fn now_seconds(&self) -> u64 {
        u64::try_from(self.clock.now().timestamp()).unwrap_or(0)
    }

    fn slot(&self, url_or_name: &str) -> Result<Arc<Slot>, BackendError> {
        self.heal()?;
        let name = queue_name(url_or_name);
        self.queues
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(name)
            .cloned()
            .ok_or(BackendError::QueueNotFound)
    }

    fn submit(&self, journal: Vec<Op>) -> Commit {
        self.to_store(|store| store.submit(journal))
    }

    /// [`Self::submit`] for a receive's journal, which need not reach the disk before the next
    /// synced commit (see [`Store::submit_unsynced`]).
    fn submit_unsynced(&self, journal: Vec<Op>) -> Commit {
        self.to_store(|store| store.submit_unsynced(journal))
    }

    /// `submit` to the store: done at once without a disk, failed while the store is down.
    fn to_store(&self, submit: impl FnOnce(&Store) -> Commit) -> Commit {
        match &self.durable {
            Some(durable) => match &*read(&durable.store) {
                Some(store) => submit(store),
                None => Commit::failed(),
            },
            None => Commit::done(),
        }
    }

    /// Applies `change` to the queue, waits until it is on disk, and wakes the queue's long polls.
    async fn apply<T>(
        &self,
        queue_url: &str,
        change: impl FnOnce(&mut Queue, i64, &mut Vec<Op>) -> T,
    ) -> Result<T, BackendError> {
        let slot = self.slot(queue_url)?;
        let (result, commit) = self.mutate(&slot, change)?;
        commit.wait().await.map_err(unavailable)?;
        slot.notify.notify_one();
        Ok(result)
    }

    /// A commit that completes once everything submitted before it is on disk.
    fn barrier(&self) -> Commit {
        self.to_store(Store::barrier)
    }

    /// Runs `change` on the queue under its lock and queues its journal in that order.
    ///
    /// A queue deleted meanwhile answers `QueueNotFound` and changes nothing.
    fn mutate<T>(
        &self,
        slot: &Slot,
        change: impl FnOnce(&mut Queue, i64, &mut Vec<Op>) -> T,
    ) -> Result<(T, Commit), BackendError> {
        let now = self.now();
        let mut journal = Vec::new();
        let mut queue = lock(&slot.queue);
        if queue.deleted {
            return Err(BackendError::QueueNotFound);
        }
        let result = change(&mut queue, now, &mut journal);
        let commit = self.submit(journal);
        Ok((result, commit))
    }

    /// Creates the queue, or brings an existing one's settings in line (used for configured queues).
    pub async fn ensure_queue(
        &self,
        name: &str,
        requested: &QueueSettings,
    ) -> Result<ResolvedQueue, BackendError> {
        self.heal()?;
        let settings = Settings::new(name, requested).map_err(BackendError::Invalid)?;
        self.check_dead_letter_target(&settings)?;
        let (slot, commit) = {
            let mut queues = self
                .queues
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let mut created = false;
            let slot = Arc::clone(queues.entry(name.to_owned()).or_insert_with(|| {
                created = true;
                Arc::new(slot(Queue::with_cache(
                    name,
                    settings.clone(),
                    Arc::clone(&self.bodies),
                )))
            }));
            drop(queues);
            let mut queue = lock(&slot.queue);
            let commit = if created || !queue.settings.same_behaviour(&settings) {
                let now = self.now_seconds();
                // Tags and the creation time belong to the queue, not to the config.
                let settings = Settings {
                    tags: queue.settings.tags.clone(),
                    created_at: if created {
                        now
                    } else {
                        queue.settings.created_at
                    },
                    modified_at: now,
                    ..settings
                };
                queue.settings = settings.clone();
                self.submit(vec![Op::PutQueue {
                    name: name.to_owned(),
                    settings,
                }])
            } else {
                Commit::done()
            };
            drop(queue);
            (slot, commit)
        };
        commit.wait().await.map_err(unavailable)?;
        Ok(self.resolved(name, &lock(&slot.queue)))
    }

    /// Stores new settings for a queue.
    async fn replace_settings(&self, slot: &Slot, settings: Settings) -> Result<(), BackendError> {
        let settings = Settings {
            modified_at: self.now_seconds(),
            ..settings
        };
        let commit = {
            let mut queue = lock(&slot.queue);
            queue.settings = settings.clone();
            self.submit(vec![Op::PutQueue {
                name: queue.name.clone(),
                settings,
            }])
        };
        slot.notify.notify_waiters();
        commit.wait().await.map_err(unavailable)
    }

    fn check_dead_letter_target(&self, settings: &Settings) -> Result<(), BackendError> {
        if let Some((target, _)) = &settings.dead_letter
            && self.slot(target).is_err()
        {
            return Err(BackendError::Invalid(format!(
                "dead-letter queue `{target}` does not exist"
            )));
        }
        Ok(())
    }

    fn resolved(&self, name: &str, queue: &Queue) -> ResolvedQueue {
        let settings = &queue.settings;
        ResolvedQueue {
            url: format!("{URL_PREFIX}{name}"),
            attributes: QueueAttributes {
                fifo: settings.fifo,
                visibility_timeout_seconds: settings.visibility_timeout_seconds,
                receive_wait_seconds: settings.receive_wait_seconds,
                arn: Some(queue.arn.clone()),
                redrive: settings
                    .dead_letter
                    .as_ref()
                    .map(|(target, count)| RedrivePolicy {
                        dead_letter_target_arn: format!(
                            "arn:aws:sqs:{}:{}:{target}",
                            engine::REGION,
                            engine::ACCOUNT
                        ),
                        max_receive_count: *count,
                    }),
                delay_seconds: settings.delay_seconds,
                retention_seconds: settings.retention_seconds,
                max_message_bytes: settings.max_message_bytes,
                content_based_deduplication: settings.content_based_deduplication,
                created_timestamp: Some(settings.created_at),
                last_modified_timestamp: Some(settings.modified_at),
                per_group_throughput: false,
                // The engine's store is plain files: encrypt the disk if that is needed.
                managed_encryption: false,
            },
        }
    }

    /// One look at the queue: receives, and moves what is past its max receive count into the
    /// dead-letter queue in the same journal submission, with both queues locked (in name order).
    #[allow(clippy::type_complexity)]
    fn receive_once(
        &self,
        slot: &Slot,
        target: Option<&Slot>,
        request: &BackendReceive,
    ) -> Result<(Vec<Delivered>, usize, Option<i64>, i64, Commit), BackendError> {
        let now = self.now();
        let mut journal = Vec::new();
        let (mut source, mut target) = match target {
            None => (lock(&slot.queue), None),
            Some(target) => {
                let source_name = lock(&slot.queue).name.clone();
                let target_name = lock(&target.queue).name.clone();
                if source_name < target_name {
                    let source = lock(&slot.queue);
                    (source, Some(lock(&target.queue)))
                } else {
                    let target = lock(&target.queue);
                    (lock(&slot.queue), Some(target))
                }
            }
        };
        if source.deleted {
            return Err(BackendError::QueueNotFound);
        }
        let target_ready = target.as_ref().is_some_and(|target| !target.deleted);
        let received = source.receive_within(
            Take {
                max: request.max_messages as usize,
                one_per_group: request.one_per_group,
            },
            request.visibility_timeout_seconds,
            request.attempt_id.as_deref(),
            target_ready,
            self.in_flight,
            now,
            &mut journal,
        );
        if received.over_limit {
            return Err(BackendError::OverLimit);
        }
        let moved = received.dead_lettered.len();
        if let Some(target) = target.as_mut() {
            let arn = source.arn.clone();
            for message in received.dead_lettered {
                target.accept_dead_letter(message, &arn, now, &mut journal);
            }
        }
        let next_visible_at = source.next_visible_at(now);
        let commit = self.submit_unsynced(journal);
        Ok((received.delivered, moved, next_visible_at, now, commit))
    }
}

fn slot(queue: Queue) -> Slot {
    Slot {
        queue: Mutex::new(queue),
        notify: Notify::new(),
    }
}

/// The queue name in an embedded URL (or the name itself).
fn queue_name(url_or_name: &str) -> &str {
    url_or_name.strip_prefix(URL_PREFIX).unwrap_or(url_or_name)
}

fn handle(seq: u64, receipt: u64) -> String {
    format!("{seq}:{receipt:016x}")
}

fn parse_handle(handle: &str) -> Option<(u64, u64)> {
    let (seq, receipt) = handle.split_once(':')?;
    Some((seq.parse().ok()?, u64::from_str_radix(receipt, 16).ok()?))
}

fn time(ms: i64) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(ms).single()
}

fn to_backend_message(seq: u64, receipt: u64, message: &Message, body: &Body) -> BackendMessage {
    BackendMessage {
        message_id: body.id.clone(),
        backend_handle: handle(seq, receipt),
        body: body.body.clone(),
        attributes: body.attributes.clone(),
        sent_at: time(message.sent_at),
        first_received_at: message
            .state
            .first_received_at
            .and_then(|at| time(at.get())),
        receive_count: message.state.receive_count,
        sequence_number: message
            .group_id
            .as_ref()
            .map(|_| engine::sequence_number(seq)),
        group_id: message.group_id.as_deref().map(str::to_owned),
        dead_letter_source_arn: body.dead_letter_source_arn.clone(),
        deduplication_id: body.deduplication_id.clone(),
    }
}

impl EmbeddedBackend {
    /// The bodies of messages of `queue`, in the order given: those in memory at once, the others
    /// read from the store off the async workers. A message moved here by a journal not
    /// committed yet is read again once it is; one deleted meanwhile (a purge, say) has `None`.
    async fn bodies_of(
        &self,
        queue: &str,
        wanted: &[(u64, &Held)],
    ) -> Result<Vec<Option<Arc<Body>>>, BackendError> {
        let stored: Vec<u64> = wanted
            .iter()
            .filter(|(_, held)| held.resident().is_none())
            .map(|(seq, _)| *seq)
            .collect();
        let mut read = HashMap::new();
        if !stored.is_empty() {
            let mut missing = self.read_bodies(queue, stored, &mut read).await?;
            if !missing.is_empty() {
                self.barrier().wait().await.map_err(unavailable)?;
                missing = self.read_bodies(queue, missing, &mut read).await?;
            }
            if !missing.is_empty() {
                tracing::warn!(
                    queue,
                    count = missing.len(),
                    "messages left the store before their bodies were read; left out"
                );
            }
        }
        Ok(wanted
            .iter()
            .map(|(seq, held)| held.resident().cloned().or_else(|| read.remove(seq)))
            .collect())
    }

    /// Reads the bodies of `seqs` into `into`; answers those the store does not have.
    async fn read_bodies(
        &self,
        queue: &str,
        seqs: Vec<u64>,
        into: &mut HashMap<u64, Arc<Body>>,
    ) -> Result<Vec<u64>, BackendError> {
        let reader = match &self.durable {
            Some(durable) => read(&durable.store).as_ref().map(Store::reader),
            None => None,
        }
        .ok_or_else(store_down)?;
        let name = queue.to_owned();
        let (seqs, bodies) = tokio::task::spawn_blocking(move || {
            let bodies = reader.bodies(&name, &seqs);
            (seqs, bodies)
        })
        .await
        .map_err(|error| BackendError::Unavailable(format!("store read: {error}")))?;
        let bodies = bodies.map_err(unavailable)?;
        let mut missing = Vec::new();
        for (seq, body) in seqs.into_iter().zip(bodies) {
            match body {
                Some(body) => {
                    into.insert(seq, Arc::new(body));
                }
                None => missing.push(seq),
            }
        }
        Ok(missing)
    }

    /// The deliveries as the core sees them, with their bodies.
    async fn answer(
        &self,
        queue: &str,
        deliveries: Vec<Delivered>,
    ) -> Result<Vec<BackendMessage>, BackendError> {
        let wanted: Vec<(u64, &Held)> = deliveries
            .iter()
            .map(|delivery| (delivery.seq, &delivery.message.held))
            .collect();
        let bodies = self.bodies_of(queue, &wanted).await?;
        Ok(deliveries
            .iter()
            .zip(bodies)
            .filter_map(|(delivery, body)| {
                let body = body?;
                Some(to_backend_message(
                    delivery.seq,
                    delivery.receipt,
                    &delivery.message,
                    &body,
                ))
            })
            .collect())
    }
}

#[async_trait]
impl Backend for EmbeddedBackend {
    async fn resolve(&self, locator: &str) -> Result<ResolvedQueue, BackendError> {
        let slot = self.slot(locator)?;
        let queue = lock(&slot.queue);
        Ok(self.resolved(&queue.name, &queue))
    }

    async fn receive(
        &self,
        queue_url: &str,
        request: &BackendReceive,
    ) -> Result<Vec<BackendMessage>, BackendError> {
        let slot = self.slot(queue_url)?;
        let deadline =
            tokio::time::Instant::now() + Duration::from_secs(request.wait_seconds.into());
        loop {
            // Nobody waits for the answer: take nothing, and pass on a wake-up this wait may
            // have taken, so a waiting receive looks in its place.
            if request.abandoned.is_cancelled() {
                slot.notify.notify_one();
                return Ok(Vec::new());
            }
            // Registered before looking, so a send between the look and the wait is not missed.
            let notified = slot.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();

            // Scoped, so nothing the look holds is kept through the wait below (ten thousand
            // idle long polls are ten thousand waiting receives).
            let (next_visible_at, now) = {
                let target_name = lock(&slot.queue)
                    .settings
                    .dead_letter
                    .as_ref()
                    .map(|(target, _)| target.clone());
                let target = target_name.as_deref().and_then(|name| self.slot(name).ok());
                let (deliveries, moved, next_visible_at, now, mut commit) =
                    self.receive_once(&slot, target.as_deref(), request)?;
                // Not waited for: losing a receive in a crash only makes its messages visible
                // again (at least once holds), and a later write of one of its messages replaces
                // its record in the store's order. A store already down still answers 503.
                if commit.failed_already() {
                    return Err(store_down());
                }
                if moved > 0
                    && let Some(target) = &target
                {
                    tracing::debug!(count = moved, "messages dead-lettered");
                    target.notify.notify_one();
                }
                if !deliveries.is_empty() {
                    // More may be there: the next waiter looks (and wakes the one after, if it
                    // takes).
                    slot.notify.notify_one();
                    // Boxed, for the same reason: the wait's state stays small.
                    return Box::pin(self.answer(queue_name(queue_url), deliveries)).await;
                }
                (next_visible_at, now)
            };
            let rest = deadline.saturating_duration_since(tokio::time::Instant::now());
            if rest.is_zero() {
                return Ok(Vec::new());
            }
            let wake = match next_visible_at {
                Some(at) => rest.min(Duration::from_millis(u64::try_from(at - now).unwrap_or(0))),
                None => rest,
            };
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep(wake) => {}
                () = self.closing.cancelled() => return Ok(Vec::new()),
                () = request.abandoned.cancelled() => return Ok(Vec::new()),
            }
            // A deleted queue ends the wait with QueueNotFound.
            self.slot(queue_url)?;
        }
    }

    async fn delete_batch(
        &self,
        queue_url: &str,
        backend_handles: &[&str],
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        // (Waking pollers matters here too: a deleted FIFO message may unblock its group.)
        self.apply(queue_url, |queue, _, journal| {
            backend_handles
                .iter()
                .map(|handle| match parse_handle(handle) {
                    Some((seq, receipt)) => queue.delete(seq, receipt, journal),
                    None => EntryOutcome::Gone,
                })
                .collect()
        })
        .await
    }

    async fn change_visibility_batch(
        &self,
        queue_url: &str,
        entries: &[(&str, u32)],
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        self.apply(queue_url, |queue, now, journal| {
            entries
                .iter()
                .map(|(handle, seconds)| match parse_handle(handle) {
                    Some((seq, receipt)) => {
                        queue.change_visibility(seq, receipt, *seconds, now, journal)
                    }
                    None => EntryOutcome::Gone,
                })
                .collect()
        })
        .await
    }

    async fn return_undelivered(
        &self,
        queue_url: &str,
        backend_handles: &[&str],
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        // Waking pollers: the messages are visible again.
        self.apply(queue_url, |queue, now, journal| {
            backend_handles
                .iter()
                .map(|handle| match parse_handle(handle) {
                    Some((seq, receipt)) => queue.return_undelivered(seq, receipt, now, journal),
                    None => EntryOutcome::Gone,
                })
                .collect()
        })
        .await
    }

    async fn send_batch(
        &self,
        queue_url: &str,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<Result<SentMessage, EntryError>>, BackendError> {
        let slot = self.slot(queue_url)?;
        let ((results, wrote, mark), commit) = self.mutate(&slot, |queue, now, journal| {
            let results = messages
                .iter()
                .map(|message| queue.send(message.clone(), now, journal))
                .collect::<Vec<_>>();
            (results, !journal.is_empty(), queue.settle_mark())
        })?;
        commit.wait().await.map_err(unavailable)?;
        // On disk now: bodies the cache had no room for leave memory.
        {
            let mut queue = lock(&slot.queue);
            if queue.unsettled() > 0 {
                queue.settle_before(mark);
            }
        }
        if !wrote && results.iter().any(Result::is_ok) {
            // Only deduplicated resends: answer once the original sends are on disk too.
            self.barrier().wait().await.map_err(unavailable)?;
        }
        slot.notify.notify_one();
        Ok(results)
    }

    async fn purge(&self, queue_url: &str) -> Result<(), BackendError> {
        self.apply(queue_url, |queue, _, journal| queue.purge(journal))
            .await
    }

    async fn stats(&self, queue_url: &str) -> Result<QueueStats, BackendError> {
        let slot = self.slot(queue_url)?;
        let (stats, commit) = self.mutate(&slot, |queue, now, journal| {
            queue.expire(now, journal);
            queue.stats(now)
        })?;
        commit.wait().await.map_err(unavailable)?;
        Ok(stats)
    }

    async fn create_queue(
        &self,
        name: &str,
        requested: &QueueSettings,
    ) -> Result<ResolvedQueue, BackendError> {
        self.heal()?;
        let settings = Settings::new(name, requested).map_err(BackendError::Invalid)?;
        self.check_dead_letter_target(&settings)?;
        let slot = {
            let mut queues = self
                .queues
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(existing) = queues.get(name) {
                let existing = Arc::clone(existing);
                drop(queues);
                let queue = lock(&existing.queue);
                if !queue.settings.same_behaviour(&settings) {
                    return Err(BackendError::AlreadyExists(format!(
                        "`{name}` exists with other attributes"
                    )));
                }
                return Ok(self.resolved(name, &queue));
            }
            let now = self.now_seconds();
            let settings = Settings {
                created_at: now,
                modified_at: now,
                ..settings
            };
            let slot = Arc::new(slot(Queue::with_cache(
                name,
                settings.clone(),
                Arc::clone(&self.bodies),
            )));
            queues.insert(name.to_owned(), Arc::clone(&slot));
            // Journaled while the map is locked, so a concurrent delete is journaled after it.
            (
                slot,
                self.submit(vec![Op::PutQueue {
                    name: name.to_owned(),
                    settings,
                }]),
            )
        };
        let (slot, commit) = slot;
        commit.wait().await.map_err(unavailable)?;
        Ok(self.resolved(name, &lock(&slot.queue)))
    }

    async fn delete_queue(&self, queue_url: &str) -> Result<(), BackendError> {
        self.heal()?;
        let name = queue_name(queue_url).to_owned();
        let removed = self
            .queues
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&name)
            .ok_or(BackendError::QueueNotFound)?;
        let commit = {
            // Under the queue's lock: operations that already hold the queue see it deleted and
            // journal nothing after the deletion.
            let mut queue = lock(&removed.queue);
            queue.deleted = true;
            self.submit(vec![Op::DeleteQueue { name }])
        };
        removed.notify.notify_waiters();
        commit.wait().await.map_err(unavailable)
    }

    async fn list_queues(&self, prefix: &str) -> Result<Vec<String>, BackendError> {
        self.heal()?;
        let queues = self
            .queues
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut names: Vec<String> = queues
            .keys()
            .filter(|name| name.starts_with(prefix))
            .cloned()
            .collect();
        names.sort();
        Ok(names)
    }

    async fn set_queue_settings(
        &self,
        queue_url: &str,
        changes: &QueueSettings,
    ) -> Result<(), BackendError> {
        let slot = self.slot(queue_url)?;
        let settings = {
            let queue = lock(&slot.queue);
            queue
                .settings
                .changed(&queue.name, changes)
                .map_err(BackendError::Invalid)?
        };
        self.check_dead_letter_target(&settings)?;
        self.replace_settings(&slot, settings).await
    }

    async fn tag_queue(
        &self,
        queue_url: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<(), BackendError> {
        let slot = self.slot(queue_url)?;
        let mut settings = lock(&slot.queue).settings.clone();
        settings
            .tags
            .extend(tags.iter().map(|(k, v)| (k.clone(), v.clone())));
        if settings.tags.len() > 50 {
            return Err(BackendError::Invalid("a queue has at most 50 tags".into()));
        }
        self.replace_settings(&slot, settings).await
    }

    async fn untag_queue(&self, queue_url: &str, keys: &[String]) -> Result<(), BackendError> {
        let slot = self.slot(queue_url)?;
        let mut settings = lock(&slot.queue).settings.clone();
        for key in keys {
            settings.tags.remove(key);
        }
        self.replace_settings(&slot, settings).await
    }

    async fn list_queue_tags(
        &self,
        queue_url: &str,
    ) -> Result<BTreeMap<String, String>, BackendError> {
        let slot = self.slot(queue_url)?;
        let tags = lock(&slot.queue).settings.tags.clone();
        Ok(tags)
    }

    fn shutting_down(&self) {
        self.closing.cancel();
    }

    fn knows_current_deliveries(&self) -> bool {
        // Each receive gives a message a new receipt, kept with it on disk; only the newest acts.
        self.durable.is_some()
    }

    fn store_counts(&self) -> Option<StoreCounts> {
        let durable = self.durable.as_ref()?;
        let store = read(&durable.store);
        let store = store.as_ref()?;
        Some(StoreCounts {
            commits: store.commits(),
            syncs: store.syncs(),
            writes: store.writes(),
        })
    }

    async fn start_redrive(
        &self,
        source_arn: &str,
        destination_arn: Option<&str>,
        max_per_second: Option<u32>,
    ) -> Result<String, BackendError> {
        self.start_redrive_task(source_arn, destination_arn, max_per_second)
            .await
    }

    async fn list_redrives(
        &self,
        source_arn: &str,
        max: usize,
    ) -> Result<Vec<RedriveTask>, BackendError> {
        self.slot(source_arn.rsplit(':').next().unwrap_or(source_arn))?;
        Ok(self.list_redrive_tasks(source_arn, max))
    }

    async fn cancel_redrive(&self, handle: &str) -> Result<u64, BackendError> {
        self.cancel_redrive_task(handle)
    }

    async fn peek(&self, queue_url: &str, max: usize) -> Result<Vec<BackendMessage>, BackendError> {
        let slot = self.slot(queue_url)?;
        let peeked = lock(&slot.queue).peek(max);
        let wanted: Vec<(u64, &Held)> = peeked
            .iter()
            .map(|(seq, message)| (*seq, &message.held))
            .collect();
        let bodies = self.bodies_of(queue_name(queue_url), &wanted).await?;
        Ok(peeked
            .iter()
            .zip(bodies)
            .filter_map(|((_, message), body)| {
                let body = body?;
                Some(to_backend_message(0, 0, message, &body))
            })
            .collect())
    }

    async fn ping(&self) -> Result<(), BackendError> {
        // Readiness follows the store: a failed one is reopened here too (within its backoff).
        self.heal()
    }
}
