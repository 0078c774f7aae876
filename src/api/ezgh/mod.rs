//! The ezgh pull-consumer API: receive with an API key, acknowledge and change visibility by handle.

mod error;
mod routes;
mod wire;

pub use error::EzghError;
pub use routes::{EzghState, router};
