//! sombus credentials over HTTP on both backends, on two replicas sharing the credential store:
//! rotation, stop-old-secret, revocation, restore and removal with exactly the documented effects,
//! timed with each replica's clock moved by the test; admin roles and the audit log; and the
//! attacks: colliding queue names, other APIs' wide grants, re-created connections, racing creates.

use super::support::{Bus, receive, refused, refused_soon, token, token_answer};
use crate::harness::Kind;
use base64::Engine as _;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Past the default recheck (25 s): every replica has read the connection again.
const RECHECK: chrono::Duration = chrono::Duration::seconds(26);

fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap()
}

async fn rotation_and_revocation_stop_tokens_on_every_replica(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({})).await;
    let replica = bus.replica(kind).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let first = token(&bus.gw, &c, &created.secret).await;
    let first_claims = claims(&first);
    assert_eq!(first_claims["tenant"], t.as_str());
    assert_eq!(first_claims["sub"], c.as_str());
    assert_eq!(first_claims["role"], "consumer");
    assert_eq!(first_claims["env"], "test");
    assert_eq!(first_claims["credential_version"], 1);
    assert_eq!(
        first_claims["exp"].as_i64().unwrap() - first_claims["iat"].as_i64().unwrap(),
        3600
    );
    // The replica reads the connection (and keeps what it read for up to 25 s).
    assert_eq!(
        receive(&replica, &first, &t, &c, "wait=0").await.status,
        StatusCode::OK
    );

    // Rotate with a one-hour overlap.
    let rotated = bus
        .step(&c, "/secret/rotate", Some(json!({ "overlap": "1h" })))
        .await;
    assert_eq!(rotated.status, StatusCode::CREATED, "{}", rotated.body);
    assert_eq!(rotated.body["credential_version"], 2);
    let second_secret = rotated.body["client_secret"].as_str().unwrap().to_owned();
    // Here at once; on the replica once it reads the connection again.
    assert_eq!(
        refused(&receive(&bus.gw, &first, &t, &c, "wait=0").await),
        (StatusCode::UNAUTHORIZED, "producer.unauthenticated".into())
    );
    if kind.is_shared_state() {
        // The shared store publishes the change: the replica drops its copy once it hears.
        refused_soon(&replica, &first, &t, &c).await;
    } else {
        assert_eq!(
            receive(&replica, &first, &t, &c, "wait=0").await.status,
            StatusCode::OK,
            "within the recheck time"
        );
    }
    replica.clock.advance(RECHECK);
    assert_eq!(
        refused(&receive(&replica, &first, &t, &c, "wait=0").await).0,
        StatusCode::UNAUTHORIZED
    );
    // During the overlap the old secret still gets tokens, of the new version, that read.
    let from_old = token(&replica, &c, &created.secret).await;
    assert_eq!(claims(&from_old)["credential_version"], 2);
    assert_eq!(
        receive(&replica, &from_old, &t, &c, "wait=0").await.status,
        StatusCode::OK
    );
    let second = token(&bus.gw, &c, &second_secret).await;
    assert_eq!(
        receive(&replica, &second, &t, &c, "wait=0").await.status,
        StatusCode::OK
    );

    // Stop old secret now: no token for it at once anywhere, and its tokens stop.
    assert_eq!(
        bus.step(&c, "/secret/stop-old", None).await.status,
        StatusCode::OK
    );
    assert_eq!(
        token_answer(&replica, &c, &created.secret).await.body["error"],
        "invalid_client"
    );
    replica.clock.advance(RECHECK);
    assert_eq!(
        refused(&receive(&replica, &from_old, &t, &c, "wait=0").await).0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        receive(&replica, &second, &t, &c, "wait=0").await.status,
        StatusCode::OK
    );
    // Without an old secret in its overlap there is nothing to stop.
    assert_eq!(
        refused(&bus.step(&c, "/secret/stop-old", None).await),
        (StatusCode::CONFLICT, "admin.conflict".into())
    );

    // Revoke secret: no token at once, its tokens stop within the recheck time, for good.
    let revoked = bus.step(&c, "/secret/revoke", None).await;
    assert_eq!(revoked.body["has_secret"], false);
    assert_eq!(
        token_answer(&replica, &c, &second_secret).await.status,
        StatusCode::UNAUTHORIZED
    );
    replica.clock.advance(RECHECK);
    assert_eq!(
        refused(&receive(&replica, &second, &t, &c, "wait=0").await).0,
        StatusCode::UNAUTHORIZED
    );
    let fresh = bus.step(&c, "/secret", None).await;
    assert_eq!(fresh.status, StatusCode::CREATED, "{}", fresh.body);
    let third_secret = fresh.body["client_secret"].as_str().unwrap().to_owned();
    let third = token(&replica, &c, &third_secret).await;
    assert_eq!(
        receive(&replica, &third, &t, &c, "wait=0").await.status,
        StatusCode::OK
    );
    assert_eq!(
        refused(&receive(&replica, &second, &t, &c, "wait=0").await).0,
        StatusCode::UNAUTHORIZED,
        "never again"
    );
    // A secret exists: it is not shown again, only rotated.
    assert_eq!(
        refused(&bus.step(&c, "/secret", None).await),
        (StatusCode::CONFLICT, "admin.conflict".into())
    );
    // A rotation with no overlap ends the old secret at once.
    let no_overlap = bus
        .step(&c, "/secret/rotate", Some(json!({ "overlap": "none" })))
        .await;
    let fourth_secret = no_overlap.body["client_secret"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        token_answer(&replica, &c, &third_secret).await.status,
        StatusCode::UNAUTHORIZED
    );
    let fourth = token(&replica, &c, &fourth_secret).await;
    assert!(
        claims(&fourth)["credential_version"].as_u64().unwrap()
            > claims(&third)["credential_version"].as_u64().unwrap()
    );
    for overlap in [json!("2h"), json!(24), json!({})] {
        let bad = bus
            .step(&c, "/secret/rotate", Some(json!({ "overlap": overlap })))
            .await;
        assert_eq!(
            refused(&bad),
            (StatusCode::BAD_REQUEST, "admin.bad_request".into())
        );
    }

    // Revoke the connection: no token at once; the pull API within the recheck time; the queue
    // stays; restoring it lets the same secret read again.
    assert_eq!(
        receive(&replica, &fourth, &t, &c, "wait=0").await.status,
        StatusCode::OK
    );
    assert_eq!(
        bus.step(&c, "/revoke", None).await.body["status"],
        "revoked"
    );
    assert_eq!(
        token_answer(&replica, &c, &fourth_secret).await.status,
        StatusCode::UNAUTHORIZED
    );
    replica.clock.advance(RECHECK);
    assert_eq!(
        refused(&receive(&replica, &fourth, &t, &c, "wait=0").await),
        (StatusCode::FORBIDDEN, "producer.not_registered".into())
    );
    bus.publish(&created.queue, "kept", json!({})).await;
    assert_eq!(
        bus.step(&c, "/restore", None).await.body["status"],
        "active"
    );
    let restored = token(&replica, &c, &fourth_secret).await;
    let kept = receive(&replica, &restored, &t, &c, "wait=1").await;
    assert_eq!(
        kept.body["messages"].as_array().unwrap().len(),
        1,
        "the queue was kept"
    );
    assert_eq!(
        refused(&bus.step(&c, "/restore", None).await).0,
        StatusCode::CONFLICT
    );

    // Remove: its queues and credentials go; its tokens are refused (within the recheck time).
    let removed = bus
        .admin_call(
            Method::DELETE,
            &format!("/connections/{c}"),
            &bus.admin,
            None,
        )
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);
    assert!(
        bus.gw.backend.resolve(&created.queue).await.is_err(),
        "the queue is deleted"
    );
    assert_eq!(
        token_answer(&replica, &c, &fourth_secret).await.status,
        StatusCode::UNAUTHORIZED
    );
    replica.clock.advance(RECHECK);
    assert_eq!(
        refused(&receive(&replica, &restored, &t, &c, "wait=0").await),
        (StatusCode::FORBIDDEN, "producer.not_registered".into())
    );
    let gone = bus
        .admin_call(Method::GET, &format!("/connections/{c}"), &bus.viewer, None)
        .await;
    assert_eq!(
        refused(&gone),
        (StatusCode::NOT_FOUND, "admin.not_found".into())
    );

    // Every change is in the workspace's audit log (newest first), with who made it.
    let log = bus
        .admin_call(Method::GET, "/audit", &bus.viewer, None)
        .await;
    let actions: Vec<&str> = log.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["client_id"] == c.as_str())
        .map(|entry| entry["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "connection.remove",
            "connection.restore",
            "connection.revoke",
            "secret.rotate",
            "secret.get",
            "secret.revoke",
            "secret.stop_old",
            "secret.rotate",
            "connection.create",
        ]
    );
    assert_eq!(log.body["entries"][0]["actor"], format!("admin-of-{t}"));
    replica.stop().await;
}

async fn admin_keys_are_scoped_by_workspace_and_role(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus
        .create(json!({ "client_id": "house-1", "attempt_limit": 3, "fifo": false }))
        .await;
    // A chosen id carries its workspace; the workspace's admin routes take the chosen part too.
    assert_eq!(created.client_id, format!("{}.house-1", bus.workspace));
    assert!(!created.queue.ends_with(".fifo"));
    let c = "house-1";
    let show = bus
        .admin_call(Method::GET, &format!("/connections/{c}"), &bus.viewer, None)
        .await;
    assert_eq!(show.status, StatusCode::OK);
    assert_eq!(show.body["attempt_limit"], 3);
    assert_eq!(show.body["status"], "active");
    assert!(
        !show.body.to_string().contains("sha256"),
        "no hash is ever shown"
    );
    let listed = bus
        .admin_call(Method::GET, "/connections", &bus.viewer, None)
        .await;
    assert_eq!(listed.body["connections"].as_array().unwrap().len(), 1);
    // The same id again: conflict.
    let again = bus
        .admin_call(
            Method::POST,
            "/connections",
            &bus.admin,
            Some(json!({ "client_id": c })),
        )
        .await;
    assert_eq!(
        refused(&again),
        (StatusCode::CONFLICT, "admin.conflict".into())
    );
    // Roles: a viewer can't touch secrets, a developer can't revoke or remove connections.
    let viewer_rotate = bus
        .admin_call(
            Method::POST,
            &format!("/connections/{c}/secret/rotate"),
            &bus.viewer,
            None,
        )
        .await;
    assert_eq!(
        refused(&viewer_rotate),
        (StatusCode::FORBIDDEN, "admin.forbidden".into())
    );
    let developer_rotate = bus
        .admin_call(
            Method::POST,
            &format!("/connections/{c}/secret/rotate"),
            &bus.developer,
            None,
        )
        .await;
    assert_eq!(
        developer_rotate.status,
        StatusCode::CREATED,
        "developer role or above"
    );
    for (method, route) in [
        (Method::POST, format!("/connections/{c}/revoke")),
        (Method::DELETE, format!("/connections/{c}")),
        (Method::POST, "/connections".to_owned()),
    ] {
        let developer = bus
            .admin_call(method, &route, &bus.developer, Some(json!({})))
            .await;
        assert_eq!(
            refused(&developer),
            (StatusCode::FORBIDDEN, "admin.forbidden".into()),
            "{route}"
        );
    }
    // Another organisation's key manages nothing here; no key or a wrong one authenticates nobody.
    let outsider = bus
        .admin_call(Method::GET, "/connections", &bus.outsider, None)
        .await;
    assert_eq!(
        refused(&outsider),
        (StatusCode::FORBIDDEN, "admin.forbidden".into())
    );
    let wrong = bus
        .admin_call(Method::GET, "/connections", "sqsgw_nobody_secret", None)
        .await;
    assert_eq!(
        refused(&wrong),
        (StatusCode::UNAUTHORIZED, "admin.unauthenticated".into())
    );
    let missing = bus
        .admin_call(Method::POST, "/connections/nobody/revoke", &bus.admin, None)
        .await;
    assert_eq!(
        refused(&missing),
        (StatusCode::NOT_FOUND, "admin.not_found".into())
    );
    for body in [
        json!({ "attempt_limit": 0 }),
        json!({ "tier": "gold" }),
        json!({ "client_id": "has space" }),
        json!({ "role": "root" }),
        json!({ "extra": 1 }),
    ] {
        let bad = bus
            .admin_call(Method::POST, "/connections", &bus.admin, Some(body.clone()))
            .await;
        assert_eq!(
            refused(&bad),
            (StatusCode::BAD_REQUEST, "admin.bad_request".into()),
            "{body}"
        );
    }
    // Bodies are not read before the key is checked.
    let unauthenticated = bus
        .gw
        .http
        .post(bus.admin_url("/connections"))
        .body(vec![b'x'; 1 << 20])
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), StatusCode::UNAUTHORIZED);
    // A replica started later reads the connections from the store's directory.
    let later = bus.replica(kind).await;
    let rotated_secret = developer_rotate.body["client_secret"].as_str().unwrap();
    assert_eq!(
        token_answer(&later, &created.client_id, rotated_secret)
            .await
            .status,
        StatusCode::OK
    );
    later.stop().await;
}

/// Connection queue names cannot meet: `x-dlq` is not `x`'s dead-letter queue, and removing one
/// connection leaves the other's queues.
async fn queues_of_two_connections_never_meet(kind: Kind) {
    let bus = Bus::start(kind).await;
    let x = bus.create(json!({ "client_id": "x" })).await;
    let x_dlq = bus.create(json!({ "client_id": "x-dlq" })).await;
    let shown = bus
        .admin_call(Method::GET, "/connections/x", &bus.viewer, None)
        .await;
    let x_dead_letters = shown.body["dead_letter_queue"].as_str().unwrap().to_owned();
    assert_ne!(x_dead_letters, x_dlq.queue);
    assert_ne!(x.queue, x_dlq.queue);
    let removed = bus
        .admin_call(Method::DELETE, "/connections/x-dlq", &bus.admin, None)
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);
    assert!(bus.gw.backend.resolve(&x_dead_letters).await.is_ok());
    assert!(bus.gw.backend.resolve(&x.queue).await.is_ok());
}

/// Other APIs' wide grants reach a connection's queue only to publish: an SQS key for every
/// queue can't receive, delete or purge there, and ezgh's handle-holder ack can't acknowledge a
/// sombus delivery.
async fn other_apis_reach_a_connections_queue_only_to_publish(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({ "fifo": false })).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    bus.publish(&created.queue, "s", json!({})).await;
    let (sqs, url) = bus.gw.sqs_queue(&created.queue).await;
    let stolen = sqs.receive_message().queue_url(&url).send().await;
    let code = stolen
        .err()
        .and_then(|error| error.into_service_error().meta().code().map(str::to_owned));
    assert_eq!(code.as_deref(), Some("AccessDenied"));
    assert!(sqs.purge_queue().queue_url(&url).send().await.is_err());
    let token = token(&bus.gw, &c, &created.secret).await;
    let got = receive(&bus.gw, &token, &t, &c, "wait=2").await;
    let handle = got.body["messages"][0]["receipt_handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let ezgh = bus.gw.ack(&[&handle]).await;
    assert_ne!(
        ezgh.body["results"][0],
        json!({ "ok": true }),
        "{}",
        ezgh.body
    );
    // The delivery is still the consumer's: releasing it brings it back a second time.
    let nacked = super::support::post(
        &bus.gw,
        &token,
        &t,
        &c,
        "nack",
        json!({ "receipt_handles": [handle] }),
    )
    .await;
    assert_eq!(nacked.body["failed"], json!([]));
    let again = receive(&bus.gw, &token, &t, &c, "wait=2").await;
    assert_eq!(again.body["messages"][0]["receive_count"], 2);
}

/// A connection removed and created again under the same client id is another: tokens of the
/// first never read the second.
async fn a_recreated_connection_refuses_the_old_ones_tokens(kind: Kind) {
    let bus = Bus::start(kind).await;
    let first = bus.create(json!({ "client_id": "again" })).await;
    let again = first.client_id.clone();
    let old = token(&bus.gw, &again, &first.secret).await;
    let removed = bus
        .admin_call(Method::DELETE, "/connections/again", &bus.admin, None)
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);
    let second = bus.create(json!({ "client_id": "again" })).await;
    let t = bus.workspace.clone();
    assert_eq!(
        refused(&receive(&bus.gw, &old, &t, &again, "wait=0").await),
        (StatusCode::UNAUTHORIZED, "producer.unauthenticated".into())
    );
    assert_eq!(second.client_id, again, "the same client id");
    let new = token(&bus.gw, &again, &second.secret).await;
    assert_eq!(
        receive(&bus.gw, &new, &t, &again, "wait=0").await.status,
        StatusCode::OK
    );
}

/// Two creates of one client id at once: one wins, and the loser leaves the winner's queues.
async fn concurrent_creates_leave_the_winners_queues(kind: Kind) {
    let bus = Bus::start(kind).await;
    let body = json!({ "client_id": "twice" });
    let (a, b) = tokio::join!(
        bus.admin_call(Method::POST, "/connections", &bus.admin, Some(body.clone())),
        bus.admin_call(Method::POST, "/connections", &bus.admin, Some(body.clone())),
    );
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::CREATED, StatusCode::CONFLICT]);
    let winner = if a.status == StatusCode::CREATED {
        a
    } else {
        b
    };
    let secret = winner.body["client_secret"].as_str().unwrap();
    let shown = bus
        .admin_call(Method::GET, "/connections/twice", &bus.viewer, None)
        .await;
    let queue = shown.body["queue"].as_str().unwrap();
    assert!(
        bus.gw.backend.resolve(queue).await.is_ok(),
        "the winner's queue stays"
    );
    let twice = winner.body["client_id"].as_str().unwrap();
    let token = token(&bus.gw, twice, secret).await;
    let t = bus.workspace.clone();
    assert_eq!(
        receive(&bus.gw, &token, &t, twice, "wait=0").await.status,
        StatusCode::OK
    );
}

/// Before a long poll the connection is read at most 10 s earlier, so a change stops deliveries
/// within 30 s even with a 20 s wait; other routes may use a read up to 25 s old.
async fn a_long_poll_reads_the_connection_fresh(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({})).await;
    let replica = bus.replica(kind).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let token = token(&bus.gw, &c, &created.secret).await;
    assert_eq!(
        receive(&replica, &token, &t, &c, "wait=0").await.status,
        StatusCode::OK
    );
    assert_eq!(bus.step(&c, "/revoke", None).await.status, StatusCode::OK);
    replica.clock.advance(chrono::Duration::seconds(11));
    let ack = super::support::post(
        &replica,
        &token,
        &t,
        &c,
        "ack",
        json!({ "receipt_handles": ["x"] }),
    )
    .await;
    if kind.is_shared_state() {
        // The replica hears of the revocation: it keeps no copy to answer from.
        if ack.status == StatusCode::OK {
            refused_soon(&replica, &token, &t, &c).await;
        } else {
            assert_eq!(
                refused(&ack),
                (StatusCode::FORBIDDEN, "producer.not_registered".into())
            );
        }
    } else {
        assert_eq!(ack.status, StatusCode::OK, "within the recheck time");
    }
    assert_eq!(
        refused(&receive(&replica, &token, &t, &c, "wait=20").await),
        (StatusCode::FORBIDDEN, "producer.not_registered".into())
    );
    replica.stop().await;
}

crate::on_both_backends!(
    rotation_and_revocation_stop_tokens_on_every_replica,
    admin_keys_are_scoped_by_workspace_and_role,
    queues_of_two_connections_never_meet,
    other_apis_reach_a_connections_queue_only_to_publish,
    a_recreated_connection_refuses_the_old_ones_tokens,
    concurrent_creates_leave_the_winners_queues,
    a_long_poll_reads_the_connection_fresh,
);
