//! `sqs-gateway new-admin-key` and `sqs-gateway sombus …` as a newcomer runs them against a
//! running gateway: make a key, create a connection, publish an envelope, read it with a token,
//! read the audit log; refusals exit 1 with the rule, usage errors 2.

use crate::harness::unique;
use crate::harness::{GatewayBuilder, Kind, SQS_KEY_ID, SQS_SECRET, TestGateway};
use crate::http::sombus::support::{receive, token};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_sqs-gateway");

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// `run` with `--output json`: the API's answer, for the checks that read it.
pub async fn run_json(gw: &TestGateway, admin_key: &str, workspace: &str, args: &[&str]) -> Run {
    let mut args = args.to_vec();
    args.extend(["--output", "json"]);
    run(gw, admin_key, workspace, &args).await
}

async fn run(gw: &TestGateway, admin_key: &str, workspace: &str, args: &[&str]) -> Run {
    // tokio's Command: the gateway the binary talks to runs on this test's thread.
    let output = tokio::process::Command::new(BIN)
        .args(args)
        .env("SQSGW_ENDPOINT", &gw.base)
        .env("SQSGW_ADMIN_KEY", admin_key)
        .env("SOMBUS_WORKSPACE", workspace)
        .env("AWS_ACCESS_KEY_ID", SQS_KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SQS_SECRET)
        .env_remove("AWS_REGION")
        .output()
        .await
        .unwrap();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

pub fn json_of(run: &Run) -> Value {
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    serde_json::from_str(&run.stdout).unwrap_or_else(|_| panic!("{}", run.stdout))
}

#[tokio::test]
async fn a_newcomer_sets_up_a_connection_and_publishes_with_the_cli() {
    let workspace = unique("cli-");
    let made = tokio::process::Command::new(BIN)
        .args([
            "new-admin-key",
            "--workspace",
            &workspace,
            "--role",
            "admin",
            "--name",
            "ops",
        ])
        .output()
        .await
        .unwrap();
    assert!(made.status.success());
    let printed = String::from_utf8(made.stdout).unwrap();
    let admin_key = printed
        .lines()
        .find_map(|line| {
            line.trim_start_matches('#')
                .trim()
                .strip_prefix("sqsgw_")
                .map(|rest| format!("sqsgw_{rest}"))
        })
        .expect("the key is printed once");
    let entry: String = printed
        .lines()
        .filter(|line| !line.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        !entry.contains(&admin_key),
        "only the hash goes in the config"
    );
    let gw = GatewayBuilder::new(Kind::Embedded)
        .config(&format!("[sombus]\nenvironment = \"cli\"\n\n{entry}\n"))
        .start()
        .await;

    let created = json_of(
        &run_json(
            &gw,
            &admin_key,
            &workspace,
            &["sombus", "connections", "create", "--name", "house"],
        )
        .await,
    );
    let client_id = created["client_id"].as_str().unwrap().to_owned();
    let secret = created["client_secret"].as_str().unwrap().to_owned();
    let shown = json_of(
        &run_json(
            &gw,
            &admin_key,
            &workspace,
            &["sombus", "connections", "show", &client_id],
        )
        .await,
    );
    let queue = shown["queue"].as_str().unwrap().to_owned();
    let listed = json_of(
        &run_json(
            &gw,
            &admin_key,
            &workspace,
            &["sombus", "connections", "list"],
        )
        .await,
    );
    assert_eq!(listed["connections"].as_array().unwrap().len(), 1);

    let published = json_of(
        &run_json(
            &gw,
            &admin_key,
            &workspace,
            &[
                "sombus",
                "publish",
                "--queue",
                &queue,
                "--message-type",
                "story.context",
                "--correlation-id",
                "story-1",
                "--topic",
                "som.story.context",
                "--producer-id",
                "c-cli",
                "--payload",
                r#"{"text": "hi"}"#,
            ],
        )
        .await,
    );
    let token = token(&gw, &client_id, &secret).await;
    let got = receive(&gw, &token, &workspace, &client_id, "wait=2").await;
    let message = &got.body["messages"][0];
    assert_eq!(message["envelope"]["message_id"], published["message_id"]);
    assert_eq!(message["envelope"]["som_version"], "1.0.0");
    assert_eq!(message["envelope"]["payload"], json!({ "text": "hi" }));
    assert_eq!(message["message_type"], "story.context");
    assert_eq!(message["correlation_id"], "story-1");
    assert_eq!(message["topic"], "som.story.context");
    assert_eq!(message["producer_id"], "c-cli");

    // Refusals exit 1 and name the rule; usage errors exit 2.
    let revoked = run(
        &gw,
        &admin_key,
        &workspace,
        &["sombus", "connections", "revoke-secret", &client_id],
    )
    .await;
    assert_eq!(revoked.code, Some(0), "{}", revoked.stderr);
    let again = run(
        &gw,
        &admin_key,
        &workspace,
        &["sombus", "connections", "revoke-secret", &client_id],
    )
    .await;
    assert_eq!(again.code, Some(1));
    assert!(
        again.stderr.contains("refused (409): admin.conflict"),
        "{}",
        again.stderr
    );
    let wrong_key = run(
        &gw,
        "sqsgw_nobody_x",
        &workspace,
        &["sombus", "connections", "list"],
    )
    .await;
    assert_eq!(wrong_key.code, Some(1));
    assert!(
        wrong_key.stderr.contains("admin.unauthenticated"),
        "{}",
        wrong_key.stderr
    );
    let usage = run(
        &gw,
        &admin_key,
        &workspace,
        &["sombus", "connections", "rotate-secret"],
    )
    .await;
    assert_eq!(usage.code, Some(2));
    let audit = json_of(&run_json(&gw, &admin_key, &workspace, &["sombus", "audit"]).await);
    // The changes made (the refused attempt with a wrong key is recorded too, off the request's
    // path, as `outcome: refused`).
    let actions: Vec<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.get("outcome").is_none())
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["connection.create", "secret.revoke"]);
    assert_eq!(audit["entries"][0]["actor"], "ops");
    let removed = run(
        &gw,
        &admin_key,
        &workspace,
        &["sombus", "connections", "remove", &client_id],
    )
    .await;
    assert_eq!(removed.code, Some(0), "{}", removed.stderr);
    gw.stop().await;
}

/// A gateway with the sombus API and an admin key of `workspace` made by `new-admin-key`.
pub async fn gateway_with_admin_key(workspace: &str) -> (TestGateway, String) {
    let made = tokio::process::Command::new(BIN)
        .args(["new-admin-key", "--workspace", workspace, "--name", "ops"])
        .output()
        .await
        .unwrap();
    assert!(made.status.success());
    let printed = String::from_utf8(made.stdout).unwrap();
    let admin_key = printed
        .lines()
        .find_map(|line| line.trim_start_matches('#').trim().strip_prefix("sqsgw_"))
        .map(|rest| format!("sqsgw_{rest}"))
        .expect("the key is printed once");
    let entry: String = printed
        .lines()
        .filter(|line| !line.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let gw = GatewayBuilder::new(Kind::Embedded)
        .config(&format!("[sombus]\nenvironment = \"cli\"\n\n{entry}\n"))
        .start()
        .await;
    (gw, admin_key)
}

#[tokio::test]
async fn the_sombus_cli_prints_text_by_default_and_the_secret_once_clearly() {
    let workspace = unique("txt-");
    let (gw, admin_key) = gateway_with_admin_key(&workspace).await;
    let text = |run: &Run| {
        assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
        assert!(
            serde_json::from_str::<Value>(&run.stdout).is_err(),
            "text, not JSON: {}",
            run.stdout
        );
        run.stdout.clone()
    };
    let none = text(
        &run(
            &gw,
            &admin_key,
            &workspace,
            &["sombus", "connections", "list"],
        )
        .await,
    );
    assert_eq!(none, "no connections\n");

    let created = text(
        &run(
            &gw,
            &admin_key,
            &workspace,
            &["sombus", "connections", "create", "--name", "house"],
        )
        .await,
    );
    let mut lines = created.lines();
    let client_id = lines
        .next()
        .and_then(|line| line.strip_prefix("connection created: "))
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    // The secret: announced as shown once, alone on the next line, and the one that works.
    let announced = created
        .lines()
        .position(|line| line.contains("client secret (shown once"))
        .unwrap_or_else(|| panic!("{created}"));
    let secret = created
        .lines()
        .nth(announced + 1)
        .unwrap()
        .trim()
        .to_owned();
    assert!(secret.starts_with("sbs_"), "{created}");
    assert!(created.contains("only rotated"), "{created}");
    assert!(created.contains("/v1/oauth/token"), "{created}");
    assert!(!token(&gw, &client_id, &secret).await.is_empty());

    let listed = text(
        &run(
            &gw,
            &admin_key,
            &workspace,
            &["sombus", "connections", "list"],
        )
        .await,
    );
    let mut rows = listed.lines();
    let header = rows.next().unwrap();
    assert!(
        header.starts_with("CLIENT ID") && header.contains("QUEUE"),
        "{listed}"
    );
    let row = rows.next().unwrap();
    assert!(
        row.starts_with(&client_id) && row.contains("house") && row.contains("active"),
        "{listed}"
    );
    assert!(!listed.contains("sbs_"), "a list shows no secret");

    let shown = text(
        &run(
            &gw,
            &admin_key,
            &workspace,
            &["sombus", "connections", "show", &client_id],
        )
        .await,
    );
    assert!(
        shown.starts_with(&format!("connection {client_id}  house")),
        "{shown}"
    );
    assert!(
        shown
            .lines()
            .any(|line| line.starts_with("  queue: sqsgw_sb_") && line.ends_with("(FIFO)")),
        "{shown}"
    );
    let revoked = text(
        &run(
            &gw,
            &admin_key,
            &workspace,
            &["sombus", "connections", "revoke-secret", &client_id],
        )
        .await,
    );
    assert!(
        revoked.starts_with(&format!("secret revoked: {client_id}\n"))
            && revoked.contains("has a secret: no"),
        "{revoked}"
    );
    let rotated = text(
        &run(
            &gw,
            &admin_key,
            &workspace,
            &["sombus", "connections", "get-secret", &client_id],
        )
        .await,
    );
    assert!(rotated.contains("client secret (shown once"), "{rotated}");

    let audit = text(&run(&gw, &admin_key, &workspace, &["sombus", "audit"]).await);
    let mut entries = audit.lines();
    assert!(entries.next().unwrap().starts_with("AT "), "{audit}");
    let actions: Vec<&str> = entries
        .map(|line| line.split_whitespace().nth(2).unwrap())
        .collect();
    assert_eq!(
        actions,
        ["connection.create", "secret.revoke", "secret.get"],
        "{audit}"
    );
    // The admin key from a file works without SQSGW_ADMIN_KEY; the flag works and warns.
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("admin.key");
    std::fs::write(&key_file, format!("{admin_key}\n")).unwrap();
    std::fs::set_permissions(
        &key_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let key_path = key_file.display().to_string();
    let from_file = run(
        &gw,
        "",
        &workspace,
        &[
            "sombus",
            "connections",
            "list",
            "--admin-key-file",
            &key_path,
        ],
    )
    .await;
    assert_eq!(from_file.code, Some(0), "{}", from_file.stderr);
    assert_eq!(from_file.stderr, "");
    let flagged = run(
        &gw,
        "",
        &workspace,
        &["sombus", "connections", "list", "--admin-key", &admin_key],
    )
    .await;
    assert_eq!(flagged.code, Some(0), "{}", flagged.stderr);
    assert!(
        flagged.stderr.contains("warning: --admin-key")
            && flagged.stderr.contains("--admin-key-file"),
        "{}",
        flagged.stderr
    );
    let no_key = run(&gw, "", &workspace, &["sombus", "connections", "list"]).await;
    assert_eq!(no_key.code, Some(2), "{}", no_key.stderr);
    assert!(
        no_key.stderr.contains("SQSGW_ADMIN_KEY"),
        "{}",
        no_key.stderr
    );
    let help = tokio::process::Command::new(BIN)
        .args(["sombus", "connections", "list", "--help"])
        .output()
        .await
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    assert!(
        !help.contains("--admin-key <ADMIN_KEY>") && help.contains("--admin-key-file"),
        "the usage line no longer shows the key as the way: {help}"
    );

    let removed = text(
        &run(
            &gw,
            &admin_key,
            &workspace,
            &["sombus", "connections", "remove", &client_id],
        )
        .await,
    );
    assert_eq!(removed, "connection removed\n");
    gw.stop().await;
}
