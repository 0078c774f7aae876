//! The ezgh pull-consumer API: receive with an API key, acknowledge and change visibility by handle.

pub mod config;
mod error;
pub mod openapi;
mod routes;
mod wire;

pub use error::EzghError;
pub use routes::EzghState;
