//! `sqs-gateway serve`: the config (given, or the zero-config start's), the listener, signals.

use super::{EXIT_CONFIG, EXIT_RUNTIME};
use sqs_gateway::config::Config;
use sqs_gateway::server::{App, BuildError, Overrides};
use sqs_gateway::setup;
use sqs_gateway::telemetry::{self, LogFormat};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs the gateway until a signal stops it.
pub(super) fn run(
    config: Option<PathBuf>,
    data_dir: &Path,
    listen: Option<SocketAddr>,
    log_format: LogFormat,
) -> ExitCode {
    let _logs = match telemetry::init(log_format) {
        Ok(guard) => guard,
        Err(error) => {
            eprintln!("cannot start the logging thread: {error}");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    let (config, zero_config) = match config {
        Some(path) => (Config::load(&path), None),
        None => match setup::prepare(data_dir) {
            Ok(setup::Prepared::Existing(path)) => {
                (Config::load(&path), Some(ZeroConfig::Existing(path)))
            }
            Ok(setup::Prepared::First(first)) => (
                Config::parse(&first.config_text),
                Some(ZeroConfig::First(first)),
            ),
            Err(error @ setup::PrepareError::DataWithoutConfig(_)) => {
                eprintln!("cannot start: {error}");
                return ExitCode::from(EXIT_CONFIG);
            }
            Err(error @ setup::PrepareError::Io(_)) => {
                eprintln!("cannot prepare {}: {error}", data_dir.display());
                return ExitCode::from(EXIT_RUNTIME);
            }
        },
    };
    let mut config = match config {
        Ok(config) => config,
        Err(error) => {
            eprintln!("config error: {error}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if let Some(listen) = listen {
        config.server.listen = listen;
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    if let Some(threads) = config.server.worker_threads {
        runtime.worker_threads(threads);
    }
    let runtime = match runtime.build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the async runtime: {error}");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    runtime.block_on(serve(config, zero_config))
}

/// A zero-config start: the data directory's config, or a first start's to persist.
enum ZeroConfig {
    Existing(PathBuf),
    First(setup::FirstRun),
}

async fn serve(config: Config, zero_config: Option<ZeroConfig>) -> ExitCode {
    // In place before the gateway says it listens: a SIGTERM right after must stop it gently,
    // not end the process with the default action; a SIGHUP must not end it at all.
    let stop_signal = stop_signal();
    tokio::spawn(hangups(config.server.tls.is_some()));
    let app = match App::build(&config, Overrides::default()).await {
        Ok(app) => app,
        Err(BuildError::Config(error)) => {
            eprintln!("config error: {error}");
            return ExitCode::from(EXIT_CONFIG);
        }
        Err(error @ BuildError::Backend(_)) => {
            eprintln!("cannot start: {error}");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    let listener = match tokio::net::TcpListener::bind(config.server.listen).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(address = %config.server.listen, %error, "cannot listen");
            if matches!(zero_config, Some(ZeroConfig::First(_))) {
                eprintln!(
                    "cannot listen on {}: {error}; nothing was saved, the next start generates new credentials",
                    config.server.listen
                );
            }
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    // A first start's config (with the key's hash) is saved only now that the key can be shown.
    if let Some(ZeroConfig::First(first)) = &zero_config
        && let Err(error) = first.persist()
    {
        eprintln!("cannot save the generated config: {error}");
        return ExitCode::from(EXIT_RUNTIME);
    }
    match listener.local_addr() {
        Ok(address) => {
            tracing::info!(%address, "sqs-gateway listening");
            let sqs_key = config
                .sqs_api
                .credentials
                .first()
                .map(|c| c.access_key_id.as_str());
            let shown = match &zero_config {
                Some(ZeroConfig::First(first)) => Some(setup::instructions(
                    address,
                    &first.config_path,
                    Some(first),
                    sqs_key,
                )),
                Some(ZeroConfig::Existing(path)) => {
                    Some(setup::instructions(address, path, None, sqs_key))
                }
                None => None,
            };
            if let Some(shown) = shown {
                println!("{shown}");
            }
        }
        Err(error) => tracing::warn!(%error, "listening on an unknown address"),
    }
    let shutdown = app.shutdown_token();
    tokio::spawn(async move {
        stop_signal.await;
        tracing::info!("shutting down: ending long polls, draining requests");
        shutdown.cancel();
    });
    match app.serve(listener).await {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(error) => {
            tracing::error!(%error, "server failed");
            ExitCode::from(EXIT_RUNTIME)
        }
    }
}

/// Answers SIGHUP for the life of the process, which it never ends: with TLS the certificate's
/// watcher reloads it (and logs that); without TLS there is nothing to reload, and the log says so
/// (keys and the rest of the config are read at start only). The handler is installed when this
/// returns, before the future first runs.
fn hangups(tls: bool) -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    async move {
        #[cfg(unix)]
        while let Some(signal) = hangup.as_mut() {
            if signal.recv().await.is_none() {
                break;
            }
            if !tls {
                tracing::info!(
                    "SIGHUP: nothing to reload without TLS; keys and other config changes need a restart"
                );
            }
        }
        #[cfg(not(unix))]
        let _ = tls;
    }
}

/// Completes on Ctrl-C or SIGTERM; the handlers are installed when this returns.
fn stop_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    #[cfg(unix)]
    let mut interrupt =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
    async move {
        #[cfg(unix)]
        {
            let terminated = async {
                match terminate.as_mut() {
                    Some(signal) => signal.recv().await,
                    None => std::future::pending().await,
                }
            };
            let interrupted = async {
                match interrupt.as_mut() {
                    Some(signal) => signal.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = terminated => {}
                _ = interrupted => {}
            }
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
