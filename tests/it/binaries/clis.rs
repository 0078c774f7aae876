//! The documented command-line clients, run as their own binaries against a running gateway:
//! `basaltic` (the document's two lines verbatim, with its two request bodies as files) and
//! `ezgh queues receive|ack|change-visibility`; human output, `--output json`, exit codes.

use crate::harness::{GatewayBuilder, Kind, ORG, PROJECT, QueueSpec};
use crate::http::basaltic::{Basaltic, REQUEST_1, REQUEST_2};
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

const GATEWAY_BIN: &str = env!("CARGO_BIN_EXE_sqs-gateway");

/// Writes `text` to `path` with `mode`.
fn write_with_mode(path: &std::path::Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
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

#[tokio::test]
async fn the_three_binaries_print_shell_completions() {
    let dir = tempfile::tempdir().unwrap();
    for (line, words) in [
        (
            "ezgh completions bash",
            &["queues", "change-visibility"][..],
        ),
        ("basaltic completions bash", &["message", "inspect"][..]),
        (
            &*format!("'{GATEWAY_BIN}' completions bash"),
            &["serve", "sombus", "rotate-secret"][..],
        ),
    ] {
        let run = shell(dir.path(), line, &[]).await;
        assert_eq!(run.code, Some(0), "{line}: {}", run.stderr);
        assert!(run.stdout.contains("complete "), "{line}: a bash script");
        for word in words {
            assert!(run.stdout.contains(word), "{line}: names {word}");
        }
    }
    for shell_name in ["zsh", "fish"] {
        let run = shell(dir.path(), &format!("ezgh completions {shell_name}"), &[]).await;
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert!(run.stdout.contains("change-visibility"), "{shell_name}");
    }
    let bad = shell(dir.path(), "basaltic completions tcsh", &[]).await;
    assert_eq!(bad.code, Some(2));
}

#[tokio::test]
async fn cli_keys_come_from_the_environment_or_a_file_and_flags_warn() {
    let api = Basaltic::start(Kind::Embedded).await;
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().display().to_string();
    let endpoint = [
        ("BASALTIC_ENDPOINT", api.gw.base.as_str()),
        ("HOME", home.as_str()),
    ];
    // The flag still works, and warns that every local user can read it.
    let flagged = shell(
        dir.path(),
        &format!("basaltic queue list --api-key '{}'", api.admin),
        &endpoint,
    )
    .await;
    assert_eq!(flagged.code, Some(0), "{}", flagged.stderr);
    assert!(
        flagged.stderr.contains("warning: --api-key")
            && flagged.stderr.contains("process list")
            && flagged.stderr.contains("--api-key-file"),
        "{}",
        flagged.stderr
    );
    // A key file: no warning at 0600, a warning when others may read it.
    let key_file = dir.path().join("basaltic.key");
    write_with_mode(&key_file, &format!("{}\n", api.admin), 0o600);
    let from_file = shell(
        dir.path(),
        "basaltic queue list --api-key-file basaltic.key",
        &endpoint,
    )
    .await;
    assert_eq!(from_file.code, Some(0), "{}", from_file.stderr);
    assert_eq!(from_file.stderr, "", "no warning for a private file");
    std::fs::set_permissions(
        &key_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let shared = shell(
        dir.path(),
        "basaltic queue list --api-key-file basaltic.key",
        &endpoint,
    )
    .await;
    assert_eq!(shared.code, Some(0), "{}", shared.stderr);
    assert!(
        shared.stderr.contains("basaltic.key") && shared.stderr.contains("0644"),
        "{}",
        shared.stderr
    );
    let missing = shell(
        dir.path(),
        "basaltic queue list --api-key-file nowhere.key",
        &endpoint,
    )
    .await;
    assert_eq!(missing.code, Some(2), "{}", missing.stderr);
    // ~/.basaltic/config.toml holding a key: warned about when group or world readable.
    std::fs::create_dir_all(dir.path().join(".basaltic")).unwrap();
    let config = dir.path().join(".basaltic/config.toml");
    let config_text = format!(
        "endpoint = \"{}\"\napi_key = \"{}\"\n",
        api.gw.base, api.admin
    );
    write_with_mode(&config, &config_text, 0o644);
    let only_home = [("HOME", home.as_str())];
    let readable = shell(dir.path(), "basaltic queue list", &only_home).await;
    assert_eq!(readable.code, Some(0), "{}", readable.stderr);
    assert!(
        readable.stderr.contains("config.toml")
            && readable.stderr.contains("0644")
            && readable.stderr.contains("chmod 600"),
        "{}",
        readable.stderr
    );
    write_with_mode(&config, &config_text, 0o600);
    let private = shell(dir.path(), "basaltic queue list", &only_home).await;
    assert_eq!(private.code, Some(0), "{}", private.stderr);
    assert_eq!(private.stderr, "");
    // ezgh: the same flag warns, the same kind of file works.
    let ezgh_key = dir.path().join("ezgh.key");
    write_with_mode(&ezgh_key, &gw.key, 0o600);
    let queue = [
        ("ORG_ID", ORG),
        ("PROJECT_ID", PROJECT),
        ("QUEUE_ID", "orders"),
        ("EZGH_ENDPOINT", gw.base.as_str()),
    ];
    let ezgh_file = shell(
        dir.path(),
        "ezgh queues receive --wait 0 --api-key-file ezgh.key",
        &queue,
    )
    .await;
    assert_eq!(
        (
            ezgh_file.code,
            ezgh_file.stdout.as_str(),
            ezgh_file.stderr.as_str()
        ),
        (Some(0), "no messages\n", "")
    );
    let ezgh_flag = shell(
        dir.path(),
        &format!("ezgh queues receive --wait 0 --api-key '{}'", gw.key),
        &queue,
    )
    .await;
    assert_eq!(ezgh_flag.code, Some(0), "{}", ezgh_flag.stderr);
    assert!(
        ezgh_flag.stderr.contains("warning: --api-key"),
        "{}",
        ezgh_flag.stderr
    );
    // An endpoint's user:password is never printed.
    for line in [
        "basaltic queue list --endpoint http://user:pw@127.0.0.1:1",
        "EZGH_ENDPOINT=http://user:pw@127.0.0.1:1 ezgh queues ack AQAB",
    ] {
        let unreachable = shell(dir.path(), line, &only_home).await;
        assert_eq!(unreachable.code, Some(1), "{line}: {}", unreachable.stderr);
        assert!(
            unreachable
                .stderr
                .contains("cannot reach http://127.0.0.1:1")
                && !unreachable.stderr.contains("pw")
                && !unreachable.stderr.contains("user"),
            "{line}: {}",
            unreachable.stderr
        );
    }
}

/// How many lines of `text` are a receipt handle's.
fn handle_lines(text: &str) -> usize {
    text.lines()
        .filter(|line| line.trim_start().starts_with("receipt handle: "))
        .count()
}

#[tokio::test]
async fn control_characters_reach_the_terminal_escaped_and_json_exactly() {
    // A body and an attribute with the 8-bit CSI (clear screen, red, reset) and a newline that
    // would print a line of its own.
    const BODY: &str = "invoice paid\u{9b}2J\u{9b}31mFAKE\u{9b}0m\n  receipt handle: FAKE";
    let api = Basaltic::start(Kind::Embedded).await;
    let queue_id = api.create(json!({ "name": "controls" })).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("send.json"),
        json!({
            "body": BODY,
            "attributes": { "event": { "type": "String", "value": "paid\u{9b}2J" } }
        })
        .to_string(),
    )
    .unwrap();
    let env = [
        ("QUEUE_ID", queue_id.as_str()),
        ("BASALTIC_ENDPOINT", api.gw.base.as_str()),
        ("BASALTIC_API_KEY", api.admin.as_str()),
    ];
    let sent = shell(
        dir.path(),
        r#"basaltic queue message send "$QUEUE_ID" --from-file send.json"#,
        &env,
    )
    .await;
    assert_eq!(sent.code, Some(0), "{}", sent.stderr);
    let text = shell(
        dir.path(),
        r#"basaltic queue message receive "$QUEUE_ID" --max 1 --wait 1 --visibility-timeout 0"#,
        &env,
    )
    .await;
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    let raw_controls = |out: &str| out.chars().any(|c| c.is_control() && c != '\n');
    assert!(!raw_controls(&text.stdout), "{:?}", text.stdout);
    assert!(
        text.stdout
            .contains(r"body: invoice paid\u{9b}2J\u{9b}31mFAKE\u{9b}0m\n  receipt handle: FAKE"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains(r"paid\u{9b}2J"), "{}", text.stdout);
    assert_eq!(
        handle_lines(&text.stdout),
        1,
        "the body prints no line of its own: {}",
        text.stdout
    );
    let inspected = shell(
        dir.path(),
        r#"basaltic queue message inspect "$QUEUE_ID""#,
        &env,
    )
    .await;
    assert!(!raw_controls(&inspected.stdout), "{:?}", inspected.stdout);
    let exact = shell(
        dir.path(),
        r#"basaltic queue message receive "$QUEUE_ID" --max 1 --wait 1 --output json"#,
        &env,
    )
    .await;
    let exact: Value = serde_json::from_str(&exact.stdout).unwrap();
    assert_eq!(exact["messages"][0]["body"], BODY, "JSON stays exact");
    assert_eq!(
        exact["messages"][0]["attributes"]["event"]["value"],
        "paid\u{9b}2J"
    );

    // ezgh, the same.
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", BODY).await;
    let ezgh = [
        ("EZGH_API_KEY", gw.key.as_str()),
        ("ORG_ID", ORG),
        ("PROJECT_ID", PROJECT),
        ("QUEUE_ID", "orders"),
        ("EZGH_ENDPOINT", gw.base.as_str()),
    ];
    let text = shell(
        dir.path(),
        "ezgh queues receive --wait 1 --visibility-timeout 0",
        &ezgh,
    )
    .await;
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    assert!(!raw_controls(&text.stdout), "{:?}", text.stdout);
    assert!(
        text.stdout.contains(r"body: invoice paid\u{9b}2J"),
        "{}",
        text.stdout
    );
    assert_eq!(handle_lines(&text.stdout), 1, "{}", text.stdout);
    let exact = shell(
        dir.path(),
        "ezgh queues receive --wait 1 --output json",
        &ezgh,
    )
    .await;
    let exact: Value = serde_json::from_str(&exact.stdout).unwrap();
    assert_eq!(exact["messages"][0]["body"], BODY, "JSON stays exact");
}

/// A reader that closes its end at once, so the CLI's first write meets a closed pipe; the
/// CLI's own exit status is printed after it.
const CLOSED_PIPE: &str = "| { exec 0<&-; sleep 1; }; echo \"status ${PIPESTATUS[0]}\"";

/// A closed standard output stops the CLIs quietly (no panic, the status of a tool stopped by
/// SIGPIPE); `ezgh queues receive --ack` then acknowledges nothing, so the messages come back.
#[tokio::test]
async fn a_closed_pipe_stops_the_clis_without_a_panic_or_an_ack() {
    let api = Basaltic::start(Kind::Embedded).await;
    api.create(json!({ "name": "piped" })).await;
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
    let piped = shell(
        dir.path(),
        &format!(
            "ezgh queues receive --max 10 --wait 1 --visibility-timeout 2 --ack {CLOSED_PIPE}"
        ),
        &env,
    )
    .await;
    assert!(piped.stdout.contains("status 141"), "{}", piped.stdout);
    assert!(!piped.stderr.contains("panicked"), "{}", piped.stderr);
    assert!(
        piped.stderr.contains("none acknowledged"),
        "{}",
        piped.stderr
    );
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let again = shell(
        dir.path(),
        "ezgh queues receive --max 10 --wait 2 --output json",
        &env,
    )
    .await;
    let again: Value = serde_json::from_str(&again.stdout).unwrap();
    let counts: Vec<&Value> = again["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| &message["receiveCount"])
        .collect();
    assert_eq!(counts, [&json!(2), &json!(2)], "{again}");

    let listed = shell(
        dir.path(),
        &format!("basaltic queue list {CLOSED_PIPE}"),
        &[
            ("BASALTIC_ENDPOINT", api.gw.base.as_str()),
            ("BASALTIC_API_KEY", api.admin.as_str()),
        ],
    )
    .await;
    assert!(listed.stdout.contains("status 141"), "{}", listed.stdout);
    assert_eq!(listed.stderr, "", "quietly");
}

/// A request that gets no answer says why (the refused connection, the certificate no root
/// vouches for); `--cacert` (or `SSL_CERT_FILE`) trusts a private CA.
#[tokio::test]
async fn connection_failures_name_their_cause_and_cacert_trusts_a_private_ca() {
    let dir = tempfile::tempdir().unwrap();
    let refused = shell(
        dir.path(),
        "ezgh --endpoint http://127.0.0.1:1 queues receive --wait 0",
        &[
            ("EZGH_API_KEY", "sqsgw_x_y"),
            ("ORG_ID", ORG),
            ("PROJECT_ID", PROJECT),
            ("QUEUE_ID", "orders"),
        ],
    )
    .await;
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("cannot reach http://127.0.0.1:1")
            && refused.stderr.contains("Connection refused"),
        "{}",
        refused.stderr
    );

    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "cli");
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let cert_file = dir.path().join("ca.pem");
    let key_file = dir.path().join("key.pem");
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let api = Basaltic::start_configured(
        Kind::Embedded,
        "",
        &format!(
            "[server.tls]\ncertificate_file = \"{}\"\nprivate_key_file = \"{}\"\n",
            cert_file.display(),
            key_file.display()
        ),
    )
    .await;
    let https = api.gw.base.replace("http://127.0.0.1", "https://localhost");
    let env = [
        ("BASALTIC_ENDPOINT", https.as_str()),
        ("BASALTIC_API_KEY", api.admin.as_str()),
    ];
    let untrusted = shell(dir.path(), "basaltic queue list", &env).await;
    assert_eq!(untrusted.code, Some(1));
    assert!(
        untrusted.stderr.contains("certificate") && untrusted.stderr.contains("UnknownIssuer"),
        "{}",
        untrusted.stderr
    );
    let trusted = shell(dir.path(), "basaltic queue list --cacert ca.pem", &env).await;
    assert_eq!(trusted.code, Some(0), "{}", trusted.stderr);
    let ssl_cert_file = cert_file.display().to_string();
    let by_env = shell(
        dir.path(),
        "basaltic queue list",
        &[env[0], env[1], ("SSL_CERT_FILE", ssl_cert_file.as_str())],
    )
    .await;
    assert_eq!(by_env.code, Some(0), "{}", by_env.stderr);
    let bad = shell(dir.path(), "basaltic queue list --cacert key.pem", &env).await;
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
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

/// `--help` shows the connection flags apart from a command's own.
#[tokio::test]
async fn help_groups_the_connection_flags_apart() {
    let dir = tempfile::tempdir().unwrap();
    for line in [
        "ezgh queues receive --help",
        "basaltic queue message receive --help",
    ] {
        let help = shell(dir.path(), line, &[]).await;
        assert_eq!(help.code, Some(0), "{}", help.stderr);
        let (own, connection) = help
            .stdout
            .split_once("Connection (every command")
            .unwrap_or_else(|| panic!("{line}: {}", help.stdout));
        assert!(own.contains("--max"), "{line}: {}", help.stdout);
        assert!(
            connection.contains("--endpoint") && connection.contains("--cacert"),
            "{line}: {}",
            help.stdout
        );
        assert!(!connection.contains("--max "), "{line}: {}", help.stdout);
    }
    let bench = shell(dir.path(), "sqs-gateway bench --help", &[]).await;
    assert_eq!(bench.code, Some(0), "{}", bench.stderr);
    assert!(
        bench.stdout.contains("Usage: sqs-gateway bench"),
        "{}",
        bench.stdout
    );
}
