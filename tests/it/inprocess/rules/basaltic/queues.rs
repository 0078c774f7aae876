//! basaltic queues: names and settings within their ranges, inspected without a lease, purged
//! (their receipts stale), ids that are UUIDs in any written form, settings changed in place, and
//! deleted.

use super::*;

/// A queue's name and settings hold to their ranges; a refused create makes nothing; the edges
/// are taken; a name in use is 409 `conflict`; a dead-letter queue that does not exist is 404.
#[tokio::test(start_paused = true)]
async fn basaltic_queue_names_and_settings_hold_to_their_ranges() {
    let basaltic = Basaltic::start().await;
    let named = |settings: Value| json!({ "name": "q", "settings": settings });
    for body in [
        json!({}),
        json!({ "name": "" }),
        json!({ "name": "x".repeat(58) }),
        json!({ "name": "has_underscore" }),
        json!({ "name": "dotted.name" }),
        json!({ "name": 7 }),
        json!({ "name": "q", "type": "lifo" }),
        json!({ "name": "q", "type": null }),
        json!({ "name": "q", "colour": "red" }),
        json!({ "name": "q", "settings": [] }),
        named(json!({ "delay_seconds": 901 })),
        named(json!({ "receive_wait_time_seconds": 21 })),
        named(json!({ "visibility_timeout_seconds": 43_201 })),
        named(json!({ "max_message_bytes": 1023 })),
        named(json!({ "max_message_bytes": 262_145 })),
        named(json!({ "retention_seconds": 59 })),
        named(json!({ "retention_seconds": 1_209_601 })),
        named(json!({ "content_based_deduplication": true })),
        named(json!({ "dead_letter_queue": { "queue_id": "not-a-uuid" } })),
        named(json!({ "dead_letter_queue": { "queue_id": ELSEWHERE, "max_receive_count": 0 } })),
        named(json!({ "dead_letter_queue": { "queue_id": ELSEWHERE, "max_receive_count": 1001 } })),
        named(json!({ "colour": 1 })),
    ] {
        let refused = basaltic
            .call(
                Method::POST,
                "/v1/queues",
                &basaltic.admin,
                body.to_string(),
            )
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{body}"
        );
    }
    let listed = basaltic
        .call(Method::GET, "/v1/queues", &basaltic.admin, Body::empty())
        .await;
    assert_eq!(listed.body["queues"], json!([]), "nothing was created");
    let missing_target = basaltic
        .call(
            Method::POST,
            "/v1/queues",
            &basaltic.admin,
            named(json!({ "dead_letter_queue": { "queue_id": ELSEWHERE } })).to_string(),
        )
        .await;
    assert_eq!(
        code(&missing_target),
        (StatusCode::NOT_FOUND, "queue_not_found")
    );
    let name = "n".repeat(57);
    let edges = json!({ "name": name, "settings": {
        "delay_seconds": 900,
        "receive_wait_time_seconds": 20,
        "visibility_timeout_seconds": 43_200,
        "max_message_bytes": 1024,
        "retention_seconds": 1_209_600,
    } });
    let created = basaltic
        .call(
            Method::POST,
            "/v1/queues",
            &basaltic.admin,
            edges.to_string(),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let settings = &created.body["result"]["settings"];
    assert_eq!(settings["delay_seconds"], 900);
    assert_eq!(settings["max_message_bytes"], 1024);
    assert_eq!(created.body["result"]["type"], "standard");
    let again = basaltic
        .call(
            Method::POST,
            "/v1/queues",
            &basaltic.admin,
            json!({ "name": name, "type": "fifo" }).to_string(),
        )
        .await;
    assert_eq!(code(&again), (StatusCode::CONFLICT, "conflict"));
}

/// Inspect: `max_messages` 1–10 (default 10) and nothing else; it leases nothing and changes no
/// receive count.
#[tokio::test(start_paused = true)]
async fn basaltic_inspect_reads_without_a_lease() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for n in 0..12 {
        basaltic
            .send(&id, &json!({ "body": format!("m{n}") }))
            .await;
    }
    for query in [
        "max_messages=0",
        "max_messages=11",
        "max_messages=x",
        "limit=1",
    ] {
        let refused = basaltic
            .call(
                Method::GET,
                &format!("/v1/queues/{id}/messages?{query}"),
                &basaltic.admin,
                Body::empty(),
            )
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{query}"
        );
    }
    let read = basaltic.inspect(&id).await;
    assert_eq!(read.len(), 10, "ten by default");
    assert!(
        read.iter()
            .all(|message| message.get("receipt_handle").is_none())
    );
    let two = basaltic
        .call(
            Method::GET,
            &format!("/v1/queues/{id}/messages?max_messages=2"),
            &basaltic.admin,
            Body::empty(),
        )
        .await;
    assert_eq!(two.body["messages"].as_array().unwrap().len(), 2);
    let got = basaltic.receive(&id, json!({ "max_messages": 10 })).await;
    assert_eq!(got.len(), 10, "inspecting leased nothing");
    assert!(got.iter().all(|message| message["receive_count"] == 1));
}

/// A purge deletes every message, leased ones included, and their receipts become stale.
#[tokio::test(start_paused = true)]
async fn basaltic_a_purge_makes_receipts_stale() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for body in ["a", "b"] {
        basaltic.send(&id, &json!({ "body": body })).await;
    }
    let leased = receipt(&basaltic.receive(&id, json!({})).await[0]);
    let purged = basaltic
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/purge"),
            &basaltic.admin,
            Body::empty(),
        )
        .await;
    assert_eq!(purged.status, StatusCode::NO_CONTENT, "{}", purged.text);
    assert!(basaltic.inspect(&id).await.is_empty());
    let stale = basaltic.delete(&id, &leased).await;
    assert_eq!(code(&stale), (StatusCode::CONFLICT, "receipt_handle_stale"));
}

/// Queue ids are UUIDs in any written form; answers give the lowercase hyphenated one.
#[tokio::test(start_paused = true)]
async fn basaltic_queue_ids_are_uuids_in_any_written_form() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    assert_eq!(
        uuid::Uuid::parse_str(&id).unwrap().hyphenated().to_string(),
        id
    );
    for written in [
        id.to_uppercase(),
        id.replace('-', ""),
        format!("{{{id}}}"),
        format!("urn:uuid:{id}"),
    ] {
        let shown = basaltic
            .call(
                Method::GET,
                &format!("/v1/queues/{written}"),
                &basaltic.admin,
                Body::empty(),
            )
            .await;
        assert_eq!(shown.status, StatusCode::OK, "{written}: {}", shown.text);
        assert_eq!(shown.body["result"]["id"], id.as_str(), "{written}");
        assert_eq!(shown.body["result"]["name"], "invoices");
    }
}

/// A settings change takes the settings given and keeps the others; a refused one (out of range,
/// unknown, not an object) changes nothing.
#[tokio::test(start_paused = true)]
async fn basaltic_a_settings_change_keeps_what_it_does_not_name() {
    let basaltic = Basaltic::start().await;
    let id = basaltic
        .create(json!({ "name": "invoices", "settings": { "delay_seconds": 5 } }))
        .await;
    let path = format!("/v1/queues/{id}");
    for body in [
        json!({}),
        json!({ "settings": 5 }),
        json!({ "settings": { "delay_seconds": 901 } }),
        json!({ "settings": { "visibility_timeout_seconds": 60, "colour": 1 } }),
        json!({ "settings": { "content_based_deduplication": true } }),
        json!({ "settings": {}, "name": "renamed" }),
    ] {
        let refused = basaltic
            .call(Method::PATCH, &path, &basaltic.admin, body.to_string())
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{body}"
        );
    }
    let shown = basaltic
        .call(Method::GET, &path, &basaltic.admin, Body::empty())
        .await;
    let settings = &shown.body["result"]["settings"];
    assert_eq!(settings["delay_seconds"], 5, "{}", shown.text);
    assert_eq!(settings["visibility_timeout_seconds"], 30);
    let changed = basaltic
        .call(
            Method::PATCH,
            &path,
            &basaltic.admin,
            json!({ "settings": { "visibility_timeout_seconds": 60 } }).to_string(),
        )
        .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.text);
    let settings = &changed.body["result"]["settings"];
    assert_eq!(settings["visibility_timeout_seconds"], 60);
    assert_eq!(settings["delay_seconds"], 5, "kept");
    assert_eq!(settings["max_message_bytes"], 262_144, "kept");
    assert_eq!(changed.body["result"]["name"], "invoices");
}

/// Deleting a queue takes `manage_queues`, answers 204, and the queue and its messages are gone.
#[tokio::test(start_paused = true)]
async fn basaltic_a_deleted_queue_is_gone() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    basaltic.send(&id, &json!({ "body": "b" })).await;
    let deleted = basaltic
        .call(
            Method::DELETE,
            &format!("/v1/queues/{id}"),
            &basaltic.admin,
            Body::empty(),
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);
    let shown = basaltic
        .call(
            Method::GET,
            &format!("/v1/queues/{id}"),
            &basaltic.admin,
            Body::empty(),
        )
        .await;
    assert_eq!(code(&shown), (StatusCode::NOT_FOUND, "queue_not_found"));
    let sent = basaltic.send(&id, &json!({ "body": "late" })).await;
    assert_eq!(code(&sent), (StatusCode::NOT_FOUND, "queue_not_found"));
    assert!(
        service_queues(&basaltic).await.is_empty(),
        "the backend queue is gone"
    );
}

pub(super) async fn service_queues(basaltic: &Basaltic) -> Vec<String> {
    basaltic
        .service
        .backend
        .list_queues("sqsgw_bq_")
        .await
        .unwrap()
}
