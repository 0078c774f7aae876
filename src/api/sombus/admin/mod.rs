//! The admin API: connections of a workspace and their credentials, behind admin keys (each
//! scoped to workspaces, with a role), audited. The key is checked before a body is read.
//!
//! | route (under `/v1/admin/workspaces/{t}`) | role | does |
//! | --- | --- | --- |
//! | `GET /connections`, `GET /connections/{c}`, `GET /audit?limit&cursor` | viewer | read |
//! | `POST /connections` | admin | create (queues, first secret) |
//! | `DELETE /connections/{c}` | admin | remove (queues, credentials) |
//! | `POST /connections/{c}/revoke`, `…/restore` | admin | revoke / restore the connection |
//! | `POST /connections/{c}/secret` | developer | get client secret (when it has none) |
//! | `POST /connections/{c}/secret/rotate` `{"overlap"}` | developer | rotate |
//! | `POST /connections/{c}/secret/stop-old` | developer | stop old secret now |
//! | `POST /connections/{c}/secret/revoke` | developer | revoke secret |
//! | `POST /connections/{c}/redrive` | developer | dead letters back to the queue |

use super::connections::{Actor, valid_workspace};
use super::error::{SombusError, admin_rule};
use super::wire::{
    self, AuditPage, ConnectionList, ConnectionView, IssuedSecretAnswer, RedriveStarted, SecretUrls,
};
use super::{BODY_LIMIT, SombusState};
use crate::api::common::read_body;
use crate::core::access::Principal;
use crate::core::request_scope;
use crate::credentials::admin_keys::{AdminKey, AdminRole};
use crate::credentials::key_book;
use crate::credentials::oauth::check::is_client_id;
use crate::credentials::oauth::connection::{IssuedSecret, NotApplicable};
use crate::credentials::oauth::store::REFUSED;
use crate::credentials::oauth::{AuditEntry, Connection, ConnectionStatus, StoreError};
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::sync::Arc;

pub(super) mod audit;
pub(super) mod secrets;

use audit::audit;
use secrets::{get_secret, revoke_secret, rotate_secret, stop_old_secret};

/// A credential step without a new secret.
#[derive(Debug, Clone, Copy)]
pub(super) enum Step {
    StopOldSecret,
    RevokeSecret,
    Revoke,
    Restore,
}

const AUDIT_DEFAULT: usize = 100;
const AUDIT_MAX: usize = 1000;

/// The admin routes, each documented by its handler's `utoipa::path`.
pub(super) fn routes() -> axum::Router<Arc<SombusState>> {
    const BASE: &str = "/v1/admin/workspaces/{workspace}";
    axum::Router::new()
        .route(&format!("{BASE}/connections"), get(list).post(create))
        .route(
            &format!("{BASE}/connections/{{client}}"),
            get(show).delete(remove),
        )
        .route(
            &format!("{BASE}/connections/{{client}}/secret"),
            post(get_secret),
        )
        .route(
            &format!("{BASE}/connections/{{client}}/secret/rotate"),
            post(rotate_secret),
        )
        .route(
            &format!("{BASE}/connections/{{client}}/secret/stop-old"),
            post(stop_old_secret),
        )
        .route(
            &format!("{BASE}/connections/{{client}}/secret/revoke"),
            post(revoke_secret),
        )
        .route(
            &format!("{BASE}/connections/{{client}}/revoke"),
            post(revoke),
        )
        .route(
            &format!("{BASE}/connections/{{client}}/restore"),
            post(restore),
        )
        .route(
            &format!("{BASE}/connections/{{client}}/redrive"),
            post(redrive),
        )
        .route(&format!("{BASE}/audit"), get(audit))
}

fn refusal(status: StatusCode, rule: &'static str, message: &str) -> SombusError {
    SombusError::new(status, rule, message)
}

impl SombusState {
    /// The admin key of the request, if it manages `workspace` with at least `role`.
    fn admin(
        &self,
        headers: &HeaderMap,
        workspace: &str,
        role: AdminRole,
    ) -> Result<AdminKey, SombusError> {
        let keys = self.admin_keys.current();
        let presented = crate::api::common::bearer_token(headers);
        let key = presented
            .and_then(|presented| keys.verify(presented))
            .map(|key| AdminKey::clone(key))
            .inspect(|key| request_scope::note_caller(&Principal::AdminKey(key.name.clone())))
            .ok_or_else(|| {
                request_scope::note_refused("admin_key", presented.and_then(key_book::key_id));
                refusal(
                    StatusCode::UNAUTHORIZED,
                    admin_rule::UNAUTHENTICATED,
                    "send an admin key as `Authorization: Bearer <key>`",
                )
            })?;
        if !key.manages(workspace) {
            return Err(refusal(
                StatusCode::FORBIDDEN,
                admin_rule::FORBIDDEN,
                "the admin key does not manage this workspace",
            ));
        }
        // A key of every workspace (`*`) still names one this gateway can hold.
        if !valid_workspace(workspace) {
            return Err(refusal(
                StatusCode::BAD_REQUEST,
                admin_rule::BAD_REQUEST,
                "the workspace id must be 1 to 36 letters, digits or `-`",
            ));
        }
        if key.role < role {
            return Err(SombusError::new(
                StatusCode::FORBIDDEN,
                admin_rule::FORBIDDEN,
                format!("this needs the {} role or above", role.as_str()),
            ));
        }
        Ok(key)
    }

    /// The base URL shown with a secret.
    fn base_url(&self, headers: &HeaderMap) -> String {
        self.public_url.for_request(headers, "127.0.0.1")
    }
}

fn path_error(_: PathRejection) -> SombusError {
    refusal(
        StatusCode::BAD_REQUEST,
        admin_rule::BAD_REQUEST,
        "the path is not valid: its segments must be UTF-8",
    )
}

/// A new secret, shown once, with the connection's URLs filled in.
fn secret_answer(base: &str, connection: &Connection, secret: &IssuedSecret) -> Response {
    let pull = format!(
        "{base}/v1/tenants/{}/consumers/{}",
        connection.workspace, connection.client_id
    );
    let answer = IssuedSecretAnswer {
        client_id: connection.client_id.clone(),
        client_secret: secret.secret.clone(),
        credential_version: connection.credential_version,
        shown_once: "only a hash is kept: a lost secret can't be shown again, only rotated",
        urls: SecretUrls {
            token: format!("{base}/v1/oauth/token"),
            messages: format!("{pull}/messages"),
            ack: format!("{pull}/ack"),
            nack: format!("{pull}/nack"),
            skills: format!("{pull}/skills"),
        },
    };
    let mut response = (StatusCode::CREATED, Json(answer)).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

#[utoipa::path(
    get,
    path = "/v1/admin/workspaces/{workspace}/connections",
    operation_id = "listConnections",
    tag = "admin",
    summary = "List the workspace's connections",
    description = "Every connection of the workspace (viewer role or above); never a secret.",
    params(wire::WorkspacePath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The workspace's connections.", body = ConnectionList),
        super::wire::AdminRefusals,
    )
)]
async fn list(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<ConnectionList>, SombusError> {
    let Path(workspace) = path.map_err(path_error)?;
    state.admin_for(
        &headers,
        &workspace,
        AdminRole::Viewer,
        "connection.list",
        "",
    )?;
    let now = state.clock.now();
    let connections = state
        .connections_of(&workspace)
        .await?
        .iter()
        .map(|connection| ConnectionView::new(connection, now))
        .collect();
    Ok(Json(ConnectionList { connections }))
}

#[utoipa::path(
    get,
    path = "/v1/admin/workspaces/{workspace}/connections/{client}",
    operation_id = "showConnection",
    tag = "admin",
    summary = "Show a connection",
    description = "One connection of the workspace (viewer role or above); never a secret.",
    params(wire::ConnectionPath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The connection.", body = ConnectionView),
        (status = 404, body = wire::AdminRefusal),
        super::wire::AdminRefusals,
    )
)]
async fn show(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<ConnectionView>, SombusError> {
    let Path((workspace, client)) = path.map_err(path_error)?;
    state.admin_for(
        &headers,
        &workspace,
        AdminRole::Viewer,
        "connection.show",
        &client,
    )?;
    let connection = state.connection_of(&workspace, &client).await?;
    Ok(Json(ConnectionView::new(&connection, state.clock.now())))
}

#[utoipa::path(
    post,
    path = "/v1/admin/workspaces/{workspace}/connections",
    operation_id = "createConnection",
    tag = "admin",
    summary = "Create a connection",
    description = "Creates a connection (admin role): its queue (FIFO by default, ordered per \
        correlation id), its dead-letter queue (after the attempt limit) and its first client \
        secret, shown once with the connection's URLs filled in. The body may be empty.",
    params(wire::WorkspacePath),
    request_body(content = Option<wire::NewConnectionRequest>, content_type = "application/json"),
    security(("admin_key" = [])),
    responses(
        (status = 201, description = "The connection's first secret, shown once.", body = IssuedSecretAnswer,
            headers(
                ("Location" = String, description = "The new connection's admin URL."),
                ("Cache-Control" = String, description = "`no-store`: the answer holds a secret."),
            )),
        (status = 409, body = wire::AdminRefusal),
        super::wire::AdminRefusals,
    )
)]
async fn create(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, SombusError> {
    let Path(workspace) = path.map_err(path_error)?;
    let actor = state.admin_for(
        &headers,
        &workspace,
        AdminRole::Admin,
        "connection.create",
        "",
    )?;
    let body = read_body(body, BODY_LIMIT)
        .await
        .map_err(SombusError::admin)?;
    let asked = wire::parse_new_connection(&body).map_err(SombusError::admin)?;
    let (connection, secret) = state
        .create_connection(actor, workspace.clone(), asked)
        .await?;
    let mut response = secret_answer(&state.base_url(&headers), &connection, &secret);
    if let Ok(location) = header::HeaderValue::from_str(&format!(
        "/v1/admin/workspaces/{workspace}/connections/{}",
        connection.client_id
    )) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

#[utoipa::path(
    delete,
    path = "/v1/admin/workspaces/{workspace}/connections/{client}",
    operation_id = "removeConnection",
    tag = "admin",
    summary = "Remove a connection",
    description = "Removes a connection (admin role): deletes its queues, then its credentials; \
        its tokens stop reading within about 30 seconds.",
    params(wire::ConnectionPath),
    security(("admin_key" = [])),
    responses(
        (status = 204, description = "Removed."),
        (status = 404, body = wire::AdminRefusal),
        super::wire::AdminRefusals,
    )
)]
async fn remove(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<StatusCode, SombusError> {
    let Path((workspace, client)) = path.map_err(path_error)?;
    let actor = state.admin_for(
        &headers,
        &workspace,
        AdminRole::Admin,
        "connection.remove",
        &client,
    )?;
    state.remove_connection(&actor, &workspace, &client).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post,
    path = "/v1/admin/workspaces/{workspace}/connections/{client}/revoke",
    operation_id = "revokeConnection",
    tag = "admin",
    summary = "Revoke the connection",
    description = "Stops new tokens at once and the pull API within about 30 seconds (admin role); its queue is kept, and restoring it lets the same secret read again. 409 when it is revoked already.",
    params(wire::ConnectionPath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The connection as changed.", body = ConnectionView),
        (status = 404, body = wire::AdminRefusal),
        (status = 409, body = wire::AdminRefusal),
        super::wire::AdminRefusals,
    )
)]
async fn revoke(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<ConnectionView>, SombusError> {
    step(&state, path, &headers, Step::Revoke).await
}

#[utoipa::path(
    post,
    path = "/v1/admin/workspaces/{workspace}/connections/{client}/restore",
    operation_id = "restoreConnection",
    tag = "admin",
    summary = "Restore the connection",
    description = "Lets a revoked connection get tokens and read again (admin role). 409 when it is not revoked.",
    params(wire::ConnectionPath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The connection as changed.", body = ConnectionView),
        (status = 404, body = wire::AdminRefusal),
        (status = 409, body = wire::AdminRefusal),
        super::wire::AdminRefusals,
    )
)]
async fn restore(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<ConnectionView>, SombusError> {
    step(&state, path, &headers, Step::Restore).await
}

/// A credential step without a new secret: answers the connection as changed.
async fn step(
    state: &SombusState,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: &HeaderMap,
    step: Step,
) -> Result<Json<ConnectionView>, SombusError> {
    type Apply = fn(&mut Connection) -> Result<(), NotApplicable>;
    let (role, action, apply): (AdminRole, &str, Apply) = match step {
        Step::StopOldSecret => (
            AdminRole::Developer,
            "secret.stop_old",
            Connection::stop_old_secret,
        ),
        Step::RevokeSecret => (
            AdminRole::Developer,
            "secret.revoke",
            Connection::revoke_secret,
        ),
        Step::Revoke => (AdminRole::Admin, "connection.revoke", |connection| {
            connection.set_status(ConnectionStatus::Revoked)
        }),
        Step::Restore => (AdminRole::Admin, "connection.restore", |connection| {
            connection.set_status(ConnectionStatus::Active)
        }),
    };
    let Path((workspace, client)) = path.map_err(path_error)?;
    let actor = state.admin_for(headers, &workspace, role, action, &client)?;
    let ((), connection) = state
        .change(&actor, &workspace, &client, action, move |connection| {
            apply(connection).map_err(|why| StoreError::NotApplicable(why.0))?;
            let detail = format!("credential_version {}", connection.credential_version);
            Ok(((), detail))
        })
        .await?;
    Ok(Json(ConnectionView::new(&connection, state.clock.now())))
}

#[utoipa::path(
    post,
    path = "/v1/admin/workspaces/{workspace}/connections/{client}/redrive",
    operation_id = "redriveDeadLetters",
    tag = "admin",
    summary = "Redrive dead letters",
    description = "Moves the messages of the connection's dead-letter queue back to its queue \
        (developer role or above), as a task the backend runs. 409 while an earlier redrive of the \
        connection is under way.",
    params(wire::ConnectionPath),
    security(("admin_key" = [])),
    responses(
        (status = 202, description = "The redrive is under way.", body = RedriveStarted),
        (status = 404, body = wire::AdminRefusal),
        (status = 409, body = wire::AdminRefusal),
        (status = 501, body = wire::AdminRefusal),
        super::wire::AdminRefusals,
    )
)]
async fn redrive(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<(StatusCode, Json<RedriveStarted>), SombusError> {
    let Path((workspace, client)) = path.map_err(path_error)?;
    let actor = state.admin_for(
        &headers,
        &workspace,
        AdminRole::Developer,
        "dead_letters.redrive",
        &client,
    )?;
    let connection = state.connection_of(&workspace, &client).await?;
    let task = state.redrive(&actor, &connection).await?;
    let audit = state.audit(
        Actor::Key(&actor),
        &workspace,
        &connection.client_id,
        "dead_letters.redrive",
        String::new(),
    );
    // The redrive is under way; recording it must not fail the request that started it.
    if let Err(error) = state.check.store().record(audit).await {
        tracing::warn!(%error, "could not record a redrive in the audit log");
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(RedriveStarted { task_handle: task }),
    ))
}

impl SombusState {
    /// [`Self::admin`], recording a refusal (401, 403) in the workspace's audit log: who
    /// (`unknown`, or the key's name and id; never the key), what was attempted (`action`, on
    /// `client_id` when it has the shape of one), `refused` and why.
    fn admin_for(
        &self,
        headers: &HeaderMap,
        workspace: &str,
        role: AdminRole,
        action: &str,
        client_id: &str,
    ) -> Result<AdminKey, SombusError> {
        self.admin(headers, workspace, role).inspect_err(|refused| {
            if matches!(
                refused.status(),
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
            ) && valid_workspace(workspace)
            {
                self.record_refusal(headers, workspace, action, client_id, refused);
            }
        })
    }

    /// Records a refused attempt, at most
    /// [`REFUSALS_PER_MINUTE`](crate::credentials::oauth::store::REFUSALS_PER_MINUTE) a minute one by one (the
    /// others are counted and summed once the minute is over), off the request's path.
    fn record_refusal(
        &self,
        headers: &HeaderMap,
        workspace: &str,
        action: &str,
        client_id: &str,
        refused: &SombusError,
    ) {
        let keys = self.admin_keys.current();
        let key =
            crate::api::common::bearer_token(headers).and_then(|presented| keys.verify(presented));
        let (actor, actor_key) =
            key.map_or(("unknown", ""), |key| (key.name.as_str(), key.id.as_str()));
        let entry = AuditEntry {
            at: self.clock.now(),
            workspace: workspace.to_owned(),
            actor: actor.to_owned(),
            actor_key: actor_key.to_owned(),
            action: action.to_owned(),
            outcome: REFUSED.to_owned(),
            client_id: if is_client_id(client_id) {
                client_id.to_owned()
            } else {
                String::new()
            },
            detail: format!("{} {}", refused.status().as_u16(), refused.rule()),
            ..AuditEntry::default()
        };
        let lines = self.check.store().refusal_lines(entry);
        self.record_lines(lines);
    }

    /// Records the sums of refusals of a minute that is over, if any.
    pub(super) async fn record_refusal_sums(&self) {
        let lines = self.check.store().refusal_sums_due();
        if lines.is_empty() {
            return;
        }
        if let Err(error) = self.check.store().record_all(lines).await {
            tracing::warn!(%error, "could not record the sums of refused admin attempts in the audit log");
        }
    }

    /// Records `lines` in the audit log, in the background.
    fn record_lines(&self, lines: Vec<AuditEntry>) {
        if lines.is_empty() {
            return;
        }
        let store = Arc::clone(self.check.store());
        tokio::spawn(async move {
            if let Err(error) = store.record_all(lines).await {
                tracing::warn!(%error, "could not record refused admin attempts in the audit log");
            }
        });
    }
}
