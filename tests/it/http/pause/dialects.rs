//! While `held` is paused, each dialect's receive answers no message after its long poll, push
//! posts nothing and sends succeed; a receive waiting through the pause gets the messages as soon
//! as it ends. Only `manage_queues` pauses, and each change is in the queue's audit trail.

use super::support::*;
use crate::harness::Kind;
use crate::http::push::receiver::{Receiver, secret};
use crate::http::sombus::support::{Bus, receive as sombus_receive, token};
use reqwest::{Method, StatusCode};
use serde_json::json;
use sqs_gateway::core::access::{Action, Caller, Grants, Principal};
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn every_dialect_and_push_get_nothing_while_paused(kind: Kind) {
    let keys = Keys::new();
    let receiver = Receiver::start().await;
    let gw = builder(kind, &keys)
        .config(&format!(
            "[push]\nallow_private_networks = true\n\n[[push.subscriptions]]\nname = \"hook\"\n\
             queue = \"held\"\nurl = \"{}\"\nsecret = \"{}\"\n",
            receiver.url,
            secret(3)
        ))
        .start()
        .await;
    let id = queue_id(&gw, &keys.admin, "held").await;

    // Only a key that manages the queue pauses it.
    let refused = call(
        &gw,
        Method::POST,
        &format!("/v1/queues/{id}/pause"),
        &keys.reader,
        None,
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], "permission_denied");
    let unknown = call(
        &gw,
        Method::POST,
        "/v1/queues/00000000-0000-4000-8000-000000000000/pause",
        &keys.admin,
        None,
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.body);

    let paused = set_paused(&gw, &keys.admin, &id, true).await;
    assert_eq!(paused["delivery_paused"], true, "{paused}");
    let since = paused["paused_since"].as_str().unwrap().to_owned();
    // Pausing again keeps the first pause, and adds no line to the trail.
    let again = set_paused(&gw, &keys.admin, &id, true).await;
    assert_eq!(again["paused_since"], since.as_str());

    // Sends go on, through basaltic and the SQS endpoint.
    let sent = call(
        &gw,
        Method::POST,
        &format!("/v1/queues/{id}/messages"),
        &keys.reader,
        Some(r#"{"body": "one"}"#),
    )
    .await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.body);
    let (sqs, url) = gw.sqs_queue("held").await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("two")
        .send()
        .await
        .unwrap();

    // Every receive answers empty once its long poll is waited out.
    let started = Instant::now();
    assert!(receive(&gw, &keys.reader, &id, 1).await.is_empty());
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "the wait is kept"
    );
    assert!(
        gw.receive_ok("held", json!({ "waitSeconds": 1 }))
            .await
            .is_empty()
    );
    let over_sqs = sqs
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    assert!(over_sqs.messages().is_empty(), "{over_sqs:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        receiver.hits().is_empty(),
        "push posts nothing while paused"
    );
    assert!(gw.backend_depth("held").await >= 2, "nothing was taken");

    // Push posts what was sent once the pause ends.
    let resumed = set_paused(&gw, &keys.admin, &id, false).await;
    assert_eq!(resumed["delivery_paused"], false, "{resumed}");
    assert!(resumed["paused_since"].is_null(), "{resumed}");
    receiver.wait_for(2, Duration::from_secs(30)).await;

    // The trail: the pause and the resume, with who, and no subscription.
    let trail = audit(&gw, &keys.admin, &id).await;
    let actions: Vec<&str> = trail
        .iter()
        .map(|line| line["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["delivery_resumed", "delivery_paused"],
        "{trail:?}"
    );
    for line in &trail {
        assert!(line["subscription"].is_null(), "{line}");
        assert!(
            line["actor"].as_str().unwrap().starts_with("api_key:"),
            "{line}"
        );
    }
}

/// A receive waiting through a pause gets the messages as soon as it ends, not after its wait.
async fn a_waiting_receive_goes_on_when_the_pause_ends(kind: Kind) {
    let keys = Keys::new();
    let gw = builder(kind, &keys).start().await;
    let id = queue_id(&gw, &keys.admin, "held").await;
    set_paused(&gw, &keys.admin, &id, true).await;
    gw.send("held", "waited for").await;
    let waiting = {
        let (base, http, key, id) = (
            gw.base.clone(),
            gw.http.clone(),
            keys.reader.clone(),
            id.clone(),
        );
        tokio::spawn(async move {
            let got: serde_json::Value = http
                .post(format!("{base}/v1/queues/{id}/messages/receive"))
                .bearer_auth(key)
                .json(&json!({ "max_messages": 10, "wait_time_seconds": 20 }))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (Instant::now(), got)
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let resumed_at = Instant::now();
    set_paused(&gw, &keys.admin, &id, false).await;
    let (answered_at, got) = waiting.await.unwrap();
    assert_eq!(got["messages"].as_array().unwrap().len(), 1, "{got}");
    assert!(
        answered_at.duration_since(resumed_at) < Duration::from_secs(10),
        "woken by the resume, not by its wait"
    );
}

/// A sombus consumer's pull answers no message while its queue is paused (sombus's own queues
/// are not basaltic's to pause: the core's pause is called here as the basaltic route calls it).
async fn a_sombus_pull_gets_nothing_while_paused(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({ "name": "held" })).await;
    let token = token(&bus.gw, &created.client_id, &created.secret).await;
    let grants = Grants::none().allow(&created.queue, [Action::ManageQueues]);
    let operator = Caller::new(Principal::System, Arc::new(grants));
    let core = &bus.gw.gateway;
    core.pause_delivery(&operator, &created.queue)
        .await
        .unwrap();
    bus.publish(&created.queue, "story-1", json!({ "n": 1 }))
        .await;
    let pull = || {
        sombus_receive(
            &bus.gw,
            &token,
            &bus.workspace,
            &created.client_id,
            "max=10&wait=1",
        )
    };
    let got = pull().await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    assert_eq!(got.body["messages"], json!([]), "{}", got.body);
    core.resume_delivery(&operator, &created.queue)
        .await
        .unwrap();
    let got = pull().await;
    assert_eq!(
        got.body["messages"].as_array().unwrap().len(),
        1,
        "{}",
        got.body
    );
}

use super::kept::a_deleted_queue_s_pause_goes_with_it;

crate::on_both_backends!(
    every_dialect_and_push_get_nothing_while_paused,
    a_waiting_receive_goes_on_when_the_pause_ends,
    a_sombus_pull_gets_nothing_while_paused,
    a_deleted_queue_s_pause_goes_with_it,
);
