//! Assembles the service: backend, core, dialect routers, tower layers, graceful shutdown.

pub mod connections;
pub mod console;
mod deadline;
pub mod documents;
pub mod edge;
pub mod health;
pub mod observe;
mod per_address;
pub mod reload;
pub mod scrape;
pub mod tls;

use crate::api;
use crate::api::common::{ClientAddressPolicy, Dialect};
use crate::backend::embedded::EmbeddedBackend;
use crate::backend::sqs::SqsBackend;
use crate::config::{BackendConfig, Config, ConfigError};
use crate::core::Gateway;
use crate::core::backend::Backend;
use crate::core::clock::{Clock, SystemClock};
use crate::core::metrics::metered::MeteredBackend;
use crate::core::registry::QueueRegistry;
use crate::core::state::{InProcessState, StateStore};
use crate::credentials::oauth::{ConnectionStore, CredentialCheck, TokenService};
use crate::state::redis::{RedisServer, RedisState};
use crate::state::restart_file::CarriedState;
use axum::Router;
use connections::ConnectionSettings;
use edge::Edge;
use reload::{ConfigFile, Hangups, KeyReload, KeySets, LiveKeys};
use scrape::Scrape;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tls::Tls;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How often dialects get their upkeep.
const HOUSEKEEPING_EVERY: Duration = Duration::from_secs(60);
/// The least time shutdown waits for abandoned receives to be released.
const DRAIN_BACKGROUND: Duration = Duration::from_secs(5);

/// Parts a caller may supply instead of building them from the config (tests do).
#[derive(Default)]
pub struct Overrides {
    /// Use this backend instead of the configured one.
    pub backend: Option<Arc<dyn Backend>>,
    /// Use this clock instead of the system clock.
    pub clock: Option<Arc<dyn Clock>>,
    /// Keep the core's state here instead of in this process (tests inject failures this way).
    pub state: Option<Arc<dyn StateStore>>,
}

/// A built service, ready to serve.
pub struct App {
    router: Router,
    /// Answers what no handler reaches, in the shape of the path's dialect.
    edge: Edge,
    backend: Arc<dyn Backend>,
    gateway: Arc<Gateway>,
    shutdown: CancellationToken,
    grace: Duration,
    connections: ConnectionSettings,
    /// For their upkeep.
    dialects: Vec<Arc<dyn Dialect>>,
    /// The Prometheus side of the meters.
    scrape: Scrape,
    /// `/metrics` on an address of its own, if configured (else on the API listener, if enabled).
    metrics_listen: Option<SocketAddr>,
    /// TLS on the API listener, if configured.
    tls: Option<Tls>,
    /// The key sets the dialects read, which a reload replaces.
    keys: LiveKeys,
    /// How often the config file is looked at, once [`App::reload_keys_from`] names it.
    config_check: Duration,
    /// The config file's watcher, if one was asked for.
    reload: Option<KeyReload>,
    /// The in-process state, written down at a drained stop for the next start, if kept.
    carried_state: Option<CarriedState>,
}

impl App {
    /// Builds the service from a checked config.
    pub async fn build(config: &Config, overrides: Overrides) -> Result<Self, BuildError> {
        let clock = overrides.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let tls = config
            .server
            .tls
            .as_ref()
            .map(|tls| Tls::load(tls, config.server.http2))
            .transpose()
            .map_err(|error| ConfigError::Invalid {
                field: "server.tls".into(),
                message: error.to_string(),
            })?;
        let scrape = Scrape::new(Duration::from_secs(config.metrics.sample_seconds));
        let meters = scrape.meters();
        let backend: Arc<dyn Backend> = match overrides.backend {
            Some(backend) => backend,
            None => match &config.backend {
                BackendConfig::Sqs(sqs) => Arc::new(SqsBackend::from_config(sqs, &meters).await),
                BackendConfig::Embedded(embedded) => {
                    let backend = EmbeddedBackend::from_config(embedded, Arc::clone(&clock))
                        .map_err(|error| BuildError::Backend(error.to_string()))?;
                    create_configured_queues(&backend, config).await?;
                    backend
                }
            },
        };
        let shutdown = CancellationToken::new();
        let backend_handle = Arc::clone(&backend);
        let backend_name = match &config.backend {
            BackendConfig::Sqs(_) => "sqs",
            BackendConfig::Embedded(_) => "embedded",
        };
        let backend: Arc<dyn Backend> =
            Arc::new(MeteredBackend::new(backend, backend_name, meters.clone()));
        let registry = QueueRegistry::new(
            Arc::clone(&backend),
            config.queue_locators(),
            config.sqs_api.manage_queues,
            Duration::from_secs(config.server.queue_cache_seconds),
            Arc::clone(&clock),
        )
        .with_aliases(config.ezgh.aliases().map_err(ConfigError::from)?)
        .with_open_projects(config.ezgh.open_projects())
        .with_basaltic_ids(config.basaltic.all_queues)
        .with_managed_prefix(crate::core::access::RESERVED_QUEUE_PREFIX);
        if !config.basaltic.all_queues
            && !config.basaltic.keys.is_empty()
            && !config.queues.is_empty()
        {
            tracing::info!(
                configured_queues = config.queues.len(),
                "basaltic keys and the console see only the queues made through basaltic, not the \
                 configured [queues.*]: set [basaltic] all_queues = true to show those (and the \
                 queues made over the other APIs) too; a reload applies it, no restart"
            );
        }
        // One connection to the shared server for everything kept there.
        let redis = config
            .state
            .redis
            .as_ref()
            .map(RedisServer::connect)
            .transpose()
            .map_err(|error| BuildError::State(error.to_string()))?;
        let mut carried_state = None;
        let state: Arc<dyn StateStore> = match (overrides.state, &redis) {
            (Some(state), _) => state,
            (None, Some(redis)) => Arc::new(RedisState::on(
                redis.clone(),
                Duration::from_secs(config.ledger.ttl_seconds),
                config.ledger.unknown_deliveries,
                Arc::clone(&clock),
            )),
            (None, None) => {
                let state = Arc::new(InProcessState::new(
                    config.ledger.max_entries,
                    Duration::from_secs(config.ledger.ttl_seconds),
                    config.ledger.unknown_deliveries,
                    Arc::clone(&clock),
                ));
                // Taken in before anything is served. The embedded engine knows its current
                // deliveries itself; SQS does not, so over it the ledger is carried too.
                carried_state = config.state_dir().and_then(|dir| {
                    let with_ledger = matches!(config.backend, BackendConfig::Sqs(_));
                    CarriedState::open(&dir, Arc::clone(&state), with_ledger)
                });
                state
            }
        };
        let gateway = Arc::new(
            Gateway::new(
                backend,
                registry,
                config.keyring()?,
                state,
                config.ledger.unknown_deliveries,
                Arc::clone(&clock),
                shutdown.clone(),
            )
            .with_meters(meters.clone())
            .with_reserved_queues_named(config.metrics.name_reserved_queues)
            .with_abandoned_receive_bound(config.server.max_abandoned_receives)
            .with_count_limits(config.metrics.count_limits())
            .with_quota_policy(config.state.quotas_when_unavailable),
        );
        let keys = LiveKeys::new(KeySets::from_config(config)?);
        // The push subscriptions consume their queues from now on.
        let push_records: Arc<dyn crate::core::push::records::RecordStore> =
            match (&redis, config.push_dir()) {
                (Some(redis), _) => Arc::new(
                    crate::state::redis::push_records::RedisPushRecords::new(redis.clone()),
                ),
                (None, Some(dir)) => Arc::new(
                    crate::push::managed::DirectoryStore::open(&dir)
                        .map_err(|error| BuildError::State(error.to_string()))?,
                ),
                (None, None) => Arc::new(crate::push::managed::DirectoryStore::in_memory()),
            };
        crate::push::start(
            &gateway,
            &config.push,
            push_records,
            &config.keyring()?,
            Arc::clone(&clock),
        )
        .await?;
        let sombus = sombus_state(config, redis.as_ref(), &gateway, &clock, keys.admin.clone())?;
        // Creates a crash left half-made are undone before anything is served, then looked for
        // once a minute.
        sombus
            .recover_at_start(sombus_store_is_exclusive(config))
            .await;
        let sombus = Arc::new(sombus);
        tokio::spawn(Arc::clone(&sombus).upkeep());
        tokio::spawn(Arc::clone(&sombus).follow_changes());
        let health = health::Health::new(Arc::clone(&gateway))
            .with_credential_store(sombus.credential_store());
        let dialects: Vec<Arc<dyn Dialect>> = vec![
            sombus,
            Arc::new(api::basaltic::BasalticState::new(
                Arc::clone(&gateway),
                keys.basaltic.clone(),
                Duration::from_secs(config.basaltic.metrics_interval_seconds),
                // Shared by the replicas (one samples at a time) when the state is.
                match &redis {
                    Some(redis) => Arc::new(
                        crate::state::redis::sample_history::RedisSampleHistory::new(
                            redis.clone(),
                            Duration::from_secs(config.basaltic.metrics_interval_seconds),
                            Arc::clone(&clock),
                        ),
                    ),
                    None => Arc::new(crate::core::metrics::sample_history::InProcessHistory::new(
                        Duration::from_secs(config.basaltic.metrics_interval_seconds),
                    )),
                },
            )),
            Arc::new(health),
            Arc::new(documents::OpenApiDocuments),
            Arc::new(console::Console),
            Arc::new(api::ezgh::EzghState::from_config(
                Arc::clone(&gateway),
                &config.ezgh,
                keys.api.clone(),
                config.queue_allowances(),
                config.server.invalid_handles_per_minute,
            )),
            Arc::new(api::sqs::SqsState::from_config(
                Arc::clone(&gateway),
                &config.sqs_api,
                keys.sqs.clone(),
                config.server.tls.is_some(),
                Arc::clone(&clock),
            )),
        ];
        let edge = Edge::new(dialects.iter().map(|dialect| dialect.edge()));
        let mut router = dialects.iter().fold(Router::new(), |router, dialect| {
            router.merge(Arc::clone(dialect).router())
        });
        if config.metrics.enabled && config.metrics.listen.is_none() {
            router = router.merge(scrape.router());
        }
        let router = router
            .fallback({
                let edge = edge.clone();
                move |request: axum::extract::Request| async move { edge.not_found(&request) }
            })
            .layer(axum::middleware::from_fn(
                console::send_browsers_to_the_console,
            ))
            .layer(observe::ObserveLayer::new(
                meters,
                edge.clone(),
                ClientAddressPolicy {
                    trust_forwarded_for: config.server.trust_forwarded_for,
                    trusted_proxies: config.server.trusted_proxies.iter().copied().collect(),
                },
            ));
        Ok(Self {
            scrape,
            metrics_listen: config
                .metrics
                .enabled
                .then_some(config.metrics.listen)
                .flatten(),
            tls,
            keys,
            config_check: Duration::from_secs(config.server.config_check_seconds),
            reload: None,
            carried_state,
            router,
            edge,
            dialects,
            backend: Arc::clone(&backend_handle),
            gateway,
            shutdown,
            grace: Duration::from_secs(config.server.shutdown_grace_seconds),
            connections: ConnectionSettings {
                // The open-file limit is raised (and read) before the listener exists.
                max_connections: connections::fit_to_open_file_limit(config.server.max_connections),
                max_connections_per_address: config.server.max_connections_per_address,
                header_timeout: Duration::from_secs(config.server.header_timeout_seconds),
                idle_timeout: Duration::from_secs(config.server.idle_timeout_seconds),
                body_timeout: Duration::from_secs(config.server.body_timeout_seconds),
                http2_max_streams: config
                    .server
                    .http2
                    .then_some(config.server.http2_max_streams),
            },
        })
    }

    /// The routes with their layers, to serve requests in-process (the in-process test tier):
    /// everything but the accept loop's connection limits and read deadlines.
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// The backend the service was built with (tools and tests produce through it).
    pub fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(&self.backend)
    }

    /// The core the dialects call (tests call it as a dialect would).
    pub fn gateway(&self) -> Arc<Gateway> {
        Arc::clone(&self.gateway)
    }

    /// While it serves, reloads the keys from `file` (the config this service was built from) when
    /// the file changes and on each SIGHUP `hangups` catches (see [`reload`]).
    pub fn reload_keys_from(mut self, file: ConfigFile, hangups: Hangups) -> Self {
        self.reload = Some(KeyReload::new(
            file,
            hangups,
            self.keys.clone(),
            Arc::clone(&self.gateway),
            self.scrape.meters(),
            self.config_check,
        ));
        self
    }

    /// Cancelling this token starts a graceful shutdown.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Serves until shutdown: then waiting long polls answer empty, in-flight requests get the grace
    /// period to finish, and abandoned receives are released.
    pub async fn serve(self, listener: TcpListener) -> std::io::Result<()> {
        let shutdown = self.shutdown.clone();
        let gateway = Arc::clone(&self.gateway);
        tokio::spawn(async move { gateway.warm_up().await });
        let dialects = self.dialects.clone();
        let gateway = Arc::clone(&self.gateway);
        let upkeep_stop = shutdown.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(HOUSEKEEPING_EVERY);
            loop {
                tokio::select! {
                    _ = every.tick() => {
                        gateway.housekeeping().await;
                        dialects.iter().for_each(|dialect| dialect.housekeeping());
                    }
                    () = upkeep_stop.cancelled() => break,
                }
            }
        });
        let gateway = Arc::clone(&self.gateway);
        let stopping = shutdown.clone();
        tokio::spawn(async move {
            stopping.cancelled().await;
            gateway.shutting_down();
        });

        tokio::spawn(
            self.scrape
                .clone()
                .sample(Arc::clone(&self.gateway), shutdown.clone()),
        );
        if let Some(address) = self.metrics_listen {
            let metrics = TcpListener::bind(address).await?;
            tracing::info!(address = %metrics.local_addr()?, "metrics listening");
            let router = self.scrape.router();
            let stop = shutdown.clone();
            tokio::spawn(async move {
                let served = axum::serve(metrics, router)
                    .with_graceful_shutdown(async move { stop.cancelled().await })
                    .await;
                if let Err(error) = served {
                    tracing::error!(%error, "the metrics listener failed");
                }
            });
        }
        if let Some(tls) = &self.tls {
            tokio::spawn(tls.clone().watch(shutdown.clone()));
        }
        if let Some(reload) = self.reload {
            tokio::spawn(reload.watch(shutdown.clone()));
        }
        let acceptor = self.tls.as_ref().map(|tls| tls.acceptor().clone());
        let server = connections::serve(
            listener,
            self.router,
            self.edge,
            self.connections,
            acceptor,
            shutdown.clone(),
        );
        let grace = self.grace;
        let mut drained = true;
        tokio::select! {
            result = server => result?,
            () = async { shutdown.cancelled().await; tokio::time::sleep(grace).await } => {
                tracing::warn!(grace_seconds = grace.as_secs(), "grace period over; exiting with requests in flight");
                drained = false;
            }
        }
        // Long polls answered empty at shutdown still run in the backend (up to 20 s); wait for
        // them within the grace period so what they receive is released, not hidden.
        if tokio::time::timeout(grace.max(DRAIN_BACKGROUND), self.gateway.drain())
            .await
            .is_err()
        {
            tracing::warn!("background releases did not finish in time");
            drained = false;
        }
        // Only a drained stop's state is kept: with requests still in flight it could say that
        // a delivery an answered ack ended is current.
        match self.carried_state {
            Some(carried) if drained => {
                tokio::task::spawn_blocking(move || carried.keep())
                    .await
                    .map_err(std::io::Error::other)?;
            }
            Some(_) => tracing::warn!(
                "the state is not kept for the next start: requests were still in flight"
            ),
            None => {}
        }
        Ok(())
    }
}

/// The service could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The config is unusable (exit code 2).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The backend could not start (exit code 1).
    #[error("backend: {0}")]
    Backend(String),
    /// The state store could not be set up (exit code 1).
    #[error("state store: {0}")]
    State(String),
}

impl From<crate::core::error::SettingError> for BuildError {
    fn from(error: crate::core::error::SettingError) -> Self {
        Self::Config(error.into())
    }
}

/// The sombus credential store in a directory (or memory, with the in-memory engine).
fn directory_store(config: &Config, clock: &Arc<dyn Clock>) -> Result<ConnectionStore, BuildError> {
    let dir = config.credentials_dir();
    if let Some(dir) = &dir {
        let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        if config.sombus.credentials_dir.is_none()
            && matches!(config.backend, BackendConfig::Sqs(_))
        {
            // Relative to wherever the process was started: a replica started elsewhere would
            // see another (empty) store.
            tracing::warn!(
                dir = %absolute.display(),
                "sombus.credentials_dir is not set: the sombus connections are kept under the working directory; set it to a directory every replica shares"
            );
        } else {
            tracing::info!(dir = %absolute.display(), "sombus connections kept here");
        }
    }
    Ok(match dir {
        Some(dir) => ConnectionStore::open(&dir, Arc::clone(clock))
            .map_err(|error| BuildError::Backend(format!("sombus credential store: {error}")))?,
        None => ConnectionStore::in_memory(Arc::clone(clock)),
    })
}

/// With the shared server configured, connections a directory still holds are not served:
/// said once at the start, so an operator moving to Redis knows to move them there.
fn warn_of_a_directory_left_behind(config: &Config) {
    let Some(dir) = config.credentials_dir() else {
        return;
    };
    if dir.join("connections.json").exists() {
        tracing::warn!(
            dir = %dir.display(),
            "sombus connections are kept on the shared state server ([state.redis]); the ones in this directory are not read: move them there once with `sqs-gateway sombus import-credentials --config <this config>`"
        );
    }
}

/// Whether this process alone can be making sombus connections in its credential store: the
/// store is the embedded engine's own (in its data directory, whose queue store one process
/// holds at a time), so a connection being created there at the start is a crash's.
fn sombus_store_is_exclusive(config: &Config) -> bool {
    if config.state.redis.is_some() {
        return false;
    }
    match &config.backend {
        BackendConfig::Embedded(embedded) if !embedded.in_memory => {
            config.credentials_dir() == Some(embedded.data_dir.join(crate::setup::SOMBUS_DIR))
        }
        BackendConfig::Embedded(_) | BackendConfig::Sqs(_) => false,
    }
}

/// The sombus API's state: its credential store (the shared server when there is one, else a
/// directory, or memory), tokens signed with keys derived from the receipt keys, and its admin
/// keys.
fn sombus_state(
    config: &Config,
    redis: Option<&RedisServer>,
    gateway: &Arc<Gateway>,
    clock: &Arc<dyn Clock>,
    admin_keys: crate::credentials::live::Live<crate::credentials::admin_keys::AdminKeys>,
) -> Result<api::sombus::SombusState, BuildError> {
    let store = match redis {
        Some(redis) => {
            warn_of_a_directory_left_behind(config);
            tracing::info!("sombus connections kept on the shared state server");
            ConnectionStore::shared(
                Arc::new(
                    crate::state::redis::credential_server::RedisCredentialServer::new(
                        redis.clone(),
                    ),
                ),
                Arc::clone(clock),
            )
        }
        None => directory_store(config, clock)?,
    };
    let tokens = TokenService::new(
        &config.keyring()?,
        &config.sombus.environment,
        chrono::Duration::seconds(i64::from(config.sombus.token_lifetime_seconds)),
    );
    let check = CredentialCheck::new(
        tokens,
        Arc::new(store),
        Duration::from_secs(u64::from(config.sombus.credential_recheck_seconds)),
        Arc::clone(clock),
    );
    Ok(api::sombus::SombusState::new(
        Arc::clone(gateway),
        &config.sombus,
        admin_keys,
        check,
        config.server.tls.is_some(),
        Arc::clone(clock),
    ))
}

/// Creates (or updates) the configured queues in the embedded backend, dead-letter targets first.
async fn create_configured_queues(
    backend: &EmbeddedBackend,
    config: &Config,
) -> Result<(), BuildError> {
    let locators = config.queue_locators();
    let mut pending: Vec<(&String, &crate::config::QueueConfig)> = config.queues.iter().collect();
    while !pending.is_empty() {
        let before = pending.len();
        let mut waiting = Vec::new();
        for (name, queue) in pending {
            let target_ready = match &queue.dead_letter_queue {
                Some(target) => backend.resolve(&locators[target]).await.is_ok(),
                None => true,
            };
            if target_ready {
                backend
                    .ensure_queue(&locators[name], &queue.settings(&locators))
                    .await
                    .map_err(|error| {
                        BuildError::Config(ConfigError::Invalid {
                            field: format!("queues.{name}"),
                            message: error.to_string(),
                        })
                    })?;
            } else {
                waiting.push((name, queue));
            }
        }
        if waiting.len() == before {
            return Err(BuildError::Config(ConfigError::Invalid {
                field: "queues".into(),
                message: "dead_letter_queue references form a cycle".into(),
            }));
        }
        pending = waiting;
    }
    Ok(())
}
