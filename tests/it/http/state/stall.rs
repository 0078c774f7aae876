//! A state store that stalls (a paused server: commands wait in its socket and run once it goes
//! on), through the real HTTP server: an acknowledgement or a visibility change answered 503
//! "changing nothing" changed nothing, although its claim reached the store after the answer. The
//! retry once the store is back acts, and the message is not delivered again. In every dialect:
//! the ezgh receipts, the SQS endpoint (an SDK client without retries, so each 503 is seen), the
//! basaltic messages routes and the sombus pull API.

use super::own_redis::{OwnRedis, OwnStore};
use crate::harness::{GatewayBuilder, Kind, QueueSpec, TestGateway, handle_of, ok, results};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::config::retry::RetryConfig;
use reqwest::StatusCode;
use serde_json::json;
use std::future::Future;
use std::time::Duration;

/// How long one store call may take before the gateway answers 503.
const STORE_TIMEOUT_MS: u64 = 300;
/// How long the store stays paused: past the gateway's timeout, so each request answers 503
/// while its command still waits to run.
const STALL: Duration = Duration::from_millis(1_200);
/// The visibility timeout of each receive: a message not acknowledged would be back after it.
const VISIBLE_AGAIN_AFTER: Duration = Duration::from_secs(2);

/// A gateway over the embedded engine with its state in `redis`.
async fn gateway(redis: &OwnRedis) -> TestGateway {
    redis.wait_until_answering().await;
    GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config(&format!(
            "{}timeout_ms = {STORE_TIMEOUT_MS}\n",
            redis.config()
        ))
        .start()
        .await
}

/// Runs `request` with the store paused, and lets it go on once the request has answered and
/// the stall has lasted [`STALL`].
async fn while_stalled<T>(redis: &OwnRedis, request: impl Future<Output = T>) -> T {
    redis.stall();
    let started = tokio::time::Instant::now();
    let answer = request.await;
    tokio::time::sleep_until(started + STALL).await;
    redis.go_on();
    answer
}

/// One message sent and received through ezgh with a short visibility timeout; its handle.
async fn received(gw: &TestGateway, body: &str) -> String {
    gw.send("orders", body).await;
    let messages = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 1, "visibilityTimeoutSeconds": VISIBLE_AGAIN_AFTER.as_secs() }),
        )
        .await;
    assert_eq!(messages.len(), 1);
    handle_of(&messages[0]).to_owned()
}

/// After the message's visibility timeout: nobody receives it again.
async fn not_delivered_again(gw: &TestGateway) {
    tokio::time::sleep(VISIBLE_AGAIN_AFTER + Duration::from_millis(500)).await;
    let again = gw.receive_ok("orders", json!({ "waitSeconds": 1 })).await;
    assert!(again.is_empty(), "delivered again: {again:?}");
}

#[tokio::test]
async fn an_ezgh_ack_during_a_store_stall_changes_nothing_and_its_retry_acknowledges() {
    if !crate::needs!(Redis) {
        return;
    }
    let redis = OwnRedis::start(OwnRedis::free_port());
    let gw = gateway(&redis).await;
    let handle = received(&gw, "only-once").await;
    let first = while_stalled(&redis, gw.ack(&[&handle])).await;
    assert_eq!(
        first.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        first.body
    );
    let retry = gw.ack(&[&handle]).await;
    assert_eq!(results(&retry), vec![ok()], "the retry acknowledges");
    assert_eq!(gw.backend_depth("orders").await, 0, "deleted");
    not_delivered_again(&gw).await;
    gw.stop().await;
}

#[tokio::test]
async fn an_ezgh_visibility_change_during_a_store_stall_changes_nothing_and_its_retry_applies() {
    if !crate::needs!(Redis) {
        return;
    }
    let redis = OwnRedis::start(OwnRedis::free_port());
    let gw = gateway(&redis).await;
    let handle = received(&gw, "kept in flight").await;
    let first = while_stalled(&redis, gw.visibility(&[(&handle, 60)])).await;
    assert_eq!(
        first.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        first.body
    );
    let retry = gw.visibility(&[(&handle, 60)]).await;
    assert_eq!(results(&retry), vec![ok()], "the retry applies");
    not_delivered_again(&gw).await;
    let ack = gw.ack(&[&handle]).await;
    assert_eq!(results(&ack), vec![ok()], "still the current delivery");
    gw.stop().await;
}

/// The test key's SQS client without retries, and the queue's URL.
async fn sqs_without_retries(gw: &TestGateway) -> (Client, String) {
    let (client, url) = gw.sqs_queue("orders").await;
    let config = client
        .config()
        .to_builder()
        .retry_config(RetryConfig::disabled())
        .build();
    (Client::from_conf(config), url)
}

/// One message sent and received through the SQS endpoint; its receipt handle.
async fn received_over_sqs(sqs: &Client, url: &str, body: &str) -> String {
    sqs.send_message()
        .queue_url(url)
        .message_body(body)
        .send()
        .await
        .unwrap();
    let answer = sqs
        .receive_message()
        .queue_url(url)
        .wait_time_seconds(1)
        .visibility_timeout(VISIBLE_AGAIN_AFTER.as_secs() as i32)
        .send()
        .await
        .unwrap();
    let messages = answer.messages();
    assert_eq!(messages.len(), 1);
    messages[0].receipt_handle().unwrap().to_owned()
}

/// The HTTP status an SDK call failed with.
fn status_of<E>(
    error: &aws_sdk_sqs::error::SdkError<E, aws_sdk_sqs::config::http::HttpResponse>,
) -> Option<u16> {
    error.raw_response().map(|raw| raw.status().as_u16())
}

#[tokio::test]
async fn an_sqs_delete_during_a_store_stall_changes_nothing_and_its_retry_deletes() {
    if !crate::needs!(Redis) {
        return;
    }
    let redis = OwnRedis::start(OwnRedis::free_port());
    let gw = gateway(&redis).await;
    let (sqs, url) = sqs_without_retries(&gw).await;
    let handle = received_over_sqs(&sqs, &url, "only-once").await;
    let first = while_stalled(
        &redis,
        sqs.delete_message()
            .queue_url(&url)
            .receipt_handle(&handle)
            .send(),
    )
    .await;
    let error = first.expect_err("503 while the store is paused");
    assert_eq!(status_of(&error), Some(503), "{error:?}");
    sqs.delete_message()
        .queue_url(&url)
        .receipt_handle(&handle)
        .send()
        .await
        .expect("the retry deletes");
    assert_eq!(gw.backend_depth("orders").await, 0, "deleted");
    not_delivered_again(&gw).await;
    gw.stop().await;
}

#[tokio::test]
async fn an_sqs_visibility_change_during_a_store_stall_changes_nothing_and_its_retry_applies() {
    if !crate::needs!(Redis) {
        return;
    }
    let redis = OwnRedis::start(OwnRedis::free_port());
    let gw = gateway(&redis).await;
    let (sqs, url) = sqs_without_retries(&gw).await;
    let handle = received_over_sqs(&sqs, &url, "kept in flight").await;
    let change = || {
        sqs.change_message_visibility()
            .queue_url(&url)
            .receipt_handle(&handle)
            .visibility_timeout(60)
            .send()
    };
    let first = while_stalled(&redis, change()).await;
    let error = first.expect_err("503 while the store is paused");
    assert_eq!(status_of(&error), Some(503), "{error:?}");
    change().await.expect("the retry applies");
    not_delivered_again(&gw).await;
    sqs.delete_message()
        .queue_url(&url)
        .receipt_handle(&handle)
        .send()
        .await
        .expect("still the current delivery");
    gw.stop().await;
}

/// A gateway over the embedded engine with its state in `redis`, `orders` a basaltic queue too:
/// the gateway, a basaltic key with every permission, and `orders`' basaltic path.
async fn basaltic_gateway(redis: &OwnRedis) -> (TestGateway, String, String) {
    redis.wait_until_answering().await;
    let key = sqs_gateway::credentials::api_keys::generate_key();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config(&format!(
            "{}timeout_ms = {STORE_TIMEOUT_MS}\n\n[basaltic]\nall_queues = true\n\n[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"*\"] }}\n",
            redis.config(),
            key.id,
            key.hash
        ))
        .start()
        .await;
    let path = format!(
        "{}/v1/queues/{}",
        gw.base,
        sqs_gateway::core::alias::derived_basaltic_id("orders")
    );
    (gw, key.key, path)
}

/// One message sent and received through basaltic; its receipt handle.
async fn received_over_basaltic(gw: &TestGateway, key: &str, path: &str, body: &str) -> String {
    let sent = gw
        .http
        .post(format!("{path}/messages"))
        .bearer_auth(key)
        .json(&json!({ "body": body }))
        .send()
        .await
        .unwrap();
    assert!(sent.status().is_success(), "{:?}", sent.text().await);
    let received: serde_json::Value = gw
        .http
        .post(format!("{path}/messages/receive"))
        .bearer_auth(key)
        .json(&json!({ "wait_time_seconds": 1, "visibility_timeout_seconds": VISIBLE_AGAIN_AFTER.as_secs() }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    received["messages"][0]["receipt_handle"]
        .as_str()
        .unwrap_or_else(|| panic!("{received}"))
        .to_owned()
}

#[tokio::test]
async fn a_basaltic_delete_and_visibility_change_during_a_store_stall_change_nothing_and_their_retries_act()
 {
    if !crate::needs!(Redis) {
        return;
    }
    let redis = OwnRedis::start(OwnRedis::free_port());
    let (gw, key, path) = basaltic_gateway(&redis).await;
    let handle = received_over_basaltic(&gw, &key, &path, "kept in flight").await;
    let change = || {
        gw.http
            .post(format!("{path}/messages/visibility"))
            .bearer_auth(&key)
            .json(&json!({ "receipt_handle": handle, "visibility_timeout_seconds": 60 }))
            .send()
    };
    let first = while_stalled(&redis, change()).await.unwrap();
    assert_eq!(first.status(), StatusCode::SERVICE_UNAVAILABLE);
    let retry = change().await.unwrap();
    assert!(
        retry.status().is_success(),
        "the retry applies: {:?}",
        retry.text().await
    );
    not_delivered_again(&gw).await;
    let encoded: String = form_urlencoded::byte_serialize(handle.as_bytes()).collect();
    let delete = || {
        gw.http
            .delete(format!("{path}/messages?receipt_handle={encoded}"))
            .bearer_auth(&key)
            .send()
    };
    let first = while_stalled(&redis, delete()).await.unwrap();
    assert_eq!(first.status(), StatusCode::SERVICE_UNAVAILABLE);
    let retry = delete().await.unwrap();
    assert!(
        retry.status().is_success(),
        "the retry deletes: {:?}",
        retry.text().await
    );
    assert_eq!(gw.backend_depth("orders").await, 0, "deleted");
    gw.stop().await;
}

#[tokio::test]
async fn a_sombus_ack_during_a_store_stall_changes_nothing_and_its_retry_acknowledges() {
    if !crate::needs!(Redis) {
        return;
    }
    let redis = OwnRedis::start(OwnRedis::free_port());
    redis.wait_until_answering().await;
    let bus = crate::http::sombus::support::Bus::start_on(
        GatewayBuilder::new(Kind::Embedded).config(&format!(
            "{}timeout_ms = {STORE_TIMEOUT_MS}\n",
            redis.config()
        )),
        "",
    )
    .await;
    let created = bus.create(json!({})).await;
    let (tenant, client) = (bus.workspace.clone(), created.client_id.clone());
    let token = crate::http::sombus::support::token(&bus.gw, &client, &created.secret).await;
    bus.publish(&created.queue, "story", json!({ "n": 1 }))
        .await;
    let query = format!("max=1&wait=1&visibility={}", VISIBLE_AGAIN_AFTER.as_secs());
    let received =
        crate::http::sombus::support::receive(&bus.gw, &token, &tenant, &client, &query).await;
    let handle = received.body["messages"][0]["receipt_handle"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", received.body))
        .to_owned();
    let ack = || {
        crate::http::sombus::support::post(
            &bus.gw,
            &token,
            &tenant,
            &client,
            "ack",
            json!({ "receipt_handles": [handle] }),
        )
    };
    let first = while_stalled(&redis, ack()).await;
    assert_eq!(
        first.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        first.body
    );
    let retry = ack().await;
    assert_eq!(retry.status, StatusCode::OK, "{}", retry.body);
    assert_eq!(retry.body["acked"], json!([handle]), "{}", retry.body);
    tokio::time::sleep(VISIBLE_AGAIN_AFTER + Duration::from_millis(500)).await;
    let again =
        crate::http::sombus::support::receive(&bus.gw, &token, &tenant, &client, "max=10&wait=1")
            .await;
    assert_eq!(
        again.body["messages"],
        json!([]),
        "delivered again: {}",
        again.body
    );
    bus.gw.stop().await;
}
