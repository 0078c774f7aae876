//! The access log says who called and from where: each dialect's authenticated caller by public
//! id, a refused caller as `unauthenticated` with the id it claimed (never its secret), one
//! warning per address a minute with a count, and the client address as
//! `server.trusted_proxies` resolves it for every dialect.

use crate::harness::*;
use crate::http::basaltic::support::Basaltic;
use crate::http::sombus::support::Bus;
use reqwest::{Method, StatusCode};
use serde_json::json;

/// A fresh request id, to find the request's own log lines.
fn request_id(what: &str) -> String {
    unique(&format!("it-log-{what}-"))
}

/// The log lines of the request `id`.
fn lines_of(id: &str) -> Vec<String> {
    let needle = format!("request_id={id} ");
    captured_logs()
        .lines()
        .filter(|line| line.contains(&needle))
        .map(str::to_owned)
        .collect()
}

/// The request's "answered" line.
fn answered_line(id: &str) -> String {
    lines_of(id)
        .into_iter()
        .find(|line| line.contains("answered"))
        .unwrap_or_else(|| panic!("no access line for {id}"))
}

/// The public id of a `sqsgw_<id>_<secret>` key.
fn public_id(key: &str) -> &str {
    key.strip_prefix("sqsgw_")
        .unwrap()
        .split('_')
        .next()
        .unwrap()
}

async fn call(
    gw: &TestGateway,
    method: Method,
    path: &str,
    id: &str,
    key: Option<&str>,
    extra: &[(&str, &str)],
    body: Option<&str>,
) -> StatusCode {
    let mut request = gw
        .http
        .request(method, format!("{}{path}", gw.base))
        .header("x-request-id", id);
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_owned());
    }
    request.send().await.unwrap().status()
}

/// A signed SQS `ListQueues` (Query protocol) with a request id.
async fn sqs_list_queues(gw: &TestGateway, id: &str, how: &Signing<'_>) -> StatusCode {
    let request = signed(
        "POST",
        &format!("{}/", gw.base),
        &[
            ("host", &host_of(&gw.base)),
            ("content-type", "application/x-www-form-urlencoded"),
            ("x-request-id", id),
        ],
        b"Action=ListQueues&Version=2012-11-05",
        how,
    );
    send(gw, request).await.0
}

#[tokio::test]
async fn each_dialect_s_access_line_names_the_caller_and_the_client_address() {
    let api = Basaltic::start(Kind::Embedded).await;
    let gw = &api.gw;

    // ezgh: the key's public id; a forwarding header from an untrusted peer changes nothing.
    let ezgh = request_id("ezgh");
    let receive =
        format!("/v1/organizations/{ORG}/projects/{PROJECT}/queues/nowhere/messages/receive");
    call(
        gw,
        Method::POST,
        &receive,
        &ezgh,
        Some(&gw.key),
        &[("x-forwarded-for", "203.0.113.9")],
        Some("{}"),
    )
    .await;
    let line = answered_line(&ezgh);
    assert!(
        line.contains(&format!("caller=api_key:{}", public_id(&gw.key))),
        "{line}"
    );
    assert!(line.contains("client=127.0.0.1"), "{line}");
    assert!(
        !line.contains(&gw.key),
        "the key itself is never logged: {line}"
    );

    // ezgh's ack: the handle is the credential.
    let ack = request_id("ack");
    call(
        gw,
        Method::POST,
        "/v1/receipts/ack",
        &ack,
        None,
        &[],
        Some(r#"{"receiptHandles": ["not-a-handle"]}"#),
    )
    .await;
    assert!(answered_line(&ack).contains("caller=anonymous"));

    // basaltic: the key's public id.
    let basaltic = request_id("basaltic");
    let status = call(
        gw,
        Method::GET,
        "/v1/queues",
        &basaltic,
        Some(&api.admin),
        &[],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        answered_line(&basaltic).contains(&format!("caller=api_key:{}", public_id(&api.admin)))
    );

    // SQS: the access key id; unsigned requests are refused, not anonymous, by default.
    let sqs = request_id("sqs");
    assert_eq!(
        sqs_list_queues(gw, &sqs, &Signing::default()).await,
        StatusCode::OK
    );
    let line = answered_line(&sqs);
    assert!(
        line.contains(&format!("caller=access_key:{SQS_KEY_ID}")),
        "{line}"
    );
    assert!(line.contains("action=\"ListQueues\""), "{line}");
    api.gw.stop().await;
}

#[tokio::test]
async fn a_refused_caller_is_logged_with_the_id_it_claimed_and_warned_of_once_a_minute() {
    let api = Basaltic::start(Kind::Embedded).await;
    let gw = &api.gw;
    let claimed = format!("{:016x}", rand::random::<u64>());
    let wrong_key = format!("sqsgw_{claimed}_not-the-secret");
    let mut refused = Vec::new();
    for attempt in 0..3 {
        let id = request_id(&format!("refused-{attempt}"));
        let status = call(
            gw,
            Method::GET,
            "/v1/queues",
            &id,
            Some(&wrong_key),
            &[],
            None,
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        refused.push(id);
    }
    for id in &refused {
        let line = answered_line(id);
        assert!(line.contains("caller=unauthenticated"), "{line}");
        assert!(
            line.contains(&format!("claimed=api_key:{claimed}")),
            "{line}"
        );
        assert!(!line.contains("not-the-secret"), "{line}");
    }
    let warned = |id: &str| {
        lines_of(id)
            .iter()
            .any(|line| line.contains("WARN") && line.contains("authentication failed"))
    };
    assert!(
        warned(&refused[0]),
        "the first refusal from an address warns"
    );
    assert!(
        !warned(&refused[1]) && !warned(&refused[2]),
        "later ones within the minute are counted, not written"
    );

    // A bearer that is no key's shape claims nothing; a wrong SQS secret claims its key id.
    let shapeless = request_id("shapeless");
    call(
        gw,
        Method::GET,
        "/v1/queues",
        &shapeless,
        Some("password123"),
        &[],
        None,
    )
    .await;
    let line = answered_line(&shapeless);
    assert!(
        line.contains("caller=unauthenticated") && !line.contains("claimed="),
        "{line}"
    );
    let sqs = request_id("sqs-refused");
    let status = sqs_list_queues(
        gw,
        &sqs,
        &Signing {
            secret: "not-the-secret",
            ..Signing::default()
        },
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let line = answered_line(&sqs);
    assert!(
        line.contains(&format!("claimed=access_key:{SQS_KEY_ID}")),
        "{line}"
    );

    let scrape = scrape(gw).await;
    assert_eq!(
        sample(
            &scrape,
            r#"sqsgw_authentication_failures_total{dialect="basaltic"}"#
        ),
        Some(4.0),
        "{scrape}"
    );
    assert_eq!(
        sample(
            &scrape,
            r#"sqsgw_authentication_failures_total{dialect="sqs"}"#
        ),
        Some(1.0),
        "{scrape}"
    );
    api.gw.stop().await;
}

#[tokio::test]
async fn sombus_callers_are_named_by_client_id_and_admin_key() {
    let bus = Bus::start(Kind::Embedded).await;
    let created = bus.create(json!({ "name": "logged" })).await;
    let token = request_id("token");
    let form = "grant_type=client_credentials";
    let basic = |secret: &str| {
        use base64::Engine as _;
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{secret}", created.client_id))
        )
    };
    let token_call = |id: &str, secret: &str| {
        let request = bus
            .gw
            .http
            .post(format!("{}/v1/oauth/token", bus.gw.base))
            .header("x-request-id", id)
            .header("authorization", basic(secret))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form);
        async move { request.send().await.unwrap().status() }
    };
    assert_eq!(token_call(&token, &created.secret).await, StatusCode::OK);
    assert!(answered_line(&token).contains(&format!("caller=token:{}", created.client_id)));
    let wrong = request_id("token-refused");
    assert_eq!(
        token_call(&wrong, "not-the-secret").await,
        StatusCode::UNAUTHORIZED
    );
    let line = answered_line(&wrong);
    assert!(
        line.contains("caller=unauthenticated")
            && line.contains(&format!("claimed=client:{}", created.client_id))
            && !line.contains("not-the-secret"),
        "{line}"
    );

    // The pull API: the connection's client id, and the one the path claims on a bad token.
    let pulls = format!(
        "/v1/tenants/{}/consumers/{}/messages?wait=0",
        bus.workspace, created.client_id
    );
    let access_token =
        crate::http::sombus::support::token(&bus.gw, &created.client_id, &created.secret).await;
    let pull = request_id("pull");
    let status = call(
        &bus.gw,
        Method::GET,
        &pulls,
        &pull,
        Some(&access_token),
        &[],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(answered_line(&pull).contains(&format!("caller=token:{}", created.client_id)));
    let forged = request_id("pull-refused");
    let status = call(
        &bus.gw,
        Method::GET,
        &pulls,
        &forged,
        Some("forged"),
        &[],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let line = answered_line(&forged);
    assert!(
        line.contains("caller=unauthenticated")
            && line.contains(&format!("claimed=client:{}", created.client_id)),
        "{line}"
    );

    let admin = request_id("admin");
    let status = call(
        &bus.gw,
        Method::GET,
        &format!("/v1/admin/workspaces/{}/connections", bus.workspace),
        &admin,
        Some(&bus.admin),
        &[],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let line = answered_line(&admin);
    assert!(
        line.contains(&format!("caller=admin_key:admin-of-{}", bus.workspace)),
        "{line}"
    );
    bus.gw.stop().await;
}

/// Behind trusted proxies every dialect sees the client the chain names: the access line, and
/// ezgh's invalid-handle budget, which counts per client address.
#[tokio::test]
async fn trusted_proxies_name_the_client_for_every_dialect() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .config("[server]\ntrusted_proxies = [\"127.0.0.0/8\", \"::1\"]\ninvalid_handles_per_minute = 10\n")
        .start()
        .await;
    let invalid = json!({ "receiptHandles": ["x", "y", "z", "w", "v"] }).to_string();
    let ack = |what: &'static str, client: &'static str| {
        let (gw, invalid) = (&gw, &invalid);
        async move {
            let id = request_id(what);
            call(
                gw,
                Method::POST,
                "/v1/receipts/ack",
                &id,
                None,
                &[("x-forwarded-for", client)],
                Some(invalid),
            )
            .await
        }
    };
    // The spoofed entry left of the proxy's is not the client.
    let first = request_id("proxied");
    call(
        &gw,
        Method::POST,
        "/v1/receipts/ack",
        &first,
        None,
        &[("x-forwarded-for", "198.51.100.1, 203.0.113.9")],
        Some(&invalid),
    )
    .await;
    assert!(answered_line(&first).contains("client=203.0.113.9"));
    let forwarded = request_id("forwarded");
    call(
        &gw,
        Method::POST,
        "/v1/receipts/ack",
        &forwarded,
        None,
        &[("forwarded", "for=\"[2001:db8::7]:4711\";proto=https")],
        Some("{\"receiptHandles\": [\"x\"]}"),
    )
    .await;
    assert!(answered_line(&forwarded).contains("client=2001:db8::7"));

    // 203.0.113.9 spent 5 of its 10; 5 more pass, the next is refused; another client is not.
    assert_eq!(ack("budget-1", "203.0.113.9").await, StatusCode::OK);
    assert_eq!(
        ack("budget-2", "203.0.113.9").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(ack("other", "192.0.2.44").await, StatusCode::OK);
    gw.stop().await;
}
