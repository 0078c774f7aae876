//! Renders the domain error in basaltic's one shape, `{"error": {"code", "message"}}`, with a
//! stable code per kind (and `Retry-After` where one helps).

use crate::api::common::openapi::{ResponseMap, error_responses};
use crate::core::limits::retry_after_seconds;
use crate::core::{ErrorKind, GatewayError};
use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::{IntoResponses, ToSchema};

/// A [`GatewayError`] on its way out of the basaltic API, with an optional code of its own
/// (`receipt_handle_invalid`, `receipt_handle_stale`).
#[derive(Debug)]
pub struct BasalticError {
    error: Box<GatewayError>,
    code: Option<(StatusCode, &'static str)>,
}

impl From<GatewayError> for BasalticError {
    fn from(error: GatewayError) -> Self {
        Self {
            error: Box::new(error),
            code: None,
        }
    }
}

impl BasalticError {
    /// An error with a code of its own.
    pub(super) fn coded(status: StatusCode, code: &'static str, message: &str) -> Self {
        Self {
            error: Box::new(GatewayError::invalid_request(message)),
            code: Some((status, code)),
        }
    }
}

/// basaltic's error body: `{"error": {"code", "message"}}`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Error)]
pub(super) struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// A stable code and a message for people.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ErrorDetail {
    /// The stable code of the error.
    #[schema(schema_with = error_code)]
    pub code: &'static str,
    /// What went wrong, for people (it never repeats a value of the request).
    pub message: String,
}

/// Every code an error answer can carry, for the document.
pub(super) const CODES: &[&str] = &[
    "invalid_argument",
    "payload_too_large",
    "unauthenticated",
    "permission_denied",
    "queue_not_found",
    "not_found",
    "conflict",
    "over_limit",
    "rate_limited",
    "unsupported",
    "unavailable",
    "method_not_allowed",
    "request_timeout",
    "uri_too_long",
    RECEIPT_HANDLE_STALE,
    RECEIPT_HANDLE_INVALID,
];

/// A delete or visibility change with a receipt that is not the current one.
pub(super) const RECEIPT_HANDLE_STALE: &str = "receipt_handle_stale";
/// A delete or visibility change with a receipt that is none of the queue's.
pub(super) const RECEIPT_HANDLE_INVALID: &str = "receipt_handle_invalid";

/// The schema of the `code` field: one of [`CODES`].
fn error_code() -> utoipa::openapi::Object {
    crate::api::common::openapi::error_code(CODES, "invalid_argument")
}

/// The stable status and code of each error kind.
fn status_and_code(kind: &ErrorKind) -> (StatusCode, &'static str) {
    match kind {
        ErrorKind::InvalidRequest | ErrorKind::OutOfRange => {
            (StatusCode::BAD_REQUEST, "invalid_argument")
        }
        ErrorKind::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
        ErrorKind::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthenticated"),
        ErrorKind::PermissionDenied => (StatusCode::FORBIDDEN, "permission_denied"),
        ErrorKind::QueueNotFound => (StatusCode::NOT_FOUND, "queue_not_found"),
        ErrorKind::ResourceNotFound | ErrorKind::RouteNotFound => {
            (StatusCode::NOT_FOUND, "not_found")
        }
        ErrorKind::AlreadyExists | ErrorKind::Conflict => (StatusCode::CONFLICT, "conflict"),
        ErrorKind::OverLimit => (StatusCode::TOO_MANY_REQUESTS, "over_limit"),
        ErrorKind::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
        ErrorKind::Unsupported => (StatusCode::NOT_IMPLEMENTED, "unsupported"),
        ErrorKind::Unavailable { .. } | ErrorKind::Internal => {
            (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
        }
        ErrorKind::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ErrorKind::RequestTimeout => (StatusCode::REQUEST_TIMEOUT, "request_timeout"),
        ErrorKind::UriTooLong => (StatusCode::URI_TOO_LONG, "uri_too_long"),
    }
}

impl IntoResponse for BasalticError {
    fn into_response(self) -> Response {
        let error = self.error;
        let (status, code) = self.code.unwrap_or_else(|| status_and_code(&error.kind));
        error.log("basaltic");
        let message = if status == StatusCode::SERVICE_UNAVAILABLE {
            "the queue service is unavailable; retry after Retry-After".to_owned()
        } else {
            error.message.clone()
        };
        let body = ErrorBody {
            error: ErrorDetail { code, message },
        };
        let mut response = (status, Json(body)).into_response();
        let wait = error.retry_after().or_else(|| {
            (status == StatusCode::SERVICE_UNAVAILABLE)
                .then_some(crate::core::backend::DEFAULT_RETRY_AFTER)
        });
        if let Some(wait) = wait {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_seconds(wait)),
            );
        }
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// 401 `unauthenticated` and 503 `unavailable`: what every basaltic route may answer.
pub(super) struct KeyRefusals;

impl IntoResponses for KeyRefusals {
    fn responses() -> ResponseMap {
        error_responses::<ErrorBody>(&[
            (401, "The key is missing or invalid (`unauthenticated`)"),
            (
                503,
                "The queue service is unavailable: retry after `Retry-After` (`unavailable`)",
            ),
        ])
    }
}

/// 403 `permission_denied` and 404 `queue_not_found`: routes that act on a queue the key names.
pub(super) struct QueueRefusals;

impl IntoResponses for QueueRefusals {
    fn responses() -> ResponseMap {
        error_responses::<ErrorBody>(&[
            (403, "The key lacks the permission (`permission_denied`)"),
            (
                404,
                "No such queue, or the key has no permission on it (`queue_not_found`)",
            ),
        ])
    }
}

/// 408 `request_timeout` and 413 `payload_too_large`: routes that read a body.
pub(super) struct BodyRefusals;

impl IntoResponses for BodyRefusals {
    fn responses() -> ResponseMap {
        error_responses::<ErrorBody>(&[
            (
                408,
                "The request body did not arrive in time (`request_timeout`)",
            ),
            (413, "The request body is too large (`payload_too_large`)"),
        ])
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
        let mut answered: std::collections::BTreeSet<&str> =
            kinds.iter().map(|kind| status_and_code(kind).1).collect();
        answered.extend([RECEIPT_HANDLE_STALE, RECEIPT_HANDLE_INVALID]);
        let documented: std::collections::BTreeSet<&str> = CODES.iter().copied().collect();
        assert_eq!(answered, documented);
    }
}
