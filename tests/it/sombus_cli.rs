//! `sqs-gateway new-admin-key` and `sqs-gateway sombus …` as a newcomer runs them against a
//! running gateway: make a key, create a connection, publish an envelope, read it with a token,
//! read the audit log; refusals exit 1 with the rule, usage errors 2.

use crate::harness::{GatewayBuilder, Kind, SQS_KEY_ID, SQS_SECRET, TestGateway};
use crate::sombus::{receive, token};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_sqs-gateway");

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `run` with `--output json`: the API's answer, for the checks that read it.
async fn run_json(gw: &TestGateway, admin_key: &str, workspace: &str, args: &[&str]) -> Run {
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

fn json_of(run: &Run) -> Value {
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    serde_json::from_str(&run.stdout).unwrap_or_else(|_| panic!("{}", run.stdout))
}

#[tokio::test]
async fn a_newcomer_sets_up_a_connection_and_publishes_with_the_cli() {
    let workspace = format!("cli-{:08x}", rand::random::<u32>());
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
    let actions: Vec<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
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
