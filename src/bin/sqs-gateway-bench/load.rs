//! `sqs-gateway load`: the crash test's load, sends into an embedded data directory until the
//! process is killed, printing each id once it is durable.

use super::sqs_endpoint::BATCH;
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::SystemClock;
use sqs_gateway::core::model::{OutgoingMessage, QueueSettings};
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

/// Sends messages into the embedded store in `dir` until the process is killed, printing each
/// message id once its send is on disk. The crash test kills it with SIGKILL mid-load.
pub(crate) async fn load_until_killed(dir: &Path, queue: &str) -> Result<(), String> {
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
