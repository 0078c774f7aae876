//! sombus: refusals are `{"accepted": false, "violations": [{"rule", "message"}]}`; the token
//! service answers in OAuth 2.0's shape

use super::*;

pub(super) const WORKSPACE: &str = "ws-test";

/// The service with the sombus API: admin keys of the workspace (admin, viewer) and of another,
/// and a tier tight enough to reach its limits.
pub(super) struct Bus {
    pub(super) service: InProcess,
    pub(super) admin: String,
    pub(super) viewer: String,
    pub(super) outsider: String,
}

/// A created connection.
pub(super) struct Connection {
    pub(super) client_id: String,
    pub(super) secret: String,
    pub(super) queue: String,
}

pub(super) fn admin_key_entry(workspace: &str, role: &str) -> (String, String) {
    let key = api_keys::generate_key();
    let entry = format!(
        "[[sombus.admin_keys]]\nid = \"{}\"\nname = \"{role}\"\nhash = \"{}\"\nworkspaces = [\"{workspace}\"]\nrole = \"{role}\"\n\n",
        key.id, key.hash
    );
    (key.key, entry)
}

/// The refusal's status and rule, checking the bus's body.
pub(super) fn rule(reply: &Reply) -> (StatusCode, &str) {
    assert_eq!(reply.body["accepted"], false, "{}", reply.text);
    assert!(
        reply.body["violations"][0]["message"].is_string(),
        "{}",
        reply.text
    );
    (
        reply.status,
        reply.body["violations"][0]["rule"]
            .as_str()
            .unwrap_or_default(),
    )
}

/// The OAuth error of a token-service answer.
pub(super) fn oauth_error(reply: &Reply) -> (StatusCode, &str) {
    assert!(
        reply.body["error_description"].is_string(),
        "{}",
        reply.text
    );
    (
        reply.status,
        reply.body["error"].as_str().unwrap_or_default(),
    )
}

pub(super) fn basic(client_id: &str, secret: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{client_id}:{secret}"))
    )
}

impl Bus {
    async fn start() -> Self {
        let (admin, admin_entry) = admin_key_entry(WORKSPACE, "admin");
        let (viewer, viewer_entry) = admin_key_entry(WORKSPACE, "viewer");
        let (outsider, outsider_entry) = admin_key_entry("elsewhere", "admin");
        let service = with_tables(&format!(
            "[sombus]\nenvironment = \"test\"\n\n\
             [sombus.tiers.tight]\nrequests_per_second = 1\nburst = 2\nrequests_per_day = 4\n\n\
             {admin_entry}{viewer_entry}{outsider_entry}"
        ))
        .await;
        Self {
            service,
            admin,
            viewer,
            outsider,
        }
    }

    async fn admin_call(&self, method: Method, rest: &str, key: &str, body: &str) -> Reply {
        self.service
            .call(request(
                method,
                &format!("/v1/admin/workspaces/{WORKSPACE}{rest}"),
                Some(key),
                body.to_owned(),
            ))
            .await
    }

    async fn connect(&self, body: Value) -> Connection {
        let created = self
            .admin_call(Method::POST, "/connections", &self.admin, &body.to_string())
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
        let client_id = created.body["client_id"].as_str().unwrap().to_owned();
        let shown = self
            .admin_call(
                Method::GET,
                &format!("/connections/{client_id}"),
                &self.viewer,
                "",
            )
            .await;
        assert_eq!(shown.status, StatusCode::OK, "{}", shown.text);
        Connection {
            secret: created.body["client_secret"].as_str().unwrap().to_owned(),
            queue: shown.body["queue"].as_str().unwrap().to_owned(),
            client_id,
        }
    }

    async fn token_call(
        &self,
        authorization: Option<&str>,
        content_type: &str,
        body: Body,
    ) -> Reply {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri("/v1/oauth/token")
            .header("content-type", content_type);
        if let Some(value) = authorization {
            builder = builder.header("authorization", value);
        }
        self.service.call(builder.body(body).unwrap()).await
    }

    async fn token_of(&self, client_id: &str, secret: &str) -> Reply {
        self.token_call(
            Some(&basic(client_id, secret)),
            "application/x-www-form-urlencoded",
            Body::from("grant_type=client_credentials"),
        )
        .await
    }

    async fn token(&self, connection: &Connection) -> String {
        let answer = self
            .token_of(&connection.client_id, &connection.secret)
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        answer.body["access_token"].as_str().unwrap().to_owned()
    }

    async fn pull(&self, token: &str, tenant: &str, client: &str, query: &str) -> Reply {
        self.service
            .call(request(
                Method::GET,
                &format!("/v1/tenants/{tenant}/consumers/{client}/messages?{query}"),
                Some(token),
                Body::empty(),
            ))
            .await
    }

    /// A receive of `connection`'s own messages.
    async fn receive(&self, token: &str, connection: &Connection, query: &str) -> Vec<Value> {
        let got = self
            .pull(token, WORKSPACE, &connection.client_id, query)
            .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.text);
        got.body["messages"].as_array().unwrap().clone()
    }

    async fn settle(&self, token: &str, connection: &Connection, route: &str, body: &str) -> Reply {
        self.service
            .call(request(
                Method::POST,
                &format!(
                    "/v1/tenants/{WORKSPACE}/consumers/{}/{route}",
                    connection.client_id
                ),
                Some(token),
                body.to_owned(),
            ))
            .await
    }

    /// Puts a message in `connection`'s queue straight into the backend.
    async fn publish(&self, connection: &Connection, body: &str, group: Option<&str>) {
        let url = self
            .service
            .backend
            .resolve(&connection.queue)
            .await
            .unwrap()
            .url;
        let sent = self
            .service
            .backend
            .send_batch(
                &url,
                &[OutgoingMessage {
                    body: body.into(),
                    group_id: group.map(str::to_owned),
                    deduplication_id: group.map(|_| format!("{:016x}", rand::random::<u64>())),
                    ..Default::default()
                }],
            )
            .await
            .unwrap();
        sent[0].as_ref().unwrap();
    }
}

pub(super) fn sombus_handle(message: &Value) -> String {
    message["receipt_handle"].as_str().unwrap().to_owned()
}

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

/// The admin API: its key is checked before the body is read (401 `admin.unauthenticated`), a key
/// of another workspace or too low a role is 403 `admin.forbidden`, an unknown connection 404
/// `admin.not_found`, a malformed create 400 `admin.bad_request`; none of them creates anything.
#[tokio::test(start_paused = true)]
async fn sombus_admin_refusals_have_their_rules_and_create_nothing() {
    let bus = Bus::start().await;
    for key in [None, Some("sqsgw_0000_notakey")] {
        let tripwire = Tripwire::default();
        let refused = bus
            .service
            .call(request(
                Method::POST,
                &format!("/v1/admin/workspaces/{WORKSPACE}/connections"),
                key,
                tripwire.body(),
            ))
            .await;
        assert_eq!(
            rule(&refused),
            (StatusCode::UNAUTHORIZED, "admin.unauthenticated"),
            "{key:?}"
        );
        assert!(!tripwire.was_read(), "{key:?}: the body was read");
    }
    let outsider = bus
        .admin_call(Method::GET, "/connections", &bus.outsider, "")
        .await;
    assert_eq!(rule(&outsider), (StatusCode::FORBIDDEN, "admin.forbidden"));
    let viewer = bus
        .admin_call(Method::POST, "/connections", &bus.viewer, "{}")
        .await;
    assert_eq!(rule(&viewer), (StatusCode::FORBIDDEN, "admin.forbidden"));
    let missing = bus
        .admin_call(Method::GET, "/connections/nobody", &bus.viewer, "")
        .await;
    assert_eq!(rule(&missing), (StatusCode::NOT_FOUND, "admin.not_found"));
    for body in [
        json!({ "attempt_limit": 0 }).to_string(),
        json!({ "attempt_limit": 1001 }).to_string(),
        json!({ "client_id": "has_underscore" }).to_string(),
        json!({ "client_id": "x".repeat(26) }).to_string(),
        json!({ "client_id": "ws-test.house" }).to_string(),
        json!({ "role": "boss" }).to_string(),
        json!({ "fifo": "yes" }).to_string(),
        json!({ "name": "" }).to_string(),
        json!({ "colour": "red" }).to_string(),
        r#"{"client_id":"a","client_id":"b"}"#.to_owned(),
        "[]".to_owned(),
    ] {
        let refused = bus
            .admin_call(Method::POST, "/connections", &bus.admin, &body)
            .await;
        assert_eq!(
            rule(&refused),
            (StatusCode::BAD_REQUEST, "admin.bad_request"),
            "{body}"
        );
    }
    let listed = bus
        .admin_call(Method::GET, "/connections", &bus.viewer, "")
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    assert_eq!(listed.body["connections"], json!([]), "nothing was created");
}

/// The audit log: every change and every refused admin request (outcome `refused`), newest first;
/// `limit` 1–1000 and `cursor` (a `next_cursor`), each once, and nothing else.
#[tokio::test(start_paused = true)]
async fn sombus_the_audit_log_pages_and_its_query_is_checked() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    let refused = bus
        .admin_call(Method::GET, "/connections", &bus.outsider, "")
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    // Refusals are recorded off the request's path: a task of their own runs while the test waits.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for query in [
        "limit=0",
        "limit=1001",
        "limit=x",
        "limit=1&limit=2",
        "cursor=abc",
        "cursor=12345678901234567890",
        "cursor=",
        "page=2",
    ] {
        let answer = bus
            .admin_call(Method::GET, &format!("/audit?{query}"), &bus.viewer, "")
            .await;
        assert_eq!(
            rule(&answer),
            (StatusCode::BAD_REQUEST, "admin.bad_request"),
            "{query}"
        );
    }
    let page = bus
        .admin_call(Method::GET, "/audit?limit=1000", &bus.viewer, "")
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let entries = page.body["entries"].as_array().unwrap();
    assert_eq!(
        entries[0]["outcome"], "refused",
        "newest first: {}",
        page.text
    );
    assert!(
        entries[0]["detail"]
            .as_str()
            .unwrap()
            .contains("admin.forbidden"),
        "{}",
        page.text
    );
    let created = entries
        .iter()
        .find(|entry| entry["action"] == "connection.create")
        .unwrap_or_else(|| panic!("no create: {}", page.text));
    assert_eq!(created["client_id"], connection.client_id.as_str());
    assert!(
        !page.text.contains(&connection.secret),
        "a secret was logged"
    );
    let first = bus
        .admin_call(Method::GET, "/audit?limit=1", &bus.viewer, "")
        .await;
    assert_eq!(first.body["entries"].as_array().unwrap().len(), 1);
    let cursor = first.body["next_cursor"].as_str().unwrap().to_owned();
    let next = bus
        .admin_call(
            Method::GET,
            &format!("/audit?limit=1&cursor={cursor}"),
            &bus.viewer,
            "",
        )
        .await;
    assert_eq!(next.status, StatusCode::OK, "{}", next.text);
    assert_eq!(next.body["entries"][0], entries[1], "the next page goes on");
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

/// A connection's queue is reserved: a grant on every queue (here the SQS endpoint's unsigned
/// caller) may publish to it and read its address, never receive from it or purge it.
#[tokio::test(start_paused = true)]
async fn sombus_connection_queues_take_sends_from_any_queue_grant_but_nothing_else() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "fifo": false })).await;
    let address = bus
        .service
        .sqs_call("GetQueueUrl", json!({ "QueueName": connection.queue }))
        .await;
    assert_eq!(address.status, StatusCode::OK, "{}", address.text);
    let url = address.body["QueueUrl"].as_str().unwrap().to_owned();
    let sent = bus
        .service
        .sqs_call(
            "SendMessage",
            json!({ "QueueUrl": url, "MessageBody": r#"{"message_id":"m-1"}"# }),
        )
        .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    for action in ["ReceiveMessage", "PurgeQueue", "DeleteQueue"] {
        let refused = bus
            .service
            .sqs_call(action, json!({ "QueueUrl": url }))
            .await;
        assert_eq!(
            refused.status,
            StatusCode::FORBIDDEN,
            "{action}: {}",
            refused.text
        );
        assert_eq!(sqs_code(&refused), "AccessDenied", "{action}");
    }
    let token = bus.token(&connection).await;
    let got = bus.receive(&token, &connection, "wait=0").await;
    assert_eq!(got.len(), 1, "the message is still there for its consumer");
    assert_eq!(got[0]["envelope"]["message_id"], "m-1");
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

/// `ListQueues` through a grant on every queue (the unsigned caller's `*`) never lists the
/// gateway's reserved queues: no sombus workspace, client id or basaltic queue is learnt so.
#[tokio::test(start_paused = true)]
async fn sombus_reserved_queues_are_never_listed_through_a_grant_on_every_queue() {
    let (admin, admin_entry) = admin_key_entry(WORKSPACE, "admin");
    let (basaltic_key, basaltic_entry) = basaltic_key_entry(r#""*" = ["*"]"#);
    let service = with_tables(&format!(
        "[sombus]\n\n{admin_entry}[basaltic]\n\n{basaltic_entry}"
    ))
    .await;
    let created = service
        .call(request(
            Method::POST,
            &format!("/v1/admin/workspaces/{WORKSPACE}/connections"),
            Some(&admin),
            "{}",
        ))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let queue = service
        .call(request(
            Method::POST,
            "/v1/queues",
            Some(&basaltic_key),
            json!({ "name": "invoices" }).to_string(),
        ))
        .await;
    assert_eq!(queue.status, StatusCode::CREATED, "{}", queue.text);
    let in_backend = service.backend.list_queues("sqsgw_").await.unwrap();
    assert_eq!(
        in_backend.len(),
        3,
        "a connection's two queues and the basaltic one: {in_backend:?}"
    );
    for body in [json!({}), json!({ "QueueNamePrefix": "sqsgw_" })] {
        let listed = service.sqs_call("ListQueues", body.clone()).await;
        assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
        let urls = listed.body["QueueUrls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            urls.iter()
                .all(|url| !url.as_str().unwrap().contains("sqsgw_")),
            "{body}: {}",
            listed.text
        );
    }
}
