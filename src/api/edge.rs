//! Answers that arise outside any dialect's handler (no such route, a wrong method, a request line
//! too long to route, a request that ran too long, a connection over the limit), rendered in the
//! shape of the dialect whose path the request named: SQS's for its endpoint, sombus's bus body
//! (OAuth 2.0's for its token service), the JSON `{"error", "message"}` of ezgh (and the probes)
//! everywhere else.

use crate::core::{ErrorKind, GatewayError};
use axum::extract::Request;
use axum::response::{IntoResponse, Response};

/// What an edge answer needs to know of the request.
#[derive(Debug, Clone, Default)]
pub struct RequestHints {
    /// The request path (no query).
    pub path: String,
    /// The request named an SQS JSON 1.0 action (`X-Amz-Target`).
    pub sqs_json: bool,
}

impl RequestHints {
    /// The hints of a parsed request.
    pub fn of<B>(request: &axum::http::Request<B>) -> Self {
        Self {
            path: request.uri().path().to_owned(),
            sqs_json: request.headers().contains_key("x-amz-target"),
        }
    }

    /// The dialect the path belongs to, as metrics label it (a closed set).
    pub fn dialect(&self) -> &'static str {
        let path = self.path.as_str();
        if super::sqs::serves_path(path) {
            "sqs"
        } else if super::basaltic::serves_path(path) {
            "basaltic"
        } else if super::sombus::serves_path(path) {
            "sombus"
        } else if path.starts_with("/v1/organizations/") || path.starts_with("/v1/receipts/") {
            "ezgh"
        } else if matches!(path, "/healthz" | "/readyz" | "/metrics") {
            "service"
        } else if path.starts_with("/openapi/") {
            "openapi"
        } else {
            "unknown"
        }
    }

    /// The hints of the first bytes of a request line (`METHOD target HTTP/1.1`): its path.
    pub fn from_request_line(line: &[u8]) -> Self {
        let text = String::from_utf8_lossy(line);
        let target = text.split(' ').nth(1).unwrap_or("/");
        let path = target.split(['?', '#']).next().unwrap_or("/");
        Self {
            path: path.to_owned(),
            sqs_json: false,
        }
    }
}

/// The error in the shape of the dialect the request's path belongs to.
pub fn error_response(hints: &RequestHints, error: GatewayError) -> Response {
    if super::sqs::serves_path(&hints.path) {
        super::sqs::error_response(hints.sqs_json, error)
    } else if super::basaltic::serves_path(&hints.path) {
        super::basaltic::BasalticError::from(error).into_response()
    } else if super::sombus::serves_path(&hints.path) {
        super::sombus::edge_response(&hints.path, error)
    } else {
        super::ezgh::EzghError(error).into_response()
    }
}

/// The answer to a known route with the wrong method. Dialects set it before their layers, so
/// that layers such as CORS still see preflight requests.
pub async fn method_not_allowed(request: Request) -> Response {
    let error = GatewayError::new(
        ErrorKind::MethodNotAllowed,
        "method not allowed on this route",
    );
    error_response(&RequestHints::of(&request), error)
}

/// The answer to a path no route serves.
pub async fn not_found(request: Request) -> Response {
    let error = GatewayError::new(ErrorKind::RouteNotFound, "no such route");
    error_response(&RequestHints::of(&request), error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_line_names_the_dialect() {
        let ezgh = RequestHints::from_request_line(b"POST /v1/receipts/ack?x=1 HTTP/1.1");
        assert_eq!(ezgh.path, "/v1/receipts/ack");
        let sqs = RequestHints::from_request_line(b"GET /?Action=ListQueues&");
        assert!(super::super::sqs::serves_path(&sqs.path));
        let queue = RequestHints::from_request_line(b"POST /000000000000/orders");
        assert!(super::super::sqs::serves_path(&queue.path));
        assert!(!super::super::sqs::serves_path(&ezgh.path));
    }
}
