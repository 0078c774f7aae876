//! Integration tests, by tier:
//! - `inprocess`: the service's router and the core called without a socket, over a fake
//!   backend, on tokio's paused time;
//! - `http`: the real gateway on 127.0.0.1:0, driven over sockets, one behavioural suite on both
//!   backends (and over LocalStack with the state in Redis);
//! - `binaries`: the binaries as child processes;
//! - `packaging`: the image, compose file and manifests, checked against the code.
//!
//! Where a new test goes: first its tier (above), then, in `http/`, the folder of the dialect whose
//! API it drives (`ezgh/`, `sombus/`, `basaltic/`, `sqs/`), or of the concern it tests whatever
//! the dialect (`push/`, `console/`, `state/` for the state store and replicas sharing it,
//! `service/` for the service around the APIs: probes, the edge, HTTP/2, metrics, logs, traces,
//! TLS, the backend in front of SQS), then the file of its topic. In `inprocess/rules/`, a
//! dialect's rule goes in `rules/<dialect>/<topic>.rs` (or `rules/<dialect>.rs` while they fit
//! one file). So a basaltic rule goes in `inprocess/rules/basaltic/<topic>.rs`, its behaviour in
//! `http/basaltic/<topic>.rs`. A file that outgrows about 600 lines becomes a folder of its name,
//! one topic a file; helpers the files of a folder share go in its `support.rs` (in
//! `inprocess/rules/<dialect>/`, its `mod.rs`), helpers of every tier in `harness/`. Each folder's
//! `mod.rs` says what belongs there.
//!
//! LocalStack answers at `LOCALSTACK_ENDPOINT` (default http://127.0.0.1:4566; `localstack/start.sh`)
//! and Redis at `SQSGW_TEST_REDIS_URL`; a test that needs one that does not answer says
//! `SKIPPED` and returns, unless `SQSGW_TEST_REQUIRE_SERVICES` is set (the test command sets it).
//! Every test makes its own randomly named queues and its own gateway.

#![allow(clippy::unwrap_used)]
// A test crate: its helpers are `pub` for its own modules, and tests measure real elapsed time.
#![allow(unreachable_pub, missing_docs, clippy::disallowed_methods)]

mod binaries;
mod binary;
#[path = "../../src/bin/sqs-gateway-bench/counting_proxy.rs"]
mod counting_proxy;
mod harness;
mod http;
mod inprocess;
mod packaging;

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

/// A module `$module` of one test per listed `async fn(Kind)`, each run on `Kind::$kind` (skipped,
/// saying so, when a server that kind needs does not answer).
#[macro_export]
macro_rules! on_kind {
    ($module:ident, $kind:ident, $($test:ident),* $(,)?) => {
        mod $module {
            $(
                #[tokio::test]
                async fn $test() {
                    let kind = $crate::harness::Kind::$kind;
                    if !$crate::needs!(on kind) {
                        return;
                    }
                    super::$test(kind).await
                }
            )*
        }
    };
}

/// Runs each listed `async fn(Kind)` test against LocalStack with the state shared through Redis:
/// on one node, and on a cluster.
#[macro_export]
macro_rules! on_shared_stores {
    ($($test:ident),* $(,)?) => {
        $crate::on_kind!(on_redis, Redis, $($test),*);
        $crate::on_kind!(on_redis_cluster, RedisCluster, $($test),*);
    };
}

/// Runs each listed `async fn(Kind)` test against LocalStack, against the embedded engine, and
/// against LocalStack with the state in Redis, on one node and on a cluster: one behavioural
/// suite, two backends, three stores.
#[macro_export]
macro_rules! on_both_backends {
    ($($test:ident),* $(,)?) => {
        $crate::on_kind!(on_localstack, LocalStack, $($test),*);
        $crate::on_kind!(on_embedded, Embedded, $($test),*);
        $crate::on_shared_stores!($($test),*);
    };
}
