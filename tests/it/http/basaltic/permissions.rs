//! basaltic keys and permissions over HTTP on both backends: each operation takes its permission,
//! and every refusal comes in the one error shape.

use super::support::*;
use crate::harness::Kind;
use reqwest::{Method, StatusCode};
use serde_json::json;

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

crate::on_both_backends!(keys_and_permissions_are_enforced,);
