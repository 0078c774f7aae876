//! The HTTP tier: the real gateway on `127.0.0.1:0`, its APIs driven over sockets by real clients
//! (the AWS SDK, reqwest, boto3), one behavioural suite on both backends (`on_both_backends!`:
//! LocalStack, the embedded engine, LocalStack with the state in Redis). One folder per dialect
//! for what that dialect's API does, and one per concern that crosses the dialects.

pub mod basaltic;
mod console;
pub mod ezgh;
mod pause;
pub mod push;
mod service;
pub mod sombus;
pub mod sqs;
pub mod state;
