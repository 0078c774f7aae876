//! `sqs-gateway bench`: backend throughput and memory, measured in one run against a baseline.
//!
//! Every backend is driven through the same [`Backend`] trait the gateway uses: send, and
//! receive + delete, in batches of 10, from 1 and 8 concurrent clients. Figures are printed with
//! their ratio to the baseline (LocalStack when it answers, else the in-memory engine at 1 client).

// A benchmark measures real elapsed time, which is what it reports.
#![allow(clippy::disallowed_methods)]

use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::backend::sqs::SqsBackend;
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::SystemClock;
use sqs_gateway::core::model::{BackendReceive, OutgoingMessage, QueueSettings};
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Debug, Clone)]
pub(super) struct BenchOptions {
    /// Messages per scenario.
    pub messages: usize,
    /// Body size in bytes.
    pub body_bytes: usize,
    /// LocalStack (or SQS) endpoint to include as the baseline; skipped when it does not answer.
    pub localstack: Option<String>,
    /// Messages stored for the memory figure.
    pub memory_messages: usize,
}

/// One measured figure.
#[derive(Debug, Clone)]
pub(super) struct Figure {
    /// The backend measured.
    pub backend: String,
    /// What was measured.
    pub operation: &'static str,
    /// Concurrent clients.
    pub clients: usize,
    /// Messages a second.
    pub per_second: f64,
}

const BATCH: usize = 10;
const CLIENTS: [usize; 2] = [1, 8];

/// Runs every scenario and prints the table; returns the figures.
pub(super) async fn run(options: &BenchOptions) -> Result<Vec<Figure>, String> {
    let mut backends: Vec<(String, Arc<dyn Backend>)> = Vec::new();
    if let Some(endpoint) = &options.localstack {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .endpoint_url(endpoint)
            .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
                aws_sdk_sqs::config::Credentials::new("test", "test", None, None, "bench"),
            ))
            .build();
        let localstack = SqsBackend::from_sdk_config(&sdk);
        match tokio::time::timeout(Duration::from_secs(3), localstack.ping()).await {
            Ok(Ok(())) => backends.push(("localstack".into(), Arc::new(localstack))),
            _ => eprintln!("bench: {endpoint} does not answer; LocalStack skipped"),
        }
    }
    backends.push((
        "embedded in-memory".into(),
        EmbeddedBackend::in_memory(Arc::new(SystemClock)),
    ));
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let durable =
        EmbeddedBackend::open(dir.path(), Arc::new(SystemClock)).map_err(|e| e.to_string())?;
    backends.push(("embedded durable".into(), durable));

    let body = "x".repeat(options.body_bytes);
    let mut figures = Vec::new();
    for (name, backend) in &backends {
        for clients in CLIENTS {
            let queue = format!("bench-{:08x}", rand::random::<u32>());
            let url = backend
                .create_queue(&queue, &QueueSettings::default())
                .await
                .map_err(|e| e.to_string())?
                .url;
            let sent = send_phase(backend, &url, &body, options.messages, clients).await?;
            figures.push(Figure {
                backend: name.clone(),
                operation: "send",
                clients,
                per_second: sent,
            });
            let received = receive_phase(backend, &url, options.messages, clients).await?;
            figures.push(Figure {
                backend: name.clone(),
                operation: "receive+delete",
                clients,
                per_second: received,
            });
            let _ = backend.delete_queue(&url).await;
        }
    }
    print_table(&figures);
    let per_million = memory_per_million(options.memory_messages, options.body_bytes).await?;
    println!(
        "memory: {:.0} MiB resident per million stored messages ({}-byte bodies, in-memory engine, {} messages measured)",
        per_million / (1024.0 * 1024.0),
        options.body_bytes,
        options.memory_messages
    );
    Ok(figures)
}

async fn send_phase(
    backend: &Arc<dyn Backend>,
    url: &str,
    body: &str,
    messages: usize,
    clients: usize,
) -> Result<f64, String> {
    let batches = messages.div_ceil(BATCH);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (backend, url, next) = (Arc::clone(backend), url.to_owned(), Arc::clone(&next));
        let batch: Vec<OutgoingMessage> = (0..BATCH)
            .map(|_| OutgoingMessage {
                body: body.to_owned(),
                ..Default::default()
            })
            .collect();
        tasks.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < batches {
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
    Ok((batches * BATCH) as f64 / started.elapsed().as_secs_f64())
}

async fn receive_phase(
    backend: &Arc<dyn Backend>,
    url: &str,
    messages: usize,
    clients: usize,
) -> Result<f64, String> {
    let total = messages.div_ceil(BATCH) * BATCH;
    let done = Arc::new(AtomicUsize::new(0));
    // When the last message was deleted: clients still in a long poll then do not count.
    let finished = Arc::new(std::sync::OnceLock::new());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(300);
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (backend, url, done, finished) = (
            Arc::clone(backend),
            url.to_owned(),
            Arc::clone(&done),
            Arc::clone(&finished),
        );
        tasks.push(tokio::spawn(async move {
            let request = BackendReceive {
                max_messages: BATCH as u32,
                wait_seconds: 1,
                visibility_timeout_seconds: 120,
                attempt_id: None,
            };
            while done.load(Ordering::Relaxed) < total && Instant::now() < deadline {
                let received = backend
                    .receive(&url, &request)
                    .await
                    .map_err(|e| e.to_string())?;
                if received.is_empty() {
                    continue;
                }
                let handles: Vec<&str> =
                    received.iter().map(|m| m.backend_handle.as_str()).collect();
                backend
                    .delete_batch(&url, &handles)
                    .await
                    .map_err(|e| e.to_string())?;
                if done.fetch_add(received.len(), Ordering::Relaxed) + received.len() >= total {
                    let _ = finished.set(Instant::now());
                }
            }
            Ok::<(), String>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    let done = done.load(Ordering::Relaxed);
    if done < total {
        return Err(format!(
            "only {done} of {total} messages came back within 300 s"
        ));
    }
    let elapsed = finished
        .get()
        .map_or_else(|| started.elapsed(), |at| *at - started);
    Ok(total as f64 / elapsed.as_secs_f64())
}

fn print_table(figures: &[Figure]) {
    let baseline = |operation: &str, clients: usize| {
        figures
            .iter()
            .find(|f| f.backend == "localstack" && f.operation == operation && f.clients == clients)
            .or_else(|| {
                figures.iter().find(|f| {
                    f.backend == "embedded in-memory" && f.operation == operation && f.clients == 1
                })
            })
            .map(|f| f.per_second)
    };
    println!(
        "{:<20} {:<16} {:>7} {:>12} {:>10}",
        "backend", "operation", "clients", "msg/s", "× baseline"
    );
    for figure in figures {
        let ratio = baseline(figure.operation, figure.clients)
            .map(|base| format!("{:.1}", figure.per_second / base))
            .unwrap_or_else(|| "-".into());
        println!(
            "{:<20} {:<16} {:>7} {:>12.0} {:>10}",
            figure.backend, figure.operation, figure.clients, figure.per_second, ratio
        );
    }
    println!(
        "(batches of {BATCH}; baseline: LocalStack at the same client count when it answered, else the in-memory engine at 1 client)"
    );
}

/// Resident memory of this process, in bytes (Linux `/proc/self/statm`).
fn resident_bytes() -> Option<f64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: f64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096.0)
}

async fn memory_per_million(messages: usize, body_bytes: usize) -> Result<f64, String> {
    let backend = EmbeddedBackend::in_memory(Arc::new(SystemClock));
    let url = backend
        .create_queue("bench-memory", &QueueSettings::default())
        .await
        .map_err(|e| e.to_string())?
        .url;
    let before = resident_bytes().ok_or("cannot read /proc/self/statm")?;
    let batch: Vec<OutgoingMessage> = (0..BATCH)
        .map(|_| OutgoingMessage {
            body: "x".repeat(body_bytes),
            ..Default::default()
        })
        .collect();
    for _ in 0..messages.div_ceil(BATCH) {
        backend
            .send_batch(&url, &batch)
            .await
            .map_err(|e| e.to_string())?;
    }
    let after = resident_bytes().ok_or("cannot read /proc/self/statm")?;
    Ok((after - before).max(0.0) * 1_000_000.0 / messages as f64)
}

/// Sends messages into the embedded store in `dir` until the process is killed, printing each
/// message id once its send is on disk. The crash test kills it with SIGKILL mid-load.
pub(super) async fn load_until_killed(dir: &Path, queue: &str) -> Result<(), String> {
    let backend = EmbeddedBackend::open(dir, Arc::new(SystemClock)).map_err(|e| e.to_string())?;
    let url = backend
        .create_queue(queue, &QueueSettings::default())
        .await
        .map_err(|e| e.to_string())?
        .url;
    let backend = Arc::new(backend);
    let mut tasks = Vec::new();
    for client in 0..4 {
        let (backend, url) = (Arc::clone(&backend), url.clone());
        tasks.push(tokio::spawn(async move {
            let mut counter = 0u64;
            loop {
                let batch: Vec<OutgoingMessage> = (0..BATCH)
                    .map(|_| {
                        counter += 1;
                        OutgoingMessage {
                            body: format!("client {client} message {counter}"),
                            ..Default::default()
                        }
                    })
                    .collect();
                let results = backend
                    .send_batch(&url, &batch)
                    .await
                    .map_err(|e| e.to_string())?;
                let mut out = std::io::stdout().lock();
                for sent in results.into_iter().flatten() {
                    let _ = writeln!(out, "{}", sent.message_id);
                }
                let _ = out.flush();
            }
            #[allow(unreachable_code)]
            Ok::<(), String>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}
