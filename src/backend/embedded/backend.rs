//! The embedded backend itself: its queues by name, its store, and the steps every operation is
//! made of (find a queue, change it under its lock, journal the change, wait for the commit).

use super::config::{Caches, EmbeddedConfig, MIB};
use super::convert::{queue_name, resolved, to_backend_message};
use super::durable::{Durable, store_down, unavailable};
use super::engine::{self, Body, BodyCache, Delivered, Held, Op, Queue, Settings, Take};
use super::redrive_tasks::Redrives;
use super::slot::{Queues, Slot, lock, read, slot};
use super::store::{Commit, Store, StoreError};
use crate::core::backend::BackendError;
use crate::core::clock::Clock;
use crate::core::model::{BackendMessage, BackendReceive, QueueSettings, ResolvedQueue};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

/// The in-process queue service.
pub struct EmbeddedBackend {
    /// Every queue, by name.
    pub(super) queues: RwLock<Queues>,
    /// The store and its recovery; `None` in memory.
    pub(super) durable: Option<Durable>,
    /// Where time comes from.
    clock: Arc<dyn Clock>,
    /// Ends waiting long polls (and redrive tasks) at shutdown.
    pub(super) closing: tokio_util::sync::CancellationToken,
    /// Message move tasks out of dead-letter queues.
    pub(super) redrives: Redrives,
    /// The backend itself, for the tasks it runs in the background.
    pub(super) me: std::sync::Weak<EmbeddedBackend>,
    /// In-flight limits of receives.
    in_flight: engine::InFlightLimits,
    /// Bodies kept in memory (once on disk, within a bound), shared by every queue.
    pub(super) bodies: Arc<BodyCache>,
}

impl std::fmt::Debug for EmbeddedBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedBackend")
            .field("durable", &self.durable.is_some())
            .finish_non_exhaustive()
    }
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
        queues: Queues,
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
            redrives: Redrives::default(),
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
        let (durable, queues, bodies) = Durable::open(dir, caches, &*clock)?;
        Ok(Self::assemble(
            queues,
            Some(durable),
            bodies,
            clock,
            in_flight,
        ))
    }

    /// Reopens a failed store and reads memory back from it (see [`Durable::heal`]). Called
    /// before any lock is taken.
    pub(super) fn heal(&self) -> Result<(), BackendError> {
        let Some(durable) = &self.durable else {
            return Ok(());
        };
        durable.heal(&self.queues, &self.bodies, &*self.clock)
    }

    pub(super) fn now(&self) -> i64 {
        self.clock.now().timestamp_millis()
    }

    pub(super) fn now_seconds(&self) -> u64 {
        u64::try_from(self.clock.now().timestamp()).unwrap_or(0)
    }

    pub(super) fn slot(&self, url_or_name: &str) -> Result<Arc<Slot>, BackendError> {
        self.heal()?;
        let name = queue_name(url_or_name);
        self.queues
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(name)
            .cloned()
            .ok_or(BackendError::QueueNotFound)
    }

    pub(super) fn submit(&self, journal: Vec<Op>) -> Commit {
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
    pub(super) async fn apply<T>(
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
    pub(super) fn barrier(&self) -> Commit {
        self.to_store(Store::barrier)
    }

    /// Runs `change` on the queue under its lock and queues its journal in that order.
    ///
    /// A queue deleted meanwhile answers `QueueNotFound` and changes nothing.
    pub(super) fn mutate<T>(
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
        Ok(resolved(name, &lock(&slot.queue)))
    }

    /// Stores new settings for a queue.
    pub(super) async fn replace_settings(
        &self,
        slot: &Slot,
        settings: Settings,
    ) -> Result<(), BackendError> {
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

    pub(super) fn check_dead_letter_target(&self, settings: &Settings) -> Result<(), BackendError> {
        if let Some((target, _)) = &settings.dead_letter
            && self.slot(target).is_err()
        {
            return Err(BackendError::Invalid(format!(
                "dead-letter queue `{target}` does not exist"
            )));
        }
        Ok(())
    }

    /// One look at the queue: receives, and moves what is past its max receive count into the
    /// dead-letter queue in the same journal submission, with both queues locked (in name order).
    #[allow(clippy::type_complexity)]
    pub(super) fn receive_once(
        &self,
        slot: &Slot,
        target: Option<&Slot>,
        request: &BackendReceive,
    ) -> Result<(Vec<Delivered>, usize, Option<i64>, i64, Commit), BackendError> {
        let now = self.now();
        let mut journal = Vec::new();
        // A queue may be its own dead-letter queue (as on SQS): one lock.
        let own_dead_letter = target.is_some_and(|target| std::ptr::eq(target, slot));
        let (mut source, mut target) = match target {
            None => (lock(&slot.queue), None),
            Some(_) if own_dead_letter => (lock(&slot.queue), None),
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
        let target_ready = own_dead_letter || target.as_ref().is_some_and(|target| !target.deleted);
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
        let arn = source.arn.clone();
        for message in received.dead_lettered {
            match target.as_mut() {
                Some(target) => target.accept_dead_letter(message, &arn, now, &mut journal),
                None => source.accept_own_dead_letter(message, now, &mut journal),
            }
        }
        let next_visible_at = source.next_visible_at(now);
        let commit = self.submit_unsynced(journal);
        Ok((received.delivered, moved, next_visible_at, now, commit))
    }

    /// The bodies of messages of `queue`, in the order given: those in memory at once, the others
    /// read from the store off the async workers. A message moved here by a journal not
    /// committed yet is read again once it is; one deleted meanwhile (a purge, say) has `None`.
    pub(super) async fn bodies_of(
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
    pub(super) async fn answer(
        &self,
        queue: &str,
        deliveries: Vec<Delivered>,
    ) -> Result<Vec<BackendMessage>, BackendError> {
        let wanted: Vec<(u64, &Held)> = deliveries
            .iter()
            .map(|delivery| (delivery.seq, &delivery.message.held))
            .collect();
        let bodies = self.bodies_of(queue, &wanted).await?;
        let fifo = self
            .slot(queue)
            .is_ok_and(|slot| lock(&slot.queue).settings.fifo);
        Ok(deliveries
            .iter()
            .zip(bodies)
            .filter_map(|(delivery, body)| {
                let body = body?;
                Some(to_backend_message(
                    delivery.seq,
                    delivery.receipt,
                    fifo,
                    &delivery.message,
                    &body,
                ))
            })
            .collect())
    }
}
