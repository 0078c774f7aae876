//! A gateway holding a backlog: resident memory per million stored messages, the time to reopen
//! the data directory, and throughput with the backlog in place.

use super::gateway_endpoint;
use super::measure::Run;
use super::process::{self, BACKLOG_QUEUE as QUEUE, Gateway, GatewayBackend, Secrets};
use super::sqs_endpoint::{self, BATCH};
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::SystemClock;
use sqs_gateway::core::model::{OutgoingMessage, QueueSettings};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Concurrent senders while filling (group commit makes more of them cheaper).
const FILLERS: usize = 32;
/// The longest a reopen may take before the bench gives up.
const REOPEN_LIMIT: Duration = Duration::from_secs(1800);

/// One backlog measured.
#[derive(Debug)]
pub(super) struct BacklogFigures {
    pub messages: usize,
    pub body_bytes: usize,
    /// Filling the directory through the engine, in a process of its own (not what is judged).
    pub filled_in: Duration,
    /// From the gateway's start to its first 200 on `/readyz`.
    pub reopened_in: Duration,
    /// Resident memory of the gateway with the backlog, and of one on an empty directory.
    pub resident: u64,
    pub resident_empty: u64,
    /// Send, then receive + delete (8 clients, over the SQS endpoint) with the backlog in place.
    pub throughput: Option<(Run, Run)>,
}

impl BacklogFigures {
    /// Resident bytes the stored messages add, per million messages.
    pub(super) fn per_million(&self) -> f64 {
        self.resident.saturating_sub(self.resident_empty) as f64 * 1_000_000.0
            / self.messages.max(1) as f64
    }
}

/// Stores `messages` messages of `body_bytes` bytes in queue `backlog` of the durable engine in
/// `dir` (or, with `fifo_groups`, in the FIFO queue `backlog.fifo`, message n in group
/// n mod `fifo_groups`), through the engine itself (HTTP would take far longer), then closes it:
/// the hidden `bench-fill` command, a child process so that its memory is gone before the
/// gateway starts.
pub(crate) async fn fill(
    dir: &Path,
    messages: usize,
    body_bytes: usize,
    fifo_groups: Option<usize>,
) -> Result<(), String> {
    let backend: Arc<dyn Backend> =
        EmbeddedBackend::open(dir, Arc::new(SystemClock)).map_err(|e| e.to_string())?;
    let queue = if fifo_groups.is_some() {
        process::FIFO_BACKLOG_QUEUE
    } else {
        QUEUE
    };
    let url = backend
        .create_queue(queue, &QueueSettings::default())
        .await
        .map_err(|e| e.to_string())?
        .url;
    let batches = messages.div_ceil(BATCH);
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..FILLERS {
        let (backend, url, next) = (Arc::clone(&backend), url.clone(), Arc::clone(&next));
        let batch: Vec<OutgoingMessage> = (0..BATCH)
            .map(|_| OutgoingMessage {
                body: "b".repeat(body_bytes),
                ..Default::default()
            })
            .collect();
        tasks.push(tokio::spawn(async move {
            let mut batch = batch;
            loop {
                let number = next.fetch_add(1, Ordering::Relaxed);
                if number >= batches {
                    break;
                }
                if let Some(groups) = fifo_groups {
                    for (offset, message) in batch.iter_mut().enumerate() {
                        let n = number * BATCH + offset;
                        message.group_id = Some(format!("g{}", n % groups.max(1)));
                        message.deduplication_id = Some(n.to_string());
                    }
                }
                let results = backend
                    .send_batch(&url, &batch)
                    .await
                    .map_err(|e| e.to_string())?;
                if let Some(Err(error)) = results.into_iter().find(Result::is_err) {
                    return Err(error.message);
                }
            }
            Ok::<(), String>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    // Closing waits for the writer thread: off the async workers.
    tokio::task::spawn_blocking(move || drop(backend))
        .await
        .map_err(|e| e.to_string())
}

/// Runs `sqs-gateway-bench bench-fill` and waits for it; answers how long it took.
pub(super) async fn fill_in_child(
    work: &Path,
    dir: &Path,
    messages: usize,
    body_bytes: usize,
    fifo_groups: Option<usize>,
) -> Result<Duration, String> {
    let started = Instant::now();
    let (messages, body_bytes) = (messages.to_string(), body_bytes.to_string());
    let dir = dir.to_string_lossy();
    let groups = fifo_groups.map(|groups| groups.to_string());
    let mut arguments = vec![
        "bench-fill",
        "--data-dir",
        &dir,
        "--messages",
        &messages,
        "--body-bytes",
        &body_bytes,
    ];
    if let Some(groups) = &groups {
        arguments.extend(["--fifo-groups", groups.as_str()]);
    }
    process::spawn(
        process::Binary::Bench,
        &format!(
            "fill-{messages}-{body_bytes}{}",
            groups
                .as_deref()
                .map(|g| format!("-fifo-{g}"))
                .unwrap_or_default()
        ),
        &arguments,
        work,
        &[],
    )?
    .finish()
    .await?;
    Ok(started.elapsed())
}

/// A durable gateway `name` opened on `dir` (waiting up to `limit` for it to read the directory
/// back), and its resident memory once it has settled.
pub(super) async fn open_durable(
    name: &str,
    dir: &Path,
    work: &Path,
    secrets: &Secrets,
    limit: Duration,
) -> Result<(Gateway, u64), String> {
    let backend = GatewayBackend::Durable(dir.to_owned());
    let gateway = Gateway::start(name, &backend, secrets, work, limit).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let resident = gateway.resident_bytes()?;
    Ok((gateway, resident))
}

/// Resident memory of a gateway on an empty data directory (the figure a backlog adds to).
pub(super) async fn empty_resident(work: &Path, secrets: &Secrets) -> Result<u64, String> {
    let dir = work.join("backlog-empty");
    let limit = Duration::from_secs(60);
    let (gateway, resident) =
        open_durable("gateway-empty-durable", &dir, work, secrets, limit).await?;
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(resident)
}

/// Fills a directory, reopens it in a gateway, reads its memory and (with `throughput_messages`)
/// sends and drains that many messages over the SQS endpoint with 8 clients.
pub(super) async fn measure(
    work: &Path,
    secrets: &Secrets,
    messages: usize,
    body_bytes: usize,
    resident_empty: u64,
    throughput_messages: Option<usize>,
) -> Result<BacklogFigures, String> {
    let dir = work.join(format!("backlog-{messages}-{body_bytes}"));
    eprintln!("bench: backlog: storing {messages} messages of {body_bytes} bytes");
    let outcome = async {
        let filled_in = fill_in_child(work, &dir, messages, body_bytes, None).await?;
        eprintln!("bench: backlog: reopening {messages} messages in a gateway");
        let name = format!("gateway-backlog-{messages}-{body_bytes}");
        let (gateway, resident) = open_durable(&name, &dir, work, secrets, REOPEN_LIMIT).await?;
        let mut throughput = None;
        if let Some(count) = throughput_messages {
            let endpoint = gateway_endpoint(&gateway, secrets);
            let url = sqs_endpoint::queue_url(&endpoint, QUEUE).await?;
            let body = "s".repeat(body_bytes);
            eprintln!("bench: backlog: send and receive+delete with the backlog");
            let sent = sqs_endpoint::send(&endpoint, &url, &body, count, 8).await?;
            let drained = sqs_endpoint::receive_and_delete(&endpoint, &url, count, 8).await?;
            throughput = Some((sent, drained));
        }
        Ok::<_, String>(BacklogFigures {
            messages,
            body_bytes,
            filled_in,
            reopened_in: gateway.ready_after,
            resident,
            resident_empty,
            throughput,
        })
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}
