//! Starts a gateway over LocalStack for one test, with its own queues, keys and clock.

use aws_sdk_sqs::Client;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::types::QueueAttributeName;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqs_gateway::backend::sqs::SqsBackend;
use sqs_gateway::config::Config;
use sqs_gateway::core::access::RESERVED_QUEUE_PREFIX;
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::SkewClock;
use sqs_gateway::core::handle::Keyring;
use sqs_gateway::core::model::{AttributeValue, MessageAttribute};
use sqs_gateway::credentials::api_keys;
use sqs_gateway::server::{App, Overrides};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub const ORG: &str = "acme";
/// The SQS endpoint's test access key (all queues, all actions) and its secret.
pub const SQS_KEY_ID: &str = "AKIDGATEWAYTEST";
pub const SQS_SECRET: &str = "gateway-test-secret-not-for-production";
/// A key that may only list queues.
pub const SQS_LIMITED_KEY_ID: &str = "AKIDGATEWAYLIMITED";
pub const PROJECT: &str = "shop";

pub fn localstack_endpoint() -> String {
    std::env::var("LOCALSTACK_ENDPOINT").unwrap_or_else(|_| "http://127.0.0.1:4566".into())
}

/// An AWS config for LocalStack (or, with `endpoint`, for anything else).
pub fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
            Credentials::new("test", "test", None, None, "tests"),
        ))
        .build()
}

pub fn sqs() -> Client {
    Client::new(&sdk_config(&localstack_endpoint()))
}

/// The name prefix of the queues the tests make in LocalStack themselves.
const TEST_QUEUE_PREFIX: &str = "it-";
/// Name prefixes of the queues the integration tests leave in LocalStack: their own and those the
/// gateway makes (sombus workspaces, basaltic queues), all under its reserved prefix.
const TEST_QUEUE_PREFIXES: [&str; 2] = [TEST_QUEUE_PREFIX, RESERVED_QUEUE_PREFIX];

/// Deletes, once per test run, the test queues that earlier runs left in a long-lived LocalStack
/// (about a hundred a run; CI starts a fresh one). Queues made since this test process started
/// are left alone: tests of this run use them.
async fn sweep_earlier_runs() {
    static SWEPT: tokio::sync::OnceCell<usize> = tokio::sync::OnceCell::const_new();
    SWEPT
        .get_or_init(|| async {
            // Without a start time there is no telling this run's queues from earlier ones.
            let Some(started) = process_started_at() else {
                return 0;
            };
            let sqs = sqs();
            let mut swept = 0;
            for prefix in TEST_QUEUE_PREFIXES {
                let Ok(listed) = sqs.list_queues().queue_name_prefix(prefix).send().await else {
                    return swept;
                };
                for url in listed.queue_urls() {
                    let created = queue_attribute(&sqs, url, QueueAttributeName::CreatedTimestamp)
                        .await
                        .and_then(|created| created.parse::<u64>().ok());
                    // A second's margin: LocalStack counts whole seconds.
                    if created.is_some_and(|created| created + 1 < started)
                        && sqs.delete_queue().queue_url(url).send().await.is_ok()
                    {
                        swept += 1;
                    }
                }
            }
            swept
        })
        .await;
}

/// When this test process started, in Unix seconds (Linux: `/proc`).
fn process_started_at() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name: the 22nd field of the line (start time, in clock ticks
    // since boot) is the 20th of them.
    let ticks: u64 = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    let booted: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // Linux reports these ticks at USER_HZ, 100 a second.
    Some(booted + ticks / 100)
}

/// Log lines of the whole test process, to check that no handle is ever written.
pub fn captured_logs() -> String {
    String::from_utf8_lossy(&log_buffer().lock().unwrap()).into_owned()
}

fn log_buffer() -> &'static Arc<Mutex<Vec<u8>>> {
    static BUFFER: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    BUFFER.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = LogWriter(Arc::clone(&buffer));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(format!(
                "{},sqs_gateway=trace,tower_http=trace,{}=off",
                sqs_gateway::telemetry::DEFAULT_FILTER,
                sqs_gateway::core::spans::TARGET
            ))
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .try_init();
        buffer
    })
}

#[derive(Clone)]
struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The config lines that let the SQS endpoint's test key create, change and delete queues.
pub const MANAGE_QUEUES: &str = "[sqs_api]\nmanage_queues = true\n";

/// `prefix` and 8 random hex digits: a name no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}{:08x}", rand::random::<u32>())
}

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

/// A test's config with `metrics.count_concurrency = 1` added (in its `[metrics]` table, or in
/// one of its own): the suite's gateways, hundreds at once, share one LocalStack holding every
/// test's queues, and each one counting them 16 at a time would overload it. The default is
/// tested by the in-process tier and the console run.
fn shared_backend_counting(config: &str) -> String {
    if config.contains("count_concurrency") {
        config.to_owned()
    } else if config.contains("[metrics]\n") {
        config.replacen("[metrics]\n", "[metrics]\ncount_concurrency = 1\n", 1)
    } else {
        format!("{config}\n[metrics]\ncount_concurrency = 1\n")
    }
}

/// The Redis the tests share, each gateway under its own key prefix.
pub fn redis_url() -> String {
    std::env::var("SQSGW_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6390/0".into())
}

/// The seed nodes of the Redis Cluster the tests share.
pub fn redis_cluster_urls() -> Vec<String> {
    std::env::var("SQSGW_TEST_REDIS_CLUSTER_URLS")
        .unwrap_or_else(|_| {
            "redis://127.0.0.1:6391,redis://127.0.0.1:6392,redis://127.0.0.1:6393".into()
        })
        .split(',')
        .map(str::to_owned)
        .collect()
}

/// `[state.redis]` for a gateway of `kind` whose keys sit under `prefix`.
pub fn redis_state_config(kind: Kind, prefix: &str) -> String {
    if kind == Kind::RedisCluster {
        let urls = redis_cluster_urls();
        let nodes: Vec<String> = urls[1..].iter().map(|url| format!("\"{url}\"")).collect();
        format!(
            "[state.redis]\nurl = \"{}\"\ncluster = true\nnodes = [{}]\nprefix = \"{prefix}\"\n\n",
            urls[0],
            nodes.join(", ")
        )
    } else {
        format!(
            "[state.redis]\nurl = \"{}\"\nprefix = \"{prefix}\"\n\n",
            redis_url()
        )
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

/// A queue to create for a test.
#[derive(Clone)]
pub struct QueueSpec {
    pub name: String,
    pub fifo: bool,
    pub visibility_timeout: Option<u32>,
    pub receive_wait: Option<u32>,
    /// Gateway name of the queue this one dead-letters into, and the max receive count.
    pub dead_letter: Option<(String, u32)>,
}

impl QueueSpec {
    pub fn standard(name: &str) -> Self {
        Self {
            name: name.into(),
            fifo: false,
            visibility_timeout: None,
            receive_wait: None,
            dead_letter: None,
        }
    }

    pub fn fifo(name: &str) -> Self {
        Self {
            fifo: true,
            ..Self::standard(name)
        }
    }

    pub fn visibility_timeout(mut self, seconds: u32) -> Self {
        self.visibility_timeout = Some(seconds);
        self
    }

    pub fn receive_wait(mut self, seconds: u32) -> Self {
        self.receive_wait = Some(seconds);
        self
    }

    pub fn dead_letter_to(mut self, queue: &str, max_receive_count: u32) -> Self {
        self.dead_letter = Some((queue.into(), max_receive_count));
        self
    }
}

/// A running gateway and what a test needs to drive it.
pub struct TestGateway {
    pub base: String,
    pub http: reqwest::Client,
    /// The gateway's backend: tests produce and inspect through it, on either kind.
    pub backend: Arc<dyn Backend>,
    /// The core, called as a dialect would call it.
    pub gateway: Arc<sqs_gateway::core::Gateway>,
    /// A key with receive on every queue.
    pub key: String,
    /// A key of the same organization without any grant.
    pub key_without_grants: String,
    /// A key of another organization.
    pub foreign_key: String,
    /// Gateway queue name -> backend queue URL.
    pub queue_urls: BTreeMap<String, String>,
    /// Gateway queue name -> backend queue name.
    pub backend_names: BTreeMap<String, String>,
    /// The receipt-handle key (base64).
    pub receipt_key: String,
    /// Under [`Kind::Redis`], the key prefix of this gateway's state.
    pub state_prefix: Option<String>,
    pub clock: Arc<SkewClock>,
    pub shutdown: CancellationToken,
    pub server: JoinHandle<std::io::Result<()>>,
    /// Over SQS, the state's directory, when the test gave none.
    _state_dir: Option<tempfile::TempDir>,
}

pub struct GatewayBuilder {
    kind: Kind,
    queues: Vec<QueueSpec>,
    extra_config: String,
    endpoint: String,
    /// Reuse another gateway's backend, queues and receipt key (a second replica).
    replica_of: Option<Replica>,
    /// Serve over this backend (its queues already made) instead.
    given_backend: Option<(Arc<dyn Backend>, Vec<String>)>,
    /// Lines added to the `[backend]` table.
    backend_extra: String,
    /// The embedded backend's data directory (durable), instead of memory; over SQS, the
    /// state's directory (what a graceful restart carries over), instead of a fresh one.
    data_dir: Option<std::path::PathBuf>,
    /// Lines for the `[state]` table.
    state_extra: String,
    /// The core's state store, instead of one in this process.
    given_state: Option<Arc<dyn sqs_gateway::core::state::StateStore>>,
    /// The receipt-handle key, instead of a new one (a restart of an earlier gateway).
    given_receipt_key: Option<String>,
    /// Over SQS, long polls are shared and writes coalesce per queue (the default).
    sqs_fan_in: bool,
    /// Over SQS with fan-in, the most connections to SQS (`backend.connections`).
    sqs_connections: usize,
}

/// What a second replica shares with the first.
struct Replica {
    backend: Arc<dyn Backend>,
    backend_names: BTreeMap<String, String>,
    receipt_key: String,
    /// The state's key prefix, when the replica shares the first one's state.
    state_prefix: Option<String>,
}

impl GatewayBuilder {
    pub fn new(kind: Kind) -> Self {
        Self {
            kind,
            queues: Vec::new(),
            extra_config: String::new(),
            endpoint: localstack_endpoint(),
            replica_of: None,
            given_backend: None,
            backend_extra: String::new(),
            data_dir: None,
            state_extra: String::new(),
            given_state: None,
            given_receipt_key: None,
            sqs_fan_in: true,
            sqs_connections: 16,
        }
    }

    /// Over SQS, whether long polls are shared and writes coalesce (`backend.fan_in`).
    pub fn sqs_fan_in(mut self, on: bool) -> Self {
        self.sqs_fan_in = on;
        self
    }

    /// Over SQS with fan-in, the most connections to SQS (`backend.connections`).
    pub fn sqs_connections(mut self, connections: usize) -> Self {
        self.sqs_connections = connections;
        self
    }

    /// The core keeps its state in `state` (a test's store that fails on demand, say).
    pub fn state(mut self, state: Arc<dyn sqs_gateway::core::state::StateStore>) -> Self {
        self.given_state = Some(state);
        self
    }

    /// Seals and opens handles with `key` (base64), as a restarted gateway does.
    pub fn receipt_key(mut self, key: &str) -> Self {
        self.given_receipt_key = Some(key.to_owned());
        self
    }

    /// The embedded backend keeps its queues in `dir` (durable) instead of in memory; over SQS
    /// the gateway keeps its state there across graceful restarts.
    pub fn durable(mut self, dir: &std::path::Path) -> Self {
        self.data_dir = Some(dir.to_owned());
        self
    }

    /// A `key = value` line for the `[state]` table.
    pub fn state_setting(mut self, line: &str) -> Self {
        self.state_extra.push_str(line);
        self.state_extra.push('\n');
        self
    }

    /// A `key = value` line for the `[backend]` table (e.g. a lower in-flight limit).
    pub fn backend_setting(mut self, line: &str) -> Self {
        self.backend_extra.push_str(line);
        self.backend_extra.push('\n');
        self
    }

    /// Serves over `backend`, whose queues `queues` exist already (by the same names).
    pub fn with_backend(mut self, backend: Arc<dyn Backend>, queues: &[&str]) -> Self {
        self.given_backend = Some((backend, queues.iter().map(|q| (*q).to_owned()).collect()));
        self
    }

    /// A second replica of `other`: same backend queues, same receipt key, its own ledger.
    pub fn replica_of(mut self, other: &TestGateway) -> Self {
        self.replica_of = Some(Replica {
            backend: Arc::clone(&other.backend),
            backend_names: other.backend_names.clone(),
            receipt_key: other.receipt_key.clone(),
            state_prefix: None,
        });
        self
    }

    /// A second replica of `other` that also shares its state (under [`Kind::Redis`]: the same
    /// Redis keys), as replicas behind a load balancer do.
    pub fn sharing_state_with(mut self, other: &TestGateway) -> Self {
        assert!(self.kind.is_shared_state(), "only a Redis store is shared");
        self.replica_of = Some(Replica {
            backend: Arc::clone(&other.backend),
            backend_names: other.backend_names.clone(),
            receipt_key: other.receipt_key.clone(),
            state_prefix: other.state_prefix.clone(),
        });
        self
    }

    pub fn queue(mut self, spec: QueueSpec) -> Self {
        self.queues.push(spec);
        self
    }

    /// TOML appended to the generated config (e.g. a `[server]` table).
    /// Lets the SQS endpoint's test key create, change and delete queues ([`MANAGE_QUEUES`]).
    pub fn managing_queues(self) -> Self {
        self.config(MANAGE_QUEUES)
    }

    pub fn config(mut self, toml: &str) -> Self {
        self.extra_config.push_str(toml);
        self.extra_config.push('\n');
        self
    }

    /// Points the gateway's SQS backend somewhere else (queues are still created in LocalStack).
    pub fn backend_endpoint(mut self, endpoint: &str) -> Self {
        self.endpoint = endpoint.into();
        self
    }

    pub async fn start(self) -> TestGateway {
        log_buffer();
        let suffix: String = format!("{:08x}", rand::random::<u32>());
        let mut backend_names = BTreeMap::new();
        let mut queue_urls: BTreeMap<String, String> = BTreeMap::new();
        let mut receipt_key = self
            .given_receipt_key
            .clone()
            .unwrap_or_else(Keyring::generate_key);
        let mut shared_backend = None;
        let mut state_prefix = self
            .kind
            .is_shared_state()
            .then(|| format!("sqsgw-test-{suffix}:"));
        if let Some(replica) = self.replica_of {
            backend_names = replica.backend_names;
            receipt_key = replica.receipt_key;
            shared_backend = Some(replica.backend);
            if replica.state_prefix.is_some() {
                state_prefix = replica.state_prefix;
            }
        }
        if let Some((backend, queues)) = self.given_backend {
            backend_names = queues.into_iter().map(|q| (q.clone(), q)).collect();
            shared_backend = Some(backend);
        }
        let mut toml = String::new();
        match self.kind {
            Kind::LocalStack | Kind::Redis | Kind::RedisCluster => {
                toml.push_str("[backend]\nkind = \"sqs\"\n")
            }
            Kind::Embedded => match &self.data_dir {
                Some(dir) => toml.push_str(&format!(
                    "[backend]\nkind = \"embedded\"\ndata_dir = {}\n",
                    toml::Value::String(dir.display().to_string())
                )),
                None => toml.push_str("[backend]\nkind = \"embedded\"\nin_memory = true\n"),
            },
        }
        toml.push_str(&self.backend_extra);
        toml.push('\n');
        toml.push_str(&format!(
            "[[receipt_keys]]\nid = 7\nsecret = \"{receipt_key}\"\n\n"
        ));
        if self.kind.is_sqs() && shared_backend.is_none() {
            sweep_earlier_runs().await;
            let sqs = sqs();
            let mut ordered = self.queues.clone();
            ordered.sort_by_key(|spec| spec.dead_letter.is_some());
            for spec in &ordered {
                let name = if spec.fifo {
                    format!(
                        "{TEST_QUEUE_PREFIX}{}-{suffix}.fifo",
                        spec.name.trim_end_matches(".fifo")
                    )
                } else {
                    format!("{TEST_QUEUE_PREFIX}{}-{suffix}", spec.name)
                };
                let mut create = sqs.create_queue().queue_name(&name);
                if spec.fifo {
                    create = create.attributes(QueueAttributeName::FifoQueue, "true");
                }
                if let Some(seconds) = spec.visibility_timeout {
                    create = create
                        .attributes(QueueAttributeName::VisibilityTimeout, seconds.to_string());
                }
                if let Some(seconds) = spec.receive_wait {
                    create = create.attributes(
                        QueueAttributeName::ReceiveMessageWaitTimeSeconds,
                        seconds.to_string(),
                    );
                }
                if let Some((target, count)) = &spec.dead_letter {
                    let arn = queue_arn(&sqs, &queue_urls[target]).await;
                    create = create.attributes(
                        QueueAttributeName::RedrivePolicy,
                        json!({ "deadLetterTargetArn": arn, "maxReceiveCount": count }).to_string(),
                    );
                }
                let url: String = create
                    .send()
                    .await
                    .expect("create queue in LocalStack (is it running?)")
                    .queue_url
                    .unwrap();
                queue_urls.insert(spec.name.clone(), url);
                backend_names.insert(spec.name.clone(), name);
            }
        }
        if self.kind == Kind::Embedded && shared_backend.is_none() {
            for spec in &self.queues {
                backend_names.insert(spec.name.clone(), spec.name.clone());
            }
        }
        for (name, backend_name) in &backend_names {
            toml.push_str(&format!(
                "[queues.\"{name}\"]\nsqs_queue = \"{backend_name}\"\n"
            ));
            if self.kind == Kind::Embedded
                && let Some(spec) = self.queues.iter().find(|spec| &spec.name == name)
            {
                if let Some(seconds) = spec.visibility_timeout {
                    toml.push_str(&format!("visibility_timeout_seconds = {seconds}\n"));
                }
                if let Some(seconds) = spec.receive_wait {
                    toml.push_str(&format!("receive_wait_seconds = {seconds}\n"));
                }
                if let Some((target, count)) = &spec.dead_letter {
                    toml.push_str(&format!(
                        "dead_letter_queue = \"{target}\"\nmax_receive_count = {count}\n"
                    ));
                }
            }
        }

        let key = api_keys::generate_key();
        let bare = api_keys::generate_key();
        let foreign = api_keys::generate_key();
        let mapping: Vec<String> = backend_names
            .keys()
            .map(|name| format!("\"{name}\" = \"{name}\""))
            .collect();
        toml.push_str(&format!(
            "\n[ezgh.organizations.{ORG}.projects.{PROJECT}]\nqueues = {{ {} }}\n\n[ezgh.organizations.other]\n\n",
            mapping.join(", ")
        ));
        toml.push_str(&format!(
            "[[api_keys]]\nid = \"{}\"\norganization = \"{ORG}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"queues.messages.receive\"] }}\n\n",
            key.id, key.hash
        ));
        toml.push_str(&format!(
            "[[api_keys]]\nid = \"{}\"\norganization = \"{ORG}\"\nhash = \"{}\"\n\n",
            bare.id, bare.hash
        ));
        toml.push_str(&format!(
            "[[api_keys]]\nid = \"{}\"\norganization = \"other\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"*\"] }}\n\n",
            foreign.id, foreign.hash
        ));
        toml.push_str(&format!(
            "[[sqs_api.credentials]]\naccess_key_id = \"{SQS_KEY_ID}\"\nsecret = \"{SQS_SECRET}\"\n\n[[sqs_api.credentials]]\naccess_key_id = \"{SQS_LIMITED_KEY_ID}\"\nsecret = \"{SQS_SECRET}\"\nqueues = []\nactions = [\"ListQueues\"]\n\n"
        ));
        // Over SQS each gateway keeps its state in a directory of its own.
        let state_dir = match (&self.data_dir, self.kind.is_sqs()) {
            (None, true) => Some(tempfile::tempdir().unwrap()),
            _ => None,
        };
        toml.push_str("[state]\n");
        if self.kind.is_sqs()
            && let Some(dir) = self
                .data_dir
                .as_deref()
                .or(state_dir.as_ref().map(tempfile::TempDir::path))
        {
            toml.push_str(&format!(
                "dir = {}\n",
                toml::Value::String(dir.display().to_string())
            ));
        }
        toml.push_str(&self.state_extra);
        toml.push('\n');
        if let Some(prefix) = &state_prefix {
            toml.push_str(&redis_state_config(self.kind, prefix));
        }
        toml.push_str(&shared_backend_counting(&self.extra_config));
        let config =
            Config::parse(&toml).unwrap_or_else(|error| panic!("test config: {error}\n{toml}"));

        let clock = Arc::new(SkewClock::default());
        let backend: Option<Arc<dyn Backend>> = match (shared_backend, self.kind) {
            (Some(shared), _) => Some(shared),
            (None, Kind::LocalStack | Kind::Redis | Kind::RedisCluster) => {
                let backend = SqsBackend::from_sdk_config(&sdk_config(&self.endpoint));
                Some(Arc::new(if self.sqs_fan_in {
                    backend.with_fan_in(
                        sqs_gateway::backend::sqs::FanIn {
                            connections: self.sqs_connections,
                            ..Default::default()
                        },
                        &sqs_gateway::core::metrics::meters::Meters::default(),
                    )
                } else {
                    backend
                }))
            }
            (None, Kind::Embedded) => None,
        };
        let app = App::build(
            &config,
            Overrides {
                backend,
                clock: Some(clock.clone()),
                state: self.given_state,
            },
        )
        .await
        .expect("build the gateway");
        let backend = app.backend();
        let gateway = app.gateway();
        for (name, backend_name) in &backend_names {
            if !queue_urls.contains_key(name) {
                let url = backend
                    .resolve(backend_name)
                    .await
                    .expect("queue resolves")
                    .url;
                queue_urls.insert(name.clone(), url);
            }
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let shutdown = app.shutdown_token();
        let server = tokio::spawn(app.serve(listener));
        TestGateway {
            base,
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(60))
                .build()
                .unwrap(),
            backend,
            gateway,
            key: key.key,
            key_without_grants: bare.key,
            foreign_key: foreign.key,
            queue_urls,
            backend_names,
            receipt_key,
            state_prefix,
            clock,
            shutdown,
            server,
            _state_dir: state_dir,
        }
    }
}

pub async fn queue_arn(sqs: &Client, url: &str) -> String {
    queue_attribute(sqs, url, QueueAttributeName::QueueArn)
        .await
        .expect("LocalStack answers the queue's ARN")
}

/// One attribute of a LocalStack queue; `None` when the call fails or the queue has none.
async fn queue_attribute(sqs: &Client, url: &str, name: QueueAttributeName) -> Option<String> {
    sqs.get_queue_attributes()
        .queue_url(url)
        .attribute_names(name.clone())
        .send()
        .await
        .ok()?
        .attributes?
        .remove(&name)
}

/// An HTTP answer: status, headers and JSON body.
pub struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl TestGateway {
    /// The gateway's time (the wall clock plus what the test moved it by).
    pub fn clock_now(&self) -> chrono::DateTime<chrono::Utc> {
        sqs_gateway::core::clock::Clock::now(self.clock.as_ref())
    }

    pub fn receive_url(&self, queue: &str) -> String {
        format!(
            "{}/v1/organizations/{ORG}/projects/{PROJECT}/queues/{queue}/messages/receive",
            self.base
        )
    }

    /// POSTs raw text with a key (or none).
    pub async fn post_raw(&self, url: &str, key: Option<&str>, body: &str) -> Answer {
        let mut request = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        answer(request.send().await.expect("gateway answers")).await
    }

    pub async fn receive(&self, queue: &str, body: Value) -> Answer {
        self.post_raw(&self.receive_url(queue), Some(&self.key), &body.to_string())
            .await
    }

    /// Receives and expects 200; returns the messages.
    pub async fn receive_ok(&self, queue: &str, body: Value) -> Vec<Value> {
        let answer = self.receive(queue, body).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        answer.body["messages"].as_array().unwrap().clone()
    }

    pub async fn ack(&self, handles: &[&str]) -> Answer {
        let body = json!({ "receiptHandles": handles }).to_string();
        self.post_raw(&format!("{}/v1/receipts/ack", self.base), None, &body)
            .await
    }

    pub async fn visibility(&self, entries: &[(&str, u32)]) -> Answer {
        let entries: Vec<Value> = entries
            .iter()
            .map(|(handle, seconds)| json!({ "receiptHandle": handle, "visibilityTimeoutSeconds": seconds }))
            .collect();
        let body = json!({ "entries": entries }).to_string();
        self.post_raw(
            &format!("{}/v1/receipts/visibility", self.base),
            None,
            &body,
        )
        .await
    }

    /// Sends a message straight to the backend queue; returns its id.
    pub async fn send(&self, queue: &str, body: &str) -> String {
        self.send_with(queue, body, None, BTreeMap::new()).await
    }

    /// Sends through the gateway's own SQS endpoint (as producers do), signed with the test key.
    pub async fn send_with(
        &self,
        queue: &str,
        body: &str,
        group: Option<&str>,
        attributes: BTreeMap<String, MessageAttribute>,
    ) -> String {
        let (client, url) = self.sqs_queue(queue).await;
        let mut send = client.send_message().queue_url(url).message_body(body);
        for (name, attribute) in attributes {
            let value = aws_sdk_sqs::types::MessageAttributeValue::builder()
                .data_type(&attribute.data_type);
            let value = match attribute.value {
                AttributeValue::Text(text) => value.string_value(text),
                AttributeValue::Bytes(bytes) => {
                    value.binary_value(aws_sdk_sqs::primitives::Blob::new(bytes))
                }
            };
            send = send.message_attributes(name, value.build().unwrap());
        }
        if let Some(group) = group {
            send = send
                .message_group_id(group)
                .message_deduplication_id(format!("{:016x}", rand::random::<u64>()));
        }
        send.send()
            .await
            .expect("the message is accepted")
            .message_id
            .unwrap()
    }

    /// Messages visible plus in flight (plus delayed), as the backend counts them.
    pub async fn backend_depth(&self, queue: &str) -> u64 {
        let stats = self.backend.stats(&self.queue_urls[queue]).await.unwrap();
        stats.visible + stats.in_flight + stats.delayed
    }

    /// The test key's SQS client and the URL of gateway queue `queue`.
    pub async fn sqs_queue(&self, queue: &str) -> (Client, String) {
        let client = self.sqs_client(SQS_KEY_ID, SQS_SECRET);
        let url = client
            .get_queue_url()
            .queue_name(queue)
            .send()
            .await
            .expect("the SQS endpoint knows the queue")
            .queue_url
            .unwrap();
        (client, url)
    }

    /// An AWS SDK client pointed at the gateway's SQS endpoint.
    pub fn sqs_client(&self, key_id: &str, secret: &str) -> Client {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(&self.base)
            .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
                Credentials::new(key_id, secret, None, None, "tests"),
            ))
            .build();
        Client::new(&sdk)
    }

    /// Stops the server and waits for it.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.server.await.unwrap().unwrap();
    }

    /// Ends the gateway as a crash does: nothing a stop does (draining, writing down its
    /// state) happens.
    pub async fn crash(self) {
        self.server.abort();
        assert!(self.server.await.unwrap_err().is_cancelled());
    }
}

pub async fn answer(response: reqwest::Response) -> Answer {
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"))
    };
    Answer {
        status,
        headers,
        body,
    }
}

pub fn handle_of(message: &Value) -> &str {
    message["receiptHandle"].as_str().unwrap()
}

pub fn results(answer: &Answer) -> Vec<Value> {
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer.body["results"].as_array().unwrap().clone()
}

pub fn ok() -> Value {
    json!({ "ok": true })
}

pub fn stale() -> Value {
    json!({ "error": "receipt_handle_stale" })
}

pub fn invalid() -> Value {
    json!({ "error": "receipt_handle_invalid" })
}

/// How a test request is signed.
pub struct Signing<'a> {
    /// The access key (default: the test key).
    pub key_id: &'a str,
    pub secret: &'a str,
    pub region: &'a str,
    /// The signing time (default: now).
    pub at: Option<SystemTime>,
    /// Presigned for this long (the signature in the query), else by `Authorization` header.
    pub presigned: Option<Duration>,
    /// Sign `UNSIGNED-PAYLOAD` instead of the body's hash.
    pub unsigned_payload: bool,
    /// Headers left out of the signature (sent all the same).
    pub excluded: &'a [&'static str],
}

impl Default for Signing<'_> {
    fn default() -> Self {
        Self {
            key_id: SQS_KEY_ID,
            secret: SQS_SECRET,
            region: "us-east-1",
            at: None,
            presigned: None,
            unsigned_payload: false,
            excluded: &[],
        }
    }
}

/// A request signed by aws-sigv4 (the AWS SDKs' own signer), with the test key unless `how`
/// names another.
pub fn signed(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    how: &Signing<'_>,
) -> http::Request<Vec<u8>> {
    use aws_sigv4::http_request::{
        PayloadChecksumKind, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
        sign,
    };
    let identity =
        aws_credential_types::Credentials::new(how.key_id, how.secret, None, None, "t").into();
    let mut settings = SigningSettings::default();
    settings.payload_checksum_kind = PayloadChecksumKind::NoHeader;
    if let Some(expires) = how.presigned {
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(expires);
    }
    let mut excluded: Vec<std::borrow::Cow<'static, str>> =
        vec!["user-agent".into(), "content-length".into()];
    excluded.extend(how.excluded.iter().map(|name| (*name).into()));
    settings.excluded_headers = Some(excluded);
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(how.region)
        .name("sqs")
        .time(how.at.unwrap_or_else(SystemTime::now))
        .settings(settings)
        .build()
        .unwrap()
        .into();
    let signable_body = if how.unsigned_payload {
        SignableBody::UnsignedPayload
    } else {
        SignableBody::Bytes(body)
    };
    let signable =
        SignableRequest::new(method, url, headers.iter().copied(), signable_body).unwrap();
    let (instructions, _) = sign(signable, &params).unwrap().into_parts();
    let mut request = http::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut request = request.body(body.to_vec()).unwrap();
    instructions.apply_to_request_http1x(&mut request);
    if how.unsigned_payload {
        request
            .headers_mut()
            .insert("x-amz-content-sha256", "UNSIGNED-PAYLOAD".parse().unwrap());
    }
    request
}

/// Sends a prepared request; answers status, headers and body text.
pub async fn send(
    gw: &TestGateway,
    request: http::Request<Vec<u8>>,
) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let request = reqwest::Request::try_from(request).unwrap();
    let response = gw.http.execute(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

pub fn host_of(base: &str) -> String {
    base.trim_start_matches("http://").to_owned()
}

/// The value of one sample line (`name{labels} value`) in a scrape, if present.
pub fn sample(scrape: &str, series: &str) -> Option<f64> {
    scrape.lines().find_map(|line| {
        let (name, value) = line.rsplit_once(' ')?;
        (name == series).then(|| value.parse().ok())?
    })
}

/// `GET /metrics`, checked to be the Prometheus text format.
pub async fn scrape(gw: &TestGateway) -> String {
    let answer = gw
        .http
        .get(format!("{}/metrics", gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert!(
        answer.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    answer.text().await.unwrap()
}

/// Scrapes until `series` has `value` (gauges are sampled every second here).
pub async fn wait_for(gw: &TestGateway, series: &str, value: f64) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        last = scrape(gw).await;
        if sample(&last, series) == Some(value) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{series} never became {value}:\n{last}");
}

/// After a crash under load: once every lease has run out, what is left in the backend queue at
/// `url` (read from LocalStack itself) holds every answered send (`sent` less those a consumer
/// still `asked` for) and no message whose acknowledgement answered ok (`acked`).
pub async fn assert_no_send_lost_and_no_ack_back(
    sqs: &Client,
    url: &str,
    sent: &std::collections::BTreeSet<String>,
    asked: &std::collections::BTreeSet<String>,
    acked: &std::collections::BTreeSet<String>,
) {
    tokio::time::sleep(Duration::from_secs(6)).await;
    let mut left = std::collections::BTreeSet::new();
    let mut empty_rounds = 0;
    while empty_rounds < 3 {
        let received = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(600)
            .send()
            .await
            .unwrap();
        let messages = received.messages.unwrap_or_default();
        if messages.is_empty() {
            empty_rounds += 1;
            continue;
        }
        empty_rounds = 0;
        left.extend(
            messages
                .into_iter()
                .filter_map(|message| message.message_id),
        );
    }
    let lost: Vec<&String> = sent
        .difference(asked)
        .filter(|id| !left.contains(*id))
        .collect();
    assert!(lost.is_empty(), "{} answered sends lost", lost.len());
    let back: Vec<&String> = acked.intersection(&left).collect();
    assert!(
        back.is_empty(),
        "{} acknowledged messages came back",
        back.len()
    );
}
