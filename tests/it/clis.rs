//! The documented command-line clients, run as their own binaries against a running gateway:
//! `basaltic` (the document's two lines verbatim, with its two request bodies as files) and
//! `ezgh queues receive|ack|change-visibility`; human output, `--output json`, exit codes.

use crate::basaltic::{Basaltic, REQUEST_1, REQUEST_2};
use crate::harness::{GatewayBuilder, Kind, ORG, PROJECT, QueueSpec};
use serde_json::{Value, json};

const BASALTIC: &str = env!("CARGO_BIN_EXE_basaltic");
const EZGH: &str = env!("CARGO_BIN_EXE_ezgh");

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs a shell line in `dir` with `env` (tokio's process: the gateway runs on this thread).
async fn shell(dir: &std::path::Path, line: &str, env: &[(&str, &str)]) -> Run {
    let mut command = tokio::process::Command::new("bash");
    command.arg("-c").arg(line).current_dir(dir).env_clear();
    // Both binaries, by the names the documents use.
    let dirs = [BASALTIC, EZGH].map(|bin| {
        std::path::Path::new(bin)
            .parent()
            .unwrap()
            .display()
            .to_string()
    });
    command.env(
        "PATH",
        format!(
            "{}:{}:{}",
            dirs[0],
            dirs[1],
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().await.unwrap();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn handle_in(text: &str) -> String {
    text.lines()
        .find_map(|line| line.trim().strip_prefix("receipt handle: "))
        .expect("a receipt handle is printed")
        .to_owned()
}

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
