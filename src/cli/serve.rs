//! `sqs-gateway serve`: the config (given, or the zero-config start's), the listener, signals.

use super::{EXIT_CONFIG, EXIT_RUNTIME};
use sqs_gateway::config::Config;
use sqs_gateway::server::reload::{ConfigFile, Hangups};
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
    // Until the config says whether spans are exported, logs go straight to stderr.
    let early = telemetry::early(log_format);
    let loaded = tracing::dispatcher::with_default(&early, || load(config, data_dir));
    let (mut config, file, zero_config) = match loaded {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if let Some(listen) = listen {
        config.server.listen = listen;
    }
    let _logs = match telemetry::init(log_format, &config.tracing) {
        Ok(guard) => guard,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
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
    runtime.block_on(serve(config, file, zero_config))
}

/// The config the gateway starts with, its file, and whether it is a zero-config start's; or
/// the exit code of a start that cannot go on (said on stderr).
fn load(
    config: Option<PathBuf>,
    data_dir: &Path,
) -> Result<(Config, ConfigFile, Option<ZeroConfig>), ExitCode> {
    // The file the keys are reloaded from while the gateway runs: `--config`, or the data
    // directory's (a first start's once it is written).
    let (config, zero_config) = match config {
        Some(path) => (ConfigFile::load(&path), None),
        None => match setup::prepare(data_dir) {
            Ok(setup::Prepared::Existing(path)) => {
                (ConfigFile::load(&path), Some(ZeroConfig::Existing(path)))
            }
            Ok(setup::Prepared::First(first)) => (
                ConfigFile::unwritten(first.config_path.clone(), first.config_text.clone()),
                Some(ZeroConfig::First(first)),
            ),
            Err(error @ setup::PrepareError::DataWithoutConfig(_)) => {
                eprintln!("cannot start: {error}");
                return Err(ExitCode::from(EXIT_CONFIG));
            }
            Err(error @ setup::PrepareError::Io(_)) => {
                eprintln!("cannot prepare {}: {error}", data_dir.display());
                return Err(ExitCode::from(EXIT_RUNTIME));
            }
        },
    };
    match config {
        Ok((config, file)) => Ok((config, file, zero_config)),
        Err(error) => {
            eprintln!("config error: {error}");
            Err(ExitCode::from(EXIT_CONFIG))
        }
    }
}

/// A zero-config start: the data directory's config, or a first start's to persist.
enum ZeroConfig {
    Existing(PathBuf),
    First(setup::FirstRun),
}

async fn serve(config: Config, file: ConfigFile, zero_config: Option<ZeroConfig>) -> ExitCode {
    // In place before the gateway says it listens: a SIGTERM right after must stop it gently,
    // not end the process with the default action; a SIGHUP must not end it at all (it reloads
    // the keys, and the TLS certificate if there is one).
    let stop_signal = stop_signal();
    tokio::spawn(user_signals());
    let hangups = Hangups::catch();
    let app = match App::build(&config, Overrides::default()).await {
        Ok(app) => app.reload_keys_from(file, hangups),
        Err(BuildError::Config(error)) => {
            eprintln!("config error: {error}");
            return ExitCode::from(EXIT_CONFIG);
        }
        Err(error @ (BuildError::Backend(_) | BuildError::State(_))) => {
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

/// Answers SIGUSR1 and SIGUSR2 for the life of the process (their default action would end
/// it): only SIGTERM and SIGINT stop the gateway. The handlers are installed when this returns.
fn user_signals() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let mut caught: Vec<(&'static str, tokio::signal::unix::Signal)> = [
        ("SIGUSR1", tokio::signal::unix::SignalKind::user_defined1()),
        ("SIGUSR2", tokio::signal::unix::SignalKind::user_defined2()),
    ]
    .into_iter()
    .filter_map(|(name, kind)| Some((name, tokio::signal::unix::signal(kind).ok()?)))
    .collect();
    async move {
        #[cfg(unix)]
        loop {
            let received = next_user_signal(&mut caught).await;
            let Some(name) = received else {
                break;
            };
            tracing::info!(
                signal = name,
                "ignored: SIGTERM or SIGINT stops the gateway, SIGHUP reloads its keys"
            );
        }
    }
}

/// The name of the next of `caught` to arrive (`None` once none can).
#[cfg(unix)]
async fn next_user_signal(
    caught: &mut [(&'static str, tokio::signal::unix::Signal)],
) -> Option<&'static str> {
    let [(first, one), (second, two)] = caught else {
        return None;
    };
    tokio::select! {
        Some(()) = one.recv() => Some(*first),
        Some(()) = two.recv() => Some(*second),
        else => None,
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
