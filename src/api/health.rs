//! Liveness and readiness probes for orchestrators and load balancers.

use crate::core::Gateway;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// How long readiness waits for the backend.
const READY_TIMEOUT: Duration = Duration::from_secs(3);

/// The probes, as a dialect of their own.
#[derive(Debug)]
pub struct Health(pub Arc<Gateway>);

impl crate::api::Dialect for Health {
    fn router(self: Arc<Self>) -> Router {
        router(Arc::clone(&self.0))
    }
}

/// `/healthz` (the process answers) and `/readyz` (the backend answers too).
fn router(gateway: Arc<Gateway>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .method_not_allowed_fallback(crate::api::edge::method_not_allowed)
        .with_state(gateway)
}

async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

async fn readyz(State(gateway): State<Arc<Gateway>>) -> Response {
    match tokio::time::timeout(READY_TIMEOUT, gateway.ping()).await {
        Ok(Ok(())) => Json(json!({ "status": "ready" })).into_response(),
        outcome => {
            if let Ok(Err(error)) = &outcome {
                error.log("readyz");
            }
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "1")],
                Json(json!({ "status": "unavailable" })),
            )
                .into_response()
        }
    }
}
