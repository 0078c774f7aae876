//! The SQS wire protocol (AWS JSON 1.0), so AWS SDKs and tools can use the gateway as an SQS endpoint.

mod error;
mod md5;
mod query;
mod routes;
pub mod sigv4;
mod wire;

pub use routes::{SqsCredential, SqsState, router};
