//! Where a pause is kept: the next start over the same directory keeps it, replicas sharing a
//! Redis store follow each other's pauses and resumes, and a deleted queue's pause goes with it.

use super::support::*;
use crate::harness::*;
use reqwest::{Method, StatusCode};
use std::time::{Duration, Instant};

/// The next start of the gateway over the same directory finds the queue still paused.
async fn a_pause_outlives_a_restart(kind: Kind) {
    let keys = Keys::new();
    let dir = tempfile::tempdir().unwrap();
    let gw = builder(kind, &keys).durable(dir.path()).start().await;
    let id = queue_id(&gw, &keys.admin, "held").await;
    let since = set_paused(&gw, &keys.admin, &id, true).await["paused_since"].clone();
    let next = builder(kind, &keys).durable(dir.path());
    let next = match kind {
        Kind::Embedded => next.receipt_key(&gw.receipt_key),
        _ => next.replica_of(&gw),
    };
    gw.stop().await;
    let gw = next.start().await;
    gw.send("held", "after the restart").await;
    let shown = call(
        &gw,
        Method::GET,
        &format!("/v1/queues/{id}"),
        &keys.admin,
        None,
    )
    .await;
    assert_eq!(
        shown.body["result"]["delivery_paused"], true,
        "{}",
        shown.body
    );
    assert_eq!(shown.body["result"]["paused_since"], since);
    assert!(receive(&gw, &keys.admin, &id, 1).await.is_empty());
    set_paused(&gw, &keys.admin, &id, false).await;
    assert_eq!(receive(&gw, &keys.admin, &id, 5).await.len(), 1);
    gw.stop().await;
}

#[tokio::test]
async fn a_pause_outlives_a_restart_on_embedded() {
    a_pause_outlives_a_restart(Kind::Embedded).await;
}

#[tokio::test]
async fn a_pause_outlives_a_restart_on_localstack() {
    if !crate::needs!(LocalStack) {
        return;
    }
    a_pause_outlives_a_restart(Kind::LocalStack).await;
}

/// A pause made on one replica holds on the other within the store's follow interval, and so
/// does its end.
async fn replicas_follow_each_other_s_pauses(kind: Kind) {
    let keys = Keys::new();
    let one = builder(kind, &keys).start().await;
    let two = GatewayBuilder::new(kind)
        .sharing_state_with(&one)
        .queue(QueueSpec::standard("held"))
        .config(&keys.toml)
        .start()
        .await;
    let id = queue_id(&one, &keys.admin, "held").await;
    set_paused(&one, &keys.admin, &id, true).await;
    assert!(
        follows(&two, &keys, &id, true).await,
        "the second replica follows the pause"
    );
    two.send("held", "while paused").await;
    assert!(receive(&two, &keys.admin, &id, 1).await.is_empty());
    set_paused(&two, &keys.admin, &id, false).await;
    assert!(
        follows(&one, &keys, &id, false).await,
        "the first replica follows the resume"
    );
    assert_eq!(receive(&one, &keys.admin, &id, 5).await.len(), 1);
    let trail = audit(&one, &keys.admin, &id).await;
    assert_eq!(trail.len(), 2, "{trail:?}");
}

/// Whether `gw` shows the queue `id` paused (`paused`) within 15 seconds.
async fn follows(gw: &TestGateway, keys: &Keys, id: &str, paused: bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let shown = call(
            gw,
            Method::GET,
            &format!("/v1/queues/{id}"),
            &keys.admin,
            None,
        )
        .await;
        if shown.body["result"]["delivery_paused"] == paused {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

crate::on_shared_stores!(replicas_follow_each_other_s_pauses);

/// A queue deleted while paused takes its pause along: the store keeps none for its name.
pub(super) async fn a_deleted_queue_s_pause_goes_with_it(kind: Kind) {
    let keys = Keys::new();
    let gw = builder(kind, &keys).start().await;
    let made = call(
        &gw,
        Method::POST,
        "/v1/queues",
        &keys.admin,
        Some(r#"{"name": "brief"}"#),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let id = made.body["result"]["id"].as_str().unwrap().to_owned();
    let queue = gw.backend.list_queues("sqsgw_bq_brief_").await.unwrap()[0].clone();
    set_paused(&gw, &keys.admin, &id, true).await;
    assert!(gw.gateway.delivery_paused_since(&queue).is_some());
    let deleted = call(
        &gw,
        Method::DELETE,
        &format!("/v1/queues/{id}"),
        &keys.admin,
        None,
    )
    .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.body);
    // The board is what the store holds after each change.
    assert!(
        gw.gateway.delivery_paused_since(&queue).is_none(),
        "{queue}"
    );
}
