//! Liveness and readiness probes for orchestrators and load balancers: `/healthz` answers while
//! the process serves; `/readyz` while the backend answers and the sombus credential store (when
//! it is on disk) can be read.

use crate::core::Gateway;
use crate::credentials::oauth::ConnectionStore;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// How long readiness waits for the backend, and for the credential store.
const READY_TIMEOUT: Duration = Duration::from_secs(3);

/// The probes, as a dialect of their own.
#[derive(Debug)]
pub struct Health {
    gateway: Arc<Gateway>,
    /// The sombus credential store, when it is on disk (one in memory is always readable).
    credentials: Option<Arc<ConnectionStore>>,
}

impl Health {
    /// Probes of the gateway's backend.
    pub fn new(gateway: Arc<Gateway>) -> Self {
        Self {
            gateway,
            credentials: None,
        }
    }

    /// Readiness needs the sombus credential store readable too, when it is on disk.
    pub fn with_credential_store(mut self, store: Arc<ConnectionStore>) -> Self {
        self.credentials = store.is_durable().then_some(store);
        self
    }
}

impl crate::api::common::Dialect for Health {
    fn router(self: Arc<Self>) -> Router {
        Router::new()
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .method_not_allowed_fallback(|request| {
                crate::api::common::method_not_allowed(&super::own_paths::SERVICE, request)
            })
            .with_state(self)
    }

    fn edge(&self) -> &'static dyn crate::api::common::EdgeShape {
        &super::own_paths::SERVICE
    }
}

/// What readiness found missing: `reason` of the 503's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NotReady {
    /// The backend does not answer.
    Backend,
    /// The state store (ledger, limits) does not answer.
    StateStore,
    /// The sombus credential store can't be read (damaged, or lost).
    CredentialStore,
}

impl NotReady {
    fn as_str(self) -> &'static str {
        match self {
            Self::Backend => "backend",
            Self::StateStore => "state_store",
            Self::CredentialStore => "credential_store",
        }
    }
}

/// `/healthz`: the process answers.
async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// `/readyz`: the backend and the state store answer, and the credential store (when on disk)
/// can be read; otherwise 503 `{"status": "unavailable", "reason": "backend" | "state_store" |
/// "credential_store"}`.
async fn readyz(State(health): State<Arc<Health>>) -> Response {
    let outcome = match backend_ready(&health.gateway).await {
        Ok(()) => match state_ready(&health.gateway).await {
            Ok(()) => credentials_ready(health.credentials.as_ref()).await,
            not_ready => not_ready,
        },
        not_ready => not_ready,
    };
    match outcome {
        Ok(()) => Json(json!({ "status": "ready" })).into_response(),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            Json(json!({ "status": "unavailable", "reason": reason.as_str() })),
        )
            .into_response(),
    }
}

async fn backend_ready(gateway: &Gateway) -> Result<(), NotReady> {
    match tokio::time::timeout(READY_TIMEOUT, gateway.ping()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            error.log("readyz");
            Err(NotReady::Backend)
        }
        Err(_) => Err(NotReady::Backend),
    }
}

async fn state_ready(gateway: &Gateway) -> Result<(), NotReady> {
    match tokio::time::timeout(READY_TIMEOUT, gateway.ping_state()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            error.log("readyz");
            Err(NotReady::StateStore)
        }
        Err(_) => Err(NotReady::StateStore),
    }
}

/// Reads the store off the runtime's threads (a slow disk makes readiness wait, nothing else).
async fn credentials_ready(store: Option<&Arc<ConnectionStore>>) -> Result<(), NotReady> {
    let Some(store) = store else {
        return Ok(());
    };
    let probe = store.probe();
    match tokio::time::timeout(READY_TIMEOUT, probe).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            tracing::error!(%error, "readyz: the sombus credential store can't be read");
            Err(NotReady::CredentialStore)
        }
        Err(_) => {
            tracing::error!("readyz: the sombus credential store did not answer in time");
            Err(NotReady::CredentialStore)
        }
    }
}
