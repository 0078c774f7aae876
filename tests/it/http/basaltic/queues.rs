//! basaltic queues as resources over HTTP on both backends: made, listed, shown, changed in place
//! and deleted; inspected and purged; their metrics sampled with gaps; a recreated name a new
//! queue; concurrent creates of one name.

use super::support::*;
use crate::harness::unique;
use crate::harness::{Kind, answer};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Queues as resources: list, show with their settings, delete (their messages go too).
async fn queues_are_resources_with_settings(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let dead = api.create(json!({ "name": name() })).await;
    let queue_name = name();
    let id = api
        .create(json!({ "name": queue_name, "settings": {
            "visibility_timeout_seconds": 45, "receive_wait_time_seconds": 2, "delay_seconds": 0,
            "retention_seconds": 3600, "max_message_bytes": 2048,
            "dead_letter_queue": { "queue_id": dead, "max_receive_count": 3 } } }))
        .await;
    let shown = api
        .call(
            Method::GET,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            None,
        )
        .await;
    let queue = &shown.body["result"];
    assert_eq!(queue["name"], queue_name.as_str());
    assert_eq!(queue["type"], "standard");
    assert_eq!(queue["settings"]["visibility_timeout_seconds"], 45);
    assert_eq!(queue["settings"]["receive_wait_time_seconds"], 2);
    assert_eq!(queue["settings"]["max_message_bytes"], 2048);
    assert_eq!(queue["settings"]["retention_seconds"], 3600);
    assert_eq!(
        queue["settings"]["dead_letter_queue"],
        json!({ "queue_id": dead, "max_receive_count": 3 })
    );
    let listed = api
        .call(Method::GET, "/v1/queues", Some(&api.admin), None)
        .await;
    let ids: Vec<&str> = listed.body["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&id.as_str()) && ids.contains(&dead.as_str()));
    let again = api
        .call(
            Method::POST,
            "/v1/queues",
            Some(&api.admin),
            Some(&json!({ "name": queue_name }).to_string()),
        )
        .await;
    assert_eq!(code(&again), (StatusCode::CONFLICT, "conflict".into()));
    api.send(&id, r#"{"body": "x"}"#).await;
    let removed = api
        .call(
            Method::DELETE,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);
    let gone = api
        .call(
            Method::GET,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(
        code(&gone),
        (StatusCode::NOT_FOUND, "queue_not_found".into())
    );
    assert_eq!(
        code(&api.send(&id, r#"{"body": "x"}"#).await).0,
        StatusCode::NOT_FOUND
    );
}

/// Inspect reads without a lease (receive counts unchanged) on the embedded engine, and says the
/// sqs backend can't (501) rather than receiving in disguise; purge takes in-flight messages too.
async fn inspect_and_purge(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name() })).await;
    api.send(&id, r#"{"body": "look"}"#).await;
    let inspected = api
        .call(
            Method::GET,
            &format!("/v1/queues/{id}/messages?max_messages=5"),
            Some(&api.admin),
            None,
        )
        .await;
    match kind {
        Kind::Embedded => {
            assert_eq!(inspected.status, StatusCode::OK, "{}", inspected.body);
            assert_eq!(inspected.body["messages"][0]["body"], "look");
            assert_eq!(inspected.body["messages"][0]["receive_count"], 0);
            assert!(
                inspected.body["messages"][0]
                    .get("receipt_handle")
                    .is_none()
            );
            let again = api
                .call(
                    Method::GET,
                    &format!("/v1/queues/{id}/messages"),
                    Some(&api.admin),
                    None,
                )
                .await;
            assert_eq!(
                again.body["messages"][0]["receive_count"], 0,
                "inspect changes nothing"
            );
        }
        Kind::LocalStack | Kind::Redis | Kind::RedisCluster => {
            assert_eq!(
                code(&inspected),
                (StatusCode::NOT_IMPLEMENTED, "unsupported".into())
            );
            assert!(
                inspected.body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("Amazon SQS")
            );
        }
    }
    let reader = api
        .call(
            Method::GET,
            &format!("/v1/queues/{id}/messages"),
            Some(&api.reader),
            None,
        )
        .await;
    assert_eq!(
        code(&reader).0,
        StatusCode::FORBIDDEN,
        "inspect is its own permission"
    );
    let got = api.receive(&id, r#"{"wait_time_seconds": 1}"#).await;
    assert_eq!(got[0]["receive_count"], 1, "inspect left the receive count");
    let in_flight = got[0]["receipt_handle"].as_str().unwrap().to_owned();
    api.send(&id, r#"{"body": "waiting"}"#).await;
    let purged = api
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/purge"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(purged.status, StatusCode::NO_CONTENT, "{}", purged.body);
    assert_eq!(
        code(&api.delete(&id, &in_flight).await),
        (StatusCode::CONFLICT, "receipt_handle_stale".into())
    );
    assert!(
        api.receive(&id, r#"{"wait_time_seconds": 1}"#)
            .await
            .is_empty()
    );
}

/// Settings change in place; the rest stay.
async fn settings_change_in_place(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name(), "settings": { "visibility_timeout_seconds": 30, "delay_seconds": 1 } })).await;
    let changed = api
        .call(
            Method::PATCH,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            Some(r#"{"settings": {"visibility_timeout_seconds": 90}}"#),
        )
        .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.body);
    assert_eq!(
        changed.body["result"]["settings"]["visibility_timeout_seconds"],
        90
    );
    assert_eq!(changed.body["result"]["settings"]["delay_seconds"], 1);
    let bad = api
        .call(
            Method::PATCH,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            Some(r#"{"settings": {"max_message_bytes": 262145}}"#),
        )
        .await;
    assert_eq!(code(&bad).1, "invalid_argument");
    let reader = api
        .call(
            Method::PATCH,
            &format!("/v1/queues/{id}"),
            Some(&api.reader),
            Some(r#"{"settings": {"delay_seconds": 0}}"#),
        )
        .await;
    assert_eq!(code(&reader).0, StatusCode::FORBIDDEN);

    // A dead-letter queue is set by a change, and `null` takes it away; the rest stays.
    let dead = api.create(json!({ "name": name() })).await;
    let body = json!({ "settings": { "dead_letter_queue": { "queue_id": dead, "max_receive_count": 4 } } });
    let set = api
        .call(
            Method::PATCH,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            Some(&body.to_string()),
        )
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    assert_eq!(
        set.body["result"]["settings"]["dead_letter_queue"]["max_receive_count"],
        4
    );
    let removed = api
        .call(
            Method::PATCH,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            Some(r#"{"settings": {"dead_letter_queue": null}}"#),
        )
        .await;
    assert_eq!(removed.status, StatusCode::OK, "{}", removed.body);
    assert!(
        removed.body["result"]["settings"]["dead_letter_queue"].is_null(),
        "{}",
        removed.body
    );
    assert_eq!(
        removed.body["result"]["settings"]["visibility_timeout_seconds"],
        90
    );
}

/// Metrics sampled by the gateway: counts, repeated receives, and a gap (nulls, never zeros)
/// when a sample could not be taken.
async fn metrics_are_sampled_with_gaps_for_failed_samples(kind: Kind) {
    let api = Basaltic::start_with(kind, "metrics_interval_seconds = 1").await;
    let queue_name = name();
    let id = api.create(json!({ "name": queue_name })).await;
    api.send(&id, r#"{"body": "a"}"#).await;
    api.send(&id, r#"{"body": "b"}"#).await;
    let samples = || async {
        let answer = api
            .call(
                Method::GET,
                &format!("/v1/queues/{id}/metrics"),
                Some(&api.admin),
                None,
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert_eq!(answer.body["interval_seconds"], 1);
        answer.body["samples"].as_array().unwrap().clone()
    };
    let wait_for = |what: &'static str, check: fn(&Value) -> bool| {
        let samples = &samples;
        async move {
            for _ in 0..100 {
                if let Some(found) = samples().await.into_iter().rev().find(&check) {
                    return found;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            panic!("no sample with {what}: {:?}", samples().await);
        }
    };
    let two = wait_for("two visible", |s| s["visible"] == 2).await;
    assert_eq!(two["in_flight"], 0);
    // SQS's API does not tell the oldest message's age (CloudWatch does): the embedded engine does.
    if kind == Kind::Embedded {
        assert!(two["oldest_message_age_seconds"].is_u64(), "{two}");
    }
    // A delivery handed out again counts as a repeated receive.
    let got = api
        .receive(
            &id,
            r#"{"visibility_timeout_seconds": 30, "wait_time_seconds": 1}"#,
        )
        .await;
    api.visibility(&id, got[0]["receipt_handle"].as_str().unwrap(), 0)
        .await;
    let mut again = Vec::new();
    for _ in 0..5 {
        again = api
            .receive(
                &id,
                r#"{"max_messages": 10, "visibility_timeout_seconds": 30, "wait_time_seconds": 1}"#,
            )
            .await;
        if again.iter().any(|m| m["receive_count"] == 2) {
            break;
        }
    }
    assert!(again.iter().any(|m| m["receive_count"] == 2));
    wait_for("a repeated receive", |s| {
        s["repeated_receives"].as_u64() >= Some(1)
    })
    .await;
    wait_for("messages in flight", |s| s["in_flight"].as_u64() >= Some(1)).await;
    // The queue gone behind the gateway's back: samples can't be taken, and show as gaps.
    let backend_name = api.backend_name(&queue_name).await;
    let url = api.gw.backend.resolve(&backend_name).await.unwrap().url;
    api.gw.backend.delete_queue(&url).await.unwrap();
    let gap = wait_for("a gap", |s| s["visible"].is_null()).await;
    for field in [
        "in_flight",
        "delayed",
        "oldest_message_age_seconds",
        "repeated_receives",
    ] {
        assert!(gap[field].is_null(), "{field} is a gap, not a zero: {gap}");
    }
    let reader = api
        .call(
            Method::GET,
            &format!("/v1/queues/{id}/metrics"),
            Some(&api.reader),
            None,
        )
        .await;
    assert_eq!(
        code(&reader).0,
        StatusCode::FORBIDDEN,
        "read_metrics is its own permission"
    );
}

/// A queue deleted and created again under its name is another backend queue: a replica that
/// still knows the old id reaches nothing of the new one.
async fn a_recreated_name_is_a_new_queue_for_old_ids_everywhere(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let queue_name = name();
    let old = api.create(json!({ "name": queue_name })).await;
    let replica = api.replica(kind).await;
    let on_replica = |id: String, body: &'static str| {
        let url = format!("{}/v1/queues/{id}/messages", replica.base);
        let http = replica.http.clone();
        let key = api.admin.clone();
        async move {
            answer(
                http.post(url)
                    .bearer_auth(key)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    };
    assert_eq!(
        on_replica(old.clone(), r#"{"body": "before"}"#)
            .await
            .status,
        StatusCode::CREATED
    );
    let removed = api
        .call(
            Method::DELETE,
            &format!("/v1/queues/{old}"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);
    let new = api.create(json!({ "name": queue_name })).await;
    assert_ne!(old, new);
    // The replica still maps the old id (until its aliases are read back): to a queue that's gone.
    let stale = on_replica(old.clone(), r#"{"body": "through an old id"}"#).await;
    assert_ne!(stale.status, StatusCode::CREATED, "{}", stale.body);
    assert!(
        api.receive(&new, r#"{"max_messages": 10, "wait_time_seconds": 1}"#)
            .await
            .is_empty()
    );
    replica.stop().await;
}

/// Sixteen creates of one name at once: one is made, the others answer that it exists.
async fn concurrent_creates_of_one_name_make_one_queue(kind: Kind) {
    let basaltic = Basaltic::start(kind).await;
    let name = unique("race");
    let creates: Vec<_> = (0..16)
        .map(|_| {
            tokio::spawn(
                basaltic
                    .gw
                    .http
                    .post(format!("{}/v1/queues", basaltic.gw.base))
                    .bearer_auth(&basaltic.admin)
                    .json(&json!({ "name": name }))
                    .send(),
            )
        })
        .collect();
    let mut statuses: Vec<u16> = Vec::new();
    for create in creates {
        statuses.push(create.await.unwrap().unwrap().status().as_u16());
    }
    statuses.sort_unstable();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        15,
        "{statuses:?}"
    );
    basaltic.backend_name(&name).await;
}

crate::on_both_backends!(
    concurrent_creates_of_one_name_make_one_queue,
    a_recreated_name_is_a_new_queue_for_old_ids_everywhere,
    metrics_are_sampled_with_gaps_for_failed_samples,
    inspect_and_purge,
    settings_change_in_place,
    queues_are_resources_with_settings,
);
