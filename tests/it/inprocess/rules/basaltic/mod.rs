//! basaltic: errors are `{"error": {"code", "message"}}`
//!
//! basaltic's rules that need no socket, one topic a file; here the service with the basaltic API
//! and keys of each power, and the error's status and code, that they share.

use super::*;

mod keys;
mod metrics;
mod queues;
mod receipts;
mod requests;

/// The service with the basaltic API: a key with everything, one that may only receive, one that
/// may only send, and one whose only grant names a queue that does not exist.
pub(super) struct Basaltic {
    pub(super) service: InProcess,
    pub(super) admin: String,
    pub(super) reader: String,
    pub(super) sender: String,
    pub(super) stranger: String,
}

pub(super) const ELSEWHERE: &str = "00000000-0000-4000-8000-000000000001";

pub(super) fn basaltic_key_entry(grants: &str) -> (String, String) {
    let key = api_keys::generate_key();
    let entry = format!(
        "[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ {grants} }}\n\n",
        key.id, key.hash
    );
    (key.key, entry)
}

/// The error's status and code, checking basaltic's body.
pub(super) fn code(reply: &Reply) -> (StatusCode, &str) {
    assert!(reply.body["error"]["message"].is_string(), "{}", reply.text);
    (
        reply.status,
        reply.body["error"]["code"].as_str().unwrap_or_default(),
    )
}

impl Basaltic {
    async fn start() -> Self {
        let (admin, admin_entry) = basaltic_key_entry(r#""*" = ["*"]"#);
        let (reader, reader_entry) = basaltic_key_entry(r#""*" = ["receive"]"#);
        let (sender, sender_entry) = basaltic_key_entry(r#""*" = ["send"]"#);
        let (stranger, stranger_entry) = basaltic_key_entry(&format!(r#""{ELSEWHERE}" = ["*"]"#));
        let service = with_tables(&format!(
            "[basaltic]\n\n{admin_entry}{reader_entry}{sender_entry}{stranger_entry}"
        ))
        .await;
        Self {
            service,
            admin,
            reader,
            sender,
            stranger,
        }
    }

    async fn call(&self, method: Method, path: &str, key: &str, body: impl Into<Body>) -> Reply {
        self.service
            .call(request(method, path, Some(key), body))
            .await
    }

    /// Creates a queue; answers its id.
    async fn create(&self, body: Value) -> String {
        let created = self
            .call(Method::POST, "/v1/queues", &self.admin, body.to_string())
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
        created.body["result"]["id"].as_str().unwrap().to_owned()
    }

    async fn send(&self, id: &str, body: &Value) -> Reply {
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages"),
            &self.admin,
            body.to_string(),
        )
        .await
    }

    async fn receive(&self, id: &str, body: Value) -> Vec<Value> {
        let got = self
            .call(
                Method::POST,
                &format!("/v1/queues/{id}/messages/receive"),
                &self.admin,
                body.to_string(),
            )
            .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.text);
        got.body["messages"].as_array().unwrap().clone()
    }

    /// The queue's messages, read without a lease.
    async fn inspect(&self, id: &str) -> Vec<Value> {
        let read = self
            .call(
                Method::GET,
                &format!("/v1/queues/{id}/messages"),
                &self.admin,
                Body::empty(),
            )
            .await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text);
        read.body["messages"].as_array().unwrap().clone()
    }

    async fn delete(&self, id: &str, receipt: &str) -> Reply {
        let encoded: String = form_urlencoded::byte_serialize(receipt.as_bytes()).collect();
        self.call(
            Method::DELETE,
            &format!("/v1/queues/{id}/messages?receipt_handle={encoded}"),
            &self.admin,
            Body::empty(),
        )
        .await
    }

    async fn visibility(&self, id: &str, receipt: &str, seconds: i64) -> Reply {
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/visibility"),
            &self.admin,
            json!({ "receipt_handle": receipt, "visibility_timeout_seconds": seconds }).to_string(),
        )
        .await
    }

    async fn batch(&self, id: &str, kind: &str, entries: Value) -> Reply {
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/{kind}"),
            &self.admin,
            json!({ "entries": entries }).to_string(),
        )
        .await
    }
}

pub(super) fn receipt(message: &Value) -> String {
    message["receipt_handle"].as_str().unwrap().to_owned()
}
