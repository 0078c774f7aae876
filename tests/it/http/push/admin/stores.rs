//! Push subscriptions where they are kept: they outlive a restart, replicas sharing a Redis store
//! follow each other's changes, names are scoped by queue, and a record kept under its name alone
//! on Redis is keyed anew.

use super::support::*;
use crate::harness::*;
use crate::http::push::receiver::{Receiver, signed_by};
use serde_json::json;
use std::time::Duration;

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
