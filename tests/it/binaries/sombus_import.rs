//! `sqs-gateway sombus import-credentials`: a gateway's sombus connections and audit log move
//! from its directory onto the shared state server, where a running gateway over Redis serves
//! them at once (secrets, versions, the log line for line, still chained); a second move is
//! refused and writes nothing.

use crate::harness::{GatewayBuilder, Kind, TestGateway, redis_url};
use crate::http::sombus::support::{Bus, receive, token};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqs_gateway::core::handle::Keyring;
use std::path::Path;

const BIN: &str = env!("CARGO_BIN_EXE_sqs-gateway");

/// The import command's config: the shared server under `prefix`, the directory `dir`.
fn import_config(dir: &Path, prefix: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        format!(
            "[backend]\nkind = \"sqs\"\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n\n[sombus]\nenvironment = \"test\"\ncredentials_dir = {}\n\n[state.redis]\nurl = \"{}\"\nprefix = \"{prefix}\"\n",
            Keyring::generate_key(),
            toml::Value::String(dir.display().to_string()),
            redis_url()
        ),
    )
    .unwrap();
    file
}

async fn import(config: &Path, more: &[&str]) -> (Option<i32>, String, String) {
    let output = tokio::process::Command::new(BIN)
        .args(["sombus", "import-credentials", "--config"])
        .arg(config)
        .args(more)
        .output()
        .await
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The workspace's audit log as `gw`'s admin API reads it: (action, client id, when) newest
/// first, and what the page found damaged (`null` when its lines are whole and linked).
async fn audit(gw: &TestGateway, bus: &Bus) -> (Vec<(String, String, String)>, Value) {
    let answer = gw
        .http
        .get(format!(
            "{}/v1/admin/workspaces/{}/audit?limit=100",
            gw.base, bus.workspace
        ))
        .bearer_auth(&bus.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let page: Value = answer.json().await.unwrap();
    let entries = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["action"].as_str().unwrap_or_default().to_owned(),
                entry["client_id"].as_str().unwrap_or_default().to_owned(),
                entry["at"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    (entries, page["damage"].clone())
}

#[tokio::test]
async fn a_directory_store_moves_to_the_shared_server_once_and_is_served_there() {
    if !crate::needs!(LocalStack, Redis) {
        return;
    }
    // A gateway with its connections in a directory: one connection, its secret rotated.
    let bus = Bus::start_on(GatewayBuilder::new(Kind::LocalStack), "").await;
    let created = bus.create(json!({})).await;
    let rotated = bus
        .admin_call(
            reqwest::Method::POST,
            &format!("/connections/{}/secret/rotate", created.client_id),
            &bus.admin,
            Some(json!({ "overlap": "none" })),
        )
        .await;
    assert_eq!(rotated.status, StatusCode::CREATED, "{}", rotated.body);
    let secret = rotated.body["client_secret"].as_str().unwrap().to_owned();
    let (logged, damage) = audit(&bus.gw, &bus).await;
    assert!(logged.len() >= 2, "{logged:?}");
    assert_eq!(damage, Value::Null);
    // A gateway over Redis with the same admin keys: its shared store is empty.
    let shared = GatewayBuilder::new(Kind::Redis)
        .config(&bus.toml)
        .start()
        .await;
    let prefix = shared.state_prefix.clone().unwrap();
    assert_eq!(audit(&shared, &bus).await.0, Vec::new());

    let config = import_config(bus.store_dir(), &prefix);
    let (code, stdout, stderr) = import(config.path(), &[]).await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "moved 1 connection(s) and {} audit line(s)",
            logged.len()
        )),
        "{stdout}"
    );

    // Served by the running gateway: the rotated secret gets a token (the first one doesn't),
    // the log is the directory's, line for line and whole, and the next change follows it.
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let token = token(&shared, &c, &secret).await;
    assert_eq!(
        receive(&shared, &token, &t, &c, "wait=0").await.status,
        StatusCode::OK
    );
    let first_secret =
        crate::http::sombus::support::token_answer(&shared, &c, &created.secret).await;
    assert_eq!(first_secret.status, StatusCode::UNAUTHORIZED);
    let (moved, moved_damage) = audit(&shared, &bus).await;
    assert_eq!(moved, logged);
    assert_eq!(moved_damage, Value::Null);
    let revoked = shared
        .http
        .post(format!(
            "{}/v1/admin/workspaces/{t}/connections/{c}/revoke",
            shared.base
        ))
        .bearer_auth(&bus.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), StatusCode::OK);
    // The new line links to the last moved one (a broken link or a gap would show as damage).
    let (after, after_damage) = audit(&shared, &bus).await;
    assert_eq!(after.len(), logged.len() + 1);
    assert_eq!(after[0].0, "connection.revoke");
    assert_eq!(after[1..], logged[..]);
    assert_eq!(after_damage, Value::Null, "chained after the moved lines");

    // A second move writes nothing; an empty directory has nothing to move.
    let (code, stdout, stderr) = import(config.path(), &[]).await;
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("already holds"), "{stderr}");
    assert_eq!(audit(&shared, &bus).await.0, after);
    let empty = tempfile::tempdir().unwrap();
    let (code, stdout, _) =
        import(config.path(), &["--from", empty.path().to_str().unwrap()]).await;
    assert_eq!(code, Some(0));
    assert!(stdout.contains("nothing to move"), "{stdout}");
    // Without [state.redis] the command says what is missing.
    let bare = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        bare.path(),
        format!(
            "[backend]\nkind = \"sqs\"\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n",
            Keyring::generate_key()
        ),
    )
    .unwrap();
    let (code, _, stderr) = import(bare.path(), &[]).await;
    assert_eq!(code, Some(2));
    assert!(stderr.contains("state.redis"), "{stderr}");
    shared.stop().await;
    bus.gw.stop().await;
}
