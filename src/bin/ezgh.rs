//! `ezgh`: the ezgh pull-consumer API's command-line client, as its document shows it:
//! `ezgh queues receive --max N --wait S --visibility-timeout S [--ack]`, `ezgh queues ack
//! HANDLE…`, `ezgh queues change-visibility HANDLE… --visibility-timeout S`. An HTTP client of
//! the gateway; `EZGH_API_KEY`, `ORG_ID`, `PROJECT_ID`, `QUEUE_ID` and `EZGH_ENDPOINT`. Only the
//! receive needs the key and the queue's ids: the receipt routes take no credential (the handle is
//! what allows them). `ezgh completions SHELL` prints a completion script.

use clap::{Args, CommandFactory as _, Parser, Subcommand};
use serde_json::{Value, json};
use sqs_gateway::client::{
    Client, Failure, MessageFields, Output, SecretSource, Shell, printable, say_message,
};
use sqs_gateway::core::sqs_limits::MAX_VISIBILITY_SECONDS;
use sqs_gateway::say;
use std::path::PathBuf;
use std::process::ExitCode;

/// The API key: `EZGH_API_KEY` or a file; `--api-key` still works, with a warning.
const API_KEY: SecretSource = SecretSource {
    flag: "--api-key",
    file_flag: "--api-key-file",
    env: "EZGH_API_KEY",
};

#[derive(Debug, Parser)]
#[command(
    name = "ezgh",
    version,
    about = "Receive, acknowledge and extend messages of an ezgh queue",
    after_help = "Examples:\n  export EZGH_API_KEY=sqsgw_… ORG_ID=acme PROJECT_ID=shop QUEUE_ID=orders\n  ezgh queues receive --max 10 --wait 20 --visibility-timeout 60\n  ezgh queues receive --max 1 --ack\n  ezgh queues change-visibility AgAB… --visibility-timeout 120\n  ezgh queues ack AgAB…"
)]
struct Cli {
    #[command(flatten)]
    target: Target,
    /// text for people, json for scripts.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        help_heading = "Output"
    )]
    output: Output,
    #[command(subcommand)]
    command: Command,
}

/// Where the queue is, and the key: flags of every command, so `--help` shows them apart.
#[derive(Debug, Args)]
#[command(next_help_heading = "Connection (every command; the key and ids for receive only)")]
struct Target {
    /// The gateway's base URL.
    #[arg(
        long,
        global = true,
        env = "EZGH_ENDPOINT",
        default_value = "http://127.0.0.1:8787"
    )]
    endpoint: String,
    /// A PEM file of CA certificates to trust besides the system's (a gateway behind a private
    /// CA). SSL_CERT_FILE=PATH instead replaces the system's roots.
    #[arg(long, global = true, value_name = "PATH")]
    cacert: Option<PathBuf>,
    /// The API key (for receive): set EZGH_API_KEY, or use --api-key-file. This flag puts the key
    /// where every local user can read it (the process list), and warns.
    #[arg(long, global = true, value_name = "KEY")]
    api_key: Option<String>,
    /// A file whose first line is the API key (instead of EZGH_API_KEY).
    #[arg(long, global = true, value_name = "PATH")]
    api_key_file: Option<PathBuf>,
    /// The organization.
    #[arg(long, global = true, env = "ORG_ID")]
    org: Option<String>,
    /// The project.
    #[arg(long, global = true, env = "PROJECT_ID")]
    project: Option<String>,
    /// The queue.
    #[arg(long, global = true, env = "QUEUE_ID")]
    queue: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The queue's messages.
    #[command(subcommand)]
    Queues(Queues),
    /// Print a completion script for SHELL (e.g. `ezgh completions bash >
    /// ~/.local/share/bash-completion/completions/ezgh`).
    Completions {
        /// bash, elvish, fish, powershell or zsh.
        shell: Shell,
    },
}

#[derive(Debug, Subcommand)]
enum Queues {
    /// Receive messages (a lease); prints each with its receipt handle.
    Receive {
        /// At most this many messages (1–10).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10))]
        max: u32,
        /// Long poll: seconds to wait when none is ready (0–20).
        #[arg(long, value_parser = clap::value_parser!(u32).range(0..=20))]
        wait: Option<u32>,
        /// Seconds the messages stay hidden (0–43200).
        #[arg(long, value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_VISIBILITY_SECONDS)))]
        visibility_timeout: Option<u32>,
        /// Acknowledge the messages once printed (none of them when standard output closes
        /// first, as with `| head -1`: they come back after their visibility timeout).
        #[arg(long)]
        ack: bool,
    },
    /// Acknowledge (delete) messages by their receipt handles.
    Ack {
        /// 1 to 10 receipt handles.
        #[arg(required = true, num_args = 1..=10)]
        handles: Vec<String>,
    },
    /// Extend or shorten the lease of messages, counted from now.
    ChangeVisibility {
        /// 1 to 10 receipt handles.
        #[arg(required = true, num_args = 1..=10)]
        handles: Vec<String>,
        /// Seconds from now (0–43200; 0 releases at once).
        #[arg(long, required = true, value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_VISIBILITY_SECONDS)))]
        visibility_timeout: u32,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(failure) => failure.exit(),
    }
}

fn required(value: &Option<String>, name: &str) -> Result<String, Failure> {
    value
        .clone()
        .filter(|value| !value.is_empty())
        .ok_or_else(|| Failure::Usage(format!("{name} is not set")))
}

async fn run(cli: Cli) -> Result<ExitCode, Failure> {
    let target = &cli.target;
    let command = match cli.command {
        Command::Completions { shell } => {
            sqs_gateway::client::print_completions(shell, &mut Cli::command());
            return Ok(ExitCode::SUCCESS);
        }
        Command::Queues(command) => command,
    };
    // Read (and warned about) whatever the command; needed only by the receive.
    let key = API_KEY.read(target.api_key.as_deref(), target.api_key_file.as_deref())?;
    match command {
        Queues::Receive {
            max,
            wait,
            visibility_timeout,
            ack,
        } => {
            let key = key.ok_or_else(|| {
                Failure::Usage("EZGH_API_KEY (or --api-key-file) is not set".to_owned())
            })?;
            let client = Client::new(&target.endpoint, Some(&key), target.cacert.as_deref())?;
            let path = format!(
                "/v1/organizations/{}/projects/{}/queues/{}/messages/receive",
                segment(&required(&target.org, "ORG_ID (or --org)")?),
                segment(&required(&target.project, "PROJECT_ID (or --project)")?),
                segment(&required(&target.queue, "QUEUE_ID (or --queue)")?),
            );
            let mut body = json!({ "maxMessages": max });
            if let Some(wait) = wait {
                body["waitSeconds"] = json!(wait);
            }
            if let Some(seconds) = visibility_timeout {
                body["visibilityTimeoutSeconds"] = json!(seconds);
            }
            let answer = client
                .call(reqwest::Method::POST, &path, Some(&body))
                .await?;
            let messages = answer["messages"].as_array().cloned().unwrap_or_default();
            match print_messages(cli.output, &answer, &messages) {
                Err(Failure::StdoutClosed) if ack && !messages.is_empty() => {
                    eprintln!(
                        "error: standard output closed before every message was printed: none \
                         acknowledged (they come back once their visibility timeout ends)"
                    );
                    return Err(Failure::StdoutClosed);
                }
                printed => printed?,
            }
            if ack && !messages.is_empty() {
                let handles: Vec<Value> = messages
                    .iter()
                    .map(|message| message["receiptHandle"].clone())
                    .collect();
                // The receipt routes read no credential: the key is not sent where not needed.
                let acked = Client::new(&target.endpoint, None, target.cacert.as_deref())?
                    .call(
                        reqwest::Method::POST,
                        "/v1/receipts/ack",
                        Some(&json!({ "receiptHandles": handles })),
                    )
                    .await?;
                return report_results(cli.output, &acked, &handles, "acknowledged");
            }
            Ok(ExitCode::SUCCESS)
        }
        Queues::Ack { handles } => {
            let acked = Client::new(&target.endpoint, None, target.cacert.as_deref())?
                .call(
                    reqwest::Method::POST,
                    "/v1/receipts/ack",
                    Some(&json!({ "receiptHandles": handles })),
                )
                .await?;
            let handles: Vec<Value> = handles.into_iter().map(Value::String).collect();
            report_results(cli.output, &acked, &handles, "acknowledged")
        }
        Queues::ChangeVisibility {
            handles,
            visibility_timeout,
        } => {
            let entries: Vec<Value> = handles
                .iter()
                .map(|handle| {
                    json!({ "receiptHandle": handle, "visibilityTimeoutSeconds": visibility_timeout })
                })
                .collect();
            let changed = Client::new(&target.endpoint, None, target.cacert.as_deref())?
                .call(
                    reqwest::Method::POST,
                    "/v1/receipts/visibility",
                    Some(&json!({ "entries": entries })),
                )
                .await?;
            let handles: Vec<Value> = handles.into_iter().map(Value::String).collect();
            report_results(cli.output, &changed, &handles, "changed")
        }
    }
}

/// A path segment, percent-encoded.
fn segment(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

fn print_messages(output: Output, answer: &Value, messages: &[Value]) -> Result<(), Failure> {
    if output == Output::Json {
        return say!("{answer}");
    }
    if messages.is_empty() {
        say!("no messages")?;
    }
    let fields = MessageFields {
        id: "messageId",
        receive_count: "receiveCount",
    };
    for message in messages {
        say_message(message, fields, "")?;
        say!(
            "  receipt handle: {}",
            printable(message["receiptHandle"].as_str().unwrap_or(""))
        )?;
    }
    Ok(())
}

/// Prints `{"results": [...]}` per handle; exit 1 when any failed.
fn report_results(
    output: Output,
    answer: &Value,
    handles: &[Value],
    done: &str,
) -> Result<ExitCode, Failure> {
    let results = answer["results"].as_array().cloned().unwrap_or_default();
    let failed = results
        .iter()
        .filter(|result| result["ok"] != json!(true))
        .count();
    if output == Output::Json {
        say!("{answer}")?;
    } else {
        for (handle, result) in handles.iter().zip(&results) {
            let handle = handle.as_str().unwrap_or("");
            let short: String = handle.chars().take(16).collect();
            let short = printable(&short);
            match result["error"].as_str() {
                None => say!("{done} {short}…")?,
                Some(error) => say!("failed {short}…: {}", printable(error))?,
            }
        }
    }
    if failed == 0 {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "error: {failed} of {} receipt handles failed",
            results.len()
        );
        Ok(ExitCode::from(sqs_gateway::client::EXIT_REFUSED))
    }
}
