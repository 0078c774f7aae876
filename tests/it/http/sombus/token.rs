//! The sombus token service over HTTP on both backends: its own refusals, in OAuth 2.0's shape.

use super::support::*;
use crate::harness::{Kind, answer};
use reqwest::StatusCode;
use serde_json::json;

/// The token service's own refusals, in OAuth 2.0's shape.
async fn the_token_service_speaks_oauth(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({})).await;
    let url = format!("{}/v1/oauth/token", bus.gw.base);
    let wrong = token_answer(&bus.gw, &created.client_id, "sbs_wrong").await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert_eq!(wrong.body["error"], "invalid_client");
    assert!(
        wrong.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Basic")
    );
    let unknown = token_answer(&bus.gw, "nobody", &created.secret).await;
    assert_eq!(unknown.body["error"], "invalid_client");
    let no_auth = answer(
        bus.gw
            .http
            .post(&url)
            .body("grant_type=client_credentials")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (no_auth.status, no_auth.body["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("invalid_client"))
    );
    let grant = |body: &'static str| {
        bus.gw
            .http
            .post(&url)
            .basic_auth(&created.client_id, Some(&created.secret))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    let password = answer(grant("grant_type=password").await.unwrap()).await;
    assert_eq!(
        (password.status, password.body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("unsupported_grant_type"))
    );
    let missing = answer(grant("scope=x").await.unwrap()).await;
    assert_eq!(
        (missing.status, missing.body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request"))
    );
    let twice = answer(
        grant("grant_type=client_credentials&grant_type=client_credentials")
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(twice.body["error"], "invalid_request");
    // An unauthenticated body is refused before it is read (the answer does not wait for it).
    let huge = answer(
        bus.gw
            .http
            .post(&url)
            .body(vec![b'a'; 1 << 20])
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(huge.body["error"], "invalid_client");
    let wrong_method = answer(bus.gw.http.get(&url).send().await.unwrap()).await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(wrong_method.body["error"].is_string());
    // Failures count against the caller's address: 60 a minute (4 so far), then 429.
    for _ in 0..56 {
        assert_eq!(
            token_answer(&bus.gw, "nobody", "x").await.status,
            StatusCode::UNAUTHORIZED
        );
    }
    let over = token_answer(&bus.gw, &created.client_id, "sbs_guess").await;
    assert_eq!(over.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(over.body["error"], "temporarily_unavailable");
    assert!(over.headers.contains_key("retry-after"));
    // The right secret still gets its token.
    assert_eq!(
        token_answer(&bus.gw, &created.client_id, &created.secret)
            .await
            .status,
        StatusCode::OK
    );
}

crate::on_both_backends!(the_token_service_speaks_oauth,);
