//! ezgh acknowledge and visibility: stale versus invalid, clamps, CORS, the invalid-handle limit.

use crate::harness::*;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Duration as ChronoDuration;
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;

fn altered(handle: &str) -> String {
    let mut raw = URL_SAFE_NO_PAD.decode(handle).unwrap();
    let middle = raw.len() / 2;
    raw[middle] ^= 0x40;
    URL_SAFE_NO_PAD.encode(raw)
}

async fn acknowledging_deletes_and_a_second_ack_is_stale(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "one").await;
    let messages = gw.receive_ok("orders", json!({ "waitSeconds": 5 })).await;
    let handle = handle_of(&messages[0]);
    assert_eq!(results(&gw.ack(&[handle]).await), vec![ok()]);
    assert_eq!(
        gw.backend_depth("orders").await,
        0,
        "deleted in the backend"
    );
    assert_eq!(results(&gw.ack(&[handle]).await), vec![stale()]);
    gw.stop().await;
}

async fn one_result_per_handle_in_order_from_any_queue(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .queue(QueueSpec::standard("billing"))
        .start()
        .await;
    gw.send("orders", "o").await;
    gw.send("billing", "b").await;
    let order = gw.receive_ok("orders", json!({ "waitSeconds": 5 })).await;
    let bill = gw.receive_ok("billing", json!({ "waitSeconds": 5 })).await;
    let (order, bill) = (handle_of(&order[0]), handle_of(&bill[0]));
    let tampered = altered(order);
    let answer = gw.ack(&[&tampered, order, "AQAAAH8…", bill, order]).await;
    assert_eq!(
        results(&answer),
        vec![invalid(), ok(), invalid(), ok(), stale()]
    );
    assert_eq!(gw.backend_depth("orders").await, 0);
    assert_eq!(gw.backend_depth("billing").await, 0);
    gw.stop().await;
}

async fn a_handle_from_an_earlier_delivery_is_stale_and_changes_nothing(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "again").await;
    let first = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 0 }),
        )
        .await;
    // The handle still works after its visibility ended, until another receive takes the message:
    // prove it with a visibility change, which keeps the message.
    assert_eq!(
        results(&gw.visibility(&[(handle_of(&first[0]), 0)]).await),
        vec![ok()]
    );
    let second = gw.receive_ok("orders", json!({ "waitSeconds": 5 })).await;
    assert_eq!(second[0]["messageId"], first[0]["messageId"]);
    assert_eq!(second[0]["receiveCount"], 2);

    let old = handle_of(&first[0]);
    assert_eq!(results(&gw.ack(&[old]).await), vec![stale()]);
    assert_eq!(results(&gw.visibility(&[(old, 0)]).await), vec![stale()]);
    assert_eq!(
        gw.backend_depth("orders").await,
        1,
        "the stale ack deleted nothing"
    );
    // The stale release did not release the current delivery either.
    assert!(
        gw.receive_ok("orders", json!({ "waitSeconds": 0 }))
            .await
            .is_empty()
    );
    assert_eq!(results(&gw.ack(&[handle_of(&second[0])]).await), vec![ok()]);
    assert_eq!(gw.backend_depth("orders").await, 0);
    gw.stop().await;
}

async fn a_handle_acknowledges_after_its_visibility_timeout_until_received_again(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "late ack").await;
    let messages = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 0 }),
        )
        .await;
    assert_eq!(
        results(&gw.ack(&[handle_of(&messages[0])]).await),
        vec![ok()]
    );
    assert_eq!(gw.backend_depth("orders").await, 0);
    gw.stop().await;
}

async fn release_with_zero_makes_the_message_visible_at_once(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "release me").await;
    let first = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 600 }),
        )
        .await;
    assert!(
        gw.receive_ok("orders", json!({ "waitSeconds": 0 }))
            .await
            .is_empty()
    );
    assert_eq!(
        results(&gw.visibility(&[(handle_of(&first[0]), 0)]).await),
        vec![ok()]
    );
    let again = gw.receive_ok("orders", json!({ "waitSeconds": 5 })).await;
    assert_eq!(again[0]["messageId"], first[0]["messageId"]);
    assert_eq!(again[0]["receiveCount"], 2);
    gw.stop().await;
}

async fn an_extension_keeps_the_message_in_flight(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "slow").await;
    // Three seconds leave a loaded machine time to extend before the original timeout ends.
    let received_at = tokio::time::Instant::now();
    let first = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 3 }),
        )
        .await;
    assert_eq!(
        results(&gw.visibility(&[(handle_of(&first[0]), 600)]).await),
        vec![ok()]
    );
    // Past the original timeout the message is still hidden.
    tokio::time::sleep_until(received_at + Duration::from_millis(3_600)).await;
    assert!(
        gw.receive_ok("orders", json!({ "waitSeconds": 1 }))
            .await
            .is_empty()
    );
    assert_eq!(results(&gw.ack(&[handle_of(&first[0])]).await), vec![ok()]);
    gw.stop().await;
}

async fn extensions_past_twelve_hours_from_the_receive_end_at_that_mark(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "long job").await;
    let first = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 43_200 }),
        )
        .await;
    let handle = handle_of(&first[0]);
    // 11 h 50 min later, asking for 12 more hours is accepted (clamped to 10 minutes), not refused.
    gw.clock.advance(ChronoDuration::minutes(11 * 60 + 50));
    assert_eq!(
        results(&gw.visibility(&[(handle, 43_200)]).await),
        vec![ok()]
    );
    assert!(
        gw.receive_ok("orders", json!({ "waitSeconds": 0 }))
            .await
            .is_empty()
    );
    // Past the mark, any extension ends now: the message is visible again at once.
    gw.clock.advance(ChronoDuration::minutes(20));
    assert_eq!(results(&gw.visibility(&[(handle, 120)]).await), vec![ok()]);
    let again = gw.receive_ok("orders", json!({ "waitSeconds": 5 })).await;
    assert_eq!(again[0]["messageId"], first[0]["messageId"]);
    gw.stop().await;
}

async fn batch_sizes_and_bodies_are_checked(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let ack_url = format!("{}/v1/receipts/ack", gw.base);
    let visibility_url = format!("{}/v1/receipts/visibility", gw.base);
    let eleven = vec!["h"; 11];
    for (url, body) in [
        (&ack_url, json!({ "receiptHandles": [] })),
        (&ack_url, json!({ "receiptHandles": eleven })),
        (&visibility_url, json!({ "entries": [] })),
        (
            &visibility_url,
            json!({ "entries": [{ "receiptHandle": "h", "visibilityTimeoutSeconds": 43_201 }] }),
        ),
    ] {
        let answer = gw.post_raw(url, None, &body.to_string()).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(answer.body["error"], "out_of_range");
    }
    for (url, body) in [
        (&ack_url, "{}"),
        (&ack_url, r#"{"receiptHandles": "AQAAAH8-secret"}"#),
        (
            &visibility_url,
            r#"{"entries": [{"receiptHandle": "AQAAAH8-secret"}]}"#,
        ),
        (&visibility_url, "not json"),
    ] {
        let answer = gw.post_raw(url, None, body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(answer.body["error"], "invalid_request");
        assert!(
            !answer.body.to_string().contains("AQAAAH8-secret"),
            "{}",
            answer.body
        );
    }
    let ten = vec!["AQAAAH8…"; 10];
    assert_eq!(results(&gw.ack(&ten).await).len(), 10);
    gw.stop().await;
}

async fn receipts_answer_cors_preflight_for_any_origin(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    for path in ["/v1/receipts/ack", "/v1/receipts/visibility"] {
        let preflight = gw
            .http
            .request(reqwest::Method::OPTIONS, format!("{}{path}", gw.base))
            .header("origin", "https://partner.example")
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
            .send()
            .await
            .unwrap();
        assert!(preflight.status().is_success(), "{}", preflight.status());
        assert_eq!(preflight.headers()["access-control-allow-origin"], "*");
        let methods = preflight.headers()["access-control-allow-methods"]
            .to_str()
            .unwrap();
        assert!(methods.contains("POST"), "{methods}");
        assert!(
            !preflight
                .headers()
                .contains_key("access-control-allow-credentials")
        );
    }
    let answer = gw
        .http
        .post(format!("{}/v1/receipts/ack", gw.base))
        .header("origin", "https://partner.example")
        .header("content-type", "application/json")
        .body(json!({ "receiptHandles": ["x"] }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.headers()["access-control-allow-origin"], "*");
    // Nothing in an answer depends on the origin or the preflight headers: no `Vary` to split
    // caches by them, on answers or preflights.
    assert!(
        !answer.headers().contains_key("vary"),
        "{:?}",
        answer.headers()
    );
    let preflight = gw
        .http
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/v1/receipts/ack", gw.base),
        )
        .header("origin", "https://partner.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert!(!preflight.headers().contains_key("vary"));
    gw.stop().await;
}

async fn more_than_100_invalid_handles_a_minute_gets_429_with_retry_after(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "real").await;
    let messages = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 60 }),
        )
        .await;
    let valid = handle_of(&messages[0]).to_owned();
    let garbage = vec!["not-a-handle"; 10];
    for _ in 0..10 {
        assert_eq!(results(&gw.ack(&garbage).await), vec![invalid(); 10]);
    }
    // The 101st invalid handle of the minute is over the budget: its request is refused whole,
    // the valid handle in it included, until the minute has room again.
    for blocked in [
        gw.visibility(&[(&valid, 60), ("not-a-handle", 5)]).await,
        gw.ack(&["anything"]).await,
    ] {
        assert_eq!(blocked.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(blocked.body["error"], "rate_limited");
        let retry: u64 = blocked.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((55..=60).contains(&retry), "Retry-After {retry}");
    }
    // Valid handles alone are not held back.
    assert_eq!(results(&gw.visibility(&[(&valid, 60)]).await), vec![ok()]);
    // A client that keeps sending ten invalid handles every five seconds for two more minutes
    // gets no more than 100 through in any minute.
    let mut accepted = vec![0; 10];
    for step in 1..=24 {
        gw.clock.advance(chrono::Duration::seconds(5));
        let answer = gw.ack(&garbage).await;
        match answer.status {
            StatusCode::OK => accepted.push(step * 5),
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("unexpected {other}"),
        }
    }
    for start in 0..=120 {
        let in_minute = accepted
            .iter()
            .filter(|at| (start..start + 60).contains(*at))
            .count()
            * 10;
        assert!(
            in_minute <= 100,
            "{in_minute} invalid handles in the minute from {start} s"
        );
    }
    assert!(
        accepted.len() >= 19,
        "the budget refills after a minute: {accepted:?}"
    );
    gw.stop().await;
}

async fn handles_and_keys_never_reach_the_logs(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "secretive").await;
    let messages = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 0 }),
        )
        .await;
    let handle = handle_of(&messages[0]).to_owned();
    let tampered = altered(&handle);
    gw.visibility(&[(&handle, 0), (&tampered, 5)]).await;
    gw.ack(&[&tampered, &handle, &handle]).await;
    gw.post_raw(
        &gw.receive_url("orders"),
        Some(&format!("{}x", gw.key)),
        "{}",
    )
    .await;
    gw.post_raw(
        &format!("{}/v1/receipts/ack", gw.base),
        None,
        &format!(r#"{{"receiptHandles": "{handle}"}}"#),
    )
    .await;
    // A wrong SQS secret, and a right one, are never logged either.
    let wrong = gw.sqs_client(SQS_KEY_ID, "not-the-secret-at-all");
    let _ = wrong.list_queues().send().await;
    gw.sqs_client(SQS_KEY_ID, SQS_SECRET)
        .list_queues()
        .send()
        .await
        .unwrap();
    let api_key = gw.key.clone();
    gw.stop().await;
    let logs = captured_logs();
    assert!(!logs.is_empty(), "the capture works");
    // Tests run in one process and share the capture: the operations of this one are in it.
    assert!(
        logs.contains(r#"operation="receive""#),
        "spans name the operation"
    );
    assert!(logs.contains(r#"operation="list_queues""#));
    // `sqsgw_<hex id>_<secret>`: the secret is all after the id (base64url may hold `_` itself;
    // a short tail after its last `_` could match any log line by chance).
    let api_key_secret = api_key
        .strip_prefix("sqsgw_")
        .and_then(|rest| rest.split_once('_'))
        .map(|(_, secret)| secret.to_owned())
        .unwrap();
    for (which, secret) in [
        handle.as_str(),
        tampered.as_str(),
        &handle[10..40],
        api_key.as_str(),
        &api_key_secret,
        SQS_SECRET,
        "not-the-secret-at-all",
    ]
    .iter()
    .enumerate()
    {
        // Which one, never the secret itself.
        assert!(!logs.contains(secret), "secret #{which} reached the logs");
    }
}

async fn a_replica_without_the_delivery_answers_stale_unless_told_to_pass_through(kind: Kind) {
    let first = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    first.send("orders", "shared").await;
    let messages = first
        .receive_ok("orders", json!({ "waitSeconds": 5 }))
        .await;
    let handle = handle_of(&messages[0]);

    // Same receipt key, own ledger: the handle opens but its delivery is unknown there.
    let strict = GatewayBuilder::new(kind).replica_of(&first).start().await;
    assert_eq!(results(&strict.ack(&[handle]).await), vec![stale()]);
    assert_eq!(first.backend_depth("orders").await, 1, "nothing deleted");

    let lenient = GatewayBuilder::new(kind)
        .replica_of(&first)
        .config("[ledger]\nunknown_deliveries = \"pass_through\"")
        .start()
        .await;
    assert_eq!(results(&lenient.ack(&[handle]).await), vec![ok()]);
    assert_eq!(first.backend_depth("orders").await, 0);
    assert_eq!(
        results(&lenient.ack(&[handle]).await),
        vec![stale()],
        "twice is stale"
    );
    strict.stop().await;
    lenient.stop().await;
    first.stop().await;
}

/// A purge ends every delivery of its queue: their handles answer stale, on both backends.
async fn a_purge_makes_the_queues_handles_stale(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .managing_queues()
        .start()
        .await;
    gw.send("orders", "doomed").await;
    let messages = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 60 }),
        )
        .await;
    let handle = handle_of(&messages[0]).to_owned();
    let (client, url) = gw.sqs_queue("orders").await;
    client.purge_queue().queue_url(&url).send().await.unwrap();
    assert_eq!(
        results(&gw.visibility(&[(&handle, 30)]).await),
        vec![stale()]
    );
    assert_eq!(results(&gw.ack(&[&handle]).await), vec![stale()]);
    gw.stop().await;
}

crate::on_both_backends!(
    a_purge_makes_the_queues_handles_stale,
    acknowledging_deletes_and_a_second_ack_is_stale,
    one_result_per_handle_in_order_from_any_queue,
    a_handle_from_an_earlier_delivery_is_stale_and_changes_nothing,
    a_handle_acknowledges_after_its_visibility_timeout_until_received_again,
    release_with_zero_makes_the_message_visible_at_once,
    an_extension_keeps_the_message_in_flight,
    extensions_past_twelve_hours_from_the_receive_end_at_that_mark,
    batch_sizes_and_bodies_are_checked,
    receipts_answer_cors_preflight_for_any_origin,
    more_than_100_invalid_handles_a_minute_gets_429_with_retry_after,
    handles_and_keys_never_reach_the_logs,
    a_replica_without_the_delivery_answers_stale_unless_told_to_pass_through,
);
