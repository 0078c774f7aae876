//! The `sqs-gateway` command line: serve the gateway, make the secrets its config needs, and the
//! tools that live in the binary, not the library (the bench is a binary of its own).

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
    /// Measure the gateway (the separate `sqs-gateway-bench` binary beside this one, which
    /// `cargo build --release` builds too): this command hands it its arguments.
    #[command(disable_help_flag = true)]
    Bench {
        /// Everything for `sqs-gateway-bench` (see `sqs-gateway bench --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
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
        Command::Bench { args } => bench::hand_over(&args),
    }
}

/// Runs a future on a new multi-threaded runtime.
fn block_on<T>(future: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::runtime::Runtime::new()
        .map(|runtime| runtime.block_on(future))
        .map_err(|error| format!("cannot start the async runtime: {error}"))
}
