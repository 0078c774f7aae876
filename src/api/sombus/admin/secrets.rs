//! The admin routes of a connection's client secret: get one, rotate it (with an overlap), stop
//! the previous one, revoke it.

use super::*;

#[utoipa::path(
    post,
    path = "/v1/admin/workspaces/{workspace}/connections/{client}/secret",
    operation_id = "getClientSecret",
    tag = "admin",
    summary = "Get client secret",
    description = "Issues a secret to a connection that has none (developer role or above), shown \
        once with the connection's URLs filled in; only a hash is kept. A connection that has a \
        secret answers 409: rotate it instead.",
    params(wire::ConnectionPath),
    security(("admin_key" = [])),
    responses(
        (status = 201, description = "The new secret, shown once.", body = IssuedSecretAnswer,
            headers(("Cache-Control" = String, description = "`no-store`: the answer holds a secret."))),
        (status = 404, body = wire::AdminRefusal),
        (status = 409, body = wire::AdminRefusal),
        crate::api::sombus::wire::AdminRefusals,
    )
)]
pub(super) async fn get_secret(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, SombusError> {
    let Path((workspace, client)) = path.map_err(path_error)?;
    let actor = state.admin_for(
        &headers,
        &workspace,
        AdminRole::Developer,
        "secret.get",
        &client,
    )?;
    let now = state.clock.now();
    let (secret, connection) = state
        .change(
            &actor,
            &workspace,
            &client,
            "secret.get",
            move |connection| {
                let secret = connection
                    .issue_secret(now)
                    .map_err(|why| StoreError::NotApplicable(why.0))?;
                let detail = format!("secret {} issued", secret.serial);
                Ok((secret, detail))
            },
        )
        .await?;
    Ok(secret_answer(
        &state.base_url(&headers),
        &connection,
        &secret,
    ))
}

#[utoipa::path(
    post,
    path = "/v1/admin/workspaces/{workspace}/connections/{client}/secret/rotate",
    operation_id = "rotateClientSecret",
    tag = "admin",
    summary = "Rotate secret",
    description = "Gives the connection a new secret (developer role or above); the previous one \
        keeps getting tokens for `overlap` (24 hours by default, 3 days, 1 hour, or none). Tokens \
        issued before the rotation stop working within about 30 seconds. The body may be empty.",
    params(wire::ConnectionPath),
    request_body(content = Option<wire::RotateRequest>, content_type = "application/json"),
    security(("admin_key" = [])),
    responses(
        (status = 201, description = "The new secret, shown once.", body = IssuedSecretAnswer,
            headers(("Cache-Control" = String, description = "`no-store`: the answer holds a secret."))),
        (status = 404, body = wire::AdminRefusal),
        (status = 409, body = wire::AdminRefusal),
        crate::api::sombus::wire::AdminRefusals,
    )
)]
pub(super) async fn rotate_secret(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, SombusError> {
    let Path((workspace, client)) = path.map_err(path_error)?;
    let actor = state.admin_for(
        &headers,
        &workspace,
        AdminRole::Developer,
        "secret.rotate",
        &client,
    )?;
    let body = read_body(body, BODY_LIMIT)
        .await
        .map_err(SombusError::admin)?;
    let overlap = wire::parse_rotation(&body).map_err(SombusError::admin)?;
    let now = state.clock.now();
    let (secret, connection) = state
        .change(
            &actor,
            &workspace,
            &client,
            "secret.rotate",
            move |connection| {
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
            },
        )
        .await?;
    Ok(secret_answer(
        &state.base_url(&headers),
        &connection,
        &secret,
    ))
}

#[utoipa::path(
    post,
    path = "/v1/admin/workspaces/{workspace}/connections/{client}/secret/stop-old",
    operation_id = "stopOldSecret",
    tag = "admin",
    summary = "Stop old secret now",
    description = "Ends the previous secret's overlap early (developer role or above); its tokens stop within about 30 seconds. 409 when there is no old secret in its overlap.",
    params(wire::ConnectionPath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The connection as changed.", body = ConnectionView),
        (status = 404, body = wire::AdminRefusal),
        (status = 409, body = wire::AdminRefusal),
        crate::api::sombus::wire::AdminRefusals,
    )
)]
pub(super) async fn stop_old_secret(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<ConnectionView>, SombusError> {
    step(&state, path, &headers, Step::StopOldSecret).await
}

#[utoipa::path(
    post,
    path = "/v1/admin/workspaces/{workspace}/connections/{client}/secret/revoke",
    operation_id = "revokeClientSecret",
    tag = "admin",
    summary = "Revoke secret",
    description = "Stops the secret at once and its tokens within about 30 seconds (developer role or above). The connection and its queue stay; get a client secret for a new one. 409 when it has no secret.",
    params(wire::ConnectionPath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The connection as changed.", body = ConnectionView),
        (status = 404, body = wire::AdminRefusal),
        (status = 409, body = wire::AdminRefusal),
        crate::api::sombus::wire::AdminRefusals,
    )
)]
pub(super) async fn revoke_secret(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Json<ConnectionView>, SombusError> {
    step(&state, path, &headers, Step::RevokeSecret).await
}
