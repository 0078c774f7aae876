//! The ezgh pull-consumer API: receive with an API key, acknowledge and change visibility by handle.

pub mod config;
mod error;
pub mod openapi;
mod router;
mod routes;
mod wire;

pub use error::EzghError;
pub use router::plug;
pub use routes::EzghState;

use crate::api::common::{EdgeShape, RequestHints};
use crate::core::GatewayError;
use axum::response::IntoResponse as _;

/// The ezgh API as the server's edge sees it: its organization and receipt paths, answered in
/// its `{"error", "message"}` shape.
#[derive(Debug, Clone, Copy)]
pub struct EzghEdge;

impl EdgeShape for EzghEdge {
    fn name(&self) -> &'static str {
        "ezgh"
    }

    fn serves(&self, path: &str) -> bool {
        path.starts_with("/v1/organizations/") || path.starts_with("/v1/receipts/")
    }

    fn render(&self, _hints: &RequestHints, error: GatewayError) -> axum::response::Response {
        EzghError(error).into_response()
    }
}
