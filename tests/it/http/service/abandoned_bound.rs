//! The bound on work that outlives its request (M1): receives whose clients went away stop
//! counting as waiting long polls, and past the bound of abandoned backend receives still running
//! (a backend that waits them out, as SQS does), new receives look once instead of long-polling.

use crate::harness::{GatewayBuilder, Kind, sample, scrape};
use crate::inprocess::fake::FakeBackend;
use serde_json::json;
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::SkewClock;
use sqs_gateway::core::model::QueueSettings;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Starts `count` long polls of `wait` seconds whose client gives up after 1 s.
async fn abandon(gw: &crate::harness::TestGateway, count: usize, wait: u32) {
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(1000))
        .build()
        .unwrap();
    let mut polls = tokio::task::JoinSet::new();
    for _ in 0..count {
        let request = impatient
            .post(gw.receive_url("orders"))
            .bearer_auth(&gw.key)
            .json(&json!({ "maxMessages": 1, "waitSeconds": wait }))
            .send();
        polls.spawn(request);
    }
    while let Some(result) = polls.join_next().await {
        assert!(result.unwrap().is_err(), "the client gave up first");
    }
}

#[tokio::test]
async fn abandoned_long_polls_stop_waiting_on_the_embedded_engine() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(crate::harness::QueueSpec::standard("orders"))
        .config("[metrics]\nsample_seconds = 1")
        .start()
        .await;
    abandon(&gw, 50, 20).await;
    let mut text = String::new();
    for _ in 0..50 {
        text = scrape(&gw).await;
        if sample(&text, "sqsgw_long_polls_waiting") == Some(0.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        sample(&text, "sqsgw_long_polls_waiting"),
        Some(0.0),
        "{text}"
    );
    gw.stop().await;
}

#[tokio::test]
async fn past_the_bound_of_abandoned_receives_new_ones_look_once() {
    let engine = EmbeddedBackend::in_memory(Arc::new(SkewClock::default()));
    engine
        .create_queue("orders", &QueueSettings::default())
        .await
        .unwrap();
    let backend: Arc<dyn Backend> = Arc::new(FakeBackend::new(engine).waits_like_sqs());
    let gw = GatewayBuilder::new(Kind::Embedded)
        .with_backend(backend, &["orders"])
        .config("[server]\nmax_abandoned_receives = 20\n")
        .start()
        .await;
    // More backend receives left running for clients that went away (each waits 20 s) than the
    // bound of 20.
    abandon(&gw, 30, 20).await;
    let started = Instant::now();
    let answer = gw
        .receive("orders", json!({ "maxMessages": 1, "waitSeconds": 20 }))
        .await;
    assert_eq!(answer.status, reqwest::StatusCode::OK, "{}", answer.body);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "looked once instead of waiting 20 s: {:?}",
        started.elapsed()
    );
    let text = scrape(&gw).await;
    assert!(
        sample(
            &text,
            r#"sqsgw_abandoned_receives_total{outcome="bound_short_poll"}"#
        )
        .is_some_and(|count| count >= 1.0),
        "{text}"
    );
    gw.stop().await;
}
