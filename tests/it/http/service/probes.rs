//! The service around the APIs: probes, unknown routes, graceful shutdown.

use crate::harness::answer_of;
use crate::harness::*;
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn health_and_readiness_answer_when_the_backend_is_up(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let health = answer_of(&gw, "/healthz").await;
    assert_eq!(
        (health.status, health.body),
        (StatusCode::OK, json!({ "status": "ok" }))
    );
    let ready = answer_of(&gw, "/readyz").await;
    assert_eq!(
        (ready.status, ready.body),
        (StatusCode::OK, json!({ "status": "ready" }))
    );
    gw.stop().await;
}

async fn unknown_routes_and_methods_answer_json(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let missing = answer_of(&gw, "/v2/nothing").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.body["error"], "not_found");
    let wrong_method = answer_of(&gw, "/v1/receipts/ack").await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong_method.body["error"], "method_not_allowed");
    gw.stop().await;
}

async fn shutdown_ends_waiting_long_polls_with_an_empty_answer(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let request = gw
        .http
        .post(gw.receive_url("orders"))
        .bearer_auth(&gw.key)
        .json(&json!({ "waitSeconds": 20 }))
        .send();
    let waiting = tokio::spawn(request);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished());
    let started = std::time::Instant::now();
    gw.shutdown.cancel();
    let response = waiting.await.unwrap().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered at once"
    );
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.json::<serde_json::Value>().await.unwrap(),
        json!({ "messages": [] })
    );
    // SQS's long poll may run to its end (20 s) so what it gets is released; the embedded engine
    // ends its long polls at once.
    let limit = if kind == Kind::Embedded { 5 } else { 30 };
    tokio::time::timeout(Duration::from_secs(limit), gw.server)
        .await
        .expect("the server stops within the grace period")
        .unwrap()
        .unwrap();
}

/// Long polls of `queue` whose client gives up after 300 ms, all at once; answers when every
/// client has given up (the gateway learns of it asynchronously, so it waits a moment more).
async fn abandon_long_polls(gw: &TestGateway, queue: &str, count: usize) {
    let polls: Vec<_> = (0..count)
        .map(|_| {
            tokio::spawn(
                gw.http
                    .post(gw.receive_url(queue))
                    .bearer_auth(&gw.key)
                    .timeout(Duration::from_millis(300))
                    .json(&json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 600 }))
                    .send(),
            )
        })
        .collect();
    for poll in polls {
        assert!(poll.await.unwrap().is_err(), "the client timed out");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// Receives `queue` until a message comes (at most ten 1 s polls).
async fn receive_one(gw: &TestGateway, queue: &str) -> Vec<serde_json::Value> {
    for _ in 0..10 {
        let found = gw.receive_ok(queue, json!({ "waitSeconds": 1 })).await;
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

async fn a_receive_abandoned_by_its_client_spends_no_delivery_attempt(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    abandon_long_polls(&gw, "orders", 1).await;
    let id = gw.send("orders", "not lost").await;
    // The abandoned receive takes nothing (embedded), or what it took is handed to the next
    // receive under the same backend receipt (SQS): neither hidden for 600 s nor counted twice.
    let found = receive_one(&gw, "orders").await;
    assert_eq!(found.len(), 1, "the message was not hidden for 600 s");
    assert_eq!(found[0]["messageId"], id);
    assert_eq!(found[0]["receiveCount"], 1, "{found:?}");
    gw.stop().await;
}

/// A consumer already waiting when the message comes, beside a long poll whose client went away
/// (a stopping worker's): whichever of the two the backend hands the message to, the waiting
/// consumer gets it within its one receive, counted once.
async fn a_waiting_receive_gets_what_an_abandoned_one_took_meanwhile(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    abandon_long_polls(&gw, "orders", 1).await;
    let waiting = tokio::spawn({
        let request = gw
            .http
            .post(gw.receive_url("orders"))
            .bearer_auth(&gw.key)
            .json(&json!({ "waitSeconds": 3 }));
        async move {
            request
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
        }
    });
    // The consumer's poll is at the backend before the message is sent.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let id = gw.send("orders", "for whoever waits").await;
    let answer = waiting.await.unwrap().unwrap();
    let found = answer["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(found.len(), 1, "the waiting consumer got nothing: {answer}");
    assert_eq!(found[0]["messageId"], id);
    assert_eq!(found[0]["receiveCount"], 1, "{found:?}");
    gw.stop().await;
}

async fn abandoned_long_polls_alone_never_dead_letter_a_message(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders").dead_letter_to("orders-dlq", 2))
        .queue(QueueSpec::standard("orders-dlq"))
        .start()
        .await;
    abandon_long_polls(&gw, "orders", 6).await;
    let id = gw.send("orders", "first delivery").await;
    let found = receive_one(&gw, "orders").await;
    assert_eq!(found.len(), 1, "the message was not dead-lettered");
    assert_eq!(found[0]["messageId"], id);
    assert_eq!(found[0]["receiveCount"], 1, "{found:?}");
    let dead = gw
        .receive_ok("orders-dlq", json!({ "waitSeconds": 0 }))
        .await;
    assert!(dead.is_empty(), "{dead:?}");
    gw.stop().await;
}

/// The same through the SQS endpoint: an SDK long poll cancelled by its caller (as aiobotocore's
/// `task.cancel()` or a stopping worker does) leaves the next delivery's receive count at 1.
async fn an_sdk_long_poll_cancelled_by_its_caller_leaves_the_receive_count_alone(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let (client, url) = gw.sqs_queue("orders").await;
    for _ in 0..3 {
        let poll = client
            .receive_message()
            .queue_url(&url)
            .wait_time_seconds(5)
            .send();
        assert!(
            tokio::time::timeout(Duration::from_millis(300), poll)
                .await
                .is_err(),
            "the poll was still waiting when cancelled"
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    client
        .send_message()
        .queue_url(&url)
        .message_body("hello")
        .send()
        .await
        .unwrap();
    let mut received = Vec::new();
    for _ in 0..10 {
        received = client
            .receive_message()
            .queue_url(&url)
            .wait_time_seconds(1)
            .message_system_attribute_names(
                aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
            )
            .send()
            .await
            .unwrap()
            .messages
            .unwrap_or_default();
        if !received.is_empty() {
            break;
        }
    }
    assert_eq!(received.len(), 1, "the message came");
    let count = received[0]
        .attributes()
        .and_then(|attributes| {
            attributes.get(&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount)
        })
        .cloned();
    assert_eq!(count.as_deref(), Some("1"));
    gw.stop().await;
}

/// A TCP connection to LocalStack whose one request asked for keep-alive, its answer read whole
/// (and checked to keep the connection).
async fn kept_connection_to_localstack() -> tokio::net::TcpStream {
    let address = localstack_endpoint()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let request = format!(
        "GET /_localstack/health HTTP/1.1\r\nHost: {address}\r\nConnection: keep-alive\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer))
            .await
            .expect("LocalStack answers")
            .unwrap();
        assert!(
            read > 0,
            "LocalStack kept the connection through its answer"
        );
        answer.extend_from_slice(&buffer[..read]);
        let text = String::from_utf8_lossy(&answer).to_ascii_lowercase();
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        assert!(!text[..end].contains("connection: close"), "{text}");
        let length: usize = text[..end]
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map(|value| value.trim().parse().unwrap())
            .expect("a content-length");
        if answer.len() >= end + 4 + length {
            return stream;
        }
    }
}

/// The gateway keeps its connections to LocalStack open (`Connection: keep-alive`, which
/// LocalStack otherwise answers with `Connection: close`); LocalStack closes one after 5 idle
/// seconds, and the next call must take a new connection, not fail on the closed one.
#[tokio::test]
async fn calls_after_localstack_closed_an_idle_connection_still_succeed() {
    if !crate::needs!(LocalStack) {
        return;
    }
    let gw = GatewayBuilder::new(Kind::LocalStack)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let first = gw.send("orders", "before the idle close").await;
    let found = gw.receive_ok("orders", json!({ "waitSeconds": 1 })).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["messageId"], first);
    // A connection of our own, kept as the gateway's are, shows that LocalStack closes them:
    // it is open after its answer and closed by LocalStack after the idle wait.
    let mut own = kept_connection_to_localstack().await;
    // Past hypercorn's keep-alive timeout (5 s), so its end of the pooled connection is closed.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let mut rest = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(1), own.read(&mut rest)).await;
    assert!(
        matches!(read, Ok(Ok(0))),
        "LocalStack closed the idle kept connection: {read:?}"
    );
    let answer = gw.ack(&[found[0]["receiptHandle"].as_str().unwrap()]).await;
    assert_eq!(
        (answer.status, answer.body),
        (StatusCode::OK, json!({ "results": [ { "ok": true } ] }))
    );
    let second = gw.send("orders", "after the idle close").await;
    let found = gw.receive_ok("orders", json!({ "waitSeconds": 1 })).await;
    assert_eq!(found.len(), 1, "only the second message is left");
    assert_eq!(found[0]["messageId"], second);
    gw.stop().await;
}

crate::on_both_backends!(
    health_and_readiness_answer_when_the_backend_is_up,
    unknown_routes_and_methods_answer_json,
    shutdown_ends_waiting_long_polls_with_an_empty_answer,
    a_receive_abandoned_by_its_client_spends_no_delivery_attempt,
    a_waiting_receive_gets_what_an_abandoned_one_took_meanwhile,
    abandoned_long_polls_alone_never_dead_letter_a_message,
    an_sdk_long_poll_cancelled_by_its_caller_leaves_the_receive_count_alone,
);
