//! In front of SQS, receives waiting on one queue share long polls (`backend.fan_in`): the SQS
//! receives and connections the gateway makes follow the messages it moves, not the consumers
//! that wait. Counted at a proxy between the gateway and LocalStack, not by the gateway's metrics.

use crate::counting_proxy::CountingProxy;
use crate::harness::*;
use futures_util::future::join_all;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn gateway(counter: &CountingProxy, queue: QueueSpec, fan_in: bool) -> TestGateway {
    GatewayBuilder::new(Kind::LocalStack)
        .queue(queue)
        .backend_endpoint(&counter.url)
        .sqs_fan_in(fan_in)
        .start()
        .await
}

/// `consumers` ezgh long polls of `wait` seconds on an empty queue, all at once; the receives and
/// connections SQS saw.
async fn idle_consumers(consumers: usize, wait: u32, fan_in: bool) -> Option<(usize, usize)> {
    if !crate::needs!(on Kind::LocalStack) {
        return None;
    }
    let counter = CountingProxy::start(&localstack_endpoint()).await.unwrap();
    let gw = gateway(&counter, QueueSpec::standard("idle"), fan_in).await;
    // The queue is resolved (and its attributes read) before the consumers come.
    gw.receive_ok("idle", json!({ "maxMessages": 1 })).await;
    let before = counter.seen().of("ReceiveMessage");
    let polls = (0..consumers)
        .map(|_| gw.receive("idle", json!({ "maxMessages": 1, "waitSeconds": wait })));
    for answer in join_all(polls).await {
        assert_eq!(answer.status, reqwest::StatusCode::OK, "{}", answer.body);
        assert_eq!(answer.body["messages"], json!([]));
    }
    let seen = (
        counter.seen().of("ReceiveMessage") - before,
        counter.seen().peers.len(),
    );
    gw.stop().await;
    Some(seen)
}

#[tokio::test]
async fn two_hundred_waiting_consumers_cost_one_long_poll_and_few_connections() {
    let Some((receives, connections)) = idle_consumers(200, 5, true).await else {
        return;
    };
    // One poll waits out the longest wait; a consumer joining late may see a second start.
    assert!(
        receives <= 3,
        "{receives} SQS receives for 200 waiting consumers"
    );
    assert!(connections <= 16, "{connections} connections to SQS");
}

#[tokio::test]
async fn without_fan_in_each_waiting_consumer_makes_its_own_long_poll() {
    let Some((receives, _)) = idle_consumers(20, 2, false).await else {
        return;
    };
    assert!(
        receives >= 20,
        "{receives} SQS receives for 20 waiting consumers"
    );
}

/// Sends `count` messages straight to the backend queue, in batches of ten.
async fn fill(gw: &TestGateway, queue: &str, count: usize, groups: usize) {
    let client = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let url = format!("{}/000000000000/{queue}", gw.base);
    for start in (0..count).step_by(10) {
        let entries = (start..(start + 10).min(count)).map(|n| {
            let entry = aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                .id(format!("m{n}"))
                .message_body(format!("{n}"));
            let entry = if groups > 0 {
                entry
                    .message_group_id(format!("g{}", n % groups))
                    .message_deduplication_id(format!("d{n}"))
            } else {
                entry
            };
            entry.build().unwrap()
        });
        let answer = client
            .send_message_batch()
            .queue_url(&url)
            .set_entries(Some(entries.collect()))
            .send()
            .await
            .unwrap();
        assert!(answer.failed().is_empty(), "{:?}", answer.failed());
    }
}

/// A consumer that receives one message at a time and acknowledges each, until an empty answer;
/// the bodies it got, in order, each with its receive count.
async fn one_at_a_time(gw: &TestGateway, queue: &str) -> Vec<(String, u64)> {
    let mut got = Vec::new();
    loop {
        let messages = gw
            .receive_ok(queue, json!({ "maxMessages": 1, "waitSeconds": 2 }))
            .await;
        let Some(message) = messages.first() else {
            return got;
        };
        let handle = message["receiptHandle"].as_str().unwrap();
        let ack = gw.ack(&[handle]).await;
        assert_eq!(ack.status, reqwest::StatusCode::OK, "{}", ack.body);
        assert_eq!(ack.body["results"][0]["ok"], true, "{}", ack.body);
        got.push((
            message["body"].as_str().unwrap().to_owned(),
            message["receiveCount"].as_u64().unwrap(),
        ));
    }
}

#[tokio::test]
async fn single_message_consumers_with_single_acks_cost_under_half_a_call_a_message() {
    if !crate::needs!(on Kind::LocalStack) {
        return;
    }
    const MESSAGES: usize = 200;
    let counter = CountingProxy::start(&localstack_endpoint()).await.unwrap();
    let gw = gateway(&counter, QueueSpec::standard("drain"), true).await;
    fill(&gw, "drain", MESSAGES, 0).await;
    let drain_calls = || {
        [
            "ReceiveMessage",
            "DeleteMessage",
            "DeleteMessageBatch",
            "ChangeMessageVisibility",
            "ChangeMessageVisibilityBatch",
        ]
        .iter()
        .map(|action| counter.seen().of(action))
        .sum::<usize>()
    };
    let before = drain_calls();
    let consumers = (0..16).map(|_| one_at_a_time(&gw, "drain"));
    let mut bodies: Vec<String> = join_all(consumers)
        .await
        .into_iter()
        .flatten()
        .map(|(body, count)| {
            assert_eq!(count, 1, "no message was received twice");
            body
        })
        .collect();
    let calls = drain_calls() - before;
    bodies.sort_by_key(|body| body.parse::<usize>().unwrap());
    let expected: Vec<String> = (0..MESSAGES).map(|n| n.to_string()).collect();
    assert_eq!(bodies, expected, "each message delivered once");
    assert_eq!(gw.backend_depth("drain").await, 0);
    gw.stop().await;
    assert!(
        calls * 2 <= MESSAGES,
        "{calls} SQS calls to move {MESSAGES} messages one at a time"
    );
}

#[tokio::test]
async fn a_consumer_that_leaves_mid_wait_loses_no_message_and_spends_no_attempt() {
    if !crate::needs!(on Kind::LocalStack) {
        return;
    }
    let counter = CountingProxy::start(&localstack_endpoint()).await.unwrap();
    let gw = gateway(&counter, QueueSpec::standard("left"), true).await;
    gw.receive_ok("left", json!({ "maxMessages": 1 })).await;
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(1000))
        .build()
        .unwrap();
    let gone = impatient
        .post(gw.receive_url("left"))
        .bearer_auth(&gw.key)
        .json(&json!({ "maxMessages": 1, "waitSeconds": 10, "visibilityTimeoutSeconds": 60 }))
        .send()
        .await;
    assert!(gone.is_err(), "the client gave up first");
    // The shared poll asked for the consumer that left is still waiting at SQS: it takes this.
    gw.send("left", "kept").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let messages = gw
        .receive_ok("left", json!({ "maxMessages": 1, "waitSeconds": 5 }))
        .await;
    assert_eq!(messages.len(), 1, "the message is not lost");
    assert_eq!(messages[0]["body"], "kept");
    assert_eq!(
        messages[0]["receiveCount"], 1,
        "the delivery nobody got spent no attempt"
    );
    gw.stop().await;
}

#[tokio::test]
async fn fifo_groups_keep_their_order_across_many_consumers() {
    if !crate::needs!(on Kind::LocalStack) {
        return;
    }
    const MESSAGES: usize = 60;
    const GROUPS: usize = 3;
    let counter = CountingProxy::start(&localstack_endpoint()).await.unwrap();
    let gw = gateway(&counter, QueueSpec::fifo("ordered.fifo"), true).await;
    fill(&gw, "ordered.fifo", MESSAGES, GROUPS).await;
    // Every consumer logs each message as it receives it and acknowledges it after a pause, so
    // a group handed to two consumers at once would show out of order in the log.
    let log: Arc<Mutex<Vec<(String, usize)>>> = Arc::default();
    let consumers = (0..8).map(|_| {
        let log = Arc::clone(&log);
        let gw = &gw;
        async move {
            loop {
                let messages = gw
                    .receive_ok(
                        "ordered.fifo",
                        json!({ "maxMessages": 3, "waitSeconds": 2, "visibilityTimeoutSeconds": 60 }),
                    )
                    .await;
                if messages.is_empty() {
                    return;
                }
                for message in &messages {
                    let n: usize = message["body"].as_str().unwrap().parse().unwrap();
                    let group = message["groupId"].as_str().unwrap().to_owned();
                    log.lock().unwrap().push((group, n));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                let handles: Vec<&str> = messages
                    .iter()
                    .map(|message: &Value| message["receiptHandle"].as_str().unwrap())
                    .collect();
                let ack = gw.ack(&handles).await;
                assert_eq!(ack.status, reqwest::StatusCode::OK, "{}", ack.body);
            }
        }
    });
    join_all(consumers).await;
    let mut by_group: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (group, n) in log.lock().unwrap().iter() {
        by_group.entry(group.clone()).or_default().push(*n);
    }
    assert_eq!(by_group.len(), GROUPS);
    for (group, received) in by_group {
        let sent: Vec<usize> = (0..MESSAGES)
            .filter(|n| format!("g{}", n % GROUPS) == group)
            .collect();
        assert_eq!(received, sent, "group {group} in order, each once");
    }
    gw.stop().await;
}

#[tokio::test]
async fn connections_to_sqs_stay_within_the_bound_and_queues_take_turns_at_long_polls() {
    if !crate::needs!(on Kind::LocalStack) {
        return;
    }
    const QUEUES: usize = 6;
    let counter = CountingProxy::start(&localstack_endpoint()).await.unwrap();
    let names: Vec<String> = (0..QUEUES).map(|n| format!("turn{n}")).collect();
    let mut builder = GatewayBuilder::new(Kind::LocalStack)
        .backend_endpoint(&counter.url)
        .sqs_connections(4);
    for name in &names {
        builder = builder.queue(QueueSpec::standard(name));
    }
    let gw = builder.start().await;
    // More queues with a waiting consumer than the two long polls four connections carry.
    let consumers = names
        .iter()
        .map(|name| gw.receive(name, json!({ "maxMessages": 1, "waitSeconds": 15 })));
    let producer = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        for name in &names {
            gw.send(name, name).await;
        }
    };
    let (answers, ()) = tokio::join!(join_all(consumers), producer);
    for (name, answer) in names.iter().zip(answers) {
        assert_eq!(answer.status, reqwest::StatusCode::OK, "{}", answer.body);
        assert_eq!(
            answer.body["messages"][0]["body"],
            name.as_str(),
            "{}",
            answer.body
        );
    }
    assert!(
        counter.seen().peers.len() <= 4,
        "{} connections to SQS",
        counter.seen().peers.len()
    );
    gw.stop().await;
}

#[tokio::test]
async fn sqs_throttling_answers_each_waiting_consumer_503_and_loses_nothing() {
    if !crate::needs!(on Kind::LocalStack) {
        return;
    }
    let counter = CountingProxy::start(&localstack_endpoint()).await.unwrap();
    let gw = gateway(&counter, QueueSpec::standard("throttled"), true).await;
    gw.send("throttled", "waits it out").await;
    counter.refuse(Some("ReceiveMessage"));
    let polls =
        (0..5).map(|_| gw.receive("throttled", json!({ "maxMessages": 1, "waitSeconds": 5 })));
    for answer in join_all(polls).await {
        assert_eq!(
            answer.status,
            reqwest::StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            answer.body
        );
        assert!(answer.headers.contains_key("retry-after"));
        let text = answer.body.to_string();
        assert!(
            !text.contains("Throttling") && !text.contains("Rate exceeded"),
            "{text}"
        );
    }
    counter.refuse(None);
    let messages = gw
        .receive_ok("throttled", json!({ "maxMessages": 1, "waitSeconds": 5 }))
        .await;
    assert_eq!(messages.len(), 1, "the message is still there");
    assert_eq!(messages[0]["body"], "waits it out");
    gw.stop().await;
}
