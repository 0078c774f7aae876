//! The ezgh REST API as users meet it: reqwest clients looping receive(10) + ack(10), the same
//! code against the gateway and against the bare handler that bounds this machine.

use super::measure::{RequestKind, Run};
use super::process::{ORGANIZATION, PROJECT};
use super::sqs_endpoint::BATCH;
use axum::body::Bytes;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The longest a drain may take before the bench gives up on it.
const DRAIN_LIMIT: Duration = Duration::from_secs(600);

/// An HTTP client with its own connection pool (each simulated client gets one).
pub(super) fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))
}

/// The receive URL of an ezgh queue of the bench project.
pub(super) fn receive_url(base: &str, queue: &str) -> String {
    format!(
        "{base}/v1/organizations/{ORGANIZATION}/projects/{PROJECT}/queues/{queue}/messages/receive"
    )
}

/// One receive: the answer's bytes and the receipt handles in it.
pub(super) async fn receive(
    http: &reqwest::Client,
    url: &str,
    api_key: &str,
    body: &str,
) -> Result<(Bytes, Vec<String>), String> {
    let response = http
        .post(url)
        .bearer_auth(api_key)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .map_err(|e| format!("ezgh receive: {e}"))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("ezgh receive: {e}"))?;
    if status != reqwest::StatusCode::OK {
        return Err(format!("ezgh receive answered {status}"));
    }
    let answer: Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("ezgh receive answer: {e}"))?;
    let handles = answer["messages"]
        .as_array()
        .ok_or("ezgh receive answer without `messages`")?
        .iter()
        .filter_map(|message| message["receiptHandle"].as_str().map(str::to_owned))
        .collect();
    Ok((bytes, handles))
}

/// One acknowledgement: the answer's bytes; `Err` unless every handle was acknowledged.
async fn ack(
    http: &reqwest::Client,
    base: &str,
    api_key: &str,
    handles: &[String],
) -> Result<Bytes, String> {
    let response = http
        .post(format!("{base}/v1/receipts/ack"))
        .bearer_auth(api_key)
        .header("content-type", "application/json")
        .body(json!({ "receiptHandles": handles }).to_string())
        .send()
        .await
        .map_err(|e| format!("ezgh ack: {e}"))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("ezgh ack: {e}"))?;
    if status != reqwest::StatusCode::OK {
        return Err(format!("ezgh ack answered {status}"));
    }
    let answer: Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("ezgh ack answer: {e}"))?;
    let results = answer["results"]
        .as_array()
        .ok_or("ezgh ack answer without `results`")?;
    let acknowledged = results.iter().filter(|r| r["ok"] == json!(true)).count();
    if results.len() != handles.len() || acknowledged != handles.len() {
        return Err(format!(
            "ezgh ack acknowledged {acknowledged} of {} handles",
            handles.len()
        ));
    }
    Ok(bytes)
}

/// The body of the bench's receives of up to `max_messages`.
fn receive_body(max_messages: usize) -> String {
    json!({ "maxMessages": max_messages, "waitSeconds": 1, "visibilityTimeoutSeconds": 120 })
        .to_string()
}

/// A real receive answer of 10 messages and a real ack answer, for the ceiling to repeat (the
/// queue must hold at least 10 messages; those 10 are acknowledged).
pub(super) async fn capture_answers(
    base: &str,
    api_key: &str,
    queue: &str,
) -> Result<(Bytes, Bytes), String> {
    let http = http_client()?;
    let url = receive_url(base, queue);
    for _ in 0..20 {
        let (answer, handles) = receive(&http, &url, api_key, &receive_body(BATCH)).await?;
        if handles.is_empty() {
            continue;
        }
        let acked = ack(&http, base, api_key, &handles).await?;
        if handles.len() == BATCH {
            return Ok((answer, acked));
        }
    }
    Err("no receive answered 10 messages".into())
}

/// `clients` clients loop receive + ack until `messages` messages are acknowledged (against the
/// ceiling, which always answers 10, until as many were). The clock stops at the last ack.
pub(super) async fn receive_and_ack(
    base: &str,
    api_key: &str,
    queue: &str,
    messages: usize,
    clients: usize,
) -> Result<Run, String> {
    receive_and_ack_across(&[base.to_owned()], api_key, queue, messages, clients, BATCH).await
}

/// The same loop with each request sent to the next of `bases` in turn (replicas behind a
/// round-robin balancer): a receive on one, its ack on the next; each receive asks for up to
/// `max_messages`.
pub(super) async fn receive_and_ack_across(
    bases: &[String],
    api_key: &str,
    queue: &str,
    messages: usize,
    clients: usize,
    max_messages: usize,
) -> Result<Run, String> {
    let total = messages.div_ceil(BATCH) * BATCH;
    let done = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(OnceLock::new());
    let bases: Arc<Vec<(String, String)>> = Arc::new(
        bases
            .iter()
            .map(|base| (base.clone(), receive_url(base, queue)))
            .collect(),
    );
    let https = (0..clients)
        .map(|_| http_client())
        .collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    let deadline = started + DRAIN_LIMIT;
    let mut tasks = Vec::new();
    for (client, http) in https.into_iter().enumerate() {
        let (done, finished) = (Arc::clone(&done), Arc::clone(&finished));
        let (bases, api_key) = (Arc::clone(&bases), api_key.to_owned());
        tasks.push(tokio::spawn(async move {
            let body = receive_body(max_messages);
            let mut records = Vec::new();
            let mut empty = 0;
            let mut turn = client;
            while done.load(Ordering::Relaxed) < total && Instant::now() < deadline {
                let (_, url) = &bases[turn % bases.len()];
                let (base, _) = &bases[(turn + 1) % bases.len()];
                turn += 2;
                let asked = Instant::now();
                let (_, handles) = receive(&http, url, &api_key, &body).await?;
                if handles.is_empty() {
                    if done.load(Ordering::Relaxed) < total {
                        empty += 1;
                    }
                    continue;
                }
                records.push((RequestKind::EzghReceive, asked.elapsed(), asked));
                let acking = Instant::now();
                ack(&http, base, &api_key, &handles).await?;
                records.push((RequestKind::EzghAck, acking.elapsed(), acking));
                let count = handles.len();
                if done.fetch_add(count, Ordering::Relaxed) + count >= total {
                    let _ = finished.set(Instant::now());
                }
            }
            Ok::<_, String>((records, empty))
        }));
    }
    super::measure::drained(tasks, &done, &finished, total, started, DRAIN_LIMIT).await
}
