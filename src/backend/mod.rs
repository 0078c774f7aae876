//! The backend adapters, each implementing the core's [`Backend`](crate::core::backend::Backend)
//! port: `sqs` for Amazon SQS or LocalStack, `embedded` for the in-process engine.

pub mod embedded;
pub mod sqs;
