//! What the pause tests share: a gateway whose queue `held` every dialect reaches, with basaltic
//! keys that may and may not manage it, and the basaltic calls on it.

use crate::harness::{Answer, GatewayBuilder, Kind, QueueSpec, TestGateway, answer};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use sqs_gateway::credentials::api_keys;

/// The `[basaltic]` table: config queues shown; an admin key and a key that may only receive.
pub struct Keys {
    pub admin: String,
    pub reader: String,
    pub toml: String,
}

impl Keys {
    pub fn new() -> Self {
        let admin = api_keys::generate_key();
        let reader = api_keys::generate_key();
        let toml = format!(
            "[basaltic]\nall_queues = true\n\n[[basaltic.keys]]\nid = \"{}\"\nname = \"operator\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"*\"] }}\n\n[[basaltic.keys]]\nid = \"{}\"\nname = \"reader\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"receive\", \"send\"] }}\n\n",
            admin.id, admin.hash, reader.id, reader.hash
        );
        Self {
            admin: admin.key,
            reader: reader.key,
            toml,
        }
    }
}

/// A builder of a gateway with queue `held` and the basaltic keys.
pub fn builder(kind: Kind, keys: &Keys) -> GatewayBuilder {
    GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("held"))
        .config(&keys.toml)
}

/// A basaltic call.
pub async fn call(
    gw: &TestGateway,
    method: Method,
    path: &str,
    key: &str,
    body: Option<&str>,
) -> Answer {
    let mut request = gw
        .http
        .request(method, format!("{}{path}", gw.base))
        .bearer_auth(key);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_owned());
    }
    answer(request.send().await.unwrap()).await
}

/// The basaltic id of gateway queue `name`.
pub async fn queue_id(gw: &TestGateway, key: &str, name: &str) -> String {
    let listed = call(gw, Method::GET, "/v1/queues", key, None).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    listed.body["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|queue| queue["name"] == name)
        .unwrap_or_else(|| panic!("{name} is listed: {}", listed.body))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Pauses (`pause`) or resumes the queue; answers the queue resource.
pub async fn set_paused(gw: &TestGateway, key: &str, id: &str, pause: bool) -> Value {
    let step = if pause { "pause" } else { "resume" };
    let done = call(
        gw,
        Method::POST,
        &format!("/v1/queues/{id}/{step}"),
        key,
        None,
    )
    .await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    done.body["result"].clone()
}

/// A basaltic receive of up to 10 messages, waiting `wait` seconds.
pub async fn receive(gw: &TestGateway, key: &str, id: &str, wait: u32) -> Vec<Value> {
    let got = call(
        gw,
        Method::POST,
        &format!("/v1/queues/{id}/messages/receive"),
        key,
        Some(&format!(
            "{{\"max_messages\": 10, \"wait_time_seconds\": {wait}}}"
        )),
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    got.body["messages"].as_array().unwrap().clone()
}

/// The queue's audit trail, newest first.
pub async fn audit(gw: &TestGateway, key: &str, id: &str) -> Vec<Value> {
    let trail = call(
        gw,
        Method::GET,
        &format!("/v1/queues/{id}/subscription-audit"),
        key,
        None,
    )
    .await;
    assert_eq!(trail.status, StatusCode::OK, "{}", trail.body);
    trail.body["entries"].as_array().unwrap().clone()
}
