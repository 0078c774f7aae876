//! What every dialect shares and nothing dialect-specific: the plug a dialect fits into the
//! server, the base URL answers hand out, reading a body, a request's bearer token and address,
//! hand-parsed JSON bodies, the one table per body that both the parser and the OpenAPI document
//! read, and the pieces of OpenAPI documents. Nothing here names a dialect.

pub mod body;
pub(crate) mod body_shape;
pub mod caller;
pub(crate) mod json;
pub mod openapi;
pub mod plug;
pub mod public_url;

pub use body::{BodyTimedOut, read_body};
pub use caller::{ClientAddress, ClientAddressPolicy, bearer_token, traceparent};
pub use plug::{Dialect, Document, EdgeShape, PlugContext, RequestHints, method_not_allowed};
pub use public_url::PublicUrl;
