//! The HTTP dialects: each turns its wire format into core calls and renders the answers. What
//! they share (the plug, body reading, JSON and OpenAPI helpers) is `common/`, which names no
//! dialect; the server assembles them.

pub mod basaltic;
pub mod common;
pub mod ezgh;
pub mod sombus;
pub mod sqs;
