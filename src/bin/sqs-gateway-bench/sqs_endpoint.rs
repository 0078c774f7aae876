//! The SQS endpoint as users meet it: an `aws-sdk-sqs` client, signed, sending and receiving +
//! deleting in batches of 10, the same code against LocalStack and against each gateway.

use super::measure::{RequestKind, Run};
use super::{Operation, Scenario, Target};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::DisplayErrorContext;
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, SendMessageBatchRequestEntry};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Messages a batch request carries.
pub(super) const BATCH: usize = 10;
/// The longest a drain may take before the bench gives up on it.
const DRAIN_LIMIT: Duration = Duration::from_secs(600);

/// Where an SDK client sends its requests, and the key it signs them with.
#[derive(Debug, Clone)]
pub(super) struct Endpoint {
    pub url: String,
    pub key_id: String,
    pub secret: String,
    /// Ask for `Connection: keep-alive` on every request, as the gateway's own SQS backend does
    /// (LocalStack otherwise closes each connection after its answer).
    pub keep_alive: bool,
}

impl Endpoint {
    /// A new client with its own connection pool (each simulated client gets one).
    pub(super) fn client(&self) -> Client {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .endpoint_url(&self.url)
            .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
                aws_sdk_sqs::config::Credentials::new(
                    &self.key_id,
                    &self.secret,
                    None,
                    None,
                    "bench",
                ),
            ))
            .build();
        let mut config = aws_sdk_sqs::config::Builder::from(&sdk);
        if self.keep_alive {
            config = config.interceptor(sqs_gateway::backend::sqs::AskKeepAlive);
        }
        Client::from_conf(config.build())
    }
}

fn sdk_error<E: std::error::Error>(what: &str, error: E) -> String {
    format!("{what}: {}", DisplayErrorContext(error))
}

/// Creates a queue (through the endpoint's CreateQueue) and answers its URL.
pub(super) async fn create_queue(endpoint: &Endpoint, name: &str) -> Result<String, String> {
    endpoint
        .client()
        .create_queue()
        .queue_name(name)
        .send()
        .await
        .map_err(|e| sdk_error("CreateQueue", e))?
        .queue_url
        .ok_or_else(|| "CreateQueue answered no URL".to_owned())
}

/// The URL of an existing queue.
pub(super) async fn queue_url(endpoint: &Endpoint, name: &str) -> Result<String, String> {
    endpoint
        .client()
        .get_queue_url()
        .queue_name(name)
        .send()
        .await
        .map_err(|e| sdk_error("GetQueueUrl", e))?
        .queue_url
        .ok_or_else(|| "GetQueueUrl answered no URL".to_owned())
}

/// Deletes a queue, ignoring failures (cleanup).
pub(super) async fn delete_queue(endpoint: &Endpoint, url: &str) {
    let _ = endpoint.client().delete_queue().queue_url(url).send().await;
}

/// Whether the endpoint answers a ListQueues within 3 s.
pub(super) async fn answers(endpoint: &Endpoint) -> bool {
    let call = endpoint.client().list_queues().send();
    matches!(
        tokio::time::timeout(Duration::from_secs(3), call).await,
        Ok(Ok(_))
    )
}

/// The names of the queues the endpoint lists (pages of 1,000 followed), `None` on an error.
pub(super) async fn queue_names(endpoint: &Endpoint) -> Option<Vec<String>> {
    let client = endpoint.client();
    let (mut names, mut token) = (Vec::new(), None);
    loop {
        let page = client
            .list_queues()
            .max_results(1000)
            .set_next_token(token)
            .send()
            .await
            .ok()?;
        names.extend(
            page.queue_urls()
                .iter()
                .filter_map(|url| url.rsplit('/').next().map(str::to_owned)),
        );
        token = page.next_token;
        if token.is_none() {
            return Some(names);
        }
    }
}

/// `clients` clients send `messages` messages (rounded up to whole batches) between them.
pub(super) async fn send(
    endpoint: &Endpoint,
    url: &str,
    body: &str,
    messages: usize,
    clients: usize,
) -> Result<Run, String> {
    let batches = messages.div_ceil(BATCH);
    let next = Arc::new(AtomicUsize::new(0));
    let sdk: Vec<Client> = (0..clients).map(|_| endpoint.client()).collect();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in sdk {
        let (url, next, body) = (url.to_owned(), Arc::clone(&next), body.to_owned());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < batches {
                let entries = (0..BATCH)
                    .map(|id| {
                        SendMessageBatchRequestEntry::builder()
                            .id(id.to_string())
                            .message_body(&body)
                            .build()
                            .map_err(|e| e.to_string())
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                let sent = Instant::now();
                let answer = client
                    .send_message_batch()
                    .queue_url(&url)
                    .set_entries(Some(entries))
                    .send()
                    .await
                    .map_err(|e| sdk_error("SendMessageBatch", e))?;
                latencies.push((RequestKind::SendMessageBatch, sent.elapsed()));
                if let Some(failed) = answer.failed().first() {
                    return Err(format!(
                        "SendMessageBatch refused an entry: {}",
                        failed.code()
                    ));
                }
            }
            Ok::<_, String>(latencies)
        }));
    }
    let mut run = Run {
        messages: batches * BATCH,
        ..Run::default()
    };
    for task in tasks {
        run.absorb(task.await.map_err(|e| e.to_string())??);
    }
    run.elapsed = started.elapsed();
    Ok(run)
}

/// `clients` clients receive (10 at most, 1 s wait) and delete in batches until `messages`
/// messages are deleted. The clock stops at the last delete; receives that come back empty (the
/// waits at the end) are not counted.
pub(super) async fn receive_and_delete(
    endpoint: &Endpoint,
    url: &str,
    messages: usize,
    clients: usize,
) -> Result<Run, String> {
    let total = messages.div_ceil(BATCH) * BATCH;
    let done = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(OnceLock::new());
    let sdk: Vec<Client> = (0..clients).map(|_| endpoint.client()).collect();
    let started = Instant::now();
    let deadline = started + DRAIN_LIMIT;
    let mut tasks = Vec::new();
    for client in sdk {
        let (url, done, finished) = (url.to_owned(), Arc::clone(&done), Arc::clone(&finished));
        tasks.push(tokio::spawn(async move {
            let mut records = Vec::new();
            let mut empty = 0;
            while done.load(Ordering::Relaxed) < total && Instant::now() < deadline {
                let asked = Instant::now();
                let received = client
                    .receive_message()
                    .queue_url(&url)
                    .max_number_of_messages(BATCH as i32)
                    .wait_time_seconds(1)
                    .visibility_timeout(120)
                    .send()
                    .await
                    .map_err(|e| sdk_error("ReceiveMessage", e))?;
                let messages = received.messages();
                if messages.is_empty() {
                    if done.load(Ordering::Relaxed) < total {
                        empty += 1;
                    }
                    continue;
                }
                records.push((RequestKind::ReceiveMessage, asked.elapsed(), asked));
                let entries = messages
                    .iter()
                    .enumerate()
                    .map(|(id, message)| {
                        DeleteMessageBatchRequestEntry::builder()
                            .id(id.to_string())
                            .receipt_handle(message.receipt_handle().unwrap_or_default())
                            .build()
                            .map_err(|e| e.to_string())
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                let count = entries.len();
                let deleting = Instant::now();
                let answer = client
                    .delete_message_batch()
                    .queue_url(&url)
                    .set_entries(Some(entries))
                    .send()
                    .await
                    .map_err(|e| sdk_error("DeleteMessageBatch", e))?;
                records.push((
                    RequestKind::DeleteMessageBatch,
                    deleting.elapsed(),
                    deleting,
                ));
                if let Some(failed) = answer.failed().first() {
                    return Err(format!(
                        "DeleteMessageBatch refused an entry: {}",
                        failed.code()
                    ));
                }
                if done.fetch_add(count, Ordering::Relaxed) + count >= total {
                    let _ = finished.set(Instant::now());
                }
            }
            Ok::<_, String>((records, empty))
        }));
    }
    super::measure::drained(tasks, &done, &finished, total, started, DRAIN_LIMIT).await
}

/// The queues a row pair uses: made fresh on the endpoint (LocalStack directly), or the gateway's
/// configured `sqs-<clients>`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Queues {
    Fresh,
    Configured,
}

/// Send, then receive + delete, with 1 and 8 clients, each pair on a queue of its own.
pub(super) async fn measure(
    target: Target,
    endpoint: &Endpoint,
    queues: Queues,
    body: &str,
    messages: usize,
    client_counts: &[usize],
) -> Result<Vec<Scenario>, String> {
    let mut scenarios = Vec::new();
    for &clients in client_counts {
        let url = match queues {
            Queues::Fresh => {
                let name = format!("bench-{:08x}-{clients}", rand::random::<u32>());
                create_queue(endpoint, &name).await?
            }
            Queues::Configured => queue_url(endpoint, &super::process::sqs_queue(clients)).await?,
        };
        eprintln!("bench: {}: send, {clients} client(s)", target.label());
        let outcome = async {
            let sent = send(endpoint, &url, body, messages, clients).await?;
            eprintln!(
                "bench: {}: receive+delete, {clients} client(s)",
                target.label()
            );
            let drained = receive_and_delete(endpoint, &url, messages, clients).await?;
            Ok::<_, String>((sent, drained))
        }
        .await;
        if matches!(queues, Queues::Fresh) {
            delete_queue(endpoint, &url).await;
        }
        let (sent, drained) = outcome?;
        scenarios.push(Scenario {
            target,
            operation: Operation::Send,
            clients,
            run: sent,
        });
        scenarios.push(Scenario {
            target,
            operation: Operation::ReceiveDelete,
            clients,
            run: drained,
        });
    }
    Ok(scenarios)
}
