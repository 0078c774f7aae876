//! What the sombus tests share: a gateway with the sombus API on, a workspace and admin keys of
//! each role (`Bus`), connections it creates, and the token and pull calls with their refusals.
//! Other folders' tests use them too.

use crate::harness::unique;
use crate::harness::{Answer, GatewayBuilder, Kind, TestGateway, answer};
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
    pub _store: std::sync::Arc<tempfile::TempDir>,
    pub toml: String,
}

/// A created connection: its ids and first secret.
pub struct Created {
    pub client_id: String,
    pub secret: String,
    pub queue: String,
    pub body: Value,
}

pub fn admin_key(workspace: &str, role: &str) -> (String, String) {
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

pub fn pull_url(gw: &TestGateway, tenant: &str, client: &str, rest: &str) -> String {
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

pub fn handles(messages: &Value) -> Vec<String> {
    messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["receipt_handle"].as_str().unwrap().to_owned())
        .collect()
}

/// Polls `replica` with `token` until it is refused as unauthenticated, for at most 5 s of real
/// time (no clock moved: the replica's copy is fresh for the whole recheck time, so only a
/// change it heard of can refuse it).
pub async fn refused_soon(
    replica: &TestGateway,
    token: &str,
    tenant: &str,
    client: &str,
) -> std::time::Duration {
    let started = std::time::Instant::now();
    loop {
        let answer = receive(replica, token, tenant, client, "wait=0").await;
        if answer.status == StatusCode::UNAUTHORIZED || answer.status == StatusCode::FORBIDDEN {
            return started.elapsed();
        }
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "the replica did not hear of the change"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
