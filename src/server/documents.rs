//! The OpenAPI 3.1 documents of the REST dialects (ezgh, sombus, basaltic), served without
//! credentials where each dialect's [`Dialect::document`] says (`/openapi/{dialect}.json`): each
//! is made once from the dialect's code (its handlers' `utoipa::path` annotations and its wire
//! types), so what is served is what is routed.

use crate::api::common::{Dialect, Document};
use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::{Arc, OnceLock};
use tower_http::cors::{Any, CorsLayer};
use utoipa::openapi::OpenApi;

/// The documents of the plugged dialects, plugged in as a dialect of their own.
#[derive(Clone)]
pub struct OpenApiDocuments {
    documents: Arc<[Served]>,
}

/// A document, serialized once, on its first request.
struct Served {
    document: Document,
    json: OnceLock<Option<Bytes>>,
}

impl OpenApiDocuments {
    /// The documents `dialects` give.
    pub fn of(dialects: &[Arc<dyn Dialect>]) -> Self {
        Self {
            documents: dialects
                .iter()
                .filter_map(|dialect| dialect.document())
                .map(|document| Served {
                    document,
                    json: OnceLock::new(),
                })
                .collect(),
        }
    }

    /// The answer carrying the `index`th document.
    fn serve(&self, index: usize) -> Response {
        let served = &self.documents[index];
        match served.json.get_or_init(|| serialized(served.document.make)) {
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
}

/// Serializes a document; `None` (logged) if it cannot be.
fn serialized(make: fn() -> OpenApi) -> Option<Bytes> {
    serde_json::to_vec(&make())
        .map(Bytes::from)
        .inspect_err(|error| tracing::error!(%error, "an OpenAPI document does not serialize"))
        .ok()
}

impl Dialect for OpenApiDocuments {
    fn edge(&self) -> &'static dyn crate::api::common::EdgeShape {
        &super::own_paths::DOCUMENTS
    }

    fn router(self: Arc<Self>) -> Router {
        // Public documents: any origin may read them (API tools in a browser do).
        let cors = CorsLayer::new()
            .allow_origin(Any)
            .allow_methods([Method::GET, Method::HEAD]);
        let router = (0..self.documents.len()).fold(Router::new(), |router, index| {
            let documents = Arc::clone(&self);
            router.route(
                self.documents[index].document.path,
                get(move || async move { documents.serve(index) }),
            )
        });
        router
            .method_not_allowed_fallback(|request| {
                crate::api::common::method_not_allowed(&super::own_paths::DOCUMENTS, request)
            })
            .layer(cors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_document_serializes_as_openapi_3_1_and_every_reference_resolves() {
        let documents = [
            (
                "ezgh",
                crate::api::ezgh::openapi::document as fn() -> OpenApi,
            ),
            ("sombus", crate::api::sombus::openapi::document),
            ("basaltic", crate::api::basaltic::openapi::document),
        ];
        for (path, document) in documents {
            let json = serialized(document).expect("serializes");
            let value: serde_json::Value = serde_json::from_slice(&json).expect("JSON");
            assert_eq!(value["openapi"], "3.1.0", "{path}");
            let mut references = Vec::new();
            references_in(&value, &mut references);
            assert!(!references.is_empty(), "{path}");
            for reference in references {
                let pointer = reference.trim_start_matches('#');
                assert!(
                    value.pointer(pointer).is_some(),
                    "{path}: {reference} names no component"
                );
            }
        }
    }

    /// Every `$ref` under `value`.
    fn references_in<'v>(value: &'v serde_json::Value, found: &mut Vec<&'v str>) {
        match value {
            serde_json::Value::Object(object) => {
                if let Some(reference) = object.get("$ref").and_then(serde_json::Value::as_str) {
                    found.push(reference);
                }
                object
                    .values()
                    .for_each(|inner| references_in(inner, found));
            }
            serde_json::Value::Array(items) => {
                items.iter().for_each(|inner| references_in(inner, found))
            }
            _ => {}
        }
    }
}
