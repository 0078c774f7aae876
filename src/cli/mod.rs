//! The `sqs-gateway` command line: serve the gateway, make the secrets its config needs, and the
//! tools (bench, the crash test's load) that live in the binary, not the library.

mod bench;
mod keys;
mod probe;
mod serve;
mod sombus;
mod sombus_import;

use clap::{CommandFactory as _, Parser, Subcommand};
use sqs_gateway::config::Config;
use sqs_gateway::core::handle::Keyring;
use sqs_gateway::telemetry::LogFormat;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code for a config that cannot be used.
pub(crate) const EXIT_CONFIG: u8 = 2;
/// Exit code for failures at run time (cannot bind, server error).
pub(crate) const EXIT_RUNTIME: u8 = 1;

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
        /// A zero-config data directory whose config gets the key (a running gateway picks it up
        /// without a restart); only the key's hash is written.
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
    /// Health check without curl (the container image's HEALTHCHECK): GET the URL once, exit 0 on
    /// a 2xx answer, 1 otherwise (3 s timeout).
    Probe {
        /// The URL to request.
        #[arg(long, default_value = probe::DEFAULT_URL)]
        url: String,
    },
    /// Make a new admin key of the sombus admin API: prints the key once and the
    /// `[[sombus.admin_keys]]` entry to paste; with `--data-dir`, adds it to that zero-config
    /// directory's config instead (a running gateway picks it up without a restart).
    NewAdminKey {
        /// A workspace the key manages (repeatable; `*` for all).
        #[arg(long = "workspace", required = true)]
        workspaces: Vec<String>,
        /// viewer, developer or admin.
        #[arg(long, default_value = "admin")]
        role: String,
        /// A label, written to the audit log.
        #[arg(long)]
        name: Option<String>,
        /// A zero-config data directory whose config gets the key.
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Make a new basaltic API key: prints the key once and the `[[basaltic.keys]]` entry to
    /// paste; with `--data-dir`, adds it to that zero-config directory's config instead.
    NewBasalticKey {
        /// A grant, `QUEUE=PERMISSION,…` (a queue UUID or `*`; permissions send, receive,
        /// delete, change_visibility, inspect, purge, read_metrics, manage_queues or `*`);
        /// repeatable. Default: `*=*`.
        #[arg(long = "grant")]
        grants: Vec<String>,
        /// A label for logs.
        #[arg(long)]
        name: Option<String>,
        /// A zero-config data directory whose config gets the key.
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// The sombus API's tools: manage connections, read the audit log, publish an envelope.
    Sombus {
        #[command(subcommand)]
        command: sombus::SombusCommand,
    },
    /// Print a completion script for SHELL (e.g. `sqs-gateway completions bash >
    /// ~/.local/share/bash-completion/completions/sqs-gateway`).
    Completions {
        /// bash, elvish, fish, powershell or zsh.
        shell: sqs_gateway::client::Shell,
    },
    /// Measure what users feel over HTTP, against baselines of the same run: the SQS endpoint
    /// (aws-sdk-sqs) against LocalStack and the proxy's cost, ezgh receive+ack against a bare
    /// handler, idle long polls, and backlogs (memory per million, reopen time); with the targets.
    Bench {
        /// Messages per throughput row.
        #[arg(long, default_value_t = 20_000)]
        messages: usize,
        /// Message body size in bytes of the throughput rows.
        #[arg(long, default_value_t = 256)]
        body_bytes: usize,
        /// LocalStack endpoint measured as the baseline (skipped when it does not answer).
        #[arg(long, default_value = "http://127.0.0.1:4566")]
        localstack: String,
        /// Measure without LocalStack.
        #[arg(long)]
        no_localstack: bool,
        /// Idle long polls opened at once.
        #[arg(long, default_value_t = 10_000)]
        long_polls: usize,
        /// Stored 256-byte messages of the backlog figures (memory, reopen, throughput).
        #[arg(long, default_value_t = 1_000_000)]
        backlog_messages: usize,
        /// Stored 64 KiB messages of the "flat in body size" figure (scaled to a million).
        #[arg(long, default_value_t = 20_000)]
        large_body_messages: usize,
        /// Stored 256-byte messages of the large reopen (10000000 for the 10 million figure;
        /// 0 skips it).
        #[arg(long, default_value_t = 0)]
        backlog_messages_large: usize,
        /// Directory for the temporary data directories (default: the system's temp directory).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Run only these families (repeatable).
        #[arg(long, value_enum)]
        only: Vec<bench::Family>,
        /// Also write the tables as Markdown to this file (for the README).
        #[arg(long)]
        markdown: Option<PathBuf>,
        /// Keep the temporary directory (configs and logs of every gateway) afterwards.
        #[arg(long)]
        keep: bool,
    },
    /// The bench's ceiling: a bare axum handler answering canned ezgh answers.
    #[command(hide = true)]
    BenchCeiling {
        #[arg(long)]
        listen: SocketAddr,
        #[arg(long)]
        receive_answer: PathBuf,
        #[arg(long)]
        ack_answer: PathBuf,
    },
    /// The bench's backlog: stores messages in an embedded data directory through the engine.
    #[command(hide = true)]
    BenchFill {
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long)]
        messages: usize,
        #[arg(long)]
        body_bytes: usize,
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

/// Parses the command line and runs the command.
pub(crate) fn run() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            config,
            data_dir,
            listen,
            log_format,
        } => serve::run(config, &data_dir, listen, log_format),
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
        } => keys::new_api_key(organization, data_dir, name, receive_on),
        Command::NewAdminKey {
            workspaces,
            role,
            name,
            data_dir,
        } => keys::new_admin_key(&workspaces, &role, name, data_dir),
        Command::NewBasalticKey {
            grants,
            name,
            data_dir,
        } => keys::new_basaltic_key(&grants, name, data_dir),
        Command::Sombus { command } => block_on(sombus::run(command)).unwrap_or_else(|error| {
            eprintln!("{error}");
            ExitCode::from(EXIT_RUNTIME)
        }),
        Command::Completions { shell } => {
            sqs_gateway::client::print_completions(shell, &mut Cli::command());
            ExitCode::SUCCESS
        }
        Command::Probe { url } => probe::run(&url),
        Command::NewReceiptKey => {
            println!("{}", Keyring::generate_key());
            ExitCode::SUCCESS
        }
        Command::Bench {
            messages,
            body_bytes,
            localstack,
            no_localstack,
            long_polls,
            backlog_messages,
            large_body_messages,
            backlog_messages_large,
            dir,
            only,
            markdown,
            keep,
        } => {
            let options = bench::BenchOptions {
                messages,
                body_bytes,
                localstack: (!no_localstack).then_some(localstack),
                long_polls,
                backlog_messages,
                large_body_messages,
                backlog_messages_large,
                dir,
                only,
                markdown,
                keep,
            };
            // On Ctrl-C the bench's future is dropped, and with it every child process it started.
            let outcome = block_on(async move {
                tokio::select! {
                    outcome = bench::run(&options) => outcome,
                    _ = tokio::signal::ctrl_c() => Err("interrupted".to_owned()),
                }
            });
            match outcome {
                Ok(Ok(())) => ExitCode::SUCCESS,
                Ok(Err(error)) | Err(error) => {
                    eprintln!("bench failed: {error}");
                    ExitCode::from(EXIT_RUNTIME)
                }
            }
        }
        Command::BenchCeiling {
            listen,
            receive_answer,
            ack_answer,
        } => match block_on(bench::ceiling::serve(listen, &receive_answer, &ack_answer)) {
            Ok(Ok(())) => ExitCode::SUCCESS,
            Ok(Err(error)) | Err(error) => {
                eprintln!("bench-ceiling failed: {error}");
                ExitCode::from(EXIT_RUNTIME)
            }
        },
        Command::BenchFill {
            data_dir,
            messages,
            body_bytes,
        } => match block_on(bench::backlog::fill(&data_dir, messages, body_bytes)) {
            Ok(Ok(())) => ExitCode::SUCCESS,
            Ok(Err(error)) | Err(error) => {
                eprintln!("bench-fill failed: {error}");
                ExitCode::from(EXIT_RUNTIME)
            }
        },
        Command::Load { data_dir, queue } => {
            match block_on(async move { bench::load_until_killed(&data_dir, &queue).await }) {
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
