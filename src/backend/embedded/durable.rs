//! Durability of the backend: the store, and memory read back from it, at open and after a failed
//! write (when the store is reopened, within a backoff, and every queue rebuilt from what was
//! committed).

use super::config::Caches;
use super::engine::{BodyCache, Queue};
use super::slot::{Queues, Slot, lock, read, slot};
use super::store::{self, Store, StoreError};
use crate::core::backend::BackendError;
use crate::core::clock::Clock;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// The durable part: the store, and how to reopen it after a failed write.
pub(super) struct Durable {
    /// Where the store is.
    dir: PathBuf,
    /// The store's page cache, in bytes.
    store_cache_bytes: usize,
    /// `None` while a reopen after a failure has not succeeded yet.
    pub(super) store: RwLock<Option<Store>>,
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
/// The longest wait before a failed store is reopened.
const MAX_REOPEN_WAIT: Duration = Duration::from_secs(10);

/// A store error, as the core sees it.
pub(super) fn unavailable(error: StoreError) -> BackendError {
    BackendError::Unavailable(error.to_string())
}

/// The answer while the store is down.
pub(super) fn store_down() -> BackendError {
    BackendError::Unavailable("the embedded store refused a write and is not back yet".into())
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
    queue.restore_dedup(recovered.dedup);
    (queue, count)
}

impl Durable {
    /// Opens the store in `dir` and reads every queue back (bodies stay on disk): the durable
    /// part, the queues, and the body cache they share.
    pub(super) fn open(
        dir: &Path,
        caches: Caches,
        clock: &dyn Clock,
    ) -> Result<(Self, Queues, Arc<BodyCache>), StoreError> {
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
        let durable = Self {
            dir: dir.to_owned(),
            store_cache_bytes: caches.store,
            store: RwLock::new(Some(store)),
            reopen: Mutex::new(Reopen {
                next_attempt: None,
                wait: FIRST_REOPEN_WAIT,
            }),
            on_probation: std::sync::atomic::AtomicBool::new(false),
        };
        Ok((durable, queues, bodies))
    }

    /// After a failed write (a full disk, say), memory may hold changes the disk refused: the
    /// store is reopened and every queue read back from what was committed, so nothing that was
    /// refused survives, and service resumes without a restart. Tried at most once per wait
    /// (1 s after the failure, doubling up to 10 s while failures repeat). `queues` are the
    /// backend's, `bodies` the cache they share.
    pub(super) fn heal(
        &self,
        queues: &RwLock<Queues>,
        bodies: &Arc<BodyCache>,
        clock: &dyn Clock,
    ) -> Result<(), BackendError> {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(store) = &*read(&self.store)
            && !store.is_poisoned()
        {
            // A write committed since the reopen: the disk is fine again, so is the backoff.
            if self.on_probation.load(Relaxed) && store.commits() > 0 {
                self.on_probation.store(false, Relaxed);
                lock(&self.reopen).wait = FIRST_REOPEN_WAIT;
            }
            return Ok(());
        }
        let mut reopen = lock(&self.reopen);
        if read(&self.store).as_ref().is_some_and(|s| !s.is_poisoned()) {
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
        let mut queues = queues
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut names: Vec<String> = queues.keys().cloned().collect();
        names.sort();
        let slots: Vec<Arc<Slot>> = names.iter().map(|name| Arc::clone(&queues[name])).collect();
        let mut guards: Vec<_> = slots.iter().map(|slot| lock(&slot.queue)).collect();
        let mut store = self
            .store
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // The failed store's writer thread must let go of the file before it is opened again.
        drop(store.take());
        let recovered = match Store::open(&self.dir, self.store_cache_bytes) {
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
        let now_ms = clock.now().timestamp_millis();
        let mut recovered = recovered.queues;
        for (name, guard) in names.iter().zip(guards.iter_mut()) {
            match recovered.remove(name) {
                Some(queue) => **guard = rebuild(name, queue, bodies, now_ms).0,
                None => {
                    guard.deleted = true;
                    queues.remove(name);
                }
            }
        }
        for (name, queue) in recovered {
            queues.insert(
                name.clone(),
                Arc::new(slot(rebuild(&name, queue, bodies, now_ms).0)),
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
        self.on_probation.store(true, Relaxed);
        tracing::info!(
            queues = queues.len(),
            "embedded store reopened after a failed write; memory read back from disk"
        );
        Ok(())
    }
}
