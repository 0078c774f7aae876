//! What push subscriptions may not do: exceed their bounds per queue and in all, add unbounded
//! series to `/metrics` or name a tenant's queue there, fill another queue's audit trail, name a
//! refused address, or reach an HTTPS endpoint whose certificate no configured root vouches for.

use super::support::*;
use crate::harness::*;
use crate::http::push::receiver::{Receiver, secret, signed_by};
use serde_json::{Value, json};
use std::time::Duration;

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
