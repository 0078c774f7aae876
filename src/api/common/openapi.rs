//! What the dialects' OpenAPI documents share: error responses declared once for a group of
//! routes, the schema of an error's closed list of codes, and the finish every document gets
//! once utoipa has made it ([`Finish`]: the version, a bearer API-key scheme, the headers of
//! error answers (`Retry-After`, `WWW-Authenticate`) and request bodies that may be left out).
//! Each dialect's `openapi` module finishes its document with these; the server serves them.

use std::collections::BTreeMap;
use utoipa::ToSchema;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::SchemaType;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, Object, ObjectBuilder, OpenApi, Ref, RefOr, Required, ResponseBuilder, Schema,
    Type,
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

/// The schema of an error's code: one of `codes`, every code the dialect answers, with an
/// example.
pub fn error_code(codes: &[&str], example: &str) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(codes.iter().copied()))
        .examples([serde_json::Value::from(example)])
        .build()
}

/// What a dialect's document gets once utoipa has made it: the gateway's version, the request
/// bodies declared `Option<T>` made optional, `WWW-Authenticate` on every `401`, and what each
/// dialect chooses below.
pub struct Finish<'a> {
    /// The description of the `bearer` security scheme (`Authorization: Bearer` with an API
    /// key), for a dialect whose routes take one; a dialect with other schemes adds its own.
    pub bearer_key: Option<&'a str>,
    /// The statuses whose answers carry `Retry-After`: those that always name a time.
    pub retry_after: &'a [&'a str],
}

impl Finish<'_> {
    /// The finished document.
    pub fn apply(&self, mut document: OpenApi) -> OpenApi {
        document.info.version = env!("CARGO_PKG_VERSION").to_owned();
        if let Some(description) = self.bearer_key {
            let components = document.components.get_or_insert_with(Default::default);
            components.add_security_scheme(
                "bearer",
                SecurityScheme::Http(
                    HttpBuilder::new()
                        .scheme(HttpAuthScheme::Bearer)
                        .bearer_format("API key")
                        .description(Some(description))
                        .build(),
                ),
            );
        }
        for status in self.retry_after {
            add_retry_after(&mut document, status);
        }
        add_challenge(&mut document);
        optional_request_bodies(&mut document);
        document
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

/// Adds `WWW-Authenticate` (the scheme to authenticate with) to every `401` of `document`.
fn add_challenge(document: &mut OpenApi) {
    let challenge = || {
        HeaderBuilder::new()
            .schema(ObjectBuilder::new().schema_type(Type::String).build())
            .description(Some("The authentication scheme the operation takes"))
            .build()
    };
    add_header(document, "401", "WWW-Authenticate", challenge);
}

/// Adds `Retry-After` (whole seconds) to every answer of `document` with status `status`.
fn add_retry_after(document: &mut OpenApi, status: &str) {
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
fn optional_request_bodies(document: &mut OpenApi) {
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
