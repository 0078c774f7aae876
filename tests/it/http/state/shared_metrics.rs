//! The basaltic metrics history shared by replicas through the state store (Redis, at
//! `SQSGW_TEST_REDIS_URL`): one history for every replica, sampled by one of them at a time,
//! handed over when its sampler stops and kept for replicas that start later, repeated receives
//! added up across replicas, and the documented 503 while the store is away.

use crate::harness::unique;
use crate::harness::{Answer, GatewayBuilder, Kind, TestGateway, answer, captured_logs};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqs_gateway::credentials::api_keys;
use std::time::Duration;

/// The `[basaltic]` table every replica shares (one key with every permission), sampling every
/// second; aliases read back after a second, as any replica may have made a queue.
fn config(admin: &api_keys::GeneratedKey) -> String {
    format!(
        "[basaltic]\nmetrics_interval_seconds = 1\n\n[[basaltic.keys]]\nid = \"{}\"\nname = \"admin\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"*\"] }}\n\n[server]\nqueue_cache_seconds = 1\n",
        admin.id, admin.hash
    )
}

async fn call(
    gw: &TestGateway,
    key: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Answer {
    let mut request = gw
        .http
        .request(method, format!("{}{path}", gw.base))
        .bearer_auth(key);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    answer(request.send().await.unwrap()).await
}

/// Makes a basaltic queue through `gw`; answers its id.
async fn create(gw: &TestGateway, key: &str) -> String {
    let name = unique("m-");
    let created = call(
        gw,
        key,
        Method::POST,
        "/v1/queues",
        Some(json!({ "name": name })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    created.body["result"]["id"].as_str().unwrap().to_owned()
}

/// Waits until every replica reaches the queue (one made elsewhere is found once the replica
/// reads the aliases back: here after a second).
async fn reached_everywhere(gws: &[TestGateway], key: &str, id: &str) {
    for gw in gws {
        let mut status = StatusCode::NOT_FOUND;
        for _ in 0..50 {
            status = call(gw, key, Method::GET, &format!("/v1/queues/{id}"), None)
                .await
                .status;
            if status == StatusCode::OK {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert_eq!(status, StatusCode::OK, "{} never reaches {id}", gw.base);
    }
}

/// The queue's samples as `gw` answers them.
async fn samples(gw: &TestGateway, key: &str, id: &str) -> Vec<Value> {
    let got = call(
        gw,
        key,
        Method::GET,
        &format!("/v1/queues/{id}/metrics"),
        None,
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    assert_eq!(got.body["interval_seconds"], 1);
    got.body["samples"].as_array().unwrap().clone()
}

/// Reads `gw` until its samples pass `check` (within 120 s: the shared LocalStack holds every
/// test's basaltic queues, and one count at a time reaches a given queue every few rounds on a
/// loaded machine).
async fn wait_until(
    gw: &TestGateway,
    key: &str,
    id: &str,
    what: &str,
    check: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let mut last = Vec::new();
    for _ in 0..600 {
        last = samples(gw, key, id).await;
        if check(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("never {what}: {last:?}");
}

fn at(sample: &Value) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(sample["at"].as_str().unwrap())
        .unwrap()
        .to_utc()
}

/// Three replicas sharing the state, one key for all of them.
async fn replicas(count: usize) -> (Vec<TestGateway>, String) {
    let admin = api_keys::generate_key();
    let config = config(&admin);
    let first = GatewayBuilder::new(Kind::Redis)
        .config(&config)
        .start()
        .await;
    let mut all = vec![first];
    for _ in 1..count {
        let next = GatewayBuilder::new(Kind::Redis)
            .sharing_state_with(&all[0])
            .config(&config)
            .start()
            .await;
        all.push(next);
    }
    (all, admin.key)
}

/// A queue made on one replica is sampled (by whichever holds the lease, here not the one that
/// made it), every replica answers the same samples, and an interval has one sample, not one a
/// replica.
#[tokio::test]
async fn replicas_answer_one_history_sampled_once_an_interval() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    let (gws, key) = replicas(3).await;
    let id = create(&gws[1], &key).await;
    // Not through the sampler (replica 0, the first to take the lease): it learns the queue from
    // the shared store, not from a request naming it.
    reached_everywhere(&gws[1..], &key, &id).await;
    let sent = call(
        &gws[2],
        &key,
        Method::POST,
        &format!("/v1/queues/{id}/messages"),
        Some(json!({ "body": "a" })),
    )
    .await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.body);
    // Read on the replica that made it, until the sampler has sampled it a while.
    let seen = wait_until(&gws[1], &key, &id, "five samples of one visible", |s| {
        s.iter().filter(|s| s["visible"] == 1).count() >= 5
    })
    .await;
    // The history only grows at its end: what one replica answered first is the start of what
    // every replica answers after it, the one that never served this queue included.
    let answers = [
        samples(&gws[0], &key, &id).await,
        samples(&gws[1], &key, &id).await,
        samples(&gws[2], &key, &id).await,
    ];
    for answer in &answers {
        assert!(answer.len() >= seen.len(), "{seen:?}\n{answers:?}");
        assert_eq!(answer[..seen.len()], seen[..], "{answers:?}");
    }
    let history = &answers[2];
    let first = at(&history[0]);
    let last = at(history.last().unwrap());
    assert!(
        history.windows(2).all(|w| at(&w[0]) <= at(&w[1])),
        "{history:?}"
    );
    // One sampler at a time: about one sample a second (three replicas sampling would take
    // three), and never two taken at one time.
    let seconds = (last - first).num_seconds();
    assert!(
        history.len() as i64 <= seconds + 2,
        "{} samples in {seconds} s: {history:?}",
        history.len()
    );
    for gw in gws {
        gw.stop().await;
    }
}

/// The holder stops: another replica takes the lease over within its TTL and samples on; the
/// samples taken before stay, and a replica started later on the same store reads them.
#[tokio::test]
async fn a_stopped_sampler_is_replaced_and_the_history_outlives_it() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    let admin = api_keys::generate_key();
    let config = config(&admin);
    let key = admin.key.clone();
    let holder = GatewayBuilder::new(Kind::Redis)
        .config(&config)
        .start()
        .await;
    let id = create(&holder, &key).await;
    let before = wait_until(&holder, &key, &id, "three samples", |s| s.len() >= 3).await;
    let lease_key = format!("{}{{bm}}:lease", holder.state_prefix.clone().unwrap());
    let lease_holder = || -> Option<String> {
        let mut redis = redis::Client::open(crate::harness::redis_url())
            .unwrap()
            .get_connection()
            .unwrap();
        redis::cmd("GET").arg(&lease_key).query(&mut redis).unwrap()
    };
    // The holder's id, read while it is the only replica: renewed at each sampling turn, the
    // lease can lapse for a moment on a loaded machine, and once a second replica runs, that
    // one may take it then.
    let mut held_by = lease_holder();
    let waited_since = std::time::Instant::now();
    while held_by.is_none() && waited_since.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        held_by = lease_holder();
    }
    let held_by = held_by.expect("the sampler holds the lease");
    let other = GatewayBuilder::new(Kind::Redis)
        .sharing_state_with(&holder)
        .config(&config)
        .start()
        .await;
    assert_eq!(
        samples(&other, &key, &id).await[..before.len()],
        before[..],
        "the other replica answers the holder's samples"
    );
    let stopped_at = holder.clock_now();
    holder.stop().await;
    // A graceful stop gives the lease up (it would otherwise last 3 intervals), and the other
    // replica samples from its next turn on.
    assert_ne!(
        lease_holder().as_deref(),
        Some(held_by.as_str()),
        "the stopped sampler still holds the lease"
    );
    let after = wait_until(&other, &key, &id, "a sample after the stop", |s| {
        s.iter()
            .filter(|s| at(s) > stopped_at + chrono::Duration::seconds(1))
            .count()
            >= 2
    })
    .await;
    assert_eq!(after[..before.len()], before[..], "the samples before stay");
    // A replica started now (a new process on the same store) reads all of it.
    let later = GatewayBuilder::new(Kind::Redis)
        .sharing_state_with(&other)
        .config(&config)
        .start()
        .await;
    let read = samples(&later, &key, &id).await;
    assert!(read.len() >= after.len(), "{read:?}");
    assert_eq!(read[..after.len()], after[..]);
    other.stop().await;
    later.stop().await;
}

/// Repeated receives handed out by different replicas add up in the one history.
#[tokio::test]
async fn repeated_receives_on_different_replicas_add_up() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    let (gws, key) = replicas(3).await;
    let id = create(&gws[0], &key).await;
    reached_everywhere(&gws, &key, &id).await;
    let sent = call(
        &gws[0],
        &key,
        Method::POST,
        &format!("/v1/queues/{id}/messages"),
        Some(json!({ "body": "again and again" })),
    )
    .await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.body);
    // One message received four times: by replicas 0, 1, 2 and 0 again; the last three are
    // repeated receives, each counted by the replica that handed it out.
    for (round, gw) in [&gws[0], &gws[1], &gws[2], &gws[0]].into_iter().enumerate() {
        let mut got = Vec::new();
        for _ in 0..10 {
            let received = call(
                gw,
                &key,
                Method::POST,
                &format!("/v1/queues/{id}/messages/receive"),
                Some(json!({ "visibility_timeout_seconds": 60, "wait_time_seconds": 2 })),
            )
            .await;
            assert_eq!(received.status, StatusCode::OK, "{}", received.body);
            got = received.body["messages"].as_array().unwrap().clone();
            if !got.is_empty() {
                break;
            }
        }
        assert_eq!(got.len(), 1, "round {round}");
        assert_eq!(got[0]["receive_count"], round + 1);
        let released = call(
            gw,
            &key,
            Method::POST,
            &format!("/v1/queues/{id}/messages/visibility"),
            Some(json!({
                "receipt_handle": got[0]["receipt_handle"],
                "visibility_timeout_seconds": 0
            })),
        )
        .await;
        assert_eq!(released.status, StatusCode::NO_CONTENT, "{}", released.body);
    }
    let total = |s: &[Value]| -> u64 {
        s.iter()
            .filter_map(|s| s["repeated_receives"].as_u64())
            .sum()
    };
    wait_until(&gws[1], &key, &id, "three repeated receives", |s| {
        total(s) >= 3
    })
    .await;
    // A few more intervals: each counted once, on every replica.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for gw in &gws {
        assert_eq!(total(&samples(gw, &key, &id).await), 3);
    }
    for gw in gws {
        gw.stop().await;
    }
}

/// A redis-server of this test's own (with a password), killed when dropped.
struct OwnRedis(std::process::Child);

impl OwnRedis {
    async fn start(port: u16, password: &str) -> Self {
        let redis = Self(
            std::process::Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args([
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--requirepass",
                    password,
                ])
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("redis-server runs (redis/start.sh installs it)"),
        );
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return redis;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server on {port} did not start");
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// While the store is away, reads answer basaltic's documented 503 (`unavailable`, with
/// `Retry-After`), sampling skips without the password in any log line, and both come back
/// with the store, without a restart.
#[tokio::test]
async fn reads_answer_503_while_the_store_is_away_and_recover_after() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let password = format!("metrics-pw-{:016x}", rand::random::<u64>());
    let redis = OwnRedis::start(port, &password).await;
    let admin = api_keys::generate_key();
    let gw = GatewayBuilder::new(Kind::LocalStack)
        .config(&config(&admin))
        .config(&format!(
            "[state.redis]\nurl = \"redis://127.0.0.1:{port}/0\"\nsecret = \"{password}\"\ntimeout_ms = 300\n"
        ))
        .start()
        .await;
    let key = admin.key;
    let id = create(&gw, &key).await;
    wait_until(&gw, &key, &id, "a sample", |s| !s.is_empty()).await;

    drop(redis);
    let path = format!("/v1/queues/{id}/metrics");
    let refused = call(&gw, &key, Method::GET, &path, None).await;
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        refused.body
    );
    assert_eq!(
        refused.body["error"]["code"], "unavailable",
        "{}",
        refused.body
    );
    assert!(refused.body["error"]["message"].is_string());
    assert!(refused.headers.contains_key("retry-after"));
    // Rounds meanwhile fail and are skipped; the gateway keeps serving.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let still = call(&gw, &key, Method::GET, &path, None).await;
    assert_eq!(
        still.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        still.body
    );

    let _redis = OwnRedis::start(port, &password).await;
    // Back, empty (no persistence here): the sampler takes the lease again and samples on.
    let mut back = Vec::new();
    for _ in 0..100 {
        let got = call(&gw, &key, Method::GET, &path, None).await;
        if got.status == StatusCode::OK {
            back = got.body["samples"].as_array().unwrap().clone();
            if !back.is_empty() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!back.is_empty(), "sampled again without a restart");
    let logs = captured_logs();
    assert!(
        logs.contains("basaltic metrics history unavailable"),
        "the skipped rounds are logged"
    );
    assert!(!logs.contains(&password), "no password in the logs");
    gw.stop().await;
}
