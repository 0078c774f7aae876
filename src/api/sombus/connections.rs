//! A connection's life beyond its credentials: creating one makes its queue (FIFO by default,
//! ordered per correlation id) and dead-letter queue (after the attempt limit); removing one
//! deletes both, then its record. The credential steps themselves live in
//! [`crate::credentials::oauth`]; this module joins them to the core's queues, and runs the
//! store's file work on the blocking pool ([`ConnectionStore::run`]).
//!
//! A create is crash-consistent: its record is written first, marked as being created (it gets
//! no token and reads nothing), then its queues are made, then the mark is cleared. A create
//! that never finishes (its process died, or the store refused the last step) is undone: its
//! queues deleted, its record removed, `connection.create_undone` in the audit log. That happens
//! when the gateway starts (every such record, when the store is in the embedded engine's data
//! directory, which one process holds; else those [`ABANDONED_AFTER`] old), then once a minute
//! and on admin requests for those [`ABANDONED_AFTER`] old.
//!
//! Client ids an admin chooses are qualified by the workspace (`{workspace}.{chosen}`), so two
//! workspaces never want the same id and a refusal never tells one about another's ids;
//! generated ids are random. In a workspace's admin routes `{c}` may be the chosen part alone.

use super::SombusState;
use super::error::{SombusError, admin_rule};
use crate::core::access::{Caller, Principal};
use crate::core::model::{QueueSettings, RedriveStatus};
use crate::core::{ErrorKind, GatewayError};
use crate::credentials::admin_keys::AdminKey;
use crate::credentials::oauth::connection::{
    IssuedSecret, WORKSPACE_SEPARATOR, qualified_client_id,
};
use crate::credentials::oauth::store::BUSY_RETRY;
use crate::credentials::oauth::{
    AuditEntry, Connection, ConnectionStatus, ConnectionStore, Role, StoreError,
};
use axum::http::StatusCode;
use std::sync::Arc;
use std::time::Duration;

/// What every connection's queue name starts with: the core's reserved prefix, so only the
/// connection's own callers reach its queues (no `*` grant of another API does).
const QUEUE_PREFIX: &str = "sqsgw_sb_";
/// The longest workspace id (a UUID fits); with the longest client id (25) and the `_` separators
/// (which no id contains, so no two connections' queue names can meet), a name has at most
/// 9 + 36 + 1 + 25 + 4 + 5 = 80 characters, SQS's limit.
const MAX_WORKSPACE_LEN: usize = 36;
/// The least attempt limit (SQS's `maxReceiveCount`).
pub(super) const MIN_ATTEMPT_LIMIT: u32 = 1;
/// The greatest attempt limit.
pub(super) const MAX_ATTEMPT_LIMIT: u32 = 1000;
/// A new connection's attempt limit unless it asks for another.
pub(super) const DEFAULT_ATTEMPT_LIMIT: u32 = 5;
/// The longest connection name, in characters.
pub(super) const MAX_NAME_CHARS: usize = 256;
/// How long a delivery stays hidden by default (the pull API passes its own on every receive).
const DEFAULT_VISIBILITY: u32 = 60;
/// Retention of the connection's queues: SQS's longest, 14 days.
const RETENTION_SECONDS: u32 = crate::core::sqs_limits::MAX_RETENTION_SECONDS;
/// The longest a create waits for its queues before it is undone.
const CREATE_WITHIN: Duration = Duration::from_secs(60);
/// A record still being created this long after its creation belongs to a create that will
/// never finish (longer than [`CREATE_WITHIN`], with room for clocks apart between replicas).
pub(super) const ABANDONED_AFTER: chrono::TimeDelta = chrono::TimeDelta::minutes(3);
/// Who the audit log names for the undoing of an abandoned create.
const RECOVERY_ACTOR: &str = "gateway:recovery";
/// How often the gateway looks for abandoned creates (and writes the sums of refused admin
/// attempts of a minute that is over).
const UPKEEP_EVERY: Duration = Duration::from_secs(60);

/// A connection to create.
#[derive(Debug, Clone)]
pub(super) struct NewConnection {
    pub client_id: Option<String>,
    pub name: Option<String>,
    pub role: Role,
    pub fifo: bool,
    pub attempt_limit: u32,
    pub tier: String,
}

/// Who an audit entry names.
#[derive(Debug, Clone, Copy)]
pub(super) enum Actor<'a> {
    /// An admin key: its name and id.
    Key(&'a AdminKey),
    /// The gateway itself (`gateway:…`).
    Gateway(&'a str),
}

/// Whether a workspace id is one this gateway can hold: 1 to 36 letters, digits or `-`.
pub(super) fn valid_workspace(workspace: &str) -> bool {
    !workspace.is_empty()
        && workspace.len() <= MAX_WORKSPACE_LEN
        && workspace
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
}

/// The connection's queue and dead-letter queue, of its workspace and its client id's local part
/// (the id without its workspace).
fn queue_names(workspace: &str, local_id: &str, fifo: bool) -> (String, String) {
    let suffix = if fifo { ".fifo" } else { "" };
    (
        format!("{QUEUE_PREFIX}{workspace}_{local_id}{suffix}"),
        format!("{QUEUE_PREFIX}{workspace}_{local_id}_dlq{suffix}"),
    )
}

/// The workspace's connection (made whole) that a path's `{c}` names: its client id, or the part
/// an admin chose of one of the workspace's ids.
async fn resolve(
    store: &ConnectionStore,
    workspace: &str,
    client_id: &str,
) -> Result<Option<Connection>, StoreError> {
    let ours = |connection: &Connection| connection.workspace == workspace && !connection.creating;
    if let Some(connection) = store.get(client_id).await?.filter(ours) {
        return Ok(Some(connection));
    }
    if client_id.contains(WORKSPACE_SEPARATOR) {
        return Ok(None);
    }
    Ok(store
        .get(&qualified_client_id(workspace, client_id))
        .await?
        .filter(ours))
}

/// A store refusal in the admin API's rules.
pub(super) fn store_error(error: StoreError) -> SombusError {
    let unavailable = |retry_after: Duration, detail: String| {
        SombusError::admin(
            GatewayError::new(
                ErrorKind::Unavailable { retry_after },
                "the credential store is unavailable",
            )
            .with_source(detail),
        )
    };
    match error {
        StoreError::NotFound => SombusError::new(
            StatusCode::NOT_FOUND,
            admin_rule::NOT_FOUND,
            "no such connection in this workspace",
        ),
        StoreError::Exists => SombusError::new(
            StatusCode::CONFLICT,
            admin_rule::CONFLICT,
            "a connection with that client id exists (or is being created)",
        ),
        StoreError::NotApplicable(why) => {
            SombusError::new(StatusCode::CONFLICT, admin_rule::CONFLICT, why)
        }
        StoreError::BadCursor => SombusError::new(
            StatusCode::BAD_REQUEST,
            admin_rule::BAD_REQUEST,
            "cursor must be a next_cursor this audit log gave",
        ),
        StoreError::Busy => unavailable(BUSY_RETRY, StoreError::Busy.to_string()),
        StoreError::Io(detail) | StoreError::Lost(detail) => {
            unavailable(super::error::UNAVAILABLE_RETRY, detail)
        }
    }
}

fn internal(what: &str, error: impl std::fmt::Display) -> SombusError {
    SombusError::admin(GatewayError::internal(format!("{what}: {error}")))
}

impl SombusState {
    /// The credential store (readiness watches it).
    pub fn credential_store(&self) -> Arc<ConnectionStore> {
        Arc::clone(self.check.store())
    }

    /// The core caller an admin key is for the queues of one connection.
    fn admin_caller(actor: &AdminKey, queues: &[&str]) -> Caller {
        Connection::manager(Principal::AdminKey(actor.name.clone()), queues)
    }

    /// An audit entry of a change by `actor` (an admin key, or the gateway's own `actor`).
    pub(super) fn audit(
        &self,
        actor: Actor<'_>,
        workspace: &str,
        client_id: &str,
        action: &str,
        detail: String,
    ) -> AuditEntry {
        let (actor, actor_key) = match actor {
            Actor::Key(key) => (key.name.as_str(), key.id.as_str()),
            Actor::Gateway(name) => (name, ""),
        };
        AuditEntry {
            at: self.clock.now(),
            workspace: workspace.to_owned(),
            actor: actor.to_owned(),
            actor_key: actor_key.to_owned(),
            action: action.to_owned(),
            client_id: client_id.to_owned(),
            detail,
            ..AuditEntry::default()
        }
    }

    /// The workspace's connection `client_id` (or the chosen part of one of its ids), or 404
    /// (also while it is being created).
    pub(super) async fn connection_of(
        &self,
        workspace: &str,
        client_id: &str,
    ) -> Result<Connection, SombusError> {
        self.undo_abandoned().await;
        resolve(self.check.store(), workspace, client_id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| store_error(StoreError::NotFound))
    }

    /// The workspace's connections (made whole: not those being created).
    pub(super) async fn connections_of(
        &self,
        workspace: &str,
    ) -> Result<Vec<Connection>, SombusError> {
        self.undo_abandoned().await;
        let owner = workspace.to_owned();
        let mut connections = self.check.store().list(&owner).await.map_err(store_error)?;
        connections.retain(|connection| !connection.creating);
        Ok(connections)
    }

    /// Applies a credential step to a connection of the workspace, audited; this replica
    /// forgets what it had read of the connection at once (others within the recheck time).
    pub(super) async fn change<T: Send + 'static>(
        &self,
        actor: &AdminKey,
        workspace: &str,
        client_id: &str,
        action: &str,
        mut apply: impl FnMut(&mut Connection) -> Result<(T, String), StoreError> + Send + 'static,
    ) -> Result<(T, Connection), SombusError> {
        // The workspace must own it (a 404 for another's, as for a missing one).
        let client_id = self.connection_of(workspace, client_id).await?.client_id;
        let client_id = client_id.as_str();
        let audit = self.audit(
            Actor::Key(actor),
            workspace,
            client_id,
            action,
            String::new(),
        );
        let (client, owner) = (client_id.to_owned(), workspace.to_owned());
        let result = self
            .check
            .store()
            .update(&client, audit, move |connection| {
                if connection.workspace != owner || connection.creating {
                    return Err(StoreError::NotFound);
                }
                apply(connection)
            })
            .await;
        self.check.forget(client_id);
        let ((answer, detail), connection) = result.map_err(store_error)?;
        if !detail.is_empty() {
            tracing::info!(client_id, action, detail, "connection changed");
        }
        Ok((answer, connection))
    }

    /// Creates a connection (see the module's doc), as a task of its own: a client that goes
    /// away doesn't cut the create short.
    pub(super) async fn create_connection(
        self: &Arc<Self>,
        actor: AdminKey,
        workspace: String,
        new: NewConnection,
    ) -> Result<(Connection, IssuedSecret), SombusError> {
        let state = Arc::clone(self);
        tokio::spawn(async move { state.make_connection(&actor, &workspace, new).await })
            .await
            .map_err(|error| internal("the create's task", error))?
    }

    /// The record first, marked as being created (a second create of the same client id stops
    /// there, before any queue), then its queues, then the mark cleared; a failure undoes both.
    async fn make_connection(
        &self,
        actor: &AdminKey,
        workspace: &str,
        new: NewConnection,
    ) -> Result<(Connection, IssuedSecret), SombusError> {
        if !self.tiers.contains_key(&new.tier) {
            return Err(SombusError::new(
                StatusCode::BAD_REQUEST,
                admin_rule::BAD_REQUEST,
                "tier is not one of the configured tiers",
            ));
        }
        self.undo_abandoned().await;
        let (connection, secret) = self.new_record(workspace, new)?;
        let audit = self.audit(
            Actor::Key(actor),
            workspace,
            &connection.client_id,
            "connection.create",
            format!(
                "queue {}; secret {} issued",
                connection.queue, secret.serial
            ),
        );
        let record = connection.clone();
        self.check
            .store()
            .create(record, audit)
            .await
            .map_err(store_error)?;
        self.check.forget(&connection.client_id);
        let made = tokio::time::timeout(CREATE_WITHIN, self.create_queues(actor, &connection))
            .await
            .unwrap_or_else(|_| {
                Err(SombusError::admin(GatewayError::unavailable(
                    super::error::UNAVAILABLE_RETRY,
                )))
            });
        if let Err(error) = made {
            self.undo_create(
                &connection,
                Actor::Key(actor),
                "its queues could not be made",
            )
            .await;
            return Err(error);
        }
        let finished = self
            .check
            .store()
            .finish_create(&connection.client_id, &connection.instance)
            .await;
        self.check.forget(&connection.client_id);
        match finished {
            Ok(finished) => Ok((finished, secret)),
            Err(error) => {
                self.undo_create(
                    &connection,
                    Actor::Key(actor),
                    "it could not be marked made",
                )
                .await;
                Err(store_error(error))
            }
        }
    }

    /// A new connection's record, being created, and its first secret.
    fn new_record(
        &self,
        workspace: &str,
        new: NewConnection,
    ) -> Result<(Connection, IssuedSecret), SombusError> {
        // A chosen id carries its workspace; a generated one is random.
        let (client_id, local_id) = match new.client_id {
            Some(chosen) => (qualified_client_id(workspace, &chosen), chosen),
            None => {
                let generated = format!("c{}", &uuid::Uuid::new_v4().simple().to_string()[..20]);
                (generated.clone(), generated)
            }
        };
        let (queue, dead_letter_queue) = queue_names(workspace, &local_id, new.fifo);
        let now = self.clock.now();
        let mut connection = Connection {
            workspace: workspace.to_owned(),
            client_id: client_id.clone(),
            instance: uuid::Uuid::new_v4().simple().to_string(),
            name: new.name.unwrap_or_else(|| local_id.clone()),
            role: new.role,
            queue,
            dead_letter_queue: Some(dead_letter_queue),
            fifo: new.fifo,
            attempt_limit: new.attempt_limit,
            tier: new.tier,
            status: ConnectionStatus::Active,
            creating: true,
            credential_version: 1,
            secret: None,
            previous_secret: None,
            secrets_issued: 0,
            created_at: now,
        };
        let secret = connection
            .issue_secret(now)
            .map_err(|why| store_error(StoreError::NotApplicable(why.0)))?;
        Ok((connection, secret))
    }

    /// At the start (before the gateway serves): undoes the creates a crash left. `exclusive`
    /// when no other process can be making connections of this store (it lives in the embedded
    /// engine's data directory, which one process holds): every record being created is then a
    /// crash's; else only those [`ABANDONED_AFTER`] old are surely so (a replica sharing the
    /// directory may be making the others; [`Self::upkeep`] looks again every minute).
    pub async fn recover_at_start(&self, exclusive: bool) {
        let cutoff = if exclusive {
            self.clock.now() + chrono::TimeDelta::days(1)
        } else {
            self.clock.now() - ABANDONED_AFTER
        };
        self.undo_abandoned_before(cutoff).await;
    }

    /// Until the gateway shuts down: drops this replica's copy of each connection another
    /// replica changes in a shared store, as soon as it hears of it.
    pub async fn follow_changes(self: Arc<Self>) {
        let changed = |client_id: Option<&str>| match client_id {
            Some(client_id) => self.check.forget(client_id),
            None => self.check.forget_all(),
        };
        self.check
            .store()
            .follow(changed, self.gateway.shutdown_started())
            .await;
    }

    /// Until the gateway shuts down, once a minute: undoes abandoned creates and records the
    /// sums of refused admin attempts of a minute that is over.
    pub async fn upkeep(self: Arc<Self>) {
        loop {
            tokio::select! {
                () = tokio::time::sleep(UPKEEP_EVERY) => {}
                () = self.gateway.shutdown_started() => return,
            }
            self.undo_abandoned().await;
            self.record_refusal_sums().await;
        }
    }

    /// Undoes the creates that never finished: every record still being created
    /// [`ABANDONED_AFTER`] after its creation (a crash, or a store that refused the last step).
    async fn undo_abandoned(&self) {
        self.undo_abandoned_before(self.clock.now() - ABANDONED_AFTER)
            .await;
    }

    /// Undoes every create still under way that began before `cutoff`.
    async fn undo_abandoned_before(&self, cutoff: chrono::DateTime<chrono::Utc>) {
        let abandoned = self.check.store().abandoned(cutoff).await;
        let abandoned = match abandoned {
            Ok(abandoned) => abandoned,
            Err(error) => {
                tracing::warn!(%error, "could not look for creates that never finished");
                return;
            }
        };
        for connection in abandoned {
            tracing::warn!(
                client_id = %connection.client_id,
                workspace = %connection.workspace,
                "undoing a connection's create that never finished"
            );
            self.undo_create(
                &connection,
                Actor::Gateway(RECOVERY_ACTOR),
                "its create never finished",
            )
            .await;
        }
    }

    /// Undoes a create that did not finish: deletes whatever of its queues exist, then removes
    /// its record with `connection.create_undone` in the audit log. A queue that can't be
    /// deleted keeps the record (being created) for a later undo.
    async fn undo_create(&self, connection: &Connection, actor: Actor<'_>, why: &str) {
        let mut queues = vec![connection.queue.as_str()];
        queues.extend(connection.dead_letter_queue.as_deref());
        let caller = Connection::manager(Principal::System, &queues);
        if !self.delete_queues(&caller, &queues).await {
            return;
        }
        let audit = self.audit(
            actor,
            &connection.workspace,
            &connection.client_id,
            "connection.create_undone",
            why.to_owned(),
        );
        let undone = self
            .check
            .store()
            .undo_create(&connection.client_id, &connection.instance, audit)
            .await;
        self.check.forget(&connection.client_id);
        match undone {
            // Finished or undone elsewhere meanwhile.
            Ok(_) | Err(StoreError::NotFound) => {}
            Err(error) => {
                tracing::error!(%error, client_id = %connection.client_id, "a half-made connection's record stays; a later request undoes it");
            }
        }
    }

    /// Makes the connection's dead-letter queue, then its queue; a failure deletes what was made.
    async fn create_queues(
        &self,
        actor: &AdminKey,
        connection: &Connection,
    ) -> Result<(), SombusError> {
        let queue = connection.queue.as_str();
        let dead_letter_queue = connection.dead_letter_queue.as_deref().unwrap_or_default();
        let caller = Self::admin_caller(actor, &[queue, dead_letter_queue]);
        let base = QueueSettings {
            visibility_timeout_seconds: Some(DEFAULT_VISIBILITY),
            retention_seconds: Some(RETENTION_SECONDS),
            content_based_deduplication: connection.fifo.then_some(true),
            ..QueueSettings::default()
        };
        self.gateway
            .create_queue(&caller, dead_letter_queue, &base)
            .await
            .map_err(SombusError::admin)?;
        let settings = QueueSettings {
            dead_letter: Some((dead_letter_queue.to_owned(), connection.attempt_limit)),
            ..base
        };
        if let Err(error) = self.gateway.create_queue(&caller, queue, &settings).await {
            self.delete_queues(&caller, &[dead_letter_queue]).await;
            return Err(SombusError::admin(error));
        }
        Ok(())
    }

    /// Removes a connection: its queues first (a backend that fails leaves everything as it
    /// was, to retry), then its record and credentials.
    pub(super) async fn remove_connection(
        &self,
        actor: &AdminKey,
        workspace: &str,
        client_id: &str,
    ) -> Result<Connection, SombusError> {
        let connection = self.connection_of(workspace, client_id).await?;
        let client_id = connection.client_id.as_str();
        let mut queues = vec![connection.queue.as_str()];
        queues.extend(connection.dead_letter_queue.as_deref());
        let caller = Self::admin_caller(actor, &queues);
        for queue in &queues {
            match self.gateway.delete_queue(&caller, queue).await {
                // Deleted before (an earlier remove that failed half-way).
                Err(error) if error.kind == ErrorKind::QueueNotFound => {}
                Err(error) => return Err(SombusError::admin(error)),
                Ok(()) => {}
            }
        }
        let audit = self.audit(
            Actor::Key(actor),
            workspace,
            client_id,
            "connection.remove",
            format!("queues {} deleted", queues.join(", ")),
        );
        let removed = self
            .check
            .store()
            .remove(client_id, audit)
            .await
            .map_err(store_error);
        self.check.forget(client_id);
        removed
    }

    /// Moves the connection's dead letters back to its queue; answers the task's handle.
    pub(super) async fn redrive(
        &self,
        actor: &AdminKey,
        connection: &Connection,
    ) -> Result<String, SombusError> {
        let Some(dead_letter_queue) = &connection.dead_letter_queue else {
            return Err(store_error(StoreError::NotApplicable(
                "the connection has no dead-letter queue",
            )));
        };
        let caller = Self::admin_caller(actor, &[&connection.queue, dead_letter_queue]);
        let under_way = || {
            SombusError::new(
                StatusCode::CONFLICT,
                admin_rule::CONFLICT,
                "a redrive of this connection's dead letters is under way; wait for it to end",
            )
        };
        // One task at a time per dead-letter queue: a running one is a conflict, whichever backend
        // (SQS answers a second task in its own terms). A backend that can't list tasks still
        // gets to start one.
        let tasks = self.gateway.list_redrives(&caller, dead_letter_queue, 10);
        let running = match tasks.await {
            Ok(tasks) => tasks
                .iter()
                .any(|task| task.status == RedriveStatus::Running),
            Err(error) if error.kind == ErrorKind::Unsupported => false,
            Err(error) => return Err(SombusError::admin(error)),
        };
        if running {
            return Err(under_way());
        }
        self.gateway
            .start_redrive(&caller, dead_letter_queue, Some(&connection.queue), None)
            .await
            .map_err(|error| match error.kind {
                // The request names only the connection's own queues: what the backend refuses is
                // the state they are in (a task started in between).
                ErrorKind::InvalidRequest => under_way(),
                _ => SombusError::admin(error),
            })
    }

    /// Deletes queues made for a connection that could not be finished (those that don't exist
    /// are fine); answers whether none is left behind (failures are logged).
    async fn delete_queues(&self, caller: &Caller, queues: &[&str]) -> bool {
        let mut deleted = true;
        for queue in queues {
            match self.gateway.delete_queue(caller, queue).await {
                Ok(()) => {}
                Err(error) if error.kind == ErrorKind::QueueNotFound => {}
                Err(error) => {
                    tracing::warn!(queue, error = %error.message, "could not delete a half-made connection's queue");
                    deleted = false;
                }
            }
        }
        deleted
    }
}
