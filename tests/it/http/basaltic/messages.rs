//! basaltic messages over HTTP on both backends: the document's flow with its two request bodies,
//! receipts (current, stale, of another queue), FIFO rules, batches answered per entry, ids in any
//! written form and dead-letter targets, and a send's trace context.

use super::support::*;
use crate::harness::Kind;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

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
    a_send_carries_the_request_s_trace_context,
);
crate::on_kind!(
    trace_on_embedded,
    Embedded,
    a_send_carries_the_request_s_trace_context,
);

crate::on_both_backends!(
    batches_answer_each_entry,
    ids_dead_letter_targets_and_binary_values,
    the_documents_requests_send_receive_and_delete,
    only_the_current_receipt_of_the_queue_acts,
    fifo_queues_refuse_per_message_delay,
);
