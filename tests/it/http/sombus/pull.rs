//! The sombus pull API over HTTP on both backends: the token service, the pull routes with their
//! documented defaults, ranges, shapes and refusals, credential rotation and revocation timed with
//! a clock the test moves, connection limits, per-story order, and the admin API.

use crate::harness::unique;
use crate::harness::{Answer, GatewayBuilder, Kind, TestGateway, answer, captured_logs};
use aws_sdk_sqs::types::MessageAttributeValue;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqs_gateway::credentials::api_keys;

/// A gateway with the sombus API on, a workspace and admin keys of each role.
pub struct Bus {
    pub gw: TestGateway,
    pub workspace: String,
    /// Admin role on `workspace`.
    pub admin: String,
    pub developer: String,
    pub viewer: String,
    /// Admin role on another workspace.
    pub outsider: String,
    /// Where the connections are kept (shared by replicas).
    _store: std::sync::Arc<tempfile::TempDir>,
    pub toml: String,
}

/// A created connection: its ids and first secret.
pub struct Created {
    pub client_id: String,
    pub secret: String,
    pub queue: String,
    pub body: Value,
}

fn admin_key(workspace: &str, role: &str) -> (String, String) {
    let key = api_keys::generate_key();
    let entry = format!(
        "[[sombus.admin_keys]]\nid = \"{}\"\nname = \"{role}-of-{workspace}\"\nhash = \"{}\"\nworkspaces = [\"{workspace}\"]\nrole = \"{role}\"\n\n",
        key.id, key.hash
    );
    (key.key, entry)
}

impl Bus {
    /// The directory the connections are kept in (without a shared state store).
    pub fn store_dir(&self) -> &std::path::Path {
        self._store.path()
    }

    pub async fn start(kind: Kind) -> Self {
        Self::start_with(kind, "").await
    }

    /// With extra lines for the `[sombus]` table (before the admin keys).
    pub async fn start_with(kind: Kind, sombus: &str) -> Self {
        Self::start_on(GatewayBuilder::new(kind), sombus).await
    }

    /// On `builder` (a given state store, say), with extra lines for the `[sombus]` table.
    pub async fn start_on(builder: GatewayBuilder, sombus: &str) -> Self {
        let workspace = unique("ws-");
        let store = std::sync::Arc::new(tempfile::tempdir().unwrap());
        let (admin, admin_entry) = admin_key(&workspace, "admin");
        let (developer, developer_entry) = admin_key(&workspace, "developer");
        let (viewer, viewer_entry) = admin_key(&workspace, "viewer");
        let (outsider, outsider_entry) = admin_key("elsewhere", "admin");
        let toml = format!(
            "[sombus]\nenvironment = \"test\"\ncredentials_dir = \"{}\"\n{sombus}\n{admin_entry}{developer_entry}{viewer_entry}{outsider_entry}",
            store.path().display()
        );
        let gw = builder.config(&toml).start().await;
        Self {
            gw,
            workspace,
            admin,
            developer,
            viewer,
            outsider,
            _store: store,
            toml,
        }
    }

    /// A second replica: same backend, receipt key and credential store; its own clock and caches.
    /// (With the state in Redis, the credential store is the shared server's.)
    pub async fn replica(&self, kind: Kind) -> TestGateway {
        self.replica_builder(kind).config(&self.toml).start().await
    }

    /// A builder of a second replica, before its config.
    pub fn replica_builder(&self, kind: Kind) -> GatewayBuilder {
        let builder = GatewayBuilder::new(kind);
        if kind.is_shared_state() {
            builder.sharing_state_with(&self.gw)
        } else {
            builder.replica_of(&self.gw)
        }
    }

    pub fn admin_url(&self, rest: &str) -> String {
        format!(
            "{}/v1/admin/workspaces/{}{rest}",
            self.gw.base, self.workspace
        )
    }

    pub async fn admin_call(
        &self,
        method: reqwest::Method,
        rest: &str,
        key: &str,
        body: Option<Value>,
    ) -> Answer {
        let mut request = self
            .gw
            .http
            .request(method, self.admin_url(rest))
            .bearer_auth(key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        answer(request.send().await.unwrap()).await
    }

    pub async fn create(&self, body: Value) -> Created {
        let answer = self
            .admin_call(
                reqwest::Method::POST,
                "/connections",
                &self.admin,
                Some(body),
            )
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        let client_id = answer.body["client_id"].as_str().unwrap().to_owned();
        let shown = self
            .admin_call(
                reqwest::Method::GET,
                &format!("/connections/{client_id}"),
                &self.viewer,
                None,
            )
            .await;
        Created {
            secret: answer.body["client_secret"].as_str().unwrap().to_owned(),
            queue: shown.body["queue"].as_str().unwrap().to_owned(),
            client_id,
            body: answer.body,
        }
    }

    /// A step of the admin API on a connection (`/secret/rotate`, `/revoke`, …) by the admin key.
    pub async fn step(&self, client_id: &str, step: &str, body: Option<Value>) -> Answer {
        self.admin_call(
            reqwest::Method::POST,
            &format!("/connections/{client_id}{step}"),
            &self.admin,
            body,
        )
        .await
    }

    /// Publishes an envelope through the gateway's SQS endpoint, as producers do.
    pub async fn publish(&self, queue: &str, correlation_id: &str, payload: Value) -> String {
        let message_id = uuid::Uuid::new_v4().to_string();
        let envelope = json!({
            "som_version": "1.0.0",
            "message_id": message_id,
            "message_type": "story.context",
            "correlation_id": correlation_id,
            "payload": payload,
        });
        self.publish_raw(
            queue,
            &envelope.to_string(),
            Some(correlation_id),
            &[
                ("topic", "som.story.context"),
                ("producer_id", "c-producer"),
            ],
        )
        .await;
        message_id
    }

    pub async fn publish_raw(
        &self,
        queue: &str,
        body: &str,
        group: Option<&str>,
        attributes: &[(&str, &str)],
    ) {
        let (client, url) = self.gw.sqs_queue(queue).await;
        let mut send = client.send_message().queue_url(url).message_body(body);
        for (name, value) in attributes {
            send = send.message_attributes(
                *name,
                MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(*value)
                    .build()
                    .unwrap(),
            );
        }
        if queue.ends_with(".fifo") {
            send = send.message_group_id(group.unwrap_or("default"));
        }
        send.send()
            .await
            .expect("the SQS endpoint takes the message");
    }
}

/// `POST /v1/oauth/token` with HTTP Basic.
pub async fn token_answer(gw: &TestGateway, client_id: &str, secret: &str) -> Answer {
    let response = gw
        .http
        .post(format!("{}/v1/oauth/token", gw.base))
        .basic_auth(client_id, Some(secret))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("grant_type=client_credentials")
        .send()
        .await
        .unwrap();
    answer(response).await
}

pub async fn token(gw: &TestGateway, client_id: &str, secret: &str) -> String {
    let answer = token_answer(gw, client_id, secret).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer.body["access_token"].as_str().unwrap().to_owned()
}

fn pull_url(gw: &TestGateway, tenant: &str, client: &str, rest: &str) -> String {
    format!("{}/v1/tenants/{tenant}/consumers/{client}/{rest}", gw.base)
}

pub async fn receive(
    gw: &TestGateway,
    token: &str,
    tenant: &str,
    client: &str,
    query: &str,
) -> Answer {
    let response = gw
        .http
        .get(format!(
            "{}?{query}",
            pull_url(gw, tenant, client, "messages")
        ))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    answer(response).await
}

pub async fn post(
    gw: &TestGateway,
    token: &str,
    tenant: &str,
    client: &str,
    route: &str,
    body: Value,
) -> Answer {
    let response = gw
        .http
        .post(pull_url(gw, tenant, client, route))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    answer(response).await
}

/// The refusal's status and rule.
pub fn refused(answer: &Answer) -> (StatusCode, String) {
    assert_eq!(answer.body["accepted"], json!(false), "{}", answer.body);
    (
        answer.status,
        answer.body["violations"][0]["rule"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

fn handles(messages: &Value) -> Vec<String> {
    messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["receipt_handle"].as_str().unwrap().to_owned())
        .collect()
}

/// A connection, a token, three messages of two stories: the documented shape, ack and nack.
async fn the_loop_receives_acks_and_releases(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({ "name": "house" })).await;
    assert!(created.queue.ends_with(".fifo"), "FIFO by default");
    // The secret is shown once with the connection's URLs filled in.
    let urls = &created.body["urls"];
    assert_eq!(urls["token"], format!("{}/v1/oauth/token", bus.gw.base));
    assert_eq!(
        urls["messages"],
        format!(
            "{}/v1/tenants/{}/consumers/{}/messages",
            bus.gw.base, bus.workspace, created.client_id
        )
    );
    let token_answer = token_answer(&bus.gw, &created.client_id, &created.secret).await;
    assert_eq!(token_answer.status, StatusCode::OK);
    assert_eq!(token_answer.body["token_type"], "Bearer");
    assert_eq!(token_answer.body["expires_in"], 3600);
    assert_eq!(token_answer.headers["cache-control"], "no-store");
    let token = token_answer.body["access_token"]
        .as_str()
        .unwrap()
        .to_owned();

    let id = bus
        .publish(&created.queue, "story-1", json!({ "n": 1 }))
        .await;
    bus.publish(&created.queue, "story-2", json!({ "n": 2 }))
        .await;
    let got = receive(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "max=10&wait=1",
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    let messages = got.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{}", got.body);
    let first = messages
        .iter()
        .find(|m| m["correlation_id"] == "story-1")
        .unwrap();
    assert_eq!(first["message_type"], "story.context");
    assert_eq!(first["topic"], "som.story.context");
    assert_eq!(first["producer_id"], "c-producer");
    assert_eq!(first["receive_count"], 1);
    assert_eq!(first["envelope"]["message_id"], id);
    assert_eq!(first["envelope"]["payload"], json!({ "n": 1 }));
    assert!(first.get("body").is_none());
    let enqueued = first["enqueued_at"].as_str().unwrap();
    assert!(
        enqueued.len() == 24 && enqueued.ends_with('Z') && enqueued.as_bytes()[19] == b'.',
        "milliseconds, UTC: {enqueued}"
    );
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "correlation_id",
            "enqueued_at",
            "envelope",
            "message_type",
            "producer_id",
            "receipt_handle",
            "receive_count",
            "topic"
        ]
    );
    let all = handles(&got.body);
    // Release story-2 at once; acknowledge story-1 with a malformed handle beside it.
    let story_2 = messages
        .iter()
        .find(|m| m["correlation_id"] == "story-2")
        .unwrap()["receipt_handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let nacked = post(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "nack",
        json!({ "receipt_handles": [story_2] }),
    )
    .await;
    assert_eq!(nacked.body, json!({ "nacked": [story_2], "failed": [] }));
    let story_1 = all.iter().find(|h| **h != story_2).unwrap().clone();
    let acked = post(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "ack",
        json!({ "receipt_handles": [story_1, "AQEBnot-a-handle"] }),
    )
    .await;
    assert_eq!(acked.status, StatusCode::OK);
    assert_eq!(acked.body["acked"], json!([story_1]));
    assert_eq!(
        acked.body["failed"][0]["receipt_handle"],
        "AQEBnot-a-handle"
    );
    assert_eq!(acked.body["failed"][0]["code"], "ReceiptHandleIsInvalid");
    // Acknowledging again: the delivery is over, nothing left to do (acked, not failed).
    let again = post(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "ack",
        json!({ "receipt_handles": [story_1] }),
    )
    .await;
    assert_eq!(again.body, json!({ "acked": [story_1], "failed": [] }));
    // story-2 is back with a second delivery; story-1 is gone.
    let back = receive(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "wait=1",
    )
    .await;
    let back = back.body["messages"].as_array().unwrap().clone();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0]["correlation_id"], "story-2");
    assert_eq!(back[0]["receive_count"], 2);
    // A body that is not a JSON envelope is delivered as it is, with a null envelope.
    bus.publish_raw(&created.queue, "plain text", Some("story-3"), &[])
        .await;
    let plain = receive(
        &bus.gw,
        &token,
        &bus.workspace,
        &created.client_id,
        "wait=1",
    )
    .await;
    let plain = plain.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["body"] == "plain text")
        .cloned();
    let plain = plain.expect("the plain message arrives");
    assert_eq!(plain["envelope"], Value::Null);
    assert_eq!(plain["correlation_id"], "story-3", "from the message group");
    // Nothing secret reached the logs.
    let logs = captured_logs();
    for secret in [&created.secret, &token, &story_1, &story_2] {
        assert!(
            !logs.contains(secret.as_str()),
            "a secret, token or handle was logged"
        );
    }
}

/// The refusals, each with its documented status and rule.
async fn refusals_have_the_documented_rules(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({})).await;
    let other = bus.create(json!({})).await;
    let token = token(&bus.gw, &created.client_id, &created.secret).await;
    let (t, c) = (bus.workspace.as_str(), created.client_id.as_str());
    let no_token = bus
        .gw
        .http
        .get(pull_url(&bus.gw, t, c, "messages"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        no_token.headers()["www-authenticate"],
        "Bearer realm=\"sombus\""
    );
    assert_eq!(
        refused(&answer(no_token).await),
        (StatusCode::UNAUTHORIZED, "producer.unauthenticated".into())
    );
    let garbage = receive(&bus.gw, "not.a.token", t, c, "wait=0").await;
    assert_eq!(
        refused(&garbage),
        (StatusCode::UNAUTHORIZED, "producer.unauthenticated".into())
    );
    let elsewhere = receive(&bus.gw, &token, "other-ws", c, "wait=0").await;
    assert_eq!(
        refused(&elsewhere),
        (StatusCode::FORBIDDEN, "tenant.mismatch".into())
    );
    let not_mine = receive(&bus.gw, &token, t, &other.client_id, "wait=0").await;
    assert_eq!(
        refused(&not_mine),
        (StatusCode::FORBIDDEN, "consumer.not_owner".into())
    );
    for bad in [
        "max=0",
        "max=11",
        "wait=21",
        "visibility=43201",
        "attempt=a%20b",
        "max=x",
        "color=red",
        "max=1&max=1",
    ] {
        let answer = receive(&bus.gw, &token, t, c, bad).await;
        assert_eq!(
            refused(&answer),
            (StatusCode::BAD_REQUEST, "pull.bad_request".into()),
            "{bad}"
        );
    }
    for body in [
        json!({}),
        json!({ "receipt_handles": [] }),
        json!({ "receipt_handles": ["a", "a"] }),
        json!({ "receipt_handles": (0..11).map(|i| i.to_string()).collect::<Vec<_>>() }),
    ] {
        let answer = post(&bus.gw, &token, t, c, "ack", body.clone()).await;
        assert_eq!(
            refused(&answer),
            (StatusCode::BAD_REQUEST, "pull.bad_request".into()),
            "{body}"
        );
    }
    let long_delay = post(
        &bus.gw,
        &token,
        t,
        c,
        "nack",
        json!({ "receipt_handles": ["x"], "delay_seconds": 43201 }),
    )
    .await;
    assert_eq!(refused(&long_delay).1, "pull.bad_request");
    // A producer's token reads no queue.
    let producer = bus.create(json!({ "role": "producer" })).await;
    let producer_token = self::token(&bus.gw, &producer.client_id, &producer.secret).await;
    let refused_producer =
        receive(&bus.gw, &producer_token, t, &producer.client_id, "wait=0").await;
    assert_eq!(
        refused(&refused_producer),
        (StatusCode::FORBIDDEN, "producer.not_registered".into())
    );
    // A token of another environment (same keys, environment "preview") is refused.
    let preview = bus
        .replica_builder(kind)
        .config(
            &bus.toml
                .replace("environment = \"test\"", "environment = \"preview\""),
        )
        .start()
        .await;
    let preview_token = self::token(&preview, c, &created.secret).await;
    let foreign = receive(&bus.gw, &preview_token, t, c, "wait=0").await;
    assert_eq!(
        refused(&foreign),
        (StatusCode::UNAUTHORIZED, "producer.unauthenticated".into())
    );
    assert_eq!(
        receive(&preview, &preview_token, t, c, "wait=0")
            .await
            .status,
        StatusCode::OK
    );
    // No such route or method: the bus's body too.
    let unknown = receive(&bus.gw, &token, t, c, "").await;
    assert_eq!(unknown.status, StatusCode::OK);
    let no_route = answer(
        bus.gw
            .http
            .get(pull_url(&bus.gw, t, c, "nothing"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(refused(&no_route).0, StatusCode::NOT_FOUND);
    let wrong_method = answer(
        bus.gw
            .http
            .post(pull_url(&bus.gw, t, c, "messages"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(refused(&wrong_method).0, StatusCode::METHOD_NOT_ALLOWED);
    // A handle of another connection's queue fails, and acts nowhere.
    bus.publish(&other.queue, "s", json!({})).await;
    let other_token = self::token(&bus.gw, &other.client_id, &other.secret).await;
    let theirs = receive(&bus.gw, &other_token, t, &other.client_id, "wait=1").await;
    let theirs = handles(&theirs.body);
    let stolen = post(
        &bus.gw,
        &token,
        t,
        c,
        "ack",
        json!({ "receipt_handles": theirs }),
    )
    .await;
    assert_eq!(stolen.body["failed"][0]["code"], "ReceiptHandleIsInvalid");
    let still_theirs = post(
        &bus.gw,
        &other_token,
        t,
        &other.client_id,
        "ack",
        json!({ "receipt_handles": theirs }),
    )
    .await;
    assert_eq!(still_theirs.body["acked"].as_array().unwrap().len(), 1);
    // A queue that is gone (deleted behind the gateway's back) is unavailable, never a 404.
    let url = bus.gw.backend.resolve(&other.queue).await.unwrap().url;
    bus.gw.backend.delete_queue(&url).await.unwrap();
    let unavailable = receive(&bus.gw, &other_token, t, &other.client_id, "wait=0").await;
    assert_eq!(
        refused(&unavailable),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "consumer.queue_unavailable".into()
        )
    );
    assert!(unavailable.headers.contains_key("retry-after"));
    preview.stop().await;
}

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

crate::on_both_backends!(
    the_loop_receives_acks_and_releases,
    refusals_have_the_documented_rules,
    the_token_service_speaks_oauth,
);

/// A key given twice is refused in the bus's shape (`admin.bad_request` / `pull.bad_request`,
/// naming the key, showing no value) instead of the last value silently winning: a rotation that
/// says `"none"` then `"3d"` rotates nothing, a create naming two client ids creates neither.
#[tokio::test]
async fn a_key_given_twice_is_refused() {
    let bus = Bus::start(Kind::Embedded).await;
    let created = bus.create(json!({})).await;
    let raw = |url: String, key: String, body: &'static str| {
        let request = bus
            .gw
            .http
            .post(url)
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body(body);
        async move { answer(request.send().await.unwrap()).await }
    };
    let rotate = raw(
        bus.admin_url(&format!("/connections/{}/secret/rotate", created.client_id)),
        bus.admin.clone(),
        r#"{"overlap":"none","overlap":"3d"}"#,
    )
    .await;
    let create = raw(
        bus.admin_url("/connections"),
        bus.admin.clone(),
        r#"{"client_id":"dupa","client_id":"dupb"}"#,
    )
    .await;
    let token = token(&bus.gw, &created.client_id, &created.secret).await;
    let ack = raw(
        pull_url(&bus.gw, &bus.workspace, &created.client_id, "ack"),
        token,
        r#"{"receipt_handles":["AQAAAH8first"],"receipt_handles":["AQAAAJ2second"]}"#,
    )
    .await;
    for (answer, rule, key) in [
        (rotate, "admin.bad_request", "the key \"overlap\""),
        (create, "admin.bad_request", "the key \"client_id\""),
        (ack, "pull.bad_request", "the key \"receipt_handles\""),
    ] {
        assert_eq!(refused(&answer), (StatusCode::BAD_REQUEST, rule.into()));
        let message = answer.body["violations"][0]["message"].as_str().unwrap();
        assert!(
            message.contains(key) && message.contains("more than once"),
            "{message}"
        );
        for value in ["none", "3d", "dupa", "dupb", "first", "second"] {
            assert!(!message.contains(value), "{message}");
        }
    }
    // Nothing rotated: the first secret is still the only one, version 1.
    let shown = bus
        .admin_call(
            reqwest::Method::GET,
            &format!("/connections/{}", created.client_id),
            &bus.viewer,
            None,
        )
        .await;
    assert_eq!(shown.body["credential_version"], 1, "{}", shown.body);
    assert_eq!(
        token_answer(&bus.gw, &created.client_id, &created.secret)
            .await
            .status,
        StatusCode::OK
    );
    for client_id in ["dupa", "dupb"] {
        let missing = bus
            .admin_call(
                reqwest::Method::GET,
                &format!("/connections/{client_id}"),
                &bus.viewer,
                None,
            )
            .await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);
    }
}
