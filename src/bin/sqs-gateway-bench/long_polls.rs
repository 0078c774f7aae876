//! Idle long polls: what thousands of receives waiting on an empty queue cost the gateway in
//! memory, and whether other requests slow down meanwhile.

use super::ezgh::{http_client, receive, receive_url};
use super::gateway_endpoint;
use super::measure::{RequestKind, Run};
use super::process::{Gateway, Secrets, metric_sum};
use super::sqs_endpoint;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// How long each idle poll waits (the longest a receive may).
const POLL_WAIT_SECONDS: u64 = 20;
/// Probe requests timed before the polls and (at most) while they wait.
const PROBES: usize = 2_000;
/// Polls opened together before the next group (the listen backlog is finite).
const OPENING_GROUP: usize = 500;

/// How the polls reach the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PollTransport {
    /// HTTP/1.1: a connection per waiting poll (boto3, the aws CLI, curl by default).
    Http1,
    /// HTTP/2 with prior knowledge: as many polls per connection as the gateway's default
    /// `server.http2_max_streams` lets one connection carry.
    Http2,
}

impl PollTransport {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Http1 => "HTTP/1.1",
            Self::Http2 => "HTTP/2",
        }
    }

    /// The name of the gateway (its config and log files) the polls are measured on.
    pub(super) fn gateway_name(self) -> &'static str {
        match self {
            Self::Http1 => "gateway-long-polls-http1",
            Self::Http2 => "gateway-long-polls-http2",
        }
    }
}

/// What the idle polls cost.
#[derive(Debug)]
pub(super) struct LongPollFigures {
    pub transport: PollTransport,
    /// Polls started.
    pub polls: usize,
    /// The most polls the gateway reported waiting at once (`sqsgw_long_polls_waiting`).
    pub waiting_peak: u64,
    /// How long until that many were waiting.
    pub opened_in: Duration,
    /// Gateway resident memory before the polls and while they waited (the higher of two reads).
    pub resident_before: u64,
    pub resident_during: u64,
    /// Probe receives alone, and while the polls waited.
    pub probe_before: Run,
    pub probe_during: Run,
    /// Polls answered 200 with no message, and those that failed.
    pub answered_empty: usize,
    pub failed: usize,
}

impl LongPollFigures {
    /// Resident bytes the waiting polls added.
    pub(super) fn added_bytes(&self) -> f64 {
        self.resident_during.saturating_sub(self.resident_before) as f64
    }
}

async fn waiting_polls(http: &reqwest::Client, base: &str) -> Option<u64> {
    let scrape = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    metric_sum(&scrape, "sqsgw_long_polls_waiting").map(|value| value as u64)
}

/// Sequential probe receives (10 messages, released at once so the next probe gets them again)
/// until `count` are done or `until` passes.
async fn probe(
    http: &reqwest::Client,
    url: &str,
    api_key: &str,
    count: usize,
    until: Instant,
) -> Result<Run, String> {
    let body = r#"{"maxMessages":10,"waitSeconds":0,"visibilityTimeoutSeconds":0}"#;
    let started = Instant::now();
    let mut run = Run::default();
    while run.requests() < count && Instant::now() < until {
        let asked = Instant::now();
        let (_, handles) = receive(http, url, api_key, body).await?;
        run.latencies
            .push((RequestKind::EzghReceive, asked.elapsed()));
        run.messages += handles.len();
    }
    run.elapsed = started.elapsed();
    Ok(run)
}

/// The HTTP clients that open `polls` polls over `transport` (reqwest keeps one HTTP/2
/// connection per client, so HTTP/2 takes a client per connection's worth of streams).
fn poll_clients(transport: PollTransport, polls: usize) -> Result<Vec<reqwest::Client>, String> {
    let timeout = Duration::from_secs(POLL_WAIT_SECONDS + 40);
    let (clients, http2) = match transport {
        PollTransport::Http1 => (1, false),
        PollTransport::Http2 => {
            let streams = sqs_gateway::config::ServerConfig::default().http2_max_streams;
            (polls.div_ceil(streams as usize).max(1), true)
        }
    };
    (0..clients)
        .map(|_| {
            let builder = reqwest::Client::builder().timeout(timeout);
            let builder = if http2 {
                builder.http2_prior_knowledge()
            } else {
                builder
            };
            builder.build().map_err(|e| e.to_string())
        })
        .collect()
}

/// Opens `polls` receives waiting 20 s on the empty queue `polls` of an in-memory gateway, over
/// `transport`, and measures its memory and the probe's latency (HTTP/1.1) before and during.
pub(super) async fn measure(
    gateway: &Gateway,
    secrets: &Secrets,
    polls: usize,
    transport: PollTransport,
) -> Result<LongPollFigures, String> {
    let api_key = secrets.api_key.key.clone();
    let endpoint = gateway_endpoint(gateway, secrets);
    let probe_queue = sqs_endpoint::queue_url(&endpoint, "probe").await?;
    sqs_endpoint::send(&endpoint, &probe_queue, &"p".repeat(256), 10, 1).await?;
    let probe_http = http_client()?;
    let probe_url = receive_url(&gateway.base, "probe");
    let far = Instant::now() + Duration::from_secs(3600);
    probe(&probe_http, &probe_url, &api_key, 200, far).await?;
    eprintln!("bench: long polls: probe alone");
    let probe_before = probe(&probe_http, &probe_url, &api_key, PROBES, far).await?;
    let resident_before = gateway.resident_bytes()?;

    eprintln!(
        "bench: long polls: opening {polls} polls over {}",
        transport.name()
    );
    let polls_http = poll_clients(transport, polls)?;
    let poll_url = receive_url(&gateway.base, "polls");
    let poll_body = format!(r#"{{"maxMessages":10,"waitSeconds":{POLL_WAIT_SECONDS}}}"#);
    let opened = Instant::now();
    // The first polls end 20 s after they began: measure before that.
    let window_ends = opened + Duration::from_secs(POLL_WAIT_SECONDS - 2);
    let mut waiting = JoinSet::new();
    let scrape_http = http_client()?;
    let mut waiting_peak = 0;
    for group in 0..polls.div_ceil(OPENING_GROUP) {
        for poll in (group * OPENING_GROUP)..polls.min((group + 1) * OPENING_GROUP) {
            let (http, url, key, body) = (
                polls_http[poll * polls_http.len() / polls].clone(),
                poll_url.clone(),
                api_key.clone(),
                poll_body.clone(),
            );
            waiting.spawn(async move { receive(&http, &url, &key, &body).await });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut opened_in = opened.elapsed();
    while Instant::now() < window_ends - Duration::from_secs(6) {
        let now_waiting = waiting_polls(&scrape_http, &gateway.base)
            .await
            .unwrap_or(0);
        if now_waiting > waiting_peak {
            waiting_peak = now_waiting;
            opened_in = opened.elapsed();
        }
        if now_waiting >= polls as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let first_read = gateway.resident_bytes()?;
    eprintln!("bench: long polls: {waiting_peak} waiting; probe meanwhile");
    let probe_during = probe(&probe_http, &probe_url, &api_key, PROBES, window_ends).await?;
    let resident_during = first_read.max(gateway.resident_bytes()?);
    if let Some(now_waiting) = waiting_polls(&scrape_http, &gateway.base).await {
        waiting_peak = waiting_peak.max(now_waiting);
    }

    let (mut answered_empty, mut failed) = (0, 0);
    while let Some(outcome) = waiting.join_next().await {
        match outcome {
            Ok(Ok((_, handles))) if handles.is_empty() => answered_empty += 1,
            _ => failed += 1,
        }
    }
    Ok(LongPollFigures {
        transport,
        polls,
        waiting_peak,
        opened_in,
        resident_before,
        resident_during,
        probe_before,
        probe_during,
        answered_empty,
        failed,
    })
}
