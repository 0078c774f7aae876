//! The SQS wire protocol (AWS JSON 1.0), so AWS SDKs and tools can use the gateway as an SQS endpoint.

mod action;
mod answers;
pub mod config;
mod error;
mod md5;
mod op;
mod query;
pub mod regions;
mod routes;
pub mod sigv4;
pub mod time_rules;
mod wire;

pub use routes::{ACCOUNT, BODY_LIMIT, SqsKeys, SqsState, error_response, plug};

use crate::api::common::{EdgeShape, RequestHints};
use crate::core::GatewayError;

/// The SQS endpoint as the server's edge sees it: `/` and the queue URLs it hands out, answered
/// in the protocol the request named (JSON 1.0 with `X-Amz-Target`, the Query protocol's XML
/// otherwise).
#[derive(Debug, Clone, Copy)]
pub struct SqsEdge;

impl EdgeShape for SqsEdge {
    fn name(&self) -> &'static str {
        "sqs"
    }

    fn serves(&self, path: &str) -> bool {
        path == "/" || regions::serves(path)
    }

    fn render(&self, hints: &RequestHints, error: GatewayError) -> axum::response::Response {
        error_response(hints.sqs_json, error)
    }
}
