//! Renders refusals in the bus's body, `{"accepted": false, "violations": [{"rule", "message"}]}`,
//! with the documented rule and status of each (and `Retry-After` where one helps); the token
//! service's refusals in OAuth 2.0's shape (RFC 6749 §5.2).

use crate::core::error::LimitScope;
use crate::core::limits::retry_after_seconds;
use crate::core::{ErrorKind, GatewayError};
use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::time::Duration;
use utoipa::ToSchema;

/// The pull routes' rules.
pub mod rule {
    /// A query parameter or the body is malformed (400).
    pub const BAD_REQUEST: &str = "pull.bad_request";
    /// Token missing, invalid, expired or for another environment (401).
    pub const UNAUTHENTICATED: &str = "producer.unauthenticated";
    /// Not an active consumer connection's token (403).
    pub const NOT_REGISTERED: &str = "producer.not_registered";
    /// `{t}` is not the token's workspace (403).
    pub const TENANT_MISMATCH: &str = "tenant.mismatch";
    /// `{c}` is not the token's connection (403).
    pub const NOT_OWNER: &str = "consumer.not_owner";
    /// Over the connection's request rate (429).
    pub const RATE_LIMITED: &str = "rate.limited";
    /// Over the connection's daily quota (429).
    pub const QUOTA_EXCEEDED: &str = "quota.exceeded";
    /// The queue is being set up or cannot be reached (503).
    pub const QUEUE_UNAVAILABLE: &str = "consumer.queue_unavailable";
    /// The skill registrations cannot be read (503).
    pub const SKILLS_UNAVAILABLE: &str = "skills.unavailable";
    /// No such route (404) or method (405): not the pull API's own rules.
    pub const NO_ROUTE: &str = "route.not_found";
    /// The method is not allowed on the route (405).
    pub const METHOD_NOT_ALLOWED: &str = "route.method_not_allowed";
}

/// Every rule a pull route can answer (the OpenAPI document's list).
pub const PULL_RULES: &[&str] = &[
    rule::BAD_REQUEST,
    rule::UNAUTHENTICATED,
    rule::NOT_REGISTERED,
    rule::TENANT_MISMATCH,
    rule::NOT_OWNER,
    rule::RATE_LIMITED,
    rule::QUOTA_EXCEEDED,
    rule::QUEUE_UNAVAILABLE,
    rule::SKILLS_UNAVAILABLE,
    rule::NO_ROUTE,
    rule::METHOD_NOT_ALLOWED,
];

/// Every rule an admin route can answer (the OpenAPI document's list).
pub const ADMIN_RULES: &[&str] = &[
    admin_rule::BAD_REQUEST,
    admin_rule::UNAUTHENTICATED,
    admin_rule::FORBIDDEN,
    admin_rule::NOT_FOUND,
    admin_rule::CONFLICT,
    admin_rule::UNSUPPORTED,
    admin_rule::UNAVAILABLE,
    rule::NO_ROUTE,
    rule::METHOD_NOT_ALLOWED,
];

/// How long to wait before retrying an unavailable queue or registrations.
pub const UNAVAILABLE_RETRY: Duration = Duration::from_secs(5);

/// A refusal on its way out of the sombus API.
#[derive(Debug)]
pub struct SombusError {
    status: StatusCode,
    rule: &'static str,
    message: String,
    retry_after: Option<Duration>,
    /// Logged, never shown.
    cause: Option<Box<GatewayError>>,
}

impl SombusError {
    /// A refusal with its rule and status.
    pub fn new(status: StatusCode, rule: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            rule,
            message: message.into(),
            retry_after: None,
            cause: None,
        }
    }

    /// `pull.bad_request`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, rule::BAD_REQUEST, message)
    }

    /// With a `Retry-After`.
    pub fn retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// The rule (tests and logs).
    pub fn rule(&self) -> &'static str {
        self.rule
    }

    /// The status it answers with.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// A core error of an admin route, in the admin API's rules.
    pub fn admin(error: GatewayError) -> Self {
        let (status, rule) = match &error.kind {
            ErrorKind::InvalidRequest
            | ErrorKind::OutOfRange
            | ErrorKind::PayloadTooLarge
            | ErrorKind::RequestTimeout
            | ErrorKind::UriTooLong => (StatusCode::BAD_REQUEST, admin_rule::BAD_REQUEST),
            ErrorKind::Unauthenticated => (StatusCode::UNAUTHORIZED, admin_rule::UNAUTHENTICATED),
            ErrorKind::PermissionDenied => (StatusCode::FORBIDDEN, admin_rule::FORBIDDEN),
            ErrorKind::QueueNotFound | ErrorKind::ResourceNotFound | ErrorKind::RouteNotFound => {
                (StatusCode::NOT_FOUND, admin_rule::NOT_FOUND)
            }
            ErrorKind::AlreadyExists | ErrorKind::Conflict => {
                (StatusCode::CONFLICT, admin_rule::CONFLICT)
            }
            ErrorKind::RateLimited { .. } | ErrorKind::OverLimit => {
                (StatusCode::TOO_MANY_REQUESTS, rule::RATE_LIMITED)
            }
            ErrorKind::MethodNotAllowed => {
                (StatusCode::METHOD_NOT_ALLOWED, rule::METHOD_NOT_ALLOWED)
            }
            ErrorKind::Unsupported => (StatusCode::NOT_IMPLEMENTED, admin_rule::UNSUPPORTED),
            ErrorKind::Unavailable { .. } | ErrorKind::Internal => {
                (StatusCode::SERVICE_UNAVAILABLE, admin_rule::UNAVAILABLE)
            }
        };
        let message = if status == StatusCode::SERVICE_UNAVAILABLE {
            "the backend or the credential store couldn't be reached; retry later".to_owned()
        } else {
            error.message.clone()
        };
        let retry_after = error
            .retry_after()
            .or_else(|| (status == StatusCode::SERVICE_UNAVAILABLE).then_some(UNAVAILABLE_RETRY));
        Self {
            status,
            rule,
            message,
            retry_after,
            cause: Some(Box::new(error)),
        }
    }
}

/// The admin API's rules.
pub mod admin_rule {
    /// A malformed request (400).
    pub const BAD_REQUEST: &str = "admin.bad_request";
    /// No admin key, or an unknown one (401).
    pub const UNAUTHENTICATED: &str = "admin.unauthenticated";
    /// The key does not manage the workspace, or its role is too low (403).
    pub const FORBIDDEN: &str = "admin.forbidden";
    /// No such connection in the workspace (404).
    pub const NOT_FOUND: &str = "admin.not_found";
    /// The change does not apply to the connection as it is (409).
    pub const CONFLICT: &str = "admin.conflict";
    /// The backend cannot do it (501).
    pub const UNSUPPORTED: &str = "admin.unsupported";
    /// The backend or the credential store cannot be reached (503).
    pub const UNAVAILABLE: &str = "admin.unavailable";
}

impl From<GatewayError> for SombusError {
    fn from(error: GatewayError) -> Self {
        let (status, rule) = match &error.kind {
            ErrorKind::InvalidRequest
            | ErrorKind::OutOfRange
            | ErrorKind::PayloadTooLarge
            | ErrorKind::RequestTimeout
            | ErrorKind::UriTooLong => (StatusCode::BAD_REQUEST, rule::BAD_REQUEST),
            ErrorKind::Unauthenticated => (StatusCode::UNAUTHORIZED, rule::UNAUTHENTICATED),
            ErrorKind::PermissionDenied => (StatusCode::FORBIDDEN, rule::NOT_REGISTERED),
            ErrorKind::RateLimited {
                scope: LimitScope::Rate,
                ..
            } => (StatusCode::TOO_MANY_REQUESTS, rule::RATE_LIMITED),
            ErrorKind::RateLimited {
                scope: LimitScope::DailyQuota,
                ..
            } => (StatusCode::TOO_MANY_REQUESTS, rule::QUOTA_EXCEEDED),
            ErrorKind::RouteNotFound => (StatusCode::NOT_FOUND, rule::NO_ROUTE),
            ErrorKind::MethodNotAllowed => {
                (StatusCode::METHOD_NOT_ALLOWED, rule::METHOD_NOT_ALLOWED)
            }
            // No 404 for a queue: a missing queue, an unreachable backend, or anything else the
            // consumer can only wait out, is the queue being unavailable.
            ErrorKind::QueueNotFound
            | ErrorKind::Unavailable { .. }
            | ErrorKind::OverLimit
            | ErrorKind::Internal
            | ErrorKind::AlreadyExists
            | ErrorKind::ResourceNotFound
            | ErrorKind::Conflict
            | ErrorKind::Unsupported => (StatusCode::SERVICE_UNAVAILABLE, rule::QUEUE_UNAVAILABLE),
        };
        let message = match rule {
            rule::QUEUE_UNAVAILABLE => {
                "your queue is still being set up or couldn't be reached; retry after Retry-After"
                    .to_owned()
            }
            rule::UNAUTHENTICATED => "the token is missing or not valid".to_owned(),
            _ => error.message.clone(),
        };
        let retry_after = error
            .retry_after()
            .or_else(|| (status == StatusCode::SERVICE_UNAVAILABLE).then_some(UNAVAILABLE_RETRY));
        Self {
            status,
            rule,
            message,
            retry_after,
            cause: Some(Box::new(error)),
        }
    }
}

impl IntoResponse for SombusError {
    fn into_response(self) -> Response {
        if let Some(cause) = &self.cause {
            cause.log("sombus");
        } else {
            tracing::info!(
                rule = self.rule,
                status = self.status.as_u16(),
                "sombus refusal"
            );
        }
        let body = BusRefusal::new(self.rule, self.message);
        let mut response = (self.status, Json(body)).into_response();
        if let Some(wait) = self.retry_after {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_seconds(wait)),
            );
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"sombus\""),
            );
        }
        response
    }
}

/// The OAuth 2.0 error codes the token service answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthErrorCode {
    /// 400: a parameter missing, repeated or malformed.
    InvalidRequest,
    /// 401: client authentication failed.
    InvalidClient,
    /// 400: not `client_credentials`.
    UnsupportedGrantType,
    /// 503: the credential store cannot be read.
    TemporarilyUnavailable,
    /// 429: too many failed attempts from the client's address (`Retry-After`).
    TooManyFailures,
}

/// A token-service refusal.
#[derive(Debug)]
pub struct OAuthError {
    code: OAuthErrorCode,
    description: String,
    /// A routing answer's own status (404, 405) instead of the code's.
    status: Option<StatusCode>,
    /// When to retry (429, 503).
    retry_after: Option<Duration>,
}

impl OAuthError {
    /// A refusal with a description safe to show.
    pub fn new(code: OAuthErrorCode, description: impl Into<String>) -> Self {
        Self {
            code,
            description: description.into(),
            status: None,
            retry_after: None,
        }
    }

    /// With a `Retry-After` of `wait`.
    pub fn retry_after(mut self, wait: Option<Duration>) -> Self {
        self.retry_after = wait;
        self
    }
}

impl From<GatewayError> for OAuthError {
    fn from(error: GatewayError) -> Self {
        error.log("oauth");
        match error.kind {
            ErrorKind::Unavailable { .. } | ErrorKind::Internal => Self::new(
                OAuthErrorCode::TemporarilyUnavailable,
                "the token service is unavailable; retry later",
            ),
            ErrorKind::RouteNotFound => Self {
                status: Some(StatusCode::NOT_FOUND),
                ..Self::new(OAuthErrorCode::InvalidRequest, error.message)
            },
            ErrorKind::MethodNotAllowed => Self {
                status: Some(StatusCode::METHOD_NOT_ALLOWED),
                ..Self::new(
                    OAuthErrorCode::InvalidRequest,
                    "the token endpoint takes POST only",
                )
            },
            _ => Self::new(OAuthErrorCode::InvalidRequest, error.message),
        }
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let (status, code) = match self.code {
            OAuthErrorCode::InvalidRequest => {
                (StatusCode::BAD_REQUEST, OAuthErrorName::InvalidRequest)
            }
            OAuthErrorCode::InvalidClient => {
                (StatusCode::UNAUTHORIZED, OAuthErrorName::InvalidClient)
            }
            OAuthErrorCode::UnsupportedGrantType => (
                StatusCode::BAD_REQUEST,
                OAuthErrorName::UnsupportedGrantType,
            ),
            OAuthErrorCode::TemporarilyUnavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                OAuthErrorName::TemporarilyUnavailable,
            ),
            OAuthErrorCode::TooManyFailures => (
                StatusCode::TOO_MANY_REQUESTS,
                OAuthErrorName::TemporarilyUnavailable,
            ),
        };
        let status = self.status.unwrap_or(status);
        tracing::info!(error = code.as_str(), "token refused");
        let body = OAuthErrorBody {
            error: code,
            error_description: self.description,
        };
        let mut response = (status, Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
        if status == StatusCode::UNAUTHORIZED {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"sombus\", charset=\"UTF-8\""),
            );
        }
        if status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS {
            let wait = self.retry_after.unwrap_or(UNAVAILABLE_RETRY);
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_seconds(wait)),
            );
        }
        response
    }
}

/// A token-service refusal (RFC 6749 §5.2).
#[derive(Serialize, ToSchema)]
pub struct OAuthErrorBody {
    /// The error code.
    pub error: OAuthErrorName,
    /// What went wrong, safe to show.
    pub error_description: String,
}

/// RFC 6749 §5.2's error codes the token service answers.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OAuthErrorName {
    /// A parameter missing, repeated or malformed, or a body that is not form-encoded (400).
    InvalidRequest,
    /// Client authentication failed (401).
    InvalidClient,
    /// Not `client_credentials` (400).
    UnsupportedGrantType,
    /// The token service can't answer now, or too many failed attempts came from your
    /// address (503, 429; retry after `Retry-After`).
    TemporarilyUnavailable,
}

impl OAuthErrorName {
    /// The code as it is written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidClient => "invalid_client",
            Self::UnsupportedGrantType => "unsupported_grant_type",
            Self::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }
}

/// A refusal in the bus's usual body.
#[derive(Serialize)]
pub struct BusRefusal {
    accepted: bool,
    violations: [Violation; 1],
}

#[derive(Serialize)]
struct Violation {
    rule: &'static str,
    message: String,
}

impl BusRefusal {
    /// The refusal of one rule.
    pub fn new(rule: &'static str, message: String) -> Self {
        Self {
            accepted: false,
            violations: [Violation { rule, message }],
        }
    }
}
