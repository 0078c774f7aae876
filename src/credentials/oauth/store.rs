//! Where the sombus connections and their audit log live, behind one interface: this process's
//! memory, a directory ([`LocalStore`]: the embedded data directory, or one the config names), or
//! the Redis/Valkey server replicas share ([`SharedStore`], when `[state.redis]` is configured).
//! Every call is async; the directory's file work runs on the blocking pool.

use super::audit_log::AuditPage;
use super::connection::Connection;
use super::local_store::LocalStore;
use super::refusals::Refusals;
use super::shared_server::CredentialServer;
use super::shared_store::SharedStore;
use crate::core::clock::Clock;
use chrono::{DateTime, Utc};
use std::path::Path;
use std::sync::Arc;

pub use super::local_store::LOCK_WAIT;
pub use super::records::{AuditEntry, BUSY_RETRY, REFUSED, StoreError};
pub use super::refusals::REFUSALS_PER_MINUTE;

/// What [`ConnectionStore::import_directory`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imported {
    /// The directory's store is on the shared server now.
    Moved {
        /// Connections taken in.
        connections: usize,
        /// Audit log lines taken in.
        audit_lines: usize,
    },
    /// The shared server already holds a store: nothing was written.
    AlreadyHeld,
    /// The directory holds no connection and no audit line.
    NothingThere,
}

/// The connections and the audit log, wherever they are kept.
pub struct ConnectionStore {
    place: Place,
    clock: Arc<dyn Clock>,
    /// Refused admin attempts of the current minute (this process's).
    refusals: Refusals,
}

enum Place {
    Local(Arc<LocalStore>),
    Shared(Box<SharedStore>),
}

impl std::fmt::Debug for ConnectionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = match &self.place {
            Place::Local(local) => format!("{local:?}"),
            Place::Shared(shared) => format!("{shared:?}"),
        };
        f.debug_struct("ConnectionStore")
            .field("place", &place)
            .finish_non_exhaustive()
    }
}

impl ConnectionStore {
    /// A store in memory (nothing survives a restart: the in-memory embedded engine's companion).
    pub fn in_memory(clock: Arc<dyn Clock>) -> Self {
        Self::local(LocalStore::in_memory(Arc::clone(&clock)), clock)
    }

    /// A store in `dir` ([`LocalStore::open`]).
    pub fn open(dir: &Path, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        Ok(Self::local(
            LocalStore::open(dir, Arc::clone(&clock))?,
            clock,
        ))
    }

    /// A store on the server replicas share ([`SharedStore`]).
    pub fn shared(server: Arc<dyn CredentialServer>, clock: Arc<dyn Clock>) -> Self {
        Self {
            place: Place::Shared(Box::new(SharedStore::new(server))),
            clock,
            refusals: Refusals::default(),
        }
    }

    /// Moves the store in `dir` onto the shared server, whole (connections with their secrets'
    /// hashes, the audit log line for line), when the server's store holds nothing yet; the
    /// directory is left as it is. Nothing is written when the server already holds a store.
    pub async fn import_directory(
        dir: &Path,
        server: Arc<dyn CredentialServer>,
    ) -> Result<Imported, StoreError> {
        let from = dir.to_owned();
        let (connections, lines) =
            tokio::task::spawn_blocking(move || super::local_store::export(&from))
                .await
                .map_err(|error| StoreError::Io(format!("store task: {error}")))??;
        if connections.is_empty() && lines.is_empty() {
            return Ok(Imported::NothingThere);
        }
        let shared = SharedStore::new(server);
        if shared.import(&connections, &lines).await? {
            Ok(Imported::Moved {
                connections: connections.len(),
                audit_lines: lines.len(),
            })
        } else {
            Ok(Imported::AlreadyHeld)
        }
    }

    fn local(local: LocalStore, clock: Arc<dyn Clock>) -> Self {
        Self {
            place: Place::Local(Arc::new(local)),
            clock,
            refusals: Refusals::default(),
        }
    }

    /// Whether changes survive a restart.
    pub fn is_durable(&self) -> bool {
        match &self.place {
            Place::Local(local) => local.is_durable(),
            Place::Shared(_) => true,
        }
    }

    /// Hears of the changes other replicas make to a shared store, calling `changed` with each
    /// changed client id (`None`: any may have changed), until `stop`; returns at once for a
    /// local store (replicas sharing a directory rely on the recheck time alone).
    pub async fn follow(&self, changed: impl Fn(Option<&str>), stop: impl Future<Output = ()>) {
        if let Place::Shared(shared) = &self.place {
            shared.follow(changed, stop).await;
        }
    }

    /// Runs `work` on the local store where blocking is harmless.
    async fn on_local<T, F>(local: &Arc<LocalStore>, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&LocalStore) -> Result<T, StoreError> + Send + 'static,
    {
        local.run(work).await
    }

    /// Whether the store can be read now (readiness).
    pub async fn probe(&self) -> Result<(), StoreError> {
        match &self.place {
            Place::Local(local) => Self::on_local(local, LocalStore::probe).await,
            Place::Shared(shared) => shared.probe().await,
        }
    }

    /// The connection as stored now.
    pub async fn get(&self, client_id: &str) -> Result<Option<Connection>, StoreError> {
        match &self.place {
            Place::Local(local) => {
                let client_id = client_id.to_owned();
                Self::on_local(local, move |store| store.get(&client_id)).await
            }
            Place::Shared(shared) => shared.get(client_id).await,
        }
    }

    /// The connection as stored, and when that was current: at most `within` ago (the shared
    /// store always reads it now).
    pub async fn lookup(
        &self,
        client_id: &str,
        within: chrono::TimeDelta,
    ) -> Result<(Option<Connection>, DateTime<Utc>), StoreError> {
        match &self.place {
            // A lookup of a copy in memory costs no file work most of the time: it runs here
            // (the file work, when there is some, steps off the runtime by itself).
            Place::Local(local) => local.lookup(client_id, within),
            Place::Shared(shared) => {
                let as_of = self.clock.now();
                Ok((shared.get(client_id).await?, as_of))
            }
        }
    }

    /// The workspace's connections, by client id (those being created too).
    pub async fn list(&self, workspace: &str) -> Result<Vec<Connection>, StoreError> {
        match &self.place {
            Place::Local(local) => {
                let workspace = workspace.to_owned();
                Self::on_local(local, move |store| store.list(&workspace)).await
            }
            Place::Shared(shared) => {
                shared
                    .list(|connection| connection.workspace == workspace)
                    .await
            }
        }
    }

    /// The connections of every workspace still being created that were created before
    /// `cutoff`: creates that will never finish.
    pub async fn abandoned(&self, cutoff: DateTime<Utc>) -> Result<Vec<Connection>, StoreError> {
        match &self.place {
            Place::Local(local) => {
                Self::on_local(local, move |store| store.abandoned(cutoff)).await
            }
            Place::Shared(shared) => {
                shared
                    .list(|connection| connection.creating && connection.created_at <= cutoff)
                    .await
            }
        }
    }

    /// Adds a connection, recording `audit` ([`LocalStore::create`] says when it is refused).
    pub async fn create(
        &self,
        connection: Connection,
        audit: AuditEntry,
    ) -> Result<(), StoreError> {
        match &self.place {
            Place::Local(local) => {
                Self::on_local(local, move |store| store.create(connection, audit)).await
            }
            Place::Shared(shared) => shared.create(connection, audit).await,
        }
    }

    /// Marks the connection `client_id` of instance `instance` made whole
    /// ([`LocalStore::finish_create`]).
    pub async fn finish_create(
        &self,
        client_id: &str,
        instance: &str,
    ) -> Result<Connection, StoreError> {
        match &self.place {
            Place::Local(local) => {
                let (client_id, instance) = (client_id.to_owned(), instance.to_owned());
                Self::on_local(local, move |store| {
                    store.finish_create(&client_id, &instance)
                })
                .await
            }
            Place::Shared(shared) => shared.finish_create(client_id, instance).await,
        }
    }

    /// Removes the connection `client_id` of instance `instance` whose create did not finish
    /// ([`LocalStore::undo_create`]).
    pub async fn undo_create(
        &self,
        client_id: &str,
        instance: &str,
        audit: AuditEntry,
    ) -> Result<Connection, StoreError> {
        match &self.place {
            Place::Local(local) => {
                let (client_id, instance) = (client_id.to_owned(), instance.to_owned());
                Self::on_local(local, move |store| {
                    store.undo_create(&client_id, &instance, audit)
                })
                .await
            }
            Place::Shared(shared) => shared.undo_create(client_id, instance, audit).await,
        }
    }

    /// Changes a connection with `apply`, recording `audit` when it applies; answers what
    /// `apply` answers and the connection as changed. `apply` may run more than once (the
    /// shared store applies it again to a connection another replica changed meanwhile); what
    /// is kept is its last run's.
    pub async fn update<T, F>(
        &self,
        client_id: &str,
        audit: AuditEntry,
        apply: F,
    ) -> Result<(T, Connection), StoreError>
    where
        T: Send + 'static,
        F: FnMut(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        match &self.place {
            Place::Local(local) => {
                let client_id = client_id.to_owned();
                Self::on_local(local, move |store| store.update(&client_id, audit, apply)).await
            }
            Place::Shared(shared) => shared.update(client_id, audit, apply).await,
        }
    }

    /// Removes a connection, recording `audit`; answers it.
    pub async fn remove(
        &self,
        client_id: &str,
        audit: AuditEntry,
    ) -> Result<Connection, StoreError> {
        match &self.place {
            Place::Local(local) => {
                let client_id = client_id.to_owned();
                Self::on_local(local, move |store| store.remove(&client_id, audit)).await
            }
            Place::Shared(shared) => shared.remove(client_id, audit).await,
        }
    }

    /// Records a change made elsewhere (a redrive of the connection's dead letters), or a
    /// refused attempt ([`Self::refusal_lines`] says which to record).
    pub async fn record(&self, audit: AuditEntry) -> Result<(), StoreError> {
        match &self.place {
            Place::Local(local) => Self::on_local(local, move |store| store.record(audit)).await,
            Place::Shared(shared) => shared.record(audit).await,
        }
    }

    /// Records each of `lines`, in order.
    pub async fn record_all(&self, lines: Vec<AuditEntry>) -> Result<(), StoreError> {
        for line in lines {
            self.record(line).await?;
        }
        Ok(())
    }

    /// The lines to record for a refused admin attempt `entry` ([`Refusals::lines`]).
    pub fn refusal_lines(&self, entry: AuditEntry) -> Vec<AuditEntry> {
        self.refusals.lines(entry)
    }

    /// The sums of refusals counted in a minute that is over by now (none while it lasts).
    pub fn refusal_sums_due(&self) -> Vec<AuditEntry> {
        self.refusals.sums_due(self.clock.now())
    }

    /// A page of the workspace's audit log: at most `limit` entries, newest first, of those
    /// older than the cursor `before` (a page's `next`; the newest when `None`).
    pub async fn audit(
        &self,
        workspace: &str,
        limit: usize,
        before: Option<u64>,
    ) -> Result<AuditPage, StoreError> {
        match &self.place {
            Place::Local(local) => {
                let workspace = workspace.to_owned();
                Self::on_local(local, move |store| store.audit(&workspace, limit, before)).await
            }
            Place::Shared(shared) => shared.audit(workspace, limit, before).await,
        }
    }
}
