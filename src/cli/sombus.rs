//! `sqs-gateway sombus …`: HTTP clients of a running gateway. `connections` and `audit` call the
//! sombus admin API with an admin key; `publish` sends a correctly formed envelope through the
//! SQS endpoint (as a producer does), so a newcomer can try the consumer loop.

use super::EXIT_RUNTIME;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::types::MessageAttributeValue;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use std::process::ExitCode;

/// Where the gateway is and the admin key to use.
#[derive(Debug, Args)]
pub(crate) struct AdminArgs {
    /// The gateway's base URL.
    #[arg(long, env = "SQSGW_ENDPOINT", default_value = "http://127.0.0.1:8787")]
    endpoint: String,
    /// An admin key (`sqs-gateway new-admin-key` makes one).
    #[arg(long, env = "SQSGW_ADMIN_KEY", hide_env_values = true)]
    admin_key: String,
    /// The workspace (tenant) id.
    #[arg(long, env = "SOMBUS_WORKSPACE")]
    workspace: String,
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
    /// The workspace's audit log (admin API).
    Audit {
        #[command(flatten)]
        admin: AdminArgs,
        /// The last this many entries.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Publish one envelope to a connection's queue through the gateway's SQS endpoint.
    #[command(
        after_help = "Example:\n  export AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=…\n  sqs-gateway sombus publish --queue sombus-demo-c0123….fifo \\\n    --message-type story.context --correlation-id story-1 --payload '{\"text\": \"hi\"}'"
    )]
    Publish(PublishArgs),
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
    /// Its secret.
    #[arg(long, env = "AWS_SECRET_ACCESS_KEY", hide_env_values = true)]
    secret_access_key: String,
    /// The region the endpoint signs for.
    #[arg(long, env = "AWS_REGION", default_value = "us-east-1")]
    region: String,
}

/// Runs a `sombus` command.
pub(crate) async fn run(command: SombusCommand) -> ExitCode {
    let outcome = match command {
        SombusCommand::Connections { admin, command } => connections(&admin, command).await,
        SombusCommand::Audit { admin, limit } => {
            call(
                &admin,
                reqwest::Method::GET,
                &format!("/audit?limit={limit}"),
                None,
            )
            .await
        }
        SombusCommand::Publish(args) => publish(args).await,
    };
    match outcome {
        Ok(answer) => {
            if !answer.is_null() {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&answer).unwrap_or_default()
                );
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(EXIT_RUNTIME)
        }
    }
}

async fn connections(admin: &AdminArgs, command: ConnectionCommand) -> Result<Value, String> {
    use reqwest::Method;
    let one = |client_id: &str, step: &str| format!("/connections/{client_id}{step}");
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
    call(admin, method, &route, body).await
}

/// One admin API call; a refusal becomes `refused (status) rule: message`.
async fn call(
    admin: &AdminArgs,
    method: reqwest::Method,
    route: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    let url = format!(
        "{}/v1/admin/workspaces/{}{route}",
        admin.endpoint.trim_end_matches('/'),
        admin.workspace
    );
    let mut request = reqwest::Client::new()
        .request(method, &url)
        .bearer_auth(&admin.admin_key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request
        .send()
        .await
        .map_err(|error| format!("cannot reach {}: {}", admin.endpoint, error.without_url()))?;
    let status = response.status();
    let text = response.text().await.map_err(|error| error.to_string())?;
    let answer: Value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).map_err(|_| format!("unexpected answer ({status}): {text}"))?
    };
    if status.is_success() {
        return Ok(answer);
    }
    let violation = &answer["violations"][0];
    Err(format!(
        "refused ({}): {}: {}",
        status.as_u16(),
        violation["rule"].as_str().unwrap_or("unknown"),
        violation["message"].as_str().unwrap_or("")
    ))
}

async fn publish(args: PublishArgs) -> Result<Value, String> {
    let payload: Value = serde_json::from_str(&args.payload)
        .map_err(|error| format!("--payload is not JSON: {error}"))?;
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
            Credentials::new(
                args.access_key_id,
                args.secret_access_key,
                None,
                None,
                "cli",
            ),
        ))
        .build();
    let client = aws_sdk_sqs::Client::new(&sdk);
    let url = client
        .get_queue_url()
        .queue_name(&args.queue)
        .send()
        .await
        .map_err(|error| format!("no queue {}: {}", args.queue, sdk_message(&error)))?
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
            .map_err(|error| error.to_string())?;
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
        .map_err(|error| format!("not sent: {}", sdk_message(&error)))?;
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
