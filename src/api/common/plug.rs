//! The one shape every dialect plugs into the server with: what it is built from
//! ([`PlugContext`]), its routes, document and upkeep ([`Dialect`]), and what the server's edge
//! needs to answer a request no handler of it reached (a wrong method, a request that ran too
//! long, a connection over the limit) in its documented error shape ([`EdgeShape`]).

use crate::core::clock::Clock;
use crate::core::handle::Keyring;
use crate::core::limits::Allowance;
use crate::core::metrics::sample_history::SampleHistory;
use crate::core::{ErrorKind, Gateway, GatewayError};
use crate::credentials::oauth::ConnectionStore;
use axum::extract::Request;
use axum::response::Response;
use std::num::NonZeroU32;
use std::sync::Arc;

/// What the server hands each dialect's `plug`, besides the dialect's own config section and
/// key set: the core, and the service-wide parts and stores a dialect may read.
pub struct PlugContext {
    /// The core every dialect calls.
    pub gateway: Arc<Gateway>,
    /// The service's clock.
    pub clock: Arc<dyn Clock>,
    /// The receipt keyring (sombus derives its token keys from it).
    pub keyring: Keyring,
    /// Whether the API listener serves TLS (`[server.tls]`): public URLs default to `https`.
    pub tls: bool,
    /// Receive allowances per gateway queue (`[queues.*] rate_limit`).
    pub queue_allowances: Vec<(String, Allowance)>,
    /// Invalid receipt handles a caller may present a minute (`[server]`).
    pub invalid_handles_per_minute: NonZeroU32,
    /// Where queue depth samples are kept (basaltic's metrics).
    pub sample_history: Arc<dyn SampleHistory>,
    /// Where sombus connections are kept.
    pub credentials: Arc<ConnectionStore>,
    /// Whether this process alone can be making connections in `credentials`.
    pub credentials_exclusive: bool,
}

/// An OpenAPI document a dialect serves: its path and how it is made.
#[derive(Debug, Clone, Copy)]
pub struct Document {
    /// Where it is served (`/openapi/{dialect}.json`).
    pub path: &'static str,
    /// Makes it from the dialect's code.
    pub make: fn() -> utoipa::openapi::OpenApi,
}

/// What a dialect plugs into the server: its routes, its edge shape, and upkeep to run beside
/// them.
pub trait Dialect: Send + Sync + 'static {
    /// The dialect's routes, holding its state.
    fn router(self: Arc<Self>) -> axum::Router;

    /// The paths it serves and how it answers there outside its handlers.
    fn edge(&self) -> &'static dyn EdgeShape;

    /// Upkeep the server runs once a minute (most dialects have none).
    fn housekeeping(&self) {}

    /// Its OpenAPI document, if it has one.
    fn document(&self) -> Option<Document> {
        None
    }
}

/// A dialect as the server's edge sees it: needing no state, so that an answer can be made
/// before (or without) a handler, from what the request line and head say.
pub trait EdgeShape: Send + Sync + 'static {
    /// The dialect's name as metrics label requests (a closed set).
    fn name(&self) -> &'static str;

    /// Whether `path` (no query) is one of the dialect's.
    fn serves(&self, path: &str) -> bool;

    /// `error` in the dialect's documented shape, for a request to one of its paths.
    fn render(&self, hints: &RequestHints, error: GatewayError) -> Response;
}

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

/// The answer to a known route of `shape`'s dialect with the wrong method. Dialects set it
/// before their layers, so that layers such as CORS still see preflight requests:
/// `.method_not_allowed_fallback(|request| method_not_allowed(&MyEdge, request))`.
pub async fn method_not_allowed(shape: &'static dyn EdgeShape, request: Request) -> Response {
    let error = GatewayError::new(
        ErrorKind::MethodNotAllowed,
        "method not allowed on this route",
    );
    shape.render(&RequestHints::of(&request), error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_line_gives_the_path_without_its_query() {
        let hints = RequestHints::from_request_line(b"POST /v1/receipts/ack?x=1 HTTP/1.1");
        assert_eq!(hints.path, "/v1/receipts/ack");
        assert_eq!(
            RequestHints::from_request_line(b"GET /?Action=ListQueues&").path,
            "/"
        );
        assert_eq!(RequestHints::from_request_line(b"GARBAGE").path, "/");
    }
}
