//! The Redis state store itself: a server or cluster that goes away and comes back needs no
//! restart, the ledger's writes cannot resurrect an ended delivery, an acknowledgement is one round
//! trip, a TLS store that answers no TLS is unavailable, and the password stays out of errors.

use crate::harness::{
    GatewayBuilder, Kind, QueueSpec, TestGateway, handle_of, ok, redis_url, results, stale,
};
use crate::http::state::own_redis::{OwnCluster, OwnRedis, OwnStore};
use reqwest::StatusCode;
use serde_json::json;
use sqs_gateway::core::clock::SystemClock;
use sqs_gateway::core::state::ledger::{Standing, UnknownDeliveries};
use sqs_gateway::core::state::{DeliveryKey, NewDelivery, StateStore};
use sqs_gateway::state::redis::RedisState;
use sqs_gateway::state::redis::config::RedisStateConfig;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn a_store_that_goes_away_and_comes_back_needs_no_restart() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    goes_away_and_comes_back(OwnRedis::start(OwnRedis::free_port())).await;
}

#[tokio::test]
async fn a_cluster_that_goes_away_and_comes_back_needs_no_restart() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    goes_away_and_comes_back(OwnCluster::start().await).await;
}

/// The documented policy while `store` is away, and service again once it is back, without
/// restarting the gateway.
async fn goes_away_and_comes_back(mut store: impl OwnStore) {
    store.wait_until_answering().await;
    let gw = GatewayBuilder::new(Kind::LocalStack)
        .queue(QueueSpec::standard("orders"))
        .config(&format!("{}timeout_ms = 300\n", store.config()))
        .start()
        .await;
    gw.send("orders", "kept").await;
    let received = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 1 }),
        )
        .await;
    let handle = handle_of(&received[0]).to_owned();
    let ready = |gw: &TestGateway| {
        let url = format!("{}/readyz", gw.base);
        let http = gw.http.clone();
        async move { http.get(url).send().await.unwrap().status() }
    };
    assert_eq!(ready(&gw).await, StatusCode::OK);

    store.take_away();
    // The documented policy meanwhile: not ready; an ack never guesses; a receive takes nothing.
    assert_eq!(ready(&gw).await, StatusCode::SERVICE_UNAVAILABLE);
    let ack = gw.ack(&[&handle]).await;
    assert_eq!(ack.status, StatusCode::SERVICE_UNAVAILABLE, "{}", ack.body);
    assert!(ack.headers.contains_key("retry-after"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let receive = gw
        .receive(
            "orders",
            json!({ "waitSeconds": 2, "visibilityTimeoutSeconds": 1 }),
        )
        .await;
    assert_eq!(
        receive.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        receive.body
    );
    assert_eq!(gw.backend_depth("orders").await, 1, "nothing lost");

    // Back (empty: what it knew is gone, so older handles are stale): served again.
    store.bring_back();
    store.wait_until_answering().await;
    let mut answered = None;
    for _ in 0..50 {
        if ready(&gw).await == StatusCode::OK {
            let again = gw
                .receive(
                    "orders",
                    json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 30 }),
                )
                .await;
            if again.status == StatusCode::OK
                && !again.body["messages"].as_array().unwrap().is_empty()
            {
                answered = Some(again);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let again = answered.expect("served again without a restart");
    let fresh = handle_of(&again.body["messages"][0]).to_owned();
    assert_eq!(results(&gw.ack(&[&handle]).await), vec![stale()]);
    assert_eq!(results(&gw.ack(&[&fresh]).await), vec![ok()]);
    assert_eq!(gw.backend_depth("orders").await, 0);
    gw.stop().await;
}

/// The ledger's writes through the port, as replicas race them: a record that arrives late
/// never replaces a later delivery nor brings back an ended one.
#[tokio::test]
async fn a_late_record_cannot_resurrect_an_ended_or_replaced_delivery() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    let config: RedisStateConfig = toml::from_str(&format!(
        "url = \"{}\"\nprefix = \"sqsgw-test-{:08x}:\"\n",
        redis_url(),
        rand::random::<u32>()
    ))
    .unwrap();
    let state = RedisState::new(
        &config,
        Duration::from_secs(3600),
        UnknownDeliveries::Stale,
        Arc::new(SystemClock),
    )
    .unwrap();
    let key = |delivery_id| DeliveryKey {
        queue: "orders",
        message_id: "m-1",
        delivery_id,
    };
    let record = |delivery_id, receive_count| NewDelivery {
        key: key(delivery_id),
        receive_count,
    };
    state.record_deliveries(&[record(2, 2)]).await.unwrap();
    // The first delivery's record, delayed past the second's.
    state.record_deliveries(&[record(1, 1)]).await.unwrap();
    assert_eq!(
        state.standings(&[key(1), key(2)]).await.unwrap(),
        vec![Standing::Stale, Standing::Current]
    );
    assert_eq!(
        state.begin_acks(&[key(2)]).await.unwrap(),
        vec![Standing::Current]
    );
    state.end_deliveries(&[key(2)]).await.unwrap();
    // The second delivery's record, replayed after its end.
    state.record_deliveries(&[record(2, 2)]).await.unwrap();
    assert_eq!(
        state.begin_acks(&[key(2)]).await.unwrap(),
        vec![Standing::Stale]
    );
    // A purge ends it all; a delivery after it is current.
    state.record_deliveries(&[record(3, 3)]).await.unwrap();
    state.end_queue("orders").await.unwrap();
    assert_eq!(
        state.standings(&[key(3)]).await.unwrap(),
        vec![Standing::Stale]
    );
    state.record_deliveries(&[record(4, 4)]).await.unwrap();
    assert_eq!(
        state.standings(&[key(4)]).await.unwrap(),
        vec![Standing::Current]
    );
}

/// An acknowledgement costs the store one round trip: its claim is kept as an ended delivery is
/// (for 2 minutes, not the ledger's hour), so the end after the answer writes nothing; an aborted
/// claim is current again for the ledger's time.
#[tokio::test]
async fn an_acknowledgement_is_one_round_trip_and_its_claim_ends_by_itself() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    let prefix = format!("sqsgw-test-{:08x}:", rand::random::<u32>());
    let config: RedisStateConfig = toml::from_str(&format!(
        "url = \"{}\"\nprefix = \"{prefix}\"\n",
        redis_url()
    ))
    .unwrap();
    let state = RedisState::new(
        &config,
        Duration::from_secs(3600),
        UnknownDeliveries::Stale,
        Arc::new(SystemClock),
    )
    .unwrap();
    let key = |message_id, delivery_id| DeliveryKey {
        queue: "orders",
        message_id,
        delivery_id,
    };
    let record = |message_id, delivery_id| NewDelivery {
        key: key(message_id, delivery_id),
        receive_count: 1,
    };
    let ttl_ms = |message_id: &str| {
        let entry = format!("{prefix}{{q:orders}}:d:{message_id}");
        async move {
            let client = redis::Client::open(redis_url()).unwrap();
            let mut connection = client.get_multiplexed_async_connection().await.unwrap();
            redis::cmd("PTTL")
                .arg(entry)
                .query_async::<i64>(&mut connection)
                .await
                .unwrap()
        }
    };
    state
        .record_deliveries(&[record("acked", 1), record("aborted", 2)])
        .await
        .unwrap();
    let before = state.calls().unwrap();
    assert_eq!(
        state.begin_acks(&[key("acked", 1)]).await.unwrap(),
        vec![Standing::Current]
    );
    state.end_deliveries(&[key("acked", 1)]).await.unwrap();
    assert_eq!(
        state.calls().unwrap() - before,
        1,
        "begin and end: one call"
    );
    let kept = ttl_ms("acked").await;
    assert!((1..=120_000).contains(&kept), "kept {kept} ms");
    state
        .record_deliveries(&[record("acked", 1)])
        .await
        .unwrap();
    assert_eq!(
        state.standings(&[key("acked", 1)]).await.unwrap(),
        vec![Standing::Stale]
    );

    state.begin_acks(&[key("aborted", 2)]).await.unwrap();
    state.abort_acks(&[key("aborted", 2)]).await.unwrap();
    assert_eq!(
        state.standings(&[key("aborted", 2)]).await.unwrap(),
        vec![Standing::Current]
    );
    assert!(
        ttl_ms("aborted").await > 3_000_000,
        "current again for the ledger's time"
    );
}

/// A `rediss://` store is reached over TLS: against a server that speaks none, the store is
/// unavailable (an error, not a panic), and the gateway keeps running.
#[tokio::test]
async fn a_tls_store_that_does_not_answer_tls_is_unavailable() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    let port = redis_url()
        .rsplit(':')
        .next()
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    let config: RedisStateConfig = toml::from_str(&format!(
        "url = \"rediss://127.0.0.1:{port}/0\"\ntimeout_ms = 500\n"
    ))
    .unwrap();
    let state = RedisState::new(
        &config,
        Duration::from_secs(3600),
        UnknownDeliveries::Stale,
        Arc::new(SystemClock),
    )
    .unwrap();
    assert!(state.ping().await.is_err());
    assert!(state.ping().await.is_err(), "and again");
}

/// The password never reaches a log line, an error or the metrics, however the store fails.
#[tokio::test]
async fn the_stores_password_stays_out_of_errors() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    let password = format!("pw-{:016x}", rand::random::<u64>());
    let config: RedisStateConfig = toml::from_str(&format!(
        "url = \"{}\"\nsecret = \"{password}\"\ntimeout_ms = 300\n",
        redis_url(),
    ))
    .unwrap();
    assert!(!format!("{config:?}").contains(&password));
    let state = RedisState::new(
        &config,
        Duration::from_secs(3600),
        UnknownDeliveries::Stale,
        Arc::new(SystemClock),
    )
    .unwrap();
    // The test server has no password: AUTH fails, and says so without the password.
    let error = state.ping().await.unwrap_err();
    assert!(!error.to_string().contains(&password), "{error}");
    let refused = sqs_gateway::config::Config::parse(&format!(
        "[backend]\nkind = \"embedded\"\nin_memory = true\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n[state.redis]\nurl = \"redis://user:secret@127.0.0.1:6390/0\"\n",
        sqs_gateway::core::handle::Keyring::generate_key()
    ))
    .unwrap_err()
    .to_string();
    assert!(refused.contains("state.redis.url"), "{refused}");
    assert!(!refused.contains("secret@"), "{refused}");
}
