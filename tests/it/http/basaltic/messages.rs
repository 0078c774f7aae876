//! The basaltic queue API over HTTP on both backends: queues by UUID, the document's two request
//! bodies verbatim, receipts (current, stale, of another queue), attribute limits at their edges,
//! FIFO rules, permissions, and the one error shape.

use crate::harness::unique;
use crate::harness::{Answer, GatewayBuilder, Kind, TestGateway, answer};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqs_gateway::credentials::api_keys;

/// The document's `request-1.json` and `request-2.json`, verbatim.
pub const REQUEST_1: &str = r#"{
  "body": "{\"order_id\":\"A-1001\"}",
  "attributes": {
    "event": { "type": "String", "value": "order.paid" }
  }
}"#;
pub const REQUEST_2: &str = r#"{
  "max_messages": 10,
  "wait_time_seconds": 20,
  "visibility_timeout_seconds": 60
}"#;

/// A gateway with the basaltic API: an all-powerful key, and keys with less.
pub struct Basaltic {
    pub gw: TestGateway,
    /// Every permission on every queue.
    pub admin: String,
    /// Receive only, on every queue.
    pub reader: String,
    /// Manage queues only, on every queue.
    pub manager: String,
    toml: String,
}

impl Basaltic {
    pub async fn start(kind: Kind) -> Self {
        Self::start_with(kind, "").await
    }

    /// With lines for the `[basaltic]` table.
    pub async fn start_with(kind: Kind, basaltic: &str) -> Self {
        Self::start_configured(kind, basaltic, "").await
    }

    /// With lines for the `[basaltic]` table and more tables after it.
    pub async fn start_configured(kind: Kind, basaltic: &str, tables: &str) -> Self {
        let admin = api_keys::generate_key();
        let reader = api_keys::generate_key();
        let manager = api_keys::generate_key();
        let toml = format!(
            "[basaltic]\n{basaltic}\n[[basaltic.keys]]\nid = \"{}\"\nname = \"admin\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"*\"] }}\n\n[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"receive\"] }}\n\n[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"manage_queues\"] }}\n",
            admin.id, admin.hash, reader.id, reader.hash, manager.id, manager.hash
        ) + "\n"
            + tables;
        Self {
            gw: GatewayBuilder::new(kind).config(&toml).start().await,
            admin: admin.key,
            reader: reader.key,
            manager: manager.key,
            toml,
        }
    }

    /// A second replica: the same backend, receipt key and keys; its own alias table.
    pub async fn replica(&self, kind: Kind) -> crate::harness::TestGateway {
        GatewayBuilder::new(kind)
            .replica_of(&self.gw)
            .config(&self.toml)
            .start()
            .await
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&str>,
    ) -> Answer {
        let mut request = self
            .gw
            .http
            .request(method, format!("{}{path}", self.gw.base));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_owned());
        }
        answer(request.send().await.unwrap()).await
    }

    /// The backend name of the queue named `name` (`sqsgw_bq_<name>_<8 hex>`).
    pub async fn backend_name(&self, name: &str) -> String {
        let listed = self
            .gw
            .backend
            .list_queues(&format!("sqsgw_bq_{name}_"))
            .await
            .unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        listed[0].clone()
    }

    /// Creates a queue; answers its id.
    pub async fn create(&self, body: Value) -> String {
        let created = self
            .call(
                Method::POST,
                "/v1/queues",
                Some(&self.admin),
                Some(&body.to_string()),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        created.body["result"]["id"].as_str().unwrap().to_owned()
    }

    pub async fn send(&self, id: &str, body: &str) -> Answer {
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages"),
            Some(&self.admin),
            Some(body),
        )
        .await
    }

    pub async fn receive(&self, id: &str, body: &str) -> Vec<Value> {
        let got = self
            .call(
                Method::POST,
                &format!("/v1/queues/{id}/messages/receive"),
                Some(&self.admin),
                Some(body),
            )
            .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.body);
        got.body["messages"].as_array().unwrap().clone()
    }

    pub async fn delete(&self, id: &str, handle: &str) -> Answer {
        let encoded: String = form_urlencoded::byte_serialize(handle.as_bytes()).collect();
        self.call(
            Method::DELETE,
            &format!("/v1/queues/{id}/messages?receipt_handle={encoded}"),
            Some(&self.admin),
            None,
        )
        .await
    }

    pub async fn visibility(&self, id: &str, handle: &str, seconds: u32) -> Answer {
        let body =
            json!({ "receipt_handle": handle, "visibility_timeout_seconds": seconds }).to_string();
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/visibility"),
            Some(&self.admin),
            Some(&body),
        )
        .await
    }
}

fn name() -> String {
    unique("q-")
}

pub fn code(answer: &Answer) -> (StatusCode, String) {
    (
        answer.status,
        answer.body["error"]["code"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}

/// The document's flow: send request-1, receive with request-2, delete with the current receipt.
async fn the_documents_requests_send_receive_and_delete(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name() })).await;
    assert!(uuid::Uuid::parse_str(&id).is_ok());
    let sent = api.send(&id, REQUEST_1).await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.body);
    let message_id = sent.body["result"]["message_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let messages = api.receive(&id, REQUEST_2).await;
    assert_eq!(messages.len(), 1);
    let message = &messages[0];
    assert_eq!(message["message_id"], message_id.as_str());
    assert_eq!(message["body"], r#"{"order_id":"A-1001"}"#);
    assert_eq!(
        message["attributes"],
        json!({ "event": { "type": "String", "value": "order.paid" } })
    );
    assert_eq!(message["receive_count"], 1);
    let visible_at =
        chrono::DateTime::parse_from_rfc3339(message["visible_at"].as_str().unwrap()).unwrap();
    let lease = visible_at
        .signed_duration_since(api.gw.clock_now())
        .num_seconds();
    assert!(
        (55..=60).contains(&lease),
        "visible again in about 60 s: {lease}"
    );
    let handle = message["receipt_handle"].as_str().unwrap();
    let deleted = api.delete(&id, handle).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert_eq!(
        code(&api.delete(&id, handle).await),
        (StatusCode::CONFLICT, "receipt_handle_stale".into())
    );
    // Fewer than ten, even none, is a valid answer.
    assert!(
        api.receive(&id, r#"{"wait_time_seconds": 0}"#)
            .await
            .is_empty()
    );
}

/// Visibility counts from the change, 0 releases; an old receipt after another receive, or a
/// receipt of another queue, can neither delete nor extend, and nothing changes.
async fn only_the_current_receipt_of_the_queue_acts(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name() })).await;
    let other = api.create(json!({ "name": name() })).await;
    api.send(&id, r#"{"body": "work"}"#).await;
    let first = api
        .receive(&id, r#"{"visibility_timeout_seconds": 30}"#)
        .await;
    let old = first[0]["receipt_handle"].as_str().unwrap().to_owned();
    assert_eq!(
        api.visibility(&id, &old, 0).await.status,
        StatusCode::NO_CONTENT
    );
    let second = api
        .receive(
            &id,
            r#"{"visibility_timeout_seconds": 30, "wait_time_seconds": 2}"#,
        )
        .await;
    assert_eq!(second[0]["receive_count"], 2);
    let current = second[0]["receipt_handle"].as_str().unwrap().to_owned();
    assert_eq!(
        code(&api.delete(&id, &old).await),
        (StatusCode::CONFLICT, "receipt_handle_stale".into())
    );
    assert_eq!(
        code(&api.visibility(&id, &old, 600).await).0,
        StatusCode::CONFLICT
    );
    assert_eq!(
        code(&api.delete(&other, &current).await),
        (StatusCode::BAD_REQUEST, "receipt_handle_invalid".into())
    );
    assert_eq!(
        code(&api.delete(&id, "not-a-receipt").await).1,
        "receipt_handle_invalid"
    );
    // Nothing changed: the current receipt still holds the message, and deletes it.
    assert!(
        api.receive(&id, r#"{"wait_time_seconds": 0}"#)
            .await
            .is_empty()
    );
    assert_eq!(
        api.delete(&id, &current).await.status,
        StatusCode::NO_CONTENT
    );
}

/// 20 attributes but not 21; names of 256 bytes but not 257; values of 1,024 bytes but not
/// 1,025; Binary in standard base64 both ways; body and attributes within max_message_bytes.
async fn attribute_and_size_limits_hold_at_their_edges(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api
        .create(json!({ "name": name(), "settings": { "max_message_bytes": 1024 } }))
        .await;
    let attributes = |count: usize| -> Value {
        (0..count)
            .map(|i| {
                (
                    format!("a{i}"),
                    json!({ "type": "Number", "value": i.to_string() }),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let send = |attributes: Value, body: String| {
        let request = json!({ "body": body, "attributes": attributes }).to_string();
        let api = &api;
        let id = id.clone();
        async move { api.send(&id, &request).await }
    };
    assert_eq!(
        send(attributes(20), "x".into()).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        code(&send(attributes(21), "x".into()).await),
        (StatusCode::BAD_REQUEST, "invalid_argument".into())
    );
    let named = |length: usize| json!({ "n".repeat(length): { "type": "String", "value": "v" } });
    let long_name = send(named(256), "x".into()).await;
    assert_eq!(long_name.status, StatusCode::CREATED, "{}", long_name.body);
    assert_eq!(
        send(named(257), "x".into()).await.status,
        StatusCode::BAD_REQUEST
    );
    let valued = |length: usize| json!({ "v": { "type": "String", "value": "v".repeat(length) } });
    let big = api.create(json!({ "name": name() })).await;
    let to_big = |attributes: Value| {
        let request = json!({ "body": "x", "attributes": attributes }).to_string();
        let api = &api;
        let big = big.clone();
        async move { api.send(&big, &request).await }
    };
    assert_eq!(to_big(valued(1024)).await.status, StatusCode::CREATED);
    assert_eq!(to_big(valued(1025)).await.status, StatusCode::BAD_REQUEST);
    // Exactly max_message_bytes fits; one more byte does not.
    assert_eq!(
        send(json!({}), "b".repeat(1024)).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        code(&send(json!({}), "b".repeat(1025)).await).0,
        StatusCode::BAD_REQUEST
    );
    let binary = json!({ "blob": { "type": "Binary", "value": "AAEC/w==" } });
    assert_eq!(to_big(binary.clone()).await.status, StatusCode::CREATED);
    assert_eq!(
        to_big(json!({ "blob": { "type": "Binary", "value": "not base64!" } }))
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        to_big(json!({ "t": { "type": "Date", "value": "x" } }))
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
    let mut got = Vec::new();
    for _ in 0..5 {
        got.extend(
            api.receive(&big, r#"{"max_messages": 10, "wait_time_seconds": 1}"#)
                .await,
        );
        if got.len() >= 3 {
            break;
        }
    }
    let with_blob = got
        .iter()
        .find(|m| m["attributes"].get("blob").is_some())
        .expect("the binary message");
    assert_eq!(with_blob["attributes"]["blob"], binary["blob"]);
}

/// FIFO queues: a per-message delay is refused (they use the queue's delay); a group id is needed;
/// content-based deduplication drops a repeat.
async fn fifo_queues_refuse_per_message_delay(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name(), "type": "fifo", "settings": { "content_based_deduplication": true } })).await;
    let delayed = api
        .send(&id, r#"{"body": "x", "group_id": "g", "delay_seconds": 5}"#)
        .await;
    assert_eq!(
        code(&delayed),
        (StatusCode::BAD_REQUEST, "invalid_argument".into())
    );
    assert!(
        delayed.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("delay_seconds")
    );
    assert_eq!(
        api.send(&id, r#"{"body": "x"}"#).await.status,
        StatusCode::BAD_REQUEST,
        "group_id needed"
    );
    assert_eq!(
        api.send(&id, r#"{"body": "x", "group_id": "g"}"#)
            .await
            .status,
        StatusCode::CREATED
    );
    assert_eq!(
        api.send(&id, r#"{"body": "x", "group_id": "g"}"#)
            .await
            .status,
        StatusCode::CREATED
    );
    let got = api
        .receive(&id, r#"{"max_messages": 10, "wait_time_seconds": 1}"#)
        .await;
    assert_eq!(got.len(), 1, "deduplicated by content");
    let standard = api.create(json!({ "name": name() })).await;
    assert_eq!(
        api.send(&standard, r#"{"body": "x", "delay_seconds": 1}"#)
            .await
            .status,
        StatusCode::CREATED
    );
}

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

/// Keys and permissions; every refusal in the one shape.
async fn keys_and_permissions_are_enforced(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name() })).await;
    let no_key = api
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages"),
            None,
            Some(REQUEST_1),
        )
        .await;
    assert_eq!(
        code(&no_key),
        (StatusCode::UNAUTHORIZED, "unauthenticated".into())
    );
    assert_eq!(no_key.headers["www-authenticate"], "Bearer");
    let wrong = api
        .call(Method::GET, "/v1/queues", Some("sqsgw_nobody_x"), None)
        .await;
    assert_eq!(code(&wrong).0, StatusCode::UNAUTHORIZED);
    let reader_send = api
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages"),
            Some(&api.reader),
            Some(REQUEST_1),
        )
        .await;
    assert_eq!(
        code(&reader_send),
        (StatusCode::FORBIDDEN, "permission_denied".into())
    );
    let reader_receive = api
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/receive"),
            Some(&api.reader),
            Some(r#"{"wait_time_seconds": 0}"#),
        )
        .await;
    assert_eq!(reader_receive.status, StatusCode::OK);
    let reader_create = api
        .call(
            Method::POST,
            "/v1/queues",
            Some(&api.reader),
            Some(r#"{"name": "nope"}"#),
        )
        .await;
    assert_eq!(code(&reader_create).0, StatusCode::FORBIDDEN);
    let reader_delete = api
        .call(
            Method::DELETE,
            &format!("/v1/queues/{id}"),
            Some(&api.reader),
            None,
        )
        .await;
    assert_eq!(code(&reader_delete).0, StatusCode::FORBIDDEN);
    for missing in ["00000000-0000-4000-8000-000000000000", "not-a-uuid"] {
        let answer = api
            .call(
                Method::POST,
                &format!("/v1/queues/{missing}/messages"),
                Some(&api.admin),
                Some(REQUEST_1),
            )
            .await;
        assert_eq!(
            code(&answer),
            (StatusCode::NOT_FOUND, "queue_not_found".into())
        );
    }
    for bad in [
        "not json",
        r#"{"body": 1}"#,
        r#"{"body": "x", "extra": 1}"#,
        r#"{"body": "x", "delay_seconds": 901}"#,
    ] {
        let answer = api.send(&id, bad).await;
        assert_eq!(
            code(&answer),
            (StatusCode::BAD_REQUEST, "invalid_argument".into()),
            "{bad}"
        );
    }
    for bad in [
        r#"{"max_messages": 11}"#,
        r#"{"wait_time_seconds": 21}"#,
        r#"{"visibility_timeout_seconds": 43201}"#,
    ] {
        let answer = api
            .call(
                Method::POST,
                &format!("/v1/queues/{id}/messages/receive"),
                Some(&api.admin),
                Some(bad),
            )
            .await;
        assert_eq!(code(&answer).1, "invalid_argument", "{bad}");
    }
    let no_route = api
        .call(
            Method::GET,
            &format!("/v1/queues/{id}/nothing"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(code(&no_route), (StatusCode::NOT_FOUND, "not_found".into()));
    let wrong_method = api
        .call(
            Method::PUT,
            &format!("/v1/queues/{id}/messages/receive"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(
        code(&wrong_method),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed".into())
    );
    let missing_handle = api
        .call(
            Method::DELETE,
            &format!("/v1/queues/{id}/messages"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(code(&missing_handle).1, "invalid_argument");
}

/// Batches: one result per entry, by its id; only the failures need a retry.
async fn batches_answer_each_entry(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name() })).await;
    let path = |rest: &str| format!("/v1/queues/{id}/messages/{rest}");
    let many: serde_json::Map<String, Value> = (0..21)
        .map(|i| (format!("a{i}"), json!({ "type": "String", "value": "v" })))
        .collect();
    let batch = json!({ "entries": [
        { "id": "one", "body": "first" },
        { "id": "two", "body": "second", "attributes": many },
        { "id": "three", "body": "third", "attributes": { "k": { "type": "Number", "value": "3" } } },
    ] });
    let sent = api
        .call(
            Method::POST,
            &path("batch"),
            Some(&api.admin),
            Some(&batch.to_string()),
        )
        .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.body);
    let ok: Vec<&str> = sent.body["successful"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ok, ["one", "three"]);
    assert_eq!(sent.body["failed"][0]["id"], "two");
    assert_eq!(sent.body["failed"][0]["code"], "invalid_argument");
    assert!(sent.body["successful"][0]["message_id"].is_string());
    let twice = json!({ "entries": [{ "id": "a", "body": "x" }, { "id": "a", "body": "y" }] });
    assert_eq!(
        code(
            &api.call(
                Method::POST,
                &path("batch"),
                Some(&api.admin),
                Some(&twice.to_string())
            )
            .await
        )
        .0,
        StatusCode::BAD_REQUEST
    );
    let eleven: Vec<Value> = (0..11)
        .map(|i| json!({ "id": format!("e{i}"), "body": "x" }))
        .collect();
    let too_many = json!({ "entries": eleven }).to_string();
    assert_eq!(
        code(
            &api.call(
                Method::POST,
                &path("batch"),
                Some(&api.admin),
                Some(&too_many)
            )
            .await
        )
        .0,
        StatusCode::BAD_REQUEST
    );
    let mut got = Vec::new();
    for _ in 0..5 {
        got.extend(
            api.receive(&id, r#"{"max_messages": 10, "wait_time_seconds": 1}"#)
                .await,
        );
        if got.len() == 2 {
            break;
        }
    }
    assert_eq!(got.len(), 2);
    let h = |i: usize| got[i]["receipt_handle"].as_str().unwrap().to_owned();
    let extend = json!({ "entries": [
        { "id": "x", "receipt_handle": h(0), "visibility_timeout_seconds": 120 },
        { "id": "y", "receipt_handle": "bogus", "visibility_timeout_seconds": 120 },
    ] });
    let extended = api
        .call(
            Method::POST,
            &path("visibility-batch"),
            Some(&api.admin),
            Some(&extend.to_string()),
        )
        .await;
    assert_eq!(extended.body["successful"], json!([{ "id": "x" }]));
    assert_eq!(extended.body["failed"][0]["code"], "receipt_handle_invalid");
    let delete = json!({ "entries": [
        { "id": "p", "receipt_handle": h(0) },
        { "id": "q", "receipt_handle": h(1) },
        { "id": "r" },
    ] });
    let deleted = api
        .call(
            Method::POST,
            &path("delete-batch"),
            Some(&api.admin),
            Some(&delete.to_string()),
        )
        .await;
    assert_eq!(
        deleted.body["successful"],
        json!([{ "id": "p" }, { "id": "q" }])
    );
    assert_eq!(deleted.body["failed"][0]["id"], "r");
    let again = api
        .call(
            Method::POST,
            &path("delete-batch"),
            Some(&api.admin),
            Some(&delete.to_string()),
        )
        .await;
    let stale: Vec<&Value> = again.body["failed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["code"] == "receipt_handle_stale")
        .collect();
    assert_eq!(stale.len(), 2, "{}", again.body);
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

/// Ids are UUIDs in any written form; a dead-letter target takes the send permission; a Binary
/// value's limit counts its decoded bytes.
async fn ids_dead_letter_targets_and_binary_values(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name() })).await;
    let upper = id.to_uppercase();
    let shown = api
        .call(
            Method::GET,
            &format!("/v1/queues/{upper}"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert_eq!(shown.body["result"]["id"], id.as_str());
    let routed = api
        .call(
            Method::POST,
            "/v1/queues",
            Some(&api.manager),
            Some(
                &json!({ "name": name(), "settings": { "dead_letter_queue": { "queue_id": id } } })
                    .to_string(),
            ),
        )
        .await;
    assert_eq!(code(&routed).0, StatusCode::FORBIDDEN, "{}", routed.body);
    use base64::Engine as _;
    let blob = |length: usize| {
        let value = base64::engine::general_purpose::STANDARD.encode(vec![7u8; length]);
        json!({ "body": "x", "attributes": { "b": { "type": "Binary", "value": value } } })
            .to_string()
    };
    assert_eq!(api.send(&id, &blob(1024)).await.status, StatusCode::CREATED);
    assert_eq!(
        code(&api.send(&id, &blob(1025)).await).0,
        StatusCode::BAD_REQUEST
    );
}

/// The document's names: any 1 to 256 bytes. Names SQS would refuse (accents, `:`, `/`, spaces)
/// travel packed in the core's codec and come back unchanged with their types and values, through
/// receive and (where the backend can) inspect; the reserved prefixes stay refused.
async fn attribute_names_are_any_1_to_256_bytes(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name() })).await;
    let attributes = json!({
        "évent": { "type": "String", "value": "order.paid" },
        "evento.año": { "type": "Number", "value": "2026" },
        "event:type": { "type": "Binary", "value": "AAEC/w==" },
        "event/type": { "type": "String", "value": "a/b" },
        "event type": { "type": "Number", "value": "-1.5" },
        "plain": { "type": "String", "value": "as SQS has it" },
        ("é".repeat(128)): { "type": "String", "value": "256 bytes" },
    });
    let request = json!({ "body": "named", "attributes": attributes }).to_string();
    let sent = api.send(&id, &request).await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.body);
    // One name alone, with nothing to pack it with.
    let alone = json!({ "body": "alone", "attributes": { "event:type": { "type": "String", "value": "x" } } });
    let sent = api.send(&id, &alone.to_string()).await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.body);
    if kind == Kind::Embedded {
        let inspected = api
            .call(
                Method::GET,
                &format!("/v1/queues/{id}/messages?max_messages=10"),
                Some(&api.admin),
                None,
            )
            .await;
        assert_eq!(inspected.status, StatusCode::OK, "{}", inspected.body);
        let named = inspected.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["body"] == "named")
            .expect("inspected");
        assert_eq!(named["attributes"], attributes);
    }
    let mut got = Vec::new();
    for _ in 0..5 {
        got.extend(
            api.receive(&id, r#"{"max_messages": 10, "wait_time_seconds": 1}"#)
                .await,
        );
        if got.len() >= 2 {
            break;
        }
    }
    let by_body = |body: &str| {
        got.iter()
            .find(|m| m["body"] == body)
            .unwrap_or_else(|| panic!("{body}: {got:?}"))
    };
    assert_eq!(by_body("named")["attributes"], attributes);
    assert_eq!(by_body("alone")["attributes"], alone["attributes"]);
    // Receipts are URL-safe here (the delete route takes them in its query string); the standard
    // spelling of the same receipt (the SQS endpoint's) acts too.
    for message in &got {
        let handle = message["receipt_handle"].as_str().unwrap();
        assert!(!handle.contains(['+', '/', '=']), "{handle}");
    }
    use base64::Engine as _;
    let standard = |handle: &str| {
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(handle)
            .unwrap();
        base64::engine::general_purpose::STANDARD.encode(raw)
    };
    for message in &got {
        let handle = standard(message["receipt_handle"].as_str().unwrap());
        assert_eq!(
            api.delete(&id, &handle).await.status,
            StatusCode::NO_CONTENT
        );
    }
    // Nothing stricter than the document, but the prefixes the API reserves stay reserved.
    for reserved in ["AWS.trace", "amazon.id", "sqsgw.attributes", "SQSGW.x"] {
        let request =
            json!({ "body": "x", "attributes": { reserved: { "type": "String", "value": "v" } } });
        let refused = api.send(&id, &request.to_string()).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument".into()),
            "{reserved}"
        );
    }
    let too_long = json!({ "body": "x", "attributes": { (format!("{}n", "é".repeat(128))): { "type": "String", "value": "v" } } });
    assert_eq!(
        code(&api.send(&id, &too_long.to_string()).await).0,
        StatusCode::BAD_REQUEST
    );
}

/// A key given twice, anywhere in a body, is refused (`invalid_argument`, naming the key, showing
/// no value) instead of the last value silently winning; nothing is sent or created.
#[tokio::test]
async fn a_key_given_twice_is_refused() {
    let api = Basaltic::start(Kind::Embedded).await;
    let queue_name = name();
    let id = api.create(json!({ "name": queue_name })).await;
    let messages = format!("/v1/queues/{id}/messages");
    let batch = format!("/v1/queues/{id}/messages/batch");
    for (path, body, key) in [
        (
            messages.as_str(),
            r#"{"body":"first","body":"second"}"#,
            "\"body\"",
        ),
        (
            messages.as_str(),
            r#"{"body":"x","attributes":{"a":{"type":"String","value":"first"},"a":{"type":"Number","value":"2"}}}"#,
            "attributes: the key \"a\"",
        ),
        (
            messages.as_str(),
            r#"{"body":"x","attributes":{"a":{"type":"String","value":"first","value":"second"}}}"#,
            "attributes.a: the key \"value\"",
        ),
        (
            batch.as_str(),
            r#"{"entries":[{"id":"1","body":"x"},{"id":"2","id":"3","body":"second"}]}"#,
            "entries[1]: the key \"id\"",
        ),
        ("/v1/queues", r#"{"name":"dupa","name":"dupb"}"#, "\"name\""),
    ] {
        let answer = api
            .call(Method::POST, path, Some(&api.admin), Some(body))
            .await;
        assert_eq!(
            code(&answer),
            (StatusCode::BAD_REQUEST, "invalid_argument".into()),
            "{body}: {}",
            answer.body
        );
        let message = answer.body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(key) && message.contains("more than once"),
            "{body}: {message}"
        );
        for value in ["first", "second", "dupa", "dupb"] {
            assert!(!message.contains(value), "{message}");
        }
    }
    let patched = api
        .call(
            Method::PATCH,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            Some(r#"{"settings":{"delay_seconds":0,"delay_seconds":900}}"#),
        )
        .await;
    assert_eq!(
        code(&patched).0,
        StatusCode::BAD_REQUEST,
        "{}",
        patched.body
    );
    let receive = api
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/receive"),
            Some(&api.admin),
            Some(r#"{"wait_time_seconds":0,"wait_time_seconds":20}"#),
        )
        .await;
    assert_eq!(
        code(&receive).0,
        StatusCode::BAD_REQUEST,
        "{}",
        receive.body
    );
    assert!(
        api.receive(&id, r#"{"max_messages": 10}"#).await.is_empty(),
        "nothing was sent"
    );
    let listed = api
        .call(Method::GET, "/v1/queues", Some(&api.admin), None)
        .await;
    assert_eq!(
        listed.body["queues"].as_array().unwrap().len(),
        1,
        "nothing was created"
    );
    let shown = api
        .call(
            Method::GET,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(shown.body["result"]["settings"]["delay_seconds"], 0);
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

/// A message sent with a W3C `traceparent` request header carries that context (as its
/// `AWSTraceHeader`, in X-Ray form, which also travels through SQS); one with its own
/// `traceparent` attribute keeps its own.
async fn a_send_carries_the_request_s_trace_context(kind: Kind) {
    use sqs_gateway::core::model::BackendReceive;
    let api = Basaltic::start(kind).await;
    let queue = name();
    let id = api.create(json!({ "name": queue })).await;
    let traceparent = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01";
    let send = |body: Value| {
        api.gw
            .http
            .post(format!("{}/v1/queues/{id}/messages", api.gw.base))
            .bearer_auth(&api.admin)
            .header("traceparent", traceparent)
            .json(&body)
            .send()
    };
    let sent = send(json!({ "body": "traced" })).await.unwrap();
    assert_eq!(sent.status(), StatusCode::CREATED);
    let own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let sent = send(json!({
        "body": "its own",
        "attributes": { "traceparent": { "type": "String", "value": own } }
    }))
    .await
    .unwrap();
    assert_eq!(sent.status(), StatusCode::CREATED);
    let backend = &api.gw.backend;
    let url = backend
        .resolve(&api.backend_name(&queue).await)
        .await
        .unwrap()
        .url;
    let mut got = Vec::new();
    for _ in 0..10 {
        let request = BackendReceive {
            max_messages: 10,
            wait_seconds: 1,
            visibility_timeout_seconds: 30,
            attempt_id: None,
            one_per_group: false,
            abandoned: Default::default(),
        };
        got.extend(backend.receive(&url, &request).await.unwrap());
        if got.len() == 2 {
            break;
        }
    }
    let header_of = |body: &str| {
        got.iter()
            .find(|message| message.body == body)
            .unwrap_or_else(|| panic!("{body} received: {got:?}"))
            .trace_header
            .clone()
    };
    assert_eq!(
        header_of("traced").as_deref(),
        Some("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
    );
    assert_eq!(header_of("its own"), None, "its attribute is its context");
}

crate::on_kind!(
    trace_on_localstack,
    LocalStack,
    a_send_carries_the_request_s_trace_context
);
crate::on_kind!(
    trace_on_embedded,
    Embedded,
    a_send_carries_the_request_s_trace_context
);

crate::on_both_backends!(
    concurrent_creates_of_one_name_make_one_queue,
    attribute_names_are_any_1_to_256_bytes,
    a_recreated_name_is_a_new_queue_for_old_ids_everywhere,
    ids_dead_letter_targets_and_binary_values,
    metrics_are_sampled_with_gaps_for_failed_samples,
    batches_answer_each_entry,
    inspect_and_purge,
    settings_change_in_place,
    the_documents_requests_send_receive_and_delete,
    only_the_current_receipt_of_the_queue_acts,
    attribute_and_size_limits_hold_at_their_edges,
    fifo_queues_refuse_per_message_delay,
    queues_are_resources_with_settings,
    keys_and_permissions_are_enforced,
);
