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
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::SchemaType;
use utoipa::openapi::{ObjectBuilder, OpenApi, RefOr, Required, Schema, Type};

/// The dialect that serves the documents.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenApiDocuments;

/// How a document is made.
type Make = fn() -> OpenApi;

/// Where each document is served, and how it is made.
const DOCUMENTS: [(&str, Make); 3] = [
    ("/openapi/ezgh.json", super::ezgh::openapi::document),
    ("/openapi/sombus.json", super::sombus::openapi::document),
    ("/openapi/basaltic.json", super::basaltic::openapi::document),
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

impl super::Dialect for OpenApiDocuments {
    fn router(self: Arc<Self>) -> Router {
        // Public documents: any origin may read them (API tools in a browser do).
        let cors = CorsLayer::new()
            .allow_origin(Any)
            .allow_methods([Method::GET, Method::HEAD]);
        Router::new()
            .route(DOCUMENTS[0].0, get(|| async { serve(&EZGH) }))
            .route(DOCUMENTS[1].0, get(|| async { serve(&SOMBUS) }))
            .route(DOCUMENTS[2].0, get(|| async { serve(&BASALTIC) }))
            .method_not_allowed_fallback(super::edge::method_not_allowed)
            .layer(cors)
    }
}

/// Every operation of `document`.
fn operations_mut(document: &mut OpenApi) -> impl Iterator<Item = &mut Operation> {
    document.paths.paths.values_mut().flat_map(|item| {
        [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.options,
            &mut item.head,
            &mut item.patch,
            &mut item.trace,
        ]
        .into_iter()
        .flatten()
    })
}

/// Adds to every answer of `document` the headers its status carries when every `429` is a rate
/// limit (ezgh's, sombus's): `Retry-After` on `429` and `503`, `WWW-Authenticate` on `401`.
pub fn add_error_headers(document: &mut OpenApi) {
    add_retry_after(document, "429");
    add_retry_after(document, "503");
    add_challenge(document);
}

/// Adds `WWW-Authenticate` (the scheme to authenticate with) to every `401` of `document`.
pub fn add_challenge(document: &mut OpenApi) {
    let challenge = || {
        HeaderBuilder::new()
            .schema(ObjectBuilder::new().schema_type(Type::String).build())
            .description(Some("The authentication scheme the operation takes"))
            .build()
    };
    add_header(document, "401", "WWW-Authenticate", challenge);
}

/// Adds `Retry-After` (whole seconds) to every answer of `document` with status `status`.
pub fn add_retry_after(document: &mut OpenApi, status: &str) {
    let seconds = || {
        HeaderBuilder::new()
            .schema(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some("^[0-9]+$"))
                    .build(),
            )
            .description(Some("Whole seconds to wait before trying again"))
            .build()
    };
    add_header(document, status, "Retry-After", seconds);
}

/// Adds the header `name` to every answer of `document` with status `status`.
fn add_header(
    document: &mut OpenApi,
    status: &str,
    name: &str,
    header: impl Fn() -> utoipa::openapi::header::Header,
) {
    for operation in operations_mut(document) {
        if let Some(RefOr::T(response)) = operation.responses.responses.get_mut(status) {
            response
                .headers
                .entry(name.to_owned())
                .or_insert_with(&header);
        }
    }
}

/// Makes each request body declared `Option<T>` (which utoipa writes as a required-less
/// `oneOf: [null, T]`) what it means: an optional body, `T` when present. A JSON `null` body is
/// not one the handlers take.
pub fn optional_request_bodies(document: &mut OpenApi) {
    for operation in operations_mut(document) {
        let Some(body) = &mut operation.request_body else {
            continue;
        };
        let mut optional = false;
        for content in body.content.values_mut() {
            let Some(RefOr::T(Schema::OneOf(one_of))) = &content.schema else {
                continue;
            };
            let mut present = one_of.items.iter().filter(|item| !is_null(item));
            if let (Some(present), None) = (present.next(), present.next()) {
                content.schema = Some(present.clone());
                optional = true;
            }
        }
        if optional {
            body.required = Some(Required::False);
        }
    }
}

/// Whether a schema is `{"type": "null"}`.
fn is_null(schema: &RefOr<Schema>) -> bool {
    matches!(
        schema,
        RefOr::T(Schema::Object(object)) if object.schema_type == SchemaType::Type(Type::Null)
    )
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
