//! The `ezgh` CLI, run as its own binary against a running gateway: `ezgh queues
//! receive|ack|change-visibility` with human output, `--output json` and exit codes, and
//! acknowledging and extending with no key and no queue ids.

use super::support::*;
use crate::harness::{GatewayBuilder, Kind, ORG, PROJECT, QueueSpec};
use serde_json::{Value, json};

#[tokio::test]
async fn ezgh_receives_extends_and_acknowledges() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "first").await;
    gw.send("orders", "second").await;
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("EZGH_API_KEY", gw.key.as_str()),
        ("ORG_ID", ORG),
        ("PROJECT_ID", PROJECT),
        ("QUEUE_ID", "orders"),
        ("EZGH_ENDPOINT", gw.base.as_str()),
    ];
    let received = shell(
        dir.path(),
        "ezgh queues receive --max 1 --wait 1 --visibility-timeout 60",
        &env,
    )
    .await;
    assert_eq!(received.code, Some(0), "{}", received.stderr);
    let handle = handle_in(&received.stdout);
    let extended = shell(
        dir.path(),
        &format!("ezgh queues change-visibility '{handle}' --visibility-timeout 120"),
        &env,
    )
    .await;
    assert_eq!(extended.code, Some(0), "{}", extended.stderr);
    assert!(extended.stdout.starts_with("changed "));
    let acked = shell(dir.path(), &format!("ezgh queues ack '{handle}'"), &env).await;
    assert_eq!(acked.code, Some(0), "{}", acked.stderr);
    assert!(acked.stdout.starts_with("acknowledged "));
    let again = shell(
        dir.path(),
        &format!("ezgh queues ack '{handle}' --output json"),
        &env,
    )
    .await;
    assert_eq!(again.code, Some(1), "a stale handle fails");
    let again: Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(again["results"][0]["error"], "receipt_handle_stale");
    // --ack acknowledges what it printed: the queue is empty afterwards.
    let and_ack = shell(
        dir.path(),
        "ezgh queues receive --max 10 --wait 1 --ack",
        &env,
    )
    .await;
    assert_eq!(and_ack.code, Some(0), "{}", and_ack.stderr);
    assert!(and_ack.stdout.contains("body: second") && and_ack.stdout.contains("acknowledged "));
    let empty = shell(
        dir.path(),
        "ezgh queues receive --wait 0 --output json",
        &env,
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&empty.stdout).unwrap(),
        json!({ "messages": [] })
    );
    let missing = shell(
        dir.path(),
        "ezgh queues receive",
        &[("EZGH_API_KEY", gw.key.as_str())],
    )
    .await;
    assert_eq!(missing.code, Some(2));
    assert!(missing.stderr.contains("ORG_ID"), "{}", missing.stderr);
    let usage = shell(dir.path(), "ezgh queues receive --max 11", &env).await;
    assert_eq!(usage.code, Some(2));
    let refused = shell(
        dir.path(),
        "ezgh queues receive --wait 0",
        &[
            ("EZGH_API_KEY", "sqsgw_nobody_x"),
            ("ORG_ID", ORG),
            ("PROJECT_ID", PROJECT),
            ("QUEUE_ID", "orders"),
            ("EZGH_ENDPOINT", gw.base.as_str()),
        ],
    )
    .await;
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("unauthenticated"),
        "{}",
        refused.stderr
    );
}

#[tokio::test]
async fn ezgh_acknowledges_and_extends_with_no_key_and_no_queue_ids() {
    // The receipt routes take no credential ("the receipt handle is what allows it"): neither
    // does the CLI ask for one, nor for the organization, project or queue.
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "one").await;
    gw.send("orders", "two").await;
    let dir = tempfile::tempdir().unwrap();
    let receiver = [
        ("EZGH_API_KEY", gw.key.as_str()),
        ("ORG_ID", ORG),
        ("PROJECT_ID", PROJECT),
        ("QUEUE_ID", "orders"),
        ("EZGH_ENDPOINT", gw.base.as_str()),
    ];
    let received = shell(
        dir.path(),
        "ezgh queues receive --max 10 --wait 1 --visibility-timeout 60 --output json",
        &receiver,
    )
    .await;
    assert_eq!(received.code, Some(0), "{}", received.stderr);
    let received: Value = serde_json::from_str(&received.stdout).unwrap();
    let handles: Vec<&str> = received["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["receiptHandle"].as_str().unwrap())
        .collect();
    assert_eq!(handles.len(), 2);
    let only_endpoint = [("EZGH_ENDPOINT", gw.base.as_str())];
    let extended = shell(
        dir.path(),
        &format!(
            "ezgh queues change-visibility '{}' --visibility-timeout 120",
            handles[0]
        ),
        &only_endpoint,
    )
    .await;
    assert_eq!(extended.code, Some(0), "{}", extended.stderr);
    assert!(
        extended.stdout.starts_with("changed "),
        "{}",
        extended.stdout
    );
    let acked = shell(
        dir.path(),
        &format!("ezgh queues ack '{}' '{}'", handles[0], handles[1]),
        &only_endpoint,
    )
    .await;
    assert_eq!(acked.code, Some(0), "{}", acked.stderr);
    assert_eq!(acked.stdout.matches("acknowledged ").count(), 2);
    assert_eq!(gw.backend_depth("orders").await, 0);
    // The receive still needs them, and says so.
    let no_key = shell(dir.path(), "ezgh queues receive", &only_endpoint).await;
    assert_eq!(no_key.code, Some(2));
    assert!(no_key.stderr.contains("EZGH_API_KEY"), "{}", no_key.stderr);
}
