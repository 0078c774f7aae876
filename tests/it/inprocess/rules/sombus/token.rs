//! The sombus token service: OAuth 2.0's shape, the client authenticated before the body is read,
//! failed requests limited per address, and an expired token unauthenticated.

use super::*;

/// The token service in OAuth 2.0's shape: `invalid_client` 401 with the Basic challenge for a
/// wrong secret, an unknown id or no credentials; `unsupported_grant_type` and `invalid_request`
/// 400; every answer `Cache-Control: no-store`; the right request gets a Bearer token for an hour.
#[tokio::test(start_paused = true)]
async fn sombus_the_token_service_speaks_oauth() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    let form = "application/x-www-form-urlencoded";
    let grant = || Body::from("grant_type=client_credentials");
    let right = basic(&connection.client_id, &connection.secret);
    for (authorization, content_type, body, expected) in [
        (
            Some(basic(&connection.client_id, "sbs_wrong")),
            form,
            grant(),
            (StatusCode::UNAUTHORIZED, "invalid_client"),
        ),
        (
            Some(basic("nobody", &connection.secret)),
            form,
            grant(),
            (StatusCode::UNAUTHORIZED, "invalid_client"),
        ),
        (
            None,
            form,
            grant(),
            (StatusCode::UNAUTHORIZED, "invalid_client"),
        ),
        (
            Some(format!("Bearer {}", connection.secret)),
            form,
            grant(),
            (StatusCode::UNAUTHORIZED, "invalid_client"),
        ),
        (
            Some(right.clone()),
            form,
            Body::from("grant_type=password"),
            (StatusCode::BAD_REQUEST, "unsupported_grant_type"),
        ),
        (
            Some(right.clone()),
            form,
            Body::from("scope=everything"),
            (StatusCode::BAD_REQUEST, "invalid_request"),
        ),
        (
            Some(right.clone()),
            form,
            Body::from("grant_type=client_credentials&grant_type=client_credentials"),
            (StatusCode::BAD_REQUEST, "invalid_request"),
        ),
        (
            Some(right.clone()),
            "application/json",
            Body::from(r#"{"grant_type":"client_credentials"}"#),
            (StatusCode::BAD_REQUEST, "invalid_request"),
        ),
    ] {
        let refused = bus
            .token_call(authorization.as_deref(), content_type, body)
            .await;
        assert_eq!(oauth_error(&refused), expected, "{authorization:?}");
        assert_eq!(refused.header("cache-control").as_deref(), Some("no-store"));
        if expected.0 == StatusCode::UNAUTHORIZED {
            assert!(
                refused
                    .header("www-authenticate")
                    .is_some_and(|challenge| challenge.starts_with("Basic")),
                "{authorization:?}"
            );
        }
        assert!(
            !refused.text.contains(&connection.secret),
            "a secret was echoed"
        );
    }
    let issued = bus
        .token_of(&connection.client_id, &connection.secret)
        .await;
    assert_eq!(issued.status, StatusCode::OK, "{}", issued.text);
    assert_eq!(issued.body["token_type"], "Bearer");
    assert_eq!(issued.body["expires_in"], 3600);
    assert!(issued.body["access_token"].is_string());
    assert_eq!(issued.header("cache-control").as_deref(), Some("no-store"));
}

/// The client is authenticated before the body is read: without credentials, or with wrong ones,
/// the body is never touched; a body that is not form-encoded is refused from its head too.
#[tokio::test(start_paused = true)]
async fn sombus_token_requests_are_authenticated_before_the_body_is_read() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    for (authorization, content_type, expected) in [
        (None, "application/x-www-form-urlencoded", "invalid_client"),
        (
            Some(basic(&connection.client_id, "sbs_guess")),
            "application/x-www-form-urlencoded",
            "invalid_client",
        ),
        (
            Some(basic(&connection.client_id, &connection.secret)),
            "text/plain",
            "invalid_request",
        ),
    ] {
        let tripwire = Tripwire::default();
        let refused = bus
            .token_call(authorization.as_deref(), content_type, tripwire.body())
            .await;
        assert_eq!(oauth_error(&refused).1, expected, "{authorization:?}");
        assert!(!tripwire.was_read(), "{authorization:?}: the body was read");
    }
    // The control: the right client with a form body has it read.
    let tripwire = Tripwire::default();
    let read = bus
        .token_call(
            Some(&basic(&connection.client_id, &connection.secret)),
            "application/x-www-form-urlencoded",
            tripwire.body(),
        )
        .await;
    assert_eq!(
        oauth_error(&read),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    assert!(tripwire.was_read());
}

/// Failed token requests count against the address: past 60 a minute, a request presenting
/// credentials gets 429 `temporarily_unavailable` with `Retry-After` (one presenting none still
/// the 401 challenge, the right secret still its token); a minute later failures are 401 again.
#[tokio::test(start_paused = true)]
async fn sombus_failed_token_requests_are_limited_per_address_per_minute() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    for attempt in 0..60 {
        let failed = bus.token_of("nobody", "sbs_guess").await;
        assert_eq!(failed.status, StatusCode::UNAUTHORIZED, "attempt {attempt}");
    }
    let over = bus.token_of(&connection.client_id, "sbs_guess").await;
    assert_eq!(
        oauth_error(&over),
        (StatusCode::TOO_MANY_REQUESTS, "temporarily_unavailable")
    );
    let wait: u64 = over.retry_after_seconds();
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    let challenged = bus
        .token_call(
            None,
            "application/x-www-form-urlencoded",
            Body::from("grant_type=client_credentials"),
        )
        .await;
    assert_eq!(
        oauth_error(&challenged),
        (StatusCode::UNAUTHORIZED, "invalid_client")
    );
    assert_eq!(
        bus.token_of(&connection.client_id, &connection.secret)
            .await
            .status,
        StatusCode::OK
    );
    tokio::time::advance(Duration::from_secs(61)).await;
    let again = bus.token_of(&connection.client_id, "sbs_guess").await;
    assert_eq!(
        oauth_error(&again),
        (StatusCode::UNAUTHORIZED, "invalid_client")
    );
}

/// A token is refused once it has expired on the gateway's clock (an hour); a new one reads.
#[tokio::test(start_paused = true)]
async fn sombus_an_expired_token_is_unauthenticated() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    let token = bus.token(&connection).await;
    tokio::time::advance(Duration::from_secs(3599)).await;
    assert!(bus.receive(&token, &connection, "wait=0").await.is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    let expired = bus
        .pull(&token, WORKSPACE, &connection.client_id, "wait=0")
        .await;
    assert_eq!(
        rule(&expired),
        (StatusCode::UNAUTHORIZED, "producer.unauthenticated")
    );
    let fresh = bus.token(&connection).await;
    assert!(bus.receive(&fresh, &connection, "wait=0").await.is_empty());
}
