//! ezgh receive: fields, defaults, ranges, auth, FIFO, dead letters, long polling.

use crate::harness::*;
use chrono::DateTime;
use reqwest::StatusCode;
use serde_json::json;
use sqs_gateway::core::model::{AttributeValue, MessageAttribute};
use std::collections::BTreeMap;
use std::time::Duration;

fn attribute(data_type: &str, value: &str) -> MessageAttribute {
    MessageAttribute {
        data_type: data_type.into(),
        value: if data_type == "Binary" {
            AttributeValue::Bytes(value.as_bytes().to_vec())
        } else {
            AttributeValue::Text(value.into())
        },
    }
}

async fn a_received_message_has_every_documented_field(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let attributes = BTreeMap::from([
        ("event".to_owned(), attribute("String", "order.paid")),
        ("amount".to_owned(), attribute("Number", "12.50")),
        ("blob".to_owned(), attribute("Binary", "raw")),
    ]);
    let id = gw
        .send_with("orders", r#"{"order_id":"A-1001"}"#, None, attributes)
        .await;

    let messages = gw
        .receive_ok(
            "orders",
            json!({ "maxMessages": 10, "waitSeconds": 5, "visibilityTimeoutSeconds": 60 }),
        )
        .await;
    assert_eq!(messages.len(), 1);
    let message = messages[0].as_object().unwrap();
    assert_eq!(message["messageId"], id);
    assert_eq!(message["body"], r#"{"order_id":"A-1001"}"#);
    assert_eq!(
        message["attributes"],
        json!({ "event": "order.paid", "amount": "12.50", "blob": "cmF3" })
    );
    assert_eq!(message["receiveCount"], 1);
    for field in ["sentAt", "firstReceivedAt"] {
        let text = message[field].as_str().unwrap();
        assert!(text.ends_with('Z'), "{field} is UTC: {text}");
        DateTime::parse_from_rfc3339(text)
            .unwrap_or_else(|_| panic!("{field} is RFC 3339: {text}"));
    }
    assert!(!message.contains_key("groupId") && !message.contains_key("seq"));
    let keys: Vec<&str> = message.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "attributes",
            "body",
            "firstReceivedAt",
            "messageId",
            "receiptHandle",
            "receiveCount",
            "sentAt"
        ]
    );
    let empty = gw.receive("orders", json!({ "waitSeconds": 0 })).await;
    assert_eq!(empty.status, 200);
    assert_eq!(empty.headers["content-type"], "application/json");
    assert_eq!(empty.body, json!({ "messages": [] }));
    gw.stop().await;
}

#[tokio::test]
async fn the_receipt_handle_is_sealed_not_the_backend_handle() {
    if !crate::needs!(LocalStack) {
        return;
    }
    let gw = GatewayBuilder::new(Kind::LocalStack)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "one").await;
    let messages = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 0 }),
        )
        .await;
    let ours = handle_of(&messages[0]).to_owned();
    let theirs = sqs()
        .receive_message()
        .queue_url(&gw.queue_urls["orders"])
        .wait_time_seconds(5)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap()
        .remove(0)
        .receipt_handle
        .unwrap();
    assert_ne!(ours, theirs);
    assert!(
        ours.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "URL-safe"
    );
    // A backend handle given to the gateway is not a gateway handle.
    assert_eq!(results(&gw.ack(&[&theirs]).await), vec![invalid()]);
    gw.stop().await;
}

async fn defaults_come_from_the_docs_and_the_queue(kind: Kind) {
    // The queue's visibility timeout is 0: a receive that takes the default leaves the message visible.
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders").visibility_timeout(0))
        .start()
        .await;
    for n in 0..3 {
        gw.send("orders", &format!("m{n}")).await;
    }
    let first = gw.receive_ok("orders", json!({ "waitSeconds": 5 })).await;
    assert_eq!(first.len(), 1, "maxMessages defaults to 1");
    let mut seen_again = false;
    for _ in 0..10 {
        let again = gw
            .receive_ok("orders", json!({ "maxMessages": 10, "waitSeconds": 1 }))
            .await;
        if again
            .iter()
            .any(|m| m["messageId"] == first[0]["messageId"])
        {
            seen_again = true;
            break;
        }
    }
    assert!(seen_again, "default visibility = the queue's 0 seconds");

    let hidden = gw
        .receive_ok(
            "orders",
            json!({ "maxMessages": 10, "waitSeconds": 1, "visibilityTimeoutSeconds": 600 }),
        )
        .await;
    assert_eq!(hidden.len(), 3);
    let none = gw
        .receive_ok("orders", json!({ "maxMessages": 10, "waitSeconds": 0 }))
        .await;
    assert!(none.is_empty(), "an explicit timeout overrides the queue's");
    gw.stop().await;
}

async fn a_long_poll_answers_as_soon_as_a_message_arrives_and_empty_when_the_wait_ends(kind: Kind) {
    // The queue's receive wait (20 s) is the default: the receive must wait for the later send.
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders").receive_wait(20))
        .start()
        .await;
    let gw = std::sync::Arc::new(gw);
    let waiting = {
        let gw = gw.clone();
        tokio::spawn(async move { gw.receive_ok("orders", json!({})).await })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        !waiting.is_finished(),
        "the default wait is the queue's 20 s"
    );
    let id = gw.send("orders", "late").await;
    let messages = waiting.await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["messageId"], id);

    let empty = gw.receive("orders", json!({ "waitSeconds": 1 })).await;
    assert_eq!(empty.status, StatusCode::OK);
    assert_eq!(empty.body, json!({ "messages": [] }));
    std::sync::Arc::try_unwrap(gw).ok().unwrap().stop().await;
}

async fn out_of_range_and_malformed_fields_answer_400(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    for body in [
        json!({ "maxMessages": 0 }),
        json!({ "maxMessages": 11 }),
        json!({ "waitSeconds": 21 }),
        json!({ "waitSeconds": -1 }),
        json!({ "visibilityTimeoutSeconds": 43_201 }),
    ] {
        let answer = gw.receive("orders", body.clone()).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(answer.body["error"], "out_of_range", "{body}");
        assert!(
            answer.body["message"].as_str().unwrap().contains(" from "),
            "{}",
            answer.body
        );
    }
    for body in [r#"{"maxMessages": "ten"}"#, "[]", "{", r#"{"max": 1}"#] {
        let answer = gw
            .post_raw(&gw.receive_url("orders"), Some(&gw.key), body)
            .await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(answer.body["error"], "invalid_request", "{body}");
    }
    // Edges are inside the range.
    let edges = gw
        .receive(
            "orders",
            json!({ "maxMessages": 10, "waitSeconds": 0, "visibilityTimeoutSeconds": 43_200 }),
        )
        .await;
    assert_eq!(edges.status, StatusCode::OK);
    let too_big = "x".repeat(70 * 1024);
    let answer = gw
        .post_raw(&gw.receive_url("orders"), Some(&gw.key), &too_big)
        .await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(answer.body["error"], "payload_too_large");
    gw.stop().await;
}

async fn credentials_and_permissions_are_checked(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let url = gw.receive_url("orders");
    let none = gw.post_raw(&url, None, "{}").await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    assert_eq!(none.body["error"], "unauthenticated");
    assert_eq!(none.headers["www-authenticate"], "Bearer");
    let wrong = gw.post_raw(&url, Some("sqsgw_0000_notakey"), "{}").await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    let mut altered = gw.key.clone();
    altered.pop();
    assert_eq!(
        gw.post_raw(&url, Some(&altered), "{}").await.status,
        StatusCode::UNAUTHORIZED
    );

    let bare = gw.post_raw(&url, Some(&gw.key_without_grants), "{}").await;
    assert_eq!(bare.status, StatusCode::FORBIDDEN);
    assert_eq!(bare.body["error"], "permission_denied");
    let foreign = gw.post_raw(&url, Some(&gw.foreign_key), "{}").await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN);

    for missing in [
        gw.receive_url("nope"),
        format!(
            "{}/v1/organizations/{ORG}/projects/nope/queues/orders/messages/receive",
            gw.base
        ),
    ] {
        let answer = gw.post_raw(&missing, Some(&gw.key), "{}").await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{missing}");
        assert_eq!(answer.body["error"], "queue_not_found");
    }
    // A foreign organization's key is refused before the queue is even looked up.
    let other_org = format!(
        "{}/v1/organizations/nope/projects/{PROJECT}/queues/orders/messages/receive",
        gw.base
    );
    assert_eq!(
        gw.post_raw(&other_org, Some(&gw.key), "{}").await.status,
        StatusCode::FORBIDDEN
    );
    gw.stop().await;
}

async fn organizations_over_their_rate_limit_get_429_with_retry_after(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .config("[ezgh.organizations.acme.rate_limit]\nper_second = 1\nburst = 2\n")
        .start()
        .await;
    let body = json!({ "waitSeconds": 0 });
    assert_eq!(
        gw.receive("orders", body.clone()).await.status,
        StatusCode::OK
    );
    assert_eq!(
        gw.receive("orders", body.clone()).await.status,
        StatusCode::OK
    );
    let limited = gw.receive("orders", body).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(limited.body["error"], "rate_limited");
    let retry: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    gw.stop().await;
}

/// An organization's limit and a queue's are two subjects: each holds, the tighter one answers
/// (on a cluster their counts sit in two slots).
async fn an_organizations_and_a_queues_rate_limits_both_hold(kind: Kind) {
    for (organization, queue, message) in [
        (5, 2, "over the queue's rate limit"),
        (2, 5, "over the organization's rate limit"),
    ] {
        let gw = GatewayBuilder::new(kind)
            .queue(QueueSpec::standard("orders"))
            .config(&format!(
                "[ezgh.organizations.acme.rate_limit]\nper_second = 1\nburst = {organization}\n\n\
                 [queues.orders.rate_limit]\nper_second = 1\nburst = {queue}\n"
            ))
            .start()
            .await;
        let body = json!({ "waitSeconds": 0 });
        for _ in 0..2 {
            assert_eq!(
                gw.receive("orders", body.clone()).await.status,
                StatusCode::OK
            );
        }
        let limited = gw.receive("orders", body).await;
        assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS, "{message}");
        assert_eq!(limited.body["error"], "rate_limited");
        assert_eq!(limited.body["message"], message);
        gw.stop().await;
    }
}

async fn fifo_messages_carry_their_group_and_sequence_number_in_order(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::fifo("jobs.fifo"))
        .start()
        .await;
    let first = gw
        .send_with("jobs.fifo", "a1", Some("g1"), BTreeMap::new())
        .await;
    let second = gw
        .send_with("jobs.fifo", "a2", Some("g1"), BTreeMap::new())
        .await;
    let messages = gw
        .receive_ok("jobs.fifo", json!({ "maxMessages": 10, "waitSeconds": 5 }))
        .await;
    let ids: Vec<&str> = messages
        .iter()
        .map(|m| m["messageId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [first.as_str(), second.as_str()]);
    let mut previous = 0u128;
    for message in &messages {
        assert_eq!(message["groupId"], "g1");
        let seq = message["seq"].as_str().expect("seq is a string");
        assert!(
            !seq.is_empty() && seq.chars().all(|c| c.is_ascii_digit()),
            "{seq}"
        );
        let seq: u128 = seq.parse().unwrap();
        assert!(seq > previous);
        previous = seq;
    }
    gw.stop().await;
}

async fn dead_lettered_messages_name_their_source_queue_and_reason(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders-dlq"))
        .queue(QueueSpec::standard("orders").dead_letter_to("orders-dlq", 1))
        .start()
        .await;
    let id = gw.send("orders", "poison").await;
    let first = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 0 }),
        )
        .await;
    assert_eq!(first.len(), 1);
    assert!(first[0]["attributes"].as_object().unwrap().is_empty());
    // The next receive moves it (receive count 1 exceeded) instead of delivering it.
    let mut moved = Vec::new();
    for _ in 0..10 {
        let again = gw.receive_ok("orders", json!({ "waitSeconds": 1 })).await;
        assert!(
            again.is_empty(),
            "a message past maxReceiveCount is not delivered again"
        );
        moved = gw
            .receive_ok("orders-dlq", json!({ "waitSeconds": 1 }))
            .await;
        if !moved.is_empty() {
            break;
        }
    }
    assert_eq!(moved.len(), 1, "the message reached the dead-letter queue");
    assert_eq!(moved[0]["messageId"], id);
    assert_eq!(moved[0]["body"], "poison");
    assert_eq!(
        moved[0]["attributes"]["ezgh.deadLetterSourceQueue"],
        "orders"
    );
    assert_eq!(
        moved[0]["attributes"]["ezgh.deadLetterReason"],
        "maxReceiveCountExceeded"
    );
    gw.stop().await;
}

async fn a_queue_deleted_in_the_backend_answers_404(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    assert_eq!(gw.receive("orders", json!({})).await.status, StatusCode::OK);
    gw.backend
        .delete_queue(&gw.queue_urls["orders"])
        .await
        .unwrap();
    let mut status = StatusCode::OK;
    for _ in 0..20 {
        status = gw
            .receive("orders", json!({ "waitSeconds": 0 }))
            .await
            .status;
        if status != StatusCode::OK {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(status, StatusCode::NOT_FOUND);
    gw.stop().await;
}

#[tokio::test]
async fn an_unreachable_backend_answers_503_with_retry_after() {
    if !crate::needs!(LocalStack) {
        return;
    }
    // A port that nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let gw = GatewayBuilder::new(Kind::LocalStack)
        .queue(QueueSpec::standard("orders"))
        .backend_endpoint(&endpoint)
        .start()
        .await;
    let answer = gw.receive("orders", json!({ "waitSeconds": 0 })).await;
    assert_eq!(
        answer.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        answer.body
    );
    assert_eq!(answer.body["error"], "unavailable");
    assert!(answer.headers.contains_key("retry-after"));
    assert!(
        !answer.body.to_string().contains("127.0.0.1"),
        "no internal detail: {}",
        answer.body
    );
    let ready = answer_of(&gw, "/readyz").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ready.headers["retry-after"], "1");
    gw.stop().await;
}

crate::on_both_backends!(
    a_received_message_has_every_documented_field,
    defaults_come_from_the_docs_and_the_queue,
    a_long_poll_answers_as_soon_as_a_message_arrives_and_empty_when_the_wait_ends,
    out_of_range_and_malformed_fields_answer_400,
    credentials_and_permissions_are_checked,
    organizations_over_their_rate_limit_get_429_with_retry_after,
    an_organizations_and_a_queues_rate_limits_both_hold,
    fifo_messages_carry_their_group_and_sequence_number_in_order,
    dead_lettered_messages_name_their_source_queue_and_reason,
    a_queue_deleted_in_the_backend_answers_404,
);

/// Over its in-flight limit a queue answers no messages after the wait (the queue's default wait
/// when the request gives none), and as soon as room frees, the message waiting (limits lowered
/// for the test: SQS's are 120,000 and 20,000).
#[tokio::test]
async fn over_the_in_flight_limit_a_receive_waits_and_answers_when_room_frees() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders").receive_wait(2))
        .queue(QueueSpec::fifo("jobs.fifo"))
        .backend_setting("max_in_flight_standard = 2\nmax_in_flight_fifo = 1")
        .start()
        .await;
    for body in ["one", "two", "three"] {
        gw.send("orders", body).await;
    }
    let taken = gw
        .receive_ok(
            "orders",
            json!({ "maxMessages": 2, "visibilityTimeoutSeconds": 60 }),
        )
        .await;
    assert_eq!(taken.len(), 2);
    // Omitted waitSeconds means the queue's default (2 s), not 0.
    let started = std::time::Instant::now();
    assert!(gw.receive_ok("orders", json!({})).await.is_empty());
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(1800),
        "{:?}",
        started.elapsed()
    );
    // Room frees while a receive waits: it answers then, with the third message.
    let started = std::time::Instant::now();
    let waiting = receive_in_background(&gw, "orders");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(results(&gw.ack(&[handle_of(&taken[0])]).await), vec![ok()]);
    let answer = waiting.await.unwrap();
    assert_eq!(answer["messages"][0]["body"], "three");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // FIFO: one in flight at most here; the other group's message comes when it ends.
    gw.send_with("jobs.fifo", "a", Some("g1"), Default::default())
        .await;
    gw.send_with("jobs.fifo", "b", Some("g2"), Default::default())
        .await;
    let first = gw
        .receive_ok(
            "jobs.fifo",
            json!({ "maxMessages": 10, "visibilityTimeoutSeconds": 60 }),
        )
        .await;
    assert_eq!(first.len(), 1);
    let waiting = receive_in_background(&gw, "jobs.fifo");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    assert_eq!(results(&gw.ack(&[handle_of(&first[0])]).await), vec![ok()]);
    let answer = waiting.await.unwrap();
    assert_eq!(answer["messages"].as_array().unwrap().len(), 1);
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    gw.stop().await;
}

/// The dead-letter source is named as the consumer's project knows it.
async fn the_dead_letter_source_is_the_projects_queue_id(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders-dlq"))
        .queue(QueueSpec::standard("orders").dead_letter_to("orders-dlq", 1))
        .config("[ezgh.organizations.acme.projects.crm]\nqueues = { incoming = \"orders\", quarantine = \"orders-dlq\" }\n")
        .start()
        .await;
    gw.send("orders", "poison").await;
    let base = |queue: &str| {
        format!(
            "{}/v1/organizations/{ORG}/projects/crm/queues/{queue}/messages/receive",
            gw.base
        )
    };
    let first = gw
        .post_raw(
            &base("incoming"),
            Some(&gw.key),
            r#"{"waitSeconds": 5, "visibilityTimeoutSeconds": 0}"#,
        )
        .await;
    assert_eq!(first.body["messages"].as_array().unwrap().len(), 1);
    let mut moved = Vec::new();
    for _ in 0..10 {
        gw.post_raw(&base("incoming"), Some(&gw.key), r#"{"waitSeconds": 1}"#)
            .await;
        let answer = gw
            .post_raw(&base("quarantine"), Some(&gw.key), r#"{"waitSeconds": 1}"#)
            .await;
        moved = answer.body["messages"].as_array().unwrap().clone();
        if !moved.is_empty() {
            break;
        }
    }
    assert_eq!(moved.len(), 1, "dead-lettered");
    assert_eq!(
        moved[0]["attributes"]["ezgh.deadLetterSourceQueue"],
        "incoming"
    );
    gw.stop().await;
}

mod dead_letter_ids {
    use super::*;
    crate::on_both_backends!(the_dead_letter_source_is_the_projects_queue_id);
}

/// A receive waiting up to 10 s, sent from its own task; the answer's body.
fn receive_in_background(
    gw: &TestGateway,
    queue: &str,
) -> tokio::task::JoinHandle<serde_json::Value> {
    let (http, key, url) = (gw.http.clone(), gw.key.clone(), gw.receive_url(queue));
    tokio::spawn(async move {
        http.post(url)
            .bearer_auth(key)
            .json(&json!({ "waitSeconds": 10 }))
            .send()
            .await
            .unwrap()
            .json::<serde_json::Value>()
            .await
            .unwrap()
    })
}

/// A key given twice is refused (`invalid_request`, naming the key, showing no value) instead of
/// the last value silently winning: `{"waitSeconds":0,"waitSeconds":20}` does not wait 20 s.
#[tokio::test]
async fn a_key_given_twice_is_refused() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "waiting").await;
    let started = std::time::Instant::now();
    let receive = gw
        .post_raw(
            &gw.receive_url("orders"),
            Some(&gw.key),
            r#"{"waitSeconds":0,"waitSeconds":20}"#,
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let receipts = format!("{}/v1/receipts", gw.base);
    let ack = gw
        .post_raw(
            &format!("{receipts}/ack"),
            None,
            r#"{"receiptHandles":["AQAAAH8first"],"receiptHandles":["AQAAAJ2second"]}"#,
        )
        .await;
    let visibility = gw
        .post_raw(
            &format!("{receipts}/visibility"),
            None,
            r#"{"entries":[{"receiptHandle":"AQAAAH8first","visibilityTimeoutSeconds":1,"visibilityTimeoutSeconds":2}]}"#,
        )
        .await;
    for (answer, key) in [
        (receive, "the key \"waitSeconds\""),
        (ack, "the key \"receiptHandles\""),
        (
            visibility,
            "entries[0]: the key \"visibilityTimeoutSeconds\"",
        ),
    ] {
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
        assert_eq!(answer.body["error"], "invalid_request", "{}", answer.body);
        let message = answer.body["message"].as_str().unwrap();
        assert!(
            message.contains(key) && message.contains("more than once"),
            "{message}"
        );
        assert!(!message.contains("first") && !message.contains("second"));
    }
    assert_eq!(gw.backend_depth("orders").await, 1, "nothing was received");
    gw.stop().await;
}
