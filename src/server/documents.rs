//! The OpenAPI 3.1 documents of the REST dialects (ezgh, sombus, basaltic), served without
//! credentials at `/openapi/{dialect}.json`: each is made once from the dialect's code (its
//! handlers' `utoipa::path` annotations and its wire types), so what is served is what is routed.

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::{Arc, LazyLock};
use tower_http::cors::{Any, CorsLayer};
use utoipa::openapi::OpenApi;

/// The documents, plugged in as a dialect of their own.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenApiDocuments;

/// How a document is made.
type Make = fn() -> OpenApi;

/// Where each document is served, and how it is made.
const DOCUMENTS: [(&str, Make); 3] = [
    ("/openapi/ezgh.json", crate::api::ezgh::openapi::document),
    (
        "/openapi/sombus.json",
        crate::api::sombus::openapi::document,
    ),
    (
        "/openapi/basaltic.json",
        crate::api::basaltic::openapi::document,
    ),
];

/// A document serialized once, on its first request.
type Served = LazyLock<Option<Bytes>>;

/// Serializes a document; `None` (logged) if it cannot be.
fn serialized(document: Make) -> Option<Bytes> {
    serde_json::to_vec(&document())
        .map(Bytes::from)
        .inspect_err(|error| tracing::error!(%error, "an OpenAPI document does not serialize"))
        .ok()
}

static EZGH: Served = LazyLock::new(|| serialized(DOCUMENTS[0].1));
static SOMBUS: Served = LazyLock::new(|| serialized(DOCUMENTS[1].1));
static BASALTIC: Served = LazyLock::new(|| serialized(DOCUMENTS[2].1));

/// The answer carrying a document.
fn serve(document: &'static Served) -> Response {
    match LazyLock::force(document) {
        Some(json) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            json.clone(),
        )
            .into_response(),
        None => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

impl crate::api::common::Dialect for OpenApiDocuments {
    fn edge(&self) -> &'static dyn crate::api::common::EdgeShape {
        &super::edge::DOCUMENTS
    }

    fn router(self: Arc<Self>) -> Router {
        // Public documents: any origin may read them (API tools in a browser do).
        let cors = CorsLayer::new()
            .allow_origin(Any)
            .allow_methods([Method::GET, Method::HEAD]);
        Router::new()
            .route(DOCUMENTS[0].0, get(|| async { serve(&EZGH) }))
            .route(DOCUMENTS[1].0, get(|| async { serve(&SOMBUS) }))
            .route(DOCUMENTS[2].0, get(|| async { serve(&BASALTIC) }))
            .method_not_allowed_fallback(|request| {
                crate::api::common::method_not_allowed(&super::edge::DOCUMENTS, request)
            })
            .layer(cors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_document_serializes_as_openapi_3_1() {
        for (path, document) in DOCUMENTS {
            let json = serialized(document).expect("serializes");
            let value: serde_json::Value = serde_json::from_slice(&json).expect("JSON");
            assert_eq!(value["openapi"], "3.1.0", "{path}");
        }
    }
}
