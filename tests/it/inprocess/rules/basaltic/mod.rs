//! basaltic: errors are `{"error": {"code", "message"}}`

use super::*;

/// The service with the basaltic API: a key with everything, one that may only receive, one that
/// may only send, and one whose only grant names a queue that does not exist.
pub(super) struct Basaltic {
    pub(super) service: InProcess,
    pub(super) admin: String,
    pub(super) reader: String,
    pub(super) sender: String,
    pub(super) stranger: String,
}

pub(super) const ELSEWHERE: &str = "00000000-0000-4000-8000-000000000001";

pub(super) fn basaltic_key_entry(grants: &str) -> (String, String) {
    let key = api_keys::generate_key();
    let entry = format!(
        "[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ {grants} }}\n\n",
        key.id, key.hash
    );
    (key.key, entry)
}

/// The error's status and code, checking basaltic's body.
pub(super) fn code(reply: &Reply) -> (StatusCode, &str) {
    assert!(reply.body["error"]["message"].is_string(), "{}", reply.text);
    (
        reply.status,
        reply.body["error"]["code"].as_str().unwrap_or_default(),
    )
}

impl Basaltic {
    async fn start() -> Self {
        let (admin, admin_entry) = basaltic_key_entry(r#""*" = ["*"]"#);
        let (reader, reader_entry) = basaltic_key_entry(r#""*" = ["receive"]"#);
        let (sender, sender_entry) = basaltic_key_entry(r#""*" = ["send"]"#);
        let (stranger, stranger_entry) = basaltic_key_entry(&format!(r#""{ELSEWHERE}" = ["*"]"#));
        let service = with_tables(&format!(
            "[basaltic]\n\n{admin_entry}{reader_entry}{sender_entry}{stranger_entry}"
        ))
        .await;
        Self {
            service,
            admin,
            reader,
            sender,
            stranger,
        }
    }

    async fn call(&self, method: Method, path: &str, key: &str, body: impl Into<Body>) -> Reply {
        self.service
            .call(request(method, path, Some(key), body))
            .await
    }

    /// Creates a queue; answers its id.
    async fn create(&self, body: Value) -> String {
        let created = self
            .call(Method::POST, "/v1/queues", &self.admin, body.to_string())
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
        created.body["result"]["id"].as_str().unwrap().to_owned()
    }

    async fn send(&self, id: &str, body: &Value) -> Reply {
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages"),
            &self.admin,
            body.to_string(),
        )
        .await
    }

    async fn receive(&self, id: &str, body: Value) -> Vec<Value> {
        let got = self
            .call(
                Method::POST,
                &format!("/v1/queues/{id}/messages/receive"),
                &self.admin,
                body.to_string(),
            )
            .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.text);
        got.body["messages"].as_array().unwrap().clone()
    }

    /// The queue's messages, read without a lease.
    async fn inspect(&self, id: &str) -> Vec<Value> {
        let read = self
            .call(
                Method::GET,
                &format!("/v1/queues/{id}/messages"),
                &self.admin,
                Body::empty(),
            )
            .await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text);
        read.body["messages"].as_array().unwrap().clone()
    }

    async fn delete(&self, id: &str, receipt: &str) -> Reply {
        let encoded: String = form_urlencoded::byte_serialize(receipt.as_bytes()).collect();
        self.call(
            Method::DELETE,
            &format!("/v1/queues/{id}/messages?receipt_handle={encoded}"),
            &self.admin,
            Body::empty(),
        )
        .await
    }

    async fn visibility(&self, id: &str, receipt: &str, seconds: i64) -> Reply {
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/visibility"),
            &self.admin,
            json!({ "receipt_handle": receipt, "visibility_timeout_seconds": seconds }).to_string(),
        )
        .await
    }

    async fn batch(&self, id: &str, kind: &str, entries: Value) -> Reply {
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/{kind}"),
            &self.admin,
            json!({ "entries": entries }).to_string(),
        )
        .await
    }
}

pub(super) fn receipt(message: &Value) -> String {
    message["receipt_handle"].as_str().unwrap().to_owned()
}

/// Without a valid key: 401 `unauthenticated` with the Bearer challenge, before the body is read,
/// on every route.
#[tokio::test(start_paused = true)]
async fn basaltic_keys_are_checked_before_the_body_is_read() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for (method, path) in [
        (Method::POST, "/v1/queues".to_owned()),
        (Method::POST, format!("/v1/queues/{id}/messages")),
        (Method::POST, format!("/v1/queues/{id}/messages/receive")),
        (Method::POST, format!("/v1/queues/{id}/messages/batch")),
        (Method::PATCH, format!("/v1/queues/{id}")),
    ] {
        for key in [None, Some("sqsgw_0000_notakey")] {
            let tripwire = Tripwire::default();
            let refused = basaltic
                .service
                .call(request(method.clone(), &path, key, tripwire.body()))
                .await;
            assert_eq!(
                code(&refused),
                (StatusCode::UNAUTHORIZED, "unauthenticated"),
                "{method} {path} {key:?}"
            );
            assert_eq!(
                refused.header("www-authenticate").as_deref(),
                Some("Bearer")
            );
            assert!(!tripwire.was_read(), "{method} {path}: the body was read");
        }
    }
    assert!(basaltic.inspect(&id).await.is_empty());
    // The control: with a key the body is read (and, failing, refused as cut short).
    let tripwire = Tripwire::default();
    let read = basaltic
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages"),
            &basaltic.admin,
            tripwire.body(),
        )
        .await;
    assert_eq!(code(&read), (StatusCode::BAD_REQUEST, "invalid_argument"));
    assert!(tripwire.was_read());
}

/// Permissions: a key without the one an operation takes is 403 `permission_denied` (creating a
/// queue takes `manage_queues` on `*`, inspecting `inspect`, purging `purge`), and nothing is
/// done.
#[tokio::test(start_paused = true)]
async fn basaltic_each_operation_takes_its_permission() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let message = json!({ "body": "kept" });
    assert_eq!(
        basaltic.send(&id, &message).await.status,
        StatusCode::CREATED
    );
    for (key, method, path, body) in [
        (
            &basaltic.reader,
            Method::POST,
            format!("/v1/queues/{id}/messages"),
            message.to_string(),
        ),
        (
            &basaltic.reader,
            Method::POST,
            "/v1/queues".to_owned(),
            json!({ "name": "more" }).to_string(),
        ),
        (
            &basaltic.reader,
            Method::GET,
            format!("/v1/queues/{id}/messages"),
            String::new(),
        ),
        (
            &basaltic.reader,
            Method::POST,
            format!("/v1/queues/{id}/purge"),
            String::new(),
        ),
        (
            &basaltic.reader,
            Method::DELETE,
            format!("/v1/queues/{id}"),
            String::new(),
        ),
        (
            &basaltic.reader,
            Method::PATCH,
            format!("/v1/queues/{id}"),
            json!({ "settings": { "delay_seconds": 5 } }).to_string(),
        ),
        (
            &basaltic.sender,
            Method::POST,
            format!("/v1/queues/{id}/messages/receive"),
            "{}".to_owned(),
        ),
        (
            &basaltic.sender,
            Method::DELETE,
            format!("/v1/queues/{id}/messages?receipt_handle=AQAAAH8x"),
            String::new(),
        ),
    ] {
        let refused = basaltic.call(method.clone(), &path, key, body).await;
        assert_eq!(
            code(&refused),
            (StatusCode::FORBIDDEN, "permission_denied"),
            "{method} {path}"
        );
    }
    let messages = basaltic.inspect(&id).await;
    assert_eq!(messages.len(), 1, "nothing sent, purged or received");
    assert_eq!(messages[0]["receive_count"], 0);
    let listed = basaltic
        .call(Method::GET, "/v1/queues", &basaltic.admin, Body::empty())
        .await;
    assert_eq!(
        listed.body["queues"].as_array().unwrap().len(),
        1,
        "{}",
        listed.text
    );
    let shown = basaltic
        .call(
            Method::GET,
            &format!("/v1/queues/{id}"),
            &basaltic.admin,
            Body::empty(),
        )
        .await;
    assert_eq!(shown.body["result"]["settings"]["delay_seconds"], 0);
}

/// A queue the key holds nothing on answers 404 exactly as one that does not exist, so ids can't
/// be probed; the key's list does not show it.
#[tokio::test(start_paused = true)]
async fn basaltic_a_queue_the_key_holds_nothing_on_is_not_found() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let missing = "7b0f3a4e-0000-4000-8000-00000000abcd";
    let mut answers = Vec::new();
    for queue in [id.as_str(), missing, ELSEWHERE, "not-a-uuid"] {
        for (method, rest, body) in [
            (Method::GET, "", String::new()),
            (
                Method::POST,
                "/messages",
                json!({ "body": "x" }).to_string(),
            ),
        ] {
            let refused = basaltic
                .call(
                    method.clone(),
                    &format!("/v1/queues/{queue}{rest}"),
                    &basaltic.stranger,
                    body,
                )
                .await;
            assert_eq!(
                code(&refused),
                (StatusCode::NOT_FOUND, "queue_not_found"),
                "{method} {queue}{rest}"
            );
            answers.push(refused.text);
        }
    }
    assert!(
        answers.windows(2).all(|pair| pair[0] == pair[1]),
        "{answers:?}"
    );
    let listed = basaltic
        .call(Method::GET, "/v1/queues", &basaltic.stranger, Body::empty())
        .await;
    assert_eq!(listed.body["queues"], json!([]), "{}", listed.text);
    assert!(basaltic.inspect(&id).await.is_empty(), "nothing was sent");
}

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

/// Deleting by receipt: the one query parameter `receipt_handle`, once; an altered receipt or one
/// of another queue is 400 `receipt_handle_invalid`, an older one 409 `receipt_handle_stale`, and
/// nothing changes; the current one deletes.
#[tokio::test(start_paused = true)]
async fn basaltic_only_the_current_receipt_of_the_queue_deletes() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let other = basaltic.create(json!({ "name": "other" })).await;
    basaltic.send(&id, &json!({ "body": "kept" })).await;
    basaltic.send(&other, &json!({ "body": "theirs" })).await;
    let old = receipt(
        &basaltic
            .receive(&id, json!({ "visibility_timeout_seconds": 0 }))
            .await[0],
    );
    let current = receipt(&basaltic.receive(&id, json!({})).await[0]);
    let theirs = receipt(&basaltic.receive(&other, json!({})).await[0]);
    let base = format!("/v1/queues/{id}/messages");
    for query in [
        String::new(),
        "?receipt_handle=".to_owned(),
        format!("?receipt_handle={current}&receipt_handle={current}"),
        format!("?receipt_handle={current}&force=1"),
    ] {
        let refused = basaltic
            .call(
                Method::DELETE,
                &format!("{base}{query}"),
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
    for (receipt, expected) in [
        (
            altered(&current),
            (StatusCode::BAD_REQUEST, "receipt_handle_invalid"),
        ),
        (
            "AQAAAH8forged".to_owned(),
            (StatusCode::BAD_REQUEST, "receipt_handle_invalid"),
        ),
        (
            theirs.clone(),
            (StatusCode::BAD_REQUEST, "receipt_handle_invalid"),
        ),
        (old, (StatusCode::CONFLICT, "receipt_handle_stale")),
    ] {
        let refused = basaltic.delete(&id, &receipt).await;
        assert_eq!(code(&refused), expected);
        assert!(!refused.text.contains(&receipt), "a receipt was echoed");
    }
    assert_eq!(basaltic.inspect(&id).await.len(), 1, "nothing was deleted");
    assert_eq!(basaltic.inspect(&other).await.len(), 1, "nor elsewhere");
    let deleted = basaltic.delete(&id, &current).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);
    assert!(basaltic.inspect(&id).await.is_empty());
    let again = basaltic.delete(&id, &current).await;
    assert_eq!(code(&again), (StatusCode::CONFLICT, "receipt_handle_stale"));
}

/// Visibility counts from the change and 0 releases; after a release the receipt can no longer
/// extend (409) but still deletes until the message is received again; the timeout is 0–43200.
#[tokio::test(start_paused = true)]
async fn basaltic_a_released_receipt_cannot_extend_but_still_deletes() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    basaltic.send(&id, &json!({ "body": "kept" })).await;
    let current = receipt(&basaltic.receive(&id, json!({})).await[0]);
    for seconds in [-1, 43_201] {
        let refused = basaltic.visibility(&id, &current, seconds).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{seconds}"
        );
    }
    let missing = basaltic
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/visibility"),
            &basaltic.admin,
            json!({ "receipt_handle": current }).to_string(),
        )
        .await;
    assert_eq!(
        code(&missing),
        (StatusCode::BAD_REQUEST, "invalid_argument")
    );
    let extended = basaltic.visibility(&id, &current, 100).await;
    assert_eq!(extended.status, StatusCode::NO_CONTENT, "{}", extended.text);
    // Counted from the change: hidden for 100 s more, whatever the queue's 30 s.
    tokio::time::advance(Duration::from_secs(99)).await;
    assert!(basaltic.receive(&id, json!({})).await.is_empty());
    let released = basaltic.visibility(&id, &current, 0).await;
    assert_eq!(released.status, StatusCode::NO_CONTENT);
    let extend_again = basaltic.visibility(&id, &current, 30).await;
    assert_eq!(
        code(&extend_again),
        (StatusCode::CONFLICT, "receipt_handle_stale")
    );
    let deleted = basaltic.delete(&id, &current).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);
    assert!(basaltic.inspect(&id).await.is_empty());
}

/// Batches take 1 to 10 entries with unique ids of 1–80 letters, digits, `-`, `_`; a batch
/// refused whole sends nothing.
#[tokio::test(start_paused = true)]
async fn basaltic_batches_take_up_to_ten_entries_with_unique_ids() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let entry = |entry_id: &str| json!({ "id": entry_id, "body": "b" });
    let eleven: Vec<Value> = (0..11).map(|n| entry(&format!("e{n}"))).collect();
    for entries in [
        json!([]),
        json!(eleven),
        json!([entry("a"), entry("a")]),
        json!([entry("a b")]),
        json!([entry(&"x".repeat(81))]),
        json!([entry("")]),
        json!([{ "body": "no id" }]),
        json!([entry("a"), "not an object"]),
        json!({ "id": "a" }),
    ] {
        let refused = basaltic.batch(&id, "batch", entries.clone()).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{entries}"
        );
    }
    assert!(basaltic.inspect(&id).await.is_empty(), "nothing was sent");
    let ten: Vec<Value> = (0..10)
        .map(|n| entry(&format!("{}{n}", "x".repeat(79))))
        .collect();
    let sent = basaltic.batch(&id, "batch", json!(ten)).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    assert_eq!(sent.body["successful"].as_array().unwrap().len(), 10);
}

/// A batch answers each entry: failures carry their id and code, the others succeed (send ones
/// with their message id); HTTP 200 either way.
#[tokio::test(start_paused = true)]
async fn basaltic_batches_answer_each_entry() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let sent = basaltic
        .batch(
            &id,
            "batch",
            json!([
                { "id": "good", "body": "one" },
                { "id": "late", "body": "two", "delay_seconds": 901 },
                { "id": "reserved", "body": "three", "attributes": { "AWS.x": { "type": "String", "value": "v" } } },
                { "id": "also-good", "body": "four" },
            ]),
        )
        .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    let successful = sent.body["successful"].as_array().unwrap();
    let ids: Vec<&str> = successful
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["good", "also-good"]);
    assert!(
        successful
            .iter()
            .all(|entry| entry["message_id"].is_string())
    );
    let failed = sent.body["failed"].as_array().unwrap();
    for entry_id in ["late", "reserved"] {
        let entry = failed.iter().find(|entry| entry["id"] == entry_id).unwrap();
        assert_eq!(entry["code"], "invalid_argument", "{entry}");
        assert!(entry["message"].is_string());
    }
    assert_eq!(basaltic.inspect(&id).await.len(), 2);

    let first = basaltic
        .receive(
            &id,
            json!({ "max_messages": 2, "visibility_timeout_seconds": 0 }),
        )
        .await;
    let old: Vec<String> = first.iter().map(receipt).collect();
    let second = basaltic.receive(&id, json!({ "max_messages": 2 })).await;
    let current: Vec<String> = second.iter().map(receipt).collect();
    assert_eq!((old.len(), current.len()), (2, 2));
    let failed_code = |reply: &Reply, entry_id: &str| {
        let failed = reply.body["failed"].as_array().unwrap();
        let entry = failed.iter().find(|entry| entry["id"] == entry_id);
        let entry = entry.unwrap_or_else(|| panic!("{entry_id} did not fail: {}", reply.text));
        entry["code"].as_str().unwrap().to_owned()
    };
    let visibility = basaltic
        .batch(
            &id,
            "visibility-batch",
            json!([
                { "id": "old", "receipt_handle": old[0], "visibility_timeout_seconds": 0 },
                { "id": "long", "receipt_handle": current[0], "visibility_timeout_seconds": 43_201 },
                { "id": "bare", "receipt_handle": current[0] },
                { "id": "altered", "receipt_handle": altered(&current[0]), "visibility_timeout_seconds": 0 },
            ]),
        )
        .await;
    assert_eq!(visibility.status, StatusCode::OK, "{}", visibility.text);
    assert_eq!(visibility.body["successful"], json!([]));
    assert_eq!(failed_code(&visibility, "old"), "receipt_handle_stale");
    assert_eq!(failed_code(&visibility, "long"), "invalid_argument");
    assert_eq!(failed_code(&visibility, "bare"), "invalid_argument");
    assert_eq!(
        failed_code(&visibility, "altered"),
        "receipt_handle_invalid"
    );
    assert!(
        basaltic.receive(&id, json!({})).await.is_empty(),
        "nothing was released"
    );
    let deleted = basaltic
        .batch(
            &id,
            "delete-batch",
            json!([
                { "id": "old", "receipt_handle": old[1] },
                { "id": "altered", "receipt_handle": altered(&current[1]) },
                { "id": "none" },
                { "id": "current", "receipt_handle": current[0] },
            ]),
        )
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    assert_eq!(deleted.body["successful"], json!([{ "id": "current" }]));
    assert_eq!(failed_code(&deleted, "old"), "receipt_handle_stale");
    assert_eq!(failed_code(&deleted, "altered"), "receipt_handle_invalid");
    assert_eq!(failed_code(&deleted, "none"), "invalid_argument");
    assert_eq!(
        basaltic.inspect(&id).await.len(),
        1,
        "only `current` deleted"
    );
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

/// Metrics take `read_metrics` and only `since` (an RFC 3339 time, once); the gateway samples
/// every queue every 10 s, so the samples follow the queue as time passes.
#[tokio::test(start_paused = true)]
async fn basaltic_metrics_are_sampled_as_time_passes() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let path = format!("/v1/queues/{id}/metrics");
    let denied = basaltic
        .call(Method::GET, &path, &basaltic.reader, Body::empty())
        .await;
    assert_eq!(code(&denied), (StatusCode::FORBIDDEN, "permission_denied"));
    for query in [
        "since=yesterday",
        "since=2026-03-01T00:00:00Z&since=2026-03-01T00:00:00Z",
        "from=2026-03-01T00:00:00Z",
    ] {
        let refused = basaltic
            .call(
                Method::GET,
                &format!("{path}?{query}"),
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
    for n in 0..3 {
        basaltic
            .send(&id, &json!({ "body": format!("m{n}") }))
            .await;
    }
    // Slept, not advanced: the sampler, a task of its own, runs while the test waits.
    tokio::time::sleep(Duration::from_secs(25)).await;
    let read = |query: &'static str| {
        let (basaltic, uri) = (&basaltic, format!("{path}{query}"));
        async move {
            basaltic
                .call(Method::GET, &uri, &basaltic.admin, Body::empty())
                .await
        }
    };
    let first = read("").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    assert_eq!(first.body["queue_id"], id.as_str());
    assert_eq!(first.body["interval_seconds"], 10);
    let samples = first.body["samples"].as_array().unwrap();
    assert!(!samples.is_empty(), "{}", first.text);
    let last = samples.last().unwrap();
    assert_eq!(
        (&last["visible"], &last["in_flight"]),
        (&json!(3), &json!(0)),
        "{last}"
    );
    basaltic.receive(&id, json!({})).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let second = read("").await;
    let samples = second.body["samples"].as_array().unwrap();
    let last = samples.last().unwrap();
    assert_eq!(
        (&last["visible"], &last["in_flight"]),
        (&json!(2), &json!(1)),
        "{last}"
    );
    let later = read("?since=2026-03-02T00:00:00Z").await;
    assert_eq!(later.body["samples"], json!([]), "{}", later.text);
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

/// A round for which the backend cannot even list the queues is a gap (every count `null`) for
/// each queue of the last round, not a sample missing without a trace.
#[tokio::test(start_paused = true)]
async fn basaltic_a_backend_that_cannot_list_leaves_gaps_in_the_metrics() {
    let (admin, entry) = basaltic_key_entry(r#""*" = ["*"]"#);
    let service = with_tables(&format!(
        "[basaltic]\nmetrics_interval_seconds = 1\nall_queues = true\n\n{entry}"
    ))
    .await;
    let listed = service
        .call(request(
            Method::GET,
            "/v1/queues",
            Some(&admin),
            Body::empty(),
        ))
        .await;
    let id = listed.body["queues"][0]["id"].as_str().unwrap().to_owned();
    let samples = || async {
        let reply = service
            .call(request(
                Method::GET,
                &format!("/v1/queues/{id}/metrics"),
                Some(&admin),
                Body::empty(),
            ))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
        reply.body["samples"].as_array().unwrap().clone()
    };
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let before = samples().await;
    assert!(before.iter().all(|s| s["visible"].is_u64()), "{before:?}");
    service.backend.fail_listings(true);
    tokio::time::sleep(Duration::from_secs(3)).await;
    service.backend.fail_listings(false);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = samples().await;
    let gaps = after.iter().filter(|s| s["visible"].is_null()).count();
    assert!(
        gaps >= 2,
        "the rounds without a listing are gaps: {after:?}"
    );
    for gap in after.iter().filter(|s| s["visible"].is_null()) {
        for field in [
            "in_flight",
            "delayed",
            "sends",
            "receives",
            "repeated_receives",
        ] {
            assert!(gap[field].is_null(), "{field}: {gap}");
        }
    }
    assert!(
        after.last().unwrap()["visible"].is_u64(),
        "sampled again once listed"
    );
}
