//! The one domain error every dialect renders in its own documented shape.
//!
//! `message` is safe to show a client; `source` is internal detail that only reaches the log.

use std::time::Duration;

/// What went wrong, in the gateway's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is malformed (not JSON, wrong type, unknown field).
    InvalidRequest,
    /// A field is outside its documented range.
    OutOfRange,
    /// The request body is larger than the route accepts.
    PayloadTooLarge,
    /// No credential, or a credential the gateway does not know.
    Unauthenticated,
    /// A valid credential without the needed permission.
    PermissionDenied,
    /// The queue does not exist (in this project, or any more in the backend).
    QueueNotFound,
    /// The queue has as many messages in flight as it may; a receive gets none until some end.
    OverLimit,
    /// Over a limit; retry after the given time.
    RateLimited {
        /// When the caller may try again.
        retry_after: Duration,
        /// Which limit: a request rate, or a daily quota.
        scope: LimitScope,
    },
    /// The backend cannot be reached or is throttling; retry after the given time.
    Unavailable {
        /// When the caller may try again.
        retry_after: Duration,
    },
    /// A bug or an unexpected backend answer; details are logged only.
    Internal,
    /// A queue of that name exists with other settings.
    AlreadyExists,
    /// A thing the request names (other than a queue) does not exist.
    ResourceNotFound,
    /// The request conflicts with the state of the resource (say, a purge already running).
    Conflict,
    /// The gateway (its backend) cannot do this at all.
    Unsupported,
    /// No route serves the request's path.
    RouteNotFound,
    /// The route exists, not with this method.
    MethodNotAllowed,
    /// The client did not send its request (its body) in time.
    RequestTimeout,
    /// The request line is too long to route.
    UriTooLong,
}

/// Which limit a caller went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitScope {
    /// A request rate (with a burst).
    Rate,
    /// A number of requests a day.
    DailyQuota,
}

/// A failed gateway operation.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct GatewayError {
    /// The category, which decides status code and error code per dialect.
    pub kind: ErrorKind,
    /// A message safe to return to the client.
    pub message: String,
    /// Internal detail for the log; never rendered.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl GatewayError {
    /// An error with a client-safe message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// Attaches internal detail that goes to the log, never to the client.
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        self.source = Some(source.into());
        self
    }

    /// A malformed request.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest, message)
    }

    /// A field outside its documented range.
    pub fn out_of_range(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::OutOfRange, message)
    }

    /// No credential, or one the gateway does not know.
    pub fn unauthenticated() -> Self {
        Self::new(ErrorKind::Unauthenticated, "missing or invalid credential")
    }

    /// A valid credential without the permission.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::PermissionDenied, message)
    }

    /// The queue does not exist.
    pub fn queue_not_found() -> Self {
        Self::new(ErrorKind::QueueNotFound, "no such queue")
    }

    /// The backend is down or throttling.
    pub fn unavailable(retry_after: Duration) -> Self {
        Self::new(
            ErrorKind::Unavailable { retry_after },
            "the queue service is unavailable; retry later",
        )
    }

    /// A bug or an unexpected answer; `source` goes to the log only.
    pub fn internal(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::new(ErrorKind::Internal, "internal error").with_source(source)
    }

    /// Seconds a client should wait, for errors that carry one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self.kind {
            ErrorKind::RateLimited { retry_after, .. } | ErrorKind::Unavailable { retry_after } => {
                Some(retry_after)
            }
            _ => None,
        }
    }

    /// Logs the error once, with its internal source, at a level fitting its kind.
    pub fn log(&self, operation: &str) {
        let source = self.source.as_ref().map(|s| s.to_string());
        match self.kind {
            ErrorKind::Internal => {
                tracing::error!(operation, error = %self.message, source = ?source, "request failed")
            }
            ErrorKind::Unavailable { .. } => {
                // An outage fails every request alike: one line per 10 s, with how many.
                if let Some(failed) = unavailable_due() {
                    tracing::warn!(operation, error = %self.message, source = ?source, failed, "unavailable")
                }
            }
            _ => tracing::debug!(operation, error = %self.message, "request refused"),
        }
    }
}

/// Unavailable answers are logged at most this often, with how many there were since.
const UNAVAILABLE_LOG_EVERY: Duration = Duration::from_secs(10);

/// Counts one unavailable answer; `Some(count since the last line)` when one is due.
fn unavailable_due() -> Option<u64> {
    static LOGGED: std::sync::Mutex<crate::core::log_throttle::LogThrottle> = std::sync::Mutex::new(
        crate::core::log_throttle::LogThrottle::new(UNAVAILABLE_LOG_EVERY),
    );
    LOGGED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .due()
}

/// A setting that cannot be used: its dotted path in the config, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SettingError {
    /// The setting's dotted path.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl SettingError {
    /// The setting at `field` is wrong for `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
impl ErrorKind {
    /// One of each kind (with `wait` where a kind carries a delay), for the dialects' tests that
    /// every kind has a documented answer.
    pub(crate) fn every_kind(wait: Duration) -> Vec<ErrorKind> {
        vec![
            ErrorKind::InvalidRequest,
            ErrorKind::OutOfRange,
            ErrorKind::PayloadTooLarge,
            ErrorKind::Unauthenticated,
            ErrorKind::PermissionDenied,
            ErrorKind::QueueNotFound,
            ErrorKind::OverLimit,
            ErrorKind::RateLimited {
                retry_after: wait,
                scope: LimitScope::Rate,
            },
            ErrorKind::Unavailable { retry_after: wait },
            ErrorKind::Internal,
            ErrorKind::AlreadyExists,
            ErrorKind::ResourceNotFound,
            ErrorKind::Conflict,
            ErrorKind::Unsupported,
            ErrorKind::RouteNotFound,
            ErrorKind::MethodNotAllowed,
            ErrorKind::RequestTimeout,
            ErrorKind::UriTooLong,
        ]
    }
}
