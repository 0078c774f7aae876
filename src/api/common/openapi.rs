//! What the dialects' OpenAPI documents share: error responses declared once for a group of
//! routes and, once utoipa has made a document, the headers of error answers (`Retry-After`,
//! `WWW-Authenticate`) and request bodies that may be left out. Each dialect's `openapi` module
//! finishes its document with these; the server serves them.

use std::collections::BTreeMap;
use utoipa::ToSchema;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::SchemaType;
use utoipa::openapi::{
    ContentBuilder, ObjectBuilder, OpenApi, Ref, RefOr, Required, ResponseBuilder, Schema, Type,
};

/// Responses by status, as an `IntoResponses` type answers them.
pub type ResponseMap = BTreeMap<String, RefOr<utoipa::openapi::Response>>;

/// The error responses of a group of routes, for an `IntoResponses` type that route annotations
/// list beside their own answers: each status with its description, its body the dialect's error
/// body `E` (which the document's components must list).
pub fn error_responses<E: ToSchema>(statuses: &[(u16, &str)]) -> ResponseMap {
    let schema = E::name();
    statuses
        .iter()
        .map(|(status, description)| {
            let content = ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(schema.as_ref())))
                .build();
            let response = ResponseBuilder::new()
                .description(*description)
                .content("application/json", content)
                .build();
            (status.to_string(), response.into())
        })
        .collect()
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
