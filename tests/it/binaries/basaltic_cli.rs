//! The `basaltic` CLI, run as its own binary against a running gateway: the document's two lines
//! verbatim (with its two request bodies as files), a key from the CLI that creates and uses
//! queues, an empty queue list, and the queue update, metrics and redrive commands.

use super::support::*;
use crate::harness::{GatewayBuilder, Kind};
use crate::http::basaltic::support::{Basaltic, REQUEST_1, REQUEST_2};
use serde_json::{Value, json};

#[tokio::test]
async fn the_basaltic_documents_lines_run_verbatim() {
    let api = Basaltic::start(Kind::Embedded).await;
    let queue_id = api.create(json!({ "name": "cli-orders" })).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("request-1.json"), REQUEST_1).unwrap();
    std::fs::write(dir.path().join("request-2.json"), REQUEST_2).unwrap();
    let home = dir.path().display().to_string();
    let env = [
        ("QUEUE_ID", queue_id.as_str()),
        ("BASALTIC_ENDPOINT", api.gw.base.as_str()),
        ("BASALTIC_API_KEY", api.admin.as_str()),
        ("HOME", home.as_str()),
    ];
    let sent = shell(
        dir.path(),
        r#"basaltic queue message send "$QUEUE_ID" --from-file request-1.json"#,
        &env,
    )
    .await;
    assert_eq!(sent.code, Some(0), "{}", sent.stderr);
    assert!(sent.stdout.starts_with("sent message "), "{}", sent.stdout);
    let received = shell(
        dir.path(),
        r#"basaltic queue message receive "$QUEUE_ID" --from-file request-2.json"#,
        &env,
    )
    .await;
    assert_eq!(received.code, Some(0), "{}", received.stderr);
    assert!(
        received.stdout.contains(r#"body: {"order_id":"A-1001"}"#),
        "{}",
        received.stdout
    );
    assert!(received.stdout.contains("order.paid"));
    let handle = handle_in(&received.stdout);
    let deleted = shell(
        dir.path(),
        &format!("basaltic queue message delete \"$QUEUE_ID\" '{handle}'"),
        &env,
    )
    .await;
    assert_eq!(
        (deleted.code, deleted.stdout.trim()),
        (Some(0), "message deleted"),
        "{}",
        deleted.stderr
    );
    // A refused request exits 1 with the API's code; a usage error exits 2.
    let again = shell(
        dir.path(),
        &format!("basaltic queue message delete \"$QUEUE_ID\" '{handle}'"),
        &env,
    )
    .await;
    assert_eq!(again.code, Some(1));
    assert!(
        again.stderr.contains("receipt_handle_stale"),
        "{}",
        again.stderr
    );
    let usage = shell(dir.path(), "basaltic queue message send", &env).await;
    assert_eq!(usage.code, Some(2));
    // JSON for scripts, and the settings from a config file instead of the environment.
    std::fs::create_dir_all(dir.path().join(".basaltic")).unwrap();
    std::fs::write(
        dir.path().join(".basaltic/config.toml"),
        format!(
            "endpoint = \"{}\"\napi_key = \"{}\"\naccount = \"acme\"\nregion = \"local\"\n",
            api.gw.base, api.admin
        ),
    )
    .unwrap();
    let only_home = [("HOME", home.as_str()), ("QUEUE_ID", queue_id.as_str())];
    let listed = shell(dir.path(), "basaltic queue list --output json", &only_home).await;
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert!(
        listed["queues"]
            .as_array()
            .unwrap()
            .iter()
            .any(|q| q["id"] == queue_id.as_str())
    );
    let no_key = shell(
        dir.path(),
        "basaltic queue list",
        &[("HOME", "/nonexistent")],
    )
    .await;
    assert_eq!(
        no_key.code,
        Some(2),
        "a command that can't be made is a usage error"
    );
    assert!(
        no_key.stderr.contains("BASALTIC_API_KEY"),
        "{}",
        no_key.stderr
    );
    std::fs::write(dir.path().join("list.json"), "[1, 2]").unwrap();
    let not_object = shell(
        dir.path(),
        r#"basaltic queue message receive "$QUEUE_ID" --from-file list.json --max 5"#,
        &env,
    )
    .await;
    assert_eq!(not_object.code, Some(2), "{}", not_object.stderr);
    assert!(
        not_object.stderr.contains("JSON object"),
        "{}",
        not_object.stderr
    );
    let both = shell(
        dir.path(),
        r#"basaltic queue message send "$QUEUE_ID" --from-file request-1.json --body x"#,
        &env,
    )
    .await;
    assert_eq!(both.code, Some(2), "--body and --from-file conflict");
    let help = shell(dir.path(), "basaltic --help", &[]).await;
    assert!(
        help.stdout.contains("--from-file request-1.json"),
        "examples in --help"
    );
}

#[tokio::test]
async fn a_basaltic_key_from_the_cli_creates_and_uses_queues() {
    const GATEWAY: &str = env!("CARGO_BIN_EXE_sqs-gateway");
    let made = tokio::process::Command::new(GATEWAY)
        .args([
            "new-basaltic-key",
            "--grant",
            "*=manage_queues,send,receive",
        ])
        .output()
        .await
        .unwrap();
    assert!(made.status.success());
    let printed = String::from_utf8(made.stdout).unwrap();
    let key = printed
        .lines()
        .find_map(|line| line.strip_prefix("#   "))
        .unwrap()
        .to_owned();
    let entry: Vec<&str> = printed
        .lines()
        .filter(|line| !line.starts_with('#'))
        .collect();
    let entry = entry.join("\n");
    assert!(!entry.contains(&key), "only the hash goes in the config");
    let gw = GatewayBuilder::new(Kind::Embedded)
        .config(&entry)
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("BASALTIC_ENDPOINT", gw.base.as_str()),
        ("BASALTIC_API_KEY", key.as_str()),
    ];
    let created = shell(
        dir.path(),
        "basaltic queue create --name from-cli --fifo --output json",
        &env,
    )
    .await;
    assert_eq!(created.code, Some(0), "{}", created.stderr);
    let created: Value = serde_json::from_str(&created.stdout).unwrap();
    assert_eq!(created["result"]["type"], "fifo");
    let id = created["result"]["id"].as_str().unwrap();
    let purge = shell(dir.path(), &format!("basaltic queue purge {id}"), &env).await;
    assert_eq!(purge.code, Some(1), "purge was not granted");
    assert!(
        purge.stderr.contains("permission_denied"),
        "{}",
        purge.stderr
    );
    let bad = tokio::process::Command::new(GATEWAY)
        .args(["new-basaltic-key", "--grant", "*=fly"])
        .output()
        .await
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[tokio::test]
async fn an_empty_basaltic_queue_list_says_there_are_none() {
    let api = Basaltic::start(Kind::Embedded).await;
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("BASALTIC_ENDPOINT", api.gw.base.as_str()),
        ("BASALTIC_API_KEY", api.admin.as_str()),
    ];
    let text = shell(dir.path(), "basaltic queue list", &env).await;
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    assert_eq!(text.stdout, "no queues\n");
    let json = shell(dir.path(), "basaltic queue list --output json", &env).await;
    assert_eq!(json.code, Some(0), "{}", json.stderr);
    let json: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(json["queues"], json!([]), "{json}");
}

/// The basaltic CLI's queue update, metrics and redrive commands, and an inspect that shows each
/// message's state.
#[tokio::test]
async fn the_basaltic_cli_updates_reads_metrics_and_redrives() {
    let api = Basaltic::start(Kind::Embedded).await;
    let dead = api.create(json!({ "name": "cli-dead" })).await;
    let work = api.create(json!({ "name": "cli-work" })).await;
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("BASALTIC_ENDPOINT", api.gw.base.as_str()),
        ("BASALTIC_API_KEY", api.admin.as_str()),
    ];
    let updated = shell(
        dir.path(),
        &format!(
            "basaltic queue update {work} --settings '{{\"dead_letter_queue\": {{\"queue_id\": \"{dead}\", \"max_receive_count\": 1}}}}'"
        ),
        &env,
    )
    .await;
    assert_eq!(updated.code, Some(0), "{}", updated.stderr);
    assert!(
        updated.stdout.contains(&dead) && updated.stdout.contains("max_receive_count"),
        "{}",
        updated.stdout
    );
    let not_json = shell(
        dir.path(),
        &format!("basaltic queue update {work} --settings nope"),
        &env,
    )
    .await;
    assert_eq!(not_json.code, Some(2), "{}", not_json.stderr);

    api.send(&work, r#"{"body": "one"}"#).await;
    assert_eq!(
        api.receive(&work, r#"{"visibility_timeout_seconds": 1}"#)
            .await
            .len(),
        1
    );
    let leased = shell(
        dir.path(),
        &format!("basaltic queue message inspect {work}"),
        &env,
    )
    .await;
    assert_eq!(leased.code, Some(0), "{}", leased.stderr);
    assert!(
        leased.stdout.contains("receive count 1  state in_flight"),
        "{}",
        leased.stdout
    );
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(api.receive(&work, "{}").await.is_empty(), "dead-lettered");
    let dead_lettered = shell(
        dir.path(),
        &format!("basaltic queue message inspect {dead}"),
        &env,
    )
    .await;
    assert!(
        dead_lettered.stdout.contains("state visible")
            && dead_lettered.stdout.contains("body: one"),
        "{}",
        dead_lettered.stdout
    );

    let started = shell(
        dir.path(),
        &format!("basaltic queue redrive start {dead} --max-per-second 10 --output json"),
        &env,
    )
    .await;
    assert_eq!(started.code, Some(0), "{}", started.stderr);
    let started: Value = serde_json::from_str(&started.stdout).unwrap();
    assert!(started["result"]["status"].is_string(), "{started}");
    let mut back = Vec::new();
    for _ in 0..50 {
        back = api.receive(&work, "{}").await;
        if !back.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(back[0]["body"], "one", "moved back");
    // The task ends once it has seen the queue empty.
    let mut listed = String::new();
    for _ in 0..50 {
        let run = shell(
            dir.path(),
            &format!("basaltic queue redrive list {dead}"),
            &env,
        )
        .await;
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        listed = run.stdout;
        if listed.contains("status completed") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(
        listed.contains("status completed") && listed.contains("moved 1"),
        "{listed}"
    );
    let cancel = shell(
        dir.path(),
        &format!("basaltic queue redrive cancel {dead}"),
        &env,
    )
    .await;
    assert_eq!(cancel.code, Some(1), "none runs: {}", cancel.stdout);
    assert!(cancel.stderr.contains("conflict"), "{}", cancel.stderr);

    let metrics = shell(
        dir.path(),
        &format!("basaltic queue metrics {work} --output json"),
        &env,
    )
    .await;
    assert_eq!(metrics.code, Some(0), "{}", metrics.stderr);
    let metrics: Value = serde_json::from_str(&metrics.stdout).unwrap();
    assert!(metrics["samples"].is_array(), "{metrics}");
    let text = shell(dir.path(), &format!("basaltic queue metrics {work}"), &env).await;
    assert!(
        text.stdout
            .starts_with(&format!("every {} s; ", metrics["interval_seconds"])),
        "{}",
        text.stdout
    );
    let since = shell(
        dir.path(),
        &format!("basaltic queue metrics {work} --since yesterday"),
        &env,
    )
    .await;
    assert_eq!(since.code, Some(1), "{}", since.stderr);
}
