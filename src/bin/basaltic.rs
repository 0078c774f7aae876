//! `basaltic`: the basaltic queue API's command-line client, as its document shows it:
//! `basaltic queue message send "$QUEUE_ID" --from-file request-1.json` and `… receive … --from-file
//! request-2.json` read the same JSON the API takes; also delete, visibility, inspect, purge and
//! queue create/list/show/delete. Endpoint, key, account and region come from flags, the
//! environment (`BASALTIC_ENDPOINT`, `BASALTIC_API_KEY`, `BASALTIC_ACCOUNT`, `BASALTIC_REGION`) or
//! a config file (`BASALTIC_CONFIG_FILE`, default `~/.basaltic/config.toml`), in that order; the key
//! best not from a flag (`--api-key-file PATH` instead). `basaltic completions SHELL` prints a
//! completion script.

use clap::{Args, CommandFactory as _, Parser, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};
use sqs_gateway::client::{
    Client, Failure, MessageFields, Output, SecretSource, Shell, printable, say_message,
};
use sqs_gateway::say;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:8787";

/// The API key: `BASALTIC_API_KEY` or a file; `--api-key` still works, with a warning.
const API_KEY: SecretSource = SecretSource {
    flag: "--api-key",
    file_flag: "--api-key-file",
    env: "BASALTIC_API_KEY",
};

#[derive(Debug, Parser)]
#[command(
    name = "basaltic",
    version,
    about = "Queues and messages of the basaltic queue API",
    after_help = "Examples:\n  export BASALTIC_API_KEY=sqsgw_…\n  export QUEUE_ID=6f1c…\n  basaltic queue message send \"$QUEUE_ID\" --from-file request-1.json\n  basaltic queue message receive \"$QUEUE_ID\" --from-file request-2.json\n  basaltic queue message delete \"$QUEUE_ID\" AgAB…\n  basaltic queue create --name orders --fifo"
)]
struct Cli {
    #[command(flatten)]
    settings: Settings,
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

/// Where the gateway is and who calls it (flags beat the environment, which beats the file):
/// flags of every command, so `--help` shows them apart.
#[derive(Debug, Args)]
#[command(next_help_heading = "Connection (every command)")]
struct Settings {
    /// The gateway's base URL [default: http://127.0.0.1:8787].
    #[arg(long, global = true, env = "BASALTIC_ENDPOINT")]
    endpoint: Option<String>,
    /// A PEM file of CA certificates to trust besides the system's (a gateway behind a private
    /// CA). SSL_CERT_FILE=PATH instead replaces the system's roots.
    #[arg(long, global = true, value_name = "PATH")]
    cacert: Option<PathBuf>,
    /// The API key: set BASALTIC_API_KEY, use --api-key-file, or `api_key` in the config file.
    /// This flag puts the key where every local user can read it (the process list), and warns.
    #[arg(long, global = true, value_name = "KEY")]
    api_key: Option<String>,
    /// A file whose first line is the API key (beats BASALTIC_API_KEY and the config file).
    #[arg(long, global = true, value_name = "PATH")]
    api_key_file: Option<PathBuf>,
    /// The account (one per gateway: accepted, not needed).
    #[arg(long, global = true, env = "BASALTIC_ACCOUNT")]
    account: Option<String>,
    /// The region (one per gateway: accepted, not needed).
    #[arg(long, global = true, env = "BASALTIC_REGION")]
    region: Option<String>,
    /// The config file.
    #[arg(long, global = true, env = "BASALTIC_CONFIG_FILE")]
    config_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Queues and their messages.
    #[command(subcommand)]
    Queue(Queue),
    /// Print a completion script for SHELL (e.g. `basaltic completions bash >
    /// ~/.local/share/bash-completion/completions/basaltic`).
    Completions {
        /// bash, elvish, fish, powershell or zsh.
        shell: Shell,
    },
}

#[derive(Debug, Subcommand)]
enum Queue {
    /// A queue's messages.
    #[command(subcommand)]
    Message(Message),
    /// Create a queue: `--name` (and `--fifo`), or the API's body from a file.
    Create {
        /// The name (1–57 letters, digits, `-`).
        #[arg(
            long,
            required_unless_present = "from_file",
            conflicts_with = "from_file"
        )]
        name: Option<String>,
        /// A FIFO queue.
        #[arg(long, conflicts_with = "from_file")]
        fifo: bool,
        /// The create request's JSON (`{"name", "type", "settings"}`).
        #[arg(long)]
        from_file: Option<PathBuf>,
    },
    /// List the queues the key can see.
    List,
    /// Show a queue and its settings.
    Show { queue_id: String },
    /// Delete a queue and its messages.
    Delete { queue_id: String },
    /// Delete every message of a queue, in flight included.
    Purge { queue_id: String },
    /// Change a queue's settings: those given change, the others stay.
    Update {
        queue_id: String,
        /// The settings as JSON (`{"visibility_timeout_seconds": 60, …}`), or `@PATH` for a
        /// file holding them.
        #[arg(long)]
        settings: String,
    },
    /// The queue's sampled metrics, oldest first.
    Metrics {
        queue_id: String,
        /// Only samples from this time on (RFC 3339).
        #[arg(long)]
        since: Option<String>,
    },
    /// Move a dead-letter queue's messages back to where they came from.
    #[command(subcommand)]
    Redrive(Redrive),
}

#[derive(Debug, Subcommand)]
enum Redrive {
    /// Start moving the dead-letter queue's messages back to the queues they were dead-lettered
    /// from (or to `--destination`).
    Start {
        /// The dead-letter queue.
        queue_id: String,
        /// Another queue to move them to.
        #[arg(long, value_name = "QUEUE_ID")]
        destination: Option<String>,
        /// At most this many a second (1–500).
        #[arg(long, value_name = "N")]
        max_per_second: Option<u32>,
    },
    /// The dead-letter queue's latest redrive tasks, newest first.
    List { queue_id: String },
    /// Stop the running redrive (what it moved stays moved).
    Cancel { queue_id: String },
}

#[derive(Debug, Subcommand)]
enum Message {
    /// Send a message: the API's body from a file, or `--body`.
    Send {
        queue_id: String,
        /// The send request's JSON (`{"body", "attributes", …}`).
        #[arg(long, required_unless_present = "body")]
        from_file: Option<PathBuf>,
        /// The message body (no attributes).
        #[arg(long, conflicts_with = "from_file")]
        body: Option<String>,
    },
    /// Receive messages (a lease): the API's body from a file, or flags.
    Receive {
        queue_id: String,
        /// The receive request's JSON (`{"max_messages", "wait_time_seconds", …}`).
        #[arg(long)]
        from_file: Option<PathBuf>,
        /// At most this many (1–10).
        #[arg(long)]
        max: Option<u32>,
        /// Long poll seconds (0–20).
        #[arg(long)]
        wait: Option<u32>,
        /// Seconds hidden (0–43200).
        #[arg(long)]
        visibility_timeout: Option<u32>,
    },
    /// Delete a message with its current receipt handle.
    Delete {
        queue_id: String,
        receipt_handle: String,
    },
    /// Change a message's visibility, counted from now (0 makes it available again).
    Visibility {
        queue_id: String,
        receipt_handle: String,
        /// Seconds from now (0–43200).
        #[arg(long)]
        timeout: u32,
    },
    /// Read messages without a lease (visibility and receive counts unchanged).
    Inspect {
        queue_id: String,
        /// At most this many (1–10).
        #[arg(long, default_value_t = 10)]
        max: u32,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.exit(),
    }
}

/// The config file's values: `endpoint`, `api_key`, `account`, `region` (TOML).
fn file_settings(path: Option<&Path>) -> Result<toml::Table, Failure> {
    let explicit = path.is_some();
    let path = match path {
        Some(path) => path.to_owned(),
        None => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(".basaltic").join("config.toml"),
            None => return Ok(toml::Table::new()),
        },
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let table = text
                .parse::<toml::Table>()
                .map_err(|error| Failure::Usage(format!("{}: {error}", path.display())))?;
            // A key in a file others may read is a key they have.
            if table.contains_key("api_key") {
                sqs_gateway::client::warn_if_shared(&path);
            }
            Ok(table)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && !explicit => {
            Ok(toml::Table::new())
        }
        Err(error) => Err(Failure::Usage(format!("{}: {error}", path.display()))),
    }
}

fn read_json(path: &Path) -> Result<Value, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| Failure::Usage(format!("{}: {error}", path.display())))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|error| Failure::Usage(format!("{}: not JSON: {error}", path.display())))?;
    if !value.is_object() {
        return Err(Failure::Usage(format!(
            "{}: the request must be a JSON object",
            path.display()
        )));
    }
    Ok(value)
}

/// A path segment, percent-encoded.
fn segment(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

async fn run(cli: Cli) -> Result<(), Failure> {
    let command = match cli.command {
        Command::Completions { shell } => {
            sqs_gateway::client::print_completions(shell, &mut Cli::command());
            return Ok(());
        }
        Command::Queue(command) => command,
    };
    // Flag (warned), then key file, then BASALTIC_API_KEY; the config file below.
    let key = API_KEY.read(
        cli.settings.api_key.as_deref(),
        cli.settings.api_key_file.as_deref(),
    )?;
    // The file is read only when a flag or the environment leaves something to find.
    let needs_file =
        cli.settings.config_file.is_some() || cli.settings.endpoint.is_none() || key.is_none();
    let file = if needs_file {
        file_settings(cli.settings.config_file.as_deref())?
    } else {
        toml::Table::new()
    };
    let from_file = |name: &str| {
        file.get(name)
            .and_then(|value| value.as_str())
            .map(str::to_owned)
    };
    let endpoint = cli
        .settings
        .endpoint
        .clone()
        .or_else(|| from_file("endpoint"))
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
    let key = key.or_else(|| from_file("api_key")).ok_or_else(|| {
        Failure::Usage(
            "no API key: set BASALTIC_API_KEY, --api-key-file, or api_key in the config file"
                .into(),
        )
    })?;
    let client = Client::new(&endpoint, Some(&key), cli.settings.cacert.as_deref())?;
    let output = cli.output;
    let queue_path = |id: &str| format!("/v1/queues/{}", segment(id));
    match command {
        Queue::Create {
            name,
            fifo,
            from_file,
        } => {
            let body = match from_file {
                Some(path) => read_json(&path)?,
                None => json!({ "name": name, "type": if fifo { "fifo" } else { "standard" } }),
            };
            let answer = client.call(Method::POST, "/v1/queues", Some(&body)).await?;
            print_queue(output, &answer, &answer["result"])?;
        }
        Queue::List => {
            let answer = client.call(Method::GET, "/v1/queues", None).await?;
            if output == Output::Json {
                say!("{answer}")?;
            } else {
                let queues = answer["queues"].as_array().cloned().unwrap_or_default();
                if queues.is_empty() {
                    say!("no queues")?;
                }
                for queue in &queues {
                    say!(
                        "{}  {}  {}",
                        printable(queue["id"].as_str().unwrap_or("?")),
                        printable(queue["type"].as_str().unwrap_or("?")),
                        printable(queue["name"].as_str().unwrap_or("?"))
                    )?;
                }
            }
        }
        Queue::Show { queue_id } => {
            let answer = client
                .call(Method::GET, &queue_path(&queue_id), None)
                .await?;
            print_queue(output, &answer, &answer["result"])?;
        }
        Queue::Delete { queue_id } => {
            client
                .call(Method::DELETE, &queue_path(&queue_id), None)
                .await?;
            done(output, "queue deleted")?;
        }
        Queue::Purge { queue_id } => {
            let path = format!("{}/purge", queue_path(&queue_id));
            client.call(Method::POST, &path, None).await?;
            done(output, "queue purged")?;
        }
        Queue::Update { queue_id, settings } => {
            let settings = match settings.strip_prefix('@') {
                Some(path) => read_json(Path::new(path))?,
                None => serde_json::from_str::<Value>(&settings)
                    .ok()
                    .filter(Value::is_object)
                    .ok_or_else(|| {
                        Failure::Usage("--settings: not a JSON object (or @PATH)".into())
                    })?,
            };
            let body = json!({ "settings": settings });
            let answer = client
                .call(Method::PATCH, &queue_path(&queue_id), Some(&body))
                .await?;
            print_queue(output, &answer, &answer["result"])?;
        }
        Queue::Metrics { queue_id, since } => {
            let mut path = format!("{}/metrics", queue_path(&queue_id));
            if let Some(since) = since {
                path.push_str(&format!("?since={}", segment(&since)));
            }
            let answer = client.call(Method::GET, &path, None).await?;
            print_metrics(output, &answer)?;
        }
        Queue::Redrive(command) => {
            let answer = match command {
                Redrive::Start {
                    queue_id,
                    destination,
                    max_per_second,
                } => {
                    let mut body = json!({});
                    if let Some(destination) = destination {
                        body["destination_queue_id"] = json!(destination);
                    }
                    if let Some(rate) = max_per_second {
                        body["max_messages_per_second"] = json!(rate);
                    }
                    let path = format!("{}/redrive", queue_path(&queue_id));
                    client.call(Method::POST, &path, Some(&body)).await?
                }
                Redrive::List { queue_id } => {
                    let path = format!("{}/redrive", queue_path(&queue_id));
                    client.call(Method::GET, &path, None).await?
                }
                Redrive::Cancel { queue_id } => {
                    let path = format!("{}/redrive/cancel", queue_path(&queue_id));
                    client.call(Method::POST, &path, None).await?
                }
            };
            print_tasks(output, &answer)?;
        }
        Queue::Message(message) => run_message(&client, output, message, queue_path).await?,
    }
    Ok(())
}

async fn run_message(
    client: &Client,
    output: Output,
    command: Message,
    queue_path: impl Fn(&str) -> String,
) -> Result<(), Failure> {
    match command {
        Message::Send {
            queue_id,
            from_file,
            body,
        } => {
            let request = match from_file {
                Some(path) => read_json(&path)?,
                None => json!({ "body": body }),
            };
            let path = format!("{}/messages", queue_path(&queue_id));
            let answer = client.call(Method::POST, &path, Some(&request)).await?;
            if output == Output::Json {
                say!("{answer}")?;
            } else {
                say!(
                    "sent message {}",
                    printable(answer["result"]["message_id"].as_str().unwrap_or("?"))
                )?;
            }
        }
        Message::Receive {
            queue_id,
            from_file,
            max,
            wait,
            visibility_timeout,
        } => {
            let mut request = match from_file {
                Some(path) => read_json(&path)?,
                None => json!({}),
            };
            for (field, value) in [
                ("max_messages", max),
                ("wait_time_seconds", wait),
                ("visibility_timeout_seconds", visibility_timeout),
            ] {
                if let Some(value) = value {
                    request[field] = json!(value);
                }
            }
            let path = format!("{}/messages/receive", queue_path(&queue_id));
            let answer = client.call(Method::POST, &path, Some(&request)).await?;
            print_messages(output, &answer, true)?;
        }
        Message::Delete {
            queue_id,
            receipt_handle,
        } => {
            let path = format!(
                "{}/messages?receipt_handle={}",
                queue_path(&queue_id),
                segment(&receipt_handle)
            );
            client.call(Method::DELETE, &path, None).await?;
            done(output, "message deleted")?;
        }
        Message::Visibility {
            queue_id,
            receipt_handle,
            timeout,
        } => {
            let path = format!("{}/messages/visibility", queue_path(&queue_id));
            let body =
                json!({ "receipt_handle": receipt_handle, "visibility_timeout_seconds": timeout });
            client.call(Method::POST, &path, Some(&body)).await?;
            done(output, "visibility changed")?;
        }
        Message::Inspect { queue_id, max } => {
            let path = format!("{}/messages?max_messages={max}", queue_path(&queue_id));
            let answer = client.call(Method::GET, &path, None).await?;
            print_messages(output, &answer, false)?;
        }
    }
    Ok(())
}

fn done(output: Output, what: &str) -> Result<(), Failure> {
    if output == Output::Json {
        say!("{{}}")
    } else {
        say!("{what}")
    }
}

fn print_queue(output: Output, answer: &Value, queue: &Value) -> Result<(), Failure> {
    if output == Output::Json {
        return say!("{answer}");
    }
    say!(
        "queue {}  {}  {}",
        printable(queue["id"].as_str().unwrap_or("?")),
        printable(queue["type"].as_str().unwrap_or("?")),
        printable(queue["name"].as_str().unwrap_or("?"))
    )?;
    say!("  settings: {}", printable(&queue["settings"].to_string()))
}

/// A message as a receive (`leased`) or an inspect answered it: an inspect shows the message's
/// state (`visible`, `in_flight`, `delayed`) and when it is visible again.
fn print_messages(output: Output, answer: &Value, leased: bool) -> Result<(), Failure> {
    if output == Output::Json {
        return say!("{answer}");
    }
    let messages = answer["messages"].as_array().cloned().unwrap_or_default();
    if messages.is_empty() {
        say!("no messages")?;
    }
    let text = |value: &Value| match value {
        Value::String(text) => text.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    };
    let fields = MessageFields {
        id: "message_id",
        receive_count: "receive_count",
    };
    // Controls in what a producer sent are escaped: they would drive the terminal.
    for message in &messages {
        let state = if leased {
            String::new()
        } else {
            format!("  state {}", printable(&text(&message["state"])))
        };
        say_message(message, fields, &state)?;
        if leased || message.get("visible_at").is_some_and(|at| !at.is_null()) {
            say!("  visible at: {}", printable(&text(&message["visible_at"])))?;
        }
        if leased {
            say!(
                "  receipt handle: {}",
                printable(message["receipt_handle"].as_str().unwrap_or(""))
            )?;
        }
    }
    Ok(())
}

/// The metrics samples, one line each, oldest first.
fn print_metrics(output: Output, answer: &Value) -> Result<(), Failure> {
    if output == Output::Json {
        return say!("{answer}");
    }
    let samples = answer["samples"].as_array().cloned().unwrap_or_default();
    say!(
        "every {} s; {} samples",
        printable(&answer["interval_seconds"].to_string()),
        samples.len()
    )?;
    if samples.is_empty() {
        return Ok(());
    }
    let columns = [
        "visible",
        "in_flight",
        "delayed",
        "oldest_message_age_seconds",
        "sends",
        "receives",
        "repeated_receives",
    ];
    say!("at                    {}", columns.join("  "))?;
    for sample in &samples {
        let figures: Vec<String> = columns
            .iter()
            .map(|column| {
                let figure = match &sample[*column] {
                    Value::Null => "-".to_owned(),
                    value => value.to_string(),
                };
                format!("{figure:>width$}", width = column.len())
            })
            .collect();
        say!(
            "{:<20}  {}",
            printable(sample["at"].as_str().unwrap_or("?")),
            printable(&figures.join("  "))
        )?;
    }
    Ok(())
}

/// Redrive tasks (one, or the list), one line each.
fn print_tasks(output: Output, answer: &Value) -> Result<(), Failure> {
    if output == Output::Json {
        return say!("{answer}");
    }
    let tasks = match answer["tasks"].as_array() {
        Some(tasks) => tasks.clone(),
        None => vec![answer["result"].clone()],
    };
    if tasks.is_empty() {
        say!("no redrive tasks")?;
    }
    for task in &tasks {
        let line: Vec<String> = task
            .as_object()
            .into_iter()
            .flatten()
            .map(|(field, value)| match value {
                Value::String(text) => format!("{field} {text}"),
                other => format!("{field} {other}"),
            })
            .collect();
        say!("{}", printable(&line.join("  ")))?;
    }
    Ok(())
}
