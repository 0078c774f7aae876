//! # sqs-gateway
//!
//! Simple, safe HTTPS queue APIs in front of Amazon SQS.
//!
//! # Architecture
//!
//! ```text
//!  HTTP clients ──> server           accept loop: connection limit, head/idle/body deadlines
//!                      │
//!                      v
//!                  api::<dialect>     wire types, routes, the dialect's auth and error shape;
//!                      │              api::edge answers what no handler does, in that shape
//!                      v
//!                  core::Gateway      queue registry, sealed receipt handles, delivery ledger,
//!                      │              credentials, rate limits, SQS content rules, one error
//!                      v
//!                  backend::Backend   one trait; `sqs` talks to Amazon SQS or LocalStack,
//!                                     `embedded` is the in-process engine
//! ```
//!
//! Data flows down and back up once: a dialect parses its wire request into core types, the core
//! authorizes, translates handles and consults the ledger, the backend makes one batched call, and
//! the dialect renders the answer. No dialect talks to a backend directly; no backend knows a dialect.

pub mod api;
pub mod backend;
pub mod bench;
pub mod config;
pub mod core;
pub mod server;
pub mod setup;
pub mod telemetry;
