//! The service's own paths (the probes and metrics scrape, the OpenAPI documents, the web
//! console) as the edge sees them, and the shape they and paths no dialect serves answer in.

use crate::api::common::{EdgeShape, RequestHints};
use crate::core::GatewayError;
use axum::response::Response;

/// How the service's own paths and paths no dialect serves are answered: in ezgh's
/// `{"error", "message"}` JSON, the plainest of the four.
pub const FALLBACK: &dyn EdgeShape = &crate::api::ezgh::EzghEdge;

/// The service's own paths, answered in the [`FALLBACK`] shape: the probes and metrics scrape
/// ([`SERVICE`]), the OpenAPI documents ([`DOCUMENTS`]) and the web console ([`CONSOLE`]).
#[derive(Debug, Clone, Copy)]
pub struct OwnPaths {
    name: &'static str,
    serves: fn(&str) -> bool,
}

/// `/healthz`, `/readyz` and `/metrics`.
pub const SERVICE: OwnPaths = OwnPaths {
    name: "service",
    serves: |path| matches!(path, "/healthz" | "/readyz" | "/metrics"),
};

/// `/console` and its assets.
pub const CONSOLE: OwnPaths = OwnPaths {
    name: "console",
    serves: |path| path == "/console" || path.starts_with("/console/"),
};

/// `/openapi/…`.
pub const DOCUMENTS: OwnPaths = OwnPaths {
    name: "openapi",
    serves: |path| path.starts_with("/openapi/"),
};

impl EdgeShape for OwnPaths {
    fn name(&self) -> &'static str {
        self.name
    }

    fn serves(&self, path: &str) -> bool {
        (self.serves)(path)
    }

    fn render(&self, hints: &RequestHints, error: GatewayError) -> Response {
        FALLBACK.render(hints, error)
    }
}
