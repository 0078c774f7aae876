//! The backends a test runs on and the servers it needs beside the gateway (LocalStack, Redis, a
//! Redis Cluster, the real clients): whether each answers, and a test's skip (or, under the test
//! command, failure) without them. `needs!` and the `on_*!` macros of main.rs call these.

use super::localstack::localstack_endpoint;
use super::redis::{redis_cluster_urls, redis_url};
use std::sync::OnceLock;
use std::time::Duration;

/// Which backend a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A real LocalStack at `LOCALSTACK_ENDPOINT`.
    LocalStack,
    /// The embedded engine, in memory.
    Embedded,
    /// A real LocalStack, with the gateway's state in the Redis at `SQSGW_TEST_REDIS_URL`
    /// (default redis://127.0.0.1:6390/0, started by `redis/start.sh`).
    Redis,
    /// A real LocalStack, with the gateway's state in the Redis Cluster at
    /// `SQSGW_TEST_REDIS_CLUSTER_URLS` (default three nodes on 127.0.0.1:6391-6393, started by
    /// `redis/start.sh`).
    RedisCluster,
}

impl Kind {
    /// Whether the backend is SQS (LocalStack).
    pub fn is_sqs(self) -> bool {
        matches!(self, Self::LocalStack | Self::Redis | Self::RedisCluster)
    }

    /// Whether the state is on a Redis server that replicas can share.
    pub fn is_shared_state(self) -> bool {
        matches!(self, Self::Redis | Self::RedisCluster)
    }
}

/// A server the tests need beside the gateway, started by the README's test command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// LocalStack at `LOCALSTACK_ENDPOINT`.
    LocalStack,
    /// The Redis at `SQSGW_TEST_REDIS_URL`.
    Redis,
    /// The Redis Cluster at `SQSGW_TEST_REDIS_CLUSTER_URLS`.
    RedisCluster,
    /// The real clients' venv (boto3 and the aws CLI), at `CLIENTS_VENV`.
    Clients,
}

/// Set by the test command (`scripts/test`): a service that does not answer fails the tests that
/// need it instead of skipping them, so CI cannot pass with a part of the suite left out.
const REQUIRE_SERVICES: &str = "SQSGW_TEST_REQUIRE_SERVICES";

impl Service {
    fn describe(self) -> String {
        match self {
            Self::LocalStack => format!("LocalStack does not answer at {}", localstack_endpoint()),
            Self::Redis => format!("Redis does not answer at {}", redis_url()),
            Self::RedisCluster => format!(
                "the Redis Cluster does not answer at {}",
                redis_cluster_urls().join(", ")
            ),
            Self::Clients => format!(
                "the real clients are not installed in {}",
                clients_venv().display()
            ),
        }
    }

    /// Whether the service is there, found once per test process.
    fn answers(self) -> bool {
        static LOCALSTACK: OnceLock<bool> = OnceLock::new();
        static REDIS: OnceLock<bool> = OnceLock::new();
        static REDIS_CLUSTER: OnceLock<bool> = OnceLock::new();
        match self {
            Self::LocalStack => {
                *LOCALSTACK.get_or_init(|| accepts_connections(&localstack_endpoint()))
            }
            Self::Redis => *REDIS.get_or_init(|| accepts_connections(&redis_url())),
            Self::RedisCluster => *REDIS_CLUSTER.get_or_init(|| {
                redis_cluster_urls()
                    .iter()
                    .all(|url| accepts_connections(url))
            }),
            Self::Clients => clients_venv().join("bin/python").exists(),
        }
    }
}

/// The venv `tests/clients/run.sh` installs the real clients into.
pub fn clients_venv() -> std::path::PathBuf {
    std::env::var("CLIENTS_VENV")
        .map(Into::into)
        .unwrap_or_else(|_| {
            let home = std::env::var("HOME").unwrap_or_default();
            std::path::PathBuf::from(format!("{home}/.cache/sqs-gateway/clients-venv"))
        })
}

/// Whether something accepts a TCP connection at the URL's host and port within a second.
fn accepts_connections(url: &str) -> bool {
    use std::net::ToSocketAddrs as _;
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        return false;
    };
    let Ok(addresses) = (host, port).to_socket_addrs() else {
        return false;
    };
    addresses.into_iter().any(|address| {
        std::net::TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok()
    })
}

/// Whether the test `name` is to be skipped because one of `services` is missing; it says so
/// on stderr. Under the test command (`SQSGW_TEST_REQUIRE_SERVICES`) a missing service fails
/// the test instead.
pub fn skips_without(services: &[Service], name: &str) -> bool {
    let Some(missing) = services.iter().find(|service| !service.answers()) else {
        return false;
    };
    assert!(
        std::env::var_os(REQUIRE_SERVICES).is_none(),
        "{name}: {} (the test command requires it)",
        missing.describe()
    );
    // Straight to stderr: the test harness captures `eprintln!` of a passing test.
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED {name}: {}", missing.describe());
    true
}

/// The services a test on `kind` needs.
pub fn services_of(kind: Kind) -> &'static [Service] {
    match kind {
        Kind::LocalStack => &[Service::LocalStack],
        Kind::Redis => &[Service::LocalStack, Service::Redis],
        Kind::RedisCluster => &[Service::LocalStack, Service::RedisCluster],
        Kind::Embedded => &[],
    }
}
