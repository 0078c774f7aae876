//! ezgh: errors are `{"error", "message"}`

use super::*;

pub(super) fn receive_path(organization: &str, project: &str, queue: &str) -> String {
    format!("/v1/organizations/{organization}/projects/{project}/queues/{queue}/messages/receive")
}

pub(super) async fn ezgh_receive_raw(service: &InProcess, key: Option<&str>, body: &str) -> Reply {
    service
        .call(request(
            Method::POST,
            &receive_path(ORG, PROJECT, "orders"),
            key,
            body.to_owned(),
        ))
        .await
}

pub(super) async fn ezgh_ack_raw(service: &InProcess, body: Value) -> Reply {
    service
        .call(request(
            Method::POST,
            "/v1/receipts/ack",
            None,
            body.to_string(),
        ))
        .await
}

pub(super) async fn ezgh_visibility(service: &InProcess, entries: Value) -> Reply {
    service
        .call(request(
            Method::POST,
            "/v1/receipts/visibility",
            None,
            json!({ "entries": entries }).to_string(),
        ))
        .await
}

pub(super) fn ezgh_error(reply: &Reply) -> (StatusCode, &str) {
    assert!(reply.body["message"].is_string(), "{}", reply.text);
    (
        reply.status,
        reply.body["error"].as_str().unwrap_or_default(),
    )
}

pub(super) fn results(reply: &Reply) -> &Vec<Value> {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["results"].as_array().unwrap()
}

/// Receive's ranges are the documented ones, at both ends; `null` is absent and `10.0` an
/// integer; a refused receive leases nothing.
#[tokio::test(start_paused = true)]
async fn ezgh_receive_fields_hold_to_their_ranges() {
    let service = InProcess::start().await;
    service.send("kept").await;
    for body in [
        json!({ "maxMessages": 0 }),
        json!({ "maxMessages": 11 }),
        json!({ "waitSeconds": -1 }),
        json!({ "waitSeconds": 21 }),
        json!({ "visibilityTimeoutSeconds": -1 }),
        json!({ "visibilityTimeoutSeconds": 43_201 }),
        json!({ "maxMessages": 1e20 }),
    ] {
        let refused = service.receive(body.clone()).await;
        assert_eq!(
            ezgh_error(&refused),
            (StatusCode::BAD_REQUEST, "out_of_range"),
            "{body}"
        );
    }
    for body in [
        json!({ "maxMessages": "1" }),
        json!({ "maxMessages": 1.5 }),
        json!({ "waitSeconds": true }),
    ] {
        let refused = service.receive(body.clone()).await;
        assert_eq!(
            ezgh_error(&refused),
            (StatusCode::BAD_REQUEST, "invalid_request"),
            "{body}"
        );
    }
    assert_eq!(depth(&service).await.visible, 1, "nothing was leased");
    let edges = service
        .receive(
            json!({ "maxMessages": 10.0, "waitSeconds": null, "visibilityTimeoutSeconds": 43_200 }),
        )
        .await;
    assert_eq!(messages(&edges).len(), 1);
    assert_eq!(messages(&edges)[0]["receiveCount"], 1);
}

/// An empty body takes every default (one message, the queue's 30 s visibility); the body is
/// JSON whatever its `Content-Type`; an unknown field (a typo) is refused without being echoed.
#[tokio::test(start_paused = true)]
async fn ezgh_receive_defaults_and_unknown_fields() {
    let service = InProcess::start().await;
    send_many(&service, 3).await;
    let typo = service.receive(json!({ "waitSecond": 5 })).await;
    assert_eq!(
        ezgh_error(&typo),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    assert!(!typo.text.contains("waitSecond\""), "{}", typo.text);

    let defaults = ezgh_receive_raw(&service, Some(&service.key), "").await;
    assert_eq!(messages(&defaults).len(), 1, "maxMessages defaults to 1");
    let as_text = service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri(receive_path(ORG, PROJECT, "orders"))
                .header("authorization", format!("Bearer {}", service.key))
                .header("content-type", "text/plain")
                .body(Body::from(r#"{"maxMessages": 2}"#))
                .unwrap(),
        )
        .await;
    assert_eq!(messages(&as_text).len(), 2, "{}", as_text.text);
    // The first message comes back when the queue's 30 s visibility has passed, not before.
    tokio::time::advance(Duration::from_secs(29)).await;
    assert!(messages(&service.receive(json!({})).await).is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    let back = service.receive(json!({})).await;
    assert_eq!(messages(&back)[0]["receiveCount"], 2);
}

/// A key given twice in a body is refused, naming the key and no value; nothing is received or
/// acknowledged.
#[tokio::test(start_paused = true)]
async fn ezgh_a_key_given_twice_is_refused() {
    let service = InProcess::start().await;
    service.send("one").await;
    let twice = ezgh_receive_raw(
        &service,
        Some(&service.key),
        r#"{"maxMessages": 1, "maxMessages": 7}"#,
    )
    .await;
    assert_eq!(
        ezgh_error(&twice),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    let message = twice.body["message"].as_str().unwrap();
    assert!(
        message.contains("\"maxMessages\"") && message.contains("more than once"),
        "{message}"
    );
    assert!(!message.contains('7'), "{message}");
    assert_eq!(depth(&service).await.visible, 1);

    let got = service.receive(json!({})).await;
    let current = handle(&messages(&got)[0]);
    let body = format!(r#"{{"receiptHandles": ["{current}"], "receiptHandles": ["AQAAAH8x"]}}"#);
    let refused = service
        .call(request(Method::POST, "/v1/receipts/ack", None, body))
        .await;
    assert_eq!(
        ezgh_error(&refused),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    assert!(!refused.text.contains(&current), "a handle was echoed");
    assert_eq!(depth(&service).await.in_flight, 1, "not acknowledged");
    assert_eq!(
        results(&service.ack(&current).await)[0],
        json!({ "ok": true })
    );
}

/// A receive without a valid key is 401 with the Bearer challenge, answered from the head: the
/// body is never read, and neither is the queue.
#[tokio::test(start_paused = true)]
async fn ezgh_receive_refuses_missing_or_wrong_keys_before_reading_the_body() {
    let service = InProcess::start().await;
    service.send("kept").await;
    let mut shortened = service.key.clone();
    shortened.pop();
    for authorization in [
        None,
        Some("Bearer ".to_owned()),
        Some("Bearer sqsgw_0000_notakey".to_owned()),
        Some(format!("Bearer {shortened}")),
        Some(format!("Basic {}", service.key)),
    ] {
        let tripwire = Tripwire::default();
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(receive_path(ORG, PROJECT, "orders"));
        if let Some(value) = &authorization {
            builder = builder.header("authorization", value);
        }
        let refused = service.call(builder.body(tripwire.body()).unwrap()).await;
        assert_eq!(
            ezgh_error(&refused),
            (StatusCode::UNAUTHORIZED, "unauthenticated"),
            "{authorization:?}"
        );
        assert_eq!(
            refused.header("www-authenticate").as_deref(),
            Some("Bearer")
        );
        assert!(!tripwire.was_read(), "{authorization:?}: the body was read");
        assert!(!refused.text.contains(&service.key), "a key was echoed");
    }
    assert_eq!(depth(&service).await.visible, 1);
    // The control: with the right key the body is read (and, failing, refused as cut short).
    let tripwire = Tripwire::default();
    let read = service
        .call(request(
            Method::POST,
            &receive_path(ORG, PROJECT, "orders"),
            Some(&service.key),
            tripwire.body(),
        ))
        .await;
    assert_eq!(
        ezgh_error(&read),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    assert!(tripwire.was_read());
}

/// 403 for a key of another organization or without the receive grant, 404 for a queue or
/// project the organization does not have; none of them leases anything.
#[tokio::test(start_paused = true)]
async fn ezgh_receive_checks_organization_grant_and_queue() {
    let bare = api_keys::generate_key();
    let service = with_tables(&format!(
        "[[api_keys]]\nid = \"{}\"\norganization = \"{ORG}\"\nhash = \"{}\"\ngrants = {{}}\n",
        bare.id, bare.hash
    ))
    .await;
    service.send("kept").await;
    let bare_answer = ezgh_receive_raw(&service, Some(&bare.key), "{}").await;
    assert_eq!(
        ezgh_error(&bare_answer),
        (StatusCode::FORBIDDEN, "permission_denied")
    );
    for (path, expected) in [
        (
            receive_path("other-org", PROJECT, "orders"),
            (StatusCode::FORBIDDEN, "permission_denied"),
        ),
        (
            receive_path(ORG, PROJECT, "nope"),
            (StatusCode::NOT_FOUND, "queue_not_found"),
        ),
        (
            receive_path(ORG, "nope", "orders"),
            (StatusCode::NOT_FOUND, "queue_not_found"),
        ),
        (
            receive_path(ORG, PROJECT, "sqsgw_bq_x_00000000"),
            (StatusCode::NOT_FOUND, "queue_not_found"),
        ),
    ] {
        let answer = service
            .call(request(Method::POST, &path, Some(&service.key), "{}"))
            .await;
        assert_eq!(ezgh_error(&answer), expected, "{path}");
    }
    assert_eq!(depth(&service).await.visible, 1);
}

/// A path segment that is not UTF-8 once decoded is ezgh's 400 `invalid_request`, not axum's
/// text.
#[tokio::test(start_paused = true)]
async fn ezgh_a_path_that_is_not_utf8_is_an_invalid_request() {
    let service = InProcess::start().await;
    let answer = service
        .call(request(
            Method::POST,
            &receive_path("%FF%FE", PROJECT, "orders"),
            Some(&service.key),
            "{}",
        ))
        .await;
    assert_eq!(
        ezgh_error(&answer),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
}

/// Bodies over 64 KiB are 413 `payload_too_large` from their declared length, unread (a receive
/// after its key is checked; an acknowledgement, which takes no key, at once).
#[tokio::test(start_paused = true)]
async fn ezgh_bodies_over_64_kib_are_refused_unread() {
    let service = InProcess::start().await;
    for (path, key) in [
        (
            receive_path(ORG, PROJECT, "orders"),
            Some(service.key.as_str()),
        ),
        ("/v1/receipts/ack".to_owned(), None),
        ("/v1/receipts/visibility".to_owned(), None),
    ] {
        let tripwire = Tripwire::default();
        let answer = service
            .call(request(
                Method::POST,
                &path,
                key,
                tripwire.declaring(Some(64 * 1024 + 1)),
            ))
            .await;
        assert_eq!(
            ezgh_error(&answer),
            (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            "{path}"
        );
        assert!(!tripwire.was_read(), "{path}");
    }
}

/// An acknowledgement takes 1 to 10 string handles and nothing else; a refused one acts on none
/// of its handles, so the message stays in flight until acknowledged properly.
#[tokio::test(start_paused = true)]
async fn ezgh_ack_batches_are_checked_whole_and_act_on_nothing_when_refused() {
    let service = InProcess::start().await;
    service.send("precious").await;
    let got = service.receive(json!({})).await;
    let current = handle(&messages(&got)[0]);
    let eleven: Vec<String> = std::iter::once(current.clone())
        .chain((0..10).map(|n| format!("AQAAAH8{n}")))
        .collect();
    for (body, code) in [
        (json!({ "receiptHandles": [] }), "out_of_range"),
        (json!({ "receiptHandles": eleven }), "out_of_range"),
        (json!({}), "invalid_request"),
        (json!({ "receiptHandles": current }), "invalid_request"),
        (json!({ "receiptHandles": [current, 7] }), "invalid_request"),
        (
            json!({ "receiptHandles": [current], "force": true }),
            "invalid_request",
        ),
    ] {
        let refused = ezgh_ack_raw(&service, body.clone()).await;
        assert_eq!(
            ezgh_error(&refused),
            (StatusCode::BAD_REQUEST, code),
            "{body}"
        );
        assert!(!refused.text.contains(&current), "a handle was echoed");
    }
    let not_json = service
        .call(request(Method::POST, "/v1/receipts/ack", None, "{"))
        .await;
    assert_eq!(
        ezgh_error(&not_json),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    assert_eq!(
        depth(&service).await.in_flight,
        1,
        "nothing was acknowledged"
    );
    assert_eq!(
        results(&service.ack(&current).await)[0],
        json!({ "ok": true })
    );
    assert_eq!(depth(&service).await.in_flight, 0);
}

/// A visibility change takes entries with a handle and a timeout of 0 to 43,200 s; a refused one
/// changes nothing (the message stays hidden).
#[tokio::test(start_paused = true)]
async fn ezgh_visibility_entries_are_checked_whole() {
    let service = InProcess::start().await;
    service.send("hidden").await;
    let got = service.receive(json!({})).await;
    let current = handle(&messages(&got)[0]);
    for (entries, code) in [
        (json!([]), "out_of_range"),
        (
            json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 0 },
                   { "receiptHandle": current, "visibilityTimeoutSeconds": 43_201 }]),
            "out_of_range",
        ),
        (
            json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 0 },
                   { "receiptHandle": current }]),
            "invalid_request",
        ),
        (
            json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 0, "extra": 1 }]),
            "invalid_request",
        ),
        (json!([current]), "invalid_request"),
    ] {
        let refused = ezgh_visibility(&service, entries.clone()).await;
        assert_eq!(
            ezgh_error(&refused),
            (StatusCode::BAD_REQUEST, code),
            "{entries}"
        );
    }
    assert!(
        messages(&service.receive(json!({})).await).is_empty(),
        "no refused change released the message"
    );
    let released = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 0 }]),
    )
    .await;
    assert_eq!(results(&released)[0], json!({ "ok": true }));
    assert_eq!(messages(&service.receive(json!({})).await).len(), 1);
}

/// An altered or forged handle is `receipt_handle_invalid` in its place, acts nowhere, and the
/// request's other handles act.
#[tokio::test(start_paused = true)]
async fn ezgh_altered_and_forged_handles_are_invalid_and_act_nowhere() {
    let service = InProcess::start().await;
    send_many(&service, 2).await;
    let got = service.receive(json!({ "maxMessages": 2 })).await;
    let (first, second) = (handle(&messages(&got)[0]), handle(&messages(&got)[1]));
    let invalid = json!({ "error": "receipt_handle_invalid" });
    let released = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": altered(&first), "visibilityTimeoutSeconds": 0 },
               { "receiptHandle": "AQAAAH8…", "visibilityTimeoutSeconds": 0 }]),
    )
    .await;
    assert_eq!(results(&released), &vec![invalid.clone(), invalid.clone()]);
    assert_eq!(depth(&service).await.in_flight, 2, "nothing was released");
    let acked = ezgh_ack_raw(
        &service,
        json!({ "receiptHandles": [altered(&first), second, "", altered(&second)] }),
    )
    .await;
    assert_eq!(
        results(&acked),
        &vec![
            invalid.clone(),
            json!({ "ok": true }),
            invalid.clone(),
            invalid
        ]
    );
    let stats = depth(&service).await;
    assert_eq!(
        (stats.visible, stats.in_flight),
        (0, 1),
        "only `second` went"
    );
    assert_eq!(
        results(&service.ack(&first).await)[0],
        json!({ "ok": true })
    );
}

/// The invalid-handle budget: 100 a minute per client address; a request that would pass it is
/// refused whole (its valid handle does not act), with a `Retry-After`; requests of valid handles
/// only are not held back; a minute later the budget is back.
#[tokio::test(start_paused = true)]
async fn ezgh_more_than_100_invalid_handles_a_minute_are_refused_whole() {
    let service = InProcess::start().await;
    send_many(&service, 2).await;
    let got = service.receive(json!({ "maxMessages": 2 })).await;
    let (first, second) = (handle(&messages(&got)[0]), handle(&messages(&got)[1]));
    let forged: Vec<String> = (0..10).map(|n| format!("AQAAAH8forged{n}")).collect();
    for _ in 0..10 {
        let spent = ezgh_ack_raw(&service, json!({ "receiptHandles": forged })).await;
        assert_eq!(results(&spent).len(), 10);
    }
    let over = ezgh_ack_raw(
        &service,
        json!({ "receiptHandles": [first, "AQAAAH8one-more"] }),
    )
    .await;
    assert_eq!(
        ezgh_error(&over),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    let wait: u64 = over.retry_after_seconds();
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    assert_eq!(
        depth(&service).await.in_flight,
        2,
        "the refused request acted"
    );
    let visibility_over = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": "AQAAAH8x", "visibilityTimeoutSeconds": 0 }]),
    )
    .await;
    assert_eq!(visibility_over.status, StatusCode::TOO_MANY_REQUESTS);
    // Valid handles only: served.
    assert_eq!(
        results(&service.ack(&second).await)[0],
        json!({ "ok": true })
    );

    tokio::time::advance(Duration::from_secs(61)).await;
    let again = ezgh_ack_raw(
        &service,
        json!({ "receiptHandles": [first, "AQAAAH8late"] }),
    )
    .await;
    assert_eq!(
        results(&again),
        &vec![
            json!({ "ok": true }),
            json!({ "error": "receipt_handle_invalid" })
        ]
    );
}

/// Once a delivery's visibility has ended: extending it is stale (it is visible again),
/// releasing it is ok, and its handle still acknowledges until another receive takes it.
#[tokio::test(start_paused = true)]
async fn ezgh_a_lease_that_ran_out_cannot_be_extended_but_still_acknowledges() {
    let service = InProcess::start().await;
    service.send("late worker").await;
    let got = service
        .receive(json!({ "visibilityTimeoutSeconds": 10 }))
        .await;
    let current = handle(&messages(&got)[0]);
    tokio::time::advance(Duration::from_secs(11)).await;
    let extended = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 60 }]),
    )
    .await;
    assert_eq!(
        results(&extended)[0],
        json!({ "error": "receipt_handle_stale" })
    );
    let released = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 0 }]),
    )
    .await;
    assert_eq!(results(&released)[0], json!({ "ok": true }));
    assert_eq!(
        results(&service.ack(&current).await)[0],
        json!({ "ok": true })
    );
    let stats = depth(&service).await;
    assert_eq!((stats.visible, stats.in_flight), (0, 0), "acknowledged");
}

/// An extension past 12 hours from the delivery's receive ends at that mark.
#[tokio::test(start_paused = true)]
async fn ezgh_extensions_end_at_twelve_hours_from_the_receive() {
    let service = InProcess::start().await;
    service.send("long job").await;
    let got = service
        .receive(json!({ "visibilityTimeoutSeconds": 43_200 }))
        .await;
    let current = handle(&messages(&got)[0]);
    tokio::time::advance(Duration::from_secs(43_000)).await;
    let extended = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 43_200 }]),
    )
    .await;
    assert_eq!(results(&extended)[0], json!({ "ok": true }));
    tokio::time::advance(Duration::from_secs(199)).await;
    assert!(messages(&service.receive(json!({})).await).is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    let back = service.receive(json!({})).await;
    assert_eq!(
        messages(&back)[0]["receiveCount"],
        2,
        "visible again at the 12-hour mark"
    );
}

/// Routes no handler serves and wrong methods on ezgh's paths (and the service's own, and paths
/// of no API) answer in ezgh's shape.
#[tokio::test(start_paused = true)]
async fn ezgh_unknown_routes_and_wrong_methods_answer_in_its_shape() {
    let service = InProcess::start().await;
    for (method, path, expected) in [
        (
            Method::GET,
            "/v1/receipts/ack".to_owned(),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
        (
            Method::PUT,
            receive_path(ORG, PROJECT, "orders"),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
        (
            Method::POST,
            "/v1/receipts/nope".to_owned(),
            (StatusCode::NOT_FOUND, "not_found"),
        ),
        (
            Method::POST,
            format!("/v1/organizations/{ORG}/projects/{PROJECT}/queues/orders/messages"),
            (StatusCode::NOT_FOUND, "not_found"),
        ),
        (
            Method::GET,
            "/v1/nothing-here".to_owned(),
            (StatusCode::NOT_FOUND, "not_found"),
        ),
        (
            Method::POST,
            "/healthz".to_owned(),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
    ] {
        let answer = service
            .call(request(method.clone(), &path, Some(&service.key), "{}"))
            .await;
        assert_eq!(ezgh_error(&answer), expected, "{method} {path}");
    }
}

/// `waitSeconds` defaults to the queue's `ReceiveMessageWaitTimeSeconds`: with the queue's wait
/// set (through the SQS endpoint) to 10 s, a receive without one gets a message sent 5 s later.
#[tokio::test(start_paused = true)]
async fn ezgh_the_wait_defaults_to_the_queues_own() {
    let service = Arc::new(InProcess::start().await);
    let set = service
        .sqs(
            "SetQueueAttributes",
            json!({ "Attributes": { "ReceiveMessageWaitTimeSeconds": "10" } }),
        )
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    let producer = Arc::clone(&service);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        producer.send("worth the wait").await;
    });
    let got = service.receive(json!({})).await;
    assert_eq!(messages(&got).len(), 1, "{}", got.text);
    assert_eq!(messages(&got)[0]["body"], "worth the wait");
    let explicit = service.receive(json!({ "waitSeconds": 0 })).await;
    assert!(messages(&explicit).is_empty());
}

/// A handle acts in every dialect whichever spelling it has: one received over the SQS endpoint
/// (AWS's alphabet) acknowledges over ezgh, one received over ezgh (URL-safe) deletes over SQS.
#[tokio::test(start_paused = true)]
async fn ezgh_and_sqs_handles_act_across_dialects() {
    let service = InProcess::start().await;
    service.send("from sqs").await;
    let over_sqs = service.sqs("ReceiveMessage", json!({})).await;
    let sqs_handle = over_sqs.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        !sqs_handle.contains('-') && !sqs_handle.contains('_'),
        "AWS's alphabet: {sqs_handle}"
    );
    assert_eq!(
        results(&service.ack(&sqs_handle).await)[0],
        json!({ "ok": true })
    );
    assert_eq!(depth(&service).await.in_flight, 0);
    service.send("from ezgh").await;
    let over_ezgh = service.receive(json!({})).await;
    let ezgh_handle = handle(&messages(&over_ezgh)[0]);
    assert!(
        !ezgh_handle.contains('+') && !ezgh_handle.contains('/') && !ezgh_handle.contains('='),
        "URL-safe: {ezgh_handle}"
    );
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": ezgh_handle }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    let stats = depth(&service).await;
    assert_eq!(
        (stats.visible, stats.in_flight),
        (0, 0),
        "deleted, not merely answered"
    );
}
