//! The admin API: connections of a workspace and their credentials, behind admin keys (each
//! scoped to workspaces, with a role), audited. The key is checked before a body is read.
//!
//! | route (under `/v1/admin/workspaces/{t}`) | role | does |
//! | --- | --- | --- |
//! | `GET /connections`, `GET /connections/{c}`, `GET /audit` | viewer | read |
//! | `POST /connections` | admin | create (queues, first secret) |
//! | `DELETE /connections/{c}` | admin | remove (queues, credentials) |
//! | `POST /connections/{c}/revoke`, `…/restore` | admin | revoke / restore the connection |
//! | `POST /connections/{c}/secret` | developer | get client secret (when it has none) |
//! | `POST /connections/{c}/secret/rotate` `{"overlap"}` | developer | rotate |
//! | `POST /connections/{c}/secret/stop-old` | developer | stop old secret now |
//! | `POST /connections/{c}/secret/revoke` | developer | revoke secret |
//! | `POST /connections/{c}/redrive` | developer | dead letters back to the queue |

use super::connections::{ATTEMPT_LIMITS, NewConnection, valid_workspace};
use super::error::{SombusError, admin_rule};
use super::{BODY_LIMIT, SombusState};
use crate::api::json::{optional_int, parse_object, reject_unknown};
use crate::api::read_body;
use crate::credentials::admin_keys::{AdminKey, AdminRole};
use crate::credentials::oauth::check::is_client_id;
use crate::credentials::oauth::connection::{IssuedSecret, NotApplicable};
use crate::credentials::oauth::{Connection, ConnectionStatus, Role, StoreError};
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};
use std::sync::Arc;

const AUDIT_DEFAULT: usize = 100;
const AUDIT_MAX: usize = 1000;

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
            post(step::<STOP_OLD_SECRET>),
        )
        .route(
            &format!("{BASE}/connections/{{client}}/secret/revoke"),
            post(step::<REVOKE_SECRET>),
        )
        .route(
            &format!("{BASE}/connections/{{client}}/revoke"),
            post(step::<REVOKE>),
        )
        .route(
            &format!("{BASE}/connections/{{client}}/restore"),
            post(step::<RESTORE>),
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
    ) -> Result<&AdminKey, SombusError> {
        let key = crate::api::bearer_token(headers)
            .and_then(|presented| self.admin_keys.verify(presented))
            .ok_or_else(|| {
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
        self.public_url.clone().unwrap_or_else(|| {
            let host = headers
                .get(header::HOST)
                .and_then(|value| value.to_str().ok())
                .unwrap_or("127.0.0.1");
            format!("http://{host}")
        })
    }
}

fn path_error(_: PathRejection) -> SombusError {
    refusal(
        StatusCode::BAD_REQUEST,
        admin_rule::BAD_REQUEST,
        "the path is not valid: its segments must be UTF-8",
    )
}

/// A connection as the admin API shows it: never a secret or its hash.
fn view(connection: &Connection, now: chrono::DateTime<chrono::Utc>) -> Value {
    json!({
        "client_id": connection.client_id,
        "workspace": connection.workspace,
        "name": connection.name,
        "role": connection.role.as_str(),
        "status": match connection.status {
            ConnectionStatus::Active => "active",
            ConnectionStatus::Revoked => "revoked",
        },
        "queue": connection.queue,
        "dead_letter_queue": connection.dead_letter_queue,
        "fifo": connection.fifo,
        "attempt_limit": connection.attempt_limit,
        "tier": connection.tier,
        "credential_version": connection.credential_version,
        "has_secret": connection.secret.is_some(),
        "old_secret_valid_until": connection.overlap_until(now),
        "created_at": connection.created_at,
    })
}

/// A new secret, shown once, with the connection's URLs filled in.
fn secret_answer(base: &str, connection: &Connection, secret: &IssuedSecret) -> Response {
    let pull = format!(
        "{base}/v1/tenants/{}/consumers/{}",
        connection.workspace, connection.client_id
    );
    let mut response = (
        StatusCode::CREATED,
        Json(json!({
            "client_id": connection.client_id,
            "client_secret": secret.secret,
            "credential_version": connection.credential_version,
            "shown_once": "only a hash is kept: a lost secret can't be shown again, only rotated",
            "urls": {
                "token": format!("{base}/v1/oauth/token"),
                "messages": format!("{pull}/messages"),
                "ack": format!("{pull}/ack"),
                "nack": format!("{pull}/nack"),
                "skills": format!("{pull}/skills"),
            },
        })),
    )
        .into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

async fn list(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<Value>, SombusError> {
    let Path(workspace) = path.map_err(path_error)?;
    state.admin(&headers, &workspace, AdminRole::Viewer)?;
    let now = state.clock.now();
    let connections: Vec<Value> = state
        .connections_of(&workspace)?
        .iter()
        .map(|connection| view(connection, now))
        .collect();
    Ok(Json(json!({ "connections": connections })))
}

async fn show(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<Value>, SombusError> {
    let Path((workspace, client)) = path.map_err(path_error)?;
    state.admin(&headers, &workspace, AdminRole::Viewer)?;
    let connection = state.connection_of(&workspace, &client)?;
    Ok(Json(view(&connection, state.clock.now())))
}

async fn create(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, SombusError> {
    let Path(workspace) = path.map_err(path_error)?;
    let actor = state.admin(&headers, &workspace, AdminRole::Admin)?.clone();
    let bad = |message: &str| refusal(StatusCode::BAD_REQUEST, admin_rule::BAD_REQUEST, message);
    if !valid_workspace(&workspace) {
        return Err(bad(
            "the workspace id must be 1 to 36 letters, digits or `-`",
        ));
    }
    let body = read_body(body, BODY_LIMIT)
        .await
        .map_err(SombusError::admin)?;
    let object = parse_object(&body, true).map_err(SombusError::admin)?;
    reject_unknown(
        &object,
        &["client_id", "name", "role", "fifo", "attempt_limit", "tier"],
        "",
    )
    .map_err(SombusError::admin)?;
    let text = |field: &str| -> Result<Option<String>, SombusError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(SombusError::new(
                StatusCode::BAD_REQUEST,
                admin_rule::BAD_REQUEST,
                format!("{field} must be a string"),
            )),
        }
    };
    let client_id = text("client_id")?;
    if client_id.as_deref().is_some_and(|id| !is_client_id(id)) {
        return Err(bad("client_id must be 1 to 25 letters, digits or `-`"));
    }
    let name = text("name")?;
    if name
        .as_deref()
        .is_some_and(|name| name.is_empty() || name.len() > 256)
    {
        return Err(bad("name must be 1 to 256 bytes"));
    }
    let role = match text("role")?.as_deref() {
        None | Some("consumer") => Role::Consumer,
        Some("producer") => Role::Producer,
        Some(_) => return Err(bad("role must be consumer or producer")),
    };
    let fifo = match object.get("fifo") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(fifo)) => *fifo,
        Some(_) => return Err(bad("fifo must be true or false")),
    };
    let attempt_limit = optional_int(
        &object,
        "attempt_limit",
        i64::from(*ATTEMPT_LIMITS.start()),
        i64::from(*ATTEMPT_LIMITS.end()),
    )
    .map_err(SombusError::admin)?
    .unwrap_or(5);
    let tier = text("tier")?.unwrap_or_else(|| super::config::DEFAULT_TIER.to_owned());
    let (connection, secret) = state
        .create_connection(
            &actor,
            &workspace,
            NewConnection {
                client_id,
                name,
                role,
                fifo,
                attempt_limit,
                tier,
            },
        )
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

async fn remove(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<StatusCode, SombusError> {
    let Path((workspace, client)) = path.map_err(path_error)?;
    let actor = state.admin(&headers, &workspace, AdminRole::Admin)?.clone();
    state.remove_connection(&actor, &workspace, &client).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn get_secret(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, SombusError> {
    let Path((workspace, client)) = path.map_err(path_error)?;
    let actor = state.admin(&headers, &workspace, AdminRole::Developer)?;
    let now = state.clock.now();
    let (secret, connection) =
        state.change(actor, &workspace, &client, "secret.get", |connection| {
            let secret = connection
                .issue_secret(now)
                .map_err(|why| StoreError::NotApplicable(why.0))?;
            let detail = format!("secret {} issued", secret.serial);
            Ok((secret, detail))
        })?;
    Ok(secret_answer(
        &state.base_url(&headers),
        &connection,
        &secret,
    ))
}

async fn rotate_secret(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, SombusError> {
    let Path((workspace, client)) = path.map_err(path_error)?;
    let actor = state
        .admin(&headers, &workspace, AdminRole::Developer)?
        .clone();
    let body = read_body(body, BODY_LIMIT)
        .await
        .map_err(SombusError::admin)?;
    let object: Map<String, Value> = parse_object(&body, true).map_err(SombusError::admin)?;
    reject_unknown(&object, &["overlap"], "").map_err(SombusError::admin)?;
    let overlap = match object.get("overlap") {
        None | Some(Value::Null) => chrono::Duration::hours(24),
        Some(Value::String(choice)) => match choice.as_str() {
            "24h" => chrono::Duration::hours(24),
            "3d" => chrono::Duration::days(3),
            "1h" => chrono::Duration::hours(1),
            "none" => chrono::Duration::zero(),
            _ => {
                return Err(refusal(
                    StatusCode::BAD_REQUEST,
                    admin_rule::BAD_REQUEST,
                    "overlap must be 24h (the default), 3d, 1h or none",
                ));
            }
        },
        Some(_) => {
            return Err(refusal(
                StatusCode::BAD_REQUEST,
                admin_rule::BAD_REQUEST,
                "overlap must be a string: 24h, 3d, 1h or none",
            ));
        }
    };
    let now = state.clock.now();
    let (secret, connection) =
        state.change(&actor, &workspace, &client, "secret.rotate", |connection| {
            let secret = connection
                .rotate(overlap, now)
                .map_err(|why| StoreError::NotApplicable(why.0))?;
            let detail = format!(
                "secret {} issued; overlap {} s; credential_version {}",
                secret.serial,
                overlap.num_seconds(),
                connection.credential_version
            );
            Ok((secret, detail))
        })?;
    Ok(secret_answer(
        &state.base_url(&headers),
        &connection,
        &secret,
    ))
}

/// The credential steps without a new secret (the const parameter of [`step`]).
const STOP_OLD_SECRET: u8 = 0;
const REVOKE_SECRET: u8 = 1;
const REVOKE: u8 = 2;
const RESTORE: u8 = 3;

/// A credential step without a new secret: answers the connection as changed.
async fn step<const STEP: u8>(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<Value>, SombusError> {
    type Apply = fn(&mut Connection) -> Result<(), NotApplicable>;
    let (role, action, apply): (AdminRole, &str, Apply) = match STEP {
        STOP_OLD_SECRET => (
            AdminRole::Developer,
            "secret.stop_old",
            Connection::stop_old_secret,
        ),
        REVOKE_SECRET => (
            AdminRole::Developer,
            "secret.revoke",
            Connection::revoke_secret,
        ),
        REVOKE => (AdminRole::Admin, "connection.revoke", |connection| {
            connection.set_status(ConnectionStatus::Revoked)
        }),
        _ => (AdminRole::Admin, "connection.restore", |connection| {
            connection.set_status(ConnectionStatus::Active)
        }),
    };
    let Path((workspace, client)) = path.map_err(path_error)?;
    let actor = state.admin(&headers, &workspace, role)?;
    let ((), connection) = state.change(actor, &workspace, &client, action, |connection| {
        apply(connection).map_err(|why| StoreError::NotApplicable(why.0))?;
        let detail = format!("credential_version {}", connection.credential_version);
        Ok(((), detail))
    })?;
    Ok(Json(view(&connection, state.clock.now())))
}

async fn redrive(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<(StatusCode, Json<Value>), SombusError> {
    let Path((workspace, client)) = path.map_err(path_error)?;
    let actor = state
        .admin(&headers, &workspace, AdminRole::Developer)?
        .clone();
    let connection = state.connection_of(&workspace, &client)?;
    let task = state.redrive(&actor, &connection).await?;
    let audit = state.audit(
        &actor,
        &workspace,
        &client,
        "dead_letters.redrive",
        String::new(),
    );
    // The redrive is under way; recording it must not fail the request that started it.
    if let Err(error) = state.check.store().record(audit) {
        tracing::warn!(%error, "could not record a redrive in the audit log");
    }
    Ok((StatusCode::ACCEPTED, Json(json!({ "task_handle": task }))))
}

async fn audit(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, SombusError> {
    let Path(workspace) = path.map_err(path_error)?;
    state.admin(&headers, &workspace, AdminRole::Viewer)?;
    let mut limit = AUDIT_DEFAULT;
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match (name.as_ref(), value.parse::<usize>()) {
            ("limit", Ok(value)) if (1..=AUDIT_MAX).contains(&value) => limit = value,
            _ => {
                return Err(refusal(
                    StatusCode::BAD_REQUEST,
                    admin_rule::BAD_REQUEST,
                    "the only query parameter is limit, 1 to 1000",
                ));
            }
        }
    }
    let entries = state
        .check
        .store()
        .audit(&workspace, limit)
        .map_err(|error| {
            SombusError::admin(
                crate::core::GatewayError::new(
                    crate::core::ErrorKind::Unavailable {
                        retry_after: super::error::UNAVAILABLE_RETRY,
                    },
                    "the audit log is unavailable",
                )
                .with_source(error.to_string()),
            )
        })?;
    Ok(Json(json!({ "entries": entries })))
}
