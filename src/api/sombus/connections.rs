//! A connection's life beyond its credentials: creating one makes its queue (FIFO by default,
//! ordered per correlation id) and dead-letter queue (after the attempt limit); removing one
//! deletes both, then its record. The credential steps themselves live in
//! [`crate::credentials::oauth`]; this module joins them to the core's queues.

use super::SombusState;
use super::error::{SombusError, admin_rule};
use crate::core::access::{Action, Caller, Grants, Principal};
use crate::core::model::{QueueSettings, RedriveStatus};
use crate::core::{ErrorKind, GatewayError};
use crate::credentials::admin_keys::AdminKey;
use crate::credentials::oauth::connection::IssuedSecret;
use crate::credentials::oauth::{AuditEntry, Connection, ConnectionStatus, Role, StoreError};
use axum::http::StatusCode;
use std::sync::Arc;

/// What every connection's queue name starts with: the core's reserved prefix, so only the
/// connection's own callers reach its queues (no `*` grant of another API does).
const QUEUE_PREFIX: &str = "sqsgw_sb_";
/// The longest workspace id (a UUID fits); with the longest client id (25) and the `_` separators
/// (which no id contains, so no two connections' queue names can meet), a name has at most
/// 9 + 36 + 1 + 25 + 4 + 5 = 80 characters, SQS's limit.
const MAX_WORKSPACE_LEN: usize = 36;
/// The attempt limit's range (SQS's `maxReceiveCount`).
pub(super) const ATTEMPT_LIMITS: std::ops::RangeInclusive<u32> = 1..=1000;
/// How long a delivery stays hidden by default (the pull API passes its own on every receive).
const DEFAULT_VISIBILITY: u32 = 60;
/// Retention of the connection's queues: SQS's longest, 14 days.
const RETENTION_SECONDS: u32 = 1_209_600;

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

/// Whether a workspace id is one this gateway can hold: 1 to 36 letters, digits or `-`.
pub(super) fn valid_workspace(workspace: &str) -> bool {
    !workspace.is_empty()
        && workspace.len() <= MAX_WORKSPACE_LEN
        && workspace
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
}

/// The connection's queue and dead-letter queue.
fn queue_names(workspace: &str, client_id: &str, fifo: bool) -> (String, String) {
    let suffix = if fifo { ".fifo" } else { "" };
    (
        format!("{QUEUE_PREFIX}{workspace}_{client_id}{suffix}"),
        format!("{QUEUE_PREFIX}{workspace}_{client_id}_dlq{suffix}"),
    )
}

fn store_error(error: StoreError) -> SombusError {
    match error {
        StoreError::NotFound => SombusError::new(
            StatusCode::NOT_FOUND,
            admin_rule::NOT_FOUND,
            "no such connection in this workspace",
        ),
        StoreError::Exists => SombusError::new(
            StatusCode::CONFLICT,
            admin_rule::CONFLICT,
            "a connection with that client id exists",
        ),
        StoreError::NotApplicable(why) => {
            SombusError::new(StatusCode::CONFLICT, admin_rule::CONFLICT, why)
        }
        StoreError::Io(detail) => SombusError::admin(
            GatewayError::new(
                ErrorKind::Unavailable {
                    retry_after: super::error::UNAVAILABLE_RETRY,
                },
                "the credential store is unavailable",
            )
            .with_source(detail),
        ),
    }
}

impl SombusState {
    /// The core caller an admin key is for the queues of one connection.
    fn admin_caller(actor: &AdminKey, queues: &[&str]) -> Caller {
        let grants = queues.iter().fold(Grants::none(), |grants, queue| {
            grants.allow(
                queue,
                [Action::ManageQueues, Action::Redrive, Action::Inspect],
            )
        });
        Caller::new(Principal::AdminKey(actor.name.clone()), Arc::new(grants))
    }

    pub(super) fn audit(
        &self,
        actor: &AdminKey,
        workspace: &str,
        client_id: &str,
        action: &str,
        detail: String,
    ) -> AuditEntry {
        AuditEntry {
            at: self.clock.now(),
            workspace: workspace.to_owned(),
            actor: actor.name.clone(),
            action: action.to_owned(),
            client_id: client_id.to_owned(),
            detail,
        }
    }

    /// The workspace's connection `client_id`, or 404.
    pub(super) fn connection_of(
        &self,
        workspace: &str,
        client_id: &str,
    ) -> Result<Connection, SombusError> {
        self.check
            .store()
            .get(client_id)
            .map_err(store_error)?
            .filter(|connection| connection.workspace == workspace)
            .ok_or_else(|| store_error(StoreError::NotFound))
    }

    /// The workspace's connections.
    pub(super) fn connections_of(&self, workspace: &str) -> Result<Vec<Connection>, SombusError> {
        self.check.store().list(workspace).map_err(store_error)
    }

    /// Applies a credential step to a connection of the workspace, audited; this replica
    /// forgets what it had read of the connection at once (others within the recheck time).
    pub(super) fn change<T>(
        &self,
        actor: &AdminKey,
        workspace: &str,
        client_id: &str,
        action: &str,
        apply: impl FnOnce(&mut Connection) -> Result<(T, String), StoreError>,
    ) -> Result<(T, Connection), SombusError> {
        // The workspace must own it (a 404 for another's, as for a missing one).
        self.connection_of(workspace, client_id)?;
        let mut detail = String::new();
        let audit = self.audit(actor, workspace, client_id, action, String::new());
        let result = self.check.store().update(client_id, audit, |connection| {
            if connection.workspace != workspace {
                return Err(StoreError::NotFound);
            }
            let (answer, said) = apply(connection)?;
            detail = said;
            Ok(answer)
        });
        self.check.forget(client_id);
        let (answer, connection) = result.map_err(store_error)?;
        if !detail.is_empty() {
            tracing::info!(client_id, action, detail, "connection changed");
        }
        Ok((answer, connection))
    }

    /// Creates a connection: its record first (so a second create of the same client id stops
    /// there, before any queue), then its queues; a failure undoes both.
    pub(super) async fn create_connection(
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
        let client_id = new
            .client_id
            .unwrap_or_else(|| format!("c{}", &uuid::Uuid::new_v4().simple().to_string()[..20]));
        let (queue, dead_letter_queue) = queue_names(workspace, &client_id, new.fifo);
        let now = self.clock.now();
        let mut connection = Connection {
            workspace: workspace.to_owned(),
            client_id: client_id.clone(),
            instance: uuid::Uuid::new_v4().simple().to_string(),
            name: new.name.unwrap_or_else(|| client_id.clone()),
            role: new.role,
            queue: queue.clone(),
            dead_letter_queue: Some(dead_letter_queue.clone()),
            fifo: new.fifo,
            attempt_limit: new.attempt_limit,
            tier: new.tier,
            status: ConnectionStatus::Active,
            credential_version: 1,
            secret: None,
            previous_secret: None,
            secrets_issued: 0,
            created_at: now,
        };
        let secret = connection
            .issue_secret(now)
            .map_err(|why| store_error(StoreError::NotApplicable(why.0)))?;
        let audit = self.audit(
            actor,
            workspace,
            &client_id,
            "connection.create",
            format!("queue {queue}; secret {} issued", secret.serial),
        );
        self.check
            .store()
            .create(connection.clone(), audit)
            .map_err(store_error)?;
        self.check.forget(&client_id);
        if let Err(error) = self.create_queues(actor, &connection).await {
            let undo = self.audit(
                actor,
                workspace,
                &client_id,
                "connection.create_undone",
                "its queues could not be made".to_owned(),
            );
            if let Err(undo_error) = self.check.store().remove(&client_id, undo) {
                tracing::error!(error = %undo_error, client_id, "a half-made connection's record stays");
            }
            self.check.forget(&client_id);
            return Err(error);
        }
        Ok((connection, secret))
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
        let connection = self.connection_of(workspace, client_id)?;
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
            actor,
            workspace,
            client_id,
            "connection.remove",
            format!("queues {} deleted", queues.join(", ")),
        );
        let removed = self.check.store().remove(client_id, audit);
        self.check.forget(client_id);
        removed.map_err(store_error)
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

    /// Deletes queues made for a connection that could not be finished (best effort, logged).
    async fn delete_queues(&self, caller: &Caller, queues: &[&str]) {
        for queue in queues {
            if let Err(error) = self.gateway.delete_queue(caller, queue).await {
                tracing::warn!(queue, error = %error.message, "could not delete a half-made connection's queue");
            }
        }
    }
}
