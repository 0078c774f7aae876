//! The sombus credential store on the shared Redis server: replicas see one set of connections
//! and one chained audit log, a change made on one replica stops the others' copies as soon as
//! they hear of it (well within the documented 30 s), two replicas changing one connection at
//! once lose neither change, and a server that goes away makes the credential routes answer
//! their documented 503 until it is back, with no restart.

use super::support::{gateways, sombus_replicas};
use crate::harness::{GatewayBuilder, Kind};
use crate::http::sombus::support::refused_soon;
use crate::http::sombus::support::{Bus, receive, refused, token, token_answer};
use crate::http::state::own_redis::OwnRedis;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The recheck time at the document's bound: only a change heard of refuses a copy sooner.
const RECHECK_30S: &str = "credential_recheck_seconds = 30\n";

async fn admin_on(
    bus: &Bus,
    base: &str,
    method: Method,
    rest: &str,
    body: Option<Value>,
) -> crate::harness::Answer {
    let url = format!("{base}/v1/admin/workspaces/{}{rest}", bus.workspace);
    let mut request = bus.gw.http.request(method, url).bearer_auth(&bus.admin);
    if let Some(body) = body {
        request = request.json(&body);
    }
    crate::harness::answer(request.send().await.unwrap()).await
}

async fn a_revocation_on_one_replica_stops_the_others_at_once(kind: Kind) {
    let (bus, replicas) = sombus_replicas(kind, RECHECK_30S).await;
    let created = bus.create(json!({})).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    // A token from one replica reads on the others, which keep what they read for 30 s.
    let token = token(&replicas[0], &c, &created.secret).await;
    for replica in &replicas {
        assert_eq!(
            receive(replica, &token, &t, &c, "wait=0").await.status,
            StatusCode::OK
        );
    }
    let revoked = bus.step(&c, "/revoke", None).await;
    assert_eq!(revoked.body["status"], "revoked", "{}", revoked.body);
    for (index, replica) in replicas.iter().enumerate() {
        let took = refused_soon(replica, &token, &t, &c).await;
        println!("replica {index} refused the revoked connection's token after {took:?}");
        assert_eq!(
            refused(&receive(replica, &token, &t, &c, "wait=0").await),
            (StatusCode::FORBIDDEN, "producer.not_registered".into())
        );
    }
    // Restored on another replica: every replica reads again.
    let restored = admin_on(
        &bus,
        &replicas[1].base,
        Method::POST,
        &format!("/connections/{c}/restore"),
        None,
    )
    .await;
    assert_eq!(restored.body["status"], "active", "{}", restored.body);
    for gateway in gateways(&bus, &replicas) {
        let fresh = token_answer(gateway, &c, &created.secret).await;
        assert_eq!(fresh.status, StatusCode::OK, "{}", fresh.body);
    }
    for gateway in replicas {
        gateway.stop().await;
    }
    bus.gw.stop().await;
}

async fn changes_on_any_replica_make_one_chained_audit_log_and_none_is_lost(kind: Kind) {
    let (bus, replicas) = sombus_replicas(kind, "").await;
    let created = bus.create(json!({})).await;
    let c = created.client_id.clone();
    let version = |answer: &crate::harness::Answer| answer.body["credential_version"].as_u64();
    // Two replicas rotate the same connection at once: both rotations are made, one after the
    // other (a lost update would leave one version step and two secrets that both read).
    let rotate = |base: String| {
        let bus = &bus;
        let c = c.clone();
        async move {
            admin_on(
                bus,
                &base,
                Method::POST,
                &format!("/connections/{c}/secret/rotate"),
                Some(json!({ "overlap": "none" })),
            )
            .await
        }
    };
    let (first, second) = tokio::join!(
        rotate(replicas[0].base.clone()),
        rotate(replicas[1].base.clone())
    );
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    assert_eq!(second.status, StatusCode::CREATED, "{}", second.body);
    let mut versions = vec![version(&first).unwrap(), version(&second).unwrap()];
    versions.sort_unstable();
    assert_eq!(versions, [2, 3], "each rotation stepped the version once");
    let secrets =
        [&first, &second].map(|answer| answer.body["client_secret"].as_str().unwrap().to_owned());
    let live: Vec<bool> = {
        let mut live = Vec::new();
        for secret in &secrets {
            live.push(token_answer(&bus.gw, &c, secret).await.status == StatusCode::OK);
        }
        live
    };
    assert_eq!(
        live.iter().filter(|live| **live).count(),
        1,
        "only the last rotation's secret lives: {live:?}"
    );

    // One log, read from the third gateway: the create and both rotations, newest first,
    // chained without a gap.
    let page = admin_on(&bus, &bus.gw.base, Method::GET, "/audit?limit=10", None).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.get("damage").is_none(), "{}", page.body);
    let entries = page.body["entries"].as_array().unwrap();
    let actions: Vec<&str> = entries
        .iter()
        .map(|entry| entry["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["secret.rotate", "secret.rotate", "connection.create"],
        "{}",
        page.body
    );
    // Paged one at a time, the same entries.
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let rest = match &cursor {
            Some(cursor) => format!("/audit?limit=1&cursor={cursor}"),
            None => "/audit?limit=1".to_owned(),
        };
        let page = admin_on(&bus, &replicas[1].base, Method::GET, &rest, None).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        paged.extend(
            page.body["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|entry| entry["action"].as_str().unwrap().to_owned()),
        );
        match page.body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
        assert!(paged.len() <= 3, "the pages end");
    }
    assert_eq!(paged, actions);
    // A cursor past every line (the largest the API takes) reads the whole log.
    let past = admin_on(
        &bus,
        &bus.gw.base,
        Method::GET,
        "/audit?limit=10&cursor=9999999999999999999",
        None,
    )
    .await;
    assert_eq!(past.status, StatusCode::OK, "{}", past.body);
    assert_eq!(past.body["entries"].as_array().unwrap().len(), 3);
    for gateway in replicas {
        gateway.stop().await;
    }
    bus.gw.stop().await;
}

async fn connections_outlive_every_replica_that_made_them(kind: Kind) {
    let (bus, replicas) = sombus_replicas(kind, "").await;
    let created = bus.create(json!({})).await;
    let later = GatewayBuilder::new(kind)
        .sharing_state_with(&bus.gw)
        .config(&bus.toml)
        .start()
        .await;
    for gateway in replicas {
        gateway.stop().await;
    }
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let Bus { gw, .. } = bus;
    gw.stop().await;
    let token = token(&later, &c, &created.secret).await;
    assert_eq!(
        receive(&later, &token, &t, &c, "wait=0").await.status,
        StatusCode::OK
    );
    later.stop().await;
}

#[tokio::test]
async fn a_store_that_goes_away_refuses_credentials_as_documented_and_recovers() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    let port = OwnRedis::free_port();
    let redis = OwnRedis::start(port);
    redis.wait_until_answering().await;
    let store = format!("[state.redis]\nurl = \"redis://127.0.0.1:{port}/0\"\ntimeout_ms = 300\n");
    let bus = Bus::start_on(
        GatewayBuilder::new(Kind::LocalStack).config(&store),
        RECHECK_30S,
    )
    .await;
    let replica = GatewayBuilder::new(Kind::LocalStack)
        .replica_of(&bus.gw)
        .config(&store)
        .config(&bus.toml)
        .start()
        .await;
    let created = bus.create(json!({})).await;
    let c = created.client_id.clone();
    assert_eq!(
        token_answer(&bus.gw, &c, &created.secret).await.status,
        StatusCode::OK
    );

    redis.stop();
    let refused_token = token_answer(&bus.gw, &c, &created.secret).await;
    assert_eq!(
        refused_token.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        refused_token.body
    );
    assert_eq!(refused_token.body["error"], "temporarily_unavailable");
    let listed = bus
        .admin_call(Method::GET, "/connections", &bus.viewer, None)
        .await;
    assert_eq!(
        listed.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        listed.body
    );
    assert!(listed.headers.contains_key("retry-after"));
    assert!(
        !listed.body.to_string().contains("127.0.0.1"),
        "no internal detail: {}",
        listed.body
    );

    // Back (empty, as this test's server keeps nothing): served again without a restart.
    let redis = OwnRedis::start(port);
    redis.wait_until_answering().await;
    let mut status = StatusCode::SERVICE_UNAVAILABLE;
    for _ in 0..50 {
        status = bus
            .admin_call(Method::GET, "/connections", &bus.viewer, None)
            .await
            .status;
        if status == StatusCode::OK {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(status, StatusCode::OK);
    // The replica reconnects at its next call (a readiness probe, here).
    let ready = format!("{}/readyz", replica.base);
    for _ in 0..50 {
        if replica.http.get(&ready).send().await.unwrap().status() == StatusCode::OK {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let again = bus.create(json!({})).await;
    let (t, c) = (bus.workspace.clone(), again.client_id.clone());
    let token = token(&replica, &c, &again.secret).await;
    assert_eq!(
        receive(&replica, &token, &t, &c, "wait=0").await.status,
        StatusCode::OK
    );
    // The replica subscribed again by itself: a revocation still reaches it at once.
    assert_eq!(
        bus.step(&c, "/revoke", None).await.body["status"],
        "revoked"
    );
    refused_soon(&replica, &token, &t, &c).await;
    replica.stop().await;
    bus.gw.stop().await;
    redis.stop();
}

crate::on_shared_stores!(
    a_revocation_on_one_replica_stops_the_others_at_once,
    changes_on_any_replica_make_one_chained_audit_log_and_none_is_lost,
    connections_outlive_every_replica_that_made_them,
);
