//! What the integration tests share: a gateway started for one test on any backend kind, the
//! services it needs, the test keys and names, and the calls and scrapes tests make on it. Tests
//! import from here (`use crate::harness::…`); each file below holds one concern. The OpenAPI
//! documents' readers and the README's blocks keep their own modules (`harness::openapi::…`,
//! `harness::readme::…`): their names are too plain to share the top.

mod calls;
mod gateway;
mod keys;
mod localstack;
mod logs;
mod metrics;
mod names;
pub mod openapi;
pub mod readme;
mod redis;
mod services;

pub use calls::{Answer, answer, answer_of, handle_of, invalid, ok, results, stale};
pub use gateway::{GatewayBuilder, QueueSpec, TestGateway};
pub use keys::{SQS_KEY_ID, SQS_LIMITED_KEY_ID, SQS_SECRET, Signing, host_of, send, signed};
pub use localstack::{
    assert_no_send_lost_and_no_ack_back, localstack_endpoint, queue_arn, sdk_config, sqs,
};
pub use logs::captured_logs;
pub use metrics::{sample, scrape, wait_for};
pub use names::{MANAGE_QUEUES, ORG, PROJECT, unique};
pub use redis::redis_url;
pub use services::{Kind, Service, clients_venv, services_of, skips_without};
