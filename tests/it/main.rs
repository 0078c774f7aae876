//! Integration tests: the real gateway on 127.0.0.1:0 in front of a real LocalStack.
//!
//! LocalStack must answer at `LOCALSTACK_ENDPOINT` (default http://127.0.0.1:4566); start it with
//! `localstack/start.sh`. Every test makes its own randomly named queues and its own gateway.

#![allow(clippy::unwrap_used)]

mod cli;
mod ezgh_receipts;
mod ezgh_receive;
mod harness;
mod service;
