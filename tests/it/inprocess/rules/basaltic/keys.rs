//! basaltic keys and permissions: a key is checked before the body is read, each operation takes
//! its permission, and a queue the key holds nothing on is not found.

use super::*;

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
