//! Push subscriptions made, changed, rotated and removed through the basaltic API, on both
//! backends and the shared stores: the secret is answered once and signs the deliveries, every
//! change is audited with who made it (never a secret), changes take effect at once and on
//! every replica, a 410 Gone is recorded for every replica, the subscriptions outlive a restart,
//! and an HTTPS endpoint under a private root is reached (and refused without it).

use super::push::{Receiver, secret, signed_by, status};
use crate::harness::*;
use serde_json::{Value, json};
use std::time::Duration;

/// A basaltic key that may manage, send to, receive from and delete on every queue, and one with only
/// `read_metrics`: (config lines, admin key, reader key).
fn keys() -> (String, String, String) {
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
struct Admin<'a> {
    gw: &'a TestGateway,
    key: String,
    base: String,
}

impl<'a> Admin<'a> {
    fn new(gw: &'a TestGateway, key: &str, queue: &str) -> Self {
        let id = sqs_gateway::core::alias::derived_basaltic_id(queue);
        Self {
            gw,
            key: key.to_owned(),
            base: format!("{}/v1/queues/{id}", gw.base),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
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

    async fn create(&self, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, "/subscriptions", Some(body))
            .await
    }

    async fn change(&self, name: &str, body: Value) -> (u16, Value) {
        self.call(
            reqwest::Method::PATCH,
            &format!("/subscriptions/{name}"),
            Some(body),
        )
        .await
    }

    async fn rotate(&self, name: &str, body: Value) -> (u16, Value) {
        self.call(
            reqwest::Method::POST,
            &format!("/subscriptions/{name}/rotate-secret"),
            Some(body),
        )
        .await
    }

    async fn delete(&self, name: &str) -> u16 {
        self.call(
            reqwest::Method::DELETE,
            &format!("/subscriptions/{name}"),
            None,
        )
        .await
        .0
    }

    async fn list(&self) -> Value {
        let (code, body) = self
            .call(reqwest::Method::GET, "/subscriptions", None)
            .await;
        assert_eq!(code, 200, "{body}");
        body
    }

    async fn audit(&self) -> Vec<Value> {
        let (code, body) = self
            .call(reqwest::Method::GET, "/subscription-audit", None)
            .await;
        assert_eq!(code, 200, "{body}");
        body["entries"].as_array().unwrap().clone()
    }
}

/// A gateway whose private networks are allowed (the receivers are on loopback), with `extra`.
async fn gateway(kind: Kind, extra: &str) -> TestGateway {
    GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .config(&format!("[push]\nallow_private_networks = true\n\n{extra}"))
        .start()
        .await
}

/// Waits until the board shows (or stops showing) `name`.
async fn wait_for_board(gw: &TestGateway, name: &str, present: bool) -> bool {
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

async fn a_subscription_made_through_the_api_posts_signed_with_the_secret_it_answered(kind: Kind) {
    let receiver = Receiver::start().await;
    let (toml, admin_key, reader_key) = keys();
    let gw = gateway(kind, &toml).await;
    let admin = Admin::new(&gw, &admin_key, "orders");
    let (code, made) = admin
        .create(json!({ "name": "hook", "url": format!("{}?token=abc", receiver.url), "max_concurrency": 4 }))
        .await;
    assert_eq!(code, 201, "{made}");
    let secret = made["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{made}");
    let subscription = &made["subscription"];
    assert_eq!(subscription["name"], "hook");
    assert_eq!(
        subscription["endpoint"],
        receiver.url.as_str(),
        "no query shown"
    );
    assert_eq!(subscription["max_concurrency"], 4);
    assert_eq!(subscription["timeout_seconds"], 15);
    assert_eq!(subscription["visibility_timeout_seconds"], 30);
    assert_eq!(subscription["body"], "wrapped");
    assert_eq!(subscription["enabled"], true);
    assert!(
        subscription["created_by"]
            .as_str()
            .unwrap()
            .starts_with("api_key:")
    );

    let sent = gw.send("orders", "pushed").await;
    let hits = receiver.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, sent);
    assert!(
        signed_by(&hits[0], &secret),
        "signed with the answered secret"
    );

    let listed = Admin::new(&gw, &reader_key, "orders").list().await;
    let text = listed.to_string();
    assert!(
        !text.contains("whsec_") && !text.contains(&secret),
        "{text}"
    );
    let hook = &listed["subscriptions"][0];
    assert_eq!(hook["source"], "api");
    assert_eq!(hook["managed"]["max_concurrency"], 4);
    assert_eq!(hook["state"], "active");

    let audit = admin.audit().await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["action"], "created");
    assert_eq!(audit[0]["subscription"], "hook");
    assert_eq!(audit[0]["actor"], subscription["created_by"]);
    let audit_text = format!("{audit:?}");
    assert!(
        !audit_text.contains("whsec_") && !audit_text.contains("token=abc"),
        "{audit_text}"
    );
}

async fn changes_take_effect_at_once_and_are_audited(kind: Kind) {
    let first = Receiver::start().await;
    let second = Receiver::start().await;
    let (toml, admin_key, _) = keys();
    let gw = gateway(kind, &toml).await;
    let admin = Admin::new(&gw, &admin_key, "orders");
    let (code, made) = admin
        .create(json!({ "name": "hook", "url": first.url }))
        .await;
    assert_eq!(code, 201, "{made}");
    let original = made["secret"].as_str().unwrap().to_owned();

    // Disabled: nothing is posted, the message waits in the queue.
    let (code, changed) = admin.change("hook", json!({ "enabled": false })).await;
    assert_eq!(code, 200, "{changed}");
    assert_eq!(changed["subscription"]["enabled"], false);
    assert!(
        changed["subscription"]["disabled_because"]
            .as_str()
            .unwrap()
            .starts_with("disabled by api_key:")
    );
    gw.send("orders", "held back").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(first.hits().is_empty(), "nothing posted while disabled");
    assert_eq!(gw.backend_depth("orders").await, 1);
    assert_eq!(admin.list().await["subscriptions"][0]["state"], "disabled");

    // Enabled at another endpoint: the message goes there.
    let (code, changed) = admin
        .change("hook", json!({ "enabled": true, "url": second.url }))
        .await;
    assert_eq!(code, 200, "{changed}");
    let hits = second.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(hits.len(), 1, "posted to the new endpoint");
    assert!(signed_by(&hits[0], &original));
    assert!(first.hits().is_empty());

    // A rotation with an overlap: both secrets sign; then one without: only the newest.
    let (code, rotated) = admin
        .rotate("hook", json!({ "overlap_seconds": 3600 }))
        .await;
    assert_eq!(code, 200, "{rotated}");
    let newer = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(newer, original);
    assert!(rotated["subscription"]["previous_secret_until"].is_string());
    gw.send("orders", "during the overlap").await;
    let hits = second.wait_for(2, Duration::from_secs(20)).await;
    assert_eq!(hits.len(), 2);
    assert!(
        signed_by(&hits[1], &newer) && signed_by(&hits[1], &original),
        "{:?}",
        hits[1]
    );
    let (code, rotated) = admin.rotate("hook", json!({ "overlap_seconds": 0 })).await;
    assert_eq!(code, 200, "{rotated}");
    let newest = rotated["secret"].as_str().unwrap().to_owned();
    assert!(rotated["subscription"]["previous_secret_until"].is_null());
    gw.send("orders", "after the overlap").await;
    let hits = second.wait_for(3, Duration::from_secs(20)).await;
    assert_eq!(hits.len(), 3);
    assert!(signed_by(&hits[2], &newest));
    assert!(!signed_by(&hits[2], &newer) && !signed_by(&hits[2], &original));
    assert_eq!(hits[2].signature.split(' ').count(), 1);

    // Removed: nothing more is posted.
    assert_eq!(admin.delete("hook").await, 204);
    assert!(wait_for_board(&gw, "hook", false).await);
    assert_eq!(admin.list().await["subscriptions"], json!([]));
    gw.send("orders", "after the delete").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(second.hits().len(), 3);
    assert_eq!(admin.delete("hook").await, 404);

    let audit = admin.audit().await;
    let actions: Vec<&str> = audit
        .iter()
        .map(|entry| entry["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "deleted",
            "secret_rotated",
            "secret_rotated",
            "updated",
            "updated",
            "created"
        ],
        "newest first"
    );
    assert!(
        audit[3]["detail"].as_str().unwrap().contains("url"),
        "{:?}",
        audit[3]
    );
    let seqs: Vec<u64> = audit
        .iter()
        .map(|entry| entry["seq"].as_u64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|pair| pair[0] > pair[1]), "{seqs:?}");
    let text = format!("{audit:?}");
    for secret in [&original, &newer, &newest] {
        assert!(!text.contains(secret.as_str()));
    }
    let (code, page) = admin
        .call(reqwest::Method::GET, "/subscription-audit?limit=2", None)
        .await;
    assert_eq!(code, 200);
    assert_eq!(page["entries"].as_array().unwrap().len(), 2);
    let before = page["next"].as_u64().unwrap();
    let (_, older) = admin
        .call(
            reqwest::Method::GET,
            &format!("/subscription-audit?before={before}"),
            None,
        )
        .await;
    assert_eq!(older["entries"].as_array().unwrap().len(), 4);
    assert!(older["next"].is_null());
}

async fn a_410_disables_it_for_every_replica_until_an_admin_enables_it(kind: Kind) {
    let receiver = Receiver::start().await;
    receiver.then(&[status(410)]);
    let (toml, admin_key, _) = keys();
    let gw = gateway(kind, &toml).await;
    let admin = Admin::new(&gw, &admin_key, "orders");
    let (code, _) = admin
        .create(json!({ "name": "hook", "url": receiver.url }))
        .await;
    assert_eq!(code, 201);
    gw.send("orders", "gone").await;
    let mut disabled = Value::Null;
    for _ in 0..100 {
        disabled = admin.list().await["subscriptions"][0].clone();
        if disabled["managed"]["enabled"] == false {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(disabled["managed"]["enabled"], false, "{disabled}");
    assert_eq!(disabled["state"], "disabled");
    assert!(
        disabled["disabled_because"]
            .as_str()
            .unwrap()
            .contains("410")
    );
    assert_eq!(
        disabled["log"][0]["status"], 410,
        "the log is kept: {disabled}"
    );
    let audit = admin.audit().await;
    assert_eq!(audit[0]["action"], "disabled_by_endpoint");
    assert_eq!(audit[0]["actor"], "endpoint");
    let (code, _) = admin.change("hook", json!({ "enabled": true })).await;
    assert_eq!(code, 200);
    let hits = receiver.wait_for(2, Duration::from_secs(20)).await;
    assert_eq!(hits.len(), 2, "delivered again once enabled");
    assert!(wait_for_empty(&gw).await);
}

async fn wait_for_empty(gw: &TestGateway) -> bool {
    for _ in 0..100 {
        if gw.backend_depth("orders").await == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

crate::on_both_backends!(
    a_subscription_made_through_the_api_posts_signed_with_the_secret_it_answered,
    changes_take_effect_at_once_and_are_audited,
    a_410_disables_it_for_every_replica_until_an_admin_enables_it,
);

/// Bad requests are refused in basaltic's error shape, and nothing is made.
#[tokio::test]
async fn bad_requests_are_refused_and_config_subscriptions_are_not_changed_here() {
    let receiver = Receiver::start().await;
    let (toml, admin_key, reader_key) = keys();
    let gw = gateway(
        Kind::Embedded,
        &format!(
            "[[push.subscriptions]]\nname = \"configured\"\nqueue = \"orders\"\nurl = \"{}\"\n\
             secret = \"{}\"\n\n{toml}",
            receiver.url,
            secret(1)
        ),
    )
    .await;
    let admin = Admin::new(&gw, &admin_key, "orders");
    let url = receiver.url.clone();
    for (body, code, says) in [
        (json!({ "name": "bad name!", "url": url }), 400, "name"),
        (
            json!({ "name": "x", "url": "ftp://example.com/" }),
            400,
            "url",
        ),
        (
            json!({ "name": "x", "url": "https://user:pw@example.com/" }),
            400,
            "credentials",
        ),
        (
            json!({ "name": "x", "url": url, "max_concurrency": 0 }),
            400,
            "max_concurrency",
        ),
        (
            json!({ "name": "x", "url": url, "timeout_seconds": 30, "visibility_timeout_seconds": 20 }),
            400,
            "visibility_timeout_seconds",
        ),
        (
            json!({ "name": "x", "url": url, "body": "raw", "hold_on_202": true }),
            400,
            "hold_on_202",
        ),
        (
            json!({ "name": "x", "url": url, "colour": "blue" }),
            400,
            "",
        ),
        (
            json!({ "name": "configured", "url": url }),
            409,
            "config file",
        ),
    ] {
        let (got, answer) = admin.create(body.clone()).await;
        assert_eq!(got, code, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    let (code, _) = admin.create(json!({ "name": "x", "url": url })).await;
    assert_eq!(code, 201);
    let (code, answer) = admin.create(json!({ "name": "x", "url": url })).await;
    assert_eq!(
        (code, answer["error"]["code"].as_str()),
        (409, Some("conflict"))
    );
    let (code, answer) = admin.change("x", json!({})).await;
    assert_eq!(code, 400, "{answer}");
    let (code, answer) = admin
        .change("configured", json!({ "enabled": false }))
        .await;
    assert_eq!(code, 409, "{answer}");
    let (code, answer) = admin.change("nobody", json!({ "enabled": false })).await;
    assert_eq!(
        (code, answer["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    let (code, _) = admin
        .rotate("x", json!({ "overlap_seconds": 604_801 }))
        .await;
    assert_eq!(code, 400);
    let (code, _) = admin
        .call(reqwest::Method::GET, "/subscription-audit?limit=0", None)
        .await;
    assert_eq!(code, 400);
    let reader = Admin::new(&gw, &reader_key, "orders");
    let (code, answer) = reader.create(json!({ "name": "y", "url": url })).await;
    assert_eq!(code, 403, "{answer}");
    assert_eq!(reader.delete("x").await, 403);
    let (code, _) = reader
        .call(reqwest::Method::GET, "/subscription-audit", None)
        .await;
    assert_eq!(code, 403);
    let listed = admin.list().await;
    let sources: Vec<&str> = listed["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|one| one["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["config", "api"]);
    assert_eq!(admin.audit().await.len(), 1, "only the one made");
}

/// The next start of `gw` over the same directory keeps the subscriptions made through the API:
/// the same secret signs.
async fn subscriptions_outlive_a_restart(kind: Kind) {
    let receiver = Receiver::start().await;
    let (toml, admin_key, _) = keys();
    let dir = tempfile::tempdir().unwrap();
    let config = format!("[push]\nallow_private_networks = true\n\n{toml}");
    let gw = GatewayBuilder::new(kind)
        .durable(dir.path())
        .queue(QueueSpec::standard("orders"))
        .config(&config)
        .start()
        .await;
    let (code, made) = Admin::new(&gw, &admin_key, "orders")
        .create(json!({ "name": "hook", "url": receiver.url }))
        .await;
    assert_eq!(code, 201);
    let secret = made["secret"].as_str().unwrap().to_owned();
    let next = GatewayBuilder::new(kind)
        .durable(dir.path())
        .queue(QueueSpec::standard("orders"))
        .config(&config);
    let next = match kind {
        Kind::Embedded => next.receipt_key(&gw.receipt_key),
        _ => next.replica_of(&gw),
    };
    gw.stop().await;
    let gw = next.start().await;
    gw.send("orders", "after the restart").await;
    let hits = receiver.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(hits.len(), 1);
    assert!(signed_by(&hits[0], &secret));
    assert_eq!(Admin::new(&gw, &admin_key, "orders").audit().await.len(), 1);
    gw.stop().await;
}

#[tokio::test]
async fn subscriptions_outlive_a_restart_on_embedded() {
    subscriptions_outlive_a_restart(Kind::Embedded).await;
}

#[tokio::test]
async fn subscriptions_outlive_a_restart_on_localstack() {
    if !crate::needs!(LocalStack) {
        return;
    }
    subscriptions_outlive_a_restart(Kind::LocalStack).await;
}

/// Replicas sharing a Redis store follow each other's changes.
async fn replicas_follow_each_other_s_changes(kind: Kind) {
    let receiver = Receiver::start().await;
    let (toml, admin_key, _) = keys();
    let config = format!("[push]\nallow_private_networks = true\n\n{toml}");
    let one = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .config(&config)
        .start()
        .await;
    let two = GatewayBuilder::new(kind)
        .sharing_state_with(&one)
        .queue(QueueSpec::standard("orders"))
        .config(&config)
        .start()
        .await;
    let (code, _) = Admin::new(&one, &admin_key, "orders")
        .create(json!({ "name": "hook", "url": receiver.url }))
        .await;
    assert_eq!(code, 201);
    assert!(
        wait_for_board(&two, "hook", true).await,
        "the other replica runs it"
    );
    let listed = Admin::new(&two, &admin_key, "orders").list().await;
    assert_eq!(listed["subscriptions"][0]["source"], "api");
    assert_eq!(
        Admin::new(&two, &admin_key, "orders").delete("hook").await,
        204
    );
    assert!(
        wait_for_board(&one, "hook", false).await,
        "and stops it when removed"
    );
    assert_eq!(
        Admin::new(&one, &admin_key, "orders").audit().await.len(),
        2
    );
}

crate::on_kind!(
    replicas_on_redis,
    Redis,
    replicas_follow_each_other_s_changes
);
crate::on_kind!(
    replicas_on_redis_cluster,
    RedisCluster,
    replicas_follow_each_other_s_changes
);

/// Managing a subscription takes receiving and deleting the queue's messages too: a key that may
/// only manage the queue cannot point its messages somewhere.
#[tokio::test]
async fn managing_a_subscription_takes_receive_and_delete_too() {
    let receiver = Receiver::start().await;
    let manager = sqs_gateway::credentials::api_keys::generate_key();
    let gw = gateway(
        Kind::Embedded,
        &format!(
            "[basaltic]\nall_queues = true\n\n[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\n\
             grants = {{ \"*\" = [\"manage_queues\", \"receive\"] }}\n",
            manager.id, manager.hash
        ),
    )
    .await;
    let admin = Admin::new(&gw, &manager.key, "orders");
    let (code, answer) = admin
        .create(json!({ "name": "hook", "url": receiver.url }))
        .await;
    assert_eq!(code, 403, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("deleting"),
        "{answer}"
    );
    assert!(gw.gateway.push_board().of_queue("orders").is_empty());
}

/// Deleting a queue deletes its subscriptions (audited): a queue made again under its name is
/// not pushed anywhere.
#[tokio::test]
async fn deleting_a_queue_deletes_its_subscriptions() {
    let receiver = Receiver::start().await;
    let (toml, admin_key, _) = keys();
    let gw = gateway(
        Kind::Embedded,
        &format!("{toml}\n[sqs_api]\nmanage_queues = true\n"),
    )
    .await;
    let sqs = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let url = sqs
        .create_queue()
        .queue_name("temp")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let admin = Admin::new(&gw, &admin_key, "temp");
    let (code, made) = admin
        .create(json!({ "name": "hook", "url": receiver.url }))
        .await;
    assert_eq!(code, 201, "{made}");
    assert!(!gw.gateway.push_board().of_queue("temp").is_empty());
    sqs.delete_queue().queue_url(&url).send().await.unwrap();
    assert!(
        gw.gateway.push_board().of_queue("temp").is_empty(),
        "its runner stopped"
    );
    sqs.create_queue().queue_name("temp").send().await.unwrap();
    gw.send("temp", "for nobody").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(receiver.hits().is_empty());
    assert_eq!(admin.list().await["subscriptions"], json!([]));
    let actions: Vec<String> = admin
        .audit()
        .await
        .iter()
        .map(|entry| entry["action"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(actions, ["deleted_with_queue", "created"]);
}

/// A self-signed certificate for `localhost`: (certificate PEM, key PEM).
fn certificate() -> (String, String) {
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// An HTTPS endpoint whose certificate chains to `push.root_certificates_file` is posted to;
/// without that root the TLS handshake fails and nothing is posted.
#[tokio::test]
async fn an_https_endpoint_is_reached_through_a_private_root_and_refused_without_it() {
    let (cert, key) = certificate();
    let receiver = Receiver::start_tls(&cert, &key).await;
    let dir = tempfile::tempdir().unwrap();
    let roots = dir.path().join("roots.pem");
    std::fs::write(&roots, &cert).unwrap();
    let subscription = format!(
        "[[push.subscriptions]]\nname = \"hook\"\nqueue = \"orders\"\nurl = \"{}\"\nsecret = \"{}\"\n",
        receiver.url,
        secret(1)
    );
    let trusting = gateway(
        Kind::Embedded,
        &format!(
            "root_certificates_file = \"{}\"\n\n{subscription}",
            roots.display()
        ),
    )
    .await;
    trusting.send("orders", "over tls").await;
    let hits = receiver.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(hits.len(), 1);
    assert!(signed_by(&hits[0], &secret(1)));
    assert!(wait_for_empty(&trusting).await, "acknowledged");
    trusting.stop().await;

    let untrusting = gateway(Kind::Embedded, &subscription).await;
    untrusting.send("orders", "not trusted").await;
    let mut outcomes = Default::default();
    for _ in 0..100 {
        outcomes = untrusting.gateway.push_board().of_queue("orders")[0]
            .outcomes
            .clone();
        if outcomes.contains_key("unreachable") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(outcomes.contains_key("unreachable"), "{outcomes:?}");
    assert_eq!(receiver.hits().len(), 1, "nothing posted without the root");
}

/// Subscriptions made through the API are bounded per queue and in all: past either bound a
/// create is a 409 naming the setting, and deleting one makes room again.
#[tokio::test]
async fn subscriptions_are_bounded_per_queue_and_in_all() {
    let receiver = Receiver::start().await;
    let (toml, admin_key, _) = keys();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .queue(QueueSpec::standard("invoices"))
        .config(&format!(
            "[push]\nallow_private_networks = true\nmax_subscriptions_per_queue = 3\nmax_subscriptions = 5\n\n{toml}"
        ))
        .start()
        .await;
    let orders = Admin::new(&gw, &admin_key, "orders");
    let invoices = Admin::new(&gw, &admin_key, "invoices");
    let made = |name: &str| json!({ "name": name, "url": receiver.url });
    for n in 0..3 {
        let (code, body) = orders.create(made(&format!("o{n}"))).await;
        assert_eq!(code, 201, "{body}");
    }
    let (code, body) = orders.create(made("o3")).await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(body["error"]["code"], "conflict", "{body}");
    let says = body["error"]["message"].as_str().unwrap();
    assert!(says.contains("push.max_subscriptions_per_queue"), "{says}");
    let (code, _) = orders
        .call(reqwest::Method::DELETE, "/subscriptions/o0", None)
        .await;
    assert_eq!(code, 204);
    let (code, body) = orders.create(made("o3")).await;
    assert_eq!(code, 201, "room again after a delete: {body}");
    for n in 0..2 {
        let (code, body) = invoices.create(made(&format!("i{n}"))).await;
        assert_eq!(code, 201, "{body}");
    }
    let (code, body) = invoices.create(made("i2")).await;
    assert_eq!(code, 409, "{body}");
    let says = body["error"]["message"].as_str().unwrap();
    assert!(says.contains("push.max_subscriptions"), "{says}");
    gw.stop().await;
}

/// Each subscription adds series to `/metrics`; past the first 100 names they share one label,
/// so a key that makes many subscriptions cannot grow the scrape without bound.
#[tokio::test]
async fn push_series_are_bounded_whatever_the_subscriptions() {
    let receiver = Receiver::start().await;
    let (toml, admin_key, _) = keys();
    let gw = gateway(
        Kind::Embedded,
        &format!("max_subscriptions_per_queue = 1000\n\n{toml}"),
    )
    .await;
    let admin = Admin::new(&gw, &admin_key, "orders");
    for n in 0..130 {
        let (code, body) = admin
            .create(json!({ "name": format!("s{n:03}"), "url": receiver.url }))
            .await;
        assert_eq!(code, 201, "{body}");
    }
    let mut labels = std::collections::BTreeSet::new();
    for _ in 0..50 {
        let scrape = gw
            .http
            .get(format!("{}/metrics", gw.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        labels = scrape
            .lines()
            .filter(|line| line.starts_with("sqsgw_push_"))
            .filter_map(|line| line.split("subscription=\"").nth(1)?.split('"').next())
            .map(str::to_owned)
            .collect();
        if labels.contains("sqsgw_*") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        labels.contains("sqsgw_*"),
        "the others share one label: {labels:?}"
    );
    assert_eq!(
        labels.len(),
        101,
        "100 of their own and the shared one: {labels:?}"
    );
    gw.stop().await;
}

/// Each queue keeps its own audit trail: a thousand changes on one queue push out none of
/// another queue's lines; past a thousand changes within a week the queue's next change is a
/// 429 (its author cannot flush its own traces), and a delete is taken all the same.
async fn each_queue_keeps_its_own_trail_and_a_full_one_refuses_changes(kind: Kind) {
    let receiver = Receiver::start().await;
    let (toml, admin_key, _) = keys();
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .queue(QueueSpec::standard("invoices"))
        .config(&format!("[push]\nallow_private_networks = true\n\n{toml}"))
        .start()
        .await;
    let orders = Admin::new(&gw, &admin_key, "orders");
    let invoices = Admin::new(&gw, &admin_key, "invoices");
    let (code, body) = invoices
        .create(json!({ "name": "hook", "url": receiver.url }))
        .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = orders
        .create(json!({ "name": "busy", "url": receiver.url, "max_concurrency": 1 }))
        .await;
    assert_eq!(code, 201, "{body}");
    for n in 0..999 {
        let (code, body) = orders
            .change("busy", json!({ "max_concurrency": 2 + n % 2 }))
            .await;
        assert_eq!(code, 200, "change {n}: {body}");
    }
    let (code, body) = orders.change("busy", json!({ "max_concurrency": 5 })).await;
    assert_eq!(code, 429, "the trail holds a week's thousand lines: {body}");
    assert_eq!(body["error"]["code"], "rate_limited", "{body}");
    let kept = invoices.audit().await;
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0]["action"], "created");
    assert_eq!(kept[0]["subscription"], "hook");
    assert_eq!(orders.delete("busy").await, 204, "a delete is always taken");
    let trail = orders.audit().await;
    assert_eq!(trail[0]["action"], "deleted", "{:?}", trail[0]);
    assert_eq!(
        orders.list().await["subscriptions"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    gw.stop().await;
}

crate::on_kind!(
    trail_on_embedded,
    Embedded,
    each_queue_keeps_its_own_trail_and_a_full_one_refuses_changes
);
crate::on_kind!(
    trail_on_redis,
    Redis,
    each_queue_keeps_its_own_trail_and_a_full_one_refuses_changes
);
crate::on_kind!(
    trail_on_redis_cluster,
    RedisCluster,
    each_queue_keeps_its_own_trail_and_a_full_one_refuses_changes
);

/// Without `allow_private_networks`, a URL whose host is an address the delivery guard refuses
/// (in any spelling, IPv6 forms carrying an IPv4 address included) or `localhost` is a 400 when
/// made or changed: it could never deliver. Public hosts are taken.
#[tokio::test]
async fn a_url_naming_a_refused_address_is_refused_when_made() {
    let (toml, admin_key, _) = keys();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config(&toml)
        .start()
        .await;
    let admin = Admin::new(&gw, &admin_key, "orders");
    for host in [
        "127.0.0.1:18799",
        "2130706433:18799",
        "0x7f000001:18799",
        "0177.0.0.1:18799",
        "0:18799",
        "[::]:18799",
        "[::1]:18799",
        "[::ffff:127.0.0.1]:18799",
        "169.254.169.254",
        "[fd00:ec2::254]",
        "[::127.0.0.1]:18799",
        "[::ffff:0:7f00:1]:18799",
        "[64:ff9b:1::a9fe:a9fe]",
        "[64:ff9b:1:7f00:0:100:808:808]",
        "localhost:18799",
        "api.localhost",
    ] {
        let url = format!("https://{host}/latest/");
        let (code, body) = admin.create(json!({ "name": "hook", "url": url })).await;
        assert_eq!(code, 400, "{url}: {body}");
        let says = body["error"]["message"].as_str().unwrap();
        assert!(
            says.starts_with("url:") && says.contains("push.allow_private_networks"),
            "{url}: {says}"
        );
    }
    let (code, body) = admin
        .create(json!({ "name": "hook", "url": "https://[64:ff9b:1::808:808]/hook" }))
        .await;
    assert_eq!(code, 201, "a public address behind NAT64: {body}");
    let (code, body) = admin
        .change("hook", json!({ "url": "https://[::a00:1]/hook" }))
        .await;
    assert_eq!(code, 400, "{body}");
    let (code, body) = admin
        .change("hook", json!({ "url": "https://hooks.example.com/hook" }))
        .await;
    assert_eq!(code, 200, "{body}");
    gw.stop().await;
}

/// Capability URLs carry their secret in the path: a key that may only read sees the endpoint's
/// scheme, host and port, as the audit trail (and so the log) does; its managers see the path,
/// and nobody the query.
#[tokio::test]
async fn an_endpoint_s_path_is_shown_only_to_its_managers() {
    let receiver = Receiver::start().await;
    let (toml, admin_key, reader_key) = keys();
    // May manage the queue but not consume it, so not manage its subscriptions.
    let half = sqs_gateway::credentials::api_keys::generate_key();
    let gw = gateway(
        Kind::Embedded,
        &format!(
            "{toml}\n[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"manage_queues\", \"read_metrics\"] }}\n",
            half.id, half.hash
        ),
    )
    .await;
    let admin = Admin::new(&gw, &admin_key, "orders");
    let url = format!("{}/T0001/B0002/XXSECRETPATHTOKEN?token=q1", receiver.url);
    let (code, made) = admin.create(json!({ "name": "hook", "url": url })).await;
    assert_eq!(code, 201, "{made}");
    let without_query = url.split('?').next().unwrap();
    assert_eq!(made["subscription"]["endpoint"], without_query, "{made}");
    assert!(wait_for_board(&gw, "hook", true).await);
    let origin = receiver.url.split("/hook").next().unwrap();
    for key in [&reader_key, &half.key] {
        let read = Admin::new(&gw, key, "orders").list().await;
        let text = read.to_string();
        assert!(
            !text.contains("XXSECRETPATHTOKEN") && !text.contains("q1"),
            "{text}"
        );
        let hook = &read["subscriptions"][0];
        assert_eq!(hook["endpoint"], format!("{origin}/…"), "{read}");
        assert_eq!(hook["managed"]["endpoint"], format!("{origin}/…"), "{read}");
    }
    let managed = admin.list().await;
    let hook = &managed["subscriptions"][0];
    assert_eq!(hook["endpoint"], without_query, "{managed}");
    assert_eq!(hook["managed"]["endpoint"], without_query, "{managed}");
    let (code, _) = admin
        .change(
            "hook",
            json!({ "url": format!("{}/OTHERSECRET", receiver.url) }),
        )
        .await;
    assert_eq!(code, 200);
    let audit = admin
        .audit()
        .await
        .iter()
        .map(Value::to_string)
        .collect::<String>();
    assert!(
        !audit.contains("SECRET") && !audit.contains("/hook") && audit.contains(origin),
        "{audit}"
    );
    gw.stop().await;
}

/// Subscription names are scoped by queue: two tenants, each managing only its own queue, may
/// both name a subscription `hook` (no 409 tells one of the other's names), each sees and
/// deletes only its own, both deliver, and each has its own series.
async fn subscription_names_are_scoped_by_queue(kind: Kind) {
    let receiver = Receiver::start().await;
    let (a, b) = (
        sqs_gateway::credentials::api_keys::generate_key(),
        sqs_gateway::credentials::api_keys::generate_key(),
    );
    let grant = |key: &sqs_gateway::credentials::api_keys::GeneratedKey, queue: &str| {
        format!(
            "[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"{}\" = [\"manage_queues\", \"receive\", \"delete\", \"read_metrics\", \"send\"] }}\n\n",
            key.id,
            key.hash,
            sqs_gateway::core::alias::derived_basaltic_id(queue)
        )
    };
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .queue(QueueSpec::standard("invoices"))
        .config(&format!(
            "[push]\nallow_private_networks = true\n\n[basaltic]\nall_queues = true\n\n{}{}",
            grant(&a, "orders"),
            grant(&b, "invoices")
        ))
        .start()
        .await;
    let tenant_a = Admin::new(&gw, &a.key, "orders");
    let tenant_b = Admin::new(&gw, &b.key, "invoices");
    let (code, body) = tenant_b
        .create(json!({ "name": "hook", "url": receiver.url }))
        .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = tenant_a
        .create(json!({ "name": "hook", "url": receiver.url }))
        .await;
    assert_eq!(code, 201, "another queue's name is not taken: {body}");
    let (code, body) = tenant_a
        .create(json!({ "name": "hook", "url": receiver.url }))
        .await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        body["error"]["message"], "the queue has a subscription named `hook`",
        "{body}"
    );
    for (tenant, queue) in [(&tenant_a, "orders"), (&tenant_b, "invoices")] {
        let listed = tenant.list().await;
        let subscriptions = listed["subscriptions"].as_array().unwrap();
        assert_eq!(subscriptions.len(), 1, "{queue}: {listed}");
        assert_eq!(subscriptions[0]["name"], "hook");
        assert_eq!(subscriptions[0]["source"], "api");
    }
    gw.send("orders", "for a").await;
    gw.send("invoices", "for b").await;
    let hits = receiver.wait_for(2, Duration::from_secs(20)).await;
    assert_eq!(hits.len(), 2, "both deliver");
    let series = |queue: &str| {
        format!(
            "sqsgw_push_deliveries_total{{queue=\"{queue}\",subscription=\"hook\",outcome=\"accepted\"}} 1"
        )
    };
    let mut scrape = String::new();
    for _ in 0..50 {
        scrape = gw
            .http
            .get(format!("{}/metrics", gw.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if scrape.contains(&series("orders")) && scrape.contains(&series("invoices")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for queue in ["orders", "invoices"] {
        assert!(scrape.contains(&series(queue)), "{queue}: {scrape}");
    }
    assert_eq!(tenant_a.delete("hook").await, 204);
    assert!(wait_for_board(&gw, "hook", false).await, "orders' is gone");
    let board = gw.gateway.push_board();
    assert_eq!(
        board.of_queue("invoices").len(),
        1,
        "the other queue's stays"
    );
    let listed = tenant_b.list().await;
    assert_eq!(listed["subscriptions"][0]["name"], "hook", "{listed}");
    assert_eq!(
        tenant_b.audit().await.len(),
        1,
        "the other queue's trail is its own"
    );
    gw.stop().await;
}

crate::on_kind!(
    names_on_embedded,
    Embedded,
    subscription_names_are_scoped_by_queue
);
crate::on_kind!(
    names_on_redis,
    Redis,
    subscription_names_are_scoped_by_queue
);

/// A record kept under its name alone on Redis (as before names were scoped by queue) is moved
/// to its queue and name when the store is read, and changes as any other.
#[tokio::test]
async fn a_record_kept_by_name_alone_on_redis_is_keyed_anew() {
    if !crate::needs!(on Kind::Redis) {
        return;
    }
    let receiver = Receiver::start().await;
    let (toml, admin_key, _) = keys();
    let gw = gateway(Kind::Redis, &toml).await;
    let admin = Admin::new(&gw, &admin_key, "orders");
    let (code, body) = admin
        .create(json!({ "name": "hook", "url": receiver.url }))
        .await;
    assert_eq!(code, 201, "{body}");
    let prefix = gw.state_prefix.clone().unwrap();
    let (records, revisions) = (
        format!("{prefix}{{push}}:subscriptions"),
        format!("{prefix}{{push}}:revisions"),
    );
    let mut redis = redis::Client::open(crate::harness::redis_url())
        .unwrap()
        .get_connection()
        .unwrap();
    let fields = |redis: &mut redis::Connection, key: &str| -> Vec<String> {
        redis::cmd("HKEYS").arg(key).query(redis).unwrap()
    };
    assert_eq!(fields(&mut redis, &records), ["orders/hook"]);
    // As an older gateway kept it: under the name alone.
    for key in [&records, &revisions] {
        let value: String = redis::cmd("HGET")
            .arg(key)
            .arg("orders/hook")
            .query(&mut redis)
            .unwrap();
        let _: i64 = redis::cmd("HDEL")
            .arg(key)
            .arg("orders/hook")
            .query(&mut redis)
            .unwrap();
        let _: i64 = redis::cmd("HSET")
            .arg(key)
            .arg("hook")
            .arg(value)
            .query(&mut redis)
            .unwrap();
    }
    let (code, body) = admin.change("hook", json!({ "max_concurrency": 3 })).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(fields(&mut redis, &records), ["orders/hook"]);
    assert_eq!(fields(&mut redis, &revisions), ["orders/hook"]);
    assert_eq!(
        admin.list().await["subscriptions"][0]["managed"]["max_concurrency"],
        3
    );
    gw.stop().await;
}

/// A tenant's queue (made through basaltic, under a reserved name) is not named on the open
/// `/metrics`, nor are its subscriptions: their series share `sqsgw_*`.
#[tokio::test]
async fn a_tenant_queue_s_subscriptions_are_not_named_on_metrics() {
    let receiver = Receiver::start().await;
    let (toml, admin_key, _) = keys();
    let gw = gateway(
        Kind::Embedded,
        &toml.replace("all_queues = true", "all_queues = false"),
    )
    .await;
    let made = gw
        .http
        .post(format!("{}/v1/queues", gw.base))
        .bearer_auth(&admin_key)
        .json(&json!({ "name": "tenant-orders" }))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status().as_u16(), 201);
    let made: Value = made.json().await.unwrap();
    let base = format!(
        "{}/v1/queues/{}",
        gw.base,
        made["result"]["id"].as_str().unwrap()
    );
    let admin = Admin {
        gw: &gw,
        key: admin_key.clone(),
        base: base.clone(),
    };
    let (code, body) = admin
        .create(json!({ "name": "tenant-hook", "url": receiver.url }))
        .await;
    assert_eq!(code, 201, "{body}");
    let sent = gw
        .http
        .post(format!("{base}/messages"))
        .bearer_auth(&admin_key)
        .json(&json!({ "body": "for the tenant" }))
        .send()
        .await
        .unwrap();
    assert!(sent.status().is_success());
    receiver.wait_for(1, Duration::from_secs(20)).await;
    let shared = "sqsgw_push_deliveries_total{queue=\"sqsgw_*\",subscription=\"sqsgw_*\",outcome=\"accepted\"} 1";
    let mut scrape = String::new();
    for _ in 0..50 {
        scrape = gw
            .http
            .get(format!("{}/metrics", gw.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if scrape.contains(shared) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(scrape.contains(shared), "{scrape}");
    assert!(
        !scrape.contains("tenant-hook") && !scrape.contains("tenant-orders"),
        "{scrape}"
    );
    gw.stop().await;
}
