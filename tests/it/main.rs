//! Integration tests: the real gateway on 127.0.0.1:0 in front of a real LocalStack.
//!
//! LocalStack must answer at `LOCALSTACK_ENDPOINT` (default http://127.0.0.1:4566); start it with
//! `localstack/start.sh`. Every test makes its own randomly named queues and its own gateway.

#![allow(clippy::unwrap_used)]
// A test crate: its helpers are `pub` for its own modules, and tests measure real elapsed time.
#![allow(unreachable_pub, missing_docs, clippy::disallowed_methods)]

mod abandoned_bound;
mod aliases;
mod basaltic;
mod binary;
mod cli;
mod clis;
mod config_secrets;
mod core;
mod damaged_store;
mod deploy_manifests;
mod depth_gauges;
mod edge;
mod embedded;
mod ezgh_receipts;
mod ezgh_receive;
mod fake;
mod first_start;
mod harness;
mod http2;
mod image;
mod inprocess;
mod key_commands;
mod key_reload;
mod ledger_bound;
mod one_queue_set;
mod openapi;
mod operating;
mod permissions;
mod quick_start;
mod readme_consumer_loop;
mod redrive;
mod service;
mod shared_credentials;
mod shared_metrics;
mod shared_state;
mod signals;
mod single_node;
mod sombus;
mod sombus_cli;
mod sombus_credentials;
mod sombus_delivery;
mod sombus_hardening;
mod sombus_openapi;
mod sombus_store;
mod sqs_api;
mod sqs_observed;
mod state_outage;
mod tenant_scopes;

/// Whether the calling test may go on: false (and a `SKIPPED` line) when a server it needs does
/// not answer, outside the test command; under it, a failure. `needs!(on kind)` for a backend
/// kind, `needs!(LocalStack, Redis)` for services by name.
#[macro_export]
macro_rules! needs {
    (on $kind:expr) => {
        !$crate::harness::skips_without($crate::harness::services_of($kind), $crate::test_name!())
    };
    ($($service:ident),+ $(,)?) => {
        !$crate::harness::skips_without(
            &[$($crate::harness::Service::$service),+],
            $crate::test_name!(),
        )
    };
}

/// The path of the test function it is written in.
#[macro_export]
macro_rules! test_name {
    () => {{
        fn here() {}
        let name = std::any::type_name_of_val(&here);
        name.strip_suffix("::here")
            .unwrap_or(name)
            .trim_end_matches("::{{closure}}")
    }};
}

/// Runs each listed `async fn(Kind)` test against LocalStack, against the embedded engine, and
/// against LocalStack with the state in Redis: one behavioural suite, two backends, two stores.
#[macro_export]
macro_rules! on_both_backends {
    ($($test:ident),* $(,)?) => {
        mod on_localstack {
            $(
                #[tokio::test]
                async fn $test() {
                    let kind = $crate::harness::Kind::LocalStack;
                    if !$crate::needs!(on kind) {
                        return;
                    }
                    super::$test(kind).await
                }
            )*
        }
        mod on_embedded {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test($crate::harness::Kind::Embedded).await
                }
            )*
        }
        mod on_redis {
            $(
                #[tokio::test]
                async fn $test() {
                    let kind = $crate::harness::Kind::Redis;
                    if !$crate::needs!(on kind) {
                        return;
                    }
                    super::$test(kind).await
                }
            )*
        }
    };
}
