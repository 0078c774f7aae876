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
use sqs_gateway::client::{Client, Failure, Output, SecretSource, Shell, printable};
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
    #[arg(long, global = true, value_enum, default_value = "text")]
    output: Output,
    #[command(subcommand)]
    command: Command,
}

/// Where the gateway is and who calls it (flags beat the environment, which beats the file).
#[derive(Debug, Args)]
struct Settings {
    /// The gateway's base URL (default http://127.0.0.1:8787).
    #[arg(long, global = true, env = "BASALTIC_ENDPOINT")]
    endpoint: Option<String>,
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
    let client = Client::new(&endpoint, Some(&key))?;
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
            print_queue(output, &answer, &answer["result"]);
        }
        Queue::List => {
            let answer = client.call(Method::GET, "/v1/queues", None).await?;
            if output == Output::Json {
                println!("{answer}");
            } else {
                let queues = answer["queues"].as_array().cloned().unwrap_or_default();
                if queues.is_empty() {
                    println!("no queues");
                }
                for queue in &queues {
                    println!(
                        "{}  {}  {}",
                        printable(queue["id"].as_str().unwrap_or("?")),
                        printable(queue["type"].as_str().unwrap_or("?")),
                        printable(queue["name"].as_str().unwrap_or("?"))
                    );
                }
            }
        }
        Queue::Show { queue_id } => {
            let answer = client
                .call(Method::GET, &queue_path(&queue_id), None)
                .await?;
            print_queue(output, &answer, &answer["result"]);
        }
        Queue::Delete { queue_id } => {
            client
                .call(Method::DELETE, &queue_path(&queue_id), None)
                .await?;
            done(output, "queue deleted");
        }
        Queue::Purge { queue_id } => {
            let path = format!("{}/purge", queue_path(&queue_id));
            client.call(Method::POST, &path, None).await?;
            done(output, "queue purged");
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
                println!("{answer}");
            } else {
                println!(
                    "sent message {}",
                    printable(answer["result"]["message_id"].as_str().unwrap_or("?"))
                );
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
            print_messages(output, &answer, true);
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
            done(output, "message deleted");
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
            done(output, "visibility changed");
        }
        Message::Inspect { queue_id, max } => {
            let path = format!("{}/messages?max_messages={max}", queue_path(&queue_id));
            let answer = client.call(Method::GET, &path, None).await?;
            print_messages(output, &answer, false);
        }
    }
    Ok(())
}

fn done(output: Output, what: &str) {
    if output == Output::Json {
        println!("{{}}");
    } else {
        println!("{what}");
    }
}

fn print_queue(output: Output, answer: &Value, queue: &Value) {
    if output == Output::Json {
        println!("{answer}");
        return;
    }
    println!(
        "queue {}  {}  {}",
        printable(queue["id"].as_str().unwrap_or("?")),
        printable(queue["type"].as_str().unwrap_or("?")),
        printable(queue["name"].as_str().unwrap_or("?"))
    );
    println!("  settings: {}", printable(&queue["settings"].to_string()));
}

fn print_messages(output: Output, answer: &Value, leased: bool) {
    if output == Output::Json {
        println!("{answer}");
        return;
    }
    let messages = answer["messages"].as_array().cloned().unwrap_or_default();
    if messages.is_empty() {
        println!("no messages");
    }
    // Controls in what a producer sent are escaped: they would drive the terminal.
    for message in &messages {
        println!(
            "message {}  receive count {}",
            printable(message["message_id"].as_str().unwrap_or("?")),
            printable(&message["receive_count"].to_string())
        );
        println!(
            "  body: {}",
            printable(message["body"].as_str().unwrap_or(""))
        );
        if let Some(attributes) = message["attributes"].as_object()
            && !attributes.is_empty()
        {
            // JSON escapes C0 controls but not C1 (U+0080–U+009F) nor the others.
            println!(
                "  attributes: {}",
                printable(&Value::Object(attributes.clone()).to_string())
            );
        }
        if leased {
            println!(
                "  visible at: {}",
                printable(message["visible_at"].as_str().unwrap_or(""))
            );
            println!(
                "  receipt handle: {}",
                printable(message["receipt_handle"].as_str().unwrap_or(""))
            );
        }
    }
}
