//! Assembles the service: backend, core, dialect routers, tower layers, graceful shutdown.

pub mod connections;
pub mod console;
mod deadline;
mod dialects;
pub mod documents;
pub mod edge;
pub mod health;
pub mod observe;
pub mod own_paths;
mod per_address;
pub mod reload;
pub mod scrape;
mod stores;
pub mod tls;

use crate::api::common::{ClientAddressPolicy, Dialect, PlugContext};
use crate::config::{Config, ConfigError};
use crate::core::Gateway;
use crate::core::backend::Backend;
use crate::core::clock::{Clock, SystemClock};
use crate::core::handle::Keyring;
use crate::core::metrics::metered::MeteredBackend;
use crate::core::metrics::meters::Meters;
use crate::core::registry::QueueRegistry;
use crate::core::state::StateStore;
use crate::state::restart_file::CarriedState;
use axum::Router;
use connections::ConnectionSettings;
use edge::Edge;
use reload::{ConfigFile, Hangups, KeyReload, KeySets, LiveKeys};
use scrape::Scrape;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use stores::Stores;
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
    pub async fn build(config: &Config, mut overrides: Overrides) -> Result<Self, BuildError> {
        let clock = overrides
            .clock
            .take()
            .unwrap_or_else(|| Arc::new(SystemClock));
        let tls = config
            .server
            .tls
            .as_ref()
            .map(|tls| Tls::load(tls, config.server.http2))
            .transpose()
            .map_err(|error| ConfigError::invalid("server.tls", error.to_string()))?;
        let scrape = Scrape::new(Duration::from_secs(config.metrics.sample_seconds));
        let meters = scrape.meters();
        let keyring = config.keyring()?;
        let stores = Stores::open(config, &mut overrides, &clock, &meters).await?;
        let shutdown = CancellationToken::new();
        let gateway = Arc::new(core(config, &stores, &keyring, &clock, &meters, &shutdown)?);
        let keys = LiveKeys::new(KeySets::from_config(config)?);
        // The push subscriptions consume their queues from now on.
        let push_records = Arc::clone(&stores.push_records);
        crate::push::start(
            &gateway,
            &config.push,
            push_records,
            &keyring,
            Arc::clone(&clock),
        )
        .await?;
        let context = PlugContext {
            gateway: Arc::clone(&gateway),
            clock,
            keyring,
            tls: tls.is_some(),
            queue_allowances: config.queue_allowances(),
            invalid_handles_per_minute: config.server.invalid_handles_per_minute,
            sample_history: Arc::clone(&stores.sample_history),
            credentials: Arc::clone(&stores.credentials),
            credentials_exclusive: stores.credentials_exclusive,
        };
        let dialects = dialects::plug_all(config, &keys, &context).await;
        let edge = Edge::new(dialects.iter().map(|dialect| dialect.edge()));
        let metrics_listen = config.metrics.listen.filter(|_| config.metrics.enabled);
        let scrape_route = (config.metrics.enabled && metrics_listen.is_none()).then_some(&scrape);
        Ok(Self {
            router: routes(config, &dialects, &edge, scrape_route, meters),
            scrape,
            metrics_listen,
            tls,
            keys,
            config_check: Duration::from_secs(config.server.config_check_seconds),
            reload: None,
            carried_state: stores.carried_state,
            edge,
            dialects,
            backend: stores.backend,
            gateway,
            shutdown,
            grace: Duration::from_secs(config.server.shutdown_grace_seconds),
            connections: ConnectionSettings::of(&config.server),
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

/// The core over the metered backend, with the queue registry the config describes.
fn core(
    config: &Config,
    stores: &Stores,
    keyring: &Keyring,
    clock: &Arc<dyn Clock>,
    meters: &Meters,
    shutdown: &CancellationToken,
) -> Result<Gateway, BuildError> {
    let backend: Arc<dyn Backend> = Arc::new(MeteredBackend::new(
        Arc::clone(&stores.backend),
        stores.backend_name,
        meters.clone(),
    ));
    let registry = QueueRegistry::new(
        Arc::clone(&backend),
        config.queue_locators(),
        config.sqs_api.manage_queues,
        Duration::from_secs(config.server.queue_cache_seconds),
        Arc::clone(clock),
    )
    .with_aliases(config.ezgh.aliases().map_err(ConfigError::from)?)
    .with_open_projects(config.ezgh.open_projects())
    .with_basaltic_ids(config.basaltic.all_queues)
    .with_managed_prefix(crate::core::access::RESERVED_QUEUE_PREFIX);
    if !config.basaltic.all_queues && !config.basaltic.keys.is_empty() && !config.queues.is_empty()
    {
        tracing::info!(
            configured_queues = config.queues.len(),
            "basaltic keys and the console see only the queues made through basaltic, not the \
             configured [queues.*]: set [basaltic] all_queues = true to show those (and the \
             queues made over the other APIs) too; a reload applies it, no restart"
        );
    }
    Ok(Gateway::new(
        backend,
        registry,
        keyring.clone(),
        Arc::clone(&stores.state),
        config.ledger.unknown_deliveries,
        Arc::clone(clock),
        shutdown.clone(),
    )
    .with_meters(meters.clone())
    .with_reserved_queues_named(config.metrics.name_reserved_queues)
    .with_abandoned_receive_bound(config.server.max_abandoned_receives)
    .with_count_limits(config.metrics.count_limits())
    .with_quota_policy(config.state.quotas_when_unavailable))
}

/// The plugs' routes, the scrape's if it is served on the API listener, and the layers every
/// request passes: the edge's answer to an unknown path, browsers sent to the console, and the
/// observation (access log, meters, server span).
fn routes(
    config: &Config,
    dialects: &[Arc<dyn Dialect>],
    edge: &Edge,
    scrape: Option<&Scrape>,
    meters: Meters,
) -> Router {
    let mut router = dialects.iter().fold(Router::new(), |router, dialect| {
        router.merge(Arc::clone(dialect).router())
    });
    if let Some(scrape) = scrape {
        router = router.merge(scrape.router());
    }
    router
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
        ))
}
