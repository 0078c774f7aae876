//! What the push admin tests share: basaltic keys of each power, calls on one queue's subscriptions
//! (`Admin`), a gateway that may push to loopback, and waits on the board and the queue.

use crate::harness::*;
use serde_json::Value;
use std::time::Duration;

/// A basaltic key that may manage, send to, receive from and delete on every queue, and one with only
/// `read_metrics`: (config lines, admin key, reader key).
pub fn keys() -> (String, String, String) {
    let admin = sqs_gateway::credentials::api_keys::generate_key();
    let reader = sqs_gateway::credentials::api_keys::generate_key();
    let toml = format!(
        "[basaltic]\nall_queues = true\n\n[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\n\
         grants = {{ \"*\" = [\"manage_queues\", \"receive\", \"delete\", \"read_metrics\", \"send\"] }}\n\n[[basaltic.keys]]\n\
         id = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"read_metrics\"] }}\n",
        admin.id, admin.hash, reader.id, reader.hash
    );
    (toml, admin.key, reader.key)
}

/// Calls on one queue's subscriptions with one key.
pub struct Admin<'a> {
    pub gw: &'a TestGateway,
    pub key: String,
    pub base: String,
}

impl<'a> Admin<'a> {
    pub fn new(gw: &'a TestGateway, key: &str, queue: &str) -> Self {
        let id = sqs_gateway::core::alias::derived_basaltic_id(queue);
        Self {
            gw,
            key: key.to_owned(),
            base: format!("{}/v1/queues/{id}", gw.base),
        }
    }

    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .gw
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let code = response.status().as_u16();
        let text = response.text().await.unwrap();
        (code, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    pub async fn create(&self, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, "/subscriptions", Some(body))
            .await
    }

    pub async fn change(&self, name: &str, body: Value) -> (u16, Value) {
        self.call(
            reqwest::Method::PATCH,
            &format!("/subscriptions/{name}"),
            Some(body),
        )
        .await
    }

    pub async fn rotate(&self, name: &str, body: Value) -> (u16, Value) {
        self.call(
            reqwest::Method::POST,
            &format!("/subscriptions/{name}/rotate-secret"),
            Some(body),
        )
        .await
    }

    pub async fn delete(&self, name: &str) -> u16 {
        self.call(
            reqwest::Method::DELETE,
            &format!("/subscriptions/{name}"),
            None,
        )
        .await
        .0
    }

    pub async fn list(&self) -> Value {
        let (code, body) = self
            .call(reqwest::Method::GET, "/subscriptions", None)
            .await;
        assert_eq!(code, 200, "{body}");
        body
    }

    pub async fn audit(&self) -> Vec<Value> {
        let (code, body) = self
            .call(reqwest::Method::GET, "/subscription-audit", None)
            .await;
        assert_eq!(code, 200, "{body}");
        body["entries"].as_array().unwrap().clone()
    }
}

/// A gateway whose private networks are allowed (the receivers are on loopback), with `extra`.
pub async fn gateway(kind: Kind, extra: &str) -> TestGateway {
    GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .config(&format!("[push]\nallow_private_networks = true\n\n{extra}"))
        .start()
        .await
}

/// Waits until the board shows (or stops showing) `name`.
pub async fn wait_for_board(gw: &TestGateway, name: &str, present: bool) -> bool {
    for _ in 0..100 {
        let shown = gw
            .gateway
            .push_board()
            .of_queue("orders")
            .iter()
            .any(|snapshot| snapshot.name == name);
        if shown == present {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

pub async fn wait_for_empty(gw: &TestGateway) -> bool {
    for _ in 0..100 {
        if gw.backend_depth("orders").await == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}
