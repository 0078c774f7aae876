//! Renders errors as SQS does in the JSON protocol: `__type`, `message`, and `x-amzn-query-error`.

use crate::core::limits::retry_after_seconds;
use crate::core::model::{EntryError, EntryErrorKind};
use crate::core::{ErrorKind, GatewayError};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::time::Duration;

/// An SQS error on its way out.
#[derive(Debug)]
pub(super) struct SqsError {
    pub status: StatusCode,
    /// The JSON `__type` name, e.g. `QueueDoesNotExist`.
    pub code: &'static str,
    /// The Query protocol code, e.g. `AWS.SimpleQueueService.NonExistentQueue`.
    pub query_code: &'static str,
    /// Whether the caller is at fault.
    pub sender: bool,
    pub message: String,
    pub retry_after: Option<Duration>,
}

impl SqsError {
    /// A client error whose JSON and Query codes are the same.
    pub(super) fn sender(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code,
            query_code: code,
            sender: true,
            message: message.into(),
            retry_after: None,
        }
    }

    /// A batch error: JSON `__type` is the shape name, the Query code has SQS's prefix.
    pub(super) fn batch(shape: &'static str, message: impl Into<String>) -> Self {
        let query_code = match shape {
            "EmptyBatchRequest" => "AWS.SimpleQueueService.EmptyBatchRequest",
            "TooManyEntriesInBatchRequest" => "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
            "InvalidBatchEntryId" => "AWS.SimpleQueueService.InvalidBatchEntryId",
            "BatchEntryIdsNotDistinct" => "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
            "BatchRequestTooLong" => "AWS.SimpleQueueService.BatchRequestTooLong",
            other => other,
        };
        Self {
            query_code,
            ..Self::sender(shape, message)
        }
    }

    pub(super) fn invalid_parameter(message: impl Into<String>) -> Self {
        Self::sender("InvalidParameterValue", message)
    }

    pub(super) fn missing_parameter(name: &str) -> Self {
        Self::sender(
            "MissingParameter",
            format!("The request must contain the parameter {name}."),
        )
    }

    pub(super) fn queue_does_not_exist() -> Self {
        Self {
            query_code: "AWS.SimpleQueueService.NonExistentQueue",
            ..Self::sender("QueueDoesNotExist", "The specified queue does not exist.")
        }
    }

    /// An action this gateway does not serve (SQS's `UnsupportedOperation`).
    pub(super) fn unsupported(message: impl Into<String>) -> Self {
        Self {
            query_code: "AWS.SimpleQueueService.UnsupportedOperation",
            ..Self::sender("UnsupportedOperation", message)
        }
    }

    /// SQS's refusal of a second purge within the minute.
    pub(super) fn purge_in_progress(queue: &str) -> Self {
        Self {
            query_code: "AWS.SimpleQueueService.PurgeQueueInProgress",
            ..Self::sender(
                "PurgeQueueInProgress",
                format!("Only one PurgeQueue operation on {queue} is allowed every 60 seconds."),
            )
        }
        .with_status(StatusCode::FORBIDDEN)
    }

    /// SQS's refusal of a queue name deleted within the minute.
    pub(super) fn queue_deleted_recently() -> Self {
        Self {
            query_code: "AWS.SimpleQueueService.QueueDeletedRecently",
            ..Self::sender(
                "QueueDeletedRecently",
                "You must wait 60 seconds after deleting a queue before you can create another with the same name.",
            )
        }
    }

    pub(super) fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }
}

impl From<EntryError> for SqsError {
    fn from(error: EntryError) -> Self {
        let code = match error.kind {
            EntryErrorKind::InvalidParameter | EntryErrorKind::Refused => "InvalidParameterValue",
            EntryErrorKind::InvalidContents => "InvalidMessageContents",
            EntryErrorKind::MissingParameter => "MissingParameter",
        };
        SqsError::sender(code, error.message)
    }
}

impl From<GatewayError> for SqsError {
    fn from(error: GatewayError) -> Self {
        error.log("sqs");
        let retry_after = error.retry_after();
        let mut rendered = match error.kind {
            ErrorKind::InvalidRequest | ErrorKind::OutOfRange => {
                SqsError::invalid_parameter(error.message)
            }
            ErrorKind::PayloadTooLarge => SqsError::sender("RequestEntityTooLarge", error.message)
                .with_status(StatusCode::PAYLOAD_TOO_LARGE),
            ErrorKind::Unsupported => SqsError::unsupported(error.message),
            ErrorKind::Conflict => SqsError::invalid_parameter(error.message),
            ErrorKind::ResourceNotFound => {
                SqsError::sender("ResourceNotFoundException", error.message)
                    .with_status(StatusCode::NOT_FOUND)
            }
            ErrorKind::AlreadyExists => SqsError {
                query_code: "QueueAlreadyExists",
                ..SqsError::sender("QueueNameExists", error.message)
            },
            ErrorKind::RouteNotFound => {
                SqsError::sender("InvalidAddress", error.message).with_status(StatusCode::NOT_FOUND)
            }
            ErrorKind::MethodNotAllowed => SqsError::sender("InvalidAction", error.message)
                .with_status(StatusCode::METHOD_NOT_ALLOWED),
            ErrorKind::RequestTimeout => SqsError::sender("RequestTimeout", error.message)
                .with_status(StatusCode::REQUEST_TIMEOUT),
            ErrorKind::UriTooLong => SqsError::sender("RequestURITooLong", error.message)
                .with_status(StatusCode::URI_TOO_LONG),
            ErrorKind::Unauthenticated => SqsError::sender("InvalidClientTokenId", error.message)
                .with_status(StatusCode::FORBIDDEN),
            ErrorKind::PermissionDenied => {
                SqsError::sender("AccessDenied", error.message).with_status(StatusCode::FORBIDDEN)
            }
            ErrorKind::QueueNotFound => SqsError::queue_does_not_exist(),
            ErrorKind::OverLimit => {
                SqsError::sender("OverLimit", error.message).with_status(StatusCode::FORBIDDEN)
            }
            ErrorKind::RateLimited { .. } => SqsError::sender("RequestThrottled", error.message)
                .with_status(StatusCode::FORBIDDEN),
            ErrorKind::Unavailable { .. } => SqsError {
                sender: false,
                ..SqsError::sender("ServiceUnavailable", error.message)
                    .with_status(StatusCode::SERVICE_UNAVAILABLE)
            },
            ErrorKind::Internal => SqsError {
                sender: false,
                ..SqsError::sender("InternalFailure", "internal error")
                    .with_status(StatusCode::INTERNAL_SERVER_ERROR)
            },
        };
        rendered.retry_after = retry_after;
        rendered
    }
}

/// The JSON 1.0 `__type` of an error code: SQS names two of its shapes apart from the code the
/// Query protocol and `x-amzn-query-error` carry.
fn json_type(code: &'static str) -> &'static str {
    match code {
        "InvalidParameterValue" => "InvalidParameterValueException",
        "MissingParameter" => "MissingRequiredParameterException",
        other => other,
    }
}

impl IntoResponse for SqsError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "__type": format!("com.amazonaws.sqs#{}", json_type(self.code)),
            "message": self.message,
        });
        let mut response = (self.status, body.to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-amz-json-1.0"),
        );
        let fault = if self.sender { "Sender" } else { "Receiver" };
        if let Ok(value) = HeaderValue::from_str(&format!("{};{fault}", self.query_code)) {
            headers.insert("x-amzn-query-error", value);
        }
        if let Some(wait) = self.retry_after {
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_seconds(wait)),
            );
        }
        response
    }
}
