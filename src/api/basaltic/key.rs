//! `GET /v1/key`: the presented key describes itself (its id, label and grants, never its
//! secret), so a client such as the web console can show what the key cannot do and why before
//! it tries.

use super::wire::{KeyJson, KeyResult};
use super::{BasalticError, BasalticState};
use crate::credentials::key_book::BookKey as _;
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::get;
use std::sync::Arc;

pub(super) fn routes() -> axum::Router<Arc<BasalticState>> {
    axum::Router::new().route("/v1/key", get(describe))
}

#[utoipa::path(
    get,
    path = "/v1/key",
    operation_id = "DescribeKey",
    tag = "Queues",
    description = "The key presented: its id, its label and its grants (queue UUID or `*` to permissions). Any valid key may ask.",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The key", body = KeyResult),
        super::error::KeyRefusals,
    ),
)]
pub(super) async fn describe(
    State(state): State<Arc<BasalticState>>,
    headers: HeaderMap,
) -> Result<Json<KeyResult>, BasalticError> {
    let key = state.authenticate(&headers)?;
    let grants = key
        .granted()
        .iter()
        .map(|(queue, names)| (queue.clone(), names.iter().cloned().collect()))
        .collect();
    Ok(Json(KeyResult {
        result: KeyJson {
            id: key.id().to_owned(),
            name: key.name.clone(),
            grants,
        },
    }))
}
