//! The gateway's own vocabulary: everything between a dialect and a backend.

pub mod access;
pub mod alias;
pub mod attribute_names;
pub mod attributes;
pub mod backend;
pub mod clock;
pub mod delivery_pause;
pub mod error;
pub mod gateway;
pub mod handle;
pub mod limits;
pub mod log_throttle;
pub mod message_filter;
pub mod message_rules;
pub mod metrics;
pub mod model;
pub mod operation;
pub mod push;
pub mod registry;
pub mod request_scope;
pub mod spans;
pub mod sqs_limits;
pub mod state;
pub mod trace_context;

pub use error::{ErrorKind, GatewayError};
pub use gateway::Gateway;
