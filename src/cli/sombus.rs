//! `sqs-gateway sombus …`: HTTP clients of a running gateway. `connections` and `audit` call the
//! sombus admin API with an admin key; `publish` sends a correctly formed envelope through the
//! SQS endpoint (as a producer does), so a newcomer can try the consumer loop. Text for people by
//! default, `--output json` for the API's answer (as `ezgh` and `basaltic`).

use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::types::MessageAttributeValue;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use sqs_gateway::client::{Client, Failure, Output, SecretSource, printable};
use std::path::PathBuf;
use std::process::ExitCode;

/// The admin key: `SQSGW_ADMIN_KEY` or a file; `--admin-key` still works, with a warning.
const ADMIN_KEY: SecretSource = SecretSource {
    flag: "--admin-key",
    file_flag: "--admin-key-file",
    env: "SQSGW_ADMIN_KEY",
};

/// The SQS secret of `publish`: `AWS_SECRET_ACCESS_KEY` or a file.
const SQS_SECRET: SecretSource = SecretSource {
    flag: "--secret-access-key",
    file_flag: "--secret-access-key-file",
    env: "AWS_SECRET_ACCESS_KEY",
};

/// Where the gateway is and the admin key to use.
#[derive(Debug, Args)]
pub(crate) struct AdminArgs {
    /// The gateway's base URL.
    #[arg(long, env = "SQSGW_ENDPOINT", default_value = "http://127.0.0.1:8787")]
    endpoint: String,
    /// An admin key (`sqs-gateway new-admin-key` makes one): set SQSGW_ADMIN_KEY, or use
    /// --admin-key-file. This flag puts the key where every local user can read it (the process
    /// list), and warns.
    #[arg(long, global = true, value_name = "KEY")]
    admin_key: Option<String>,
    /// A file whose first line is the admin key (instead of SQSGW_ADMIN_KEY).
    #[arg(long, global = true, value_name = "PATH")]
    admin_key_file: Option<PathBuf>,
    /// The workspace (tenant) id.
    #[arg(long, env = "SOMBUS_WORKSPACE")]
    workspace: String,
    /// text for people, json for scripts (the API's answer).
    #[arg(long, global = true, value_enum, default_value = "text")]
    output: Output,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SombusCommand {
    /// Manage consumer connections, their queues and secrets (admin API).
    #[command(
        after_help = "Examples:\n  export SQSGW_ADMIN_KEY=sqsgw_… SOMBUS_WORKSPACE=demo\n  sqs-gateway sombus connections create --name house\n  sqs-gateway sombus connections rotate-secret c0123… --overlap 1h"
    )]
    Connections {
        #[command(flatten)]
        admin: AdminArgs,
        #[command(subcommand)]
        command: ConnectionCommand,
    },
    /// The workspace's audit log (admin API): the newest entries, shown oldest first, and the
    /// `next_cursor` of the older ones.
    Audit {
        #[command(flatten)]
        admin: AdminArgs,
        /// The newest this many entries (1 to 1000).
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Older entries: the `next_cursor` of the page before.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Publish one envelope to a connection's queue through the gateway's SQS endpoint.
    #[command(
        after_help = "Example:\n  export AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=…\n  sqs-gateway sombus publish --queue sqsgw_sb_demo_c0123….fifo \\\n    --message-type story.context --correlation-id story-1 --payload '{\"text\": \"hi\"}'"
    )]
    Publish(PublishArgs),
    /// Move the connections and the audit log of a directory store (`sombus.credentials_dir`)
    /// onto the shared state server the config names (`[state.redis]`), once: refused when the
    /// server already holds connections; the directory is left as it was.
    ImportCredentials {
        /// The gateway's config, with `[state.redis]`.
        #[arg(long, env = "SQSGW_CONFIG")]
        config: PathBuf,
        /// The directory to move from (default: the config's `sombus.credentials_dir`).
        #[arg(long)]
        from: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConnectionCommand {
    /// Create a connection with its queue (FIFO unless --standard) and show its first secret.
    Create {
        /// A client id of your choice (default: generated).
        #[arg(long)]
        client_id: Option<String>,
        /// A label.
        #[arg(long)]
        name: Option<String>,
        /// A standard queue instead of FIFO (no order per story).
        #[arg(long)]
        standard: bool,
        /// Deliveries before a message moves to the dead-letter queue.
        #[arg(long, default_value_t = 5)]
        attempt_limit: u32,
        /// The quota tier.
        #[arg(long, default_value = "standard")]
        tier: String,
        /// A producer app's credentials (its tokens read no queue).
        #[arg(long)]
        producer: bool,
    },
    /// List the workspace's connections.
    List,
    /// Show one connection.
    Show { client_id: String },
    /// Remove a connection: its queues and credentials are deleted.
    Remove { client_id: String },
    /// Get a client secret (when the connection has none: new, or after revoke-secret).
    GetSecret { client_id: String },
    /// Rotate the secret; the previous one keeps getting tokens for the overlap.
    RotateSecret {
        client_id: String,
        /// 24h (default), 3d, 1h or none.
        #[arg(long, default_value = "24h")]
        overlap: String,
    },
    /// End the previous secret's overlap now.
    StopOldSecret { client_id: String },
    /// Stop the secret at once (its tokens within about 30 s).
    RevokeSecret { client_id: String },
    /// Revoke the connection (its queue and secret are kept).
    Revoke { client_id: String },
    /// Restore a revoked connection.
    Restore { client_id: String },
    /// Move the dead letters back to the connection's queue.
    Redrive { client_id: String },
}

/// `publish`'s arguments.
#[derive(Debug, Args)]
pub(crate) struct PublishArgs {
    /// The gateway's base URL (its SQS endpoint).
    #[arg(long, env = "SQSGW_ENDPOINT", default_value = "http://127.0.0.1:8787")]
    endpoint: String,
    /// The connection's queue (`queue` in `connections show`).
    #[arg(long)]
    queue: String,
    /// `message_type` of the envelope and attribute.
    #[arg(long)]
    message_type: String,
    /// The story: `correlation_id`, and the FIFO message group.
    #[arg(long)]
    correlation_id: String,
    /// `topic`.
    #[arg(long)]
    topic: Option<String>,
    /// `producer_id`.
    #[arg(long)]
    producer_id: Option<String>,
    /// The payload, JSON.
    #[arg(long, default_value = "{}")]
    payload: String,
    /// The envelope's `message_id` (default: a new UUID); also the FIFO deduplication id.
    #[arg(long)]
    message_id: Option<String>,
    /// SQS access key id of the gateway's SQS endpoint.
    #[arg(long, env = "AWS_ACCESS_KEY_ID")]
    access_key_id: String,
    /// Its secret: set AWS_SECRET_ACCESS_KEY, or use --secret-access-key-file. This flag puts the
    /// secret where every local user can read it (the process list), and warns.
    #[arg(long, value_name = "SECRET")]
    secret_access_key: Option<String>,
    /// A file whose first line is the secret (instead of AWS_SECRET_ACCESS_KEY).
    #[arg(long, value_name = "PATH")]
    secret_access_key_file: Option<PathBuf>,
    /// The region the endpoint signs for.
    #[arg(long, env = "AWS_REGION", default_value = "us-east-1")]
    region: String,
    /// text for people, json for scripts.
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

/// What an answer is, for its text form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A new secret (create, get-secret, rotate-secret), with what was done.
    Secret(&'static str),
    /// One connection, with what was done (`None` for show).
    Connection(Option<&'static str>),
    /// `{"connections": […]}`.
    List,
    /// No answer (remove).
    Done(&'static str),
    /// `{"task_handle"}`.
    Redrive,
    /// `{"entries": […]}`.
    Audit,
    /// `{"message_id", "sqs_message_id"}`.
    Published,
}

/// Runs a `sombus` command: the answer on stdout (text, or the API's JSON with `--output json`);
/// a refusal or failure on stderr, exit 1; a command that can't be made (no admin key), exit 2.
pub(crate) async fn run(command: SombusCommand) -> ExitCode {
    let (output, outcome) = match command {
        SombusCommand::ImportCredentials { config, from } => {
            return super::sombus_import::run(&config, from).await;
        }
        SombusCommand::Connections { admin, command } => {
            (admin.output, connections(&admin, command).await)
        }
        SombusCommand::Audit {
            admin,
            limit,
            cursor,
        } => (
            admin.output,
            audit(&admin, limit, cursor.as_deref())
                .await
                .map(|answer| (Shape::Audit, answer)),
        ),
        SombusCommand::Publish(args) => (
            args.output,
            publish(args).await.map(|answer| (Shape::Published, answer)),
        ),
    };
    match outcome {
        Ok((shape, answer)) => {
            match output {
                Output::Json if !answer.is_null() => println!(
                    "{}",
                    serde_json::to_string_pretty(&answer).unwrap_or_default()
                ),
                Output::Json => {}
                Output::Text => print_text(shape, &answer),
            }
            ExitCode::SUCCESS
        }
        Err(failure) => failure.exit(),
    }
}

/// A page of the audit log (the API's answer, newest first), turned to read as a log does:
/// oldest first.
async fn audit(admin: &AdminArgs, limit: usize, cursor: Option<&str>) -> Result<Value, Failure> {
    let mut route = format!("/audit?limit={limit}");
    if let Some(cursor) = cursor {
        route.push_str("&cursor=");
        route.extend(form_urlencoded::byte_serialize(cursor.as_bytes()));
    }
    let mut page = call(admin, reqwest::Method::GET, &route, None).await?;
    if let Some(entries) = page["entries"].as_array_mut() {
        entries.reverse();
    }
    Ok(page)
}

async fn connections(
    admin: &AdminArgs,
    command: ConnectionCommand,
) -> Result<(Shape, Value), Failure> {
    use reqwest::Method;
    let one = |client_id: &str, step: &str| format!("/connections/{client_id}{step}");
    let shape = match &command {
        ConnectionCommand::Create { .. } => Shape::Secret("connection created"),
        ConnectionCommand::GetSecret { .. } => Shape::Secret("new secret"),
        ConnectionCommand::RotateSecret { .. } => Shape::Secret("secret rotated"),
        ConnectionCommand::List => Shape::List,
        ConnectionCommand::Show { .. } => Shape::Connection(None),
        ConnectionCommand::Remove { .. } => Shape::Done("connection removed"),
        ConnectionCommand::StopOldSecret { .. } => {
            Shape::Connection(Some("the previous secret stopped"))
        }
        ConnectionCommand::RevokeSecret { .. } => Shape::Connection(Some("secret revoked")),
        ConnectionCommand::Revoke { .. } => Shape::Connection(Some("connection revoked")),
        ConnectionCommand::Restore { .. } => Shape::Connection(Some("connection restored")),
        ConnectionCommand::Redrive { .. } => Shape::Redrive,
    };
    let (method, route, body) = match command {
        ConnectionCommand::Create {
            client_id,
            name,
            standard,
            attempt_limit,
            tier,
            producer,
        } => (
            Method::POST,
            "/connections".to_owned(),
            Some(json!({
                "client_id": client_id,
                "name": name,
                "fifo": !standard,
                "attempt_limit": attempt_limit,
                "tier": tier,
                "role": if producer { "producer" } else { "consumer" },
            })),
        ),
        ConnectionCommand::List => (Method::GET, "/connections".to_owned(), None),
        ConnectionCommand::Show { client_id } => (Method::GET, one(&client_id, ""), None),
        ConnectionCommand::Remove { client_id } => (Method::DELETE, one(&client_id, ""), None),
        ConnectionCommand::GetSecret { client_id } => {
            (Method::POST, one(&client_id, "/secret"), None)
        }
        ConnectionCommand::RotateSecret { client_id, overlap } => (
            Method::POST,
            one(&client_id, "/secret/rotate"),
            Some(json!({ "overlap": overlap })),
        ),
        ConnectionCommand::StopOldSecret { client_id } => {
            (Method::POST, one(&client_id, "/secret/stop-old"), None)
        }
        ConnectionCommand::RevokeSecret { client_id } => {
            (Method::POST, one(&client_id, "/secret/revoke"), None)
        }
        ConnectionCommand::Revoke { client_id } => (Method::POST, one(&client_id, "/revoke"), None),
        ConnectionCommand::Restore { client_id } => {
            (Method::POST, one(&client_id, "/restore"), None)
        }
        ConnectionCommand::Redrive { client_id } => {
            (Method::POST, one(&client_id, "/redrive"), None)
        }
    };
    call(admin, method, &route, body)
        .await
        .map(|answer| (shape, answer))
}

/// One admin API call; a refusal becomes `refused (status): rule: message`.
async fn call(
    admin: &AdminArgs,
    method: reqwest::Method,
    route: &str,
    body: Option<Value>,
) -> Result<Value, Failure> {
    let key = ADMIN_KEY
        .read(admin.admin_key.as_deref(), admin.admin_key_file.as_deref())?
        .ok_or_else(|| {
            Failure::Usage("no admin key: set SQSGW_ADMIN_KEY or use --admin-key-file".to_owned())
        })?;
    let endpoint = format!(
        "{}/v1/admin/workspaces/{}",
        admin.endpoint.trim_end_matches('/'),
        admin.workspace
    );
    let client = Client::new(&endpoint, Some(&key), None)?;
    client
        .call(method, route, body.as_ref())
        .await
        .map_err(|failure| match failure {
            Failure::Refused {
                status,
                code,
                message,
            } => Failure::Transport(format!("refused ({status}): {code}: {message}")),
            other => other,
        })
}

/// A string field of `value` for a line of text (`-` when absent), its controls escaped.
fn field(value: &Value, name: &str) -> String {
    match &value[name] {
        Value::Null => "-".to_owned(),
        Value::String(text) => printable(text).into_owned(),
        other => printable(&other.to_string()).into_owned(),
    }
}

/// Rows under a header, each column as wide as its widest cell.
fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|title| title.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (index, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            if index + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}  "));
            }
        }
        println!("{}", text.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// The text form of an answer.
fn print_text(shape: Shape, answer: &Value) {
    match shape {
        Shape::Secret(done) => {
            println!("{done}: {}", field(answer, "client_id"));
            println!(
                "  credential version: {}",
                field(answer, "credential_version")
            );
            // The one time the secret is shown: on its own line, easy to copy, with the warning.
            println!(
                "  client secret (shown once: {}):",
                field(answer, "shown_once")
            );
            println!("    {}", field(answer, "client_secret"));
            let urls = &answer["urls"];
            for (label, name) in [
                ("token URL", "token"),
                ("messages URL", "messages"),
                ("ack URL", "ack"),
                ("nack URL", "nack"),
                ("skills URL", "skills"),
            ] {
                println!("  {label:<13} {}", field(urls, name));
            }
        }
        Shape::Connection(done) => {
            if let Some(done) = done {
                println!("{done}: {}", field(answer, "client_id"));
            }
            print_connection(answer);
        }
        Shape::List => {
            let connections = answer["connections"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if connections.is_empty() {
                println!("no connections");
                return;
            }
            let rows: Vec<Vec<String>> = connections
                .iter()
                .map(|connection| {
                    ["client_id", "name", "role", "status", "fifo", "queue"]
                        .iter()
                        .map(|name| match *name {
                            "fifo" => match connection["fifo"].as_bool() {
                                Some(true) => "fifo".to_owned(),
                                _ => "standard".to_owned(),
                            },
                            name => field(connection, name),
                        })
                        .collect()
                })
                .collect();
            print_table(
                &["CLIENT ID", "NAME", "ROLE", "STATUS", "TYPE", "QUEUE"],
                &rows,
            );
        }
        Shape::Done(done) => println!("{done}"),
        Shape::Redrive => println!("redrive started: task {}", field(answer, "task_handle")),
        Shape::Audit => {
            let entries = answer["entries"].as_array().cloned().unwrap_or_default();
            if entries.is_empty() && answer["next_cursor"].is_null() {
                println!("no audit entries");
                return;
            }
            let rows: Vec<Vec<String>> = entries
                .iter()
                .map(|entry| {
                    let detail = match &entry["detail"] {
                        Value::Null => String::new(),
                        _ => field(entry, "detail"),
                    };
                    let optional = |name: &str| match &entry[name] {
                        Value::Null => String::new(),
                        _ => field(entry, name),
                    };
                    vec![
                        field(entry, "at"),
                        field(entry, "actor"),
                        field(entry, "action"),
                        field(entry, "client_id"),
                        optional("outcome"),
                        optional("actor_key"),
                        detail,
                    ]
                })
                .collect();
            print_table(
                &[
                    "AT",
                    "ACTOR",
                    "ACTION",
                    "CLIENT ID",
                    "OUTCOME",
                    "KEY ID",
                    "DETAIL",
                ],
                &rows,
            );
            if let Some(damage) = answer["damage"].as_object() {
                let count = |name: &str| damage.get(name).and_then(Value::as_u64).unwrap_or(0);
                println!(
                    "the audit log is not whole here: {} damaged lines, {} missing, {} broken links",
                    count("damaged_lines"),
                    count("missing_lines"),
                    count("broken_links")
                );
            }
            if let Some(cursor) = answer["next_cursor"].as_str() {
                println!("older entries: --cursor {cursor}");
            }
        }
        Shape::Published => println!(
            "published message {} (SQS message id {})",
            field(answer, "message_id"),
            field(answer, "sqs_message_id")
        ),
    }
}

/// One connection, a field a line.
fn print_connection(connection: &Value) {
    let kind = match connection["fifo"].as_bool() {
        Some(true) => "FIFO",
        _ => "standard",
    };
    println!(
        "connection {}  {}  {}  {}",
        field(connection, "client_id"),
        field(connection, "name"),
        field(connection, "role"),
        field(connection, "status")
    );
    println!("  workspace: {}", field(connection, "workspace"));
    println!("  queue: {} ({kind})", field(connection, "queue"));
    println!(
        "  dead-letter queue: {}",
        field(connection, "dead_letter_queue")
    );
    println!("  attempt limit: {}", field(connection, "attempt_limit"));
    println!("  tier: {}", field(connection, "tier"));
    println!(
        "  credential version: {}",
        field(connection, "credential_version")
    );
    println!(
        "  has a secret: {}",
        match connection["has_secret"].as_bool() {
            Some(true) => "yes",
            _ => "no",
        }
    );
    println!(
        "  previous secret valid until: {}",
        field(connection, "old_secret_valid_until")
    );
    println!("  created at: {}", field(connection, "created_at"));
}

async fn publish(args: PublishArgs) -> Result<Value, Failure> {
    let secret_access_key = SQS_SECRET
        .read(
            args.secret_access_key.as_deref(),
            args.secret_access_key_file.as_deref(),
        )?
        .ok_or_else(|| {
            Failure::Usage(
                "no SQS secret: set AWS_SECRET_ACCESS_KEY or use --secret-access-key-file"
                    .to_owned(),
            )
        })?;
    let payload: Value = serde_json::from_str(&args.payload)
        .map_err(|error| Failure::Usage(format!("--payload is not JSON: {error}")))?;
    let message_id = args
        .message_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let mut envelope = json!({
        "som_version": "1.0.0",
        "message_id": message_id,
        "message_type": args.message_type,
        "correlation_id": args.correlation_id,
        "payload": payload,
    });
    let mut attributes = vec![
        ("message_type", args.message_type.clone()),
        ("correlation_id", args.correlation_id.clone()),
    ];
    for (name, value) in [("topic", &args.topic), ("producer_id", &args.producer_id)] {
        if let Some(value) = value {
            envelope[name] = json!(value);
            attributes.push((name, value.clone()));
        }
    }
    let sdk = aws_config::SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(args.region))
        .endpoint_url(args.endpoint.trim_end_matches('/'))
        .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
            Credentials::new(args.access_key_id, secret_access_key, None, None, "cli"),
        ))
        .build();
    let client = aws_sdk_sqs::Client::new(&sdk);
    let url = client
        .get_queue_url()
        .queue_name(&args.queue)
        .send()
        .await
        .map_err(|error| {
            Failure::Transport(format!("no queue {}: {}", args.queue, sdk_message(&error)))
        })?
        .queue_url
        .unwrap_or_default();
    let mut send = client
        .send_message()
        .queue_url(url)
        .message_body(envelope.to_string());
    for (name, value) in attributes {
        let value = MessageAttributeValue::builder()
            .data_type("String")
            .string_value(value)
            .build()
            .map_err(|error| Failure::Transport(error.to_string()))?;
        send = send.message_attributes(name, value);
    }
    if args.queue.ends_with(".fifo") {
        send = send
            .message_group_id(&args.correlation_id)
            .message_deduplication_id(&message_id);
    }
    let sent = send
        .send()
        .await
        .map_err(|error| Failure::Transport(format!("not sent: {}", sdk_message(&error))))?;
    Ok(json!({ "message_id": message_id, "sqs_message_id": sent.message_id }))
}

fn sdk_message<E: aws_sdk_sqs::error::ProvideErrorMetadata>(
    error: &aws_sdk_sqs::error::SdkError<E>,
) -> String {
    match error.as_service_error() {
        Some(service) => format!(
            "{}: {}",
            service.code().unwrap_or("error"),
            service.message().unwrap_or("")
        ),
        None => error.to_string(),
    }
}
