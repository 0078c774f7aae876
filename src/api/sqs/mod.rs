//! The SQS wire protocol (AWS JSON 1.0), so AWS SDKs and tools can use the gateway as an SQS endpoint.

pub mod config;
mod error;
mod md5;
mod query;
mod routes;
pub mod sigv4;
mod wire;

pub use routes::{ACCOUNT, BODY_LIMIT, SqsKeys, SqsState, error_response};

/// Whether `path` is one the SQS endpoint serves (`/`, or a queue URL it hands out).
pub fn serves_path(path: &str) -> bool {
    path == "/" || path.starts_with(&format!("/{ACCOUNT}/"))
}
