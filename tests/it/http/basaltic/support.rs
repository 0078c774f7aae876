//! What the basaltic tests share: the document's two request bodies verbatim, a gateway with the
//! basaltic API and keys of each power (`Basaltic`), and an error's status and code. Other folders'
//! tests use them too.

use crate::harness::unique;
use crate::harness::{Answer, GatewayBuilder, Kind, TestGateway, answer};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqs_gateway::credentials::api_keys;

/// The document's `request-1.json` and `request-2.json`, verbatim.
pub const REQUEST_1: &str = r#"{
  "body": "{\"order_id\":\"A-1001\"}",
  "attributes": {
    "event": { "type": "String", "value": "order.paid" }
  }
}"#;

pub const REQUEST_2: &str = r#"{
  "max_messages": 10,
  "wait_time_seconds": 20,
  "visibility_timeout_seconds": 60
}"#;

/// A gateway with the basaltic API: an all-powerful key, and keys with less.
pub struct Basaltic {
    pub gw: TestGateway,
    /// Every permission on every queue.
    pub admin: String,
    /// Receive only, on every queue.
    pub reader: String,
    /// Manage queues only, on every queue.
    pub manager: String,
    pub toml: String,
}

impl Basaltic {
    pub async fn start(kind: Kind) -> Self {
        Self::start_with(kind, "").await
    }

    /// With lines for the `[basaltic]` table.
    pub async fn start_with(kind: Kind, basaltic: &str) -> Self {
        Self::start_configured(kind, basaltic, "").await
    }

    /// With lines for the `[basaltic]` table and more tables after it.
    pub async fn start_configured(kind: Kind, basaltic: &str, tables: &str) -> Self {
        let admin = api_keys::generate_key();
        let reader = api_keys::generate_key();
        let manager = api_keys::generate_key();
        let toml = format!(
            "[basaltic]\n{basaltic}\n[[basaltic.keys]]\nid = \"{}\"\nname = \"admin\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"*\"] }}\n\n[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"receive\"] }}\n\n[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"manage_queues\"] }}\n",
            admin.id, admin.hash, reader.id, reader.hash, manager.id, manager.hash
        ) + "\n"
            + tables;
        Self {
            gw: GatewayBuilder::new(kind).config(&toml).start().await,
            admin: admin.key,
            reader: reader.key,
            manager: manager.key,
            toml,
        }
    }

    /// A second replica: the same backend, receipt key and keys; its own alias table.
    pub async fn replica(&self, kind: Kind) -> crate::harness::TestGateway {
        GatewayBuilder::new(kind)
            .replica_of(&self.gw)
            .config(&self.toml)
            .start()
            .await
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&str>,
    ) -> Answer {
        let mut request = self
            .gw
            .http
            .request(method, format!("{}{path}", self.gw.base));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_owned());
        }
        answer(request.send().await.unwrap()).await
    }

    /// The backend name of the queue named `name` (`sqsgw_bq_<name>_<8 hex>`).
    pub async fn backend_name(&self, name: &str) -> String {
        let listed = self
            .gw
            .backend
            .list_queues(&format!("sqsgw_bq_{name}_"))
            .await
            .unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        listed[0].clone()
    }

    /// Creates a queue; answers its id.
    pub async fn create(&self, body: Value) -> String {
        let created = self
            .call(
                Method::POST,
                "/v1/queues",
                Some(&self.admin),
                Some(&body.to_string()),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        created.body["result"]["id"].as_str().unwrap().to_owned()
    }

    pub async fn send(&self, id: &str, body: &str) -> Answer {
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages"),
            Some(&self.admin),
            Some(body),
        )
        .await
    }

    pub async fn receive(&self, id: &str, body: &str) -> Vec<Value> {
        let got = self
            .call(
                Method::POST,
                &format!("/v1/queues/{id}/messages/receive"),
                Some(&self.admin),
                Some(body),
            )
            .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.body);
        got.body["messages"].as_array().unwrap().clone()
    }

    pub async fn delete(&self, id: &str, handle: &str) -> Answer {
        let encoded: String = form_urlencoded::byte_serialize(handle.as_bytes()).collect();
        self.call(
            Method::DELETE,
            &format!("/v1/queues/{id}/messages?receipt_handle={encoded}"),
            Some(&self.admin),
            None,
        )
        .await
    }

    pub async fn visibility(&self, id: &str, handle: &str, seconds: u32) -> Answer {
        let body =
            json!({ "receipt_handle": handle, "visibility_timeout_seconds": seconds }).to_string();
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/visibility"),
            Some(&self.admin),
            Some(&body),
        )
        .await
    }
}

pub fn name() -> String {
    unique("q-")
}

pub fn code(answer: &Answer) -> (StatusCode, String) {
    (
        answer.status,
        answer.body["error"]["code"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}
