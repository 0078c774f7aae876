//! Starts a gateway for one test (`GatewayBuilder`), on any backend kind, with its own queues,
//! keys, state and clock; a second replica of it; and its stop or crash (`TestGateway`).

use super::keys::{SQS_KEY_ID, SQS_LIMITED_KEY_ID, SQS_SECRET};
use super::localstack::{
    TEST_QUEUE_PREFIX, localstack_endpoint, queue_arn, sdk_config, sqs, sweep_earlier_runs,
};
use super::logs::log_buffer;
use super::names::{MANAGE_QUEUES, ORG, PROJECT};
use super::redis::redis_state_config;
use super::services::Kind;
use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::json;
use sqs_gateway::backend::sqs::SqsBackend;
use sqs_gateway::config::Config;
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::SkewClock;
use sqs_gateway::core::handle::Keyring;
use sqs_gateway::credentials::api_keys;
use sqs_gateway::server::{App, Overrides};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

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
