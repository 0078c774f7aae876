//! Everything the service keeps, opened once from the config: the backend, the core's state, the
//! push subscriptions made through the API, basaltic's metric samples and sombus's connections.
//! "On the shared server or in this process?" is decided here, once: with `[state.redis]` every
//! store but the backend is on the server the replicas share; without, each is this process's own
//! (in its data directory, or in memory with the in-memory engine).

use super::{BuildError, Overrides};
use crate::backend::embedded::EmbeddedBackend;
use crate::backend::sqs::SqsBackend;
use crate::config::{BackendConfig, Config, ConfigError};
use crate::core::backend::Backend;
use crate::core::clock::Clock;
use crate::core::metrics::meters::Meters;
use crate::core::metrics::sample_history::{InProcessHistory, SampleHistory};
use crate::core::push::records::RecordStore;
use crate::core::state::{InProcessState, StateStore};
use crate::credentials::oauth::ConnectionStore;
use crate::push::managed::DirectoryStore;
use crate::state::redis::credential_server::RedisCredentialServer;
use crate::state::redis::push_records::RedisPushRecords;
use crate::state::redis::sample_history::RedisSampleHistory;
use crate::state::redis::{RedisServer, RedisState};
use crate::state::restart_file::CarriedState;
use std::sync::Arc;
use std::time::Duration;

/// The service's stores, each opened once.
pub(super) struct Stores {
    /// The queues, as configured (not yet metered).
    pub(super) backend: Arc<dyn Backend>,
    /// Which backend it is, as metrics label it.
    pub(super) backend_name: &'static str,
    /// The core's deliveries, quotas and consumers.
    pub(super) state: Arc<dyn StateStore>,
    /// The in-process state, written down at a drained stop for the next start, if kept.
    pub(super) carried_state: Option<CarriedState>,
    /// The push subscriptions made through the API.
    pub(super) push_records: Arc<dyn RecordStore>,
    /// basaltic's metric samples (shared by the replicas, one sampling at a time, when the state
    /// is).
    pub(super) sample_history: Arc<dyn SampleHistory>,
    /// sombus's connections.
    pub(super) credentials: Arc<ConnectionStore>,
    /// Whether this process alone can be making connections in `credentials` (then a connection
    /// found half-made at the start is a crash's).
    pub(super) credentials_exclusive: bool,
}

impl Stores {
    /// Opens the stores `config` names; `overrides` replace the backend or the state.
    pub(super) async fn open(
        config: &Config,
        overrides: &mut Overrides,
        clock: &Arc<dyn Clock>,
        meters: &Meters,
    ) -> Result<Self, BuildError> {
        let backend = match overrides.backend.take() {
            Some(backend) => backend,
            None => open_backend(config, clock, meters).await?,
        };
        let redis = config
            .state
            .redis
            .as_ref()
            .map(RedisServer::connect)
            .transpose()
            .map_err(|error| BuildError::State(error.to_string()))?;
        let state = overrides.state.take();
        Ok(match redis {
            Some(redis) => Self::on_the_shared_server(backend, &redis, state, config, clock),
            None => Self::in_this_process(backend, state, config, clock)?,
        })
    }

    /// Which backend `config` names, as metrics label it.
    fn backend_name(config: &Config) -> &'static str {
        match &config.backend {
            BackendConfig::Sqs(_) => "sqs",
            BackendConfig::Embedded(_) => "embedded",
        }
    }

    /// Every store but the backend on the server the replicas share (one connection for all of
    /// them); `state` replaces the core's.
    fn on_the_shared_server(
        backend: Arc<dyn Backend>,
        redis: &RedisServer,
        state: Option<Arc<dyn StateStore>>,
        config: &Config,
        clock: &Arc<dyn Clock>,
    ) -> Self {
        warn_of_a_directory_left_behind(config);
        tracing::info!("sombus connections kept on the shared state server");
        let sample_every = Duration::from_secs(config.basaltic.metrics_interval_seconds);
        Self {
            backend,
            backend_name: Self::backend_name(config),
            state: state.unwrap_or_else(|| {
                Arc::new(RedisState::on(
                    redis.clone(),
                    Duration::from_secs(config.ledger.ttl_seconds),
                    config.ledger.unknown_deliveries,
                    Arc::clone(clock),
                ))
            }),
            carried_state: None,
            push_records: Arc::new(RedisPushRecords::new(redis.clone())),
            sample_history: Arc::new(RedisSampleHistory::new(
                redis.clone(),
                sample_every,
                Arc::clone(clock),
            )),
            credentials: Arc::new(ConnectionStore::shared(
                Arc::new(RedisCredentialServer::new(redis.clone())),
                Arc::clone(clock),
            )),
            credentials_exclusive: false,
        }
    }

    /// Every store but the backend this process's own: in its data directories, or in memory;
    /// `state` replaces the core's (and then none is carried across restarts).
    fn in_this_process(
        backend: Arc<dyn Backend>,
        state: Option<Arc<dyn StateStore>>,
        config: &Config,
        clock: &Arc<dyn Clock>,
    ) -> Result<Self, BuildError> {
        let (state, carried_state) = match state {
            Some(state) => (state, None),
            None => {
                let state = Arc::new(InProcessState::new(
                    config.ledger.max_entries,
                    Duration::from_secs(config.ledger.ttl_seconds),
                    config.ledger.unknown_deliveries,
                    Arc::clone(clock),
                ));
                // Taken in before anything is served. The embedded engine knows its current
                // deliveries itself; SQS does not, so over it the ledger is carried too.
                let carried = config.state_dir().and_then(|dir| {
                    let with_ledger = matches!(config.backend, BackendConfig::Sqs(_));
                    CarriedState::open(&dir, Arc::clone(&state), with_ledger)
                });
                (state as Arc<dyn StateStore>, carried)
            }
        };
        let push_records: Arc<dyn RecordStore> = match config.push_dir() {
            Some(dir) => Arc::new(
                DirectoryStore::open(&dir).map_err(|error| BuildError::State(error.to_string()))?,
            ),
            None => Arc::new(DirectoryStore::in_memory()),
        };
        Ok(Self {
            backend,
            backend_name: Self::backend_name(config),
            state,
            carried_state,
            push_records,
            sample_history: Arc::new(InProcessHistory::new(Duration::from_secs(
                config.basaltic.metrics_interval_seconds,
            ))),
            credentials: Arc::new(directory_store(config, clock)?),
            credentials_exclusive: sombus_store_is_exclusive(config),
        })
    }
}

/// The configured backend; the embedded engine with the configured queues made in it.
async fn open_backend(
    config: &Config,
    clock: &Arc<dyn Clock>,
    meters: &Meters,
) -> Result<Arc<dyn Backend>, BuildError> {
    Ok(match &config.backend {
        BackendConfig::Sqs(sqs) => Arc::new(SqsBackend::from_config(sqs, meters).await),
        BackendConfig::Embedded(embedded) => {
            let backend = EmbeddedBackend::from_config(embedded, Arc::clone(clock))
                .map_err(|error| BuildError::Backend(error.to_string()))?;
            create_configured_queues(&backend, config).await?;
            backend
        }
    })
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

/// Whether this process alone can be making sombus connections in its directory store: the
/// store is the embedded engine's own (in its data directory, whose queue store one process
/// holds at a time).
fn sombus_store_is_exclusive(config: &Config) -> bool {
    match &config.backend {
        BackendConfig::Embedded(embedded) if !embedded.in_memory => {
            config.credentials_dir() == Some(embedded.data_dir.join(crate::setup::SOMBUS_DIR))
        }
        BackendConfig::Embedded(_) | BackendConfig::Sqs(_) => false,
    }
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
