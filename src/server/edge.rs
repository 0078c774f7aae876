//! Answers that arise outside any dialect's handler (no such route, a wrong method, a request line
//! too long to route, a request that ran too long, a connection over the limit), rendered in the
//! shape of the dialect whose path the request named, and the dialect each request is counted
//! under. The edge loops over the shapes the plugged dialects give; the service's own paths (the
//! probes, the metrics scrape, the OpenAPI documents) and paths no dialect serves are answered in
//! the [`FALLBACK`] shape (`own_paths`).

use super::own_paths::FALLBACK;
use crate::api::common::{EdgeShape, RequestHints};
use crate::core::{ErrorKind, GatewayError};
use axum::extract::Request;
use axum::response::Response;
use std::sync::Arc;

/// The shapes of the plugged dialects, asked in turn.
#[derive(Clone)]
pub struct Edge {
    shapes: Arc<[&'static dyn EdgeShape]>,
}

impl std::fmt::Debug for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.shapes.iter().map(|shape| shape.name()).collect();
        f.debug_struct("Edge").field("shapes", &names).finish()
    }
}

/// What metrics call a request to a path no shape serves.
const UNKNOWN: &str = "unknown";

impl Edge {
    /// The edge over `shapes` (no two may serve one path; the first that does answers).
    pub fn new(shapes: impl IntoIterator<Item = &'static dyn EdgeShape>) -> Self {
        Self {
            shapes: shapes.into_iter().collect(),
        }
    }

    fn shape_of(&self, path: &str) -> Option<&'static dyn EdgeShape> {
        self.shapes.iter().copied().find(|shape| shape.serves(path))
    }

    /// The dialect the request's path belongs to, as metrics label it (a closed set).
    pub fn label(&self, hints: &RequestHints) -> &'static str {
        self.shape_of(&hints.path)
            .map_or(UNKNOWN, |shape| shape.name())
    }

    /// The error in the shape of the dialect the request's path belongs to.
    pub fn error_response(&self, hints: &RequestHints, error: GatewayError) -> Response {
        self.shape_of(&hints.path)
            .unwrap_or(FALLBACK)
            .render(hints, error)
    }

    /// The answer to a path no route serves.
    pub fn not_found(&self, request: &Request) -> Response {
        let error = GatewayError::new(ErrorKind::RouteNotFound, "no such route");
        self.error_response(&RequestHints::of(request), error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::basaltic::BasalticEdge;
    use crate::api::ezgh::EzghEdge;
    use crate::api::sombus::SombusEdge;
    use crate::api::sqs::SqsEdge;
    use crate::server::own_paths::{CONSOLE, DOCUMENTS, SERVICE};

    fn edge() -> Edge {
        Edge::new([
            &SqsEdge as &dyn EdgeShape,
            &BasalticEdge,
            &SombusEdge,
            &EzghEdge,
            &SERVICE,
            &DOCUMENTS,
            &CONSOLE,
        ])
    }

    #[test]
    fn the_request_line_names_the_dialect() {
        let edge = edge();
        let label = |line: &[u8]| edge.label(&RequestHints::from_request_line(line));
        assert_eq!(label(b"POST /v1/receipts/ack?x=1 HTTP/1.1"), "ezgh");
        assert_eq!(label(b"GET /?Action=ListQueues&"), "sqs");
        assert_eq!(label(b"POST /000000000000/orders"), "sqs");
        assert_eq!(label(b"GET /v1/queues/abc/messages"), "basaltic");
        assert_eq!(label(b"POST /v1/oauth/token"), "sombus");
        assert_eq!(label(b"GET /readyz"), "service");
        assert_eq!(label(b"GET /openapi/ezgh.json"), "openapi");
        assert_eq!(label(b"GET /console/app.js"), "console");
        assert_eq!(label(b"GET /nowhere"), UNKNOWN);
    }

    #[test]
    fn no_two_shapes_serve_one_path() {
        let shapes = [
            &SqsEdge as &dyn EdgeShape,
            &BasalticEdge,
            &SombusEdge,
            &EzghEdge,
            &SERVICE,
            &DOCUMENTS,
        ];
        for path in [
            "/",
            "/000000000000/q",
            "/v1/queues",
            "/v1/queues/x",
            "/v1/tenants/t/consumers/c/messages",
            "/v1/admin/x",
            "/v1/oauth/token",
            "/v1/organizations/o",
            "/v1/receipts/ack",
            "/healthz",
            "/metrics",
            "/openapi/sombus.json",
        ] {
            let serving = shapes.iter().filter(|shape| shape.serves(path)).count();
            assert_eq!(serving, 1, "{path}");
        }
    }
}
