//! Push subscriptions made, changed, rotated and removed through the basaltic API, on both backends
//! and the shared stores: the secret is answered once and signs the deliveries, every change is
//! audited with who made it (never a secret), changes take effect at once, a 410 Gone is recorded
//! for every replica, bad requests make nothing, managing takes receive and delete too, a deleted
//! queue takes its subscriptions, and an endpoint's path is shown only to its managers.

use super::support::*;
use crate::harness::*;
use crate::http::push::receiver::{Receiver, secret, signed_by, status};
use serde_json::{Value, json};
use std::time::Duration;

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
    // The name is made again at once after its delete (SQS's 60-second rule is not the subject).
    let gw = gateway(
        Kind::Embedded,
        &format!("{toml}\n[sqs_api]\nmanage_queues = true\nsixty_second_rules = false\n"),
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
