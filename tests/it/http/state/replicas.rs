//! Replicas sharing one state store (Redis, at `SQSGW_TEST_REDIS_URL`) in front of LocalStack: a
//! client whose calls land on any replica gets the answers one process gives, an attempt retried on
//! another replica gets the same messages, limits hold across replicas, kept answers are sealed in
//! the store, and a replica killed under load loses no send and resurrects no acknowledgement.

use super::support::*;
use crate::harness::unique;
use crate::harness::{
    Answer, GatewayBuilder, Kind, QueueSpec, TestGateway, handle_of, invalid, ok, redis_url,
    results, stale,
};
use crate::http::sombus::support::{receive, refused, token};
use crate::http::state::own_redis::OwnRedis;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Three gateways over the same queues, receipt key and state.
async fn three_replicas(builder: impl Fn() -> GatewayBuilder) -> Vec<TestGateway> {
    let first = builder().start().await;
    let second = builder().sharing_state_with(&first).start().await;
    let third = builder().sharing_state_with(&first).start().await;
    vec![first, second, third]
}

/// One gateway, or the replica a load balancer would pick this time.
trait Pick {
    fn any(&self) -> &TestGateway;
}

impl Pick for Vec<TestGateway> {
    fn any(&self) -> &TestGateway {
        &self[rand::random_range(0..self.len())]
    }
}

/// The handle story every consumer meets, told to `gateways` (one gateway: the single-process
/// answers; several: each call to any of them): what each call answered, in order.
async fn handle_story(gateways: &Vec<TestGateway>) -> Vec<Value> {
    let mut told = Vec::new();
    gateways.any().send("orders", "story").await;
    let first = gateways
        .any()
        .receive_ok("orders", json!({ "waitSeconds": 5 }))
        .await;
    let earlier = handle_of(&first[0]).to_owned();
    // Released at once: delivered again, to whichever replica asks.
    told.extend(results(&gateways.any().visibility(&[(&earlier, 0)]).await));
    let second = gateways
        .any()
        .receive_ok("orders", json!({ "waitSeconds": 5 }))
        .await;
    let later = handle_of(&second[0]).to_owned();
    told.push(json!(second[0]["receiveCount"]));
    // The earlier delivery's handle changes nothing anywhere.
    told.extend(results(&gateways.any().ack(&[&earlier]).await));
    told.extend(results(&gateways.any().visibility(&[(&earlier, 30)]).await));
    // The later one acts once.
    told.extend(results(&gateways.any().visibility(&[(&later, 30)]).await));
    told.extend(results(&gateways.any().ack(&[&later]).await));
    told.extend(results(&gateways.any().ack(&[&later]).await));
    told.extend(results(&gateways.any().visibility(&[(&later, 30)]).await));
    // A forged handle is invalid on every replica.
    let mut raw = URL_SAFE_NO_PAD.decode(&later).unwrap();
    let middle = raw.len() / 2;
    raw[middle] ^= 0x40;
    let forged = URL_SAFE_NO_PAD.encode(raw);
    told.extend(results(&gateways.any().ack(&[&forged]).await));
    told
}

async fn a_consumer_on_random_replicas_gets_the_single_process_answers(kind: Kind) {
    let builder = || GatewayBuilder::new(kind).queue(QueueSpec::standard("orders"));
    let single = vec![builder().start().await];
    let expected = handle_story(&single).await;
    assert_eq!(
        expected,
        vec![
            ok(),
            json!(2),
            stale(),
            stale(),
            ok(),
            ok(),
            stale(),
            stale(),
            invalid()
        ]
    );
    let replicas = three_replicas(builder).await;
    for round in 0..3 {
        assert_eq!(handle_story(&replicas).await, expected, "round {round}");
    }
    assert_eq!(replicas[0].backend_depth("orders").await, 0);
    for gateway in single.into_iter().chain(replicas) {
        gateway.stop().await;
    }
}

async fn a_retried_attempt_on_another_replica_gets_the_same_messages_and_handles(kind: Kind) {
    let replicas =
        three_replicas(|| GatewayBuilder::new(kind).queue(QueueSpec::standard("orders"))).await;
    for body in ["one", "two", "three"] {
        replicas[0].send("orders", body).await;
    }
    let answered = attempt_receive(&replicas[0], "attempt-1").await;
    let pairs = |messages: &[aws_sdk_sqs::types::Message]| {
        let mut pairs: Vec<(String, String)> = messages
            .iter()
            .map(|message| {
                (
                    message.message_id().unwrap().to_owned(),
                    message.receipt_handle().unwrap().to_owned(),
                )
            })
            .collect();
        pairs.sort();
        pairs
    };
    let expected = pairs(answered.messages());
    assert!(!expected.is_empty());
    for replica in &replicas[1..] {
        let retried = attempt_receive(replica, "attempt-1").await;
        assert_eq!(pairs(retried.messages()), expected, "the same answer");
    }
    // Those handles act on any replica, once.
    let handle = expected[0].1.clone();
    let (client, url) = replicas[2].sqs_queue("orders").await;
    client
        .delete_message()
        .queue_url(&url)
        .receipt_handle(&handle)
        .send()
        .await
        .unwrap();
    let again = replicas[1].ack(&[&handle]).await;
    assert_eq!(results(&again), vec![stale()]);
    for gateway in replicas {
        gateway.stop().await;
    }
}

/// A receive with an attempt id, on the SQS endpoint of `gateway`.
async fn attempt_receive(
    gateway: &TestGateway,
    attempt: &str,
) -> aws_sdk_sqs::operation::receive_message::ReceiveMessageOutput {
    let (client, url) = gateway.sqs_queue("orders").await;
    client
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .visibility_timeout(60)
        .receive_request_attempt_id(attempt)
        .send()
        .await
        .unwrap()
}

async fn a_connections_burst_and_rate_hold_across_replicas(kind: Kind) {
    let (bus, replicas) = sombus_replicas(
        kind,
        "[sombus.tiers.standard]\nrequests_per_second = 20\nburst = 40\nrequests_per_day = 1000000\n",
    )
    .await;
    let created = bus.create(json!({})).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let token = token(&bus.gw, &c, &created.secret).await;
    let all = gateways(&bus, &replicas);
    let started = tokio::time::Instant::now();
    let mut answers: Vec<Answer> = Vec::new();
    for call in 0..150 {
        answers.push(receive(all[call % all.len()], &token, &t, &c, "wait=0").await);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let admitted = answers
        .iter()
        .filter(|answer| answer.status == StatusCode::OK)
        .count();
    for answer in &answers {
        if answer.status != StatusCode::OK {
            assert_eq!(
                refused(answer),
                (StatusCode::TOO_MANY_REQUESTS, "rate.limited".into())
            );
        }
    }
    // One allowance for the connection, wherever its calls land: the burst, plus what refilled
    // while they ran (each replica with its own allowance would admit three bursts).
    let allowed = 40.0 + 20.0 * elapsed;
    assert!(admitted >= 40, "{admitted} admitted: the burst is 40");
    assert!(
        (admitted as f64) <= allowed * 1.05,
        "{admitted} admitted in {elapsed:.2} s, the allowance is {allowed:.1}"
    );
    for gateway in replicas {
        gateway.stop().await;
    }
    bus.gw.stop().await;
}

async fn a_connections_daily_quota_holds_across_replicas(kind: Kind) {
    let (bus, replicas) = sombus_replicas(
        kind,
        "[sombus.tiers.standard]\nrequests_per_second = 1000\nburst = 1000\nrequests_per_day = 30\n",
    )
    .await;
    let created = bus.create(json!({})).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let token = token(&bus.gw, &c, &created.secret).await;
    let all = gateways(&bus, &replicas);
    let mut statuses = Vec::new();
    for call in 0..45 {
        let answer = receive(all[call % all.len()], &token, &t, &c, "wait=0").await;
        statuses.push(answer.status);
        if answer.status != StatusCode::OK {
            assert_eq!(
                refused(&answer),
                (StatusCode::TOO_MANY_REQUESTS, "quota.exceeded".into())
            );
        }
    }
    let admitted = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    assert_eq!(admitted, 30, "one count for the day across the replicas");
    for gateway in replicas {
        gateway.stop().await;
    }
    bus.gw.stop().await;
}

/// Three gateway processes over LocalStack sharing one Redis; producers and consumers pick a
/// replica at random for every call, and one replica is killed (SIGKILL) under the load: no
/// answered send is lost and no message whose ack answered ok comes back.
#[tokio::test]
async fn sigkill_of_one_replica_under_load_loses_no_send_and_resurrects_no_ack() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    let sqs = crate::harness::sqs();
    let name = unique("it-kill-");
    let backend_url = sqs
        .create_queue()
        .queue_name(&name)
        .attributes(
            aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout,
            "5",
        )
        .send()
        .await
        .expect("LocalStack answers")
        .queue_url
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key = sqs_gateway::credentials::api_keys::generate_key();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[backend]\nkind = \"sqs\"\nendpoint_url = \"{}\"\nregion = \"us-east-1\"\n\n[queues.crash]\nsqs_queue = \"{name}\"\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n\n[ezgh.organizations.acme.projects.shop]\nqueues = {{ crash = \"crash\" }}\n\n[[api_keys]]\nid = \"{}\"\norganization = \"acme\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"queues.messages.receive\"] }}\n\n[[sqs_api.credentials]]\naccess_key_id = \"test\"\nsecret = \"crash-secret-of-the-test\"\n\n[sombus]\ncredentials_dir = \"{}\"\n\n[state.redis]\nurl = \"{}\"\nprefix = \"sqsgw-test-{:08x}:\"\n",
            crate::harness::localstack_endpoint(),
            sqs_gateway::core::handle::Keyring::generate_key(),
            key.id,
            key.hash,
            dir.path().join("sombus").display(),
            redis_url(),
            rand::random::<u32>(),
        ),
    )
    .unwrap();
    let mut processes = Vec::new();
    let mut bases = Vec::new();
    for _ in 0..3 {
        let port = OwnRedis::free_port();
        processes.push(
            tokio::process::Command::new(env!("CARGO_BIN_EXE_sqs-gateway"))
                .args(["serve", "--config"])
                .arg(&config)
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .env("AWS_ACCESS_KEY_ID", "test")
                .env("AWS_SECRET_ACCESS_KEY", "test")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .unwrap(),
        );
        bases.push(format!("http://127.0.0.1:{port}"));
    }
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    for base in &bases {
        for _ in 0..400 {
            if let Ok(answer) = http.get(format!("{base}/readyz")).send().await
                && answer.status().is_success()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let clients: Vec<aws_sdk_sqs::Client> = bases
        .iter()
        .map(|base| {
            aws_sdk_sqs::Client::from_conf(
                aws_sdk_sqs::config::Builder::from(&crate::harness::sdk_config(base))
                    .credentials_provider(aws_sdk_sqs::config::Credentials::new(
                        "test",
                        "crash-secret-of-the-test",
                        None,
                        None,
                        "test",
                    ))
                    .build(),
            )
        })
        .collect();
    // Which replicas are up (the killed one drops out).
    let alive = Arc::new(Mutex::new(vec![0usize, 1, 2]));
    let pick = {
        let alive = alive.clone();
        move || {
            let alive = alive.lock().unwrap();
            alive[rand::random_range(0..alive.len())]
        }
    };
    let sent = Arc::new(Mutex::new(BTreeSet::new()));
    let asked = Arc::new(Mutex::new(BTreeSet::new()));
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let stop = tokio_util::sync::CancellationToken::new();
    let mut load = Vec::new();
    for producer in 0..2 {
        let (clients, bases, sent, stop, pick) = (
            clients.clone(),
            bases.clone(),
            sent.clone(),
            stop.clone(),
            pick.clone(),
        );
        load.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.is_cancelled() {
                let replica = pick();
                let entries = (0..10)
                    .map(|i| {
                        aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                            .id(format!("e{i}"))
                            .message_body(format!("{producer}-{n}-{i}"))
                            .build()
                            .unwrap()
                    })
                    .collect();
                n += 1;
                if let Ok(answer) = clients[replica]
                    .send_message_batch()
                    .queue_url(format!("{}/000000000000/crash", bases[replica]))
                    .set_entries(Some(entries))
                    .send()
                    .await
                {
                    let mut sent = sent.lock().unwrap();
                    sent.extend(answer.successful.into_iter().map(|entry| entry.message_id));
                }
            }
        }));
    }
    for _ in 0..2 {
        let (http, bases, asked, acked, stop, pick) = (
            http.clone(),
            bases.clone(),
            asked.clone(),
            acked.clone(),
            stop.clone(),
            pick.clone(),
        );
        let key = key.key.clone();
        load.push(tokio::spawn(async move {
            while !stop.is_cancelled() {
                let Ok(answer) = http
                    .post(format!(
                        "{}/v1/organizations/acme/projects/shop/queues/crash/messages/receive",
                        bases[pick()]
                    ))
                    .bearer_auth(&key)
                    .json(&json!({ "maxMessages": 10, "waitSeconds": 1 }))
                    .send()
                    .await
                else {
                    continue;
                };
                let Ok(body) = answer.json::<Value>().await else {
                    continue;
                };
                let messages = body["messages"].as_array().cloned().unwrap_or_default();
                // Every other message is acknowledged, on another replica picked at random.
                let chosen: Vec<&Value> = messages.iter().step_by(2).collect();
                if chosen.is_empty() {
                    continue;
                }
                let ids: Vec<String> = chosen
                    .iter()
                    .map(|message| message["messageId"].as_str().unwrap().to_owned())
                    .collect();
                asked.lock().unwrap().extend(ids.iter().cloned());
                let handles: Vec<&str> = chosen.iter().map(|message| handle_of(message)).collect();
                let Ok(answer) = http
                    .post(format!("{}/v1/receipts/ack", bases[pick()]))
                    .json(&json!({ "receiptHandles": handles }))
                    .send()
                    .await
                else {
                    continue;
                };
                let Ok(body) = answer.json::<Value>().await else {
                    continue;
                };
                if let Some(results) = body["results"].as_array() {
                    let mut acked = acked.lock().unwrap();
                    for (id, result) in ids.iter().zip(results) {
                        if *result == ok() {
                            acked.insert(id.clone());
                        }
                    }
                }
            }
        }));
    }
    for _ in 0..400 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if sent.lock().unwrap().len() >= 500 && acked.lock().unwrap().len() >= 100 {
            break;
        }
    }
    alive.lock().unwrap().retain(|replica| *replica != 0);
    processes[0].start_kill().unwrap();
    processes[0].wait().await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.cancel();
    for task in load {
        let _ = task.await;
    }
    let (sent, asked, acked) = (
        sent.lock().unwrap().clone(),
        asked.lock().unwrap().clone(),
        acked.lock().unwrap().clone(),
    );
    assert!(
        sent.len() >= 500 && acked.len() >= 100,
        "{} sent, {} acknowledged",
        sent.len(),
        acked.len()
    );
    crate::harness::assert_no_send_lost_and_no_ack_back(&sqs, &backend_url, &sent, &asked, &acked)
        .await;
    for process in &mut processes {
        let _ = process.start_kill();
        let _ = process.wait().await;
    }
    let _ = sqs.delete_queue().queue_url(&backend_url).send().await;
}

/// What the store keeps of an attempt's answer is sealed: no body or handle to read there, and
/// an answer altered (or planted) in the store is not replayed: the retry receives anew.
#[tokio::test]
async fn kept_answers_in_the_store_are_sealed_against_readers_and_forgers() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    let gw = GatewayBuilder::new(Kind::Redis)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let body = unique("secret-body-");
    gw.send("orders", &body).await;
    let first = attempt_receive(&gw, "attempt-1").await;
    assert_eq!(first.messages().len(), 1);
    let handle = first.messages()[0].receipt_handle().unwrap().to_owned();
    let prefix = gw.state_prefix.clone().unwrap();
    let mut redis = redis::Client::open(redis_url())
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}answer:*"))
        .query(&mut redis)
        .unwrap();
    assert!(!keys.is_empty(), "the answer is kept in Redis");
    for key in &keys {
        let value: Vec<u8> = redis::cmd("GET").arg(key).query(&mut redis).unwrap();
        let text = String::from_utf8_lossy(&value);
        assert!(!text.contains(&body), "a body in the store");
        assert!(!text.contains(&handle[..40]), "a handle in the store");
    }
    // The same answer again, as long as the store holds it unaltered.
    let again = attempt_receive(&gw, "attempt-1").await;
    assert_eq!(again.messages()[0].receipt_handle(), Some(handle.as_str()));
    // Altered in the store: not an answer any more.
    for key in &keys {
        let value: Vec<u8> = redis::cmd("GET").arg(key).query(&mut redis).unwrap();
        let colon = value.iter().position(|byte| *byte == b':').unwrap();
        let mut altered = value.clone();
        let last = altered.len() - 1;
        altered[last] ^= 1;
        assert!(last > colon);
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg(altered)
            .query(&mut redis)
            .unwrap();
    }
    let retried = attempt_receive(&gw, "attempt-1").await;
    assert!(
        retried.messages().is_empty(),
        "the message is in flight under the first answer; a forged answer replays nothing"
    );
    gw.stop().await;
}

crate::on_shared_stores!(
    a_consumer_on_random_replicas_gets_the_single_process_answers,
    a_retried_attempt_on_another_replica_gets_the_same_messages_and_handles,
    a_connections_burst_and_rate_hold_across_replicas,
    a_connections_daily_quota_holds_across_replicas,
);
