//! The push family: a push subscription's deliveries a second to a local receiver that answers at
//! once, against the pull path (ezgh receive+ack, 8 clients) on the same gateway in the same run,
//! and the gateway's time per post. The queue is filled by a first gateway and pushed by a second
//! on the same durable store, so the rate counts deliveries only (the receiver's first to last
//! post), not the sends.

use super::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::time::Instant;

/// The pushed queue.
const PUSHED: &str = "pushed";
/// Deliveries the subscription holds at once (its most), against 8 pull clients of 10 each.
const PUSH_CONCURRENCY: u32 = 80;
/// Pull clients.
const PULL_CLIENTS: usize = 8;

/// What the push family measured.
pub(crate) struct PushFigures {
    messages: usize,
    pushed_per_second: f64,
    pulled_per_second: f64,
    /// The gateway's mean time per post (its duration histogram's sum over its count).
    mean_post: Option<Duration>,
    /// Signed posts a second from a bare client (no queue behind it) to the same receiver, as
    /// many at once: what posting alone costs on this machine, the push path's ceiling.
    bare_posts_per_second: f64,
}

/// The receiver: counts posts, notes the first and the last.
#[derive(Default)]
struct Receiver {
    posts: AtomicUsize,
    first: std::sync::OnceLock<Instant>,
    last: std::sync::Mutex<Option<Instant>>,
}

async fn receive(
    axum::extract::State(receiver): axum::extract::State<Arc<Receiver>>,
) -> &'static str {
    let now = Instant::now();
    let _ = receiver.first.set(now);
    *receiver
        .last
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(now);
    receiver.posts.fetch_add(1, Ordering::Relaxed);
    ""
}

pub(crate) async fn push_family(
    options: &BenchOptions,
    work: &Path,
    secrets: &Secrets,
) -> Result<PushFigures, String> {
    let receiver = Arc::new(Receiver::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("push receiver: {e}"))?;
    let address = listener
        .local_addr()
        .map_err(|e| format!("push receiver: {e}"))?;
    let router = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(Arc::clone(&receiver));
    tokio::spawn(async move { axum::serve(listener, router).await });
    let backend = GatewayBackend::Durable(work.join("push-durable"));
    let queue = format!("\n[queues.{PUSHED}]\n");
    let body = "x".repeat(options.body_bytes);
    {
        let filler = Gateway::start_with(
            "gateway-push-fill",
            &backend,
            secrets,
            work,
            Duration::from_secs(60),
            &queue,
        )
        .await?;
        let endpoint = gateway_endpoint(&filler, secrets);
        let url = sqs_endpoint::queue_url(&endpoint, PUSHED).await?;
        eprintln!("bench: push: filling the pushed queue");
        sqs_endpoint::send(&endpoint, &url, &body, options.messages, 8).await?;
    }
    let secret = format!("whsec_{}", base64_of(&[7u8; 32]));
    let subscription = format!(
        "{queue}\n[push]\nallow_private_networks = true\n\n[[push.subscriptions]]\nname = \"bench\"\n\
         queue = \"{PUSHED}\"\nurl = \"http://{address}/hook\"\nsecret = \"{secret}\"\n\
         max_concurrency = {PUSH_CONCURRENCY}\n"
    );
    eprintln!("bench: push: a second gateway on the store pushes it");
    let gateway = Gateway::start_with(
        "gateway-push",
        &backend,
        secrets,
        work,
        Duration::from_secs(60),
        &subscription,
    )
    .await?;
    let total = options.messages.div_ceil(BATCH) * BATCH;
    let waited = Instant::now();
    while receiver.posts.load(Ordering::Relaxed) < total {
        if waited.elapsed() > Duration::from_secs(600) {
            return Err(format!(
                "push: {} of {total} messages posted in 10 minutes",
                receiver.posts.load(Ordering::Relaxed)
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let first = *receiver.first.get().ok_or("push: no post")?;
    let last = receiver
        .last
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .ok_or("push: no post")?;
    let pushed_per_second = total as f64 / (last - first).as_secs_f64().max(1e-9);
    let scrape = gateway.scrape().await?;
    let mean_post = match (
        process::metric_sum(&scrape, "sqsgw_push_delivery_duration_seconds_sum"),
        process::metric_sum(&scrape, "sqsgw_push_delivery_duration_seconds_count"),
    ) {
        (Some(sum), Some(count)) if count > 0.0 => Some(Duration::from_secs_f64(sum / count)),
        _ => None,
    };
    eprintln!("bench: push: bare signed posts to the same receiver (the ceiling)");
    let bare_posts_per_second = bare_posts(&format!("http://{address}/hook"), &body, total).await?;
    eprintln!("bench: push: the pull path on the same gateway");
    let endpoint = gateway_endpoint(&gateway, secrets);
    let url = sqs_endpoint::queue_url(&endpoint, "ezgh").await?;
    sqs_endpoint::send(&endpoint, &url, &body, options.messages, 8).await?;
    let pulled = ezgh::receive_and_ack(
        &gateway.base,
        &secrets.api_key.key,
        "ezgh",
        options.messages,
        PULL_CLIENTS,
    )
    .await?;
    Ok(PushFigures {
        messages: total,
        pushed_per_second,
        pulled_per_second: pulled.messages_per_second(),
        mean_post,
        bare_posts_per_second,
    })
}

/// Posts `total` wrapped, signed bodies of `body` to `url` from [`PUSH_CONCURRENCY`] tasks over
/// one client, as the gateway posts them (HTTP/1.1, kept-alive connections, the Standard
/// Webhooks headers, an HMAC per post), with no queue behind them: posts a second.
async fn bare_posts(url: &str, body: &str, total: usize) -> Result<f64, String> {
    use hmac::Mac as _;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .map_err(|e| format!("bare posts: {e}"))?;
    let wrapped = serde_json::json!({
        "id": "00000000-0000-4000-8000-000000000000",
        "queue": PUSHED,
        "body": body,
        "attributes": {},
        "receive_count": 1,
        "sent_at": "2026-01-01T00:00:00Z",
        "group_id": null,
    })
    .to_string();
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..PUSH_CONCURRENCY {
        let (client, url, wrapped, next) = (
            client.clone(),
            url.to_owned(),
            wrapped.clone(),
            Arc::clone(&next),
        );
        tasks.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&[7u8; 32])
                    .map_err(|e| format!("bare posts: {e}"))?;
                mac.update(b"id.1.");
                mac.update(wrapped.as_bytes());
                let signature = format!("v1,{}", base64_of(&mac.finalize().into_bytes()));
                let response = client
                    .post(&url)
                    .header("webhook-id", "id")
                    .header("webhook-timestamp", "1")
                    .header("webhook-signature", signature)
                    .header("content-type", "application/json")
                    .body(wrapped.clone())
                    .send()
                    .await
                    .map_err(|e| format!("bare posts: {e}"))?;
                if !response.status().is_success() {
                    return Err(format!("bare posts: {}", response.status()));
                }
            }
            Ok::<(), String>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|e| format!("bare posts: {e}"))??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64().max(1e-9))
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(crate) fn push_table(figures: &PushFigures) -> Table {
    let mut table = Table::new(
        format!(
            "Push: {} messages on the durable engine, posted to a receiver on loopback that answers 200 at once ({PUSH_CONCURRENCY} in flight), against ezgh receive(10)+ack(10) with {PULL_CLIENTS} clients on the same gateway",
            count(figures.messages as f64)
        ),
        &[
            "path",
            "msg/s",
            "of the pull path's",
            "of bare posts'",
            "mean post ms",
        ],
        1,
    );
    table.row(vec![
        "push subscription".into(),
        count(figures.pushed_per_second),
        times(figures.pushed_per_second / figures.pulled_per_second),
        times(figures.pushed_per_second / figures.bare_posts_per_second),
        ms(figures.mean_post),
    ]);
    table.row(vec![
        "bare signed posts, no queue (the ceiling)".into(),
        count(figures.bare_posts_per_second),
        times(figures.bare_posts_per_second / figures.pulled_per_second),
        "1x".into(),
        "-".into(),
    ]);
    table.row(vec![
        "pull: ezgh receive+ack".into(),
        count(figures.pulled_per_second),
        "1x".into(),
        "-".into(),
        "-".into(),
    ]);
    table
}

pub(crate) fn push_checks(figures: &PushFigures) -> Vec<Check> {
    let share = figures.pushed_per_second / figures.pulled_per_second;
    vec![Check {
        target:
            "push deliveries/s at least 0.8x the pull path's receive+ack (same gateway, same run)"
                .into(),
        figure: format!(
            "{} (bare posts alone: {})",
            times(share),
            times(figures.bare_posts_per_second / figures.pulled_per_second)
        ),
        verdict: Verdict::of(share >= 0.8),
    }]
}
