//! The README's sombus consumer loop (the `python` block that starts with `# consumer.py`), run as
//! written against a live gateway: it handles a message, releases one its `handle` fails on, and
//! acknowledges what it handled.

use super::support::{receive, token};
use crate::binaries::sombus_cli::{gateway_with_admin_key, json_of, run_json};
use crate::harness::readme::blocks;
use crate::harness::unique;
use serde_json::Value;
use std::time::Duration;
use tokio::io::AsyncBufReadExt as _;

#[tokio::test]
async fn the_readmes_sombus_consumer_loop_runs_as_written() {
    let snippet = blocks("python")
        .into_iter()
        .find(|block| block.starts_with("# consumer.py"))
        .expect("README.md has the `# consumer.py` block");
    let workspace = unique("loop-");
    let (gw, admin_key) = gateway_with_admin_key(&workspace).await;
    let created = json_of(
        &run_json(
            &gw,
            &admin_key,
            &workspace,
            &["sombus", "connections", "create", "--name", "readme"],
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
    // Two stories: one the loop's `handle` handles, one it fails on (no `text`).
    for (story, payload) in [
        ("story-1", r#"{"text": "hello"}"#),
        ("story-2", r#"{"oops": 1}"#),
    ] {
        json_of(
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
                    story,
                    "--payload",
                    payload,
                ],
            )
            .await,
        );
    }
    // (`run` gives the CLI the gateway's SQS key in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY.)
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("consumer.py");
    std::fs::write(&program, &snippet).unwrap();
    let mut child = tokio::process::Command::new("python3")
        .arg(&program)
        .current_dir(dir.path())
        .env("CLIENT_ID", &client_id)
        .env("CLIENT_SECRET", &secret)
        .env("WORKSPACE", &workspace)
        .env("SQSGW_ENDPOINT", &gw.base)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    let seen = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            printed.push(line);
            let handled = printed.iter().any(|l| l == "handled story-1 hello");
            let released = printed
                .iter()
                .any(|l| l.starts_with("released story-2 KeyError('text')"));
            if handled && released {
                return true;
            }
        }
        false
    })
    .await;
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        use tokio::io::AsyncReadExt as _;
        err.read_to_string(&mut stderr).await.unwrap();
    }
    assert_eq!(
        seen,
        Ok(true),
        "the loop printed {printed:?}, exit {status:?}, stderr {stderr}"
    );
    // Handled means acknowledged; released means back after its 30 s: nothing to receive now.
    let token = token(&gw, &client_id, &secret).await;
    let left = receive(&gw, &token, &workspace, &client_id, "wait=1").await;
    assert_eq!(
        left.body["messages"],
        Value::Array(Vec::new()),
        "{:?}",
        left.body
    );
    gw.stop().await;
}
