//! The sombus pull API over HTTP on both backends: the consumer loop with its documented shapes,
//! acknowledgements and releases; the refusals, each with its documented status and rule; and a key
//! given twice in a body refused in the bus's shape.

use super::support::*;
use crate::harness::{Kind, answer, captured_logs};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A connection, a token, three messages of two stories: the documented shape, ack and nack.
async fn the_loop_receives_acks_and_releases(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({ "name": "house" })).await;
    assert!(created.queue.ends_with(".fifo"), "FIFO by default");
    // The secret is shown once with the connection's URLs filled in.
    let urls = &created.body["urls"];
    assert_eq!(urls["token"], format!("{}/v1/oauth/token", bus.gw.base));
    assert_eq!(
        urls["messages"],
        format!(
            "{}/v1/tenants/{}/consumers/{}/messages",
            bus.gw.base, bus.workspace, created.client_id
        )
    );
    let token_answer = token_answer(&bus.gw, &created.client_id, &created.secret).await;
    assert_eq!(token_answer.status, StatusCode::OK);
    assert_eq!(token_answer.body["token_type"], "Bearer");
    assert_eq!(token_answer.body["expires_in"], 3600);
    assert_eq!(token_answer.headers["cache-control"], "no-store");
    let token = token_answer.body["access_token"]
        .as_str()
        .unwrap()
        .to_owned();

    let id = bus
        .publish(&created.queue, "story-1", json!({ "n": 1 }))
        .await;
    bus.publish(&created.queue, "story-2", json!({ "n": 2 }))
        .await;
    let got = receive(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "max=10&wait=1",
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    let messages = got.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{}", got.body);
    let first = messages
        .iter()
        .find(|m| m["correlation_id"] == "story-1")
        .unwrap();
    assert_eq!(first["message_type"], "story.context");
    assert_eq!(first["topic"], "som.story.context");
    assert_eq!(first["producer_id"], "c-producer");
    assert_eq!(first["receive_count"], 1);
    assert_eq!(first["envelope"]["message_id"], id);
    assert_eq!(first["envelope"]["payload"], json!({ "n": 1 }));
    assert!(first.get("body").is_none());
    let enqueued = first["enqueued_at"].as_str().unwrap();
    assert!(
        enqueued.len() == 24 && enqueued.ends_with('Z') && enqueued.as_bytes()[19] == b'.',
        "milliseconds, UTC: {enqueued}"
    );
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "correlation_id",
            "enqueued_at",
            "envelope",
            "message_type",
            "producer_id",
            "receipt_handle",
            "receive_count",
            "topic"
        ]
    );
    let all = handles(&got.body);
    // Release story-2 at once; acknowledge story-1 with a malformed handle beside it.
    let story_2 = messages
        .iter()
        .find(|m| m["correlation_id"] == "story-2")
        .unwrap()["receipt_handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let nacked = post(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "nack",
        json!({ "receipt_handles": [story_2] }),
    )
    .await;
    assert_eq!(nacked.body, json!({ "nacked": [story_2], "failed": [] }));
    let story_1 = all.iter().find(|h| **h != story_2).unwrap().clone();
    let acked = post(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "ack",
        json!({ "receipt_handles": [story_1, "AQEBnot-a-handle"] }),
    )
    .await;
    assert_eq!(acked.status, StatusCode::OK);
    assert_eq!(acked.body["acked"], json!([story_1]));
    assert_eq!(
        acked.body["failed"][0]["receipt_handle"],
        "AQEBnot-a-handle"
    );
    assert_eq!(acked.body["failed"][0]["code"], "ReceiptHandleIsInvalid");
    // Acknowledging again: the delivery is over, nothing left to do (acked, not failed).
    let again = post(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "ack",
        json!({ "receipt_handles": [story_1] }),
    )
    .await;
    assert_eq!(again.body, json!({ "acked": [story_1], "failed": [] }));
    // story-2 is back with a second delivery; story-1 is gone.
    let back = receive(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "wait=1",
    )
    .await;
    let back = back.body["messages"].as_array().unwrap().clone();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0]["correlation_id"], "story-2");
    assert_eq!(back[0]["receive_count"], 2);
    // A body that is not a JSON envelope is delivered as it is, with a null envelope.
    bus.publish_raw(&created.queue, "plain text", Some("story-3"), &[])
        .await;
    let plain = receive(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "wait=1",
    )
    .await;
    let plain = plain.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["body"] == "plain text")
        .cloned();
    let plain = plain.expect("the plain message arrives");
    assert_eq!(plain["envelope"], Value::Null);
    assert_eq!(plain["correlation_id"], "story-3", "from the message group");
    // Nothing secret reached the logs.
    let logs = captured_logs();
    for secret in [&created.secret, &token, &story_1, &story_2] {
        assert!(
            !logs.contains(secret.as_str()),
            "a secret, token or handle was logged"
        );
    }
}

/// The refusals, each with its documented status and rule.
async fn refusals_have_the_documented_rules(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({})).await;
    let other = bus.create(json!({})).await;
    let token = token(&bus.gw, &created.client_id, &created.secret).await;
    let (t, c) = (bus.workspace.as_str(), created.client_id.as_str());
    let no_token = bus
        .gw
        .http
        .get(pull_url(&bus.gw, t, c, "messages"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        no_token.headers()["www-authenticate"],
        "Bearer realm=\"sombus\""
    );
    assert_eq!(
        refused(&answer(no_token).await),
        (StatusCode::UNAUTHORIZED, "producer.unauthenticated".into())
    );
    let garbage = receive(&bus.gw, "not.a.token", t, c, "wait=0").await;
    assert_eq!(
        refused(&garbage),
        (StatusCode::UNAUTHORIZED, "producer.unauthenticated".into())
    );
    let elsewhere = receive(&bus.gw, &token, "other-ws", c, "wait=0").await;
    assert_eq!(
        refused(&elsewhere),
        (StatusCode::FORBIDDEN, "tenant.mismatch".into())
    );
    let not_mine = receive(&bus.gw, &token, t, &other.client_id, "wait=0").await;
    assert_eq!(
        refused(&not_mine),
        (StatusCode::FORBIDDEN, "consumer.not_owner".into())
    );
    for bad in [
        "max=0",
        "max=11",
        "wait=21",
        "visibility=43201",
        "attempt=a%20b",
        "max=x",
        "color=red",
        "max=1&max=1",
    ] {
        let answer = receive(&bus.gw, &token, t, c, bad).await;
        assert_eq!(
            refused(&answer),
            (StatusCode::BAD_REQUEST, "pull.bad_request".into()),
            "{bad}"
        );
    }
    for body in [
        json!({}),
        json!({ "receipt_handles": [] }),
        json!({ "receipt_handles": ["a", "a"] }),
        json!({ "receipt_handles": (0..11).map(|i| i.to_string()).collect::<Vec<_>>() }),
    ] {
        let answer = post(&bus.gw, &token, t, c, "ack", body.clone()).await;
        assert_eq!(
            refused(&answer),
            (StatusCode::BAD_REQUEST, "pull.bad_request".into()),
            "{body}"
        );
    }
    let long_delay = post(
        &bus.gw,
        &token,
        t,
        c,
        "nack",
        json!({ "receipt_handles": ["x"], "delay_seconds": 43201 }),
    )
    .await;
    assert_eq!(refused(&long_delay).1, "pull.bad_request");
    // A producer's token reads no queue.
    let producer = bus.create(json!({ "role": "producer" })).await;
    let producer_token = self::token(&bus.gw, &producer.client_id, &producer.secret).await;
    let refused_producer =
        receive(&bus.gw, &producer_token, t, &producer.client_id, "wait=0").await;
    assert_eq!(
        refused(&refused_producer),
        (StatusCode::FORBIDDEN, "producer.not_registered".into())
    );
    // A token of another environment (same keys, environment "preview") is refused.
    let preview = bus
        .replica_builder(kind)
        .config(
            &bus.toml
                .replace("environment = \"test\"", "environment = \"preview\""),
        )
        .start()
        .await;
    let preview_token = self::token(&preview, c, &created.secret).await;
    let foreign = receive(&bus.gw, &preview_token, t, c, "wait=0").await;
    assert_eq!(
        refused(&foreign),
        (StatusCode::UNAUTHORIZED, "producer.unauthenticated".into())
    );
    assert_eq!(
        receive(&preview, &preview_token, t, c, "wait=0")
            .await
            .status,
        StatusCode::OK
    );
    // No such route or method: the bus's body too.
    let unknown = receive(&bus.gw, &token, t, c, "").await;
    assert_eq!(unknown.status, StatusCode::OK);
    let no_route = answer(
        bus.gw
            .http
            .get(pull_url(&bus.gw, t, c, "nothing"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(refused(&no_route).0, StatusCode::NOT_FOUND);
    let wrong_method = answer(
        bus.gw
            .http
            .post(pull_url(&bus.gw, t, c, "messages"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(refused(&wrong_method).0, StatusCode::METHOD_NOT_ALLOWED);
    // A handle of another connection's queue fails, and acts nowhere.
    bus.publish(&other.queue, "s", json!({})).await;
    let other_token = self::token(&bus.gw, &other.client_id, &other.secret).await;
    let theirs = receive(&bus.gw, &other_token, t, &other.client_id, "wait=1").await;
    let theirs = handles(&theirs.body);
    let stolen = post(
        &bus.gw,
        &token,
        t,
        c,
        "ack",
        json!({ "receipt_handles": theirs }),
    )
    .await;
    assert_eq!(stolen.body["failed"][0]["code"], "ReceiptHandleIsInvalid");
    let still_theirs = post(
        &bus.gw,
        &other_token,
        t,
        &other.client_id,
        "ack",
        json!({ "receipt_handles": theirs }),
    )
    .await;
    assert_eq!(still_theirs.body["acked"].as_array().unwrap().len(), 1);
    // A queue that is gone (deleted behind the gateway's back) is unavailable, never a 404.
    let url = bus.gw.backend.resolve(&other.queue).await.unwrap().url;
    bus.gw.backend.delete_queue(&url).await.unwrap();
    let unavailable = receive(&bus.gw, &other_token, t, &other.client_id, "wait=0").await;
    assert_eq!(
        refused(&unavailable),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "consumer.queue_unavailable".into()
        )
    );
    assert!(unavailable.headers.contains_key("retry-after"));
    preview.stop().await;
}

/// A key given twice is refused in the bus's shape (`admin.bad_request` / `pull.bad_request`,
/// naming the key, showing no value) instead of the last value silently winning: a rotation that
/// says `"none"` then `"3d"` rotates nothing, a create naming two client ids creates neither.
#[tokio::test]
async fn a_key_given_twice_is_refused() {
    let bus = Bus::start(Kind::Embedded).await;
    let created = bus.create(json!({})).await;
    let raw = |url: String, key: String, body: &'static str| {
        let request = bus
            .gw
            .http
            .post(url)
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body(body);
        async move { answer(request.send().await.unwrap()).await }
    };
    let rotate = raw(
        bus.admin_url(&format!("/connections/{}/secret/rotate", created.client_id)),
        bus.admin.clone(),
        r#"{"overlap":"none","overlap":"3d"}"#,
    )
    .await;
    let create = raw(
        bus.admin_url("/connections"),
        bus.admin.clone(),
        r#"{"client_id":"dupa","client_id":"dupb"}"#,
    )
    .await;
    let token = token(&bus.gw, &created.client_id, &created.secret).await;
    let ack = raw(
        pull_url(&bus.gw, &bus.workspace, &created.client_id, "ack"),
        token,
        r#"{"receipt_handles":["AQAAAH8first"],"receipt_handles":["AQAAAJ2second"]}"#,
    )
    .await;
    for (answer, rule, key) in [
        (rotate, "admin.bad_request", "the key \"overlap\""),
        (create, "admin.bad_request", "the key \"client_id\""),
        (ack, "pull.bad_request", "the key \"receipt_handles\""),
    ] {
        assert_eq!(refused(&answer), (StatusCode::BAD_REQUEST, rule.into()));
        let message = answer.body["violations"][0]["message"].as_str().unwrap();
        assert!(
            message.contains(key) && message.contains("more than once"),
            "{message}"
        );
        for value in ["none", "3d", "dupa", "dupb", "first", "second"] {
            assert!(!message.contains(value), "{message}");
        }
    }
    // Nothing rotated: the first secret is still the only one, version 1.
    let shown = bus
        .admin_call(
            reqwest::Method::GET,
            &format!("/connections/{}", created.client_id),
            &bus.viewer,
            None,
        )
        .await;
    assert_eq!(shown.body["credential_version"], 1, "{}", shown.body);
    assert_eq!(
        token_answer(&bus.gw, &created.client_id, &created.secret)
            .await
            .status,
        StatusCode::OK
    );
    for client_id in ["dupa", "dupb"] {
        let missing = bus
            .admin_call(
                reqwest::Method::GET,
                &format!("/connections/{client_id}"),
                &bus.viewer,
                None,
            )
            .await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);
    }
}

crate::on_both_backends!(
    the_loop_receives_acks_and_releases,
    refusals_have_the_documented_rules,
);
