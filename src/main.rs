//! The `sqs-gateway` command: serve the gateway, or make the secrets its config needs.

use clap::{Parser, Subcommand};
use sqs_gateway::config::Config;
use sqs_gateway::core::handle::Keyring;
use sqs_gateway::credentials::api_keys;
use sqs_gateway::server::{App, BuildError, Overrides};
use sqs_gateway::setup;
use sqs_gateway::telemetry::{self, LogFormat};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code for a config that cannot be used.
const EXIT_CONFIG: u8 = 2;
/// Exit code for failures at run time (cannot bind, server error).
const EXIT_RUNTIME: u8 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "sqs-gateway",
    version,
    about = "Simple, safe HTTPS queue APIs in front of Amazon SQS"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the gateway.
    Serve {
        /// The TOML config file. Without one, the gateway runs the embedded backend in
        /// `--data-dir` with a config it generates there on the first start.
        #[arg(long, env = "SQSGW_CONFIG")]
        config: Option<PathBuf>,
        /// Data directory of the zero-config start.
        #[arg(
            long,
            env = "SQSGW_DATA_DIR",
            default_value = "sqs-gateway-data",
            conflicts_with = "config"
        )]
        data_dir: PathBuf,
        /// Listen address; overrides `server.listen`.
        #[arg(long, env = "SQSGW_LISTEN")]
        listen: Option<SocketAddr>,
        /// Log line format.
        #[arg(long, env = "SQSGW_LOG_FORMAT", value_enum, default_value = "text")]
        log_format: LogFormat,
    },
    /// Check a config file and exit: 0 when usable, 2 with the failing field otherwise.
    CheckConfig {
        /// The TOML config file.
        #[arg(long, env = "SQSGW_CONFIG")]
        config: PathBuf,
    },
    /// Make a new API key: prints the key once and the `[[api_keys]]` entry (with its hash) to
    /// paste; with `--data-dir`, adds the entry to that zero-config directory's config instead.
    NewApiKey {
        /// The ezgh organization the key belongs to (with `--data-dir`, default `local`).
        #[arg(long, required_unless_present = "data_dir")]
        organization: Option<String>,
        /// A zero-config data directory whose config gets the key (read at the gateway's next
        /// start); only the key's hash is written.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// A label for logs.
        #[arg(long)]
        name: Option<String>,
        /// Gateway queue to grant `queues.messages.receive` on (repeatable; `*` for all).
        #[arg(long = "receive-on")]
        receive_on: Vec<String>,
    },
    /// Make a new receipt-handle key (32 random bytes, base64).
    NewReceiptKey,
    /// Measure backend throughput (send, receive+delete; batches of 10; 1 and 8 clients) and memory.
    Bench {
        /// Messages per scenario.
        #[arg(long, default_value_t = 20_000)]
        messages: usize,
        /// Message body size in bytes.
        #[arg(long, default_value_t = 256)]
        body_bytes: usize,
        /// LocalStack endpoint measured as the baseline (skipped when it does not answer).
        #[arg(long, default_value = "http://127.0.0.1:4566")]
        localstack: String,
        /// Measure without LocalStack.
        #[arg(long)]
        no_localstack: bool,
        /// Messages stored for the memory figure.
        #[arg(long, default_value_t = 200_000)]
        memory_messages: usize,
    },
    /// Send messages into an embedded data directory until killed, printing each durable id
    /// (used by the crash test).
    #[command(hide = true)]
    Load {
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long, default_value = "load")]
        queue: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            config,
            data_dir,
            listen,
            log_format,
        } => {
            telemetry::init(log_format);
            let (config, zero_config) = match config {
                Some(path) => (Config::load(&path), None),
                None => match setup::prepare(&data_dir) {
                    Ok(setup::Prepared::Existing(path)) => {
                        (Config::load(&path), Some(ZeroConfig::Existing(path)))
                    }
                    Ok(setup::Prepared::First(first)) => (
                        Config::parse(&first.config_text),
                        Some(ZeroConfig::First(first)),
                    ),
                    Err(error) => {
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
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(runtime) => runtime,
                Err(error) => {
                    eprintln!("cannot start the async runtime: {error}");
                    return ExitCode::from(EXIT_RUNTIME);
                }
            };
            runtime.block_on(serve(config, zero_config))
        }
        Command::CheckConfig { config } => match Config::load(&config) {
            Ok(_) => {
                println!("config ok");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("config error: {error}");
                ExitCode::from(EXIT_CONFIG)
            }
        },
        Command::NewApiKey {
            organization,
            data_dir,
            name,
            receive_on,
        } => {
            if let Some(data_dir) = data_dir {
                let organization = organization.unwrap_or_else(|| setup::ORGANIZATION.to_owned());
                let name = name.unwrap_or_else(|| "added".to_owned());
                return match setup::add_api_key(&data_dir, &organization, &name, &receive_on) {
                    Ok(key) => {
                        println!("# The key, shown once; only its hash is in the config.");
                        println!("# The gateway uses it from its next start.");
                        println!("export SQSGW_API_KEY={key}");
                        ExitCode::SUCCESS
                    }
                    Err(error) => {
                        eprintln!("cannot add a key: {error}");
                        ExitCode::from(EXIT_CONFIG)
                    }
                };
            }
            let organization = organization.unwrap_or_default();
            let generated = api_keys::generate_key();
            println!("# The key, shown once; give it to the client and keep it nowhere else:");
            println!("#   {}", generated.key);
            println!("[[api_keys]]");
            println!("id = \"{}\"", generated.id);
            if let Some(name) = name {
                println!("name = {}", toml_string(&name));
            }
            println!("organization = {}", toml_string(&organization));
            println!("hash = \"{}\"", generated.hash);
            let grants: Vec<String> = receive_on
                .iter()
                .map(|queue| format!("{} = [\"{}\"]", toml_key(queue), api_keys::RECEIVE))
                .collect();
            println!("grants = {{ {} }}", grants.join(", "));
            ExitCode::SUCCESS
        }
        Command::NewReceiptKey => {
            println!("{}", Keyring::generate_key());
            ExitCode::SUCCESS
        }
        Command::Bench {
            messages,
            body_bytes,
            localstack,
            no_localstack,
            memory_messages,
        } => {
            let options = sqs_gateway::bench::BenchOptions {
                messages,
                body_bytes,
                localstack: (!no_localstack).then_some(localstack),
                memory_messages,
            };
            match block_on(async move { sqs_gateway::bench::run(&options).await }) {
                Ok(Ok(_)) => ExitCode::SUCCESS,
                Ok(Err(error)) | Err(error) => {
                    eprintln!("bench failed: {error}");
                    ExitCode::from(EXIT_RUNTIME)
                }
            }
        }
        Command::Load { data_dir, queue } => {
            match block_on(
                async move { sqs_gateway::bench::load_until_killed(&data_dir, &queue).await },
            ) {
                Ok(Ok(())) => ExitCode::SUCCESS,
                Ok(Err(error)) | Err(error) => {
                    eprintln!("load failed: {error}");
                    ExitCode::from(EXIT_RUNTIME)
                }
            }
        }
    }
}

/// Runs a future on a new multi-threaded runtime.
fn block_on<T>(future: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::runtime::Runtime::new()
        .map(|runtime| runtime.block_on(future))
        .map_err(|error| format!("cannot start the async runtime: {error}"))
}

/// A zero-config start: the data directory's config, or a first start's to persist.
enum ZeroConfig {
    Existing(PathBuf),
    First(setup::FirstRun),
}

async fn serve(config: Config, zero_config: Option<ZeroConfig>) -> ExitCode {
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
        wait_for_signal().await;
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

async fn wait_for_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

fn toml_string(value: &str) -> String {
    toml::Value::String(value.to_owned()).to_string()
}

fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        key.to_owned()
    } else {
        toml_string(key)
    }
}
