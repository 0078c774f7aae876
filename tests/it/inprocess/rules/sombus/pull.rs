//! The sombus pull routes: receive parameters within their ranges and their defaults, checks in the
//! documented order, ack and nack bodies checked whole, handles of other connections or altered
//! acting nowhere, release delays (capped at twelve hours), connection limits, producer tokens
//! reading nothing, and routes no handler serves answered in the sombus shapes.

use super::*;

/// The receive query: `max` 1–10, `wait` 0–20, `visibility` 0–43200, `attempt` 1–128 printable
/// ASCII without spaces; unknown or repeated parameters refused (an unknown name is not echoed);
/// a refused receive leases nothing.
#[tokio::test(start_paused = true)]
async fn sombus_receive_parameters_hold_to_their_ranges() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "fifo": false })).await;
    let token = bus.token(&connection).await;
    bus.publish(&connection, "{}", None).await;
    let long_attempt = format!("attempt={}", "a".repeat(129));
    for query in [
        "max=0",
        "max=11",
        "max=x",
        "max=+5",
        "max=-1",
        "wait=21",
        "visibility=43201",
        "attempt=",
        "attempt=a%20b",
        "attempt=caf%C3%A9",
        long_attempt.as_str(),
        "colour=red",
        "max=1&max=1",
        "wait=0&wait=1",
    ] {
        let refused = bus
            .pull(&token, WORKSPACE, &connection.client_id, query)
            .await;
        assert_eq!(
            rule(&refused),
            (StatusCode::BAD_REQUEST, "pull.bad_request"),
            "{query}"
        );
        assert!(!refused.text.contains("colour"), "{}", refused.text);
    }
    let edges = bus
        .receive(
            &token,
            &connection,
            &format!("max=10&wait=0&visibility=43200&attempt={}", "~".repeat(128)),
        )
        .await;
    assert_eq!(edges.len(), 1);
    assert_eq!(edges[0]["receive_count"], 1, "no refused receive leased it");
}

/// Defaults: ten messages at most, leased for 60 s.
#[tokio::test(start_paused = true)]
async fn sombus_receive_defaults_to_ten_messages_for_sixty_seconds() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "fifo": false })).await;
    let token = bus.token(&connection).await;
    for n in 0..12 {
        bus.publish(&connection, &json!({ "n": n }).to_string(), None)
            .await;
    }
    assert_eq!(bus.receive(&token, &connection, "").await.len(), 10);
    assert_eq!(bus.receive(&token, &connection, "wait=0").await.len(), 2);
    tokio::time::advance(Duration::from_secs(59)).await;
    assert!(bus.receive(&token, &connection, "wait=0").await.is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    let back = bus.receive(&token, &connection, "wait=0").await;
    assert_eq!(back.len(), 10);
    assert!(back.iter().all(|message| message["receive_count"] == 2));
}

/// Checks run in the documented order: token, workspace, client id, then parameters; a 401
/// carries `WWW-Authenticate: Bearer realm="sombus"`.
#[tokio::test(start_paused = true)]
async fn sombus_pull_checks_run_in_the_documented_order() {
    let bus = Bus::start().await;
    let mine = bus.connect(json!({})).await;
    let theirs = bus.connect(json!({})).await;
    let token = bus.token(&mine).await;
    for (token, tenant, client, expected) in [
        (
            "",
            WORKSPACE,
            mine.client_id.as_str(),
            (StatusCode::UNAUTHORIZED, "producer.unauthenticated"),
        ),
        (
            "not.a.token",
            "other-ws",
            theirs.client_id.as_str(),
            (StatusCode::UNAUTHORIZED, "producer.unauthenticated"),
        ),
        (
            token.as_str(),
            "other-ws",
            theirs.client_id.as_str(),
            (StatusCode::FORBIDDEN, "tenant.mismatch"),
        ),
        (
            token.as_str(),
            WORKSPACE,
            theirs.client_id.as_str(),
            (StatusCode::FORBIDDEN, "consumer.not_owner"),
        ),
        (
            token.as_str(),
            WORKSPACE,
            mine.client_id.as_str(),
            (StatusCode::BAD_REQUEST, "pull.bad_request"),
        ),
    ] {
        let key = (!token.is_empty()).then_some(token);
        let answer = bus
            .service
            .call(request(
                Method::GET,
                &format!("/v1/tenants/{tenant}/consumers/{client}/messages?max=99"),
                key,
                Body::empty(),
            ))
            .await;
        assert_eq!(rule(&answer), expected, "{tenant}/{client}");
        if expected.0 == StatusCode::UNAUTHORIZED {
            assert_eq!(
                answer.header("www-authenticate").as_deref(),
                Some("Bearer realm=\"sombus\"")
            );
        }
    }
}

/// Ack and nack bodies: 1 to 10 distinct non-empty handles, nothing else (nack also
/// `delay_seconds` 0–43200); a key given twice is refused; a refused request acts on none of its
/// handles.
#[tokio::test(start_paused = true)]
async fn sombus_ack_and_nack_bodies_are_checked_whole() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "fifo": false })).await;
    let token = bus.token(&connection).await;
    bus.publish(&connection, "{}", None).await;
    let got = bus.receive(&token, &connection, "wait=0").await;
    let current = sombus_handle(&got[0]);
    let eleven: Vec<String> = std::iter::once(current.clone())
        .chain((0..10).map(|n| format!("AQEB{n}")))
        .collect();
    for (route, body) in [
        ("ack", json!({}).to_string()),
        ("ack", json!({ "receipt_handles": [] }).to_string()),
        ("ack", json!({ "receipt_handles": eleven }).to_string()),
        (
            "ack",
            json!({ "receipt_handles": [current, current] }).to_string(),
        ),
        (
            "ack",
            json!({ "receipt_handles": [current, ""] }).to_string(),
        ),
        (
            "ack",
            json!({ "receipt_handles": [current, 1] }).to_string(),
        ),
        (
            "ack",
            json!({ "receipt_handles": [current], "delay_seconds": 0 }).to_string(),
        ),
        (
            "ack",
            format!(r#"{{"receipt_handles":["{current}"],"receipt_handles":["AQEBx"]}}"#),
        ),
        (
            "nack",
            json!({ "receipt_handles": [current], "delay_seconds": 43_201 }).to_string(),
        ),
        (
            "nack",
            json!({ "receipt_handles": [current], "delay_seconds": -1 }).to_string(),
        ),
        (
            "nack",
            json!({ "receipt_handles": [current], "colour": "red" }).to_string(),
        ),
        ("nack", "not json".to_owned()),
    ] {
        let refused = bus.settle(&token, &connection, route, &body).await;
        assert_eq!(
            rule(&refused),
            (StatusCode::BAD_REQUEST, "pull.bad_request"),
            "{route} {body}"
        );
        assert!(!refused.text.contains(&current), "a handle was echoed");
    }
    // Still leased and undeleted: a release brings it back for a second delivery.
    let released = bus
        .settle(
            &token,
            &connection,
            "nack",
            &json!({ "receipt_handles": [current] }).to_string(),
        )
        .await;
    assert_eq!(released.body, json!({ "nacked": [current], "failed": [] }));
    let back = bus.receive(&token, &connection, "wait=0").await;
    assert_eq!(back.len(), 1);
    assert_eq!(back[0]["receive_count"], 2);
}

/// A handle of another connection's queue, or an altered one, fails with
/// `ReceiptHandleIsInvalid` and acts nowhere; a stale one is listed as done.
#[tokio::test(start_paused = true)]
async fn sombus_handles_of_other_connections_or_altered_fail_and_act_nowhere() {
    let bus = Bus::start().await;
    let mine = bus.connect(json!({ "fifo": false })).await;
    let theirs = bus.connect(json!({ "fifo": false })).await;
    let my_token = bus.token(&mine).await;
    let their_token = bus.token(&theirs).await;
    bus.publish(&mine, "{}", None).await;
    bus.publish(&theirs, "{}", None).await;
    let mine_got = bus.receive(&my_token, &mine, "wait=0&visibility=0").await;
    let old_mine = sombus_handle(&mine_got[0]);
    let mine_got = bus.receive(&my_token, &mine, "wait=0").await;
    let my_handle = sombus_handle(&mine_got[0]);
    let their_handle = sombus_handle(&bus.receive(&their_token, &theirs, "wait=0").await[0]);
    let my_altered = altered(&my_handle);
    let acked = bus
        .settle(
            &my_token,
            &mine,
            "ack",
            &json!({ "receipt_handles": [their_handle, my_altered, old_mine] }).to_string(),
        )
        .await;
    assert_eq!(acked.status, StatusCode::OK, "{}", acked.text);
    assert_eq!(
        acked.body["acked"],
        json!([old_mine]),
        "stale: nothing left to do"
    );
    let failed = acked.body["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 2, "{}", acked.text);
    for (entry, handle) in failed.iter().zip([&their_handle, &my_altered]) {
        assert_eq!(entry["receipt_handle"], handle.as_str());
        assert_eq!(entry["code"], "ReceiptHandleIsInvalid");
        assert!(entry["message"].is_string());
    }
    // Both messages are still leased by their own receives, and their handles act.
    for (token, connection, handle) in [
        (&my_token, &mine, &my_handle),
        (&their_token, &theirs, &their_handle),
    ] {
        let released = bus
            .settle(
                token,
                connection,
                "nack",
                &json!({ "receipt_handles": [handle] }).to_string(),
            )
            .await;
        assert_eq!(
            released.body["nacked"],
            json!([handle]),
            "{}",
            released.text
        );
        let back = bus.receive(token, connection, "wait=0").await;
        assert_eq!(back.len(), 1, "the message is still there");
    }
}

/// A release with a delay keeps the message hidden for that long, then it is back.
#[tokio::test(start_paused = true)]
async fn sombus_a_release_with_a_delay_comes_back_after_it() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    let token = bus.token(&connection).await;
    bus.publish(&connection, r#"{"message_id":"m-1"}"#, Some("story"))
        .await;
    let got = bus.receive(&token, &connection, "wait=0").await;
    let released = bus
        .settle(
            &token,
            &connection,
            "nack",
            &json!({ "receipt_handles": [sombus_handle(&got[0])], "delay_seconds": 30 })
                .to_string(),
        )
        .await;
    assert_eq!(released.status, StatusCode::OK, "{}", released.text);
    tokio::time::advance(Duration::from_secs(29)).await;
    assert!(bus.receive(&token, &connection, "wait=0").await.is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    let back = bus.receive(&token, &connection, "wait=0").await;
    assert_eq!(back.len(), 1);
    assert_eq!(back[0]["receive_count"], 2);
    assert_eq!(back[0]["correlation_id"], "story", "from the message group");
}

/// A connection's tier: over its rate, `rate.limited` with `Retry-After` (not counted against the
/// day); over its day, `quota.exceeded` with a `Retry-After` until midnight UTC.
#[tokio::test(start_paused = true)]
async fn sombus_connection_limits_answer_429_with_their_rules() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "tier": "tight" })).await;
    let token = bus.token(&connection).await;
    let pull = || bus.pull(&token, WORKSPACE, &connection.client_id, "wait=0");
    for _ in 0..2 {
        assert_eq!(pull().await.status, StatusCode::OK);
    }
    // The limits are checked before the parameters.
    let fast = bus
        .pull(&token, WORKSPACE, &connection.client_id, "max=99")
        .await;
    assert_eq!(rule(&fast), (StatusCode::TOO_MANY_REQUESTS, "rate.limited"));
    assert!(fast.header("retry-after").is_some());
    for _ in 0..2 {
        tokio::time::advance(Duration::from_secs(2)).await;
        let served = pull().await;
        assert_eq!(served.status, StatusCode::OK, "{}", served.text);
    }
    tokio::time::advance(Duration::from_secs(2)).await;
    let daily = pull().await;
    assert_eq!(
        rule(&daily),
        (StatusCode::TOO_MANY_REQUESTS, "quota.exceeded")
    );
    let wait: u64 = daily.retry_after_seconds();
    assert!(
        (86_000..=86_400).contains(&wait),
        "until midnight UTC: {wait}"
    );
}

/// A producer connection's token reads no queue: `producer.not_registered`.
#[tokio::test(start_paused = true)]
async fn sombus_a_producer_token_reads_nothing() {
    let bus = Bus::start().await;
    let producer = bus.connect(json!({ "role": "producer" })).await;
    let token = bus.token(&producer).await;
    let refused = bus
        .pull(&token, WORKSPACE, &producer.client_id, "wait=0")
        .await;
    assert_eq!(
        rule(&refused),
        (StatusCode::FORBIDDEN, "producer.not_registered")
    );
}

/// A release delay past the 12-hour in-flight cap ends at that mark, counted from the receive,
/// rather than being refused.
#[tokio::test(start_paused = true)]
async fn sombus_a_release_delay_past_twelve_hours_ends_at_the_mark() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "fifo": false })).await;
    let token = bus.token(&connection).await;
    bus.publish(&connection, "{}", None).await;
    let got = bus
        .receive(&token, &connection, "wait=0&visibility=43200")
        .await;
    tokio::time::advance(Duration::from_secs(100)).await;
    let released = bus
        .settle(
            &token,
            &connection,
            "nack",
            &json!({ "receipt_handles": [sombus_handle(&got[0])], "delay_seconds": 43_200 })
                .to_string(),
        )
        .await;
    assert_eq!(released.status, StatusCode::OK, "{}", released.text);
    assert_eq!(released.body["failed"], json!([]));
    // 43,099 s after the receive: still hidden; past 43,200 s from the receive: back, although
    // the delay asked for 43,200 s from the release.
    tokio::time::advance(Duration::from_secs(42_999)).await;
    // The first token has expired meanwhile.
    let token = bus.token(&connection).await;
    assert!(bus.receive(&token, &connection, "wait=0").await.is_empty());
    tokio::time::advance(Duration::from_secs(102)).await;
    let back = bus.receive(&token, &connection, "wait=0").await;
    assert_eq!(back.len(), 1, "visible again at the 12-hour mark");
    assert_eq!(back[0]["receive_count"], 2);
}

/// Routes no handler serves and wrong methods answer in the sombus shapes: the bus's body with
/// `route.*` rules on pull paths (or the admin API's on its own), OAuth's on the token path.
#[tokio::test(start_paused = true)]
async fn sombus_unknown_routes_and_wrong_methods_answer_in_its_shapes() {
    let bus = Bus::start().await;
    let pull = format!("/v1/tenants/{WORKSPACE}/consumers/c1");
    for (method, path, status, rules) in [
        (
            Method::GET,
            format!("{pull}/nothing"),
            StatusCode::NOT_FOUND,
            &["route.not_found"][..],
        ),
        (
            Method::POST,
            format!("{pull}/messages"),
            StatusCode::METHOD_NOT_ALLOWED,
            &["route.method_not_allowed"][..],
        ),
        (
            Method::PUT,
            format!("{pull}/ack"),
            StatusCode::METHOD_NOT_ALLOWED,
            &["route.method_not_allowed"][..],
        ),
        (
            Method::GET,
            format!("/v1/admin/workspaces/{WORKSPACE}/nothing"),
            StatusCode::NOT_FOUND,
            &["admin.not_found", "route.not_found"][..],
        ),
        (
            Method::PUT,
            format!("/v1/admin/workspaces/{WORKSPACE}/connections"),
            StatusCode::METHOD_NOT_ALLOWED,
            &["route.method_not_allowed"][..],
        ),
    ] {
        let answer = bus
            .service
            .call(request(method.clone(), &path, Some(&bus.admin), "{}"))
            .await;
        let (answered, rule) = rule(&answer);
        assert_eq!(answered, status, "{method} {path}");
        assert!(rules.contains(&rule), "{method} {path}: {rule}");
    }
    let token_get = bus
        .service
        .call(request(Method::GET, "/v1/oauth/token", None, Body::empty()))
        .await;
    assert_eq!(
        oauth_error(&token_get),
        (StatusCode::METHOD_NOT_ALLOWED, "invalid_request")
    );
    let token_elsewhere = bus
        .service
        .call(request(
            Method::POST,
            "/v1/oauth/other",
            None,
            Body::empty(),
        ))
        .await;
    assert_eq!(oauth_error(&token_elsewhere).0, StatusCode::NOT_FOUND);
}
