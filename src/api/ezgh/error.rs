//! Renders the domain error in ezgh's shape: a status code and `{"error": code, "message": text}`.

use crate::core::limits::retry_after_seconds;
use crate::core::{ErrorKind, GatewayError};
use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// A [`GatewayError`] on its way out of the ezgh API.
#[derive(Debug)]
pub struct EzghError(pub GatewayError);

impl From<GatewayError> for EzghError {
    fn from(error: GatewayError) -> Self {
        Self(error)
    }
}

/// ezgh's error body: a stable code and a message for people.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Error)]
pub(super) struct ErrorBody {
    /// The stable code of the error.
    #[schema(schema_with = error_code)]
    pub error: &'static str,
    /// What went wrong, for people (it never repeats a value of the request).
    pub message: String,
}

/// Every code an error answer can carry, for the document.
pub(super) const CODES: &[&str] = &[
    "invalid_request",
    "out_of_range",
    "payload_too_large",
    "unauthenticated",
    "permission_denied",
    "queue_not_found",
    "over_limit",
    "rate_limited",
    "unavailable",
    "internal",
    "already_exists",
    "not_found",
    "conflict",
    "unsupported",
    "method_not_allowed",
    "request_timeout",
    "uri_too_long",
];

/// The schema of the `error` field: one of [`CODES`].
fn error_code() -> utoipa::openapi::Object {
    crate::api::common::openapi::error_code(CODES, "out_of_range")
}

/// The stable status and code of each error kind.
fn status_and_code(kind: &ErrorKind) -> (StatusCode, &'static str) {
    match kind {
        ErrorKind::InvalidRequest => (StatusCode::BAD_REQUEST, "invalid_request"),
        ErrorKind::OutOfRange => (StatusCode::BAD_REQUEST, "out_of_range"),
        ErrorKind::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
        ErrorKind::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthenticated"),
        ErrorKind::PermissionDenied => (StatusCode::FORBIDDEN, "permission_denied"),
        ErrorKind::QueueNotFound => (StatusCode::NOT_FOUND, "queue_not_found"),
        ErrorKind::OverLimit => (StatusCode::TOO_MANY_REQUESTS, "over_limit"),
        ErrorKind::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
        ErrorKind::Unavailable { .. } => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        ErrorKind::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        ErrorKind::AlreadyExists => (StatusCode::CONFLICT, "already_exists"),
        ErrorKind::ResourceNotFound => (StatusCode::NOT_FOUND, "not_found"),
        ErrorKind::Conflict => (StatusCode::CONFLICT, "conflict"),
        ErrorKind::Unsupported => (StatusCode::NOT_IMPLEMENTED, "unsupported"),
        ErrorKind::RouteNotFound => (StatusCode::NOT_FOUND, "not_found"),
        ErrorKind::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ErrorKind::RequestTimeout => (StatusCode::REQUEST_TIMEOUT, "request_timeout"),
        ErrorKind::UriTooLong => (StatusCode::URI_TOO_LONG, "uri_too_long"),
    }
}

impl IntoResponse for EzghError {
    fn into_response(self) -> Response {
        let error = self.0;
        error.log("ezgh");
        let (status, code) = status_and_code(&error.kind);
        let body = ErrorBody {
            error: code,
            message: error.message.clone(),
        };
        let mut response = (status, Json(body)).into_response();
        if let Some(wait) = error.retry_after() {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_seconds(wait)),
            );
        }
        if error.kind == ErrorKind::Unauthenticated {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_documented_codes_are_every_code_answered() {
        let wait = Duration::from_secs(1);
        let kinds = ErrorKind::every_kind(wait);
        let answered: std::collections::BTreeSet<&str> =
            kinds.iter().map(|kind| status_and_code(kind).1).collect();
        let documented: std::collections::BTreeSet<&str> = CODES.iter().copied().collect();
        assert_eq!(answered, documented);
    }
}
