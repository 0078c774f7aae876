//! The dialect built from its config section, and its routes assembled with CORS and the edge's
//! answer to a wrong method in its shape.

use super::config::EzghConfig;
use super::routes::{EzghState, acknowledge, change_visibility, receive};
use crate::api::common::{Dialect, Document, PlugContext};
use crate::credentials::api_keys::ApiKeys;
use crate::credentials::live::Live;
use axum::Router;
use axum::http::{Method, header};
use axum::routing::post;
use std::sync::Arc;
use std::time::Duration;
use tower_http::cors::{Any, CorsLayer};

/// How long browsers may cache a CORS preflight answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(600);

/// The dialect from its config section and the service-wide settings that concern it; `keys` is
/// the handle a config reload swaps the keys behind.
pub fn plug(section: &EzghConfig, keys: Live<ApiKeys>, context: &PlugContext) -> Arc<dyn Dialect> {
    Arc::new(EzghState {
        gateway: Arc::clone(&context.gateway),
        keys,
        invalid_handles_per_minute: context.invalid_handles_per_minute,
        requests: section.allowances().into_iter().collect(),
        queue_requests: context.queue_allowances.iter().cloned().collect(),
    })
}

impl Dialect for EzghState {
    fn router(self: Arc<Self>) -> Router {
        router(self)
    }

    fn edge(&self) -> &'static dyn crate::api::common::EdgeShape {
        &super::EzghEdge
    }

    fn document(&self) -> Option<Document> {
        Some(Document {
            path: "/openapi/ezgh.json",
            make: super::openapi::document,
        })
    }
}

/// The ezgh routes. CORS allows any origin without credentials: ack and visibility read no
/// credential at all, and receive reads only the `Authorization` header.
fn router(state: Arc<EzghState>) -> Router {
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::POST])
        .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION])
        .expose_headers([header::RETRY_AFTER])
        .max_age(PREFLIGHT_MAX_AGE)
        // No `Vary`: with any origin and fixed lists, no answer depends on the request's `Origin`
        // or preflight headers (tower-http would otherwise build the header for every answer).
        .vary([]);
    Router::new()
        .route(
            "/v1/organizations/{organization}/projects/{project}/queues/{queue}/messages/receive",
            post(receive),
        )
        .route("/v1/receipts/ack", post(acknowledge))
        .route("/v1/receipts/visibility", post(change_visibility))
        .method_not_allowed_fallback(|request| {
            crate::api::common::method_not_allowed(&super::EzghEdge, request)
        })
        .layer(cors)
        .with_state(state)
}
