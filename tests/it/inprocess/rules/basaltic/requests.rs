//! What a basaltic request may hold: messages and attributes within their limits, FIFO groups not
//! delays, receive fields within their ranges, no JSON key given twice, no body over the limit
//! (refused unread); and routes no handler serves answered in basaltic's shape.

use super::*;

/// A message: a string body, at most 20 attributes with names of 1–256 bytes (not `AWS.`,
/// `Amazon.`, `sqsgw.` in any case), types `String`, `Number` (a number) or `Binary` (standard
/// base64), values of at most 1,024 bytes (Binary decoded); `delay_seconds` 0–900; no FIFO fields
/// on a standard queue. Each refusal stores nothing; the edges are taken.
#[tokio::test(start_paused = true)]
async fn basaltic_messages_and_attributes_hold_to_their_limits() {
    use base64::Engine as _;
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let text = |value: &str| json!({ "type": "String", "value": value });
    let with = |attributes: Value| json!({ "body": "b", "attributes": attributes });
    let many = |count: usize| -> Value {
        Value::Object((0..count).map(|n| (format!("a{n}"), text("v"))).collect())
    };
    let binary = |bytes: usize| json!({ "type": "Binary", "value": base64::engine::general_purpose::STANDARD.encode(vec![7u8; bytes]) });
    let long_name = "n".repeat(257);
    for body in [
        json!({}),
        json!({ "body": 1 }),
        json!({ "body": "" }),
        json!({ "body": "nul \u{0}" }),
        json!({ "body": "b", "colour": "red" }),
        json!({ "body": "b", "attributes": [] }),
        with(many(21)),
        with(json!({ long_name: text("v") })),
        with(json!({ "": text("v") })),
        with(json!({ "AWS.trace": text("v") })),
        with(json!({ "amazon.trace": text("v") })),
        with(json!({ "SQSGW.packed": text("v") })),
        with(json!({ "k": { "type": "Blob", "value": "v" } })),
        with(json!({ "k": { "type": "String" } })),
        with(json!({ "k": { "type": "String", "value": "v", "extra": 1 } })),
        with(json!({ "k": text(&"v".repeat(1025)) })),
        with(json!({ "k": text("") })),
        with(json!({ "k": { "type": "Number", "value": "twelve" } })),
        with(json!({ "k": { "type": "Binary", "value": "not base64!" } })),
        with(json!({ "k": binary(1025) })),
        json!({ "body": "b", "delay_seconds": 901 }),
        json!({ "body": "b", "delay_seconds": -1 }),
        json!({ "body": "b", "group_id": "g" }),
        json!({ "body": "b", "deduplication_id": "d" }),
    ] {
        let refused = basaltic.send(&id, &body).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{body}"
        );
    }
    assert!(basaltic.inspect(&id).await.is_empty(), "nothing was stored");
    let mut edges = many(18);
    edges["n".repeat(256)] = text(&"v".repeat(1024));
    edges["bin"] = binary(1024);
    let accepted = basaltic
        .send(
            &id,
            &json!({ "body": "edges", "attributes": edges, "delay_seconds": 900 }),
        )
        .await;
    assert_eq!(accepted.status, StatusCode::CREATED, "{}", accepted.text);
    assert!(accepted.body["result"]["message_id"].is_string());
    let stored = basaltic.inspect(&id).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["attributes"].as_object().unwrap().len(), 20);
    assert_eq!(stored[0]["attributes"]["bin"], binary(1024));
}

/// FIFO queues refuse a per-message delay, need a `group_id`, and a `deduplication_id` unless the
/// queue deduplicates by content.
#[tokio::test(start_paused = true)]
async fn basaltic_fifo_queues_take_groups_not_delays() {
    let basaltic = Basaltic::start().await;
    let fifo = basaltic
        .create(json!({ "name": "ledger", "type": "fifo" }))
        .await;
    for body in [
        json!({ "body": "b", "group_id": "g", "deduplication_id": "d", "delay_seconds": 0 }),
        json!({ "body": "b", "deduplication_id": "d" }),
        json!({ "body": "b", "group_id": "g" }),
        json!({ "body": "b", "group_id": 7, "deduplication_id": "d" }),
    ] {
        let refused = basaltic.send(&fifo, &body).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{body}"
        );
    }
    assert!(basaltic.inspect(&fifo).await.is_empty());
    let sent = basaltic
        .send(
            &fifo,
            &json!({ "body": "b", "group_id": "g", "deduplication_id": "d" }),
        )
        .await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.text);
    let by_content = basaltic
        .create(json!({ "name": "ledger2", "type": "fifo",
                        "settings": { "content_based_deduplication": true } }))
        .await;
    let sent = basaltic
        .send(&by_content, &json!({ "body": "b", "group_id": "g" }))
        .await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.text);
}

/// Receive's ranges: `max_messages` 1–10, `wait_time_seconds` 0–20, `visibility_timeout_seconds`
/// 0–43200, nothing else; a refused receive leases nothing.
#[tokio::test(start_paused = true)]
async fn basaltic_receive_fields_hold_to_their_ranges() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    basaltic.send(&id, &json!({ "body": "kept" })).await;
    for body in [
        json!({ "max_messages": 0 }),
        json!({ "max_messages": 11 }),
        json!({ "wait_time_seconds": 21 }),
        json!({ "visibility_timeout_seconds": 43_201 }),
        json!({ "max_messages": "ten" }),
        json!({ "maxMessages": 1 }),
    ] {
        let refused = basaltic
            .call(
                Method::POST,
                &format!("/v1/queues/{id}/messages/receive"),
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
    let got = basaltic
        .receive(
            &id,
            json!({ "max_messages": 10, "wait_time_seconds": 0, "visibility_timeout_seconds": 43_200 }),
        )
        .await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["receive_count"], 1, "no refused receive leased it");
}

/// A JSON key given twice, at any depth, is 400 `invalid_argument` naming the key and showing no
/// value; nothing is sent.
#[tokio::test(start_paused = true)]
async fn basaltic_a_key_given_twice_is_refused() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for (body, key) in [
        (r#"{"body":"first","body":"second"}"#, "\"body\""),
        (
            r#"{"body":"b","attributes":{"k":{"type":"String","value":"first","value":"second"}}}"#,
            "\"value\"",
        ),
        (
            r#"{"entries":[{"id":"a","body":"first"},{"id":"b","body":"x","body":"second"}]}"#,
            "\"body\"",
        ),
    ] {
        let path = if body.contains("entries") {
            format!("/v1/queues/{id}/messages/batch")
        } else {
            format!("/v1/queues/{id}/messages")
        };
        let refused = basaltic
            .call(Method::POST, &path, &basaltic.admin, body)
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{body}"
        );
        let message = refused.body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(key) && message.contains("more than once"),
            "{message}"
        );
        assert!(
            !message.contains("first") && !message.contains("second"),
            "{message}"
        );
    }
    assert!(basaltic.inspect(&id).await.is_empty(), "nothing was sent");
}

/// A body declared over 3 MiB + 64 KiB is 413 `payload_too_large`, refused unread.
#[tokio::test(start_paused = true)]
async fn basaltic_bodies_over_the_limit_are_refused_unread() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for path in [
        format!("/v1/queues/{id}/messages"),
        format!("/v1/queues/{id}/messages/batch"),
    ] {
        let tripwire = Tripwire::default();
        let refused = basaltic
            .call(
                Method::POST,
                &path,
                &basaltic.admin,
                tripwire.declaring(Some(3 * 1024 * 1024 + 64 * 1024 + 1)),
            )
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            "{path}"
        );
        assert!(!tripwire.was_read(), "{path}");
    }
}

/// Routes no handler serves and wrong methods under `/v1/queues` answer in basaltic's shape.
#[tokio::test(start_paused = true)]
async fn basaltic_unknown_routes_and_wrong_methods_answer_in_its_shape() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for (method, path, expected) in [
        (
            Method::PUT,
            "/v1/queues".to_owned(),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
        (
            Method::GET,
            format!("/v1/queues/{id}/messages/receive"),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
        (
            Method::PUT,
            format!("/v1/queues/{id}/purge"),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
        (
            Method::GET,
            format!("/v1/queues/{id}/nothing"),
            (StatusCode::NOT_FOUND, "not_found"),
        ),
    ] {
        let answer = basaltic
            .call(method.clone(), &path, &basaltic.admin, Body::empty())
            .await;
        assert_eq!(code(&answer), expected, "{method} {path}");
    }
}
