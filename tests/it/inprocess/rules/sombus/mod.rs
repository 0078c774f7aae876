//! sombus: refusals are `{"accepted": false, "violations": [{"rule", "message"}]}`; the token
//! service answers in OAuth 2.0's shape
//!
//! sombus's rules that need no socket, one topic a file; here the service with the sombus API, its
//! admin keys and connections, and the refusal's rule and OAuth error, that they share.

use super::*;

mod admin;
mod pull;
mod queues;
mod token;

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
