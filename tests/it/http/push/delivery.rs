//! Push deliveries over HTTP, on both backends: a receiver on loopback (allowed by the tests'
//! config only) gets each message once, signed as Standard Webhooks, and a 2xx acknowledges it; a
//! failure comes back after its backoff with the same `webhook-id`, `Retry-After` is honoured, 410
//! disables the subscription, an endpoint that never answers is cut at the timeout, the queue's
//! dead-letter rule counts push attempts, pull consumers share the queue, a rotation signs twice, a
//! producer's trace continues, the official library verifies a delivery, and a private address is
//! refused when not allowed.

use super::receiver::*;
use crate::harness::*;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// A gateway whose queue `orders` (and `orders-dlq`) is pushed to `url` by subscription `hook`,
/// with `settings` lines added to the subscription.
async fn gateway(kind: Kind, url: &str, settings: &str) -> TestGateway {
    GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders-dlq"))
        .queue(QueueSpec::standard("orders").dead_letter_to("orders-dlq", 3))
        .config(&format!(
            "[push]\nallow_private_networks = true\n\n[[push.subscriptions]]\nname = \"hook\"\n\
             queue = \"orders\"\nurl = \"{url}\"\nsecret = \"{}\"\n{settings}\n",
            secret(1)
        ))
        .start()
        .await
}

/// The subscription's status as operators see it.
fn snapshot(gw: &TestGateway) -> sqs_gateway::core::push::board::Snapshot {
    gw.gateway
        .push_board()
        .of_queue("orders")
        .into_iter()
        .next()
        .expect("the subscription is registered")
}

/// Waits until the queue holds nothing (visible, in flight or delayed).
async fn wait_until_empty(gw: &TestGateway, queue: &str) -> bool {
    for _ in 0..100 {
        if gw.backend_depth(queue).await == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

async fn each_message_is_posted_once_signed_and_acknowledged(kind: Kind) {
    let receiver = Receiver::start().await;
    let gw = gateway(kind, &receiver.url, "").await;
    let mut sent = BTreeSet::new();
    for n in 0..5 {
        sent.insert(gw.send("orders", &format!("{{\"n\": {n}}}")).await);
    }
    receiver.wait_for(5, Duration::from_secs(20)).await;
    assert!(
        wait_until_empty(&gw, "orders").await,
        "every message acknowledged"
    );
    let hits = receiver.hits();
    assert_eq!(hits.len(), 5, "each once: {hits:?}");
    let ids: BTreeSet<String> = hits.iter().map(|hit| hit.id.clone()).collect();
    assert_eq!(ids, sent, "webhook-id is the message id");
    let now = chrono::Utc::now().timestamp();
    for hit in &hits {
        assert!(signed_by(hit, &secret(1)), "{hit:?}");
        assert!(!signed_by(hit, &secret(2)), "not by another secret");
        let at: i64 = hit.timestamp.parse().unwrap();
        assert!((now - at).abs() < 60, "a current timestamp: {hit:?}");
        let wrapped: serde_json::Value = serde_json::from_str(&hit.body).unwrap();
        assert_eq!(wrapped["id"], hit.id.as_str());
        assert_eq!(wrapped["queue"], "orders");
        assert_eq!(wrapped["receive_count"], 1);
        assert!(wrapped["body"].as_str().unwrap().starts_with("{\"n\": "));
    }
    // The board and the meters count an attempt once it is settled, just after the ack.
    let mut status = snapshot(&gw);
    for _ in 0..100 {
        if status.outcomes.get("accepted") == Some(&5) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        status = snapshot(&gw);
    }
    assert_eq!(status.state, "active");
    assert_eq!(status.outcomes.get("accepted"), Some(&5));
    assert_eq!(status.log.len(), 5);
    assert!(
        !format!("{:?}", status.log).contains("\"n\""),
        "the log keeps no bodies"
    );
    let scrape = scrape(&gw).await;
    assert_eq!(
        sample(
            &scrape,
            "sqsgw_push_deliveries_total{queue=\"orders\",subscription=\"hook\",outcome=\"accepted\"}"
        ),
        Some(5.0),
        "{scrape}"
    );
}

async fn a_failure_comes_back_after_its_backoff_with_the_same_id(kind: Kind) {
    let receiver = Receiver::start().await;
    receiver.then(&[status(500)]);
    let gw = gateway(kind, &receiver.url, "").await;
    gw.send("orders", "retry me").await;
    let hits = receiver.wait_for(2, Duration::from_secs(20)).await;
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert_eq!(hits[0].id, hits[1].id, "one webhook-id across retries");
    let waited = hits[1].at - hits[0].at;
    assert!(
        waited >= Duration::from_millis(750),
        "after the backoff: {waited:?}"
    );
    let second: serde_json::Value = serde_json::from_str(&hits[1].body).unwrap();
    assert_eq!(second["receive_count"], 2, "each push attempt is a receive");
    assert!(wait_until_empty(&gw, "orders").await);
    let status = snapshot(&gw);
    assert_eq!(status.log[1].outcome, "refused");
    assert_eq!(status.log[1].status, Some(500));
    assert_eq!(status.log[0].outcome, "accepted");
}

async fn retry_after_is_honoured(kind: Kind) {
    let receiver = Receiver::start().await;
    receiver.then(&[Reply {
        retry_after: Some(3),
        ..status(503)
    }]);
    let gw = gateway(kind, &receiver.url, "").await;
    gw.send("orders", "later").await;
    let hits = receiver.wait_for(2, Duration::from_secs(20)).await;
    assert_eq!(hits.len(), 2, "{hits:?}");
    let waited = hits[1].at - hits[0].at;
    assert!(
        waited >= Duration::from_millis(2_900),
        "Retry-After: 3 honoured: {waited:?}"
    );
}

async fn gone_disables_the_subscription(kind: Kind) {
    let receiver = Receiver::start().await;
    receiver.always(status(410));
    let gw = gateway(kind, &receiver.url, "").await;
    let first = gw.send("orders", "first").await;
    receiver.wait_for(1, Duration::from_secs(20)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(snapshot(&gw).state, "disabled");
    gw.send("orders", "second").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(receiver.hits().len(), 1, "no more deliveries once disabled");
    // Both messages are the pull consumers' now: the first was released at once.
    let mut pulled = BTreeSet::new();
    for _ in 0..10 {
        for message in gw
            .receive_ok(
                "orders",
                serde_json::json!({ "maxMessages": 10, "waitSeconds": 1 }),
            )
            .await
        {
            pulled.insert(message["messageId"].as_str().unwrap().to_owned());
        }
        if pulled.len() == 2 {
            break;
        }
    }
    assert!(pulled.contains(&first), "{pulled:?}");
    assert_eq!(pulled.len(), 2);
    let scrape = scrape(&gw).await;
    assert_eq!(
        sample(
            &scrape,
            "sqsgw_push_disabled{queue=\"orders\",subscription=\"hook\"}"
        ),
        Some(1.0),
        "{scrape}"
    );
}

async fn an_endpoint_that_never_answers_is_cut_at_the_timeout(kind: Kind) {
    let receiver = Receiver::start().await;
    receiver.then(&[Reply {
        delay: Duration::from_secs(30),
        ..OK
    }]);
    let gw = gateway(kind, &receiver.url, "timeout_seconds = 1").await;
    gw.send("orders", "slow").await;
    let hits = receiver.wait_for(2, Duration::from_secs(20)).await;
    assert_eq!(hits.len(), 2, "released and posted again: {hits:?}");
    let waited = hits[1].at - hits[0].at;
    assert!(
        waited >= Duration::from_millis(1_700) && waited < Duration::from_secs(10),
        "cut at 1 s, then a backoff: {waited:?}"
    );
    assert!(wait_until_empty(&gw, "orders").await);
    // The delivered attempt is logged once its delete is settled, a moment after the queue empties.
    let mut log = snapshot(&gw).log;
    for _ in 0..50 {
        if log.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        log = snapshot(&gw).log;
    }
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[1].outcome, "timed_out");
}

async fn the_dead_letter_rule_counts_push_attempts(kind: Kind) {
    let receiver = Receiver::start().await;
    receiver.always(status(500));
    let gw = gateway(kind, &receiver.url, "").await;
    let id = gw.send("orders", "poison").await;
    // Three attempts (1 s and 2 s apart), then the next receive moves it.
    let mut moved = false;
    for _ in 0..150 {
        if gw.backend_depth("orders-dlq").await == 1 {
            moved = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(moved, "in the dead-letter queue: {:?}", receiver.hits());
    let attempts = receiver.hits().iter().filter(|hit| hit.id == id).count();
    assert_eq!(attempts, 3, "max_receive_count 3 counts push attempts");
}

async fn pull_consumers_share_the_queue_with_the_subscription(kind: Kind) {
    let receiver = Receiver::start().await;
    receiver.always(Reply {
        delay: Duration::from_millis(200),
        ..OK
    });
    let gw = gateway(kind, &receiver.url, "max_concurrency = 1").await;
    let mut sent = BTreeSet::new();
    for n in 0..20 {
        sent.insert(gw.send("orders", &format!("m{n}")).await);
    }
    let mut pulled = BTreeSet::new();
    for _ in 0..40 {
        let got = gw
            .receive_ok(
                "orders",
                serde_json::json!({ "maxMessages": 2, "waitSeconds": 1, "visibilityTimeoutSeconds": 60 }),
            )
            .await;
        for message in &got {
            pulled.insert(message["messageId"].as_str().unwrap().to_owned());
        }
        let handles: Vec<&str> = got.iter().map(handle_of).collect();
        if !handles.is_empty() {
            gw.ack(&handles).await;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
        if gw.backend_depth("orders").await == 0 {
            break;
        }
    }
    assert!(wait_until_empty(&gw, "orders").await);
    let pushed: BTreeSet<String> = receiver.hits().iter().map(|hit| hit.id.clone()).collect();
    assert!(!pulled.is_empty(), "the pull consumer got its share");
    assert!(!pushed.is_empty(), "the subscription got its share");
    assert!(
        pulled.is_disjoint(&pushed),
        "no message went to both: {:?}",
        pulled.intersection(&pushed).collect::<Vec<_>>()
    );
    let all: BTreeSet<String> = pulled.union(&pushed).cloned().collect();
    assert_eq!(all, sent);
}

crate::on_both_backends!(
    each_message_is_posted_once_signed_and_acknowledged,
    a_failure_comes_back_after_its_backoff_with_the_same_id,
    retry_after_is_honoured,
    gone_disables_the_subscription,
    an_endpoint_that_never_answers_is_cut_at_the_timeout,
    the_dead_letter_rule_counts_push_attempts,
    pull_consumers_share_the_queue_with_the_subscription,
);

/// A producer's trace continues at the push receiver: an X-Ray trace header (as the AWS SDKs' and
/// OpenTelemetry Java's instrumentations send it) becomes `traceparent`; W3C attributes (as
/// OpenTelemetry JS puts them) come as they were sent; a message without either carries none.
async fn a_delivery_carries_the_producer_s_trace_context(kind: Kind) {
    use aws_sdk_sqs::types::{MessageAttributeValue, MessageSystemAttributeValue};
    let receiver = Receiver::start().await;
    let gw = gateway(kind, &receiver.url, "").await;
    let client = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let url = format!("{}/000000000000/orders", gw.base);
    let xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    client
        .send_message()
        .queue_url(&url)
        .message_body("x-ray")
        .message_system_attributes(
            aws_sdk_sqs::types::MessageSystemAttributeNameForSends::AwsTraceHeader,
            MessageSystemAttributeValue::builder()
                .data_type("String")
                .string_value(xray)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let string = |value: &str| {
        MessageAttributeValue::builder()
            .data_type("String")
            .string_value(value)
            .build()
            .unwrap()
    };
    let w3c = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    client
        .send_message()
        .queue_url(&url)
        .message_body("w3c")
        .message_attributes("traceparent", string(w3c))
        .message_attributes("tracestate", string("congo=t61rcWkgMzE"))
        .send()
        .await
        .unwrap();
    client
        .send_message()
        .queue_url(&url)
        .message_body("untraced")
        .send()
        .await
        .unwrap();
    let hits = receiver.wait_for(3, Duration::from_secs(20)).await;
    let of = |body: &str| {
        hits.iter()
            .find(|hit| hit.body.contains(&format!("\"body\":\"{body}\"")))
            .unwrap_or_else(|| panic!("{body} posted: {hits:?}"))
            .clone()
    };
    let traced = of("x-ray");
    assert_eq!(
        traced.traceparent,
        "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
    );
    assert_eq!(traced.tracestate, "");
    let traced = of("w3c");
    assert_eq!(traced.traceparent, w3c);
    assert_eq!(traced.tracestate, "congo=t61rcWkgMzE");
    assert!(signed_by(&traced, &secret(1)), "the signature is unchanged");
    let untraced = of("untraced");
    assert_eq!(
        (untraced.traceparent.as_str(), untraced.tracestate.as_str()),
        ("", "")
    );
}

crate::on_kind!(
    trace_on_localstack,
    LocalStack,
    a_delivery_carries_the_producer_s_trace_context
);

crate::on_kind!(
    trace_on_embedded,
    Embedded,
    a_delivery_carries_the_producer_s_trace_context
);

/// During a rotation both secrets sign each delivery.
#[tokio::test]
async fn a_rotation_signs_with_both_secrets() {
    let receiver = Receiver::start().await;
    let gw = gateway(
        Kind::Embedded,
        &receiver.url,
        &format!("previous_secret = \"{}\"", secret(2)),
    )
    .await;
    gw.send("orders", "rotating").await;
    let hits = receiver.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(hits[0].signature.split(' ').count(), 2);
    assert!(signed_by(&hits[0], &secret(1)));
    assert!(signed_by(&hits[0], &secret(2)));
}

/// Without `allow_private_networks`, an endpoint on a loopback address is refused: by its
/// address in the URL, and by what its name resolves to; nothing reaches it.
#[tokio::test]
async fn a_private_address_is_refused_unless_allowed() {
    let receiver = Receiver::start().await;
    let port = receiver
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    for host in ["127.0.0.1", "localhost"] {
        let gw = GatewayBuilder::new(Kind::Embedded)
            .queue(QueueSpec::standard("orders"))
            .config(&format!(
                "[[push.subscriptions]]\nname = \"hook\"\nqueue = \"orders\"\n\
                 url = \"https://{host}:{port}/hook\"\nsecret = \"{}\"\n",
                secret(1)
            ))
            .start()
            .await;
        gw.send("orders", "not for you").await;
        let mut refused = false;
        for _ in 0..100 {
            if snapshot(&gw).outcomes.contains_key("forbidden") {
                refused = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(refused, "{host}: {:?}", snapshot(&gw));
        assert!(receiver.hits().is_empty(), "{host}: nothing sent");
    }
}

/// The delivery log and state are read through the basaltic API (`read_metrics`), with no body
/// or secret in them.
#[tokio::test]
async fn the_delivery_log_is_read_through_the_basaltic_api() {
    let receiver = Receiver::start().await;
    receiver.then(&[status(500)]);
    let reader = sqs_gateway::credentials::api_keys::generate_key();
    let sender = sqs_gateway::credentials::api_keys::generate_key();
    let gw = gateway(
        Kind::Embedded,
        &receiver.url,
        &format!(
            "\n[basaltic]\nall_queues = true\n\n[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\n\
             grants = {{ \"*\" = [\"read_metrics\"] }}\n\n[[basaltic.keys]]\nid = \"{}\"\n\
             hash = \"{}\"\ngrants = {{ \"*\" = [\"send\"] }}\n",
            reader.id, reader.hash, sender.id, sender.hash
        ),
    )
    .await;
    gw.send("orders", "secret body").await;
    receiver.wait_for(2, Duration::from_secs(20)).await;
    assert!(wait_until_empty(&gw, "orders").await);
    let id = sqs_gateway::core::alias::derived_basaltic_id("orders");
    let url = format!("{}/v1/queues/{id}/subscriptions", gw.base);
    let read = gw
        .http
        .get(&url)
        .bearer_auth(&reader.key)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    let text = read.text().await.unwrap();
    assert!(
        !text.contains("secret body") && !text.contains("whsec_"),
        "{text}"
    );
    let listed: serde_json::Value = serde_json::from_str(&text).unwrap();
    let hook = &listed["subscriptions"][0];
    assert_eq!(hook["name"], "hook");
    assert_eq!(
        hook["endpoint"],
        receiver.url.replace("/hook", "/…"),
        "a reader sees scheme, host and port"
    );
    assert_eq!(hook["state"], "active");
    assert_eq!(
        hook["outcomes"],
        serde_json::json!({ "accepted": 1, "refused": 1 })
    );
    assert_eq!(hook["log"][0]["outcome"], "accepted");
    assert_eq!(hook["log"][0]["attempt"], 2);
    assert_eq!(hook["log"][1]["status"], 500);
    assert!(hook["log"][1]["latency_ms"].is_u64());
    let refused = gw
        .http
        .get(&url)
        .bearer_auth(&sender.key)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403, "read_metrics is needed");
}

/// The official Standard Webhooks library (Python, from PyPI) verifies a delivery; it refuses it
/// with a wrong secret, and a delivery signed an hour ago (the gateway's clock set back) as too
/// old.
#[tokio::test]
async fn the_standard_webhooks_library_verifies_deliveries() {
    if !crate::needs!(Clients) {
        return;
    }
    let receiver = Receiver::start().await;
    let gw = gateway(Kind::Embedded, &receiver.url, "").await;
    gw.send("orders", "{\"verify\": \"me\"}").await;
    let fresh = receiver.wait_for(1, Duration::from_secs(20)).await[0].clone();
    gw.clock.advance(chrono::Duration::hours(-1));
    // Through the core: a signed request would be refused by the clock set back.
    let caller = sqs_gateway::core::access::Caller::new(
        sqs_gateway::core::access::Principal::Anonymous,
        Arc::new(sqs_gateway::core::access::Grants::everything()),
    );
    let old_message = sqs_gateway::core::model::OutgoingMessage {
        body: "{\"verify\": \"old\"}".into(),
        ..Default::default()
    };
    gw.gateway
        .send(&caller, "orders", &[old_message])
        .await
        .unwrap();
    let old = receiver.wait_for(2, Duration::from_secs(20)).await[1].clone();
    assert!(
        signed_by(&old, &secret(1)),
        "signed, with its own (old) timestamp"
    );
    let script = r#"
import json, sys
from standardwebhooks.webhooks import Webhook, WebhookVerificationError
given = json.load(sys.stdin)
def headers(hit):
    return {"webhook-id": hit["id"], "webhook-timestamp": hit["timestamp"], "webhook-signature": hit["signature"]}
def refused(secret, hit):
    try:
        Webhook(secret).verify(hit["body"], headers(hit))
        return False
    except WebhookVerificationError:
        return True
Webhook(given["secret"]).verify(given["fresh"]["body"], headers(given["fresh"]))
print("fresh: verified")
print("wrong secret: refused" if refused(given["other"], given["fresh"]) else "wrong secret: ACCEPTED")
print("old timestamp: refused" if refused(given["secret"], given["old"]) else "old timestamp: ACCEPTED")
"#;
    let hit = |hit: &Hit| serde_json::json!({ "id": hit.id, "timestamp": hit.timestamp, "signature": hit.signature, "body": hit.body });
    let input = serde_json::json!({
        "secret": secret(1),
        "other": secret(2),
        "fresh": hit(&fresh),
        "old": hit(&old),
    });
    let mut child = std::process::Command::new(clients_venv().join("bin/python"))
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            "fresh: verified",
            "wrong secret: refused",
            "old timestamp: refused"
        ]
    );
}

/// With `hold_on_202`, a 202 keeps the message in flight: the signed body carries its receipt
/// handle, and the receiver acknowledges it later through the ezgh route.
#[tokio::test]
async fn a_202_holds_the_lease_until_the_receiver_acknowledges() {
    let receiver = Receiver::start().await;
    receiver.always(status(202));
    let gw = gateway(Kind::Embedded, &receiver.url, "hold_on_202 = true").await;
    gw.send("orders", "slow work").await;
    let hit = receiver.wait_for(1, Duration::from_secs(20)).await[0].clone();
    assert!(signed_by(&hit, &secret(1)));
    let wrapped: serde_json::Value = serde_json::from_str(&hit.body).unwrap();
    let handle = wrapped["receipt_handle"]
        .as_str()
        .expect("the handle is posted");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(gw.backend_depth("orders").await, 1, "still in flight");
    assert_eq!(snapshot(&gw).log[0].outcome, "held");
    let acked = gw.ack(&[handle]).await;
    assert_eq!(results(&acked), vec![ok()], "{}", acked.body);
    assert!(wait_until_empty(&gw, "orders").await);
    assert_eq!(receiver.hits().len(), 1, "posted once");
}
