//! Real answers of every status a test can provoke (schemathesis, in `tests/clients/contract.sh`,
//! cannot make a backend fail or a key lack a permission), ezgh's and basaltic's, valid against the
//! schema the document gives for their status.

use crate::harness::openapi::{Checker, document};
use crate::harness::{GatewayBuilder, Kind, ORG, PROJECT, TestGateway};
use crate::inprocess::fake::FakeBackend;
use reqwest::{Method, StatusCode};
use serde_json::json;
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::core::backend::{Backend, BackendError};
use sqs_gateway::core::clock::SystemClock;
use sqs_gateway::core::model::QueueSettings;
use sqs_gateway::credentials::api_keys;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The gateway for [`answers_match_their_documented_schemas`]: a fake backend that can fail, the
/// test project's queue `orders`, a basaltic key with every permission and one that may only
/// receive, and one invalid receipt handle a minute per address (so a second is refused).
async fn answering_gateway() -> (TestGateway, Arc<FakeBackend>, String, String) {
    let engine = EmbeddedBackend::in_memory(Arc::new(SystemClock));
    engine
        .create_queue("orders", &QueueSettings::default())
        .await
        .expect("queue created");
    let backend = Arc::new(FakeBackend::new(engine));
    let admin = api_keys::generate_key();
    let reader = api_keys::generate_key();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .with_backend(Arc::clone(&backend) as Arc<dyn Backend>, &["orders"])
        .config(&format!(
            "[server]\ninvalid_handles_per_minute = 1\n\n\
             [[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"*\"] }}\n\n\
             [[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"receive\"] }}\n",
            admin.id, admin.hash, reader.id, reader.hash
        ))
        .start()
        .await;
    (gw, backend, admin.key, reader.key)
}

/// Real answers, errors and backend failures included, match the schemas the documents give for
/// their status; and every status of the list below is reached.
#[tokio::test]
async fn answers_match_their_documented_schemas() {
    let (gw, backend, admin, reader) = answering_gateway().await;
    let foreign = gw.foreign_key.clone();
    let key = gw.key.clone();
    let ezgh = document(&gw, "ezgh").await;
    let basaltic = document(&gw, "basaltic").await;
    let unavailable = || BackendError::Unavailable("injected".into());

    // --- ezgh
    let mut check = Checker {
        gw: &gw,
        doc: ezgh,
        seen: BTreeSet::new(),
    };
    let receive =
        "/v1/organizations/{organization}/projects/{project}/queues/{queue}/messages/receive";
    let queue_url = |queue: &str| {
        format!("/v1/organizations/{ORG}/projects/{PROJECT}/queues/{queue}/messages/receive")
    };
    gw.send("orders", "hello").await;
    let got = check
        .call(
            Method::POST,
            receive,
            &queue_url("orders"),
            Some(&key),
            Some(json!({ "maxMessages": 10 }).to_string()),
            StatusCode::OK,
        )
        .await;
    let handle = got["messages"][0]["receiptHandle"]
        .as_str()
        .expect("a message")
        .to_owned();
    for (body, auth, queue, status) in [
        (
            json!({ "maxMessages": 11 }),
            Some(key.as_str()),
            "orders",
            StatusCode::BAD_REQUEST,
        ),
        (json!({}), None, "orders", StatusCode::UNAUTHORIZED),
        (
            json!({}),
            Some(foreign.as_str()),
            "orders",
            StatusCode::FORBIDDEN,
        ),
        (
            json!({}),
            Some(key.as_str()),
            "nowhere",
            StatusCode::NOT_FOUND,
        ),
    ] {
        check
            .call(
                Method::POST,
                receive,
                &queue_url(queue),
                auth,
                Some(body.to_string()),
                status,
            )
            .await;
    }
    let large = format!("{{\"maxMessages\": 1, \"x\": \"{}\"}}", "x".repeat(70_000));
    check
        .call(
            Method::POST,
            receive,
            &queue_url("orders"),
            Some(&key),
            Some(large.clone()),
            StatusCode::PAYLOAD_TOO_LARGE,
        )
        .await;
    backend.fail_next(unavailable());
    check
        .call(
            Method::POST,
            receive,
            &queue_url("orders"),
            Some(&key),
            Some("{}".into()),
            StatusCode::SERVICE_UNAVAILABLE,
        )
        .await;
    check
        .call(
            Method::POST,
            "/v1/receipts/visibility",
            "/v1/receipts/visibility",
            None,
            Some(
                json!({ "entries": [{ "receiptHandle": handle, "visibilityTimeoutSeconds": 0 }] })
                    .to_string(),
            ),
            StatusCode::OK,
        )
        .await;
    check
        .call(Method::POST, "/v1/receipts/visibility", "/v1/receipts/visibility", None,
            Some(json!({ "entries": [{ "receiptHandle": handle, "visibilityTimeoutSeconds": 43_201 }] }).to_string()), StatusCode::BAD_REQUEST)
        .await;
    check
        .call(
            Method::POST,
            "/v1/receipts/ack",
            "/v1/receipts/ack",
            None,
            Some(json!({ "receiptHandles": [handle] }).to_string()),
            StatusCode::OK,
        )
        .await;
    check
        .call(
            Method::POST,
            "/v1/receipts/ack",
            "/v1/receipts/ack",
            None,
            Some(json!({ "receiptHandles": [] }).to_string()),
            StatusCode::BAD_REQUEST,
        )
        .await;
    check
        .call(
            Method::POST,
            "/v1/receipts/ack",
            "/v1/receipts/ack",
            None,
            Some(large),
            StatusCode::PAYLOAD_TOO_LARGE,
        )
        .await;
    // One invalid handle a minute: the first is answered, the next two are one too many.
    check
        .call(
            Method::POST,
            "/v1/receipts/ack",
            "/v1/receipts/ack",
            None,
            Some(json!({ "receiptHandles": ["forged"] }).to_string()),
            StatusCode::OK,
        )
        .await;
    check
        .call(
            Method::POST,
            "/v1/receipts/ack",
            "/v1/receipts/ack",
            None,
            Some(json!({ "receiptHandles": ["forged", "again"] }).to_string()),
            StatusCode::TOO_MANY_REQUESTS,
        )
        .await;
    let ezgh_seen = std::mem::take(&mut check.seen);
    let expected_ezgh: BTreeSet<(String, u16)> = [
        ("ReceiveMessages", 200),
        ("ReceiveMessages", 400),
        ("ReceiveMessages", 401),
        ("ReceiveMessages", 403),
        ("ReceiveMessages", 404),
        ("ReceiveMessages", 413),
        ("ReceiveMessages", 503),
        ("ChangeMessageVisibility", 200),
        ("ChangeMessageVisibility", 400),
        ("AcknowledgeMessages", 200),
        ("AcknowledgeMessages", 400),
        ("AcknowledgeMessages", 413),
        ("AcknowledgeMessages", 429),
    ]
    .iter()
    .map(|(id, status)| ((*id).to_owned(), *status))
    .collect();
    assert_eq!(ezgh_seen, expected_ezgh);

    // --- basaltic
    check.doc = basaltic;
    let admin = Some(admin.as_str());
    let reader = Some(reader.as_str());
    let queues = "/v1/queues";
    let created = check
        .call(
            Method::POST,
            queues,
            queues,
            admin,
            Some(json!({ "name": "answers" }).to_string()),
            StatusCode::CREATED,
        )
        .await;
    let id = created["result"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        created["result"]["settings"]["max_message_bytes"], 262_144,
        "at most 256 KiB"
    );
    let fifo = check
        .call(Method::POST, queues, queues, admin, Some(json!({ "name": "answers-fifo", "type": "fifo", "settings": { "content_based_deduplication": true } }).to_string()), StatusCode::CREATED)
        .await;
    assert_eq!(
        fifo["result"]["settings"]["content_based_deduplication"],
        true
    );
    for (body, key, status) in [
        (json!({ "name": "answers" }), admin, StatusCode::CONFLICT),
        (
            json!({ "name": "no spaces" }),
            admin,
            StatusCode::BAD_REQUEST,
        ),
        (json!({ "name": "other" }), reader, StatusCode::FORBIDDEN),
        (json!({ "name": "other" }), None, StatusCode::UNAUTHORIZED),
        (
            json!({ "name": "other", "settings": { "dead_letter_queue": { "queue_id": "00000000-0000-4000-8000-000000000000" } } }),
            admin,
            StatusCode::NOT_FOUND,
        ),
    ] {
        check
            .call(
                Method::POST,
                queues,
                queues,
                key,
                Some(body.to_string()),
                status,
            )
            .await;
    }
    check
        .call(Method::GET, queues, queues, admin, None, StatusCode::OK)
        .await;
    check
        .call(
            Method::GET,
            queues,
            queues,
            None,
            None,
            StatusCode::UNAUTHORIZED,
        )
        .await;
    let queue = "/v1/queues/{queue_id}";
    let this = format!("/v1/queues/{id}");
    check
        .call(Method::GET, queue, &this, admin, None, StatusCode::OK)
        .await;
    check
        .call(
            Method::GET,
            queue,
            "/v1/queues/00000000-0000-4000-8000-000000000000",
            admin,
            None,
            StatusCode::NOT_FOUND,
        )
        .await;
    let dead_letter = json!({ "settings": { "content_based_deduplication": false, "dead_letter_queue": { "queue_id": fifo["result"]["id"] } } });
    check
        .call(
            Method::PATCH,
            queue,
            &this,
            admin,
            Some(dead_letter.to_string()),
            StatusCode::BAD_REQUEST,
        )
        .await;
    check
        .call(
            Method::PATCH,
            queue,
            &this,
            admin,
            Some(
                json!({ "settings": { "content_based_deduplication": false, "delay_seconds": 0 } })
                    .to_string(),
            ),
            StatusCode::OK,
        )
        .await;
    check
        .call(
            Method::PATCH,
            queue,
            &this,
            reader,
            Some(json!({ "settings": { "delay_seconds": 1 } }).to_string()),
            StatusCode::FORBIDDEN,
        )
        .await;

    let messages = "/v1/queues/{queue_id}/messages";
    let these = format!("{this}/messages");
    let message = json!({ "body": "{\"order_id\":\"A-1001\"}", "attributes": { "event": { "type": "String", "value": "order.paid" }, "n": { "type": "Number", "value": "1.5" }, "b": { "type": "Binary", "value": "AQID" } } });
    check
        .call(
            Method::POST,
            messages,
            &these,
            admin,
            Some(message.to_string()),
            StatusCode::CREATED,
        )
        .await;
    check
        .call(
            Method::POST,
            messages,
            &these,
            admin,
            Some(json!({ "body": "" }).to_string()),
            StatusCode::BAD_REQUEST,
        )
        .await;
    check
        .call(
            Method::POST,
            messages,
            &these,
            reader,
            Some(message.to_string()),
            StatusCode::FORBIDDEN,
        )
        .await;
    check
        .call(
            Method::POST,
            messages,
            &these,
            admin,
            Some(format!("{{\"body\": \"{}\"}}", "x".repeat(3_300_000))),
            StatusCode::PAYLOAD_TOO_LARGE,
        )
        .await;
    backend.fail_next(unavailable());
    check
        .call(
            Method::POST,
            messages,
            &these,
            admin,
            Some(message.to_string()),
            StatusCode::SERVICE_UNAVAILABLE,
        )
        .await;
    check
        .call(
            Method::GET,
            messages,
            &format!("{these}?max_messages=10"),
            admin,
            None,
            StatusCode::OK,
        )
        .await;
    check
        .call(
            Method::GET,
            messages,
            &format!("{these}?max_messages=11"),
            admin,
            None,
            StatusCode::BAD_REQUEST,
        )
        .await;

    let receive = "/v1/queues/{queue_id}/messages/receive";
    let got = check
        .call(
            Method::POST,
            receive,
            &format!("{these}/receive"),
            admin,
            Some(json!({ "max_messages": 10 }).to_string()),
            StatusCode::OK,
        )
        .await;
    let first = got["messages"][0]["receipt_handle"]
        .as_str()
        .expect("a message")
        .to_owned();
    check
        .call(
            Method::POST,
            receive,
            &format!("{these}/receive"),
            admin,
            Some(json!({ "max_messages": 0 }).to_string()),
            StatusCode::BAD_REQUEST,
        )
        .await;
    backend.fail_next(BackendError::OverLimit);
    check
        .call(
            Method::POST,
            receive,
            &format!("{these}/receive"),
            admin,
            None,
            StatusCode::TOO_MANY_REQUESTS,
        )
        .await;

    let visibility = "/v1/queues/{queue_id}/messages/visibility";
    let change = |handle: &str| {
        json!({ "receipt_handle": handle, "visibility_timeout_seconds": 0 }).to_string()
    };
    check
        .call(
            Method::POST,
            visibility,
            &format!("{these}/visibility"),
            admin,
            Some(change(&first)),
            StatusCode::NO_CONTENT,
        )
        .await;
    check
        .call(
            Method::POST,
            visibility,
            &format!("{these}/visibility"),
            admin,
            Some(change("forged")),
            StatusCode::BAD_REQUEST,
        )
        .await;
    let again = check
        .call(
            Method::POST,
            receive,
            &format!("{these}/receive"),
            admin,
            None,
            StatusCode::OK,
        )
        .await;
    let second = again["messages"][0]["receipt_handle"]
        .as_str()
        .expect("a message")
        .to_owned();
    check
        .call(
            Method::POST,
            visibility,
            &format!("{these}/visibility"),
            admin,
            Some(change(&first)),
            StatusCode::CONFLICT,
        )
        .await;
    let encoded =
        |handle: &str| form_urlencoded::byte_serialize(handle.as_bytes()).collect::<String>();
    check
        .call(
            Method::DELETE,
            messages,
            &format!("{these}?receipt_handle={}", encoded(&first)),
            admin,
            None,
            StatusCode::CONFLICT,
        )
        .await;
    check
        .call(
            Method::DELETE,
            messages,
            &format!("{these}?receipt_handle=forged"),
            admin,
            None,
            StatusCode::BAD_REQUEST,
        )
        .await;
    check
        .call(
            Method::DELETE,
            messages,
            &format!("{these}?receipt_handle={}", encoded(&second)),
            admin,
            None,
            StatusCode::NO_CONTENT,
        )
        .await;

    for (batch, entries) in [
        (
            "batch",
            json!([{ "id": "a", "body": "one" }, { "id": "b", "body": "two", "group_id": "not on a standard queue" }]),
        ),
        (
            "delete-batch",
            json!([{ "id": "a", "receipt_handle": "forged" }, { "id": "b", "receipt_handle": second }]),
        ),
        (
            "visibility-batch",
            json!([{ "id": "a", "receipt_handle": "forged", "visibility_timeout_seconds": 5 }, { "id": "b" }]),
        ),
    ] {
        let path = format!("/v1/queues/{{queue_id}}/messages/{batch}");
        let url = format!("{these}/{batch}");
        let results = check
            .call(
                Method::POST,
                &path,
                &url,
                admin,
                Some(json!({ "entries": entries }).to_string()),
                StatusCode::OK,
            )
            .await;
        assert!(
            !results["failed"].as_array().unwrap().is_empty(),
            "{batch}: {results}"
        );
        let twice = json!({ "entries": [{ "id": "a" }, { "id": "a" }] });
        check
            .call(
                Method::POST,
                &path,
                &url,
                admin,
                Some(twice.to_string()),
                StatusCode::BAD_REQUEST,
            )
            .await;
    }

    let metrics = "/v1/queues/{queue_id}/metrics";
    check
        .call(
            Method::GET,
            metrics,
            &format!("{this}/metrics"),
            admin,
            None,
            StatusCode::OK,
        )
        .await;
    check
        .call(
            Method::GET,
            metrics,
            &format!("{this}/metrics?since=yesterday"),
            admin,
            None,
            StatusCode::BAD_REQUEST,
        )
        .await;
    check
        .call(
            Method::GET,
            metrics,
            &format!("{this}/metrics"),
            reader,
            None,
            StatusCode::FORBIDDEN,
        )
        .await;
    check
        .call(
            Method::POST,
            "/v1/queues/{queue_id}/purge",
            &format!("{this}/purge"),
            admin,
            None,
            StatusCode::NO_CONTENT,
        )
        .await;
    check
        .call(
            Method::DELETE,
            queue,
            &this,
            reader,
            None,
            StatusCode::FORBIDDEN,
        )
        .await;
    check
        .call(
            Method::DELETE,
            queue,
            &this,
            admin,
            None,
            StatusCode::NO_CONTENT,
        )
        .await;
    check
        .call(
            Method::DELETE,
            queue,
            &this,
            admin,
            None,
            StatusCode::NOT_FOUND,
        )
        .await;

    let reached: BTreeSet<u16> = check.seen.iter().map(|(_, status)| *status).collect();
    assert_eq!(
        reached,
        BTreeSet::from([200, 201, 204, 400, 401, 403, 404, 409, 413, 429, 503])
    );
    gw.stop().await;
}
